"""Singularity measures: the Jacobian's manipulability, smallest singular value and condition
number against LAPACK and Yoshikawa's closed form, the named singularities of spherical-wrist
arms against the geometry of the KR6-like arm and the Puma 560, and the Singularity block."""
import math

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.blocks.base import BatchValue
from blocksim.errors import ParameterError
from blocksim.models.robot import RobotModel

KR6 = RobotModel.preset("kr6_like")
PUMA = RobotModel.preset("puma560")
TWO = RobotModel.preset("two_link")


@pytest.mark.parametrize("model", [KR6, PUMA], ids=["kr6_like", "puma560"])
@pytest.mark.parametrize("part,rows", [("all", slice(0, 6)), ("position", slice(0, 3)),
                                       ("orientation", slice(3, 6))])
def test_jacobian_measures_are_those_of_its_singular_values(model, part, rows):
    rng = np.random.default_rng(4)
    Q = rng.uniform(-2.0, 2.0, (40, 6))
    w, smin, cond = (model.manipulability(Q, part), model.smallest_singular_value(Q, part),
                     model.condition_number(Q, part))
    assert w.shape == smin.shape == cond.shape == (40,)
    for k, q in enumerate(Q):
        sv = np.linalg.svd(model.jacobian(q)[rows], compute_uv=False)
        assert w[k] == pytest.approx(np.prod(sv), rel=1e-9)
        assert w[k] == pytest.approx(math.sqrt(np.linalg.det(model.jacobian(q)[rows]
                                                             @ model.jacobian(q)[rows].T)), rel=1e-7)
        assert smin[k] == pytest.approx(sv[-1], rel=1e-9)
        assert cond[k] == pytest.approx(sv[0] / sv[-1], rel=1e-9)
    assert type(model.manipulability(Q[0], part)) is float      # one q in, a float out
    assert model.manipulability(Q[0], part) == w[0]


def test_planar_two_link_manipulability_is_l1_l2_sin_q2():
    # Yoshikawa 1985: w = l1 l2 |sin q2| for the tip position of a planar 2R arm
    for q2 in (0.3, 1.2, 2.5, -0.7):
        q = np.array([0.4, q2])
        assert TWO.manipulability(q, "position") == pytest.approx(1.0 * 0.8 * abs(math.sin(q2)),
                                                                  rel=1e-13)
    straight = np.array([0.4, 0.0])                          # rounding in cos 0.4, sin 0.4
    assert TWO.smallest_singular_value(straight, "position") < 1e-16
    assert TWO.condition_number(straight, "position") > 1e16


def test_the_smallest_singular_value_is_exact_near_the_wrist_singularity():
    # sigma_min grows as sin q5 near q5 = 0: forming J^T J would stop at about 1e-8
    base = np.array([0.3, -1.0, 0.5, 0.2, 0.0, 0.1])
    s = []
    for q5 in (1e-10, 1e-9, 1e-8):
        q = base.copy()
        q[4] = q5
        s.append(KR6.smallest_singular_value(q))
    assert s[1] / s[0] == pytest.approx(10.0, rel=1e-6)
    assert s[2] / s[1] == pytest.approx(10.0, rel=1e-6)
    assert KR6.smallest_singular_value(np.zeros(6)) == 0.0


def test_unknown_part_is_refused():
    with pytest.raises(ParameterError) as err:
        KR6.manipulability(np.zeros(6), "linear")
    assert str(err.value) == "part must be one of all, position, orientation, got 'linear'"


def test_kr6_singularity_distances_are_its_geometry():
    d = KR6.singularity_distances(np.zeros(6))
    # zero pose: wrist centre 0.8 m in front of axis 1, axes 4 and 6 in line; elbow angle between
    # the forearm (0.62 m along, 0.12 m up) and the upper arm (0.6 m, vertical)
    assert d["shoulder"] == pytest.approx(0.8, abs=1e-15)
    assert d["wrist"] == 0.0
    assert d["elbow"] == pytest.approx(math.sin(math.pi / 2 + math.atan2(0.12, 0.62)), rel=1e-14)
    rng = np.random.default_rng(9)
    Q = KR6.q_lower + (KR6.q_upper - KR6.q_lower) * rng.random((50, 6))
    D = KR6.singularity_distances(Q)
    T = KR6.fk(Q)
    centre = T[:, :3, 3] - 0.100 * T[:, :3, 2]                 # the tool is 0.1 m along z6
    np.testing.assert_allclose(D["shoulder"], np.hypot(centre[:, 0], centre[:, 1]), atol=1e-14)
    np.testing.assert_allclose(D["wrist"], np.abs(np.sin(Q[:, 4])), atol=1e-15)
    # the elbow angle moves one for one with q3, the forearm in line with the upper arm (the
    # wrist centre 0.12 m off the forearm's axis 4) at q3 = atan2(0.12, 0.62) +- pi/2
    np.testing.assert_allclose(D["elbow"], np.abs(np.sin(Q[:, 2] - math.pi / 2
                                                         - math.atan2(0.12, 0.62))), atol=1e-14)


def test_puma_shoulder_distance_allows_for_its_shoulder_offset():
    rng = np.random.default_rng(10)
    Q = PUMA.q_lower + (PUMA.q_upper - PUMA.q_lower) * rng.random((50, 6))
    D = PUMA.singularity_distances(Q)
    w = PUMA.fk(Q)[:, :3, 3]                                   # no tool: the wrist centre
    np.testing.assert_allclose(D["shoulder"], np.sqrt(w[:, 0] ** 2 + w[:, 1] ** 2 - 0.15005 ** 2),
                               atol=1e-12)
    np.testing.assert_allclose(D["wrist"], np.abs(np.sin(Q[:, 4])), atol=1e-15)


def test_singularity_distances_need_a_spherical_wrist():
    with pytest.raises(ParameterError) as err:
        TWO.singularity_distances(np.zeros(2))
    assert str(err.value) == (
        "robot 'two_link' has no spherical wrist (six revolute joints, axes 4 to 6 meeting in "
        "one point, axes 2 and 3 parallel), so its singularities are not named: use "
        "manipulability, smallest_singular_value or condition_number")


def test_the_block_outputs_the_model_measures_per_member():
    rng = np.random.default_rng(11)
    Q = rng.uniform(-2.0, 2.0, (3, 6))
    check = BlockCheck("Singularity", {"robot": "kr6_like", "part": "position",
                                       "mass_scale": BatchValue([1.0, 1.2, 1.5])},
                       in_widths=6, batch=3)
    assert check.outputs == ["manipulability", "sigma_min", "condition", "shoulder", "elbow",
                             "wrist"]
    out = check.output(0.0, Q)
    np.testing.assert_allclose(out[0][:, 0], KR6.manipulability(Q, "position"), rtol=1e-14)
    np.testing.assert_allclose(out[1][:, 0], KR6.smallest_singular_value(Q, "position"), rtol=1e-14)
    np.testing.assert_allclose(out[2][:, 0], KR6.condition_number(Q, "position"), rtol=1e-14)
    D = KR6.singularity_distances(Q)
    for k, name in enumerate(("shoulder", "elbow", "wrist")):
        np.testing.assert_allclose(out[3 + k][:, 0], D[name], rtol=1e-14, err_msg=name)
    planar = BlockCheck("Singularity", {"robot": "two_link", "part": "position"}, in_widths=2)
    assert planar.outputs == ["manipulability", "sigma_min", "condition"]
    assert planar.output(0.0, [0.4, 1.2])[0][0, 0] == pytest.approx(0.8 * math.sin(1.2), rel=1e-13)


DIAGRAM = """
blocksim: 1
name: singularity measures along a joint move
blocks:
  ref:  {type: MinimumJerk, q0: [0.0, -1.2, 0.9, 0.4, 0.6, 0.0],
         qf: [1.0, -0.8, 0.3, -0.4, -0.6, 1.0], duration: 1.0}
  sing: {type: Singularity, robot: kr6_like}
connections:
  - ref.q -> sing.q
simulation: {stop_time: 1.0, solver: rk4, step: 1.0e-2}
log: {signals: [ref.q, sing.manipulability, sing.sigma_min, sing.condition, sing.wrist,
                sing.elbow, sing.shoulder]}
"""


def test_a_diagram_logs_the_measures_in_both_modes_and_sees_the_wrist_pass_q5_0(tmp_path,
                                                                                 compiled_cache):
    path = tmp_path / "sing.yaml"
    path.write_text(DIAGRAM)
    runs = {mode: blocksim.simulate(blocksim.load(path, set={"simulation.mode": mode}))
            for mode in ("interpreted", "compiled")}
    a, b = runs["interpreted"], runs["compiled"]
    assert b.stats["mode"] == "compiled"
    q = a["ref.q"]
    np.testing.assert_allclose(a["sing.manipulability"][:, 0], KR6.manipulability(q), rtol=1e-13)
    np.testing.assert_allclose(a["sing.wrist"][:, 0], np.abs(np.sin(q[:, 4])), atol=1e-15)
    for name in ("sing.manipulability", "sing.sigma_min", "sing.condition", "sing.wrist",
                 "sing.elbow", "sing.shoulder"):
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # q5 goes from 0.6 to -0.6 rad: the wrist passes its singularity at t = 0.5 s
    k = int(np.argmin(a["sing.wrist"][:, 0]))
    assert a.t[k] == pytest.approx(0.5, abs=1e-12) and a["sing.wrist"][k, 0] < 1e-15


def test_the_commissioning_scan_finds_the_wrist_singularity_and_nears_the_elbow_one():
    r = blocksim.simulate(blocksim.load("examples/commissioning/kr6_singularity_scan.yaml"))
    k = int(np.argmin(r["sing.wrist"][:, 0]))
    assert r.t[k] == pytest.approx(1.0, abs=1e-12)
    assert r["sing.wrist"][k, 0] < 1e-15 and r["sing.sigma_min"][k, 0] < 1e-15
    assert r["sing.condition"][k, 0] > 1e15
    # q3 ends at 1.6 rad, 0.16 rad short of the forearm in line with the upper arm
    assert r["sing.elbow"][-1, 0] == pytest.approx(
        abs(math.sin(1.6 - math.pi / 2 - math.atan2(0.12, 0.62))), rel=1e-12)
    assert np.all(np.diff(r["sing.elbow"][100:, 0]) < 0)        # nearing it all the second half
