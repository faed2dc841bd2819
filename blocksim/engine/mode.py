"""Which execution mode a run takes, and why: the one place that decides (docs/semantics.md
"Execution modes")."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

from ..errors import SolverError

AUTO_COMPILE_AFTER = 20.0
"""auto mode compiles a diagram whose code is not cached yet, while some of its blocks' kernels
are not compiled on this machine either, only when its interpreted run is estimated to take
longer than this (s): the kernels' first compile costs up to a minute (the robot dynamics), once
per installation. With every kernel compiled, the diagram's own module is compiled when the
interpreted run would take longer than compiling it (estimated_compile_time)."""

COMPILE_COST = (2.0, 0.15)
"""Estimated seconds of compiling a diagram's module for a fixed-step run, its blocks' kernels
compiled already: (s per module, s per block). Measured on a 2-core machine (AMD EPYC): W1,
seven blocks, 2.5-3.3 s; W2 and W3 (twelve and six blocks) 3.4-3.9 s."""

COMPILE_FACTOR = {"adaptive": 2.0, "stiff": 6.0, "crossings": 2.0}
"""How much longer a module compiles when its run is adaptive (W1 under dopri5: 6-7 s), stiff
(radau, bdf: the Newton iterations and the Jacobian's columns besides the stages; W1 19-21 s), or
locates zero crossings (W1 with exact Coulomb friction under dopri5: 13.5 s)."""

INTERPRETED_CALL_COST = (2e-6, 5e-8)
"""Estimated cost of one block call in interpreted mode: (s per call, s per batch member)."""

TWIN_CALL_COST = (10e-6, 15e-6)
"""Estimated cost of one block call run as its kernel's Python twin: (s per call, s per batch
member), an average over a diagram's blocks (a two-link arm's dynamics about 60 us)."""

FIRST_RUN_ENV = "BLOCKSIM_FIRST_RUN"
"""Environment variable: what an interpreted run does with kernels numba has not compiled yet.
"python" (default): run their Python twins when the run is short (under AUTO_COMPILE_AFTER s so
estimated) and compile them in the background for later runs; "compile": compile them first."""


@dataclass(frozen=True)
class ModeChoice:
    """The mode a run takes ("interpreted" or "compiled"), the reason in words, and whether the
    user should be told (auto mode's choices are said once per diagram file)."""

    mode: str
    reason: str
    tell: bool = False


def choose_mode(settings, missing: list[str], cached: Callable[[], bool],
                estimate: Callable[[], float],
                compile_cost: Callable[[], float | None] = lambda: None) -> ModeChoice:
    """The mode for `settings.mode` given the facts of the diagram:

    missing: the blocks without the kernels compiled mode needs ('name (Type): ...');
    cached(): whether the diagram's compiled code is on disk already (asked only in auto mode);
    estimate(): the interpreted run's estimated length in s (asked only when not cached);
    compile_cost(): the estimated seconds of compiling the diagram's module, or None while some
    of its kernels are not compiled on this machine yet (asked only when not cached).

    compiled with a block missing kernels is an error naming the blocks (and the line of
    simulation.mode). auto is compiled when every block has kernels and either the compiled code
    is cached or the run is long enough to pay for compiling it: longer than the module's compile
    (compile_cost), or than AUTO_COMPILE_AFTER while kernels are still to be compiled; otherwise
    interpreted.
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
    cost = compile_cost()
    against = "" if cost is None else f", compiling it about {cost:.0f} s"
    if seconds > (AUTO_COMPILE_AFTER if cost is None else cost):
        return ModeChoice("compiled", f"is compiled first (an interpreted run would take about "
                                      f"{seconds:.0f} s{against})", tell=True)
    return ModeChoice("interpreted", "runs interpreted: its compiled code is not cached yet and the "
                      f"run is short (about {seconds:.2g} s{against}; `--mode compiled` builds "
                      "the cache once)", tell=True)


def first_run_policy() -> str:
    """FIRST_RUN_ENV's value: "python" (the default) or "compile"."""
    policy = os.environ.get(FIRST_RUN_ENV, "python").strip().lower()
    if policy not in ("python", "compile"):
        raise SolverError(f"{FIRST_RUN_ENV}={policy!r}: expected 'python' or 'compile'")
    return policy


def waits_for_kernels(estimate_twins: Callable[[], float]) -> bool:
    """Whether an interpreted run compiles the kernels it needs first (True) or runs the ones not
    compiled yet as Python twins (False): by FIRST_RUN_ENV, and the estimated length of a run on
    twins, estimate_twins() in s (asked only when it matters)."""
    return first_run_policy() == "compile" or estimate_twins() > AUTO_COMPILE_AFTER


def estimated_compile_time(plan) -> float:
    """A rough duration (s) of compiling the module written for `plan` (a RunPlan: the blocks it
    calls, its solver, its crossings), its blocks' kernels compiled already (COMPILE_COST,
    COMPILE_FACTOR)."""
    from ..solvers import SOLVERS
    from ..solvers.stiff import ScipyStiffSolver
    solver = SOLVERS[plan.solver]
    seconds = COMPILE_COST[0] + COMPILE_COST[1] * len(plan.enabled)
    if issubclass(solver, ScipyStiffSolver):
        seconds *= COMPILE_FACTOR["stiff"]
    elif solver.adaptive:
        seconds *= COMPILE_FACTOR["adaptive"]
    if plan.crossings:
        seconds *= COMPILE_FACTOR["crossings"]
    return seconds


def estimated_interpreted_time(cd, run, batch: int, cost=INTERPRETED_CALL_COST) -> float:
    """A rough duration (s) of the run in interpreted mode: block calls times their cost.
    run: the RunSettings (span, solver, step or max_step); cost: (s per call, s per member)."""
    from ..solvers import SOLVERS
    solver = SOLVERS[run.solver]
    span = float(run.stop - run.start)
    if solver.adaptive:
        steps = span / (run.max_step if math.isfinite(run.max_step) else span / 200)
        stages = 7
    else:
        steps = span / float(run.step)
        stages = len(solver.tableau.b) if hasattr(solver, "tableau") else 4
    per_call = cost[0] + cost[1] * batch
    return steps * (stages + 1) * len(cd.blocks) * per_call
