"""Validation of an identified model on data it was not fitted to: relative RMS torque error per
joint (measured and predicted torque through the same parallel filter, `ProcessedData.parallel`),
the noise floor it is to be read against (the torque noise and the encoder's quantisation), and
the residual check (`residuals`: structure that follows the joint positions, by an F-test)."""
from __future__ import annotations

import numpy as np

from .residuals import ResidualCheck, residual_check  # noqa: F401  (the pipeline's check)


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


def encoder_floor(data, predict, seed: int = 0) -> np.ndarray:
    """Per joint: the relative RMS torque error the encoder's quantisation of q (data.q_resolution,
    rad) puts into a prediction, dimensionless; zeros when q is on no grid. predict(q, qd, qdd)
    gives the full-rate torque (N_full, n) of the model under test (the error in qdd is scaled by
    the arm's inertia). The quantisation error is taken as white and uniform over one count (std
    resolution / sqrt 12, seeded) on the averaged record and taken through the same state filter,
    differences, model and parallel filter. It is not divided by the periods averaged: an arm
    repeating its motion to within a count quantises every period alike, an error the spread
    between periods (`noise_floor`) cannot see. It grows about as cutoff^2.5, the differences
    amplifying it in the band the parallel filter keeps."""
    n = data.tau.shape[1]
    if data.q_resolution is None:
        return np.zeros(n)
    q = data.states[0]
    dq = (np.random.default_rng(seed).random(q.shape) - 0.5) * data.q_resolution
    moved = [s + e for s, e in zip(data.states, data.states_of(dq))]
    err = data.parallel(predict(*moved) - predict(*data.states))
    return np.sqrt(np.mean(err ** 2, axis=0)) / np.maximum(np.sqrt(np.mean(data.tau ** 2, axis=0)),
                                                            1e-300)


def measurement_floor(data, predict, seed: int = 0) -> dict:
    """The validation's noise floor: {'torque': `noise_floor`, 'encoder': `encoder_floor`, 'total':
    their root sum of squares} per joint (dimensionless): what a perfect model scores on `data`."""
    torque, encoder = noise_floor(data), encoder_floor(data, predict, seed)
    return {"torque": torque, "encoder": encoder, "total": np.hypot(torque, encoder)}
