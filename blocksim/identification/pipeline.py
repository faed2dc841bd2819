"""`python cli.py identify CONFIG.yaml --out DIR`: the whole identification workflow from one YAML
config - base parameters, optimised excitation, data (a simulated run of the true arm, or a log of a
real one), processing, OLS/WLS and physically consistent estimation, validation on another
trajectory, the identified robot file, and a feedforward tracking study CAD vs identified. With a
`stages` section the staged identification (`stages`: gravity, friction, inertia) runs besides
and is scored on the same validation move; a `payload` section makes the run a payload task
(`payload_task`) instead.

Config keys: docs/identify.md, generated from the key table of `config.py` (`python cli.py
identify --markdown`). With data.log the logged trajectory is the excitation: no excitation
section, no optimisation.

Every input (the config, the robot files, the diagrams, the data logs) is read and checked by
`inputs.load_inputs` before the first slow step, so a wrong one fails in milliseconds with its
file and line (`config.IdentifyConfigError`, `models.robot_file.RobotFileError`,
`datalog.DataLogError`, `processing.ProcessingError`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from .base import base_parameters
from .estimation import (complete_standard, consistency, fit_friction_smoothing,
                         ordinary_least_squares, physically_consistent, weighted_least_squares)
from .excitation import FourierExcitation, condition_number, optimise_excitation, random_excitation
from .inputs import load_inputs
from .payload_task import run_payload
from .processing import corrupt, process
from .runs import joint_vector as _vec, plain as _plain, simulate_run
from .stages import run_stages, stage_metrics, stage_options, stage_predictions
from .robotfile import load_robot, write_robot_file
from .validation import measurement_floor, relative_rms_error, residual_check


@dataclass
class Context:
    cfg: dict
    base_dir: Path
    out: Path
    log: list


def run(config_path, out, *, echo=print) -> dict:
    """Run the workflow of `config_path` into folder `out` (created); returns the metrics written to
    out/metrics.json. Writes report.md, figures/*.png, identified_robot.yaml, excitation.yaml,
    excitation_run.yaml and data/*.npz."""
    started = time.perf_counter()
    config_path = Path(config_path)
    inputs = load_inputs(config_path)       # every input checked before the slow steps
    cfg, base_dir, model = inputs.cfg, inputs.base_dir, inputs.model
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    if "payload" in cfg:
        return run_payload(inputs, out, started=started, echo=echo)
    rob = cfg["robot"]
    cad_robot, true_robot = inputs.cad, inputs.plant
    n = model.n
    metrics = {"name": cfg.get("name", config_path.stem), "joints": n, "parameters": model.p}

    # ---------------------------------------------------------------- base parameters
    bc = cfg.get("base", {})
    basis = base_parameters(model, int(bc.get("samples", 200)), seed=bc.get("seed", 0))
    basis_check = base_parameters(model, int(bc.get("samples", 200)), seed=int(bc.get("seed", 0)) + 1)
    metrics["base"] = {"rank": basis.rank, "rank_other_seed": basis_check.rank,
                       "tolerance": basis.tolerance, "gap": basis.gap,
                       "unidentifiable": basis.unidentifiable()}
    echo(f"base parameters: {basis.rank} of {model.p} (rank gap {basis.gap:.3g})")

    # ---------------------------------------------------------------- excitation and data
    dc = cfg.get("data", {})
    popts = inputs.processing
    ec = cfg.get("excitation", {})
    limits = inputs.limits
    opt = excitation = q0 = None
    if inputs.data is not None:          # a log: its trajectory is the excitation
        data = inputs.data
        source = inputs.data_source
        metrics["excitation"] = {"source": "log"}
    else:
        q0 = _vec(ec.get("q0"), n, 0.5 * (limits.q_min + limits.q_max))
        opt = optimise_excitation(model, basis, frequency=float(ec.get("frequency", 0.1)),
                                  harmonics=int(ec.get("harmonics", 5)), q0=q0, limits=limits,
                                  seed=ec.get("seed", 0), n_objective=int(ec.get("n_objective", 60)),
                                  n_check=int(ec.get("n_check", 150)),
                                  max_iter=int(ec.get("max_iter", 100)),
                                  min_singular_value=ec.get("min_singular_value"),
                                  singular_part=ec.get("singular_part", "all"))
        excitation = opt.excitation
        excitation.to_yaml(out / "excitation.yaml")
        metrics["excitation"] = {"source": "optimised", "cond_start": opt.cond_start,
                                 "cond": opt.cond,
                                 "cond_dense_start": condition_number(model, basis, opt.start),
                                 "cond_dense": condition_number(model, basis, excitation),
                                 "limit_violation": opt.violation, "iterations": opt.iterations,
                                 "message": opt.message, "singular_min": opt.singular_min,
                                 "min_singular_value": ec.get("min_singular_value")}
        echo(f"excitation: cond(Y_base) {opt.cond_start:.4g} (random start) -> {opt.cond:.4g} "
             f"(optimised, {opt.iterations} SLSQP iterations); largest limit excess "
             f"{opt.violation:.3g}" + ("" if opt.singular_min is None else
                                      f"; smallest Jacobian singular value {opt.singular_min:.4g} "
                                      f"(kept >= {ec['min_singular_value']:g})"))
        diagram = base_dir / dc["diagram"]
        periods = int(dc.get("periods", 6)) + int(dc.get("skip_periods", 1))
        exact, _ = simulate_run(diagram, excitation, periods)
        _write_resolved_diagram(diagram, excitation, periods, out / "excitation_run.yaml")
        meas_cfg = dict(dc.get("measurement", {}))
        raw = corrupt(exact, **meas_cfg)
        data = process(raw, period=excitation.period, skip_periods=int(dc.get("skip_periods", 1)),
                       **popts)
        source = f"simulated run of {rob['plant']} ({periods} periods of {excitation.period:g} s)"
    metrics["data_source"] = source
    np.savez(out / "data" / "identification.npz", t=data.t, q=data.q, qd=data.qd, qdd=data.qdd,
             tau=data.tau)
    echo(f"data: {source}; {len(data.t)} samples after processing ({data.periods} periods averaged)")

    # ---------------------------------------------------------------- estimation
    Y = data.parallel(model.regressor(*data.states))         # filtered as the measured torque
    width = cfg.get("model", {}).get("friction_smoothing")
    if width == "estimate":
        eps, Y = fit_friction_smoothing(model, basis, data, Y)
        model = model.with_friction_smoothing(eps)
        width_source = "estimated from the data (model.friction_smoothing: estimate)"
    elif width is not None:
        width_source = "given by model.friction_smoothing"
    else:
        width_source = f"kept from the CAD file {rob['cad']} (model.friction_smoothing not set)"
    metrics["friction_smoothing"] = {"value": model.friction_smoothing, "source": width_source}
    echo(f"friction sign width: {model.friction_smoothing:g} rad/s, {width_source}")
    Yb = basis.columns(Y)
    ols = ordinary_least_squares(Yb, data.tau)
    wls = weighted_least_squares(Yb, data.tau)
    prior = model.parameters_of(cad_robot)
    sc = cfg.get("estimation", {})
    cons = physically_consistent(model, basis, Yb, data.tau, wls.sigma, prior,
                                 prior_weight=float(sc.get("prior_weight", 1e-3)))
    theta_ols = complete_standard(basis, ols.beta, prior)
    chk_ols, chk_cons = consistency(model, theta_ols), consistency(model, cons.theta)
    metrics["estimation"] = {
        "cond_Y_base_data": float(np.linalg.cond(Yb.reshape(-1, basis.rank))),
        "sigma_wls": wls.sigma.tolist(), "sigma_between_periods":
            None if data.tau_std is None else data.tau_std.tolist(),
        "ols_consistent": chk_ols.ok, "consistent_ok": chk_cons.ok,
        "max_rel_std_wls": float(np.max(wls.rel_std)),
        "consistent_solver": cons.message}
    echo(f"estimation: WLS sigma {np.array2string(wls.sigma, precision=3)} N m; OLS physically "
         f"consistent: {chk_ols.ok}; constrained estimate consistent: {chk_cons.ok}")

    # ---------------------------------------------------------------- identified robot file
    ident_path = write_robot_file(
        out / "identified_robot.yaml", model, cons.theta, inputs.template,
        name=f"{cad_robot.name}_identified",
        description=f"identified by blocksim from {source}",
        friction_smoothing=model.friction_smoothing,
        header=f"Identified robot file written by `blocksim identify {config_path.name}`: the\n"
               "physically consistent estimate (log-Cholesky, Wensing et al. 2017); kinematics from "
               f"{rob['cad']}.\nfriction_smoothing {model.friction_smoothing:g} rad/s: "
               f"{width_source}.")
    load_robot(str(ident_path.resolve()))   # the written robot file must load as a RobotModel

    # ---------------------------------------------------------------- validation
    vc = cfg.get("validation", {})
    val = None
    if inputs.validation is not None:
        val = inputs.validation
        metrics["validation_source"] = inputs.validation_source
    elif true_robot is not None and "diagram" in dc:
        vex = random_excitation(model, float(vc.get("frequency", 1.25 * excitation.frequency)),
                                int(vc.get("harmonics", 4)), q0, limits, seed=vc.get("seed", 11),
                                fill=0.8)
        vper = int(vc.get("periods", 3)) + int(vc.get("skip_periods", 1))
        exact_v, _ = simulate_run(base_dir / dc["diagram"], vex, vper)
        meas_v = dict(dc.get("measurement", {}))
        meas_v["seed"] = vc.get("measurement_seed", int(meas_v.get("seed", 0)) + 1)
        val = process(corrupt(exact_v, **meas_v), period=vex.period,
                      skip_periods=int(vc.get("skip_periods", 1)), **popts)
    predictions = {}
    if val is not None:
        Yv = val.parallel(model.regressor(*val.states))     # filtered as the measured torque
        Ybv = basis.columns(Yv)
        predictions = {"CAD": Yv @ prior, "OLS": Ybv @ ols.beta, "WLS": Ybv @ wls.beta,
                       "consistent": Yv @ cons.theta}
        if true_robot is not None:
            predictions["true"] = Yv @ model.parameters_of(true_robot)
        metrics["validation"] = {k: relative_rms_error(val.tau, v).tolist()
                                 for k, v in predictions.items()}
        if val.tau_std is not None:
            floor = measurement_floor(val, lambda *states: model.regressor(*states) @ cons.theta)
            metrics["validation_noise_floor"] = floor["total"].tolist()
            metrics["validation_noise_floor_parts"] = {
                "torque": floor["torque"].tolist(), "encoder": floor["encoder"].tolist(),
                "encoder_resolution": None if val.q_resolution is None else val.q_resolution.tolist()}
        rc = residual_check(val.tau - predictions["consistent"], val.q)
        metrics["validation_residual"] = rc.metrics()
        np.savez(out / "data" / "validation.npz", t=val.t, q=val.q, qd=val.qd, qdd=val.qdd,
                 tau=val.tau, **{f"pred_{k}": v for k, v in predictions.items()})
        echo("validation: relative RMS torque error per joint (%): " + "; ".join(
            f"{k} {np.array2string(100 * np.array(v), precision=2)}"
            for k, v in metrics["validation"].items()))
    fit_check = residual_check(wls.residual, data.q)

    # ---------------------------------------------------------------- staged identification
    staged = None
    if "stages" in cfg:
        staged = _stages(cfg, model, true_robot, prior, data, Y, val, predictions, q0, echo)
        metrics["stages"] = staged["metrics"]

    # ---------------------------------------------------------------- tracking study
    tracking = None
    tc = cfg.get("tracking")
    if tc and true_robot is not None:
        tracking = tracking_study(base_dir / tc["diagram"], {
            "CAD": str((base_dir / rob["cad"]).resolve()) if not _is_preset(rob["cad"]) else rob["cad"],
            "identified": str(ident_path.resolve()),
            "true": str((base_dir / rob["plant"]).resolve()) if not _is_preset(rob["plant"]) else rob["plant"]})
        metrics["tracking"] = {k: {"rms_error": v["rms_error"], "max_abs_error": v["max_abs_error"]}
                               for k, v in tracking.items()}
        cad_rms = np.array(tracking["CAD"]["rms_error"])
        id_rms = np.array(tracking["identified"]["rms_error"])
        metrics["tracking_improvement"] = (cad_rms / np.maximum(id_rms, 1e-300)).tolist()
        echo("tracking rms error (rad): " + "; ".join(
            f"{k} {np.array2string(np.array(v['rms_error']), precision=3)}" for k, v in tracking.items()))

    # ---------------------------------------------------------------- outputs
    from . import report
    figures = report.figures(out / "figures", model, excitation, opt, data, val, predictions,
                             wls, tracking)
    metrics["seconds"] = time.perf_counter() - started
    (out / "metrics.json").write_text(json.dumps(_plain(metrics), indent=2) + "\n")
    report.write(out / "report.md", cfg=cfg, config_path=config_path, model=model, basis=basis,
                 opt=opt, limits=limits, data=data, source=source, ols=ols, wls=wls, cons=cons,
                 prior=prior, true_theta=None if true_robot is None else model.parameters_of(true_robot),
                 chk_ols=chk_ols, chk_cons=chk_cons, metrics=metrics, fit_check=fit_check,
                 figures=figures, ident_path=ident_path, staged=staged)
    echo(f"wrote {out}/report.md, metrics.json, identified_robot.yaml ({metrics['seconds']:.1f} s)")
    return metrics


def _stages(cfg, model, true_robot, prior, data, Y, val, predictions, q0, echo) -> dict:
    """The staged identification (`stages.run_stages`) on the config's plant and excitation data,
    each stage's feedforward scored on the validation move like the all-at-once estimate."""
    sc = cfg["stages"]
    meas = dict(cfg["data"].get("measurement", {}))
    data_seed = int(meas.pop("seed", 0))
    seed = int(sc.get("seed", data_seed + 2))
    bc = cfg.get("base", {})
    result = run_stages(model, true_robot, prior, data, Y, options=stage_options(sc, q0),
                        measurement=meas, seed=seed, samples=int(bc.get("samples", 200)),
                        basis_seed=bc.get("seed", 0), echo=echo)
    m = stage_metrics(result, model, model.parameters_of(true_robot))
    Yv = val.parallel(model.regressor(*val.states))
    staged = stage_predictions(result, val, Yv, prior)
    staged["all at once (consistent)"] = predictions["consistent"]
    m["validation"] = {k: relative_rms_error(val.tau, v).tolist() for k, v in staged.items()}
    echo("stages, validation: relative RMS torque error per joint (%): " + "; ".join(
        f"{k} {np.array2string(100 * np.array(v), precision=2)}" for k, v in m["validation"].items()))
    return {"result": result, "metrics": m}


def _is_preset(name: str) -> bool:
    from ..models.robot import RobotModel
    return name in RobotModel.preset_names()


def tracking_study(diagram: Path, robots: dict) -> dict:
    """Run the tracking diagram once per feedforward robot (`ff.robot` set to each of `robots`):
    per run the rms and max tracking error per joint (rad) of plant.q against ref.q, and the logs."""
    import blocksim
    from ..engine.metrics import metric_values
    out = {}
    for label, robot in robots.items():
        r = blocksim.simulate(blocksim.load(diagram, set={"ff.robot": robot,
                                                              "simulation.mode": "compiled"}))
        y, ref = r["plant.q"], r["ref.q"]
        out[label] = {"rms_error": metric_values("rms_error", r.t, y, ref, {}).tolist(),
                      "max_abs_error": metric_values("max_abs_error", r.t, y, ref, {}).tolist(),
                      "t": r.t, "error": ref - y}
    return out


def _write_resolved_diagram(diagram: Path, excitation: FourierExcitation, periods: int, dest: Path):
    """The excitation diagram with the optimised coefficients in its FourierSeries block, the paths
    it names (robot files, subsystem files, plugin files) made absolute and the run length set: `python cli.py simulate` on it reproduces the data run."""
    spec = yaml.safe_load(Path(diagram).read_text())
    ref = spec["blocks"]["ref"]
    ref.update(excitation.block_parameters())
    here = Path(diagram).parent
    for block in spec["blocks"].values():
        robot = block.get("robot") if isinstance(block, dict) else None
        if robot and not _is_preset(robot):
            block["robot"] = str((here / robot).resolve())
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str) and kind.lower().endswith((".yaml", ".yml")):   # a subsystem file
            block["type"] = str((here / kind).resolve())
    if isinstance(spec.get("plugins"), list):                        # plugin files, not modules
        spec["plugins"] = [str((here / p).resolve()) if isinstance(p, str) and p.endswith(".py")
                           else p for p in spec["plugins"]]
    spec["blocks"]["plant"]["q0"] = excitation.q0.tolist()
    spec.setdefault("simulation", {})["stop_time"] = periods * excitation.period
    head = ("# Purpose: the identification data run with the optimised excitation (written by "
            "blocksim identify)\n")
    dest.write_text(head + yaml.safe_dump(spec, sort_keys=False, default_flow_style=None, width=100))
