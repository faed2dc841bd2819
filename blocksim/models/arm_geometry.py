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

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from . import kinematics as kin
from .subproblems import cross

__all__ = ["WristArm", "wrist_arm", "posture", "posture_of", "postures_into", "labels", "zero_axes"]

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
    r0 = posture_of(model.arrays[0], model.arrays[1], centre_in_4, np.zeros((1, 6)), 0,
                    np.empty((8, 12)))[0]
    arm = WristArm(axes=w, points=p, centre=centre, centre_in_4=centre_in_4, tool0=tool0,
                   front=-1.0 if r0 < -LENGTH_TOL else 1.0)
    for a in (arm.axes, arm.points, arm.centre, arm.centre_in_4, arm.tool0):
        a.setflags(write=False)
    return arm


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _axis(P):
    return (P[2], P[5], P[8])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _origin(P):
    return (P[9], P[10], P[11])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _minus(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _along(o, u, x):
    """The point of the line through o along unit u nearest x."""
    t = _dot(u, _minus(x, o))
    return (o[0] + t * u[0], o[1] + t * u[1], o[2] + t * u[2])


@njit(cache=True, error_model="numpy")
def posture_of(jtype, xtree, centre4, q, b, poses):
    """(reach (m), elbow, wrist) of q[b], signed (module docstring); centre4 (3,) the wrist
    centre in body frame 4, poses (n + 2, 12) scratch."""
    kin.chain_body_poses(jtype, xtree, q, b, poses)
    P4 = poses[3]
    w = (P4[0] * centre4[0] + P4[1] * centre4[1] + P4[2] * centre4[2] + P4[9],
         P4[3] * centre4[0] + P4[4] * centre4[1] + P4[5] * centre4[2] + P4[10],
         P4[6] * centre4[0] + P4[7] * centre4[1] + P4[8] * centre4[2] + P4[11])
    z1, u = _axis(poses[0]), _axis(poses[1])
    r = _cross(u, z1)
    reach = _dot(r, _minus(w, _origin(poses[0]))) / math.sqrt(_dot(r, r))
    s = _along(_origin(poses[1]), u, w)
    e = _along(_origin(poses[2]), u, w)
    we, se = _minus(w, e), _minus(s, e)
    size = math.sqrt(_dot(we, we) * _dot(se, se))
    elbow = _dot(u, _cross(we, se)) / size if size > 0.0 else 0.0
    wrist = _dot(_cross(_axis(poses[3]), _axis(poses[5])), _axis(poses[4]))
    return reach, elbow, wrist


@njit(cache=True, error_model="numpy")
def postures_into(jtype, xtree, centre4, q, out):
    """out[k] = (reach, elbow, wrist) of q[k] (`posture_of`)."""
    poses = np.empty((jtype.shape[0] + 2, 12))
    for k in range(q.shape[0]):
        out[k, 0], out[k, 1], out[k, 2] = posture_of(jtype, xtree, centre4, q, k, poses)


def posture(arm, model, q):
    """(reach (m), elbow, wrist) of one joint vector q (module docstring), signed."""
    out = np.empty((1, 3))
    postures_into(model.arrays[0], model.arrays[1], arm.centre_in_4,
                  np.ascontiguousarray(np.asarray(q, dtype=float).reshape(1, model.n)), out)
    return float(out[0, 0]), float(out[0, 1]), float(out[0, 2])


def labels(arm, reach, elbow, wrist):
    """(shoulder, elbow, wrist) labels of a posture (module docstring)."""
    return ("front" if reach * arm.front >= 0.0 else "back",
            "up" if reach * elbow > 0.0 else "down",
            "noflip" if wrist > 0.0 else "flip")
