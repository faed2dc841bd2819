"""Kinematics and energy of a serial chain: body poses, the tool pose, the geometric Jacobian, the
kinetic and potential energy. Numba kernels, in two forms: over flat model arrays (`*_into`, for
`RobotModel`) and per member of a `model_data` Model (for the blocks).

Conventions
- Frames: every result is in the robot's base frame. Body frame i is joint i's frame after its
  motion (`rigid_body_kernels`); the tool frame is fixed in the last body frame.
- A pose is 12 numbers: R row-major (R[r, c] at 3 r + c, the columns are the frame's axes in base
  coordinates), then the origin p (m). The blocks' `pose` output is the other order: p (3), then
  R (9) (`tool_pose`).
- The geometric Jacobian J (6 x n) of the tool origin maps qd to [v (m/s); w (rad/s)], the tool
  origin's linear and the tool's angular velocity in base coordinates. Column i is, with z_i joint
  i's axis and o_i its origin: revolute [z_i x (p_tool - o_i); z_i], prismatic [z_i; 0].
- Energy (J): kinetic T = qd^T M(q) qd / 2 (reflected rotor inertia included when on), potential
  V = -sum_i gravity . (m_i p_i + R_i h_i), with (R_i, p_i) body i's pose and h_i = m_i c_i its
  first moment in body coordinates: zero with every centre of mass at the base origin.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import rigid_body_kernels as rbk
from . import model_data as md


@njit(cache=True, error_model="numpy")
def body_poses_into(jtype, xtree, q, out):
    """out[k, i] = pose of body frame i in the base frame, R (9, row-major) then p (3, m)."""
    nb = q.shape[0]
    n = q.shape[1]
    X = np.empty(12)
    ident = np.empty(12)
    rbk._set_identity(ident)
    for k in range(nb):
        for i in range(n):
            rbk._joint_transform(jtype[i], xtree[i], q[k, i], X)
            if i == 0:
                rbk._compose(ident, X, out[k, 0])
            else:
                rbk._compose(out[k, i - 1], X, out[k, i])


@njit(cache=True, error_model="numpy")
def chain_pose(jtype, xtree, tool, q, b, out, o):
    """out[o:o+12] = tool position (3, m) then rotation (9, row-major) in the base frame at
    q[b, :n]: the product of the joint transforms (rigid_body_kernels._joint_transform and
    _compose, operation for operation) kept in registers, then the tool frame."""
    n = jtype.shape[0]
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
                                                        1.0, 0.0, 0.0, 0.0)
    for i in range(n + 1):
        x = xtree[i] if i < n else tool   # joint i's placement, then (i = n) the tool frame
        r00, r01, r02 = x[0], x[1], x[2]
        r10, r11, r12 = x[3], x[4], x[5]
        r20, r21, r22 = x[6], x[7], x[8]
        p0, p1, p2 = x[9], x[10], x[11]
        if i < n:
            qi = q[b, i]
            if jtype[i] == 0:
                c = math.cos(qi)
                s = math.sin(qi)
                r00, r01 = r00 * c + r01 * s, r01 * c - r00 * s
                r10, r11 = r10 * c + r11 * s, r11 * c - r10 * s
                r20, r21 = r20 * c + r21 * s, r21 * c - r20 * s
            else:
                p0 = p0 + r02 * qi
                p1 = p1 + r12 * qi
                p2 = p2 + r22 * qi
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = (
            a0 * r00 + a1 * r10 + a2 * r20, a0 * r01 + a1 * r11 + a2 * r21,
            a0 * r02 + a1 * r12 + a2 * r22,
            a3 * r00 + a4 * r10 + a5 * r20, a3 * r01 + a4 * r11 + a5 * r21,
            a3 * r02 + a4 * r12 + a5 * r22,
            a6 * r00 + a7 * r10 + a8 * r20, a6 * r01 + a7 * r11 + a8 * r21,
            a6 * r02 + a7 * r12 + a8 * r22,
            a0 * p0 + a1 * p1 + a2 * p2 + a9, a3 * p0 + a4 * p1 + a5 * p2 + a10,
            a6 * p0 + a7 * p1 + a8 * p2 + a11)
    out[o] = a9
    out[o + 1] = a10
    out[o + 2] = a11
    out[o + 3] = a0
    out[o + 4] = a1
    out[o + 5] = a2
    out[o + 6] = a3
    out[o + 7] = a4
    out[o + 8] = a5
    out[o + 9] = a6
    out[o + 10] = a7
    out[o + 11] = a8


@njit(cache=True, error_model="numpy")
def fk_into(jtype, xtree, tool, q, out):
    """out[k] = 4x4 homogeneous pose of the tool frame in the base frame (m)."""
    pose = np.empty(12)
    for k in range(q.shape[0]):
        chain_pose(jtype, xtree, tool, q, k, pose, 0)
        for r in range(3):
            for c in range(3):
                out[k, r, c] = pose[3 + 3 * r + c]
            out[k, r, 3] = pose[r]
            out[k, 3, r] = 0.0
        out[k, 3, 3] = 1.0


@njit(cache=True, error_model="numpy")
def chain_body_poses(jtype, xtree, q, b, poses):
    """poses[i] (i < n) = body frame i's pose in the base frame at q[b]; poses (n + 2, 12), rows
    n and n + 1 scratch (left holding the last joint transform and the identity)."""
    n = jtype.shape[0]
    rbk._set_identity(poses[n + 1])
    for i in range(n):
        rbk._joint_transform(jtype[i], xtree[i], q[b, i], poses[n])
        rbk._compose(poses[i - 1] if i > 0 else poses[n + 1], poses[n], poses[i])


@njit(cache=True, error_model="numpy")
def chain_jacobian(jtype, xtree, tool, q, b, poses, out):
    """out (6, n) = the geometric Jacobian of the tool origin at q[b] (module docstring), rows
    [v; w]. poses (n + 2, 12) scratch: the body poses, the tool pose, the identity."""
    n = jtype.shape[0]
    chain_body_poses(jtype, xtree, q, b, poses)
    rbk._compose(poses[n - 1], tool, poses[n])
    Tt = poses[n]
    for i in range(n):
        T = poses[i]
        zx = T[2]
        zy = T[5]
        zz = T[8]
        if jtype[i] == 0:
            dx = Tt[9] - T[9]
            dy = Tt[10] - T[10]
            dz = Tt[11] - T[11]
            out[0, i] = zy * dz - zz * dy
            out[1, i] = zz * dx - zx * dz
            out[2, i] = zx * dy - zy * dx
            out[3, i] = zx
            out[4, i] = zy
            out[5, i] = zz
        else:
            out[0, i] = zx
            out[1, i] = zy
            out[2, i] = zz
            out[3, i] = 0.0
            out[4, i] = 0.0
            out[5, i] = 0.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, error_model="numpy")
def chain_bias_acceleration(jtype, xtree, tool, q, qd, b, poses, out):
    """out (6,) = Jdot(q[b], qd[b]) qd[b]: the tool origin's linear and the tool's angular
    acceleration (m/s^2, rad/s^2, base frame) at joint rates qd[b] and zero joint accelerations.
    Outward from the base, with w, alpha body i's angular velocity and acceleration and a its
    origin's acceleration, r = o_i - o_(i-1): a += alpha x r + w x (w x r), then a revolute
    joint adds alpha += w x z_i qd_i, w += z_i qd_i, a prismatic one a += 2 w x z_i qd_i; last
    the tool origin, fixed in body n. poses (n + 2, 12) scratch (as chain_jacobian's)."""
    n = jtype.shape[0]
    chain_body_poses(jtype, xtree, q, b, poses)
    rbk._compose(poses[n - 1], tool, poses[n])
    w0 = w1 = w2 = 0.0
    al0 = al1 = al2 = 0.0
    a0 = a1 = a2 = 0.0
    o0 = o1 = o2 = 0.0
    for i in range(n + 1):
        P = poses[i]
        r0, r1, r2 = P[9] - o0, P[10] - o1, P[11] - o2
        c0, c1, c2 = _cross(al0, al1, al2, r0, r1, r2)
        d0, d1, d2 = _cross(w0, w1, w2, r0, r1, r2)
        e0, e1, e2 = _cross(w0, w1, w2, d0, d1, d2)
        a0 += c0 + e0
        a1 += c1 + e1
        a2 += c2 + e2
        o0, o1, o2 = P[9], P[10], P[11]
        if i == n:
            break
        z0, z1, z2 = P[2], P[5], P[8]
        f0, f1, f2 = _cross(w0, w1, w2, z0, z1, z2)
        v = qd[b, i]
        if jtype[i] == 0:
            al0 += f0 * v
            al1 += f1 * v
            al2 += f2 * v
            w0 += z0 * v
            w1 += z1 * v
            w2 += z2 * v
        else:
            a0 += 2.0 * f0 * v
            a1 += 2.0 * f1 * v
            a2 += 2.0 * f2 * v
    out[0], out[1], out[2] = a0, a1, a2
    out[3], out[4], out[5] = al0, al1, al2


@njit(cache=True, error_model="numpy")
def bias_acceleration_into(jtype, xtree, tool, q, qd, out):
    """out[k] (6,) = Jdot(q[k], qd[k]) qd[k] for every row k (`chain_bias_acceleration`)."""
    poses = np.empty((jtype.shape[0] + 2, 12))
    for k in range(q.shape[0]):
        chain_bias_acceleration(jtype, xtree, tool, q, qd, k, poses, out[k])


@njit(cache=True, error_model="numpy")
def jacobian_into(jtype, xtree, tool, q, out):
    """out[k] (6, n) = the geometric Jacobian of the tool origin at q[k], rows [v; w]."""
    poses = np.empty((jtype.shape[0] + 2, 12))
    for k in range(q.shape[0]):
        chain_jacobian(jtype, xtree, tool, q, k, poses, out[k])


# ----------------------------------------------------------------------------- per Model member

@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def tool_pose(model, k, q, b, out, o):
    """out[o:o+12] = the tool pose (p, then R row-major) of member k's model at q[b]."""
    chain_pose(model[0], md.xtree(model, k), md.tool(model, k), q, b, out, o)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def jacobian(model, data, k, q, b, out):
    """out (6 n,) = member k's geometric Jacobian at q[b], rows [v; w] flattened row-major
    (J[r, c] at r n + c); scratch: the poses field of data."""
    n = q.shape[1]
    chain_jacobian(model[0], md.xtree(model, k), md.tool(model, k), q, b, md.poses(data, n),
                   out.reshape((6, n)))


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def bias_acceleration(model, data, k, q, qd, b, out):
    """out (6,) = member k's Jdot qd at q[b], qd[b] (`chain_bias_acceleration`); scratch: the
    poses field of data."""
    chain_bias_acceleration(model[0], md.xtree(model, k), md.tool(model, k), q, qd, b,
                            md.poses(data, q.shape[1]), out)


@njit(cache=True, error_model="numpy")
def energy(model, data, k, q, qd, b):
    """(kinetic, potential) energy (J) of member k's model at q[b], qd[b] (module docstring).
    Scratch: data's mass, poses (rows 0..n), Q1 row and ws."""
    n = q.shape[1]
    jt, xt, inertia, grav = model[0], md.xtree(model, k), md.inertia(model, k), md.gravity(model, k)
    M = md.mass(data, n)
    poses = md.poses(data, n)
    q1 = md.joint_row(data, n, md.Q1)
    for i in range(n):
        q1[0, i] = q[b, i]
    md.mass_matrix(model, data, k, q1, M)
    T = 0.0
    for i in range(n):
        for j in range(n):
            T += qd[b, i] * M[0, i, j] * qd[b, j]
    T *= 0.5
    V = 0.0
    for i in range(n):
        rbk._joint_transform(jt[i], xt[i], q[b, i], poses[n])
        if i == 0:
            for j in range(12):
                poses[0, j] = poses[n, j]
        else:
            rbk._compose(poses[i - 1], poses[n], poses[i])
        P = poses[i]
        I = inertia[i]
        for r in range(3):
            mc = I[0] * P[9 + r] + P[3 * r] * I[1] + P[3 * r + 1] * I[2] + P[3 * r + 2] * I[3]
            V -= grav[r] * mc
    return T, V


@njit(cache=True, error_model="numpy")
def rotation_vector_into(R, out):
    """out (3,) = the rotation vector k theta (rad; k the unit axis, theta in [0, pi]) of the 3x3
    rotation matrix R, robust near 0 and pi: the orientation error of the inverse kinematics and
    of Cartesian impedance control, and the interpolation of a tool path (slerp)."""
    cos_a = max(-1.0, min(1.0, (R[0, 0] + R[1, 1] + R[2, 2] - 1.0) / 2.0))
    angle = math.acos(cos_a)
    w0 = R[2, 1] - R[1, 2]
    w1 = R[0, 2] - R[2, 0]
    w2 = R[1, 0] - R[0, 1]
    if angle < 1e-6:
        out[0], out[1], out[2] = 0.5 * w0, 0.5 * w1, 0.5 * w2
    elif math.pi - angle < 1e-4:
        # axis from the symmetric part: R + I = 2 a a^T near pi
        i = 0
        for j in (1, 2):
            if R[j, j] > R[i, i]:
                i = j
        bii = max(0.5 * (R[i, i] + 1.0), 1e-300)
        scale = angle / math.sqrt(bii)
        a0 = 0.5 * (R[0, i] + (1.0 if i == 0 else 0.0))
        a1 = 0.5 * (R[1, i] + (1.0 if i == 1 else 0.0))
        a2 = 0.5 * (R[2, i] + (1.0 if i == 2 else 0.0))
        if a0 * w0 + a1 * w1 + a2 * w2 < 0:
            scale = -scale
        out[0], out[1], out[2] = a0 * scale, a1 * scale, a2 * scale
    else:
        f = angle / (2.0 * math.sin(angle))
        out[0], out[1], out[2] = w0 * f, w1 * f, w2 * f


def rotation_vector(R):
    """The rotation vector (3,) of a 3x3 rotation matrix (`rotation_vector_into`)."""
    out = np.empty(3)
    rotation_vector_into(np.ascontiguousarray(R, dtype=float), out)
    return out
