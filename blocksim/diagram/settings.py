"""The simulation and log sections as typed, frozen settings, checked once, every value located.

A diagram's `simulation:` and `log:` tables (after variants, `set` overrides and `${...}`
expressions) are read here and nowhere else: the engine, the CLI and the benchmarks take a
`SimulationSettings` and a `LogSettings`, never the raw tables. Defaults that the environment may
change (`BLOCKSIM_MODE`, `BLOCKSIM_THREADS`) are read here too, when the settings are made.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from ..blocks.base import exact_time
from ..errors import BlocksimError, SampleTimeError, SolverError, SourceLoc, did_you_mean
from ..expressions.evaluate import resolve_value
from ..reading.limits import shown

MODES = ("auto", "interpreted", "compiled")
"""Execution modes (docs/semantics.md "Execution modes")."""

DEFAULT_SOLVER = "dopri5"

STEP_CONTROLS = ("shared", "per_member")
"""How an adaptive batch chooses its steps (docs/semantics.md "Batch runs"): one step for the
whole batch, or each member its own, as an independent run."""

SIMULATION_KEYS = ("start_time", "stop_time", "solver", "step", "rtol", "atol", "max_step", "mode",
                   "seed", "progress", "zero_crossing_tol", "threads", "step_control")
"""The keys of a `simulation:` table (and of keyword settings to `simulate()`)."""

LOG_KEYS = ("signals", "every")


@dataclass(frozen=True)
class SimulationSettings:
    """What the `simulation:` table asks of a run, typed and checked.

    start, stop: the time span (s, exact rationals). solver: a name of `blocksim.solvers.SOLVERS`.
    step: the fixed step asked for (s, exact), or None (a fixed-step solver then takes the fastest
    discrete period, else 1/1000 of the span). rtol, atol: the adaptive solvers' tolerances
    (relative, and absolute in the states' own units). max_step: the adaptive solvers' largest step
    (s; inf: none). zero_crossing_tol: how closely an event time is located (s, relative to
    max(1, |t|)). mode: "auto", "interpreted" or "compiled". threads: threads a batch run may use
    (None: one per available core). step_control: how an adaptive solver steps a batch, "shared"
    (one step for all members, from the batch's error norm) or "per_member" (each member its own
    steps, as an independent run). seed: recorded with the run (int, or None). progress: show a
    progress bar (None: only on an interactive terminal after a few seconds).

    `where` locates each key that the diagram set (by key: "stop_time"), for messages.
    """

    start: Fraction = Fraction(0)
    stop: Fraction = Fraction(10)
    solver: str = DEFAULT_SOLVER
    step: Fraction | None = None
    rtol: float = 1e-6
    atol: float = 1e-8
    max_step: float = math.inf
    zero_crossing_tol: float = 1e-12
    mode: str = "auto"
    threads: int | None = None
    step_control: str = "shared"
    seed: int | None = None
    progress: bool | None = None
    file: str = field(default="", compare=False)
    where: Mapping[str, SourceLoc] = field(default_factory=dict, compare=False, hash=False)

    @property
    def adaptive(self) -> bool:
        """True when the solver chooses its own steps."""
        from ..solvers import SOLVERS
        return SOLVERS[self.solver].adaptive

    def loc(self, key: str) -> SourceLoc:
        """Where `key` of the simulation table was set (the file when it was not)."""
        return self.where.get(key, SourceLoc(self.file))

    def changed(self, values: Mapping[str, Any], workspace: Mapping[str, Any] | None = None,
                origin: str = "keyword") -> "SimulationSettings":
        """These settings with some keys of the simulation table given anew ({"stop_time": 5}),
        checked as the file's are; messages locate them as "<origin> <key>". No file is re-read."""
        for key in values:
            if key not in SIMULATION_KEYS:
                raise SolverError(f"no simulation setting '{key}'{did_you_mean(key, SIMULATION_KEYS)}; "
                                  f"the settings are: {', '.join(SIMULATION_KEYS)}",
                                  where=SourceLoc(f"{origin} {key}"))
        table = dict(self.table())
        where = dict(self.where)
        for key, value in values.items():
            where[key] = SourceLoc(f"{origin} {key}")
            table[key] = resolve_value(value, workspace or {}, where[key], f"simulation.{key}",
                                       known=workspace or ())
        return read_simulation(table, where, self.file)

    def table(self) -> dict[str, Any]:
        """The settings as a simulation table that read_simulation reads back to equal settings
        (times stay exact Fractions: a float would turn 1/3 s into another rational)."""
        return {"start_time": self.start, "stop_time": self.stop, "solver": self.solver,
                "step": self.step, "rtol": self.rtol, "atol": self.atol,
                "max_step": self.max_step, "zero_crossing_tol": self.zero_crossing_tol,
                "mode": self.mode, "threads": "auto" if self.threads is None else self.threads,
                "step_control": self.step_control, "seed": self.seed, "progress": self.progress}


@dataclass(frozen=True)
class LogSettings:
    """What the `log:` table asks: the signals to log (None: every block output) and the log
    interval (s, exact; None: the fixed step, or 1000 intervals of an adaptive run's span)."""

    signals: tuple[str, ...] | None = None
    every: Fraction | None = None
    file: str = field(default="", compare=False)
    where: Mapping[str, SourceLoc] = field(default_factory=dict, compare=False, hash=False)

    def loc(self, key: str) -> SourceLoc:
        return self.where.get(key, SourceLoc(self.file))


def simulation_settings(spec) -> SimulationSettings:
    """The simulation section of a DiagramSpec, checked (errors name the file and line)."""
    where = {key: spec.where[f"simulation.{key}"] for key in spec.simulation
             if f"simulation.{key}" in spec.where}
    return read_simulation(spec.simulation, where, spec.file)


def log_settings(spec) -> LogSettings:
    """The log section of a DiagramSpec, checked (errors name the file and line)."""
    where = {key: spec.where[f"log.{key}"] for key in spec.log if f"log.{key}" in spec.where}
    signals = spec.log.get("signals")
    if signals is not None:
        signals = tuple(str(s) for s in signals) if isinstance(signals, (list, tuple)) \
            else (str(signals),)
    every = spec.log.get("every")
    if every is not None:
        every = _time(every, "log.every", where.get("every", SourceLoc(spec.file)))
        if every <= 0:
            raise SampleTimeError("log.every must be positive", where=where.get("every"))
    return LogSettings(signals, every, spec.file, where)


def read_simulation(table: Mapping[str, Any], where: Mapping[str, SourceLoc],
                    file: str) -> SimulationSettings:
    """SimulationSettings from a resolved simulation table ({key: value}) and the keys' places."""
    from ..solvers import SOLVERS
    loc = lambda key: where.get(key, SourceLoc(file))  # noqa: E731
    default = SimulationSettings()

    def given(key):
        value = table.get(key)
        return value is not None

    start = _time(table["start_time"], "simulation.start_time", loc("start_time")) \
        if given("start_time") else default.start
    stop = _time(table["stop_time"], "simulation.stop_time", loc("stop_time")) \
        if given("stop_time") else default.stop
    if stop <= start:
        raise SampleTimeError(f"stop_time ({float(stop)} s) must be after start_time "
                              f"({float(start)} s)", where=loc("stop_time"))
    if stop - start > sys.float_info.max:
        raise SampleTimeError(f"the span stop_time - start_time ({float(stop):g} s - "
                              f"{float(start):g} s) is more than the largest double "
                              f"({sys.float_info.max:.3g} s)", where=loc("stop_time"))
    solver = table["solver"] if given("solver") else default.solver
    if not isinstance(solver, str) or solver not in SOLVERS:
        hint = did_you_mean(solver, SOLVERS) if isinstance(solver, str) else ""
        raise SolverError(f"unknown solver {shown(solver)}{hint}; "
                          f"choose one of {', '.join(SOLVERS)}", where=loc("solver"))
    step = None
    if given("step"):
        step = _time(table["step"], "simulation.step", loc("step"))
        if step <= 0:
            raise SampleTimeError("simulation.step must be positive", where=loc("step"))
    mode = table["mode"] if given("mode") else os.environ.get("BLOCKSIM_MODE", default.mode)
    if not isinstance(mode, str) or mode not in MODES:
        hint = did_you_mean(mode, MODES) if isinstance(mode, str) else ""
        raise SolverError(f"simulation.mode must be one of {', '.join(MODES)}, got {shown(mode)}"
                          f"{hint}", where=where.get("mode"))
    threads = table["threads"] if given("threads") else os.environ.get("BLOCKSIM_THREADS", "auto")
    step_control = table["step_control"] if given("step_control") else default.step_control
    if not isinstance(step_control, str) or step_control not in STEP_CONTROLS:
        hint = did_you_mean(step_control, STEP_CONTROLS) if isinstance(step_control, str) else ""
        raise SolverError(f"simulation.step_control must be one of {', '.join(STEP_CONTROLS)}, "
                          f"got {shown(step_control)}{hint}", where=loc("step_control"))
    progress = table.get("progress")
    if progress is not None and not isinstance(progress, bool):
        raise SolverError(f"simulation.progress must be true or false, got {shown(progress)}",
                          where=loc("progress"))
    seed = table.get("seed")
    if seed is not None and not _is_integer(seed):
        raise SolverError(f"simulation.seed must be an integer, got {shown(seed)}", where=loc("seed"))
    return SimulationSettings(
        start=start, stop=stop, solver=solver, step=step,
        rtol=_positive(table, "rtol", default.rtol, loc),
        atol=_positive(table, "atol", default.atol, loc, zero=True),
        max_step=_positive(table, "max_step", default.max_step, loc, infinite=True),
        zero_crossing_tol=_positive(table, "zero_crossing_tol", default.zero_crossing_tol, loc),
        mode=mode, threads=thread_count(threads, loc("threads")), step_control=step_control,
        seed=None if seed is None else int(seed), progress=progress, file=file, where=dict(where))


def thread_count(value, where: SourceLoc | None) -> int | None:
    """A `threads` setting checked: a positive integer, or "auto" (None: one per core)."""
    if value == "auto":
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or str(count) != str(value).strip():
        raise SolverError(f"simulation.threads must be a positive integer or 'auto', got {shown(value)}",
                          where=where)
    return count


def _is_integer(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and float(value).is_integer())


def _time(value, what: str, where: SourceLoc) -> Fraction:
    try:
        return exact_time(value)
    except BlocksimError as err:
        raise SampleTimeError(f"{what}: {err.message}", where=where) from None


def _positive(table, key: str, default: float, loc, zero: bool = False,
              infinite: bool = False) -> float:
    """table[key] as a positive float (its default when absent); 0 only where `zero`, inf only
    where `infinite`."""
    value = table.get(key)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if (isinstance(value, bool) or not (number >= 0 if zero else number > 0)
            or (math.isinf(number) and not infinite)):
        bound = ("a number >= 0" if zero else "a positive number") + (" (or .inf)" if infinite else "")
        raise SolverError(f"simulation.{key} must be {bound}, got {shown(value)}", where=loc(key))
    return number


__all__ = ["SimulationSettings", "LogSettings", "simulation_settings", "log_settings",
           "read_simulation", "thread_count", "MODES", "SIMULATION_KEYS", "LOG_KEYS",
           "DEFAULT_SOLVER"]
