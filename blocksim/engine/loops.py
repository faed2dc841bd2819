"""Small numba helpers shared by every diagram's compiled code (compiled once, cached on disk).

Generated modules call these instead of numpy slice assignments, which numba is slow to compile.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def copy1d(dst, src):
    """dst[:] = src for 1-D arrays (the fixed-step loop's flat state copies)."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def copy_to_log(log, pos, src):
    """log[:, pos, :] = src: one logged sample of a (B, width) signal into (B, n_times, width)."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            log[i, pos, j] = src[i, j]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def all_finite(a):
    """True when no element of the (B, n) array is NaN or Inf. One flag or-ed over all elements,
    no early exit: branch-free loops the compiler vectorises (the states are finite at almost
    every check). No reshape: numba's costs a few hundred ns a call."""
    bad = False
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            bad |= not np.isfinite(a[i, j])
    return not bad


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def rate_hits(n, per, off, hits):
    """hits[r] = rate r has a sample hit at base tick n (n >= offset, (n - offset) % period == 0)."""
    for r in range(per.shape[0]):
        hits[r] = n >= off[r] and (n - off[r]) % per[r] == 0


@njit(cache=True, error_model="numpy")
def next_major_time(n, n_floor, t, per, off, stop_ceil, stop_tick, t_stop, num0, dnum, den,
                    breaks, break_ticks, next_break):
    """The next major time after the major step at t (base tick n, or -1 off the grid after a
    breakpoint, counted from tick n_floor): the next sample hit of any rate, the stop time, or a
    source's breakpoint before them. Returns (t1, its tick or -1 for a breakpoint, its floor
    tick, the index of the next breakpoint not yet passed). Shared by the rendered adaptive and
    stiff loops; not inlined, so one compiled copy serves both."""
    base = n if n >= 0 else n_floor
    tick = stop_ceil
    for q in range(per.shape[0]):
        if base < off[q]:
            hit = off[q]
        else:
            hit = off[q] + ((base - off[q]) // per[q] + 1) * per[q]
        tick = min(tick, hit)
    if tick >= stop_ceil:
        t1 = t_stop
        tick_next = stop_tick
    else:
        t1 = (num0 + tick * dnum) / den
        tick_next = tick
    floor_next = tick_next
    while next_break < breaks.shape[0] and breaks[next_break] <= t:
        next_break += 1
    if next_break < breaks.shape[0] and breaks[next_break] < t1:
        t1 = breaks[next_break]
        tick_next = -1
        floor_next = break_ticks[next_break]
    return t1, tick_next, floor_next, next_break


@njit(cache=True, error_model="numpy")
def stash(buffer, at, a):
    """buffer[at:at + a.size] = a (a (B, n) array, a view of columns too); the next position.
    Not inlined: one compiled copy serves every call site (the snapshot of a quiet hit)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            buffer[at] = a[i, j]
            at += 1
    return at


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def unstash(buffer, at, a):
    """a = buffer[at:at + a.size] (a (B, n) array), stash's inverse; the next position. Inlined:
    a per-member part's log samples read their outputs of t alone so (engine/log_table.py)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = buffer[at]
            at += 1
    return at


@njit(cache=True, error_model="numpy")
def unchanged(buffer, at, a):
    """The next position after a's copy in buffer when a equals it element for element (stash
    wrote it), else -1; -1 stays -1, so a chain of calls tells whether all were unchanged."""
    if at < 0:
        return -1
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if buffer[at] != a[i, j]:
                return -1
            at += 1
    return at


CHUNK_SECONDS = 0.2
"""Wall time between a rendered loop's returns to Python (progress, Ctrl-C)."""

FIRST_CHUNK_ELEMENTS = 65536
"""About how many state elements (members x states, each step) a rendered loop's first chunk
steps before it returns to Python: a short run ends in one call, and a large batch comes back
soon for the progress bar and Ctrl-C; later chunks are sized by the time the last one took."""


def first_chunk(elements: int, least: int) -> int:
    """The steps of a rendered loop's first chunk for a state of `elements` numbers (B n_x):
    FIRST_CHUNK_ELEMENTS of them, at least `least` steps, at most 256."""
    return max(least, min(256, FIRST_CHUNK_ELEMENTS // max(elements, 1)))


def next_chunk(steps: int, elapsed: float, least: int) -> int:
    """The steps of a rendered loop's next chunk after one of `steps` steps took `elapsed` s:
    scaled toward CHUNK_SECONDS, at most four times as many (and 2**30), at least `least`. (A
    chunk may end early, its event list full, so few steps can take little time.)"""
    return max(least, min(1 << 30, int(steps * min(4.0, CHUNK_SECONDS / max(elapsed, 1e-6)))))


def loop_clock(sim, plan):
    """The integer clock of a rendered loop (run_adaptive, run_stiff) for Simulation sim:
    (num0, dnum, den, stop_ceil, int_stop, breaks, break_ticks, per, off, hits), where t at base
    tick n is (num0 + n dnum) / den, int_stop is the stop's tick or -1 off the grid, breaks are
    the sources' breakpoints (s) with their floor ticks, per and off each rate's period and
    offset in ticks and hits its sample-hit flags. None when the ticks are beyond exact float
    integers (the scheduler's loop then runs the diagram)."""
    tb = plan.timebase
    num0, dnum, den = tb.integer_form
    stop_tick = plan.stop_tick
    stop_ceil = math.ceil(stop_tick)
    if max(abs(num0), abs(dnum) * (stop_ceil + 1), den) >= 2 ** 53:
        return None
    int_stop = stop_tick if isinstance(stop_tick, int) else -1
    breaks = np.array(sim.breaks, dtype=float)
    break_ticks = np.array([tb.tick_at_or_before(bp) for bp in sim.breaks], dtype=np.int64)
    per = np.array([r.period for r in tb.rates], dtype=np.int64)
    off = np.array([r.offset for r in tb.rates], dtype=np.int64)
    hits = np.zeros(len(tb.rates), dtype=np.bool_)
    return num0, dnum, den, stop_ceil, int_stop, breaks, break_ticks, per, off, hits


def held_buffer(plan, members: int) -> np.ndarray:
    """The snapshot buffer of what a solver stage reads besides t and xc (RunPlan.stage_held's
    inputs, stage_xd's discrete states), for the quiet-hit check (stash/unchanged)."""
    return np.zeros(members * (sum(plan.slots[i].width for i in plan.stage_held)
                               + sum(b - a for a, b in plan.stage_xd)))


@njit(cache=True, error_model="numpy")
def tick_at_or_before(t, num0, dnum, den):
    """The last base tick n with (num0 + n dnum) / den <= t (Timebase.tick_at_or_before for a time
    t off the tick grid, after a located event), each tick's time read as the loop reads it, a
    correctly rounded division; a tick whose time rounds to t counts. (Timebase reads t from its
    shortest decimal text: the two differ only at such a tick of a non-decimal base tick, which
    is then no rate's hit, since an event at a hit's time is at a major time, so the next major
    time counted from either is the same.)"""
    n = int(math.floor((t * den - num0) / dnum))
    while (num0 + (n + 1) * dnum) / den <= t:
        n += 1
    while n > 0 and (num0 + n * dnum) / den > t:
        n -= 1
    return n
