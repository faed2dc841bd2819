"""Field-oriented control pieces: Clarke/Park transforms, average-value inverter, SVPWM, current PI and its tuning.

Transforms are amplitude-invariant (the 2/3 factor), so a balanced set of amplitude A maps to a vector of
length A, and three-phase power is 1.5 (v_d i_d + v_q i_q) (+ 3 v_0 i_0 with a zero sequence).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .arrays import as_batch, per_joint
from numpy.typing import ArrayLike

__all__ = [
    "CurrentPIGains", "tune_current_pi", "torque_to_current", "inverter_voltage_limit",
    "clarke", "inverse_clarke", "park", "inverse_park", "limit_voltage", "svpwm_duties",
    "average_phase_voltages", "pi_current_step", "dq_current_pi_step",
    "clarke_into", "inverse_clarke_into", "park_into", "inverse_park_into", "voltage_circle_limit_into",
    "svpwm_into", "pi_current_step_into", "dq_current_pi_step_into",
]

_SQRT3 = math.sqrt(3.0)


# ---------------------------------------------------------------- transforms

@njit(cache=True)
def clarke_into(a, b, c, alpha_out, beta_out, zero_out):
    """Amplitude-invariant Clarke transform abc -> (alpha, beta, 0); all arrays (B, n), any unit (A or V).

    alpha = (2a - b - c) / 3, beta = (b - c) / sqrt(3), zero = (a + b + c) / 3.
    """
    B, n = a.shape
    for k in range(B):
        for j in range(n):
            ak = a[k, j]
            bk = b[k, j]
            ck = c[k, j]
            alpha_out[k, j] = (2.0 * ak - bk - ck) / 3.0
            beta_out[k, j] = (bk - ck) / _SQRT3
            zero_out[k, j] = (ak + bk + ck) / 3.0


@njit(cache=True)
def inverse_clarke_into(alpha, beta, zero, a_out, b_out, c_out):
    """Inverse Clarke (alpha, beta, 0) -> abc; all arrays (B, n).

    a = alpha + zero, b = -alpha/2 + sqrt(3)/2 beta + zero, c = -alpha/2 - sqrt(3)/2 beta + zero.
    """
    B, n = alpha.shape
    for k in range(B):
        for j in range(n):
            al = alpha[k, j]
            be = beta[k, j]
            z = zero[k, j]
            a_out[k, j] = al + z
            b_out[k, j] = -0.5 * al + 0.5 * _SQRT3 * be + z
            c_out[k, j] = -0.5 * al - 0.5 * _SQRT3 * be + z


@njit(cache=True)
def park_into(alpha, beta, theta_e, d_out, q_out):
    """Park rotation alpha-beta -> dq by the electrical angle theta_e (rad); all arrays (B, n).

    d = alpha cos(theta_e) + beta sin(theta_e), q = -alpha sin(theta_e) + beta cos(theta_e).
    """
    B, n = alpha.shape
    for k in range(B):
        for j in range(n):
            c = math.cos(theta_e[k, j])
            s = math.sin(theta_e[k, j])
            d_out[k, j] = alpha[k, j] * c + beta[k, j] * s
            q_out[k, j] = -alpha[k, j] * s + beta[k, j] * c


@njit(cache=True)
def inverse_park_into(d, q, theta_e, alpha_out, beta_out):
    """Inverse Park dq -> alpha-beta: alpha = d cos - q sin, beta = d sin + q cos; all arrays (B, n)."""
    B, n = d.shape
    for k in range(B):
        for j in range(n):
            c = math.cos(theta_e[k, j])
            s = math.sin(theta_e[k, j])
            alpha_out[k, j] = d[k, j] * c - q[k, j] * s
            beta_out[k, j] = d[k, j] * s + q[k, j] * c


# ---------------------------------------------------------------- inverter

@njit(cache=True)
def voltage_circle_limit_into(v1, v2, v_max, v1_out, v2_out):
    """Average-value inverter limit: scale (v1, v2) onto |v| <= v_max, keeping its direction.

    v1, v2 (B, n) a voltage vector in dq or alpha-beta (the length is frame-independent), V;
    v_max (n,) the largest amplitude, V (Vdc / sqrt(3) for SVPWM, see inverter_voltage_limit);
    v1_out, v2_out (B, n), V; they may be v1, v2 themselves.
    """
    B, n = v1.shape
    for k in range(B):
        for j in range(n):
            x = v1[k, j]
            y = v2[k, j]
            mag = math.sqrt(x * x + y * y)
            if mag > v_max[j]:
                scale = v_max[j] / mag
                x *= scale
                y *= scale
            v1_out[k, j] = x
            v2_out[k, j] = y


@njit(cache=True)
def svpwm_into(v_alpha, v_beta, vdc, da_out, db_out, dc_out):
    """Space-vector PWM duty cycles by min-max (zero-sequence) injection, centred in the carrier.

    v_alpha, v_beta (B, n) commanded stator voltage, V; vdc (n,) DC-link voltage, V;
    da_out, db_out, dc_out (B, n) duty cycles in [0, 1]. The phase references v_x (inverse Clarke) are
    shifted by v_off = -(max + min) / 2 and d_x = 1/2 + (v_x + v_off) / vdc, so the average pole
    voltages minus their common mode give back v_x exactly whenever the command is inside the
    hexagon (max - min <= vdc; always within |v| <= vdc / sqrt(3)); outside it the duties are clipped.
    """
    B, n = v_alpha.shape
    for k in range(B):
        for j in range(n):
            al = v_alpha[k, j]
            be = v_beta[k, j]
            va = al
            vb = -0.5 * al + 0.5 * _SQRT3 * be
            vc = -0.5 * al - 0.5 * _SQRT3 * be
            vmax = max(va, max(vb, vc))
            vmin = min(va, min(vb, vc))
            off = -0.5 * (vmax + vmin)
            inv = 1.0 / vdc[j]
            da_out[k, j] = min(1.0, max(0.0, 0.5 + (va + off) * inv))
            db_out[k, j] = min(1.0, max(0.0, 0.5 + (vb + off) * inv))
            dc_out[k, j] = min(1.0, max(0.0, 0.5 + (vc + off) * inv))


# ---------------------------------------------------------------- current control

@njit(cache=True)
def pi_current_step_into(i_ref, i, z, v_ff, Kp, Ki, v_max, Ts, v_out, z_next):
    """One sample of a single-axis discrete current PI with saturation and conditional integration.

    i_ref, i (B, n) reference and measured current, A; z (B, n) integrator state, A s;
    v_ff (B, n) feedforward voltage, V (zeros for none); Kp (n,) V/A; Ki (n,) V/(A s);
    v_max (n,) voltage limit, V; Ts the controller period, s (scalar);
    v_out (B, n) the voltage to hold until the next sample, V; z_next (B, n) the integrator after the
    sample (may be z itself). Per member and joint, as in WORKLOADS.md W2:
        e = i_ref - i;  u = Kp e + Ki z + v_ff;  v = clamp(u, -v_max, v_max)
        z_next = z + Ts e  only while |u| <= v_max (anti-windup by conditional integration), else z.
    """
    B, n = i.shape
    for k in range(B):
        for j in range(n):
            e = i_ref[k, j] - i[k, j]
            zk = z[k, j]
            u = Kp[j] * e + Ki[j] * zk + v_ff[k, j]
            lim = v_max[j]
            if u > lim:
                v_out[k, j] = lim
                z_next[k, j] = zk
            elif u < -lim:
                v_out[k, j] = -lim
                z_next[k, j] = zk
            else:
                v_out[k, j] = u
                z_next[k, j] = zk + Ts * e


@njit(cache=True)
def dq_current_pi_step_into(id_ref, iq_ref, i_d, i_q, omega_e, z_d, z_q,
                            Kp_d, Ki_d, Kp_q, Ki_q, Ld, Lq, psi, v_max, decouple, Ts,
                            vd_out, vq_out, zd_next, zq_next):
    """One sample of the dq current controller of field-oriented control.

    id_ref, iq_ref, i_d, i_q (B, n) currents, A; omega_e (B, n) electrical speed p N qd, rad/s;
    z_d, z_q (B, n) integrator states, A s; Kp_d, Kp_q (n,) V/A; Ki_d, Ki_q (n,) V/(A s);
    Ld, Lq (n,) H and psi (n,) Wb of the motor model used for decoupling; v_max (n,) radius of the
    voltage circle, V (Vdc / sqrt(3)); decouple (bool) adds the feedforward
    vd_ff = -omega_e Lq i_q, vq_ff = omega_e (Ld i_d + psi); Ts the controller period, s (scalar);
    vd_out, vq_out (B, n) V; zd_next, zq_next (B, n) (may be z_d, z_q themselves).
        u = Kp e + Ki z + v_ff per axis; |u| > v_max: v = u v_max / |u| (direction kept), integrators held;
        otherwise v = u and z_next = z + Ts e on both axes.
    With i_d = id_ref = z_d = 0 and no decoupling this is pi_current_step_into on the q axis.
    """
    B, n = i_q.shape
    for k in range(B):
        for j in range(n):
            ed = id_ref[k, j] - i_d[k, j]
            eq = iq_ref[k, j] - i_q[k, j]
            zdk = z_d[k, j]
            zqk = z_q[k, j]
            ud = Kp_d[j] * ed + Ki_d[j] * zdk
            uq = Kp_q[j] * eq + Ki_q[j] * zqk
            if decouple:
                w = omega_e[k, j]
                ud -= w * Lq[j] * i_q[k, j]
                uq += w * (Ld[j] * i_d[k, j] + psi[j])
            mag = math.sqrt(ud * ud + uq * uq)
            lim = v_max[j]
            if mag > lim:
                scale = lim / mag
                vd_out[k, j] = ud * scale
                vq_out[k, j] = uq * scale
                zd_next[k, j] = zdk
                zq_next[k, j] = zqk
            else:
                vd_out[k, j] = ud
                vq_out[k, j] = uq
                zd_next[k, j] = zdk + Ts * ed
                zq_next[k, j] = zqk + Ts * eq


# ---------------------------------------------------------------- tuning and set-points

@dataclass(frozen=True)
class CurrentPIGains:
    """PI gains of the dq current loops: Kp_* in V/A, Ki_* in V/(A s) (scalars or (n,) arrays)."""

    Kp_d: ArrayLike
    Ki_d: ArrayLike
    Kp_q: ArrayLike
    Ki_q: ArrayLike


def tune_current_pi(R, Ld, bandwidth, Lq=None) -> CurrentPIGains:
    """Current-PI gains that cancel the R-L pole: Kp = L wc, Ki = R wc per axis.

    R ohm, Ld and Lq H (Lq defaults to Ld), bandwidth wc rad/s. The open loop becomes wc / s, so the
    closed current loop is first order with bandwidth wc (time constant 1/wc).
    For W2 (R = 0.5 ohm, L = 0.5 mH, wc = 2 pi 1 kHz): Kp = 3.14 V/A, Ki = 3142 V/(A s), rounded.
    """
    R = np.asarray(R, dtype=np.float64)
    Ld = np.asarray(Ld, dtype=np.float64)
    Lq = Ld if Lq is None else np.asarray(Lq, dtype=np.float64)
    wc = np.asarray(bandwidth, dtype=np.float64)
    if np.any(wc <= 0.0):
        raise ValueError(f"current-loop bandwidth must be > 0 rad/s; got {bandwidth!r}")
    return CurrentPIGains(Kp_d=Ld * wc, Ki_d=R * wc, Kp_q=Lq * wc, Ki_q=R * wc)


def torque_to_current(tau, N, Kt) -> np.ndarray:
    """The q-current set-point for a joint torque: iq* = tau / (N Kt), A (tau N m, Kt N m/A, gear N)."""
    return np.asarray(tau, dtype=np.float64) / (np.asarray(N, dtype=np.float64) * np.asarray(Kt))


def inverter_voltage_limit(vdc) -> np.ndarray:
    """Largest stator-voltage amplitude an SVPWM inverter makes without distortion: Vdc / sqrt(3), V."""
    return np.asarray(vdc, dtype=np.float64) / _SQRT3


# ---------------------------------------------------------------- numpy-level functions

def clarke(a, b, c):
    """(alpha, beta, zero) of phase quantities a, b, c (shapes (B, n), (n,) or scalars)."""
    (a2, b2, c2), shape = as_batch(a, b, c)
    outs = [np.empty_like(a2) for _ in range(3)]
    clarke_into(a2, b2, c2, *outs)
    return tuple(o.reshape(shape) for o in outs)


def inverse_clarke(alpha, beta, zero=0.0):
    """Phase quantities (a, b, c) of (alpha, beta, zero)."""
    (al, be, z), shape = as_batch(alpha, beta, zero)
    outs = [np.empty_like(al) for _ in range(3)]
    inverse_clarke_into(al, be, z, *outs)
    return tuple(o.reshape(shape) for o in outs)


def park(alpha, beta, theta_e):
    """(d, q) of (alpha, beta) in the frame at electrical angle theta_e (rad)."""
    (al, be, th), shape = as_batch(alpha, beta, theta_e)
    d = np.empty_like(al)
    q = np.empty_like(al)
    park_into(al, be, th, d, q)
    return d.reshape(shape), q.reshape(shape)


def inverse_park(d, q, theta_e):
    """(alpha, beta) of (d, q) at electrical angle theta_e (rad)."""
    (dd, qq, th), shape = as_batch(d, q, theta_e)
    al = np.empty_like(dd)
    be = np.empty_like(dd)
    inverse_park_into(dd, qq, th, al, be)
    return al.reshape(shape), be.reshape(shape)


def limit_voltage(v1, v2, vdc):
    """A voltage vector (V, dq or alpha-beta) scaled onto the inverter circle |v| <= Vdc / sqrt(3)."""
    (x, y), shape = as_batch(v1, v2)
    xo = np.empty_like(x)
    yo = np.empty_like(x)
    voltage_circle_limit_into(x, y, per_joint(inverter_voltage_limit(vdc), x.shape[1]), xo, yo)
    return xo.reshape(shape), yo.reshape(shape)


def svpwm_duties(v_alpha, v_beta, vdc):
    """Duty cycles (da, db, dc) in [0, 1] of centred SVPWM for a commanded voltage (V) and DC link vdc (V)."""
    (al, be), shape = as_batch(v_alpha, v_beta)
    outs = [np.empty_like(al) for _ in range(3)]
    svpwm_into(al, be, per_joint(vdc, al.shape[1]), *outs)
    return tuple(o.reshape(shape) for o in outs)


def average_phase_voltages(da, db, dc, vdc):
    """Average phase-to-neutral voltages (V) of a star-connected load fed by duty cycles da, db, dc.

    Pole voltages are d_x vdc; the isolated neutral removes their common mode.
    """
    poles = [np.asarray(d, dtype=np.float64) * vdc for d in (da, db, dc)]
    common = (poles[0] + poles[1] + poles[2]) / 3.0
    return tuple(p - common for p in poles)


def pi_current_step(i_ref, i, z, Kp, Ki, v_max, Ts, v_ff=0.0):
    """One sample of the single-axis current PI (see pi_current_step_into); returns (v, z_next)."""
    (r, m, zz, ff), shape = as_batch(i_ref, i, z, v_ff)
    n = r.shape[1]
    v = np.empty_like(r)
    zn = np.empty_like(r)
    pi_current_step_into(r, m, zz, ff, per_joint(Kp, n), per_joint(Ki, n),
                         per_joint(v_max, n), float(Ts), v, zn)
    return v.reshape(shape), zn.reshape(shape)


def dq_current_pi_step(id_ref, iq_ref, i_d, i_q, omega_e, z_d, z_q, gains: CurrentPIGains,
                       v_max, Ts, Ld=0.0, Lq=0.0, psi=0.0, decouple=False):
    """One sample of the dq current controller (see dq_current_pi_step_into); returns (vd, vq, zd, zq)."""
    sig, shape = as_batch(id_ref, iq_ref, i_d, i_q, omega_e, z_d, z_q)
    n = sig[0].shape[1]
    outs = [np.empty_like(sig[0]) for _ in range(4)]
    pars = [per_joint(x, n) for x in (gains.Kp_d, gains.Ki_d, gains.Kp_q, gains.Ki_q, Ld, Lq, psi, v_max)]
    dq_current_pi_step_into(*sig, *pars, bool(decouple), float(Ts), *outs)
    return tuple(o.reshape(shape) for o in outs)
