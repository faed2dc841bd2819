"""Signal sources: blocks with no inputs whose outputs are functions of time only."""
from __future__ import annotations

import numpy as np

from .base import Block, Param, register


@register
class Constant(Block):
    """A constant value (scalar, vector), computed once."""

    type_name = "Constant"
    summary = "constant output value"
    params = {"value": Param(1.0, "any", "the output value (scalar or vector)")}
    inputs = ()
    sample = "constant"

    def resolve_widths(self, in_widths):
        return {"out": self.param_width("value")}

    def configure(self, in_widths, out_widths):
        self._value = self.param_as_row("value", out_widths["out"])

    def output(self, t, xc, xd, u, y):
        y[0][...] = self._value
