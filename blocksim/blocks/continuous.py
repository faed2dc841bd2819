"""Continuous-time blocks: integrators and linear systems, with states the solver integrates."""
from __future__ import annotations

import numpy as np

from .base import Block, Param, register


@register
class Integrator(Block):
    """x' = u, y = x, from x0."""

    type_name = "Integrator"
    summary = "integrates its input: x' = u, y = x"
    params = {"x0": Param(0.0, "units of y", "initial state (scalar or vector)")}
    sample = "continuous"
    direct_feedthrough = False

    def resolve_widths(self, in_widths):
        w = in_widths["in"]
        wx = self.param_width("x0")
        if w is None:
            return {"out": wx if wx > 1 else None}
        return {"out": max(w, wx)}

    def configure(self, in_widths, out_widths):
        self.n_xc = out_widths["out"]
        self._x0 = self.param_as_row("x0", self.n_xc)

    def initial_state(self, xc, xd):
        xc[...] = self._x0

    def output(self, t, xc, xd, u, y):
        y[0][...] = xc

    def derivative(self, t, xc, xd, u, dxc):
        dxc[...] = u[0]
