"""The collision-detection blocks alone: the detector's hysteresis and minimum duration as located
events on a sine, the momentum terms (p = M qd, beta = G - C^T qd) against the kinetic energy's
gradient on a 6-joint arm and the planar closed form against the general algorithms."""
import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck

# |sin(2 pi t)| reaches 0.5 at t = 1/12 and 7/12 (rising), falls to 0.2 at (pi - asin 0.2) / 2 pi
# and the same + 1/2: with a 0.1 s minimum duration the flag rises at 1/12 + 0.1 and 7/12 + 0.1
SINE = """
blocksim: 1
blocks:
  s:   {type: Sine, amplitude: 1.0, frequency: 1.0}
  det: {type: CollisionDetector, threshold: 0.5, release: 0.2, min_duration: 0.1}
  fast: {type: CollisionDetector, threshold: [0.5, 0.9], release: [0.2, 0.9]}
  m:   {type: Mux, inputs: 2}
  x:   {type: Integrator}
connections: [s -> det, s -> m.in1, s -> m.in2, m -> fast, s -> x]
simulation: {stop_time: 1.0, solver: dopri5, max_step: 0.01, rtol: 1.0e-10, atol: 1.0e-12}
log: {signals: [s.out, det.flag, det.any, det.t_detect, fast.flag, fast.t_detect], every: 0.001}
"""


def test_hysteresis_and_minimum_duration_are_located(tmp_path):
    path = tmp_path / "det.yaml"
    path.write_text(SINE)
    r = blocksim.simulate(blocksim.load(path))
    release = (np.pi - np.arcsin(0.2)) / (2 * np.pi)
    detected = [e.t for e in r.events if e.block == "det" and e.index == 2]
    released = [e.t for e in r.events if e.block == "det" and e.index == 1]
    np.testing.assert_allclose(detected, [1 / 12 + 0.1, 7 / 12 + 0.1], atol=1e-9)
    np.testing.assert_allclose(released, [release, release + 0.5], atol=1e-9)
    assert abs(r["det.t_detect"][-1, 0] - (1 / 12 + 0.1)) < 1e-9     # the first one is kept
    flag, t = r["det.flag"][:, 0], r.t
    on = np.zeros(len(t), bool)
    off = t < 1 / 12 + 0.1 - 1e-6
    for start in (0.0, 0.5):
        on |= (t > start + 1 / 12 + 0.1 + 1e-6) & (t < start + release - 1e-6)
        off |= (t > start + release + 1e-6) & (t < start + 0.5 + 1 / 12 + 0.1 - 1e-6)
    assert flag[on].min() == 1.0 and flag[off].max() == 0.0
    np.testing.assert_array_equal(r["det.any"][:, 0], flag)
    # per joint: channel 2 (0.9, no hysteresis) flags from asin(0.9) / 2 pi to its mirror
    rise = np.arcsin(0.9) / (2 * np.pi)
    np.testing.assert_allclose(r["fast.t_detect"][-1], [1 / 12, rise], atol=1e-9)
    fast = r["fast.flag"][:, 1]
    assert fast[(t > rise + 1e-6) & (t < 0.5 - rise - 1e-6)].min() == 1.0
    assert fast[(t > 0.5 - rise + 1e-6) & (t < 0.5 + rise - 1e-6)].max() == 0.0


def test_detector_stops_a_run(tmp_path):
    path = tmp_path / "stop.yaml"
    path.write_text(SINE.replace("connections: [", "connections: [det.any -> stop, ").replace(
        "  x:   {type: Integrator}", "  x:   {type: Integrator}\n  stop: {type: StopSimulation}"))
    r = blocksim.simulate(blocksim.load(path))
    assert abs(r.t[-1] - (1 / 12 + 0.1)) < 1e-9


def _kinetic(robot, q, qd):
    return 0.5 * qd @ robot.mass_matrix(q) @ qd


@pytest.mark.parametrize("robot, seed", [("puma560", 1), ("two_link", 2)])
def test_momentum_terms_match_the_kinetic_energy_gradient(robot, seed):
    """beta = G - C^T qd with C^T qd = dT/dq (central differences of T = qd^T M qd / 2), and
    p = M qd, from the observer's output and derivative (general algorithms and, for the planar
    arm, the closed form)."""
    from blocksim.models.robot import RobotModel
    model = RobotModel.preset(robot)
    n = model.n
    rng = np.random.default_rng(seed)
    q, qd, tau = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
    h = 1e-6
    grad = np.array([(_kinetic(model, q + h * e, qd) - _kinetic(model, q - h * e, qd)) / (2 * h)
                     for e in np.eye(n)])
    gravity = model.rnea(q, np.zeros(n), np.zeros(n))
    forms = ["never", "auto"] if robot == "two_link" else ["never"]
    for form in forms:
        obs = BlockCheck("MomentumObserver", {"robot": robot, "gain": 10.0, "closed_form": form},
                         in_widths=n)
        # before the first major step p0 is the current momentum: r = -K_O I, so with I = 0
        # the integrand is tau - beta
        rate = obs.derivative(0.0, q, qd, tau)[0]
        np.testing.assert_allclose(rate, tau - (gravity - grad), rtol=0, atol=1e-6)
        obs.update(0.0, q, qd, tau)                     # p0 = M(q) qd, taken
        np.testing.assert_allclose(obs.xd[0, :n], model.mass_matrix(q) @ qd, atol=1e-12)
        r = obs.output(0.1, q, 2 * qd, tau)[0]          # r = K_O (M (2 qd) - M qd - 0)
        np.testing.assert_allclose(r, 10.0 * model.mass_matrix(q) @ qd, atol=1e-10)


def test_detection_metrics_on_known_signals():
    from blocksim.engine.metrics import metric_values
    t = np.linspace(0.0, 2.0, 21)                        # 0.1 s apart
    flag = np.zeros((21, 2))
    flag[[2, 3, 7, 15, 16], 0] = 1.0                     # rises at 0.2, 0.7 (false), 1.5 (true)
    flag[0:2, 1] = 1.0                                    # up at the start: one false alarm
    got = metric_values("false_alarms", t, flag, None, {"onset": 1.0})
    np.testing.assert_array_equal(got, [2.0, 1.0])
    np.testing.assert_array_equal(metric_values("false_alarms", t, flag, None, {}), [3.0, 1.0])
    residual = np.column_stack([np.where(t >= 1.3, 2.0, 0.5), np.full(21, 0.5)])
    got = metric_values("detection_delay", t, residual, None, {"onset": 1.0, "threshold": 1.0})
    np.testing.assert_allclose(got, [0.3, np.inf])
    first = np.column_stack([np.where(t >= 1.0044, 1.0044, -1.0), np.full(21, -1.0)])
    got = metric_values("detection_delay", t, first, None, {"onset": 1.0})
    np.testing.assert_allclose(got, [0.0044, np.inf])
    with pytest.raises(Exception, match="metric detection_delay needs 'onset'"):
        metric_values("detection_delay", t, first, None, {})


def test_direct_residual_is_the_model_torque_minus_the_measured():
    from blocksim.models.robot import RobotModel
    model = RobotModel.preset("two_link")
    q, qd, qdd, tau = np.array([0.3, -0.7]), np.array([1.2, -0.4]), np.array([2.0, 5.0]), \
        np.array([4.0, -1.0])
    Fv, Fc, eps = np.array([0.5, 0.3]), np.array([1.0, 0.5]), 1e-2
    friction = Fv * qd + Fc * np.tanh(qd / eps)
    expected = model.rnea(q, qd, qdd) + friction - tau
    for form in ("auto", "never"):
        direct = BlockCheck("DirectResidual", {"robot": "two_link", "closed_form": form,
                                               "friction": "coulomb_viscous", "Fv": Fv.tolist(),
                                               "Fc": Fc.tolist(), "friction_smoothing": eps},
                            in_widths=2)
        np.testing.assert_allclose(direct.output(0.0, q, qd, qdd, tau)[0], expected, atol=1e-12)
