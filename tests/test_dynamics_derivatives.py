"""The analytic derivatives of the RNEA (models/dynamics_derivatives.py), of the friction law
and the joint law, and the plant's exact rate Jacobian (models/plant.rates_jacobian): against
central differences of the kernels the runs call, and against the planar 2R's closed form."""
import math

import numpy as np
import pytest

from blocksim.models import dynamics_derivatives as dd
from blocksim.models import model_data as md
from blocksim.models import rigid_body_kernels as rbk
from blocksim.models.friction import stribeck_slope, stribeck_torque
from blocksim.models.joint_law import (DAMPING, EPS, FCN, FCP, FSN, FSP, FV, Q_MAX, STIFFNESS,
                                       TAU_MAX, VS, effective_torque_slopes, neutral_law)
from blocksim.models.plant import accelerations_general, rates_jacobian
from blocksim.models.robot import RobotModel
from blocksim.twins import python_twin
from test_robot_dynamics import mixed_modified, mixed_robot


ARMS = {"mixed": mixed_robot, "rrp": mixed_modified}
"""Arms with a prismatic joint, rotor inertia, a tool frame and a tilted gravity."""


def _arrays(name):
    r = ARMS[name]() if name in ARMS else RobotModel.preset(name)
    jt, xt, inert, arm, _ = r.arrays
    return r, (jt, xt, inert, arm), np.asarray(r.gravity, float)


def _rnea(robot, q, qd, qdd, fext=None):
    jt, xt, inert, arm, tool = robot.arrays
    out = np.zeros((1, len(q)))
    rbk.rnea_into(jt, xt, inert, arm, tool, q[None], qd[None], qdd[None],
                  np.asarray(robot.gravity, float), rbk.NO_FEXT if fext is None else fext[None],
                  out, rbk.workspace(len(q)))
    return out[0]


def _central(f, x, h=1e-6):
    """Columns d f / d x_j by central differences of step h."""
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))]).T


@pytest.mark.parametrize("name", ["puma560", "kr6_like", "two_link", "mixed", "rrp"])
def test_rnea_derivatives_match_central_differences_of_the_rnea(name):
    robot, arrays, g = _arrays(name)
    n = len(arrays[0])
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2, 2, size=(3, n))
        tau, d_q, d_qd, _ = dd.rnea_derivatives(*arrays, q, qd, qdd, g)
        assert tau == pytest.approx(_rnea(robot, q, qd, qdd), rel=1e-13, abs=1e-12)
        num_q = _central(lambda x: _rnea(robot, x, qd, qdd), q)
        num_qd = _central(lambda x: _rnea(robot, q, x, qdd), qd)
        assert np.abs(d_q - num_q).max() <= 1e-7 * np.abs(num_q).max()
        assert np.abs(d_qd - num_qd).max() <= 1e-7 * np.abs(num_qd).max()


@pytest.mark.parametrize("name", ["puma560", "kr6_like", "mixed", "rrp"])
def test_the_tool_wrench_derivatives_match_central_differences(name):
    """tau = ... - J^T fext: d tau / d q with the wrench's, and d tau / d fext = -J^T."""
    robot, arrays, g = _arrays(name)
    tool = robot.arrays[4]
    n = len(arrays[0])
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-2, 2, size=(3, n))
    fext = rng.uniform(-20, 20, 6)
    tau, d_q, d_qd, d_f = dd.rnea_derivatives(*arrays, q, qd, qdd, g, tool, fext)
    assert tau == pytest.approx(_rnea(robot, q, qd, qdd, fext), rel=1e-13, abs=1e-12)
    for got, num in ((d_q, _central(lambda x: _rnea(robot, x, qd, qdd, fext), q)),
                     (d_qd, _central(lambda x: _rnea(robot, q, x, qdd, fext), qd)),
                     (d_f, _central(lambda x: _rnea(robot, q, qd, qdd, x), fext))):
        assert np.abs(got - num).max() <= 1e-7 * np.abs(num).max()
    assert d_f == pytest.approx(-robot.jacobian(q).T, rel=1e-12, abs=1e-12)


def test_rnea_derivatives_equal_the_planar_2r_closed_form():
    """tau1 = M11 a1 + M12 a2 - b (2 w1 w2 + w2^2) + G1, tau2 = M12 a1 + M22 a2 + b w1^2 + G2,
    b = k sin q2, k = m2 l1 c2 (planar2r.Distributed2R), differentiated by hand."""
    robot, arrays, g = _arrays("two_link")
    cf = robot.closed_form
    k, grav = cf.m2 * cf.l1 * cf.c2, cf.g
    q1, q2, w1, w2, a1, a2 = 0.3, -1.1, 0.7, -1.9, 2.5, -0.4
    s2, c2, s12 = math.sin(q2), math.cos(q2), math.sin(q1 + q2)
    b = k * s2
    h1 = (cf.m1 * cf.c1 + cf.m2 * cf.l1) * grav * math.sin(q1)
    h2 = cf.m2 * cf.c2 * grav * s12
    expect_q = [[-h1 - h2, -2 * k * s2 * a1 - k * s2 * a2 - k * c2 * (2 * w1 * w2 + w2 ** 2) - h2],
                [-h2, -k * s2 * a1 + k * c2 * w1 ** 2 - h2]]
    expect_qd = [[-2 * b * w2, -2 * b * (w1 + w2)], [2 * b * w1, 0.0]]
    q, qd, qdd = np.array([q1, q2]), np.array([w1, w2]), np.array([a1, a2])
    tau, d_q, d_qd, _ = dd.rnea_derivatives(*arrays, q, qd, qdd, g)
    assert tau == pytest.approx(cf.inverse_dynamics(q, qd, qdd), rel=1e-12)
    assert d_q == pytest.approx(np.array(expect_q), rel=1e-12, abs=1e-12)
    assert d_qd == pytest.approx(np.array(expect_qd), rel=1e-12, abs=1e-12)
    M = dd.mass_matrix(*arrays, q)
    assert M == pytest.approx(cf.mass_matrix(q), rel=1e-12)
    # forward dynamics: d qdd / d q = -M^-1 d ID / d q at qdd = FD(q, qd, tau)
    tau_in = np.array([3.0, -1.0])
    acc = cf.forward_dynamics(q, qd, tau_in)
    f_q, f_qd, f_tau, _ = dd.forward_dynamics_derivatives(*arrays, q, qd, acc, g)
    assert f_tau == pytest.approx(np.linalg.inv(cf.mass_matrix(q)), rel=1e-12)
    num_q = _central(lambda x: cf.forward_dynamics(x, qd, tau_in), q)
    assert np.abs(f_q - num_q).max() <= 1e-8 * np.abs(num_q).max()
    assert f_qd == pytest.approx(_central(lambda x: cf.forward_dynamics(q, x, tau_in), qd), rel=1e-7)


@pytest.mark.parametrize("v", [0.3, -0.02, 0.0, 1e-4])
def test_the_smooth_friction_slope_is_the_derivative_of_the_law(v):
    law = dict(Fc=2.0, Fs=3.0, vs=0.1, delta=2.0, Fv=0.5, smoothing=1e-3)
    h = 1e-8
    num = (stribeck_torque(v + h, *law.values()) - stribeck_torque(v - h, *law.values())) / (2 * h)
    assert stribeck_slope(v, *law.values()) == pytest.approx(num, rel=1e-6)
    if v == 0.0:
        assert stribeck_slope(v, *law.values()) == pytest.approx(3.0 / 1e-3 + 0.5, rel=1e-15)


def test_an_exact_sign_has_a_slope_only_when_held():
    # held sign +1 at 0.3 rad/s: g' + Fv, g' = -(Fs - Fc) exp(-(v/vs)^2) 2 v / vs^2
    expect = -(3.0 - 2.0) * math.exp(-9.0) * 2 * 0.3 / 0.01 + 0.5
    assert stribeck_slope(0.3, 2.0, 3.0, 0.1, 2.0, 0.5, 0.0, 1.0) == pytest.approx(expect, rel=1e-14)
    with pytest.raises(ValueError, match="exact friction sign has no derivative"):
        stribeck_slope(0.0, 2.0, 3.0, 0.1, 2.0, 0.5, 0.0)


def _law(n, **cols):
    law = neutral_law(1, n)
    for col, value in cols.items():
        law[0, :, globals()[col]] = value
    return law


def test_joint_law_slopes_and_where_it_has_none():
    law = _law(1, FV=0.5, FCP=2.0, FCN=2.0, FSP=2.0, FSN=2.0, EPS=1e-2, DAMPING=0.1, STIFFNESS=4.0,
               TAU_MAX=10.0)
    d_q, d_w, d_t = effective_torque_slopes(law, 0, 0, 0.2, 0.0, 3.0, 0.0)
    assert (d_q, d_t) == (-4.0, 1.0) and d_w == pytest.approx(-(0.1 + 0.5 + 2.0 / 1e-2), rel=1e-15)
    assert effective_torque_slopes(law, 0, 0, 0.2, 0.0, 12.0, 0.0)[2] == 0.0     # saturated
    assert effective_torque_slopes(law, 0, 0, 0.2, 0.0, 10.0, 0.0) is None       # at the limit
    law[0, 0, EPS] = 0.0
    assert effective_torque_slopes(law, 0, 0, 0.2, 0.0, 3.0, 0.0) is None        # stuck
    assert effective_torque_slopes(law, 0, 0, 0.2, 0.0, 3.0, -1.0)[1] == pytest.approx(-0.6)


@pytest.mark.parametrize("wrench", [False, True])
def test_the_plant_rates_jacobian_matches_central_differences_of_its_accelerations(wrench):
    """The puma's rates under smooth Stribeck friction, damping, a spring and a torque limit,
    with a tool wrench or without."""
    robot = RobotModel.preset("puma560")
    n = 6
    model = md.stack_model([robot], False)
    data = md.make_data(n, 1)
    law = _law(n, FV=0.3, FCP=1.0, FCN=1.0, FSP=1.5, FSN=1.5, VS=0.2, EPS=0.05, DAMPING=0.2,
               STIFFNESS=3.0, TAU_MAX=50.0)
    acc = python_twin(accelerations_general)
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-1, 1, 2 * n)
    tau0 = rng.uniform(-5, 5, n)
    tau0[2] = 80.0                                              # joint 3 saturated

    f0 = rng.uniform(-30, 30, 6) if wrench else np.zeros(6)

    def rates(x, tau, f=f0):
        out = np.zeros((1, n))
        acc(0, x[None], np.zeros((1, 0)), tau[None], f[None], model, law, data, False,
            wrench, True, False, False, out)
        return np.concatenate([x[n:], out[0]])

    A, B, F = rates_jacobian(model, law, 0, x0, np.zeros(0), tau0, f0 if wrench else None)
    num_x = _central(lambda x: rates(x, tau0), x0)
    num_t = _central(lambda t: rates(x0, t), tau0)
    assert np.abs(A - num_x).max() <= 1e-7 * np.abs(num_x).max()
    assert np.abs(B - num_t).max() <= 1e-7 * np.abs(num_t).max()
    assert np.all(B[:, 2] == 0.0)
    if wrench:
        num_f = _central(lambda f: rates(x0, tau0, f), f0)
        assert np.abs(F - num_f).max() <= 1e-7 * np.abs(num_f).max()
    else:
        assert F is None
    law[0, 1, Q_MAX] = x0[1]                                    # joint 2 at its stop
    assert rates_jacobian(model, law, 0, x0, np.zeros(0), tau0) is None


def test_a_stuck_joint_is_locked_and_at_breakaway_has_no_jacobian():
    """The puma at rest with joint 2 under exact-sign friction of static level Fs: stuck, so
    its acceleration rows are zero and the others are solved with it locked (the run's
    accelerations, differenced in q, where the joint stays stuck); Fs below the holding torque:
    breakaway, no derivative."""
    robot = RobotModel.preset("puma560")
    n = 6
    model = md.stack_model([robot], False)
    data = md.make_data(n, 1)
    law = _law(n)
    law[0, 1, [FCP, FCN, FSP, FSN]] = [1.0, 1.0, 500.0, 500.0]
    acc = python_twin(accelerations_general)
    x0 = np.concatenate([np.linspace(-0.8, 0.9, n), np.zeros(n)])
    tau0 = np.linspace(-3.0, 4.0, n)
    modes = np.zeros(n)

    def qdd(q):
        out = np.zeros((1, n))
        acc(0, np.concatenate([q, x0[n:]])[None], modes[None], tau0[None], np.zeros((1, 6)),
            model, law, data, False, False, True, False, False, out)
        return out[0]

    A, B, _ = rates_jacobian(model, law, 0, x0, modes, tau0)
    assert qdd(x0[:n])[1] == 0.0
    assert np.all(A[n + 1] == 0.0) and np.all(B[n + 1] == 0.0) and np.all(B[:, 1] == 0.0)
    num = _central(qdd, x0[:n])
    assert np.abs(A[n:, :n] - num).max() <= 1e-7 * np.abs(num).max()
    law[0, 1, [FSP, FSN]] = 1e-3                                # cannot hold it: breakaway
    assert rates_jacobian(model, law, 0, x0, modes, tau0) is None
