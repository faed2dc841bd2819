"""Events after a reset: a crossing function that a reset puts exactly on zero is judged by the
direction it leaves in, so the next crossing is found however long the solver's next step is."""
import numpy as np
import pytest

import blocksim

G = 9.81          # m/s^2, down the prismatic joint's axis
E = 0.8           # restitution
SLIDER = """
name: slider
description: a 1 kg point mass on a vertical prismatic joint (q = height, m)
convention: standard
gravity: [0.0, 0.0, -9.81]
links:
  - {name: drop, type: prismatic, a: 0.0, alpha: 0.0, d: 0.0, theta: 0.0,
     mass: 1.0, com: [0.0, 0.0, 0.0], inertia: [0.0, 0.0, 0.0]}
"""
BALL = """
blocksim: 1
blocks:
  zero:  {type: Constant, value: [0.0]}
  plant: {type: Manipulator, robot: slider.yaml, q0: [1.0], q_min: [0.0], restitution: 0.8}
connections: [zero -> plant.tau]
simulation: {stop_time: 3.0, mode: MODE}
log: {signals: [plant.q]}
"""


def impact_times(count: int) -> np.ndarray:
    """A ball dropped from 1 m at rest, bouncing with restitution E: t1 = sqrt(2 h / g), then
    flights of 2 E^k v1 / g with v1 = sqrt(2 g h)."""
    v1 = np.sqrt(2 * G * 1.0)
    flights = [np.sqrt(2 / G)] + [2 * E ** k * v1 / G for k in range(1, count)]
    return np.cumsum(flights)


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
@pytest.mark.parametrize("solver", ["dopri5", "dop853"])
def test_every_bounce_of_a_ball_on_a_joint_stop_is_found(tmp_path, mode, solver, compiled_cache):
    (tmp_path / "slider.yaml").write_text(SLIDER)
    path = tmp_path / "ball.yaml"
    path.write_text(BALL.replace("MODE", mode))
    r = blocksim.simulate(blocksim.load(path, set={"simulation.solver": solver}))
    times = np.array([e.t for e in r.events])
    # six impacts before 3 s (the seventh is at 3.117 s), each within 1e-9 s of the analytic time
    assert len(times) == 6 and impact_times(7)[6] > 3.0
    np.testing.assert_allclose(times, impact_times(6), rtol=0, atol=1e-9)
    assert r["plant.q"].min() >= -1e-12          # never through the floor
    # between the 6th impact and 3 s the ball flies up with E^6 v1
    t6, v6 = impact_times(6)[5], E ** 6 * np.sqrt(2 * G)
    dt = 3.0 - t6
    assert r["plant.q"][-1, 0] == pytest.approx(v6 * dt - G * dt ** 2 / 2, abs=1e-8)


LIMITED = """
blocksim: 1
blocks:
  push: {type: Constant, value: SLOPE}
  x:    {type: Integrator, x0: 0.0, lower: 0.0, upper: 1.0}
connections: [push -> x]
simulation: {stop_time: 2.0, solver: dopri5, mode: interpreted}
log: {signals: [x.out]}
"""


def test_a_function_that_starts_on_zero_and_leaves_is_no_crossing(tmp_path):
    """x starts on its lower limit and rises: no event until it reaches the upper one at 1 s;
    started on the limit and pushed into it, it stays there and no event fires at all."""
    path = tmp_path / "limited.yaml"
    path.write_text(LIMITED.replace("SLOPE", "1.0"))
    r = blocksim.simulate(blocksim.load(path))
    # one event: the upper limit (function 0) at 1 s; not the lower one it started on
    assert [e.index for e in r.events] == [0] and abs(r.events[0].t - 1.0) < 1e-9
    assert r["x.out"][0, 0] == 0.0 and r["x.out"][-1, 0] == 1.0
    path.write_text(LIMITED.replace("SLOPE", "-1.0"))
    r = blocksim.simulate(blocksim.load(path))
    assert r.events == [] and not r["x.out"].any()


SIGN = """
blocksim: 1
blocks:
  wave: {type: Sine, amplitude: 1.0, frequency: 1.0, phase: 0.3}
  s:    {type: SIGN}
  x:    {type: Integrator, x0: 0.0}
connections: [wave -> s, s -> x]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12, mode: MODE}
log: {signals: [x.out]}
"""


def sign_integral(t):
    """The integral from 0 of sign(sin(2 pi s + 0.3)): piecewise linear, slopes +-1, turning at
    the zeros (k pi - 0.3) / (2 pi)."""
    zeros = [(k * np.pi - 0.3) / (2 * np.pi) for k in range(1, 5)]
    out = []
    for tt in t:
        value, prev, sign = 0.0, 0.0, 1.0
        for z in zeros:
            if tt <= z:
                break
            value, prev, sign = value + sign * (z - prev), z, -sign
        out.append(value + sign * (tt - prev))
    return np.array(out)


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_sign_holds_its_mode_through_the_stages_and_switches_at_the_crossing(
        tmp_path, mode, compiled_cache):
    """x = integral of sign(sin(2 pi t + 0.3)): the held sign keeps the solver's dynamics smooth,
    so it steps onto each of the four switches without rejecting steps, and x is exact to the
    tolerance (it was 5e-9 off, with 123 of 133 steps rejected, while Sign switched inside
    stages)."""
    path = tmp_path / "sign.yaml"
    path.write_text(SIGN.replace("MODE", mode).replace("SIGN", "Sign"))
    r = blocksim.simulate(blocksim.load(path))
    exact = sign_integral(r.t)
    x = r["x.out"][:, 0]
    assert np.max(np.abs(x - exact) / (1e-12 + 1e-10 * np.abs(exact))) <= 10
    assert r.stats["nrejected"] <= 0.1 * r.stats["nsteps"]
    zeros = [(k * np.pi - 0.3) / (2 * np.pi) for k in range(1, 5)]
    np.testing.assert_allclose([e.t for e in r.events], zeros, rtol=0, atol=1e-11)
