"""A study's output folder, written as units finish so that a crash loses at most the units in
flight:

    DIR/manifest.json        what the study is: hashes of the resolved diagram and of each study
                             setting that decides the rows, the blocksim version, members, units
    DIR/parts/unit-NNNNNN.csv  one unit's rows, written to a temporary name and renamed
    DIR/summary.csv          every row in member order, written (the same way) at the end

Numbers are written as Python's repr, which reads back as the same float bit for bit. `--resume`
takes the folder of an unfinished (or finished) study and runs only the units without a part;
it refuses when the manifest's hashes differ from the study's, naming what changed. Without
--resume the folder must be new or empty: a study never overwrites what a user saved.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from pathlib import Path

from ..engine.result import atomic_write
from ..errors import BlocksimError
from ..reading.located_yaml import os_reason
from ..version import __version__
from .file import Study
from .units import FIXED_COLUMNS, RUN_COLUMNS

_PART = re.compile(r"^unit-(\d{6})\.csv$")
TEXT_COLUMNS = ("status", "message", "host")
INT_COLUMNS = ("member", "seed")


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def manifest_of(study: Study, resolved_diagram: str, members: int, units: int) -> dict:
    """The manifest of a study: the hashes `--resume` compares, and what the folder holds."""
    hashes = {"diagram": _sha(resolved_diagram),
              "factors": _sha([(f.path, f.form, f.args) for f in study.factors]),
              "seed": _sha(study.seed), "samples": _sha(study.samples),
              "sampling": _sha(study.sampling), "unit_size": _sha(study.unit_size),
              "metrics": _sha(study.metrics), "blocksim": __version__}
    return {"study": 1, "name": study.name, "file": str(study.file), "members": members,
            "units": units, "hashes": hashes}


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (engine.result.atomic_write)."""
    atomic_write(path, lambda fh: fh.write(text), text=True)


class StudyFolder:
    """The output folder of a study (see the module docstring)."""

    def __init__(self, path, manifest: dict, resume: bool = False):
        self.path = Path(path)
        self.parts = self.path / "parts"
        file = self.path / "manifest.json"
        try:
            if self.path.exists() and not self.path.is_dir():
                raise BlocksimError(f"--out {path} exists and is not a folder")
            if resume:
                if not file.is_file():
                    raise BlocksimError(f"--resume: {path} holds no study (no manifest.json); "
                                        "run without --resume to start it")
                self._compare(json.loads(file.read_text()), manifest)
                self.parts.mkdir(exist_ok=True)
                for stale in self.parts.glob(".*.tmp-*"):      # a unit a crash left half-written
                    stale.unlink()
                return
            if self.path.is_dir() and any(self.path.iterdir()):
                raise BlocksimError(f"--out {path} is not empty; nothing was written (--resume "
                                    "finishes the study in it, or choose a new folder)")
            self.parts.mkdir(parents=True, exist_ok=True)
            write_atomic(file, json.dumps(manifest, indent=2) + "\n")
        except OSError as err:
            raise BlocksimError(f"--out {path}: {os_reason(err, self.path)}") from None

    def _compare(self, old: dict, new: dict) -> None:
        changed = [k for k in sorted(set(old.get("hashes", {})) | set(new["hashes"]))
                   if old.get("hashes", {}).get(k) != new["hashes"].get(k)]
        if changed:
            what = {"diagram": "the diagram (its file, variant or set:)",
                    "blocksim": f"the blocksim version ({old['hashes'].get('blocksim')} -> "
                                f"{new['hashes'].get('blocksim')})"}
            raise BlocksimError(f"--resume: {self.path} holds another study: "
                                + ", ".join(what.get(k, k) for k in changed)
                                + " changed since it was started; nothing was run (run the "
                                "changed study in a new folder)")

    def done(self) -> set[int]:
        """The units that have a part on disk."""
        return {int(m.group(1)) for p in self.parts.iterdir() if (m := _PART.match(p.name))}

    def write_part(self, unit: int, rows: list[dict]) -> None:
        write_atomic(self.parts / f"unit-{unit:06d}.csv", to_csv(rows))

    def rows(self) -> list[dict]:
        """Every row of the parts on disk, in member order."""
        rows = []
        for p in sorted(self.parts.iterdir()):
            if _PART.match(p.name):
                rows.extend(from_csv(p.read_text()))
        return sorted(rows, key=lambda r: r["member"])

    def write_summary(self, rows: list[dict]) -> Path:
        path = self.path / "summary.csv"
        write_atomic(path, to_csv(rows))
        return path


def columns_of(rows: list[dict]) -> list[str]:
    """The columns of rows, in order: member, factors, seed ... host, then the metrics' (as they
    first appear: a failed member has none)."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    fixed = set(FIXED_COLUMNS) | set(RUN_COLUMNS)
    first = list(rows[0]) if rows else []
    factors = first[1:first.index("seed")] if first else []
    metrics = [c for c in seen if c not in fixed and c not in factors]
    return list(FIXED_COLUMNS) + factors + list(RUN_COLUMNS) + metrics


def _cell(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    cols = columns_of(rows)
    w.writerow(cols)
    for row in rows:
        w.writerow([_cell(row[c]) if c in row else "" for c in cols])
    return out.getvalue()


def from_csv(text: str) -> list[dict]:
    """Rows of a part or summary, each value in its type (floats bit for bit; a factor's vector
    as its JSON text; an empty metric cell, a failed member's, as NaN)."""
    reader = csv.reader(io.StringIO(text))
    cols = next(reader)
    seed_at = cols.index("seed")
    rows = []
    for cells in reader:
        row = {}
        for k, (c, v) in enumerate(zip(cols, cells)):
            if c in INT_COLUMNS:
                row[c] = int(v)
            elif c in TEXT_COLUMNS or (k < seed_at and v.startswith("[")):
                row[c] = v
            else:
                row[c] = float(v) if v != "" else math.nan
        rows.append(row)
    return rows
