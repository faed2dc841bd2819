"""Discrete-time blocks: they run at exact sample hits and hold their outputs in between."""
from __future__ import annotations

from .base import Block, Param, register

PERIOD = Param(units="s", doc="sample period (exact rational of its decimal text)", kind="time")
OFFSET = Param(0, "s", "sample offset, 0 <= offset < period", kind="time")


@register
class UnitDelay(Block):
    """y[k] = x[k], x[k+1] = u[k]: a one-sample delay."""

    type_name = "UnitDelay"
    summary = "one-sample delay"
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

    def output(self, t, xc, xd, u, y):
        y[0][...] = xd

    def update(self, t, xc, xd, u):
        xd[...] = u[0]
