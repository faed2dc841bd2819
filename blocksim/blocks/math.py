"""Math blocks: memoryless maps of their inputs (gain, sums, products, functions, nonlinearities)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from .base import Block, Param, register


@njit(cache=True)
def scale_rows(u, k, y):
    """y[b, i] = k[b, i] * u[b, i or 0] (u may be a scalar signal broadcast over the row)."""
    wu = u.shape[1]
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = k[b, i] * u[b, i if wu > 1 else 0]


@njit(cache=True)
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
        if self.p.gain.ndim == 3:
            self._matrix = np.ascontiguousarray(self.p.gain)
        else:
            self._matrix = None
            self._row = self.param_as_row("gain", out_widths["out"])

    def output(self, t, xc, xd, u, y):
        if self._matrix is None:
            scale_rows(u[0], self._row, y[0])
        else:
            matrix_times(u[0], self._matrix, y[0])


@njit(cache=True)
def signed_sum(inputs, signs, y):
    """y = sum_k signs[k] * inputs[k], each input (B, w) or (B, 1) broadcast."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            acc = 0.0
            for k in range(len(inputs)):
                u = inputs[k]
                acc += signs[k] * u[b, i if u.shape[1] > 1 else 0]
            y[b, i] = acc


@register
class Sum(Block):
    """y = sum of the inputs with the signs given, e.g. signs "+-" : y = in1 - in2."""

    type_name = "Sum"
    summary = "sum of inputs with signs (scalars expand to the vector width)"
    params = {"signs": Param("++", "-", "one '+' or '-' per input (in1..inN)", kind="str")}

    def setup(self):
        signs = self.p.signs.replace("|", "")
        if not signs or set(signs) - {"+", "-"}:
            raise ParameterError(f"signs must be a string of '+' and '-', got '{self.p.signs}'",
                                 block=self.name)
        self._signs = np.array([1.0 if s == "+" else -1.0 for s in signs])

    def input_names(self):
        return [f"in{k + 1}" for k in range(len(self._signs))]

    def output(self, t, xc, xd, u, y):
        signed_sum(u, self._signs, y[0])
