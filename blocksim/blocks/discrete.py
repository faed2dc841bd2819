"""Discrete-time blocks: they run at exact sample hits and hold their outputs in between."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ._bases import OFFSET, PERIOD
from ._kernels import fill_rows, kernel_params, no_update
from .base import Block, Kernels, Param, common_width, register
from .continuous import (STATE_SPACE_PARAMS, StateSpace, companion, normalized_tf, per_channel,
                         ss_output, ss_rate, state_space_matrices)


@njit(cache=True, inline="always")
def delay_output(t, xc, xd, u, y, p):
    fill_rows(xd, y[0])


@njit(cache=True, inline="always")
def delay_update(t, xc, xd, u, p):
    fill_rows(u[0], xd)


@njit(cache=True, inline="always")
def hold_output(t, xc, xd, u, y, p):
    fill_rows(u[0], y[0])


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
        self._x0 = self.param_as_row("x0", self.n_xd)

    def initial_state(self, xc, xd):
        xd[...] = self._x0

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


@njit(cache=True, inline="always")
def clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@njit(cache=True, inline="always")
def discrete_integrator_output(x, u, kt, method, lower, upper, y):
    """y(k) = x(k) (forward), x(k) + K T u(k) (backward), x(k) + K T / 2 u(k) (trapezoidal),
    within [lower, upper]."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            v = u[b, i if wu > 1 else 0]
            step = 0.0 if method == 0 else (kt[b, i] * v if method == 1 else 0.5 * kt[b, i] * v)
            y[b, i] = clamp(x[b, i] + step, lower[b, i], upper[b, i])


@njit(cache=True, inline="always")
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


DiscreteIntegratorParams = namedtuple("DiscreteIntegratorParams", "kt method lower upper")
"""DiscreteIntegrator kernels' record: K T (B, w), the rule (0 forward, 1 backward,
2 trapezoidal), the limits (B, w)."""


@njit(cache=True, inline="always")
def dint_output(t, xc, xd, u, y, p):
    discrete_integrator_output(xd, u[0], p.kt, p.method, p.lower, p.upper, y[0])


@njit(cache=True, inline="always")
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

    def setup(self):
        if np.any(self.p.lower > self.p.upper):
            raise ParameterError("lower must be <= upper", block=self.name)
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
        width = out_widths["out"]
        self.n_xd = width
        self._kt = self.param_as_row("gain", width) * float(self.p.period)
        self._lower = self.param_as_row("lower", width)
        self._upper = self.param_as_row("upper", width)
        self._x0 = np.clip(self.param_as_row("x0", width), self._lower, self._upper)
        self._params = kernel_params(DiscreteIntegratorParams, kt=self._kt, method=self._method,
                                     lower=self._lower, upper=self._upper)

    def initial_state(self, xc, xd):
        xd[...] = self._x0

    def kernels(self):
        return Kernels(output=dint_output, update=dint_update, params=self._params)


@njit(cache=True)
def ss_advance(x, u, A, Bm, scratch):
    """x <- A x + B u per channel (through scratch, so x may be read while it is written)."""
    ss_rate(x, u, A, Bm, scratch)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            x[b, i] = scratch[b, i]


DiscreteLinearParams = namedtuple("DiscreteLinearParams", "A B C D scratch")
"""Discrete linear kernels' record: the matrices per channel (as continuous.LinearParams) and a
(B, n_xd) scratch row for the state update."""


@njit(cache=True, inline="always")
def dss_output(t, xc, xd, u, y, p):
    ss_output(xd, u[0], p.C, p.D, y[0])


@njit(cache=True, inline="always")
def dss_update(t, xc, xd, u, p):
    ss_advance(xd, u[0], p.A, p.B, p.scratch)


class DiscreteLinearSystem(Block):
    """Shared runtime of discrete linear blocks: y(k) = C x(k) + D u(k), x(k+1) = A x(k) + B u(k)."""

    sample = "discrete"

    def set_matrices(self, A, Bm, C, D, x0=None):
        self._A, self._B, self._C, self._D = A, Bm, C, D
        self.n_xd = A.shape[1] * A.shape[2]
        self._x0 = np.zeros((self.batch, self.n_xd)) if x0 is None else x0
        self._scratch = np.zeros((self.batch, self.n_xd))
        self._params = kernel_params(DiscreteLinearParams, A=A, B=Bm, C=C, D=D,
                                     scratch=self._scratch)

    def initial_state(self, xc, xd):
        xd[...] = self._x0

    def kernels(self):
        return Kernels(output=dss_output, update=dss_update, params=self._params)


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

    def setup(self):
        num = self.p.num.reshape(self.batch, -1)
        den = self.p.den.reshape(self.batch, -1)
        if self.p.form == "z^-1":
            if np.any(den[:, 0] == 0):
                raise ParameterError("den[0] (the coefficient of y(k)) must be nonzero",
                                     block=self.name)
            length = max(num.shape[1], den.shape[1])
            num = np.pad(num, ((0, 0), (0, length - num.shape[1])))
            den = np.pad(den, ((0, 0), (0, length - den.shape[1])))
            while length > 1 and not np.any(num[:, -1]) and not np.any(den[:, -1]):
                num, den, length = num[:, :-1], den[:, :-1], length - 1
        self._b, self._a, self._feedthrough = normalized_tf(self, num, den)

    def feedthrough(self):
        return {("in", "out")} if self._feedthrough else set()

    def resolve_widths(self, in_widths):
        return {"out": in_widths["in"]}

    def configure(self, in_widths, out_widths):
        width = in_widths["in"]
        self.set_matrices(*(per_channel(m, width) for m in companion(self._b, self._a)))


@register
class DiscreteStateSpace(DiscreteLinearSystem):
    """x(k+1) = A x(k) + B u(k), y(k) = C x(k) + D u(k), x(0) = x0; feedthrough iff D != 0."""

    type_name = "DiscreteStateSpace"
    summary = "discrete state-space system"
    params = {"period": PERIOD, "offset": OFFSET, **STATE_SPACE_PARAMS}

    def setup(self):
        self._matrices = state_space_matrices(self)

    feedthrough = StateSpace.feedthrough
    resolve_widths = StateSpace.resolve_widths

    def configure(self, in_widths, out_widths):
        A, Bm, C, D, x0 = self._matrices
        self.set_matrices(*(per_channel(m, 1) for m in (A, Bm, C, D)), x0)
