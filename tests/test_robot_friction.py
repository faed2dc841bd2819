"""The Manipulator's dynamic joint friction laws (issue 4: "the Manipulator plant accepts any of them
as its joint friction"): friction: lugre equals the frictionless plant driven through a LuGreFriction
block, dissipates energy, and friction: karnopp holds a joint against gravity exactly up to Fs, with
the holding torque taken from the plant's own equations; compiled mode equals interpreted mode."""
import math
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import ParameterError
from blocksim.models import RobotModel

from blockcheck import BlockCheck

DATA = Path(__file__).parent / "data" / "robot"
PENDULUM = DATA / "pendulum.yaml"          # one revolute joint about base z, gravity along -y
TWO = RobotModel.preset("two_link")
# the pendulum's largest gravity torque m g c (N m): G(q) = m g c cos(q)
MGC = 1.0 * 9.81 * 0.25

LUGRE = "sigma0: [300.0, 200.0], sigma1: [2.0, 1.0], sigma2: [0.3, 0.2], Fc: [1.0, 0.6], " \
        "Fs: [1.5, 0.9], vs: [0.1, 0.2]"


def simulate(tmp_path, text, name="diagram.yaml", **overrides):
    path = tmp_path / name
    path.write_text(text)
    return blocksim.simulate(blocksim.load(path, set=overrides or None))


def lugre_pair(mode="interpreted", stop=0.6):
    """two_link with friction: lugre, and the frictionless two_link whose torque is reduced by a
    LuGreFriction block fed with its own qd; the same drive and start."""
    return f"""
blocksim: 1
name: lugre inside the plant and outside it
blocks:
  drive: {{type: Sine, amplitude: [6.0, 2.5], frequency: 1.5, bias: [1.0, 0.0]}}
  arm:   {{type: Manipulator, robot: two_link, q0: [0.3, 0.9], qd0: [0.5, -0.4], friction: lugre,
           {LUGRE}}}
  bare:  {{type: Manipulator, robot: two_link, q0: [0.3, 0.9], qd0: [0.5, -0.4]}}
  lg:    {{type: LuGreFriction, {LUGRE}}}
  net:   {{type: Sum, signs: "+-"}}
connections:
  - drive -> arm.tau
  - drive -> net.in1
  - lg.tau -> net.in2
  - net -> bare.tau
  - bare.qd -> lg.qd
simulation: {{stop_time: {stop}, solver: dop853, rtol: 1.0e-12, atol: 1.0e-14, mode: {mode}}}
log: {{signals: [arm.q, arm.qd, arm.qdd, bare.q, bare.qd, bare.qdd, lg.z], every: 1.0e-3}}
"""


def test_lugre_in_the_plant_equals_the_plant_driven_through_a_lugre_block(tmp_path):
    r = simulate(tmp_path, lugre_pair())
    for sig in ("q", "qd", "qdd"):
        np.testing.assert_allclose(r[f"arm.{sig}"], r[f"bare.{sig}"], rtol=0, atol=1e-10, err_msg=sig)
    # the bristles were exercised: presliding and sliding, both signs
    z = r["lg.z"]
    assert np.all(np.ptp(z, axis=0) > 1e-3)
    assert np.ptp(r["arm.q"][:, 0]) > 0.1


def test_lugre_state_is_appended_after_q_and_qd_and_starts_at_zero():
    check = BlockCheck("Manipulator", {"robot": "two_link", "friction": "lugre", "sigma0": 100.0,
                                       "sigma1": 1.0, "sigma2": 0.5, "Fc": 1.0, "Fs": 2.0, "vs": 0.1},
                       in_widths={"tau": 2, "f_ext": 6}, connected=["tau"])
    assert check.block.n_xc == 6
    names = check.block.state_names()[0]
    assert [x[:2] for x in names] == ["q[", "q[", "qd", "qd", "z[", "z["]
    np.testing.assert_array_equal(check.xc[:, 4:], 0.0)


def test_lugre_parameters_are_checked():
    def make(**params):
        return BlockCheck("Manipulator", {"robot": "two_link", **params}, in_widths={"tau": 2, "f_ext": 6},
                          connected=["tau"])
    with pytest.raises(ParameterError, match="sigma0"):
        make(friction="lugre", Fc=1.0)
    with pytest.raises(ParameterError, match="Fc > 0"):
        make(friction="lugre", sigma0=100.0)
    with pytest.raises(ParameterError, match="sigma0"):
        make(friction="stribeck", Fc=1.0, sigma0=100.0)
    with pytest.raises(ParameterError, match="dv"):
        make(friction="karnopp", Fc=1.0, dv=0.0)


def test_lugre_dissipated_energy_is_never_negative(tmp_path):
    """tau = 0 from a moving start: with E the arm's mechanical energy, the friction's work
    int tau_f qd dt = E(0) - E(t); minus the bristle spring's energy sigma0 z^2 / 2 (z(0) = 0) it is
    the energy dissipated, never negative. tau_f comes from the logged motion, -rnea(q, qd, qdd)."""
    s0, s1, s2 = np.array([300.0, 200.0]), np.array([0.05, 0.02]), np.array([0.3, 0.2])
    g_c, g_s, v_s = np.array([1.0, 0.6]), np.array([1.5, 0.9]), np.array([0.1, 0.2])
    r = simulate(tmp_path, f"""
blocksim: 1
name: lugre dissipation
blocks:
  zero:   {{type: Constant, value: [0.0, 0.0]}}
  arm:    {{type: Manipulator, robot: two_link, q0: [0.3, 0.9], qd0: [2.0, -3.0], friction: lugre,
            {LUGRE.replace("sigma1: [2.0, 1.0]", "sigma1: [0.05, 0.02]")}}}
  energy: {{type: Energy, robot: two_link}}
connections:
  - zero -> arm.tau
  - arm.q -> energy.q
  - arm.qd -> energy.qd
simulation: {{stop_time: 1.5, solver: dop853, rtol: 1.0e-11, atol: 1.0e-13, mode: interpreted}}
log: {{signals: [arm.q, arm.qd, arm.qdd, energy.total], every: 5.0e-4}}
""")
    q, qd, qdd, E = r["arm.q"], r["arm.qd"], r["arm.qdd"], r["energy.total"][:, 0]
    tau_f = -TWO.rnea(q, qd, qdd)
    g = g_c + (g_s - g_c) * np.exp(-np.abs(qd / v_s) ** 2)
    # tau_f = sigma0 z + sigma1 (qd - sigma0 |qd| z / g) + sigma2 qd, linear in z
    z = (tau_f - (s1 + s2) * qd) / (s0 * (1.0 - s1 * np.abs(qd) / g))
    assert np.all(s1 * np.abs(qd) / g < 0.9)
    work = E[0] - E                                         # int_0^t tau_f . qd dt
    power = np.sum(tau_f * qd, axis=1)
    trapezoid = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(r.t))])
    np.testing.assert_allclose(trapezoid, work, atol=2e-3 * abs(work[-1]))
    dissipated = work - np.sum(0.5 * s0 * z ** 2, axis=1)
    assert dissipated.min() >= -1e-9
    assert dissipated[-1] > 0.5 * work[-1] > 0.0             # most of the work is dissipated
    assert np.all(np.diff(dissipated) >= -1e-9)             # the dissipated power is >= 0 too


def karnopp_pendulum(q0, qd0=0.0, Fs=2.0, Fc=1.5, dv=1e-3, stop=1.0, mode="interpreted"):
    return f"""
blocksim: 1
name: pendulum held by karnopp friction
blocks:
  zero: {{type: Constant, value: [0.0]}}
  arm:  {{type: Manipulator, robot: {PENDULUM}, q0: [{q0!r}], qd0: [{qd0!r}], friction: karnopp,
          Fc: [{Fc!r}], Fs: [{Fs!r}], vs: [0.05], Fv: [0.1], dv: [{dv!r}]}}
connections:
  - zero -> arm.tau
simulation: {{stop_time: {stop}, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12, mode: {mode}}}
log: {{signals: [arm.q, arm.qd, arm.qdd], every: 1.0e-3}}
"""


@pytest.mark.parametrize("side", [-1, 1])
def test_karnopp_holds_the_pendulum_while_gravity_is_below_fs_and_lets_it_slide_above(tmp_path, side):
    """The pendulum at rest (horizontal axis): its gravity torque m g c cos(q) against Fs = 2 N m.
    Threshold q* = acos(Fs / (m g c)); just above q* the joint stays stuck, just below it slides."""
    Fs = 2.0
    q_star = math.acos(Fs / MGC)
    stuck = simulate(tmp_path, karnopp_pendulum(q_star + 0.01), "stuck.yaml")
    np.testing.assert_array_equal(stuck["arm.q"], q_star + 0.01)
    np.testing.assert_array_equal(stuck["arm.qd"], 0.0)
    np.testing.assert_array_equal(stuck["arm.qdd"], 0.0)
    # mirrored (q -> pi - q: gravity pulls the other way), the same threshold
    mirror = simulate(tmp_path, karnopp_pendulum(math.pi - q_star - 0.01), "mirror.yaml")
    np.testing.assert_array_equal(mirror["arm.q"], math.pi - q_star - 0.01)
    q0 = q_star - 0.01 if side > 0 else math.pi - q_star + 0.01
    slide = simulate(tmp_path, karnopp_pendulum(q0), "slide.yaml")
    q, qd, qdd = slide["arm.q"][:, 0], slide["arm.qd"][:, 0], slide["arm.qdd"][:, 0]
    sign = -1.0 if side > 0 else 1.0                        # gravity pulls toward -y
    # breakaway at once: inside the band the friction is Fs, so qdd = (Fs - G(q0)) / J_pivot
    J = 1.0 * 0.5 ** 2 / 3.0
    assert qdd[0] == pytest.approx(sign * (MGC * abs(math.cos(q0)) - Fs) / J, rel=1e-9)
    assert sign * (q[-1] - q0) > 0.5 and abs(qd).max() > 1.0
    events = [e for e in slide.events if e.block == "arm"]
    assert len(events) >= 1                                 # leaving the band |qd| = dv


def test_karnopp_a_swinging_pendulum_enters_the_band_and_sticks(tmp_path):
    """Thrown upward at q = 1.0 (gravity 1.32 N m < Fs): Stribeck + viscous friction and gravity
    stop it, it enters |qd| < dv (an event) and stays there with qdd = 0 and its speed frozen.
    The region is held between major steps (a stage inside the band still slips): 10 of 90
    steps rejected, against 29 of 113 with the band judged live in every stage."""
    dv = 1e-3
    r = simulate(tmp_path, karnopp_pendulum(1.0, qd0=2.0, dv=dv))
    qd, qdd = r["arm.qd"][:, 0], r["arm.qdd"][:, 0]
    events = [e for e in r.events if e.block == "arm"]
    assert len(events) == 1
    after = r.t > events[0].t + 1e-9
    assert after.sum() > 100
    assert np.all(np.abs(qd[after]) <= dv) and np.all(qdd[after] == 0.0)
    assert np.ptp(qd[after]) == 0.0
    before = r.t < events[0].t - 1e-9
    assert np.all(np.abs(qd[before]) > dv)
    assert r.stats["nrejected"] <= 15, r.stats


def test_karnopp_holding_torque_comes_from_the_coupled_equations():
    """two_link, joint 1 inside its band while joint 2 moves: the joint is held by the torque that
    zeroes its acceleration given joint 2's motion, as the exact-sign stiction does at qd = 0, and
    breaks away with Fs opposing once that torque exceeds Fs."""
    rng = np.random.default_rng(3)

    def qdd(law, Fs, q, qd, tau):
        check = BlockCheck("Manipulator", {"robot": "two_link", "friction": law, "Fc": [0.2, 0.2],
                                           "Fs": [Fs, 0.3], "vs": 0.1, "Fv": 0.05,
                                           **({"dv": 1e-3} if law == "karnopp" else {})},
                           in_widths={"tau": 2, "f_ext": 6}, connected=["tau"])
        check.xc[:] = np.hstack([q, qd])
        return check.output(0.0, tau, 0.0)[2].copy()

    for _ in range(5):
        q = rng.uniform(-math.pi, math.pi, (1, 2))
        qd = np.array([[0.0, rng.choice([-1, 1]) * rng.uniform(0.5, 2)]])
        tau = rng.uniform(-30, 30, (1, 2))
        for Fs in (0.5, 500.0):
            np.testing.assert_allclose(qdd("karnopp", Fs, q, qd, tau), qdd("stribeck", Fs, q, qd, tau),
                                       rtol=1e-12, atol=1e-12)
        # inside the band, not at rest, held (Fs large): joint 1 locked, joint 2 alone
        inside = qd + [[5e-4, 0.0]]
        a = qdd("karnopp", 500.0, q, inside, tau)
        M = TWO.mass_matrix(q[0])
        bias = TWO.rnea(q, inside, np.zeros((1, 2)))[0]
        w2 = inside[0, 1]
        f2 = 0.05 * w2 + (0.2 + 0.1 * math.exp(-(w2 / 0.1) ** 2)) * math.copysign(1.0, w2)
        assert a[0, 0] == 0.0
        assert a[0, 1] == pytest.approx((tau[0, 1] - bias[1] - f2) / M[1, 1], rel=1e-9)
        # breakaway (Fs small): joint 1 moves with Fs against the start of the motion
        a = qdd("karnopp", 0.5, q, inside, tau)
        free = TWO.aba(q, inside, tau - [[0.0, f2]])[0]
        hold_dir = -np.sign(free[0])
        expected = TWO.aba(q, inside, tau - [[-hold_dir * 0.5, f2]])[0]
        np.testing.assert_allclose(a[0], expected, rtol=1e-9, atol=1e-12)


def test_compiled_mode_equals_interpreted_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKSIM_CACHE_DIR", str(tmp_path / "cache"))
    text = lugre_pair(stop=0.3)
    text = text.replace("  net:", f"""  hang: {{type: Manipulator, robot: {PENDULUM}, q0: [1.0], qd0: [2.0], friction: karnopp,
          Fc: [1.5], Fs: [2.0], vs: [0.05], Fv: [0.1], dv: [1.0e-2]}}
  zero: {{type: Constant, value: [0.0]}}
  net:""").replace("  - bare.qd -> lg.qd", "  - bare.qd -> lg.qd\n  - zero -> hang.tau")
    text = text.replace("lg.z]", "lg.z, hang.q, hang.qd, hang.qdd]").replace("stop_time: 0.3", "stop_time: 1.0")
    interpreted = simulate(tmp_path, text, "i.yaml")
    compiled = simulate(tmp_path, text, "c.yaml", **{"simulation.mode": "compiled"})
    # adaptive with events: the scheduler's loop calls the generated, compiled block functions
    assert any((tmp_path / "cache").rglob("*.py"))
    for name in ("arm.q", "arm.qd", "arm.qdd", "bare.q", "hang.q", "hang.qd", "hang.qdd"):
        np.testing.assert_allclose(compiled[name], interpreted[name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
    assert len([e for e in interpreted.events if e.block == "hang"]) == 1


@pytest.mark.parametrize("stiction", [None, 8.0])
def test_the_held_sign_closed_form_is_the_general_paths_arithmetic(monkeypatch, stiction):
    """W1 with exact-sign friction takes manipulator_held_sign_derivative (the 2R closed form
    inlined under held signs, the general path for a joint at sign 0): its run is bit for bit the
    run of the general kernel, with plain Coulomb friction (every joint slipping but at its two
    reversals) and with a Stribeck breakaway level of 8 N m, at which the second joint sticks
    for about 0.2 s after each reversal (the general path's stiction solve)."""
    import dataclasses
    from blocksim.blocks import robot, robot_kernels
    sets = {"plant.friction_smoothing": 0.0}
    if stiction is not None:
        sets.update({"plant.friction": "stribeck", "plant.Fs": stiction, "plant.vs": 0.05})
    diagram = blocksim.load(Path(__file__).resolve().parents[1] / "examples"
                            / "two_link_pid_vs_ff.yaml", variant="pid_ff", set=sets)
    settings = dict(solver="dopri5", rtol=1e-6, atol=1e-8, mode="interpreted")
    held = blocksim.Simulator(diagram, **settings).run()
    kernels = robot.Manipulator.kernels

    def general(self):
        k = kernels(self)
        assert k.derivative is robot_kernels.manipulator_held_sign_derivative
        return dataclasses.replace(k, derivative=robot_kernels.manipulator_derivative)
    monkeypatch.setattr(robot.Manipulator, "kernels", general)
    reference = blocksim.Simulator(diagram, **settings).run()
    assert held.stats["nfev"] == reference.stats["nfev"]
    assert [(e.t, e.index) for e in held.events] == [(e.t, e.index) for e in reference.events]
    assert len(held.events) == (2 if stiction is None else 4)
    for name in held.names:
        assert np.array_equal(held[name], reference[name], equal_nan=True), name
