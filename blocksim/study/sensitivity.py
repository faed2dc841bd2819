"""Sobol sensitivity indices of a study's metrics (`sampling: saltelli`), by SALib (the optional
extra `sensitivity`: pip install -e '.[sensitivity]').

For each metric column and each drawn factor: the first-order index S1 (the share of the
metric's variance that the factor explains alone) and the total index ST (alone and with every
other factor), each with its bootstrap confidence interval (95 %, half-width). Indices are
fractions of the variance (dimensionless). An interval wider than `WIDE` is too wide for the
sample size to read the index from, and the study warns, naming the column and the factor.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import BlocksimError, BlocksimWarning

WIDE = 0.1
"""A confidence half-width (of an index between 0 and 1) above which a study warns."""

RESAMPLES = 200


def _salib():
    try:
        from SALib.analyze import sobol as analyze
        from SALib.sample import sobol as sample
    except ImportError:
        raise BlocksimError("sampling: saltelli (Sobol indices) needs SALib: pip install -e "
                            "'.[sensitivity]'") from None
    return sample, analyze


def _problem(dims: int) -> dict:
    return {"num_vars": dims, "names": [f"u{i}" for i in range(dims)], "bounds": [[0.0, 1.0]] * dims}


def saltelli_design(dims: int, samples: int, seed: int) -> np.ndarray:
    """Saltelli's design in the unit cube, samples (dims + 2) rows (first-order and total
    indices; no second order), seeded by the study seed."""
    sample, _ = _salib()
    return sample.sample(_problem(dims), samples, calc_second_order=False, seed=seed)


def sobol_indices(factors: list[str], rows: list[dict], columns: list[str], seed: int,
                  where: str = "") -> dict:
    """{column: {factor: {S1, S1_conf, ST, ST_conf}}} of the rows of a saltelli study, in member
    order; `where` names the study in warnings. A column with a failed member (no value) has no
    indices: the design needs every row."""
    _, analyze = _salib()
    out = {}
    for col in columns:
        y = np.array([r.get(col, np.nan) for r in rows], dtype=float)
        if not np.isfinite(y).all():
            bad = int((~np.isfinite(y)).sum())
            warnings.warn(BlocksimWarning(f"{where}: no Sobol indices of {col}: {bad} member(s) "
                                          "have no finite value (Saltelli's design needs them all)"))
            continue
        if np.ptp(y) == 0.0:
            out[col] = {f: {"S1": 0.0, "S1_conf": 0.0, "ST": 0.0, "ST_conf": 0.0} for f in factors}
            continue
        found = analyze.analyze(_problem(len(factors)), y, calc_second_order=False,
                                num_resamples=RESAMPLES, seed=seed)
        out[col] = {f: {k: float(found[k][i]) for k in ("S1", "S1_conf", "ST", "ST_conf")}
                    for i, f in enumerate(factors)}
        wide = [f for f, v in out[col].items() if max(v["S1_conf"], v["ST_conf"]) > WIDE]
        if wide:
            warnings.warn(BlocksimWarning(
                f"{where}: the Sobol indices of {col} for {', '.join(wide)} have confidence "
                f"intervals wider than +-{WIDE} with samples: {len(rows) // (len(factors) + 2)}; "
                "take more samples (4 times the samples halve the intervals)"))
    return out


def indices_text(indices: dict) -> str:
    """The indices as a table, one line per column and factor."""
    lines = []
    for col, by_factor in indices.items():
        width = max(len(f) for f in by_factor)
        lines.append(f"Sobol indices of {col} (95 % intervals):")
        for f, v in sorted(by_factor.items(), key=lambda kv: -kv[1]["ST"]):
            lines.append(f"  {f:<{width}}  S1 {v['S1']:7.3f} +- {v['S1_conf']:.3f}   "
                         f"ST {v['ST']:7.3f} +- {v['ST_conf']:.3f}")
    return "\n".join(lines)
