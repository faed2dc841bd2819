"""Discrete-time blocks: they run at exact sample hits and hold their outputs in between."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ._bases import OFFSET, PERIOD
from ._kernels import fill_rows, kernel_params, no_update
from .base import Block, Kernels, Param, common_width, register
from .continuous import (STATE_SPACE_PARAMS, StateSpace, checked_order, companion, normalized_tf,
                         per_channel, ss_output, ss_rate)


@njit(cache=True, forceinline=True, _nrt=False)
def delay_output(t, xc, xd, u, y, p):
    fill_rows(xd, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def delay_update(t, xc, xd, u, p):
    fill_rows(u[0], xd)


@njit(cache=True, forceinline=True, _nrt=False)
def hold_output(t, xc, xd, u, y, p):
    fill_rows(u[0], y[0])


DelayParams = namedtuple("DelayParams", "x0")
"""UnitDelay's record: the initial output x0 (B, w) (read by initial_state, not by the kernels)."""


@register
class UnitDelay(Block):
    """y[k] = x[k], x[k+1] = u[k]: a one-sample delay."""

    type_name = "UnitDelay"
    summary = "one-sample delay"
    preserves_units = True
    params = {"period": PERIOD, "offset": OFFSET,
              "x0": Param(0.0, "units of u", "initial output")}
    sample = "discrete"
    direct_feedthrough = False

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        wx = self.param_width("x0")
        if w is None:
            return {"out": wx if wx > 1 else None}
        return {"out": max(w, wx)}

    def configure(self, in_widths, out_widths):
        self.n_xd = out_widths["out"]

    def record(self, v):
        return kernel_params(DelayParams, x0=self.param_as_row("x0", self.n_xd, v))

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xd[...] = p.x0

    def kernels(self):
        return Kernels(output=delay_output, update=delay_update)


@register
class ZeroOrderHold(Block):
    """y = u sampled at each hit and held until the next one (direct feedthrough at the hit)."""

    type_name = "ZeroOrderHold"
    summary = "sample and hold"
    preserves_units = True
    params = {"period": PERIOD, "offset": OFFSET}
    sample = "discrete"

    def resolve_widths(self, in_widths):
        return {"out": in_widths["in"]}

    def kernels(self):
        return Kernels(output=hold_output, update=no_update)


INTEGRATION_METHODS = ("forward", "backward", "trapezoidal")


@njit(cache=True, forceinline=True, _nrt=False)
def clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@njit(cache=True, forceinline=True, _nrt=False)
def discrete_integrator_output(x, u, kt, method, lower, upper, y):
    """y(k) = x(k) (forward), x(k) + K T u(k) (backward), x(k) + K T / 2 u(k) (trapezoidal),
    within [lower, upper]."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            v = u[b, i if wu > 1 else 0]
            step = 0.0 if method == 0 else (kt[b, i] * v if method == 1 else 0.5 * kt[b, i] * v)
            y[b, i] = clamp(x[b, i] + step, lower[b, i], upper[b, i])


@njit(cache=True, forceinline=True, _nrt=False)
def discrete_integrator_update(x, u, kt, method, lower, upper):
    """x(k+1) = x(k) + K T u(k) (forward, backward) or y(k) + K T / 2 u(k) (trapezoidal), clamped."""
    wu = u.shape[1]
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            v = u[b, i if wu > 1 else 0]
            lo, hi = lower[b, i], upper[b, i]
            if method == 2:
                half = 0.5 * kt[b, i] * v
                x[b, i] = clamp(clamp(x[b, i] + half, lo, hi) + half, lo, hi)
            else:
                x[b, i] = clamp(x[b, i] + kt[b, i] * v, lo, hi)


DiscreteIntegratorParams = namedtuple("DiscreteIntegratorParams", "kt method lower upper x0")
"""DiscreteIntegrator kernels' record: K T (B, w), the rule (0 forward, 1 backward,
2 trapezoidal), the limits (B, w), and x0 within them (B, w) (read by initial_state, not by the
kernels)."""


@njit(cache=True, forceinline=True, _nrt=False)
def dint_output(t, xc, xd, u, y, p):
    discrete_integrator_output(xd, u[0], p.kt, p.method, p.lower, p.upper, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def dint_update(t, xc, xd, u, p):
    discrete_integrator_update(xd, u[0], p.kt, p.method, p.lower, p.upper)


@register
class DiscreteIntegrator(Block):
    """Accumulates gain * u over time with period T, state x(0) = x0 (the Simulink state forms):

        forward:      y(k) = x(k),              x(k+1) = x(k) + K T u(k)
        backward:     y(k) = x(k) + K T u(k),   x(k+1) = y(k)
        trapezoidal:  y(k) = x(k) + K T/2 u(k), x(k+1) = y(k) + K T/2 u(k)

    Output and state stay within [lower, upper] (no wind-up). Backward and trapezoidal read u
    directly (feedthrough); forward does not.
    """

    type_name = "DiscreteIntegrator"
    summary = "discrete-time integrator (forward, backward or trapezoidal)"
    params = {"period": PERIOD, "offset": OFFSET,
              "gain": Param(1.0, "-", "gain K applied to the input"),
              "method": Param("forward", "-", "integration rule", kind="str",
                              choices=INTEGRATION_METHODS),
              "x0": Param(0.0, "units of u * s", "initial state"),
              "lower": Param(-np.inf, "units of u * s", "lower limit (may be -inf)",
                             allow_inf=True),
              "upper": Param(np.inf, "units of u * s", "upper limit (may be inf)",
                             allow_inf=True)}
    sample = "discrete"

    def check_values(self, v):
        if np.any(v.lower > v.upper):
            raise ParameterError("lower must be <= upper", block=self.name)

    def setup(self):
        self._param_width = common_width(self, ("gain", "x0", "lower", "upper"))
        self._method = INTEGRATION_METHODS.index(self.p.method)

    def feedthrough(self):
        return set() if self._method == 0 else {("in", "out")}

    def resolve_widths(self, in_widths):
        w, pw = in_widths["in"], self._param_width
        if w is None:
            return {"out": pw if pw > 1 else None}
        if pw > 1 and w not in (1, pw):
            raise WidthError(f"input has width {w}, the parameters have {pw} elements",
                             block=self.name, port="in")
        return {"out": max(w, pw)}

    def configure(self, in_widths, out_widths):
        self.n_xd = out_widths["out"]

    def record(self, v):
        width = self.n_xd
        lower = self.param_as_row("lower", width, v)
        upper = self.param_as_row("upper", width, v)
        return kernel_params(DiscreteIntegratorParams,
                             kt=self.param_as_row("gain", width, v) * float(v.period),
                             method=self._method, lower=lower, upper=upper,
                             x0=np.clip(self.param_as_row("x0", width, v), lower, upper))

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xd[...] = p.x0

    def kernels(self):
        return Kernels(output=dint_output, update=dint_update)


@njit(cache=True)
def ss_advance(x, u, A, Bm, scratch):
    """x <- A x + B u per channel (through scratch, so x may be read while it is written)."""
    ss_rate(x, u, A, Bm, scratch)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            x[b, i] = scratch[b, i]


DiscreteLinearParams = namedtuple("DiscreteLinearParams", "A B C D scratch x0")
"""Discrete linear kernels' record: the matrices per channel (as continuous.LinearParams), a
(B, n_xd) scratch row for the state update, and the initial state x0 (B, n_xd) (read by
initial_state, not by the kernels)."""


@njit(cache=True, forceinline=True, _nrt=False)
def dss_output(t, xc, xd, u, y, p):
    ss_output(xd, u[0], p.C, p.D, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def dss_update(t, xc, xd, u, p):
    ss_advance(xd, u[0], p.A, p.B, p.scratch)


class DiscreteLinearSystem(Block):
    """Shared runtime of discrete linear blocks: y(k) = C x(k) + D u(k), x(k+1) = A x(k) + B u(k),
    the matrices and x0 in the record of the run's values (`matrices(v)`)."""

    sample = "discrete"

    def matrices(self, v):
        """(A, B, C, D) per channel (B, nch, ...) of the values v, and x0 (B, n_xd) or None
        (zeros)."""
        raise NotImplementedError

    def record(self, v):
        A, Bm, C, D, x0 = self.matrices(v)
        checked_order(self, A, self.n_xd)
        x0 = np.zeros((v.batch, self.n_xd)) if x0 is None else x0
        return kernel_params(DiscreteLinearParams, A=A, B=Bm, C=C, D=D,
                             scratch=np.zeros((v.batch, self.n_xd)), x0=x0)

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xd[...] = p.x0

    def kernels(self):
        return Kernels(output=dss_output, update=dss_update)


def z_inverse_tf(block, num, den, length=None):
    """num, den (B, ...) in powers of z^-1 as coefficients of one length (padded with zeros), the
    trailing columns zero in both for every member dropped (down to `length` when given: the
    block's own, so that a part of the batch keeps the whole batch's order), then normalized
    (normalized_tf)."""
    num = num.reshape(num.shape[0], -1)
    den = den.reshape(den.shape[0], -1)
    if np.any(den[:, 0] == 0):
        raise ParameterError("den[0] (the coefficient of y(k)) must be nonzero", block=block.name)
    full = max(num.shape[1], den.shape[1])
    num = np.pad(num, ((0, 0), (0, full - num.shape[1])))
    den = np.pad(den, ((0, 0), (0, full - den.shape[1])))
    if length is None:
        length = full
        while length > 1 and not np.any(num[:, length - 1]) and not np.any(den[:, length - 1]):
            length -= 1
    return normalized_tf(block, num[:, :length], den[:, :length])


@register
class DiscreteTransferFunction(DiscreteLinearSystem):
    """y = num / den u in z, per channel, zero initial state, realised in controllable canonical form.

    form "z^-1" (default, as scipy.signal.lfilter): num = [b0, b1, ...], den = [a0, a1, ...] are
    coefficients of 1, z^-1, z^-2, ...: a0 y(k) + a1 y(k-1) + ... = b0 u(k) + b1 u(k-1) + ...
    form "z": descending powers of z (deg num <= deg den). Direct feedthrough iff b0 != 0 in the
    z^-1 form.
    """

    type_name = "DiscreteTransferFunction"
    summary = "discrete transfer function in z^-1 (or z), per channel"
    params = {"period": PERIOD, "offset": OFFSET,
              "num": Param(units="-", doc="numerator coefficients (powers of z^-1, or of z by form)"),
              "den": Param(units="-", doc="denominator coefficients (powers of z^-1, or of z by form)"),
              "form": Param("z^-1", "-", "ascending powers of z^-1 or descending powers of z",
                            kind="str", choices=("z^-1", "z"))}

    def coefficients(self, v, length=None):
        """(b, a, feedthrough) of the values v (normalized_tf), in powers of z."""
        if v.form == "z^-1":
            return z_inverse_tf(self, v.num, v.den, length)
        return normalized_tf(self, v.num, v.den)

    def check_values(self, v):
        self.coefficients(v)

    def structure(self, v):
        """(the order n, direct feedthrough): which leading and trailing coefficients are zero."""
        _, a, feedthrough = self.coefficients(v)
        return a.shape[1] - 1, feedthrough

    def setup(self):
        self._order, self._feedthrough = self.structure(self.p)

    def feedthrough(self):
        return {("in", "out")} if self._feedthrough else set()

    def resolve_widths(self, in_widths):
        return {"out": in_widths["in"]}

    def configure(self, in_widths, out_widths):
        self._channels = in_widths["in"]
        self.n_xd = self._channels * self._order

    def matrices(self, v):
        b, a, _ = self.coefficients(v, self._order + 1)
        return (*(per_channel(m, self._channels) for m in companion(b, a)), None)


@register
class DiscreteStateSpace(DiscreteLinearSystem):
    """x(k+1) = A x(k) + B u(k), y(k) = C x(k) + D u(k), x(0) = x0; feedthrough iff D != 0."""

    type_name = "DiscreteStateSpace"
    summary = "discrete state-space system"
    params = {"period": PERIOD, "offset": OFFSET, **STATE_SPACE_PARAMS}

    structure = StateSpace.structure
    setup = StateSpace.setup
    feedthrough = StateSpace.feedthrough
    resolve_widths = StateSpace.resolve_widths
    matrices = StateSpace.matrices

    def configure(self, in_widths, out_widths):
        self.n_xd = self._sizes[0]
