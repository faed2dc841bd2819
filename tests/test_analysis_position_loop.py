"""W2's joint-1 position loop (examples/analysis/position_loop.yaml) at its trimmed operating
point, opened at joint 1's torque command (one element of a vector signal): the reference margins
with the coupling removed, and with joint 2's loop closed (docs/analysis.md)."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.optimize import brentq

import blocksim
from blocksim.analysis import linear_model
from blocksim.analysis.report import margins_of
from blocksim.errors import BlocksimError

POSITION_LOOP = "examples/analysis/position_loop.yaml"
G = 9.81


@pytest.fixture(scope="module")
def loops():
    out = {}
    for variant in ("coupled", "decoupled", "reference", "coulomb"):
        m = linear_model(blocksim.load(POSITION_LOOP, variant=variant))
        out[variant] = (m, margins_of(m))
    return out


def rigid_loop_margins(J=5.126666666666667, b=0.5, Kp=400.0, Ki=100.0, Kd=40.0, T=1e-3):
    """The reference by hand: a rigid joint J qdd + b qd = tau behind a zero-order hold of T,
    the PID Kp e + Ki T/(z - 1) e + Kd (-qd) on the samples: crossover (Hz), PM (deg), delay
    margin (s)."""
    F = np.zeros((3, 3))
    F[0, 1], F[1, 1], F[1, 2] = 1.0, -b / J, 1.0 / J
    E = expm(F * T)
    Ad, Bd = E[:2, :2], E[:2, 2:]

    def L(w):
        z = np.exp(1j * w * T)
        q, qd = np.linalg.solve(z * np.eye(2) - Ad, Bd)[:, 0]
        return Kp * q + Ki * T / (z - 1) * q + Kd * qd

    wc = brentq(lambda w: abs(L(w)) - 1, 1.0, 100.0, xtol=1e-14)
    pm = 180 + math.degrees(np.angle(L(wc)))
    return wc / (2 * math.pi), pm, math.radians(pm) / wc


def test_the_trim_holds_the_arm_horizontal_with_the_motor_currents(loops):
    m, _ = loops["coupled"]
    assert m.trimmed["states"]["plant"] == [0.0, 0.0, 0.0, 0.0]
    # the gravity torques at q = 0 through N Kt = 10 N m/A: (3 0.5 + 2 1.4) g and 2 0.4 g
    assert m.trimmed["states"]["act/motor"] == pytest.approx([4.3 * G / 10, 0.8 * G / 10],
                                                             rel=1e-12)
    assert m.inputs == m.outputs == ("zoh.out[0]",) and m.loop == "zoh.out[0]"
    assert m.dt == 1e-3 and len(m.states) == 10


def test_the_decoupled_loop_with_ideal_current_loops_has_the_reference_margins(loops):
    m, margins = loops["reference"]
    fc, pm, dm = rigid_loop_margins()
    assert (round(margins.crossover, 3), round(margins.phase_margin, 2),
            round(margins.delay_margin * 1e3, 1)) == (1.687, 46.25, 76.2)
    assert margins.crossover == pytest.approx(fc, rel=1e-7)
    assert margins.phase_margin == pytest.approx(pm, abs=1e-5)
    assert margins.delay_margin == pytest.approx(dm, rel=1e-6)
    assert margins.stable


def test_the_current_loops_cost_a_fifteenth_of_a_degree(loops):
    """W2's 10 kHz current loops in the decoupled loop: the same crossover, 0.066 deg less phase
    (their lag at 1.687 Hz, some 0.11 ms)."""
    _, ideal = loops["reference"]
    _, margins = loops["decoupled"]
    assert round(margins.crossover, 3) == 1.687
    assert round(margins.phase_margin, 2) == 46.19 and round(margins.delay_margin * 1e3, 2) == 76.05
    lag = ideal.phase_margin - margins.phase_margin
    assert 0.06 < lag < 0.07 and lag / 360 / margins.crossover == pytest.approx(1.09e-4, rel=0.02)


def test_joint_2_closed_lowers_the_crossover(loops):
    _, margins = loops["coupled"]
    assert (round(margins.crossover, 3), round(margins.phase_margin, 2),
            round(margins.delay_margin * 1e3, 2)) == (1.604, 49.82, 86.29)
    assert margins.stable


def test_coulomb_friction_at_rest_swamps_the_loop(loops):
    """W2's Fc tanh(qd / 1e-3): a tangent of 1000 N m s/rad at qd = 0 (the rule leaves it out)."""
    m, margins = loops["coulomb"]
    assert round(margins.crossover, 4) == 0.0715
    assert m.steep == ("plant (Manipulator): friction of joint shoulder smoothed over 0.001 "
                       "rad/s: slope 1000 N m s/rad at qd = 0 rad/s",
                       "plant (Manipulator): friction of joint elbow smoothed over 0.001 rad/s: "
                       "slope 500 N m s/rad at qd = 0 rad/s")
    assert loops["coupled"][0].steep == ()          # Fc = 0: nothing steep


def test_an_operating_point_given_twice_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    robot = Path("examples/robots/two_link_geared.yaml").resolve()
    body = Path(POSITION_LOOP).read_text().replace("../robots/two_link_geared.yaml", str(robot))
    path.write_text(body.replace("  trim: {states:", "  at: initial\n  trim: {states:"))
    with pytest.raises(BlocksimError) as err:
        linear_model(blocksim.load(path))
    line = body[:body.index("  trim: {states:")].count("\n") + 1
    assert str(err.value) == (f"{path}:{line}: analysis.at and analysis.trim both give the "
                              "operating point: keep one (at: trim takes the trim's)")
    path.write_text(body.replace("  trim: {states:", "  trim: {state:"))
    with pytest.raises(BlocksimError) as err:
        linear_model(blocksim.load(path))
    assert str(err.value).startswith(f"{path}:{line}: unknown key 'state' in analysis.trim; "
                                     "did you mean 'states'?")
