"""Sinks: blocks that end a signal path (scopes to log, terminators, a stop condition)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import ParameterError
from .base import Block, Kernels, Param, numbered_ports, register


@njit(cache=True, forceinline=True, _nrt=False)
def sink_output(t, xc, xd, u, y, p):
    """Nothing to compute (the engine never calls it: a sink has no outputs)."""


class Sink(Block):
    """No outputs, nothing computed; every input may have any width."""

    outputs = ()
    direct_feedthrough = False

    def resolve_widths(self, in_widths):
        return {}

    def kernels(self):
        return Kernels(output=sink_output)


@register
class Scope(Sink):
    """A figure of the signals wired to its inputs: they are logged (whatever log.signals says)
    and `simulate --plot` draws them in one figure titled `title`, beside the diagram's
    `scopes:` (a Scope block is a `scopes:` entry drawn in the diagram)."""

    type_name = "Scope"
    summary = "log and plot the signals wired to it"
    preserves_units = True
    params = {"inputs": Param(1, "-", "number of inputs (`in` for one, else in1..inN)", kind="int"),
              "title": Param("", "-", "figure title (default: the block name)", kind="str")}

    def setup(self):
        if self.p.inputs < 1:
            raise ParameterError("inputs must be >= 1", block=self.name)

    def input_names(self):
        return numbered_ports("in", self.p.inputs)


@register
class Terminator(Sink):
    """Ends a signal nobody reads (so that an output need not be left dangling)."""

    type_name = "Terminator"
    summary = "accepts a signal and does nothing"
    preserves_units = True
    params = {}


@njit(cache=True, forceinline=True, _nrt=False)
def nonzero_indicator(u, g):
    """g = +1 where u != 0, -1 where u == 0 (a NaN counts as nonzero)."""
    for b in range(g.shape[0]):
        for i in range(g.shape[1]):
            g[b, i] = -1.0 if u[b, i] == 0.0 else 1.0


@njit(cache=True, forceinline=True, _nrt=False)
def stop_zc(t, xc, xd, u, g, p):
    nonzero_indicator(u[0], g)


@njit(cache=True, forceinline=True, _nrt=False)
def stop_event(t, xc, xd, u, mask, p):
    """The StopSimulation's reaction to a located crossing: True (stop the run) when any of its
    functions fired."""
    for b in range(mask.shape[0]):
        for i in range(mask.shape[1]):
            if mask[b, i]:
                return True
    return False


@njit(cache=True, forceinline=True, _nrt=False)
def stop_at_start(t, xc, xd, u, p):
    """True when the input is nonzero now (a NaN counts as nonzero): the check the scheduler may
    make at the start time."""
    x = u[0]
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            if x[b, i] != 0.0:
                return True
    return False


@register
class StopSimulation(Sink):
    """Stops the run at the first instant its input becomes nonzero (any channel, any batch member).

    Its event function is g = +1 where the input is nonzero and -1 where it is zero, rising: the
    scheduler locates the instant on the solver's dense output (to its event tolerance; for an
    input that jumps at a sample hit, the hit itself), makes a major step there, so that instant is
    logged, and `on_event` returns True, which ends the run. A crossing needs a change: an input
    that is already nonzero at the start time is reported by `stop_requested`, which the engine
    may check at the first major step.
    """

    type_name = "StopSimulation"
    summary = "stop the run when the input becomes nonzero"
    params = {}

    def configure(self, in_widths, out_widths):
        self.n_zc = in_widths["in"]
        self.zc_directions = np.ones(self.n_zc, dtype=np.int64)

    def kernels(self):
        return Kernels(output=sink_output, zero_crossings=stop_zc, event=stop_event,
                       stop_requested=stop_at_start)
