"""Field-oriented control pieces: Clarke/Park transforms, average-value inverter, SVPWM, current PI and its tuning.

Transforms are amplitude-invariant (the 2/3 factor), so a balanced set of amplitude A maps to a vector of
length A, and three-phase power is 1.5 (v_d i_d + v_q i_q) (+ 3 v_0 i_0 with a zero sequence). Park
rotates by the rotor's electrical angle theta_e = p N q (rad; `blocksim.models.motor.electrical`).

Each piece lives once, as a scalar core here (`clarke_transform`, `inverse_clarke_transform`,
`park_transform`, `inverse_park_transform`, `svpwm_voltage_limit`, `voltage_magnitude`,
`voltage_circle_limit`, `svpwm_duty_cycles`, `q_current_setpoint`, `current_pi_axis`,
`current_pi_dq`): numba functions of floats, each compiled once on its own (not copied into every
call site: the generated loop's compile time; docs/architecture.md, "Physics"). The `*_into` kernels
and the numpy API below and the blocks of `blocksim.blocks.foc` and `blocksim.blocks.actuators` call
them, so every mode computes the same floats. Units: A, V, rad, rad/s, s; gains in V/A and V/(A s).
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
    "clarke_transform", "inverse_clarke_transform", "park_transform", "inverse_park_transform",
    "svpwm_voltage_limit", "voltage_magnitude", "voltage_circle_limit", "svpwm_duty_cycles",
    "q_current_setpoint", "current_pi_axis", "current_pi_dq",
    "clarke_into", "inverse_clarke_into", "park_into", "inverse_park_into", "voltage_circle_limit_into",
    "svpwm_into", "pi_current_step_into", "dq_current_pi_step_into",
]

_SQRT3 = math.sqrt(3.0)


# ---------------------------------------------------------------- scalar cores (compiled once, called)

@njit(cache=True, error_model="numpy")
def clarke_transform(a, b, c):
    """Amplitude-invariant Clarke transform abc -> (alpha, beta, zero), any unit (A or V):
    alpha = (2a - b - c) / 3, beta = (b - c) / sqrt(3), zero = (a + b + c) / 3."""
    return (2.0 * a - b - c) / 3.0, (b - c) / _SQRT3, (a + b + c) / 3.0


@njit(cache=True, error_model="numpy")
def inverse_clarke_transform(alpha, beta, zero):
    """Inverse Clarke (alpha, beta, zero) -> (a, b, c): a = alpha + zero,
    b = -alpha/2 + sqrt(3)/2 beta + zero, c = -alpha/2 - sqrt(3)/2 beta + zero."""
    return (alpha + zero, -0.5 * alpha + 0.5 * _SQRT3 * beta + zero,
            -0.5 * alpha - 0.5 * _SQRT3 * beta + zero)


@njit(cache=True, error_model="numpy")
def park_transform(alpha, beta, theta_e):
    """Park rotation alpha-beta -> (d, q) into the rotor frame at electrical angle theta_e (rad):
    d = alpha cos(theta_e) + beta sin(theta_e), q = -alpha sin(theta_e) + beta cos(theta_e)."""
    c = math.cos(theta_e)
    s = math.sin(theta_e)
    return alpha * c + beta * s, -alpha * s + beta * c


@njit(cache=True, error_model="numpy")
def inverse_park_transform(d, q, theta_e):
    """Inverse Park dq -> (alpha, beta) at electrical angle theta_e (rad):
    alpha = d cos(theta_e) - q sin(theta_e), beta = d sin(theta_e) + q cos(theta_e)."""
    c = math.cos(theta_e)
    s = math.sin(theta_e)
    return d * c - q * s, d * s + q * c


@njit(cache=True, error_model="numpy")
def svpwm_voltage_limit(vdc):
    """The largest stator-voltage amplitude an SVPWM inverter makes from a DC link vdc (V) without
    distortion: vdc / sqrt(3), V (the circle inscribed in the hexagon)."""
    return vdc / _SQRT3


@njit(cache=True, error_model="numpy")
def voltage_magnitude(x, y):
    """|v| = sqrt(x^2 + y^2), V, of a voltage vector (x, y) in dq or alpha-beta (the same length)."""
    return math.sqrt(x * x + y * y)


@njit(cache=True, error_model="numpy")
def voltage_circle_limit(x, y, v_max):
    """Average-value inverter limit: (x, y) scaled onto |v| <= v_max (V) keeping its direction;
    returns (x, y, True when the limit acted). The length is frame-independent (dq or alpha-beta)."""
    mag = voltage_magnitude(x, y)
    if mag > v_max:
        scale = v_max / mag
        return x * scale, y * scale, True
    return x, y, False


@njit(cache=True, error_model="numpy")
def svpwm_duty_cycles(v_alpha, v_beta, vdc):
    """Space-vector PWM duty cycles (da, db, dc) in [0, 1], by min-max (zero-sequence) injection,
    centred in the carrier, for a commanded voltage (v_alpha, v_beta) (V) and DC link vdc (V).

    The phase references v_x (inverse Clarke) are shifted by v_off = -(max + min) / 2 and
    d_x = 1/2 + (v_x + v_off) / vdc, so the average pole voltages minus their common mode give back
    v_x exactly whenever the command is inside the hexagon (max - min <= vdc; always within
    |v| <= vdc / sqrt(3)); outside it the duties are clipped.
    """
    va = v_alpha
    vb = -0.5 * v_alpha + 0.5 * _SQRT3 * v_beta
    vc = -0.5 * v_alpha - 0.5 * _SQRT3 * v_beta
    off = -0.5 * (max(va, max(vb, vc)) + min(va, min(vb, vc)))
    inv = 1.0 / vdc
    return (min(1.0, max(0.0, 0.5 + (va + off) * inv)), min(1.0, max(0.0, 0.5 + (vb + off) * inv)),
            min(1.0, max(0.0, 0.5 + (vc + off) * inv)))


@njit(cache=True, error_model="numpy")
def q_current_setpoint(tau, N, Kt):
    """The q-current set-point for a joint torque: iq* = tau / (N Kt), A (tau N m, Kt N m/A, gear N)."""
    return tau / (N * Kt)


@njit(cache=True, error_model="numpy")
def current_pi_axis(i_ref, i, z, Kp, Ki, v_ff, v_max, Ts):
    """One sample of a single-axis discrete current PI with clamp and conditional integration:
    (v, V, held until the next sample; z_next, A s), as in the reference workload W2
    (examples/two_link_foc.yaml).

        e = i_ref - i;  u = Kp e + Ki z + v_ff;  v = clamp(u, -v_max, v_max)
        z_next = z + Ts e  only while |u| <= v_max (anti-windup by conditional integration), else z.
    i_ref, i currents, A; z integrator, A s; Kp V/A; Ki V/(A s); v_ff feed-forward voltage, V
    (-0.0 for none: adding it changes no float, not even a zero's sign); v_max V; Ts period, s.
    """
    e = i_ref - i
    u = Kp * e + Ki * z + v_ff
    if u > v_max:
        return v_max, z
    if u < -v_max:
        return -v_max, z
    return u, z + Ts * e


@njit(cache=True, error_model="numpy")
def current_pi_dq(id_ref, iq_ref, i_d, i_q, z_d, z_q, we, Kp_d, Ki_d, Kp_q, Ki_q, Ld, Lq, psi,
                  decouple, v_max, Ts):
    """One sample of the dq current controller of field-oriented control: (vd, vq, V; zd_next,
    zq_next, A s).

        u = Kp e + Ki z per axis (e = i_ref - i), plus with decouple the feed-forward
        vd_ff = -we Lq i_q, vq_ff = we (Ld i_d + psi) (we = p N qd, rad/s; Ld, Lq H; psi Wb);
        |u| > v_max: v = u v_max / |u| (voltage_circle_limit) and both integrators hold;
        otherwise v = u and z_next = z + Ts e on both axes.
    Currents A; integrators A s; Kp_* V/A; Ki_* V/(A s); v_max V (Vdc / sqrt(3)); Ts s.
    With i_d = id_ref = z_d = 0 and no decoupling this is current_pi_axis on the q axis.
    """
    ed = id_ref - i_d
    eq = iq_ref - i_q
    ud = Kp_d * ed + Ki_d * z_d
    uq = Kp_q * eq + Ki_q * z_q
    if decouple:
        ud -= we * Lq * i_q
        uq += we * (Ld * i_d + psi)
    vd, vq, limited = voltage_circle_limit(ud, uq, v_max)
    if limited:
        return vd, vq, z_d, z_q
    return vd, vq, z_d + Ts * ed, z_q + Ts * eq


# ---------------------------------------------------------------- kernels: (B, n) signals, (n,) parameters

@njit(cache=True)
def clarke_into(a, b, c, alpha_out, beta_out, zero_out):
    """Clarke transform (clarke_transform) of (B, n) arrays, any unit (A or V)."""
    B, n = a.shape
    for k in range(B):
        for j in range(n):
            alpha_out[k, j], beta_out[k, j], zero_out[k, j] = clarke_transform(a[k, j], b[k, j], c[k, j])


@njit(cache=True)
def inverse_clarke_into(alpha, beta, zero, a_out, b_out, c_out):
    """Inverse Clarke (inverse_clarke_transform) of (B, n) arrays."""
    B, n = alpha.shape
    for k in range(B):
        for j in range(n):
            a_out[k, j], b_out[k, j], c_out[k, j] = inverse_clarke_transform(alpha[k, j], beta[k, j],
                                                                             zero[k, j])


@njit(cache=True)
def park_into(alpha, beta, theta_e, d_out, q_out):
    """Park rotation (park_transform) by the electrical angle theta_e (rad); all arrays (B, n)."""
    B, n = alpha.shape
    for k in range(B):
        for j in range(n):
            d_out[k, j], q_out[k, j] = park_transform(alpha[k, j], beta[k, j], theta_e[k, j])


@njit(cache=True)
def inverse_park_into(d, q, theta_e, alpha_out, beta_out):
    """Inverse Park (inverse_park_transform) by theta_e (rad); all arrays (B, n)."""
    B, n = d.shape
    for k in range(B):
        for j in range(n):
            alpha_out[k, j], beta_out[k, j] = inverse_park_transform(d[k, j], q[k, j], theta_e[k, j])


@njit(cache=True)
def voltage_circle_limit_into(v1, v2, v_max, v1_out, v2_out):
    """Average-value inverter limit (voltage_circle_limit) of (B, n) voltage vectors, V.

    v1, v2 (B, n) a voltage vector in dq or alpha-beta, V; v_max (n,) the largest amplitude, V
    (Vdc / sqrt(3) for SVPWM, see inverter_voltage_limit); v1_out, v2_out (B, n), V; they may be v1, v2.
    """
    B, n = v1.shape
    for k in range(B):
        for j in range(n):
            v1_out[k, j], v2_out[k, j], _ = voltage_circle_limit(v1[k, j], v2[k, j], v_max[j])


@njit(cache=True)
def svpwm_into(v_alpha, v_beta, vdc, da_out, db_out, dc_out):
    """SVPWM duty cycles (svpwm_duty_cycles): v_alpha, v_beta (B, n) V; vdc (n,) V; duties (B, n)."""
    B, n = v_alpha.shape
    for k in range(B):
        for j in range(n):
            da_out[k, j], db_out[k, j], dc_out[k, j] = svpwm_duty_cycles(v_alpha[k, j], v_beta[k, j], vdc[j])


@njit(cache=True)
def pi_current_step_into(i_ref, i, z, v_ff, Kp, Ki, v_max, Ts, v_out, z_next):
    """One sample of the single-axis current PI (current_pi_axis) per member and joint.

    i_ref, i (B, n) reference and measured current, A; z (B, n) integrator state, A s;
    v_ff (B, n) feedforward voltage, V (zeros for none); Kp (n,) V/A; Ki (n,) V/(A s);
    v_max (n,) voltage limit, V; Ts the controller period, s (scalar);
    v_out (B, n) the voltage to hold until the next sample, V; z_next (B, n) the integrator after the
    sample (may be z itself).
    """
    B, n = i.shape
    for k in range(B):
        for j in range(n):
            v_out[k, j], z_next[k, j] = current_pi_axis(i_ref[k, j], i[k, j], z[k, j], Kp[j], Ki[j],
                                                        v_ff[k, j], v_max[j], Ts)


@njit(cache=True)
def dq_current_pi_step_into(id_ref, iq_ref, i_d, i_q, omega_e, z_d, z_q,
                            Kp_d, Ki_d, Kp_q, Ki_q, Ld, Lq, psi, v_max, decouple, Ts,
                            vd_out, vq_out, zd_next, zq_next):
    """One sample of the dq current controller (current_pi_dq) per member and joint.

    id_ref, iq_ref, i_d, i_q (B, n) currents, A; omega_e (B, n) electrical speed p N qd, rad/s;
    z_d, z_q (B, n) integrator states, A s; Kp_d, Kp_q (n,) V/A; Ki_d, Ki_q (n,) V/(A s);
    Ld, Lq (n,) H and psi (n,) Wb of the motor model used for decoupling; v_max (n,) radius of the
    voltage circle, V (Vdc / sqrt(3)); decouple (bool) adds the feedforward; Ts the controller
    period, s (scalar); vd_out, vq_out (B, n) V; zd_next, zq_next (B, n) (may be z_d, z_q themselves).
    """
    B, n = i_q.shape
    for k in range(B):
        for j in range(n):
            vd_out[k, j], vq_out[k, j], zd_next[k, j], zq_next[k, j] = current_pi_dq(
                id_ref[k, j], iq_ref[k, j], i_d[k, j], i_q[k, j], z_d[k, j], z_q[k, j], omega_e[k, j],
                Kp_d[j], Ki_d[j], Kp_q[j], Ki_q[j], Ld[j], Lq[j], psi[j], decouple, v_max[j], Ts)


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
    """q_current_setpoint for arrays of any shape: iq* = tau / (N Kt), A (same operations, same order)."""
    return np.asarray(tau, dtype=np.float64) / (np.asarray(N, dtype=np.float64) * np.asarray(Kt))


def inverter_voltage_limit(vdc) -> np.ndarray:
    """svpwm_voltage_limit for arrays of any shape: Vdc / sqrt(3), V."""
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
