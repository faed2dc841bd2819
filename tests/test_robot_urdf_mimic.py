"""Mimic joints ON the chain (CoupledRobot, models/coupled.py): the dynamics in the independent
joints against Pinocchio's mimic joints (values stored by tests/data/urdf/make_urdf_references.py),
against the same arm with every mimic written as an explicit constraint (Lagrange multipliers on
the unconstrained six-joint arm), a coaxial pair in closed form, the refusals."""
import re
from pathlib import Path

import numpy as np
import pytest

from blocksim.models.coupled import CoupledRobot
from blocksim.models.robot import RobotModel
from blocksim.models.urdf import URDFError

DATA = Path(__file__).resolve().parent / "data" / "urdf"
CHAIN = Path(__file__).resolve().parents[1] / "examples" / "robots" / "arm6_mimic_chain.urdf"
GRAVITY = np.array([0.3, -0.4, -9.81])
#: The file's mimic elements as written (follower, leader, multiplier, offset): joint_5 follows
#: joint_3, itself a follower.
MIMICS = [("joint_3", "joint_2", -0.8, 0.2), ("joint_5", "joint_3", 0.5, 0.3)]


def full_state(q, qd):
    """The six joints' positions and rates from the independent ones (joint_1, 2, 4, 6), by the
    file's mimic formulas one after the other."""
    names = ["joint_1", "joint_2", "joint_4", "joint_6"]
    pos = dict(zip(names, q))
    rate = dict(zip(names, qd))
    for f, leader, m, o in MIMICS:
        pos[f], rate[f] = m * pos[leader] + o, m * rate[leader]
    order = [f"joint_{i}" for i in range(1, 7)]
    return np.array([pos[k] for k in order]), np.array([rate[k] for k in order])


@pytest.fixture(scope="module")
def arms():
    coupled = CoupledRobot.from_urdf(CHAIN, tip_link="tcp", gravity=GRAVITY, rotor_inertia=True)
    free_text = re.sub(r"<mimic joint=\"joint_\d\"[^>]*/>", "", CHAIN.read_text())
    free = RobotModel.from_urdf(free_text, tip_link="tcp", gravity=GRAVITY, rotor_inertia=True)
    return coupled, free


def test_the_independent_joints_and_the_map(arms):
    coupled, free = arms
    assert coupled.joint_names == ("joint_1", "joint_2", "joint_4", "joint_6")
    assert coupled.full.joint_names == free.joint_names and free.n == 6
    q = np.array([0.3, -0.7, 1.1, 0.9])
    qd = np.array([0.5, -1.2, 0.8, 2.0])
    want_q, want_qd = full_state(q, qd)
    np.testing.assert_allclose(coupled.expand(q), want_q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(coupled.expand_rate(qd), want_qd, rtol=0, atol=1e-15)
    np.testing.assert_allclose(coupled.fk(q), free.fk(want_q), rtol=0, atol=1e-15)
    assert coupled.notes[-1] == "joint 'joint_5' follows joint 'joint_2': q = -0.4 q_joint_2 + 0.4"


def test_rnea_mass_matrix_and_tool_match_pinocchio():
    ref = np.load(DATA / "arm6_mimic_chain_reference.npz")
    arm = CoupledRobot.from_urdf(CHAIN, tip_link="tcp", gravity=ref["gravity"])
    assert arm.joint_names == tuple(ref["joints"])
    for value, want in ((arm.rnea(ref["q"], ref["qd"], ref["qdd"]), ref["tau"]),
                        (arm.mass_matrix(ref["q"]), ref["M"]), (arm.fk(ref["q"]), ref["tool"])):
        np.testing.assert_allclose(value, want, rtol=0, atol=1e-10)    # they agree to ~1e-14


def test_forward_dynamics_equal_the_arm_with_the_mimics_as_constraints(arms):
    """The unconstrained arm with A q_full = const (one row per <mimic>, as written) and
    multipliers lambda: [M A^T; A 0] [qdd; -lambda] = [tau_full - h; 0], the motors' torques on the
    independent joints, none on the followers (A is constant: no A-dot qd term)."""
    coupled, free = arms
    order = list(free.joint_names)
    A = np.zeros((len(MIMICS), 6))
    for r, (f, leader, m, _) in enumerate(MIMICS):
        A[r, order.index(f)], A[r, order.index(leader)] = 1.0, -m
    independent = [order.index(n) for n in coupled.joint_names]
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(8):
        q, qd, tau = rng.uniform(-2, 2, 4), rng.uniform(-2, 2, 4), rng.uniform(-30, 30, 4)
        f_ext = rng.uniform(-20, 20, 6)
        qf, qdf = full_state(q, qd)
        tau_full = np.zeros(6)
        tau_full[independent] = tau
        h = free.rnea(qf, qdf, np.zeros(6), f_ext=f_ext)
        M = free.mass_matrix(qf)
        K = np.block([[M, A.T], [A, np.zeros((2, 2))]])
        qdd_full = np.linalg.solve(K, np.concatenate([tau_full - h, np.zeros(2)]))[:6]
        qdd = coupled.aba(q, qd, tau, f_ext=f_ext)
        worst = max(worst, float(np.max(np.abs(coupled.expand_rate(qdd) - qdd_full))))
        # inverse dynamics is the same system read the other way
        np.testing.assert_allclose(coupled.rnea(q, qd, qdd, f_ext=f_ext), tau, rtol=0, atol=1e-10)
    assert worst < 1e-10


def test_mass_matrix_energy_and_regressor(arms):
    coupled, free = arms
    rng = np.random.default_rng(6)
    q, qd, qdd = (rng.uniform(-2, 2, (5, 4)) for _ in range(3))
    M = coupled.mass_matrix(q)
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), rtol=0, atol=1e-13)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    # the kinetic energy of the moving six-joint arm is qd^T M_r qd / 2
    T_free = [free.kinetic_energy(*full_state(a, b)) for a, b in zip(q, qd)]
    np.testing.assert_allclose(0.5 * np.einsum("bi,bij,bj->b", qd, M, qd), T_free, rtol=1e-13)
    Y = coupled.regressor(q, qd, qdd, friction=True)
    tau = coupled.rnea(q, qd, qdd) + coupled.friction_torque(qd)
    np.testing.assert_allclose(Y @ coupled.standard_parameters(friction=True), tau, rtol=1e-12,
                               atol=1e-10)
    assert Y.shape == (5, 4, 6 * 10 + 6 + 18)


def test_a_coaxial_follower_adds_its_inertia_times_one_plus_k_squared():
    """j2 turns about j1's axis by k q1 + o relative to link a: link b turns by (1 + k) q1 + o, so
    M_r = I_a + (1 + k)^2 I_b about the axis (kg m^2), plus the rotors N1^2 Jm1 + k^2 N2^2 Jm2,
    and the tool, 0.5 m out on b, sits at the angle (1 + k) q1 + o."""
    k, o = 1.5, 0.25
    text = f"""<robot name="coaxial" xmlns:drake="http://drake.mit.edu"><link name="base"/>
      <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
      <link name="a"><inertial><origin xyz="0.2 0 0"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
      <joint name="j2" type="continuous"><parent link="a"/><child link="b"/><origin xyz="0 0 0.1"/>
        <axis xyz="0 0 1"/><mimic joint="j1" multiplier="{k}" offset="{o}"/></joint>
      <link name="b"><inertial><origin xyz="0.3 0 0"/><mass value="1.5"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.04"/></inertial></link>
      <joint name="t" type="fixed"><parent link="b"/><child link="tool"/><origin xyz="0.5 0 0"/></joint>
      <link name="tool"/>
      <transmission name="t1"><joint name="j1"/><actuator name="m1">
        <mechanicalReduction>10</mechanicalReduction><drake:rotor_inertia value="1e-3"/></actuator></transmission>
      <transmission name="t2"><joint name="j2"/><actuator name="m2">
        <mechanicalReduction>20</mechanicalReduction><drake:rotor_inertia value="2e-4"/></actuator></transmission>
    </robot>"""
    arm = CoupledRobot.from_urdf(text, rotor_inertia=True)
    assert arm.n == 1 and arm.full.n == 2
    I_a, I_b = 0.03 + 2 * 0.2 ** 2, 0.04 + 1.5 * 0.3 ** 2
    want = I_a + (1 + k) ** 2 * I_b + 10 ** 2 * 1e-3 + k ** 2 * 20 ** 2 * 2e-4
    for q in (0.0, 0.7, -2.1):
        assert arm.mass_matrix([q])[0, 0] == pytest.approx(want, rel=1e-14)
        # gravity along the axis: no torque; a steady turn: no torque about the axis
        assert arm.rnea([q], [3.0], [0.0])[0] == pytest.approx(0.0, abs=1e-13)
        assert arm.rnea([q], [3.0], [2.0])[0] == pytest.approx(2.0 * want, rel=1e-14)
        a = (1 + k) * q + o
        np.testing.assert_allclose(arm.fk([q])[:3, 3], [0.5 * np.cos(a), 0.5 * np.sin(a), 0.1],
                                   rtol=0, atol=1e-15)
        np.testing.assert_allclose(arm.jacobian([q])[:, 0],
                                   [-0.5 * (1 + k) * np.sin(a), 0.5 * (1 + k) * np.cos(a), 0.0,
                                    0.0, 0.0, 1 + k], rtol=0, atol=1e-15)


def test_robot_model_refuses_a_chain_with_mimic_joints_naming_the_way():
    with pytest.raises(URDFError) as err:
        RobotModel.from_urdf(CHAIN, tip_link="tcp")
    assert str(err.value) == (
        f"{CHAIN}:40: joint 'joint_3' on the chain mimics joint 'joint_2': a chain with mimic "
        "joints has fewer independent coordinates than joints, which the blocks' serial-chain "
        "kernels do not take; load it in Python with blocksim.models.coupled.CoupledRobot."
        "from_urdf (dynamics in the independent joints)")


@pytest.mark.parametrize("change, message", [
    (('<mimic joint="joint_2"', '<mimic joint="finger_left_joint"'),
     ":40: joint 'joint_3' on the chain mimics joint 'finger_left_joint', which is off the chain: "
     "a chain joint can follow only another joint of the chain"),
    (('<mimic joint="joint_2"', '<mimic joint="joint_5"'),
     ":40: mimic joints follow each other in a loop (joint_3 -> joint_5 -> joint_3)"),
])
def test_couplings_that_cannot_be_are_refused_at_the_mimic(change, message):
    text = CHAIN.read_text().replace(*change)
    with pytest.raises(URDFError) as err:
        CoupledRobot.from_urdf(text, tip_link="tcp")
    assert str(err.value) == "<urdf string>" + message


def test_the_commissioning_example_runs_the_coupled_chain_in_a_diagram():
    """examples/commissioning/mimic_chain_move.yaml: with no torque the falling arm keeps its
    energy (rk4, h = 1 ms: to 1e-8 J of 21.6 J while joint_6 turns 6.5 rad); PD plus the exact
    gravity torques bring it to rest at qf (the steady state of PD + G^T g is q = qf)."""
    import blocksim
    path = CHAIN.parents[1] / "commissioning" / "mimic_chain_move.yaml"
    free = blocksim.simulate(blocksim.load(path, variant="free"))
    energy = free["arm.energy"][:, 0]
    assert np.ptp(free["arm.q"][:, 3]) > 6.0                       # it really moves
    assert np.max(np.abs(energy - energy[0])) < 1e-8
    arm = CoupledRobot.from_urdf(CHAIN, tip_link="tcp", rotor_inertia=True)
    q, qd = free["arm.q"][-1], free["arm.qd"][-1]
    assert energy[-1] == pytest.approx(arm.kinetic_energy(q, qd) + arm.potential_energy(q), rel=1e-14)
    move = blocksim.simulate(blocksim.load(path, variant="move"))
    np.testing.assert_allclose(move["arm.q"][-1], [0.8, -0.4, 1.0, -0.6], rtol=0, atol=2e-5)
