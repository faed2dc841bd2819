"""The time loop of a run: the phases of engine/major_step.py at exact hits, continuous
integration between them with event location, and logging on its own grid, over the plan of the
run (engine/plan.py) and one of its two backends. The only place where blocks, time and solvers
meet; the numba backend's fixed-step loop is its rendering of the same phases.

docs/semantics.md states the semantics in words.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..diagram.compiler import CompiledDiagram
from ..diagram.settings import LogSettings, SimulationSettings
from ..errors import NonFiniteStateError, SampleTimeError, SolverError
from ..solvers import SOLVERS, make_solver
from ..solvers.base import FINISHED
from ..solvers.events import find_first_crossing
from .context import RunContext
from .major_step import phase_handlers
from .plan import make_plan
from .progress import Progress
from .recorder import Recorder
from .run_output import Event, RunOutput
from .run_size import check_run_length

FIXED_STEP_DEFAULT_DIVISIONS = 1000
"""A fixed-step run with no step and no discrete block takes (stop - start) / this."""

ADAPTIVE_LOG_POINTS = 1001
"""Without log.every, an adaptive run logs on this many evenly spaced points."""

CROSSING_MAX_STEP_DIVISIONS = 50
"""An adaptive run with zero-crossing functions and no max_step steps at most (stop - start) / this
(Simulink's automatic max step): crossings are checked at step ends, and a mode held through the
stages hides the crossing function's input from the step-size control."""

PROBE_STEP = 1e-8
"""Relative time step (of max(1, |t|) s) at which a crossing function that sits exactly on zero
is evaluated to learn the direction it leaves in (Simulation._baseline)."""

MAX_CONSECUTIVE_EVENTS = 1000
"""Events in a row, each within CONSECUTIVE_EVENT_SPAN of the last, after which a run stops with
an error instead of hanging (Simulink's limit on consecutive zero crossings): a switch that
chatters at a discontinuity (Zeno behaviour) would otherwise fire forever without time
advancing."""

CONSECUTIVE_EVENT_SPAN = 1e-9
"""Relative time (of max(1, |t|) s) within which an event follows the last one in a row."""


@dataclass(frozen=True)
class RunSettings:
    """One run's timing, as the scheduler follows it: the simulation settings with the fixed step
    and the log interval resolved against the diagram's sample times (exact Fractions, s).

    start, stop: the span; solver: its name; step: the fixed step (None for an adaptive solver);
    rtol, atol, max_step, zero_crossing_tol: as SimulationSettings; log_every: the log interval;
    progress: show a progress bar (None: only on an interactive terminal).
    """

    start: Fraction
    stop: Fraction
    solver: str
    step: Fraction | None
    rtol: float
    atol: float
    max_step: float
    zero_crossing_tol: float
    log_every: Fraction
    progress: bool | None


def run_settings(settings: SimulationSettings, log: LogSettings,
                 cd: CompiledDiagram) -> RunSettings:
    """The run's timing for a compiled diagram: a fixed-step solver without simulation.step takes
    the fastest discrete period (else 1/1000 of the span); log.every defaults to the fixed step,
    or to 1/1000 of an adaptive run's span, and must be a multiple of a fixed step; an adaptive
    run with zero crossings and no max_step takes 1/CROSSING_MAX_STEP_DIVISIONS of the span.
    A run whose major steps or log grid would exceed their limits is refused here, before anything
    of it is allocated (engine/run_size.py)."""
    step = None
    if not settings.adaptive:
        step = settings.step
        if step is None:
            periods = [st.period for st in cd.sample_times.values() if st.kind == "discrete"]
            step = min(periods) if periods else \
                (settings.stop - settings.start) / FIXED_STEP_DEFAULT_DIVISIONS
    every = log.every
    if every is None:
        every = step if step is not None else \
            (settings.stop - settings.start) / (ADAPTIVE_LOG_POINTS - 1)
    elif step is not None and (every / step).denominator != 1:
        raise SampleTimeError(
            f"log.every ({float(every)} s) must be a multiple of the fixed step ({float(step)} s)",
            where=log.where.get("every", settings.loc("step")))
    max_step = settings.max_step
    if settings.adaptive and cd.n_zc and max_step == float("inf"):
        max_step = float(settings.stop - settings.start) / CROSSING_MAX_STEP_DIVISIONS
    run = RunSettings(settings.start, settings.stop, settings.solver,
                      step if step is not None else settings.step, settings.rtol,
                      settings.atol, max_step, settings.zero_crossing_tol, every,
                      settings.progress)
    check_run_length(settings, log, run, cd)
    return run


class _Step:
    """Where the time loop stands: the major time t (s), its tick n (None off the tick grid,
    after an event), the rates that hit there, the crossing functions' values after the last
    major step (None when there is no baseline), and the run's solver and counters."""

    __slots__ = ("t", "n", "hits", "g_prev", "leaving", "first", "solver", "adaptive", "stats",
                 "progress", "integrating")

    def __init__(self, t, n, hits, solver, adaptive, progress):
        self.t, self.n, self.hits = t, n, hits
        self.g_prev = None
        self.leaving = False      # a crossing function leaves zero at t (Simulation._baseline)
        self.first = True
        self.integrating = False  # inside advance: the solver holds the state reached
        self.solver, self.adaptive = solver, adaptive
        self.stats = {"major_steps": 0}
        self.progress = progress


class Simulation:
    """One run of a compiled diagram: its plan, its arrays (the Context) and the backend that
    evaluates the blocks (PythonBackend, interpreted; NumbaBackend, compiled), run by the time
    loop below. settings: the RunSettings; logged: {signal name: (block, output)}."""

    stop_requested = False
    """Set from another thread to end a run as Ctrl-C does: at the next chunk of a compiled loop,
    at the next major step of this loop."""

    members_loop = None
    """(MembersLoop, alone) for a part of a per-member batch whose members run one after another
    in one compiled loop (engine/adaptive_members.py), else None."""

    def __init__(self, cd: CompiledDiagram, settings: RunSettings,
                 logged: dict[str, tuple[str, str]], backend=None, like=None):
        """like: the Simulation of another member of a per-member batch (the same structure,
        one member each), whose plan, backend type and compiled module this one shares."""
        from .python_backend import PythonBackend
        self.cd = cd
        self.settings = settings
        self.plan = like.plan if like is not None else make_plan(
            cd, settings, logged, compiled=getattr(backend, "compiled", False))
        self.context = RunContext(self.plan)
        self.records = cd.records()   # the kernels' parameter records of this run's values
        for name, blk in cd.blocks.items():
            blk.take_run_settings(settings, *self._extra(name))
        if like is None:
            self.backend = (backend or PythonBackend)(self.plan, self.context, cd.blocks,
                                                      self.records)
        else:
            self.backend = like.backend.__class__(self.plan, self.context, cd.blocks,
                                                  self.records, like=like.backend)
        self.events: list[Event] = []
        self.stopped_by: str | None = None
        self.recorder = Recorder(self.context.logged(self.plan), self.plan.log_grid)
        # each block's directions at its columns of g (cd.zc_slices, in file order), not in the
        # order the blocks run (plan.crossings, sorted): the two differ when a block with
        # crossings reads another that comes later in the file
        self.zc_directions = np.zeros(cd.n_zc, dtype=np.int64)
        for n in self.plan.crossings:
            start, stop = cd.zc_slices[n]
            self.zc_directions[start:stop] = np.asarray(cd.blocks[n].zc_directions,
                                                        dtype=np.int64).reshape(-1)
        self.breaks = sorted({float(t) for n, b in cd.blocks.items() if b.enabled
                              for t in b.breakpoints(float(settings.start), float(settings.stop),
                                                     *self._extra(n))})
        self._phases = tuple(handler for _, handler in phase_handlers(
            "scheduler", lambda name: getattr(self, "_phase_" + name, None)))
        tb = self.plan.timebase
        self._has_modes = any(o.modes for o in self.plan.output_steps)
        self._no_hits = np.zeros(len(tb.rates), dtype=np.bool_)

    # the Context's arrays and the plan's time base, by their short names
    xc = property(lambda self: self.context.xc)
    xd = property(lambda self: self.context.xd)
    views = property(lambda self: self.context.views)
    timebase = property(lambda self: self.plan.timebase)
    log_grid = property(lambda self: self.plan.log_grid)

    def new_log(self, into: dict[str, np.ndarray] | None = None) -> None:
        """Log the next run into new arrays (a Result keeps the arrays of its own run), or into
        the arrays `into` ({signal name: (B, n_times, width)}, Recorder)."""
        self.recorder = Recorder(dict(self.recorder.sources), self.plan.log_grid, into)

    def _extra(self, name: str) -> tuple:
        """The trailing arguments of block `name`'s Python-side calls (initial_state, on_event,
        breakpoints, stop_requested): its run's record, for a block whose values are data."""
        record = self.records.get(name)
        return () if record is None else (record,)

    # ---- the run ------------------------------------------------------------------------------
    def members_independent(self) -> bool:
        """True when a batch may be split into parts run apart with the same numbers and the run
        releases the GIL: the backend runs the whole loop itself (the compiled fixed-step loop,
        where every member steps on one grid with nothing shared)."""
        return self.backend.runs_whole_loop

    def start(self) -> None:
        """The start of every run: initial states, then the constant blocks' outputs."""
        self.events = []
        self.stopped_by = None
        self.events_in_a_row = 0    # fire_events' count of events each close to the last
        self.last_event_t = -np.inf
        self._stage_reads = None     # what a stage read at the end of the last step (_advance)
        views, blocks = self.context.views, self.cd.blocks
        # every run from zero, as the first (a block fills only the states it gives values to;
        # a signal first computed at a later hit reads zero until then): a held discrete state
        # kept from the last run had made W2's second run differ from its first by 1e-4 rad
        self.context.clear()
        for name in self.plan.order:
            xc, xd, *_ = views[name]
            blocks[name].initial_state(xc, xd, *self._extra(name))
        for name in self.plan.constant_outputs:      # computed once, in Python, in both modes
            blocks[name].output(float(self.settings.start), *views[name][:4], *self._extra(name))

    def run(self) -> RunOutput:
        """One run from the initial states: the backend's own loop when it has one for this run,
        else the major steps of MAJOR_STEP, one after another, until a phase ends the run."""
        self.start()
        if getattr(self.backend, "loop", None):
            out = self.backend.run_loop(self)
            if out is not None:
                return out
        s = self.settings
        adaptive = SOLVERS[s.solver].adaptive
        solver = None
        if self.plan.n_xc > 0:
            solver = make_solver(s.solver, self.backend.rhs, float(s.start), self.xc.copy(),
                                 float(s.stop), step=float(s.step) if s.step is not None else None,
                                 rtol=s.rtol, atol=s.atol, max_step=s.max_step)
        step = _Step(float(s.start), 0, self.hits_at(0), solver, adaptive,
                     Progress(s.start, s.stop, s.progress))
        interrupted = False
        try:
            while self._major_step(step):
                pass
        except KeyboardInterrupt:
            interrupted = True
            self._log_reached(step, solver)
        finally:
            step.progress.close()
        stats = step.stats
        if solver is not None:
            stats.update(nfev=solver.nfev, nsteps=solver.nsteps, nrejected=solver.nrejected)
        stats["events"] = len(self.events)
        stats["mode"] = self.backend.mode          # which execution mode ran the blocks
        t_log, data = self.recorder.finished()
        return RunOutput(t_log, data, self.events, stats, interrupted, self.stopped_by)

    def _major_step(self, step: _Step) -> bool:
        """The phases of one major step at step.t; False when one of them ends the run."""
        for phase in self._phases:
            if not phase(step):
                return False
        return True

    # ---- the phases of a major step (engine/major_step.py), each True to go on ----------------
    def _phase_outputs(self, step: _Step) -> bool:
        self.backend.outputs_major(step.t, step.hits)
        return True

    def _phase_events_at_t(self, step: _Step) -> bool:
        if not self.plan.crossings:
            return True
        t = step.t
        if step.first:
            step.first = False
            if self._stop_requested_at_start(t):
                self._finish_log(t)
                return False
        g_now = self.backend.zero_crossings(t)
        fired = None
        if step.g_prev is not None:
            fired = np.isnan(step.g_prev)        # the functions an event at t has fired
            mask = self.crossed(step.g_prev, g_now)
            if mask.any():
                if self.fire_events(t, mask):
                    self._finish_log(t)
                    return False
                fired |= mask
                self.backend.outputs_major(t, step.hits)
                g_now = self.backend.zero_crossings(t)
        step.g_prev, step.leaving = self._baseline(t, g_now, fired)
        return True

    def _phase_log(self, step: _Step) -> bool:
        if self.recorder.next_time == step.t:
            self.recorder.record()
        return True

    def _phase_updates(self, step: _Step) -> bool:
        self.backend.run_updates(step.t, step.hits)
        return True

    def _phase_finite_check(self, step: _Step) -> bool:
        self.check_finite(step.t)
        return True

    def _phase_stop(self, step: _Step) -> bool:
        if self.stop_requested:         # from another thread: as Ctrl-C
            raise KeyboardInterrupt
        step.stats["major_steps"] += 1
        step.progress.update(step.t)
        return step.t < float(self.settings.stop)

    def _phase_advance(self, step: _Step) -> bool:
        t = step.t
        if step.leaving and self._has_modes:
            self._modes_ahead(t)
        step.leaving = False
        next_tick, t_next = self._next_major_time(step.n, t)
        if step.adaptive:
            bp = next((b for b in self.breaks if t < b < t_next), None)
            if bp is not None:
                t_next, next_tick = bp, None
        step.integrating = True
        t_end, event_mask, g_end = self._advance(step.solver, t, t_next, step.adaptive,
                                                 step.g_prev)
        # the time reached before integrating ends: an interrupt in between logs the solver's
        # own (t, x), one after it the context's state at step.t, never a state ahead of its time
        step.t = t_end
        step.integrating = False
        step.n = next_tick if t_end == t_next and isinstance(next_tick, int) else None
        step.hits = self.hits_at(step.n)
        if event_mask is not None:
            # the event's major step: outputs at the event state (modes switch here), then its
            # reactions; the next major step (at the same t) computes the outputs again, and a
            # function the event did not fire that the switch or the reactions moved across zero
            # (a mode's jump downstream) fires there, against its value before the event
            self.backend.outputs_major(t_end, step.hits)
            if self.fire_events(t_end, event_mask):
                self.backend.outputs_major(t_end, step.hits)
                self._finish_log(t_end)
                return False
            step.g_prev = np.where(event_mask, np.nan, g_end)
        elif g_end is not None:
            step.g_prev = g_end
        return True

    # ---- time -----------------------------------------------------------------------------------
    def hits_at(self, n: int | None) -> np.ndarray:
        """Which rates hit at tick n (none off the tick grid, n None)."""
        rates = self.plan.timebase.rates
        return np.array([n is not None and r.hits(n) for r in rates], dtype=np.bool_)

    def _next_major_time(self, n: int | None, t: float):
        """(tick, time in s) of the first major time after t: the next sample hit, fixed-step
        grid point or the stop time. n: the tick of t, None when t is off the tick grid (after
        an event; the tick before t is taken)."""
        tb = self.plan.timebase
        if n is None:
            n = tb.tick_at_or_before(t)
        stop_tick, step_ticks = self.plan.stop_tick, self.plan.step_ticks
        next_tick = min([r.next_hit(n) for r in tb.rates] + [stop_tick])
        if step_ticks is not None:
            next_tick = min(next_tick, (n // step_ticks + 1) * step_ticks)
        if next_tick == stop_tick:
            return next_tick, float(self.settings.stop)
        return next_tick, tb.time(next_tick)

    # ---- events ---------------------------------------------------------------------------------
    def crossed(self, g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
        """(B, n_zc) mask of sign changes from g0 to g1 in each function's direction."""
        rising = (g0 < 0) & (g1 >= 0)
        falling = (g0 > 0) & (g1 <= 0)
        d = self.zc_directions
        return np.where(d > 0, rising, np.where(d < 0, falling, rising | falling))

    def fire_events(self, t: float, mask: np.ndarray) -> bool:
        """Call on_event of every block with a crossing in mask; True when one asks to stop.
        Raises SolverError at the MAX_CONSECUTIVE_EVENTS-th event in a row."""
        self.count_event_in_a_row(t)
        stop = False
        cd = self.cd
        for name in self.plan.crossings:
            e, f = cd.zc_slices[name]
            sub = mask[:, e:f]
            if not sub.any():
                continue
            for member, index in zip(*np.nonzero(sub)):
                self.events.append(Event(t, name, int(index), int(member)))
            xc, xd, u, _, _, _ = self.context.views[name]
            if cd.blocks[name].on_event(t, xc, xd, u, sub, *self._extra(name)):
                stop = True
                self.stopped_by = name
        return stop

    def count_event_in_a_row(self, t: float) -> None:
        """Count the reactions at t as one more event in a row when within
        CONSECUTIVE_EVENT_SPAN max(1, |t|) s of the last (else the first of a new row); at
        MAX_CONSECUTIVE_EVENTS, chattering_error. The compiled loop keeps the same count."""
        if t - self.last_event_t <= CONSECUTIVE_EVENT_SPAN * max(1.0, abs(t)):
            self.events_in_a_row += 1
        else:
            self.events_in_a_row = 0
        self.last_event_t = t
        if self.events_in_a_row >= MAX_CONSECUTIVE_EVENTS:
            self.chattering_error(t)

    def chattering_error(self, t: float) -> None:
        """Raise the SolverError of a run whose events come without time advancing, naming the
        blocks and functions of the last events (those noted so far)."""
        last = self.events[-8:]
        names = sorted({e.block for e in last})
        where = self.cd.spec.blocks[names[0]].where if names else None
        fired = ", ".join(sorted({f"{e.block} function {e.index}" for e in last}))
        raise SolverError(
            f"{MAX_CONSECUTIVE_EVENTS} zero-crossing events in a row, each within "
            f"{CONSECUTIVE_EVENT_SPAN:g} s of the last, up to t = {t:.12g} s ({fired or 'none'}): "
            "a switch chatters at a discontinuity and time does not advance. Smooth the switch "
            "(e.g. a friction_smoothing > 0), give it a band (Karnopp or LuGre friction, a "
            "Relay's hysteresis), or use a fixed-step solver", where=where,
            block=names[0] if names else None)

    def _baseline(self, t: float, g: np.ndarray, fired=None) -> tuple[np.ndarray, bool]:
        """The crossing functions' baseline at t, against which the next values are judged: g,
        with each component that is exactly zero (a reset put it there, or it starts there)
        replaced by its value a moment later along the dynamics, so that its sign is the
        direction it leaves in: a function that leaves zero and comes back within one step
        crosses (the second bounce of a ball on a stop), one that leaves and stays away does
        not. A component that does not move stays at zero (no crossing until it has a sign).
        Also returns whether some component leaves zero (the modes of the step ahead are then
        those of a moment later: _modes_ahead). fired: (B, n_zc) mask of the functions an event
        at t fired; they are within the location tolerance of zero, on its far side, and are
        judged in the same way (the direction they leave in after the event's reaction), so a
        reset that sends a function back does not hide its next crossing.

        The moment is PROBE_STEP * max(1, |t|) s, along x + dt f(t, x); the context's state and
        outputs at t are restored afterwards."""
        zero = g == 0.0
        if fired is not None:
            zero |= fired
        if not zero.any():
            return g, False
        later = self._a_moment_later(t, lambda t_later: self.backend.zero_crossings(t_later))
        leaves = zero & np.isfinite(later) & (later != 0.0)
        return np.where(leaves, later, g), bool(leaves.any())

    def _a_moment_later(self, t: float, evaluate, major: bool = False):
        """evaluate(t + dt) with the outputs (minor evaluation; major: a major evaluation without
        hits, which sets the modes) at t + dt along x + dt f(t, x), dt = PROBE_STEP max(1, |t|);
        the state is restored and the outputs recomputed at t afterwards (with the modes then
        held)."""
        ctx = self.context
        x = ctx.xc.copy()
        dt = PROBE_STEP * max(1.0, abs(t))
        with np.errstate(all="ignore"):
            if self.plan.n_xc:
                np.copyto(ctx.xc, x + dt * self.backend.rhs(t, x))
            if major:
                self.backend.outputs_major(t + dt, self._no_hits)
            else:
                self.backend.outputs_minor(t + dt)
            value = evaluate(t + dt)
        np.copyto(ctx.xc, x)
        self.backend.outputs_minor(t)
        return value

    def _modes_ahead(self, t: float) -> None:
        """A crossing function left zero at t: the modes held through the step ahead are the
        ones a moment after t (a Sign whose input starts at zero and rises holds +1 from t on,
        not the 0 it shows at t)."""
        self._a_moment_later(t, lambda t_later: None, major=True)

    def _stop_requested_at_start(self, t: float) -> bool:
        for name in self.plan.crossings:
            xc, xd, u, _, _, _ = self.context.views[name]
            if self.cd.blocks[name].stop_requested(t, xc, xd, u, *self._extra(name)):
                self.stopped_by = name
                return True
        return False

    def _log_reached(self, step: _Step, solver) -> None:
        """After an interrupt: the log's last sample at the time the run really reached, the end
        of the last step the solver accepted (inside a major step under an adaptive solver),
        with the outputs recomputed there: the interrupt may have come in a solver stage, or at
        a major step before its outputs, when the buffers still hold a stage's values."""
        if solver is not None and step.integrating:   # the context's state may be a stage's
            self.log_final_state(max(step.t, float(solver.t)), solver.x)
        else:
            self.log_final_state(step.t)

    def log_final_state(self, t: float, x=None) -> None:
        """The log's last sample at t, with the state x (None: the context's) and the outputs
        recomputed there, unless the log already reaches t."""
        if self.recorder.count and self.recorder.times[self.recorder.count - 1] >= t:
            return
        if x is not None:
            np.copyto(self.xc, x)
        with np.errstate(all="ignore"):
            self.backend.outputs_minor(t)
        self.recorder.record_final(t)

    def _finish_log(self, t: float) -> None:
        if self.recorder.count and self.recorder.times[self.recorder.count - 1] == t:
            return
        self.recorder.record_final(t)

    # ---- non-finite states ----------------------------------------------------------------------
    def check_finite(self, t: float) -> None:
        """Raise NonFiniteStateError naming the first block (sorted order) whose state is NaN or
        Inf, and the member; nothing when every state is finite."""
        if np.isfinite(self.xc).all() and np.isfinite(self.xd).all():
            return
        cd = self.cd
        for name in self.plan.order:
            (a, b), (c, d) = cd.xc_slices[name], cd.xd_slices[name]
            bad_c = ~np.isfinite(self.xc[:, a:b])
            bad_d = ~np.isfinite(self.xd[:, c:d])
            if bad_c.any() or bad_d.any():
                kind = "continuous" if bad_c.any() else "discrete"
                member, index = np.argwhere(bad_c if bad_c.any() else bad_d)[0]
                names = cd.blocks[name].state_names()[0 if bad_c.any() else 1]
                raise NonFiniteStateError(
                    f"{kind} state {names[index]} became NaN/Inf at t = {t:.9g} s"
                    f"{self._member_text(member)}", where=cd.spec.blocks[name].where, block=name)

    def _member_text(self, member: int) -> str:
        cd = self.cd
        return f", batch member {cd.first_member + member}" \
            if cd.batch > 1 or cd.first_member else ""

    def blame_non_finite(self, solver, err: SolverError) -> None:
        """When a solver gives up on a non-finite state or derivative, name the block it belongs to."""
        t = solver.t
        np.copyto(self.xc, solver.x)
        self.check_finite(t)
        with np.errstate(all="ignore"):
            self.backend.rhs(t, solver.x)
        cd = self.cd
        for name in self.plan.order:
            a, b = cd.xc_slices[name]
            bad = ~np.isfinite(self.context.dxc[:, a:b])
            if bad.any():
                member, index = np.argwhere(bad)[0]
                raise NonFiniteStateError(
                    f"the derivative of continuous state {cd.blocks[name].state_names()[0][index]} "
                    f"became NaN/Inf at t = {t:.9g} s{self._member_text(member)} ({err.message})",
                    where=cd.spec.blocks[name].where, block=name) from None
        self._blame_fastest(solver.x, err)

    def _blame_fastest(self, x: np.ndarray, err: SolverError) -> None:
        """A solver gave up with every state and derivative finite (a step size underflow: the
        solution runs away, or a switch chatters): name the continuous state whose derivative is
        largest against the tolerance, atol + rtol |x|, with its value and rate."""
        s = self.settings
        with np.errstate(all="ignore"):
            rate = np.abs(self.context.dxc) / (s.atol + s.rtol * np.abs(x))
        if not rate.size or not np.isfinite(rate).any():
            return
        member, column = np.unravel_index(np.nanargmax(rate), rate.shape)
        cd = self.cd
        for name in self.plan.order:
            a, b = cd.xc_slices[name]
            if a <= column < b:
                state = cd.blocks[name].state_names()[0][column - a]
                raise SolverError(
                    f"continuous state {state}{self._member_text(member)} changes too fast to "
                    f"follow (value {x[member, column]:.6g}, rate "
                    f"{self.context.dxc[member, column]:.6g} per s): {err.message}",
                    where=cd.spec.blocks[name].where, block=name) from None

    # ---- integration between major steps --------------------------------------------------------
    def _advance(self, solver, t0: float, t1: float, adaptive: bool, g_prev):
        """Integrate from t0 to t1. Returns (t_end, event mask or None, g at t_end or None; at an
        event, g at the event before its reactions).

        Logs every grid time strictly inside the interval from dense output; stops early at the
        first located zero crossing (adaptive solvers). Fixed-step solvers make one step and
        report a crossing at its end without locating it, as Simulink's fixed-step solvers do.
        """
        rec = self.recorder
        if solver is None:
            return self._advance_stateless(t0, t1, g_prev)
        if adaptive and not solver.fixed_step and self._quiet_since_last_step(solver, t0):
            solver.set_bound(t1)
        else:
            solver.restart(t0, self.xc.copy(), t1)
        self._stage_reads = None
        while True:
            try:
                solver.step()
            except SolverError as err:
                self.blame_non_finite(solver, err)
                raise err.located(where=self.cd.spec.where.get("simulation.solver"))
            t_new = solver.t
            dense = None
            if rec.next_time < min(t_new, t1) or (rec.next_time == t_new and t_new < t1):
                dense = solver.dense_output()
            g_new = None
            if self.plan.crossings:
                np.copyto(self.xc, solver.x)
                self.backend.outputs_minor(t_new)
                g_new = self.backend.zero_crossings(t_new)
                if g_prev is not None:
                    mask = self.crossed(g_prev, g_new)
                    if mask.any():
                        t_ev = t_new
                        if adaptive:
                            dense = dense or solver.dense_output()
                            t_ev, mask = self._locate(dense, solver.t_old, t_new, g_prev, g_new)
                            x_ev = dense(t_ev)
                        else:
                            x_ev = solver.x
                        if dense is not None:
                            self._log_until(dense, t_ev, inclusive=False)
                        np.copyto(self.xc, x_ev)
                        self.check_finite(t_ev)
                        if t_ev != t_new:      # the functions at the event, before its reactions
                            self.backend.outputs_minor(t_ev)
                            g_new = self.backend.zero_crossings(t_ev)
                        return t_ev, mask, g_new
            if dense is not None:
                self._log_until(dense, min(t_new, t1), inclusive=t_new < t1)
            np.copyto(self.xc, solver.x)
            self.check_finite(t_new)
            if t_new >= t1:
                self._stage_reads = self._what_stages_read()
                return t1, None, g_new
            if g_new is not None:
                g_prev = self._baseline(t_new, g_new)[0]

    def _what_stages_read(self) -> tuple:
        """Copies of what a solver stage reads besides t and xc (RunPlan.stage_held, stage_xd),
        and the number of events so far."""
        signals, xd = self.context.signals, self.xd
        return (len(self.events), [signals[i].copy() for i in self.plan.stage_held]
                + [xd[:, a:b].copy() for a, b in self.plan.stage_xd])

    def _quiet_since_last_step(self, solver, t0: float) -> bool:
        """Whether the major step at t0 was a quiet hit (RunPlan.stage_held): the solver's last
        step ended at t0 on the state the run holds, no event fired, and nothing a stage reads
        changed. The solver then goes on (set_bound) instead of restarting."""
        before = self._stage_reads
        if before is None or solver.t != t0 or solver.status != FINISHED \
                or before[0] != len(self.events) or not np.array_equal(solver.x, self.xc):
            return False
        now = self._what_stages_read()[1]
        return all(np.array_equal(a, b) for a, b in zip(before[1], now))

    def _advance_stateless(self, t0: float, t1: float, g_prev):
        """_advance for a diagram without continuous states: outputs depend on t only, so the log
        grid points are evaluated directly and a zero crossing between two of them is located on
        the outputs themselves."""
        rec = self.recorder
        t_prev = t0
        while True:
            tp = rec.next_time if rec.next_time < t1 else t1
            self.backend.outputs_minor(tp)
            g = self.backend.zero_crossings(tp) if self.plan.crossings else None
            if g is not None and g_prev is not None:
                mask = self.crossed(g_prev, g)
                if mask.any():
                    t_ev, mask = self._locate(lambda t: self.xc, t_prev, tp, g_prev, g)
                    self.backend.outputs_minor(t_ev)
                    return t_ev, mask, self.backend.zero_crossings(t_ev)
            if tp >= t1:
                return t1, None, g
            rec.record()
            t_prev, g_prev = tp, g

    def _log_until(self, dense, t_end: float, inclusive: bool) -> None:
        rec = self.recorder
        while rec.next_time < t_end or (inclusive and rec.next_time == t_end):
            tl = rec.next_time
            np.copyto(self.xc, dense(tl))
            self.backend.outputs_logged(tl)
            rec.record()

    def _locate(self, dense, t0, t1, g0, g1):
        def gfun(t):
            np.copyto(self.xc, dense(t))
            self.backend.outputs_minor(t)
            return self.backend.zero_crossings(t)

        xtol = self.settings.zero_crossing_tol * max(1.0, abs(t1))
        found = find_first_crossing(gfun, t0, t1, g0, g1, self.zc_directions, xtol)
        if found is None:
            return t1, self.crossed(g0, g1)
        return found
