"""The simulation loop: major steps at exact hits, held discrete outputs, continuous integration
between hits with event location, and logging on its own grid. The only place where blocks, time
and solvers meet.

Semantics (as Simulink, written down in docs/semantics.md):
  major step at t:  outputs in sorted order (discrete blocks only at their hits, else held)
                    -> zero crossings that a jump at t caused fire their events
                    -> log (when t is on the log grid)
                    -> updates (discrete blocks at their hits, continuous memory blocks always)
                    -> integrate continuous states to the next major time
  minor step:       solver stages re-evaluate only the blocks that read continuous state or t.
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..blocks.base import exact_time
from ..diagram.compiler import CompiledDiagram
from ..diagram.rates import make_timebase
from ..diagram.settings import LogSettings, SimulationSettings
from ..errors import NonFiniteStateError, SampleTimeError, SolverError
from ..solvers import SOLVERS, make_solver
from ..solvers.events import find_first_crossing
from .recorder import Recorder, log_times

PROGRESS_AFTER = 2.0
"""Wall-clock seconds after which a run shows a progress bar."""

FIXED_STEP_DEFAULT_DIVISIONS = 1000
"""A fixed-step run with no step and no discrete block takes (stop - start) / this."""

ADAPTIVE_LOG_POINTS = 1001
"""Without log.every, an adaptive run logs on this many evenly spaced points."""


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


@dataclass
class Event:
    """A located zero crossing: time (s), block, event-function index and batch member."""

    t: float
    block: str
    index: int
    member: int


@dataclass
class RunOutput:
    t: np.ndarray
    signals: dict[str, np.ndarray]
    events: list[Event] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    interrupted: bool = False
    stopped_by: str | None = None


def run_settings(settings: SimulationSettings, log: LogSettings,
                 cd: CompiledDiagram) -> RunSettings:
    """The run's timing for a compiled diagram: a fixed-step solver without simulation.step takes
    the fastest discrete period (else 1/1000 of the span); log.every defaults to the fixed step,
    or to 1/1000 of an adaptive run's span, and must be a multiple of a fixed step."""
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
    return RunSettings(settings.start, settings.stop, settings.solver,
                       step if step is not None else settings.step, settings.rtol,
                       settings.atol, settings.max_step, settings.zero_crossing_tol, every,
                       settings.progress)


class Simulation:
    """One run of a compiled diagram: owns every signal and state array (the Context)."""

    binds_kernels = True
    """The plan calls blocks' kernels through entry points bound once (Block.bind); a subclass
    that evaluates blocks otherwise (CompiledSimulation) keeps the plain methods and compiles
    no Python entry points it would not call."""

    def __init__(self, cd: CompiledDiagram, settings: RunSettings,
                 logged: dict[str, tuple[str, str]]):
        self.cd = cd
        self.settings = settings
        B = cd.batch
        self.xc = np.zeros((B, cd.n_xc))
        self.dxc = np.zeros((B, cd.n_xc))
        self.xd = np.zeros((B, cd.n_xd))
        self.g = np.zeros((B, cd.n_zc))
        self.out_bufs = {(n, o): np.zeros((B, w)) for n, ws in cd.out_widths.items()
                         for o, w in ws.items()}
        self.events: list[Event] = []
        self.records = cd.records()   # the kernels' parameter records of this run's values
        fixed_step = settings.step if not SOLVERS[settings.solver].adaptive else None
        self.timebase = make_timebase(cd.sample_times, settings.start, fixed_step)
        self._build_plan()
        self.log_grid = log_times(settings.start, settings.stop, settings.log_every)
        self.recorder = Recorder({name: self.out_bufs[bp] for name, bp in logged.items()},
                                 self.log_grid)

    def new_log(self) -> None:
        """Log the next run into new arrays (a Result keeps the arrays of its own run)."""
        self.recorder = Recorder(dict(self.recorder.sources), self.log_grid)

    # ---- plan ---------------------------------------------------------------------------------
    def _views(self, name):
        cd, blk = self.cd, self.cd.blocks[name]
        a, b = cd.xc_slices[name]
        c, d = cd.xd_slices[name]
        e, f = cd.zc_slices[name]
        inputs = []
        for port in blk.input_names():
            src = cd.wires.get((name, port))
            if src is None:
                inputs.append(np.zeros((cd.batch, blk.unwired_width(port))))
            else:
                inputs.append(self.out_bufs[src])
        outputs = tuple(self.out_bufs[(name, o)] for o in blk.output_names())
        return (self.xc[:, a:b], self.xd[:, c:d], tuple(inputs), outputs,
                self.dxc[:, a:b], self.g[:, e:f])

    def _call(self, name: str, method: str, args: tuple) -> tuple:
        """(fn, args) calling block `name`'s runtime `method` as fn(t, *args), with the run's
        parameter record of the block (for a block whose values are data)."""
        blk = self.cd.blocks[name]
        record = self.records.get(name)
        if self.binds_kernels:
            return blk.bind(method, args, record)
        return getattr(blk, method), (args if record is None else args + (record,))

    def _extra(self, name: str) -> tuple:
        """The trailing arguments of block `name`'s Python-side calls (initial_state, on_event,
        breakpoints, stop_requested): its run's record, for a block whose values are data."""
        record = self.records.get(name)
        return () if record is None else (record,)

    def _build_plan(self):
        cd = self.cd
        enabled = {n for n, b in cd.blocks.items() if b.enabled}
        self.views = {n: self._views(n) for n in cd.blocks}
        rate_index = {r.sample_time: k for k, r in enumerate(self.timebase.rates)}
        self.major_calls = []      # (rate index or -1 = every major step, method, args)
        self.constant_calls = []
        self.minor_calls = []
        for call in cd.calls:
            name = call.block
            blk = cd.blocks[name]
            if name not in enabled or not blk.output_names():
                continue
            xc, xd, u, y, _, _ = self.views[name]
            st = cd.sample_times[name]
            entry = self._call(name, "output", (xc, xd, u, y))
            if st.kind == "constant":
                self.constant_calls.append(entry)
                continue
            self.major_calls.append((rate_index[st] if st.kind == "discrete" else -1, *entry))
            if name in cd.varying:
                self.minor_calls.append(entry)
        order = []
        for call in cd.calls:
            if call.block not in order:
                order.append(call.block)
        self.order = order
        # (block name, fn, args), fn(t, *args) filling the block's rows of dxc
        self.deriv_calls = [(n, *self._call(n, "derivative", self.views[n][:3] + self.views[n][4:5]))
                            for n in order if n in enabled and cd.blocks[n].n_xc > 0]
        self.update_calls = []
        for n in order:
            blk = cd.blocks[n]
            st = cd.sample_times[n]
            if n in enabled and (st.kind == "discrete" or blk.n_xd > 0):
                xc, xd, u, _, _, _ = self.views[n]
                self.update_calls.append((rate_index[st] if st.kind == "discrete" else -1, n,
                                          *self._call(n, "update", (xc, xd, u))))
        self.zc_blocks = [(n, cd.blocks[n]) for n in order
                          if n in enabled and cd.blocks[n].n_zc > 0]
        self.zc_calls = [self._call(n, "zero_crossings", self.views[n][:3] + self.views[n][5:])
                         for n, _ in self.zc_blocks]
        self.zc_directions = np.concatenate(
            [np.asarray(b.zc_directions, dtype=np.int64).reshape(-1) for _, b in self.zc_blocks]
            or [np.zeros(0, dtype=np.int64)])
        self.breaks = sorted({float(t) for n in enabled
                              for t in cd.blocks[n].breakpoints(float(self.settings.start),
                                                               float(self.settings.stop),
                                                               *self._extra(n))})

    # ---- evaluation ---------------------------------------------------------------------------
    def outputs_major(self, t: float, hits: np.ndarray) -> None:
        """Outputs in sorted order; discrete blocks only where hits[rate] (else held)."""
        for rate, method, args in self.major_calls:
            if rate < 0 or hits[rate]:
                method(t, *args)

    def run_updates(self, t: float, hits: np.ndarray) -> None:
        """Discrete updates at their hits; continuous blocks' memory at every major step."""
        for rate, _, method, args in self.update_calls:
            if rate < 0 or hits[rate]:
                method(t, *args)

    def hits_at(self, n: int | None) -> np.ndarray:
        """Which rates hit at tick n (none off the tick grid, n None)."""
        rates = self.timebase.rates
        return np.array([n is not None and r.hits(n) for r in rates], dtype=np.bool_)

    def outputs_minor(self, t: float) -> None:
        for method, args in self.minor_calls:
            method(t, *args)

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        """dx/dt at (t, x) for the solver: minor outputs, then every block's derivative."""
        np.copyto(self.xc, x)
        for method, args in self.minor_calls:
            method(t, *args)
        for _, method, args in self.deriv_calls:
            method(t, *args)
        return self.dxc.copy()

    def zero_crossings(self, t: float) -> np.ndarray:
        for method, args in self.zc_calls:
            method(t, *args)
        return self.g.copy()

    def crossed(self, g0: np.ndarray, g1: np.ndarray) -> np.ndarray:
        """(B, n_zc) mask of sign changes from g0 to g1 in each function's direction."""
        rising = (g0 < 0) & (g1 >= 0)
        falling = (g0 > 0) & (g1 <= 0)
        d = self.zc_directions
        return np.where(d > 0, rising, np.where(d < 0, falling, rising | falling))

    def fire_events(self, t: float, mask: np.ndarray) -> bool:
        """Call on_event of every block with a crossing in mask; True when one asks to stop."""
        stop = False
        cd = self.cd
        for name, blk in self.zc_blocks:
            e, f = cd.zc_slices[name]
            sub = mask[:, e:f]
            if not sub.any():
                continue
            for member, index in zip(*np.nonzero(sub)):
                self.events.append(Event(t, name, int(index), int(member)))
            xc, xd, u, _, _, _ = self.views[name]
            if blk.on_event(t, xc, xd, u, sub, *self._extra(name)):
                stop = True
                self.stopped_by = name
        return stop

    def check_finite(self, t: float, what: str = "state") -> None:
        if np.isfinite(self.xc).all() and np.isfinite(self.xd).all():
            return
        cd = self.cd
        for name in self.order:
            (a, b), (c, d) = cd.xc_slices[name], cd.xd_slices[name]
            bad_c = ~np.isfinite(self.xc[:, a:b])
            bad_d = ~np.isfinite(self.xd[:, c:d])
            if bad_c.any() or bad_d.any():
                kind = "continuous" if bad_c.any() else "discrete"
                member, index = np.argwhere(bad_c if bad_c.any() else bad_d)[0]
                names = cd.blocks[name].state_names()[0 if bad_c.any() else 1]
                member_text = (f", batch member {cd.first_member + member}"
                               if cd.batch > 1 or cd.first_member else "")
                raise NonFiniteStateError(
                    f"{kind} state {names[index]} became NaN/Inf at t = {t:.9g} s{member_text}",
                    where=cd.spec.blocks[name].where, block=name)

    def blame_non_finite(self, solver, err: SolverError) -> None:
        """When a solver gives up on a non-finite state or derivative, name the block it belongs to."""
        t = solver.t
        np.copyto(self.xc, solver.x)
        self.check_finite(t)
        with np.errstate(all="ignore"):
            self.rhs(t, solver.x)
        cd = self.cd
        for name in self.order:
            a, b = cd.xc_slices[name]
            bad = ~np.isfinite(self.dxc[:, a:b])
            if bad.any():
                member, index = np.argwhere(bad)[0]
                member_text = (f", batch member {cd.first_member + member}"
                               if cd.batch > 1 or cd.first_member else "")
                raise NonFiniteStateError(
                    f"the derivative of continuous state {cd.blocks[name].state_names()[0][index]} "
                    f"became NaN/Inf at t = {t:.9g} s{member_text} ({err.message})",
                    where=cd.spec.blocks[name].where, block=name) from None

    # ---- the run ------------------------------------------------------------------------------
    def members_independent(self) -> bool:
        """True when a batch may be split into parts run apart with the same numbers and the run
        releases the GIL (CompiledSimulation's fixed-step loop); this Python loop does neither."""
        return False

    def run(self) -> RunOutput:
        s = self.settings
        tb = self.timebase
        adaptive = SOLVERS[s.solver].adaptive
        step_ticks = None if adaptive else int(s.step / tb.tick)
        stop_ticks = (s.stop - s.start) / tb.tick
        stop_tick_exact = int(stop_ticks) if stop_ticks.denominator == 1 else stop_ticks
        self.stopped_by = None
        for name in self.order:
            blk = self.cd.blocks[name]
            xc, xd, _, _, _, _ = self.views[name]
            blk.initial_state(xc, xd, *self._extra(name))
        for method, args in self.constant_calls:
            method(float(s.start), *args)
        solver = None
        if self.cd.n_xc > 0:
            solver = make_solver(s.solver, self.rhs, float(s.start), self.xc.copy(), float(s.stop),
                                 step=float(s.step) if s.step is not None else None,
                                 rtol=s.rtol, atol=s.atol, max_step=s.max_step)
        stats = {"major_steps": 0}
        interrupted = False
        progress = _Progress(s, self.settings.progress)
        n = 0                  # current tick, when t is on the tick grid (None after an event)
        t = float(s.start)
        g_prev = None
        try:
            hits = self.hits_at(0)
            self.outputs_major(t, hits)
            if self.stop_requested_at_start(t):
                self._finish_log(t)
                raise _StopAtStart
            while True:
                # -- major step at t
                self.outputs_major(t, hits)
                if self.zc_blocks:
                    g_now = self.zero_crossings(t)
                    if g_prev is not None:
                        mask = self.crossed(g_prev, g_now)
                        if mask.any():
                            if self.fire_events(t, mask):
                                self._finish_log(t)
                                break
                            self.outputs_major(t, hits)
                            g_now = self.zero_crossings(t)
                    g_prev = g_now
                if self.recorder.next_time == t:
                    self.recorder.record()
                self.run_updates(t, hits)
                self.check_finite(t)
                stats["major_steps"] += 1
                progress.update(t)
                if t >= float(s.stop):
                    break
                # -- next major time: next hit, fixed-step grid point, breakpoint or stop
                if n is not None:
                    next_tick = min([r.next_hit(n) for r in tb.rates] + [stop_tick_exact])
                    if step_ticks is not None:
                        next_tick = min(next_tick, (n // step_ticks + 1) * step_ticks)
                    t_next = tb.time(next_tick) if next_tick != stop_tick_exact else float(s.stop)
                else:
                    next_tick, t_next = self._next_tick_after(t, step_ticks, stop_tick_exact)
                if adaptive:
                    bp = next((b for b in self.breaks if t < b < t_next), None)
                    if bp is not None:
                        t_next, next_tick = bp, None
                # -- integrate to t_next (or to an event before it)
                t_end, event_mask, g_end = self._advance(solver, t, t_next, adaptive, g_prev)
                if t_end == t_next and isinstance(next_tick, int):
                    n = next_tick
                else:
                    n = None
                hits = self.hits_at(n)
                t = t_end
                if event_mask is not None:
                    # the event's major step: outputs at the event state, then its reactions
                    self.outputs_major(t, hits)
                    if self.fire_events(t, event_mask):
                        self.outputs_major(t, hits)
                        self._finish_log(t)
                        break
                    g_prev = None
                    # the major step at t (loop top) recomputes outputs and the new baseline
                    continue
                if g_end is not None:
                    g_prev = g_end
        except _StopAtStart:
            pass
        except KeyboardInterrupt:
            interrupted = True
            self._finish_log(t)
        finally:
            progress.close()
        if solver is not None:
            stats.update(nfev=solver.nfev, nsteps=solver.nsteps, nrejected=solver.nrejected)
        stats["events"] = len(self.events)
        t_log, data = self.recorder.finished()
        return RunOutput(t_log, data, self.events, stats, interrupted, self.stopped_by)

    def stop_requested_at_start(self, t: float) -> bool:
        for name, blk in self.zc_blocks:
            xc, xd, u, _, _, _ = self.views[name]
            if blk.stop_requested(t, xc, xd, u, *self._extra(name)):
                self.stopped_by = name
                return True
        return False

    def _finish_log(self, t: float) -> None:
        if self.recorder.count and self.recorder.times[self.recorder.count - 1] == t:
            return
        self.recorder.record_final(t)

    def _next_tick_after(self, t: float, step_ticks, stop_tick_exact):
        """After an event at a time off the tick grid: the first grid time after t."""
        tb = self.timebase
        rel = (exact_time(t) - tb.start) / tb.tick
        n = int(rel)  # floor for t >= start
        next_tick = min([r.next_hit(n) for r in tb.rates] + [stop_tick_exact])
        if step_ticks is not None:
            next_tick = min(next_tick, (n // step_ticks + 1) * step_ticks)
        if next_tick == stop_tick_exact:
            return next_tick, float(tb.start + stop_tick_exact * tb.tick)
        return next_tick, tb.time(next_tick)

    def _advance(self, solver, t0: float, t1: float, adaptive: bool, g_prev):
        """Integrate from t0 to t1. Returns (t_end, event mask or None, g at t_end or None).

        Logs every grid time strictly inside the interval from dense output; stops early at the
        first located zero crossing (adaptive solvers). Fixed-step solvers make one step and
        report a crossing at its end without locating it, as Simulink's fixed-step solvers do.
        """
        rec = self.recorder
        if solver is None:
            return self._advance_stateless(t0, t1, g_prev)
        solver.restart(t0, self.xc.copy(), t1)
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
            if self.zc_blocks:
                np.copyto(self.xc, solver.x)
                self.outputs_minor(t_new)
                g_new = self.zero_crossings(t_new)
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
                        return t_ev, mask, None
            if dense is not None:
                self._log_until(dense, min(t_new, t1), inclusive=t_new < t1)
            np.copyto(self.xc, solver.x)
            self.check_finite(t_new)
            if g_new is not None:
                g_prev = g_new
            if t_new >= t1:
                return t1, None, g_new

    def _advance_stateless(self, t0: float, t1: float, g_prev):
        """_advance for a diagram without continuous states: outputs depend on t only, so the log
        grid points are evaluated directly and a zero crossing between two of them is located on
        the outputs themselves."""
        rec = self.recorder
        t_prev = t0
        while True:
            tp = rec.next_time if rec.next_time < t1 else t1
            self.outputs_minor(tp)
            g = self.zero_crossings(tp) if self.zc_blocks else None
            if g is not None and g_prev is not None:
                mask = self.crossed(g_prev, g)
                if mask.any():
                    t_ev, mask = self._locate(lambda t: self.xc, t_prev, tp, g_prev, g)
                    self.outputs_minor(t_ev)
                    return t_ev, mask, None
            if tp >= t1:
                return t1, None, g
            rec.record()
            t_prev, g_prev = tp, g

    def _log_until(self, dense, t_end: float, inclusive: bool) -> None:
        rec = self.recorder
        while rec.next_time < t_end or (inclusive and rec.next_time == t_end):
            tl = rec.next_time
            np.copyto(self.xc, dense(tl))
            self.outputs_minor(tl)
            rec.record()

    def _locate(self, dense, t0, t1, g0, g1):
        def gfun(t):
            np.copyto(self.xc, dense(t))
            self.outputs_minor(t)
            return self.zero_crossings(t)

        xtol = self.settings.zero_crossing_tol * max(1.0, abs(t1))
        found = find_first_crossing(gfun, t0, t1, g0, g1, self.zc_directions, xtol)
        if found is None:
            return t1, self.crossed(g0, g1)
        return found


class _StopAtStart(Exception):
    """A block asked to stop at the start time (internal control flow of Simulation.run)."""


class _Progress:
    """A tqdm bar that appears only once a run has lasted PROGRESS_AFTER seconds of wall time."""

    def __init__(self, settings: RunSettings, enabled: bool | None):
        import sys
        # simulation.progress: true/false; by default only on an interactive terminal
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.start = _time.perf_counter()
        self.t0, self.t1 = float(settings.start), float(settings.stop)
        self.bar = None
        self.calls = 0

    def update(self, t: float, force: bool = False) -> None:
        """Show simulated time t; checks the clock only every 256th call unless forced."""
        if not self.enabled:
            return
        self.calls += 1
        if self.calls & 255 and not force:
            return
        if self.bar is None:
            if _time.perf_counter() - self.start < PROGRESS_AFTER:
                return
            from tqdm import tqdm
            self.bar = tqdm(total=self.t1 - self.t0, unit="s sim", leave=False,
                            bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s sim [{elapsed}<{remaining}]")
        self.bar.n = t - self.t0
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
