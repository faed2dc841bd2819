"""A study's output folder, written as units finish so that a crash loses at most the units in
flight:

    DIR/manifest.json              what the study is: hashes of the resolved diagram and of each
                                   study setting that decides the rows, the blocksim version, the
                                   members, the units, and how each run of it compiled (runs)
    DIR/parts/unit-NNNNNN.parquet  one unit's rows (Parquet), written to a temporary name and renamed
    DIR/summary.parquet            every row in member order, written (the same way) at the end
    DIR/summary.csv                the same rows as CSV (numbers as Python's repr), for a spreadsheet

Parquet keeps every float64 and the 64-bit seeds exactly, so rows read back are bit for bit the
rows written. Parquet needs pyarrow (the `data` extra): a study says so before it makes anything.
`--resume` takes the folder of an unfinished (or finished) study and runs only the units without
a part; it refuses when the manifest's hashes differ from the study's, naming what changed.
Without --resume the folder must be new or empty: a study never overwrites what a user saved.

`read_study(DIR)` is the one reader of a study folder for other code (the HTML report, a user's
notebook): its manifest and its rows, in member order, whether or not the study finished.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..engine.result import atomic_write
from ..errors import BlocksimError, require_extra
from ..reading.located_yaml import os_reason
from ..version import __version__
from .file import Study
from .units import FIXED_COLUMNS, RUN_COLUMNS

ROWS_FORMAT = "parquet-1"
"""How the folder stores its rows: a manifest of another format is another study for --resume."""
_PART = re.compile(r"^unit-(\d{6})\.parquet$")
TEXT_COLUMNS = ("status", "message", "host")
INT_COLUMNS = ("member", "seed")
SUMMARY = "summary.parquet"
SUMMARY_CSV = "summary.csv"


def _sha(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def manifest_of(study: Study, resolved_diagram: str, members: int, units: int) -> dict:
    """The manifest of a study: the hashes `--resume` compares, and what the folder holds."""
    hashes = {"diagram": _sha(resolved_diagram),
              "factors": _sha([(f.path, f.form, f.args) for f in study.factors]),
              "seed": _sha(study.seed), "samples": _sha(study.samples),
              "sampling": _sha(study.sampling), "unit_size": _sha(study.unit_size),
              "metrics": _sha(study.metrics), "blocksim": __version__, "rows": ROWS_FORMAT}
    if study.optimize is not None:
        t = study.optimize
        hashes["optimize"] = _sha([t.minimize, sorted(t.limits.items()), t.popsize, t.generations])
    return {"study": 1, "name": study.name, "file": str(study.file), "members": members,
            "units": units, "hashes": hashes, "runs": []}


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (engine.result.atomic_write)."""
    atomic_write(path, lambda fh: fh.write(text), text=True)


def _arrow():
    """pyarrow and its Parquet module, or the error naming the extra that installs them."""
    purpose = "a study's rows (Parquet parts and summary.parquet)"
    return require_extra("pyarrow", "data", purpose), require_extra("pyarrow.parquet", "data", purpose)


def _read_manifest(folder: Path) -> dict:
    file = folder / "manifest.json"
    if not file.is_file():
        raise BlocksimError(f"{folder} holds no study (no manifest.json)")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BlocksimError(f"{file}: not a study manifest ({err})") from None


class StudyFolder:
    """The output folder of a study (see the module docstring)."""

    def __init__(self, path, manifest: dict, resume: bool = False):
        _arrow()                                # before anything is made: say what to install
        self.path = Path(path)
        self.parts = self.path / "parts"
        self.file = self.path / "manifest.json"
        try:
            if self.path.exists() and not self.path.is_dir():
                raise BlocksimError(f"--out {path} exists and is not a folder")
            if resume:
                if not self.file.is_file():
                    raise BlocksimError(f"--resume: {path} holds no study (no manifest.json); "
                                        "run without --resume to start it")
                self.manifest = json.loads(self.file.read_text(encoding="utf-8"))
                self._compare(self.manifest, manifest)
                self.parts.mkdir(exist_ok=True)
                for stale in self.parts.glob(".*.tmp-*"):      # a unit a crash left half-written
                    stale.unlink()
                return
            if self.path.is_dir() and any(self.path.iterdir()):
                raise BlocksimError(f"--out {path} is not empty; nothing was written (--resume "
                                    "finishes the study in it, or choose a new folder)")
            self.parts.mkdir(parents=True, exist_ok=True)
            self.manifest = manifest
            write_atomic(self.file, json.dumps(manifest, indent=2) + "\n")
        except OSError as err:
            raise BlocksimError(f"--out {path}: {os_reason(err, self.path)}") from None

    def _compare(self, old: dict, new: dict) -> None:
        changed = [k for k in sorted(set(old.get("hashes", {})) | set(new["hashes"]))
                   if old.get("hashes", {}).get(k) != new["hashes"].get(k)]
        if changed:
            what = {"diagram": "the diagram (its file, variant or set:)",
                    "blocksim": f"the blocksim version ({old['hashes'].get('blocksim')} -> "
                                f"{new['hashes'].get('blocksim')})",
                    "rows": "the format of its rows (CSV parts of an older blocksim)"}
            raise BlocksimError(f"--resume: {self.path} holds another study: "
                                + ", ".join(what.get(k, k) for k in changed)
                                + " changed since it was started; nothing was run (run the "
                                "changed study in a new folder)")

    def note_run(self, run: dict) -> None:
        """Add one run of the study (where it ran, how it compiled) to the manifest's `runs`."""
        self.manifest = {**self.manifest, "runs": [*self.manifest.get("runs", []), run]}
        write_atomic(self.file, json.dumps(self.manifest, indent=2) + "\n")

    def done(self) -> set[int]:
        """The units that have a part on disk."""
        return {int(m.group(1)) for p in self.parts.iterdir() if (m := _PART.match(p.name))}

    def write_part(self, unit: int, rows: list[dict]) -> None:
        write_parquet(self.parts / f"unit-{unit:06d}.parquet", rows)

    def part_rows(self, unit: int) -> list[dict]:
        """The rows of unit `unit`'s part (it must be done)."""
        return read_parquet(self.parts / f"unit-{unit:06d}.parquet")

    def rows(self) -> list[dict]:
        """Every row of the parts on disk, in member order."""
        return rows_of_parts(self.parts)

    def write_summary(self, rows: list[dict]) -> Path:
        """summary.parquet (and its CSV export, summary.csv); returns the Parquet file."""
        path = self.path / SUMMARY
        write_parquet(path, rows, {"hashes": self.manifest.get("hashes", {})})
        write_atomic(self.path / SUMMARY_CSV, to_csv(rows))
        return path


def rows_of_parts(parts: Path) -> list[dict]:
    """The rows of every part in `parts`, in member order, each with every column (a metric of
    a unit whose members all failed, which that part has no column for, as NaN)."""
    rows = []
    for p in sorted(parts.iterdir()):
        if _PART.match(p.name):
            rows.extend(read_parquet(p))
    rows.sort(key=lambda r: r["member"])
    cols = columns_of(rows)
    return [r if len(r) == len(cols) else {c: r.get(c, math.nan) for c in cols} for r in rows]


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


# ----------------------------------------------------------------------------------- Parquet

def _column_type(pa, name: str, values: list):
    if name == "member":
        return pa.int64()
    if name == "seed":
        return pa.uint64()          # numpy's SeedSequence state: 64 bits, above int64's range
    if name in TEXT_COLUMNS or any(isinstance(v, str) for v in values):
        return pa.string()          # a vector factor's value is its JSON list
    return pa.float64()


def to_table(rows: list[dict], metadata: dict | None = None):
    """The rows as a pyarrow Table, one column each (columns_of's order): member int64, seed
    uint64, the text columns and a vector factor's JSON as strings, every other one float64; the
    metrics of a member that did not run (status not ok) are null."""
    pa, _ = _arrow()
    cols = columns_of(rows)
    metrics = cols[cols.index(RUN_COLUMNS[-1]) + 1:]
    arrays = []
    for c in cols:
        values = [row.get(c) if c not in metrics or row["status"] == "ok" else None
                  for row in rows]
        arrays.append(pa.array(values, type=_column_type(pa, c, values)))
    meta = {b"blocksim.study": json.dumps(metadata).encode()} if metadata else None
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        [pa.field(c, a.type) for c, a in zip(cols, arrays)], metadata=meta))


def write_parquet(path: Path, rows: list[dict], metadata: dict | None = None) -> None:
    """The rows as one Parquet file, written to a temporary name and renamed."""
    _, pq = _arrow()
    table = to_table(rows, metadata)
    atomic_write(Path(path), lambda fh: pq.write_table(table, fh))


def read_parquet(path: Path) -> list[dict]:
    """The rows of a part or summary, each value in its type (floats bit for bit; a factor's
    vector as its JSON text; a metric a failed member has not as NaN)."""
    _, pq = _arrow()
    table = pq.read_table(path)
    floats = {f.name for f in table.schema if str(f.type) == "double"}
    return [{k: (math.nan if v is None and k in floats else v) for k, v in row.items()}
            for row in table.to_pylist()]


# ----------------------------------------------------------------------------------- CSV export

def _cell(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
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
    """Rows of summary.csv, each value in its type (floats bit for bit; a factor's vector as its
    JSON text; an empty metric cell, a failed member's, as NaN)."""
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


# ----------------------------------------------------------------------------------- reading

@dataclass
class StoredStudy:
    """A study folder as read back: its manifest (manifest.json as a dict: name, file, members,
    units, hashes, runs), its rows in member order (one dict per member, the columns of
    docs/studies.md, metrics NaN for a member that did not run), and whether it finished
    (summary.parquet written: every unit ran)."""

    folder: Path
    manifest: dict
    rows: list[dict]
    complete: bool

    @property
    def columns(self) -> list[str]:
        return columns_of(self.rows)

    @property
    def study_file(self) -> str:
        """The study file it was run from (as the sweep command was given it)."""
        return self.manifest.get("file", "")


def read_study(folder) -> StoredStudy:
    """The study in `folder` (made by `python cli.py sweep STUDY --out folder`): its manifest and
    rows, from summary.parquet when the study finished, else from the parts on disk."""
    folder = Path(folder)
    manifest = _read_manifest(folder)
    summary = folder / SUMMARY
    if summary.is_file():
        return StoredStudy(folder, manifest, read_parquet(summary), True)
    parts = folder / "parts"
    rows = rows_of_parts(parts) if parts.is_dir() else []
    return StoredStudy(folder, manifest, rows, False)
