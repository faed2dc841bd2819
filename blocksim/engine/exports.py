"""A run's logged signals as one table for other tools: a pandas DataFrame (wide or long), MATLAB
.mat (scipy.io) and Parquet (pyarrow), with the same columns in every format.

The wide table has one row per batch member and log time and the columns `member` (0 for a
plain run), `t` (s) and one column per signal element, `block.port[i]`, in the units of that
port (SI; `python cli.py blocks TYPE` names them). The long table has one row per member, time,
signal and element: `member`, `t`, `signal` ('block.port'), `element` (i) and `value`. Values
are the logged float64 numbers, unrounded: a file read back gives them exactly.
"""
from __future__ import annotations

import numpy as np

from ..errors import BlocksimError, require_extra

FORMATS = ("csv", "mat", "parquet")
"""The table formats `simulate --format` writes beside signals.npz (the run's own record)."""

FILE_NAMES = {"csv": "signals.csv", "mat": "signals.mat", "parquet": "signals.parquet"}


def _members(result) -> list[tuple[str, np.ndarray]]:
    """(name, (B, n, width) values) of every logged signal, in the result's order."""
    return [(name, np.asarray(result._signals[name])) for name in result.names]


def wide_columns(result) -> dict[str, np.ndarray]:
    """The wide table as {column: values}: member, t, then `block.port[i]` per element; rows
    member by member, each member's rows in time order."""
    n = len(result.t)
    batch = result.batch if result.batched else 1
    columns = {"member": np.repeat(np.arange(batch, dtype=np.int64), n),
               "t": np.tile(np.asarray(result.t, dtype=float), batch)}
    for name, data in _members(result):
        for i in range(data.shape[2]):
            columns[f"{name}[{i}]"] = data[:, :, i].reshape(-1)
    return columns


def to_dataframe(result, form: str = "wide"):
    """The run's log as a pandas DataFrame: form 'wide' (columns member, t, block.port[i]) or
    'long' (member, t, signal, element, value); see the module's text for the units."""
    pd = require_extra("pandas", "data", "Result.to_dataframe")
    if form == "wide":
        return pd.DataFrame(wide_columns(result))
    if form != "long":
        raise BlocksimError(f"to_dataframe: form is 'wide' or 'long', got {form!r}")
    t = np.asarray(result.t, dtype=float)
    parts = []
    for name, data in _members(result):
        batch, n, width = data.shape
        parts.append(pd.DataFrame({
            "member": np.repeat(np.arange(batch, dtype=np.int64), n * width),
            "t": np.tile(np.repeat(t, width), batch),
            "signal": pd.Categorical([name] * (batch * n * width)),
            "element": np.tile(np.arange(width, dtype=np.int64), batch * n),
            "value": data.reshape(-1)}))
    if not parts:
        return pd.DataFrame({"member": [], "t": [], "signal": [], "element": [], "value": []})
    frame = pd.concat(parts, ignore_index=True)
    frame["signal"] = frame["signal"].astype(str)
    return frame


def write_mat(result, file) -> None:
    """The wide table as a MATLAB file: `columns` (a cell array of the column names) and `data`
    (a rows x columns double matrix), so `data(:, strcmp(columns, 'plant.q[0]'))` is a column."""
    import scipy.io
    columns = wide_columns(result)
    names = np.empty(len(columns), dtype=object)
    names[:] = list(columns)
    data = np.column_stack([np.asarray(v, dtype=float) for v in columns.values()])
    scipy.io.savemat(file, {"columns": names, "data": data}, do_compression=True,
                     oned_as="column")


def write_parquet(result, file) -> None:
    """The wide table as a Parquet file (member int64, the other columns float64)."""
    pa = require_extra("pyarrow", "data", "writing Parquet")
    pq = require_extra("pyarrow.parquet", "data", "writing Parquet")
    table = pa.table({k: pa.array(v) for k, v in wide_columns(result).items()})
    pq.write_table(table, file)


def check_formats(formats) -> tuple[str, ...]:
    """The formats asked for, checked against FORMATS, and their libraries present (before a run,
    so that a missing extra is said before minutes of simulation)."""
    for f in formats:
        if f not in FORMATS:
            raise BlocksimError(f"--format {f}: the formats are {', '.join(FORMATS)}")
    if "parquet" in formats:
        require_extra("pyarrow", "data", "writing Parquet")
    return tuple(dict.fromkeys(formats))
