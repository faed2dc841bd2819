"""Radau IIA of order 5 as numba functions: the arithmetic of one step of Hairer & Wanner's RADAU5
(Solving Ordinary Differential Equations II, sec. IV.8), with the constants and the rules of
scipy.integrate.Radau, so that a compiled run takes SciPy's steps.

- The collocation system is solved by simplified Newton iterations on the transformed variables
  W = TI Z, whose iteration matrix splits into a real n x n matrix (MU_REAL / h - J) and a complex
  one (MU_COMPLEX / h - J), each LU-factored once per step size and Jacobian.
- The error estimate is the embedded third-order formula, filtered through the real LU (one more
  solve, and one more evaluation after a rejection).
- The step size follows Gustafsson's predictive controller (predict_factor).
- The dense output is the collocation polynomial (cubic in the step's fraction).
- The Jacobian is estimated by forward differences column by column, with SciPy's num_jac step
  choice (a factor per column that grows or shrinks with the difference's size against round-off).

The engine's compiled stiff loop (engine/stiff_loop.py) calls these between its evaluations of
the derivatives. A batch of B members is B independent systems: states are (B, n) float64 arrays,
the Jacobian and its LU factors (B, n, n), the error norms RMS over every member's states (as
SciPy's over the flattened state). Times and steps in s.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

S6 = 6 ** 0.5
C = np.array([(4 - S6) / 10, (4 + S6) / 10, 1.0])
"""The collocation nodes (fractions of the step)."""
E = np.array([-13 - 7 * S6, -13 + 7 * S6, -1.0]) / 3
"""The embedded error formula's weights on the stage increments Z (divided by h)."""
MU_REAL = 3 + 3 ** (2 / 3) - 3 ** (1 / 3)
MU_COMPLEX = (3 + 0.5 * (3 ** (1 / 3) - 3 ** (2 / 3))) - 0.5j * (3 ** (5 / 6) + 3 ** (7 / 6))
"""The eigenvalues of the inverse of the Radau IIA matrix A: one real, a complex pair."""
T = np.array([
    [0.09443876248897524, -0.14125529502095421, 0.03002919410514742],
    [0.25021312296533332, 0.20412935229379994, -0.38294211275726192],
    [1.0, 1.0, 0.0]])
TI = np.array([
    [4.17871859155190428, 0.32768282076106237, 0.52337644549944951],
    [-4.17871859155190428, -0.32768282076106237, 0.47662355450055044],
    [0.50287263494578682, -2.57192694985560522, 0.59603920482822492]])
"""A = T diag(eigenvalues) TI: the transformation of the stage increments Z to W = TI Z."""
TI_REAL = TI[0].copy()
TI_COMPLEX = TI[1] + 1j * TI[2]
P = np.array([
    [13 / 3 + 7 * S6 / 3, -23 / 3 - 22 * S6 / 3, 10 / 3 + 5 * S6],
    [13 / 3 - 7 * S6 / 3, -23 / 3 + 22 * S6 / 3, 10 / 3 - 5 * S6],
    [1 / 3, -8 / 3, 10 / 3]])
"""The dense output's coefficients: Q = Z^T P, x(t_old + theta h) = x_old + Q [theta, theta^2,
theta^3]."""

NEWTON_MAXITER = 6
"""Newton iterations tried before the step is cut (or the Jacobian recomputed)."""
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
"""Bounds of one step-size change after an error estimate."""
JAC_RECOMPUTE_RATE = 1e-3
"""A step whose Newton iterations converged at a slower rate than this (after more than two
iterations) recomputes the Jacobian at its end."""
STEP_KEEP_FACTOR = 1.2
"""A proposed growth below this keeps the step size (and the LU factors)."""

EPS = float(np.finfo(float).eps)
NUM_JAC_DIFF_REJECT = EPS ** 0.875
NUM_JAC_DIFF_SMALL = EPS ** 0.75
NUM_JAC_DIFF_BIG = EPS ** 0.25
NUM_JAC_MIN_FACTOR = 1e3 * EPS
NUM_JAC_FACTOR_INCREASE = 10.0
NUM_JAC_FACTOR_DECREASE = 0.1
"""num_jac's rules: a column's difference below DIFF_REJECT times |f| is tried again with a ten
times larger step; the factor grows below DIFF_SMALL and shrinks above DIFF_BIG."""


def newton_tolerance(rtol: float) -> float:
    """The Newton iterations' stopping tolerance (on the scaled increment), SciPy's rule."""
    return max(10 * EPS / rtol, min(0.03, rtol ** 0.5))


@njit(cache=True, error_model="numpy")
def safety_factor(n_iter):
    """The step-size safety factor after n_iter Newton iterations (fewer iterations, bolder)."""
    return 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)


@njit(cache=True, error_model="numpy")
def predict_factor(h_abs, h_abs_old, error_norm, error_norm_old):
    """Gustafsson's predictive factor for the step size (Hairer & Wanner II, sec. IV.8, (8.19)):
    the two-step rule when the last step's size and error are known (not NaN), else error^-1/4."""
    if math.isnan(error_norm_old) or math.isnan(h_abs_old) or error_norm == 0.0:
        multiplier = 1.0
    else:
        multiplier = h_abs / h_abs_old * (error_norm_old / error_norm) ** 0.25
    if error_norm == 0.0:
        return np.inf
    return min(1.0, multiplier) * error_norm ** -0.25


@njit(cache=True, error_model="numpy")
def tolerance_scale(x, rtol, atol, scale):
    """scale = atol + rtol |x| (x, scale (B, n))."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            scale[b, k] = atol + rtol * abs(x[b, k])


@njit(cache=True, error_model="numpy")
def error_scale(x, x_new, rtol, atol, scale):
    """scale = atol + rtol max(|x|, |x_new|): the error estimate's weights over a step."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            scale[b, k] = atol + rtol * max(abs(x[b, k]), abs(x_new[b, k]))


@njit(cache=True, error_model="numpy")
def rms_scaled(v, scale):
    """sqrt(mean((v / scale)^2)) over every element of the (B, n) arrays."""
    total = 0.0
    for b in range(v.shape[0]):
        for k in range(v.shape[1]):
            r = v[b, k] / scale[b, k]
            total += r * r
    return math.sqrt(total / max(1, v.size))


# ---- LU factors of the members' n x n matrices ------------------------------------------------
@njit(cache=True, error_model="numpy")
def lu_factor(A, piv):
    """A[m] = L U in place for every member m (partial pivoting by rows, LAPACK getrf's: the
    largest |re| + |im| in the column); piv[m, k] the row swapped with row k."""
    n = A.shape[1]
    for m in range(A.shape[0]):
        for k in range(n):
            best = k
            size = abs(A[m, k, k].real) + abs(A[m, k, k].imag)
            for i in range(k + 1, n):
                v = abs(A[m, i, k].real) + abs(A[m, i, k].imag)
                if v > size:
                    best, size = i, v
            piv[m, k] = best
            if best != k:
                for j in range(n):
                    tmp = A[m, k, j]
                    A[m, k, j] = A[m, best, j]
                    A[m, best, j] = tmp
            pivot = A[m, k, k]
            if pivot == 0:
                continue                       # singular: the solve gives Inf/NaN, Newton fails
            for i in range(k + 1, n):
                A[m, i, k] = A[m, i, k] / pivot
            for i in range(k + 1, n):
                lik = A[m, i, k]
                if lik != 0:
                    for j in range(k + 1, n):
                        A[m, i, j] -= lik * A[m, k, j]


@njit(cache=True, error_model="numpy")
def lu_solve(LU, piv, x):
    """x[m] = A[m]^-1 x[m] for every member, in place, from lu_factor's LU and piv."""
    n = LU.shape[1]
    for m in range(LU.shape[0]):
        for k in range(n):
            p = piv[m, k]
            if p != k:
                tmp = x[m, k]
                x[m, k] = x[m, p]
                x[m, p] = tmp
        for i in range(n):
            acc = x[m, i]
            for j in range(i):
                acc -= LU[m, i, j] * x[m, j]
            x[m, i] = acc
        for i in range(n - 1, -1, -1):
            acc = x[m, i]
            for j in range(i + 1, n):
                acc -= LU[m, i, j] * x[m, j]
            x[m, i] = acc / LU[m, i, i]


@njit(cache=True, error_model="numpy")
def iteration_matrices(J, h, LU_real, piv_real, LU_complex, piv_complex):
    """The LU factors of MU_REAL / h - J and MU_COMPLEX / h - J, member by member."""
    mr = MU_REAL / h
    mc = MU_COMPLEX / h
    for m in range(J.shape[0]):
        for i in range(J.shape[1]):
            for j in range(J.shape[2]):
                LU_real[m, i, j] = -J[m, i, j]
                LU_complex[m, i, j] = -J[m, i, j]
            LU_real[m, i, i] += mr
            LU_complex[m, i, i] += mc
    lu_factor(LU_real, piv_real)
    lu_factor(LU_complex, piv_complex)


# ---- the collocation system ---------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def transform(M, Z, W):
    """W[i] = sum_j M[i, j] Z[j] for the three stages (Z, W (3, B, n))."""
    for b in range(Z.shape[1]):
        for k in range(Z.shape[2]):
            z0, z1, z2 = Z[0, b, k], Z[1, b, k], Z[2, b, k]
            for i in range(3):
                W[i, b, k] = M[i, 0] * z0 + M[i, 1] * z1 + M[i, 2] * z2


@njit(cache=True, error_model="numpy")
def newton_increment(F, W, h, LU_real, piv_real, LU_complex, piv_complex, scale, dW, f_real,
                     f_complex):
    """One simplified Newton increment dW (3, B, n) of the transformed collocation system from the
    stage derivatives F (3, B, n) at y + Z; returns its norm RMS(dW / scale) over the three
    stages."""
    mr = MU_REAL / h
    mc = MU_COMPLEX / h
    for b in range(F.shape[1]):
        for k in range(F.shape[2]):
            f0, f1, f2 = F[0, b, k], F[1, b, k], F[2, b, k]
            f_real[b, k] = f0 * TI_REAL[0] + f1 * TI_REAL[1] + f2 * TI_REAL[2] - mr * W[0, b, k]
            f_complex[b, k] = (f0 * TI_COMPLEX[0] + f1 * TI_COMPLEX[1] + f2 * TI_COMPLEX[2]
                               - mc * (W[1, b, k] + 1j * W[2, b, k]))
    lu_solve(LU_real, piv_real, f_real)
    lu_solve(LU_complex, piv_complex, f_complex)
    total = 0.0
    for b in range(F.shape[1]):
        for k in range(F.shape[2]):
            dW[0, b, k] = f_real[b, k]
            dW[1, b, k] = f_complex[b, k].real
            dW[2, b, k] = f_complex[b, k].imag
    for i in range(3):
        for b in range(F.shape[1]):
            for k in range(F.shape[2]):
                r = dW[i, b, k] / scale[b, k]
                total += r * r
    return math.sqrt(total / max(1, dW.size))


@njit(cache=True, error_model="numpy")
def add_increment(W, dW, Z):
    """W += dW, then Z = T W."""
    for i in range(3):
        for b in range(W.shape[1]):
            for k in range(W.shape[2]):
                W[i, b, k] += dW[i, b, k]
    transform(T, W, Z)


@njit(cache=True, error_model="numpy")
def stage_state(x, Z, i, out):
    """out = x + Z[i]: the state at collocation node i."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[b, k] = x[b, k] + Z[i, b, k]


# ---- the error estimate -----------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def error_estimate(f, Z, h, LU_real, piv_real, ZE, err):
    """ZE = (sum_i E[i] Z[i]) / h, err = (MU_REAL / h - J)^-1 (f + ZE): the embedded error
    estimate, f the derivative at the step's start."""
    for b in range(Z.shape[1]):
        for k in range(Z.shape[2]):
            ZE[b, k] = (Z[0, b, k] * E[0] + Z[1, b, k] * E[1] + Z[2, b, k] * E[2]) / h
            err[b, k] = f[b, k] + ZE[b, k]
    lu_solve(LU_real, piv_real, err)


@njit(cache=True, error_model="numpy")
def refine_error(f_err, ZE, LU_real, piv_real, err):
    """err = (MU_REAL / h - J)^-1 (f(t, x + err) + ZE): the estimate filtered once more (after a
    rejection, Hairer & Wanner's remedy for stiff components)."""
    for b in range(ZE.shape[0]):
        for k in range(ZE.shape[1]):
            err[b, k] = f_err[b, k] + ZE[b, k]
    lu_solve(LU_real, piv_real, err)


# ---- dense output -------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def dense_coefficients(Z, Q):
    """Q[j] = sum_i P[i, j] Z[i]: the collocation polynomial of the step just taken."""
    for b in range(Z.shape[1]):
        for k in range(Z.shape[2]):
            z0, z1, z2 = Z[0, b, k], Z[1, b, k], Z[2, b, k]
            for j in range(3):
                Q[j, b, k] = z0 * P[0, j] + z1 * P[1, j] + z2 * P[2, j]


@njit(cache=True, error_model="numpy")
def dense_at(t, t_old, h, x_old, Q, out):
    """out = x_old + Q[0] theta + Q[1] theta^2 + Q[2] theta^3, theta = (t - t_old) / h."""
    x = (t - t_old) / h
    x2 = x * x
    x3 = x2 * x
    for b in range(x_old.shape[0]):
        for k in range(x_old.shape[1]):
            out[b, k] = Q[0, b, k] * x + Q[1, b, k] * x2 + Q[2, b, k] * x3 + x_old[b, k]


@njit(cache=True, error_model="numpy")
def predicted_stages(t, h, x, t_old, h_old, x_old, Q, Z0):
    """Z0[i] = the last step's collocation polynomial at t + C[i] h, minus x: the Newton
    iterations' starting guess."""
    for i in range(3):
        theta = (t + h * C[i] - t_old) / h_old
        t2 = theta * theta
        t3 = t2 * theta
        for b in range(x.shape[0]):
            for k in range(x.shape[1]):
                Z0[i, b, k] = (Q[0, b, k] * theta + Q[1, b, k] * t2 + Q[2, b, k] * t3
                               + x_old[b, k]) - x[b, k]


# ---- the finite-difference Jacobian ---------------------------------------------------------
@njit(cache=True, error_model="numpy")
def jacobian_steps(x, f, threshold, factor, y_scale, step):
    """The columns' difference steps: y_scale = sign(f) max(threshold, |x|), step = (x + factor
    y_scale) - x, never 0 (the factor grows tenfold until it is not). NaN factors (a fresh
    solver) start at sqrt(EPS)."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            if math.isnan(factor[b, k]):
                factor[b, k] = EPS ** 0.5
            sign = 1.0 if f[b, k] >= 0 else -1.0
            y_scale[b, k] = sign * max(threshold, abs(x[b, k]))
            step[b, k] = (x[b, k] + factor[b, k] * y_scale[b, k]) - x[b, k]
            while step[b, k] == 0.0:
                factor[b, k] *= 10
                step[b, k] = (x[b, k] + factor[b, k] * y_scale[b, k]) - x[b, k]


@njit(cache=True, error_model="numpy")
def perturbed(x, j, step, out):
    """out = x with column j moved by step[:, j] in every member (out[b, j] = x[b, j] + step)."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[b, k] = x[b, k]
        out[b, j] = x[b, j] + step[b, j]


@njit(cache=True, error_model="numpy")
def _largest_difference(f_new, f, b):
    """(row, |difference|, scale) of member b's largest difference f_new - f."""
    row = 0
    best = -1.0
    for i in range(f.shape[1]):
        d = abs(f_new[b, i] - f[b, i])
        if d > best:
            row, best = i, d
    return row, best, max(abs(f[b, row]), abs(f_new[b, row]))


@njit(cache=True, error_model="numpy")
def jacobian_column(J, j, f_new, f, max_diff, f_scale):
    """J[:, :, j] = f_new - f (the undivided difference of column j), with its largest entry and
    the scale it is judged against (max of |f| and |f_new| in that row)."""
    for b in range(f.shape[0]):
        for i in range(f.shape[1]):
            J[b, i, j] = f_new[b, i] - f[b, i]
        row, best, scale = _largest_difference(f_new, f, b)
        max_diff[b, j] = best
        f_scale[b, j] = scale


@njit(cache=True, error_model="numpy")
def jacobian_retry_steps(x, j, max_diff, f_scale, factor, y_scale, retry):
    """retry[:, j] = the ten times larger step of column j for the members whose difference was
    lost in round-off (0 for the others); True when some member is retried."""
    any_retry = False
    for b in range(x.shape[0]):
        retry[b, j] = 0.0
        if max_diff[b, j] < NUM_JAC_DIFF_REJECT * f_scale[b, j]:
            new_factor = NUM_JAC_FACTOR_INCREASE * factor[b, j]
            retry[b, j] = (x[b, j] + new_factor * y_scale[b, j]) - x[b, j]
            any_retry = True
    return any_retry


@njit(cache=True, error_model="numpy")
def jacobian_retry_column(J, j, f_new, f, max_diff, f_scale, factor, step, retry):
    """Keep the retried difference of column j (member by member) when it stands out better from
    round-off than the first one; its factor and step with it."""
    for b in range(f.shape[0]):
        if not max_diff[b, j] < NUM_JAC_DIFF_REJECT * f_scale[b, j]:
            continue                           # not retried (jacobian_retry_steps)
        row, best, scale = _largest_difference(f_new, f, b)
        if max_diff[b, j] * scale < best * f_scale[b, j]:
            for i in range(f.shape[1]):
                J[b, i, j] = f_new[b, i] - f[b, i]
            factor[b, j] = NUM_JAC_FACTOR_INCREASE * factor[b, j]
            step[b, j] = retry[b, j]
            max_diff[b, j] = best
            f_scale[b, j] = scale


@njit(cache=True, error_model="numpy")
def jacobian_finish(J, step, factor, max_diff, f_scale):
    """Divide the differences by their steps, and adapt each column's factor for the next
    estimate: larger when the difference was small against |f|, smaller when it was large."""
    for b in range(J.shape[0]):
        for j in range(J.shape[2]):
            for i in range(J.shape[1]):
                J[b, i, j] /= step[b, j]
            if max_diff[b, j] < NUM_JAC_DIFF_SMALL * f_scale[b, j]:
                factor[b, j] *= NUM_JAC_FACTOR_INCREASE
            elif max_diff[b, j] > NUM_JAC_DIFF_BIG * f_scale[b, j]:
                factor[b, j] *= NUM_JAC_FACTOR_DECREASE
            factor[b, j] = max(factor[b, j], NUM_JAC_MIN_FACTOR)
