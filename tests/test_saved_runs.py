"""A run's saved diagram is a diagram file of its own: it runs again, as it is, to the same numbers."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim

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


# ---- a run folder is written whole or not at all --------------------------------------------

TWO_VARIANTS = """\
blocksim: 1
name: decay
blocks:
  x: {type: Integrator, x0: 1.0}
  k: {type: Gain, gain: -1.0}
connections: [x -> k, k -> x]
simulation: {stop_time: 1.0, solver: rk4, step: 0.01}
metrics: [{name: last, kind: final_value, signal: x.out}]
variants: {slow: {k.gain: -0.5}, fast: {k.gain: -2.0}}
"""


def run_cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True)


def test_force_replaces_the_whole_earlier_run(tmp_path):
    """--force over a run with variants slow and fast, from a diagram with none: only the new run
    is there (no stale variant folders or figures beside its metrics.json)."""
    first = tmp_path / "first.yaml"
    first.write_text(TWO_VARIANTS)
    out = tmp_path / "out"
    assert run_cli("simulate", first, "--out", out, "--plot").returncode == 0
    assert {p.name for p in out.iterdir()} >= {"slow", "fast", "metrics.json"}
    second = tmp_path / "second.yaml"
    second.write_text(TWO_VARIANTS.split("variants:")[0])
    proc = run_cli("simulate", second, "--out", out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["default", "metrics.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]   # nothing left over


def test_a_run_killed_while_it_replaces_an_earlier_one_leaves_the_earlier_one_whole(tmp_path):
    import signal
    import time as clock
    path = tmp_path / "d.yaml"
    path.write_text(TWO_VARIANTS)
    out = tmp_path / "out"
    assert run_cli("simulate", path, "--out", out, "--variant", "slow").returncode == 0
    before = {p.name: p.read_bytes() for p in (out / "slow").iterdir()}
    proc = subprocess.Popen([sys.executable, str(ROOT / "cli.py"), "simulate", str(path), "--out",
                             str(out), "--force", "--set", "simulation.stop_time=1.0e5",
                             "--set", "log.every=1.0", "--set", "simulation.mode=interpreted"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = clock.monotonic() + 120
    while not list(tmp_path.glob(".out.partial-*")) and clock.monotonic() < deadline:
        clock.sleep(0.1)                 # the new run is being written
    clock.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert {p.name: p.read_bytes() for p in (out / "slow").iterdir()} == before
    r = blocksim.Result.load(out / "slow")
    np.testing.assert_allclose(r["x.out"][-1, 0], np.exp(-0.5), rtol=1e-8)


def test_a_full_disk_while_saving_is_an_error_and_loses_nothing(tmp_path, monkeypatch, capsys):
    """No space left while signals.npz is written: one line naming the reason, exit 1, the
    earlier run as it was and no staging folder left behind."""
    import errno

    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(TWO_VARIANTS)
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out), "--variant", "fast", "--quiet"]) == 0
    before = (out / "fast" / "signals.npz").read_bytes()

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(np, "savez_compressed", no_space)
    capsys.readouterr()
    assert main(["simulate", str(path), "--out", str(out), "--force", "--quiet"]) == 1
    assert "error: No space left on device" in capsys.readouterr().err
    assert (out / "fast" / "signals.npz").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["fast", "metrics.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_result_save_replaces_each_file_in_one_step(tmp_path, monkeypatch):
    """A save that fails half-way (the csv) leaves the earlier files whole, and no temporary file."""
    r = blocksim.simulate(blocksim.load(TWO_VARIANTS))
    folder = r.save(tmp_path / "run")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def broken(self, fh):
        fh.write("t,x\n1,")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(blocksim.Result, "_write_csv", broken)
    with pytest.raises(OSError):
        r.save(folder)
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert after["signals.csv"] == before["signals.csv"] and set(after) == set(before)


def test_a_study_whose_every_variant_fails_keeps_the_earlier_run(tmp_path, capsys):
    """--force over an earlier run, and no variant of the new study runs: nothing replaces the
    earlier run (byte for byte), no "saved to", exit 1 with each failure and the summary."""
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(TWO_VARIANTS)
    out = tmp_path / "out"
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 0
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    broken = tmp_path / "broken.yaml"
    broken.write_text(TWO_VARIANTS.replace("{slow: {k.gain: -0.5}, fast: {k.gain: -2.0}}",
                                           "{slow: {k.gain: '${slo}'}, fast: {k.gain: '${fas}'}}"))
    capsys.readouterr()
    assert main(["simulate", str(broken), "--out", str(out), "--force", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "saved to" not in captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("error: [slow] ") \
        and lines[1].startswith("error: [fast] ")
    assert lines[2] == f"error: 2 of 2 variants failed: slow, fast; nothing was written to {out}"
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
