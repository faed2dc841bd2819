"""The step-size rules of the adaptive Runge-Kutta solvers, as numba functions of plain numbers and
flat arrays: the first step (Hairer's rule), the step after an accepted or a rejected step, and the
dense output's evaluation. The Python solvers (solvers/explicit.py) and the compiled adaptive loop
the engine generates both call them, so the two take the same steps to the last bit.

Times and steps in s; states flat (B * n) float64 arrays.
"""
from __future__ import annotations

import math

import numba

SAFETY = 0.9
"""Multiplies the step size predicted from the error estimate, so the next step is likely accepted."""
MIN_FACTOR = 0.2
"""Smallest factor by which one error estimate may shrink the step."""
MAX_FACTOR = 10.0
"""Largest factor by which one error estimate may grow the step."""


@numba.njit(cache=True, error_model="numpy")
def step_after_accept(error, exponent, rejected, h, h_taken, clipped):
    """The step (s) suggested after a step of h_taken s was accepted with scaled error `error` < 1:
    h_taken * SAFETY * error**exponent within [MIN_FACTOR, MAX_FACTOR] times (no growth right after
    a rejection); a step cut short by the bound (clipped) keeps at least the h it was planned with.
    exponent = -1 / (error order + 1)."""
    factor = MAX_FACTOR if error == 0.0 else min(MAX_FACTOR, SAFETY * error ** exponent)
    if rejected:
        factor = min(1.0, factor)
    h_next = h_taken * factor
    return max(h_next, h) if clipped else h_next


@numba.njit(cache=True, error_model="numpy")
def step_after_reject(error, exponent, h_taken):
    """The step (s) to try after a step of h_taken s was rejected with scaled error `error` >= 1
    (inf when the state or its derivative was not finite: the step shrinks by MIN_FACTOR)."""
    if math.isfinite(error):
        return h_taken * max(MIN_FACTOR, SAFETY * error ** exponent)
    return h_taken * MIN_FACTOR


@numba.njit(cache=True, error_model="numpy")
def _rms_scaled(v, x0, rtol, atol):
    """sqrt(mean((v / (atol + rtol |x0|))**2)), summed in element order."""
    total = 0.0
    for k in range(v.shape[0]):
        r = v[k] / (atol + rtol * abs(x0[k]))
        total += r * r
    return math.sqrt(total / v.shape[0])


@numba.njit(cache=True, error_model="numpy")
def initial_step_probe(x0, f0, rtol, atol, interval, x_probe):
    """The first half of Hairer's rule for the first step (Hairer, Norsett & Wanner, Solving ODEs
    I, sec. II.4, RMS norms): returns (h0, d1) and fills x_probe = x0 + h0 f0, where the caller
    evaluates f1 = f(t0 + h0, x_probe) for initial_step_choice. x0, f0 non-empty; interval > 0."""
    d0 = _rms_scaled(x0, x0, rtol, atol)
    d1 = _rms_scaled(f0, x0, rtol, atol)
    usable = math.isfinite(d0) and math.isfinite(d1) and d0 >= 1e-5 and d1 >= 1e-5
    h0 = min(0.01 * d0 / d1 if usable else 1e-6, interval)
    for k in range(x0.shape[0]):
        x_probe[k] = x0[k] + h0 * f0[k]
    return h0, d1


@numba.njit(cache=True, error_model="numpy")
def initial_step_choice(x0, f0, f1, rtol, atol, interval, max_step, h0, d1, error_order):
    """The first step (s) from initial_step_probe's (h0, d1) and f1 = f(t0 + h0, x0 + h0 f0)."""
    total = 0.0
    for k in range(x0.shape[0]):
        r = (f1[k] - f0[k]) / (atol + rtol * abs(x0[k]))
        total += r * r
    d2 = math.sqrt(total / x0.shape[0]) / h0
    if not (math.isfinite(d1) and math.isfinite(d2)):
        return min(h0, max_step)
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (error_order + 1))
    return min(100 * h0, h1, interval, max_step)


@numba.njit(cache=True, error_model="numpy")
def hermite_at(t, t0, h, x0, x1, f0, f1, out):
    """out = the cubic Hermite interpolant on [t0, t0 + h] through x0, x1 with slopes f0, f1, at t."""
    s = (t - t0) / h
    s2 = s * s
    h00 = (1.0 + 2.0 * s) * (1.0 - s) ** 2
    h01 = s2 * (3.0 - 2.0 * s)
    h10 = s * (1.0 - s) ** 2
    h11 = s2 * (s - 1.0)
    for k in range(out.shape[0]):
        out[k] = h00 * x0[k] + h01 * x1[k] + h * (h10 * f0[k] + h11 * f1[k])


@numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def power_series_at(t, t_old, h, x_old, Q, out):
    """out = x_old + theta (Q_0 + theta (Q_1 + ...)), theta = (t - t_old) / h: the dense output of
    a step in the power basis, Q of shape (degree, B * n). Inlined where the compiled adaptive
    loop calls it: each log sample between steps takes one, and called out of line it was a
    tenth of W1's dopri5 loop (0.72 -> 0.67 ms inlined, the same numbers)."""
    theta = (t - t_old) / h
    last = Q.shape[0] - 1
    for k in range(out.shape[0]):
        acc = Q[last, k]
        for j in range(last - 1, -1, -1):
            acc = Q[j, k] + theta * acc
        out[k] = x_old[k] + theta * acc
