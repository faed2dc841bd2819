"""Math blocks: memoryless maps of their inputs (gain, sums, products, functions, nonlinearities)."""
from __future__ import annotations

import ast
import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ..expressions.runtime import ExpressionCompiler, check_expression, run_program
from ..reading.limits import shown
from ._bases import Elementwise
from ._kernels import fill_rows, kernel_params, scale_rows
from .base import Block, Kernels, Param, numbered_ports, register


@njit(cache=True, forceinline=True, _nrt=False)
def matrix_times(u, K, y):
    """y[b] = K[b] @ u[b] for K (B, m, n), u (B, n)."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            acc = 0.0
            for j in range(u.shape[1]):
                acc += K[b, i, j] * u[b, j]
            y[b, i] = acc


@register
class Gain(Block):
    """y = gain * u: a scalar or vector gain acts elementwise, a matrix gain multiplies (y = K u)."""

    type_name = "Gain"
    summary = "scalar, elementwise or matrix gain"
    params = {"gain": Param(1.0, "any", "scalar, vector (elementwise) or matrix (y = K u)")}

    def setup(self):
        if self.p.gain.ndim > 3:
            raise ParameterError("gain must be a scalar, a vector or a matrix", block=self.name)

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        gain = self.p.gain
        if gain.ndim == 3:
            rows, cols = gain.shape[1:]
            if w is not None and w != cols:
                raise WidthError(f"input has width {w}, the {rows}x{cols} gain matrix needs {cols}",
                                 block=self.name, port="in")
            return {"out": rows}
        if gain.ndim == 2 and gain.shape[1] > 1:
            if w is not None and w not in (1, gain.shape[1]):
                raise WidthError(f"input has width {w}, the gain vector has {gain.shape[1]} elements",
                                 block=self.name, port="in")
            return {"out": gain.shape[1]}
        return {"out": w}

    def configure(self, in_widths, out_widths):
        self._matrix = self.p.gain.ndim == 3

    def record(self, v):
        gain = v.gain if self._matrix else self.param_as_row("gain", self.out_widths["out"], v)
        return kernel_params(GainParams, gain=gain)

    def kernels(self):
        return Kernels(output=gain_matrix_output if self._matrix else gain_rows_output)


GainParams = namedtuple("GainParams", "gain")
"""Gain kernels' record: the gain as a row (B, w) or a matrix (B, m, n)."""


@njit(cache=True, forceinline=True, _nrt=False)
def gain_rows_output(t, xc, xd, u, y, p):
    scale_rows(u[0], p.gain, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def gain_matrix_output(t, xc, xd, u, y, p):
    matrix_times(u[0], p.gain, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def signed_sum(inputs, signs, y):
    """y = sum_k signs[k] * inputs[k], each input (B, w) or (B, 1) broadcast, added in input order
    from 0.0. Input by input: an array taken out of the tuple once per call, not per element."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = 0.0
    for k in range(len(inputs)):
        u = inputs[k]
        sign = signs[k]
        wide = u.shape[1] > 1
        for b in range(y.shape[0]):
            for i in range(y.shape[1]):
                y[b, i] += sign * u[b, i if wide else 0]


@register
class Sum(Block):
    """y = sum of the inputs with the signs given, e.g. signs "+-" : y = in1 - in2."""

    type_name = "Sum"
    summary = "sum of inputs with signs (scalars expand to the vector width)"
    preserves_units = True
    params = {"signs": Param("++", "-", "one '+' or '-' per input (in1..inN; `in` for one)",
                             kind="str")}

    def setup(self):
        signs = self.p.signs.replace("|", "")
        if not signs or set(signs) - {"+", "-"}:
            raise ParameterError(f"signs must be a string of '+' and '-', got {shown(self.p.signs)}",
                                 block=self.name)
        self._signs = np.array([1.0 if s == "+" else -1.0 for s in signs])

    def input_names(self):
        return numbered_ports("in", len(self._signs))

    def record(self, v):
        # the signs are a string parameter: structure, the same for every value set
        return SumParams(self._signs)

    def kernels(self):
        return Kernels(output=sum_output)


SumParams = namedtuple("SumParams", "signs")
"""Sum kernel's record: +1.0 / -1.0 per input, in port order."""


@njit(cache=True, forceinline=True, _nrt=False)
def sum_output(t, xc, xd, u, y, p):
    signed_sum(u, p.signs, y[0])


@njit(cache=True)
def product_kernel(inputs, divide, y):
    """y = prod_k inputs[k] ** (-1 if divide[k] else 1), elementwise, (B, 1) inputs broadcast."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            acc = 1.0
            for k in range(len(inputs)):
                u = inputs[k]
                v = u[b, i if u.shape[1] > 1 else 0]
                if divide[k]:
                    acc /= v
                else:
                    acc *= v
            y[b, i] = acc


ProductParams = namedtuple("ProductParams", "divide")
"""Product kernel's record: per input, True where it divides."""


@njit(cache=True, forceinline=True, _nrt=False)
def product_output(t, xc, xd, u, y, p):
    product_kernel(u, p.divide, y[0])


@register
class Product(Block):
    """Elementwise product and quotient of the inputs: ops "*/" gives y = in1 / in2, "/" gives 1 / in."""

    type_name = "Product"
    summary = "elementwise product / quotient of inputs (scalars expand)"
    params = {"ops": Param("**", "-", "one '*' or '/' per input (in1..inN; `in` for one)",
                           kind="str")}

    def setup(self):
        ops = self.p.ops
        if not ops or set(ops) - {"*", "/"}:
            raise ParameterError(f"ops must be a string of '*' and '/', got '{ops}'", block=self.name)
        self._divide = np.array([op == "/" for op in ops])

    def input_names(self):
        return numbered_ports("in", len(self._divide))

    def record(self, v):
        # the ops are a string parameter: structure, the same for every value set
        return ProductParams(self._divide)

    def kernels(self):
        return Kernels(output=product_output)


# ---- Function: a safe expression compiled to a scalar stack program (expressions/runtime.py) ------

FunctionParams = namedtuple("FunctionParams", "code consts values stack")
"""Function kernel's record: the stack program (n, 3) int64, its constants, the run's values of
the workspace parameters it reads (B, total), a stack scratch."""


@njit(cache=True, forceinline=True, _nrt=False)
def function_output(t, xc, xd, u, y, p):
    run_program(t, u, p.code, p.consts, p.values, p.stack, y[0])


@register
class Function(Block):
    """y = f(u, t) for an expression of the inputs, e.g. "sin(u1) * u2[0]" or "[u[1], -u[0]]".

    Variables: `u` (one input; `u1` also works) or `u1..uN`, the time `t` (s), constants pi and e.
    Operators + - * / ** % act elementwise (a width-1 operand broadcasts); `u[i]` (0-based), `u[a:b]`
    and `[a, b, ...]` pick and build vectors; functions: sin cos tan asin acos atan sinh cosh tanh
    exp log log10 sqrt abs floor ceil sign, atan2 hypot min max pow (elementwise), sum norm dot
    (reductions). The text is parsed with `ast` and compiled to a small stack program that a
    numba kernel runs; it is never evaluated by Python. Output width: `width`, or inferred.

    Workspace parameters (the diagram's `parameters:`, or a subsystem's) are read by name, e.g.
    "-g / l * sin(u1)": they are values of the run, not part of the program, so they follow
    --set, variants, batch members and Simulator.set_parameters without compiling anything again.
    A workspace parameter named as an input (u, u1..uN), t, pi or e that the expression uses is an
    error.
    """

    type_name = "Function"
    summary = "safe expression of the inputs u / u1..uN, time t and workspace parameters"
    params = {"expr": Param(units="units of y", doc="expression of u (or u1..uN), t and workspace "
                            "parameters", kind="str"),
              "inputs": Param(1, "-", "number of inputs", kind="int"),
              "width": Param(None, "-", "output width (default: inferred from the expression)",
                             kind="int"),
              "workspace_names": Param([], "-", "set by the loader: the workspace parameters the "
                                       "expression reads, as [name, width] pairs", kind="any"),
              "workspace_values": Param([], "units of those parameters", "set by the loader: "
                                        "their values, one after the other")}

    def setup(self):
        if self.p.inputs < 1:
            raise ParameterError("inputs must be >= 1", block=self.name)
        if self.p.width is not None and self.p.width < 1:
            raise ParameterError("width must be >= 1", block=self.name)
        n = self.p.inputs
        self._variables = {f"u{k + 1}": k for k in range(n)}
        if n == 1:
            self._variables["u"] = 0
        self._values, offset = {}, 0
        for name, width in self.p.workspace_names:
            self._values[str(name)] = (offset, int(width))
            offset += int(width)
        if offset != self.p.workspace_values.shape[1]:
            raise ParameterError(f"workspace_values holds {self.p.workspace_values.shape[1]} "
                                 f"numbers, workspace_names {offset}", block=self.name)
        self._tree = check_expression(self.p.expr, {**self._variables, **self._values}, self.name)
        self.time_varying = any(isinstance(node, ast.Name) and node.id == "t"
                                for node in ast.walk(self._tree))

    def input_names(self):
        return numbered_ports("in", self.p.inputs)

    def compile(self, widths):
        compiler = ExpressionCompiler(self.p.expr, self._tree, self._variables, widths,
                                      self.input_names(), self.name, self._values)
        width = len(compiler.elements)
        if self.p.width is not None:
            if width not in (1, self.p.width):
                raise WidthError(f"expression '{self.p.expr}' has width {width}, parameter width is "
                                 f"{self.p.width}", block=self.name, port="out")
            width = self.p.width
        return compiler, width

    def resolve_widths(self, in_widths):
        widths = [in_widths[p] for p in self.input_names()]
        if any(w is None for w in widths):
            return {"out": self.p.width}
        return {"out": self.compile(widths)[1]}

    def configure(self, in_widths, out_widths):
        # the program is structure of the expression (a string parameter and the input widths)
        compiler, width = self.compile([in_widths[p] for p in self.input_names()])
        self._code, self._consts, self._depth = compiler.program(width)

    def record(self, v):
        # the stack is scratch of the record's own (one per run's record, of no batch size)
        return kernel_params(FunctionParams, code=self._code, consts=self._consts,
                             values=v.workspace_values, stack=np.zeros(self._depth))

    def kernels(self):
        return Kernels(output=function_output)


# ---- memoryless nonlinearities ----------------------------------------------------------------------

def kink_directions(block, width):
    """Two crossings per channel (at the lower and the upper kink), either direction, and one
    mode per channel (the region: below, between, above; Block.modes)."""
    block.n_zc = 2 * width
    block.zc_directions = np.zeros(2 * width, dtype=np.int64)
    block.n_xd = block.n_modes = width


def exceeds(v, low, high):
    """True where some member's `low` exceeds its `high` (values of v, scalars or vectors of one
    length; vectors of two lengths are left to Elementwise.setup to name)."""
    a, b = (getattr(v, key).reshape(v.batch, -1) for key in (low, high))
    if a.shape[1] not in (1, b.shape[1]) and b.shape[1] != 1:
        return False
    return bool(np.any(a > b))


KinkParams = namedtuple("KinkParams", "lower upper")
"""Saturation and DeadZone kernels' record: the lower and the upper kink (B, w) (Saturation's
limits, DeadZone's start and end)."""


@njit(cache=True, forceinline=True, _nrt=False)
def kinks_kernel(u, lower, upper, g):
    """g[:, i] = u - lower, g[:, w + i] = u - upper (1 / -1 when that limit is infinite)."""
    wu = u.shape[1]
    w = lower.shape[1]
    for b in range(g.shape[0]):
        for i in range(w):
            v = u[b, i if wu > 1 else 0]
            g[b, i] = v - lower[b, i] if math.isfinite(lower[b, i]) else 1.0
            g[b, w + i] = v - upper[b, i] if math.isfinite(upper[b, i]) else -1.0


@njit(cache=True, forceinline=True, _nrt=False)
def kinks_zc(t, xc, xd, u, g, p):
    """Crossings at the two kinks (Saturation, DeadZone)."""
    kinks_kernel(u[0], p.lower, p.upper, g)


@njit(cache=True, forceinline=True, _nrt=False)
def kinks_modes(t, xc, xd, u, p):
    """The region of each channel, held until the next major step: xd = 1 at or above the
    upper kink, -1 at or below the lower one, 0 between (Saturation, DeadZone)."""
    x = u[0]
    wu = x.shape[1]
    lower, upper = p.lower, p.upper
    for b in range(xd.shape[0]):
        for i in range(xd.shape[1]):
            v = x[b, i if wu > 1 else 0]
            xd[b, i] = 1.0 if v >= upper[b, i] else (-1.0 if v <= lower[b, i] else 0.0)


@njit(cache=True, forceinline=True, _nrt=False)
def saturation_output(t, xc, xd, u, y, p):
    """y = the limit of the held region, or u between the limits (in a solver stage u may pass
    a limit: the region changes at the located crossing)."""
    x, out = u[0], y[0]
    wu = x.shape[1]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            m = xd[b, i]
            out[b, i] = p.upper[b, i] if m > 0.0 else (
                p.lower[b, i] if m < 0.0 else x[b, i if wu > 1 else 0])


@register
class Saturation(Elementwise):
    """y = u clipped to [lower, upper]; crossings at both limits make the solver step onto them,
    and the region (below, between, above) is a mode held through the solver's stages until then."""

    type_name = "Saturation"
    summary = "clip the input to [lower, upper]"
    preserves_units = True
    params = {"lower": Param(-np.inf, "units of u", "lower limit (may be -inf)", allow_inf=True),
              "upper": Param(np.inf, "units of u", "upper limit (may be inf)", allow_inf=True)}
    width_params = ("lower", "upper")

    def check_values(self, v):
        if exceeds(v, "lower", "upper"):
            raise ParameterError("lower must be <= upper", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        # both crossings of every channel exist whatever the limits (an infinite one never
        # changes sign): the values decide no structure
        kink_directions(self, out_widths["out"])

    def record(self, v):
        rows = self.rows_of(v)
        return KinkParams(rows["lower"], rows["upper"])

    def state_names(self):
        return [], [f"region[{i}]" for i in range(self.n_xd)]

    def kernels(self):
        return Kernels(output=saturation_output, zero_crossings=kinks_zc, modes=kinks_modes)


@njit(cache=True, forceinline=True, _nrt=False)
def dead_zone_output(t, xc, xd, u, y, p):
    """y = u - end, u - start or 0 by the held region (kinks_modes)."""
    x, out = u[0], y[0]
    wu = x.shape[1]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            m, v = xd[b, i], x[b, i if wu > 1 else 0]
            out[b, i] = v - p.upper[b, i] if m > 0.0 else (v - p.lower[b, i] if m < 0.0 else 0.0)


@register
class DeadZone(Elementwise):
    """y = 0 for start <= u <= end, u - end above it, u - start below it (continuous, kinks at both
    ends, where crossings are declared; the region is a mode held through the solver's stages)."""

    type_name = "DeadZone"
    summary = "zero output inside [start, end], shifted input outside"
    preserves_units = True
    params = {"start": Param(-0.5, "units of u", "lower end of the dead zone"),
              "end": Param(0.5, "units of u", "upper end of the dead zone")}
    width_params = ("start", "end")

    def check_values(self, v):
        if exceeds(v, "start", "end"):
            raise ParameterError("start must be <= end", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        kink_directions(self, out_widths["out"])

    def record(self, v):
        rows = self.rows_of(v)
        return KinkParams(rows["start"], rows["end"])

    def state_names(self):
        return [], [f"region[{i}]" for i in range(self.n_xd)]

    def kernels(self):
        return Kernels(output=dead_zone_output, zero_crossings=kinks_zc, modes=kinks_modes)


@njit(cache=True, forceinline=True, _nrt=False)
def rate_limit_kernel(t, u, rising, falling, memory, y):
    """y = u with its change since the last major step bounded: falling * dt <= y - y_prev <= rising * dt.

    memory (B, w + 2): y_prev (w), t_prev, started flag (0: no major step yet, y = u).
    """
    wu = u.shape[1]
    w = y.shape[1]
    for b in range(y.shape[0]):
        started = memory[b, w + 1] != 0.0
        dt = t - memory[b, w]
        for i in range(w):
            v = u[b, i if wu > 1 else 0]
            if started:
                prev = memory[b, i]
                up, down = rising[b, i] * dt, falling[b, i] * dt
                if v - prev > up:
                    v = prev + up
                elif v - prev < down:
                    v = prev + down
            y[b, i] = v


@njit(cache=True, forceinline=True, _nrt=False)
def rate_limit_remember(t, y, memory):
    """Store this major step's output and time as the next reference."""
    w = y.shape[1]
    for b in range(y.shape[0]):
        for i in range(w):
            memory[b, i] = y[b, i]
        memory[b, w] = t
        memory[b, w + 1] = 1.0


RateLimiterParams = namedtuple("RateLimiterParams", "rising falling scratch")
"""RateLimiter kernels' record: the rate bounds (B, w) units/s and a (B, w) scratch output."""


@njit(cache=True, forceinline=True, _nrt=False)
def rate_limiter_output(t, xc, xd, u, y, p):
    rate_limit_kernel(t, u[0], p.rising, p.falling, xd, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def rate_limiter_update(t, xc, xd, u, p):
    rate_limit_kernel(t, u[0], p.rising, p.falling, xd, p.scratch)
    rate_limit_remember(t, p.scratch, xd)


@register
class RateLimiter(Elementwise):
    """Bounds the slew rate: y' stays within [falling, rising] (units/s; falling <= 0 <= rising).

    Between major steps y = u limited relative to the output and time of the last major step, kept
    in xd (y_prev, t_prev) and updated at every major step; the first output is the input.
    """

    type_name = "RateLimiter"
    summary = "limit the rising and falling rate of a signal"
    preserves_units = True
    params = {"rising": Param(1.0, "units of u / s", "largest rate of increase (>= 0, may be inf)",
                              allow_inf=True),
              "falling": Param(-1.0, "units of u / s", "largest rate of decrease (<= 0, may be -inf)",
                               allow_inf=True)}
    width_params = ("rising", "falling")

    def check_values(self, v):
        if np.any(v.rising < 0) or np.any(v.falling > 0):
            raise ParameterError("rising must be >= 0 and falling <= 0", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xd = out_widths["out"] + 2

    def record(self, v):
        rows = self.rows_of(v)
        return kernel_params(RateLimiterParams, rising=rows["rising"], falling=rows["falling"],
                             scratch=np.zeros((v.batch, self.out_widths["out"])))

    def state_names(self):
        w = self.n_xd - 2
        return [], [f"y_prev[{i}]" for i in range(w)] + ["t_prev", "started"]

    def kernels(self):
        return Kernels(output=rate_limiter_output, update=rate_limiter_update)


@njit(cache=True, forceinline=True, _nrt=False)
def quantize_kernel(u, interval, y):
    """y = interval * round(u / interval), halves rounded away from zero."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            q = interval[b, i]
            r = u[b, i if wu > 1 else 0] / q
            y[b, i] = q * (math.floor(r + 0.5) if r >= 0.0 else -math.floor(-r + 0.5))


QuantizerParams = namedtuple("QuantizerParams", "interval")
"""Quantizer kernel's record: the quantization step (B, w)."""


@njit(cache=True, forceinline=True, _nrt=False)
def quantizer_output(t, xc, xd, u, y, p):
    quantize_kernel(u[0], p.interval, y[0])


@register
class Quantizer(Elementwise):
    """y = interval * round(u / interval): a staircase (halves round away from zero)."""

    type_name = "Quantizer"
    summary = "round the input to a multiple of an interval"
    preserves_units = True
    params = {"interval": Param(1.0, "units of u", "quantization step (> 0)")}
    width_params = ("interval",)

    def check_values(self, v):
        if np.any(v.interval <= 0):
            raise ParameterError("interval must be > 0", block=self.name)

    def record(self, v):
        return QuantizerParams(self.rows_of(v)["interval"])

    def kernels(self):
        return Kernels(output=quantizer_output)


@njit(cache=True, forceinline=True, _nrt=False)
def sign_rows(u, y):
    """y = sign(u) in {-1, 0, 1}, elementwise."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            v = u[b, i]
            y[b, i] = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


AbsSignParams = namedtuple("AbsSignParams", "sign")
"""Abs and Sign kernels' record: False |u|, True sign(u)."""


@njit(cache=True, forceinline=True, _nrt=False)
def abs_sign_output(t, xc, xd, u, y, p):
    """Sign: y = the held sign; Abs: y = held sign * u (in a solver stage u may pass zero: the
    sign changes at the located crossing)."""
    x, out = u[0], y[0]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[b, i] = xd[b, i] if p.sign else xd[b, i] * x[b, i]


@njit(cache=True, forceinline=True, _nrt=False)
def abs_sign_modes(t, xc, xd, u, p):
    """xd = sign(u) in {-1, 0, 1}, held until the next major step."""
    sign_rows(u[0], xd)


@njit(cache=True, forceinline=True, _nrt=False)
def at_zero_zc(t, xc, xd, u, g, p):
    """g = u: one crossing per channel at u = 0."""
    fill_rows(u[0], g)


class KinkAtZero(Elementwise):
    """Abs and Sign: one crossing per channel at u = 0."""

    params = {}
    is_sign = False

    def configure(self, in_widths, out_widths):
        self.n_zc = out_widths["out"]
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = self.n_zc       # the sign of u, held (Block.modes)

    def record(self, v):
        return AbsSignParams(bool(self.is_sign))

    def state_names(self):
        return [], [f"sign[{i}]" for i in range(self.n_xd)]

    def kernels(self):
        return Kernels(output=abs_sign_output, zero_crossings=at_zero_zc, modes=abs_sign_modes)


@register
class Abs(KinkAtZero):
    """y = |u| elementwise; a crossing at u = 0 puts a step on the kink (the sign of u is a mode,
    held through the solver's stages until then)."""

    type_name = "Abs"
    summary = "absolute value"
    preserves_units = True


@register
class Sign(KinkAtZero):
    """y = sign(u) in {-1, 0, 1} elementwise; a crossing at u = 0 puts a step on the jump (the
    sign is a mode, held through the solver's stages until then)."""

    type_name = "Sign"
    summary = "sign of the input (-1, 0, 1)"
    is_sign = True


# ---- Relay: on/off with hysteresis, its mode held between located crossings ----------------------

RelayParams = namedtuple("RelayParams", "on off on_value off_value initial_on")
"""Relay kernels' record: the switch-on and switch-off points (B, w) in the input's units, the
output when on and when off (B, w) in the output's units, and whether the relay starts on when
its first input lies between the switch points."""


@njit(cache=True, forceinline=True, _nrt=False)
def relay_is_on(u, xd, b, i, p):
    """Member b's channel i is on: its held mode once the relay has started (xd[b, w] set), else
    the start rule: on at or above switch_on, off at or below switch_off, else the initial
    state."""
    w = xd.shape[1] - 1
    if xd[b, w] != 0.0:
        return xd[b, i] != 0.0
    v = u[b, i if u.shape[1] > 1 else 0]
    if v >= p.on[b, i]:
        return True
    if v <= p.off[b, i]:
        return False
    return p.initial_on


@njit(cache=True, forceinline=True, _nrt=False)
def relay_output(t, xc, xd, u, y, p):
    """y = on_value where the relay is on, else off_value."""
    x, out = u[0], y[0]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[b, i] = p.on_value[b, i] if relay_is_on(x, xd, b, i, p) else p.off_value[b, i]


@njit(cache=True, forceinline=True, _nrt=False)
def relay_update(t, xc, xd, u, p):
    """At the first major step: the mode starts from the start rule (later updates keep it; only a
    located crossing changes it, in on_event)."""
    x = u[0]
    w = xd.shape[1] - 1
    for b in range(xd.shape[0]):
        if xd[b, w] == 0.0:
            for i in range(w):
                xd[b, i] = 1.0 if relay_is_on(x, xd, b, i, p) else 0.0
            xd[b, w] = 1.0


@njit(cache=True, forceinline=True, _nrt=False)
def relay_zc(t, xc, xd, u, g, p):
    """g[:, i] = u - switch_on while off (rising: it switches on), 1 while on; g[:, w + i] =
    u - switch_off while on (falling: it switches off), -1 while off. The mode only changes at an
    event, so a function that does not apply keeps a sign from which it cannot cross."""
    x = u[0]
    w = xd.shape[1] - 1
    for b in range(g.shape[0]):
        for i in range(w):
            v = x[b, i if x.shape[1] > 1 else 0]
            if relay_is_on(x, xd, b, i, p):
                g[b, i] = 1.0
                g[b, w + i] = v - p.off[b, i]
            else:
                g[b, i] = v - p.on[b, i]
                g[b, w + i] = -1.0


@njit(cache=True, forceinline=True, _nrt=False)
def relay_event(t, xc, xd, u, mask, p):
    """Switch the channels whose crossing applies: on where u - switch_on rose through zero while
    off, off where u - switch_off fell through zero while on (after the update, which starts a
    relay not started yet; one started already in a run keeps its mode)."""
    relay_update(t, xc, xd, u, p)
    w = xd.shape[1] - 1
    for b in range(xd.shape[0]):
        for i in range(w):
            on = xd[b, i] != 0.0
            if mask[b, i] and not on:
                xd[b, i] = 1.0
            elif mask[b, w + i] and on:
                xd[b, i] = 0.0
    return False


@register
class Relay(Elementwise):
    """On/off with hysteresis, elementwise (Simulink's Relay): an off channel switches on when its
    input rises to switch_on, an on channel switches off when its input falls to switch_off
    (switch_off <= switch_on); the output is on_value or off_value.

    The mode is a discrete state (`on[i]`, per member and channel) that changes only at a located
    zero crossing (`on_event`), never inside a solver stage: u - switch_on (rising) while off,
    u - switch_off (falling) while on. With an adaptive solver the switch is at the located
    instant; with a fixed-step solver at the major step after the crossing (Simulink's
    fixed-step rule). At the first major step the mode starts from the input: on at or above
    switch_on, off at or below switch_off, else `initial_state` (the discrete state `started`
    says it has; until then the output reads the input directly).
    """

    type_name = "Relay"
    summary = "on/off with hysteresis: on at u >= switch_on, off at u <= switch_off"
    params = {"switch_on": Param(0.0, "units of u", "input level at or above which an off relay "
                                 "switches on (scalar or per element)"),
              "switch_off": Param(0.0, "units of u", "input level at or below which an on relay "
                                  "switches off, <= switch_on (scalar or per element)"),
              "on_value": Param(1.0, "units of y", "output when on (scalar or per element)"),
              "off_value": Param(0.0, "units of y", "output when off (scalar or per element)"),
              "initial_state": Param("off", "-", "the mode when the first input lies between the "
                                     "switch points", kind="str", choices=("off", "on"))}
    width_params = ("switch_on", "switch_off", "on_value", "off_value")

    def check_values(self, v):
        off = v.switch_off.reshape(v.batch, -1)
        on = v.switch_on.reshape(v.batch, -1)
        if off.shape[1] not in (1, on.shape[1]) and on.shape[1] != 1:
            return                    # vectors of two lengths: Elementwise.setup names them
        bad = off > on
        if np.any(bad):
            member = int(np.flatnonzero(bad.any(axis=1))[0])
            which = f" (batch member {v.first_member + member})" if v.batch > 1 else ""
            raise ParameterError(
                f"switch_off must be <= switch_on (the relay switches on at or above switch_on "
                f"and off at or below switch_off), got switch_off {off[member].tolist()} and "
                f"switch_on {on[member].tolist()}{which}", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        width = out_widths["out"]
        self.n_xd = width + 1
        self.n_zc = 2 * width
        self.zc_directions = np.array([1] * width + [-1] * width, dtype=np.int64)

    def record(self, v):
        rows = self.rows_of(v)
        return kernel_params(RelayParams, on=rows["switch_on"], off=rows["switch_off"],
                             on_value=rows["on_value"], off_value=rows["off_value"],
                             initial_on=v.initial_state == "on")

    def state_names(self):
        w = self.n_xd - 1
        return [], [f"on[{i}]" for i in range(w)] + ["started"]

    def kernels(self):
        return Kernels(output=relay_output, update=relay_update, zero_crossings=relay_zc,
                       event=relay_event)
