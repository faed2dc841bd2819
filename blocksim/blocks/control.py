"""Feedback controllers: the PID of a robot joint loop, continuous or discrete, with setpoint
weights, a filtered or velocity-fed derivative, output limits and anti-windup."""
from __future__ import annotations

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


@njit(cache=True, inline="always")
def _pick(signal, b, i):
    return signal[b, i if signal.shape[1] > 1 else 0]


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _saturate(u, lo, hi):
    return lo if u < lo else (hi if u > hi else u)


@njit(cache=True, inline="always")
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


@njit(cache=True, error_model="numpy", inline="always")
def pid_continuous_output(ref, meas, ref_d, meas_d, x, g, d_source, out):
    """out = sat(Kp (bw r - m) + Ki z + D); x = [z | filter] (B, w or 2w)."""
    w = out.shape[1]
    for b in range(out.shape[0]):
        for i in range(w):
            filt = x[b, w + i] if d_source == 1 else 0.0
            u, e = pid_law(ref, meas, ref_d, meas_d, b, i, x[b, i], filt, 1.0, g, d_source)
            out[b, i] = _saturate(u, g[b, i, LO], g[b, i, HI])


@njit(cache=True, error_model="numpy", inline="always")
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


@njit(cache=True, error_model="numpy", inline="always")
def pid_continuous_output_k(t, xc, xd, u, y, p):
    pid_continuous_output(u[0], u[1], u[2], u[3], xc, p.gains, p.d_source, y[0])


@njit(cache=True, error_model="numpy", inline="always")
def pid_continuous_derivative_k(t, xc, xd, u, dxc, p):
    pid_continuous_rate(u[0], u[1], u[2], u[3], xc, p.gains, p.d_source, p.antiwindup, dxc)


@njit(cache=True, error_model="numpy", inline="always")
def pid_discrete_output_k(t, xc, xd, u, y, p):
    pid_discrete_step(u[0], u[1], u[2], u[3], xd, p.gains, p.d_source, p.antiwindup, p.Ts,
                      p.int_weight, p.filt_weight, y[0], True, xd, False)


@njit(cache=True, error_model="numpy", inline="always")
def pid_discrete_update_k(t, xc, xd, u, p):
    pid_discrete_step(u[0], u[1], u[2], u[3], xd, p.gains, p.d_source, p.antiwindup, p.Ts,
                      p.int_weight, p.filt_weight, xd, False, xd, True)


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
        velocity input wired."""
        return self.d_source(v)

    def d_source(self, v) -> int:
        """Where D comes from (D_*) for the values v and the wired inputs."""
        if {"ref_d", "meas_d"} & self.connected:
            return D_VELOCITY
        return D_FILTERED if np.any(v.Kd != 0) else D_NONE

    def setup(self):
        p = self.p
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
        else:
            self.n_xc = n_states

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
        return (names, []) if not self.is_discrete else ([], names)

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        x = xd if self.is_discrete else xc
        w = p.z0.shape[1]
        x[:, :w] = p.z0
        x[:, w:] = 0.0

    def kernels(self):
        if self.is_discrete:
            return Kernels(output=pid_discrete_output_k, update=pid_discrete_update_k)
        return Kernels(output=pid_continuous_output_k, derivative=pid_continuous_derivative_k)
