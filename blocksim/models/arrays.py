"""Array conventions shared by the actuator models: per-joint parameters and batched signals."""
from __future__ import annotations

import numpy as np


def per_joint(value, n: int) -> np.ndarray:
    """A parameter broadcast to a contiguous float64 array of shape (n,), as the kernels take it."""
    return np.array(np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)), order="C")


def as_batch(*signals):
    """Signals broadcast together to contiguous (B, n) float64 arrays, and the shape to give results back in."""
    arrays = np.broadcast_arrays(*[np.asarray(s, dtype=np.float64) for s in signals])
    shape = arrays[0].shape
    if len(shape) > 2:
        raise ValueError(f"signals must have shape (B, n), (n,) or be scalars; got {shape}")
    two_d = [np.array(a.reshape((1,) * (2 - a.ndim) + a.shape), order="C") for a in arrays]
    return two_d, shape


def frozen_array(value, name: str, *, positive: bool = False, nonnegative: bool = False) -> np.ndarray:
    """A dataclass field as a read-only float64 array (scalar or (n,)), checked for sign."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a scalar or a per-joint vector of shape (n,); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if positive and np.any(arr <= 0.0):
        raise ValueError(f"{name} must be > 0; got {value!r}")
    if nonnegative and np.any(arr < 0.0):
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    arr.setflags(write=False)
    return arr
