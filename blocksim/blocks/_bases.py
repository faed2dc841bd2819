"""Base classes and parameter declarations shared by several block families."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..errors import ParameterError, WidthError
from .base import Block, Param, common_width

PERIOD = Param(units="s", doc="sample period (exact rational of its decimal text)", kind="time",
               role="period")
OFFSET = Param(0, "s", "sample offset, 0 <= offset < period", kind="time", role="offset")


def times_within(values, t0: float, t1: float) -> list[float]:
    """Sorted distinct finite values in (t0, t1] (s): the breakpoints among `values`."""
    values = np.unique(np.asarray(values, dtype=float).ravel())
    return [float(v) for v in values if np.isfinite(v) and t0 < v <= t1]


class Elementwise(Block):
    """A map applied channel by channel: width = the input's, or the vector parameters' when the
    input is a scalar (it expands). `rows_of(values)` gives each of `width_params` as a
    (B, width) row, for the subclass's record."""

    width_params: tuple[str, ...] = ()

    def setup(self):
        self._param_width = common_width(self, self.width_params)

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        pw = self._param_width
        if w is None:
            return {"out": None}
        if pw > 1 and w not in (1, pw):
            raise WidthError(f"input has width {w}, the parameters have {pw} elements",
                             block=self.name, port="in")
        return {"out": max(w, pw)}

    def configure(self, in_widths, out_widths):
        self.rows_of(self.p)      # a parameter that fits no row fails here, where errors are located

    def rows_of(self, v) -> dict[str, np.ndarray]:
        """Each of `width_params` of the values v as a writable C-contiguous (B, width) row."""
        width = self.out_widths["out"]
        return {key: np.require(self.param_as_row(key, width, v), requirements=("C", "W"))
                for key in self.width_params}


class JointBlock(Block):
    """A per-joint block: its width is that of its widest input or vector parameter.

    Every input must have that width or width 1 (a scalar expands). Widths are reported as soon as
    one vector input or parameter is known, so that a current loop closed through a motor resolves.

    `width_params` are the array parameters that may be per-joint vectors (None values skipped);
    configure() sets `self.width`, and `rows_of(values)` gives each of them as a (B, width) row.
    """

    width_params: tuple[str, ...] = ()

    def setup(self):
        widths = {k: self.param_width(k) for k in self.width_params if getattr(self.p, k) is not None}
        vectors = {k: w for k, w in widths.items() if w > 1}
        if len(set(vectors.values())) > 1:
            listed = ", ".join(f"'{k}' has {w}" for k, w in vectors.items())
            raise ParameterError(f"per-joint parameters must have one length: {listed} elements",
                                 block=self.name)
        self._param_width = max(vectors.values(), default=1)
        self.check()

    def check(self) -> None:
        """Parameter checks of the subclass (raise ParameterError)."""

    def resolve_widths(self, in_widths):
        pw = self._param_width
        known = {p: w for p, w in in_widths.items() if w is not None}
        width = max(list(known.values()) + [pw])
        required = [p for p in self.input_names() if p not in self.optional_inputs]
        if any(in_widths.get(p) is None for p in required):
            # a vector input or parameter fixes the width (feedback loops need it early); scalars
            # may still be expanded, so they fix nothing until every input is known
            return {o: (width if width > 1 else None) for o in self.output_names()}
        for port, w in known.items():
            if w not in (1, width):
                raise WidthError(f"input has width {w}, the block has {width} joints",
                                 block=self.name, port=port)
        if pw not in (1, width):
            raise WidthError(f"the parameters have {pw} joints, the inputs {width}", block=self.name)
        return {o: width for o in self.output_names()}

    def configure(self, in_widths, out_widths):
        self.width = max(out_widths.values())
        self.rows_of(self.p)      # a parameter that fits no row fails here, where errors are located

    def rows_of(self, v) -> dict[str, np.ndarray]:
        """Each of `width_params` of the values v (None values skipped) as a (B, width) row."""
        # writable C-contiguous rows: a read-only broadcast view is another numba type
        return {k: np.require(self.param_as_row(k, self.width, v), requirements=("C", "W"))
                for k in self.width_params if getattr(v, k) is not None}

    def positive(self, *keys, allow_zero=False, v=None):
        """Raise a ParameterError unless each of `keys` of the values v (the block's own by
        default) is > 0 (>= 0 with allow_zero)."""
        v = self.p if v is None else v
        for key in keys:
            value = getattr(v, key)
            if value is None:
                continue
            bad = (value < 0) if allow_zero else (value <= 0)
            if np.any(bad):
                member = int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])
                which = f" (batch member {v.first_member + member})" if v.batch > 1 else ""
                raise ParameterError(f"{key} must be {'>= 0' if allow_zero else '> 0'}, got "
                                     f"{value[member].tolist()}{which}", block=self.name)


PackedParams = namedtuple("PackedParams", "coeffs")
"""The record of the static friction, Karnopp and TorqueToCurrent kernels: their per-joint
coefficients packed into one (B, n, K) array, column k named by the block's constants (XX_NAME)."""

PackedStateParams = namedtuple("PackedStateParams", "coeffs x0")
"""The record of the blocks with continuous states (LuGre, DCMotor, PMSM): the coefficients
packed (B, n, K) as in PackedParams, and the initial continuous state x0 (B, n_xc) that
initial_state copies (the run's values, like the coefficients)."""


class ActuatorBlock(JointBlock):
    """A per-joint actuator block whose values are data of the run: configure() keeps the
    structure (the width, state sizes), `record(v)` builds the kernels' record from the values v,
    check_values(v) checks them."""

    def configure(self, in_widths, out_widths):
        self.width = max(out_widths.values())
