"""examples/two_link_pid_vs_ff.yaml (workload W1) against the reference answers of benchmarks/README.md, and
its command-line run writing every variant's metrics."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "two_link_pid_vs_ff.yaml"
VARIANTS = ["pid", "pid_ff", "pid_ff_model_error_10", "pid_ff_model_error_30", "computed_torque",
            "pd_gravity"]

#: W1 (benchmarks/README.md), max |q_d - q| over [0, 2] s (scipy LSODA, rtol 1e-8), rad
REFERENCE = {"pid": [0.1931, 0.0867], "pid_ff": [0.0068, 0.0054],
             "pid_ff_model_error_10": [0.0150, 0.0102]}


def max_error(variant):
    # interpreted mode: the same kernels without compiling one step function per variant
    d = blocksim.load(EXAMPLE, variant=variant, set={"simulation.mode": "interpreted"})
    r = blocksim.simulate(d)
    assert len(r.t) == 2001 and r.t[-1] == 2.0
    return np.max(np.abs(r["ref.q"] - r["plant.q"]), axis=0)


@pytest.mark.parametrize("variant", sorted(REFERENCE))
def test_w1_max_tracking_error_matches_workloads_within_2_percent(variant):
    np.testing.assert_allclose(max_error(variant), REFERENCE[variant], rtol=0.02)


def test_cli_simulate_writes_metrics_of_every_variant(tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(EXAMPLE), "--out", str(out),
                    "--set", "simulation.mode=interpreted"], check=True, cwd=ROOT,
                   capture_output=True, text=True)
    metrics = json.loads((out / "metrics.json").read_text())
    assert sorted(metrics) == sorted(VARIANTS)
    for variant in VARIANTS:
        assert set(metrics[variant]) == {"max_abs_error", "rms_error"}
        assert len(metrics[variant]["max_abs_error"]) == 2
        assert (out / variant / "signals.npz").is_file()
    for variant, ref in REFERENCE.items():
        np.testing.assert_allclose(metrics[variant]["max_abs_error"], ref, rtol=0.02)
    # the seed's story: feedforward cuts PID's error by more than an order of magnitude, and a model
    # error in the feedforward costs accuracy, more for a larger error
    pid, ff = (np.array(metrics[v]["max_abs_error"]) for v in ("pid", "pid_ff"))
    e10, e30 = (np.array(metrics[v]["max_abs_error"]) for v in ("pid_ff_model_error_10",
                                                                 "pid_ff_model_error_30"))
    assert np.all(ff < pid / 10) and np.all(ff < e10) and np.all(e10 < e30) and np.all(e30 < pid)
