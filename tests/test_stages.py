"""memberwise_stage_sum against the per-element sum it promises, bit for bit, over every
explicit tableau's rows: one pass for a row with one nonzero weight, a pass per weight otherwise,
and the same floats either way (signed zeros, infinities and NaN included)."""
from __future__ import annotations

import numpy as np
import pytest

from blocksim.solvers.stages import memberwise_stage_sum
from blocksim.solvers.tableaux import (BogackiShampineTableau, DOP853Tableau, DormandPrinceTableau,
                                       EulerTableau, HeunTableau, RK4Tableau)


def per_element(base, h, weights, stages, count):
    """The promised sum, written the plain way: each element from 0.0, weights in order, zero
    weights skipped, then base + h * sum."""
    out = np.empty_like(base)
    with np.errstate(invalid="ignore"):        # inf * 0.0 is NaN, as in the compiled sum
        for k in range(base.shape[0]):
            acc = 0.0
            for j in range(count):
                if weights[j] != 0.0:
                    acc += weights[j] * stages[j, k]
            out[k] = base[k] + h * acc
    return out


def rows_of(tableau):
    rows = [(np.asarray(tableau.A[i], dtype=float), i) for i in range(1, len(tableau.b))]
    return rows + [(np.asarray(tableau.b, dtype=float), len(tableau.b))]


TABLEAUX = [EulerTableau, HeunTableau, RK4Tableau, BogackiShampineTableau, DormandPrinceTableau,
            DOP853Tableau]


@pytest.mark.parametrize("size", [1, 6, 33, 6000])        # one member's state and a batch's
@pytest.mark.parametrize("tableau", TABLEAUX, ids=lambda t: t.__name__)
def test_stage_sum_is_the_per_element_sum_bit_for_bit(tableau, size):
    rng = np.random.default_rng(size)
    for weights, count in rows_of(tableau):
        stages = rng.standard_normal((count + 1, size)) * 10.0 ** rng.integers(-8, 8, (count + 1, 1))
        base = rng.standard_normal(size)
        h = 1e-3 * (1 + rng.random())
        out = np.full(size, 7.0)
        memberwise_stage_sum(base, h, weights, stages, count, out)
        expected = per_element(base, h, weights, stages, count)
        assert np.array_equal(out.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("weights", [np.array([0.0, 0.5, 0.0]), np.array([0.25, 0.0, 0.75]),
                                     np.array([0.0, 0.0, 0.0])], ids=["one", "two", "none"])
def test_signed_zeros_and_non_finite_stages_as_the_per_element_sum(weights):
    """-0.0 bases and products (0.0 + -0.0 is +0.0: the single-weight pass keeps the 0.0 start),
    inf and NaN stages, and a zero weight on a NaN stage (skipped, so no NaN)."""
    base = np.array([-0.0, -0.0, 1.0, -0.0, 2.0, -0.0])
    stages = np.array([[np.nan, 1.0, 2.0, -0.0, 3.0, np.inf],
                       [-0.0, -0.0, np.inf, -0.0, np.nan, 1.0],
                       [np.nan, 0.0, -np.inf, 0.0, 1.0, -0.0]])
    out = np.empty(6)
    for h in (1e-3, -0.0, 0.0):
        memberwise_stage_sum(base, h, weights, stages, 3, out)
        expected = per_element(base, h, weights, stages, 3)
        assert np.array_equal(out.view(np.int64), expected.view(np.int64)), (h, out, expected)
