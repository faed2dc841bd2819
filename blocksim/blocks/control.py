"""Feedback controllers: the PID of a robot joint loop, continuous or discrete, with setpoint
weights, a filtered or velocity-fed derivative, output limits and anti-windup."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from .base import Block, Kernels, Param, SampleTime, common_width, register
from .discrete import INTEGRATION_METHODS

ANTIWINDUP = ("none", "clamping", "back_calculation")
NO_WINDUP_GUARD, CLAMPING, BACK_CALCULATION = 0, 1, 2

D_NONE, D_FILTERED, D_VELOCITY = 0, 1, 2
"""Where the derivative term comes from: nowhere (Kd = 0), the filter state, the velocity inputs."""

METHOD_WEIGHT = {"forward": 0.0, "backward": 1.0, "trapezoidal": 0.5}
"""Share of the current sample in the discrete integrator's output: y(k) = x(k) + weight T u(k)."""


# Column of each gain in the PID's packed parameter array g (B, w, N_GAINS): one array instead of
# nine, so a kernel call passes (and, from Python, unboxes) one array for all the gains.
KP, KI, KD, BW, CW, NF, LO, HI, KB = range(9)
N_GAINS = 9


@njit(cache=True, forceinline=True, _nrt=False)
def _pick(signal, b, i):
    return signal[b, i if signal.shape[1] > 1 else 0]


@njit(cache=True, forceinline=True, _nrt=False)
def pid_law(ref, meas, ref_d, meas_d, b, i, integral, filt, derivative_gain, g, d_source):
    """(u before saturation, error e) of one joint: u = Kp (bw r - m) + Ki integral + D, with
    D = Kd (cw r_d - m_d) (velocity inputs) or Kd N (cw r - m - filt) / derivative_gain (filter).
    g (B, w, N_GAINS): the packed gains (columns KP, KI, ...)."""
    r = _pick(ref, b, i)
    m = _pick(meas, b, i)
    u = g[b, i, KP] * (g[b, i, BW] * r - m) + g[b, i, KI] * integral
    if d_source == 2:
        u = u + g[b, i, KD] * (g[b, i, CW] * _pick(ref_d, b, i) - _pick(meas_d, b, i))
    elif d_source == 1:
        u = u + g[b, i, KD] * g[b, i, NF] * (g[b, i, CW] * r - m - filt) / derivative_gain
    return u, r - m


@njit(cache=True, forceinline=True, _nrt=False)
def _saturate(u, lo, hi):
    return lo if u < lo else (hi if u > hi else u)


@njit(cache=True, forceinline=True, _nrt=False)
def _integrand(e, u, y, Ki, kb, antiwindup):
    """The integral state's rate (continuous) or increment per unit time (discrete): e, except
    clamping: 0 while the output is saturated and Ki e pushes further out; back-calculation:
    e + kb (y - u), which bleeds the integral while y != u."""
    if antiwindup == 1:
        if (u > y and Ki * e > 0.0) or (u < y and Ki * e < 0.0):
            return 0.0
        return e
    if antiwindup == 2:
        return e + kb * (y - u)
    return e


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_continuous_output(ref, meas, ref_d, meas_d, x, g, d_source, out):
    """out = sat(Kp (bw r - m) + Ki z + D); x = [z | filter] (B, w or 2w)."""
    w = out.shape[1]
    for b in range(out.shape[0]):
        for i in range(w):
            filt = x[b, w + i] if d_source == 1 else 0.0
            u, e = pid_law(ref, meas, ref_d, meas_d, b, i, x[b, i], filt, 1.0, g, d_source)
            out[b, i] = _saturate(u, g[b, i, LO], g[b, i, HI])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_continuous_rate(ref, meas, ref_d, meas_d, x, g, d_source, antiwindup, dx):
    """z' = e (with anti-windup), filter' = N (cw r - m - filter)."""
    w = g.shape[1]
    plain = antiwindup == NO_WINDUP_GUARD and d_source != D_FILTERED
    for b in range(dx.shape[0]):
        for i in range(w):
            if plain:       # z' = e: the law's output is not needed
                dx[b, i] = _pick(ref, b, i) - _pick(meas, b, i)
                continue
            filt = x[b, w + i] if d_source == 1 else 0.0
            u, e = pid_law(ref, meas, ref_d, meas_d, b, i, x[b, i], filt, 1.0, g, d_source)
            y = _saturate(u, g[b, i, LO], g[b, i, HI])
            dx[b, i] = _integrand(e, u, y, g[b, i, KI], g[b, i, KB], antiwindup)
            if d_source == 1:
                dx[b, w + i] = g[b, i, NF] * (g[b, i, CW] * _pick(ref, b, i) - _pick(meas, b, i) - filt)


@njit(cache=True, error_model="numpy")
def pid_discrete_step(ref, meas, ref_d, meas_d, x, g, d_source, antiwindup, Ts, int_weight,
                      filt_weight, out, write_out, x_next, write_state):
    """One sample of the discrete PID: out = sat(u[k]) (when write_out) and the next state x_next
    (when write_state; may alias x).

    Integral (rule by int_weight a: 0 forward, 1 backward, 1/2 trapezoidal):
        I[k] = Ki (z[k] + a Ts e[k]),  z[k+1] = z[k] + Ts integrand[k]
    (forward with no anti-windup: u[k] uses z[k], z[k+1] = z[k] + Ts e[k], as in workload W2).
    Filtered derivative, g the filter's integrator, v = cw r - m, rule weight f:
        d[k] = N (v[k] - g[k]) / (1 + f N Ts),  D[k] = Kd d[k],  g[k+1] = g[k] + Ts d[k].
    """
    w = g.shape[1]
    for b in range(g.shape[0]):
        for i in range(w):
            z = x[b, i]
            e = _pick(ref, b, i) - _pick(meas, b, i)
            integral = z if int_weight == 0.0 else z + int_weight * Ts * e
            filt = x[b, w + i] if d_source == 1 else 0.0
            u, e = pid_law(ref, meas, ref_d, meas_d, b, i, integral, filt,
                           1.0 + filt_weight * g[b, i, NF] * Ts, g, d_source)
            y = _saturate(u, g[b, i, LO], g[b, i, HI])
            if write_out:
                out[b, i] = y
            if write_state:
                x_next[b, i] = z + Ts * _integrand(e, u, y, g[b, i, KI], g[b, i, KB], antiwindup)
                if d_source == 1:
                    v = g[b, i, CW] * _pick(ref, b, i) - _pick(meas, b, i)
                    x_next[b, w + i] = filt + Ts * g[b, i, NF] * (v - filt) / (
                        1.0 + filt_weight * g[b, i, NF] * Ts)


PIDParams = namedtuple("PIDParams", "gains d_source antiwindup Ts int_weight filt_weight z0")
"""PID kernels' record: the packed gains (B, w, N_GAINS), where D comes from (D_*), the
anti-windup (index in ANTIWINDUP), the discrete timing: period Ts (s) and the integral's and
the filter's rule weights (METHOD_WEIGHT; all 0 for the continuous PID), and the initial integral
state z0 (B, w) (read by initial_state, not by the kernels). u = (ref, meas, ref_d, meas_d). The
discrete output never moves the state and the update never writes the output."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_continuous_output_k(t, xc, xd, u, y, p):
    pid_continuous_output(u[0], u[1], u[2], u[3], xc, p.gains, p.d_source, y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_continuous_derivative_k(t, xc, xd, u, dxc, p):
    pid_continuous_rate(u[0], u[1], u[2], u[3], xc, p.gains, p.d_source, p.antiwindup, dxc)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_discrete_output_k(t, xc, xd, u, y, p):
    pid_discrete_step(u[0], u[1], u[2], u[3], xd, p.gains, p.d_source, p.antiwindup, p.Ts,
                      p.int_weight, p.filt_weight, y[0], True, xd, False)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_discrete_update_k(t, xc, xd, u, p):
    pid_discrete_step(u[0], u[1], u[2], u[3], xd, p.gains, p.d_source, p.antiwindup, p.Ts,
                      p.int_weight, p.filt_weight, xd, False, xd, True)


# ---- the continuous PID with output limits: held modes (Simulink's zero-crossing modes) -----------
#
# With a finite limit on some channel, the continuous PID declares zero crossings at u - lower and
# u - upper (and, with clamping, at Ki e) and holds its mode through the solver's stages, so the
# output and the integrand are smooth between located crossings and switch exactly there.
#
# Without clamping the mode is the region of u (REGION_*: below, between, above), the last w
# columns of xd; the output is the limit or u by the held region, and back-calculation's integrand
# e + kb (y - u) reads y of the held region.
#
# Clamping freezes the integral while the output is saturated and Ki e pushes further out. That
# switch can make a sliding mode: saturated and frozen, the P and D terms pull u back inside;
# inside, the integral pushes it out again at once (a PI driving a first-order plant into its limit
# does this for a while). The solution then stays on the limit, u = limit, with the integral at
# the value that puts it there, p = (limit - P - D) / Ki (Filippov; its rate lies between 0 and e).
# Switched live in the stages this chatters (dopri5 rejected 5472 steps in 0.5 s of such a loop at
# rtol 1e-4); switched by the crossing alone it would fire events a location tolerance apart. So
# after the frozen integral let u back inside, the mode is CLAMP_MAY_SLIDE: the state x integrates
# e (the unclamped integral), the integral is z = x + o with the offset o held, and the output is
# min(upper, u) (max(lower, u) at the lower limit). On the limit, o is the running minimum of
# q = p - x, so that z = p while q falls, as the slide needs. The slide's ends are tangencies (u
# leaves the limit with zero slope; or P + D turns outward), which no sign change of a function of
# the states and inputs locates, so the modes kernel samples q and p at the events of a clock
# crossing t - t_next and places the next sample where a parabola through the last three predicts
# an end (else at twice the last spacing, from SLIDE_FIRST_SAMPLE). After the end u - limit crosses
# where q climbs back over the last sample, and o becomes the parabola's minimum of q; p falling at
# a sample freezes the integral at the parabola's maximum of p. Entries into saturation, the
# clamp's switches and a slide's start are located exactly; a slide's ends by the samples (in
# tests/test_held_saturations.py 24 samples, the last within 1e-6 s of the end, and the loop within
# 1e-8 of its exact solution).
#
# xd of clamping, CLAMP_COLUMNS blocks of w columns: the offset o, the mode, the next sample time,
# the number of samples on the limit, and the last two samples (t, S, R): S = side (lim - P - D -
# Ki x) (Ki q, oriented so that it falls during a slide) and R = side (lim - P - D) (Ki p, rises).
REGION_BELOW, REGION_BETWEEN, REGION_ABOVE = -1.0, 0.0, 1.0
CLAMP_FREE, CLAMP_INTEGRATING, CLAMP_FROZEN, CLAMP_MAY_SLIDE = 0, 1, 2, 3
"""Clamping's modes per channel, signed: + at the upper limit, - at the lower one. FREE: inside,
x' = e; INTEGRATING: saturated, Ki e pulls back inside, x' = e; FROZEN: saturated, Ki e pushes
out, x' = 0; MAY_SLIDE: after FROZEN, x' = e, the output bounded by the limit (see above)."""
C_OFFSET, C_MODE, C_NEXT, C_COUNT, C_T1, C_S1, C_R1, C_T2, C_S2, C_R2 = range(10)
CLAMP_COLUMNS = 10
"""Clamping's xd blocks of w columns each."""
SLIDE_FIRST_SAMPLE = 1e-6
"""The first sample of a slide this long (s, times max(1, |t|)) after it may start; the spacing
then doubles until a parabola predicts an end."""
SLIDE_CLOSEST_SAMPLES = 1e-7
"""Samples of a slide no closer than this (s, times max(1, |t|))."""


@njit(cache=True, forceinline=True, _nrt=False)
def pid_pd_term(ref, meas, ref_d, meas_d, x, g, d_source, b, i, w):
    """(P + D, e) of one joint: the law without its integral term; x = [z | filter] (B, w or 2w)."""
    filt = x[b, w + i] if d_source == 1 else 0.0
    return pid_law(ref, meas, ref_d, meas_d, b, i, 0.0, filt, 1.0, g, d_source)


@njit(cache=True, forceinline=True, _nrt=False)
def limit_crossing(v, limit, infinite_value):
    """v - limit, or infinite_value (a constant sign) when the limit is infinite."""
    return v - limit if math.isfinite(limit) else infinite_value


@njit(cache=True, forceinline=True, _nrt=False)
def region_of(v, lo, hi):
    """REGION_ABOVE at or above hi, REGION_BELOW at or below lo, else REGION_BETWEEN."""
    return REGION_ABOVE if v >= hi else (REGION_BELOW if v <= lo else REGION_BETWEEN)


@njit(cache=True, forceinline=True, _nrt=False)
def clamp_output(m, v, lo, hi):
    """The output in clamping's mode m for the law's value v = P + D + Ki (x + o)."""
    a = abs(m)
    if a == CLAMP_INTEGRATING or a == CLAMP_FROZEN:
        return hi if m > 0 else lo
    if a == CLAMP_MAY_SLIDE:
        if m > 0:
            return hi if v > hi else v
        return lo if v < lo else v
    return v


@njit(cache=True, forceinline=True, _nrt=False)
def clamp_decide(m, pd, e, x, o, Ki, lo, hi):
    """Clamping's mode at a major step from the held one and this step's P + D, e, state x and
    offset o; returns (mode, o, whether a slide may start here). A chain of switches, each keeping
    the integral z = x + o, except leaving a slide on the limit for INTEGRATING (z = p)."""
    s = Ki * e
    starts = False
    for _ in range(4):
        side = 1.0 if m > 0 else -1.0
        a = abs(m)
        v = pd + Ki * (x + o)
        if a == CLAMP_FREE:
            if v >= hi:
                side = 1.0
            elif v <= lo:
                side = -1.0
            else:
                break
            m = side * (CLAMP_FROZEN if side * s > 0.0 else CLAMP_INTEGRATING)
            break
        limit = hi if m > 0 else lo
        if a == CLAMP_FROZEN:
            if side * s <= 0.0:                 # e pulls back: integrate from the frozen value
                m = side * CLAMP_INTEGRATING
                continue
            if side * (v - limit) < 0.0:        # P + D brought u back inside
                m = side * CLAMP_MAY_SLIDE
                starts = True
                continue
            break
        if a == CLAMP_INTEGRATING:
            if side * (v - limit) < 0.0:
                m = CLAMP_FREE
                continue
            if side * s > 0.0:
                m = side * CLAMP_FROZEN
            break
        if side * s <= 0.0:                     # e pulls back: no clamp, no slide
            if side * (v - limit) >= 0.0:       # on the limit: integrate from p
                o = (limit - pd) / Ki - x
                m = side * CLAMP_INTEGRATING
                break
            m = CLAMP_FREE
            continue
        if side * ((lo if m > 0 else hi) - v) >= 0.0:   # past the other limit
            m = CLAMP_FREE
            continue
        break
    return m, o, starts


@njit(cache=True, forceinline=True, _nrt=False)
def parabola_vertex(t1, y1, t2, y2, t3, y3):
    """(curvature, vertex time, vertex value) of the parabola through three points (t1 < t2 < t3);
    curvature 0 (and the last point) when the points do not define one."""
    if not (t1 < t2 < t3):
        return 0.0, t3, y3
    s12 = (y2 - y1) / (t2 - t1)
    s23 = (y3 - y2) / (t3 - t2)
    k = (s23 - s12) / (t3 - t1)
    if k == 0.0 or not math.isfinite(k):
        return 0.0, t3, y3
    tv = 0.5 * (t2 + t3) - s23 / (2.0 * k)
    return k, tv, y3 + s23 * (tv - t3) + k * (tv - t3) * (tv - t2)


@njit(cache=True, forceinline=True, _nrt=False)
def slide_sample(xd, b, i, w, t, pd, x, Ki, lo, hi):
    """A major step of a channel in CLAMP_MAY_SLIDE (the modes kernel): the slide's end found
    (u off the limit, after samples on it: o = the integral's offset at the parabola's minimum of
    S, then CLAMP_FREE), or a sample at the clock's time: P + D turned outward (R fell: frozen at
    R's parabola maximum), or on the limit (o = p - x, the next sample scheduled)."""
    m = xd[b, C_MODE * w + i]
    side = 1.0 if m > 0 else -1.0
    limit = hi if m > 0 else lo
    o = xd[b, C_OFFSET * w + i]
    on_limit = side * (pd + Ki * (x + o) - limit) >= 0.0
    S = side * (limit - pd - Ki * x)
    R = side * (limit - pd)
    count = xd[b, C_COUNT * w + i]
    t1, s1, r1 = xd[b, C_T1 * w + i], xd[b, C_S1 * w + i], xd[b, C_R1 * w + i]
    t2, s2, r2 = xd[b, C_T2 * w + i], xd[b, C_S2 * w + i], xd[b, C_R2 * w + i]
    if not on_limit:
        if count >= 1.0:                        # the slide ended since the last sample
            best = s2
            if count >= 2.0:
                k, tv, sv = parabola_vertex(t1, s1, t2, s2, t, S)
                if k > 0.0 and t1 <= tv <= t and sv < best:
                    best = sv
            xd[b, C_OFFSET * w + i] = side * best / Ki
            xd[b, C_MODE * w + i] = CLAMP_FREE
        elif t >= xd[b, C_NEXT * w + i]:        # no slide: the integral pushed u inside too
            xd[b, C_MODE * w + i] = CLAMP_FREE
        return
    if t < xd[b, C_NEXT * w + i] or (count >= 1.0 and t <= t2):
        return
    if count >= 1.0 and R < r2:                 # P + D turned outward: frozen at p's maximum
        best = r2
        if count >= 2.0:
            k, tv, rv = parabola_vertex(t1, r1, t2, r2, t, R)
            if k < 0.0 and t1 <= tv <= t and rv > best:
                best = rv
        xd[b, C_OFFSET * w + i] = side * best / Ki - x
        xd[b, C_MODE * w + i] = side * CLAMP_FROZEN
        return
    # z = p: u on the limit, a few rounding units outside it (never inside by rounding: that would
    # read as the slide's end)
    margin = 8.0 * 2.0 ** -52 * (abs(limit) + abs(pd) + abs(Ki * x))
    xd[b, C_OFFSET * w + i] = side * (S + margin) / Ki
    scale = max(1.0, abs(t))
    step = 2.0 * ((t - t2) if count >= 1.0 else SLIDE_FIRST_SAMPLE * scale)
    if count >= 2.0:
        k, tv, sv = parabola_vertex(t1, s1, t2, s2, t, S)
        if k > 0.0 and tv > t:
            step = min(step, tv - t)
        k, tv, rv = parabola_vertex(t1, r1, t2, r2, t, R)
        if k < 0.0 and tv > t:
            step = min(step, tv - t)
    xd[b, C_NEXT * w + i] = t + max(step, SLIDE_CLOSEST_SAMPLES * scale)
    xd[b, C_T1 * w + i], xd[b, C_S1 * w + i], xd[b, C_R1 * w + i] = t2, s2, r2
    xd[b, C_T2 * w + i], xd[b, C_S2 * w + i], xd[b, C_R2 * w + i] = t, S, R
    xd[b, C_COUNT * w + i] = count + 1.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_held_output_k(t, xc, xd, u, y, p):
    """out = the limit or u by the held mode (the continuous PID with limits)."""
    g, out = p.gains, y[0]
    w = out.shape[1]
    clamp = p.antiwindup == CLAMPING
    for b in range(out.shape[0]):
        for i in range(w):
            pd, e = pid_pd_term(u[0], u[1], u[2], u[3], xc, g, p.d_source, b, i, w)
            lo, hi = g[b, i, LO], g[b, i, HI]
            if clamp:
                v = pd + g[b, i, KI] * (xc[b, i] + xd[b, C_OFFSET * w + i])
                out[b, i] = clamp_output(xd[b, C_MODE * w + i], v, lo, hi)
            else:
                m = xd[b, i]
                out[b, i] = hi if m > 0.0 else (lo if m < 0.0 else pd + g[b, i, KI] * xc[b, i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_held_derivative_k(t, xc, xd, u, dxc, p):
    """x' = e (0 while clamped and frozen; e + kb (y - u) with y of the held region under
    back-calculation); filter' = N (cw r - m - filter)."""
    g = p.gains
    w = g.shape[1]
    for b in range(dxc.shape[0]):
        for i in range(w):
            pd, e = pid_pd_term(u[0], u[1], u[2], u[3], xc, g, p.d_source, b, i, w)
            if p.antiwindup == CLAMPING:
                dxc[b, i] = 0.0 if abs(xd[b, C_MODE * w + i]) == CLAMP_FROZEN else e
            elif p.antiwindup == BACK_CALCULATION:
                v = pd + g[b, i, KI] * xc[b, i]
                m = xd[b, i]
                yv = g[b, i, HI] if m > 0.0 else (g[b, i, LO] if m < 0.0 else v)
                dxc[b, i] = e + g[b, i, KB] * (yv - v)
            else:
                dxc[b, i] = e
            if p.d_source == 1:
                dxc[b, w + i] = g[b, i, NF] * (g[b, i, CW] * _pick(u[0], b, i) - _pick(u[1], b, i)
                                               - xc[b, w + i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_held_zc_k(t, xc, xd, u, g_out, p):
    """g = [u - lower | u - upper] (1 / -1 for an infinite limit), u with the held integral;
    clamping adds [Ki e] (the clamp's switch) and [t - t_next] (a sliding channel's sample clock;
    -1 for the others)."""
    g = p.gains
    w = g.shape[1]
    clamp = p.antiwindup == CLAMPING
    for b in range(g_out.shape[0]):
        for i in range(w):
            pd, e = pid_pd_term(u[0], u[1], u[2], u[3], xc, g, p.d_source, b, i, w)
            z = xc[b, i]
            if clamp:
                z += xd[b, C_OFFSET * w + i]
                g_out[b, 2 * w + i] = g[b, i, KI] * e
                sliding = abs(xd[b, C_MODE * w + i]) == CLAMP_MAY_SLIDE
                g_out[b, 3 * w + i] = t - xd[b, C_NEXT * w + i] if sliding else -1.0
            v = pd + g[b, i, KI] * z
            g_out[b, i] = limit_crossing(v, g[b, i, LO], 1.0)
            g_out[b, w + i] = limit_crossing(v, g[b, i, HI], -1.0)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pid_held_modes_k(t, xc, xd, u, p):
    """The modes at a major step: the region of u, or clamping's mode (clamp_decide) and a sliding
    channel's samples (slide_sample). Set here, before the crossings' baseline at the step, they
    are what the functions are judged against (a clock moved by an update would be judged by the
    clock before it)."""
    g = p.gains
    w = g.shape[1]
    for b in range(xd.shape[0]):
        for i in range(w):
            pd, e = pid_pd_term(u[0], u[1], u[2], u[3], xc, g, p.d_source, b, i, w)
            lo, hi = g[b, i, LO], g[b, i, HI]
            if p.antiwindup == CLAMPING:
                m, o, starts = clamp_decide(xd[b, C_MODE * w + i], pd, e, xc[b, i],
                                            xd[b, C_OFFSET * w + i], g[b, i, KI], lo, hi)
                xd[b, C_MODE * w + i] = m
                xd[b, C_OFFSET * w + i] = o
                if starts and abs(m) == CLAMP_MAY_SLIDE:
                    xd[b, C_COUNT * w + i] = 0.0
                    xd[b, C_NEXT * w + i] = t + SLIDE_FIRST_SAMPLE * max(1.0, abs(t))
                elif abs(m) == CLAMP_MAY_SLIDE:
                    slide_sample(xd, b, i, w, t, pd, xc[b, i], g[b, i, KI], lo, hi)
            else:
                xd[b, i] = region_of(pd + g[b, i, KI] * xc[b, i], lo, hi)


@register
class PID(Block):
    """Parallel-form PID per joint, with setpoint weights, output limits and anti-windup:

        u = Kp (b ref - meas) + Ki z + D,   z = integral of e = ref - meas,   out = sat(u)

    Derivative term D:
      - ref_d and/or meas_d wired (velocity inputs, as robot arms do with qd_d and the measured qd):
            D = Kd (c ref_d - meas_d)      (unwired ones read 0; with both wired, Kd (qd_d - qd) as in workload W1)
      - otherwise, when any Kd != 0, a filtered derivative of v = c ref - meas with bandwidth N:
            D = Kd N s / (s + N) v         (a filter state, starting at 0 as Simulink's)
      `derivative_on: measurement` is c = 0 (no derivative kick on setpoint steps).

    Timing: continuous (z' = e) without `period`; discrete with `period` (and `offset`): the output
    changes only at the hits (held in between), the integral by `method` forward (u[k] uses z[k],
    z[k+1] = z[k] + Ts e[k], as in workload W2), backward or trapezoidal, the derivative filter by
    `filter_method` (backward by default: stable for any N Ts).

    Saturation lower <= out <= upper (default none). Anti-windup relative to it:
      clamping          the integral stops while the output is saturated and Ki e pushes outward;
      back_calculation  z' = e + (Kb / Ki)(out - u): Ki z is bled back at rate Kb (1/s, the inverse
                        of the tracking time constant; default Ki / Kp, i.e. Tt = Ti).
    The continuous PID with a finite limit declares zero crossings per joint at u = lower and
    u = upper (and, with clamping, at Ki e = 0, where the clamp switches), and holds its mode
    through the solver's stages until the located crossing (Block.modes, as Simulink's): the
    region (below, between, above), or clamping's mode (free, saturated and integrating, saturated
    and frozen, may slide). Between located crossings the output and the integrand are smooth: the
    limit (N m for a joint torque) or u by the held mode, and the integrand of the held mode. Where
    clamping would chatter (frozen, the P and D terms pull u inside; inside, the integral pushes
    it out) the output slides on the limit with the integral at (limit - P - D) / Ki; the slide's
    ends (tangencies no crossing locates) are found by samples at events of a clock crossing
    (see CLAMP_FREE in blocksim/blocks/control.py). The discrete PID is sampled: no crossings.
    Units: gains are output units per input unit (Kp, e.g. N m/rad), per input unit second (Ki,
    N m/(rad s)) and per input unit per second (Kd, N m s/rad). ref, meas and (for the D term)
    ref_d, meas_d feed out directly; z and the filter are states.
    """

    type_name = "PID"
    summary = "PID per joint: setpoint weights, filtered or velocity derivative, limits, anti-windup"
    params = {
        "Kp": Param(1.0, "out/in", "proportional gain per joint (output units per input unit)"),
        "Ki": Param(0.0, "out/(in s)", "integral gain per joint"),
        "Kd": Param(0.0, "out s/in", "derivative gain per joint"),
        "b": Param(1.0, "-", "setpoint weight of the proportional term"),
        "c": Param(1.0, "-", "setpoint weight of the derivative term"),
        "N": Param(100.0, "rad/s", "derivative filter bandwidth (> 0; unused with velocity inputs)"),
        "derivative_on": Param("error", "-", "error: D acts on c ref - meas; measurement: on -meas",
                               kind="str", choices=("error", "measurement")),
        "period": Param(None, "s", "sample period: discrete PID (absent: continuous)", kind="time",
                        role="period"),
        "offset": Param(0, "s", "sample offset of the discrete PID, 0 <= offset < period",
                        kind="time", role="offset"),
        "method": Param("forward", "-", "discrete integral rule", kind="str",
                        choices=INTEGRATION_METHODS),
        "filter_method": Param("backward", "-", "discrete derivative-filter rule", kind="str",
                               choices=INTEGRATION_METHODS),
        "lower": Param(-np.inf, "out", "output lower limit (may be -inf)", allow_inf=True),
        "upper": Param(np.inf, "out", "output upper limit (may be inf)", allow_inf=True),
        "antiwindup": Param("none", "-", "integrator protection while the output saturates",
                            kind="str", choices=ANTIWINDUP),
        "Kb": Param(None, "1/s", "back-calculation tracking gain (default Ki / Kp)"),
        "z0": Param(0.0, "in s", "initial integral state"),
    }
    inputs = ("ref", "meas", "ref_d", "meas_d")
    outputs = ("out",)
    optional_inputs = ("ref_d", "meas_d")
    sample = "continuous"          # discrete when `period` is given (sample_time())

    GAIN_KEYS = ("Kp", "Ki", "Kd", "b", "c", "N", "lower", "upper", "Kb", "z0")

    def check_values(self, v):
        if np.any(v.N <= 0):
            raise ParameterError("N must be > 0", block=self.name)
        if np.any(v.lower > v.upper):
            raise ParameterError("lower must be <= upper", block=self.name)
        if v.Kb is not None and np.any(v.Kb < 0):
            raise ParameterError("Kb must be >= 0", block=self.name)

    def structure(self, v):
        """Whether the derivative is filtered (a filter state per joint): some Kd != 0 and no
        velocity input wired; and, for the continuous PID, whether some limit is finite (its
        crossings and held modes exist)."""
        return self.d_source(v), self.has_limits(v)

    def has_limits(self, v) -> bool:
        """The continuous PID with a finite limit on some channel of some member: it declares
        crossings at the limits and holds its modes (the discrete PID is sampled: no crossings)."""
        return not self.is_discrete and bool(np.isfinite(v.lower).any() or np.isfinite(v.upper).any())

    def d_source(self, v) -> int:
        """Where D comes from (D_*) for the values v and the wired inputs."""
        if {"ref_d", "meas_d"} & self.connected:
            return D_VELOCITY
        return D_FILTERED if np.any(v.Kd != 0) else D_NONE

    def setup(self):
        p = self.p
        self._held = False              # the continuous PID with limits (configure)
        keys = [k for k in self.GAIN_KEYS if getattr(p, k) is not None]
        self._param_width = common_width(self, keys)
        if p.period is not None:
            self._sample = SampleTime.discrete(p.period, p.offset)
        elif p.offset != 0:
            raise ParameterError("offset needs a period (a continuous PID has no samples)",
                                 block=self.name)
        else:
            self._sample = SampleTime.continuous()

    def sample_time(self):
        return self._sample

    @property
    def is_discrete(self) -> bool:
        return self._sample.is_discrete

    def resolve_widths(self, in_widths):
        known = [w for w in in_widths.values() if w is not None]
        width = max(known + [self._param_width])
        if any(w is None for w in in_widths.values()):
            return {"out": width if width > 1 else None}
        for port, w in in_widths.items():
            if w not in (1, width):
                raise WidthError(f"input has width {w}, the PID has width {width}",
                                 block=self.name, port=port)
        return {"out": width}

    def configure(self, in_widths, out_widths):
        w = out_widths["out"]
        self._d_source = self.d_source(self.p)
        n_states = 2 * w if self._d_source == D_FILTERED else w
        if self.is_discrete:
            self.n_xd = n_states
            return
        self.n_xc = n_states
        self._held = self.has_limits(self.p)
        if self._held:
            clamp = self.p.antiwindup == "clamping"
            # crossings [u - lower | u - upper] (+ clamping's [Ki e | slide clock]); held: the
            # region per channel, or clamping's mode, integral offset and slide samples
            self.n_zc = (4 if clamp else 2) * w
            self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
            if clamp:
                self.zc_directions[3 * w:] = 1        # a sample clock: rising only
            self.n_xd = self.n_modes = (CLAMP_COLUMNS if clamp else 1) * w

    def record(self, v):
        w = self.out_widths["out"]
        rows = {k: np.ascontiguousarray(self.param_as_row(k, w, v))
                for k in ("Kp", "Ki", "Kd", "b", "c", "N", "lower", "upper", "z0")}
        if v.derivative_on == "measurement":
            rows["c"] = np.zeros_like(rows["c"])
        Kp, Ki = rows["Kp"], rows["Ki"]
        if v.Kb is None:
            Kb = np.where(Kp != 0, Ki / np.where(Kp != 0, Kp, 1.0), 1.0)
        else:
            Kb = self.param_as_row("Kb", w, v)
        kb = np.ascontiguousarray(np.where(Ki != 0, Kb / np.where(Ki != 0, Ki, 1.0), 0.0))
        if self.is_discrete:
            timing = (float(v.period), METHOD_WEIGHT[v.method], METHOD_WEIGHT[v.filter_method])
        else:
            timing = (0.0, 0.0, 0.0)
        gains = np.stack([rows[k] for k in ("Kp", "Ki", "Kd", "b", "c", "N", "lower", "upper")]
                         + [kb], axis=-1)
        return PIDParams(np.ascontiguousarray(gains, dtype=float), self._d_source,
                         ANTIWINDUP.index(v.antiwindup), *timing, rows["z0"])

    def state_names(self):
        w = self.out_widths.get("out", 0) if self.out_widths else 0
        names = [f"integral[{i}]" for i in range(w)]
        if self._d_source == D_FILTERED:
            names += [f"derivative filter[{i}]" for i in range(w)]
        if self.is_discrete:
            return [], names
        if self.n_xd <= w:          # no limits (no modes), or the region per channel
            return names, [f"region[{i}]" for i in range(self.n_xd)]
        held = [f"{what}[{i}]" for what in ("integral offset", "clamp mode", "next slide sample",
                                            "slide samples", "sample t1", "sample S1", "sample R1",
                                            "sample t2", "sample S2", "sample R2") for i in range(w)]
        return names, held

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        x = xd if self.is_discrete else xc
        w = p.z0.shape[1]
        x[:, :w] = p.z0
        x[:, w:] = 0.0
        if not self.is_discrete:
            xd[...] = 0.0       # between the limits, no anchor: z = x (set at the first major step)

    def kernels(self):
        if self.is_discrete:
            return Kernels(output=pid_discrete_output_k, update=pid_discrete_update_k)
        if self._held:
            return Kernels(output=pid_held_output_k, derivative=pid_held_derivative_k,
                           zero_crossings=pid_held_zc_k, modes=pid_held_modes_k)
        return Kernels(output=pid_continuous_output_k, derivative=pid_continuous_derivative_k)
