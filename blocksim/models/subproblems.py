"""The Paden-Kahan subproblems: the angles of rotations about known axes that carry known vectors
onto known vectors, in closed form (Murray, Li & Sastry, A Mathematical Introduction to Robotic
Manipulation, 1994, sec. 3.2.2). The closed-form inverse kinematics (`ik_solutions`) is built from
them.

Conventions: axes are unit vectors w (3,); the vectors u, v are taken from a point on the axis
(for points p, q on an axis through r: u = p - r, v = q - r), in any common unit (m). Angles in
rad, positive about w by the right-hand rule. A subproblem with no solution returns an empty list;
a solution that is free (the vectors lie on the axis) is returned as None, for the caller to fix.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["cross", "rotation", "rotation_angle", "two_rotations", "rotation_to_distance",
           "rotation_to_level"]

#: Below this length (in the unit of the vectors) a projection counts as zero: the angle is free.
FREE = 1e-12


def cross(a, b):
    """a x b of two 3-vectors (np.cross costs some ten times more on vectors this short)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def rotation(w, angle):
    """The rotation matrix turning by `angle` (rad) about the unit axis w (Rodrigues)."""
    x, y, z = w
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _across(w, u):
    """The part of u perpendicular to w."""
    return u - w * float(w @ u)


def rotation_angle(w, u, v):
    """Subproblem 1: the angle turning u onto v about w (the parts of u and v across w are
    matched in direction; their lengths and along-axis parts are the caller's to agree).
    None when either part across the axis is shorter than FREE (any angle does)."""
    a = _across(w, u)
    b = _across(w, v)
    if np.linalg.norm(a) < FREE or np.linalg.norm(b) < FREE:
        return None
    return math.atan2(float(w @ cross(a, b)), float(a @ b))


def two_rotations(w1, w2, u, v):
    """Subproblem 2: the pairs (angle1, angle2) with rotation(w1, angle1) rotation(w2, angle2)
    u = v, for axes w1, w2 through one point that are not parallel; none, one (tangent) or two
    pairs. angle1 is None where the intermediate vector lies on w1 (free)."""
    c = float(w1 @ w2)
    den = c * c - 1.0
    alpha = (c * float(w2 @ u) - float(w1 @ v)) / den
    beta = (c * float(w1 @ v) - float(w2 @ u)) / den
    n = cross(w1, w2)
    n2 = float(n @ n)
    g2 = (float(u @ u) - alpha * alpha - beta * beta - 2.0 * alpha * beta * c) / n2
    scale = max(float(u @ u), FREE)
    if g2 < -1e-12 * scale:
        return []
    gammas = (0.0,) if g2 <= 1e-24 * scale else (math.sqrt(g2), -math.sqrt(g2))
    out = []
    for gamma in gammas:
        z = alpha * w1 + beta * w2 + gamma * n
        out.append((rotation_angle(w1, z, v), rotation_angle(w2, u, z)))
    return out


def rotation_to_distance(w, u, v, delta):
    """Subproblem 3: the angles with |rotation(w, angle) u - v| = delta; none, one (tangent) or
    two. u and v must have parts across w (not checked here: the callers' geometry ensures it)."""
    a = _across(w, u)
    b = _across(w, v)
    along = float(w @ (u - v))
    d2 = delta * delta - along * along
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    theta0 = math.atan2(float(w @ cross(a, b)), float(a @ b))
    c = (na * na + nb * nb - d2) / (2.0 * na * nb)
    if abs(c) > 1.0 + 1e-12:
        return []
    if abs(c) >= 1.0:
        return [theta0 if c > 0 else theta0 + math.pi]
    phi = math.acos(c)
    return [theta0 + phi, theta0 - phi]


def rotation_to_level(w, u, n, level):
    """The angles with n . rotation(w, angle) u = level, for a vector n: the equation
    A cos + B sin = C. Returns a list (none, one tangent, or two angles), or None when the left
    side does not depend on the angle (both A and B below FREE): then any angle does if level
    matches, which the caller checks."""
    ua = w * float(w @ u)
    ux = u - ua
    A = float(n @ ux)
    B = float(n @ cross(w, ux))
    C = level - float(n @ ua)
    rho = math.hypot(A, B)
    if rho < FREE:
        return None
    c = C / rho
    if abs(c) > 1.0 + 1e-12:
        return []
    phi0 = math.atan2(B, A)
    if abs(c) >= 1.0:
        return [phi0 if c > 0 else phi0 + math.pi]
    phi = math.acos(c)
    return [phi0 + phi, phi0 - phi]
