"""The semantics of a major step, written once: its phases, in order.

docs/semantics.md ("A major step at time t") states them in words; this tuple is what both ways
of running a plan follow. The scheduler's Python loop (engine/scheduler.py) calls one handler per
phase, in this order; the numba backend (engine/numba_backend.py) renders one piece of source per
phase, in this order, into its fixed-step loop. Both look every phase up by name and refuse a
phase they have no handler or rendering for, so a new phase, or a new order, is one edit here
and one handler per backend, and no backend can run a step the other does not
(phase_handlers).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One phase of a major step: its name (the handler's and renderer's key) and its rule."""

    name: str
    rule: str


MAJOR_STEP: tuple[Phase, ...] = (
    Phase("outputs",
          "Outputs of every block in sorted order: a discrete block at its hits (held between "
          "them, reading its state before the hit's update), the others at every major step; "
          "constant blocks were computed once, at the start."),
    Phase("events_at_t",
          "At the start, a block whose stop condition already holds stops the run; after that, "
          "zero crossings that a jump at t caused (a held output that changed) fire their "
          "events, and the outputs are computed again after the reactions."),
    Phase("log",
          "The logged signals are copied when t is on the log grid."),
    Phase("updates",
          "Discrete blocks update at their hits, in sorted order; continuous blocks that keep "
          "memory (n_xd > 0) update at every major step."),
    Phase("finite_check",
          "A state that became NaN or Inf stops the run with an error naming its block."),
    Phase("stop",
          "The run ends at the stop time."),
    Phase("advance",
          "The continuous states are integrated to the next major time: the next sample hit, the "
          "next fixed-step grid point, a source's breakpoint (adaptive solvers), the stop time, "
          "or a located zero crossing, whose event fires at the crossing's major step."),
)
"""The phases of a major step at time t, in order."""

PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in MAJOR_STEP)


def phase_handlers(kind: str, lookup) -> tuple[tuple[str, object], ...]:
    """(name, handler) for every phase of MAJOR_STEP, in order; lookup(name) gives a backend's
    handler (or rendering) of a phase, None when it has none. Raises NotImplementedError naming
    the phases the backend lacks: a run follows MAJOR_STEP exactly or not at all."""
    found = tuple((phase.name, lookup(phase.name)) for phase in MAJOR_STEP)
    missing = [name for name, handler in found if handler is None]
    if missing:
        raise NotImplementedError(f"the {kind} has no handler for the phase(s) "
                                  f"{', '.join(missing)} of the major step")
    return found
