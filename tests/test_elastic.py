"""The ElasticManipulator (Spong's elastic joints, gear backlash) against independent computations:
the one-joint two-mass oscillator in closed form (natural frequency sqrt(K (1/B_m + 1/I))), the
backlash's contact events at their analytic instants, energy conservation without damping, the
stiff limit approaching the rigid Manipulator with rotor inertia, both modes giving the same
numbers, and located errors for parameters the physics cannot take."""
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.errors import ParameterError
from modecheck import assert_same, signal_changes

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "tests" / "data" / "robot" / "pendulum.yaml"   # I = m l^2 / 3 = 1/12 kg m^2
GEARED = ROOT / "examples" / "robots" / "two_link_geared.yaml"   # B_m = N^2 Jm = 0.1 kg m^2

# one joint without gravity: the link (I = 1/12) and the rotor (B_m = 0.05) coupled by K = 200,
# the rotor started at 1 rad/s: omega = sqrt(K (1/B_m + 1/I)) = sqrt(200 (20 + 12)) = 80 rad/s
I_LINK, B_M, K, W0 = 1.0 / 12.0, 0.05, 200.0, 1.0
OMEGA = np.sqrt(K * (1.0 / B_M + 1.0 / I_LINK))


def two_mass(extra: str, stop: float) -> str:
    return dedent(f"""
    blocksim: 1
    blocks:
      tau: {{type: Constant, value: 0.0}}
      plant: {{type: ElasticManipulator, robot: {PENDULUM}, gravity: [0, 0, 0], stiffness: {K},
              motor_inertia: {B_M}, thetad0: {W0}{extra}}}
    connections: [tau -> plant.tau]
    simulation: {{stop_time: {stop}, solver: dopri5, rtol: 1.0e-12, atol: 1.0e-14}}
    log: {{every: 0.001}}
    """)


def run(tmp_path, text, name="elastic.yaml", **sets):
    path = tmp_path / name
    path.write_text(text)
    return blocksim.simulate(blocksim.load(path, set=sets))


def test_one_joint_oscillates_at_the_two_mass_natural_frequency(tmp_path):
    """theta = v t + I / (B_m + I) delta, q = v t - B_m / (B_m + I) delta, delta = (w0 / omega)
    sin(omega t), v = B_m w0 / (B_m + I) the momentum's velocity."""
    assert OMEGA == pytest.approx(80.0, rel=1e-15)
    r = run(tmp_path, two_mass("", 0.5))
    t = r.t
    v, delta = B_M * W0 / (B_M + I_LINK), W0 / OMEGA * np.sin(OMEGA * t)
    np.testing.assert_allclose(r["plant.theta"][:, 0], v * t + I_LINK / (B_M + I_LINK) * delta,
                               rtol=0, atol=1e-11)
    np.testing.assert_allclose(r["plant.q"][:, 0], v * t - B_M / (B_M + I_LINK) * delta,
                               rtol=0, atol=1e-11)
    np.testing.assert_allclose(r["plant.tau_spring"][:, 0], K * delta, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r["plant.qdd"][:, 0], K * delta / I_LINK, rtol=0, atol=1e-7)


BACKLASH = 0.01   # rad: contact at delta = +-b


def test_backlash_passes_no_torque_in_its_band_and_locates_each_contact_change(tmp_path):
    """The rotor crosses the band at w0 (contact at t1 = b / w0), compresses the spring for half a
    period pi / omega of the two-mass oscillator (delta - b = (w0 / omega) sin(omega (t - t1))),
    leaves at t2 with the relative speed reversed, crosses the band (t3 = t2 + 2 b / w0) and hits
    the other side: each change an event at its analytic instant, to 1e-9 s."""
    r = run(tmp_path, two_mass(f", backlash: {BACKLASH}", 0.1))
    t1 = BACKLASH / W0
    t2 = t1 + np.pi / OMEGA
    t3 = t2 + 2 * BACKLASH / W0
    events = [(e.block, e.index) for e in r.events]
    assert events == [("plant", 0), ("plant", 0), ("plant", 1)]
    np.testing.assert_allclose([e.t for e in r.events], [t1, t2, t3], rtol=0, atol=1e-9)
    t, tau_s = r.t, r["plant.tau_spring"][:, 0]
    band = (t < t1) | ((t > t2) & (t < t3))
    assert band.sum() == 30 and np.all(tau_s[band] == 0.0)
    contact = (t > t1) & (t < t2)
    np.testing.assert_allclose(tau_s[contact], K * W0 / OMEGA * np.sin(OMEGA * (t[contact] - t1)),
                               rtol=0, atol=1e-8)
    np.testing.assert_allclose(r["plant.q"][t < t1, 0], 0.0, rtol=0, atol=0)
    # after the first contact: the motor and link speeds of an elastic collision
    after = (t > t2) & (t < t3)
    np.testing.assert_allclose(r["plant.thetad"][after, 0], (B_M - I_LINK) / (B_M + I_LINK) * W0,
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(r["plant.qd"][after, 0], 2 * B_M / (B_M + I_LINK) * W0,
                               rtol=0, atol=1e-9)


ENERGY = """
blocksim: 1
blocks:
  tau: {type: Constant, value: [0.0, 0.0]}
  plant: {type: ElasticManipulator, robot: two_link, stiffness: [500.0, 300.0],
          motor_inertia: [0.1, 0.05], q0: [0.4, -0.3], thetad0: [1.0, -2.0]}
  en: {type: Energy, robot: two_link}
connections: [tau -> plant.tau, plant.q -> en.q, plant.qd -> en.qd]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-11, atol: 1.0e-12}
log: {every: 0.01}
"""


def test_energy_is_conserved_without_damping(tmp_path):
    """Link kinetic + potential (the Energy block) + rotor kinetic B_m thetad^2 / 2 + spring
    K (theta - q)^2 / 2 stays constant (14.30 J) to 1e-9 J while the link's own energy swings by
    1.7 J."""
    r = run(tmp_path, ENERGY)
    bm, k = np.array([0.1, 0.05]), np.array([500.0, 300.0])
    delta = r["plant.theta"] - r["plant.q"]
    total = (r["en.total"][:, 0] + 0.5 * (bm * r["plant.thetad"] ** 2).sum(axis=1)
             + 0.5 * (k * delta ** 2).sum(axis=1))
    assert total[0] == pytest.approx(14.3042, abs=1e-4)
    assert np.ptp(r["en.total"][:, 0]) > 1.5
    assert np.ptp(total) < 1e-8


STIFF = """
blocksim: 1
blocks:
  tau: {{type: Constant, value: [10.0, 3.0]}}
  plant: {{type: ElasticManipulator, robot: {robot}, stiffness: {K}, q0: [0.2, 0.1]}}
  rigid: {{type: Manipulator, robot: {robot}, q0: [0.2, 0.1]}}
connections: [tau -> plant.tau, tau -> rigid.tau]
simulation: {{stop_time: 1.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12}}
log: {{every: 0.01}}
"""


def test_a_stiff_joint_approaches_the_rigid_arm_with_rotor_inertia(tmp_path):
    """The geared two-link arm (B_m = N^2 Jm = 0.1 kg m^2 from its file) under constant torques:
    the elastic plant's link angles differ from the rigid Manipulator's ((M + B_m) qdd + c + G =
    tau) by 3.3e-4 rad at K = 1e4 N m/rad and 3.3e-5 rad at 1e5 (as 1 / K), over a 2 rad swing."""
    errors = []
    for k in (1e4, 1e5):
        r = run(tmp_path, STIFF.format(robot=GEARED, K=k))
        assert np.ptp(r["rigid.q"][:, 0]) > 2.0
        errors.append(np.abs(r["plant.q"] - r["rigid.q"]).max())
    assert errors[0] == pytest.approx(3.35e-4, rel=0.02)
    assert errors[0] / errors[1] == pytest.approx(10.0, rel=0.02)


def test_compiled_equals_interpreted_through_the_contacts(tmp_path, compiled_cache):
    text = two_mass(f", backlash: {BACKLASH}", 0.2)
    a = run(tmp_path, text, **{"simulation.mode": "interpreted"})
    b = run(tmp_path, text, **{"simulation.mode": "compiled"})
    assert signal_changes(a, "plant.tau_spring") and len(a.events) >= 4
    assert [(e.t, e.block, e.index) for e in a.events] == [(e.t, e.block, e.index) for e in b.events]
    assert_same(a, b, 1e-12)


def test_the_contact_mode_is_held_between_major_steps():
    """The held mode decides the law: a solver stage past the band edge keeps the band's zero
    torque until the major step switches the mode."""
    chk = BlockCheck("ElasticManipulator", {"robot": str(PENDULUM), "stiffness": 100.0,
                                            "motor_inertia": 0.1, "backlash": 0.01}, 1)
    assert chk.block.state_names() == (["q[hinge]", "qd[hinge]", "theta[hinge]",
                                        "thetad[hinge]"], ["contact[hinge]"])
    chk.xc[0, 2] = 0.03                                  # theta - q = 0.03 > b: forwards contact
    tau_s = chk.output(0.0, 0.0, major=False)[5]
    assert tau_s[0, 0] == 0.0 and chk.xd[0, 0] == 0.0   # mode of the start: in the band
    tau_s = chk.output(0.0, 0.0)[5]
    assert chk.xd[0, 0] == 1.0 and tau_s[0, 0] == pytest.approx(100.0 * 0.02, rel=1e-15)
    np.testing.assert_allclose(chk.zero_crossings(0.0, 0.0), [[0.02, -0.04]], rtol=1e-15)


def write(tmp_path, plant: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(dedent(f"""
    blocksim: 1
    blocks:
      tau: {{type: Constant, value: 0.0}}
      plant: {{type: ElasticManipulator, robot: {PENDULUM}, motor_inertia: 0.1, {plant}}}
    connections: [tau -> plant.tau]
    """).lstrip())
    return path


@pytest.mark.parametrize("plant, message", [
    ("stiffness: -5.0", "'stiffness' must be > 0 (N m/rad), got -5"),
    ("stiffness: 100.0, backlash: -0.01", "'backlash' must be >= 0 (rad), got -0.01"),
    ("stiffness: 100.0, damping: -1.0", "'damping' must be >= 0 (N m s/rad), got -1"),
    ("stiffness: 100.0, rotor_inertia: true", "rotor_inertia: true would put the rotor into the "
                                              "link side's M(q) as well"),
    ("stiffness: 100.0, friction: coulomb_viscous, Fc: 1.0",
     "motor-side Coulomb or static friction needs friction_smoothing > 0"),
])
def test_bad_parameters_are_located_errors(tmp_path, plant, message):
    path = write(tmp_path, plant)
    with pytest.raises(ParameterError) as info:
        blocksim.simulate(blocksim.load(path))
    text = str(info.value)
    assert message in text and f"{path}:4" in text and "block 'plant'" in text


def test_a_robot_without_rotor_data_needs_motor_inertia(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(dedent(f"""
    blocksim: 1
    blocks:
      tau: {{type: Constant, value: 0.0}}
      plant: {{type: ElasticManipulator, robot: {PENDULUM}, stiffness: 100.0}}
    connections: [tau -> plant.tau]
    """).lstrip())
    with pytest.raises(ParameterError) as info:
        blocksim.simulate(blocksim.load(path))
    assert ("motor_inertia must be > 0 (kg m^2) for every joint: give it, or Jm and G per joint "
            "in robot 'pendulum's file") in str(info.value)


def test_small_swings_of_the_elastic_pendulum_follow_its_two_linearised_modes(tmp_path):
    """The pendulum (1 kg, 0.5 m rod: I = 1/12 kg m^2, m g l_c = 1.22625 N m) hanging at
    q = -pi/2 on a joint of K = 20 N m/rad with B_m = 0.05 kg m^2, the motor turned 1e-4 rad and
    let go: x = [q, theta] - x_eq follows cos(Omega t) of the linearised system
    x'' = -A x, A = [[(K + m g l_c) / I, -K / I], [-K / B_m, K / B_m]] (two modes), to second
    order in the amplitude."""
    k, bm, mgl = 20.0, 0.05, 1.0 * 9.81 * 0.25
    text = dedent(f"""
    blocksim: 1
    blocks:
      tau: {{type: Constant, value: 0.0}}
      plant: {{type: ElasticManipulator, robot: {PENDULUM}, stiffness: {k}, motor_inertia: {bm},
              q0: {-np.pi / 2}, theta0: {-np.pi / 2 + 1e-4}}}
    connections: [tau -> plant.tau]
    simulation: {{stop_time: 2.0, solver: dopri5, rtol: 1.0e-12, atol: 1.0e-15}}
    log: {{every: 0.002}}
    """)
    r = run(tmp_path, text)
    A = np.array([[(k + mgl) / I_LINK, -k / I_LINK], [-k / bm, k / bm]])
    w2, V = np.linalg.eig(A)
    assert np.all(w2 > 0)
    c = np.linalg.solve(V, [0.0, 1e-4])
    x = (V[None, :, :] * (c * np.cos(np.sqrt(w2) * r.t[:, None]))[:, None, :]).sum(axis=2)
    np.testing.assert_allclose(r["plant.q"][:, 0] + np.pi / 2, x[:, 0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(r["plant.theta"][:, 0] + np.pi / 2, x[:, 1], rtol=0, atol=1e-10)
    assert np.abs(x[:, 0]).max() > 1e-5                       # the link really swings


def test_batch_members_have_their_own_stiffness_and_backlash(tmp_path):
    """A batch of two: each member oscillates at its own sqrt(K (1/B_m + 1/I)) and has its own
    band, as the same diagram run alone with that member's values."""
    path = tmp_path / "batch.yaml"
    path.write_text(two_mass(f", backlash: {BACKLASH}", 0.1))
    batch = {"plant.stiffness": [200.0, 800.0], "plant.backlash": [0.01, 0.02]}
    r = blocksim.simulate(blocksim.load(path), batch=batch)
    for b, (k, gap) in enumerate(zip(batch["plant.stiffness"], batch["plant.backlash"])):
        alone = blocksim.simulate(blocksim.load(path, set={"plant.stiffness": k,
                                                           "plant.backlash": gap}))
        np.testing.assert_allclose(r["plant.tau_spring"][b, :, 0], alone["plant.tau_spring"][:, 0],
                                   rtol=0, atol=1e-9)
        first = min(e.t for e in r.events if e.member == b)
        assert first == pytest.approx(gap / W0, abs=1e-9)
