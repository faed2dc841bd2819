"""Compiled kernels of the collision-detection blocks (`interaction`): the momentum observer on the
robot's momentum terms (`models.momentum`), the direct residual on the inverse dynamics of the
robot blocks (`robot_kernels.inverse_dynamics_rows`), and the detector's thresholds, hysteresis
and minimum duration. Both execution modes run these kernels with the blocks' records.
"""
from __future__ import annotations

from collections import namedtuple

from numba import njit

from ..models import model_data as md
from ..models.joint_law import _law_friction
from ..models.model_data import RHS, SOL
from ..models.momentum import momentum_terms
from .robot_kernels import inverse_dynamics_rows

# ============================================================================ MomentumObserver

MomentumObserverParams = namedtuple("MomentumObserverParams",
                                    "model law data use_cf has_friction gain period scratch")
"""The observer's record: Model, law (B, n, N_LAW: the friction columns of its friction model),
Data, use_cf (closed-form 2R), has_friction, gain K_O (B, n) in 1/s, period T (s; 0 for the
continuous form), scratch (B, n).

The observer's memory: the integral I (B, n) of tau - tau_f - beta + r (N m s) is xc in the
continuous form and xd[:, :n] in the discrete one; after it, in xd, the momentum p0 (n) of the
first major step and a flag `started` (p0 is taken there, so the residual starts at zero)."""


@njit(cache=True, error_model="numpy")
def observer_rows(q, qd, tau, integral, memory, model, law, data, use_cf, has_friction, gain,
                  r, rate, want_rate):
    """r (B, n) = K_O (p - p0 - I) and, when want_rate, rate (B, n) = tau - tau_f(qd) - beta + r,
    the integrand (N m). Before the first major step (memory's flag 0) p0 is the current p (r = 0
    at I = 0)."""
    B, n = q.shape
    pv, beta = md.joint_vector(data, n, RHS), md.joint_vector(data, n, SOL)
    for b in range(B):
        momentum_terms(model, data, b, use_cf, q, qd, pv, beta)
        started = memory[b, n] != 0.0
        for i in range(n):
            p0 = memory[b, i] if started else pv[i]
            r[b, i] = gain[b, i] * (pv[i] - p0 - integral[b, i])
            if want_rate:
                friction = _law_friction(law, b, i, qd[b, i]) if has_friction else 0.0
                rate[b, i] = tau[b, i] - friction - beta[i] + r[b, i]


@njit(cache=True, error_model="numpy")
def observer_start(q, qd, memory, model, data, use_cf):
    """At the first major step: p0 = p(q, qd) and the flag set (later calls change nothing)."""
    B, n = q.shape
    pv, beta = md.joint_vector(data, n, RHS), md.joint_vector(data, n, SOL)
    for b in range(B):
        if memory[b, n] == 0.0:
            momentum_terms(model, data, b, use_cf, q, qd, pv, beta)
            for i in range(n):
                memory[b, i] = pv[i]
            memory[b, n] = 1.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def observer_output(t, xc, xd, u, y, p):
    """Continuous form: r from I = xc and the memory xd."""
    observer_rows(u[0], u[1], u[2], xc, xd, p.model, p.law, p.data, p.use_cf, p.has_friction,
                  p.gain, y[0], y[0], False)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def observer_derivative(t, xc, xd, u, dxc, p):
    """Continuous form: dI/dt = tau - tau_f - beta + r (r into data's v field, scratch here)."""
    n = xc.shape[1]
    r = md.v(p.data, n, xc.shape[0])
    observer_rows(u[0], u[1], u[2], xc, xd, p.model, p.law, p.data, p.use_cf, p.has_friction,
                  p.gain, r, dxc, True)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def observer_update(t, xc, xd, u, p):
    """Continuous form, every major step: takes p0 at the first."""
    observer_start(u[0], u[1], xd, p.model, p.data, p.use_cf)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def discrete_observer_output(t, xc, xd, u, y, p):
    """Discrete form: r_k from I_k = xd[:, :n] and the memory after it."""
    n = y[0].shape[1]
    observer_rows(u[0], u[1], u[2], xd[:, :n], xd[:, n:], p.model, p.law, p.data, p.use_cf,
                  p.has_friction, p.gain, y[0], y[0], False)


@njit(cache=True, error_model="numpy")
def discrete_observer_step(q, qd, tau, xd, model, law, data, use_cf, has_friction, gain, period,
                           r, rate):
    """Forward Euler at a hit: p0 taken at the first, then I_{k+1} = I_k + T (tau_k - tau_f
    - beta_k + r_k); r and rate (B, n) are scratch."""
    n = q.shape[1]
    integral, memory = xd[:, :n], xd[:, n:]
    observer_start(q, qd, memory, model, data, use_cf)
    observer_rows(q, qd, tau, integral, memory, model, law, data, use_cf, has_friction, gain, r,
                  rate, True)
    for b in range(q.shape[0]):
        for i in range(n):
            integral[b, i] += period * rate[b, i]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def discrete_observer_update(t, xc, xd, u, p):
    n = u[0].shape[1]
    discrete_observer_step(u[0], u[1], u[2], xd, p.model, p.law, p.data, p.use_cf,
                           p.has_friction, p.gain, p.period, md.v(p.data, n, xd.shape[0]),
                           p.scratch)


# ============================================================================ DirectResidual

@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def direct_residual_output(t, xc, xd, u, y, p):
    """r = M(q) qdd + c(q, qd) + G(q) (+ tau_f(qd)) - tau: the model's torque minus the measured."""
    r, tau = y[0], u[3]
    inverse_dynamics_rows(u[0], u[1], u[2], p.model, p.law, p.data, p.use_cf, p.has_friction, r)
    for b in range(r.shape[0]):
        for i in range(r.shape[1]):
            r[b, i] -= tau[b, i]


# ============================================================================ CollisionDetector

DetectorParams = namedtuple("DetectorParams", "threshold release min_duration timed")
"""The detector's record: threshold and release levels (B, w) in the residual's units, the
minimum duration (B, w) in s, and timed (the minimum-duration crossings exist).

Its discrete state, per channel i of w: mode (0 quiet, 1 pending: above the threshold, waiting
for the minimum duration, 2 detected) at i, the time the pending began (s) at w + i, the first
detection time (s; -1 before it) at 2 w + i; then a flag `started` at 3 w."""

QUIET, PENDING, DETECTED = 0.0, 1.0, 2.0


@njit(cache=True, forceinline=True, _nrt=False)
def detector_mode(t, u, xd, b, i, p):
    """Member b's channel i's mode: the held one once started, else the start rule (detected at
    or above the threshold without a minimum duration, pending with one, quiet below)."""
    w = (xd.shape[1] - 1) // 3
    if xd[b, 3 * w] != 0.0:
        return xd[b, i]
    if abs(u[b, i if u.shape[1] > 1 else 0]) >= p.threshold[b, i]:
        return DETECTED if p.min_duration[b, i] == 0.0 else PENDING
    return QUIET


@njit(cache=True, forceinline=True, _nrt=False)
def detector_output(t, xc, xd, u, y, p):
    """flag = 1 where detected, any = 1 where some channel is, t_detect = first detection time."""
    x, flag, anyflag, first = u[0], y[0], y[1], y[2]
    w = flag.shape[1]
    for b in range(flag.shape[0]):
        anyflag[b, 0] = 0.0
        for i in range(w):
            on = detector_mode(t, x, xd, b, i, p) == DETECTED
            flag[b, i] = 1.0 if on else 0.0
            if on:
                anyflag[b, 0] = 1.0
            started = xd[b, 3 * w] != 0.0
            first[b, i] = xd[b, 2 * w + i] if started or not on else t


@njit(cache=True, forceinline=True, _nrt=False)
def detector_update(t, xc, xd, u, p):
    """At the first major step: the modes from the start rule (later, only events change them)."""
    x = u[0]
    w = (xd.shape[1] - 1) // 3
    for b in range(xd.shape[0]):
        if xd[b, 3 * w] == 0.0:
            for i in range(w):
                mode = detector_mode(t, x, xd, b, i, p)
                xd[b, i] = mode
                xd[b, w + i] = t
                xd[b, 2 * w + i] = t if mode == DETECTED else -1.0
            xd[b, 3 * w] = 1.0


@njit(cache=True, forceinline=True, _nrt=False)
def detector_zc(t, xc, xd, u, g, p):
    """Per channel i: |r| - threshold while quiet (rising: it goes pending or detected), 1
    otherwise; |r| - release while pending or detected (falling: quiet again), -1 while quiet;
    when timed, t - (start + min_duration) while pending (rising: detected), -1 otherwise. A
    function that does not apply keeps a sign from which it cannot cross."""
    x = u[0]
    w = (xd.shape[1] - 1) // 3
    for b in range(g.shape[0]):
        for i in range(w):
            v = abs(x[b, i if x.shape[1] > 1 else 0])
            mode = detector_mode(t, x, xd, b, i, p)
            g[b, i] = v - p.threshold[b, i] if mode == QUIET else 1.0
            g[b, w + i] = -1.0 if mode == QUIET else v - p.release[b, i]
            if p.timed:
                g[b, 2 * w + i] = (t - xd[b, w + i] - p.min_duration[b, i] if mode == PENDING
                                   else -1.0)
