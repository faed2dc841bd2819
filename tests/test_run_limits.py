"""A run's size is estimated before anything of it is allocated: its major steps, its log grid and
the memory of the whole batch, each refused with its exact message at the setting that causes it,
in milliseconds; a user who means it raises the limit with its environment variable."""
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from textwrap import dedent

import pytest

import blocksim
from blocksim.engine import context, plan
from blocksim.engine.run_size import major_steps
from blocksim.engine.scheduler import run_settings
from blocksim.errors import BlocksimError, SampleTimeError
from blocksim.reading.limits import LimitError

ROOT = Path(__file__).resolve().parents[1]

DIAGRAM = """
blocksim: 1
name: oscillator and a hold
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: -4.0}
  hold:   {type: ZeroOrderHold, period: 0.01}
connections:
  - v -> x
  - x -> spring
  - spring -> v
  - x -> hold
simulation:
  stop_time: 1
  solver: rk4
  step: 0.001
log:
  signals: [x.out, hold.out]
"""

QUICK = 5.0
"""s: a refusal comes in milliseconds; this generous bound proves that nothing hangs."""


def diagram(tmp_path, simulation: dict | None = None, log: dict | None = None,
            hold_period: str | None = "0.01"):
    """DIAGRAM with its simulation and log tables replaced (None: as they are) and the hold's
    period (None: no hold), written."""
    text = dedent(DIAGRAM).replace("period: 0.01", f"period: {hold_period}")
    if hold_period is None:
        text = "".join(row for row in text.splitlines(True) if "hold" not in row)
    if simulation is not None:
        head, _, tail = text.partition("simulation:\n")
        text = head + "simulation:\n" + "".join(f"  {k}: {v}\n" for k, v in simulation.items()) \
            + "log:" + tail.partition("log:")[2]
    if log is not None:
        head, _, _ = text.partition("log:\n")
        text = head + "log:\n" + "".join(f"  {k}: {v}\n" for k, v in log.items())
    path = tmp_path / "d.yaml"
    path.write_text(text)
    return path


def line_of(path, text: str) -> int:
    return next(n for n, row in enumerate(path.read_text().splitlines(), 1) if text in row)


@pytest.fixture
def nothing_allocated(monkeypatch):
    """Fail the test if a run's log grid, log arrays or Context are allocated."""
    def refuse(*args, **kwargs):
        raise AssertionError("a run's arrays were allocated before the run was refused")
    monkeypatch.setattr(plan, "log_times", refuse)
    monkeypatch.setattr(context.RunContext, "__init__", refuse)


def refusal(path, **settings) -> LimitError:
    """The LimitError of building a Simulator for path, checked to come quickly."""
    started = time.perf_counter()
    with pytest.raises(LimitError) as info:
        blocksim.Simulator(blocksim.load(path), **settings)
    assert time.perf_counter() - started < QUICK
    assert isinstance(info.value, BlocksimError)
    return info.value


STEPS_TAIL = "; if you mean it, raise the limit with the environment variable BLOCKSIM_MAX_STEPS"
SAMPLES_TAIL = ("; if you mean it, raise the limit with the environment variable "
                "BLOCKSIM_MAX_LOG_SAMPLES")


def test_too_many_fixed_steps_are_refused_at_the_step_and_a_raised_limit_runs(
        tmp_path, monkeypatch, nothing_allocated):
    path = diagram(tmp_path)
    monkeypatch.setenv("BLOCKSIM_MAX_STEPS", "100")
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'step: 0.001')}: the run takes 1,000 major steps, "
                        "more than the limit of 100 (the span 1 s / simulation.step 0.001 s)"
                        + STEPS_TAIL)
    assert err.limit == "steps"
    monkeypatch.undo()
    monkeypatch.setenv("BLOCKSIM_MAX_STEPS", "2000")
    result = blocksim.simulate(blocksim.load(path))
    assert result.t[-1] == 1.0 and result.stats["major_steps"] == 1001
    assert abs(result["x.out"][-1, 0] - math.cos(2.0)) < 1e-9


def test_a_step_of_5e_324_is_refused_without_overflow(tmp_path, nothing_allocated):
    path = diagram(tmp_path, {"stop_time": 1, "solver": "rk4", "step": "5.0e-324"},
                   log={"signals": "[x.out]"})
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'step: 5.0e-324')}: the run takes inf major "
                        "steps, more than the limit of 1,000,000,000 (the span 1 s / "
                        "simulation.step 4.94066e-324 s)" + STEPS_TAIL)


def test_a_stop_time_too_far_is_refused_at_the_stop_time(tmp_path, nothing_allocated):
    path = diagram(tmp_path, {"stop_time": "1.0e+12", "solver": "rk4", "step": 0.001})
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'stop_time')}: the run takes 1e+15 major steps, "
                        "more than the limit of 1,000,000,000 (the span 1e+12 s / simulation.step "
                        "0.001 s)" + STEPS_TAIL)
    # a keyword setting is located as one
    err = refusal(diagram(tmp_path), stop_time=1e308)
    assert str(err).startswith("keyword stop_time: the run takes inf major steps")


def test_the_fixed_step_of_the_fastest_period_is_located_at_that_period(tmp_path, monkeypatch,
                                                                        nothing_allocated):
    path = diagram(tmp_path, {"stop_time": 1, "solver": "rk4"}, hold_period="1.0e-12")
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'period: 1.0e-12')}: the run takes "
                        "1,000,000,000,000 major steps, more than the limit of 1,000,000,000 (the "
                        "span 1 s / the fixed step 1e-12 s, the period of block 'hold')"
                        + STEPS_TAIL)


def test_adaptive_runs_are_bounded_by_max_step_and_by_their_fastest_period(tmp_path,
                                                                          nothing_allocated):
    path = diagram(tmp_path, {"stop_time": 1, "solver": "dopri5", "max_step": "5.0e-324"},
                   log={"signals": "[x.out]", "every": 0.01})
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'max_step')}: the run takes inf major steps, "
                        "more than the limit of 1,000,000,000 (the span 1 s / simulation.max_step "
                        "4.94066e-324 s)" + STEPS_TAIL)
    path = diagram(tmp_path, {"stop_time": 1, "solver": "dopri5"},
                   log={"signals": "[x.out]", "every": 0.01}, hold_period="1.0e-300")
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'period: 1.0e-300')}: the run takes inf major "
                        "steps, more than the limit of 1,000,000,000 (the span 1 s / the period "
                        "1e-300 s of block 'hold')" + STEPS_TAIL)


def test_an_adaptive_run_without_max_step_has_no_step_estimate(tmp_path):
    path = diagram(tmp_path, {"stop_time": "1.0e+300", "solver": "dopri5"},
                   log={"signals": "[x.out]"}, hold_period="1.0e+299")
    d = blocksim.load(path)
    sim = blocksim.Simulator(d)            # built, not run: 10 hits of the hold, no max_step
    assert len(sim.simulation.log_grid) == 1001
    assert major_steps(d.settings, sim.simulation.settings, sim.cd)[0] == 10
    path = diagram(tmp_path, {"stop_time": "1.0e+300", "solver": "dopri5"},
                   log={"signals": "[x.out]"}, hold_period=None)
    d = blocksim.load(path)
    cd = d.compile()
    assert major_steps(d.settings, run_settings(d.settings, d.log_settings, cd), cd) is None


def test_a_log_grid_too_fine_is_refused_at_log_every(tmp_path, monkeypatch, nothing_allocated):
    path = diagram(tmp_path, {"stop_time": 1, "solver": "dopri5"},
                   log={"signals": "[x.out]", "every": "1.0e-300"})
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'every')}: the log's time grid has inf samples, "
                        "more than the limit of 100,000,000 (the span 1 s / log.every 1e-300 s, "
                        "+ 1)" + SAMPLES_TAIL)
    assert err.limit == "log_samples"
    # the fixed step is the log interval when log.every is not set: located at the step
    monkeypatch.setenv("BLOCKSIM_MAX_LOG_SAMPLES", "500")
    path = diagram(tmp_path)
    err = refusal(path)
    assert str(err) == (f"{path}:{line_of(path, 'step: 0.001')}: the log's time grid has 1,001 "
                        "samples, more than the limit of 500 (the span 1 s / the log interval "
                        "0.001 s, the fixed step (log.every is not set), + 1)" + SAMPLES_TAIL)


def test_a_span_beyond_the_largest_double_is_refused_at_the_stop_time(tmp_path):
    path = diagram(tmp_path, {"start_time": "-1.0e+308", "stop_time": "1.0e+308",
                              "solver": "dopri5"})
    started = time.perf_counter()
    with pytest.raises(SampleTimeError) as info:
        blocksim.load(path).settings
    assert time.perf_counter() - started < QUICK
    assert str(info.value) == (f"{path}:{line_of(path, 'stop_time')}: the span stop_time - "
                               "start_time (1e+308 s - -1e+308 s) is more than the largest double "
                               "(1.8e+308 s)")


@pytest.mark.parametrize("key, value, message", [
    ("stop_time", ".nan", "simulation.stop_time: a time must be finite, got nan"),
    ("stop_time", ".inf", "simulation.stop_time: a time must be finite, got inf"),
    ("step", ".inf", "simulation.step: a time must be finite, got inf"),
    ("max_step", ".nan", "simulation.max_step must be a positive number (or .inf), got nan"),
])
def test_non_finite_times_are_refused_at_their_line(tmp_path, key, value, message):
    table = {"stop_time": 1, "solver": "rk4", "step": 0.001, key: value}
    path = diagram(tmp_path, table)
    with pytest.raises(BlocksimError) as info:
        blocksim.Simulator(blocksim.load(path))
    assert str(info.value) == f"{path}:{line_of(path, key + ':')}: {message}"


def test_a_batch_beyond_the_memory_limit_is_refused_with_its_numbers(tmp_path, monkeypatch):
    path = diagram(tmp_path, log={"signals": "[x.out, hold.out]", "every": 0.01})
    batch = {"spring.gain": [-4.0] * 1000}
    monkeypatch.setenv("BLOCKSIM_MAX_RUN_MEMORY", "1e6")
    with monkeypatch.context() as patch:
        patch.setattr(plan, "log_times", lambda *a: pytest.fail("log grid allocated"))
        err = refusal(path, batch=batch)
    # log: 101 samples x (2 values x 1,000 members + the time) x 8 bytes = 1,616,808 bytes;
    # the rest: (4 signals + 2 states and their derivatives + rk4's (4 + 4) x 2) x 1,000 x 8 bytes
    assert str(err) == (f"{path}:{line_of(path, 'every')}: the run needs 1.81 MB: its log 1.62 MB "
                        "(101 samples x 2 values x 1,000 members) and its states, signals and "
                        "solver stages 192 kB (24 values x 1,000 members), more than the 1 MB "
                        "that BLOCKSIM_MAX_RUN_MEMORY allows; log fewer signals, a coarser log "
                        "interval, fewer members, or raise BLOCKSIM_MAX_RUN_MEMORY")
    monkeypatch.setenv("BLOCKSIM_MAX_RUN_MEMORY", "2e6")
    result = blocksim.simulate(blocksim.load(path), batch=batch)
    assert result["x.out"].shape == (1000, 101, 1)


def test_the_machine_s_memory_bounds_a_run_when_no_variable_is_set(tmp_path, monkeypatch):
    from blocksim.reading import limits
    monkeypatch.delenv("BLOCKSIM_MAX_RUN_MEMORY", raising=False)
    monkeypatch.setattr(limits, "available_memory", lambda: 22_100_000)
    path = diagram(tmp_path, {"stop_time": 2000, "solver": "rk4", "step": 0.001})
    err = refusal(path, batch={"spring.gain": [-4.0] * 2})
    assert str(err).startswith(f"{path}:{line_of(path, 'signals')}: the run needs 80 MB: its log "
                               "80 MB (2,000,001 samples x 2 values x 2 members)")
    assert str(err).endswith("more than the 22.1 MB available on this machine now; log fewer "
                             "signals, a coarser log interval, fewer members, or set "
                             "BLOCKSIM_MAX_RUN_MEMORY")


def test_the_cli_refuses_in_one_line_without_traceback(tmp_path):
    path = diagram(tmp_path)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "BLOCKSIM_MAX_STEPS": "10"})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: {path}:{line_of(path, 'step: 0.001')}: the run takes 1,000 major steps, more "
        "than the limit of 10 (the span 1 s / simulation.step 0.001 s)" + STEPS_TAIL]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_period_beyond_the_run_runs_compiled(tmp_path, compiled_cache):
    """A period far longer than the run (1e20 s: 1e22 ticks of the 0.01 s step, beyond int64)
    hits once, at the start, in the compiled loop as in the interpreted one."""
    path = diagram(tmp_path, {"stop_time": 1, "solver": "rk4", "step": 0.01},
                   hold_period="1.0e+20")
    compiled = blocksim.simulate(blocksim.load(path), mode="compiled")
    interpreted = blocksim.simulate(blocksim.load(path), mode="interpreted")
    assert compiled.stats["mode"] == "compiled" and compiled.stats["major_steps"] == 101
    assert (compiled["hold.out"] == 1.0).all()
    assert (compiled["x.out"] == interpreted["x.out"]).all()
