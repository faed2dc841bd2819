"""Zero-crossing location on a step's dense output: the earliest sign change of event functions g(t).

The search is one resumable numba state machine (crossing_search_begin, crossing_search_next),
driven by find_first_crossing in Python (the scheduler's loop, interpreted and compiled blocks
alike) and by the compiled adaptive loop (engine/adaptive_loop.py), which evaluates g at the
machine's trial times through its own block calls: both modes locate every event with the same
arithmetic, trial for trial.
"""
from __future__ import annotations

from typing import Callable

import numba
import numpy as np

BISECT_AFTER_SLOW = 2
"""Bisect once the bracket has failed to halve this many iterations in a row (keeps the worst case at
about twice bisection's cost while the Illinois steps converge superlinearly)."""
MAX_ITERATIONS = 200
"""Safety limit on evaluations of gfun per crossing search (bisection from 1 s to 1e-15 s needs 50)."""
ROUNDOFF_SPACINGS = 4
"""xtol is raised to this many floating-point spacings of t: a bracket cannot be narrower."""

SEARCH_FLOATS = ("lo", "hi", "f_lo", "f_hi", "tol", "xtol", "t1", "width", "trial")
"""The search's float state, by index (s, or the focused component's g values f_lo, f_hi)."""
SEARCH_INTS = ("iterations", "kept_side", "slow", "focus", "stage")
"""The search's integer state: evaluations so far, the Illinois side kept (-1 low, +1 high), the
iterations in a row that failed to halve the bracket, the focused component (flat index into
the (B, m) arrays) and where the machine resumes (_OUTER ... _DONE)."""
_LO, _HI, _F_LO, _F_HI, _TOL, _XTOL, _T1, _WIDTH, _TRIAL = range(len(SEARCH_FLOATS))
_ITER, _KEPT, _SLOW, _FOCUS, _STAGE = range(len(SEARCH_INTS))
_OUTER, _CONSUME_TRIAL, _CONSUME_LAST, _DONE, _INNER, _FINAL, _AFTER_INNER = range(7)


def crossing_candidates(g0: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Components (B, m) that may cross: nonzero at the start, and able to move in an allowed direction.

    directions (m,): 0 either way, +1 rising only (from negative), -1 falling only (from positive).
    """
    directions = np.asarray(directions)
    return (g0 != 0) & ((directions == 0) | ((directions > 0) & (g0 < 0)) | ((directions < 0) & (g0 > 0)))


@numba.njit(cache=True, forceinline=True, _nrt=False)
def _py_max(a, b):
    """Python's max(a, b) for floats (a when neither is greater, so a NaN a stays)."""
    return b if b > a else a


@numba.njit(cache=True, forceinline=True, _nrt=False)
def _py_min(a, b):
    """Python's min(a, b) for floats."""
    return b if b < a else a


@numba.njit(cache=True, error_model="numpy")
def crossing_search_begin(t0, t1, g0, g1, directions, xtol, fs, ist, g_lo, g_hi, cand, sign):
    """Start a search for the earliest crossing in (t0, t1] (s) of g (B, m), from its values g0
    at t0 and g1 at t1; directions (m,) int; xtol (s) the bracket width. Fills the state fs
    (SEARCH_FLOATS), ist (SEARCH_INTS) and the (B, m) arrays g_lo, g_hi, cand (the candidates,
    crossing_candidates) and sign (the sign at t0). False when no component crosses at t1."""
    B, m = g0.shape
    found = False
    for b in range(B):
        for j in range(m):
            v = g0[b, j]
            d = directions[j]
            c = v != 0 and (d == 0 or (d > 0 and v < 0) or (d < 0 and v > 0))
            cand[b, j] = c
            sign[b, j] = 1.0 if v > 0 else (-1.0 if v < 0 else (0.0 if v == 0 else np.nan))
            g_lo[b, j] = v
            g_hi[b, j] = g1[b, j]
            if c and g1[b, j] * sign[b, j] <= 0:
                found = True
    if not found:
        return False
    far = _py_max(abs(t0), abs(t1))
    xtol = _py_max(xtol, 2 * ROUNDOFF_SPACINGS * (np.nextafter(far, np.inf) - far))
    fs[_LO], fs[_HI], fs[_TOL], fs[_XTOL], fs[_T1] = t0, t1, 0.5 * xtol, xtol, t1
    fs[_F_LO] = fs[_F_HI] = fs[_WIDTH] = fs[_TRIAL] = 0.0
    ist[_ITER] = ist[_KEPT] = ist[_SLOW] = ist[_FOCUS] = 0
    ist[_STAGE] = _OUTER
    return True


@numba.njit(cache=True, error_model="numpy")
def crossing_search_next(fs, ist, g_lo, g_hi, cand, sign, g):
    """One move of the search: consumes g (B, m), the values at fs[trial] that the last call
    asked for (ignored on the first call), and returns 1 when g is wanted at the new fs[trial],
    0 when the search is done (the event time is fs[hi]; crossing_mask gives the components).

    The search is regula falsi with the Illinois modification on the component that crosses
    first (by its secant estimate), guarded by bisection; every evaluation updates the bracket
    for all components. The bracket is narrowed to xtol/2, then its right end moved to
    t_lo + xtol to collect companions (find_first_crossing says what the result means)."""
    B, m = g_lo.shape
    lo, hi, f_lo, f_hi = fs[_LO], fs[_HI], fs[_F_LO], fs[_F_HI]
    tol, xtol, t1, width, trial = fs[_TOL], fs[_XTOL], fs[_T1], fs[_WIDTH], fs[_TRIAL]
    iterations, kept, slow, focus = ist[_ITER], ist[_KEPT], ist[_SLOW], ist[_FOCUS]
    where = ist[_STAGE]
    wanted = 0
    while True:
        if where == _OUTER:
            if not (hi - lo > tol and iterations < MAX_ITERATIONS):
                where = _FINAL
                continue
            # focus on the component whose secant estimate of its root is earliest (np.argmin:
            # the first NaN, else the first smallest; 0 when none is finite)
            best = np.inf
            focus = 0
            for k in range(B * m):
                b, j = k // m, k % m
                if cand[b, j] and g_hi[b, j] * sign[b, j] <= 0:
                    estimate = lo + (hi - lo) * g_lo[b, j] / (g_lo[b, j] - g_hi[b, j])
                    if np.isnan(estimate):
                        focus = k
                        break
                    if estimate < best:
                        best = estimate
                        focus = k
            f_lo = g_lo[focus // m, focus % m]
            f_hi = g_hi[focus // m, focus % m]
            kept = 0
            slow = 0
            where = _INNER
        elif where == _INNER:
            if not (hi - lo > tol and iterations < MAX_ITERATIONS):
                where = _AFTER_INNER
                continue
            width = hi - lo
            if slow >= BISECT_AFTER_SLOW:
                t = 0.5 * (lo + hi)
                slow = 0
            else:
                t = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            # stay tol/2 inside the bracket so a trial next to the root closes it from the other side
            t = _py_min(_py_max(t, lo + 0.5 * tol), hi - 0.5 * tol)
            if not lo < t < hi:
                t = 0.5 * (lo + hi)
                if not lo < t < hi:
                    where = _AFTER_INNER
                    continue
            trial = t
            where = _CONSUME_TRIAL
            wanted = 1
            break
        elif where == _CONSUME_TRIAL:
            iterations += 1
            now_any = False
            for b in range(B):
                for j in range(m):
                    if cand[b, j] and g[b, j] * sign[b, j] <= 0:
                        now_any = True
            fb, fj = focus // m, focus % m
            if now_any:
                hi = trial
                g_hi[:, :] = g
                if not (cand[fb, fj] and g[fb, fj] * sign[fb, fj] <= 0):
                    where = _AFTER_INNER      # another component crossed earlier: change focus
                    continue
                f_hi = g[fb, fj]
                if kept == 1:
                    f_lo *= 0.5               # Illinois: the low end was kept twice, weaken it
                kept = 1
            else:
                lo = trial
                g_lo[:, :] = g
                f_lo = g[fb, fj]
                if kept == -1:
                    f_hi *= 0.5
                kept = -1
            slow = slow + 1 if hi - lo > 0.5 * width else 0
            where = _INNER
        elif where == _AFTER_INNER:
            if iterations >= MAX_ITERATIONS or not lo < 0.5 * (lo + hi) < hi:
                where = _FINAL
            else:
                where = _OUTER
        elif where == _FINAL:
            t_last = _py_min(lo + xtol, t1)
            where = _DONE
            if t_last > hi:
                trial = t_last
                where = _CONSUME_LAST
                wanted = 1
                break
        elif where == _CONSUME_LAST:
            kept_all = True               # no component crossed back meanwhile
            for b in range(B):
                for j in range(m):
                    if cand[b, j] and g_hi[b, j] * sign[b, j] <= 0 \
                            and not g[b, j] * sign[b, j] <= 0:
                        kept_all = False
            if kept_all:
                hi = trial
                g_hi[:, :] = g
            where = _DONE
        else:
            break
    fs[_LO], fs[_HI], fs[_F_LO], fs[_F_HI] = lo, hi, f_lo, f_hi
    fs[_WIDTH], fs[_TRIAL] = width, trial
    ist[_ITER], ist[_KEPT], ist[_SLOW], ist[_FOCUS] = iterations, kept, slow, focus
    ist[_STAGE] = where
    return wanted


@numba.njit(cache=True, error_model="numpy")
def crossing_mask(g_hi, cand, sign, mask):
    """mask (B, m) = the components crossed at the search's right end (the located event's)."""
    B, m = g_hi.shape
    for b in range(B):
        for j in range(m):
            mask[b, j] = cand[b, j] and g_hi[b, j] * sign[b, j] <= 0


def find_first_crossing(gfun: Callable[[float], np.ndarray], t0: float, t1: float, g0: np.ndarray,
                        g1: np.ndarray, directions: np.ndarray, xtol: float
                        ) -> tuple[float, np.ndarray] | None:
    """Earliest zero crossing in (t0, t1] of the event functions g (shape (B, m)), or None.

    gfun(t) -> (B, m) evaluates g on the step's dense output; g0, g1 are its values at t0 and t1 (s);
    directions (m,) of 0 (either), +1 (rising, - to +), -1 (falling, + to -); xtol (s) the bracket width.
    A component crosses when it has left its sign at t0 for zero or the opposite sign (the half-open
    semantics of Drake's witness functions): a component exactly zero at t0 never crosses (it is the event
    just handled), one that reaches exactly zero at t1 does. A double crossing inside (t0, t1) with the
    same sign at both ends is only found if an evaluation happens to land between its roots.
    Returns (t_event, mask): t_event is the right end of a bracket [t_lo, t_event] no wider than xtol with
    no component crossed at t_lo, so every sign has already changed at t_event; mask (B, m) marks all
    components crossed at t_event: every one that crosses within xtol/2 after the earliest crossing, and
    none that crosses more than xtol after it (they are handled as one event).
    The search is crossing_search_next's, with gfun evaluated at each of its trial times.
    """
    g0 = np.ascontiguousarray(g0, dtype=float)
    g1 = np.ascontiguousarray(g1, dtype=float)
    if g0.ndim == 1:
        g0, g1 = g0.reshape(1, -1), g1.reshape(1, -1)
        squeeze = True
    else:
        squeeze = False
    directions = np.ascontiguousarray(np.broadcast_to(np.asarray(directions), g0.shape[-1:]),
                                      dtype=np.int64)
    fs = np.zeros(len(SEARCH_FLOATS))
    ist = np.zeros(len(SEARCH_INTS), dtype=np.int64)
    g_lo, g_hi, sign = np.empty_like(g0), np.empty_like(g0), np.empty_like(g0)
    cand = np.empty(g0.shape, dtype=np.bool_)
    if not crossing_search_begin(float(t0), float(t1), g0, g1, directions, float(xtol), fs, ist,
                                 g_lo, g_hi, cand, sign):
        return None
    g = g1
    while crossing_search_next(fs, ist, g_lo, g_hi, cand, sign, g):
        g = np.ascontiguousarray(gfun(float(fs[_TRIAL])), dtype=float).reshape(g0.shape)
    mask = np.empty(g0.shape, dtype=np.bool_)
    crossing_mask(g_hi, cand, sign, mask)
    return float(fs[_HI]), (mask.reshape(-1) if squeeze else mask)


@numba.njit(cache=True, error_model="numpy")
def crossed_into(g0, g1, directions, mask):
    """mask (B, m) = the sign changes from g0 to g1 in each function's direction (directions
    (m,): +1 rising, -1 falling, 0 either; a NaN never crosses); True when there is one. The
    compiled loop's twin of Simulation.crossed."""
    B, m = g0.shape
    found = False
    for b in range(B):
        for j in range(m):
            a, c, d = g0[b, j], g1[b, j], directions[j]
            rising = a < 0 and c >= 0
            falling = a > 0 and c <= 0
            hit = rising if d > 0 else (falling if d < 0 else (rising or falling))
            mask[b, j] = hit
            found |= hit
    return found


@numba.njit(cache=True, error_model="numpy")
def baseline_needed(g, g_prev):
    """Whether a major step's baseline of g needs the probe a moment later (Simulation._baseline):
    a component exactly zero, or one an event has just fired (NaN in g_prev)."""
    B, m = g.shape
    for b in range(B):
        for j in range(m):
            if g[b, j] == 0.0 or np.isnan(g_prev[b, j]):
                return True
    return False


@numba.njit(cache=True, error_model="numpy")
def any_zero(g):
    """Whether a component of g (B, m) is exactly zero."""
    B, m = g.shape
    for b in range(B):
        for j in range(m):
            if g[b, j] == 0.0:
                return True
    return False


@numba.njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def copy2d(dst, src):
    """dst[:, :] = src for (B, m) arrays."""
    for b in range(dst.shape[0]):
        for j in range(dst.shape[1]):
            dst[b, j] = src[b, j]


# ---- the hybrid rules of a major step, in compiled code ------------------------------------------
# The rendered adaptive loop's twins of Simulation's event rules (engine/scheduler.py: fire_events,
# _phase_events_at_t, _baseline), for a plan whose blocks all react in kernels.

@numba.njit(cache=True, error_model="numpy")
def any_fired(mask, e, f):
    """Whether a member's function in columns e:f of mask (B, n_zc) fired."""
    for b in range(mask.shape[0]):
        for j in range(e, f):
            if mask[b, j]:
                return True
    return False


@numba.njit(cache=True, error_model="numpy")
def note_events(times, rows, count, t, block, mask, e, f):
    """Append the events of one block (its functions in columns e:f of mask) at time t: times[k]
    = t, rows[k] = (block, function index, member), member by member as Simulation.fire_events
    lists them; returns the new count. The caller keeps room for B (f - e) more."""
    for b in range(mask.shape[0]):
        for j in range(e, f):
            if mask[b, j]:
                times[count] = t
                rows[count, 0] = block
                rows[count, 1] = j - e
                rows[count, 2] = b
                count += 1
    return count


@numba.njit(cache=True, error_model="numpy")
def fired_before(g_prev, fired):
    """fired = the functions an event at this time has fired (NaN in the baseline g_prev)."""
    for b in range(g_prev.shape[0]):
        for j in range(g_prev.shape[1]):
            fired[b, j] = np.isnan(g_prev[b, j])


@numba.njit(cache=True, error_model="numpy")
def mark_fired(fired, mask):
    """fired |= mask."""
    for b in range(fired.shape[0]):
        for j in range(fired.shape[1]):
            fired[b, j] = fired[b, j] or mask[b, j]


@numba.njit(cache=True, error_model="numpy")
def clear_fired(fired):
    """fired = False everywhere."""
    for b in range(fired.shape[0]):
        for j in range(fired.shape[1]):
            fired[b, j] = False


@numba.njit(cache=True, error_model="numpy")
def probe_needed(g, fired):
    """Whether the baseline of g needs the probe a moment later: a component exactly zero, or one
    that has just fired."""
    for b in range(g.shape[0]):
        for j in range(g.shape[1]):
            if g[b, j] == 0.0 or fired[b, j]:
                return True
    return False


@numba.njit(cache=True, error_model="numpy")
def baseline_after_event(g_prev, mask, g_end):
    """The baseline after a located event's reactions: NaN for the functions it fired (judged
    again at the event's major step), g_end for the others."""
    for b in range(g_prev.shape[0]):
        for j in range(g_prev.shape[1]):
            g_prev[b, j] = np.nan if mask[b, j] else g_end[b, j]


@numba.njit(cache=True, error_model="numpy")
def baseline_from_probe(g_prev, g, later, fired):
    """Simulation._baseline's rule: g_prev = g, with each component that is zero or has fired
    replaced by its value a moment later where that is finite and not zero (the direction it
    leaves in); True when one leaves."""
    leaves = False
    for b in range(g.shape[0]):
        for j in range(g.shape[1]):
            v = later[b, j]
            leave = (g[b, j] == 0.0 or fired[b, j]) and np.isfinite(v) and v != 0.0
            g_prev[b, j] = v if leave else g[b, j]
            leaves |= leave
    return leaves
