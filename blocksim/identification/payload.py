"""Payload estimation: the mass, centre of mass and (where the motion excites it) inertia of an
unknown load at the tool, from a short excitation or from static poses, with the arm's own
parameters known.

The load is a rigid body fixed to the tool frame: its ten standard parameters phi (m, m c, the
inertia about the tool-frame origin, tool axes) enter the torque linearly, through the last
link's regressor columns moved to the tool frame, Y_L A(T_tool) phi (`frames.params_transform_
matrix`). The arm's known torque is subtracted and phi is the weighted least-squares fit of the
rest. Uncertainty: the least-squares covariance (Y^T Sigma^-1 Y)^-1 with Sigma the per-joint
residual variance, multiplied by the filter's correlation factor (`ProcessedData.
noise_correlation`: the processed samples of one excitation are not independent), and carried to
mass, centre of mass and inertia about it by the delta method (their Jacobian, by central
differences); the 95 % intervals are +- 1.96 standard deviations (normal approximation, the
samples being many).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..models.frames import inertial_from_params, params_transform_matrix
from .estimation import weighted_least_squares

Z95 = 1.959963984540054
"""The two-sided 95 % point of the normal distribution."""
QUANTITIES = ("m", "cx", "cy", "cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
"""The reported quantities: mass (kg), centre of mass in the tool frame (m), inertia about the
centre of mass, tool axes (kg m^2)."""


def payload_regressor(robot, q, qd, qdd) -> np.ndarray:
    """(N, n, 10): the joint torques of a unit change of each of the payload's ten parameters
    (m, m cx, m cy, m cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz about the tool-frame origin, tool axes) at
    states (N, n)."""
    n = robot.n
    Y = robot.regressor(np.atleast_2d(q), np.atleast_2d(qd), np.atleast_2d(qdd))
    return Y[..., 10 * (n - 1):10 * n] @ params_transform_matrix(np.asarray(robot.tool))


def physical(phi) -> np.ndarray:
    """(m, cx, cy, cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz) of ten tool-frame parameters phi."""
    m, c, Ic = inertial_from_params(phi)
    return np.concatenate([[m], c, Ic[np.triu_indices(3)]])


@dataclass(frozen=True)
class PayloadEstimate:
    """phi (10,) the estimated tool-frame parameters (inertia entries 0 when not estimated);
    value (10,) and std (10,) of `QUANTITIES` (std NaN for the inertia when not estimated);
    sigma (n,) N m the residual noise per joint; correlation the filter's variance factor applied;
    estimated: whether the inertia was fitted; cond of the fitted columns (unit norm)."""

    phi: np.ndarray
    value: np.ndarray
    std: np.ndarray
    sigma: np.ndarray
    correlation: float
    inertia: bool
    cond: float

    def interval(self, k: int) -> tuple[float, float]:
        """The 95 % interval of quantity k."""
        return (float(self.value[k] - Z95 * self.std[k]), float(self.value[k] + Z95 * self.std[k]))

    @property
    def mass(self) -> float:
        return float(self.value[0])

    @property
    def com(self) -> np.ndarray:
        return self.value[1:4]


def estimate_payload(Yp, tau, *, inertia: bool, correlation: float = 1.0) -> PayloadEstimate:
    """The payload from Yp (N, n, 10) (`payload_regressor`, filtered as tau) and tau (N, n) N m,
    the measured torque less the arm's own. inertia False fits m and m c only (a point mass:
    static poses, or a motion too slow to see the inertia)."""
    cols = np.arange(10) if inertia else np.arange(4)
    A = Yp[..., cols]
    flat = A.reshape(-1, cols.size)
    norms = np.linalg.norm(flat, axis=0)
    if np.any(norms == 0):
        raise ParameterError("the payload's parameters do not show in these torques (no motion "
                             "of the joints that carry it)")
    s = np.linalg.svd(flat / norms, compute_uv=False)
    est = weighted_least_squares(A, tau)
    cov = np.zeros((10, 10))
    cov[np.ix_(cols, cols)] = est.cov * correlation
    phi = np.zeros(10)
    phi[cols] = est.beta
    if phi[0] <= 0:
        raise ParameterError(f"the estimated payload mass is {phi[0]:.4g} kg: no load to estimate")
    J = np.empty((10, 10))
    for k in range(10):
        h = 1e-6 * max(abs(phi[k]), 1e-3)
        e = np.zeros(10)
        e[k] = h
        J[:, k] = (physical(phi + e) - physical(phi - e)) / (2 * h)
    std = np.sqrt(np.maximum(np.diag(J @ cov @ J.T), 0.0))
    if not inertia:
        std[4:] = np.nan
    return PayloadEstimate(phi, physical(phi), std, est.sigma, float(correlation), inertia,
                           float(s[0] / s[-1]))


def payload_metrics(est: PayloadEstimate, truth: np.ndarray | None = None) -> dict:
    """The estimate as plain numbers: per quantity value, std, 95 % interval (and the truth and
    whether the interval holds it, when known)."""
    out = {"correlation_factor": est.correlation, "inertia_estimated": est.inertia,
           "cond": est.cond, "sigma": est.sigma.tolist(), "quantities": {}}
    for k, name in enumerate(QUANTITIES):
        if not est.inertia and k >= 4:
            continue
        lo, hi = est.interval(k)
        row = {"value": float(est.value[k]), "std": float(est.std[k]), "interval95": [lo, hi]}
        if truth is not None:
            row["true"] = float(truth[k])
            row["inside"] = bool(lo <= truth[k] <= hi)
        out["quantities"][name] = row
    return out
