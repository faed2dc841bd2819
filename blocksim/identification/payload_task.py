"""The payload task of `python cli.py identify` (a config with a `payload` section): robot.plant
carries the load of payload.mass, payload.com and payload.inertia through a short random
excitation (data.diagram) or a set of static poses, the drive's measurement corruption
(data.measurement) is applied, and the load is estimated with the arm's parameters known
(robot.cad: an identified or otherwise trusted robot file) by `payload.estimate_payload`.
Writes report.md and metrics.json."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..models.frames import params_from_inertial
from ..models.robot_file import inertia_tensor
from .excitation import random_excitation
from .payload import QUANTITIES, estimate_payload, payload_metrics, payload_regressor, physical
from .processing import corrupt, process
from .runs import joint_vector as _vec, plain as _plain, simulate_run
from .static_poses import ANGLES_DEG, pose_set, static_measurement


def run_payload(inputs, out: Path, *, started: float, echo=print) -> dict:
    """Run the payload task of checked `inputs` into folder `out`; returns the metrics."""
    cfg, model, plant = inputs.cfg, inputs.model, inputs.plant
    pc, dc = cfg["payload"], cfg["data"]
    n = model.n
    mass = float(pc["mass"])
    com = np.asarray(pc.get("com", [0.0, 0.0, 0.0]), float)
    inertia = np.asarray(pc.get("inertia", [0.0, 0.0, 0.0]), float)
    truth = physical(params_from_inertial(mass, com, inertia_tensor(inertia, None, "payload inertia")))
    theta_arm = model.parameters_of(inputs.cad)
    meas = dict(dc.get("measurement", {}))
    source = pc.get("source", "excitation")
    q0 = _vec(cfg.get("excitation", {}).get("q0"), n,
              0.5 * (inputs.limits.q_min + inputs.limits.q_max))
    if source == "excitation":
        freq, skip = float(pc.get("frequency", 0.4)), int(pc.get("skip_periods", 1))
        periods = int(pc.get("periods", 3))
        ex = random_excitation(model, freq, int(pc.get("harmonics", 4)), q0, inputs.limits,
                               seed=pc.get("seed", 0), fill=0.8)
        exact, _ = simulate_run(inputs.base_dir / dc["diagram"], ex, periods + skip, {
            "plant.payload_mass": mass, "plant.payload_com": com.tolist(),
            "plant.payload_inertia": inertia.tolist()})
        data = process(corrupt(exact, **meas), period=ex.period, skip_periods=skip,
                       **inputs.processing)
        tau = data.tau - data.parallel(model.regressor(*data.states)) @ theta_arm
        Yp = data.parallel(payload_regressor(model.robot, *data.states))
        est = estimate_payload(Yp, tau, inertia=bool(pc.get("estimate_inertia", True)),
                               correlation=data.noise_correlation())
        what = (f"a random Fourier excitation, {periods + skip} periods of {ex.period:g} s "
                f"({(periods + skip) * ex.period:g} s, {skip} skipped, {periods} averaged)")
    else:
        poses, outside = pose_set(model, _vec(pc.get("home"), n, q0),
                                  pc.get("angles", list(ANGLES_DEG)))
        loaded = plant.with_payload(mass, com, inertia)
        seed = int(meas.pop("seed", 0))
        static = static_measurement(loaded, poses, hold=float(pc.get("hold", 0.5)),
                                    measurement=meas, seed=seed)
        tau = static.tau - inputs.cad.gravity_torque(static.q)
        zero = np.zeros_like(static.q)
        est = estimate_payload(payload_regressor(model.robot, static.q, zero, zero), tau,
                               inertia=bool(pc.get("estimate_inertia", False)))
        what = (f"{len(poses)} static poses held {float(pc.get('hold', 0.5)):g} s each "
                f"({outside} outside the joint limits left out)")
    metrics = {"name": cfg.get("name", inputs.path.stem), "task": "payload", "source": what,
               "arm": cfg["robot"]["cad"], "payload": payload_metrics(est, truth)}
    q = metrics["payload"]["quantities"]
    metrics["payload"]["mass_error_percent"] = 100 * abs(est.mass - mass) / mass
    metrics["payload"]["com_error_mm"] = 1e3 * float(np.linalg.norm(est.com - com))
    echo(f"payload from {what}: mass {est.mass:.4g} kg (95 %: {q['m']['interval95'][0]:.4g} .. "
         f"{q['m']['interval95'][1]:.4g}; true {mass:g}), centre of mass "
         f"{np.array2string(1e3 * est.com, precision=2)} mm (true "
         f"{np.array2string(1e3 * com, precision=2)} mm)")
    metrics["seconds"] = time.perf_counter() - started
    (out / "metrics.json").write_text(json.dumps(_plain(metrics), indent=2) + "\n")
    _report(out / "report.md", metrics, inputs.path)
    echo(f"wrote {out}/report.md, metrics.json ({metrics['seconds']:.1f} s)")
    return metrics


UNITS = {"m": "kg", "cx": "m", "cy": "m", "cz": "m"}


def _report(path: Path, metrics: dict, config_path) -> None:
    p = metrics["payload"]
    L = [f"# Payload estimate: {metrics['name']}", "",
         f"Config `{config_path}`; the arm's parameters known ({metrics['arm']}); data: "
         f"{metrics['source']}. Run time {metrics['seconds']:.1f} s.", "",
         "The load's ten parameters at the tool enter the torque linearly (the last link's "
         "regressor columns moved to the tool frame); the arm's own torque is subtracted and the "
         "rest fitted by weighted least squares. Intervals: the least-squares covariance from "
         "the residual variance per joint, times the filter's correlation factor "
         f"{p['correlation_factor']:.3g} (the processed samples are not independent), carried "
         "to mass, centre of mass and inertia by the delta method; 95 % = +- 1.96 standard "
         f"deviations. Inertia estimated: {p['inertia_estimated']}; cond of the fitted columns "
         f"{p['cond']:.3g}.", "",
         "| quantity | unit | estimate | std | 95 % interval | true | inside |",
         "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in QUANTITIES:
        if name not in p["quantities"]:
            continue
        r = p["quantities"][name]
        L.append(f"| {name} | {UNITS.get(name, 'kg m^2')} | {r['value']:.5g} | {r['std']:.2g} | "
                 f"{r['interval95'][0]:.5g} .. {r['interval95'][1]:.5g} | {r['true']:.5g} | "
                 f"{'yes' if r['inside'] else 'no'} |")
    L += ["", f"Mass error {p['mass_error_percent']:.3g} %, centre-of-mass error "
          f"{p['com_error_mm']:.3g} mm.", ""]
    Path(path).write_text("\n".join(L))
