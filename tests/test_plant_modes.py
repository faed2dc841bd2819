"""The Manipulator's friction modes (Simulink's zero-crossing modes, blocks/base.py `Block.modes`):
the exact friction sign and the Karnopp region are set per joint at major steps and held through
solver stages, dense output and event location, so the dynamics are smooth between located
crossings and the switch happens exactly there.

A 1-DOF joint (tests/data/robot/pendulum.yaml with gravity off: inertia J = m l^2 / 3 = 1/12
kg m^2 about the hinge) under a constant torque -T from qd0 > 0 has a piecewise-quadratic answer:
with Coulomb friction Fc it decelerates at (T + Fc) / J until qd = 0 at t1 = J qd0 / (T + Fc),
then reverses at (T - Fc) / J when T exceeds the static level, or sticks there. With the sign
evaluated live (before the modes), a solver stage past qd = 0 saw the flipped friction: the
reversal run rejected 26 of 82 steps and the sticking run 32 of 85 (dopri5, rtol 1e-10); held,
none. A Karnopp joint whose speed falls through the whole band within one step fired no event
with the live |qd| - dv (the sticking run slid on backwards); the held region's s qd - dv fires.
"""
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.models import RobotModel

from blockcheck import BlockCheck
from modecheck import assert_same

DATA = Path(__file__).parent / "data" / "robot"
PENDULUM = DATA / "pendulum.yaml"
J = 0.5 ** 2 / 3.0              # kg m^2: the rod (1 kg, 0.5 m) about its hinge
QD0 = 2.0                       # rad/s
FC = 1.0                        # N m, Coulomb level (coulomb_viscous: the static level too)
TIGHT = "solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12"
LOOSE = "solver: dopri5, rtol: 1.0e-3, atol: 1.0e-3"


def arm(name, T, law, qd0=QD0):
    """A Manipulator block `name` (the pendulum, gravity off, from rest at q = 0 with speed qd0)
    driven by a constant torque -T (N m) from a Constant `name`_drive; law: its friction
    parameters."""
    return f"""  {name}_drive: {{type: Constant, value: [{-T!r}]}}
  {name}: {{type: Manipulator, robot: {PENDULUM}, gravity: [0.0, 0.0, 0.0], q0: [0.0],
          qd0: [{qd0!r}], {law}}}
"""


def coulomb(Fc=FC):
    return f"friction: coulomb_viscous, Fc: [{Fc!r}], friction_smoothing: 0.0"


def karnopp(F, dv):
    """Karnopp with Fs = Fc = F (the Stribeck curve is flat: an analytic answer) and no viscous
    term."""
    return f"friction: karnopp, Fc: [{F!r}], Fs: [{F!r}], dv: [{dv!r}]"


def run(tmp_path, arms, settings=TIGHT, stop=0.2, mode="interpreted", name="plant.yaml"):
    """arms: {block name: (T, law text, qd0)}; every block's q, qd, qdd logged each ms. The
    result, run by a Simulator in `mode` (checked)."""
    blocks = "".join(arm(n, T, law, qd0) for n, (T, law, qd0) in arms.items())
    wires = "".join(f"  - {n}_drive -> {n}.tau\n" for n in arms)
    signals = ", ".join(f"{n}.{s}" for n in arms for s in ("q", "qd", "qdd"))
    path = tmp_path / name
    path.write_text(f"""
blocksim: 1
name: friction modes of the plant
blocks:
{blocks}connections:
{wires}simulation: {{stop_time: {stop}, {settings}, mode: {mode}}}
log: {{signals: [{signals}], every: 1.0e-3}}
""")
    sim = blocksim.Simulator(blocksim.load(path))
    result = sim.run()
    assert [part.backend.mode for part in sim.parts] == [mode]
    return result


def coulomb_answer(t, T, Fc=FC, qd0=QD0):
    """(q, qd, qdd, t1) of the joint under -T with Coulomb friction Fc (rad, rad/s, rad/s^2, s)."""
    a1 = -(T + Fc) / J
    t1 = J * qd0 / (T + Fc)
    q1 = qd0 * t1 + 0.5 * a1 * t1 ** 2
    a2 = -(T - Fc) / J if T > Fc else 0.0
    before = t < t1
    q = np.where(before, qd0 * t + 0.5 * a1 * t ** 2, q1 + 0.5 * a2 * (t - t1) ** 2)
    qd = np.where(before, qd0 + a1 * t, a2 * (t - t1))
    return q, qd, np.where(before, a1, a2), t1


def karnopp_answer(t, T, F, dv, qd0=QD0):
    """(q, qd, qdd, entry time, exit time or None) of the joint under -T with Karnopp friction
    Fs = Fc = F and band half-width dv: it decelerates at (T + F) / J until qd = dv; inside the
    band it sticks (qdd = 0, its speed dv kept) while T <= F, else it breaks away with F opposing,
    at (T - F) / J, which it keeps after leaving the band at qd = -dv."""
    a1 = -(T + F) / J
    te = J * (qd0 - dv) / (T + F)
    qe = qd0 * te + 0.5 * a1 * te ** 2
    a2 = -(T - F) / J if T > F else 0.0
    before = t < te
    q = np.where(before, qd0 * t + 0.5 * a1 * t ** 2, qe + dv * (t - te) + 0.5 * a2 * (t - te) ** 2)
    qd = np.where(before, qd0 + a1 * t, dv + a2 * (t - te))
    tx = te + 2.0 * dv / -a2 if T > F else None
    return q, qd, np.where(before, a1, a2), te, tx


def events_of(r, block):
    return [e.t for e in r.events if e.block == block]


# ---- the exact Coulomb sign --------------------------------------------------------------------

@pytest.mark.parametrize("T", [3.0, 0.5], ids=["breaks-away", "sticks"])
def test_coulomb_joint_stops_at_the_located_instant_then_reverses_or_sticks(tmp_path, T):
    """T = 3 N m > Fc: the joint reverses at t1 = 1/24 s at (T - Fc) / J = 24 rad/s^2; T = 0.5 N m
    < Fc: it stops at t1 = 1/9 s and stays (qd = 0 exactly). q, qd against the analytic answer
    to 1e-10, the one event at t1 to 1e-10, and at most 2 rejected steps (26 of 82 and 32 of 85
    with the live sign)."""
    r = run(tmp_path, {"arm": (T, coulomb(), QD0)})
    q, qd, qdd, t1 = coulomb_answer(r.t, T)
    events = events_of(r, "arm")
    assert len(events) == 1 and abs(events[0] - t1) < 1e-10
    np.testing.assert_allclose(r["arm.q"][:, 0], q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r["arm.qd"][:, 0], qd, rtol=0, atol=1e-10)
    away = np.abs(r.t - t1) > 1e-9
    np.testing.assert_allclose(r["arm.qdd"][away, 0], qdd[away], rtol=1e-12)
    if T < FC:
        after = r.t > t1
        assert after.sum() > 50
        np.testing.assert_array_equal(r["arm.qd"][after, 0], 0.0)
        np.testing.assert_array_equal(r["arm.qdd"][after, 0], 0.0)
    assert r.stats["nrejected"] <= 2, r.stats


def test_a_stage_past_zero_keeps_the_sign_of_the_major_step():
    """The held sign in the kernels: a solver stage whose qd has crossed zero keeps the friction
    of the step's start (the step stays smooth), a major step switches it, and a joint at rest at
    the major step (sign 0) sticks or breaks away with the static level opposing."""
    check = BlockCheck("Manipulator", {"robot": "pendulum.yaml", "gravity": [0.0, 0.0, 0.0],
                                       "friction": "coulomb_viscous", "Fc": FC,
                                       "friction_smoothing": 0.0},
                       in_widths={"tau": 1, "f_ext": 6}, connected=["tau"], diagram_dir=str(DATA))
    assert check.block.n_xd == check.block.n_modes == 1
    assert check.block.state_names()[1] == ["sign[hinge]"]
    T = 3.0

    def qdd(qd, major):
        check.xc[:] = [[0.0, qd]]
        return check.output(0.0, [-T], major=major)[2][0, 0]

    assert qdd(0.5, True) == pytest.approx(-(T + FC) / J, rel=1e-12)
    assert check.xd.tolist() == [[1.0]]
    # a stage past zero: the friction still opposes the forward motion, the derivative agrees
    assert qdd(-0.01, False) == pytest.approx(-(T + FC) / J, rel=1e-12)
    assert check.derivative(0.0, [-T])[0, 1] == pytest.approx(-(T + FC) / J, rel=1e-12)
    np.testing.assert_array_equal(check.zero_crossings(0.0, [-T]), [[-0.01]])
    # the major step at that state switches the sign (and the memo does not return the old one)
    assert qdd(-0.01, True) == pytest.approx(-(T - FC) / J, rel=1e-12)
    assert check.xd.tolist() == [[-1.0]]
    # at rest at the major step: breakaway with Fc against the start of the motion, or stuck
    assert qdd(0.0, True) == pytest.approx(-(T - FC) / J, rel=1e-12)
    assert check.xd.tolist() == [[0.0]]
    check.xc[:] = [[0.0, 0.0]]
    assert check.output(0.0, [-0.5])[2][0, 0] == 0.0


def test_the_accelerations_memo_keys_on_the_modes():
    """The same state and torque under another held sign (a major step's switch, the probe a
    moment after an event) are other accelerations: the memo must not return the first."""
    check = BlockCheck("Manipulator", {"robot": "two_link", "friction": "coulomb_viscous",
                                       "Fc": [1.0, 0.5], "friction_smoothing": 0.0},
                       in_widths={"tau": 2, "f_ext": 6}, connected=["tau"])
    check.xc[:] = [[0.3, -0.2, 1e-3, -2e-3]]
    out = {}
    for s1, s2 in [(1.0, -1.0), (-1.0, -1.0), (1.0, 1.0), (1.0, -1.0)]:
        check.xd[:] = [[s1, s2]]
        out[(s1, s2)] = check.output(0.0, [0.4, 0.1], major=False)[2].copy()
    assert len({v.tobytes() for v in out.values()}) == 3
    q, w = check.xc[:, :2], check.xc[:, 2:]
    two = RobotModel.preset("two_link")
    for (s1, s2), qdd in out.items():
        np.testing.assert_allclose(qdd, two.aba(q, w, [[0.4 - 1.0 * s1, 0.1 - 0.5 * s2]]),
                                   rtol=1e-12, err_msg=f"signs {s1}, {s2}")


def test_plants_without_exact_sign_hold_no_modes():
    """Smooth sign, LuGre, no friction: no discrete state and no modes kernel (nothing added to
    W1's and W2's plants)."""
    for params in ({}, {"friction": "coulomb_viscous", "Fc": 1.0, "friction_smoothing": 1e-3},
                   {"friction": "model"},
                   {"friction": "lugre", "sigma0": 1e3, "Fc": 1.0, "Fs": 1.5},
                   {"q_min": -1.0, "q_max": 1.0}):
        check = BlockCheck("Manipulator", {"robot": "two_link", **params},
                           in_widths={"tau": 2, "f_ext": 6}, connected=["tau"])
        assert check.block.n_xd == check.block.n_modes == 0, params
        assert check.block.runtime_kernels().modes is None, params


# ---- the Karnopp region ------------------------------------------------------------------------

@pytest.mark.parametrize("T", [0.3, 3.0], ids=["sticks", "passes"])
@pytest.mark.parametrize("settings", [TIGHT, LOOSE], ids=["tight", "loose"])
def test_karnopp_band_entered_within_a_step_fires_and_the_joint_sticks_or_passes(tmp_path, T,
                                                                                  settings):
    """F = 0.5 N m, dv = 1e-3 rad/s: the band is crossed in 2 dv J / (T + F) < 0.2 ms, far less
    than a step under loose tolerances (the steps are 8 ms). With the held region the entry fires
    at te = J (qd0 - dv) / (T + F) (to 1e-10), then the joint sticks at qd = dv (T = 0.3 N m < F)
    or breaks away through the band and leaves it at qd = -dv (T = 3 N m), q and qd within
    1e-10 of the analytic answer, with at most 2 rejected steps. With the band judged live in
    every stage the tight runs rejected 27 of 81 and 26 of 82 steps, and the loose runs fired no
    event (|qd| - dv was positive at both ends of the step): the sticking joint slid on
    backwards (72 of 75 steps rejected) and the other passed the band without an event."""
    F, dv = 0.5, 1e-3
    r = run(tmp_path, {"arm": (T, karnopp(F, dv), QD0)}, settings, stop=0.4)
    q, qd, qdd, te, tx = karnopp_answer(r.t, T, F, dv)
    events = events_of(r, "arm")
    assert len(events) == (2 if tx else 1)
    assert abs(events[0] - te) < 1e-10
    if tx:
        assert abs(events[1] - tx) < 1e-10
    np.testing.assert_allclose(r["arm.q"][:, 0], q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r["arm.qd"][:, 0], qd, rtol=0, atol=1e-10)
    away = np.abs(r.t - te) > 1e-9
    np.testing.assert_allclose(r["arm.qdd"][away, 0], qdd[away], rtol=1e-12)
    if not tx:
        after = r.t > te
        assert np.ptp(r["arm.qd"][after, 0]) == 0.0 and np.all(r["arm.qdd"][after, 0] == 0.0)
    assert r.stats["nrejected"] <= 2, r.stats


def test_karnopp_crossing_follows_the_held_region():
    """Slipping forwards (region +1) the band edge is qd - dv, which a stage that has passed
    through the band sees as negative (|qd| - dv would be positive again); inside the band the
    joint stays stuck in every stage, wherever the stage's speed is, until a major step."""
    F, dv = 0.5, 1e-3
    check = BlockCheck("Manipulator", {"robot": "pendulum.yaml", "gravity": [0.0, 0.0, 0.0],
                                       "friction": "karnopp", "Fc": F, "Fs": F, "dv": dv},
                       in_widths={"tau": 1, "f_ext": 6}, connected=["tau"], diagram_dir=str(DATA))
    assert check.block.state_names()[1] == ["region[hinge]"]
    check.xc[:] = [[0.0, 0.5]]
    check.output(0.0, [-0.3])
    assert check.xd.tolist() == [[1.0]]
    check.xc[:] = [[0.0, -0.5]]
    assert check.output(0.0, [-0.3], major=False)[2][0, 0] == pytest.approx(-(0.3 + F) / J)
    assert check.zero_crossings(0.0, [-0.3])[0, 0] == pytest.approx(-0.5 - dv)
    check.xc[:] = [[0.0, 5e-4]]
    assert check.output(0.0, [-0.3])[2][0, 0] == 0.0        # in the band: held by friction
    assert check.xd.tolist() == [[0.0]]
    check.xc[:] = [[0.0, 0.5]]
    assert check.output(0.0, [-0.3], major=False)[2][0, 0] == 0.0
    assert check.zero_crossings(0.0, [-0.3])[0, 0] == pytest.approx(0.5 - dv)


# ---- both modes ----------------------------------------------------------------------------------

def test_compiled_mode_equals_interpreted_mode(tmp_path, compiled_cache):
    """The Coulomb reversal and the Karnopp joint that sticks in its band, in one diagram: the
    compiled run's numbers and events equal the interpreted run's, and both meet the analytic
    answers."""
    arms = {"cv": (3.0, coulomb(), QD0), "kp": (0.3, karnopp(0.5, 1e-3), QD0)}
    results = {mode: run(tmp_path, arms, stop=0.4, mode=mode, name=f"{mode}.yaml")
               for mode in ("interpreted", "compiled")}
    a, b = results["interpreted"], results["compiled"]
    assert ([(e.t, e.block, e.index) for e in a.events]
            == [(e.t, e.block, e.index) for e in b.events])
    assert_same(a, b, 1e-12)
    for r in (a, b):
        q, qd, _, t1 = coulomb_answer(r.t, 3.0)
        np.testing.assert_allclose(r["cv.q"][:, 0], q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(r["cv.qd"][:, 0], qd, rtol=0, atol=1e-10)
        q, qd, _, te, _ = karnopp_answer(r.t, 0.3, 0.5, 1e-3)
        np.testing.assert_allclose(r["kp.q"][:, 0], q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(r["kp.qd"][:, 0], qd, rtol=0, atol=1e-10)
        assert abs(events_of(r, "cv")[0] - t1) < 1e-10 and abs(events_of(r, "kp")[0] - te) < 1e-10
        assert r.stats["nrejected"] <= 2
