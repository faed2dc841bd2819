"""The identification report: report.md (tables) and PNG figures (excitation, measured vs predicted
validation torques, residuals, tracking errors CAD vs identified)."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def figures(folder: Path, model, excitation, opt, data, val, predictions, wls, tracking) -> dict:
    """Write the figures; returns {key: file name relative to the report}."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = model.n
    out = {}
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    if opt is None:                  # a log: its processed trajectory
        for k, sig in enumerate((data.q, data.qd, data.qdd)):
            for j in range(n):
                axes[k].plot(data.t, sig[:, j], color=f"C{j}", label=f"q{j + 1}" if k == 0 else None)
        axes[-1].set_xlabel("t (s)" + (", one period (averaged)" if data.periods else ""))
        axes[0].set_title("Excitation: the logged trajectory (processed states)")
    else:
        t = np.linspace(0, excitation.period, 500)
        for ex, style, label in ((opt.start, ":", "random start"), (excitation, "-", "optimised")):
            for k, sig in enumerate(ex.evaluate(t)):
                for j in range(n):
                    axes[k].plot(t, sig[:, j], style, color=f"C{j}",
                                 label=f"{label} q{j + 1}" if k == 0 else None)
        axes[-1].set_xlabel("t (s), one period")
        axes[0].set_title(f"Excitation: cond(Y_base) {opt.cond_start:.3g} -> {opt.cond:.3g}")
    for ax, lab in zip(axes, ("q (rad)", "qd (rad/s)", "qdd (rad/s^2)")):
        ax.set_ylabel(lab)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(folder / "excitation.png", dpi=110)
    plt.close(fig)
    out["excitation"] = "figures/excitation.png"
    if val is not None:
        fig, axes = plt.subplots(n, 1, figsize=(8, 1.8 * n + 1), sharex=True, squeeze=False)
        for j in range(n):
            ax = axes[j, 0]
            ax.plot(val.t, val.tau[:, j], "k", lw=1.5, label="measured")
            for key, style in (("CAD", ":"), ("consistent", "--")):
                ax.plot(val.t, predictions[key][:, j], style, label=f"predicted ({key})")
            ax.set_ylabel(f"tau{j + 1} (N m)")
            ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7, ncol=3)
        axes[-1, 0].set_xlabel("t (s)")
        axes[0, 0].set_title("Validation trajectory: measured vs predicted torque")
        fig.tight_layout()
        fig.savefig(folder / "validation_torques.png", dpi=110)
        plt.close(fig)
        out["validation"] = "figures/validation_torques.png"
        fig, axes = plt.subplots(n, 1, figsize=(8, 1.6 * n + 1), sharex=True, squeeze=False)
        for j in range(n):
            axes[j, 0].plot(val.t, val.tau[:, j] - predictions["consistent"][:, j], lw=0.8)
            axes[j, 0].set_ylabel(f"r{j + 1} (N m)")
            axes[j, 0].grid(alpha=0.3)
        axes[0, 0].set_title("Validation residual, measured - predicted (identified model)")
        axes[-1, 0].set_xlabel("t (s)")
        fig.tight_layout()
        fig.savefig(folder / "validation_residuals.png", dpi=110)
        plt.close(fig)
        out["residuals"] = "figures/validation_residuals.png"
    if tracking:
        fig, axes = plt.subplots(n, 1, figsize=(8, 1.6 * n + 1), sharex=True, squeeze=False)
        for j in range(n):
            for key, run in tracking.items():
                axes[j, 0].plot(run["t"], run["error"][:, j], label=f"feedforward: {key}")
            axes[j, 0].set_ylabel(f"e{j + 1} (rad)")
            axes[j, 0].grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7, ncol=3)
        axes[0, 0].set_title("Tracking error with PD + feedforward")
        axes[-1, 0].set_xlabel("t (s)")
        fig.tight_layout()
        fig.savefig(folder / "tracking.png", dpi=110)
        plt.close(fig)
        out["tracking"] = "figures/tracking.png"
    return out


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _g(x, digits=4):
    return f"{x:.{digits}g}"


def _excitation_section(opt, ex, limits, n, figures) -> list:
    """The report lines on an optimised excitation: its conditioning and the limits it met."""
    L = ["", "## Excitation", "",
          f"Fourier series, {opt.excitation.harmonics} harmonics of {opt.excitation.frequency:g} Hz "
          f"(period {opt.excitation.period:g} s), at rest at t = 0 and at each period's end, "
          f"optimised by SLSQP ({ex['iterations']} iterations: {ex['message']}).", "",
          _row(["", "random start", "optimised"]), _row(["---"] * 3),
          _row(["cond(Y_base), objective grid", _g(ex["cond_start"]), _g(ex["cond"])]),
          _row(["cond(Y_base), 200 samples", _g(ex["cond_dense_start"]), _g(ex["cond_dense"])]), "",
          f"Largest limit excess on a fine grid (200 samples per period of the highest harmonic): {ex['limit_violation']:.3g} "
          "(<= 0: every limit met)." + ("" if ex.get("singular_min") is None else
          f" Distance from singular poses: the smallest singular value of the tool Jacobian on "
          f"that grid is {ex['singular_min']:.4g}, kept >= {ex['min_singular_value']:g} by a "
          "constraint of the optimisation.") + " Limits per joint:", "",
          _row(["joint", "q_min (rad)", "q_max (rad)", "qd_max (rad/s)", "qdd_max (rad/s^2)"]),
          _row(["---"] * 5)]
    for j in range(n):
        L.append(_row([j + 1, _g(limits.q_min[j]), _g(limits.q_max[j]), _g(limits.qd_max[j]),
                       _g(limits.qdd_max[j])]))
    return L + ["", f"![excitation]({figures['excitation']})"]


def write(path: Path, *, cfg, config_path, model, basis, opt, limits, data, source, ols, wls, cons,
          prior, true_theta, chk_ols, chk_cons, metrics, fit_check, figures, ident_path, staged=None) -> None:
    """report.md: setup, base parameters with their combinations, excitation, estimates with relative
    standard deviations, physical consistency, validation, residual check and tracking."""
    n = model.n
    L = [f"# Identification report: {metrics['name']}", "",
         f"Config `{config_path}`; {n} joints, {model.p} standard parameters "
         f"(rotor inertia: {model.rotor_inertia}, friction: {model.friction}); data: {source}. "
         f"Run time {metrics.get('seconds', 0):.1f} s.", "",
         "## Base parameters", "",
         f"QR with column pivoting of the regressor stacked over random states: rank **{basis.rank}** "
         f"(tolerance {basis.tolerance:.2e} on unit-norm columns, gap |R_b-1| / |R_b| = "
         f"{basis.gap:.3g}; another random seed gives {metrics['base']['rank_other_seed']}). "
         f"Parameters with no effect on the torque: {', '.join(basis.unidentifiable()) or 'none'}.", ""]
    beta_true = None if true_theta is None else basis.base(true_theta)
    beta_cad = basis.base(prior)
    head = ["base parameter", "CAD"] + (["true"] if beta_true is not None else []) + \
        ["OLS", "WLS", "WLS rel. std (%)", "consistent", "combination of standard parameters"]
    L += [_row(head), _row(["---"] * len(head))]
    for k, (name, expr) in enumerate(zip(basis.base_names, basis.expressions(4))):
        cells = [name, _g(beta_cad[k])] + ([_g(beta_true[k])] if beta_true is not None else []) + \
            [_g(ols.beta[k]), _g(wls.beta[k]), f"{wls.rel_std[k]:.2g}", _g(cons.beta[k]),
             "`" + expr.split(" = ", 1)[1] + "`"]
        L.append(_row(cells))
    ex = metrics["excitation"]
    if opt is None:
        L += ["", "## Excitation", "", f"The logged trajectory ({source}); no excitation was "
              "optimised.", "", f"![excitation]({figures['excitation']})"]
    else:
        L += _excitation_section(opt, ex, limits, n, figures)
    L += ["", "## Estimation", "",
          f"{len(data.t)} samples after averaging {data.periods} periods; q through a zero-phase "
          "Butterworth low-pass and central differences; the measured torque and the regressor "
          "through the same zero-phase low-pass, then decimated (Gautier's parallel filtering). "
          f"Friction sign width {model.friction_smoothing:g} rad/s, "
          f"{metrics['friction_smoothing']['source']}. cond(Y_base) on these data: "
          f"{metrics['estimation']['cond_Y_base_data']:.4g}.", "",
          _row(["joint"] + [str(j + 1) for j in range(n)]), _row(["---"] * (n + 1)),
          _row(["noise std from WLS residuals (N m)"] + [_g(s, 3) for s in wls.sigma])]
    if data.tau_std is not None:
        L.append(_row(["noise std from the spread between periods (N m)"] +
                       [_g(s, 3) for s in data.tau_std]))
    L += ["", "Physical consistency (mass, smallest eigenvalue of the pseudo-inertia J; both must be "
          "> 0): OLS completed with CAD values for the non-identifiable directions vs the "
          "log-Cholesky estimate.", "",
          _row(["link", "OLS mass (kg)", "OLS min eig J", "consistent mass (kg)", "consistent min eig J"]),
          _row(["---"] * 5)]
    for i in range(n):
        L.append(_row([i + 1, _g(chk_ols.masses[i]), _g(chk_ols.min_eig[i]), _g(chk_cons.masses[i]),
                       _g(chk_cons.min_eig[i])]))
    L += ["", f"OLS physically consistent: **{chk_ols.ok}**"
          + (f" (sign violations: {', '.join(chk_ols.sign_violations)})" if chk_ols.sign_violations else "")
          + f"; constrained estimate: **{chk_cons.ok}** ({cons.message})."]
    if "validation" in metrics:
        L += ["", "## Validation (a trajectory not used for identification)", ""]
        if "validation_source" in metrics:
            L += [f"Data: {metrics['validation_source']}.", ""]
        L += [
              "Relative RMS torque error per joint, rms(measured - predicted) / rms(measured), the "
              "prediction built on the full-rate states and filtered and decimated as the measured "
              "torque was (like with like). The noise floor is what the measurement noise alone "
              "leaves after averaging and filtering: the torque noise (the spread between periods "
              "times the filter's noise gain) and the encoder's quantisation of q carried through "
              "the differences and the identified model (the same in every period of a repeated "
              "motion, so not in the spread), summed in quadrature; a model near it is as good as "
              "these data can tell.", "",
              _row(["model"] + [f"joint {j + 1}" for j in range(n)]), _row(["---"] * (n + 1))]
        for key, vals in metrics["validation"].items():
            L.append(_row([key] + [f"{100 * v:.2f} %" for v in vals]))
        if "validation_noise_floor" in metrics:
            L.append(_row(["noise floor (a perfect model)"] +
                          [f"{100 * v:.2f} %" for v in metrics["validation_noise_floor"]]))
            for part, label in (("torque", "of which torque noise"), ("encoder", "of which encoder")):
                L.append(_row([label] + [f"{100 * v:.2f} %" for v in
                                         metrics["validation_noise_floor_parts"][part]]))
        vr = metrics["validation_residual"]
        L += ["", f"![validation torques]({figures['validation']})", "",
              "Residual check (identified model on the validation data, "
              "blocksim/identification/residuals.py): rms, lag-1 autocorrelation, share of the "
              "residual's variance explained by a Fourier series in the joint positions (position "
              "R^2), and the F-test of that series against the constant alone on samples a "
              "correlation time apart; a joint is suspect (a missing model term such as joint "
              f"elasticity or backlash, rather than noise) when p < {vr['alpha']:g}.", "",
              _row(["joint", "rms (N m)", "lag-1", "position R^2", "F (dof)", "p", "suspect"]),
              _row(["---"] * 7)]
        for j in range(n):
            L.append(_row([j + 1, _g(vr["rms"][j], 3), f"{vr['lag1'][j]:.2f}",
                           f"{vr['position_r2'][j]:.2f}",
                           f"{vr['F'][j]:.3g} ({vr['dof'][j][0]}, {vr['dof'][j][1]})",
                           f"{vr['p_value'][j]:.2g}", "yes" if vr["suspect"][j] else "no"]))
        L += ["", f"![validation residuals]({figures['residuals']})"]
    L += ["", "Residual check on the identification data (WLS): position R^2 per joint "
          + ", ".join(f"{v:.2f}" for v in fit_check.position_r2) + "; F-test p "
          + ", ".join(f"{v:.2g}" for v in fit_check.p_value) + "; suspect "
          + ", ".join("yes" if s else "no" for s in fit_check.suspect) + "."]
    if "tracking" in metrics:
        L += ["", "## Tracking with feedforward: CAD vs identified parameters", "",
              _row(["feedforward model"] + [f"rms error joint {j + 1} (rad)" for j in range(n)]
                   + ["max error (rad)"]), _row(["---"] * (n + 2))]
        for key, v in metrics["tracking"].items():
            L.append(_row([key] + [f"{e:.3g}" for e in v["rms_error"]] + [f"{max(v['max_abs_error']):.3g}"]))
        L += ["", "RMS error CAD / identified per joint: "
              + ", ".join(f"{x:.1f}x" for x in metrics["tracking_improvement"]) + ".", "",
              f"![tracking]({figures['tracking']})"]
    if staged is not None:
        L += stages_section(metrics["stages"], n)
    L += ["", "## Files", "",
          f"- `{ident_path.name}`: the identified robot (load it with `RobotModel.from_yaml` or as "
          "`robot:` of an InverseDynamics block with `include_friction: true`)",
          "- `excitation.yaml`: the FourierSeries block parameters of the optimised excitation "
          "(simulated data only)",
          "- `excitation_run.yaml`: the data-run diagram with them (simulated data only)",
          "- `metrics.json`, `data/*.npz` (processed identification and validation data)", ""]
    Path(path).write_text("\n".join(L))


def stages_section(sm: dict, n: int) -> list:
    """The report lines of the staged identification: each stage's fit, then the validation
    error of the feedforward after each stage."""
    g, f, i = sm["gravity"], sm["friction"], sm["inertia"]
    L = ["", "## Staged identification: gravity, friction, inertia", "",
         f"**Gravity** from {g['poses']} static poses (each joint in turn through the stage's "
         f"angles, the others at home; {g['poses_outside_limits']} outside the joint limits left "
         f"out): static regressor rank **{g['rank']}** of {g['rank_needed']} base gravity "
         f"parameters, condition number {g['cond']:.4g} (unit-norm columns); rms residual "
         + ", ".join(_g(v, 3) for v in g["rms_residual"]) + " N m"
         + (f"; relative error against the true arm ||beta - beta_true|| / ||beta_true|| = "
            f"{g['rel_error']:.3g}" if "rel_error" in g else "") + ".", "",
         _row(["base gravity parameter", "estimate", "rel. std (%)"]), _row(["---"] * 3)]
    for name, b, r in zip(g["base_parameters"], g["beta"], g["rel_std"]):
        L.append(_row([name, _g(float(b)), f"{float(r):.2g}"]))
    L += ["", f"**Friction** from {f['sweeps']} constant-velocity sweeps (both directions), "
          "the gravity torque of the first stage subtracted:", "",
          _row(["joint", "parameters", "estimate"] + (["true"] if "true" in f else [])
               + ["rms residual (N m)"]), _row(["---"] * (5 if "true" in f else 4))]
    for j in range(n):
        cells = [j + 1, ", ".join(f["names"][j]), ", ".join(_g(float(v)) for v in f["values"][j])]
        if "true" in f:
            cells.append(", ".join(_g(float(v)) for v in f["true"][j]))
        L.append(_row(cells + [_g(float(f["rms_residual"][j]), 3)]))
    L += ["", f"**Inertia** from the excitation data less the known gravity and friction "
          f"torques: {i['base_parameters']} base parameters of M qdd + C qd, WLS sigma "
          + ", ".join(_g(float(v), 3) for v in i["sigma_wls"]) + " N m.", "",
          "Validation: relative RMS torque error per joint of the feedforward after each stage "
          "(and of the all-at-once estimate), on the validation move.", "",
          _row(["model"] + [f"joint {j + 1}" for j in range(n)]), _row(["---"] * (n + 1))]
    for key, vals in sm["validation"].items():
        L.append(_row([key] + [f"{100 * v:.2f} %" for v in vals]))
    return L
