"""The compiled adaptive loop (engine/adaptive_loop.py): a run under rk23, dopri5 or dop853 without
zero crossings steps inside compiled code, and takes the interpreted run's steps to the last bit
(the same step-size rules and dense output, solvers/step_control.py): the same log, the same
counters, the same errors, the same partial log after an interrupt."""
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.engine import adaptive_loop
from blocksim.errors import BlocksimError
from test_divergence import BLOWUP

pytestmark = pytest.mark.usefixtures("compiled_cache")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

MULTIRATE = """
blocksim: 1
blocks:
  step:    {type: Step, time: 0.35, initial: 0.0, final: 1.0}
  sampler: {type: ZeroOrderHold, period: 0.1}
  err:     {type: Sum, signs: "+-"}
  k:       {type: Gain, gain: 3.0}
  x:       {type: Integrator, x0: 0.2}
  v:       {type: Integrator, x0: 0.0}
  damp:    {type: Gain, gain: -0.7}
  force:   {type: Sum, signs: "++-"}
connections: [step -> err.in1, x -> sampler, sampler -> err.in2, err -> k, k -> force.in1,
              v -> damp, damp -> force.in2, x -> force.in3, force -> v, v -> x]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [x.out, v.out, sampler.out], every: 0.01}
"""


def runs(diagram, **settings):
    """(interpreted Result, compiled Result, compiled Simulator) of one diagram."""
    out = []
    for mode in ("interpreted", "compiled"):
        sim = blocksim.Simulator(diagram, mode=mode, **settings)
        out += [sim.run(), sim]
    return out[0], out[2], out[3]


def assert_same_run(a, b):
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert {k: v for k, v in b.stats.items() if k != "mode"} == \
        {k: v for k, v in a.stats.items() if k != "mode"}


@pytest.mark.parametrize("solver", ["dopri5", "rk23", "dop853"])
def test_w1_under_an_adaptive_solver_steps_in_compiled_code_bit_for_bit(solver):
    diagram = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff")
    a, b, sim = runs(diagram, solver=solver, rtol=1e-6, atol=1e-8)
    assert sim.parts[0].backend.loop == "run_adaptive_one" and b.stats["mode"] == "compiled"
    assert_same_run(a, b)
    if solver == "dopri5":        # the study's reference run: 249 steps, 1543 evaluations
        assert (b.stats["nsteps"], b.stats["nfev"]) == (249, 1543)
    # the tracking error the README quotes for W1 pid_ff: max |q_d - q| = (0.0068, 0.0054) rad
    err = np.max(np.abs(b["ref.q"] - b["plant.q"]), axis=0)
    np.testing.assert_allclose(err, [0.0068, 0.0054], atol=1e-4)


def test_sample_hits_and_breakpoints_bound_the_compiled_steps(tmp_path):
    """A 10 Hz sampler and a step at 0.35 s: every hit and the breakpoint is a major step, the
    solver restarts there, and the log between them comes from the dense output."""
    path = tmp_path / "multirate.yaml"
    path.write_text(dedent(MULTIRATE))
    a, b, sim = runs(blocksim.load(path))
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_run(a, b)
    assert b.stats["major_steps"] == 22           # t = 0, 0.1, ..., 2.0 and the step at 0.35
    held = b["sampler.out"][:, 0]
    i = np.searchsorted(b.t, 0.35)
    assert held[i - 1] == held[i - 4]             # held between the hits at 0.3 and 0.4


def test_a_batch_shares_its_steps_in_compiled_code_as_interpreted(tmp_path):
    path = tmp_path / "multirate.yaml"
    path.write_text(dedent(MULTIRATE))
    diagram = blocksim.load(path)
    out = []
    for mode in ("interpreted", "compiled"):
        out.append(blocksim.simulate(diagram, batch={"k.gain": [2.0, 3.0, 4.5]}, mode=mode))
    assert_same_run(*out)


def test_a_run_that_diverges_fails_with_the_interpreted_message(tmp_path):
    path = tmp_path / "blowup.yaml"
    path.write_text(BLOWUP.replace("SOLVER", "dopri5"))
    messages = []
    for mode in ("interpreted", "compiled"):
        with pytest.raises(BlocksimError) as caught:
            blocksim.simulate(blocksim.load(path), mode=mode)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "x[0]" in messages[1] and "blowup.yaml:5" in messages[1]


def test_an_interrupt_between_chunks_keeps_the_log_up_to_the_time_reached(tmp_path, monkeypatch):
    """Ctrl-C arrives while the compiled loop runs a chunk of steps: the log holds every grid
    sample before the time reached, equal to the whole run's, and ends with a sample at that
    time; the Simulator raises KeyboardInterrupt with the partial result kept."""
    path = tmp_path / "multirate.yaml"
    path.write_text(dedent(MULTIRATE))
    diagram = blocksim.load(path)
    whole = blocksim.Simulator(diagram, mode="compiled").run()

    class CtrlC(adaptive_loop.Progress):
        def update(self, t, force=False):
            if t > 0.2:
                raise KeyboardInterrupt
    monkeypatch.setattr(adaptive_loop, "Progress", CtrlC)
    monkeypatch.setattr(adaptive_loop, "first_chunk", lambda elements, least: 16)  # chunks of 16
    sim = blocksim.Simulator(diagram, mode="compiled")
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    r = sim.last_result
    assert r.interrupted and np.all(np.diff(r.t) > 0)
    reached = r.t[-1]
    assert 0.2 < reached < 2.0 and reached not in whole.t
    n = len(r.t) - 1
    np.testing.assert_array_equal(r.t[:n], whole.t[:n])
    np.testing.assert_array_equal(r["x.out"][:n], whole["x.out"][:n])
    assert whole.t[n] > reached


LOG_FEW = """
blocksim: 1
blocks:
  s: {type: Sine, amplitude: 1.0, frequency: 0.5}
  k: {type: Gain, gain: 3.0}
  x: {type: Integrator}
  w: {type: Gain, gain: -2.0}
connections: [s -> k, k -> x, x -> w]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-9, atol: 1.0e-12}
log: {signals: [x.out, w.out], every: 0.001}
"""


def test_a_log_sample_computes_only_what_the_logged_signals_read(tmp_path):
    """x' = 3 sin(pi t), w = -2 x, logging x and w: the log samples between steps recompute w
    (it reads x directly) and leave the sine and the gain feeding the integrator to the solver's
    stages (OutputStep.log_read); the log is the interpreted run's to the last bit, and
    x = 3 (1 - cos(pi t)) / pi."""
    path = tmp_path / "log_few.yaml"
    path.write_text(LOG_FEW)
    a, b, sim = runs(blocksim.load(path))
    assert {o.block: o.log_read for o in sim.parts[0].plan.output_steps} == \
        {"s": False, "k": False, "x": True, "w": True}
    assert len(b.t) == 2001 and b.stats["nsteps"] < 200      # most samples inside steps
    assert_same_run(a, b)
    x = 3 * (1 - np.cos(np.pi * b.t)) / np.pi
    np.testing.assert_allclose(b["x.out"][:, 0], x, atol=1e-8)
    np.testing.assert_array_equal(b["w.out"], -2.0 * b["x.out"])
