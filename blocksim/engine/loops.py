"""Small numba helpers shared by every diagram's compiled code (compiled once, cached on disk).

Generated modules call these instead of numpy slice assignments, which numba is slow to compile.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", inline="always")
def copy1d(dst, src):
    """dst[:] = src for 1-D arrays (the fixed-step loop's flat state copies)."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@njit(cache=True, error_model="numpy", inline="always")
def copy_to_log(log, pos, src):
    """log[:, pos, :] = src: one logged sample of a (B, width) signal into (B, n_times, width)."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            log[i, pos, j] = src[i, j]


@njit(cache=True, error_model="numpy", inline="always")
def all_finite(a):
    """True when no element of the (B, n) array is NaN or Inf. One flag or-ed over all elements,
    no early exit: branch-free loops the compiler vectorises (the states are finite at almost
    every check). No reshape: numba's costs a few hundred ns a call."""
    bad = False
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            bad |= not np.isfinite(a[i, j])
    return not bad


@njit(cache=True, error_model="numpy", inline="always")
def rate_hits(n, per, off, hits):
    """hits[r] = rate r has a sample hit at base tick n (n >= offset, (n - offset) % period == 0)."""
    for r in range(per.shape[0]):
        hits[r] = n >= off[r] and (n - off[r]) % per[r] == 0


@njit(cache=True, error_model="numpy")
def stash(buffer, at, a):
    """buffer[at:at + a.size] = a (a (B, n) array, a view of columns too); the next position.
    Not inlined: one compiled copy serves every call site (the snapshot of a quiet hit)."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            buffer[at] = a[i, j]
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
