"""Continuous-time blocks: integrators and linear systems, with states the solver integrates."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ._kernels import clamp_rows, kernel_params
from .base import Block, Kernels, Param, common_width, register

RESETS = ("none", "rising", "falling", "either")
RESET_DIRECTIONS = {"rising": 1, "falling": -1, "either": 0}


# ---- Integrator -------------------------------------------------------------------------------------

IntegratorParams = namedtuple("IntegratorParams", "lower upper has_limits reset_port x0_port x0")
"""Integrator kernels' record: the limits (B, w) (+-inf: none), whether any is finite, the
indices in u of the `reset` and `x0` inputs (-1: not there), and the x0 parameter (B, w) (read by
initial_state and a reset, not by the kernels)."""


@njit(cache=True, inline="always")
def limited_rate_kernel(x, u, lower, upper, dx):
    """dx = u, except 0 where x sits on a limit and u pushes outward (x >= upper and u > 0, or
    x <= lower and u < 0): the state stops at the limit and leaves as soon as u points back in."""
    wu = u.shape[1]
    for b in range(dx.shape[0]):
        for i in range(dx.shape[1]):
            v = u[b, i if wu > 1 else 0]
            if (v > 0.0 and x[b, i] >= upper[b, i]) or (v < 0.0 and x[b, i] <= lower[b, i]):
                dx[b, i] = 0.0
            else:
                dx[b, i] = v


@njit(cache=True, inline="always")
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
    the limit while u pushes outward; it leaves as soon as u points back inside.
    Reset (`reset`: rising | falling | either): input port `reset` (width 1: all channels, or one
    per channel); when it crosses zero in that direction the state restarts from x0.
    `initial_condition: external` takes x0 from the input port `x0` instead of the parameter (read
    at the first major step and at each reset; the output reads it directly until then); whether
    it has been read is the discrete state `x0 loaded` (per batch member).
    """

    type_name = "Integrator"
    summary = "integrates its input: x' = u, y = x (limits, reset, external x0)"
    params = {"x0": Param(0.0, "units of y", "initial state (scalar or vector)"),
              "lower": Param(-np.inf, "units of y", "lower limit of the state (may be -inf)",
                             allow_inf=True),
              "upper": Param(np.inf, "units of y", "upper limit of the state (may be inf)",
                             allow_inf=True),
              "reset": Param("none", "-", "reset the state to x0 when input `reset` crosses zero",
                             kind="str", choices=RESETS),
              "initial_condition": Param("internal", "-", "x0 from the parameter (internal) or the "
                                         "input port x0 (external)", kind="str",
                                         choices=("internal", "external"))}
    sample = "continuous"
    direct_feedthrough = False

    def check_values(self, v):
        if np.any(v.lower > v.upper):
            raise ParameterError("lower must be <= upper", block=self.name)

    def structure(self, v):
        """Whether any limit is finite: the limit crossings exist."""
        return self.limited(v)

    @staticmethod
    def limited(v) -> bool:
        return bool(np.any(np.isfinite(v.lower)) or np.any(np.isfinite(v.upper)))

    def setup(self):
        self._param_width = common_width(self, ("x0", "lower", "upper"))
        self._external = self.p.initial_condition == "external"
        self._has_limits = self.limited(self.p)

    def input_names(self):
        names = ["in"]
        if self.p.reset != "none":
            names.append("reset")
        if self._external:
            names.append("x0")
        return names

    def feedthrough(self):
        return {("x0", "out")} if self._external else set()

    def resolve_widths(self, in_widths):
        known = [w for w in in_widths.values() if w is not None] + [self._param_width]
        width = max(known)
        if any(w is None for w in in_widths.values()):
            return {"out": width if width > 1 else None}
        for port, w in in_widths.items():
            if w not in (1, width):
                raise WidthError(f"input has width {w}, the state has width {width}",
                                 block=self.name, port=port)
        if self._param_width not in (1, width):
            raise ParameterError(f"x0 / lower / upper have {self._param_width} elements, the input "
                                 f"has width {width}", block=self.name)
        return {"out": width}

    def configure(self, in_widths, out_widths):
        width = out_widths["out"]
        self.n_xc = width
        self.n_xd = 1 if self._external else 0
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
                             x0=self.param_as_row("x0", width, v))

    def state_names(self):
        return [f"x[{i}]" for i in range(self.n_xc)], ["x0 loaded"] * self.n_xd

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        clamp_rows(p.x0, p.lower, p.upper, xc)
        xd[...] = 0.0

    def start_value(self, u, out, p=None):
        """x0 (parameter or input port) within the limits, into out (B, width); p: the run's
        record (None: the block's own)."""
        p = self.own_record(p)
        x0 = u[self._index["x0"]] if self._external else p.x0
        clamp_rows(x0, p.lower, p.upper, out)

    def kernels(self):
        if self._external:
            return Kernels(output=integrator_external_output, derivative=integrator_derivative,
                           update=integrator_external_update,
                           zero_crossings=integrator_zc if self.n_zc else None)
        return Kernels(output=integrator_output, derivative=integrator_derivative,
                       zero_crossings=integrator_zc if self.n_zc else None)

    def on_event(self, t, xc, xd, u, mask, p=None):
        p = self.own_record(p)
        width = self.n_xc
        if self._has_limits:
            hit = mask[:, :width] | mask[:, width:2 * width]
            clamped = np.clip(xc, p.lower, p.upper)
            xc[hit] = clamped[hit]
        if self._reset_width:
            resets = mask[:, self.n_zc - self._reset_width:]
            if self._reset_width == 1:
                resets = np.repeat(resets, width, axis=1)
            start = np.empty_like(xc)
            self.start_value(u, start, p)
            xc[resets] = start[resets]
        return False


@njit(cache=True, inline="always")
def integrator_output(t, xc, xd, u, y, p):
    clamp_rows(xc, p.lower, p.upper, y[0])


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def integrator_external_update(t, xc, xd, u, p):
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


@njit(cache=True, inline="always")
def integrator_derivative(t, xc, xd, u, dxc, p):
    limited_rate_kernel(xc, u[0], p.lower, p.upper, dxc)


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def linear_output(t, xc, xd, u, y, p):
    ss_output(xc, u[0], p.C, p.D, y[0])


@njit(cache=True, inline="always")
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
