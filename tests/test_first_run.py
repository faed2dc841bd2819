"""A first run on a machine does not wait for the compiler: kernels numba has not compiled yet run as
their Python twins (the same arithmetic), and a background process compiles them for later runs.

Each test runs blocksim in a subprocess with empty numba and blocksim caches, as a fresh clone does.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.twins import python_twin

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import json, sys, blocksim
d = blocksim.load(sys.argv[1], variant=sys.argv[2] if len(sys.argv) > 2 else None)
r = blocksim.simulate(d)
print(json.dumps({"t": r.t[-1], "signals": {k: r[k][-1].tolist() for k in r.names},
                  "metrics": {k: list(map(float, v)) for k, v in r.metrics.items()}}))
"""


def fresh_env(tmp_path, **extra):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               BLOCKSIM_CACHE_DIR=str(tmp_path / "blocksim"), BLOCKSIM_FIRST_RUN="python",
               BLOCKSIM_MODE="auto", PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def run(args, env):
    done = subprocess.run([sys.executable, "-c", RUN, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def worker_pid(stderr: str) -> int | None:
    found = re.search(r"background process \(pid (\d+)\)", stderr)
    return int(found.group(1)) if found else None


def wait_for_exit(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def stop_worker(pid: int | None) -> None:
    if pid is not None:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def test_a_first_run_uses_twins_then_later_runs_load_what_the_background_compiled(tmp_path):
    env = fresh_env(tmp_path)
    first, said = run(["examples/mass_spring_damper.yaml"], env)
    pid = worker_pid(said)
    try:
        assert pid is not None, said
        assert "are not compiled on this machine yet" in said and "integrator" in said.lower()
        # the twins' run is the analytic mass-spring-damper: x'' + 0.4 x' + 4 x = 0, x(0) = 1
        wd = math.sqrt(4.0 - 0.04)
        x10 = math.exp(-2.0) * (math.cos(wd * 10) + 0.2 / wd * math.sin(wd * 10))
        assert first["t"] == 10.0
        assert first["signals"]["x.out"][0] == pytest.approx(x10, abs=1e-8)
        assert wait_for_exit(pid, 240), "the background compilation did not finish"
        spool = tmp_path / "blocksim" / "compiled" / "compile-requests"
        assert not list(spool.glob("*.request"))
        assert "compiled blocksim.blocks.continuous.integrator" in (spool / "worker.log").read_text()
        second, said_again = run(["examples/mass_spring_damper.yaml"], env)
        assert "not compiled on this machine yet" not in said_again
        assert "note: compiling" not in said_again
        assert second == first            # compiled kernels, the same numbers to the last bit
    finally:
        stop_worker(pid)


def test_a_robot_run_on_twins_equals_the_run_on_compiled_kernels(tmp_path):
    """The two-link arm's dynamics, PID and feedforward run uncompiled, with the same metrics."""
    twins, said = run(["examples/two_link_pid_vs_ff.yaml", "pid_ff"],
                      fresh_env(tmp_path))
    stop_worker(worker_pid(said))
    assert "are not compiled on this machine yet" in said and "note: compiling" not in said
    compiled = blocksim.simulate(blocksim.load(ROOT / "examples/two_link_pid_vs_ff.yaml",
                                               variant="pid_ff"))
    for name, values in compiled.metrics.items():
        assert twins["metrics"][name] == pytest.approx(list(values), rel=1e-12, abs=1e-15)
    assert twins["signals"]["plant.q"] == pytest.approx(compiled["plant.q"][-1].tolist(),
                                                        rel=1e-12)


def test_first_run_compile_waits_for_the_compiler_and_says_so(tmp_path):
    done = subprocess.run([sys.executable, "-c", RUN, "examples/mass_spring_damper.yaml"],
                          env=fresh_env(tmp_path, BLOCKSIM_FIRST_RUN="compile"), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "not compiled on this machine yet" not in done.stderr
    assert not (tmp_path / "blocksim" / "compiled" / "compile-requests").exists()


def test_a_bad_first_run_setting_is_a_clear_error(tmp_path):
    done = subprocess.run([sys.executable, "cli.py", "simulate", "examples/mass_spring_damper.yaml"],
                          env=fresh_env(tmp_path, BLOCKSIM_FIRST_RUN="later"), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "BLOCKSIM_FIRST_RUN='later'" in done.stderr and "Traceback" not in done.stderr


def test_a_twin_calls_twins_through_modules_and_closures():
    """python_twin replaces the numba functions a function reaches (globals, module attributes)."""
    from blocksim.models import model_data as md
    from blocksim.models.robot import RobotModel
    model = md.stack_model([RobotModel.preset("two_link")], use_closed_form=False)
    q, qd, qdd = (np.array([[0.3, -0.7]]), np.array([[1.1, 0.4]]), np.array([[-2.0, 0.5]]))
    no_wrench = np.zeros((0, 6))
    expected, got = np.zeros((1, 2)), np.zeros((1, 2))
    md.inverse_dynamics(model, md.make_data(2, 1), 0, False, q, qd, qdd, no_wrench, expected)
    twin = python_twin(md.inverse_dynamics)
    twin(model, md.make_data(2, 1), 0, False, q, qd, qdd, no_wrench, got)
    assert got == pytest.approx(expected, rel=1e-13)
    assert np.abs(expected).max() > 1.0
    assert not hasattr(twin, "overloads")       # a plain Python function
