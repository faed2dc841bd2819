"""Validation of an identified model on data it was not fitted to: relative RMS torque error per
joint (measured and predicted torque through the same parallel filter, `ProcessedData.parallel`),
the noise floor it is to be read against, and a residual check (whiteness, and structure that
follows the joint positions)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def relative_rms_error(tau_measured, tau_predicted) -> np.ndarray:
    """Per joint: rms(tau_measured - tau_predicted) / rms(tau_measured) (dimensionless; 5-10 % is
    a usual result for a six-axis industrial arm)."""
    e = np.asarray(tau_measured) - np.asarray(tau_predicted)
    return np.sqrt(np.mean(e ** 2, axis=0)) / np.maximum(np.sqrt(np.mean(np.asarray(tau_measured) ** 2,
                                                                           axis=0)), 1e-300)


def noise_floor(data) -> np.ndarray:
    """Per joint: the relative RMS torque error a perfect model would score on processed data
    `data` (ProcessedData with periods averaged), the measurement noise left after averaging and
    the parallel filter: tau_std x the filter's noise gain / rms(tau) (dimensionless). A model
    scoring near it is as good as the data can tell."""
    return data.tau_std * data.noise_gain() / np.maximum(np.sqrt(np.mean(data.tau ** 2, axis=0)),
                                                         1e-300)


@dataclass(frozen=True)
class ResidualCheck:
    """Per joint: rms residual (N m); lag1 its lag-one autocorrelation (near 0 for white noise; the
    averaged, filtered, decimated data are smooth, so a value near 1 only says the residual is slow);
    position_r2, the share of the residual's variance explained by a low-order Fourier series in the
    joint positions (sin and cos of q_k and 2 q_k for every joint k, and a constant) - a large share
    is the usual sign of a missing term (elasticity, backlash, an unmodelled offset) rather than
    noise; `suspect` flags joints whose position_r2 exceeds `threshold`."""

    rms: np.ndarray
    lag1: np.ndarray
    position_r2: np.ndarray
    threshold: float

    @property
    def suspect(self) -> np.ndarray:
        return self.position_r2 > self.threshold


def residual_check(residual, q, threshold: float = 0.3) -> ResidualCheck:
    """Residual (N, n) N m of a fit or a validation, against joint positions q (N, n) rad."""
    r = np.asarray(residual, float)
    q = np.asarray(q, float)
    N, n = r.shape
    rms = np.sqrt(np.mean(r ** 2, axis=0))
    rc = r - r.mean(axis=0)
    den = np.maximum(np.sum(rc ** 2, axis=0), 1e-300)
    lag1 = np.sum(rc[1:] * rc[:-1], axis=0) / den
    F = np.column_stack([np.ones(N)] + [f(k * q[:, j]) for j in range(q.shape[1])
                                         for k in (1, 2) for f in (np.sin, np.cos)])
    coef, *_ = np.linalg.lstsq(F, r, rcond=None)
    fit = F @ coef
    r2 = np.sum((fit - fit.mean(axis=0)) ** 2, axis=0) / den
    return ResidualCheck(rms, lag1, r2, threshold)
