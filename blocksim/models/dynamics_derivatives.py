"""Analytic partial derivatives of rigid-body dynamics for serial chains: of inverse dynamics
tau = ID(q, qd, qdd, fext) = M(q) qdd + c(q, qd) + G(q) - J(q)^T fext by q, qd and the tool
wrench fext (d tau / d qdd is M), and from them of forward dynamics qdd = M^-1 (tau - c - G
+ J^T fext).

The derivatives are those of the recursive Newton-Euler algorithm (`rigid_body_kernels.rnea_into`)
carried through its own recursion in forward mode: each body's velocity, acceleration and force
travel with their partial derivatives by every q_j and qd_j (2 n directions), and the joint
transform's derivative is d X_i / d q_i = -crm(S_i) X_i. This is the arithmetic of Carpentier
and Mansard, "Analytical derivatives of rigid body dynamics algorithms", Robotics: Science and
Systems (RSS) 2018, in body coordinates: exact to rounding, O(n^2) for the n x 2n derivatives.
The forward dynamics derivatives follow from differentiating ID(q, qd, FD(q, qd, tau)) = tau
(the same paper, section IV): d qdd / d q = -M^-1 d ID / d q, d qdd / d qd = -M^-1 d ID / d qd,
d qdd / d tau = M^-1, with ID's derivatives taken at qdd = FD(q, qd, tau).

Units: SI (rad or m, rad/s or m/s, N m or N, kg m^2); gravity (3,) in the base frame (m/s^2).
Model arrays and frames are those of `rigid_body_kernels` (body frame i is joint i's frame after
its motion). Plain numpy: called once per linearisation, never in a run's loop.
"""
from __future__ import annotations

import numpy as np

from . import rigid_body_kernels as rbk
from ..twins import python_twin

_joint_transform = python_twin(rbk._joint_transform)


def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _motion_cross(v):
    """crm(v): v x m for a motion vector m, the 6 x 6 of v = [w; u]."""
    out = np.zeros((6, 6))
    W = _skew(v[:3])
    out[:3, :3] = W
    out[3:, 3:] = W
    out[3:, :3] = _skew(v[3:])
    return out


def _force_cross(v):
    """crf(v) = -crm(v)^T: v x* f for a force vector f."""
    return -_motion_cross(v).T


def _transform(jt, xt, qi):
    """X (6 x 6): motion vectors from the parent's coordinates into body i's (the kernels'
    _motion_to_child): [[R^T, 0], [-R^T p x, R^T]]."""
    row = np.zeros(12)
    _joint_transform(jt, xt, qi, row)
    Rt = row[:9].reshape(3, 3).T
    X = np.zeros((6, 6))
    X[:3, :3] = Rt
    X[3:, 3:] = Rt
    X[3:, :3] = -Rt @ _skew(row[9:12])
    return X


def _inertia(I):
    """The 6 x 6 spatial inertia of the ten parameters about the body origin."""
    h = _skew(I[1:4])
    J = np.array([[I[4], I[5], I[6]], [I[5], I[7], I[8]], [I[6], I[8], I[9]]])
    return np.block([[J, h], [-h, I[0] * np.eye(3)]])


def rnea_derivatives(jtype, xtree, inertia, armature, q, qd, qdd, gravity, tool=None, fext=None):
    """(tau, d tau / d q, d tau / d qd, d tau / d fext) of tau = M(q) qdd + c(q, qd) + G(q)
    - J(q)^T fext at one state (q, qd, qdd of shape (n,)): (n,), (n, n), (n, n), (n, 6) (None
    without a wrench), row i the torque of joint i. fext (6,): the wrench on the tool (frame
    `tool` in the last body) as `rnea_into` takes it, [force (N); moment (N m)] in base
    coordinates, moment about the tool origin; None for none."""
    n = len(q)
    m = 2 * n + (0 if fext is None else 6)
    S = [np.eye(6)[2 if jtype[i] == 0 else 5] for i in range(n)]
    X, I, v, a, f = [], [], [], [], []
    dv, da, df = [], [], []        # (6, m): by q_j (column j), qd_j (n + j), fext_k (2 n + k)
    v_p, a_p = np.zeros(6), np.concatenate([np.zeros(3), -np.asarray(gravity, float)])
    dv_p, da_p = np.zeros((6, m)), np.zeros((6, m))
    E = np.eye(3)                                # base -> body rotation (R^T of the body's pose)
    for i in range(n):
        Xi = _transform(jtype[i], xtree[i], q[i])
        E = Xi[:3, :3] @ E
        Ii = _inertia(inertia[i])
        Xv, Xa = Xi @ v_p, Xi @ a_p
        vi = Xv + S[i] * qd[i]
        ai = Xa + _motion_cross(vi) @ S[i] * qd[i] + S[i] * qdd[i]
        dvi = Xi @ dv_p
        dvi[:, i] += _motion_cross(Xv) @ S[i]            # d(X v_p)/dq_i = crm(X v_p) S
        dvi[:, n + i] += S[i]
        dai = Xi @ da_p - _motion_cross(S[i] * qd[i]) @ dvi
        dai[:, i] += _motion_cross(Xa) @ S[i]
        dai[:, n + i] += _motion_cross(vi) @ S[i]
        Iv = Ii @ vi
        fi = Ii @ ai + _force_cross(vi) @ Iv
        # d(v x* I v) = dv x* (I v) + v x* (I dv)
        dfi = Ii @ dai + _force_cross(vi) @ Ii @ dvi + _cross_star_of_motion(Iv) @ dvi
        X.append(Xi), I.append(Ii), v.append(vi), a.append(ai), f.append(fi)
        dv.append(dvi), da.append(dai), df.append(dfi)
        v_p, a_p, dv_p, da_p = vi, ai, dvi, dai
    if fext is not None:
        _tool_wrench(E.T, np.asarray(tool, float)[9:12], np.asarray(fext, float), dv[n - 1], f[n - 1],
                     df[n - 1])
    tau = np.zeros(n)
    dtau = np.zeros((n, m))
    for i in range(n - 1, -1, -1):
        tau[i] = S[i] @ f[i] + armature[i] * qdd[i]
        dtau[i] = S[i] @ df[i]
        if i > 0:
            f[i - 1] = f[i - 1] + X[i].T @ f[i]
            df[i - 1] = df[i - 1] + X[i].T @ df[i]
            df[i - 1][:, i] += X[i].T @ _force_cross(S[i]) @ f[i]   # d(X^T)/dq_i f = X^T crf(S) f
    return tau, dtau[:, :n], dtau[:, n:2 * n], (None if fext is None else dtau[:, 2 * n:])


def _tool_wrench(R, p_tool, fext, dv_last, f_last, df_last):
    """f_last -= the tool wrench in the last body's coordinates, fb = [R^T (m + o x f); R^T f]
    (o = R p_tool: the tool origin from the body's, base coordinates; R the body's rotation in
    the base), and df_last -= its derivatives: by q_j, -crf(S_j) fb + [R^T (dp_j x f); 0] (S_j =
    joint j's axis in the body, d v_last / d qd_j; dp_j the tool origin's velocity per unit qd_j,
    in the base), and by fext itself, fb of each unit wrench."""
    n = (dv_last.shape[1] - 6) // 2

    def body_wrench(w):
        o = R @ p_tool
        return np.concatenate([R.T @ (w[3:] + np.cross(o, w[:3])), R.T @ w[:3]])

    fb = body_wrench(fext)
    f_last -= fb
    for j in range(n):
        Sj = dv_last[:, n + j]
        dp = R @ (Sj[3:] + np.cross(Sj[:3], p_tool))
        df_last[:, j] -= -_force_cross(Sj) @ fb + np.concatenate([R.T @ np.cross(dp, fext[:3]),
                                                                   np.zeros(3)])
    for k in range(6):
        df_last[:, 2 * n + k] -= body_wrench(np.eye(6)[k])


def _cross_star_of_motion(h):
    """The 6 x 6 map m -> m x* h for a fixed force vector h = [n; f]: [[-n x, -f x], [-f x, 0]]."""
    out = np.zeros((6, 6))
    out[:3, :3] = -_skew(h[:3])
    out[:3, 3:] = -_skew(h[3:])
    out[3:, :3] = -_skew(h[3:])
    return out


def mass_matrix(jtype, xtree, inertia, armature, q):
    """M(q) (n, n) by the CRBA kernel, armature included."""
    n = len(q)
    out = np.zeros((1, n, n))
    rbk.mass_matrix_into(jtype, xtree, inertia, armature, np.ascontiguousarray(q, float)[None],
                         out, rbk.workspace(n))
    return out[0]


def forward_dynamics_derivatives(jtype, xtree, inertia, armature, q, qd, qdd, gravity,
                                 tool=None, fext=None, free=None):
    """(d qdd / d q, d qdd / d qd, d qdd / d tau, d qdd / d fext) of qdd = FD(q, qd, tau, fext)
    at the state (q, qd) whose acceleration under tau (and fext) is qdd (the forward dynamics'
    own result): -M^-1 d ID / d q, -M^-1 d ID / d qd, M^-1 (each (n, n)) and -M^-1 d ID / d fext
    = M^-1 J^T ((n, 6); None without a wrench). free (n,) bool: the joints solved, the others
    locked (acceleration 0, rows zero; M^-1 is then the inverse of M's free block); None: all."""
    _, dq, dqd, dfx = rnea_derivatives(jtype, xtree, inertia, armature, q, qd, qdd, gravity, tool,
                                       fext)
    M = mass_matrix(jtype, xtree, inertia, armature, q)
    free = np.ones(len(q), bool) if free is None else np.asarray(free, bool)
    Minv = np.zeros_like(M)
    Minv[np.ix_(free, free)] = np.linalg.inv(M[np.ix_(free, free)])
    return -Minv @ dq, -Minv @ dqd, Minv, (None if dfx is None else -Minv @ dfx)
