"""Long traces thinned for display: at most `cap` points of each trace, keeping each bucket's
minimum and maximum (so peaks, spikes and the envelope stay where they were; plotly draws a
line through them). The full data stays in the run's files."""
from __future__ import annotations

import numpy as np

DEFAULT_MAX_POINTS = 5000
"""Points per trace shown by default: a W1 run (2,001 samples) is shown whole."""


def minmax_indices(y: np.ndarray, cap: int) -> np.ndarray:
    """The indices of y to show, in order: all of them when len(y) <= cap, else the first and
    last samples and, in each of (cap - 2) // 2 equal buckets between them, the samples of the
    bucket's minimum and maximum (a NaN counts as both, so gaps stay gaps)."""
    n = len(y)
    if cap < 4:
        raise ValueError(f"a trace needs at least 4 points for min/max decimation, got {cap}")
    if n <= cap:
        return np.arange(n)
    buckets = (cap - 2) // 2
    edges = np.linspace(1, n - 1, buckets + 1).astype(np.int64)
    keep = [0]
    for a, b in zip(edges[:-1], edges[1:]):
        if b <= a:
            continue
        part = y[a:b]
        bad = np.flatnonzero(~np.isfinite(part))
        if bad.size:
            lo = hi = int(bad[0])
        else:
            lo, hi = int(np.argmin(part)), int(np.argmax(part))
        keep.extend(sorted({a + lo, a + hi}))
    keep.append(n - 1)
    return np.asarray(keep, dtype=np.int64)
