"""The compiled adaptive loop: a run under an embedded explicit Runge-Kutta pair (rk23, dopri5,
dop853), zero crossings included, as one numba function of the generated module (run_adaptive);
also a fixed-step run with zero crossings (euler ... rk4: one step from each major time to the
next, a crossing reported at the step's end), which the fixed-step loop (run_fixed) does not
serve.

It is the scheduler's loop (engine/scheduler.py) for such a run, rendered: the phases of a major
step in MAJOR_STEP's order at each major time (the next sample hit, a source's breakpoint, the
stop time, an event), then the solver restarted there and stepped to the next one with the error
control of solvers/explicit.AdaptiveRungeKutta (its step-size rules and dense output are the
numba functions of solvers/step_control.py, which the Python solver calls too), the log grid
filled from the dense output. The block calls are the ones the module's outputs, derivatives,
updates and zero_crossings make (the same rendering, written once each into the loop), so the
run is the scheduler's loop's over the same module, step for step and bit for bit.

Events: after every accepted step the crossing functions are evaluated at its end and compared
with their baseline (Simulation.crossed's rule); a crossing is located on the step's dense output
by the crossing search of solvers/events.py, the one the scheduler's loop runs, its trial
evaluations made through the loop's output site; the log is filled up to the event and the
outputs of the event's major step computed (the modes switch there). When every block with zero
crossings reacts in kernels (Kernels.event, Kernels.stop_requested; Generator.reactions_compiled),
the loop then runs the hybrid rules of the scheduler itself: the blocks' reactions (resets, mode
switches, a terminal event, the events noted in ev_times and ev_rows for Python to list between
chunks), a major step's events at t, the stop condition at the start, and the probe a moment later
of a function that sits exactly on zero or has just fired (Simulation._baseline, _modes_ahead:
tasks 20 to 22, the probe's outputs in modes 5 and 6, the restore in mode 7). A block with an
on_event of its own in Python keeps these in Python: the loop then returns (_serve) once or
twice per event. Python is otherwise entered between chunks of steps only, for the progress bar
and Ctrl-C.

State carried between chunks: fstate = [t, t1 (the bound of the interval being integrated),
h_next (NaN before the first step), t_old, the time of the last event (-inf before one)],
istate = ISTATE's fields.
"""
from __future__ import annotations

import re
import time as _time

import numpy as np

from ..errors import SolverError
from ..solvers import SOLVERS, make_solver
from ..solvers.base import BOUND_SNAP_FRACTION, MIN_STEP_SPACINGS
from .major_step import phase_handlers
from .loops import first_chunk, held_buffer, loop_clock, next_chunk
from .progress import Progress
from . import log_table
from .event_arrays import EventArrays
from .run_output import RunOutput
from .scheduler import CONSECUTIVE_EVENT_SPAN, MAX_CONSECUTIVE_EVENTS, PROBE_STEP
from .source_text import block, indent, stack_form, unpacked

ISTATE = ("n", "n_floor", "mode", "have_f", "log_pos", "nfev", "nsteps", "nrejected",
          "major_steps", "next_break", "tick_next", "floor_next", "reason", "resume", "first",
          "have_gprev", "leaving", "n_events", "stopped_by", "final_logged",
          "in_a_row")
"""The integer state of a run in run_adaptive, by index: the tick of t (-1 off the tick grid,
after a breakpoint), the tick counted from when off the grid, 0 at a major step or 1 between
steps inside an interval, whether f(t, x) is known (FSAL), the log position, the solver's
counters, the major steps, the next breakpoint's index, the tick and floor tick of the
interval's end, why the solver failed (0: the tolerance, 1: a non-finite state or
derivative), where a major step resumes after Python's part of it (0: from its start, 1: after
its events at t, 2: after the modes of the step ahead), whether the next major step is the
first, whether the crossing functions have a baseline, whether one of them leaves zero at
t (the modes of the step ahead are then set a moment later), the events noted since Python last
listed them, the block that stopped the run (its index in the plan's crossings + 1, 0: none) and
whether the log's last sample was taken at a stop off the log grid, and the events in a row
(Simulation.count_event_in_a_row)."""
_I = {name: k for k, name in enumerate(ISTATE)}

DONE, FINISHED, NOT_FINITE, UNDERFLOW, BAD_DERIVATIVE, STEP_NOT_FINITE = 0, 1, 2, 3, 4, 9
"""run_adaptive's status: the chunk's steps done, the stop time reached, a state became NaN/Inf
at a major step, step size underflow, the derivative at the current state is not finite, a
fixed step's end state is not finite."""
EVENT, EVENTS_AT_T, MODES_AHEAD, BASELINE = 5, 6, 7, 8
"""run_adaptive's requests to Python (_serve), after which it goes on: the reactions of a
located event (its outputs computed), a major step's events at t, the modes of the step ahead,
the baseline of a crossing function exactly zero at a step's end."""
SERVICES = (EVENT, EVENTS_AT_T, MODES_AHEAD, BASELINE)
CHATTERING = 10
"""run_adaptive's status when events came MAX_CONSECUTIVE_EVENTS times in a row without time
advancing (Simulation.count_event_in_a_row): Python raises the run's error."""


def renderable(plan) -> bool:
    """Whether the plan's module holds run_adaptive: continuous states (a run without them
    steps on its log grid in the scheduler's loop)."""
    return plan.n_xc > 0


def supports(plan, solver) -> bool:
    """Whether run_adaptive runs this plan under this solver: an embedded explicit pair, or a
    fixed-step explicit method on a plan with zero crossings (one without them runs in
    run_fixed)."""
    tableau = getattr(solver, "tableau", None)
    if not renderable(plan) or tableau is None:
        return False
    return tableau.E is not None if solver.adaptive else bool(plan.crossings)


def render(gen) -> str:
    """run_adaptive's source for Generator `gen`: ADAPTIVE_LOOP with the major step's phases
    (MAJOR_STEP, in order), the outputs, the zero-crossing functions, the stage outputs and
    derivatives and the log copies filled in. Every block call is written once: one output site
    serves the major steps, the log samples and the crossing functions' evaluations, one
    evaluation site every derivative of a step (numba's compile time grows with call sites)."""
    frame = {"outputs": lambda: [], "advance": lambda: []}
    compiled = gen.reactions_compiled
    renders = {"events_at_t": lambda: _render_events_at_t(gen) if compiled
               else _render_python_events_at_t(),
               "log": lambda: ["if log_pos < n_log and log_times[log_pos] == t:"]
               + indent(gen.record_body(), 4) + ["    log_pos += 1"],
               "updates": gen.update_body,
               "finite_check": lambda: ["if not (all_finite(xc) and all_finite(xd)):",
                                        "    status = 2", "    break"],
               "stop": lambda: ["major_steps += 1", "if not t < t_stop:",
                                "    status = 1", "    break"]}
    phases = phase_handlers("compiled adaptive loop",
                            lambda name: frame.get(name) or renders.get(name))
    if phases[0][0] != "outputs" or phases[-1][0] != "advance" or phases[1][0] != "events_at_t":
        raise NotImplementedError("the adaptive loop's frame puts outputs first, the events at t "
                                  "next and the advance last")
    # the phases after the events at t run once per major step: not again when Python has set
    # the modes of the step ahead (resume 2), which comes after them
    after = ["resume = 0"]
    for name, rendering in phases[2:-1]:
        after += [f"# {name}"] + rendering()
    after += ["# the modes of the step ahead, when a crossing function leaves zero at t "
              "(Simulation._modes_ahead)",
              "if leaving != 0:", "    leaving = 0", "    if has_modes:", "        resume = 2"]
    after += indent(["probe_kind = 2", "probe_return = 2", "mode = 1", "task = 20", "continue"]
                    if compiled else ["status = 7", "break"], 8)
    plan = gen.plan
    events = plan.n_zc > 0
    major = ["# events_at_t"] + (phases[1][1]() if events else []) + ["if resume <= 1:"] + \
        indent(after, 4) + ["resume = 0"]
    reads = [f"s[{i}]" for i in plan.stage_held] + [f"xd[:, {a}:{b}]" for a, b in plan.stage_xd]
    tabled = log_table.render(plan)
    parts = dict(
        n_zc="g.shape[1]" if events else "0",
        unpack=gen.entry_locals(memo=True),
        stash=unpacked(block(["at = 0"] + [f"at = stash(held, at, {r})" for r in reads], 16)),
        unchanged=unpacked(block(["at = 0"] + [f"at = unchanged(held, at, {r})" for r in reads]
                                 + ["if at < 0:", "    have_f = 0"], 16)),
        outputs=unpacked(block(tabled[0] + gen.output_body(
            "major", "te", minor="all", unlogged_guard="mode != 2", memo=True) + tabled[1], 16)),
        crossings=unpacked(block(gen.zero_crossing_body("te") or ["pass"], 20)),
        step_end_crossings=unpacked(block(_step_end_crossings(gen), 20)),
        major=unpacked(block(major, 16)),
        event_reactions=unpacked(block(_render_event_reactions(gen) if compiled and events
                                       else ["status = 5", "break"], 16)),
        step_end_baseline=block(["copy2d(g_base, g_new)", "clear_fired(fired)",
                                 "probe_kind = 1", "probe_return = 3", "task = 20", "continue"]
                                if compiled else ["status = 8", "break"], 20),
        probe=repr(PROBE_STEP),
        record=unpacked(block(gen.record_body(), 12)),
        evaluate=unpacked(block(gen.output_body(None, "te", memo=True)
                                + gen.derivative_body("te", "K[row]"), 8)),
        snap=repr(BOUND_SNAP_FRACTION), spacings=MIN_STEP_SPACINGS)
    source = ADAPTIVE_LOOP.format(name="run_adaptive", prologue="", **parts) + \
        _one_member(plan, parts)
    return _EVENT_TASKS.sub(r"\1" if events else "", source)


def stage_rows(tab) -> int:
    """The rows of the loop's stage array K under tableau tab: its stages, FSAL, the dense
    output's extra stages, f(t, x) (ROW_F) and a scratch row."""
    extra = 0 if tab.A_dense is None else len(tab.A_dense)
    return tab.n_stages + 1 + extra + 2


_TABLEAUX = [solver.tableau for solver in SOLVERS.values() if hasattr(solver, "tableau")]
STAGE_ROWS = max(stage_rows(tab) for tab in _TABLEAUX)
"""The most rows K has under any explicit solver: those of run_adaptive_one's stack."""
DENSE_ROWS = max(len(tab.P_rows) if tab.P_rows is not None else 0 for tab in _TABLEAUX)
"""The most rows of the dense output's power coefficients Q under any explicit solver."""


def _one_member(plan, parts: dict) -> str:
    """run_adaptive_one: run_adaptive (ADAPTIVE_LOOP with the rendered `parts`) for one member
    (a single run, or a member of a per-member batch) with its signals, states, stage rows,
    dense output and crossing functions on its own stack, when they fit in STACK_LIMIT bytes
    (else nothing: run_adaptive runs it)."""
    n, zc = plan.n_xc, plan.n_zc
    arrays = {"xc": (1, n), "xd": (1, plan.n_xd), "K": (STAGE_ROWS, 1, n), "xsol": (1, n),
              "x_old": (1, n), "x_new": (1, n), "Q": (DENSE_ROWS, n)}
    for name in ("g", "g_prev", "g_new", "g_end", "g_lo", "g_hi", "sgn", "g_base"):
        arrays[name] = (1, zc)
    return stack_form(ADAPTIVE_LOOP, "run_adaptive_one", parts,
                      [slot.width for slot in plan.slots], arrays, frozenset({"K", "Q"}))


def _step_end_crossings(gen) -> list[str]:
    """The crossing functions at an accepted step's end (t, x_new). The step's last evaluation,
    its FSAL stage, was at that (t, x): when it computed every output that varies between major
    steps (each is read by a stage), their buffers hold what the outputs site would compute
    again there, bit for bit, and g is evaluated on them alone; else (or in a fixed-step run,
    which evaluates no FSAL stage) the outputs site computes them first (mode 3)."""
    crossings = gen.zero_crossing_body("te")
    if not crossings or not all(step.at_stages for step in gen.plan.output_steps if step.varies):
        return ["mode = 3"]
    return ["if fixed:", "    mode = 3", "else:"] + indent(crossings, 4)


_EVENT_TASKS = re.compile(r"^ *# events\{\n(.*?)^ *# \}events\n", re.S | re.M)
"""The loop's event tasks (locating a crossing, the event's major step), between these markers:
left out of a plan without zero crossings, whose module then compiles in less time."""


def _render_python_events_at_t() -> list[str]:
    """The events at t of a major step: g at t against its baseline; Python runs the phase
    (Simulation._phase_events_at_t: the stop condition at the start, the blocks' reactions, the
    baseline's probe a moment later) when there is something to run, at the first major step,
    at a crossing caused by a jump at t, and at a function exactly zero or just fired."""
    return ["if resume == 0 and n_zc > 0:",
            "    if first != 0 or have_gprev == 0 or crossed_into(g_prev, g, directions, "
            "ev_mask) or baseline_needed(g, g_prev):",
            "        resume = 1",
            "        status = 6",
            "        break",
            "    copy2d(g_prev, g)",
            "    leaving = 0"]


def _finish_log(gen) -> list[str]:
    """Simulation._finish_log at a stop: the log's last sample at t unless the log reaches t
    (final_logged tells Python that sample's time is t, off the grid)."""
    return ["if not (log_pos > 0 and log_times[log_pos - 1] == t) and log_pos < n_log:"] + \
        indent(gen.record_body(), 4) + ["    log_pos += 1", "    final_logged = 1"]


def _fire_events(gen) -> list[str]:
    """Simulation.fire_events at t: counted as an event in a row (count_event_in_a_row: at
    MAX_CONSECUTIVE_EVENTS the loop returns CHATTERING, for Python to raise the error), then the
    blocks' events noted and their reactions."""
    return [f"if t - last_event_t <= {CONSECUTIVE_EVENT_SPAN!r} * max(1.0, abs(t)):",
            "    in_a_row += 1",
            "else:",
            "    in_a_row = 0",
            "last_event_t = t",
            f"if in_a_row >= {MAX_CONSECUTIVE_EVENTS}:",
            f"    status = {CHATTERING}",
            "    break"] + gen.fire_events_body()


def _stop(gen) -> list[str]:
    return ["if stop_now:"] + indent(_finish_log(gen) + ["status = 1", "break"], 4)


def _render_events_at_t(gen) -> list[str]:
    """The events at t of a major step in compiled code (Simulation._phase_events_at_t): the
    stop condition at the first major step, the reactions to functions that crossed since the
    baseline (after which the outputs and g at t are computed again: resume 3), then the new
    baseline, with the probe a moment later (task 20) when a function is zero or has fired. A
    step with nothing of that keeps g as its baseline at once."""
    check = ["stop_now = False",
             "if first != 0:", "    first = 0"] + indent(gen.stop_at_start_body(), 4) + \
        _stop(gen) + \
        ["if have_gprev != 0:",
         "    fired_before(g_prev, fired)",
         "    if crossed_into(g_prev, g, directions, ev_mask):"] + \
        indent(_fire_events(gen) + ["have_f = 0"] + _stop(gen)
               + ["mark_fired(fired, ev_mask)", "resume = 3", "continue"], 8) + \
        ["else:", "    clear_fired(fired)"]
    return ["if (resume == 0 or resume == 3) and n_zc > 0:",
            "    if resume == 0 and first == 0 and have_gprev != 0 and not crossed_into("
            "g_prev, g, directions, ev_mask) and not baseline_needed(g, g_prev):",
            "        copy2d(g_prev, g)",
            "        leaving = 0",
            "    else:",
            "        if resume == 0:"] + indent(check, 12) + \
        ["        resume = 1",
         "        have_gprev = 1",
         "        if probe_needed(g, fired):",
         "            copy2d(g_base, g)",
         "            probe_kind = 1",
         "            probe_return = 1",
         "            mode = 1",
         "            task = 20",
         "            continue",
         "        copy2d(g_prev, g)",
         "        leaving = 0"]


def _render_event_reactions(gen) -> list[str]:
    """A located event's major step in compiled code, its outputs computed: the blocks'
    reactions (Simulation.fire_events); a terminal one computes the outputs again and takes the
    log's last sample; otherwise the baseline marks the fired functions (NaN: judged at the major
    step at the same t that follows), and an event off the tick grid gets its floor tick."""
    return ["if stopping:"] + indent(_finish_log(gen) + ["status = 1", "break"], 4) + \
        _fire_events(gen) + \
        ["have_f = 0",
         "if stop_now:", "    stopping = True", "    continue",
         "baseline_after_event(g_prev, ev_mask, g_end)",
         "if n < 0 and n_floor == -2:",
         "    n_floor = tick_at_or_before(t, num0, dnum, den)",
         "mode = 0",
         "resume = 0",
         "continue"]


ADAPTIVE_LOOP = """

@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, _nrt=False)
def {name}(budget, fstate, istate, per, off, hits, num0, dnum, den, stop_ceil, stop_tick,
           t_stop, breaks, break_ticks, log_times, xc, xd, s, p, logs, A, b, c, E, E3, P_rows,
           A_dense, c_dense, exponent, error_order, rtol, atol, max_step, K, xsol, x_old, x_new,
           Q, zero, held, g, g_prev, g_new, g_end, ev_mask, directions, zc_tol, has_modes,
           search_fs, search_is, g_lo, g_hi, cand, sgn, fixed, fired, g_base, x_probe, ev_times,
           ev_rows, log_table):
    \"\"\"At most `budget` solver steps of the run (engine/adaptive_loop.py); returns the status.

    mode 0: a major step at t (the outputs, the phases after them, the next major time, the
    solver's restart); mode 2: a log sample inside the last step, from its dense output; mode 3:
    the zero-crossing functions g at te (the outputs of every varying block, then g), on the
    last step's dense output; mode 4: the outputs of an event's major step, before Python runs
    the blocks' reactions; mode 1: the solver, task by task, each evaluation of the derivatives
    at (te, xc) into K[row] through the one evaluation site below. xc holds the state being
    evaluated; the solver's state is xsol. Rows of K: the stages, FSAL, the dense output's extra
    stages, f(t, x) (ROW_F), a scratch row. held: what the stages read at the end of the last
    interval (RunPlan.stage_held). g_prev: the crossing functions' baseline; g_new: their values
    at the end of the last step; g_end: at a located event, before its reactions; ev_mask: the
    event's functions. search_*, g_lo, g_hi, cand, sgn: the crossing search's state
    (solvers/events.py). resume: 1 after a major step's events at t ran, 2 after the loop or
    Python set the modes of the step ahead, 3 to compute a major step's outputs and g again
    after its events at t. Modes 5, 6 and 7 (reactions in kernels): the outputs a moment later
    with g (a baseline's probe), the major outputs a moment later without hits (the modes of the
    step ahead), the outputs at t again after either. fixed: a fixed-step run (euler ... rk4): every step goes from one major time to the next (the grid is one of the
    rates of per and off), is never rejected, its f(t, x) is evaluated anew at each major step
    (the solver restarts there), and a crossing is reported at the step's end, not located, as
    solvers/explicit.RungeKutta._grid_step and the scheduler's _advance do.\"\"\"{prologue}
{unpack}
    n_stages = b.shape[0]
    n_main = n_stages + 1
    n_zc = {n_zc}
    ROW_F = K.shape[0] - 2
    ROW_TMP = K.shape[0] - 1
    stages = K.reshape((K.shape[0], -1))
    xc_flat = xc.reshape(-1)
    xsol_flat = xsol.reshape(-1)
    x_old_flat = x_old.reshape(-1)
    x_new_flat = x_new.reshape(-1)
    n_log = log_times.shape[0]
    t, t1, h_next, t_old = fstate[0], fstate[1], fstate[2], fstate[3]
    n, n_floor, mode, have_f, log_pos = istate[0], istate[1], istate[2], istate[3], istate[4]
    nfev, nsteps, nrejected, major_steps = istate[5], istate[6], istate[7], istate[8]
    next_break, tick_next, floor_next, reason = istate[9], istate[10], istate[11], istate[12]
    resume, first, have_gprev, leaving = istate[13], istate[14], istate[15], istate[16]
    n_events, stopped_by, final_logged, in_a_row = istate[17], istate[18], istate[19], istate[20]
    last_event_t = fstate[4]
    ev_room = ev_times.shape[0] - 4 * g.shape[0] * g.shape[1]
    stop_now = stopping = False
    probe_kind = probe_return = 0
    task = 10
    status = 0
    done = 0
    major = False
    rejected = False
    locating = False
    log_incl = False
    log_after = 9
    h = h_taken = t_new = hh = h0 = d1 = error = te = t_ev = log_end = 0.0
    clipped = False
    i = r = row = at = 0
    while True:
        if mode != 1:
            if mode != 0 or resume == 0 or resume == 3:
                if mode == 0 or mode == 4:
                    te = t
                    major = True
                    if n >= 0:
                        rate_hits(n, per, off, hits)
                    else:
                        for q in range(hits.shape[0]):
                            hits[q] = False
                elif mode >= 5:                  # a probe's (5, 6) or the restore's (7) xc, te
                    major = mode == 6
                    if major:
                        for q in range(hits.shape[0]):
                            hits[q] = False
                else:
                    if mode == 2:
                        te = log_times[log_pos]
                    major = False
                    if te == t:
                        copy1d(xc_flat, xsol_flat)
                    elif te == t_old:
                        copy1d(xc_flat, x_old_flat)
                    elif P_rows.shape[0] > 0:
                        power_series_at(te, t_old, hh, x_old_flat, Q, xc_flat)
                    else:
                        hermite_at(te, t_old, hh, x_old_flat, xsol_flat, stages[0],
                                   stages[ROW_F], xc_flat)
                # the outputs: every block at a major step, the varying ones at a crossing
                # evaluation, those a logged signal reads (OutputStep.log_read) at a log sample
{outputs}
                if mode == 0 or mode == 3 or mode == 5:
                    # the zero-crossing functions
{crossings}
            if mode == 0:
{major}
                # advance: the next major time (the next sample hit, the stop time, or a
                # breakpoint before them), where the solver restarts from (t, x) with f(t, x)
                # evaluated anew and the step size kept
                t1, tick_next, floor_next, next_break = next_major_time(
                    n, n_floor, t, per, off, stop_ceil, stop_tick, t_stop, num0, dnum, den,
                    breaks, break_ticks, next_break)
                copy1d(xsol_flat, xc_flat)
                # a quiet hit (RunPlan.stage_held) keeps f(t, x) from the last step (FSAL)
{unchanged}
                if fixed:
                    have_f = 0
                mode = 1
                task = 10
                continue
            if mode == 4:                    # the event's reactions
{event_reactions}
            if mode == 3 or mode >= 5:       # read by the task that asked for it
                mode = 1
                continue
            # the log sample
{record}
            log_pos += 1
            if not (log_pos < n_log and (log_times[log_pos] < log_end
                                         or (log_incl and log_times[log_pos] == log_end))):
                mode = 1
                task = log_after
            continue
        # ---- the solver, task by task ----
        if task == 10:                               # a new step
            if done >= budget or n_events > ev_room:
                break
            task = 0 if have_f == 0 else (1 if math.isnan(h_next) else 2)
            continue
        if task == 2:                                # the step size to try
            h = min(h_next, max_step)
            rejected = False
            reason = 0
            task = 3
            continue
        if task == 3:                                # an attempt of step h
            if h < {spacings} * (np.nextafter(t, np.inf) - t):
                status = 3
                fstate[3] = h
                break
            t_new = t + h
            clipped = t_new >= t1 - {snap} * h
            if clipped:
                t_new = t1
            h_taken = t_new - t
            copy1d(stages[0], stages[ROW_F])
            i = 1
            task = 4 if n_stages > 1 else 5
            continue
        if task == 5:                                # the step's end state
            memberwise_stage_sum(xsol_flat, h_taken, b, stages, n_stages, x_new_flat)
            if all_finite(x_new):
                if fixed:                            # no error estimate: the step stands
                    error = 0.0
                    task = 7
                else:
                    task = 6
            elif fixed:
                status = 9
                fstate[3] = h_taken
                break
            else:
                error = np.inf
                task = 7
            continue
        if task == 7:                                # accept or reject
            if error < 1.0:
                if not fixed:
                    h_next = step_after_accept(error, exponent, rejected, h, h_taken, clipped)
                t_old = t
                copy1d(x_old_flat, xsol_flat)
                copy1d(xsol_flat, x_new_flat)
                copy1d(stages[ROW_F], stages[n_stages])
                t = t_new
                nsteps += 1
                done += 1
                hh = t - t_old
                locating = False
                if n_zc > 0:                         # g at the step's end
                    te = t
                    task = 12
{step_end_crossings}
                else:
                    task = 13
                continue
            nrejected += 1
            rejected = True
            h = step_after_reject(error, exponent, h_taken)
            reason = 0 if math.isfinite(error) else 1
            task = 3
            continue
        # events{{
        if task == 12:                               # a crossing in the step: locate it
            copy2d(g_new, g)
            if have_gprev != 0 and crossed_into(g_prev, g_new, directions, ev_mask):
                locating = True
                if fixed:                            # reported at the step's end
                    t_ev = t
                    task = 16
                elif P_rows.shape[0] > 0 and A_dense.shape[0] > 0:
                    r = 0
                    task = 8
                else:
                    task = 11
            else:
                task = 13
            continue
        # }}events
        if task == 13:                               # no event: the log samples of the step
            log_end = min(t, t1)
            log_incl = t < t1
            log_after = 9
            task = 9
            if log_pos < n_log and (log_times[log_pos] < log_end
                                    or (log_incl and log_times[log_pos] == log_end)):
                if P_rows.shape[0] > 0 and A_dense.shape[0] > 0:
                    r = 0
                    task = 8
                else:
                    task = 11
            continue
        if task == 11:                               # the dense output, then the log samples
            for j in range(P_rows.shape[0]):
                memberwise_stage_sum(zero, hh, P_rows[j], stages, P_rows.shape[1], Q[j])
            if locating:
                task = 14
            else:
                mode = 2
            continue
        # events{{
        if task == 14:                               # the crossing search's start
            if crossing_search_begin(t_old, t, g_prev, g_new, directions,
                                     zc_tol * max(1.0, abs(t)), search_fs, search_is, g_lo,
                                     g_hi, cand, sgn):
                task = 15
            else:
                t_ev = t
                crossed_into(g_prev, g_new, directions, ev_mask)
                task = 16
            continue
        if task == 15:                               # the search, one trial at a time
            if crossing_search_next(search_fs, search_is, g_lo, g_hi, cand, sgn, g) == 1:
                te = search_fs[8]
                mode = 3
            else:
                t_ev = search_fs[1]
                crossing_mask(g_hi, cand, sgn, ev_mask)
                task = 16
            continue
        if task == 16:                               # the log samples before the event
            log_end = t_ev
            log_incl = False
            log_after = 17
            task = 17
            if log_pos < n_log and log_times[log_pos] < log_end:
                mode = 2
            continue
        if task == 17:                               # the state at the event, and g there
            if t_ev == t:
                copy1d(xc_flat, xsol_flat)
            elif t_ev == t_old:
                copy1d(xc_flat, x_old_flat)
            elif P_rows.shape[0] > 0:
                power_series_at(t_ev, t_old, hh, x_old_flat, Q, xc_flat)
            else:
                hermite_at(t_ev, t_old, hh, x_old_flat, xsol_flat, stages[0], stages[ROW_F],
                           xc_flat)
            if not (all_finite(xc) and all_finite(xd)):
                t = t_ev
                status = 2
                break
            task = 18
            if t_ev != t:
                te = t_ev
                mode = 3
            else:
                copy2d(g, g_new)
            continue
        if task == 18:                               # the event's major step
            copy2d(g_end, g)
            if t_ev == t1:
                n = tick_next
                n_floor = floor_next
            else:
                n = -1
                n_floor = -2                         # Python reads the tick before t_ev
            t = t_ev
            have_f = 0
            mode = 4
            task = 10
            continue
        # }}events
        if task == 9:                                # the step is done
            copy1d(xc_flat, xsol_flat)
            if not (all_finite(xc) and all_finite(xd)):
                status = 2
                break
            task = 10
            if t >= t1:
                t = t1
                n = tick_next
                n_floor = floor_next
                mode = 0
                if n_zc > 0:
                    copy2d(g_prev, g_new)
                # what the stages read, to tell a quiet hit at the major step
{stash}
            elif n_zc > 0:
                if any_zero(g_new):                  # the baseline needs the probe
{step_end_baseline}
                copy2d(g_prev, g_new)
            continue
        # events{{
        if task == 21:                               # the probe's outputs done: x back
            copy1d(xc_flat, x_probe)
            te = t
            mode = 7
            task = 22
            continue
        if task == 22:                               # the probe and the restore done
            if probe_kind == 1:                      # g holds the functions a moment later
                leaves = baseline_from_probe(g_prev, g_base, g, fired)
                if probe_return == 1:                # the step-end baseline's is not asked
                    leaving = 1 if leaves else 0
            if probe_return == 3:
                task = 10
            else:
                mode = 0
                resume = probe_return
            continue
        # }}events
        # an evaluation: its state into xc, its time te and its row of K
        if task == 0:                                # f(t, x) at the solver's restart
            copy1d(xc_flat, xsol_flat)
            te = t
            row = ROW_F
        elif task == 1:                              # the first step's probe
            h0, d1 = initial_step_probe(xsol_flat, stages[ROW_F], rtol, atol, t1 - t, xc_flat)
            te = t + h0
            row = ROW_TMP
        elif task == 4:                              # stage i
            memberwise_stage_sum(xsol_flat, h_taken, A[i], stages, i, xc_flat)
            te = t_new if c[i] == 1.0 else min(t + c[i] * h_taken, t_new)
            row = i
        elif task == 6:                              # the last stage (FSAL)
            copy1d(xc_flat, x_new_flat)
            te = t_new
            row = n_stages
        elif task == 20:                             # a probe's f(t, x) (_a_moment_later)
            copy1d(x_probe, xc_flat)
            te = t
            row = ROW_TMP
        else:                                        # task 8: an extra stage of the dense output
            memberwise_stage_sum(x_old_flat, hh, A_dense[r], stages, n_main + r, xc_flat)
            te = t_old + c_dense[r] * hh
            row = n_main + r
        # the one evaluation site: stage outputs, then every derivative, at (te, xc)
{evaluate}
        if task == 20:                               # the state a moment later, then its outputs
            hh_probe = {probe} * max(1.0, abs(t))
            for q in range(xc_flat.shape[0]):
                xc_flat[q] = x_probe[q] + hh_probe * stages[ROW_TMP, q]
            te = t + hh_probe
            mode = 5 if probe_kind == 1 else 6
            task = 21
            continue
        nfev += 1
        if task == 0:
            if not all_finite(K[ROW_F]):
                status = 4
                break
            have_f = 1
            task = 1 if math.isnan(h_next) else 2
        elif task == 1:
            h_next = initial_step_choice(xsol_flat, stages[ROW_F], stages[ROW_TMP], rtol, atol,
                                         t1 - t, max_step, h0, d1, error_order)
            task = 2
        elif task == 4:
            i += 1
            if i == n_stages:
                task = 5
        elif task == 6:
            error = memberwise_error_norm(E, E3, stages, h_taken, xsol_flat, x_new_flat, rtol,
                                          atol)
            task = 7
        else:
            r += 1
            if r == A_dense.shape[0]:
                task = 11
    fstate[0], fstate[1], fstate[2] = t, t1, h_next
    if status != 3:
        fstate[3] = t_old
    istate[0], istate[1], istate[2], istate[3], istate[4] = n, n_floor, mode, have_f, log_pos
    istate[5], istate[6], istate[7], istate[8] = nfev, nsteps, nrejected, major_steps
    istate[9], istate[10], istate[11], istate[12] = next_break, tick_next, floor_next, reason
    istate[13], istate[14], istate[15], istate[16] = resume, first, have_gprev, leaving
    istate[17], istate[18], istate[19], istate[20] = n_events, stopped_by, final_logged, in_a_row
    fstate[4] = last_event_t
    return status
"""


def loop_arguments(backend, sim, members: int):
    """The arguments of run_adaptive after `budget`, for Simulation sim (started) with scratch
    (stages, dense output, crossing search) for `members` members: the run's own B, or 1 for
    the loop over a per-member batch's rows (engine/adaptive_members.py); and the arrays Python
    reads back: (arguments, fstate, istate, xsol, ev). None when its ticks are beyond exact
    float integers (the scheduler's loop then runs it)."""
    s, plan, ctx = sim.settings, backend.plan, backend.context
    tab = SOLVERS[s.solver].tableau
    clock = loop_clock(sim, plan)
    if clock is None:
        return None
    num0, dnum, den, stop_ceil, int_stop, breaks, break_ticks, per, off, hits = clock
    fixed = not SOLVERS[s.solver].adaptive
    if fixed:
        # the fixed-step grid is a major time as a rate's hit is (Simulation._next_major_time);
        # breakpoints are not (a fixed-step run steps over them, as the scheduler's does)
        per = np.append(per, plan.step_ticks)
        off = np.append(off, 0)
        hits = np.zeros(len(per), dtype=np.bool_)
        breaks, break_ticks = breaks[:0], break_ticks[:0]
    B, n_x = members, ctx.xc.shape[1]
    K = np.zeros((stage_rows(tab), B, n_x))
    P_rows = tab.P_rows if tab.P_rows is not None else np.zeros((0, 0))
    A_dense = tab.A_dense if tab.A_dense is not None else np.zeros((0, 0))
    c_dense = tab.c_dense if tab.c_dense is not None else np.zeros(0)
    E3 = tab.E3 if tab.E3 is not None else np.zeros(0)
    arrays = [np.zeros((B, n_x)) for _ in range(3)]          # xsol, x_old, x_new
    Q = np.zeros((len(P_rows), B * n_x))
    zero = np.zeros(B * n_x)
    held = held_buffer(backend.module_plan, B)      # what the module's quiet-hit test reads
    logs = tuple(sim.recorder.data[name] for name, _ in sim.recorder.sources)
    max_step = np.inf if fixed else float(s.max_step)    # a fixed step is the step, always
    h_first = np.nan if s.step is None else \
        float(s.step) if fixed else min(float(s.step), float(s.max_step))
    fstate = np.array([float(s.start), float(s.start), h_first, np.nan, -np.inf])
    istate = np.zeros(len(ISTATE), dtype=np.int64)
    istate[_I["tick_next"]] = istate[_I["floor_next"]] = -1
    istate[_I["first"]] = 1
    error_order = tab.error_order or 0             # 0: a fixed-step method, no error estimate
    exponent = -1.0 / (error_order + 1)
    E = tab.E if tab.E is not None else np.zeros(0)
    ev = EventArrays.for_run(ctx.g[:B], sim.zc_directions, B * n_x)
    rest = (fstate, istate, per, off, hits, num0, dnum, den,
            stop_ceil, int_stop, float(s.stop), breaks, break_ticks, plan.log_grid,
            ctx.xc, ctx.xd, backend.s, backend.p, logs, tab.A, tab.b, tab.c, E, E3,
            P_rows, A_dense, c_dense, exponent, error_order, float(s.rtol),
            float(s.atol), max_step, K, *arrays, Q, zero, held, ctx.g, ev.g_prev,
            ev.g_new, ev.g_end, ev.mask, ev.directions, float(s.zero_crossing_tol),
            sim._has_modes, ev.search_fs, ev.search_is, ev.g_lo, ev.g_hi, ev.cand, ev.sign, fixed,
            ev.fired, ev.g_base, ev.x_probe, ev.times, ev.rows, log_table.NO_TABLE)
    return rest, fstate, istate, arrays[0], ev


def run(backend, sim) -> RunOutput | None:
    """The run of Simulation sim (started: initial states and constant outputs set) in the
    module's run_adaptive, chunk by chunk; None when its ticks are beyond exact float integers
    (the scheduler's loop then runs it). Failures raise the errors the scheduler's loop raises,
    with the same text."""
    s, ctx = sim.settings, backend.context
    prepared = loop_arguments(backend, sim, ctx.xc.shape[0])
    if prepared is None:
        return None
    rest, fstate, istate, xsol, ev = prepared
    B, n_x = ctx.xc.shape
    hits = rest[4]
    crossings = backend.module_plan.crossings

    def args(budget):
        return (budget,) + rest

    progress = Progress(s.start, s.stop, s.progress)
    status, interrupted, stopped = DONE, False, False
    budget = first_chunk(B * n_x, 16)
    try:
        loop = backend.loop_entry(backend.loop, args(0))
        while status == DONE:
            if sim.stop_requested:
                interrupted = True
                break
            started = _time.perf_counter()
            status = loop(*args(budget))
            elapsed = _time.perf_counter() - started
            ev.flush(istate, _I["n_events"], sim.events, crossings)
            if status in SERVICES:
                stopped = _serve(sim, status, fstate, istate, hits, ev)
                status = FINISHED if stopped else DONE
                continue
            budget = next_chunk(budget, elapsed, 16)
            progress.update(float(fstate[0]), force=True)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
    counters = dict(zip(ISTATE, istate.tolist()))
    t = float(fstate[0])
    if counters["stopped_by"]:    # a block stopped the run in compiled code
        stopped = True
        sim.stopped_by = crossings[counters["stopped_by"] - 1]
        sim.recorder.count = counters["log_pos"]
        if counters["final_logged"]:                 # the last sample, at t off the log grid
            sim.recorder.times = sim.recorder.times.copy()
            sim.recorder.times[counters["log_pos"] - 1] = t
    elif not stopped:             # a terminal event's last sample is the recorder's own
        sim.recorder.count = counters["log_pos"]
    if interrupted:
        sim.log_final_state(t, xsol)
    elif status == NOT_FINITE:
        sim.check_finite(t)
    elif status == CHATTERING:
        sim.chattering_error(t)
    elif status in (UNDERFLOW, BAD_DERIVATIVE, STEP_NOT_FINITE):
        _fail(sim, status, counters["reason"], t, float(fstate[3]), xsol)
    t_log, data = sim.recorder.finished()
    return RunOutput(t_log, data, sim.events, run_stats(istate, len(sim.events)), interrupted,
                     sim.stopped_by)


def run_stats(counters, events: int) -> dict:
    """A compiled run's statistics from its counters (an ISTATE row, or rows summed) and its
    number of events."""
    return {"major_steps": int(counters[_I["major_steps"]]), "nfev": int(counters[_I["nfev"]]),
            "nsteps": int(counters[_I["nsteps"]]), "nrejected": int(counters[_I["nrejected"]]),
            "events": events, "mode": "compiled"}


def _serve(sim, status: int, fstate, istate, hits, ev: EventArrays) -> bool:
    """What run_adaptive asked Python for (status in SERVICES), with the scheduler's own methods
    on the run's arrays, which the loop shares: the blocks' reactions to a located event
    (on_event, a Python method), a major step's events at t (Simulation._phase_events_at_t),
    the modes of the step ahead (Simulation._modes_ahead), the baseline of a function exactly
    zero at a step's end (Simulation._baseline). True when a block stopped the run (the log's
    last sample is then taken here, as the scheduler's loop takes it)."""
    from .scheduler import _Step
    t = float(fstate[0])
    sim.recorder.count = int(istate[_I["log_pos"]])
    events_before = len(sim.events)
    if status == EVENTS_AT_T:
        step = _Step(t, None, hits.copy(), None, True, None)
        step.first = bool(istate[_I["first"]])
        step.g_prev = ev.g_prev.copy() if istate[_I["have_gprev"]] else None
        if not sim._phase_events_at_t(step):
            return True
        ev.g_prev[:] = step.g_prev
        istate[_I["first"]] = 0
        istate[_I["have_gprev"]] = 1
        istate[_I["leaving"]] = int(step.leaving)
    elif status == MODES_AHEAD:
        sim._modes_ahead(t)
    elif status == BASELINE:
        ev.g_prev[:] = sim._baseline(t, ev.g_new.copy())[0]
    else:                                     # EVENT: the reactions of a located event
        mask = ev.mask.copy()
        if sim.fire_events(t, mask):
            sim.backend.outputs_major(t, hits)
            sim._finish_log(t)
            return True
        ev.g_prev[:] = np.where(mask, np.nan, ev.g_end)
        if istate[_I["n"]] < 0 and istate[_I["n_floor"]] == -2:
            istate[_I["n_floor"]] = sim.plan.timebase.tick_at_or_before(t)
        istate[_I["mode"]] = 0
        istate[_I["resume"]] = 0
    if len(sim.events) != events_before:      # an event fired: the solver restarts (no FSAL)
        istate[_I["have_f"]] = 0
    return False


def _fail(sim, status: int, reason: int, t: float, h: float, x: np.ndarray) -> None:
    """Raise the scheduler's error for a solver that cannot continue at (t, x): the solver's own
    message (Solver._fail), the block blamed as the scheduler's loop blames it."""
    s = sim.settings
    solver = make_solver(s.solver, sim.backend.rhs, t, x.copy(), float(s.stop),
                         step=None if s.step is None else float(s.step),
                         rtol=s.rtol, atol=s.atol, max_step=s.max_step)
    try:
        if status == STEP_NOT_FINITE:       # solvers/explicit.RungeKutta._grid_step's words
            solver._fail("the state became non-finite (NaN or Inf)", h)
        if status == BAD_DERIVATIVE:
            solver._fail("the derivative at the current state is not finite")
        why = "the tolerance cannot be met" if reason == 0 else \
            "the state or its derivative is not finite"
        solver._fail(f"step size underflow, {why}", h)
    except SolverError as err:
        sim.blame_non_finite(solver, err)
        raise err.located(where=sim.cd.spec.where.get("simulation.solver"))


__all__ = ["supports", "render", "run", "loop_arguments", "run_stats", "ADAPTIVE_LOOP", "ISTATE"]
