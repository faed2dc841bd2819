"""The instrumented diagram's run as functions of one vector, and their Jacobians by scaled
central differences.

The vector v of a run at a major time holds everything a major step reads that the step itself
does not compute: the continuous states, the discrete states without the modes (which stay as
they are held at the operating point), the held outputs of the discrete blocks and the
injections (the outputs of the analysis points' Constants). Two functions of v are
differentiated, both evaluated by the engine's interpreted backend (engine/python_backend.py,
the blocks' own kernels), after the diagram's constant blocks are computed again from the
injections (as a run's start computes them):

- flow(v): dxc/dt between major steps (every output of a major step without sample hits, then
  the derivatives), and the measured outputs there;
- jump(v, t, hits): a major step at t with the given rates hitting (outputs, measured outputs,
  updates), and the vector after it.

prepare builds that run: the diagram instrumented with its analysis points, loaded at the
operating point.
"""
from __future__ import annotations

import numpy as np

from ..blocks.base import Block
from ..diagram.compiler import compile_diagram
from ..diagram.diagram import Diagram
from ..engine.scheduler import Simulation, run_settings
from ..errors import AnalysisError
from .operating_point import load, snapshot
from .points import instrument, resolve_point

STEP = np.finfo(float).eps ** (1 / 3)
"""The relative step of a central difference, h = STEP max(1, |v|): the step that balances the
truncation error (h^2) against rounding (eps / h) for a function of unit scale."""


class Evaluation:
    """flow and jump (the module docstring) of a started run `sim` of the instrumented diagram
    cd, loaded at the operating point; outputs: the measured points (analysis.points.Point, in
    order); injection: {signal: the Constant holding its injection} of every signal with inputs
    or openings; inputs: the points whose injections are the model's inputs."""

    def __init__(self, sim: Simulation, cd, outputs, injection, inputs):
        self.sim, self.cd = sim, cd
        ctx, plan = sim.context, sim.plan
        self.backend = sim.backend
        self.no_hits = np.zeros(len(plan.timebase.rates), dtype=np.bool_)
        sources = set(injection.values())
        self.constants = [(cd.blocks[n], ctx.views[n][:4],
                           () if sim.records.get(n) is None else (sim.records[n],))
                          for n in plan.constant_outputs if n not in sources]
        self.t_start = float(plan.start)
        self.output_slots = []          # (slot, elements) of each measured point
        for point in outputs:
            slot = plan.outputs_of[point.block][cd.blocks[point.block].output_names()
                                                .index(point.port)]
            self.output_slots.append((slot, point.elements(plan.slots[slot].width)))
        self.n_out = sum(len(e) for _, e in self.output_slots)
        n_xc = plan.n_xc
        self.state_columns = list(range(n_xc))
        self.xd_columns = []
        for name, (a, b) in cd.xd_slices.items():
            self.xd_columns += range(a, b - cd.blocks[name].n_modes)
        self.held = []                  # (slot, width, rate index) of each discrete output
        tb = plan.timebase
        for step in plan.output_steps:
            st = cd.sample_times[step.block]
            if st.kind != "discrete":
                continue
            for port, slot in zip(cd.blocks[step.block].output_names(), plan.outputs_of[step.block]):
                if port in step.serves:
                    self.held.append((step.block, port, slot, plan.slots[slot].width,
                                      tb.rate_index(st)))
        self.n_xc = n_xc
        k = n_xc + len(self.xd_columns) + sum(h[3] for h in self.held)
        self.injections = []            # (slot, width) of each input's or opening's Constant
        columns = {}
        for signal, block in injection.items():
            slot = plan.outputs_of[block][0]
            width = plan.slots[slot].width
            self.injections.append((slot, width))
            columns[signal] = k
            k += width
        self.injection_columns = columns
        """The first column of each signal's injection (its elements follow), by signal."""
        self.input_columns = {p: [columns[p.signal] + i for i in
                                  p.elements(plan.slots[plan.outputs_of[injection[p.signal]][0]].width)]
                              for p in inputs}
        """The columns of each input's injection, by point."""
        self.u_columns = [c for p in inputs for c in self.input_columns[p]]
        every = {columns[s] + i for s, (_, w) in zip(columns, self.injections) for i in range(w)}
        self.fixed_columns = sorted(every - set(self.u_columns))
        """The columns of the openings' values that are not inputs: held, never varied."""
        self.n = k
        self.v0 = self.vector()
        self.exact_inputs = {name: tuple(plan.inputs_of[name]) for name, (a, b) in
                             plan.xc_slices.items()
                             if b > a and type(cd.blocks[name]).state_jacobian
                             is not Block.state_jacobian}
        """The input slots of each block with an exact derivative Jacobian (its own
        `state_jacobian`), by block: measured with the flow, for the chain rule."""
        self.exact: tuple[str, ...] = ()
        """The blocks whose rows of the flow's Jacobian the last flow_jacobian took from their
        own exact Jacobian."""

    # ---- the vector ----------------------------------------------------------------------------
    def vector(self) -> np.ndarray:
        ctx = self.sim.context
        parts = [ctx.xc[0], ctx.xd[0, self.xd_columns]]
        parts += [ctx.signals[slot][0] for _, _, slot, _, _ in self.held]
        parts += [ctx.signals[slot][0] for slot, _ in self.injections]
        return np.concatenate(parts)

    def set_vector(self, v: np.ndarray) -> None:
        ctx = self.sim.context
        ctx.xc[0] = v[:self.n_xc]
        k = self.n_xc + len(self.xd_columns)
        ctx.xd[0, self.xd_columns] = v[self.n_xc:k]
        for _, _, slot, width, _ in self.held:
            ctx.signals[slot][0] = v[k:k + width]
            k += width
        for slot, width in self.injections:
            ctx.signals[slot][0] = v[k:k + width]
            k += width
        for blk, args, extra in self.constants:      # the constants that read injections
            blk.output(self.t_start, *args, *extra)

    def held_slices(self):
        """(block, port, rate index, start, stop) of each held output in the vector."""
        k = self.n_xc + len(self.xd_columns)
        out = []
        for block, port, _, width, rate in self.held:
            out.append((block, port, rate, k, k + width))
            k += width
        return out

    def measured(self) -> np.ndarray:
        ctx = self.sim.context
        return np.concatenate([ctx.signals[s][0][e] for s, e in self.output_slots]
                              + [np.zeros(0)])

    # ---- the two functions ---------------------------------------------------------------------
    def flow(self, v: np.ndarray, t: float) -> np.ndarray:
        """[dxc/dt of every continuous state; the measured outputs] at v between major steps."""
        return self._flow(v, t)[:self.n_xc + self.n_out]

    def _flow(self, v: np.ndarray, t: float) -> np.ndarray:
        """flow, then the inputs of the blocks with an exact Jacobian (exact_inputs)."""
        self.set_vector(v)
        self.backend.outputs_major(t, self.no_hits, modes=False)
        dx = self.backend.rhs(t, self.sim.context.xc.copy())[0]
        signals = self.sim.context.signals
        return np.concatenate([dx, self.measured()] + [signals[s][0] for slots in
                                                        self.exact_inputs.values() for s in slots])

    def flow_jacobian(self, t: float, columns) -> np.ndarray:
        """d flow / dv over the given columns: central differences (jacobian), except the rows of
        each block with an exact Jacobian at the operating point (Block.state_jacobian), which
        are its own, chained with the differences of its inputs: d dxc / d xc of its states plus
        d dxc / d u times du / dv. Sets `exact` to those blocks."""
        J = self.jacobian(lambda v: self._flow(v, t), columns)
        rows = self.n_xc + self.n_out
        self._flow(self.v0, t)                           # the operating point's inputs
        ctx, blocks, plan = self.sim.context, self.cd.blocks, self.sim.plan
        k, exact = rows, []
        for name, slots in self.exact_inputs.items():
            a, b = plan.xc_slices[name]
            xc, xd, u = ctx.views[name][:3]
            found = blocks[name].state_jacobian(xc[0].copy(), xd[0].copy(),
                                                tuple(x[0].copy() for x in u))
            widths = [plan.slots[s].width for s in slots]
            if found is not None:
                d_x, d_u = found
                block_rows = np.zeros((b - a, self.n))
                block_rows[:, a:b] = d_x
                at = k
                for port, w in zip(blocks[name].input_names(), widths):
                    if port in d_u:
                        block_rows += d_u[port] @ J[at:at + w]
                    at += w
                J[a:b] = block_rows
                exact.append(f"{name} ({blocks[name].type_name})")
            k += sum(widths)
        self.exact = tuple(exact)
        self.set_vector(self.v0)
        return J[:rows]

    def jump(self, v: np.ndarray, t: float, hits: np.ndarray) -> np.ndarray:
        """[the measured outputs; v after the major step at t with these hits]."""
        self.set_vector(v)
        self.backend.outputs_major(t, hits, modes=False)
        y = self.measured()
        self.backend.run_updates(t, hits)
        return np.concatenate([y, self.vector()])

    def jacobian(self, f, columns) -> np.ndarray:
        """df/dv over the given columns of v, by central differences of step STEP max(1, |v|),
        around the operating point (restored afterwards)."""
        v0 = self.v0
        f0 = f(v0)
        J = np.zeros((f0.size, self.n))
        for c in columns:
            h = STEP * max(1.0, abs(v0[c]))
            up, down = v0.copy(), v0.copy()
            up[c] += h
            down[c] -= h
            J[:, c] = (f(up) - f(down)) / (up[c] - down[c])
        self.set_vector(v0)
        return J


def prepare(d: Diagram, cd0, points):
    """(the instrumented compiled diagram, the snapshot of the operating point, the Evaluation
    of a run of it loaded there) for the analysis points of cd0, d's compiled diagram."""
    refuse_memory(cd0)
    snap = snapshot(cd0, d.settings, d.log_settings, points.at)
    inst = instrument(cd0, points)
    cd = compile_diagram(inst.spec, 1)
    logged = {f"{p.block}.{p.port}": p.signal for p in points.outputs}
    sim = Simulation(cd, run_settings(d.settings, d.log_settings, cd), logged)
    sim.start()
    offsets = {resolve_point(cd0, text, None, "for analysis.at.inputs"): value
               for text, value in points.at.inputs.items()}
    load(sim, cd, snap, inst.injection, inst.opened, offsets)
    return cd, snap, Evaluation(sim, cd, points.outputs, inst.injection, points.inputs)


def state_names(cd, ev: Evaluation) -> list[str]:
    """A name per element of the evaluation's vector: block.state for states, block.port[i] for
    held outputs."""
    names = [""] * ev.n
    for name, (a, b) in cd.xc_slices.items():
        labels = cd.blocks[name].state_names()[0]
        for i in range(a, b):
            label = labels[i - a] if len(labels) == b - a else f"xc[{i - a}]"
            names[i] = f"{name}.{label}"
    k = ev.n_xc
    for c in ev.xd_columns:
        owner = next(n for n, (a, b) in cd.xd_slices.items() if a <= c < b)
        a, b = cd.xd_slices[owner]
        labels = cd.blocks[owner].state_names()[1]
        label = labels[c - a] if len(labels) == b - a else f"xd[{c - a}]"
        names[k] = f"{owner}.{label}"
        k += 1
    for block, port, _, a, b in ev.held_slices():
        for i in range(a, b):
            names[i] = f"{block}.{port}" + (f"[{i - a}]" if b - a > 1 else "") + " (held)"
    return names


def refuse_memory(cd) -> None:
    """A continuous block with memory updated at every major step (a RateLimiter's last output)
    has no linearisation independent of the solver's steps: refused, named."""
    for name, blk in cd.blocks.items():
        if blk.enabled and cd.sample_times[name].kind != "discrete" and blk.n_xd > blk.n_modes:
            raise AnalysisError(
                f"{blk.type_name} keeps a memory that it updates at every major step, which has "
                "no linearisation independent of the solver's steps; take it out of the diagram "
                "(or disable it) to linearise", where=cd.spec.blocks[name].where, block=name)
