"""Which execution mode a run takes, and why: the one place that decides (docs/semantics.md
"Execution modes")."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..errors import SolverError

AUTO_COMPILE_AFTER = 20.0
"""auto mode compiles a diagram whose code is not cached yet only when its interpreted run is
estimated to take longer than this (s): compiling costs seconds to tens of seconds once."""

INTERPRETED_CALL_COST = (2e-6, 5e-8)
"""Estimated cost of one block call in interpreted mode: (s per call, s per batch member)."""


@dataclass(frozen=True)
class ModeChoice:
    """The mode a run takes ("interpreted" or "compiled"), the reason in words, and whether the
    user should be told (auto mode's choices are said once per diagram file)."""

    mode: str
    reason: str
    tell: bool = False


def choose_mode(settings, missing: list[str], cached: Callable[[], bool],
                estimate: Callable[[], float]) -> ModeChoice:
    """The mode for `settings.mode` given the facts of the diagram:

    missing: the blocks without the kernels compiled mode needs ('name (Type): ...');
    cached(): whether the diagram's compiled code is on disk already (asked only in auto mode);
    estimate(): the interpreted run's estimated length in s (asked only when not cached).

    compiled with a block missing kernels is an error naming the blocks (and the line of
    simulation.mode). auto is compiled when every block has kernels and either the compiled code
    is cached or the run is long enough to pay for compiling it; otherwise interpreted.
    """
    requested = settings.mode
    if requested == "interpreted":
        return ModeChoice("interpreted", "simulation.mode is interpreted")
    if missing:
        if requested == "compiled":
            raise SolverError("compiled mode needs kernels for every block; " + "; ".join(missing),
                              where=settings.where.get("mode"))
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return ModeChoice("interpreted", f"runs interpreted: {missing[0]}{more}", tell=True)
    if requested == "compiled":
        return ModeChoice("compiled", "simulation.mode is compiled")
    if cached():
        return ModeChoice("compiled", "its compiled code is cached")
    seconds = estimate()
    if seconds > AUTO_COMPILE_AFTER:
        return ModeChoice("compiled", f"is compiled first (an interpreted run would take about "
                                      f"{seconds:.0f} s)", tell=True)
    return ModeChoice("interpreted", "runs interpreted: its compiled code is not cached yet and the "
                      "run is short (`--mode compiled` builds the cache once)", tell=True)


def estimated_interpreted_time(cd, run, batch: int) -> float:
    """A rough duration (s) of the run in interpreted mode: block calls times their cost.
    run: the RunSettings (span, solver, step or max_step)."""
    from ..solvers import SOLVERS
    solver = SOLVERS[run.solver]
    span = float(run.stop - run.start)
    if solver.adaptive:
        steps = span / (run.max_step if math.isfinite(run.max_step) else span / 200)
        stages = 7
    else:
        steps = span / float(run.step)
        stages = len(solver.tableau.b) if hasattr(solver, "tableau") else 4
    per_call = INTERPRETED_CALL_COST[0] + INTERPRETED_CALL_COST[1] * batch
    return steps * (stages + 1) * len(cd.blocks) * per_call
