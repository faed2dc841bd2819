"""The progress bar of a long run."""
from __future__ import annotations

import sys
import time

PROGRESS_AFTER = 2.0
"""Wall-clock seconds after which a run shows a progress bar."""


class Progress:
    """A tqdm bar of simulated time that appears only once a run has lasted PROGRESS_AFTER
    seconds of wall time. start, stop: the run's span (s); enabled: show it (None: only on an
    interactive terminal); unit "members": a bar of a batch's members done instead (from 0 to
    the batch's size)."""

    def __init__(self, start: float, stop: float, enabled: bool | None, unit: str = "s sim"):
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.started = time.perf_counter()
        self.t0, self.t1 = float(start), float(stop)
        self.bar = None
        self.calls = 0
        self.unit = unit

    def update(self, t: float, force: bool = False) -> None:
        """Show simulated time t; checks the clock only every 256th call unless forced."""
        if not self.enabled:
            return
        self.calls += 1
        if self.calls & 255 and not force:
            return
        if self.bar is None:
            if time.perf_counter() - self.started < PROGRESS_AFTER:
                return
            from tqdm import tqdm
            count = "{n:.3f}/{total:.3f}" if self.unit == "s sim" else "{n:.0f}/{total:.0f}"
            self.bar = tqdm(total=self.t1 - self.t0, unit=self.unit, leave=False,
                            bar_format="{l_bar}{bar}| " + count + f" {self.unit} "
                                       "[{elapsed}<{remaining}]")
        self.bar.n = t - self.t0
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
