"""The logged outcome of a run: times, signals by name, events, solver statistics; saved to a folder."""
from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np


class Result:
    """Logged signals of one run (all batch members).

    t:       (n,) log times in s
    r[name]: (n, width) for a plain run, (B, n, width) for a batch run; name is 'block.port'
    names:   the logged signal names
    metrics: {metric: [value per joint]} of the diagram's `metrics:` section (computed on first
             use, so a sweep that never reads them pays nothing)
    """

    def __init__(self, t, signals, *, batch: int, batched: bool, events=(), stats=None,
                 interrupted=False, stopped_by=None, diagram=None, metadata=None, aliases=None,
                 metrics=None):
        self.t = np.asarray(t)
        self._signals = signals
        self.batch = batch
        self.batched = batched
        self.events = list(events)
        self.stats = dict(stats or {})
        self.interrupted = interrupted
        self.stopped_by = stopped_by
        self._diagram = diagram
        self.metadata = dict(metadata or {})
        self._metrics = {} if metrics is None else metrics
        self._aliases = dict(aliases or {})

    @property
    def metrics(self) -> dict[str, list]:
        """{metric: [value per element]} (a batch: [[per element] per member]); computed from the
        log on first use when the run gave a way to (metrics(result) -> dict)."""
        if callable(self._metrics):
            self._metrics = self._metrics(self)
        return self._metrics

    @metrics.setter
    def metrics(self, value: dict[str, list]) -> None:
        self._metrics = value

    @property
    def diagram(self) -> str | None:
        """The resolved diagram as YAML text (written on first use: a sweep of runs pays nothing)."""
        if callable(self._diagram):
            self._diagram = self._diagram()
        return self._diagram

    @property
    def names(self) -> list[str]:
        return list(self._signals)

    def __contains__(self, name: str) -> bool:
        return self._key(name) in self._signals

    def _key(self, name: str) -> str:
        name = self._aliases.get(name, name)
        if name in self._signals:
            return name
        matches = [n for n in self._signals if n.split(".")[0] == name]
        if len(matches) == 1:
            return matches[0]
        return name

    def __getitem__(self, name: str) -> np.ndarray:
        key = self._key(name)
        if key not in self._signals:
            from ..errors import did_you_mean
            raise KeyError(f"no logged signal '{name}'{did_you_mean(name, self._signals)}; logged: "
                           f"{', '.join(self._signals)}")
        data = self._signals[key]
        return data if self.batched else data[0]

    def member(self, k: int) -> "Result":
        """Batch member k as a plain (unbatched) result."""
        sub = {n: d[k:k + 1] for n, d in self._signals.items()}
        return Result(self.t, sub, batch=1, batched=False, events=[e for e in self.events
                      if e.member == k], stats=self.stats, interrupted=self.interrupted,
                      stopped_by=self.stopped_by, diagram=self._diagram, metadata=self.metadata,
                      aliases=self._aliases)

    def save(self, folder, formats=("csv",)) -> Path:
        """Write signals.npz, the tables of `formats` (engine.exports.FORMATS: signals.csv,
        signals.mat, signals.parquet), metrics.json, diagram.yaml and run.json into folder.
        Each file is written beside its place and renamed into it, so a crash or a full disk
        leaves the earlier file or the new one, never a truncated one (run.json last: a folder
        with a run.json is complete)."""
        from . import exports
        formats = exports.check_formats(formats)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {"t": self.t}
        arrays.update({n: (d if self.batched else d[0]) for n, d in self._signals.items()})
        atomic_write(folder / "signals.npz", lambda fh: np.savez_compressed(fh, **arrays))
        if "csv" in formats:
            atomic_write(folder / "signals.csv", self._write_csv, text=True)
        writers = {"mat": exports.write_mat, "parquet": exports.write_parquet}
        for f in formats:
            if f in writers:
                atomic_write(folder / exports.FILE_NAMES[f], lambda fh, w=writers[f]: w(self, fh))
        atomic_write(folder / "metrics.json",
                lambda fh: fh.write(json.dumps(self.metrics, indent=2) + "\n"), text=True)
        if self.diagram is not None:
            atomic_write(folder / "diagram.yaml", lambda fh: fh.write(self.diagram), text=True)
        meta = dict(self.metadata)
        meta.update(stats=self.stats, interrupted=self.interrupted, stopped_by=self.stopped_by,
                    batch=self.batch, events=[vars(e) for e in self.events[:10000]])
        atomic_write(folder / "run.json",
                lambda fh: fh.write(json.dumps(meta, indent=2, default=_jsonable) + "\n"),
                text=True)
        return folder

    def to_dataframe(self, form: str = "wide"):
        """The log as a pandas DataFrame, wide (member, t, 'block.port[i]' columns) or long
        (member, t, signal, element, value): engine/exports.py, `pip install -e '.[data]'`."""
        from .exports import to_dataframe
        return to_dataframe(self, form)

    def _write_csv(self, fh) -> None:
        """One column per signal element (and member, for a batch): 'plant.q[0]', 'plant.q[0]#3'."""
        columns = [("t", self.t)]
        for name, data in self._signals.items():
            for m in range(data.shape[0]):
                for i in range(data.shape[2]):
                    label = f"{name}[{i}]" + (f"#{m}" if self.batched else "")
                    columns.append((label, data[m, :, i]))
        writer = csv.writer(fh)
        writer.writerow([c[0] for c in columns])
        for row in zip(*[c[1] for c in columns]):
            writer.writerow([repr(float(v)) for v in row])

    @classmethod
    def load(cls, folder) -> "Result":
        """Read a folder written by save()."""
        folder = Path(folder)
        with np.load(folder / "signals.npz") as npz:
            t = npz["t"]
            raw = {k: npz[k] for k in npz.files if k != "t"}
        meta = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else {}
        batch = int(meta.get("batch", 1))
        batched = any(v.ndim == 3 for v in raw.values())
        signals = {k: (v if v.ndim == 3 else v[None]) for k, v in raw.items()}
        res = cls(t, signals, batch=batch, batched=batched, stats=meta.get("stats"),
                  interrupted=meta.get("interrupted", False), metadata=meta)
        mpath = folder / "metrics.json"
        if mpath.exists():
            res.metrics = json.loads(mpath.read_text())
        dpath = folder / "diagram.yaml"
        if dpath.exists():
            res._diagram = dpath.read_text()
        return res


def atomic_write(path: Path, write, text: bool = False) -> None:
    """write(file) into a temporary file beside path, then rename it onto path (one step): a
    reader sees the old file or the new one, never half of one; the temporary file is removed
    when writing fails."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with (tmp.open("w", newline="", encoding="utf-8") if text else tmp.open("wb")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def run_metadata(seed=None) -> dict:
    """Versions and provenance stored with every saved run."""
    meta = dict(_provenance())
    meta["seed"] = seed
    return meta


@functools.lru_cache(maxsize=1)
def _provenance() -> dict:
    """Versions of blocksim, numpy, scipy and Python, and blocksim's git revision when it runs
    from a checkout (asked once per process)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy

    from ..version import __version__
    scipy = sys.modules.get("scipy")             # numba's start imports SciPy's top package
    try:
        scipy_version = scipy.__version__ if scipy is not None else version("scipy")
    except PackageNotFoundError:               # (version() reads it without importing SciPy)
        scipy_version = None
    meta = {"blocksim": __version__, "numpy": numpy.__version__, "scipy": scipy_version,
            "python": platform.python_version()}
    revision = checkout_revision(Path(__file__).parent)
    if revision is not None:
        meta["git_revision"] = revision
    return meta


def checkout_revision(folder: Path) -> str | None:
    """The commit checked out in the git work tree holding `folder` (`git rev-parse HEAD`); None
    outside a work tree, where git is not started at all (an installed blocksim), or without git."""
    if not any((p / ".git").exists() for p in (folder, *folder.parents)):
        return None
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=2, cwd=folder)
    except (OSError, subprocess.SubprocessError):
        return None
    return rev.stdout.strip() if rev.returncode == 0 else None
