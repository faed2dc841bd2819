"""Every inverse-kinematics solution (RobotModel.ik_all): the closed form of spherical-wrist arms
against sampled joint vectors, its labels, limits and singular poses, and the numerical search of
other arms."""
import math

import numpy as np
import pytest

from blocksim.errors import ParameterError
from blocksim.models import ik_solutions, subproblems as sp
from blocksim.models.robot import RobotModel

KR6 = RobotModel.preset("kr6_like")
PUMA = RobotModel.preset("puma560")
ALL_LABELS = {(s, e, w) for s in ("front", "back") for e in ("up", "down")
              for w in ("noflip", "flip")}


def wrapped(d):
    return (np.asarray(d) + math.pi) % (2 * math.pi) - math.pi


def uniform_in_limits(model, rng, count):
    return model.q_lower + (model.q_upper - model.q_lower) * rng.random((count, model.n))


def dh_arm(rows, convention, name, qlim=True):
    """A massless-looking DH arm (unit masses) from (alpha, a, d, theta) rows."""
    links = []
    for alpha, a, d, theta, *lim in rows:
        link = dict(type="revolute", alpha=alpha, a=a, d=d, theta=theta, mass=1.0,
                    com=[0.0, 0.0, 0.0], inertia=[0.01, 0.01, 0.01])
        if qlim and lim:
            link["qlim"] = list(lim[0])
        links.append(link)
    return RobotModel.from_dh(links, convention=convention, name=name)


KR6_ROWS = [(0.0, 0.0, 0.400, 0.0), (-math.pi / 2, 0.180, 0.0, -math.pi / 2), (0.0, 0.600, 0.0, 0.0),
            (-math.pi / 2, 0.120, 0.620, 0.0), (math.pi / 2, 0.0, 0.0, 0.0),
            (-math.pi / 2, 0.0, 0.0, 0.0)]


@pytest.mark.parametrize("model", [KR6, PUMA], ids=["kr6_like", "puma560"])
def test_every_sampled_joint_vector_is_among_the_solutions_of_its_pose(model):
    rng = np.random.default_rng(23)
    worst_q = worst_pose = 0.0
    counts = set()
    for q in uniform_in_limits(model, rng, 1000):
        T = model.fk(q)
        sols = model.ik_all(T)
        assert sols.complete and sols.method == "closed form, spherical wrist"
        gaps = np.max(np.abs(wrapped(sols.q - q)), axis=1)
        worst_q = max(worst_q, float(np.min(gaps)))
        worst_pose = max(worst_pose, float(np.max(np.abs(model.fk(sols.q) - T))))
        assert np.all(sols.q >= model.q_lower) and np.all(sols.q <= model.q_upper)
        assert len(set(sols.labels)) == len(sols) <= 8
        dist = np.linalg.norm(sols.q, axis=1)                   # q_near: the zero pose
        assert np.all(np.diff(dist) >= 0.0)
        counts.add(len(sols))
    assert worst_q < 1e-9
    assert worst_pose < 1e-12
    assert 8 in counts and 2 in counts                           # limits cut some branches


def test_a_pose_with_all_eight_solutions_has_all_eight_labels_and_no_more():
    rng = np.random.default_rng(5)
    for q in uniform_in_limits(KR6, rng, 200):
        sols = KR6.ik_all(KR6.fk(q))
        if len(sols) == 8:
            break
    assert set(sols.labels) == ALL_LABELS
    # a numerical search from 60 starts finds nothing the closed form missed
    search = ik_solutions._numerical(KR6, KR6.fk(q), np.zeros(6), 60)
    assert not search.complete and 1 <= len(search) <= 8
    for qs in search.q:
        assert np.min(np.max(np.abs(wrapped(sols.q - qs)), axis=1)) < 1e-8


def test_labels_describe_the_posture():
    # KR6 zero pose: wrist centre in front of axis 1, elbow above the shoulder-wrist line
    sols = KR6.ik_all(KR6.fk([0.3, -1.2, 0.9, 0.4, 0.7, -0.2]))
    by_label = dict(zip(sols.labels, sols.q))
    q = by_label[("front", "up", "noflip")]
    np.testing.assert_allclose(q, [0.3, -1.2, 0.9, 0.4, 0.7, -0.2], atol=1e-12)
    # the flipped wrist: q4 + pi, -q5, q6 + pi (axes 4-5 and 5-6 perpendicular)
    qf = by_label[("front", "up", "flip")]
    np.testing.assert_allclose(wrapped(qf - [0.3, -1.2, 0.9, 0.4 + math.pi, -0.7, -0.2 + math.pi]),
                               0.0, atol=1e-12)
    # the back shoulder turns joint 1 by about pi
    assert all(abs(wrapped(qb[0] - 0.3)) > 2.0 for lab, qb in by_label.items() if lab[0] == "back")


def test_urdf_and_dh_descriptions_give_the_same_solutions():
    urdf = RobotModel.from_urdf("examples/robots/kr6_like.urdf")
    assert urdf.wrist_arm is not None
    T = KR6.fk([0.5, -0.9, 0.4, -1.0, 0.8, 2.0])
    a, b = KR6.ik_all(T), urdf.ik_all(T)
    assert a.labels == b.labels
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)


def test_equivalent_angles_within_wide_limits_are_chosen_near_q_near():
    q = np.array([0.2, -1.0, 0.5, 0.3, 0.6, -1.0])            # A6 limits +-6.11 rad
    near = q.copy()
    near[5] += 2 * math.pi
    sols = KR6.ik_all(KR6.fk(q), q_near=near)
    np.testing.assert_allclose(sols.q[0], near, atol=1e-12)
    sols0 = KR6.ik_all(KR6.fk(q))
    np.testing.assert_allclose(sols0.q[0], q, atol=1e-12)


def test_joints_without_limits_take_angles_in_minus_pi_pi():
    free = dh_arm(KR6_ROWS, "modified", "kr6_free")
    rng = np.random.default_rng(8)
    counts = []
    for q in rng.uniform(-math.pi, math.pi, (50, 6)):
        sols = free.ik_all(free.fk(q), q_near=np.full(6, 3.0))
        assert np.all(np.abs(sols.q) <= math.pi + 1e-12) and sols.note == ""
        assert np.min(np.max(np.abs(wrapped(sols.q - q)), axis=1)) < 1e-9
        counts.append(len(sols))
    # without limits a pose has 8 branches, or 4 where the back shoulder cannot reach it
    assert set(counts) == {4, 8}


def test_wrist_singular_pose_keeps_q_near_for_joint_4():
    q = np.array([0.4, -1.1, 0.8, 0.0, 0.0, 0.5])
    T = KR6.fk(q)
    near = np.array([0.4, -1.1, 0.8, 0.9, 0.0, 0.0])
    sols = KR6.ik_all(T, q_near=near)
    first = sols.q[0]
    assert first[3] == pytest.approx(0.9, abs=1e-12)          # the free angle
    assert first[3] + first[5] == pytest.approx(0.5, abs=1e-12)
    np.testing.assert_allclose(KR6.fk(sols.q), np.broadcast_to(T, (len(sols), 4, 4)), atol=1e-12)


def test_out_of_reach_and_outside_the_limits():
    far = np.eye(4)
    far[:3, 3] = [3.0, 0.0, 0.0]
    sols = KR6.ik_all(far)
    assert len(sols) == 0 and sols.q.shape == (0, 6) and sols.complete
    assert str(sols) == "0 solutions (closed form, spherical wrist): the pose is out of reach"
    # a pose behind the arm: with joint 1 held to +-0.5 rad only the back shoulder reaches it
    behind = KR6.fk([math.pi, -1.2, 0.9, 0.0, 0.7, 0.0])
    rows = [KR6_ROWS[0] + ((-0.5, 0.5),)] + KR6_ROWS[1:]
    sols = dh_arm(rows, "modified", "kr6_joint1").ik_all(behind)
    assert len(sols) == 4 and {lab[0] for lab in sols.labels} == {"back"}
    assert sols.note == "4 of the 8 branches lie outside the joint limits"
    tight = dh_arm([r + ((-0.5, 0.5),) for r in KR6_ROWS], "modified", "kr6_tight")
    sols = tight.ik_all(behind)
    assert len(sols) == 0 and sols.complete
    assert sols.note == "all 8 branches lie outside the joint limits"


def test_other_arms_use_the_numerical_search_and_say_it_may_be_incomplete():
    # a UR5-like arm: no spherical wrist (axes 4, 5, 6 do not meet)
    rows = [(math.pi / 2, 0.0, 0.089159, 0.0), (0.0, -0.425, 0.0, 0.0), (0.0, -0.39225, 0.0, 0.0),
            (math.pi / 2, 0.0, 0.10915, 0.0), (-math.pi / 2, 0.0, 0.09465, 0.0),
            (0.0, 0.0, 0.0823, 0.0)]
    ur = RobotModel.from_dh([dict(type="revolute", a=a, alpha=al, d=d, theta=th, mass=1.0,
                                  com=[0, 0, 0], inertia=[0.01] * 3) for al, a, d, th in rows])
    assert ur.wrist_arm is None
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.1])
    T = ur.fk(q)
    sols = ur.ik_all(T)
    assert not sols.complete and sols.labels == (None,) * len(sols)
    assert str(sols).startswith(f"{len(sols)} solutions (numerical search from 24 starts; "
                                "the list may be incomplete)")
    assert len(sols) >= 2
    np.testing.assert_allclose(ur.fk(sols.q), np.broadcast_to(T, (len(sols), 4, 4)), atol=1e-12)
    # a wrist offset (a5 != 0) breaks the spherical wrist of the KR6 shape
    rows = list(KR6_ROWS)
    rows[5] = (-math.pi / 2, 0.01, 0.0, 0.0)
    assert dh_arm(rows, "modified", "offset_wrist").wrist_arm is None
    assert RobotModel.preset("two_link").wrist_arm is None


def test_bad_arguments_are_refused():
    with pytest.raises(ParameterError) as err:
        KR6.ik_all(np.zeros(3))
    assert str(err.value) == "ik_all: pose must be a 4x4 matrix, got shape (3,)"
    with pytest.raises(ParameterError) as err:
        KR6.ik_all(np.eye(4), q_near=np.zeros(5))
    assert str(err.value) == "ik_all: q_near must have shape (6,), got (5,)"
    bad = np.eye(4)
    bad[0, 3] = math.nan
    with pytest.raises(ParameterError) as err:
        KR6.ik_all(bad)
    assert str(err.value) == "ik_all: pose must be finite (no NaN or infinity)"
    with pytest.raises(ParameterError) as err:
        KR6.ik_all(np.eye(4), q_near=np.full(6, math.inf))
    assert str(err.value) == "ik_all: q_near must be finite (no NaN or infinity)"


def test_subproblems_recover_random_angles():
    rng = np.random.default_rng(2)
    for _ in range(200):
        w1, w2 = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 3)))
        u = rng.normal(size=3)
        a1, a2 = rng.uniform(-math.pi, math.pi, 2)
        v = sp.rotation(w1, a1) @ sp.rotation(w2, a2) @ u
        pairs = sp.two_rotations(w1, w2, u, v)
        assert min(abs(wrapped(p1 - a1)) + abs(wrapped(p2 - a2)) for p1, p2 in pairs) < 1e-9
        x = rng.normal(size=3)
        assert min(abs(wrapped(t - a1)) for t in
                   sp.rotation_to_distance(w1, u, x, np.linalg.norm(sp.rotation(w1, a1) @ u - x))) < 1e-9
        level = float(x @ sp.rotation(w1, a1) @ u)
        assert min(abs(wrapped(t - a1)) for t in sp.rotation_to_level(w1, u, x, level)) < 1e-9


def test_two_link_arms_have_both_elbow_branches_in_closed_form():
    """The planar 2R of any description: every sampled q is among the solutions of its pose
    (one branch fits a full pose) and of its position (both branches, labelled up and down)."""
    preset = RobotModel.preset("two_link")
    # the same geometry as a DH table with a tool offset and a shifted zero, and tilted out of
    # the x-y plane by the base (alpha on both rows is 0: the axes stay parallel)
    tilted = RobotModel.from_dh([dict(type="revolute", a=0.5, alpha=0.0, d=0.1, theta=0.3,
                                      mass=1.0, com=[0, 0, 0], inertia=[0.01] * 3),
                                 dict(type="revolute", a=0.3, alpha=0.0, d=0.0, theta=0.0,
                                      mass=1.0, com=[0, 0, 0], inertia=[0.01] * 3)], name="tilted")
    rng = np.random.default_rng(7)
    for model in (preset, tilted):
        assert ik_solutions.planar_arm(model) is not None
        for q in rng.uniform(-math.pi, math.pi, (300, 2)):
            T = model.fk(q)
            full = model.ik_all(T)
            assert full.complete and full.method == "closed form, two parallel axes"
            assert min(np.max(np.abs(wrapped(s - q))) for s in full.q) < 1e-9
            both = model.ik_all(T[:3, 3], q_near=q)
            assert len(both) == 2 and {lab[1] for lab in both.labels} == {"up", "down"}
            np.testing.assert_allclose(wrapped(both.q[0] - q), 0.0, atol=1e-9)
            np.testing.assert_allclose(model.fk(both.q)[:, :3, 3],
                                       np.broadcast_to(T[:3, 3], (2, 3)), atol=1e-12)
    # labels: with the tool to the right of the base, elbow 'up' is above the base-tool line
    sols = preset.ik_all(np.array([0.3, 0.2, 0.0]))
    for q, (_, elbow, _) in zip(sols.q, sols.labels):
        above = 0.3 * math.sin(q[0]) - 0.2 * math.cos(q[0]) > 0.0   # link 1 left of the line
        assert (elbow == "up") == above, (q, elbow)


def test_two_link_refusals_are_said():
    arm = RobotModel.preset("two_link")
    assert str(arm.ik_all(np.array([3.0, 0.2, 0.0]))) == (
        "0 solutions (closed form, two parallel axes): the position is out of reach")
    assert str(arm.ik_all(np.array([0.3, 0.2, 0.1]))) == (
        "0 solutions (closed form, two parallel axes): the position is off the arm's plane")
    T = arm.fk([0.2, 0.4])
    T[:3, :3] = np.eye(3)
    assert str(arm.ik_all(T)) == ("0 solutions (closed form, two parallel axes): no branch has "
                                  "the pose's orientation (a two-link arm fixes q1 + q2 by it)")
    with pytest.raises(ParameterError) as err:
        arm.ik_all(np.zeros(2))
    assert str(err.value) == ("ik_all: pose must be a 4x4 matrix (or a position (3,) for a "
                              "two-link arm with parallel axes), got shape (2,)")
