"""Comparing a compiled run with an interpreted one: shared by the compiled-mode tests."""
from __future__ import annotations

import numpy as np


def assert_same(a, b, tol):
    """Two results log the same signals on the same times, equal to tol."""
    np.testing.assert_array_equal(a.t, b.t)
    assert sorted(a.names) == sorted(b.names)
    for name in a.names:
        diff = np.max(np.abs(a[name] - b[name]), initial=0.0)
        assert diff <= tol, f"{name}: compiled differs from interpreted by {diff}"


def signal_changes(result, name):
    """True when the logged signal is not constant (the diagram really exercises the block)."""
    values = result[name]
    return bool(np.ptp(values.reshape(values.shape[0], -1), axis=0).max() > 0)
