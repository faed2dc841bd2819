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
"""
from __future__ import annotations

import numpy as np

from ..engine.scheduler import Simulation

STEP = np.finfo(float).eps ** (1 / 3)
"""The relative step of a central difference, h = STEP max(1, |v|): the step that balances the
truncation error (h^2) against rounding (eps / h) for a function of unit scale."""


class Evaluation:
    """flow and jump (the module docstring) of a started run `sim` of the instrumented diagram
    cd, loaded at the operating point; outputs: the measured signals ((block, port), in order);
    injection: {signal: the Integrator holding its injection} of every input and opening;
    inputs: the signals whose injections are the model's inputs."""

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
        self.output_slots = [plan.outputs_of[b][cd.blocks[b].output_names().index(p)]
                             for b, p in outputs]
        self.n_out = sum(plan.slots[s].width for s in self.output_slots)
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
            columns[signal] = list(range(k, k + width))
            k += width
        self.input_columns = {s: columns[s] for s in inputs}
        """The columns of each input's injection, by signal."""
        self.u_columns = [c for s in inputs for c in columns[s]]
        self.fixed_columns = sorted({c for cs in columns.values() for c in cs}
                                    - set(self.u_columns))
        """The columns of the openings' values that are not inputs: held, never varied."""
        self.n = k
        self.v0 = self.vector()

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
        return np.concatenate([ctx.signals[s][0] for s in self.output_slots] + [np.zeros(0)])

    # ---- the two functions ---------------------------------------------------------------------
    def flow(self, v: np.ndarray, t: float) -> np.ndarray:
        """[dxc/dt of every continuous state; the measured outputs] at v between major steps."""
        self.set_vector(v)
        self.backend.outputs_major(t, self.no_hits, modes=False)
        dx = self.backend.rhs(t, self.sim.context.xc.copy())[0]
        return np.concatenate([dx, self.measured()])

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
