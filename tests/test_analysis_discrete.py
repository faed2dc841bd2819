"""Discrete and multi-rate diagrams linearised as exact z-domain models over a period, and the
margins blocksim computes from them (docs/analysis.md): the W2 current-loop reference."""
import math
import textwrap

import numpy as np
import pytest

import blocksim
from blocksim.analysis import linear_model
from blocksim.analysis.margins import loop_margins, response
from blocksim.errors import BlocksimError

CURRENT_LOOP = "examples/analysis/current_loop.yaml"

MULTI_RATE = textwrap.dedent("""
    blocksim: 1
    blocks:
      u:     {type: Constant, value: 1.0}
      e:     {type: Sum, signs: "+-"}
      slow:  {type: ZeroOrderHold, period: 0.05}
      k:     {type: Gain, gain: 3.0}
      d:     {type: UnitDelay, period: 0.05}
      plant: {type: TransferFunction, num: [2.0], den: [1.0, 1.0]}
      fast:  {type: ZeroOrderHold, period: 0.01, offset: 0.005}
    connections: [u -> e.in1, fast -> e.in2, e -> slow, slow -> k, k -> d, d -> plant, plant -> fast]
    simulation: {stop_time: 1.0, solver: dop853, rtol: 1.0e-12, atol: 1.0e-14}
    log: {signals: [plant.out, fast.out, k.out], every: 0.05}
    analysis: {inputs: [u], outputs: [plant.out, fast.out, k.out]}
    """).lstrip()


def test_a_multi_rate_model_steps_as_the_run_does():
    """A linear diagram at two rates (one with an offset): the exact model over the hyperperiod,
    stepped from rest with the input held at 1, gives the run's samples to the solver's
    tolerance, with every delay and hold of blocksim's semantics (the Sum reading a constant and
    the offset hold runs at the hold's rate, so k reads it one slow period late)."""
    m = linear_model(MULTI_RATE)
    assert m.dt == 0.05
    assert m.states == ("plant.xc[0]", "d.xd[0]", "fast.out (held)", "e.out (held)")
    r = blocksim.simulate(blocksim.load(MULTI_RATE))
    x, model = np.zeros(4), []
    for _ in r.t:
        model.append(m.C @ x + m.D[:, 0])
        x = m.A @ x + m.B[:, 0]
    run = np.hstack([r["plant.out"], r["fast.out"], r["k.out"]])
    assert np.abs(np.array(model) - run).max() < 1e-9
    assert run[:3, 2] == pytest.approx([0.0, 3.0, 3.0])


def test_a_period_that_is_not_a_multiple_of_the_hyperperiod_is_refused():
    with pytest.raises(BlocksimError) as err:
        linear_model(MULTI_RATE, period=0.02)
    assert str(err.value) == ("keyword period: analysis.period 0.02 s is not a multiple of the "
                              "diagram's hyperperiod 0.05 s (the least common multiple of its "
                              "discrete periods), over which the model is time-invariant")
    assert linear_model(MULTI_RATE, period=0.1).dt == 0.1


def test_a_continuous_diagram_at_a_period_is_its_zero_order_hold_model():
    body = textwrap.dedent("""
        blocksim: 1
        blocks:
          u: {type: Constant, value: 0.0}
          x: {type: TransferFunction, num: [3.0], den: [1.0, 2.0]}
        connections: [u -> x]
        analysis: {inputs: [u], outputs: [x], period: 0.1}
        """)
    m = linear_model(body)
    a = math.exp(-0.2)
    assert m.A[0, 0] == pytest.approx(a, rel=1e-12)
    assert (m.C @ m.B)[0, 0] == pytest.approx(3 * (1 - a) / 2, rel=1e-9)


@pytest.fixture(scope="module")
def current_loops():
    return {v: linear_model(blocksim.load(CURRENT_LOOP, variant=v)) for v in ("no_delay", "delay")}


def test_the_current_loop_of_w2_has_its_reference_margins(current_loops):
    m = current_loops["no_delay"]
    assert m.dt == 1e-4 and m.states == ("motor.i[0]", "pi.zq[0]")
    a = math.exp(-0.5 / 0.5e-3 * 1e-4)                     # exp(-R Ts / L)
    assert m.A == pytest.approx(np.array([[a, 0.0], [-1e-4, 1.0]]), rel=1e-9, abs=1e-12)
    assert m.B[:, 0] == pytest.approx([(1 - a) / 0.5, 0.0], rel=1e-9, abs=1e-12)
    g = loop_margins(m.A, m.B, m.C, m.D, m.dt)
    assert round(g.crossover, 1) == 964.7
    assert g.phase_margin == pytest.approx(72.15, abs=0.05)
    assert g.stable and g.gain_crossovers == pytest.approx([g.crossover])
    # the only phase crossover is the Nyquist frequency itself, where L is real and negative:
    # a loop gain 10.51 dB higher puts a closed-loop pole on z = -1
    assert g.phase_crossovers == pytest.approx([5000.0])
    k = 10 ** (g.gain_margin / 20)
    poles = np.linalg.eigvals(m.A + k * m.B @ m.C)
    assert np.min(np.abs(poles + 1)) < 1e-6


def test_one_sample_of_computation_delay_costs_35_degrees(current_loops):
    m = current_loops["delay"]
    g = loop_margins(m.A, m.B, m.C, m.D, m.dt)
    assert round(g.crossover, 1) == 964.7
    assert round(g.phase_margin, 2) == 37.42
    assert round(g.gain_margin, 2) == 4.47 and round(g.gain_margin_frequency, 1) == 1661.7
    assert round(g.delay_margin * 1e3, 3) == 0.108
    assert g.phase_crossovers == pytest.approx([g.gain_margin_frequency])
    # the gain margin is real: that much more gain puts a pole on the unit circle
    k = 10 ** (g.gain_margin / 20)
    assert np.max(np.abs(np.linalg.eigvals(m.A + k * m.B @ m.C))) == pytest.approx(1.0, abs=1e-6)


def test_the_response_is_that_of_python_control():
    control = pytest.importorskip("control")
    m = linear_model(blocksim.load(CURRENT_LOOP, variant="delay"))
    w = np.array([100.0, 5000.0, 20000.0])
    ours = response(m.A, m.B, m.C, m.D, m.dt, w)[:, 0, 0]
    theirs = control.frequency_response(m.to_statespace(), w).complex.ravel()
    assert ours == pytest.approx(theirs, rel=1e-12)


def test_margins_need_one_input_and_one_output():
    m = linear_model(MULTI_RATE)
    with pytest.raises(BlocksimError) as err:
        loop_margins(m.A, m.B, m.C, m.D, m.dt)
    assert str(err.value).startswith("margins need a loop with one input and one output, not "
                                     "1 inputs and 3 outputs")
