"""Contact and interaction control physics: a plane wall as a one-sided spring-damper, the pose
error of Cartesian impedance control, and the admittance filter. Numba kernels on scalars and
rows, shared by the blocks of `blocks.contact`.

Conventions
- Frames: the robot's base frame. A pose is the blocks' 12 numbers (position p (m), then the
  rotation R row-major); a twist is [v (m/s); w (rad/s)], the tool origin's linear and the tool's
  angular velocity; a wrench is [f (N); m (N m)] exerted by the environment on the tool, moment
  about the tool origin (the Manipulator's `f_ext`).
- The wall is the plane through `point` with unit outward normal n (pointing from the wall into
  free space). Penetration delta = (point - p) . n (m, > 0 inside the wall), its rate
  delta' = -v . n (m/s). A ball obstacle (centre c, radius r): delta = r - |p - c|, n = (p - c) /
  |p - c|, the same law.
- Wall force law (Kelvin-Voigt, clipped at zero): F = max(0, k delta + d delta') for delta > 0,
  0 otherwise (N, along +n, on the tool at its origin). A wall only pushes: the clip keeps the
  damper from pulling the tool back on separation (pure Kelvin-Voigt pulls there), so the force
  never drops below zero. On touching with approach speed v_a the force jumps from 0 to d v_a
  (Kelvin-Voigt's known impact term). Each of the three regions (free, pressing, clipped) is a
  held mode and every switch a located zero crossing (`wall_witness`).
"""
from __future__ import annotations

import math

from numba import njit

from .kinematics import rotation_vector_into

#: The wall's modes: no contact, pressing (F = k delta + d delta' > 0), in contact with the force
#: clipped at zero (the damper would pull).
WALL_FREE, WALL_PRESSING, WALL_CLIPPED = 0.0, 1.0, 2.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def plane_contact(point, normal, pose, twist):
    """(delta, delta', n0, n1, n2): the penetration (m) of the tool origin (pose[0:3]) into the
    wall through `point` with unit outward normal n, its rate (m/s) from the tool origin's linear
    velocity twist[0:3], and n, the direction of the wall's force on the tool."""
    delta = 0.0
    rate = 0.0
    for j in range(3):
        delta += (point[j] - pose[j]) * normal[j]
        rate -= twist[j] * normal[j]
    return delta, rate, normal[0], normal[1], normal[2]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def sphere_contact(centre, radius, pose, twist):
    """(delta, delta', n0, n1, n2) for a ball of `radius` (m) about `centre`: delta = radius -
    |p - centre|, n = (p - centre) / |p - centre| (the ball's outward normal at the point nearest
    the tool origin; +z when the tool origin is at the centre), delta' = -v . n."""
    d0 = pose[0] - centre[0]
    d1 = pose[1] - centre[1]
    d2 = pose[2] - centre[2]
    r = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if r > 0.0:
        n0, n1, n2 = d0 / r, d1 / r, d2 / r
    else:
        n0, n1, n2 = 0.0, 0.0, 1.0
    rate = -(twist[0] * n0 + twist[1] * n1 + twist[2] * n2)
    return radius - r, rate, n0, n1, n2


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def wall_mode(k, d, delta, rate):
    """The wall's mode at penetration delta (m) and rate (m/s): free outside the wall (delta <= 0),
    else pressing where the spring-damper pushes (k delta + d delta' > 0), else clipped."""
    if delta <= 0.0:
        return WALL_FREE
    return WALL_PRESSING if k * delta + d * rate > 0.0 else WALL_CLIPPED


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def wall_force(mode, k, d, delta, rate):
    """The wall's normal force (N, >= 0 along +n) in the held mode: k delta + d delta' when
    pressing, 0 otherwise."""
    return k * delta + d * rate if mode == WALL_PRESSING else 0.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def wall_witness(mode, k, d, delta, rate):
    """The wall's crossing function in the held mode: it has one sign while the mode holds and
    changes it exactly where the mode ends (so a switch fires once). Free: delta (rises
    through 0 on contact); pressing: the force k delta + d delta' (falls through 0 where the
    damper would start to pull); clipped: min(delta, -(k delta + d delta')), which falls
    through 0 on separation (delta) or where the force turns positive again."""
    if mode == WALL_FREE:
        return delta
    force = k * delta + d * rate
    if mode == WALL_PRESSING:
        return force
    return min(delta, -force)


@njit(cache=True, error_model="numpy")
def pose_error(pose_d, pose, scratch, e):
    """e (6,) = [p_d - p (m); rotation vector of R_d R^T (rad)]: the tool's position error and
    its orientation error (the rotation from the tool's to the desired orientation, in base
    coordinates) for poses of 12 (p, then R row-major). scratch: (3, 3) for R_d R^T."""
    for j in range(3):
        e[j] = pose_d[j] - pose[j]
    for r in range(3):
        for c in range(3):
            s = 0.0
            for m in range(3):
                s += pose_d[3 + 3 * r + m] * pose[3 + 3 * c + m]
            scratch[r, c] = s
    rotation_vector_into(scratch, e[3:6])
