"""The residual check of an identified model: is what is left of the measured torque noise, or does
it follow the joint positions (the mark of a term the rigid model lacks: joint elasticity, a gear
backlash, an unmodelled offset)?

The test, per joint j: regress the residual r_j (N m) on a low-order Fourier series in every
joint's position (a constant, and sin h q_k, cos h q_k for h = 1..H and every joint k: p = 2 H n
terms beyond the constant) and compare that model with the constant alone by the F-test of nested
linear models (Seber and Lee, "Linear Regression Analysis", 2nd ed. 2003, section 4.3):

    F = ((RSS_0 - RSS_1) / p) / (RSS_1 / (N - p - 1)),   F ~ F(p, N - p - 1) under "noise only",

flagged when its p-value lies below ALPHA = 1e-3 (the F distribution's upper 0.1 % point). The
F-test needs independent errors, and the processed data are not: the low-pass and the averaging
make neighbouring samples of the noise alike. So the test runs on every m-th sample, m the
integrated autocorrelation time of the Fourier model's own residual (the noise's estimate under
either hypothesis), 1 + 2 sum rho_k over the initial positive sequence of its autocorrelation
(Geyer, "Practical Markov chain Monte Carlo", Statistical Science 7, 1992), rounded up: samples m
apart are about uncorrelated. rms (N m), the lag-1 autocorrelation and the share of the
residual's variance the Fourier series explains (position_r2) are reported alongside.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats

ALPHA = 1e-3
"""The check's significance level: a joint is flagged when the F-test's p-value is below it."""
HARMONICS = 2
"""H: harmonics of each joint position in the Fourier series (sin h q, cos h q, h = 1..H)."""


@dataclass(frozen=True)
class ResidualCheck:
    """Per joint: rms residual (N m); lag1 its lag-one autocorrelation (near 0 for white noise; the
    filtered, decimated data are smooth, so a value near 1 only says the residual is slow);
    position_r2, the share of its variance the Fourier series in the joint positions explains;
    F and p_value, the F-test of that series (module docstring) on every `step`-th sample, with
    `dof` its degrees of freedom (p, N_thinned - p - 1); `suspect` flags joints whose p-value
    lies below `alpha`."""

    rms: np.ndarray
    lag1: np.ndarray
    position_r2: np.ndarray
    F: np.ndarray
    p_value: np.ndarray
    step: np.ndarray
    dof: np.ndarray
    alpha: float

    @property
    def suspect(self) -> np.ndarray:
        return self.p_value < self.alpha

    def metrics(self) -> dict:
        """The check as plain lists, for metrics.json."""
        return {"rms": self.rms.tolist(), "lag1": self.lag1.tolist(),
                "position_r2": self.position_r2.tolist(), "F": self.F.tolist(),
                "p_value": self.p_value.tolist(), "step": self.step.tolist(),
                "dof": self.dof.tolist(), "alpha": self.alpha, "suspect": self.suspect.tolist()}


def fourier_in_positions(q, harmonics: int = HARMONICS) -> np.ndarray:
    """The regressor (N, 1 + 2 H n): a constant, then sin h q_k, cos h q_k (h = 1..H) per joint k."""
    q = np.asarray(q, float)
    return np.column_stack([np.ones(q.shape[0])] + [f(h * q[:, k]) for k in range(q.shape[1])
                                                     for h in range(1, harmonics + 1)
                                                     for f in (np.sin, np.cos)])


def correlation_time(e) -> int:
    """The integrated autocorrelation time of the series e (N,), in samples, rounded up: 1 + 2
    sum rho_k over the initial positive sequence of its autocorrelation (Geyer 1992); 1 for a
    white series."""
    e = np.asarray(e, float) - np.mean(e)
    var = np.dot(e, e)
    if var == 0.0:
        return 1
    tau = 1.0
    for k in range(1, e.shape[0] // 2):
        rho = np.dot(e[k:], e[:-k]) / var
        if rho <= 0.0:
            break
        tau += 2.0 * rho
    return int(np.ceil(tau))


def residual_check(residual, q, harmonics: int = HARMONICS, alpha: float = ALPHA) -> ResidualCheck:
    """The check of a residual (N, n) N m of a fit or a validation against the joint positions
    q (N, n) rad, per joint (module docstring)."""
    r = np.asarray(residual, float)
    q = np.asarray(q, float)
    N, n = r.shape
    rms = np.sqrt(np.mean(r ** 2, axis=0))
    rc = r - r.mean(axis=0)
    den = np.maximum(np.sum(rc ** 2, axis=0), 1e-300)
    lag1 = np.sum(rc[1:] * rc[:-1], axis=0) / den
    X = fourier_in_positions(q, harmonics)
    p = X.shape[1] - 1
    coef, *_ = np.linalg.lstsq(X, r, rcond=None)
    fit = X @ coef
    r2 = np.sum((fit - fit.mean(axis=0)) ** 2, axis=0) / den
    F, pval, steps = np.zeros(n), np.zeros(n), np.zeros(n, dtype=int)
    dof = np.zeros((n, 2), dtype=int)
    for j in range(n):
        step = correlation_time(r[:, j] - fit[:, j])
        keep = slice(0, N, step)
        Xs, rs = X[keep], r[keep, j]
        m = rs.shape[0]
        if m <= p + 1:
            F[j], pval[j] = np.nan, 1.0             # too few independent samples to test
        else:
            rss0 = np.sum((rs - rs.mean()) ** 2)
            c, *_ = np.linalg.lstsq(Xs, rs, rcond=None)
            rss1 = np.sum((rs - Xs @ c) ** 2)
            F[j] = ((rss0 - rss1) / p) / max(rss1 / (m - p - 1), 1e-300)
            pval[j] = float(scipy.stats.f.sf(F[j], p, m - p - 1))
        steps[j] = step
        dof[j] = (p, m - p - 1)
    return ResidualCheck(rms, lag1, r2, F, pval, steps, dof, float(alpha))
