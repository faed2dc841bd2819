"""The stage arithmetic of the Runge-Kutta solvers, shared by the Python solvers and the compiled
loops the engine generates: stage sums and scaled error norms.

Promise: every result is bit-identical per batch member. Each element of a (B, n) state is
computed from that member's numbers alone, one element at a time, in a fixed order (BLAS dot
products promise no order), so a member of a batch gets bit for bit what a run of that member on
its own gets, and a compiled loop gets bit for bit what the Python solver gets.
"""
from __future__ import annotations

import math

import numba

DOP853_E3_WEIGHT = 0.01
"""Weight of DOP853's 3rd-order estimate in its combined error norm (Hairer's dop853.f)."""


@numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def memberwise_stage_sum(base, h, weights, stages, count, out):
    """out[k] = base[k] + h * sum_{j < count} weights[j] * stages[j, k], element by element.

    base, out: flat (B * n) states; stages: (rows, B * n) stage derivatives; weights: a tableau
    row; h: the step (s). Zero weights are skipped. out must not overlap base or stages. Each
    element's sum starts at 0.0 and adds the weighted stages in order j = 0, 1, ..., so the
    rounding is that of a per-element sum; the passes over k are plain loops the compiler
    vectorises (over a batch's members), as few as the nonzero weights allow: one for a row with
    one nonzero weight (each stage of RK4, Euler, Heun's first), else one per nonzero weight and
    one to add the base. Fewer passes over a short state are what count: each pass's vector loop
    sets up around a few elements (W2 at B = 1: 7.0 -> 6.4 ms with RK4's stages in one pass).
    """
    n = out.shape[0]
    used = 0
    last = 0
    for j in range(count):
        if weights[j] != 0.0:
            used += 1
            last = j
    if used == 1:
        w = weights[last]
        row = stages[last]
        for k in range(n):
            out[k] = base[k] + h * (0.0 + w * row[k])
        return
    started = False
    for j in range(count):
        w = weights[j]
        if w != 0.0:
            row = stages[j]
            if started:
                for k in range(n):
                    out[k] += w * row[k]
            else:
                for k in range(n):
                    out[k] = 0.0 + w * row[k]
                started = True
    if not started:
        for k in range(n):
            out[k] = 0.0
    for k in range(n):
        out[k] = base[k] + h * out[k]


@numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def memberwise_scaled_square_sum(weights, stages, count, x, x_new, rtol, atol):
    """sum_k ((weights . stages[:, k]) / (atol + rtol * max(|x[k]|, |x_new[k]|)))**2, the stage
    combination of each element summed in a fixed order (x, x_new: flat states)."""
    total = 0.0
    for k in range(x.shape[0]):
        acc = 0.0
        for j in range(count):
            w = weights[j]
            if w != 0.0:
                acc += w * stages[j, k]
        ratio = acc / (atol + rtol * max(abs(x[k]), abs(x_new[k])))
        total += ratio * ratio
    return total


@numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def memberwise_error_norm(E, E3, stages, h, x, x_new, rtol, atol):
    """The scaled RMS error of an embedded Runge-Kutta step over all B * n elements (the batch
    shares each step): |h| * sqrt(sum (E . K / scale)^2 / size), scale = atol + rtol *
    max(|x|, |x_new|); with a second estimate E3 (DOP853, E3 non-empty) Hairer's combination
    |h| * s5 / sqrt((s5 + 0.01 s3) * size). inf when the error is not finite.

    E, E3: the error weights (E3 of length 0 for one estimate); stages: (rows, B * n); h (s);
    x, x_new: the flat states at the step's start and end. Inlined, with the square sums, where
    the compiled adaptive loop calls it once a step: out of line its eight arrays were pushed on
    the stack at each call (W1 dopri5 0.62-0.67 -> 0.60-0.66 ms, the same numbers)."""
    size = x.shape[0]
    if size == 0:
        return 0.0
    sq5 = memberwise_scaled_square_sum(E, stages, E.shape[0], x, x_new, rtol, atol)
    if E3.shape[0] == 0:
        error = abs(h) * math.sqrt(sq5 / size)
    else:
        sq3 = memberwise_scaled_square_sum(E3, stages, E3.shape[0], x, x_new, rtol, atol)
        if sq5 == 0.0 and sq3 == 0.0:
            return 0.0
        error = abs(h) * sq5 / math.sqrt((sq5 + DOP853_E3_WEIGHT * sq3) * size)
    return error if math.isfinite(error) else math.inf
