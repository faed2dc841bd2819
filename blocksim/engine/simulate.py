"""simulate(): compile a diagram for a run (or a batch), run the scheduler, return a Result."""
from __future__ import annotations

import os
import pickle
import sys
import threading
from typing import Any

import numpy as np

from ..diagram.diagram import Diagram
from ..errors import SolverError, SourceLoc
from .result import Result, run_metadata
from .scheduler import RunOutput, Simulation, settings_from, solver_name


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


def estimated_interpreted_time(cd, settings, batch: int) -> float:
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
    per_call = INTERPRETED_CALL_COST[0] + INTERPRETED_CALL_COST[1] * batch
    return steps * (stages + 1) * len(cd.blocks) * per_call


def _note_once(spec, text: str) -> None:
    if spec.file not in _explained:
        _explained.add(spec.file)
        print(f"note: {spec.file} {text}", file=sys.stderr)


def requested_mode(spec) -> str:
    """simulation.mode, else $BLOCKSIM_MODE, else auto (not yet checked)."""
    return spec.simulation.get("mode", os.environ.get("BLOCKSIM_MODE", "auto"))


def make_simulation(cd, whole_batch: int | None = None) -> Simulation:
    """The run for simulation.mode (DESIGN.md, docs/semantics.md "Execution modes").

    compiled: every block must have kernels. auto: compiled when every block has kernels and
    either the diagram's compiled code is already cached or the run is long enough to pay for
    compiling it; otherwise interpreted, saying once why. whole_batch: the size of the whole batch
    when cd is one part of it (the run's length is judged on the whole).
    """
    spec = cd.spec
    mode = requested_mode(spec)
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
    estimate = estimated_interpreted_time(cd, settings, whole_batch or cd.batch)
    if estimate > AUTO_COMPILE_AFTER:
        _note_once(spec, f"is compiled first (an interpreted run would take about {estimate:.0f} s)")
        return sim
    _note_once(spec, "runs interpreted: its compiled code is not cached yet and the run is short "
               "(`--mode compiled` builds the cache once)")
    return Simulation(cd, settings, logged)


MIN_MEMBERS_PER_THREAD = 32
"""A batch is split across threads only into parts of at least this many members: below it, the
per-part setup (a few ms of Python) costs more than the second core gives."""


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def thread_count(spec, requested: int | str | None) -> int:
    """Threads for a batch run: the argument, else simulation.threads, else $BLOCKSIM_THREADS,
    else "auto" (one per available core)."""
    value = requested
    if value is None:
        value = spec.simulation.get("threads", os.environ.get("BLOCKSIM_THREADS", "auto"))
    if value == "auto":
        return available_cores()
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or str(count) != str(value).strip():
        raise SolverError(f"simulation.threads must be a positive integer or 'auto', got '{value}'",
                          where=spec.where.get("simulation.threads", SourceLoc(spec.file)))
    return count


class Simulator:
    """A diagram compiled once for many runs, as Drake's Simulator over one Context: the diagram's
    blocks, wiring, order, rates and (compiled mode) its step function are built here; each run()
    starts again from the initial states and returns a new Result. A sweep that runs one diagram
    many times pays the compile (a few ms of Python per diagram) once; simulate() runs the
    Simulator its Diagram remembers for the same batch (fast restart), or a new one.

    batch: {dotted key: [value per member]} as for simulate().
    threads: how many threads a batch run may use (default: simulation.threads, else one per
    core). A compiled fixed-step batch, whose members are independent runs on one time grid, is
    split into that many parts of consecutive members, each its own Simulation run on its own
    thread (the compiled loop releases the GIL); the parts' logs are joined in member order, so
    the numbers are those of one unsplit run, bit for bit. Other runs (interpreted, adaptive or
    with zero crossings, whose members share step sizes and events) run whole on one thread.
    """

    def __init__(self, diagram: Diagram, batch: dict[str, list] | None = None,
                 threads: int | str | None = None):
        self.diagram = diagram
        self.batched = bool(batch)
        self.batch = len(next(iter(batch.values()))) if batch else 1
        self.parts = self._split(batch, thread_count(diagram.spec, threads)) \
            or [make_simulation(diagram.compile(batch))]
        self._runs = 0
        self.busy = threading.Lock()    # held by simulate() while it runs a remembered Simulator

    def _split(self, batch, threads: int) -> list[Simulation] | None:
        """One Simulation per part of the batch, when the run splits; None otherwise."""
        parts = min(threads, self.batch // MIN_MEMBERS_PER_THREAD)
        if parts < 2 or not _may_split(self.diagram.spec):
            return None
        bounds = [self.batch * i // parts for i in range(parts + 1)]
        first = make_simulation(self.diagram.compile(batch, range(bounds[0], bounds[1])),
                                whole_batch=self.batch)
        if not first.members_independent():
            return None
        sims = [first] + [make_simulation(self.diagram.compile(batch, range(a, b)),
                                          whole_batch=self.batch)
                          for a, b in zip(bounds[1:-1], bounds[2:])]
        for sim in sims[1:]:
            sim.settings.progress = False      # one progress bar: the first part's
        return sims

    @property
    def cd(self):
        """The compiled diagram (of the first part, when the batch runs split)."""
        return self.parts[0].cd

    @property
    def simulation(self) -> Simulation:
        return self.parts[0]

    def run(self) -> Result:
        """One run from the initial states (the same numbers every time)."""
        diagram, parts = self.diagram, self.parts
        if self._runs:
            for sim in parts:
                sim.new_log()         # the last Result keeps its arrays
        self._runs += 1
        out = parts[0].run() if len(parts) == 1 else _run_parts(parts)
        meta = run_metadata(seed=self.cd.spec.simulation.get("seed"))
        meta.update(diagram=str(diagram.path), variant=diagram.variant,
                    solver=parts[0].settings.solver, overrides={k: str(v) for k, v in
                                                                diagram.overrides.items()})
        return Result(out.t, out.signals, batch=self.batch, batched=self.batched,
                      events=out.events, stats=out.stats, interrupted=out.interrupted,
                      stopped_by=out.stopped_by, diagram=diagram.resolved_yaml, metadata=meta,
                      aliases=self.cd.spec.aliases)


def _may_split(spec) -> bool:
    """False when the simulation section alone rules a split out (interpreted mode, an adaptive
    solver), so that no part is compiled only to be thrown away."""
    from ..solvers import SOLVERS
    solver = SOLVERS.get(solver_name(spec))
    return requested_mode(spec) != "interpreted" and solver is not None and not solver.adaptive


def _run_parts(parts: list[Simulation]) -> RunOutput:
    """Run the parts of a split batch on one thread each and join their logs in member order.
    Ctrl-C stops every part at its next chunk; the log keeps the steps all parts reached."""
    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
    for sim in parts:
        sim.stop_requested = False
    with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="blocksim") as pool:
        futures = [pool.submit(sim.run) for sim in parts]
        try:
            while wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION).not_done:
                if any(f.done() and f.exception() for f in futures):
                    break
        except KeyboardInterrupt:
            pass
        finally:
            for sim in parts:          # an error or Ctrl-C in one part stops the others
                sim.stop_requested = True
        outs = [f.result() for f in futures]
    n = min(len(o.t) for o in outs)
    signals = {name: np.concatenate([o.signals[name][:, :n] for o in outs])
               for name in outs[0].signals}
    stats = dict(outs[0].stats, threads=len(parts))
    return RunOutput(outs[0].t[:n], signals, [], stats,
                     any(o.interrupted for o in outs) or n < max(len(o.t) for o in outs), None)


def simulate(diagram: Diagram, batch: dict[str, list] | None = None, **settings: Any) -> Result:
    """Run a loaded diagram. `batch` = {dotted key: [value per member]} runs B members at once;
    keyword settings override the simulation section (stop_time=..., solver=...).

    Fast restart (as Simulink's): a Diagram remembers the Simulator of its last simulate() call,
    and a call with the same batch runs it again instead of compiling the diagram anew (blocks,
    wiring, order, generated module: 1-2 ms of Python for W1). A Diagram's spec is fixed when it
    is loaded, and a second run gives the first run's numbers bit for bit; a call made while
    another thread runs the remembered Simulator builds its own."""
    if settings:
        overrides = dict(diagram.overrides)
        overrides.update({f"simulation.{k}": v for k, v in settings.items()})
        diagram = Diagram(diagram.path, diagram.variant, overrides)
    key = _batch_key(batch)
    remembered = getattr(diagram, "_fast_restart", None)
    if (key is not None and remembered is not None and remembered[0] == key
            and remembered[1].busy.acquire(False)):
        sim = remembered[1]
    else:
        sim = Simulator(diagram, batch)
        sim.busy.acquire()
        if key is not None:
            diagram._fast_restart = (key, sim)
    try:
        return sim.run()
    finally:
        for part in sim.parts:
            part.recorder.release()    # the Result keeps the log; the Diagram need not
        sim.busy.release()


def _batch_key(batch) -> bytes | None:
    """The batch's content as bytes (None for a plain run, or when it does not pickle)."""
    if not batch:
        return b""
    try:
        return pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:       # an unpicklable value: no fast restart for this call
        return None
