"""Variable-order BDF (NDF) as numba functions: the arithmetic of one step of the quasi-constant
step-size backward differentiation formulas of orders 1 to 5 with Klopfenstein-Shampine's
numerical differentiation formulas (L. F. Shampine and M. W. Reichelt, "The MATLAB ODE Suite",
SIAM J. Sci. Comput. 18(1), 1997; G. D. Byrne and A. C. Hindmarsh, ACM TOMS 1(1), 1975), with
the constants and the rules of scipy.integrate.BDF, so that a compiled run takes SciPy's steps.

- The solution's history is the modified divided differences D[0..order+2] of its interpolating
  polynomial on an equally spaced grid of the current step size; a change of step size by a
  factor rescales them (change_differences), an accepted step updates them
  (update_differences).
- Each step solves the implicit formula by simplified Newton iterations on the iteration matrix
  I - c J, c = h / alpha[order], LU-factored once per step size and Jacobian (the LU functions
  and the finite-difference Jacobian are Radau's, solvers/radau_kernels.py).
- The error estimate is error_const[order] times the last difference; after order + 1 steps of
  one size, the orders below and above are weighed and the step size and order chosen.
- The dense output is the interpolating polynomial of the differences (dense_at).

A batch of B members is B independent systems: states are (B, n) float64 arrays, D is
(MAX_ORDER + 3, B, n), the Jacobian and its LU factors (B, n, n), and the error norms are RMS
over every member's states (as SciPy's over the flattened state). Times and steps in s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .radau_kernels import lu_factor, lu_solve

MAX_ORDER = 5
NEWTON_MAXITER = 4
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0

KAPPA = np.array([0, -0.1850, -1 / 9, -0.0823, -0.0415, 0])
"""Klopfenstein-Shampine's NDF coefficients per order (0 at order 0 and 5: plain BDF there)."""
GAMMA = np.hstack((0, np.cumsum(1 / np.arange(1, MAX_ORDER + 1))))
"""gamma[k] = sum_{j <= k} 1 / j."""
ALPHA = (1 - KAPPA) * GAMMA
"""The formulas' leading coefficients: c = h / alpha[order] multiplies f in the Newton system."""
ERROR_CONST = KAPPA * GAMMA + 1 / np.arange(1, MAX_ORDER + 2)
"""The local error of order k is ERROR_CONST[k] times the (k + 1)-th difference."""


@njit(cache=True, error_model="numpy")
def safety_factor(n_iter):
    """The step-size safety factor after n_iter Newton iterations (fewer iterations, bolder)."""
    return 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)


@njit(cache=True, error_model="numpy")
def _step_change_matrix(order, factor, R):
    """R[:order + 1, :order + 1] = SciPy's compute_R(order, factor): the cumulative products down
    the columns of M, M[0] = 1, M[i, j] = (i - 1 - factor j) / i for i, j >= 1."""
    for j in range(order + 1):
        R[0, j] = 1.0
    for i in range(1, order + 1):
        R[i, 0] = 0.0
        for j in range(1, order + 1):
            R[i, j] = R[i - 1, j] * ((i - 1 - factor * j) / i)


@njit(cache=True, error_model="numpy")
def change_differences(D, order, factor, R, U, RU, rows):
    """D[:order + 1] rescaled in place to the step size times factor (SciPy's change_D:
    D = (R U)^T D with R = compute_R(order, factor), U = compute_R(order, 1)). R, U, RU
    (MAX_ORDER + 1, MAX_ORDER + 1) and rows (MAX_ORDER + 1,) are scratch."""
    _step_change_matrix(order, factor, R)
    _step_change_matrix(order, 1.0, U)
    for i in range(order + 1):
        for j in range(order + 1):
            acc = 0.0
            for k in range(order + 1):
                acc += R[i, k] * U[k, j]
            RU[i, j] = acc
    for b in range(D.shape[1]):
        for m in range(D.shape[2]):
            for j in range(order + 1):
                acc = 0.0
                for k in range(order + 1):
                    acc += RU[k, j] * D[k, b, m]
                rows[j] = acc
            for j in range(order + 1):
                D[j, b, m] = rows[j]


@njit(cache=True, error_model="numpy")
def start_differences(D, x, f, h):
    """The history of a fresh solver at x with derivative f: D[0] = x, D[1] = h f."""
    for b in range(x.shape[0]):
        for m in range(x.shape[1]):
            D[0, b, m] = x[b, m]
            D[1, b, m] = f[b, m] * h


@njit(cache=True, error_model="numpy")
def predict(D, order, x_predict, psi):
    """The predictor x_predict = D[0] + ... + D[order] and the Newton system's constant
    psi = (gamma[1] D[1] + ... + gamma[order] D[order]) / alpha[order]."""
    for b in range(D.shape[1]):
        for m in range(D.shape[2]):
            acc = D[0, b, m]
            for j in range(1, order + 1):
                acc += D[j, b, m]
            x_predict[b, m] = acc
            acc = 0.0
            for j in range(1, order + 1):
                acc += D[j, b, m] * GAMMA[j]
            psi[b, m] = acc / ALPHA[order]


@njit(cache=True, error_model="numpy")
def iteration_matrix(J, c, LU, piv):
    """The LU factors of I - c J, member by member."""
    for m in range(J.shape[0]):
        for i in range(J.shape[1]):
            for j in range(J.shape[2]):
                LU[m, i, j] = -c * J[m, i, j]
            LU[m, i, i] += 1.0
    lu_factor(LU, piv)


@njit(cache=True, error_model="numpy")
def newton_increment(f, c, psi, d, LU, piv, dy):
    """dy = (I - c J)^-1 (c f - psi - d): one simplified Newton increment."""
    for b in range(f.shape[0]):
        for m in range(f.shape[1]):
            dy[b, m] = c * f[b, m] - psi[b, m] - d[b, m]
    lu_solve(LU, piv, dy)


@njit(cache=True, error_model="numpy")
def add_increment(dy, x, d):
    """x += dy and d += dy (the iterate and its distance from the predictor)."""
    for b in range(dy.shape[0]):
        for m in range(dy.shape[1]):
            x[b, m] += dy[b, m]
            d[b, m] += dy[b, m]


@njit(cache=True, error_model="numpy")
def scaled_times(v, k, out):
    """out = k v (the error of a difference: ERROR_CONST[order] times it)."""
    for b in range(v.shape[0]):
        for m in range(v.shape[1]):
            out[b, m] = k * v[b, m]


@njit(cache=True, error_model="numpy")
def update_differences(D, d, order):
    """An accepted step's differences: D[order + 2] = d - D[order + 1], D[order + 1] = d, then
    D[i] += D[i + 1] from i = order down to 0 (d: the corrector's distance from the predictor,
    the new (order + 1)-th difference)."""
    for b in range(D.shape[1]):
        for m in range(D.shape[2]):
            D[order + 2, b, m] = d[b, m] - D[order + 1, b, m]
            D[order + 1, b, m] = d[b, m]
            for i in range(order, -1, -1):
                D[i, b, m] += D[i + 1, b, m]


@njit(cache=True, error_model="numpy")
def order_choice(order, error_m_norm, error_norm, error_p_norm, safety):
    """(new order, step factor) from the error norms of the orders below, at and above this one
    (SciPy's rule: the largest of error^(-1 / (k + 1)), ties to the lower order; the factor at
    most MAX_FACTOR). An infinite norm stands for an order not available."""
    best = -1.0
    delta = 0
    norms = (error_m_norm, error_norm, error_p_norm)
    for i in range(3):
        e = norms[i]
        if e == 0.0:
            factor = np.inf
        else:
            factor = e ** (-1.0 / (order + i))
        if factor > best:
            best = factor
            delta = i - 1
    return order + delta, min(MAX_FACTOR, safety * best)


@njit(cache=True, error_model="numpy")
def dense_at(t, t_now, h, order, D, out):
    """out = the interpolating polynomial of the differences D[:order + 1] at t, on the grid
    t_now, t_now - h, ... of step h (SciPy's BdfDenseOutput)."""
    for b in range(D.shape[1]):
        for m in range(D.shape[2]):
            out[b, m] = 0.0
    p = 1.0
    for j in range(order):
        p *= (t - (t_now - h * j)) / (h * (1 + j))
        for b in range(D.shape[1]):
            for m in range(D.shape[2]):
                out[b, m] += D[j + 1, b, m] * p
    for b in range(D.shape[1]):
        for m in range(D.shape[2]):
            out[b, m] += D[0, b, m]
