"""Data out: the wide and long tables of a run (Result.to_dataframe), and the files simulate
--format writes (signals.csv, signals.mat, signals.parquet), read back with pandas, scipy.io and
pyarrow, give the logged values exactly, in the same columns."""
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.engine import exports
from blocksim.errors import BlocksimError, MissingExtraError, require_extra

ROOT = Path(__file__).resolve().parents[1]

TWO = """
blocksim: 1
blocks:
  s: {type: Sine, amplitude: [1.0, 2.0], frequency: 0.7}
  g: {type: Gain, gain: 3.0}
connections: [s -> g]
simulation: {stop_time: 1, solver: rk4, step: 0.01, mode: interpreted}
log: {signals: [s.out, g.out]}
"""


@pytest.fixture(scope="module")
def runs():
    d = blocksim.load(TWO)
    return blocksim.simulate(d), blocksim.simulate(d, batch={"g.gain": [1.0, -2.0, 0.5]})


def test_the_wide_table_has_member_time_and_one_column_per_element(runs):
    plain, batch = runs
    frame = plain.to_dataframe()
    assert list(frame.columns) == ["member", "t", "s.out[0]", "s.out[1]", "g.out[0]", "g.out[1]"]
    assert (frame["member"] == 0).all() and len(frame) == len(plain.t) == 101
    np.testing.assert_array_equal(frame["g.out[1]"].to_numpy(), plain["g.out"][:, 1])
    wide = batch.to_dataframe("wide")
    assert len(wide) == 3 * 101 and list(wide["member"].unique()) == [0, 1, 2]
    np.testing.assert_array_equal(wide[wide.member == 1]["g.out[0]"].to_numpy(),
                                  batch["g.out"][1, :, 0])
    np.testing.assert_array_equal(wide[wide.member == 2]["t"].to_numpy(), batch.t)


def test_the_long_table_has_a_row_per_member_time_signal_and_element(runs):
    _, batch = runs
    long = batch.to_dataframe("long")
    assert list(long.columns) == ["member", "t", "signal", "element", "value"]
    assert len(long) == 3 * 101 * 4
    pick = long[(long.signal == "g.out") & (long.element == 1) & (long.member == 1)]
    np.testing.assert_array_equal(pick["value"].to_numpy(), batch["g.out"][1, :, 1])
    np.testing.assert_array_equal(pick["t"].to_numpy(), batch.t)
    with pytest.raises(BlocksimError, match="form is 'wide' or 'long', got 'tall'"):
        batch.to_dataframe("tall")


@pytest.mark.parametrize("which", [0, 1])
def test_each_format_read_back_gives_the_logged_values_exactly(runs, which, tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq
    import scipy.io
    r = runs[which]
    folder = r.save(tmp_path / "run", formats=("csv", "mat", "parquet"))
    wide = exports.wide_columns(r)
    table = pq.read_table(folder / "signals.parquet")
    assert table.column_names == list(wide)
    for name, values in wide.items():
        np.testing.assert_array_equal(table.column(name).to_numpy(), values)
    mat = scipy.io.loadmat(folder / "signals.mat")
    names = [str(c[0]) for c in mat["columns"].ravel()]
    assert names == list(wide)
    for k, (name, values) in enumerate(wide.items()):
        np.testing.assert_array_equal(mat["data"][:, k], values)
    frame = pd.read_parquet(folder / "signals.parquet")
    np.testing.assert_array_equal(frame["s.out[1]"].to_numpy(), wide["s.out[1]"])
    with open(folder / "signals.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    column = rows[0].index("g.out[1]" if which == 0 else "s.out[1]#1")
    assert column == 4                  # t, s.out[0], s.out[1] (batch: #0, #0, then #1, #1)
    again = np.array([float(row[column]) for row in rows[1:]])
    np.testing.assert_array_equal(again, r["g.out"][:, 1] if which == 0 else r["s.out"][1, :, 1])


def test_npz_alone_when_no_table_is_asked_for(runs, tmp_path):
    folder = runs[0].save(tmp_path / "run", formats=())
    assert sorted(p.name for p in folder.iterdir()) == ["diagram.yaml", "metrics.json", "run.json",
                                                        "signals.npz"]
    with pytest.raises(BlocksimError, match="--format xls: the formats are csv, mat, "
                                                     "parquet"):
        runs[0].save(tmp_path / "other", formats=("xls",))


def test_a_missing_extra_is_named_with_its_install_command():
    with pytest.raises(MissingExtraError) as err:
        require_extra("blocksim_no_such_library", "data", "writing Parquet")
    assert str(err.value) == ("writing Parquet needs blocksim_no_such_library, which is not "
                              "installed: pip install -e '.[data]' (or pip install "
                              "blocksim_no_such_library)")


def test_simulate_format_writes_the_tables_of_every_variant(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(TWO + "variants:\n  a: {}\n  b: {g.gain: -1.0}\n")
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path), "--out",
                           str(out), "--format", "mat", "parquet", "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    for v in ("a", "b"):
        assert sorted(p.name for p in (out / v).iterdir()) == [
            "diagram.yaml", "metrics.json", "run.json", "signals.mat", "signals.npz",
            "signals.parquet"]
    import pyarrow.parquet as pq
    b = pq.read_table(out / "b" / "signals.parquet")
    np.testing.assert_array_equal(b.column("g.out[0]").to_numpy(),
                                  -b.column("s.out[0]").to_numpy())
