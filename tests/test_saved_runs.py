"""A run's saved diagram is a diagram file of its own: it runs again, as it is, to the same numbers."""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def cli(*args):
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_the_saved_diagram_of_a_variant_runs_again_to_the_same_numbers(tmp_path):
    cli("simulate", ROOT / "examples" / "two_link_pid_vs_ff.yaml", "--variant", "pid_ff",
        "--set", "simulation.stop_time=0.2", "--out", tmp_path / "first", "--quiet")
    saved = tmp_path / "first" / "pid_ff" / "diagram.yaml"
    assert saved.read_text().startswith("# resolved from two_link_pid_vs_ff.yaml, variant pid_ff")
    cli("simulate", saved, "--out", tmp_path / "again", "--quiet")
    a = np.load(tmp_path / "first" / "pid_ff" / "signals.npz")
    b = np.load(tmp_path / "again" / "default" / "signals.npz")
    assert sorted(a.files) == sorted(b.files)
    for name in a.files:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
