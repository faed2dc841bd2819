"""The contact and interaction-control blocks against their formulas: the wall's force law, modes
and crossing functions; the tool twist J qd; joint and Cartesian impedance against RobotModel
(orientation errors by SciPy's rotations); the admittance filter's step response; and located
ParameterErrors for values the physics cannot take."""
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from blocksim.cli import main
from blocksim.models import RobotModel

from blockcheck import BlockCheck

RNG = np.random.default_rng(21)
TWO = RobotModel.preset("two_link")
PUMA = RobotModel.preset("puma560")

POINT = np.array([0.2, 0.1, 0.0])
NORMAL = np.array([0.0, 3.0, 4.0])               # |normal| = 5: the block normalises it
UNIT = NORMAL / 5.0
K_WALL, D_WALL = 2000.0, 30.0


def wall(batch):
    return BlockCheck("ContactWall", {"point": POINT.tolist(), "normal": NORMAL.tolist(),
                                      "stiffness": K_WALL, "damping": D_WALL},
                      in_widths={"pose": 12, "twist": 6}, batch=batch)


def tool_states(depths, rates):
    """Poses (B, 12) and twists (B, 6) whose tool origin lies `depths` (m) inside the wall and
    moves into it at `rates` (m/s), plus a tangential offset and velocity that change nothing."""
    B = len(depths)
    tangent = np.array([1.0, 0.0, 0.0])
    pose = np.zeros((B, 12))
    twist = np.zeros((B, 6))
    for b, (depth, rate) in enumerate(zip(depths, rates)):
        pose[b, :3] = POINT - depth * UNIT + 0.3 * tangent
        pose[b, 3:] = np.eye(3).reshape(-1)
        twist[b, :3] = -rate * UNIT + 0.7 * tangent
        twist[b, 3:] = [0.1, -0.2, 0.3]
    return pose, twist


def test_the_wall_force_is_the_clipped_spring_damper_along_its_unit_normal():
    depths = np.array([-0.01, 0.0, 0.002, 0.002, 0.002, 1e-4])
    rates = np.array([0.5, 0.3, 0.1, -0.05, -0.2, -1.0])
    check = wall(len(depths))
    wrench, penetration, force = check.output(0.0, *tool_states(depths, rates))
    expected = np.where(depths > 0, np.maximum(0.0, K_WALL * depths + D_WALL * rates), 0.0)
    # k delta + d delta': 4 + 3, 4 - 1.5, 4 - 6 (clipped), 0.2 - 30 (clipped)
    np.testing.assert_allclose(expected, [0, 0, 7.0, 2.5, 0, 0], atol=1e-12)
    np.testing.assert_allclose(penetration[:, 0], depths, atol=1e-15)
    np.testing.assert_allclose(force[:, 0], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(wrench[:, :3], expected[:, None] * UNIT, rtol=1e-12, atol=1e-12)
    assert np.all(wrench[:, 3:] == 0.0)
    # the modes: free, free (on the surface), pressing, pressing, clipped, clipped
    np.testing.assert_array_equal(check.xd[:, 0], [0, 0, 1, 1, 2, 2])


def test_the_wall_holds_its_mode_through_solver_stages_and_its_crossing_function_follows_it():
    check = wall(3)
    # a major step: free, pressing, clipped
    check.output(0.0, *tool_states([-0.001, 0.002, 0.002], [0.1, 0.1, -0.2]))
    np.testing.assert_array_equal(check.xd[:, 0], [0, 1, 2])
    # a solver stage at other states: every member keeps its mode
    pose, twist = tool_states([0.001, 0.001, -0.0005], [0.2, -0.1, 0.1])
    _, _, force = check.output(0.0, pose, twist, major=False)
    np.testing.assert_array_equal(check.xd[:, 0], [0, 1, 2])
    spring = K_WALL * np.array([0.001, 0.001, -0.0005]) + D_WALL * np.array([0.2, -0.1, 0.1])
    # held free: no force although inside; held pressing: the smooth law (here 2 - 3 = -1 N: the
    # crossing below stops the step where it reached zero); held clipped: none
    np.testing.assert_allclose(force[:, 0], [0.0, spring[1], 0.0], rtol=1e-12)
    g = check.zero_crossings(0.0, pose, twist)
    # free: the penetration; pressing: the force; clipped: min(delta, -force)
    np.testing.assert_allclose(g[:, 0], [0.001, spring[1], min(-0.0005, -spring[2])], rtol=1e-12)


def test_the_ball_pushes_along_its_radius_with_the_walls_law():
    centre, radius = np.array([0.5, -0.2, 0.3]), 0.05
    check = BlockCheck("ContactSphere", {"centre": centre.tolist(), "radius": radius,
                                         "stiffness": K_WALL, "damping": D_WALL},
                       in_widths={"pose": 12, "twist": 6}, batch=4)
    directions = RNG.normal(size=(4, 3))
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    distance = np.array([0.06, 0.049, 0.045, 0.03])           # outside, then inside
    radial = np.array([-0.1, -0.1, 0.5, 0.5])                 # m/s outward
    pose = np.zeros((4, 12))
    twist = np.zeros((4, 6))
    pose[:, :3] = centre + distance[:, None] * directions
    tangent = np.cross(directions, [0.0, 0.0, 1.0])
    twist[:, :3] = radial[:, None] * directions + 0.4 * tangent
    wrench, penetration, force = check.output(0.0, pose, twist)
    delta = radius - distance
    law = K_WALL * delta - D_WALL * radial                    # delta' = -v . n
    expected = np.where(delta > 0, np.maximum(law, 0.0), 0.0)
    np.testing.assert_allclose(expected, [0.0, 5.0, 0.0, 25.0], atol=1e-12)  # 2 + 3; 10 - 15; 40 - 15
    np.testing.assert_allclose(penetration[:, 0], delta, atol=1e-15)
    np.testing.assert_allclose(force[:, 0], expected, atol=1e-12)
    np.testing.assert_allclose(wrench[:, :3], expected[:, None] * directions, atol=1e-12)
    np.testing.assert_array_equal(check.xd[:, 0], [0, 1, 2, 1])


def test_the_tool_twist_is_the_jacobian_times_the_joint_rates():
    for model, robot in ((TWO, "two_link"), (PUMA, "puma560")):
        q = RNG.uniform(-2, 2, (4, model.n))
        qd = RNG.uniform(-1, 1, (4, model.n))
        check = BlockCheck("ToolTwist", {"robot": robot}, in_widths=model.n, batch=4)
        twist = check.output(0.0, q, qd)
        expected = np.einsum("bij,bj->bi", model.jacobian(q), qd)
        np.testing.assert_allclose(twist, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model_terms", [False, True])
def test_joint_impedance_is_spring_damper_plus_the_model_torque(model_terms):
    K, D = [300.0, 120.0], [20.0, 8.0]
    check = BlockCheck("JointImpedance", {"robot": "two_link", "K": K, "D": D,
                                          "model_terms": model_terms}, in_widths=2, batch=3)
    q_d, qd_d, qdd_d, q, qd = (RNG.uniform(-1.5, 1.5, (3, 2)) for _ in range(5))
    tau = check.output(0.0, q_d, qd_d, qdd_d, q, qd)
    model = (TWO.rnea(q, qd, qdd_d) if model_terms else TWO.gravity_torque(q))
    expected = np.array(K) * (q_d - q) + np.array(D) * (qd_d - qd) + model
    np.testing.assert_allclose(tau, expected, rtol=1e-12, atol=1e-12)


def pose_of(T):
    return np.concatenate([T[:3, 3], T[:3, :3].reshape(-1)])


@pytest.mark.parametrize("model_terms", [False, True])
def test_cartesian_impedance_maps_the_tool_spring_damper_through_the_jacobian(model_terms):
    A = RNG.normal(size=(6, 6))
    K = A @ A.T + 6 * np.eye(6)                     # a full symmetric positive-definite stiffness
    D = [40.0, 40.0, 40.0, 3.0, 3.0, 3.0]
    check = BlockCheck("CartesianImpedance", {"robot": "puma560", "K": K.tolist(), "D": D,
                                              "model_terms": model_terms},
                       in_widths={"pose_d": 12, "twist_d": 6, "q": 6, "qd": 6}, batch=2)
    q = RNG.uniform(-1, 1, (2, 6))
    qd = RNG.uniform(-1, 1, (2, 6))
    q_goal = q + RNG.uniform(-0.4, 0.4, (2, 6))
    pose_d = np.array([pose_of(T) for T in PUMA.fk(q_goal)])
    twist_d = RNG.uniform(-0.5, 0.5, (2, 6))
    tau, wrench = check.output(0.0, pose_d, twist_d, q, qd)
    for b in range(2):
        T, Td, J = PUMA.fk(q[b]), PUMA.fk(q_goal[b]), PUMA.jacobian(q[b])
        e = np.concatenate([Td[:3, 3] - T[:3, 3],
                            Rotation.from_matrix(Td[:3, :3] @ T[:3, :3].T).as_rotvec()])
        F = K @ e + np.diag(D) @ (twist_d[b] - J @ qd[b])
        bias = (PUMA.rnea(q[b], qd[b], np.zeros(6)) if model_terms else PUMA.gravity_torque(q[b]))
        np.testing.assert_allclose(wrench[b], F, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(tau[b], J.T @ F + bias, rtol=1e-10, atol=1e-10)


def test_the_admittance_offset_follows_its_mass_damper_spring_step_response():
    """M x'' + D x' + K x = f - f_ref from rest: with M = 1 kg, D = 3 N s/m, K = 2 N/m the poles
    are -1 and -2 1/s, so x(t) = c / 2 (1 - 2 e^-t + e^-2t), c = f - f_ref (N)."""
    check = BlockCheck("Admittance", {"M": 1.0, "D": 3.0, "K": 2.0},
                       in_widths={"pose_0": 12, "twist_0": 6, "wrench": 6, "f_ref": 3})
    pose_0 = np.arange(12.0)
    twist_0 = np.arange(6.0) / 10
    wrench = [4.0, -1.0, 0.5, 9.0, 9.0, 9.0]          # the moments have no say
    f_ref = [1.0, 1.0, 0.5]
    c = np.array([3.0, -2.0, 0.0])
    u, h = (pose_0, twist_0, wrench, f_ref), 1e-3
    for _ in range(3000):                             # RK4 to t = 3 s
        x = check.xc.copy()
        k1 = check.derivative(0.0, *u, xc=x)
        k2 = check.derivative(0.0, *u, xc=x + h / 2 * k1)
        k3 = check.derivative(0.0, *u, xc=x + h / 2 * k2)
        k4 = check.derivative(0.0, *u, xc=x + h * k3)
        check.xc[...] = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    pose, twist, offset = check.output(3.0, *u)
    x = c / 2 * (1 - 2 * math.exp(-3.0) + math.exp(-6.0))
    v = c / 2 * (2 * math.exp(-3.0) - 2 * math.exp(-6.0))
    np.testing.assert_allclose(offset[0], x, atol=1e-9)
    np.testing.assert_allclose(pose[0], pose_0 + np.concatenate([x, np.zeros(9)]), atol=1e-9)
    np.testing.assert_allclose(twist[0], twist_0 + np.concatenate([v, np.zeros(3)]), atol=1e-9)


WALL_LINE = "  wall: {type: ContactWall, point: [1.1, 0, 0], normal: %s, stiffness: %s, damping: %s}\n"


@pytest.mark.parametrize("block, says", [
    (WALL_LINE % ("[-1, 0, 0]", "-1.0e4", "50"),
     "block 'wall': 'stiffness' must be > 0, got [-10000.0]"),
    (WALL_LINE % ("[-1, 0, 0]", "0.0", "50"), "block 'wall': 'stiffness' must be > 0, got [0.0]"),
    (WALL_LINE % ("[-1, 0, 0]", "1.0e4", "-5"), "block 'wall': 'damping' must be >= 0, got [-5.0]"),
    (WALL_LINE % ("[0, 0, 0]", "1.0e4", "50"),
     "block 'wall': 'normal' must be a nonzero vector (the wall's outward direction), got [0, 0, 0]"),
    (WALL_LINE % ("[-1, 0]", "1.0e4", "50"),
     "block 'wall': 'normal' needs 3 values (x, y, z in the base frame), got 2"),
    ("  wall: {type: CartesianImpedance, robot: two_link, K: [1000, -1, 0, 0, 0, 0], D: 10}\n",
     "block 'wall': 'K' must be positive semi-definite (no negative stiffness or damping), got "
     "[1000.0, -1.0, 0.0, 0.0, 0.0, 0.0] on its diagonal"),
    ("  wall: {type: CartesianImpedance, robot: two_link, K: [1, 2, 3], D: 10}\n",
     "block 'wall': 'K' needs 6 values (the diagonal: x, y, z, rx, ry, rz) or a 6 x 6 matrix, "
     "got shape [3]"),
    ("  wall: {type: JointImpedance, robot: two_link, K: [100, -2], D: 10}\n",
     "block 'wall': 'K' must be >= 0, got [100.0, -2.0]"),
    ("  wall: {type: ContactSphere, centre: [1, 0, 0], radius: -0.1, stiffness: 1.0e3}\n",
     "block 'wall': 'radius' must be > 0, got [-0.1]"),
    ("  wall: {type: Admittance, M: [1, 0, 1], D: 10}\n",
     "block 'wall': 'M' must be > 0, got [1.0, 0.0, 1.0]"),
])
def test_bad_interaction_parameters_are_refused_at_the_blocks_line(tmp_path, block, says, capsys):
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nblocks:\n  src: {{type: Constant, value: 1.0}}\n{block}"
                    "connections: []\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == f"error: {path}:4: {says}\n"
