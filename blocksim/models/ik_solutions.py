"""Every inverse-kinematics solution of a pose: in closed form for six-axis arms with a spherical
wrist (`arm_geometry`), by a numerical search from several starts for other arms.

The closed form (Pieper's decoupling, Siciliano et al., Robotics: Modelling, Planning and Control,
2009, sec. 2.12; Craig, Introduction to Robotics, 3rd ed., 2005, ch. 4) works on the joint screws
of the zero pose (product of exponentials: T(q) = e1(q1) ... e6(q6) T(0)) and the Paden-Kahan
subproblems (`subproblems`): the target pose fixes the wrist centre w; joint 1 then follows from
the one quantity that joints 2 and 3 cannot change (the component of the wrist centre along
their common axis direction; two branches, shoulder front and back), joint 3 from the distance of
the wrist centre from axis 2 (two branches, elbow up and down), joint 2 from the direction to it,
and joints 4 to 6 from the remaining rotation (two branches, wrist noflip and flip): up to eight
solutions. Each is refined by Newton steps on the pose error (from about 1e-15 to the last bit)
and kept when it reproduces the pose.

Joint limits: a revolute joint's angle may be shifted by whole turns (2 pi): each solution takes,
joint by joint, the equivalent angle within [q_lower, q_upper] ([-pi, pi] on joints without
limits) nearest q_near, and is dropped when a joint has none. At a singular pose a free angle
(joint 1 with the wrist centre on the shoulder singularity line, joint 4 with axes 4 and 6 in
line) takes q_near's value, and coinciding branches are returned once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import BlocksimError, ParameterError
from . import arm_geometry as ag
from . import kinematics as kin
from . import subproblems as sp

__all__ = ["IKSolutions", "ik_all", "within_limits"]

#: Solutions closer than this (rad, compared modulo 2 pi; m on prismatic joints) are one.
SAME = 1e-9
#: A solution is kept when its tool pose matches the target to this (m, and rotation entries).
REPRODUCES = 1e-9
#: Numerical search: starts tried, and the pose error (m, rad) a start must reach.
STARTS = 24
SEARCH_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class IKSolutions:
    """The inverse-kinematics solutions of one pose.

    q: (k, n) joint vectors (rad; m on prismatic joints), nearest q_near first; labels: k
    (shoulder, elbow, wrist) tuples ('front'/'back', 'up'/'down', 'noflip'/'flip';
    `arm_geometry`), or None each from the numerical search; complete: True when the list is
    every solution within the limits (closed form), False when it may be incomplete (numerical);
    method and note: how they were found, and why the list is short or empty when it is.
    """

    q: np.ndarray
    labels: tuple
    complete: bool
    method: str
    note: str = ""

    def __len__(self):
        return self.q.shape[0]

    def __str__(self):
        head = f"{len(self)} solution{'s' if len(self) != 1 else ''} ({self.method}"
        head += ")" if self.complete else "; the list may be incomplete)"
        return head + (f": {self.note}" if self.note else "")


def _limits(model):
    """(lower, upper) per joint: the model's, [-pi, pi] on revolute joints without limits."""
    rev = np.array([t == "revolute" for t in model.joint_types])
    lo = np.where(rev & ~np.isfinite(model.q_lower), -math.pi, model.q_lower)
    hi = np.where(rev & ~np.isfinite(model.q_upper), math.pi, model.q_upper)
    return lo, hi, rev


def within_limits(model, q, q_near, slack=1e-12):
    """q with each revolute angle moved by whole turns to the equivalent within the limits nearest
    q_near (rad); None when a joint has no equivalent (prismatic joints are checked as they are)."""
    lo, hi, rev = _limits(model)
    out = np.array(q, dtype=float)
    for i in range(model.n):
        if rev[i]:
            two = 2.0 * math.pi
            k_lo = math.ceil((lo[i] - slack - out[i]) / two)
            k_hi = math.floor((hi[i] + slack - out[i]) / two)
            if k_hi < k_lo:
                return None
            k = round((q_near[i] - out[i]) / two)
            out[i] += two * min(max(k, k_lo), k_hi)
        elif not lo[i] - slack <= out[i] <= hi[i] + slack:
            return None
    return out


def _wrapped_gap(model, a, b):
    """Largest joint difference between a and b, revolute joints compared modulo 2 pi."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    _, _, rev = _limits(model)
    d = np.where(rev, (d + math.pi) % (2.0 * math.pi) - math.pi, d)
    return float(np.max(np.abs(d)))


def pose_error(model, pose, q):
    """The 6-vector [p_target - p; rotation error] (m, rad) of the tool at q, the rotation part
    half the vee of R_target R^T - (R_target R^T)^T (the small-angle rotation vector)."""
    T = model.fk(q)
    e = np.empty(6)
    e[:3] = pose[:3, 3] - T[:3, 3]
    Re = pose[:3, :3] @ T[:3, :3].T
    e[3:] = 0.5 * np.array([Re[2, 1] - Re[1, 2], Re[0, 2] - Re[2, 0], Re[1, 0] - Re[0, 1]])
    return e


def _refine(model, pose, q, steps=3):
    """q after up to `steps` Newton steps on the pose error (least squares); each step kept only
    when it lowers the error."""
    e = pose_error(model, pose, q)
    err = float(np.linalg.norm(e))
    for _ in range(steps):
        if err < 1e-15:
            break
        dq = np.linalg.lstsq(model.jacobian(q), e, rcond=None)[0]
        e_new = pose_error(model, pose, q + dq)
        err_new = float(np.linalg.norm(e_new))
        if err_new >= err:
            break
        q, e, err = q + dq, e_new, err_new
    return q


def _reproduces(model, pose, q):
    return float(np.max(np.abs(model.fk(q) - pose))) <= REPRODUCES


def _closed_form_branches(arm, pose, q_near):
    """The raw joint vectors of every branch (up to eight; free angles from q_near), no limits."""
    w, p = arm.axes, arm.points
    T0 = arm.tool0
    R0 = T0[:3, :3]
    Rt, pt = pose[:3, :3], pose[:3, 3]
    centre = Rt @ R0.T @ (arm.centre - T0[:3, 3]) + pt      # the wrist centre of the target
    u = w[1]
    # joint 1: u . R1^T (centre - o1) = u . (centre0 - o1), i.e. (R1 u) . (centre - o1) = level
    q1s = sp.rotation_to_level(w[0], u, centre - p[0], float(u @ (arm.centre - p[0])))
    if q1s is None:
        q1s = [float(q_near[0])]                            # shoulder singular: any q1
    out = []
    for q1 in q1s:
        R1 = sp.rotation(w[0], q1)
        target = R1.T @ (centre - p[0]) + p[0]              # the wrist centre before joint 1
        # joint 3: the wrist centre's distance from o2 is joint 2's invariant
        delta = float(np.linalg.norm(target - p[1]))
        for q3 in sp.rotation_to_distance(w[2], arm.centre - p[2], p[1] - p[2], delta):
            R3 = sp.rotation(w[2], q3)
            moved = R3 @ (arm.centre - p[2]) + p[2]
            q2 = sp.rotation_angle(w[1], moved - p[1], target - p[1])
            if q2 is None:
                continue
            R123 = R1 @ sp.rotation(w[1], q2) @ R3
            Rw = R123.T @ Rt @ R0.T                          # = R4 R5 R6
            for q4, q5 in sp.two_rotations(w[3], w[4], w[5], Rw @ w[5]):
                if q4 is None:
                    q4 = float(q_near[3])                   # wrist singular: any q4
                    R4 = sp.rotation(w[3], q4)
                    q5 = sp.rotation_angle(w[4], w[5], R4.T @ Rw @ w[5])
                    q5 = 0.0 if q5 is None else q5
                R45 = sp.rotation(w[3], q4) @ sp.rotation(w[4], q5)
                x = sp.cross(w[5], w[4])                    # a direction across axis 6
                q6 = sp.rotation_angle(w[5], x, R45.T @ Rw @ x)
                out.append(np.array([q1, q2, q3, q4, q5, 0.0 if q6 is None else q6]))
    return out


def _closed_form(model, arm, pose, q_near):
    raw = _closed_form_branches(arm, pose, q_near)
    if not raw:
        return IKSolutions(np.empty((0, 6)), (), True, "closed form, spherical wrist",
                           "the pose is out of reach")
    raw = [_refine(model, pose, q) for q in raw]
    found, labels, note = _kept(model, [q for q in raw if _reproduces(model, pose, q)], len(raw),
                                q_near, lambda q: ag.labels(arm, *ag.posture(arm, model, q)))
    return _sorted(found, labels, q_near, True, "closed form, spherical wrist", note, model.n)


def _kept(model, branches, count, q_near, label_of):
    """(solutions, labels, note) of the branches that reproduce the pose: each moved within the
    joint limits nearest q_near, dropped when it has no such angles, kept once; the note says
    how many of all `count` branches lie outside the limits."""
    found, labels, outside = [], [], 0
    for q in branches:
        ql = within_limits(model, q, q_near)
        if ql is None:
            outside += 1
        elif not any(_wrapped_gap(model, ql, f) < SAME for f in found):
            found.append(ql)
            labels.append(label_of(ql))
    note = ""
    if outside:
        note = (f"{outside} of the {count} branches lie outside the joint limits"
                if found else f"all {count} branches lie outside the joint limits")
    return found, labels, note


def planar_arm(model):
    """(axes (2, 3), points (2, 3), tool position (3,)) at the zero pose when the model is a
    two-link arm with parallel revolute axes and its tool point off axis 2, else None."""
    if model.n != 2 or any(t != "revolute" for t in model.joint_types):
        return None
    w, p = ag.zero_axes(model)
    tool = model.fk(np.zeros(2))[:3, 3]
    if (np.linalg.norm(sp.cross(w[0], w[1])) > ag.ANGLE_TOL
            or np.linalg.norm(sp.cross(w[1], tool - p[1])) < ag.LENGTH_TOL
            or np.linalg.norm(sp.cross(w[0], p[1] - p[0])) < ag.LENGTH_TOL):
        return None
    return w, p, tool


def planar_elbow(model, axes, points, q):
    """'up' when the elbow (axis 2) lies on the side of the line from axis 1 to the tool point
    that turning about axis 1 by +90 degrees points to (seen along axis 1: counterclockwise, for
    a planar arm in the x-y plane with the tool to the right, above the line), else 'down'."""
    P = np.empty((1, 2, 12))
    kin.body_poses_into(model.arrays[0], model.arrays[1], np.asarray(q, dtype=float)[None, :], P)
    elbow = P[0, 1, 9:12]
    tip = model.fk(q)[:3, 3]
    side = float(axes[0] @ sp.cross(tip - points[0], elbow - points[0]))
    return "up" if side > 0.0 else "down"


def _planar(model, planar, pose, q_near, position_only):
    """Both elbow branches of a two-link arm with parallel axes (module docstring)."""
    w, p, tool = planar
    target = pose[:3, 3]
    method = "closed form, two parallel axes"
    if abs(float(w[0] @ (target - tool))) > REPRODUCES:
        return IKSolutions(np.empty((0, 2)), (), True, method,
                           "the position is off the arm's plane")
    delta = float(np.linalg.norm(target - p[0]))
    q2s = sp.rotation_to_distance(w[1], tool - p[1], p[0] - p[1], delta)
    if not q2s:
        return IKSolutions(np.empty((0, 2)), (), True, method, "the position is out of reach")
    reached = []
    for q2 in q2s:
        moved = sp.rotation(w[1], q2) @ (tool - p[1]) + p[1]
        q1 = sp.rotation_angle(w[0], moved - p[0], target - p[0])
        q = np.array([float(q_near[0]) if q1 is None else q1, q2])   # folded onto axis 1: any q1
        T = model.fk(q)
        if float(np.max(np.abs(T[:3, 3] - target if position_only else T - pose))) <= REPRODUCES:
            reached.append(q)
    found, labels, note = _kept(model, reached, len(q2s), q_near,
                                lambda q: (None, planar_elbow(model, w, p, q), None))
    if not found and not note:
        note = "no branch has the pose's orientation (a two-link arm fixes q1 + q2 by it)"
    return _sorted(found, labels, q_near, True, method, note, 2)


def _sorted(found, labels, q_near, complete, method, note, n):
    order = sorted(range(len(found)), key=lambda i: float(np.linalg.norm(found[i] - q_near)))
    q = np.array([found[i] for i in order]).reshape(len(found), n)
    q.setflags(write=False)
    return IKSolutions(q, tuple(labels[i] for i in order), complete, method, note)


def _starts(model, q_near, count):
    """Deterministic starts: q_near, the middle of the limits, then points spread over the
    limits (a fixed random sequence; +-1 m on prismatic joints without limits)."""
    lo, hi, _ = _limits(model)
    lo = np.where(np.isfinite(lo), lo, -1.0)
    hi = np.where(np.isfinite(hi), hi, 1.0)
    rng = np.random.default_rng(20230)
    yield q_near
    yield 0.5 * (lo + hi)
    for _ in range(count - 2):
        yield lo + (hi - lo) * rng.random(model.n)


def _numerical(model, pose, q_near, starts):
    found = []
    for q0 in _starts(model, q_near, starts):
        try:
            q = model.ik(pose, q0=q0, tol=SEARCH_TOL)
        except BlocksimError:                               # IKError: this start failed
            continue
        q = _refine(model, pose, q)
        if not _reproduces(model, pose, q):
            continue
        ql = within_limits(model, q, q_near)
        if ql is None or any(_wrapped_gap(model, ql, f) < 1e-6 for f in found):
            continue
        found.append(ql)
    note = "" if found else "no start reached the pose within the joint limits"
    return _sorted(found, [None] * len(found), q_near, False,
                   f"numerical search from {starts} starts", note, model.n)


def ik_all(model, pose, q_near=None, starts=STARTS):
    """Every solution of the tool pose `pose` (4x4, base frame, m) within the joint limits, as an
    `IKSolutions`: in closed form when the model has a spherical wrist (`arm_geometry`) or is a
    two-link arm with parallel axes (`planar_arm`; then `pose` may be a position (3,)), else
    from a numerical search of `starts` starts (possibly incomplete). q_near (n,) orders them
    and picks among angles a whole turn apart (default: the zero pose)."""
    pose = np.asarray(pose, dtype=float)
    planar = planar_arm(model)
    position_only = planar is not None and pose.shape == (3,)
    if position_only:
        pose = np.vstack([np.hstack([np.eye(3), pose[:, None]]), [0.0, 0.0, 0.0, 1.0]])
    if pose.shape != (4, 4):
        also = " (or a position (3,) for a two-link arm with parallel axes)" if planar else ""
        raise ParameterError(f"ik_all: pose must be a 4x4 matrix{also}, got shape {pose.shape}")
    if not np.all(np.isfinite(pose)):
        raise ParameterError("ik_all: pose must be finite (no NaN or infinity)")
    q_near = np.zeros(model.n) if q_near is None else np.asarray(q_near, dtype=float)
    if q_near.shape != (model.n,):
        raise ParameterError(f"ik_all: q_near must have shape ({model.n},), got {q_near.shape}")
    if not np.all(np.isfinite(q_near)):
        raise ParameterError("ik_all: q_near must be finite (no NaN or infinity)")
    arm = model.wrist_arm
    if arm is not None:
        return _closed_form(model, arm, pose, q_near)
    if planar is not None:
        return _planar(model, planar, pose, q_near, position_only)
    return _numerical(model, pose, q_near, int(starts))
