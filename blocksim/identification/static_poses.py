"""The gravity stage of a staged identification: static poses, the torque that holds the arm at
rest in each, and the base gravity parameters fitted to it alone.

At rest (qd = qdd = 0) the joint torque is the gravity torque g(q) = Y(q, 0, 0) theta: the
inertia, Coriolis, rotor and friction columns of the regressor vanish, so the static regressor
sees only the mass moments, and its base parameters (QR with column pivoting of Y(q, 0, 0) over
random poses, `base.base_parameters` with zero speeds) are the identifiable gravity combinations.
A pose set moves one joint at a time through a list of angles (default -90, -45, 0, 45, 90
degrees) with the others at a home pose; the set is good when its static regressor has the full
gravity rank, and its condition number (unit-norm columns) says how well each combination is seen.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .base import BaseParameters, base_parameters, regressor_rank
from .estimation import Estimate, complete_standard, weighted_least_squares
from .processing import Measurement, corrupt
from .regressor import IdentificationModel

ANGLES_DEG = (-90.0, -45.0, 0.0, 45.0, 90.0)
"""The angles each joint is moved through, with the others fixed (degrees)."""


def pose_set(model: IdentificationModel, home, angles_deg=ANGLES_DEG) -> tuple[np.ndarray, int]:
    """Static poses (P, n) rad: for each joint j and each angle a, the home pose (n,) rad with
    q_j = a; poses outside the robot file's joint limits and repeats are left out. Returns the
    poses and how many were left out for the limits."""
    home = np.broadcast_to(np.asarray(home, float), (model.n,))
    angles = np.deg2rad(np.asarray(angles_deg, float))
    lo, hi = model.robot.q_lower, model.robot.q_upper
    poses, outside = [], 0
    for j in range(model.n):
        for a in angles:
            p = home.copy()
            p[j] = a
            if np.any(p < lo) or np.any(p > hi):
                outside += 1
            elif not any(np.array_equal(p, other) for other in poses):
                poses.append(p)
    if not poses:
        raise ParameterError("no static pose lies inside the joint limits")
    return np.array(poses), outside


def gravity_basis(model: IdentificationModel, samples: int = 200, seed=0) -> BaseParameters:
    """The base gravity parameters: `base_parameters` of the static regressor Y(q, 0, 0)."""
    return base_parameters(model, samples, seed=seed, qd_scale=0.0, qdd_scale=0.0)


@dataclass(frozen=True)
class StaticData:
    """The holding torques of a pose set: q (P, n) rad as the encoder reads it, tau (P, n) N m
    averaged over the hold, tau_std (P, n) N m the standard deviation of that mean (from the
    samples' spread; 0 for exact data), samples per pose."""

    q: np.ndarray
    tau: np.ndarray
    tau_std: np.ndarray
    samples: int


def static_measurement(robot, poses, *, hold: float = 0.5, rate: float = 1000.0,
                       measurement: dict | None = None, seed: int = 0) -> StaticData:
    """What a drive records holding `robot` (the plant's RobotModel, payload included) still in
    each pose: the holding torque g(q) (at rest the friction law gives 0), `hold` s at `rate` Hz,
    through `processing.corrupt` (encoder quantisation, current noise, torque-constant error of
    `measurement`, noise `seed`), averaged over the hold."""
    poses = np.asarray(poses, float)
    P, n = poses.shape
    S = max(1, int(round(hold * rate)))
    q = np.repeat(poses, S, axis=0)
    tau = np.repeat(robot.gravity_torque(poses), S, axis=0)
    m = corrupt(Measurement(np.arange(P * S) / rate, q, tau), **{**(measurement or {}), "seed": seed})
    qm, tm = m.q.reshape(P, S, n), m.tau.reshape(P, S, n)
    std = tm.std(axis=1, ddof=1) / np.sqrt(S) if S > 1 else np.zeros((P, n))
    return StaticData(qm.mean(axis=1), tm.mean(axis=1), std, S)


@dataclass(frozen=True)
class GravityFit:
    """The gravity stage's result: the base gravity parameters `basis` (rank b), the static
    regressor's rank on the poses and its condition number (unit-norm columns), the WLS estimate
    of the b combinations, theta (p,) the prior with its gravity combinations replaced
    (`complete_standard`), and the rms residual per joint on the poses (N m)."""

    basis: BaseParameters
    rank: int
    cond: float
    estimate: Estimate
    theta: np.ndarray
    rms: np.ndarray

    @property
    def full_rank(self) -> bool:
        return self.rank == self.basis.rank


def static_conditioning(model: IdentificationModel, basis: BaseParameters, q) -> tuple[int, float]:
    """Rank and condition number of the static regressor's base columns on poses q (P, n), the
    columns scaled to unit norm (so the number does not depend on the parameters' units)."""
    q = np.asarray(q, float)
    W = basis.columns(model.stacked(q, np.zeros_like(q), np.zeros_like(q)))
    norms = np.linalg.norm(W, axis=0)
    s = np.linalg.svd(W / np.where(norms > 0, norms, 1.0), compute_uv=False)
    return regressor_rank(W), float(s[0] / s[-1]) if s[-1] > 0 else np.inf


def fit_gravity(model: IdentificationModel, basis: BaseParameters, data: StaticData,
                prior) -> GravityFit:
    """The base gravity parameters from the holding torques (WLS, weights per joint from the OLS
    residual), and the prior with them put in. A pose set whose static regressor lacks the full
    gravity rank is a ParameterError naming the rank (choose other home poses or angles)."""
    rank, cond = static_conditioning(model, basis, data.q)
    if rank < basis.rank:
        raise ParameterError(f"the static poses give the static regressor rank {rank}, below the "
                             f"{basis.rank} base gravity parameters: add poses (another home pose "
                             "or more angles)")
    zero = np.zeros_like(data.q)
    Yb = basis.columns(model.regressor(data.q, zero, zero))
    est = weighted_least_squares(Yb, data.tau)
    theta = complete_standard(basis, est.beta, prior)
    return GravityFit(basis, rank, cond, est, theta, np.sqrt(np.mean(est.residual ** 2, axis=0)))
