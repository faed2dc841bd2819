"""Logging of signals on an exact time grid of its own (decimation), into preallocated arrays."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..errors import SampleTimeError


def log_sample_count(start: Fraction, stop: Fraction, every: Fraction) -> int:
    """How many times log_times(start, stop, every) holds: every full interval, plus the stop
    when it is off the grid (exact)."""
    count = int((stop - start) // every)
    return count + 1 + (start + count * every != stop)


def log_times(start: Fraction, stop: Fraction, every: Fraction) -> np.ndarray:
    """start, start + every, ... up to stop, always ending at stop (s); exact rationals to floats."""
    if every <= 0:
        raise SampleTimeError(f"log.every must be positive, got {float(every)} s")
    count = int((stop - start) // every)
    den = math.lcm(start.denominator, every.denominator)
    first = start.numerator * (den // start.denominator)
    step = every.numerator * (den // every.denominator)
    last = first + count * step
    if max(abs(first), abs(last), abs(step), den) < 2 ** 53:
        # integers exact in doubles: one IEEE division each, correctly rounded as float(Fraction)
        # (the step counts too: an interval longer than the run leaves last == first)
        times = (first + step * np.arange(count + 1, dtype=np.int64)).astype(float) / den
    else:
        times = np.array([float(start + k * every) for k in range(count + 1)])
    if start + count * every != stop:
        times = np.append(times, float(stop))
    return times


class Recorder:
    """Copies the logged output buffers into (B, n_times, width) arrays at each log time.

    signals: name -> the live output buffer (B, width) that the scheduler keeps up to date.
    into: name -> the (B, n_times, width) array to log into (a per-member batch's members log
    into their rows of the batch's arrays, engine/members.py); new arrays otherwise, left
    unfilled: a run writes the samples 0 .. count - 1 in order and `finished` hands out those
    alone (filling W1's six arrays with NaN was a fifth of a compiled run's Python around its
    loop).
    """

    def __init__(self, signals: dict[str, np.ndarray], times: np.ndarray,
                 into: dict[str, np.ndarray] | None = None):
        self.times = times
        self.sources = list(signals.items())
        self.data = {name: into[name] if into is not None else
                     np.empty((buf.shape[0], len(times), buf.shape[1]))
                     for name, buf in signals.items()}
        self._targets = [(self.data[name], buf) for name, buf in self.sources]
        self.count = 0

    def release(self) -> None:
        """Let go of the logged arrays (the Result that has them keeps them alive alone)."""
        self.data = {}
        self._targets = []

    @property
    def next_time(self) -> float:
        """The next time to log (s), inf when the grid is exhausted."""
        return self.times[self.count] if self.count < len(self.times) else np.inf

    def record(self) -> None:
        k = self.count
        for store, buf in self._targets:
            store[:, k, :] = buf
        self.count = k + 1

    def record_final(self, t: float) -> None:
        """Log at a stop that is not on the grid (terminal event, interrupt): the last sample is t."""
        if self.count < len(self.times):
            self.times = self.times.copy()
            self.times[self.count] = t
            self.record()

    def finished(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The times and data actually logged (shorter than the grid after an early stop)."""
        n = self.count
        return self.times[:n].copy(), {name: arr[:, :n, :] for name, arr in self.data.items()}
