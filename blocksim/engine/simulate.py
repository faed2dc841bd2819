"""simulate(): compile a diagram for a run (or a batch), run the scheduler, return a Result."""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from ..diagram.diagram import Diagram
from ..errors import SolverError, SourceLoc
from .result import Result, run_metadata
from .scheduler import Simulation, settings_from


def logged_signals(cd) -> dict[str, tuple[str, str]]:
    """Signals to log: log.signals (default: every block output) plus what the scopes show."""
    spec = cd.spec
    wanted = spec.log.get("signals")
    where = spec.where.get("log.signals", SourceLoc(spec.file))
    names: list[str] = []
    if wanted is None:
        names = cd.signal_names()
    else:
        names = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    for k, scope in enumerate(spec.scopes):
        names.extend(scope.get("signals", []))
    logged: dict[str, tuple[str, str]] = {}
    for text in names:
        block, port = cd.resolve_signal(str(text), where)
        logged.setdefault(f"{block}.{port}", (block, port))
    return logged


MODES = ("auto", "interpreted", "compiled")
_explained: set[str] = set()


AUTO_COMPILE_AFTER = 20.0
"""auto mode compiles a diagram whose code is not cached yet only when its interpreted run is
estimated to take longer than this (s): compiling costs seconds to tens of seconds once."""

INTERPRETED_CALL_COST = (2e-6, 5e-8)
"""Estimated cost of one block call in interpreted mode: (s per call, s per batch member)."""


def estimated_interpreted_time(cd, settings) -> float:
    """A rough duration (s) of the run in interpreted mode: block calls times their cost."""
    from ..solvers import SOLVERS
    solver = SOLVERS[settings.solver]
    span = float(settings.stop - settings.start)
    if solver.adaptive:
        steps = span / (settings.max_step if np.isfinite(settings.max_step) else span / 200)
        stages = 7
    else:
        steps = span / float(settings.step)
        stages = len(getattr(solver, "tableau", None).b) if hasattr(solver, "tableau") else 4
    per_call = INTERPRETED_CALL_COST[0] + INTERPRETED_CALL_COST[1] * cd.batch
    return steps * (stages + 1) * len(cd.blocks) * per_call


def _note_once(spec, text: str) -> None:
    if spec.file not in _explained:
        _explained.add(spec.file)
        print(f"note: {spec.file} {text}", file=sys.stderr)


def make_simulation(cd) -> Simulation:
    """The run for simulation.mode (DESIGN.md, docs/semantics.md "Execution modes").

    compiled: every block must have kernels. auto: compiled when every block has kernels and
    either the diagram's compiled code is already cached or the run is long enough to pay for
    compiling it; otherwise interpreted, saying once why.
    """
    spec = cd.spec
    mode = spec.simulation.get("mode", os.environ.get("BLOCKSIM_MODE", "auto"))
    if mode not in MODES:
        raise SolverError(f"simulation.mode must be one of {', '.join(MODES)}, got '{mode}'",
                          where=spec.where.get("simulation.mode"))
    settings = settings_from(spec, cd)
    logged = logged_signals(cd)
    if mode == "interpreted":
        return Simulation(cd, settings, logged)
    from .compiled import CompiledSimulation, missing_kernels
    missing = missing_kernels(cd)
    if missing:
        if mode == "compiled":
            raise SolverError("compiled mode needs kernels for every block; "
                              + "; ".join(missing), where=spec.where.get("simulation.mode"))
        _note_once(spec, f"runs interpreted: {missing[0]}"
                   + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        return Simulation(cd, settings, logged)
    sim = CompiledSimulation(cd, settings, logged)
    if mode == "compiled" or sim.is_cached():
        return sim
    estimate = estimated_interpreted_time(cd, settings)
    if estimate > AUTO_COMPILE_AFTER:
        _note_once(spec, f"is compiled first (an interpreted run would take about {estimate:.0f} s)")
        return sim
    _note_once(spec, "runs interpreted: its compiled code is not cached yet and the run is short "
               "(`--mode compiled` builds the cache once)")
    return Simulation(cd, settings, logged)


class Simulator:
    """A diagram compiled once for many runs, as Drake's Simulator over one Context: the diagram's
    blocks, wiring, order, rates and (compiled mode) its step function are built here; each run()
    starts again from the initial states and returns a new Result. A sweep that runs one diagram
    many times pays the compile (a few ms of Python per diagram) once; simulate() is one run of a
    fresh Simulator.

    batch: {dotted key: [value per member]} as for simulate().
    """

    def __init__(self, diagram: Diagram, batch: dict[str, list] | None = None):
        self.diagram = diagram
        self.batched = bool(batch)
        self.cd = diagram.compile(batch)
        self.simulation = make_simulation(self.cd)
        self._runs = 0

    def run(self) -> Result:
        """One run from the initial states (the same numbers every time)."""
        sim, cd, diagram = self.simulation, self.cd, self.diagram
        if self._runs:
            sim.new_log()             # the last Result keeps its arrays
        self._runs += 1
        out = sim.run()
        meta = run_metadata(seed=cd.spec.simulation.get("seed"))
        meta.update(diagram=str(diagram.path), variant=diagram.variant,
                    solver=sim.settings.solver, overrides={k: str(v) for k, v in
                                                           diagram.overrides.items()})
        return Result(out.t, out.signals, batch=cd.batch, batched=self.batched, events=out.events,
                      stats=out.stats, interrupted=out.interrupted, stopped_by=out.stopped_by,
                      diagram=diagram.resolved_yaml, metadata=meta, aliases=cd.spec.aliases)


def simulate(diagram: Diagram, batch: dict[str, list] | None = None, **settings: Any) -> Result:
    """Run a loaded diagram. `batch` = {dotted key: [value per member]} runs B members at once;
    keyword settings override the simulation section (stop_time=..., solver=...)."""
    if settings:
        overrides = dict(diagram.overrides)
        overrides.update({f"simulation.{k}": v for k, v in settings.items()})
        diagram = Diagram(diagram.path, diagram.variant, overrides)
    return Simulator(diagram, batch).run()
