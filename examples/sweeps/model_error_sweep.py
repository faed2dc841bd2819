"""Sweep the feedforward's model error of examples/model_error_sweep.yaml in one batch run and plot
the tracking error against it, next to PID alone (PNG and SVG, plus the numbers as JSON and CSV).

    python examples/sweeps/model_error_sweep.py [--out DIR] [--force] [--from -0.5 --to 1.0 --points 31]

Model error `err` scales every link mass and inertia of the feedforward's model by (1 + err)
(InverseDynamics `param_error`, a scalar: all links together); the plant is W1's. All sweep points run
as the members of one batch (`blocksim.simulate(d, batch={"ff.param_error": [...]})`), PID alone as
the diagram's `pid` variant. Errors are max |q_d - q| and rms(q_d - q) over the run, in rad, per joint.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

import blocksim
from blocksim.engine.metrics import compute_metrics

DIAGRAM = Path(__file__).resolve().parents[1] / "model_error_sweep.yaml"


def run_sweep(errors, diagram=DIAGRAM, set=None) -> dict:  # noqa: A002
    """Tracking errors (rad) per model error and joint: {errors, ff: {metric: (B, n_joints)},
    pid: {metric: (n_joints,)}}, for the metrics the diagram declares."""
    errors = [float(e) for e in errors]
    d = blocksim.load(diagram, set=set)
    batch = blocksim.simulate(d, batch={"ff.param_error": errors})
    ff = {name: np.asarray(v, dtype=float) for name, v in compute_metrics(d.spec, batch).items()}
    d_pid = blocksim.load(diagram, variant="pid", set=set)
    pid = {name: np.asarray(v, dtype=float)
           for name, v in compute_metrics(d_pid.spec, blocksim.simulate(d_pid)).items()}
    return {"errors": np.asarray(errors), "ff": ff, "pid": pid}


def crossings(errors, ff_error, pid_error):
    """Model errors (linear interpolation between sweep points) where the feedforward's error
    reaches PID alone's, for one joint; empty when it stays below over the whole sweep."""
    above = ff_error >= pid_error
    out = []
    for k in range(1, len(errors)):
        if above[k] != above[k - 1]:
            a, b = ff_error[k - 1] - pid_error, ff_error[k] - pid_error
            out.append(errors[k - 1] + (errors[k] - errors[k - 1]) * a / (a - b))
    return out


def plot(sweep, out: Path) -> list[Path]:
    """One panel per joint: max and rms error against model error (%), PID alone as lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pct = 100 * sweep["errors"]
    n = sweep["ff"]["max_abs_error"].shape[1]
    fig, axes = plt.subplots(n, 1, figsize=(7, 3.0 * n + 0.6), sharex=True, squeeze=False)
    for j in range(n):
        ax = axes[j, 0]
        ax.plot(pct, sweep["ff"]["max_abs_error"][:, j], "o-", color="tab:blue", ms=3,
                label="PID + feedforward, max |e|")
        ax.plot(pct, sweep["ff"]["rms_error"][:, j], "s-", color="tab:green", ms=3,
                label="PID + feedforward, rms e")
        ax.axhline(sweep["pid"]["max_abs_error"][j], color="tab:red", linestyle="--",
                   label="PID alone, max |e|")
        ax.axhline(sweep["pid"]["rms_error"][j], color="tab:orange", linestyle=":",
                   label="PID alone, rms e")
        ax.set_ylabel(f"joint {j + 1} error (rad)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper center")
    axes[-1, 0].set_xlabel("feedforward model error on link masses and inertias (%)")
    fig.suptitle("Tracking error against the feedforward's model error (W1, two-link arm)")
    fig.tight_layout()
    paths = []
    for ext in ("png", "svg"):
        path = out / f"model_error_sweep.{ext}"
        fig.savefig(path, dpi=120)
        paths.append(path)
    plt.close(fig)
    return paths


def write_tables(sweep, out: Path) -> list[Path]:
    data = {"model_error": sweep["errors"].tolist(),
            "pid_ff": {k: v.tolist() for k, v in sweep["ff"].items()},
            "pid": {k: v.tolist() for k, v in sweep["pid"].items()}}
    (out / "model_error_sweep.json").write_text(json.dumps(data, indent=2) + "\n")
    n = sweep["ff"]["max_abs_error"].shape[1]
    with (out / "model_error_sweep.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model_error"] + [f"{m}[{j}]" for m in sweep["ff"] for j in range(n)])
        for k, e in enumerate(sweep["errors"]):
            w.writerow([repr(float(e))] + [repr(float(sweep["ff"][m][k, j]))
                                           for m in sweep["ff"] for j in range(n)])
    return [out / "model_error_sweep.json", out / "model_error_sweep.csv"]


def report(sweep) -> str:
    ff, pid, errors = sweep["ff"], sweep["pid"], sweep["errors"]
    n = ff["max_abs_error"].shape[1]
    lines = [f"{'model error':>12}" + "".join(f"{'max|e| [' + str(j) + ']':>14}" for j in range(n))
             + "".join(f"{'rms e [' + str(j) + ']':>14}" for j in range(n))]
    lines.append(f"{'PID alone':>12}" + "".join(f"{v:>14.5f}" for v in pid["max_abs_error"])
                 + "".join(f"{v:>14.5f}" for v in pid["rms_error"]))
    for k, e in enumerate(errors):
        lines.append(f"{100 * e:>11.0f}%" + "".join(f"{v:>14.5f}" for v in ff["max_abs_error"][k])
                     + "".join(f"{v:>14.5f}" for v in ff["rms_error"][k]))
    for metric in ("max_abs_error", "rms_error"):
        for j in range(n):
            cross = crossings(errors, ff[metric][:, j], pid[metric][j])
            where = (", ".join(f"{100 * c:+.1f} %" for c in cross) if cross
                     else f"nowhere in {100 * errors[0]:+.0f} .. {100 * errors[-1]:+.0f} %")
            lines.append(f"joint {j + 1} {metric}: feedforward as bad as PID alone at {where}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="output folder (default runs/model_error_sweep-<time>)")
    p.add_argument("--force", action="store_true", help="write into a non-empty --out")
    p.add_argument("--from", dest="lo", type=float, default=-0.5, help="first model error (-0.5)")
    p.add_argument("--to", dest="hi", type=float, default=1.0, help="last model error (1.0)")
    p.add_argument("--points", type=int, default=31, help="sweep points (31: steps of 5 %%)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a diagram value, e.g. simulation.stop_time=1.0")
    args = p.parse_args(argv)
    out = Path(args.out or f"runs/model_error_sweep-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.iterdir()) and not args.force:
        print(f"error: {out} is not empty (use --force)", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    from blocksim.cli import parse_sets
    errors = np.linspace(args.lo, args.hi, args.points)
    sweep = run_sweep(errors, set=parse_sets(args.set))
    print(report(sweep))
    for path in write_tables(sweep, out) + plot(sweep, out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
