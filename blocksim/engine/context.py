"""The arrays of one run (as Drake's Context): states, derivatives, zero-crossing values and
signals, allocated from a plan, with each block's views of them."""
from __future__ import annotations

import numpy as np

from .plan import RunPlan


class RunContext:
    """xc, dxc (B, n_xc), xd (B, n_xd), g (B, n_zc) and one (B, width) array per signal slot of the
    plan; views[block] = (xc, xd, u, y, dxc, g): the block's columns of the state arrays and the
    tuples of its input and output arrays (port order), the arguments of its runtime methods."""

    def __init__(self, plan: RunPlan):
        B = plan.batch
        self.xc = np.zeros((B, plan.n_xc))
        self.dxc = np.zeros((B, plan.n_xc))
        self.xd = np.zeros((B, plan.n_xd))
        self.g = np.zeros((B, plan.n_zc))
        # the signals in one block of memory, each a C-ordered (B, width) piece of it: a run's
        # start clears them all in one call (clear)
        ends = np.cumsum([0] + [B * slot.width for slot in plan.slots])
        self._signal_memory = np.zeros(int(ends[-1]))
        self.signals = tuple(self._signal_memory[a:b].reshape(B, slot.width)
                             for a, b, slot in zip(ends[:-1], ends[1:], plan.slots))
        self.views = {}
        for name, outputs in plan.outputs_of.items():
            (a, b), (c, d), (e, f) = (plan.xc_slices[name], plan.xd_slices[name],
                                      plan.zc_slices[name])
            self.views[name] = (self.xc[:, a:b], self.xd[:, c:d],
                                tuple(self.signals[i] for i in plan.inputs_of[name]),
                                tuple(self.signals[i] for i in outputs),
                                self.dxc[:, a:b], self.g[:, e:f])

    def clear(self) -> None:
        """Every state and signal zero (the start of a run, before the blocks' initial states)."""
        self.xc[...] = 0.0
        self.xd[...] = 0.0
        self._signal_memory[...] = 0.0

    def logged(self, plan: RunPlan) -> dict[str, np.ndarray]:
        """The live arrays of the plan's logged signals, by signal name (the Recorder's sources)."""
        return {name: self.signals[slot] for name, slot in plan.log}
