"""The Python backend: a plan walked with the blocks' own methods (interpreted mode).

Each call site of the plan is bound once (Block.bind: a block that runs a method through its
kernel is called at the kernel's compiled entry point for these arrays), so an evaluation is a
loop over (function, arguments) pairs.
"""
from __future__ import annotations

import numpy as np

from ..blocks._kernels import compile_notice_done
from .context import RunContext
from .plan import EVERY_STEP, RunPlan


class PythonBackend:
    """Evaluations of a plan on a context: outputs at major steps and at minor evaluations, the
    right-hand side for the solver, updates and zero crossings. blocks: the compiled diagram's
    blocks; records: the run's parameter records by block (Block.record; a block without one
    uses its own); wait_for_kernels=False: kernels not compiled yet run as their Python twins
    (blocksim/twins.py) rather than being compiled first."""

    mode = "interpreted"
    runs_whole_loop = False
    """The scheduler's Python loop runs every major step (no loop of this backend's own)."""

    def __init__(self, plan: RunPlan, context: RunContext, blocks: dict, records: dict,
                 wait_for_kernels: bool = True, like: "PythonBackend | None" = None):
        """like: the backend of another member of a per-member batch: this one binds the same
        way (kernels or their Python twins)."""
        if like is not None:
            wait_for_kernels = like.wait_for_kernels
        self.wait_for_kernels = wait_for_kernels
        views = context.views

        def bind(name, method, args, want=None):
            return blocks[name].bind(method, args, records.get(name), wait_for_kernels, want)

        self.context = context
        bound = [bind(o.block, "output", views[o.block][:4], o.wanted) for o in plan.output_steps]
        self.major = []
        for o, entry in zip(plan.output_steps, bound):
            if o.modes:          # the modes first, at major steps only
                self.major.append((o.rate, *bind(o.block, "modes", views[o.block][:3])))
            self.major.append((o.rate, *entry))
        self.major_held = [(o.rate, *entry) for o, entry in zip(plan.output_steps, bound)]
        self.minor = [entry for o, entry in zip(plan.output_steps, bound) if o.varies]
        self.logged = [entry for o, entry in zip(plan.output_steps, bound)
                       if o.varies and o.log_read]
        self.stage = [entry for o, entry in zip(plan.output_steps, bound) if o.at_stages]
        self.derivatives = [bind(n, "derivative", views[n][:3] + views[n][4:5])
                            for n in plan.derivatives]
        self.updates = [(u.rate, *bind(u.block, "update", views[u.block][:3]))
                        for u in plan.updates]
        self.crossings = [bind(n, "zero_crossings", views[n][:3] + views[n][5:])
                          for n in plan.crossings]
        compile_notice_done()

    def outputs_major(self, t: float, hits: np.ndarray, modes: bool = True) -> None:
        """Outputs in sorted order, each block's modes set before its last call; discrete blocks
        only where hits[rate] (else held). modes=False: the modes stay as they are held (an
        analysis evaluates the diagram around an operating point in the modes it has there)."""
        for rate, fn, args in (self.major if modes else self.major_held):
            if rate == EVERY_STEP or hits[rate]:
                fn(t, *args)

    def outputs_minor(self, t: float) -> None:
        """Every varying block's outputs at (t, xc), between major steps (log, crossings)."""
        for fn, args in self.minor:
            fn(t, *args)

    def outputs_logged(self, t: float) -> None:
        """The varying outputs the logged signals read at (t, xc) (OutputStep.log_read): a log
        sample between major steps."""
        for fn, args in self.logged:
            fn(t, *args)

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        """dx/dt at (t, x) for the solver: the stage-read outputs, then every derivative."""
        ctx = self.context
        np.copyto(ctx.xc, x)
        for fn, args in self.stage:
            fn(t, *args)
        for fn, args in self.derivatives:
            fn(t, *args)
        return ctx.dxc.copy()

    def zero_crossings(self, t: float) -> np.ndarray:
        """The zero-crossing functions g (B, n_zc) at t, from the current outputs and states."""
        for fn, args in self.crossings:
            fn(t, *args)
        return self.context.g.copy()

    def run_updates(self, t: float, hits: np.ndarray) -> None:
        """Discrete updates at their hits; continuous blocks' memory at every major step."""
        for rate, fn, args in self.updates:
            if rate == EVERY_STEP or hits[rate]:
                fn(t, *args)
