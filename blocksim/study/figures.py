"""A study's pictures (DIR/figures, PNG and SVG): the distribution of each metric column over
the members that ran (histogram, median and 99th percentile marked), a heat map of the first
metric column over the first two grid factors (its mean over the draws at each grid point), and
for a saltelli study the Sobol indices of each metric column (S1 and ST with their 95 %
intervals: a tornado chart, the largest total index on top)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..plotting import new_figure, save_figure
from .report import metric_columns


def study_figures(study, rows: list[dict], metrics: tuple[str, ...], out: Path,
                  sensitivity: dict | None = None) -> list[Path]:
    folder = Path(out) / "figures"
    folder.mkdir(exist_ok=True)
    cols = metric_columns(rows, metrics)
    ok = [r for r in rows if r["status"] == "ok"]
    written = []
    if ok and cols:
        written += _distributions(study, ok, cols, folder)
        grid = [f for f in study.factors if not f.drawn and f.size > 1
                and not isinstance(f.args[0], tuple)]
        if len(grid) >= 2:
            written += _heat_map(study, ok, cols[0], grid[0], grid[1], folder)
    if sensitivity:
        written += _sobol(study, sensitivity, folder)
    return written


def _distributions(study, ok, cols, folder) -> list[Path]:
    n = len(cols)
    across = min(n, 3)
    down = math.ceil(n / across)
    fig = new_figure(figsize=(4.0 * across, 3.0 * down + 0.5), layout="constrained")
    for k, col in enumerate(cols):
        ax = fig.add_subplot(down, across, k + 1)
        x = np.array([r.get(col, np.nan) for r in ok], dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            ax.hist(x, bins=min(50, max(5, int(np.sqrt(x.size)))), color="tab:blue", alpha=0.8)
            for q, style in ((0.5, "-"), (0.99, "--")):
                ax.axvline(np.quantile(x, q), color="tab:red", linestyle=style,
                           label=f"{'median' if q == 0.5 else 'p99'} {np.quantile(x, q):.4g}")
            ax.legend(fontsize=7)
        ax.set_xlabel(col)
        ax.set_ylabel("members")
    fig.suptitle(f"{study.name}: {len(ok)} members")
    return save_figure(fig, folder, "distributions")


def _heat_map(study, ok, col, fa, fb, folder) -> list[Path]:
    a, b = list(fa.args), list(fb.args)
    total = np.zeros((len(b), len(a)))
    count = np.zeros((len(b), len(a)))
    for r in ok:
        i, j = b.index(r[fb.path]), a.index(r[fa.path])
        if math.isfinite(r.get(col, math.nan)):
            total[i, j] += r[col]
            count[i, j] += 1
    mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    fig = new_figure(figsize=(6.5, 5.0), layout="constrained")
    ax = fig.add_subplot()
    image = ax.pcolormesh(np.arange(len(a) + 1), np.arange(len(b) + 1), mean, cmap="viridis")
    ax.set_xticks(np.arange(len(a)) + 0.5, [f"{v:.3g}" for v in a], rotation=90, fontsize=7)
    ax.set_yticks(np.arange(len(b)) + 0.5, [f"{v:.3g}" for v in b], fontsize=7)
    ax.set_xlabel(fa.path)
    ax.set_ylabel(fb.path)
    fig.colorbar(image, ax=ax, label=f"mean {col}")
    ax.set_title(f"{study.name}: {col}")
    return save_figure(fig, folder, "heat_map")


def _sobol(study, sensitivity: dict, folder) -> list[Path]:
    cols = list(sensitivity)
    fig = new_figure(figsize=(6.5, 1.0 + 2.2 * len(cols)), layout="constrained")
    for k, col in enumerate(cols):
        ax = fig.add_subplot(len(cols), 1, k + 1)
        items = sorted(sensitivity[col].items(), key=lambda kv: kv[1]["ST"])
        y = np.arange(len(items))
        for shift, key, color in ((-0.2, "S1", "tab:blue"), (0.2, "ST", "tab:orange")):
            ax.barh(y + shift, [v[key] for _, v in items], height=0.38, color=color, label=key,
                    xerr=[v[f"{key}_conf"] for _, v in items], capsize=2)
        ax.set_yticks(y, [name for name, _ in items], fontsize=8)
        ax.set_xlim(-0.1, 1.1)          # indices are shares of the variance; wider intervals run off
        ax.set_title(f"Sobol indices of {col}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    return save_figure(fig, folder, "sobol_indices")
