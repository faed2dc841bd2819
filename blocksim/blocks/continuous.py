"""Continuous-time blocks: integrators and linear systems, with states the solver integrates."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ._kernels import clamp_at, clamp_rows, kernel_params
from .base import Block, Kernels, Param, common_width, register

RESETS = ("none", "rising", "falling", "either")
RESET_DIRECTIONS = {"rising": 1, "falling": -1, "either": 0}


# ---- Integrator -------------------------------------------------------------------------------------

IntegratorParams = namedtuple("IntegratorParams",
                              "lower upper has_limits reset_port x0_port x0 on_limit held "
                              "reset_width")
"""Integrator kernels' record: the limits (B, w) (+-inf: none), whether any is finite, the
indices in u of the `reset` and `x0` inputs (-1: not there), the x0 parameter (B, w) (read by
initial_state and a reset's event), the first columns in xd of the per-channel `on limit` modes
(-1: no limits) and of the state port's `state held` flag, followed by the held state (-1: no
state port), and the width of the `reset` input (its crossings are the last reset_width; 0: no
reset)."""


@njit(cache=True, forceinline=True, _nrt=False)
def clipped(v, lo, hi):
    """np.clip(v, lo, hi) of one number, as numpy computes it (a NaN v, or a NaN limit, gives
    NaN; at equal zeros of opposite signs the limit): min(max(v, lo), hi) with numpy's NaN rule."""
    m = v if (math.isnan(v) or v > lo) else lo
    return m if (math.isnan(m) or m < hi) else hi


@njit(cache=True, forceinline=True, _nrt=False)
def start_value_at(u, p, b, i):
    """Channel i of member b's start value: x0 (the input port x0 where there is one, else the
    parameter) within the limits."""
    if p.x0_port >= 0:
        return clamp_at(u[p.x0_port], p.lower, p.upper, b, i)
    return clamp_at(p.x0, p.lower, p.upper, b, i)


@njit(cache=True, forceinline=True, _nrt=False)
def start_value_rows(u, p, out):
    """out (B, w) = every channel's start value (start_value_at)."""
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[b, i] = start_value_at(u, p, b, i)


@njit(cache=True, forceinline=True, _nrt=False)
def limit_mode_rows(xc, xd, p):
    """Each channel's mode (xd[:, on_limit + i]): on a limit (1) where the state is at one or
    beyond, whatever the input, else free (0); nothing without limits (on_limit < 0)."""
    a = p.on_limit
    if a < 0:
        return
    lower, upper = p.lower, p.upper
    for b in range(xc.shape[0]):
        for i in range(xc.shape[1]):
            x = xc[b, i]
            xd[b, a + i] = 1.0 if (x <= lower[b, i] or x >= upper[b, i]) else 0.0


@njit(cache=True, forceinline=True, _nrt=False)
def limited_rate_kernel(x, xd, on_limit, u, lower, upper, dx):
    """dx = u, except 0 where the channel is on a limit (its mode xd[:, on_limit + i], set at
    major steps and events) and u pushes outward (x >= upper and u > 0, or x <= lower and
    u < 0): the state stops at the limit and leaves as soon as u points back in. A channel that
    is not on a limit integrates u on in every solver stage, also beyond a limit before the
    crossing's event clamps it there: the step's dynamics stay smooth and the crossing is located
    on them. on_limit < 0: no limits, dx = u."""
    wu = u.shape[1]
    for b in range(dx.shape[0]):
        for i in range(dx.shape[1]):
            v = u[b, i if wu > 1 else 0]
            if on_limit >= 0 and xd[b, on_limit + i] != 0.0 and \
                    ((v > 0.0 and x[b, i] >= upper[b, i]) or (v < 0.0 and x[b, i] <= lower[b, i])):
                dx[b, i] = 0.0
            else:
                dx[b, i] = v


@njit(cache=True, forceinline=True, _nrt=False)
def mark_on_limit(x, u, lower, upper, on_limit, xd):
    """The channels' modes: on a limit where x is at (or beyond) one and u pushes outward, else
    free (a state on a limit that u pushes back in leaves it in the next step)."""
    wu = u.shape[1]
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            v = u[b, i if wu > 1 else 0]
            on = (v > 0.0 and x[b, i] >= upper[b, i]) or (v < 0.0 and x[b, i] <= lower[b, i])
            xd[b, on_limit + i] = 1.0 if on else 0.0


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_crossings(x, lower, upper, limits, reset, g):
    """g = [x - upper, x - lower] per channel (when `limits`; +-1 for an infinite limit), then the
    reset signal's channels."""
    w = x.shape[1]
    for b in range(g.shape[0]):
        j = 0
        if limits:
            for i in range(w):
                g[b, i] = x[b, i] - upper[b, i] if math.isfinite(upper[b, i]) else -1.0
                g[b, w + i] = x[b, i] - lower[b, i] if math.isfinite(lower[b, i]) else 1.0
            j = 2 * w
        for i in range(reset.shape[1]):
            g[b, j + i] = reset[b, i]


@register
class Integrator(Block):
    """x' = u, y = x, from x0, optionally limited to [lower, upper] and reset by an input.

    Limits are exact: crossings x - upper (rising) and x - lower (falling) put a major step on the
    instant the state reaches a limit, `on_event` clamps it there, and the state stays exactly on
    the limit while u pushes outward; it leaves as soon as u points back inside. Whether a channel
    is on a limit is a mode (the discrete state `on limit[i]`), as Simulink's: set where an event
    leaves the state on a limit, judged again at every major step (on a limit while u pushes
    outward), and held inside steps. A free channel integrates u in every solver stage, also beyond a limit before the
    crossing's event, so the crossing is located on smooth dynamics (the output is clamped all
    the same); a channel on a limit stops there while u pushes outward.
    Reset (`reset`: rising | falling | either): input port `reset` (width 1: all channels, or one
    per channel); when it crosses zero in that direction the state restarts from x0.
    `initial_condition: external` takes x0 from the input port `x0` instead of the parameter (read
    at the first major step and at each reset; the output reads it directly until then); whether
    it has been read is the discrete state `x0 loaded` (per batch member).

    `state_port: true` adds the output `state` (units of y), as Simulink's state port: it equals
    `out` except at the major step of a reset, where `out` shows the reset value and `state` the
    value just before it (and, with an external x0, at the first major step, where `out` shows the
    x0 input and `state` the state before it is loaded: the x0 parameter). `state` reads neither
    x0 nor reset directly, so feeding it back to x0 is no algebraic loop: a bouncing ball's
    velocity restarts from x0 = -e * state. The value before a reset is kept in the discrete
    states `state held` and `held x[i]` from the reset until the updates of its major step.
    """

    type_name = "Integrator"
    summary = "integrates its input: x' = u, y = x (limits, reset, external x0, state port)"
    params = {"x0": Param(0.0, "units of y", "initial state (scalar or vector)"),
              "lower": Param(-np.inf, "units of y", "lower limit of the state (may be -inf)",
                             allow_inf=True),
              "upper": Param(np.inf, "units of y", "upper limit of the state (may be inf)",
                             allow_inf=True),
              "reset": Param("none", "-", "reset the state to x0 when input `reset` crosses zero",
                             kind="str", choices=RESETS),
              "initial_condition": Param("internal", "-", "x0 from the parameter (internal) or the "
                                         "input port x0 (external)", kind="str",
                                         choices=("internal", "external")),
              "state_port": Param(False, "-", "add the output `state` (units of y): the state "
                                  "before any reset, read neither from x0 nor from reset, so it "
                                  "may feed x0", kind="bool")}
    sample = "continuous"
    direct_feedthrough = False

    def check_values(self, v):
        if np.any(v.lower > v.upper):
            raise ParameterError("lower must be <= upper", block=self.name)

    def structure(self, v):
        """Whether any limit is finite: the limit crossings (and modes) exist."""
        return self.limited(v)

    @staticmethod
    def limited(v) -> bool:
        return bool(np.any(np.isfinite(v.lower)) or np.any(np.isfinite(v.upper)))

    def setup(self):
        self._param_width = common_width(self, ("x0", "lower", "upper"))
        self._external = self.p.initial_condition == "external"
        self._state_port = self.p.state_port
        self._has_limits = self.limited(self.p)

    def input_names(self):
        names = ["in"]
        if self.p.reset != "none":
            names.append("reset")
        if self._external:
            names.append("x0")
        return names

    def output_names(self):
        return ["out", "state"] if self._state_port else ["out"]

    def feedthrough(self):
        # the state port reads no input directly: only `out` shows the x0 input before it loads
        return {("x0", "out")} if self._external else set()

    def resolve_widths(self, in_widths):
        known = [w for w in in_widths.values() if w is not None] + [self._param_width]
        width = max(known)
        if any(w is None for w in in_widths.values()):
            return {o: width if width > 1 else None for o in self.output_names()}
        for port, w in in_widths.items():
            if w not in (1, width):
                raise WidthError(f"input has width {w}, the state has width {width}",
                                 block=self.name, port=port)
        if self._param_width not in (1, width):
            raise ParameterError(f"x0 / lower / upper have {self._param_width} elements, the input "
                                 f"has width {width}", block=self.name)
        return {o: width for o in self.output_names()}

    def configure(self, in_widths, out_widths):
        width = out_widths["out"]
        self.n_xc = width
        # xd: [x0 loaded] (external x0), [on limit[0..w-1]] (limits), [state held,
        # held x[0..w-1]] (state port)
        n = 1 if self._external else 0
        self._on_limit = n if self._has_limits else -1
        n += width if self._has_limits else 0
        self._held = n if self._state_port else -1
        self.n_xd = n + (1 + width if self._state_port else 0)
        self._index = {name: k for k, name in enumerate(self.input_names())}
        self._reset_width = in_widths.get("reset", 0)
        directions = [1] * width + [-1] * width if self._has_limits else []
        directions += [RESET_DIRECTIONS.get(self.p.reset, 0)] * self._reset_width
        self.n_zc = len(directions)
        self.zc_directions = np.array(directions, dtype=np.int64)

    def record(self, v):
        width = self.n_xc
        return kernel_params(IntegratorParams, lower=self.param_as_row("lower", width, v),
                             upper=self.param_as_row("upper", width, v),
                             has_limits=self._has_limits,
                             reset_port=self._index.get("reset", -1),
                             x0_port=self._index.get("x0", -1),
                             x0=self.param_as_row("x0", width, v),
                             on_limit=self._on_limit, held=self._held,
                             reset_width=self._reset_width)

    def state_names(self):
        width = self.n_xc
        discrete = ["x0 loaded"] if self._external else []
        if self._has_limits:
            discrete += [f"on limit[{i}]" for i in range(width)]
        if self._state_port:
            discrete += ["state held"] + [f"held x[{i}]" for i in range(width)]
        return [f"x[{i}]" for i in range(width)], discrete

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        clamp_rows(p.x0, p.lower, p.upper, xc)
        xd[...] = 0.0
        self.modes_at_limits(xc, xd, p)

    def modes_at_limits(self, xc, xd, p):
        """Each channel's mode: on a limit where the state is at one (or beyond), whatever the
        input. At the start and at an event, until the updates of that major step judge again
        with the input (on a limit only while u pushes outward)."""
        if self._has_limits:
            limit_mode_rows(xc, xd, p)

    def start_value(self, u, out, p=None):
        """x0 (parameter or input port) within the limits, into out (B, width); p: the run's
        record (None: the block's own)."""
        start_value_rows(u, self.own_record(p), out)

    def kernels(self):
        output = integrator_external_output if self._external else integrator_output
        if self._state_port:
            output = integrator_external_state_output if self._external \
                else integrator_state_output
        return Kernels(output=output, derivative=integrator_derivative,
                       update=integrator_update if self.n_xd else None,
                       zero_crossings=integrator_zc if self.n_zc else None,
                       event=integrator_event if self.n_zc else None)


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_event(t, xc, xd, u, mask, p):
    """The reaction to located crossings, per member: a channel whose limit crossing fired is
    clamped onto the limit; where a reset fired, the state port first keeps the value before it
    (within the limits; a second reset at t keeps the first's), and the channels restart from
    their start value (start_value_at). Then the modes at once, for the crossings' baseline at t:
    a state a clamp or a reset put on a limit stays there while u pushes outward."""
    w = xc.shape[1]
    rw = p.reset_width
    first = mask.shape[1] - rw                      # the reset crossings are the last rw
    lower, upper = p.lower, p.upper
    for b in range(xc.shape[0]):
        if p.has_limits:
            for i in range(w):
                if mask[b, i] or mask[b, w + i]:
                    xc[b, i] = clipped(xc[b, i], lower[b, i], upper[b, i])
        if rw > 0:
            h = p.held
            if h >= 0 and xd[b, h] == 0.0:
                # the state port shows, until this major step's updates, the output the block
                # would have had without the reset
                fired = False
                for j in range(rw):
                    if mask[b, first + j]:
                        fired = True
                if fired:
                    xd[b, h] = 1.0
                    for i in range(w):
                        xd[b, h + 1 + i] = clipped(xc[b, i], lower[b, i], upper[b, i])
            for i in range(w):
                if mask[b, first + (i if rw > 1 else 0)]:
                    xc[b, i] = start_value_at(u, p, b, i)
    limit_mode_rows(xc, xd, p)
    return False


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_output(t, xc, xd, u, y, p):
    clamp_rows(xc, p.lower, p.upper, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_external_output(t, xc, xd, u, y, p):
    """y = x0 input (within the limits) until the member has loaded it, then the state."""
    x0 = u[p.x0_port]
    w0 = x0.shape[1]
    out = y[0]
    lower, upper = p.lower, p.upper
    for b in range(out.shape[0]):
        loaded = xd[b, 0] != 0.0
        for i in range(out.shape[1]):
            v = xc[b, i] if loaded else x0[b, i if w0 > 1 else 0]
            out[b, i] = lower[b, i] if v < lower[b, i] else (upper[b, i] if v > upper[b, i] else v)


@njit(cache=True, forceinline=True, _nrt=False)
def state_port_rows(xc, xd, p, out):
    """The state port: the value held at a reset (while its flag is set), else the state within
    the limits."""
    h = p.held
    lower, upper = p.lower, p.upper
    for b in range(out.shape[0]):
        held = xd[b, h] != 0.0
        for i in range(out.shape[1]):
            v = xd[b, h + 1 + i] if held else xc[b, i]
            out[b, i] = lower[b, i] if v < lower[b, i] else (upper[b, i] if v > upper[b, i] else v)


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_state_output(t, xc, xd, u, y, p):
    clamp_rows(xc, p.lower, p.upper, y[0])
    state_port_rows(xc, xd, p, y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_external_state_output(t, xc, xd, u, y, p):
    integrator_external_output(t, xc, xd, u, y, p)
    state_port_rows(xc, xd, p, y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def load_x0(xc, xd, u, p):
    """At the first major step: the state starts from the x0 input (within the limits)."""
    x0 = u[p.x0_port]
    w0 = x0.shape[1]
    lower, upper = p.lower, p.upper
    for b in range(xc.shape[0]):
        if xd[b, 0] == 0.0:
            for i in range(xc.shape[1]):
                v = x0[b, i if w0 > 1 else 0]
                xc[b, i] = lower[b, i] if v < lower[b, i] else (upper[b, i] if v > upper[b, i] else v)
            xd[b, 0] = 1.0


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_update(t, xc, xd, u, p):
    """At every major step: an external x0 loaded (at the first), the channels' limit modes from
    where the state is, and the state port following the state again."""
    if p.x0_port >= 0:
        load_x0(xc, xd, u, p)
    if p.on_limit >= 0:
        mark_on_limit(xc, u[0], p.lower, p.upper, p.on_limit, xd)
    if p.held >= 0:
        for b in range(xd.shape[0]):
            xd[b, p.held] = 0.0


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_derivative(t, xc, xd, u, dxc, p):
    limited_rate_kernel(xc, xd, p.on_limit, u[0], p.lower, p.upper, dxc)


@njit(cache=True, forceinline=True, _nrt=False)
def integrator_zc(t, xc, xd, u, g, p):
    if p.reset_port >= 0:
        integrator_crossings(xc, p.lower, p.upper, p.has_limits, u[p.reset_port], g)
    else:
        integrator_crossings(xc, p.lower, p.upper, p.has_limits, xc[:, :0], g)


# ---- linear systems ---------------------------------------------------------------------------------

@njit(cache=True)
def ss_output(x, u, C, D, y):
    """y = C x + D u for each of nch independent channels: C (B, nch, p, n), D (B, nch, p, m),
    x (B, nch n), u (B, nch m), y (B, nch p)."""
    nch, p, n = C.shape[1], C.shape[2], C.shape[3]
    m = D.shape[3]
    for b in range(y.shape[0]):
        for c in range(nch):
            for k in range(p):
                acc = 0.0
                for i in range(n):
                    acc += C[b, c, k, i] * x[b, c * n + i]
                for j in range(m):
                    acc += D[b, c, k, j] * u[b, c * m + j]
                y[b, c * p + k] = acc


@njit(cache=True)
def ss_rate(x, u, A, Bm, dx):
    """dx = A x + B u per channel: A (B, nch, n, n), Bm (B, nch, n, m); dx may not alias x."""
    nch, n, m = A.shape[1], A.shape[2], Bm.shape[3]
    for b in range(x.shape[0]):
        for c in range(nch):
            for k in range(n):
                acc = 0.0
                for i in range(n):
                    acc += A[b, c, k, i] * x[b, c * n + i]
                for j in range(m):
                    acc += Bm[b, c, k, j] * u[b, c * m + j]
                dx[b, c * n + k] = acc


def normalized_tf(block, num, den):
    """Batched (B, L) numerator and denominator with shared leading zeros removed, den[:, 0] != 0,
    as (b (B, n + 1), a (B, n + 1)) scaled so that a[:, 0] = 1 and b padded to the same length.

    The order n is the same for any part of a batch as for the whole (a leading zero of den is
    shared by every member or refused); the numerator's zeros pad b in front either way."""
    num = num.reshape(num.shape[0], -1)
    den = den.reshape(den.shape[0], -1)
    while den.shape[1] > 1 and np.all(den[:, 0] == 0):
        den = den[:, 1:]
    while num.shape[1] > 1 and np.all(num[:, 0] == 0):
        num = num[:, 1:]
    if np.any(den[:, 0] == 0):
        raise ParameterError("den must have a nonzero leading coefficient", block=block.name)
    if num.shape[1] > den.shape[1]:
        raise ParameterError(f"the transfer function is improper: num has degree {num.shape[1] - 1}, "
                             f"den {den.shape[1] - 1}", block=block.name)
    b = np.zeros_like(den)
    b[:, den.shape[1] - num.shape[1]:] = num
    return b / den[:, :1], den / den[:, :1], num.shape[1] == den.shape[1]


def companion(b, a):
    """Controllable canonical realisation of (b0 s^n + ... + bn) / (s^n + a1 s^(n-1) + ... + an) for
    each batch member: x1 is the lowest derivative, x' = A x + B u, y = C x + D u.
    Returns A (B, n, n), B (B, n, 1), C (B, 1, n), D (B, 1, 1). The same form realises a discrete
    transfer function in z."""
    batch, n = a.shape[0], a.shape[1] - 1
    A = np.zeros((batch, n, n))
    Bm = np.zeros((batch, n, 1))
    C = np.zeros((batch, 1, n))
    if n:
        A[:, np.arange(n - 1), np.arange(1, n)] = 1.0
        A[:, n - 1, :] = -a[:, :0:-1]
        Bm[:, n - 1, 0] = 1.0
        C[:, 0, :] = b[:, :0:-1] - a[:, :0:-1] * b[:, :1]
    return A, Bm, C, b[:, :1].reshape(batch, 1, 1)


def per_channel(matrix, channels):
    """(B, r, c) -> (B, channels, r, c), C-contiguous, for the per-channel kernels."""
    return np.ascontiguousarray(np.repeat(matrix[:, None], channels, axis=1))


LinearParams = namedtuple("LinearParams", "A B C D x0")
"""Linear kernels' record: the matrices per channel, A (B, nch, n, n), B (B, nch, n, m),
C (B, nch, p, n), D (B, nch, p, m), and the initial state x0 (B, nch n) (read by initial_state,
not by the kernels)."""


@njit(cache=True, forceinline=True, _nrt=False)
def linear_output(t, xc, xd, u, y, p):
    ss_output(xc, u[0], p.C, p.D, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def linear_derivative(t, xc, xd, u, dxc, p):
    ss_rate(xc, u[0], p.A, p.B, dxc)


def checked_order(block, A, n_states):
    """Raise unless the matrices A (B, nch, n, n) realise the block's n_states states (values of
    a run must keep the order the block was configured with)."""
    if A.shape[1] * A.shape[2] != n_states:
        raise ParameterError(f"the values give {A.shape[1] * A.shape[2]} states, the block has "
                             f"{n_states}; load the diagram again with them", block=block.name)


class LinearSystem(Block):
    """Shared runtime of linear blocks: per-channel matrices A, B, C, D (B, nch, ...) and x0, all
    in the record of the run's values (`matrices(v)`)."""

    sample = "continuous"

    def matrices(self, v):
        """(A, B, C, D) per channel (B, nch, ...) of the values v, and x0 (B, n_xc) or None
        (zeros)."""
        raise NotImplementedError

    def record(self, v):
        A, Bm, C, D, x0 = self.matrices(v)
        checked_order(self, A, self.n_xc)
        x0 = np.zeros((v.batch, self.n_xc)) if x0 is None else x0
        return kernel_params(LinearParams, A=A, B=Bm, C=C, D=D, x0=x0)

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xc[...] = p.x0

    def kernels(self):
        return Kernels(output=linear_output, derivative=linear_derivative)

    # the per-channel matrices of the block's own values (its record), for inspection
    _A = property(lambda self: self.runtime_kernels().params.A)
    _B = property(lambda self: self.runtime_kernels().params.B)
    _C = property(lambda self: self.runtime_kernels().params.C)
    _D = property(lambda self: self.runtime_kernels().params.D)


@register
class TransferFunction(LinearSystem):
    """y = num(s) / den(s) u, coefficients in descending powers of s (proper: deg num <= deg den),
    realised in controllable canonical form with zero initial state; a vector input gets one copy
    per channel. Direct feedthrough only when deg num == deg den."""

    type_name = "TransferFunction"
    summary = "continuous transfer function num(s)/den(s), per channel"
    params = {"num": Param(units="-", doc="numerator coefficients, descending powers of s"),
              "den": Param(units="-", doc="denominator coefficients, descending powers of s")}

    def check_values(self, v):
        normalized_tf(self, v.num, v.den)

    def structure(self, v):
        """(the order n, direct feedthrough): which leading coefficients are zero."""
        _, a, feedthrough = normalized_tf(self, v.num, v.den)
        return a.shape[1] - 1, feedthrough

    def setup(self):
        self._order, self._feedthrough = self.structure(self.p)

    def feedthrough(self):
        return {("in", "out")} if self._feedthrough else set()

    def resolve_widths(self, in_widths):
        return {"out": in_widths["in"]}

    def configure(self, in_widths, out_widths):
        self._channels = in_widths["in"]
        self.n_xc = self._channels * self._order

    def matrices(self, v):
        b, a, _ = normalized_tf(self, v.num, v.den)
        return (*(per_channel(m, self._channels) for m in companion(b, a)), None)


def as_matrix(block, key, rows=None, cols=None, v=None):
    """A batched matrix parameter (B, r, c) of the values v (the block's own by default): a
    scalar is 1x1 (D: filled to rows x cols), a vector is a column for B and a row for C."""
    value = getattr(block.p if v is None else v, key)
    if value.ndim == 1:
        if key == "D" and rows is not None:
            return np.ascontiguousarray(np.repeat(np.repeat(value[:, None, None], rows, 1), cols, 2))
        return value.reshape(value.shape[0], 1, 1)
    if value.ndim == 2:
        return value[:, None, :] if key == "C" else value[:, :, None]
    if value.ndim == 3:
        return value
    raise ParameterError(f"{key} must be a matrix, got shape {value.shape[1:]}", block=block.name)


def state_space_matrices(block, v=None):
    """Checked (A, B, C, D, x0) of a StateSpace-like block for the values v (the block's own by
    default), batched: A (B, n, n), B (B, n, m), C (B, p, n), D (B, p, m), x0 (B, n)."""
    v = block.p if v is None else v
    A, Bm, C = as_matrix(block, "A", v=v), as_matrix(block, "B", v=v), as_matrix(block, "C", v=v)
    n, m, p = A.shape[1], Bm.shape[2], C.shape[1]
    D = as_matrix(block, "D", p, m, v=v)
    problems = []
    if A.shape[2] != n:
        problems.append(f"A is {n}x{A.shape[2]}, it must be square")
    if Bm.shape[1] != n:
        problems.append(f"B has {Bm.shape[1]} rows, A has {n}")
    if C.shape[2] != n:
        problems.append(f"C has {C.shape[2]} columns, A has {n}")
    if D.shape[1:] != (p, m):
        problems.append(f"D is {D.shape[1]}x{D.shape[2]}, it must be {p}x{m} (rows of C x columns of B)")
    if problems:
        raise ParameterError("; ".join(problems), block=block.name)
    x0 = v.x0.reshape(v.batch, -1)
    if x0.shape[1] not in (1, n):
        raise ParameterError(f"x0 has {x0.shape[1]} elements, the system has {n} states",
                             block=block.name)
    x0 = np.ascontiguousarray(np.broadcast_to(x0, (v.batch, n)))
    return A, Bm, C, D, x0


STATE_SPACE_PARAMS = {
    "A": Param(units="-", doc="state matrix (n x n)"),
    "B": Param(units="-", doc="input matrix (n x m; a vector is a column)"),
    "C": Param(units="-", doc="output matrix (p x n; a vector is a row)"),
    "D": Param(0.0, "-", "feedthrough matrix (p x m; a scalar fills it)"),
    "x0": Param(0.0, "units of x", "initial state (scalar or n-vector)"),
}


@register
class StateSpace(LinearSystem):
    """x' = A x + B u, y = C x + D u, from x0: input width m, output width p; direct feedthrough
    iff D has a nonzero entry."""

    type_name = "StateSpace"
    summary = "continuous state-space system"
    params = dict(STATE_SPACE_PARAMS)

    def structure(self, v):
        """Direct feedthrough: whether D has a nonzero entry."""
        return bool(np.any(state_space_matrices(self, v)[3] != 0))

    def setup(self):
        A, Bm, C, D, x0 = state_space_matrices(self)      # the shapes, checked
        self._sizes = (A.shape[1], Bm.shape[2], C.shape[1])  # states n, inputs m, outputs p
        self._feedthrough = self.structure(self.p)

    def feedthrough(self):
        return {("in", "out")} if self._feedthrough else set()

    def resolve_widths(self, in_widths):
        n, m, p = self._sizes
        w = in_widths["in"]
        if w is not None and w != m:
            raise WidthError(f"input has width {w}, B has {m} columns",
                             block=self.name, port="in")
        return {"out": p}

    def configure(self, in_widths, out_widths):
        self.n_xc = self._sizes[0]

    def matrices(self, v):
        A, Bm, C, D, x0 = state_space_matrices(self, v)
        return (*(per_channel(m, 1) for m in (A, Bm, C, D)), x0)


@register
class FilteredDerivative(LinearSystem):
    """y = N s / (s + N) u per channel: a derivative rolled off above N rad/s (x' = -N x + u,
    y = N u - N^2 x, from x = 0, so y(0) = N u(0))."""

    type_name = "FilteredDerivative"
    summary = "derivative with a first-order filter, N s/(s + N)"
    params = {"N": Param(100.0, "rad/s", "filter bandwidth (> 0); scalar or per channel")}

    def check_values(self, v):
        if np.any(v.N <= 0):
            raise ParameterError("N must be > 0", block=self.name)

    def setup(self):
        self._param_width = self.param_width("N")

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        if w is not None and self._param_width not in (1, w):
            raise WidthError(f"input has width {w}, N has {self._param_width} elements",
                             block=self.name, port="in")
        return {"out": w}

    def configure(self, in_widths, out_widths):
        self.n_xc = in_widths["in"]

    def matrices(self, v):
        N = self.param_as_row("N", self.n_xc, v)[:, :, None, None]
        return (np.ascontiguousarray(-N), np.ones_like(N), np.ascontiguousarray(-N * N),
                np.ascontiguousarray(N), None)
