"""Zero-crossing location on a step's dense output: the earliest sign change of event functions g(t)."""
from __future__ import annotations

from typing import Callable

import numpy as np

BISECT_AFTER_SLOW = 2
"""Bisect once the bracket has failed to halve this many iterations in a row (keeps the worst case at
about twice bisection's cost while the Illinois steps converge superlinearly)."""
MAX_ITERATIONS = 200
"""Safety limit on evaluations of gfun per crossing search (bisection from 1 s to 1e-15 s needs 50)."""
ROUNDOFF_SPACINGS = 4
"""xtol is raised to this many floating-point spacings of t: a bracket cannot be narrower."""


def crossing_candidates(g0: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Components (B, m) that may cross: nonzero at the start, and able to move in an allowed direction.

    directions (m,): 0 either way, +1 rising only (from negative), -1 falling only (from positive).
    """
    directions = np.asarray(directions)
    return (g0 != 0) & ((directions == 0) | ((directions > 0) & (g0 < 0)) | ((directions < 0) & (g0 > 0)))


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
    The search is regula falsi with the Illinois modification on the component that crosses first
    (by its secant estimate), guarded by bisection; every evaluation updates the bracket for all components.
    The bracket is narrowed to xtol/2, then its right end moved to t_lo + xtol to collect companions.
    """
    g0 = np.asarray(g0, dtype=float)
    g1 = np.asarray(g1, dtype=float)
    candidates = crossing_candidates(g0, directions)
    start_sign = np.sign(g0)

    def crossed(g: np.ndarray) -> np.ndarray:
        return candidates & (g * start_sign <= 0)

    if not crossed(g1).any():
        return None
    xtol = max(float(xtol), 2 * ROUNDOFF_SPACINGS * float(np.spacing(max(abs(t0), abs(t1)))))
    tol = 0.5 * xtol
    lo, hi, g_lo, g_hi = float(t0), float(t1), g0, g1
    iterations = 0
    while hi - lo > tol and iterations < MAX_ITERATIONS:
        # Focus on the component whose secant estimate of its root is earliest.
        mask = crossed(g_hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            estimate = np.where(mask, lo + (hi - lo) * g_lo / (g_lo - g_hi), np.inf)
        focus = np.unravel_index(np.argmin(estimate), estimate.shape)
        f_lo, f_hi = g_lo[focus], g_hi[focus]
        kept_side = 0
        slow = 0
        while hi - lo > tol and iterations < MAX_ITERATIONS:
            width = hi - lo
            if slow >= BISECT_AFTER_SLOW:
                t = 0.5 * (lo + hi)
                slow = 0
            else:
                t = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            # Stay tol/2 inside the bracket so a trial next to the root closes it from the other side.
            t = min(max(t, lo + 0.5 * tol), hi - 0.5 * tol)
            if not lo < t < hi:
                t = 0.5 * (lo + hi)
                if not lo < t < hi:
                    break
            g = np.asarray(gfun(t), dtype=float)
            iterations += 1
            now_crossed = crossed(g)
            if now_crossed.any():
                hi, g_hi = t, g
                if not now_crossed[focus]:
                    break             # another component crossed earlier: change focus
                f_hi = g[focus]
                if kept_side == 1:
                    f_lo *= 0.5       # Illinois: the low end was kept twice, weaken it
                kept_side = 1
            else:
                lo, g_lo = t, g
                f_lo = g[focus]
                if kept_side == -1:
                    f_hi *= 0.5
                kept_side = -1
            slow = slow + 1 if hi - lo > 0.5 * width else 0
        if iterations >= MAX_ITERATIONS or not lo < 0.5 * (lo + hi) < hi:
            break
    t_last = min(lo + xtol, float(t1))
    if t_last > hi:
        g_last = np.asarray(gfun(t_last), dtype=float)
        if np.all(crossed(g_last) >= crossed(g_hi)):   # no component crossed back meanwhile
            hi, g_hi = t_last, g_last
    return hi, crossed(g_hi)
