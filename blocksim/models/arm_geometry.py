"""The shape of a six-axis arm with a spherical wrist, read from its kinematics: the joint axes at
the zero pose, the wrist centre, and the posture of a joint vector (which side the shoulder, the
elbow and the wrist are on, and how far each is from its singularity).

The shape (Siciliano, Sciavicco, Villani & Oriolo, Robotics: Modelling, Planning and Control,
2009, sec. 2.12 and 3.3; the KR6-like arm, the Puma 560 and most industrial six-axis arms): six
revolute joints; axes 4, 5 and 6 meet in one point, the wrist centre, with axis 5 parallel to
neither of the others; axes 2 and 3 are parallel (the arm's plane), axis 2 is not parallel to
axis 1, and the wrist centre is not on axis 3. It is detected from the axes, whatever the robot's
name or description (DH table of either convention, or URDF).

Conventions: base frame, m, rad. z_i is joint i's axis (in the model's direction) at the current
joint vector, o_i a point on it; u = z_2 (the direction of the arm's plane normal), w the wrist
centre. Posture measures of a joint vector q:
- reach (m, signed): (u x z_1) . (w - o_1) / |u x z_1|, the wrist centre's distance from the
  plane through axis 1 parallel to u. 0 is the shoulder singularity (the wrist centre on that
  plane; for an arm without shoulder offset, on axis 1).
- elbow (signed sine): u . ((w - e) x (s - e)) / (|w - e| |s - e|), with s and e the points of
  axes 2 and 3 in the plane through w normal to u: the sine of the angle at the elbow between
  the line to the wrist centre and the line to the shoulder, 0 when shoulder, elbow and wrist
  centre are in line (arm stretched or folded: the elbow singularity).
- wrist (signed sine): (z_4 x z_6) . z_5, 0 when axes 4 and 6 are in line (the wrist
  singularity); its size is the sine of the angle between them for a wrist of perpendicular axes.
Labels of a posture: shoulder 'front' when the reach has the sign it has at the zero pose (+ when
it is 0 there), else 'back'; elbow 'up' when reach x elbow > 0 (the elbow on the side of the
shoulder-wrist line that axis 1 points to, with the arm reaching out on its own side), else
'down'; wrist 'noflip' when the wrist bends the positive way about axis 5 (wrist > 0), else
'flip'. The two branches of each of the three closed-form steps carry opposite labels.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kinematics as kin
from .subproblems import cross

__all__ = ["WristArm", "wrist_arm", "posture", "labels", "zero_axes"]

#: Geometric tolerances of the shape test: m for distances, rad (a sine) for angles.
LENGTH_TOL = 1e-9
ANGLE_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class WristArm:
    """A six-axis arm with a spherical wrist and parallel axes 2 and 3, at its zero pose."""

    axes: np.ndarray       # (6, 3) unit joint axes at q = 0, base frame
    points: np.ndarray     # (6, 3) a point on each axis (the joint frame origin), m
    centre: np.ndarray     # (3,) the wrist centre at q = 0, m
    centre_in_4: np.ndarray  # (3,) the wrist centre in body frame 4 (it moves with it), m
    tool0: np.ndarray      # (4, 4) the tool pose at q = 0
    front: float           # +1 or -1: the sign of the reach at q = 0 ('front')


def _frames(model, q):
    """(axes (n, 3), origins (n, 3), body poses (n, 12)) of the joints at one joint vector q."""
    jt, xt = model.arrays[0], model.arrays[1]
    P = np.empty((1, model.n, 12))
    kin.body_poses_into(jt, xt, np.ascontiguousarray(np.asarray(q, dtype=float)[None, :]), P)
    P = P[0]
    return P[:, [2, 5, 8]], P[:, 9:12], P


def zero_axes(model):
    """The joint axes (n, 3) and a point on each (n, 3) at the zero pose, base frame."""
    axes, points, _ = _frames(model, np.zeros(model.n))
    return axes, points


def _line_gap(p1, w1, p2, w2):
    """(distance between two lines, point on line 1 nearest line 2); lines not parallel."""
    n = cross(w1, w2)
    nn = float(n @ n)
    d = p2 - p1
    t1 = float(cross(d, w2) @ n) / nn
    return abs(float(d @ n)) / np.sqrt(nn), p1 + t1 * w1


def _distance_to_line(x, p, w):
    d = x - p
    return float(np.linalg.norm(d - w * float(w @ d)))


def wrist_arm(model):
    """The model's `WristArm`, or None when its kinematics are not of that shape (module
    docstring)."""
    if model.n != 6 or any(t != "revolute" for t in model.joint_types):
        return None
    w, p = zero_axes(model)
    for a, b in ((3, 4), (4, 5), (0, 1)):
        if np.linalg.norm(cross(w[a], w[b])) < ANGLE_TOL:
            return None
    gap, centre = _line_gap(p[3], w[3], p[4], w[4])
    if gap > LENGTH_TOL or _distance_to_line(centre, p[5], w[5]) > LENGTH_TOL:
        return None
    if np.linalg.norm(cross(w[1], w[2])) > ANGLE_TOL:
        return None
    if (_distance_to_line(p[2], p[1], w[1]) < LENGTH_TOL
            or _distance_to_line(centre, p[2], w[2]) < LENGTH_TOL):
        return None
    _, _, P = _frames(model, np.zeros(6))
    R4 = P[3, :9].reshape(3, 3)
    centre_in_4 = R4.T @ (centre - P[3, 9:])
    tool0 = model.fk(np.zeros(6))
    r0 = _reach(w[0], w[1], p[0], centre)
    arm = WristArm(axes=w, points=p, centre=centre, centre_in_4=centre_in_4, tool0=tool0,
                   front=-1.0 if r0 < -LENGTH_TOL else 1.0)
    for a in (arm.axes, arm.points, arm.centre, arm.centre_in_4, arm.tool0):
        a.setflags(write=False)
    return arm


def _reach(z1, u, o1, w):
    r = cross(u, z1)
    return float(r @ (w - o1)) / float(np.linalg.norm(r))


def posture(arm, model, q):
    """(reach (m), elbow, wrist) of joint vector q (module docstring), signed."""
    z, o, P = _frames(model, q)
    w = P[3, :9].reshape(3, 3) @ arm.centre_in_4 + P[3, 9:]
    u = z[1]
    s = o[1] + u * float(u @ (w - o[1]))
    e = o[2] + u * float(u @ (w - o[2]))
    we, se = w - e, s - e
    elbow = float(u @ cross(we, se)) / (float(np.linalg.norm(we)) * float(np.linalg.norm(se))
                                           or 1.0)
    wrist = float(cross(z[3], z[5]) @ z[4])
    return _reach(z[0], u, o[0], w), elbow, wrist


def labels(arm, reach, elbow, wrist):
    """(shoulder, elbow, wrist) labels of a posture (module docstring)."""
    return ("front" if reach * arm.front >= 0.0 else "back",
            "up" if reach * elbow > 0.0 else "down",
            "noflip" if wrist > 0.0 else "flip")
