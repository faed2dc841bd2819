"""A run's size, estimated before anything of it is allocated: its major steps, the samples of its
log grid and the bytes of its arrays, each checked against its limit (reading/limits.py).

An absurd stop time, step, max_step, sample period or log interval, or a batch too large for the
machine, is refused in milliseconds with a LimitError located at the setting that causes it and
saying the numbers, instead of a run that loops without end or exhausts the memory. The log is
counted exactly as the engine allocates it (its time grid and one (members, samples, width) array
per logged signal), the run's states, derivatives, crossing values and signal slots exactly, and
the solver's working values as an estimate (a Runge-Kutta method's stages, a stiff solver's
Jacobian blocks), 8 bytes each.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..errors import SourceLoc
from ..reading.limits import (RUN_MEMORY_VARIABLE, LimitError, check, count, limit, memory_limit,
                              size_text)
from ..solvers import SOLVERS
from .plan import signal_slots
from .recorder import log_sample_count

BYTES_PER_VALUE = 8
"""Every array of a run holds float64 values."""


def _s(value) -> str:
    """A time (s) for a message."""
    return f"{float(value):g} s"


def _found(number: int) -> int | float:
    """An estimate for a message: itself, or inf beyond what a double holds (a step of 5e-324 s
    over a long span)."""
    return number if number < 10 ** 300 else math.inf


def fastest_period(cd) -> tuple[Fraction, str] | None:
    """(the shortest discrete period of cd (s), the first block that runs at it), or None."""
    found = None
    for name, st in cd.sample_times.items():
        if st.kind == "discrete" and (found is None or st.period < found[0]):
            found = (st.period, name)
    return found


def _period_where(cd, name: str) -> SourceLoc | None:
    """Where block `name`'s period is set (its parameter's line, else the block's)."""
    spec = cd.spec.blocks.get(name)
    if spec is None:
        return None
    param = cd.blocks[name].param_with_role("period")
    return spec.param_where.get(param, spec.where)


def _blame(settings, interval: Fraction, name: str, where: SourceLoc | None) -> SourceLoc | None:
    """The setting to locate a count of (span / interval) at: the interval's own place when it
    alone is absurd (more than the limit `name` in one second), or when the diagram does not set
    stop_time; else stop_time, the span being what is too long."""
    if 1 / interval > limit(name) or "stop_time" not in settings.where:
        return where
    return settings.loc("stop_time")


def _step_source(settings, run, cd):
    """(the interval that bounds the run's major steps (s), a function giving its words and
    where it is set): the fixed step, else the smaller of max_step and the fastest discrete
    period; None for an adaptive run with neither (its steps are the solver's to choose: only
    the log bounds its memory). The words are made only for a message."""
    fastest = fastest_period(cd)
    if not SOLVERS[run.solver].adaptive:
        if settings.step is not None:
            return run.step, lambda: (f"simulation.step {_s(run.step)}", settings.loc("step"))
        if fastest is not None:
            return run.step, lambda: (f"the fixed step {_s(run.step)}, the period of block "
                                      f"'{fastest[1]}'", _period_where(cd, fastest[1]))
        return run.step, lambda: (f"the fixed step {_s(run.step)}, 1/1000 of the span",
                                  settings.loc("stop_time"))
    sources = []
    if math.isfinite(run.max_step):
        given = math.isfinite(settings.max_step)
        what = "simulation.max_step" if given else "the max_step of a run with zero crossings"
        sources.append((Fraction(run.max_step), lambda: (
            f"{what} {_s(run.max_step)}", settings.loc("max_step" if given else "stop_time"))))
    if fastest is not None:
        sources.append((fastest[0], lambda: (f"the period {_s(fastest[0])} of block "
                                             f"'{fastest[1]}'", _period_where(cd, fastest[1]))))
    return min(sources, key=lambda source: source[0]) if sources else None


def major_steps(settings, run, cd) -> tuple[int, str, SourceLoc | None] | None:
    """(major steps of the run at least, how they are counted, where to locate a refusal), or
    None for an adaptive run with no max_step and no discrete block. settings: the
    SimulationSettings; run: its RunSettings for cd."""
    source = _step_source(settings, run, cd)
    if source is None:
        return None
    interval, describe = source
    words, where = describe()
    span = run.stop - run.start
    return (math.ceil(span / interval), f"the span {_s(span)} / {words}",
            _blame(settings, interval, "steps", where))


def _log_source(settings, log, run, cd) -> tuple[str, SourceLoc | None]:
    """(the log interval in words, where it is set)."""
    if log.every is not None:
        return f"log.every {_s(run.log_every)}", log.loc("every")
    source = _step_source(settings, run, cd) if not SOLVERS[run.solver].adaptive else None
    if source is not None:
        return f"the log interval {_s(run.log_every)}, the fixed step (log.every is not set)", \
            source[1]()[1]
    return f"the log interval {_s(run.log_every)}, 1/1000 of the span", settings.loc("stop_time")


def check_run_length(settings, log, run, cd) -> None:
    """Refuse a run whose major steps or log grid exceed the limits `steps` and `log_samples`
    (LimitError at the setting that causes it), before any of it is allocated."""
    source = _step_source(settings, run, cd)
    if source is not None and (run.stop - run.start) / source[0] > limit("steps"):
        found, words, where = major_steps(settings, run, cd)
        check("steps", _found(found), "the run takes", f" ({words})", where=where)
    samples = log_sample_count(run.start, run.stop, run.log_every)
    if samples > limit("log_samples"):
        words, where = _log_source(settings, log, run, cd)
        check("log_samples", _found(samples), "the log's time grid has",
              f" (the span {_s(run.stop - run.start)} / {words}, + 1)",
              where=_blame(settings, run.log_every, "log_samples", where))


def solver_values(solver: str, n_xc: int) -> int:
    """Values per member the solver keeps besides the run's states: an explicit Runge-Kutta
    method's stages (and its dense output's), a stiff solver's Jacobian block and the matrices
    of its Newton iteration (three n_xc x n_xc blocks, an estimate)."""
    cls = SOLVERS[solver]
    tableau = getattr(cls, "tableau", None)
    if tableau is not None:
        dense = getattr(tableau, "A_dense", None)
        extra = 0 if dense is None else len(dense)
        return (tableau.n_stages + extra + 4) * n_xc
    return (3 * n_xc + 10) * n_xc


def run_memory(cd, run, logged) -> dict[str, int]:
    """The bytes a run of cd will allocate, counted before it does: {"log": the log and its time
    grid, "work": states, derivatives, crossing values, signals and the solver's values, "samples",
    "log_values" and "work_values" (per member), "members"}. logged: {signal: (block, output)}."""
    members = cd.batch
    samples = log_sample_count(run.start, run.stop, run.log_every)
    log_values = sum(cd.out_widths[block][port] for block, port in logged.values())
    slots = signal_slots(cd)[0]
    work_values = (sum(slot.width for slot in slots) + 2 * cd.n_xc + cd.n_xd + cd.n_zc
                   + solver_values(run.solver, cd.n_xc))
    return {"log": samples * (log_values * members + 1) * BYTES_PER_VALUE,
            "work": work_values * members * BYTES_PER_VALUE, "samples": samples,
            "log_values": log_values, "work_values": work_values, "members": members}


def _members(n: int) -> str:
    return f"{count(n)} member" + ("" if n == 1 else "s")


def check_run_memory(cd, log, run, logged) -> None:
    """Refuse a run (the whole batch of cd) whose arrays would take more memory than
    reading.limits.memory_limit() allows (BLOCKSIM_MAX_RUN_MEMORY, else what the machine has
    available now), with the numbers in the message, located at the log settings."""
    available, source = memory_limit()
    if available is None:
        return
    need = run_memory(cd, run, logged)
    total = need["log"] + need["work"]
    if total <= available:
        return
    members = need["members"]
    if source == RUN_MEMORY_VARIABLE:
        bound, advice = f"the {size_text(available)} that {RUN_MEMORY_VARIABLE} allows", "raise"
    else:
        bound, advice = f"the {size_text(available)} {source}", "set"
    where = log.loc("every") if "every" in log.where else log.loc("signals")
    raise LimitError(
        f"the run needs {size_text(total)}: its log {size_text(need['log'])} "
        f"({count(need['samples'])} samples x {count(need['log_values'])} values x "
        f"{_members(members)}) and its states, signals and solver stages "
        f"{size_text(need['work'])} ({count(need['work_values'])} values x {_members(members)}), "
        f"more than {bound}; log fewer signals, a coarser log interval, fewer members, or "
        f"{advice} {RUN_MEMORY_VARIABLE}", where=where)


__all__ = ["check_run_length", "check_run_memory", "major_steps", "run_memory", "solver_values",
           "fastest_period", "BYTES_PER_VALUE"]
