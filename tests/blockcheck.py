"""A test bench for one block outside any diagram: instantiate, resolve widths, configure, allocate its
states and call its runtime methods with plain arrays, as the scheduler would."""
from __future__ import annotations

import numpy as np

from blocksim.blocks import REGISTRY


class BlockCheck:
    """One configured block with its own state arrays.

    in_widths: {port: width} (an int applies to every input); inputs to the runtime calls are given
    positionally in `input_names()` order, as scalars, (width,) vectors or (B, width) arrays.
    """

    def __init__(self, type_name, params=None, in_widths=1, batch=1, diagram_dir=None,
                 connected=None, name="blk", first_member=0):
        self.block = REGISTRY[type_name](name, dict(params or {}), batch=batch,
                                         diagram_dir=diagram_dir, first_member=first_member)
        b = self.block
        self.batch = batch
        self.inputs = b.input_names()
        self.outputs = b.output_names()
        b.connected = frozenset(self.inputs if connected is None else connected)
        if isinstance(in_widths, int):
            in_widths = {p: in_widths for p in self.inputs}
        self.in_widths = {p: in_widths[p] for p in self.inputs}
        self.out_widths = b.resolve_widths(dict(self.in_widths))
        b.in_widths, b.out_widths = dict(self.in_widths), dict(self.out_widths)
        b.configure(dict(self.in_widths), dict(self.out_widths))
        self.xc = np.zeros((batch, b.n_xc))
        self.xd = np.zeros((batch, b.n_xd))
        b.initial_state(self.xc, self.xd)
        self.y = tuple(np.zeros((batch, self.out_widths[o])) for o in self.outputs)

    def u(self, values):
        """Input arrays (B, width) from scalars / vectors / batched arrays (zeros when omitted)."""
        values = list(values) + [0.0] * (len(self.inputs) - len(values))
        return tuple(np.array(np.broadcast_to(np.asarray(v, dtype=float),
                                              (self.batch, self.in_widths[p])), order="C")
                     for v, p in zip(values, self.inputs))

    def output(self, t, *inputs, major=True):
        """Outputs at t: one (B, width) array per output port (a single array for one port). At
        a major step (the default) the block's modes are set from these inputs first, as the
        scheduler does; major=False evaluates with the modes held (a solver stage)."""
        u = self.u(inputs)
        if major:
            self.block.modes(t, self.xc, self.xd, u)
        self.block.output(t, self.xc, self.xd, u, self.y)
        ys = tuple(y.copy() for y in self.y)
        return ys[0] if len(ys) == 1 else ys

    def derivative(self, t, *inputs, xc=None):
        dxc = np.zeros((self.batch, self.block.n_xc))
        self.block.derivative(t, self.xc if xc is None else xc, self.xd, self.u(inputs), dxc)
        return dxc

    def update(self, t, *inputs):
        self.block.update(t, self.xc, self.xd, self.u(inputs))

    def zero_crossings(self, t, *inputs):
        g = np.zeros((self.batch, self.block.n_zc))
        self.block.zero_crossings(t, self.xc, self.xd, self.u(inputs), g)
        return g

    def on_event(self, t, mask, *inputs):
        return self.block.on_event(t, self.xc, self.xd, self.u(inputs), np.asarray(mask, dtype=bool))

    def run_discrete(self, inputs):
        """Sample hits k = 0.. with input inputs[k] (a tuple per hit, or one value): output, then
        update, as the scheduler does; returns the outputs (n, B, width) of the first port."""
        ys = []
        for k, u in enumerate(inputs):
            u = u if isinstance(u, tuple) else (u,)
            ys.append(np.array(self.output(float(k), *u), copy=True))
            self.update(float(k), *u)
        return np.array(ys)

    def integrate(self, u_of_t, times, substeps=20):
        """Fixed-step RK4 of the block's continuous states with input u_of_t(t) (a tuple of inputs),
        calling update at each grid time; returns the first output (n, B, width) on `times`."""
        ys = []
        for k, t in enumerate(times):
            u = u_of_t(t)
            ys.append(np.array(self.output(t, *u), copy=True))
            self.update(t, *u)
            if k + 1 == len(times):
                break
            h = (times[k + 1] - t) / substeps
            for s in range(substeps):
                ts = t + s * h
                x = self.xc.copy()
                k1 = self.derivative(ts, *u_of_t(ts), xc=x)
                k2 = self.derivative(ts + h / 2, *u_of_t(ts + h / 2), xc=x + h / 2 * k1)
                k3 = self.derivative(ts + h / 2, *u_of_t(ts + h / 2), xc=x + h / 2 * k2)
                k4 = self.derivative(ts + h, *u_of_t(ts + h), xc=x + h * k3)
                self.xc[...] = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return np.array(ys)
