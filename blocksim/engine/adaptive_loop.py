"""The compiled adaptive loop: a run under an embedded explicit Runge-Kutta pair (rk23, dopri5,
dop853) without zero crossings, as one numba function of the generated module (run_adaptive).

It is the scheduler's loop (engine/scheduler.py) for such a run, rendered: the phases of a major
step in MAJOR_STEP's order at each major time (the next sample hit, a source's breakpoint, the
stop time), then the solver restarted there and stepped to the next one with the error control of
solvers/explicit.AdaptiveRungeKutta (its step-size rules and dense output are the numba functions
of solvers/step_control.py, which the Python solver calls too), the log grid filled from the dense
output. The same block calls (the generated module's outputs, derivatives and updates) on the same
numbers give the same run, step for step and bit for bit, as the scheduler's loop over the same
module; Python is entered between chunks of steps only, for the progress bar and Ctrl-C.

State carried between chunks: fstate = [t, t1 (the bound of the interval being integrated),
h_next (NaN before the first step), t_old], istate = ISTATE's fields.
"""
from __future__ import annotations

import math
import time as _time
from fractions import Fraction

import numpy as np

from ..blocks.base import exact_time
from ..errors import SolverError
from ..solvers import SOLVERS, make_solver
from ..solvers.base import BOUND_SNAP_FRACTION, MIN_STEP_SPACINGS
from . import cache_guard
from .major_step import phase_handlers
from .progress import Progress
from .run_output import RunOutput

ISTATE = ("n", "n_floor", "phase", "have_f", "log_pos", "nfev", "nsteps", "nrejected",
          "major_steps", "next_break", "tick_next", "floor_next", "reason")
"""The integer state of a run in run_adaptive, by index: the tick of t (-1 off the tick grid,
after a breakpoint), the tick counted from when off the grid, 0 at a major step or 1 inside an
interval, whether f(t, x) is known (FSAL), the log position, the solver's counters, the major
steps, the next breakpoint's index, the tick and floor tick of the interval's end, and why the
solver failed (0: the tolerance, 1: a non-finite state or derivative)."""
_I = {name: k for k, name in enumerate(ISTATE)}

CHUNK_SECONDS = 0.2
"""Wall time between returns to Python (progress, Ctrl-C)."""

DONE, FINISHED, NOT_FINITE, UNDERFLOW, BAD_DERIVATIVE = 0, 1, 2, 3, 4
"""run_adaptive's status: the chunk's steps done, the stop time reached, a state became NaN/Inf
at a major step, step size underflow, the derivative at the current state is not finite."""


def supports(plan, solver) -> bool:
    """Whether run_adaptive runs this plan: an embedded explicit pair, continuous states, no zero
    crossings (events stay with the scheduler's loop for now)."""
    tableau = getattr(solver, "tableau", None)
    return bool(solver.adaptive and tableau is not None and tableau.E is not None
                and plan.n_xc > 0 and not plan.crossings)


def render(gen) -> str:
    """run_adaptive's source for Generator `gen`: ADAPTIVE_LOOP with the major step's phases
    (MAJOR_STEP, in order) and the log copies filled in."""
    renders = {"outputs": lambda: ["outputs(t, hits, True, xc, xd, s, p)"],
               "events_at_t": gen._render_events_at_t,
               "log": lambda: ["if log_pos < n_log and log_times[log_pos] == t:"]
               + ["    " + line for line in gen.record_body()] + ["    log_pos += 1"],
               "updates": lambda: ["updates(t, hits, xc, xd, s, p)"],
               "finite_check": lambda: ["if not (all_finite(xc) and all_finite(xd)):",
                                        "    status = 2", "    break"],
               "stop": lambda: ["major_steps += 1", "if not t < t_stop:",
                                "    status = 1", "    break"],
               "advance": lambda: ["phase = 1"]}
    phases = phase_handlers("compiled adaptive loop", renders.get)
    major = []
    for name, rendering in phases:
        major += [f"# {name}"] + rendering()
    record = "\n".join(" " * 16 + line for line in gen.record_body()) or " " * 16 + "pass"
    return ADAPTIVE_LOOP.format(major="\n".join(" " * 12 + line for line in major),
                                record=record, snap=repr(BOUND_SNAP_FRACTION),
                                spacings=MIN_STEP_SPACINGS)


ADAPTIVE_LOOP = '''

@njit(cache=True, error_model='numpy', nogil=True)
def run_adaptive(budget, fstate, istate, per, off, hits, nohits, num0, dnum, den, stop_ceil,
                 stop_tick, t_stop, breaks, break_ticks, log_times, xc, xd, s, p, logs,
                 A, b, c, E, E3, P_rows, A_dense, c_dense, exponent, error_order, rtol, atol,
                 max_step, K, f, xsol, x_old, x_new, xs, Q, zero):
    """At most `budget` solver steps of the run (engine/adaptive_loop.py); returns the status."""
    n_stages = b.shape[0]
    n_main = n_stages + 1
    stages = K.reshape((K.shape[0], -1))
    xc_flat = xc.reshape(-1)
    xsol_flat = xsol.reshape(-1)
    x_old_flat = x_old.reshape(-1)
    x_new_flat = x_new.reshape(-1)
    xs_flat = xs.reshape(-1)
    f_flat = f.reshape(-1)
    n_log = log_times.shape[0]
    n_breaks = breaks.shape[0]
    t, t1, h_next, t_old = fstate[0], fstate[1], fstate[2], fstate[3]
    n, n_floor, phase, have_f, log_pos = istate[0], istate[1], istate[2], istate[3], istate[4]
    nfev, nsteps, nrejected, major_steps = istate[5], istate[6], istate[7], istate[8]
    next_break, tick_next, floor_next, reason = istate[9], istate[10], istate[11], istate[12]
    status = 0
    done = 0
    while True:
        if phase == 0:
            if n >= 0:
                rate_hits(n, per, off, hits)
            else:
                for r in range(hits.shape[0]):
                    hits[r] = False
{major}
            # the next major time: the next sample hit, the stop time, or a breakpoint before
            base = n if n >= 0 else n_floor
            tick = stop_ceil
            for r in range(per.shape[0]):
                if base < off[r]:
                    hit = off[r]
                else:
                    hit = off[r] + ((base - off[r]) // per[r] + 1) * per[r]
                tick = min(tick, hit)
            if tick >= stop_ceil:
                t1 = t_stop
                tick_next = stop_tick
            else:
                t1 = (num0 + tick * dnum) / den
                tick_next = tick
            floor_next = tick_next
            while next_break < n_breaks and breaks[next_break] <= t:
                next_break += 1
            if next_break < n_breaks and breaks[next_break] < t1:
                t1 = breaks[next_break]
                tick_next = -1
                floor_next = break_ticks[next_break]
            # the solver restarts at (t, x): f(t, x) is evaluated anew, the step size is kept
            copy1d(xsol_flat, xc_flat)
            have_f = 0
            continue
        if done >= budget:
            break
        # one accepted step of the solver from (t, xsol) towards t1
        if have_f == 0:
            derivatives(t, xsol, xd, f, s, p)
            nfev += 1
            if not all_finite(f):
                status = 4
                break
            have_f = 1
        if math.isnan(h_next):
            h0, d1 = initial_step_probe(xsol_flat, f_flat, rtol, atol, t1 - t, xs_flat)
            derivatives(t + h0, xs, xd, x_new, s, p)
            nfev += 1
            h_next = initial_step_choice(xsol_flat, f_flat, x_new_flat, rtol, atol, t1 - t,
                                         max_step, h0, d1, error_order)
        min_step = {spacings} * (np.nextafter(t, np.inf) - t)
        h = min(h_next, max_step)
        rejected = False
        reason = 0
        while True:
            if h < min_step:
                status = 3
                break
            t_new = t + h
            clipped = t_new >= t1 - {snap} * h
            if clipped:
                t_new = t1
            h_taken = t_new - t
            copy1d(stages[0], f_flat)
            for i in range(1, n_stages):
                memberwise_stage_sum(xsol_flat, h_taken, A[i], stages, i, xs_flat)
                ti = t_new if c[i] == 1.0 else min(t + c[i] * h_taken, t_new)
                derivatives(ti, xs, xd, K[i], s, p)
                nfev += 1
            memberwise_stage_sum(xsol_flat, h_taken, b, stages, n_stages, x_new_flat)
            if all_finite(x_new):
                derivatives(t_new, x_new, xd, K[n_stages], s, p)
                nfev += 1
                error = memberwise_error_norm(E, E3, stages, h_taken, xsol_flat, x_new_flat,
                                              rtol, atol)
            else:
                error = np.inf
            if error < 1.0:
                h_next = step_after_accept(error, exponent, rejected, h, h_taken, clipped)
                break
            nrejected += 1
            rejected = True
            h = step_after_reject(error, exponent, h_taken)
            reason = 0 if math.isfinite(error) else 1
        if status != 0:
            fstate[3] = h          # the step size that underflowed
            break
        t_old = t
        copy1d(x_old_flat, xsol_flat)
        copy1d(xsol_flat, x_new_flat)
        copy1d(f_flat, stages[n_stages])
        t = t_new
        nsteps += 1
        done += 1
        # the log grid inside the step, from its dense output
        if log_pos < n_log and (log_times[log_pos] < min(t, t1)
                                or (log_times[log_pos] == t and t < t1)):
            hh = t - t_old
            if P_rows.shape[0] > 0:
                for r in range(A_dense.shape[0]):
                    memberwise_stage_sum(x_old_flat, hh, A_dense[r], stages, n_main + r, xs_flat)
                    derivatives(t_old + c_dense[r] * hh, xs, xd, K[n_main + r], s, p)
                    nfev += 1
                for j in range(P_rows.shape[0]):
                    memberwise_stage_sum(zero, hh, P_rows[j], stages, P_rows.shape[1], Q[j])
            t_end = min(t, t1)
            while log_pos < n_log and (log_times[log_pos] < t_end
                                       or (t < t1 and log_times[log_pos] == t_end)):
                tl = log_times[log_pos]
                if tl == t:
                    copy1d(xc_flat, xsol_flat)
                elif tl == t_old:
                    copy1d(xc_flat, x_old_flat)
                elif P_rows.shape[0] > 0:
                    power_series_at(tl, t_old, hh, x_old_flat, Q, xc_flat)
                else:
                    hermite_at(tl, t_old, hh, x_old_flat, xsol_flat, stages[0], f_flat, xc_flat)
                outputs(tl, nohits, False, xc, xd, s, p)
{record}
                log_pos += 1
        copy1d(xc_flat, xsol_flat)
        if not (all_finite(xc) and all_finite(xd)):
            status = 2
            break
        if t >= t1:
            t = t1
            n = tick_next
            n_floor = floor_next
            phase = 0
    fstate[0], fstate[1], fstate[2] = t, t1, h_next
    if status != 3:
        fstate[3] = t_old
    istate[0], istate[1], istate[2], istate[3], istate[4] = n, n_floor, phase, have_f, log_pos
    istate[5], istate[6], istate[7], istate[8] = nfev, nsteps, nrejected, major_steps
    istate[9], istate[10], istate[11], istate[12] = next_break, tick_next, floor_next, reason
    return status
'''


def run(backend, sim) -> RunOutput | None:
    """The run of Simulation sim (started: initial states and constant outputs set) in the
    module's run_adaptive, chunk by chunk; None when its ticks are beyond exact float integers
    (the scheduler's loop then runs it). Failures raise the errors the scheduler's loop raises,
    with the same text."""
    s, plan, ctx = sim.settings, backend.plan, backend.context
    tb = plan.timebase
    solver_class = SOLVERS[s.solver]
    tab = solver_class.tableau
    num0, dnum, den = tb.integer_form
    stop_tick = plan.stop_tick
    stop_ceil = math.ceil(stop_tick)
    if max(abs(num0), abs(dnum) * (stop_ceil + 1), den) >= 2 ** 53:
        return None
    breaks = np.array(sim.breaks, dtype=float)
    break_ticks = np.array([int((exact_time(bp) - tb.start) / tb.tick) for bp in sim.breaks],
                           dtype=np.int64)
    per = np.array([r.period for r in tb.rates], dtype=np.int64)
    off = np.array([r.offset for r in tb.rates], dtype=np.int64)
    hits = np.zeros(len(tb.rates), dtype=np.bool_)
    B, n_x = ctx.xc.shape
    extra = 0 if tab.A_dense is None else len(tab.A_dense)
    K = np.zeros((tab.n_stages + 1 + extra, B, n_x))
    P_rows = tab.P_rows if tab.P_rows is not None else np.zeros((0, 0))
    A_dense = tab.A_dense if tab.A_dense is not None else np.zeros((0, 0))
    c_dense = tab.c_dense if tab.c_dense is not None else np.zeros(0)
    E3 = tab.E3 if tab.E3 is not None else np.zeros(0)
    arrays = [np.zeros((B, n_x)) for _ in range(5)]          # f, xsol, x_old, x_new, xs
    Q = np.zeros((len(P_rows), B * n_x))
    zero = np.zeros(B * n_x)
    logs = tuple(sim.recorder.data[name] for name, _ in sim.recorder.sources)
    h_first = np.nan if s.step is None else min(float(s.step), float(s.max_step))
    fstate = np.array([float(s.start), float(s.start), h_first, np.nan])
    istate = np.zeros(len(ISTATE), dtype=np.int64)
    istate[_I["tick_next"]] = istate[_I["floor_next"]] = -1
    int_stop = stop_tick if isinstance(stop_tick, int) or (
        isinstance(stop_tick, Fraction) and stop_tick.denominator == 1) else -1
    exponent = -1.0 / (tab.error_order + 1)

    def args(budget):
        return (budget, fstate, istate, per, off, hits, backend.nohits, num0, dnum, den,
                stop_ceil, int(int_stop), float(s.stop), breaks, break_ticks, plan.log_grid,
                ctx.xc, ctx.xd, backend.s, backend.p, logs, tab.A, tab.b, tab.c, tab.E, E3,
                P_rows, A_dense, c_dense, exponent, tab.error_order, float(s.rtol),
                float(s.atol), float(s.max_step), K, *arrays, Q, zero)

    progress = Progress(s.start, s.stop, s.progress)
    status, interrupted, budget = DONE, False, 16
    try:
        loop = _bound(backend, args(0))
        while status == DONE:
            if sim.stop_requested:
                interrupted = True
                break
            started = _time.perf_counter()
            status = loop(*args(budget))
            elapsed = _time.perf_counter() - started
            budget = max(16, int(budget * min(4.0, CHUNK_SECONDS / max(elapsed, 1e-6))))
            progress.update(float(fstate[0]), force=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
    counters = {name: int(istate[_I[name]]) for name in ISTATE}
    sim.recorder.count = counters["log_pos"]
    t = float(fstate[0])
    if interrupted:
        _log_reached(sim, backend, t, arrays[1])
    elif status == NOT_FINITE:
        sim.check_finite(t)
    elif status in (UNDERFLOW, BAD_DERIVATIVE):
        _fail(sim, status, counters["reason"], t, float(fstate[3]), arrays[1])
    t_log, data = sim.recorder.finished()
    stats = {"major_steps": counters["major_steps"], "nfev": counters["nfev"],
             "nsteps": counters["nsteps"], "nrejected": counters["nrejected"], "events": 0,
             "mode": "compiled"}
    return RunOutput(t_log, data, [], stats, interrupted, None)


def _bound(backend, args: tuple):
    """The module's run_adaptive compiled (or loaded from numba's cache, healing a damaged
    entry) for arguments of these types, bound once per backend: the dispatcher's typing of its
    forty arguments (the signal and record tuples) would cost milliseconds at every call."""
    fn = backend._entries.get("run_adaptive")
    if fn is None:
        dispatcher = backend.module.run_adaptive
        signature = tuple(dispatcher.typeof_pyval(a) for a in args)

        def compiled():
            overload = dispatcher.overloads.get(signature)
            return overload.entry_point if overload is not None else dispatcher.compile(signature)
        fn = backend._entries["run_adaptive"] = cache_guard.compile_healing(
            compiled, f"{backend.module.__name__}.run_adaptive")
    return fn


def _log_reached(sim, backend, t: float, x: np.ndarray) -> None:
    """After an interrupt: the log's last sample at the time reached (Simulation._log_reached)."""
    rec = sim.recorder
    np.copyto(sim.xc, x)
    with np.errstate(all="ignore"):
        backend.outputs_minor(t)
    if rec.count and rec.times[rec.count - 1] >= t:
        return
    rec.record_final(t)


def _fail(sim, status: int, reason: int, t: float, h: float, x: np.ndarray) -> None:
    """Raise the scheduler's error for a solver that cannot continue at (t, x): the solver's own
    message (Solver._fail), the block blamed as the scheduler's loop blames it."""
    s = sim.settings
    solver = make_solver(s.solver, sim.backend.rhs, t, x.copy(), float(s.stop),
                         rtol=s.rtol, atol=s.atol, max_step=s.max_step)
    try:
        if status == BAD_DERIVATIVE:
            solver._fail("the derivative at the current state is not finite")
        why = "the tolerance cannot be met" if reason == 0 else \
            "the state or its derivative is not finite"
        solver._fail(f"step size underflow, {why}", h)
    except SolverError as err:
        sim.blame_non_finite(solver, err)
        raise err.located(where=sim.cd.spec.where.get("simulation.solver"))


__all__ = ["supports", "render", "run", "ADAPTIVE_LOOP", "ISTATE"]
