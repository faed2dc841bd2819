"""Forward dynamics of the Manipulator plant under its joint law (`joint_law`): the joint
accelerations with joints that stick (static friction, a Karnopp band) or rest on a stop locked.

Equation (SI units, base frame, the robot's gravity):
    M(q) qdd + c(q, qd) + G(q) = clip(tau, +-tau_max) - tau_f(qd, z) - damping qd
                                 - stiffness (q - q_rest) + J(q)^T f_ext
with the free joints' accelerations solved and the locked joints' set to 0. Locked joints:
- a joint resting on a stop (q at a limit, qd = 0) whose acceleration would push it through
  (judged live, in every evaluation: the contact changes continuously, the acceleration
  passing through zero, so it needs no mode);
- a joint at rest (qd = 0 exactly) under an exact-sign friction law whose held sign is 0 (it
  was at rest at the last major step), while the torque needed to hold it,
  tau_hold_i = sum_j M_ij qdd_j - rhs_i, stays within its static level (Fs, or Fc for
  coulomb_viscous and model): stiction. Beyond it the joint breaks away, with the static level
  opposing the motion that starts (continuous: the acceleration starts from zero);
- a joint whose held Karnopp mode is 0 (inside its band |qd| < dv at the last major step), by
  the same rule with the level Fs: the friction balances the net non-friction torque (the
  joint's acceleration is zero) up to Fs.
The friction modes (`joint_law.joint_mode`, per joint, set at major steps and held through solver
stages: `modes` (B, n), or (B, 0) for a plant without them) decide which law each joint is under;
a joint slipping with a held sign keeps it even where a stage's qd has the other sign, so the
dynamics stay smooth until the located crossing. The sets are settled by repetition (each joint
changes at most once per call). Forward dynamics by the closed-form 2R, the ABA, or CRBA + a
Cholesky solve on the free joints.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..twins import python_twin
from . import dynamics_derivatives as dd
from . import planar2r as p2r
from .joint_law import (Q_MAX, Q_MIN, effective_torque, effective_torque_slopes, pushed_into_stop,
                        static_level)
from . import model_data as md
from .coupled_map import contract_matrix, contract_rows, expand_rows
from .model_data import BIAS, FREE, OUT1, Q1, QD1, RHS, SOL, STUCK, TE, ZERO1, joint_row, joint_vector


@njit(cache=True, error_model="numpy")
def solve_free(M, rhs, free, L, out):
    """out = solution of M x = rhs restricted to the free joints (Cholesky), 0 for locked joints.

    M (n, n) symmetric positive definite, rhs (n,), free (n,) (nonzero: free), L (n, n) scratch,
    out (n,)."""
    n = M.shape[0]
    for i in range(n):
        if not free[i]:
            continue
        for j in range(i + 1):
            if not free[j]:
                continue
            s = M[i, j]
            for c in range(j):
                if free[c]:
                    s -= L[i, c] * L[j, c]
            if i == j:
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    for i in range(n):
        if not free[i]:
            out[i] = 0.0
            continue
        s = rhs[i]
        for c in range(i):
            if free[c]:
                s -= L[i, c] * out[c]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        if not free[i]:
            continue
        s = out[i]
        for c in range(i + 1, n):
            if free[c]:
                s -= L[c, i] * out[c]
        out[i] = s / L[i, i]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _joint_torques(b, xc, modes, tau, law, has_friction, n, te, free, stuck):
    """te (n,) = each joint's effective torque under the law at member b's state xc = [q | qd
    (| z)] and held modes; stuck/free (n,) its flags (`joint_law.effective_torque`). True when a
    joint sticks (the forward dynamics then need the mass matrix)."""
    lugre = xc.shape[1] > 2 * n
    held = modes.shape[1] > 0
    any_stuck = False
    for i in range(n):
        t, s = effective_torque(law, b, i, xc[b, i], xc[b, n + i],
                                xc[b, 2 * n + i] if lugre else 0.0, tau[b, i], has_friction,
                                modes[b, i] if held else 0.0)
        te[i] = t
        stuck[i] = 1.0 if s else 0.0
        free[i] = 0.0 if s else 1.0
        if s:
            any_stuck = True
    return any_stuck


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _release_and_lock(b, xc, law, M, rhs, free, stuck, sol, has_limits, n):
    """After a solve (sol (n,) of M sol = rhs on the free joints): a stuck joint whose holding
    torque exceeds its static level breaks away (freed, the level opposing the motion added to
    its rhs), a free joint on a stop that the solution pushes outward is locked. True when the
    sets changed (solve again)."""
    changed = False
    for i in range(n):
        if stuck[i]:
            hold = -rhs[i]
            for j in range(n):
                if free[j]:
                    hold += M[i, j] * sol[j]
            level = static_level(law, b, i, hold)
            if abs(hold) > level:
                # breakaway: the motion starts opposite to the holding torque
                stuck[i] = 0.0
                free[i] = 1.0
                rhs[i] += level if hold > 0.0 else -level
                changed = True
    if has_limits:
        for i in range(n):
            if free[i] and pushed_into_stop(law, b, i, xc[b, i], xc[b, n + i], sol[i]):
                free[i] = 0.0
                changed = True
    return changed


@njit(cache=True, error_model="numpy")
def accelerations_general(b, xc, modes, tau, fext, model, law, data, crba, has_fext,
                          has_friction, has_limits, use_cf, qdd):
    """Joint accelerations qdd[b] of member b at the state xc = [q | qd] (or [q | qd | z], z the
    LuGre bristle deflections) under the held friction modes (B, n or 0), tau (B, n) and the
    tool wrench fext (B, 6) (used when has_fext): any n, CRBA (crba) or ABA, stiction and joints
    resting on a stop (module docstring). Scratch: data's joint rows, f1, mass, chol and ws."""
    n = model[0].shape[0]
    k = md.member(model, b)
    q1, qd1, te, zero1, out1, bias = (joint_row(data, n, Q1), joint_row(data, n, QD1),
                                      joint_row(data, n, TE), joint_row(data, n, ZERO1),
                                      joint_row(data, n, OUT1), joint_row(data, n, BIAS))
    rhs, sol, free, stuck = (joint_vector(data, n, RHS), joint_vector(data, n, SOL),
                             joint_vector(data, n, FREE), joint_vector(data, n, STUCK))
    f1 = md.f1(data, n)
    no_fext = md.no_fext(data, n)
    M = md.mass(data, n)
    M0 = M[0]
    L = md.chol(data, n)
    for i in range(n):
        q1[0, i] = xc[b, i]
        qd1[0, i] = xc[b, n + i]
        zero1[0, i] = 0.0
    any_stuck = _joint_torques(b, xc, modes, tau, law, has_friction, n,
                               joint_vector(data, n, TE), free, stuck)
    need_crba = crba or any_stuck
    fx = no_fext
    if has_fext:
        for j in range(6):
            f1[0, j] = fext[b, j]
        fx = f1
    if not need_crba:
        if use_cf and not has_fext:
            p2r.aba_into(md.closed_form(model, k), q1, qd1, te, out1)
        else:
            md.aba(model, data, k, q1, qd1, te, fx, out1)
        for i in range(n):
            sol[i] = out1[0, i]
    have_m = False
    for _ in range(2 * n + 1):
        if need_crba:
            if not have_m:
                if use_cf and not has_fext:
                    p2r.mass_matrix_into(md.closed_form(model, k), q1, M)
                else:
                    md.mass_matrix(model, data, k, q1, M)
                md.inverse_dynamics(model, data, k, use_cf, q1, qd1, zero1, fx, bias)
                for i in range(n):
                    rhs[i] = te[0, i] - bias[0, i]
                have_m = True
            solve_free(M0, rhs, free, L, sol)
        need_crba = _release_and_lock(b, xc, law, M0, rhs, free, stuck, sol, has_limits, n)
        if not need_crba:
            break
    for i in range(n):
        qdd[b, i] = sol[i]


@njit(cache=True, error_model="numpy")
def accelerations_coupled(b, xc, modes, tau, fext, model, law, data, coupling, has_fext,
                          has_friction, has_limits, qdd):
    """qdd[b] (n,) of member b of a chain with mimic joints, in its n independent joints
    (`models.coupled`): the state xc = [q | qd (| z)] and tau (B, n) are the independent joints',
    the law (B, n, N_LAW) acts on them; the chain's n_full joints move as q_full = G q + b,
    qd_full = G qd (coupling = [G | b]). Solved as accelerations_general's CRBA path on
    M_r = G^T M(q_full) G and rhs = te - G^T (c + G - J^T fext)(q_full, qd_full): the same locked
    and stuck joints, the same breakaway and stops. Scratch: data's joint rows (the full chain's
    q, qd, zeros and bias; the first n entries of the others), mass (M, then the Cholesky factor),
    chol (M_r), f1 and ws."""
    n_full = model[0].shape[0]
    n = law.shape[1]
    k = md.member(model, b)
    q1, qd1, zero1, bias = (joint_row(data, n_full, Q1), joint_row(data, n_full, QD1),
                            joint_row(data, n_full, ZERO1), joint_row(data, n_full, BIAS))
    te, rhs, sol = (joint_vector(data, n_full, TE)[:n], joint_vector(data, n_full, RHS)[:n],
                    joint_vector(data, n_full, SOL)[:n])
    free, stuck = joint_vector(data, n_full, FREE)[:n], joint_vector(data, n_full, STUCK)[:n]
    expand_rows(coupling, xc[b:b + 1, :n], True, q1)
    expand_rows(coupling, xc[b:b + 1, n:2 * n], False, qd1)
    for i in range(n_full):
        zero1[0, i] = 0.0
    _joint_torques(b, xc, modes, tau, law, has_friction, n, te, free, stuck)
    fx = md.no_fext(data, n_full)
    if has_fext:
        f1 = md.f1(data, n_full)
        for j in range(6):
            f1[0, j] = fext[b, j]
        fx = f1
    M = md.mass(data, n_full)
    md.mass_matrix(model, data, k, q1, M)
    md.rnea(model, data, k, q1, qd1, zero1, fx, bias)
    Mr = md.chol(data, n_full).reshape(n_full * n_full)[:n * n].reshape((n, n))
    contract_matrix(coupling, M[0], Mr)
    contract_rows(coupling, bias, rhs.reshape((1, n)))
    for i in range(n):
        rhs[i] = te[i] - rhs[i]
    L = M.reshape(n_full * n_full)[:n * n].reshape((n, n))
    for _ in range(2 * n + 1):
        solve_free(Mr, rhs, free, L, sol)
        if not _release_and_lock(b, xc, law, Mr, rhs, free, stuck, sol, has_limits, n):
            break
    for i in range(n):
        qdd[b, i] = sol[i]


@njit(cache=True, error_model="numpy")
def accelerations_closed_form(b, xc, modes, tau, model, law, has_friction, has_limits, qdd):
    """qdd[b] of a planar 2R member by the closed form under the held friction modes (B, 2 or 0),
    all in registers; False (nothing written) when a joint sticks or rests on a stop:
    accelerations_general decides those.
    Compiled once and called, not inlined into the Manipulator's kernels (a shorter first
    compile)."""
    k = md.member(model, b)
    q1 = xc[b, 0]
    q2 = xc[b, 1]
    w1 = xc[b, 2]
    w2 = xc[b, 3]
    lugre = xc.shape[1] > 4
    held = modes.shape[1] > 0
    t1, s1 = effective_torque(law, b, 0, q1, w1, xc[b, 4] if lugre else 0.0, tau[b, 0],
                              has_friction, modes[b, 0] if held else 0.0)
    t2, s2 = effective_torque(law, b, 1, q2, w2, xc[b, 5] if lugre else 0.0, tau[b, 1],
                              has_friction, modes[b, 1] if held else 0.0)
    if s1 or s2:
        return False
    a1, a2 = p2r.aba_one(md.closed_form(model, k), q1, q2, w1, w2, t1, t2)
    if has_limits:
        if pushed_into_stop(law, b, 0, q1, w1, a1) or pushed_into_stop(law, b, 1, q2, w2, a2):
            return False
    qdd[b, 0] = a1
    qdd[b, 1] = a2
    return True


def rates_jacobian(model, law, b, xc, modes, tau, fext=None):
    """The exact Jacobian of the plant's rates [qd; qdd] of member b at the state xc = [q | qd]
    (b's row) under the held friction modes (b's row; empty without modes), the input torque
    tau and the tool wrench fext (b's rows; None: no wrench): (d rates / d [q, qd] (2 n, 2 n),
    d rates / d tau (2 n, n), d rates / d fext (2 n, 6) or None), from the analytic derivatives
    of the RNEA (`dynamics_derivatives`) and of the joint law (`joint_law.effective_torque_slopes`).
    A joint stuck by static friction (at rest, within its static level) is held in that mode:
    locked, its acceleration 0 whatever the perturbation (its rows zero), the other joints solved
    with it locked. None where these do not cover the state: a joint law without a derivative
    there (the torque at its limit, LuGre, Karnopp, a stuck joint at its breakaway level), or a
    joint at a stop. Plain Python: for linearisation."""
    n = model[0].shape[0]
    k = python_twin(md.member)(model, b)
    arrays = (model[0],) + tuple(python_twin(f)(model, k) for f in (md.xtree, md.inertia,
                                                                     md.armature))
    q, qd = np.asarray(xc[:n], float), np.asarray(xc[n:2 * n], float)
    held = [modes[i] if len(modes) else 0.0 for i in range(n)]
    te, stuck = zip(*(python_twin(effective_torque)(law, b, i, q[i], qd[i], 0.0, tau[i], True,
                                                    held[i]) for i in range(n)))
    te, free = np.array(te), ~np.array(stuck)
    slopes = []
    for i in range(n):
        if q[i] >= law[b, i, Q_MAX] or q[i] <= law[b, i, Q_MIN]:
            return None
        s = effective_torque_slopes(law, b, i, q[i], qd[i], tau[i], held[i]) if free[i] else (0, 0, 0)
        if s is None:
            return None
        slopes.append(s)
    d_q, d_w, d_t = (np.diag(c) for c in zip(*slopes))
    g, tool = python_twin(md.gravity)(model, k), python_twin(md.tool)(model, k)
    M = dd.mass_matrix(*arrays, q)
    rhs = te - dd.rnea_derivatives(*arrays, q, qd, np.zeros(n), g, tool, fext)[0]
    qdd = np.zeros(n)
    qdd[free] = np.linalg.solve(M[np.ix_(free, free)], rhs[free])
    hold = M @ qdd - rhs
    for i in np.flatnonzero(~free):
        if abs(hold[i]) >= static_level.py_func(law, b, i, hold[i]):
            return None                   # at breakaway: no derivative
    a_q, a_w, a_t, a_f = dd.forward_dynamics_derivatives(*arrays, q, qd, qdd, g, tool, fext, free)
    A = np.zeros((2 * n, 2 * n))
    A[:n, n:] = np.eye(n)
    A[n:, :n] = a_q + a_t @ d_q
    A[n:, n:] = a_w + a_t @ d_w
    B = np.zeros((2 * n, n))
    B[n:] = a_t @ d_t
    if a_f is None:
        return A, B, None
    F = np.zeros((2 * n, 6))
    F[n:] = a_f
    return A, B, F
