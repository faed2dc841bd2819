"""Robot blocks against RobotModel and physics: ABA/CRBA/closed form agree, feedforward = rnea, energy is
conserved, gravity compensation holds, computed torque follows its error dynamics, joint stops are
located in time, per-member robot parameters, and compiled mode equals interpreted mode."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import blocksim
from blocksim.errors import BlocksimError, ParameterError, WidthError
from blocksim.models import RobotModel

from blockcheck import BlockCheck

DATA = Path(__file__).parent / "data" / "robot"
RNG = np.random.default_rng(7)
TWO = RobotModel.preset("two_link")
PUMA = RobotModel.preset("puma560")


def run(name, **overrides):
    return blocksim.simulate(blocksim.load(DATA / name, set=overrides or None))


def manipulator(robot, batch=1, f_ext=False, **params):
    n = RobotModel.preset(robot).n if robot in RobotModel.preset_names() else None
    return BlockCheck("Manipulator", {"robot": robot, **params}, in_widths={"tau": n, "f_ext": 6},
                      batch=batch, connected=["tau", "f_ext"] if f_ext else ["tau"])


def states(model, batch):
    q = RNG.uniform(-math.pi, math.pi, (batch, model.n))
    qd = RNG.uniform(-2, 2, (batch, model.n))
    tau = RNG.uniform(-20, 20, (batch, model.n))
    return q, qd, tau


def qdd_of(check, q, qd, tau, f_ext=None):
    n = q.shape[1]
    check.xc[:, :n] = q
    check.xc[:, n:] = qd
    out = check.output(0.0, tau, f_ext if f_ext is not None else 0.0)
    return out[2]


# ---- forward dynamics: methods against RobotModel ------------------------------------------------

@pytest.mark.parametrize("robot", ["puma560", "kr6_like", "two_link"])
def test_aba_and_crba_methods_equal_the_model_forward_dynamics(robot):
    model = RobotModel.preset(robot)
    q, qd, tau = states(model, 4)
    expected = model.aba(q, qd, tau)
    for method in ("aba", "crba"):
        for closed_form in ("auto", "never"):
            check = manipulator(robot, batch=4, method=method, closed_form=closed_form)
            np.testing.assert_allclose(qdd_of(check, q, qd, tau), expected, rtol=1e-10, atol=1e-10)


def test_external_wrench_torque_limits_friction_springs_enter_the_plant_equation():
    q, qd, tau = states(PUMA, 3)
    f = RNG.uniform(-10, 10, (3, 6))
    check = manipulator("puma560", batch=3, f_ext=True)
    np.testing.assert_allclose(qdd_of(check, q, qd, tau, f), PUMA.aba(q, qd, tau, f_ext=f), rtol=1e-10,
                               atol=1e-10)
    params = dict(tau_max=[5.0, 15.0], friction="coulomb_viscous", Fv=[0.5, 0.3], Fc=[1.0, 0.5],
                  friction_smoothing=1e-3, damping=[0.2, 0.1], stiffness=[3.0, 2.0], q_rest=[0.1, -0.2])
    q, qd, tau = states(TWO, 3)
    for closed_form in ("auto", "never"):
        check = manipulator("two_link", batch=3, closed_form=closed_form, **params)
        t_eff = (np.clip(tau, [-5, -15], [5, 15]) - [0.5, 0.3] * qd - [1.0, 0.5] * np.tanh(qd / 1e-3)
                 - [0.2, 0.1] * qd - [3.0, 2.0] * (q - [0.1, -0.2]))
        np.testing.assert_allclose(qdd_of(check, q, qd, tau), TWO.aba(q, qd, t_eff), rtol=1e-10)


def test_model_friction_and_stribeck_law():
    q, qd, tau = states(TWO, 2)
    check = manipulator("two_link", batch=2, friction="model")
    np.testing.assert_allclose(qdd_of(check, q, qd, tau), TWO.aba(q, qd, tau - TWO.friction_torque(qd)),
                               rtol=1e-10)
    check = manipulator("two_link", batch=2, friction="stribeck", Fv=0.1, Fc=1.0, Fs=1.5, vs=0.1)
    tf = (1.0 + 0.5 * np.exp(-(qd / 0.1) ** 2)) * np.sign(qd) + 0.1 * qd
    np.testing.assert_allclose(qdd_of(check, q, qd, tau), TWO.aba(q, qd, tau - tf), rtol=1e-10)
    # exact sign: each joint speed is a zero-crossing function (either direction)
    assert check.block.n_zc == 2 and list(check.block.zc_directions) == [0, 0]
    np.testing.assert_array_equal(check.zero_crossings(0.0, tau), qd)


def test_outputs_q_qd_pose_come_from_state_and_only_qdd_reads_tau():
    check = manipulator("puma560")
    assert check.block.feedthrough() == {("tau", "qdd"), ("f_ext", "qdd")}
    q, qd, tau = states(PUMA, 1)
    check.xc[:] = np.hstack([q, qd])
    y_q, y_qd, _, pose = check.output(0.0, tau)
    T = PUMA.fk(q[0])
    np.testing.assert_array_equal(y_q, q)
    np.testing.assert_array_equal(y_qd, qd)
    np.testing.assert_allclose(pose[0, :3], T[:3, 3], atol=1e-14)
    np.testing.assert_allclose(pose[0, 3:], T[:3, :3].reshape(9), atol=1e-14)


# ---- the model-based blocks ----------------------------------------------------------------------

@pytest.mark.parametrize("robot, closed_form", [("puma560", "auto"), ("two_link", "auto"),
                                                ("two_link", "never")])
def test_inverse_dynamics_gravity_and_computed_torque_equal_rnea(robot, closed_form):
    """The model-based blocks against the model's RNEA; the planar 2R takes its closed-form
    kernels (nothing of the general RNEA), unless closed_form: never."""
    model = RobotModel.preset(robot)
    q, qd, qdd = states(model, 3)
    n = model.n
    kw = {"robot": robot, "closed_form": closed_form}
    ff = BlockCheck("InverseDynamics", kw, in_widths=n, batch=3)
    np.testing.assert_allclose(ff.output(0.0, q, qd, qdd), model.rnea(q, qd, qdd), rtol=1e-12, atol=1e-10)
    gc = BlockCheck("GravityCompensation", kw, in_widths=n, batch=3)
    np.testing.assert_allclose(gc.output(0.0, q), model.gravity_torque(q), rtol=1e-12, atol=1e-10)
    Kp, Kd = RNG.uniform(10, 100, n), RNG.uniform(1, 20, n)
    ct = BlockCheck("ComputedTorque", {**kw, "Kp": Kp, "Kd": Kd}, in_widths=n, batch=3)
    closed = robot == "two_link" and closed_form == "auto"
    for check in (ff, gc, ct):
        name = check.block.runtime_kernels().output.py_func.__name__
        assert name.endswith("_closed_form_output") == closed, name
    q_d, qd_d, qdd_d = states(model, 3)
    v = qdd_d + Kd * (qd_d - qd) + Kp * (q_d - q)
    np.testing.assert_allclose(ct.output(0.0, q_d, qd_d, qdd_d, q, qd), model.rnea(q, qd, v),
                               rtol=1e-12, atol=1e-10)
    fr = BlockCheck("InverseDynamics", {**kw, "include_friction": True}, in_widths=n, batch=3)
    np.testing.assert_allclose(fr.output(0.0, q, qd, qdd),
                               model.rnea(q, qd, qdd) + model.friction_torque(qd), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("robot", ["puma560", "kr6_like", "two_link"])
def test_kinematics_and_energy_blocks_equal_the_model(robot):
    model = RobotModel.preset(robot)
    q, qd, _ = states(model, 3)
    fk = BlockCheck("ForwardKinematics", {"robot": robot}, in_widths=model.n, batch=3)
    position, rotation, pose = fk.output(0.0, q)
    T = model.fk(q)
    np.testing.assert_allclose(position, T[:, :3, 3], atol=1e-14)
    np.testing.assert_allclose(rotation, T[:, :3, :3].reshape(3, 9), atol=1e-14)
    np.testing.assert_array_equal(pose, np.hstack([position, rotation]))
    J = BlockCheck("Jacobian", {"robot": robot}, in_widths=model.n, batch=3).output(0.0, q)
    np.testing.assert_allclose(J, model.jacobian(q).reshape(3, -1), atol=1e-14)
    kin, pot, tot = BlockCheck("Energy", {"robot": robot}, in_widths=model.n, batch=3).output(0.0, q, qd)
    np.testing.assert_allclose(kin[:, 0], model.kinetic_energy(q, qd), rtol=1e-12)
    np.testing.assert_allclose(pot[:, 0], model.potential_energy(q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tot, kin + pot, rtol=1e-15)


def test_kr6_like_tool_position_at_zero_pose():
    position = BlockCheck("ForwardKinematics", {"robot": "kr6_like"}, in_widths=6).output(0.0, np.zeros(6))[0]
    np.testing.assert_allclose(position[0], [0.900, 0.0, 1.120], atol=1e-12)


# ---- robot parameters: mismatch, payload, per-member values, files -------------------------------

def test_mismatch_options_build_the_documented_models():
    q, qd, qdd = states(TWO, 2)
    cases = [
        ({"param_error": [0.0, 0.1]}, TWO.scaled([1.0, 1.1])),
        ({"param_error": 0.3}, TWO.scaled(1.3)),
        ({"mass_scale": [1.0, 1.5]}, TWO.with_link_params(1, mass=3.0)),
        ({"links": {2: {"mass": 2.2}}}, TWO.with_link_params(1, mass=2.2)),
        ({"links": {"elbow": {"com": [-0.3, 0.0, 0.0]}}}, TWO.with_link_params(1, com=[-0.3, 0, 0])),
        ({"payload_mass": 0.7, "payload_com": [0.05, 0.0, 0.0]}, TWO.with_payload(0.7, [0.05, 0, 0])),
        ({"gravity": [0.0, -3.71, 0.0]}, TWO.with_options(gravity=[0.0, -3.71, 0.0])),
    ]
    for params, model in cases:
        for closed_form in ("auto", "never"):
            ff = BlockCheck("InverseDynamics", {"robot": "two_link", "closed_form": closed_form, **params},
                            in_widths=2, batch=2)
            np.testing.assert_allclose(ff.output(0.0, q, qd, qdd), model.rnea(q, qd, qdd), rtol=1e-12,
                                       err_msg=str(params))
    puma = BlockCheck("InverseDynamics", {"robot": "puma560", "rotor_inertia": True}, in_widths=6)
    q6, qd6, qdd6 = states(PUMA, 1)
    np.testing.assert_allclose(puma.output(0.0, q6, qd6, qdd6),
                               PUMA.with_options(rotor_inertia=True).rnea(q6, qd6, qdd6), rtol=1e-12)


def test_per_member_param_error_and_payload_in_one_batch():
    from blocksim.blocks.base import BatchValue
    q, qd, tau = states(TWO, 3)
    errors = [[0.0, 0.0], [0.0, 0.1], [0.2, -0.1]]
    payloads = [0.0, 0.5, 1.0]
    check = manipulator("two_link", batch=3, param_error=BatchValue(errors),
                        payload_mass=BatchValue(payloads))
    got = qdd_of(check, q, qd, tau)
    for b in range(3):
        model = TWO.scaled(1.0 + np.array(errors[b]))
        if payloads[b]:
            model = model.with_payload(payloads[b])
        np.testing.assert_allclose(got[b], model.aba(q[b], qd[b], tau[b]), rtol=1e-12)


def test_batch_run_members_equal_single_runs():
    path = Path(__file__).parents[1] / "examples" / "two_link_pid_vs_ff.yaml"
    settings = {"simulation.mode": "interpreted", "simulation.stop_time": 0.5}
    errors = [[0.0, 0.1], [0.0, 0.3]]
    rb = blocksim.simulate(blocksim.load(path, set=settings), batch={"ff.param_error": errors})
    for k, e in enumerate(errors):
        r = blocksim.simulate(blocksim.load(path, set={**settings, "ff.param_error": e}))
        np.testing.assert_array_equal(rb["plant.q"][k], r["plant.q"])


def test_robot_file_relative_to_the_diagram_and_clear_errors():
    check = BlockCheck("GravityCompensation", {"robot": "pendulum.yaml"}, in_widths=1, diagram_dir=str(DATA))
    # G = m g (l / 2) cos q for the 1 kg, 0.5 m rod
    assert check.output(0.0, [0.4])[0, 0] == pytest.approx(9.81 * 0.25 * math.cos(0.4), rel=1e-14)
    with pytest.raises(ParameterError, match="two_link"):
        BlockCheck("InverseDynamics", {"robot": "two_lnk"}, in_widths=2)
    with pytest.raises(ParameterError, match="links 1..2"):
        BlockCheck("InverseDynamics", {"robot": "two_link", "links": {3: {"mass": 1.0}}}, in_widths=2)
    with pytest.raises(ParameterError, match="one per link"):
        BlockCheck("InverseDynamics", {"robot": "two_link", "param_error": [0.1, 0.2, 0.3]}, in_widths=2)
    with pytest.raises(WidthError, match="needs 6"):
        BlockCheck("Manipulator", {"robot": "puma560"}, in_widths={"tau": 2, "f_ext": 6}, connected=["tau"])
    with pytest.raises(BlocksimError, match="restitution"):
        manipulator("two_link", restitution=1.5)


# ---- whole diagrams: conservation, holding, tracking, stops --------------------------------------

def test_free_swing_conserves_total_energy_with_dop853():
    r = run("free_swing.yaml")
    total = r["energy.total"][:, 0]
    assert np.ptp(r["arm.q"][:, 1]) > 1.0                       # the arm really swings
    assert np.max(np.abs(total - total[0])) / abs(total[0]) < 1e-8
    # the block's energy is the closed-form one of the two-link arm P2
    cf = TWO.closed_form
    np.testing.assert_allclose(total, cf.kinetic_energy(r["arm.q"], r["arm.qd"])
                               + cf.potential_energy(r["arm.q"]) + (total[0] - cf.potential_energy(
                                   r["arm.q"][0]) - cf.kinetic_energy(r["arm.q"][0], r["arm.qd"][0])),
                               rtol=1e-12, atol=1e-10)


def test_gravity_compensation_holds_the_arm_still():
    r = run("gravity_hold.yaml")
    assert np.max(np.abs(r["arm.qdd"])) < 1e-12
    assert np.max(np.abs(r["arm.q"] - r["arm.q"][0])) < 1e-9
    np.testing.assert_allclose(r["gc.tau"][0], PUMA.gravity_torque(r["arm.q"][0]), rtol=1e-12)


def test_logged_qdd_equals_model_aba_on_logged_states():
    r = run("driven.yaml")
    q, qd = r["arm.q"], r["arm.qd"]
    assert np.ptp(q, axis=0).min() > 1e-3
    np.testing.assert_allclose(r["arm.qdd"], PUMA.aba(q, qd, r["tau.out"]), rtol=1e-10, atol=1e-9)
    T = PUMA.fk(q)
    np.testing.assert_allclose(r["arm.pose"][:, :3], T[:, :3, 3], atol=1e-14)
    crba = run("driven.yaml", **{"arm.method": "crba"})
    np.testing.assert_allclose(crba["arm.q"], q, rtol=0, atol=1e-8)     # roundoff grows over 1 s


def test_computed_torque_error_decays_as_the_pd_error_dynamics():
    r = run("computed_torque.yaml")
    e = r["ref.q"] - r["arm.q"]
    e0 = np.array([0.05, -0.03])                  # q_d(0) = 0, q(0) = (-0.05, 0.03), both at rest
    wn = 10.0
    exact = e0 * ((1.0 + wn * r.t) * np.exp(-wn * r.t))[:, None]
    assert np.max(np.abs(e - exact)) < 1e-8


def pendulum_stop_time(q_stop=-0.5):
    """Time for the 1 kg, 0.5 m rod released horizontally to fall to q_stop (scipy, independent)."""
    m, g, c, I_o = 1.0, 9.81, 0.25, 1.0 * 0.5 ** 2 / 3

    def f(t, x):
        return [x[1], -m * g * c * math.cos(x[0]) / I_o]

    def hit(t, x):
        return x[0] - q_stop
    hit.terminal = True
    sol = solve_ivp(f, (0, 2), [0.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-15, events=hit)
    return sol.t_events[0][0], sol.y_events[0][0][1]


def test_joint_stop_event_at_the_analytic_time_then_rests_on_the_stop():
    t_hit, qd_hit = pendulum_stop_time()
    r = run("stop.yaml")
    stops = [e for e in r.events if e.block == "arm"]
    assert len(stops) == 1
    assert abs(stops[0].t - t_hit) < 1e-9
    after = r.t > t_hit
    np.testing.assert_array_equal(r["arm.q"][after, 0], -0.5)
    np.testing.assert_array_equal(r["arm.qd"][after, 0], 0.0)
    np.testing.assert_array_equal(r["arm.qdd"][after, 0], 0.0)
    before = r.t < t_hit
    assert np.all(r["arm.q"][before, 0] > -0.5)


def test_exact_coulomb_friction_stops_the_joint_at_the_located_instant_and_it_sticks():
    m, g, c, I_o, Fc = 1.0, 9.81, 0.25, 0.5 ** 2 / 3, 3.0

    def f(t, x):
        return [x[1], (-m * g * c * math.cos(x[0]) - Fc) / I_o]

    def halt(t, x):
        return x[1]
    halt.terminal = True
    ref = solve_ivp(f, (0, 2), [0.0, 3.0], method="DOP853", rtol=1e-13, atol=1e-15, events=halt)
    t_stop, q_stop = ref.t_events[0][0], ref.y_events[0][0][0]
    r = run("stick.yaml")
    assert len(r.events) == 1 and abs(r.events[0].t - t_stop) < 1e-9
    after = r.t > t_stop
    np.testing.assert_allclose(r["arm.q"][after, 0], q_stop, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(r["arm.qd"][after, 0], 0.0)
    np.testing.assert_array_equal(r["arm.qdd"][after, 0], 0.0)


def test_stiction_holds_until_the_torque_exceeds_the_static_level_then_breaks_away():
    check = BlockCheck("Manipulator", {"robot": "pendulum.yaml", "friction": "stribeck", "Fc": 2.0,
                                       "Fs": 3.0, "vs": 0.1, "friction_smoothing": 0.0},
                       in_widths={"tau": 1, "f_ext": 6}, connected=["tau"], diagram_dir=str(DATA))
    hold = 9.81 * 0.25                            # G(0): the torque that holds the rod horizontal
    I_o = 0.5 ** 2 / 3
    for tau, expected in [(0.0, 0.0), (hold + 2.9, 0.0), (hold - 2.9, 0.0),
                          (hold + 3.5, 0.5 / I_o), (hold - 3.5, -0.5 / I_o)]:
        np.testing.assert_allclose(qdd_of(check, np.zeros((1, 1)), np.zeros((1, 1)), [[tau]]),
                                   [[expected]], atol=1e-12, err_msg=f"tau = {tau}")


def test_restitution_bounces_and_a_resting_joint_locks_while_the_others_move():
    check = manipulator("two_link", q_min=[-0.5, -2.0], q_max=[0.5, 2.0], restitution=0.5)
    check.xc[:] = [[-0.5, 0.2, -1.2, 0.3]]
    mask = np.zeros((1, 4), dtype=bool)
    mask[0, 2] = True                             # joint 1 reached q_min
    check.block.on_event(0.1, check.xc, check.xd, check.u([0.0]), mask)
    np.testing.assert_array_equal(check.xc, [[-0.5, 0.2, 0.6, 0.3]])
    # joint 1 resting on its lower stop, gravity pulling it down: locked, joint 2 moves alone
    q, qd, tau = np.array([[-0.5, 0.2]]), np.array([[0.0, 0.3]]), np.array([[0.0, 1.0]])
    check.xc[:] = np.hstack([q, qd])
    qdd = qdd_of(check, q, qd, tau)
    M = TWO.mass_matrix(q[0])
    bias = TWO.rnea(q, qd, np.zeros((1, 2)))[0]
    assert TWO.aba(q, qd, tau)[0, 0] < 0 and qdd[0, 0] == 0.0
    assert qdd[0, 1] == pytest.approx((tau[0, 1] - bias[1]) / M[1, 1], rel=1e-12)
    # pulled away from the stop, it leaves freely
    tau_up = np.array([[200.0, 0.0]])
    np.testing.assert_allclose(qdd_of(check, q, qd, tau_up), TWO.aba(q, qd, tau_up), rtol=1e-12)


def test_compiled_mode_equals_interpreted_mode():
    interpreted = run("modes.yaml", **{"simulation.mode": "interpreted"})
    compiled = run("modes.yaml", **{"simulation.mode": "compiled"})
    assert interpreted.stats.get("mode") != "compiled" and compiled.stats["mode"] == "compiled"
    for name in ("arm.q", "arm.qd", "arm.qdd", "arm.pose", "ff.tau", "gc.tau"):
        np.testing.assert_allclose(compiled[name], interpreted[name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
    assert np.ptp(interpreted["arm.q"][:, 0]) > 0.05


def test_rotor_inertia_on_a_robot_without_rotor_data_is_refused_naming_the_robot(tmp_path):
    import blocksim
    from blocksim.errors import ParameterError
    path = tmp_path / "d.yaml"
    path.write_text("blocksim: 1\nblocks:\n  tau: {type: Constant, value: [0.0, 0.0]}\n"
                    "  plant: {type: Manipulator, robot: two_link, rotor_inertia: true}\n"
                    "connections: [tau -> plant.tau]\n")
    with pytest.raises(ParameterError, match=r"d.yaml:4: block 'plant': rotor_inertia: true, but "
                                             r"robot 'two_link' has no rotor data"):
        blocksim.load(path).compile()


def test_a_q0_outside_the_joint_limits_is_warned_about_with_the_joint_named(tmp_path):
    import blocksim
    from blocksim.errors import BlocksimWarning
    path = tmp_path / "d.yaml"
    path.write_text("blocksim: 1\nblocks:\n  tau: {type: Constant, value: [0, 0, 0, 0, 0, 0]}\n"
                    "  plant: {type: Manipulator, robot: kr6_like, q0: [0, 1.5, 0, 0, 0, 0]}\n"
                    "connections: [tau -> plant.tau]\n")
    with pytest.warns(BlocksimWarning, match=r"d.yaml:4: block 'plant', parameter 'q0': joint 2 "
                                             r"\(A2\) starts at 1.5, outside its limits "
                                             r"\[-3.31613, 0.785398\] in robot 'kr6_like'"):
        blocksim.load(path).compile()
