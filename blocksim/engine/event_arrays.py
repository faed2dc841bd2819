"""The compiled adaptive loop's zero-crossing arrays (engine/adaptive_loop.py): the crossing
functions' baseline and values, the crossing search's state and the events the loop noted, kept
between its chunks of steps."""
from __future__ import annotations

import numpy as np

from ..memo import kept
from ..solvers.events import SEARCH_FLOATS, SEARCH_INTS
from .run_output import Event


class EventArrays:
    """The compiled loop's zero-crossing arrays for a run with g of shape (B, n_zc) (no
    crossings: n_zc = 0): the baseline g_prev, g at the last step's end (g_new) and at a located
    event (g_end), the event's mask, the directions, the crossing search's state; the functions
    fired at a major step, g before a probe (g_base) and the state there (x_probe, n_state
    numbers); and the events noted by the loop since the last flush (times, rows: the block's
    index in the plan's crossings, the function, the member)."""

    def __init__(self, g: np.ndarray, directions: np.ndarray, n_state: int):
        shape = g.shape
        self.fired = np.zeros(shape, dtype=np.bool_)
        self.g_base = np.zeros(shape)
        self.x_probe = np.zeros(n_state)
        room = max(256, 8 * g.size)
        self.times = np.zeros(room)
        self.rows = np.zeros((room, 3), dtype=np.int64)
        self.g_prev, self.g_new, self.g_end = (np.zeros(shape) for _ in range(3))
        self.g_lo, self.g_hi, self.sign = (np.zeros(shape) for _ in range(3))
        self.mask = np.zeros(shape, dtype=np.bool_)
        self.cand = np.zeros(shape, dtype=np.bool_)
        self.directions = np.ascontiguousarray(directions, dtype=np.int64)
        self.search_fs = np.zeros(len(SEARCH_FLOATS))
        self.search_is = np.zeros(len(SEARCH_INTS), dtype=np.int64)

    _WITHOUT_CROSSINGS: dict = {}

    @classmethod
    def for_run(cls, g: np.ndarray, directions: np.ndarray, n_state: int) -> "EventArrays":
        """The arrays of one run. A run without crossing functions (g of shape (B, 0)) has a
        loop without the event tasks (_EVENT_TASKS), which never writes them: those runs share
        one set per shape, also across threads (a run's Python around its compiled loop is a
        tenth of W1 dopri5's, and these were a fifth of that)."""
        if g.shape[1] > 0:
            return cls(g, directions, n_state)
        return kept(cls._WITHOUT_CROSSINGS, (g.shape, np.shape(directions), n_state),
                    lambda: cls(g, directions, n_state))

    def flush(self, istate, at: int, events: list, crossings) -> None:
        """The events the loop noted (their count in istate[at]) appended to `events` as Event
        records, and the count reset; crossings: the plan's blocks with zero crossings."""
        count = int(istate[at])
        for k in range(count):
            block, index, member = self.rows[k]
            events.append(Event(float(self.times[k]), crossings[block], int(index), int(member)))
        istate[at] = 0
