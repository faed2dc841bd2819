"""Reading and checking the joint log of a real arm (`data: {log: run.npz}` of an identification
config): t (N,) s, q (N, n) rad and tau (N, n) N m, from an NPZ archive (keys t, q, tau; loaded
without pickles) or a CSV file (a header row t, q1..qn, tau1..taun, then one row per sample).

Everything the processing relies on is checked here, in milliseconds, before any slow step: the
keys or columns are there, the values are numbers and finite, q and tau have one column per joint
of the robot, t is uniformly spaced and increasing, and there are at least MIN_SAMPLES samples. A
wrong log is a DataLogError naming the file and the key (NPZ) or line and column (CSV).
"""
from __future__ import annotations

import io
import zipfile

import numpy as np

from ..errors import ParameterError, SourceLoc
from ..reading.located_yaml import decode_utf8, read_input_bytes

MIN_SAMPLES = 3
"""Fewest samples of a log (two steps: a spacing to check, a central difference to take)."""


class DataLogError(ParameterError):
    """A data log that cannot be read or does not hold a usable record (missing key or column,
    non-numeric or non-finite values, wrong column count, uneven time steps, too few samples);
    the message names the file and the key (NPZ) or line and column (CSV)."""


def read_log(path, joints: int | None = None, display: str | None = None):
    """(t, q, tau) as float arrays of shapes (N,), (N, n), (N, n) from the log at `path` (see the
    module docstring); `joints` is the robot's joint count n when known, `display` the file's name
    in messages."""
    file = str(path) if display is None else display
    suffix = str(path).lower().rsplit(".", 1)[-1]
    if suffix not in ("npz", "csv"):
        raise DataLogError("a data log must be .npz (keys t, q, tau) or .csv (columns t, q1.., "
                           "tau1..)", where=SourceLoc(file))
    raw = read_input_bytes(path, "data log", DataLogError, file, limited=False)     # logs may be large
    t, q, tau, names = (_npz if suffix == "npz" else _csv)(raw, file)
    _check(t, q, tau, names, joints, file)
    return t, q, tau


def _npz(raw: bytes, file: str):
    where = SourceLoc(file)
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        raise DataLogError("not an NPZ archive (numpy.savez writes one, with keys t, q, tau)", where=where)
    try:
        archive = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise DataLogError(f"not a readable NPZ archive: {err}", where=where) from None
    with archive:
        missing = [k for k in ("t", "q", "tau") if k not in archive.files]
        if missing:
            raise DataLogError(f"no key {', '.join(repr(k) for k in missing)} in the archive (keys: "
                               f"{', '.join(archive.files) or 'none'}; a log holds t, q, tau)", where=where)
        arrays = {}
        for key in ("t", "q", "tau"):
            try:
                a = archive[key]
            except (ValueError, OSError, zipfile.BadZipFile) as err:
                reason = "holds Python objects (pickled); a log holds numbers only" \
                    if "allow_pickle" in str(err) or "pickle" in str(err) else f"cannot be read: {err}"
                raise DataLogError(f"key '{key}' {reason}", where=where) from None
            if a.dtype.kind not in "biuf":
                raise DataLogError(f"key '{key}' holds {a.dtype} values; a log holds numbers only",
                                   where=where)
            arrays[key] = a.astype(float)
    t, q, tau = arrays["t"], arrays["q"], arrays["tau"]
    if t.ndim != 1:
        raise DataLogError(f"key 't' must be one value per sample, shape (N,), got {t.shape}", where=where)
    for key, a in (("q", q), ("tau", tau)):
        if a.ndim not in (1, 2):
            raise DataLogError(f"key '{key}' must have shape (N, joints), got {a.shape}", where=where)
    q, tau = (a[:, None] if a.ndim == 1 else a for a in (q, tau))
    return t, q, tau, {"t": "key 't'", "q": "key 'q'", "tau": "key 'tau'"}


def _csv(raw: bytes, file: str):
    text = decode_utf8(raw, file, DataLogError)
    lines = text.splitlines()
    if not lines:
        raise DataLogError("the CSV file is empty (a header row t, q1..qn, tau1..taun comes first)",
                           where=SourceLoc(file))
    header = [h.strip() for h in lines[0].split(",")]
    qc = [k for k, h in enumerate(header) if h.startswith("q")]
    tc = [k for k, h in enumerate(header) if h.startswith("tau")]
    if header[0] != "t" or not qc or len(qc) != len(tc) or len(qc) + len(tc) + 1 != len(header):
        raise DataLogError(f"the CSV header must be t, q1..qn, tau1..taun (as many tau as q columns), "
                           f"got {', '.join(header)}", where=SourceLoc(file, 1))
    rows = [(number, line) for number, line in enumerate(lines[1:], start=2) if line.strip()]
    values = np.empty((len(rows), len(header)))
    for r, (number, line) in enumerate(rows):
        cells = line.split(",")
        if len(cells) != len(header):
            raise DataLogError(f"{len(cells)} values in this row, the header has {len(header)} columns",
                               where=SourceLoc(file, number))
        for c, cell in enumerate(cells):
            try:
                values[r, c] = float(cell)
            except ValueError:
                raise DataLogError(f"column '{header[c]}': {cell.strip()!r} is not a number",
                                   where=SourceLoc(file, number)) from None
    csv_rows = [number for number, _ in rows]
    names = {"t": "column 't'", "q": [f"column '{header[k]}'" for k in qc],
             "tau": [f"column '{header[k]}'" for k in tc], "rows": csv_rows}
    return values[:, 0], values[:, qc], values[:, tc], names


def _check(t, q, tau, names, joints, file):
    """The checks shared by both formats (see the module docstring)."""
    rows = names.get("rows")

    def at(sample):
        return SourceLoc(file, rows[sample]) if rows else SourceLoc(file)

    def column(key, j):
        label = names[key]
        return label[j] if isinstance(label, list) else f"{label}, column {j + 1}"

    N = t.shape[0]
    if q.shape[0] != N or tau.shape[0] != N:
        raise DataLogError(f"t, q and tau must have one row per sample; got {N}, {q.shape[0]} and "
                           f"{tau.shape[0]} rows", where=SourceLoc(file))
    if q.shape[1] != tau.shape[1]:
        raise DataLogError(f"q has {q.shape[1]} columns and tau {tau.shape[1]}; both need one per joint",
                           where=SourceLoc(file))
    if joints is not None and q.shape[1] != joints:
        label = f"columns {', '.join(c.split(' ', 1)[1] for c in names['q'])}" if rows else "key 'q'"
        count = f"{q.shape[1]} column{'s' if q.shape[1] != 1 else ''}"
        raise DataLogError(f"{label}: {count} of q (and of tau), but the robot has {joints} joints; "
                           "a log holds one column of q and of tau per joint",
                           where=SourceLoc(file, 1) if rows else SourceLoc(file))
    if N < MIN_SAMPLES:
        raise DataLogError(f"{N} sample{'s' if N != 1 else ''}; a log needs at least {MIN_SAMPLES}",
                           where=SourceLoc(file))
    for key, a in (("t", t[:, None]), ("q", q), ("tau", tau)):
        bad = np.argwhere(~np.isfinite(a))
        if bad.size:
            i, j = (int(x) for x in bad[0])
            label = names["t"] if key == "t" else column(key, j)
            when = "" if key == "t" else f" (t = {t[i]:g} s)"
            raise DataLogError(f"{label}: sample {i + 1}{when} is {a[i, j]}, not a finite number",
                               where=at(i))
    dt = np.diff(t)
    step = float(dt[0])
    if not step > 0:
        raise DataLogError(f"{names['t']}: time must increase, but samples 1 and 2 are at {t[0]:g} "
                           f"and {t[1]:g} s", where=at(1))
    uneven = np.nonzero(~np.isclose(dt, step, rtol=1e-6, atol=1e-12))[0]
    if uneven.size:
        k = int(uneven[0])
        raise DataLogError(f"{names['t']}: samples must be uniformly spaced in time; the step from "
                           f"sample {k + 1} to {k + 2} is {dt[k]:g} s, the first is {step:g} s",
                           where=at(k + 1))
