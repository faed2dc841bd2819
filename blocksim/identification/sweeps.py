"""The friction stage of a staged identification: constant-velocity sweeps, one joint at a time in
both directions, and the friction curve (viscous, Coulomb per direction, Stribeck excess) fitted
to torque against speed.

While joint j turns at a constant speed v with the others still, its torque is g_j(q) + f_j(v)
exactly: qdd = 0, and the velocity-product torque on joint j from its own speed vanishes (its
diagonal mass-matrix entry does not depend on q_j). With the gravity torque known from the
gravity stage, each sweep gives one point of the friction curve f_j(v), its mean over the sweep;
the points of all speeds and both directions are fitted with the friction columns of the
identification regressor (`IdentificationModel`, the same law the robot file and the all-at-once
identification use) by weighted least squares.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .estimation import Estimate, weighted_least_squares
from .processing import Measurement, corrupt
from .regressor import IdentificationModel

SPEEDS = (0.05, 0.1, 0.2, 0.5, 1.0)
"""Sweep speeds (rad/s), each run in both directions."""


@dataclass(frozen=True)
class SweepData:
    """Sweep points: joint (S,) index of the joint that turned, speed (S,) rad/s its measured mean
    speed (signed), q (S, n) rad the mid-sweep pose, tau (S,) N m the joint's mean torque less the
    gravity torque of the gravity stage (the friction torque), tau_std (S,) N m that mean's
    standard deviation from the samples' spread."""

    joint: np.ndarray
    speed: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    tau_std: np.ndarray


def sweep_centres(model: IdentificationModel, home, travel: float) -> np.ndarray:
    """Per joint the sweep's middle angle (rad): the home angle moved inside the joint limits so
    that home +- travel / 2 fits."""
    home = np.broadcast_to(np.asarray(home, float), (model.n,))
    lo, hi = model.robot.q_lower + 0.5 * travel, model.robot.q_upper - 0.5 * travel
    if np.any(lo > hi):
        j = int(np.nonzero(lo > hi)[0][0])
        raise ParameterError(f"a sweep of {travel:g} rad does not fit in joint {j + 1}'s limits")
    return np.clip(home, lo, hi)


def sweep_measurement(robot, model: IdentificationModel, home, gravity, *, speeds=SPEEDS,
                      travel: float = 0.4, rate: float = 1000.0, measurement: dict | None = None,
                      seed: int = 0) -> SweepData:
    """The sweeps of `robot` (the plant's RobotModel: its rnea and its own friction law give the
    torque): each joint in turn at each speed (rad/s) in both directions over `travel` rad about
    its `sweep_centres` angle, the others at `home`, sampled at `rate` Hz and corrupted as a
    drive reports (`processing.corrupt` with `measurement`, noise `seed` + sweep number). The
    speed is the encoder's: (q_end - q_start) / duration. `gravity(q)` (P, n) -> (P, n) is the
    gravity stage's torque model, subtracted sample by sample."""
    centres = sweep_centres(model, home, travel)
    base = np.broadcast_to(np.asarray(home, float), (model.n,)).copy()
    rows = {k: [] for k in ("joint", "speed", "q", "tau", "tau_std")}
    k = 0
    for j in range(model.n):
        for v in speeds:
            for sign in (1.0, -1.0):
                T = travel / v
                t = np.arange(int(round(T * rate)) + 1) / rate
                q = np.repeat(base[None, :], t.size, axis=0)
                q[:, j] = centres[j] - sign * 0.5 * travel + sign * v * t
                qd = np.zeros_like(q)
                qd[:, j] = sign * v
                tau = robot.rnea(q, qd, np.zeros_like(q)) + robot.friction_torque(qd)
                m = corrupt(Measurement(t, q, tau), **{**(measurement or {}), "seed": seed + k})
                k += 1
                f = m.tau[:, j] - gravity(m.q)[:, j]
                rows["joint"].append(j)
                rows["speed"].append((m.q[-1, j] - m.q[0, j]) / (t[-1] - t[0]))
                rows["q"].append(m.q[t.size // 2])
                rows["tau"].append(f.mean())
                rows["tau_std"].append(f.std(ddof=1) / np.sqrt(f.size))
    return SweepData(*(np.array(rows[k]) for k in ("joint", "speed", "q", "tau", "tau_std")))


def friction_columns(model: IdentificationModel, j: int) -> np.ndarray:
    """Indices into theta of joint j's friction entries: fv, fcp, fcn and, with Stribeck, fs."""
    fr, st = model.friction_slice(), model.stribeck_slice()
    cols = list(range(fr.start + 3 * j, fr.start + 3 * j + 3))
    if st.stop > st.start:
        cols.append(st.start + j)
    return np.array(cols, dtype=int)


@dataclass(frozen=True)
class FrictionFit:
    """The friction stage's result: per joint its WLS estimate of (fv, fcp, fcn[, fs]) in the
    friction columns' units, the rms residual of the curve (N m), and theta (p,) the given
    parameters with the friction entries replaced."""

    estimates: list
    rms: np.ndarray
    theta: np.ndarray
    names: list


def fit_friction(model: IdentificationModel, data: SweepData, theta) -> FrictionFit:
    """Per joint, the friction entries fitted to its sweep points: the friction columns of the
    regressor at the sweeps' speeds (the model's sign width and Stribeck shape) against the
    friction torque, WLS with each point weighted by 1 / its standard deviation."""
    if model.friction == "none":
        raise ParameterError("the friction stage needs model.friction coulomb_viscous or stribeck")
    theta = np.array(theta, dtype=float)
    estimates, rms, names = [], np.zeros(model.n), []
    for j in range(model.n):
        sel = data.joint == j
        if np.count_nonzero(sel) < 2:
            raise ParameterError(f"joint {j + 1} has fewer than two friction sweeps")
        qd = np.zeros_like(data.q[sel])
        qd[:, j] = data.speed[sel]
        cols = friction_columns(model, j)
        Y = model.regressor(data.q[sel], qd, np.zeros_like(qd))[:, j:j + 1, cols]
        w = np.maximum(data.tau_std[sel], 1e-12 * max(1.0, float(np.max(np.abs(data.tau[sel])))))
        est = weighted_least_squares(Y / w[:, None, None], (data.tau[sel] / w)[:, None],
                                     sigma=[1.0])
        resid = data.tau[sel] - Y[:, 0, :] @ est.beta
        s2 = np.sum((resid / w) ** 2) / max(resid.size - cols.size, 1)
        est = Estimate(est.beta, est.cov * s2, 100 * np.sqrt(np.diag(est.cov * s2)) /
                       np.maximum(np.abs(est.beta), 1e-300), np.sqrt(np.mean(resid ** 2)) * np.ones(1),
                       resid[:, None], "WLS")
        theta[cols] = est.beta
        estimates.append(est)
        rms[j] = np.sqrt(np.mean(resid ** 2))
        names.append([model.names[c] for c in cols])
    return FrictionFit(estimates, rms, theta, names)
