"""Tool-space moves (CartesianTrajectory, models/cartesian_path.py): the tool follows a line and a
circle to 1e-9 m under computed torque (against scipy's slerp and the circle's formula), the
joint rates are the Jacobian's, and moves through a singularity or onto another branch are
refused naming the time."""
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

import blocksim
from blockcheck import BlockCheck
from blocksim.errors import ParameterError
from blocksim.models import cartesian_path as cp
from blocksim.models.frames import rpy_to_matrix
from blocksim.models.robot import RobotModel
from test_robot_ik_all import KR6_ROWS, dh_arm

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "commissioning"
KR6 = RobotModel.preset("kr6_like")
Q0 = np.array([0.3, -1.2, 0.9, 0.4, 0.7, -0.2])
T0 = KR6.fk(Q0)


def minimum_jerk(t, t0, duration):
    x = np.clip((np.asarray(t) - t0) / duration, 0.0, 1.0)
    return x ** 3 * (10.0 - 15.0 * x + 6.0 * x * x)


def run(path, **overrides):
    return blocksim.simulate(blocksim.load(path, set={"log.every": 1e-3, **overrides}))


def test_the_tool_follows_a_line_with_slerp_to_1e_9_m_under_computed_torque():
    r = run(EXAMPLES / "kr6_tool_line.yaml")
    s = minimum_jerk(r.t, 0.25, 1.5)
    end = np.array([0.349, 0.303, 0.681])
    expected = T0[:3, 3] + s[:, None] * (end - T0[:3, 3])
    slerp = Slerp([0.0, 1.0], Rotation.from_matrix([T0[:3, :3], rpy_to_matrix([-2.4, -1.0, 0.3])]))
    assert np.max(np.abs(r["fk.position"] - expected)) < 1e-9
    assert np.max(np.abs(r["fk.rotation"].reshape(-1, 3, 3) - slerp(s).as_matrix())) < 1e-9
    assert np.ptp(r["fk.position"][:, 1]) == pytest.approx(0.303 - T0[1, 3], rel=1e-9)
    # the wrist stays clear of its singularity along the way (q5 from 0.7 rad)
    assert np.min(r["sing.wrist"]) > 0.3


def test_the_tool_follows_a_full_circle_to_1e_9_m_under_computed_torque():
    r = run(EXAMPLES / "kr6_tool_circle.yaml")
    centre = np.array([0.249, 0.203, 0.881])
    a = 2.0 * math.pi * minimum_jerk(r.t, 0.25, 2.0)
    r0 = T0[:3, 3] - centre
    expected = centre + np.stack([np.full_like(a, r0[0]), r0[1] * np.cos(a) - r0[2] * np.sin(a),
                                  r0[1] * np.sin(a) + r0[2] * np.cos(a)], axis=1)
    assert np.max(np.abs(r["fk.position"] - expected)) < 1e-9
    assert np.max(np.abs(r["fk.rotation"] - T0[:3, :3].reshape(9))) < 1e-9
    np.testing.assert_allclose(r["arm.q"][-1], Q0, atol=1e-9)          # back where it started


def test_joint_rates_between_nodes_are_those_of_the_jacobian():
    end = T0[:3, 3] + [0.1, 0.2, -0.2]
    check = BlockCheck("CartesianTrajectory", {"robot": "kr6_like", "q0": Q0.tolist(),
                                               "end": end.tolist(), "duration": 1.0,
                                               "end_rpy": [-2.4, -1.0, 0.3]}, in_widths={})
    path = cp.ToolPath(T0, "line", end=end, R1=rpy_to_matrix([-2.4, -1.0, 0.3]))
    worst_p = worst_v = worst_a = 0.0
    for t in np.linspace(0.0137, 0.9871, 23):                   # off the 1 ms nodes
        q, qd, qdd = (y[0] for y in check.output(float(t)))
        x = t
        s = x ** 3 * (10 - 15 * x + 6 * x * x)
        sd = 30 * x * x * (1 - x) ** 2
        sdd = x * (60 - 180 * x + 120 * x * x)
        T, dp, ddp, turn = path.at(s)
        worst_p = max(worst_p, float(np.max(np.abs(KR6.fk(q) - T))))
        J = KR6.jacobian(q)
        worst_v = max(worst_v, float(np.max(np.abs(J @ qd - np.concatenate([dp, turn]) * sd))))
        acc = np.concatenate([ddp * sd * sd + dp * sdd, turn * sdd])
        worst_a = max(worst_a, float(np.max(np.abs(J @ qdd + cp.bias_acceleration(KR6, q, qd)
                                                   - acc))))
    assert worst_p < 1e-13 and worst_v < 1e-10 and worst_a < 1e-7
    # held at the end, at rest
    q, qd, qdd = (y[0] for y in check.output(1.5))
    assert np.max(np.abs(KR6.fk(q)[:3, 3] - end)) < 1e-13
    assert not qd.any() and not qdd.any()


def test_bias_acceleration_is_the_derivative_of_the_jacobian_along_qd():
    rng = np.random.default_rng(3)
    for model in (KR6, RobotModel.preset("puma560")):
        for _ in range(5):
            q, qd = rng.uniform(-1.5, 1.5, 6), rng.uniform(-2.0, 2.0, 6)
            h = 1e-5
            Jdot = (model.jacobian(q + h * qd) - model.jacobian(q - h * qd)) / (2 * h)
            np.testing.assert_allclose(cp.bias_acceleration(model, q, qd), Jdot @ qd, atol=1e-8)


PLANAR_Q0 = [0.0, -1.2, 0.9, 0.0, 0.15, 0.0]            # q1 = q4 = q6 = 0: the arm's plane


def line_from(q0, delta, **params):
    T = KR6.fk(np.array(q0))
    return {"robot": "kr6_like", "q0": list(q0), "end": (T[:3, 3] + delta).tolist(),
            "duration": 1.0, **params}


def test_a_line_through_the_wrist_singularity_is_refused_naming_it_and_the_time():
    # keeping the orientation while the wrist centre moves forward and down turns q5 through 0
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", line_from(PLANAR_Q0, [0.2, 0.0, -0.2]), in_widths={},
                   name="move")
    assert str(err.value) == (
        "block 'move': the tool path reaches the wrist singularity at t = 0.358 s: |sin| of the "
        "angle between axes 4 and 6 is 0.00932, below the clearance 0.01")
    # without a clearance it still stops where the wrist flips, instead of jumping
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", line_from(PLANAR_Q0, [0.2, 0.0, -0.2], min_wrist=0.0,
                                                    min_sigma=0.0), in_widths={}, name="move")
    assert str(err.value) == ("block 'move': the tool path changes the wrist branch from "
                              "'noflip' to 'flip' at t = 0.367698 s (between the nodes at 0.367 "
                              "and 0.368 s)")
    # the flip's time is where the wrist measure passes through zero: nodes ten times closer
    # place it at the same time to the digits shown (linear between nodes: error ~ h^2)
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", line_from(PLANAR_Q0, [0.2, 0.0, -0.2], min_wrist=0.0,
                                                    min_sigma=0.0, node_step=1e-4),
                   in_widths={}, name="move")
    assert "at t = 0.367698 s (between the nodes at 0.3676 and 0.3677 s)" in str(err.value)


def test_a_line_onto_the_shoulder_singularity_is_refused():
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", line_from(PLANAR_Q0, [-0.2, 0.0, 0.2]), in_widths={},
                   name="move")
    assert str(err.value).startswith("block 'move': the tool path reaches the shoulder "
                                     "singularity at t = 0.701 s: the wrist centre's distance "
                                     "from the plane through axis 1 parallel to axis 2 is 0.00997 m")


def test_out_of_reach_and_joint_limits_are_refused_naming_the_time():
    # A2 is limited to 0.785 rad: a long reach forward needs more
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", line_from(Q0, [1.5, 0.0, 0.0]), in_widths={},
                   name="move")
    assert str(err.value) == ("block 'move': joint A2 leaves its limits [-3.31613, 0.785398] "
                              "rad at t = 0.614 s (q = 0.789051)")
    # an arm without limits and no clearances: the line leaves the reach of the arm
    free = dh_arm(KR6_ROWS, "modified", "kr6_free")
    T = free.fk(Q0)
    path = cp.ToolPath(T, "line", end=T[:3, 3] + [3.0, 0.0, 0.0])
    times = np.linspace(0.0, 1.0, 101)
    s = minimum_jerk(times, 0.0, 1.0)
    none = {"sigma_min": 0.0, "shoulder": 0.0, "elbow": 0.0, "wrist": 0.0}
    with pytest.raises(cp.PathError) as err:
        cp.joint_motion(free, Q0, path, times, s, np.gradient(s, times), s * 0.0, none)
    assert str(err.value) == ("the tool path leaves the arm's reach at t = 0.44 s: inverse "
                              "kinematics on the branch of q0 does not reach the pose there")


def test_incomplete_paths_are_refused():
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", {"robot": "kr6_like", "q0": Q0.tolist(),
                                           "duration": 1.0}, in_widths={}, name="move")
    assert str(err.value) == ("block 'move': path: line needs 'end' (the tool origin's end "
                              "position, m)")
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", {"robot": "kr6_like", "q0": Q0.tolist(),
                                           "path": "circle", "centre": [0, 0, 1],
                                           "duration": 1.0}, in_widths={}, name="move")
    assert str(err.value) == ("block 'move': path: circle needs 'centre' (m), 'axis' and "
                              "'angle' (rad)")
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", {"robot": "two_link", "q0": [0.0, 0.5],
                                           "end": [1.0, 0.5, 0.0], "duration": 1.0},
                   in_widths={}, name="move")
    assert str(err.value) == ("block 'move': tool moves need a six-joint arm (a full pose fixes "
                              "six joint variables); robot 'two_link' has 2")


def test_the_cli_refuses_the_move_with_the_message_and_no_traceback(tmp_path):
    text = (EXAMPLES / "kr6_tool_line.yaml").read_text()
    text = text.replace("q0: [0.3, -1.2, 0.9, 0.4, 0.7, -0.2],\n         path: line, "
                        "end: [0.349, 0.303, 0.681], end_rpy: [-2.4, -1.0, 0.3],",
                        "q0: [0.0, -1.2, 0.9, 0.0, 0.15, 0.0],\n         path: line, "
                        "end: [0.4765, 0.0, 0.7302],")
    assert "0.4765" in text
    path = tmp_path / "through_wrist.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "block 'cart'" in proc.stderr and "wrist singularity at t = " in proc.stderr


COMPILED = """
blocksim: 1
name: a tool arc, compiled and interpreted
blocks:
  cart: {type: CartesianTrajectory, robot: kr6_like, q0: [0.3, -1.2, 0.9, 0.4, 0.7, -0.2],
         path: circle, centre: [0.25, 0.2, 0.88], axis: [1.0, 0.0, 0.0], angle: 1.0,
         t0: 0.1, duration: 0.5, profile: cubic}
  fk:   {type: ForwardKinematics, robot: kr6_like}
connections:
  - cart.q -> fk.q
simulation: {stop_time: 0.8, solver: rk4, step: 1.0e-3}
log: {signals: [cart.q, cart.qd, cart.qdd, fk.position], every: 1.0e-2}
"""


def test_compiled_mode_computes_what_interpreted_mode_computes(tmp_path, compiled_cache):
    path = tmp_path / "arc.yaml"
    path.write_text(COMPILED)
    a, b = (blocksim.simulate(blocksim.load(path, set={"simulation.mode": mode}))
            for mode in ("interpreted", "compiled"))
    assert b.stats["mode"] == "compiled"
    for name in ("cart.q", "cart.qd", "cart.qdd", "fk.position"):
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # held at q0 before t0 and at rest after the end (cubic: qdd jumps there, a breakpoint)
    np.testing.assert_array_equal(a["cart.q"][0], [0.3, -1.2, 0.9, 0.4, 0.7, -0.2])
    assert not a["cart.qd"][-1].any() and not a["cart.qdd"][-1].any()
    radius = np.linalg.norm((a["fk.position"] - [0.25, 0.2, 0.88])[:, 1:], axis=1)
    assert np.ptp(radius) < 1e-13


def test_a_trapezoidal_line_cruises_at_v_max_after_blends_at_a_max():
    end = T0[:3, 3] + [0.0, 0.3, 0.0]                           # 0.3 m along y
    params = {"robot": "kr6_like", "q0": Q0.tolist(), "end": end.tolist(),
              "profile": "trapezoidal", "v_max": 0.2, "a_max": 0.5, "t0": 0.1}
    check = BlockCheck("CartesianTrajectory", params, in_widths={})
    # s'' = 0.5 / 0.3 for 0.4 s, cruise at 0.2 m/s for 1.1 s, brake for 0.4 s: 1.9 s in all
    assert check.block.breakpoints(0.0, 10.0) == pytest.approx([0.1, 0.5, 1.6, 2.0], abs=1e-12)
    for t, x, speed in ((0.3, 0.5 * 0.5 * 0.2 ** 2, 0.5 * 0.2), (1.0, 0.04 + 0.2 * 0.5, 0.2),
                        (1.9, 0.3 - 0.5 * 0.5 * 0.1 ** 2, 0.5 * 0.1)):
        q, qd, _ = (y[0] for y in check.output(t))
        np.testing.assert_allclose(KR6.fk(q)[:3, 3], T0[:3, 3] + [0.0, x, 0.0], atol=1e-13)
        assert np.linalg.norm((KR6.jacobian(q) @ qd)[:3]) == pytest.approx(speed, rel=1e-9)
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", {**params, "a_max": None}, in_widths={}, name="move")
    assert str(err.value) == ("block 'move': profile: trapezoidal needs v_max and a_max (m/s, "
                              "m/s^2 of the tool origin), or duration (with or without a_max)")
    with pytest.raises(ParameterError) as err:
        BlockCheck("CartesianTrajectory", {**params, "v_max": None, "duration": 0.5},
                   in_widths={}, name="move")
    assert str(err.value) == ("block 'move': duration 0.5 s is too short for a_max: the tool "
                              "needs 1.54919 s")
