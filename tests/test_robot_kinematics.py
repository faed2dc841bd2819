"""Forward kinematics, Jacobian and inverse kinematics of RobotModel against independent computations."""
import numpy as np
import pytest

from blocksim.models.kinematics import rotation_vector
from blocksim.models.robot import IKError, RobotModel

PUMA = RobotModel.preset("puma560")
KR6 = RobotModel.preset("kr6_like")
TWO = RobotModel.preset("two_link")


def dh_standard(a, alpha, d, theta):
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0, sa, ca, d],
                     [0, 0, 0, 1.0]])


def dh_modified(alpha, a, d, theta):
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st, 0, a],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0, 0, 0, 1.0]])


PUMA_DH = [(0, np.pi / 2, 0), (0.4318, 0, 0), (0.0203, -np.pi / 2, 0.15005),
           (0, np.pi / 2, 0.4318), (0, -np.pi / 2, 0), (0, 0, 0)]          # (a, alpha, d)
KR6_MDH = [(0, 0, 0.400, 0), (-np.pi / 2, 0.180, 0, -np.pi / 2), (0, 0.600, 0, 0),
           (-np.pi / 2, 0.120, 0.620, 0), (np.pi / 2, 0, 0, 0), (-np.pi / 2, 0, 0, 0)]


def puma_fk_reference(q):
    T = np.eye(4)
    for (a, alpha, d), qi in zip(PUMA_DH, q):
        T = T @ dh_standard(a, alpha, d, qi)
    return T


def kr6_fk_reference(q):
    T = np.eye(4)
    for (alpha, a, d, off), qi in zip(KR6_MDH, q):
        T = T @ dh_modified(alpha, a, d, qi + off)
    T[:3, 3] += T[:3, 2] * 0.100
    return T


def test_kr6_tool_at_zero_pose():
    np.testing.assert_allclose(KR6.fk(np.zeros(6))[:3, 3], [0.900, 0.0, 1.120], atol=1e-12)


def test_puma560_known_poses():
    # Corke's Robotics Toolbox: p560.fkine(qz) and p560.fkine(qn)
    Tz = PUMA.fk(np.zeros(6))
    np.testing.assert_allclose(Tz[:3, :3], np.eye(3), atol=1e-12)
    np.testing.assert_allclose(Tz[:3, 3], [0.4521, -0.15005, 0.4318], atol=1e-12)
    qn = np.array([0, np.pi / 4, np.pi, 0, np.pi / 4, 0])
    Tn = PUMA.fk(qn)
    np.testing.assert_allclose(Tn[:3, 3], [0.5963, -0.1501, -0.0144], atol=1e-4)
    np.testing.assert_allclose(Tn[:3, :3], [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-12)


def test_fk_equals_dh_products():
    rng = np.random.default_rng(1)
    q = rng.uniform(-3, 3, (6, 6))
    Tp, Tk = PUMA.fk(q), KR6.fk(q)
    for k in range(6):
        np.testing.assert_allclose(Tp[k], puma_fk_reference(q[k]), atol=1e-13)
        np.testing.assert_allclose(Tk[k], kr6_fk_reference(q[k]), atol=1e-13)


def test_link_poses_are_the_dh_frames():
    q = np.array([0.3, -0.7, 1.1, 0.4, -1.3, 2.0])
    L = PUMA.link_poses(q)
    T = np.eye(4)
    for i, ((a, alpha, d), qi) in enumerate(zip(PUMA_DH, q)):
        T = T @ dh_standard(a, alpha, d, qi)
        np.testing.assert_allclose(L[i], T, atol=1e-13)
    Lk = KR6.link_poses(np.stack([q, -q]))
    np.testing.assert_allclose(Lk[:, -1] @ KR6.tool, KR6.fk(np.stack([q, -q])), atol=1e-13)


@pytest.mark.parametrize("name", ["puma560", "kr6_like", "two_link"])
def test_jacobian_matches_finite_differences(name):
    model = RobotModel.preset(name)
    rng = np.random.default_rng(2)
    q = rng.uniform(-2, 2, model.n)
    J = model.jacobian(q)
    h = 1e-6
    for i in range(model.n):
        e = np.zeros(model.n)
        e[i] = h
        Tp, Tm = model.fk(q + e), model.fk(q - e)
        v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        w = rotation_vector(Tp[:3, :3] @ Tm[:3, :3].T) / (2 * h)
        np.testing.assert_allclose(J[:3, i], v, atol=1e-8)
        np.testing.assert_allclose(J[3:, i], w, atol=1e-8)


def test_batched_kinematics_equal_members():
    rng = np.random.default_rng(3)
    q = rng.uniform(-2, 2, (4, 6))
    T, J, L = KR6.fk(q), KR6.jacobian(q), KR6.link_poses(q)
    assert T.shape == (4, 4, 4) and J.shape == (4, 6, 6) and L.shape == (4, 6, 4, 4)
    for k in range(4):
        np.testing.assert_array_equal(KR6.fk(q[k]), T[k])
        np.testing.assert_array_equal(KR6.jacobian(q[k]), J[k])
        np.testing.assert_array_equal(KR6.link_poses(q[k]), L[k])


@pytest.mark.parametrize("name", ["puma560", "kr6_like"])
def test_ik_round_trip(name):
    model = RobotModel.preset(name)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, 6)
        target = model.fk(q)
        q_ik = model.ik(target, q0=q + rng.uniform(-0.2, 0.2, 6))
        T = model.fk(q_ik)
        np.testing.assert_allclose(T, target, atol=1e-9)


def test_ik_unreachable_raises():
    target = np.eye(4)
    target[:3, 3] = [3.0, 0.0, 0.5]
    with pytest.raises(IKError, match="did not reach"):
        KR6.ik(target, q0=np.zeros(6), max_iter=100)


def test_ik_planar_closed_form():
    q = np.array([0.4, 1.1])
    target = TWO.fk(q)
    np.testing.assert_allclose(TWO.ik(target, q0=q + 0.1), q, atol=1e-12)
    # a full pose fixes the branch; a position alone takes the elbow branch nearest q0
    np.testing.assert_allclose(TWO.ik(target, q0=np.array([1.2, -1.0])), q, atol=1e-12)
    q_other = TWO.ik(target[:3, 3], q0=np.array([1.2, -1.0]))
    assert q_other[1] < 0
    np.testing.assert_allclose(TWO.fk(q_other)[:3, 3], target[:3, 3], atol=1e-12)
    with pytest.raises(IKError, match="out of reach"):
        TWO.ik(np.array([2.0, 0.0, 0.0]))
    bad = target.copy()
    bad[2, 3] = 0.3   # out of the arm's plane
    with pytest.raises(IKError, match="not reachable"):
        TWO.ik(bad)


# ---- the per-member entry points on the Model/Data (models.model_data, models.kinematics) ------

from blocksim.models import kinematics as kin              # noqa: E402
from blocksim.models import model_data as md               # noqa: E402
from test_robot_dynamics import mixed_modified, mixed_robot  # noqa: E402


def _model_data(robots, batch=1):
    model, data = md.stack_model(robots, False), md.make_data(robots[0].n, batch)
    md.check(model, data, batch)
    return model, data


def _pose(model, q, k=0):
    out = np.empty(12)
    kin.tool_pose(model, k, q[None, :], 0, out, 0)
    return out[:3], out[3:].reshape(3, 3)


@pytest.mark.parametrize("robot", [PUMA, KR6, mixed_robot(), mixed_modified()],
                         ids=["puma560", "kr6_like", "mixed_RPRR", "rrp_modified"])
def test_member_jacobian_is_the_derivative_of_the_member_tool_pose(robot):
    """Column i of J = d(pose)/dq_i by central differences: dp/dq_i (m/rad) on top, and the
    angular rate w with skew(w) = dR/dq_i R^T below (base frame)."""
    model, data = _model_data([robot])
    q = np.random.default_rng(4).uniform(-1.5, 1.5, robot.n)
    J = np.empty(6 * robot.n)
    kin.jacobian(model, data, 0, q[None, :], 0, J)
    J = J.reshape(6, robot.n)
    h = 1e-6
    p0, R0 = _pose(model, q)
    for i in range(robot.n):
        dq = np.zeros(robot.n)
        dq[i] = h
        (pp, Rp), (pm, Rm) = _pose(model, q + dq), _pose(model, q - dq)
        W = (Rp - Rm) / (2 * h) @ R0.T
        np.testing.assert_allclose(J[:3, i], (pp - pm) / (2 * h), atol=1e-8)
        np.testing.assert_allclose(J[3:, i], [W[2, 1], W[0, 2], W[1, 0]], atol=1e-8)
    np.testing.assert_array_equal(np.c_[R0, p0], robot.fk(q)[:3])
    np.testing.assert_array_equal(J, robot.jacobian(q))


@pytest.mark.parametrize("robot", [PUMA, mixed_robot(), mixed_modified()],
                         ids=["puma560", "mixed_RPRR", "rrp_modified"])
def test_member_energy_changes_at_the_power_of_the_applied_torques(robot):
    """A free arm (no friction, damping or springs) under tau: dE/dt = qd . tau, with the motion
    (qd, qdd = aba(q, qd, tau)) and E = T + V by the member entry point."""
    model, data = _model_data([robot])
    rng = np.random.default_rng(5)
    q, qd, tau = (rng.uniform(-1, 1, robot.n) for _ in range(3))
    qdd = robot.aba(q, qd, tau)

    def E(qv, qdv):
        T, V = kin.energy(model, data, 0, qv[None, :], qdv[None, :], 0)
        return T + V

    h = 1e-6
    dEdt = (E(q + h * qd, qd + h * qdd) - E(q - h * qd, qd - h * qdd)) / (2 * h)
    np.testing.assert_allclose(dEdt, qd @ tau, rtol=1e-6, atol=1e-8)
    T, V = kin.energy(model, data, 0, q[None, :], qd[None, :], 0)
    np.testing.assert_allclose([T, V], [robot.kinetic_energy(q, qd), robot.potential_energy(q)],
                               rtol=1e-12, atol=1e-12)


def test_check_rejects_a_data_that_does_not_fit_the_model():
    model = md.stack_model([PUMA], False)
    md.check(model, md.make_data(6, 3), 3)                       # one shared row, batch 3
    with pytest.raises(ValueError, match="6 joints and batch 3 need"):
        md.check(model, md.make_data(2, 3), 3)                   # a 2-joint workspace
    with pytest.raises(ValueError, match="6 joints and batch 3 need"):
        md.check(model, md.make_data(6, 2), 3)                   # made for batch 2
    with pytest.raises(ValueError, match="1 or B = 2 member rows"):
        md.check(md.stack_model([PUMA] * 3, False), md.make_data(6, 2), 2)
    with pytest.raises(ValueError, match="a robot with 2 joints needs"):
        md.check((model[0][:2], model[1]), md.make_data(2, 1), 1)   # rows of a 6-joint robot
    data = md.make_data(6, 3)
    data.setflags(write=False)
    with pytest.raises(ValueError, match="Data must be writable"):
        md.check(model, data, 3)
    with pytest.raises(ValueError, match="jtype must be a C-contiguous int64"):
        md.check((model[0].astype(float), model[1]), md.make_data(6, 3), 3)
    with pytest.raises(ValueError, match="tuple"):
        md.check(model[:1], md.make_data(6, 3), 3)


def test_model_fields_hold_the_robot_model_arrays():
    """Each accessor reads back what stack_model wrote: one field per datum, no overlap."""
    robots = [PUMA, PUMA.with_payload(2.0), PUMA.with_options(gravity=[0.0, -9.81, 0.0])]
    model = md.stack_model(robots, False)
    for k, r in enumerate(robots):
        jt, xt, inertia, arm, tool = r.arrays
        np.testing.assert_array_equal(model[0], jt)
        for got, want in ((md.xtree(model, k), xt), (md.inertia(model, k), inertia),
                          (md.armature(model, k), arm), (md.tool(model, k), tool),
                          (md.gravity(model, k), r.gravity),
                          (md.closed_form(model, k), np.zeros(md.N_CLOSED_FORM))):
            np.testing.assert_array_equal(got, want)
    assert model[1].shape == (3, md.model_size(6)) and md.model_size(6) == 23 * 6 + 26
