"""Numba kernels of rigid-body dynamics for serial chains (Featherstone's RNEA, CRBA, ABA, kinematics).

These are the functions blocks call at every solver stage; `RobotModel` (robot.py) wraps them, and
`model_data` gives them the Model/Data form; the chain's kinematics (poses, Jacobian, energy) are
in `kinematics`.

Model arrays (built once by `RobotModel`, read-only, exposed as `model.arrays`, in this order):

    jtype    (n,)     int64    joint type: 0 revolute about the body z axis, 1 prismatic along it
    xtree    (n, 12)  float64  fixed transform of joint i's frame (before its motion) in body
                               frame i-1 (the base frame for i = 0): rotation R row-major
                               (R[r, c] = xtree[i, 3 r + c], columns are the child axes in parent
                               coordinates), then the origin p (m) in parent coordinates
    inertia  (n, 10)  float64  body i's inertia in body frame i about its origin:
                               m, m cx, m cy, m cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz (kg, kg m, kg m^2;
                               tensor entries, so Ixy = -sum m x y)
    armature (n,)     float64  reflected rotor inertia N^2 Jm added on M's diagonal (zeros when off)
    tool     (12,)    float64  tool frame in the last body frame, same layout as a row of xtree

Body frame i is the frame of joint i *after* its motion: body_i = body_{i-1} * xtree_i * Rz(q_i)
(revolute) or * Tz(q_i) (prismatic). It is the DH or URDF link frame up to a fixed transform
(`RobotModel.link_offsets`); every algorithm here works in body frames.

Kernel API (all arrays C-contiguous float64 unless said; B = batch size, n = joints; outputs are
written in place, nothing is allocated per call except the per-call scratch the caller passes):

    rnea_into(jtype, xtree, inertia, armature, tool, q, qd, qdd, gravity, fext, out, ws)
        q, qd, qdd (B, n); gravity (3,) base frame (m/s^2, e.g. [0, 0, -9.81]);
        fext (B, 6) or (0, 6) for none: wrench exerted BY the environment ON the tool,
        [force (N); moment (N m)] in base coordinates, moment about the tool origin;
        out (B, n) joint torques (N m) / forces (N):  tau = M qdd + c + g - J^T fext
    mass_matrix_into(jtype, xtree, inertia, armature, q, out, ws)       out (B, n, n)
    aba_into(jtype, xtree, inertia, armature, tool, q, qd, tau, gravity, fext, out, ws)
        out (B, n) joint accelerations: the qdd solving the rnea equation above
    coriolis_matrix_into(jtype, xtree, inertia, q, qd, out, ws)          out (B, n, n), C qd = c
    body_regressor_into(jtype, xtree, q, qd, qdd, gravity, out, ws)     out (B, n, 10 n), body-frame params
    friction_into(viscous, coulomb_pos, coulomb_neg, smoothing, qd, out)

`ws` is scratch of shape (n + 1, WS_COLS) from `workspace(n)`; one per thread. Spatial vectors
follow Featherstone: motion [w; v], force [n; f], both in body coordinates about the body origin
(ABA and the Coriolis matrix work in base coordinates about the base origin instead). Kernels are
compiled with error_model="numpy": a singular model gives inf/nan instead of raising, and callable
from other numba functions (the compiled diagram step).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .friction import sign_or_tanh

WS_COLS = 208

#: Pass as `fext` when there is no external wrench.
NO_FEXT = np.zeros((0, 6))

# Workspace column layout (per body row; row n is the base).
_X = 0        # 12: current joint transform R (9, row-major), p (3)
_V = 12       # 6: spatial velocity
_A = 18       # 6: spatial acceleration
_F = 24       # 6: spatial force / articulated bias force
_C = 30       # 6: velocity-product acceleration (ABA)
_U = 36       # 6: IA S (ABA)
_D = 42       # 1: S^T IA S + armature
_UU = 43      # 1: u = tau - S^T pA
_IA = 44      # 36: articulated inertia (row-major 6x6); composite inertia params (CRBA, 10)
_T = 116      # 12: absolute pose of the body (R, p)
_BC = 128     # 36: composite B matrix (Coriolis)
_S = 164      # 6: joint axis in base coordinates (Coriolis)
_SD = 170     # 6: its time derivative (Coriolis)
_IC = 176     # 10: composite inertia parameters in base coordinates (Coriolis)


def workspace(n: int) -> np.ndarray:
    """Scratch array for the kernels of an n-joint chain: shape (n + 1, WS_COLS), float64."""
    return np.zeros((n + 1, WS_COLS))


@njit(cache=True, error_model="numpy")
def _joint_transform(jt, xt, qi, ws_row):
    """Write body i's transform in its parent, xtree * Rz(q) or xtree * Tz(q), into ws_row[0:12]."""
    r00 = xt[0]
    r01 = xt[1]
    r02 = xt[2]
    r10 = xt[3]
    r11 = xt[4]
    r12 = xt[5]
    r20 = xt[6]
    r21 = xt[7]
    r22 = xt[8]
    if jt == 0:
        c = math.cos(qi)
        s = math.sin(qi)
        ws_row[0] = r00 * c + r01 * s
        ws_row[1] = r01 * c - r00 * s
        ws_row[2] = r02
        ws_row[3] = r10 * c + r11 * s
        ws_row[4] = r11 * c - r10 * s
        ws_row[5] = r12
        ws_row[6] = r20 * c + r21 * s
        ws_row[7] = r21 * c - r20 * s
        ws_row[8] = r22
        ws_row[9] = xt[9]
        ws_row[10] = xt[10]
        ws_row[11] = xt[11]
    else:
        for j in range(9):
            ws_row[j] = xt[j]
        ws_row[9] = xt[9] + r02 * qi
        ws_row[10] = xt[10] + r12 * qi
        ws_row[11] = xt[11] + r22 * qi


@njit(cache=True, error_model="numpy")
def _motion_to_child(X, src, dst):
    """dst = X src for a motion vector given in the parent: [R^T w; R^T (v - p x w)]."""
    wx = src[0]
    wy = src[1]
    wz = src[2]
    px = X[9]
    py = X[10]
    pz = X[11]
    vx = src[3] - (py * wz - pz * wy)
    vy = src[4] - (pz * wx - px * wz)
    vz = src[5] - (px * wy - py * wx)
    dst[0] = X[0] * wx + X[3] * wy + X[6] * wz
    dst[1] = X[1] * wx + X[4] * wy + X[7] * wz
    dst[2] = X[2] * wx + X[5] * wy + X[8] * wz
    dst[3] = X[0] * vx + X[3] * vy + X[6] * vz
    dst[4] = X[1] * vx + X[4] * vy + X[7] * vz
    dst[5] = X[2] * vx + X[5] * vy + X[8] * vz


@njit(cache=True, error_model="numpy")
def _add_force_to_parent(X, src, dst):
    """dst += X^T src for a force given in the child: [R n + p x (R f); R f]."""
    fx = X[0] * src[3] + X[1] * src[4] + X[2] * src[5]
    fy = X[3] * src[3] + X[4] * src[4] + X[5] * src[5]
    fz = X[6] * src[3] + X[7] * src[4] + X[8] * src[5]
    px = X[9]
    py = X[10]
    pz = X[11]
    dst[0] += X[0] * src[0] + X[1] * src[1] + X[2] * src[2] + py * fz - pz * fy
    dst[1] += X[3] * src[0] + X[4] * src[1] + X[5] * src[2] + pz * fx - px * fz
    dst[2] += X[6] * src[0] + X[7] * src[1] + X[8] * src[2] + px * fy - py * fx
    dst[3] += fx
    dst[4] += fy
    dst[5] += fz


@njit(cache=True, error_model="numpy")
def _body_force(I, v, a, out):
    """out = I a + v x* (I v): the net spatial force on a body (Newton-Euler)."""
    m = I[0]
    hx = I[1]
    hy = I[2]
    hz = I[3]
    wx = v[0]
    wy = v[1]
    wz = v[2]
    ux = v[3]
    uy = v[4]
    uz = v[5]
    # I v
    nx = I[4] * wx + I[5] * wy + I[6] * wz + hy * uz - hz * uy
    ny = I[5] * wx + I[7] * wy + I[8] * wz + hz * ux - hx * uz
    nz = I[6] * wx + I[8] * wy + I[9] * wz + hx * uy - hy * ux
    fx = m * ux - (hy * wz - hz * wy)
    fy = m * uy - (hz * wx - hx * wz)
    fz = m * uz - (hx * wy - hy * wx)
    ax = a[0]
    ay = a[1]
    az = a[2]
    bx = a[3]
    by = a[4]
    bz = a[5]
    # I a + v x* (I v) = [w x n + u x f; w x f]
    out[0] = (I[4] * ax + I[5] * ay + I[6] * az + hy * bz - hz * by
              + wy * nz - wz * ny + uy * fz - uz * fy)
    out[1] = (I[5] * ax + I[7] * ay + I[8] * az + hz * bx - hx * bz
              + wz * nx - wx * nz + uz * fx - ux * fz)
    out[2] = (I[6] * ax + I[8] * ay + I[9] * az + hx * by - hy * bx
              + wx * ny - wy * nx + ux * fy - uy * fx)
    out[3] = m * bx - (hy * az - hz * ay) + wy * fz - wz * fy
    out[4] = m * by - (hz * ax - hx * az) + wz * fx - wx * fz
    out[5] = m * bz - (hx * ay - hy * ax) + wx * fy - wy * fx


@njit(cache=True, error_model="numpy")
def _inertia_to_parent(X, I, out):
    """out += I expressed in the parent frame (10 parameters): rotate by R, shift the origin by p."""
    m = I[0]
    # h_r = R h
    hx = X[0] * I[1] + X[1] * I[2] + X[2] * I[3]
    hy = X[3] * I[1] + X[4] * I[2] + X[5] * I[3]
    hz = X[6] * I[1] + X[7] * I[2] + X[8] * I[3]
    px = X[9]
    py = X[10]
    pz = X[11]
    # R J R^T with J the symmetric 3x3 of I[4:10]
    j00 = I[4]
    j01 = I[5]
    j02 = I[6]
    j11 = I[7]
    j12 = I[8]
    j22 = I[9]
    # T = R J
    t00 = X[0] * j00 + X[1] * j01 + X[2] * j02
    t01 = X[0] * j01 + X[1] * j11 + X[2] * j12
    t02 = X[0] * j02 + X[1] * j12 + X[2] * j22
    t10 = X[3] * j00 + X[4] * j01 + X[5] * j02
    t11 = X[3] * j01 + X[4] * j11 + X[5] * j12
    t12 = X[3] * j02 + X[4] * j12 + X[5] * j22
    t20 = X[6] * j00 + X[7] * j01 + X[8] * j02
    t21 = X[6] * j01 + X[7] * j11 + X[8] * j12
    t22 = X[6] * j02 + X[7] * j12 + X[8] * j22
    k00 = t00 * X[0] + t01 * X[1] + t02 * X[2]
    k01 = t00 * X[3] + t01 * X[4] + t02 * X[5]
    k02 = t00 * X[6] + t01 * X[7] + t02 * X[8]
    k11 = t10 * X[3] + t11 * X[4] + t12 * X[5]
    k12 = t10 * X[6] + t11 * X[7] + t12 * X[8]
    k22 = t20 * X[6] + t21 * X[7] + t22 * X[8]
    # shift: + 2 (p.h) 1 - p h^T - h p^T + m (|p|^2 1 - p p^T)
    ph = px * hx + py * hy + pz * hz
    pp = px * px + py * py + pz * pz
    out[0] += m
    out[1] += hx + m * px
    out[2] += hy + m * py
    out[3] += hz + m * pz
    out[4] += k00 + 2.0 * ph - 2.0 * px * hx + m * (pp - px * px)
    out[5] += k01 - px * hy - hx * py - m * px * py
    out[6] += k02 - px * hz - hx * pz - m * px * pz
    out[7] += k11 + 2.0 * ph - 2.0 * py * hy + m * (pp - py * py)
    out[8] += k12 - py * hz - hy * pz - m * py * pz
    out[9] += k22 + 2.0 * ph - 2.0 * pz * hz + m * (pp - pz * pz)


@njit(cache=True, error_model="numpy")
def _compose(Ta, Tb, out):
    """out = Ta Tb for poses stored as R (9, row-major), p (3); out must not alias the inputs."""
    for r in range(3):
        for c in range(3):
            out[3 * r + c] = Ta[3 * r] * Tb[c] + Ta[3 * r + 1] * Tb[3 + c] + Ta[3 * r + 2] * Tb[6 + c]
        out[9 + r] = Ta[3 * r] * Tb[9] + Ta[3 * r + 1] * Tb[10] + Ta[3 * r + 2] * Tb[11] + Ta[9 + r]


@njit(cache=True, error_model="numpy")
def _set_identity(T):
    for j in range(12):
        T[j] = 0.0
    T[0] = 1.0
    T[4] = 1.0
    T[8] = 1.0


@njit(cache=True, error_model="numpy")
def _subtract_tool_wrench(T_last, tool, fext_k, f_last):
    """f_last -= the tool wrench fext_k (base frame, about the tool origin) in body coordinates."""
    # tool origin offset from the body origin, in base coordinates: R_last p_tool
    ox = T_last[0] * tool[9] + T_last[1] * tool[10] + T_last[2] * tool[11]
    oy = T_last[3] * tool[9] + T_last[4] * tool[10] + T_last[5] * tool[11]
    oz = T_last[6] * tool[9] + T_last[7] * tool[10] + T_last[8] * tool[11]
    fx = fext_k[0]
    fy = fext_k[1]
    fz = fext_k[2]
    mx = fext_k[3] + oy * fz - oz * fy
    my = fext_k[4] + oz * fx - ox * fz
    mz = fext_k[5] + ox * fy - oy * fx
    for r in range(3):
        f_last[r] -= T_last[r] * mx + T_last[3 + r] * my + T_last[6 + r] * mz
        f_last[3 + r] -= T_last[r] * fx + T_last[3 + r] * fy + T_last[6 + r] * fz


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _base_axis(jtype_i, T, S):
    """Joint i's motion subspace in base coordinates about the base origin, from its frame T (R, p):
    revolute S = [z; p x z], prismatic S = [0; z] (z the joint axis, T's third column)."""
    zx = T[2]
    zy = T[5]
    zz = T[8]
    if jtype_i == 0:
        S[0] = zx
        S[1] = zy
        S[2] = zz
        S[3] = T[10] * zz - T[11] * zy
        S[4] = T[11] * zx - T[9] * zz
        S[5] = T[9] * zy - T[10] * zx
    else:
        S[0] = 0.0
        S[1] = 0.0
        S[2] = 0.0
        S[3] = zx
        S[4] = zy
        S[5] = zz


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _propagate_motion(jtype_i, xtree_i, q_i, qd_i, qdd_i, parent, row):
    """RNEA forward pass for body i: its joint transform X, spatial velocity v = X v_parent + S qd
    and acceleration a = X a_parent + v x (S qd) + S qdd (S = [e_z; 0] revolute, [0; e_z] prismatic),
    written into row's _X, _V and _A columns."""
    _joint_transform(jtype_i, xtree_i, q_i, row)
    X = row[_X:_X + 12]
    v = row[_V:_V + 6]
    a = row[_A:_A + 6]
    _motion_to_child(X, parent[_V:_V + 6], v)
    _motion_to_child(X, parent[_A:_A + 6], a)
    if jtype_i == 0:
        a[0] += v[1] * qd_i
        a[1] -= v[0] * qd_i
        a[3] += v[4] * qd_i
        a[4] -= v[3] * qd_i
        a[2] += qdd_i
        v[2] += qd_i
    else:
        a[3] += v[1] * qd_i
        a[4] -= v[0] * qd_i
        a[5] += qdd_i
        v[5] += qd_i


@njit(cache=True, error_model="numpy")
def rnea_into(jtype, xtree, inertia, armature, tool, q, qd, qdd, gravity, fext, out, ws):
    """Inverse dynamics by the recursive Newton-Euler algorithm (Featherstone, Table 5.1).

    out[k] = M(q) qdd + c(q, qd) + g(q) - J(q)^T fext[k] for every batch member k (N m or N).
    Gravity enters as a base acceleration of -gravity. Shapes: see the module docstring.
    """
    nb = q.shape[0]
    n = q.shape[1]
    has_fext = fext.shape[0] > 0
    base = ws[n]
    for j in range(6):
        base[_V + j] = 0.0
        base[_A + j] = 0.0
    base[_A + 3] = -gravity[0]
    base[_A + 4] = -gravity[1]
    base[_A + 5] = -gravity[2]
    if has_fext:
        _set_identity(base[_T:_T + 12])
    for k in range(nb):
        for i in range(n):
            row = ws[i]
            parent = ws[i - 1]
            _propagate_motion(jtype[i], xtree[i], q[k, i], qd[k, i], qdd[k, i], parent, row)
            X = row[_X:_X + 12]
            v = row[_V:_V + 6]
            a = row[_A:_A + 6]
            _body_force(inertia[i], v, a, row[_F:_F + 6])
            if has_fext:
                _compose(parent[_T:_T + 12], X, row[_T:_T + 12])
        if has_fext:
            last = ws[n - 1]
            _subtract_tool_wrench(last[_T:_T + 12], tool, fext[k], last[_F:_F + 6])
        for i in range(n - 1, -1, -1):
            row = ws[i]
            if jtype[i] == 0:
                out[k, i] = row[_F + 2] + armature[i] * qdd[k, i]
            else:
                out[k, i] = row[_F + 5] + armature[i] * qdd[k, i]
            if i > 0:
                _add_force_to_parent(row[_X:_X + 12], row[_F:_F + 6], ws[i - 1, _F:_F + 6])


@njit(cache=True, error_model="numpy")
def mass_matrix_into(jtype, xtree, inertia, armature, q, out, ws):
    """Joint-space inertia matrix by the composite-rigid-body algorithm (Featherstone, Table 6.2).

    out[k] = M(q[k]) (n x n, kg m^2 / kg), including armature on the diagonal.
    """
    nb = q.shape[0]
    n = q.shape[1]
    for k in range(nb):
        for i in range(n):
            row = ws[i]
            _joint_transform(jtype[i], xtree[i], q[k, i], row)
            for j in range(10):
                row[_IA + j] = inertia[i, j]
        for i in range(n - 1, 0, -1):
            _inertia_to_parent(ws[i, _X:_X + 12], ws[i, _IA:_IA + 10], ws[i - 1, _IA:_IA + 10])
        for i in range(n):
            row = ws[i]
            Ic = row[_IA:_IA + 10]
            F = row[_F:_F + 6]
            for j in range(6):
                F[j] = 0.0
            if jtype[i] == 0:
                # Ic S, S = [e_z; 0]
                F[0] = Ic[6]
                F[1] = Ic[8]
                F[2] = Ic[9]
                F[3] = -Ic[2]
                F[4] = Ic[1]
                out[k, i, i] = F[2] + armature[i]
            else:
                F[0] = Ic[2]
                F[1] = -Ic[1]
                F[5] = Ic[0]
                out[k, i, i] = F[5] + armature[i]
            j = i
            while j > 0:
                # F_{j-1} = X_j^T F_j; ancestor F rows are scratch here (their columns are done)
                G = ws[j - 1, _F:_F + 6]
                for r in range(6):
                    G[r] = 0.0
                _add_force_to_parent(ws[j, _X:_X + 12], ws[j, _F:_F + 6], G)
                j -= 1
                if jtype[j] == 0:
                    val = G[2]
                else:
                    val = G[5]
                out[k, i, j] = val
                out[k, j, i] = val


@njit(cache=True, error_model="numpy")
def _inertia_to_matrix(I, out):
    """out (36, row-major 6x6) = the spatial inertia with parameters I, [[J, hx], [hx^T, m 1]]."""
    m = I[0]
    hx = I[1]
    hy = I[2]
    hz = I[3]
    for j in range(36):
        out[j] = 0.0
    out[0] = I[4]
    out[1] = I[5]
    out[2] = I[6]
    out[6] = I[5]
    out[7] = I[7]
    out[8] = I[8]
    out[12] = I[6]
    out[13] = I[8]
    out[14] = I[9]
    # upper right block: skew(h)
    out[4] = -hz
    out[5] = hy
    out[9] = hz
    out[11] = -hx
    out[15] = -hy
    out[16] = hx
    # lower left block: skew(h)^T
    out[19] = hz
    out[20] = -hy
    out[24] = -hz
    out[26] = hx
    out[30] = hy
    out[31] = -hx
    out[21] = m
    out[28] = m
    out[35] = m


@njit(cache=True, error_model="numpy")
def aba_into(jtype, xtree, inertia, armature, tool, q, qd, tau, gravity, fext, out, ws):
    """Forward dynamics by the articulated-body algorithm (Featherstone, Table 7.1), O(n).

    out[k] = qdd solving M qdd + c + g - J^T fext = tau (rad/s^2 or m/s^2).
    Run in base coordinates (spatial vectors about the base origin, as Pinocchio does), so the
    articulated inertias are summed without 6x6 frame changes on the way to the base.
    """
    nb = q.shape[0]
    n = q.shape[1]
    has_fext = fext.shape[0] > 0
    base = ws[n]
    _set_identity(base[_T:_T + 12])
    for k in range(nb):
        # pass 1: poses, joint axes, velocities, bias accelerations, rigid inertias and bias forces
        vx = 0.0
        vy = 0.0
        vz = 0.0
        ux = 0.0
        uy = 0.0
        uz = 0.0
        for i in range(n):
            row = ws[i]
            _joint_transform(jtype[i], xtree[i], q[k, i], row)
            T = row[_T:_T + 12]
            _compose(ws[i - 1, _T:_T + 12], row[_X:_X + 12], T)
            S = row[_S:_S + 6]
            _base_axis(jtype[i], T, S)
            qdi = qd[k, i]
            # c = v_parent x (S qd)  (equal to v x S qd since S x S = 0)
            c = row[_C:_C + 6]
            c[0] = (vy * S[2] - vz * S[1]) * qdi
            c[1] = (vz * S[0] - vx * S[2]) * qdi
            c[2] = (vx * S[1] - vy * S[0]) * qdi
            c[3] = (vy * S[5] - vz * S[4] + uy * S[2] - uz * S[1]) * qdi
            c[4] = (vz * S[3] - vx * S[5] + uz * S[0] - ux * S[2]) * qdi
            c[5] = (vx * S[4] - vy * S[3] + ux * S[1] - uy * S[0]) * qdi
            vx += S[0] * qdi
            vy += S[1] * qdi
            vz += S[2] * qdi
            ux += S[3] * qdi
            uy += S[4] * qdi
            uz += S[5] * qdi
            v = row[_V:_V + 6]
            v[0] = vx
            v[1] = vy
            v[2] = vz
            v[3] = ux
            v[4] = uy
            v[5] = uz
            Iw = row[_IC:_IC + 10]
            for j in range(10):
                Iw[j] = 0.0
            _inertia_to_parent(T, inertia[i], Iw)
            _inertia_to_matrix(Iw, row[_IA:_IA + 36])
            # pA = v x* I v (the body-force routine with zero acceleration)
            a = row[_A:_A + 6]
            for j in range(6):
                a[j] = 0.0
            _body_force(Iw, v, a, row[_F:_F + 6])
        if has_fext:
            last = ws[n - 1]
            T = last[_T:_T + 12]
            # tool origin in base coordinates; the wrench moved to the base origin
            px = T[9] + T[0] * tool[9] + T[1] * tool[10] + T[2] * tool[11]
            py = T[10] + T[3] * tool[9] + T[4] * tool[10] + T[5] * tool[11]
            pz = T[11] + T[6] * tool[9] + T[7] * tool[10] + T[8] * tool[11]
            fx = fext[k, 0]
            fy = fext[k, 1]
            fz = fext[k, 2]
            pA = last[_F:_F + 6]
            pA[0] -= fext[k, 3] + py * fz - pz * fy
            pA[1] -= fext[k, 4] + pz * fx - px * fz
            pA[2] -= fext[k, 5] + px * fy - py * fx
            pA[3] -= fx
            pA[4] -= fy
            pA[5] -= fz
        # pass 2: articulated inertias and bias forces, tip to base
        for i in range(n - 1, -1, -1):
            row = ws[i]
            IA = row[_IA:_IA + 36]
            pA = row[_F:_F + 6]
            U = row[_U:_U + 6]
            S = row[_S:_S + 6]
            D = armature[i]
            u = tau[k, i]
            for r in range(6):
                acc = 0.0
                for j in range(6):
                    acc += IA[r * 6 + j] * S[j]
                U[r] = acc
                D += S[r] * acc
                u -= S[r] * pA[r]
            row[_D] = D
            row[_UU] = u
            if i > 0:
                parent = ws[i - 1]
                PIA = parent[_IA:_IA + 36]
                PpA = parent[_F:_F + 6]
                c = row[_C:_C + 6]
                uD = u / D
                for r in range(6):
                    Ur = U[r] / D
                    acc = pA[r] + U[r] * uD
                    for j in range(6):
                        ia = IA[r * 6 + j] - Ur * U[j]
                        PIA[r * 6 + j] += ia
                        acc += ia * c[j]
                    PpA[r] += acc
        # pass 3: accelerations, base to tip (a_0 = -gravity)
        ax = 0.0
        ay = 0.0
        az = 0.0
        bx = -gravity[0]
        by = -gravity[1]
        bz = -gravity[2]
        for i in range(n):
            row = ws[i]
            c = row[_C:_C + 6]
            U = row[_U:_U + 6]
            S = row[_S:_S + 6]
            ax += c[0]
            ay += c[1]
            az += c[2]
            bx += c[3]
            by += c[4]
            bz += c[5]
            qddi = (row[_UU] - (U[0] * ax + U[1] * ay + U[2] * az + U[3] * bx + U[4] * by + U[5] * bz)) / row[_D]
            out[k, i] = qddi
            ax += S[0] * qddi
            ay += S[1] * qddi
            az += S[2] * qddi
            bx += S[3] * qddi
            by += S[4] * qddi
            bz += S[5] * qddi


@njit(cache=True, error_model="numpy")
def _mat6_times(Mt, x, out):
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += Mt[r * 6 + c] * x[c]
        out[r] = s


@njit(cache=True, error_model="numpy", _nrt=True)
def coriolis_matrix_into(jtype, xtree, inertia, q, qd, out, ws):
    """out[k] = Coriolis matrix C(q, qd) in Christoffel form (N m s/rad). It allocates its
    scratch, so it is compiled with numba's reference counts (_nrt=True) even when a kernel
    without them (the collision observer's) reaches it.

    Computed in base coordinates as C = sum_l J_l^T (I_l Jdot_l + B_l J_l) with
    B(I, v) = (v x* I + (I v) xbar - I v x) / 2 (Echeandia and Wensing, 2021), which gives
    C qd = c(q, qd) and C_ij = sum_k Gamma_ijk qd_k, so dM/dt - 2 C is skew-symmetric.
    """
    nb = q.shape[0]
    n = q.shape[1]
    X = np.empty(12)
    ident = np.empty(12)
    _set_identity(ident)
    Iv = np.empty(6)
    Bm = np.empty(36)
    Im = np.empty(36)
    tmp6 = np.empty(6)
    tmp6b = np.empty(6)
    for k in range(nb):
        vx = 0.0
        vy = 0.0
        vz = 0.0
        ux = 0.0
        uy = 0.0
        uz = 0.0
        for i in range(n):
            row = ws[i]
            _joint_transform(jtype[i], xtree[i], q[k, i], X)
            if i == 0:
                _compose(ident, X, row[_T:_T + 12])
            else:
                _compose(ws[i - 1, _T:_T + 12], X, row[_T:_T + 12])
            T = row[_T:_T + 12]
            S = row[_S:_S + 6]
            _base_axis(jtype[i], T, S)
            qdi = qd[k, i]
            vx += S[0] * qdi
            vy += S[1] * qdi
            vz += S[2] * qdi
            ux += S[3] * qdi
            uy += S[4] * qdi
            uz += S[5] * qdi
            # Sdot = v x S (motion cross product)
            SD = row[_SD:_SD + 6]
            SD[0] = vy * S[2] - vz * S[1]
            SD[1] = vz * S[0] - vx * S[2]
            SD[2] = vx * S[1] - vy * S[0]
            SD[3] = vy * S[5] - vz * S[4] + uy * S[2] - uz * S[1]
            SD[4] = vz * S[3] - vx * S[5] + uz * S[0] - ux * S[2]
            SD[5] = vx * S[4] - vy * S[3] + ux * S[1] - uy * S[0]
            # body inertia in base coordinates
            Ib = row[_IC:_IC + 10]
            for j in range(10):
                Ib[j] = 0.0
            _inertia_to_parent(T, inertia[i], Ib)
            # B(I, v) in base coordinates, v = (w; u)
            _inertia_to_matrix(Ib, Im)
            tmp6[0] = vx
            tmp6[1] = vy
            tmp6[2] = vz
            tmp6[3] = ux
            tmp6[4] = uy
            tmp6[5] = uz
            _mat6_times(Im, tmp6, Iv)
            # v x* I: rows of [[wx, ux], [0, wx]] times columns of Im
            for c in range(6):
                a0 = Im[0 * 6 + c]
                a1 = Im[1 * 6 + c]
                a2 = Im[2 * 6 + c]
                b0 = Im[3 * 6 + c]
                b1 = Im[4 * 6 + c]
                b2 = Im[5 * 6 + c]
                Bm[0 * 6 + c] = vy * a2 - vz * a1 + uy * b2 - uz * b1
                Bm[1 * 6 + c] = vz * a0 - vx * a2 + uz * b0 - ux * b2
                Bm[2 * 6 + c] = vx * a1 - vy * a0 + ux * b1 - uy * b0
                Bm[3 * 6 + c] = vy * b2 - vz * b1
                Bm[4 * 6 + c] = vz * b0 - vx * b2
                Bm[5 * 6 + c] = vx * b1 - vy * b0
            # - I v x: I times [[wx, 0], [ux, wx]]; column c of (v x) is v x e_c
            for c in range(6):
                for j in range(6):
                    tmp6b[j] = 0.0
                tmp6b[c] = 1.0
                # tmp6 = v x e_c
                e0 = tmp6b[0]
                e1 = tmp6b[1]
                e2 = tmp6b[2]
                e3 = tmp6b[3]
                e4 = tmp6b[4]
                e5 = tmp6b[5]
                tmp6[0] = vy * e2 - vz * e1
                tmp6[1] = vz * e0 - vx * e2
                tmp6[2] = vx * e1 - vy * e0
                tmp6[3] = vy * e5 - vz * e4 + uy * e2 - uz * e1
                tmp6[4] = vz * e3 - vx * e5 + uz * e0 - ux * e2
                tmp6[5] = vx * e4 - vy * e3 + ux * e1 - uy * e0
                for r in range(6):
                    s = 0.0
                    for j in range(6):
                        s += Im[r * 6 + j] * tmp6[j]
                    Bm[r * 6 + c] -= s
            # (I v) xbar = [[-n x, -f x], [-f x, 0]] with I v = (n; f)
            nx = Iv[0]
            ny = Iv[1]
            nz = Iv[2]
            fx = Iv[3]
            fy = Iv[4]
            fz = Iv[5]
            # -skew(n) into the upper-left, -skew(f) into upper-right and lower-left
            Bm[0 * 6 + 1] += nz
            Bm[0 * 6 + 2] -= ny
            Bm[1 * 6 + 0] -= nz
            Bm[1 * 6 + 2] += nx
            Bm[2 * 6 + 0] += ny
            Bm[2 * 6 + 1] -= nx
            Bm[0 * 6 + 4] += fz
            Bm[0 * 6 + 5] -= fy
            Bm[1 * 6 + 3] -= fz
            Bm[1 * 6 + 5] += fx
            Bm[2 * 6 + 3] += fy
            Bm[2 * 6 + 4] -= fx
            Bm[3 * 6 + 1] += fz
            Bm[3 * 6 + 2] -= fy
            Bm[4 * 6 + 0] -= fz
            Bm[4 * 6 + 2] += fx
            Bm[5 * 6 + 0] += fy
            Bm[5 * 6 + 1] -= fx
            BC = row[_BC:_BC + 36]
            for j in range(36):
                BC[j] = 0.5 * Bm[j]
        # composites, tip to base
        for i in range(n - 2, -1, -1):
            for j in range(10):
                ws[i, _IC + j] += ws[i + 1, _IC + j]
            for j in range(36):
                ws[i, _BC + j] += ws[i + 1, _BC + j]
        for i in range(n):
            for j in range(n):
                mrow = ws[max(i, j)]
                _inertia_to_matrix(mrow[_IC:_IC + 10], Im)
                _mat6_times(Im, ws[j, _SD:_SD + 6], tmp6)
                _mat6_times(mrow[_BC:_BC + 36], ws[j, _S:_S + 6], tmp6b)
                s = 0.0
                Si = ws[i, _S:_S + 6]
                for r in range(6):
                    s += Si[r] * (tmp6[r] + tmp6b[r])
                out[k, i, j] = s


@njit(cache=True, error_model="numpy")
def _body_regressor_block(v, a, out):
    """out (6, 10): the spatial force I a + v x* I v as a linear map of the 10 inertia parameters."""
    unit = np.zeros(10)
    f = np.empty(6)
    for p in range(10):
        unit[p] = 1.0
        _body_force(unit, v, a, f)
        for r in range(6):
            out[r, p] = f[r]
        unit[p] = 0.0


@njit(cache=True, error_model="numpy")
def body_regressor_into(jtype, xtree, q, qd, qdd, gravity, out, ws):
    """out[k] (n, 10 n): tau_rigid = out[k] @ theta_body, theta_body the body-frame `inertia` rows.

    Columns 10 i .. 10 i + 9 belong to body i in the order m, m cx, m cy, m cz, Ixx, Ixy, Ixz,
    Iyy, Iyz, Izz (about the body origin). Armature and friction columns are added by the caller.
    """
    nb = q.shape[0]
    n = q.shape[1]
    base = ws[n]
    K = np.empty((6, 10))
    K2 = np.empty((6, 10))
    col = np.empty(6)
    for k in range(nb):
        for j in range(6):
            base[_V + j] = 0.0
            base[_A + j] = 0.0
        base[_A + 3] = -gravity[0]
        base[_A + 4] = -gravity[1]
        base[_A + 5] = -gravity[2]
        for i in range(n):
            row = ws[i]
            parent = ws[i - 1]
            _propagate_motion(jtype[i], xtree[i], q[k, i], qd[k, i], qdd[k, i], parent, row)
        for i in range(n):
            for j in range(n):
                for p in range(10):
                    out[k, j, 10 * i + p] = 0.0
        for i in range(n):
            _body_regressor_block(ws[i, _V:_V + 6], ws[i, _A:_A + 6], K)
            j = i
            while True:
                r = 2 if jtype[j] == 0 else 5
                for p in range(10):
                    out[k, j, 10 * i + p] = K[r, p]
                if j == 0:
                    break
                for p in range(10):
                    for s in range(6):
                        col[s] = 0.0
                    _add_force_to_parent(ws[j, _X:_X + 12], K[:, p], col)
                    for s in range(6):
                        K2[s, p] = col[s]
                for p in range(10):
                    for s in range(6):
                        K[s, p] = K2[s, p]
                j -= 1


@njit(cache=True, error_model="numpy")
def friction_into(viscous, coulomb_pos, coulomb_neg, smoothing, qd, out):
    """out[k, i] = viscous_i qd + Coulomb term (N m): coulomb_pos_i s if s > 0, -coulomb_neg_i s if s < 0.

    s = sign(qd), or tanh(qd / smoothing) when smoothing > 0 (a continuous approximation).
    coulomb_neg is the (signed, usually negative) friction torque while qd < 0.
    """
    nb = qd.shape[0]
    n = qd.shape[1]
    for k in range(nb):
        for i in range(n):
            w = qd[k, i]
            s = sign_or_tanh(w, smoothing)
            if s > 0.0:
                fc = coulomb_pos[i] * s
            else:
                fc = -coulomb_neg[i] * s
            out[k, i] = viscous[i] * w + fc
