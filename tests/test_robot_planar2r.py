"""Closed-form planar 2R models against the general algorithms and the two-link arm P2's
formulas (Spong, Hutchinson and Vidyasagar, Robot Modeling and Control, the planar elbow arm)."""
from pathlib import Path

import numpy as np

from blocksim.models import planar2r
from blocksim.models.planar2r import Distributed2R, PointMass2R
from blocksim.models.robot import RobotModel

TWO = RobotModel.preset("two_link")
POINT = RobotModel.preset("two_link_point_mass")
P2 = Distributed2R.uniform_rods(3.0, 2.0, 1.0, 0.8)
PM = PointMass2R(1.0, 1.0, 1.0, 1.0)

rng = np.random.default_rng(7)
Q, QD, QDD = (rng.uniform(-3, 3, (6, 2)) for _ in range(3))


def close(a, b, tol=1e-12):
    scale = max(np.max(np.abs(a)), np.max(np.abs(b)), 1.0)
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


def check_against_general(closed, model):
    close(closed.mass_matrix(Q), model.mass_matrix(Q))
    close(closed.gravity(Q), model.gravity_torque(Q))
    close(closed.velocity_product(Q, QD), model.nonlinear_effects(Q, QD) - model.gravity_torque(Q))
    close(closed.coriolis_matrix(Q, QD), model.coriolis_matrix(Q, QD))
    close(closed.inverse_dynamics(Q, QD, QDD), model.rnea(Q, QD, QDD))
    tau = closed.inverse_dynamics(Q, QD, QDD)
    close(closed.forward_dynamics(Q, QD, tau), model.aba(Q, QD, tau), 1e-11)
    close(closed.kinetic_energy(Q, QD), model.kinetic_energy(Q, QD))
    close(closed.potential_energy(Q), model.potential_energy(Q))


def test_distributed_form_equals_general_algorithms():
    check_against_general(P2, TWO)


def test_point_mass_form_equals_general_algorithms():
    check_against_general(PM, POINT)


def test_geared_arm_closed_form_adds_the_reflected_rotor_inertia():
    """W2's arm (gear N = 100, Jm = 1e-5 kg m^2): the closed form with armature N^2 Jm = 0.1 kg m^2
    on M11 and M22 equals the general algorithms with rotor inertia, and the bare arm's M + 0.1 I
    typed from the tutorial's formula M + N^2 Jm I."""
    root = Path(__file__).resolve().parents[1]
    geared = RobotModel.from_yaml(root / "examples" / "robots" / "two_link_geared.yaml")
    closed = geared.closed_form
    assert (closed.Ja1, closed.Ja2) == (100 ** 2 * 1e-5, 100 ** 2 * 1e-5)
    check_against_general(closed, geared)
    close(closed.mass_matrix(Q), P2.mass_matrix(Q) + 0.1 * np.eye(2))


def test_point_mass_is_the_distributed_limit():
    d = Distributed2R(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0)
    close(d.inverse_dynamics(Q, QD, QDD), PM.inverse_dynamics(Q, QD, QDD))


def test_preset_detects_its_closed_form():
    assert TWO.closed_form == P2
    assert RobotModel.preset("puma560").closed_form is None


def test_two_link_against_its_textbook_formulas():
    """The plant P2 (m = 3, 2 kg; l = 1.0, 0.8 m; centres of mass mid-link; rods), its mass matrix,
    Coriolis and gravity terms typed from the textbook formulas of the planar elbow arm."""
    m1, m2, l1, l2, g = 3.0, 2.0, 1.0, 0.8, 9.81
    c1, c2, I1, I2 = l1 / 2, l2 / 2, m1 * l1 ** 2 / 12, m2 * l2 ** 2 / 12
    q1, q2, qd1, qd2 = 0.7, -1.2, 0.9, -2.1
    M11 = I1 + I2 + m1 * c1 ** 2 + m2 * (l1 ** 2 + c2 ** 2 + 2 * l1 * c2 * np.cos(q2))
    M12 = I2 + m2 * (c2 ** 2 + l1 * c2 * np.cos(q2))
    M22 = I2 + m2 * c2 ** 2
    b = m2 * l1 * c2 * np.sin(q2)
    c = np.array([-b * (2 * qd1 * qd2 + qd2 ** 2), b * qd1 ** 2])
    G = np.array([(m1 * c1 + m2 * l1) * g * np.cos(q1) + m2 * c2 * g * np.cos(q1 + q2),
                  m2 * c2 * g * np.cos(q1 + q2)])
    q, qd = np.array([q1, q2]), np.array([qd1, qd2])
    close(TWO.mass_matrix(q), [[M11, M12], [M12, M22]])
    close(TWO.nonlinear_effects(q, qd), c + G)
    # at q = 0 the numbers are easy to check by hand: M11 = 0.25 + 0.10667 + 0.75 + 2 (1 + 0.16 + 0.8)
    close(TWO.mass_matrix(np.zeros(2))[0, 0], 0.25 + 2 * 0.64 / 12 + 0.75 + 2 * 1.96)
    close(TWO.gravity_torque(np.zeros(2)), [(1.5 + 2.0) * 9.81 + 0.8 * 9.81, 0.8 * 9.81])


def test_closed_form_kernels():
    p = P2.params()
    M = np.empty((6, 2, 2))
    planar2r.mass_matrix_into(p, Q, M)
    close(M, TWO.mass_matrix(Q))
    tau = np.empty((6, 2))
    planar2r.rnea_into(p, Q, QD, QDD, tau)
    close(tau, TWO.rnea(Q, QD, QDD))
    acc = np.empty((6, 2))
    planar2r.aba_into(p, Q, QD, tau, acc)
    close(acc, QDD, 1e-11)
