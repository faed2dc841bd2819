"""Signal routing: joining, splitting, picking and switching vector signals, without arithmetic."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError, WidthError
from ..reading.limits import shown
from ._kernels import kernel_params
from .base import Block, Kernels, Param, numbered_ports, register

@njit(cache=True, forceinline=True, _nrt=False)
def concatenate_kernel(inputs, y):
    """y = [in1, in2, ...] along the signal axis."""
    for b in range(y.shape[0]):
        j = 0
        for k in range(len(inputs)):
            u = inputs[k]
            for i in range(u.shape[1]):
                y[b, j] = u[b, i]
                j += 1


@njit(cache=True, forceinline=True, _nrt=False)
def split_kernel(u, outputs):
    """outputs = consecutive pieces of u along the signal axis."""
    for b in range(u.shape[0]):
        j = 0
        for k in range(len(outputs)):
            y = outputs[k]
            for i in range(y.shape[1]):
                y[b, i] = u[b, j]
                j += 1


@njit(cache=True, forceinline=True, _nrt=False)
def gather_kernel(u, indices, y):
    """y[:, i] = u[:, indices[i]]."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = u[b, indices[i]]


@njit(cache=True, forceinline=True, _nrt=False)
def mux_output(t, xc, xd, u, y, p):
    concatenate_kernel(u, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def demux_output(t, xc, xd, u, y, p):
    split_kernel(u[0], y)


SelectorParams = namedtuple("SelectorParams", "indices")
"""Selector kernel's record: the 0-based input index of each output element (int64)."""


@njit(cache=True, forceinline=True, _nrt=False)
def selector_output(t, xc, xd, u, y, p):
    gather_kernel(u[0], p.indices, y[0])


def positive_ints(value, what, block):
    """A list of positive integers from a YAML list (or a single integer), else ParameterError."""
    items = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not float(item).is_integer() or item < 1:
            raise ParameterError(f"{what} must be positive integers, got {shown(value)}", block=block)
        out.append(int(item))
    if not out:
        raise ParameterError(f"{what} must not be empty", block=block)
    return out


@register
class Mux(Block):
    """Joins its inputs into one vector: out = [in1, in2, ..., inN].

    `inputs` is the number of inputs, or the list of their widths (checked; -1 accepts any width).
    """

    type_name = "Mux"
    summary = "concatenate inputs into one vector"
    preserves_units = True
    params = {"inputs": Param(2, "-", "number of inputs, or the list of their widths (-1: any)",
                              kind="any")}

    def setup(self):
        spec = self.p.inputs
        if isinstance(spec, (list, tuple)):
            self._widths = [None if w == -1 else w for w in spec]
            positive_ints([w for w in self._widths if w is not None] or [1], "input widths",
                          self.name)
            if not self._widths:
                raise ParameterError("inputs must not be empty", block=self.name)
        else:
            self._widths = [None] * positive_ints(spec, "inputs", self.name)[0]

    def input_names(self):
        return numbered_ports("in", len(self._widths))

    def resolve_widths(self, in_widths):
        total = 0
        for port, declared in zip(self.input_names(), self._widths):
            w = in_widths[port]
            if w is not None and declared is not None and w != declared:
                raise WidthError(f"input has width {w}, parameter inputs says {declared}",
                                 block=self.name, port=port)
            w = w if w is not None else declared
            if w is None:
                return {"out": None}
            total += w
        return {"out": total}

    def kernels(self):
        return Kernels(output=mux_output)


@register
class Demux(Block):
    """Splits a vector into consecutive pieces out1..outN: of the widths in `sizes`, or into
    `outputs` pieces of equal width."""

    type_name = "Demux"
    summary = "split a vector into consecutive pieces"
    preserves_units = True
    params = {"sizes": Param(None, "-", "width of each output, in order", kind="any"),
              "outputs": Param(None, "-", "number of equal pieces (when sizes is not given; "
                                          "default 2)", kind="int")}

    def setup(self):
        if self.p.sizes is not None and self.p.outputs is not None:
            raise ParameterError("give sizes or outputs, not both", block=self.name)
        if self.p.sizes is not None:
            self._sizes = positive_ints(self.p.sizes, "sizes", self.name)
            self._count = len(self._sizes)
        else:
            self._sizes = None
            self._count = 2 if self.p.outputs is None else self.p.outputs
            if self._count < 1:
                raise ParameterError("outputs must be >= 1", block=self.name)

    def output_names(self):
        return numbered_ports("out", self._count)

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        names = self.output_names()
        if self._sizes is not None:
            if w is not None and w != sum(self._sizes):
                raise WidthError(f"input has width {w}, sizes {self._sizes} add up to "
                                 f"{sum(self._sizes)}", block=self.name, port="in")
            return dict(zip(names, self._sizes))
        if w is None:
            return {o: None for o in names}
        if w % self._count:
            raise WidthError(f"input has width {w}, which does not split into {self._count} equal "
                             f"outputs", block=self.name, port="in")
        return {o: w // self._count for o in names}

    def kernels(self):
        return Kernels(output=demux_output)


@register
class Selector(Block):
    """out[i] = in[indices[i]] (0-based): picks, reorders or repeats elements."""

    type_name = "Selector"
    summary = "pick elements of a vector by 0-based index"
    preserves_units = True
    params = {"indices": Param(units="-", doc="0-based indices of the input elements to output",
                               kind="any")}

    def setup(self):
        raw = self.p.indices
        items = list(raw) if isinstance(raw, (list, tuple, np.ndarray)) else [raw]
        if not items or any(isinstance(i, (bool, np.bool_)) or not float(i).is_integer() or i < 0
                            for i in items):
            raise ParameterError(f"indices must be a non-empty list of integers >= 0, got {shown(raw)}",
                                 block=self.name)
        self._indices = np.array([int(i) for i in items], dtype=np.int64)

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        if w is not None and self._indices.max() >= w:
            raise WidthError(f"index {int(self._indices.max())} is out of range for an input of "
                             f"width {w}", block=self.name, port="in")
        return {"out": len(self._indices)}

    def record(self, v):
        # the indices are a parameter of kind "any" (they give the output width): structure
        return SelectorParams(self._indices)

    def kernels(self):
        return Kernels(output=selector_output)


CRITERIA = (">=", ">", "~=0")


@njit(cache=True, forceinline=True, _nrt=False)
def switch_passes(control, threshold, criterion, passed):
    """passed = 1 where the control passes (criterion 0: c >= threshold, 1: c > threshold,
    2: c != 0), else 0, per output channel; width-1 signals broadcast."""
    wc, wt = control.shape[1], threshold.shape[1]
    for b in range(passed.shape[0]):
        for i in range(passed.shape[1]):
            c = control[b, i if wc > 1 else 0]
            th = threshold[b, i if wt > 1 else 0]
            if criterion == 0:
                ok = c >= th
            elif criterion == 1:
                ok = c > th
            else:
                ok = c != 0.0
            passed[b, i] = 1.0 if ok else 0.0


@njit(cache=True, forceinline=True, _nrt=False)
def switch_crossings(control, threshold, criterion, g):
    """g = control - threshold (control itself for criterion ~=0), per crossing channel."""
    wc, wt = control.shape[1], threshold.shape[1]
    for b in range(g.shape[0]):
        for i in range(g.shape[1]):
            c = control[b, i if wc > 1 else 0]
            g[b, i] = c if criterion == 2 else c - threshold[b, i if wt > 1 else 0]


SwitchParams = namedtuple("SwitchParams", "threshold criterion")
"""Switch kernels' record: the threshold (B, 1 or w) and the criterion's index in CRITERIA."""


@njit(cache=True, forceinline=True, _nrt=False)
def switch_output(t, xc, xd, u, y, p):
    """y = in1 where the held mode passed, else in3 (the mode changes at a major step: the
    located crossing's, under an adaptive solver)."""
    first, third, out = u[0], u[2], y[0]
    w1, w3 = first.shape[1], third.shape[1]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[b, i] = first[b, i if w1 > 1 else 0] if xd[b, i] != 0.0 \
                else third[b, i if w3 > 1 else 0]


@njit(cache=True, forceinline=True, _nrt=False)
def switch_modes(t, xc, xd, u, p):
    switch_passes(u[1], p.threshold, p.criterion, xd)


@njit(cache=True, forceinline=True, _nrt=False)
def switch_zc(t, xc, xd, u, g, p):
    switch_crossings(u[1], p.threshold, p.criterion, g)


@register
class Switch(Block):
    """out = in1 where the control in2 passes the criterion, else in3, elementwise.

    criteria: ">=" (in2 >= threshold), ">" (in2 > threshold) or "~=0" (in2 != 0). A crossing on
    in2 - threshold (in2 for "~=0") makes the solver step onto the switching instant; which
    input passes is a mode, held through the solver's stages until that instant.
    """

    type_name = "Switch"
    summary = "pass in1 or in3 depending on the control in2"
    preserves_units = True
    params = {"threshold": Param(0.0, "units of in2", "switching threshold (scalar or vector)"),
              "criteria": Param(">=", "-", "when in1 passes", kind="str", choices=CRITERIA)}
    inputs = ("in1", "in2", "in3")

    def resolve_widths(self, in_widths):
        w1, w2, w3 = in_widths["in1"], in_widths["in2"], in_widths["in3"]
        if w1 is None or w2 is None or w3 is None:
            return {"out": None}
        if w1 > 1 and w3 > 1 and w1 != w3:
            raise WidthError(f"input has width {w3}, in1 has width {w1}", block=self.name,
                             port="in3")
        data = max(w1, w3)
        if data > 1 and w2 not in (1, data):
            raise WidthError(f"control has width {w2}, the data inputs have width {data}",
                             block=self.name, port="in2")
        width = max(data, w2)
        tw = self.param_width("threshold")
        if tw not in (1, width):
            raise ParameterError(f"threshold has {tw} elements, the signals have {width}",
                                 block=self.name)
        return {"out": max(width, tw)}

    def configure(self, in_widths, out_widths):
        self._criterion = CRITERIA.index(self.p.criteria)
        threshold_width = int(np.prod(self.p.threshold.shape[1:], dtype=np.int64))
        self.n_zc = max(in_widths["in2"], threshold_width)
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = out_widths["out"]   # passed or not, held (Block.modes)

    def record(self, v):
        threshold = np.ascontiguousarray(v.threshold.reshape(v.batch, -1))
        return kernel_params(SwitchParams, threshold=threshold, criterion=self._criterion)

    def state_names(self):
        return [], [f"passed[{i}]" for i in range(self.n_xd)]

    def kernels(self):
        return Kernels(output=switch_output, zero_crossings=switch_zc, modes=switch_modes)
