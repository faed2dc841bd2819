"""The staged identification, in the order an arm is commissioned: gravity first (static poses,
`static_poses`), friction second (constant-velocity sweeps, `sweeps`), inertia last (the dynamic
excitation of the pipeline, with the gravity and friction torques of the first two stages
subtracted). Each stage is scored by the feedforward's torque error on the validation move.

Why this order (Gautier and Khalil; Swevers et al. 2007): each stage isolates a few parameters in
data where the others vanish or are already known. At rest only gravity acts, so the static poses
give the gravity combinations with no friction or inertia to mix with; at constant speed with the
gravity known, only friction remains; the dynamic excitation then has to explain only M qdd + C qd,
whose combinations it excites well, instead of splitting the torque between inertia, gravity and
friction columns that are correlated along one trajectory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import BaseParameters, base_parameters
from .estimation import Estimate, weighted_least_squares
from .regressor import IdentificationModel
from .static_poses import (ANGLES_DEG, GravityFit, fit_gravity, gravity_basis, pose_set,
                           static_measurement)
from .sweeps import SPEEDS, FrictionFit, SweepData, fit_friction, sweep_measurement


def dynamic_model(model: IdentificationModel) -> IdentificationModel:
    """The model of M qdd + C qd alone: the same arm with gravity 0 and no friction columns, its
    parameters the first entries of `model`'s (links, then rotor inertias)."""
    return IdentificationModel(model.robot.with_options(gravity=[0.0, 0.0, 0.0]),
                               rotor_inertia=model.rotor_inertia, friction="none")


@dataclass(frozen=True)
class InertiaFit:
    """The inertia stage's result: the base parameters of the gravity-free, friction-free model
    (`dynamic_model`), their WLS estimate on the excitation data less the known gravity and
    friction torques, and theta (p,): the earlier stages' parameters moved (least norm) so that
    both the gravity and the inertial combinations hold, for the identified robot."""

    model: IdentificationModel
    basis: BaseParameters
    estimate: Estimate
    theta_known: np.ndarray
    theta: np.ndarray

    def predict(self, Y, Yd) -> np.ndarray:
        """The staged model's torque: the known gravity and friction torques (Y theta_known less
        its inertial part Yd theta_known) plus the fitted inertial combinations. Y (N, n, p) the
        full regressor, Yd (N, n, pd) the dynamic model's, both filtered alike."""
        pd = self.model.p
        return Y @ self.theta_known - Yd @ self.theta_known[:pd] + \
            self.basis.columns(Yd) @ self.estimate.beta


def fit_inertia(model: IdentificationModel, dyn: IdentificationModel, basis: BaseParameters,
                Y, Yd, tau, theta_known, gravity: BaseParameters, beta_gravity) -> InertiaFit:
    """The inertial base parameters from excitation data: tau (N, n) less the gravity and friction
    torques of theta_known, against Yd's base columns (WLS). The combined theta keeps the
    friction entries and satisfies the gravity combinations (K_g theta = beta_gravity) and the
    inertial ones (K_d theta = beta_d) in the least-squares sense, nearest theta_known."""
    pd = dyn.p
    known = Y @ theta_known - Yd @ theta_known[:pd]
    est = weighted_least_squares(basis.columns(Yd), tau - known)
    A = np.vstack([gravity.K, np.hstack([basis.K, np.zeros((basis.rank, model.p - pd))])])
    b = np.concatenate([beta_gravity, est.beta])
    theta = theta_known + np.linalg.lstsq(A, b - A @ theta_known, rcond=None)[0]
    return InertiaFit(dyn, basis, est, np.array(theta_known, float), theta)


@dataclass
class StagedResult:
    """The three stages and the poses and sweeps they were fitted to."""

    poses: np.ndarray
    poses_outside: int
    gravity: GravityFit
    sweeps: SweepData
    friction: FrictionFit
    inertia: InertiaFit


def stage_options(sc: dict, home_default) -> dict:
    """The `stages` section's values with their defaults (see config.STAGES)."""
    return {"home": sc.get("home", home_default), "angles": sc.get("angles", list(ANGLES_DEG)),
            "hold": float(sc.get("hold", 0.5)), "rate": float(sc.get("rate", 1000.0)),
            "speeds": sc.get("speeds", list(SPEEDS)), "travel": float(sc.get("travel", 0.4))}


def run_stages(model: IdentificationModel, plant, prior, data, Y, *, options: dict,
               measurement: dict, seed: int, samples: int = 200, basis_seed=0,
               echo=print) -> StagedResult:
    """Gravity, friction and inertia stages on simulated static poses and sweeps of the RobotModel
    `plant` and on the processed excitation data `data` (Y its filtered full regressor)."""
    home = np.broadcast_to(np.asarray(options["home"], float), (model.n,))
    poses, outside = pose_set(model, home, options["angles"])
    g_basis = gravity_basis(model, samples, seed=basis_seed)
    static = static_measurement(plant, poses, hold=options["hold"], rate=options["rate"],
                                measurement=measurement, seed=seed)
    grav = fit_gravity(model, g_basis, static, prior)
    echo(f"stage 1, gravity: {len(poses)} static poses ({outside} outside the limits left out), "
         f"static regressor rank {grav.rank} of {g_basis.rank} base gravity parameters, cond "
         f"{grav.cond:.4g}; rms residual {np.array2string(grav.rms, precision=3)} N m")
    g_robot = model.robot_from(grav.theta)
    sweeps = sweep_measurement(plant, model, home, g_robot.gravity_torque, speeds=options["speeds"],
                               travel=options["travel"], rate=options["rate"],
                               measurement=measurement, seed=seed + 1000)
    fric = fit_friction(model, sweeps, grav.theta)
    echo(f"stage 2, friction: {len(sweeps.speed)} sweeps; rms residual of the friction curves "
         f"{np.array2string(fric.rms, precision=3)} N m")
    dyn = dynamic_model(model)
    d_basis = base_parameters(dyn, samples, seed=basis_seed)
    Yd = data.parallel(dyn.regressor(*data.states))
    inertia = fit_inertia(model, dyn, d_basis, Y, Yd, data.tau, fric.theta, g_basis,
                          grav.estimate.beta)
    echo(f"stage 3, inertia: {d_basis.rank} inertial base parameters, WLS sigma "
         f"{np.array2string(inertia.estimate.sigma, precision=3)} N m")
    return StagedResult(poses, outside, grav, sweeps, fric, inertia)


def stage_predictions(result: StagedResult, val, Yv, prior) -> dict:
    """The validation torque of the feedforward after each stage: the CAD prior, then with the
    gravity combinations, then with the friction curves, then with the inertial combinations."""
    Ydv = val.parallel(result.inertia.model.regressor(*val.states))
    return {"CAD": Yv @ prior, "gravity": Yv @ result.gravity.theta,
            "gravity + friction": Yv @ result.friction.theta,
            "gravity + friction + inertia": result.inertia.predict(Yv, Ydv)}


def stage_metrics(result: StagedResult, model: IdentificationModel, true_theta=None) -> dict:
    """The stages' fits as plain numbers for metrics.json."""
    g, f, i = result.gravity, result.friction, result.inertia
    out = {"gravity": {"poses": len(result.poses), "poses_outside_limits": result.poses_outside,
                       "base_parameters": g.basis.base_names, "rank": g.rank,
                       "rank_needed": g.basis.rank, "cond": g.cond, "beta": g.estimate.beta,
                       "rel_std": g.estimate.rel_std, "rms_residual": g.rms},
           "friction": {"sweeps": len(result.sweeps.speed), "names": f.names,
                        "values": [e.beta for e in f.estimates],
                        "rel_std": [e.rel_std for e in f.estimates], "rms_residual": f.rms},
           "inertia": {"base_parameters": len(i.basis.base_names), "sigma_wls": i.estimate.sigma,
                       "max_rel_std": float(np.max(i.estimate.rel_std))}}
    if true_theta is not None:
        beta_true = g.basis.base(true_theta)
        out["gravity"]["rel_error"] = float(np.linalg.norm(g.estimate.beta - beta_true) /
                                            np.linalg.norm(beta_true))
        true_f = [np.asarray(true_theta)[np.array([model.names.index(nm) for nm in names])]
                  for names in f.names]
        out["friction"]["true"] = true_f
    return out
