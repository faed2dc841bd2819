"""A diagram's metrics wherever it runs: simulate() from Python computes them (the CLI's table and
r.save()'s metrics.json give the same numbers), and a metric that cannot be computed is refused
before the run, by `check` as by `simulate`, at its file and line."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError

ROOT = Path(__file__).resolve().parents[1]

# x' = -x / tau from x0 = 1 against the reference exp(-t / tau) computed by a Function block
LAG = """\
blocksim: 1
name: first-order decay against its closed form
parameters: {tau: 0.5}
blocks:
  x:     {type: Integrator, x0: 1.0}
  k:     {type: Gain, gain: "${-1 / tau}"}
  exact: {type: Function, expr: "exp(-t / 0.5)", inputs: 1}
  zero:  {type: Constant, value: 0.0}
connections:
  - x -> k
  - k -> x
  - zero -> exact
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [x.out, exact.out], every: 0.01}
metrics:
  - {name: error, kind: max_abs_error, signal: x.out, reference: exact.out}
  - {name: last, kind: final_value, signal: x.out}
"""


def write(tmp_path, text, name="lag.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_simulate_from_python_computes_the_diagrams_metrics(tmp_path):
    r = blocksim.simulate(blocksim.load(write(tmp_path, LAG)))
    assert set(r.metrics) == {"error", "last"}
    assert r.metrics["last"][0] == pytest.approx(np.exp(-4.0), rel=1e-9)
    assert r.metrics["error"][0] < 1e-9
    assert r.metrics["error"][0] == np.max(np.abs(r["exact.out"] - r["x.out"]))
    saved = json.loads((r.save(tmp_path / "run") / "metrics.json").read_text())
    assert saved == r.metrics


def test_the_cli_table_and_python_give_the_same_metrics(tmp_path):
    path = write(tmp_path, LAG)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path), "--out",
                           str(tmp_path / "out"), "--quiet"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads((tmp_path / "out" / "metrics.json").read_text())["default"]
    assert cli == blocksim.simulate(blocksim.load(path)).metrics


@pytest.mark.parametrize("metric, message", [
    ("{name: e, kind: max_error, signal: x.out, reference: exact.out}",
     r"metric kind 'max_error' unknown \(did you mean 'max_abs_error'\?\)"),
    ("{name: e, kind: rms_error, signal: x.out}", r"metric 'e' \(rms_error\) needs 'reference'"),
    ("{name: e, kind: peak, signal: k.out}", r"metric 'e' reads signal 'k.out', which is not logged"),
    ("{name: e, kind: peak, signal: y.out}", r"no block 'y' to log"),
    ("{name: e, kind: event_times, block: x, reference: [1.0]}",
     r"metric 'e' \(event_times\): block 'x' has no event functions"),
    ("{name: [1, 2], kind: peak, signal: x.out}",
     r"metric name must be a text such as tracking, got \[1\., 2\.\]$"),
    ("{name: e, kind: peak, signal: x.out, from: soon}",
     r"metric 'e': from must be a time \(s\), a finite number, got 'soon'$"),
    ("{name: e, kind: peak, signal: x.out, to: .inf}",
     r"metric 'e': to must be a time \(s\), a finite number, got inf$"),
    ("{name: e, kind: peak, signal: x.out, from: 2.5}",
     r"metric 'e': its window starts at 2\.5 s, after the run ends at 2 s$"),
    ("{name: e, kind: peak, signal: x.out, to: -1.0}",
     r"metric 'e': its window ends at -1 s, before the run starts at 0 s$"),
    ("{name: e, kind: peak, signal: x.out, from: 1.5, to: 0.5}",
     r"metric 'e': its window starts at 1\.5 s, after it ends at 0\.5 s$"),
    (f"{{name: {'e' * 1000}, kind: rms_error, signal: x.out}}",
     rf"metric '{'e' * 59}\.\.\. \(1,002 characters\) \(rms_error\) needs 'reference'$"),
])
def test_a_metric_that_cannot_be_computed_is_refused_before_the_run(tmp_path, metric, message):
    text = LAG.replace("  - {name: last, kind: final_value, signal: x.out}", f"  - {metric}")
    path = write(tmp_path, text)
    line = text.splitlines().index(f"  - {metric}") + 1
    with pytest.raises(BlocksimError, match=message) as err:
        blocksim.Simulator(blocksim.load(path))
    assert f"lag.yaml:{line}" in str(err.value)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"lag.yaml:{line}" in proc.stderr and "Traceback" not in proc.stderr


def test_docs_metrics_md_is_the_catalogue():
    from blocksim.engine.metrics import METRIC_KINDS, markdown
    assert (ROOT / "docs" / "metrics.md").read_text() == markdown(), (
        "docs/metrics.md is out of date: run `python cli.py metrics --markdown --out docs/metrics.md`")
    assert all(f"## {name}\n" in markdown() for name in METRIC_KINDS)


def test_a_registered_kind_is_checked_and_computed_as_the_shipped_ones(tmp_path):
    from blocksim.engine.metrics import METRIC_KINDS, register_metric
    try:
        @register_metric("half_life", "signal", "s", "first time the signal falls to half its "
                         "initial value")
        def half_life(t, y, ref, options):
            return np.array([t[np.argmax(y[:, i] <= 0.5 * y[0, i])] for i in range(y.shape[1])])
        text = LAG.replace("  - {name: last, kind: final_value, signal: x.out}",
                           "  - {kind: half_life, signal: x.out}")
        r = blocksim.simulate(blocksim.load(write(tmp_path, text)))
        # x = exp(-t / 0.5): half at 0.5 ln 2 = 0.3466 s, the next 0.01 s log sample
        assert r.metrics["half_life"] == [pytest.approx(0.35)]
    finally:
        METRIC_KINDS.pop("half_life", None)
