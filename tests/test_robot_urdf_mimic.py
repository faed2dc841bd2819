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
        "joints has fewer independent coordinates than joints, which a RobotModel does not hold: "
        "load it with blocksim.models.coupled.CoupledRobot.from_urdf (dynamics in the independent "
        "joints); the robot blocks take it as it is (the .urdf, or a robot YAML with it as "
        "source)")


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


# ---- the robot blocks on the chain (ports in the independent joints) -----------------------------

ROBOT_FILE = CHAIN.with_suffix(".yaml")          # the chain base_link -> tcp, rotor inertia on
EXAMPLE = CHAIN.parents[1] / "commissioning" / "mimic_chain_move.yaml"


def chain_block(type_name, batch=1, connected=None, **params):
    """A robot block of the mimic chain, inputs 4 wide (the Manipulator's f_ext 6)."""
    from blockcheck import BlockCheck
    widths = {"tau": 4, "f_ext": 6} if type_name == "Manipulator" else 4
    return BlockCheck(type_name, {"robot": str(ROBOT_FILE), **params}, in_widths=widths,
                      batch=batch, connected=connected)


def set_state(check, q, qd):
    check.xc[:, :4] = q
    check.xc[:, 4:8] = qd


def test_the_blocks_match_pinocchio_forward_and_inverse_dynamics_and_the_tool():
    """The stored Pinocchio samples (tau = rnea(q, qd, qdd) of its mimic model, no rotor
    inertia): the Manipulator's qdd under that tau is Pinocchio's qdd, InverseDynamics gives tau,
    ForwardKinematics the tool pose (blocks' pose: p, then R row-major)."""
    ref = np.load(DATA / "arm6_mimic_chain_reference.npz")
    B = ref["q"].shape[0]
    common = {"gravity": ref["gravity"].tolist(), "rotor_inertia": False}
    arm = chain_block("Manipulator", batch=B, connected=["tau"], **common)
    assert arm.block.model.joint_names == tuple(ref["joints"])
    set_state(arm, ref["q"], ref["qd"])
    np.testing.assert_allclose(arm.output(0.0, ref["tau"])[2], ref["qdd"], rtol=0, atol=1e-9)
    inv = chain_block("InverseDynamics", batch=B, **common)
    np.testing.assert_allclose(inv.output(0.0, ref["q"], ref["qd"], ref["qdd"]), ref["tau"],
                               rtol=0, atol=1e-10)
    fk = chain_block("ForwardKinematics", batch=B)
    pose = fk.output(0.0, ref["q"])[2]
    np.testing.assert_allclose(pose[:, :3], ref["tool"][:, :3, 3], rtol=0, atol=1e-12)
    np.testing.assert_allclose(pose[:, 3:].reshape(B, 3, 3), ref["tool"][:, :3, :3], rtol=0,
                               atol=1e-12)


def test_manipulator_qdd_is_the_reduced_system_solved_per_member_with_a_wrench():
    """A batch of three members with their own link errors (one per chain link, the mimic
    joints' links too) and payloads, a tool wrench wired: qdd = M_r^-1 (tau - c_r + (J G)^T f)
    of each member's CoupledRobot, from the reduced matrices themselves."""
    from blocksim.blocks.base import BatchValue
    rng = np.random.default_rng(11)
    errors = [[0.0] * 6, [0.1, 0.0, 0.2, 0.0, -0.1, 0.05], [0.0, -0.2, 0.0, 0.3, 0.0, 0.0]]
    payloads = [0.0, 0.7, 1.5]
    check = chain_block("Manipulator", batch=3, connected=["tau", "f_ext"],
                        param_error=BatchValue(errors), payload_mass=BatchValue(payloads))
    q, qd = rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-2, 2, (3, 4))
    tau, f_ext = rng.uniform(-30, 30, (3, 4)), rng.uniform(-20, 20, (3, 6))
    set_state(check, q, qd)
    got = check.output(0.0, tau, f_ext)[2]
    base = CoupledRobot.chain_of_yaml(ROBOT_FILE)
    for b in range(3):
        arm = base.scaled(1.0 + np.array(errors[b]))
        arm = arm.with_payload(payloads[b]) if payloads[b] else arm
        M = arm.mass_matrix(q[b])
        rhs = tau[b] - arm.nonlinear_effects(q[b], qd[b]) + arm.jacobian(q[b]).T @ f_ext[b]
        want = np.linalg.solve(M, rhs)
        assert np.max(np.abs(got[b] - want)) < 1e-12 * max(1.0, np.max(np.abs(want)))
        np.testing.assert_allclose(got[b], arm.aba(q[b], qd[b], tau[b], f_ext[b]), rtol=0,
                                   atol=1e-11)


def test_controllers_kinematics_and_energy_blocks_equal_the_coupled_robot():
    rng = np.random.default_rng(3)
    arm = CoupledRobot.chain_of_yaml(ROBOT_FILE)
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (3, 4)) for _ in range(3))
    q_d, qd_d = rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-1, 1, (3, 4))
    Kp, Kd = [400.0, 300.0, 200.0, 100.0], [40.0, 30.0, 20.0, 10.0]
    ct = chain_block("ComputedTorque", batch=3, Kp=Kp, Kd=Kd)
    v = qdd + np.array(Kd) * (qd_d - qd) + np.array(Kp) * (q_d - q)
    np.testing.assert_allclose(ct.output(0.0, q_d, qd_d, qdd, q, qd), arm.rnea(q, qd, v),
                               rtol=1e-13, atol=1e-11)
    gc = chain_block("GravityCompensation", batch=3)
    np.testing.assert_allclose(gc.output(0.0, q), arm.gravity_torque(q), rtol=1e-13, atol=1e-12)
    jac = chain_block("Jacobian", batch=3)
    np.testing.assert_allclose(jac.output(0.0, q), arm.jacobian(q).reshape(3, 24), rtol=0,
                               atol=1e-14)
    kinetic, potential, total = chain_block("Energy", batch=3).output(0.0, q, qd)
    np.testing.assert_allclose(kinetic[:, 0], arm.kinetic_energy(q, qd), rtol=1e-13)
    np.testing.assert_allclose(potential[:, 0], arm.potential_energy(q), rtol=1e-13, atol=1e-13)
    # the kinetic energy is the reduced one, qd^T M_r qd / 2
    M = arm.mass_matrix(q)
    np.testing.assert_allclose(kinetic[:, 0], 0.5 * np.einsum("bi,bij,bj->b", qd, M, qd),
                               rtol=1e-13)


@pytest.mark.parametrize("type_name, params", [("Singularity", {}),
                                               ("MomentumObserver", {"gain": 50.0})])
def test_blocks_without_the_coupled_kernels_refuse_naming_the_mimic_joint(type_name, params):
    from blocksim.errors import ParameterError
    with pytest.raises(ParameterError) as err:
        chain_block(type_name, **params)
    text = str(err.value)
    assert "blk" in text and f"a {type_name} block does not take" in text
    assert "joint 'joint_3' follows joint 'joint_2'" in text


def test_the_example_in_both_modes_energy_and_computed_torque():
    """examples/commissioning/mimic_chain_move.yaml: compiled equals interpreted over 0.3 s of the
    move, a compiled batch's members equal their single runs; the whole move (compiled) under
    computed torque on the exact model tracks the
    reference to the solver's level (the error dynamics e'' + Kd e' + Kp e = 0 start at e = 0:
    rk4 at 1 ms leaves 5e-12 rad); with no torque the falling arm keeps its energy (to 1e-9 J of
    ~20 J while it moves) and the Energy block's total is the CoupledRobot's."""
    import blocksim
    short = {"simulation.stop_time": 0.3}
    runs = {mode: blocksim.simulate(blocksim.load(EXAMPLE, variant="move",
                                                  set={**short, "simulation.mode": mode}))
            for mode in ("interpreted", "compiled")}
    for signal in ("arm.q", "arm.qd", "u.out", "energy.total", "fk.position"):
        np.testing.assert_allclose(runs["compiled"][signal], runs["interpreted"][signal],
                                   rtol=0, atol=1e-12)
    # a compiled batch whose members' plants differ (link errors, the mimic joints' links too)
    errors = [[0.0] * 6, [0.1, 0.0, 0.2, 0.0, -0.1, 0.05]]
    compiled_short = {**short, "simulation.mode": "compiled"}
    batch = blocksim.simulate(blocksim.load(EXAMPLE, variant="move", set=compiled_short),
                              batch={"arm.param_error": errors})
    for k, e in enumerate(errors):
        one = blocksim.simulate(blocksim.load(EXAMPLE, variant="move",
                                              set={**compiled_short, "arm.param_error": e}))
        np.testing.assert_array_equal(batch["arm.q"][k], one["arm.q"])
    assert np.max(np.abs(batch["arm.q"][1] - batch["ref.q"][1])) > 1e-6   # a mismatched plant
    move = blocksim.simulate(blocksim.load(EXAMPLE, variant="move",
                                           set={"simulation.mode": "compiled"}))
    assert np.max(np.abs(move["arm.q"] - move["ref.q"])) < 1e-9
    np.testing.assert_allclose(move["arm.q"][-1], [0.8, -0.4, 1.0, -0.6], rtol=0, atol=1e-9)
    free = blocksim.simulate(blocksim.load(EXAMPLE, variant="free",
                                           set={**short, "simulation.mode": "interpreted"}))
    energy = free["energy.total"][:, 0]
    assert np.ptp(free["arm.q"][:, 1]) > 0.1                       # it really falls
    assert np.max(np.abs(energy - energy[0])) < 1e-9
    arm = CoupledRobot.chain_of_yaml(ROBOT_FILE)
    q, qd = free["arm.q"][-1], free["arm.qd"][-1]
    assert energy[-1] == pytest.approx(arm.kinetic_energy(q, qd) + arm.potential_energy(q),
                                       rel=1e-13)


def test_friction_of_a_mimic_joint_and_wrong_widths_are_refused():
    """friction: model would drop the followers' own friction (the file gives joint_3 and joint_5
    some): refused, naming the joint; a torque input of the chain's 6 joints is the wrong width."""
    from blocksim.errors import ParameterError, WidthError
    with pytest.raises(ParameterError, match="mimic joint 'joint_3' has friction of its own"):
        chain_block("Manipulator", connected=["tau"], friction="model")
    from blockcheck import BlockCheck
    with pytest.raises(WidthError, match="input has width 6, robot 'arm6_mimic_chain' needs 4"):
        BlockCheck("Manipulator", {"robot": str(ROBOT_FILE)}, in_widths={"tau": 6, "f_ext": 6},
                   connected=["tau"])
