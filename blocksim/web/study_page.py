"""The HTML page of a study folder (`python cli.py report DIR` on a `sweep --out` folder): one
offline page with the distribution of each metric column over the members that ran (a histogram,
its median and 99th percentile marked, and a table of min, median, p99 and max), a heat map of
each metric column over the first two grid factors (its mean over the members at each grid
point), the Sobol indices of a saltelli study (a tornado chart per metric column: S1 and ST with
their 95 % intervals, the largest total index on top), and the worst members by each metric
column, each with the command that replays it (`sweep STUDY --out DIR --replay N`), and the
members that failed.

The numbers (bin counts, quantiles, means) are computed here with numpy from the study's rows,
so the page's figures are exactly what a test computes from the summary."""
from __future__ import annotations

import html
import json
import math
import shlex
from pathlib import Path

import numpy as np

from .study_data import StudyData

WORST = 10
"""Members listed as the worst by each metric column (the largest values)."""

HERE = Path(__file__).parent


def histogram(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(counts, edges) of the finite values x, with the static figure's bin count:
    sqrt(n) bins, at least 5 and at most 50 (study/figures.py)."""
    x = x[np.isfinite(x)]
    bins = min(50, max(5, int(np.sqrt(x.size))))
    return np.histogram(x, bins=bins)


def quantiles(x: np.ndarray) -> dict[str, float]:
    """min, median, p99 and max of the finite values x (numpy's default linear quantiles)."""
    x = x[np.isfinite(x)]
    q = np.quantile(x, [0.0, 0.5, 0.99, 1.0])
    return dict(zip(("min", "median", "p99", "max"), (float(v) for v in q)))


def _finite(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _column(rows: list[dict], col: str) -> np.ndarray:
    return np.array([r.get(col, math.nan) for r in rows], dtype=float)


def distribution_figure(col: str, x: np.ndarray) -> dict:
    counts, edges = histogram(x)
    q = quantiles(x)
    centres = (edges[:-1] + edges[1:]) / 2
    shapes, notes = [], []
    for key, dash in (("median", "solid"), ("p99", "dash")):
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": q[key],
                       "x1": q[key], "y0": 0, "y1": 1, "line": {"color": "#d62728", "dash": dash}})
        notes.append({"x": q[key], "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom",
                      "text": f"{key} {q[key]:.4g}", "showarrow": False, "font": {"size": 10}})
    return {"kind": "distribution", "column": col,
            "data": [{"type": "bar", "x": centres.tolist(), "y": counts.tolist(),
                      "width": np.diff(edges).tolist(), "marker": {"color": "#1f77b4"},
                      "name": col, "hovertemplate": f"{col} %{{x:.4g}}<br>%{{y}} members"
                                                    "<extra></extra>"}],
            "layout": {"title": {"text": f"Distribution of {col} over {int(np.isfinite(x).sum())} "
                                         "members"},
                       "xaxis": {"title": {"text": f"{col} (in its signal's units)"}},
                       "yaxis": {"title": {"text": "members"}}, "bargap": 0,
                       "shapes": shapes, "annotations": notes, "height": 320,
                       "margin": {"l": 60, "r": 20, "t": 50, "b": 50}}}


def heat_map_figure(col: str, fa: str, fb: str, rows: list[dict], others: list[str]) -> dict:
    """The mean of `col` at each (fa, fb) grid point, over the members there (every draw, and
    every value of the other grid factors `others`)."""
    a = sorted({r[fa] for r in rows})
    b = sorted({r[fb] for r in rows})
    total = np.zeros((len(b), len(a)))
    count = np.zeros((len(b), len(a)))
    for r in rows:
        v = r.get(col, math.nan)
        if math.isfinite(v):
            total[b.index(r[fb]), a.index(r[fa])] += v
            count[b.index(r[fb]), a.index(r[fa])] += 1
    mean = [[(total[i, j] / count[i, j]) if count[i, j] else None for j in range(len(a))]
            for i in range(len(b))]
    over = "draws" + (f" and {', '.join(others)}" if others else "")
    return {"kind": "heat_map", "column": col, "factors": [fa, fb],
            "data": [{"type": "heatmap", "x": [float(v) for v in a], "y": [float(v) for v in b],
                      "z": mean, "colorscale": "Viridis",
                      "colorbar": {"title": {"text": f"mean {col}"}},
                      "hovertemplate": f"{fa} %{{x:.4g}}<br>{fb} %{{y:.4g}}<br>mean {col} "
                                       "%{z:.4g}<extra></extra>"}],
            "layout": {"title": {"text": f"Mean {col} over the {over}"},
                       "xaxis": {"title": {"text": fa}, "type": "category"},
                       "yaxis": {"title": {"text": fb}, "type": "category"},
                       "height": 420, "margin": {"l": 90, "r": 20, "t": 50, "b": 60}}}


def sobol_figure(col: str, indices: dict) -> dict:
    items = sorted(indices.items(), key=lambda kv: kv[1]["ST"])     # the largest on top
    names = [name for name, _ in items]
    data = []
    for key, colour in (("S1", "#1f77b4"), ("ST", "#ff7f0e")):
        data.append({"type": "bar", "orientation": "h", "name": key, "y": names,
                     "x": [v[key] for _, v in items], "marker": {"color": colour},
                     "error_x": {"type": "data", "array": [v[f"{key}_conf"] for _, v in items]},
                     "hovertemplate": f"%{{y}}: {key} %{{x:.3f}}<extra></extra>"})
    return {"kind": "sobol", "column": col,
            "data": data,
            "layout": {"title": {"text": f"Sobol indices of {col} (95 % intervals)"},
                       "barmode": "group", "height": 160 + 50 * len(names),
                       "xaxis": {"title": {"text": "share of the variance (S1: alone, ST: "
                                                   "with the others)"}, "range": [-0.1, 1.1]},
                       "margin": {"l": 140, "r": 20, "t": 50, "b": 50}}}


def replay_command(study: StudyData, member: int) -> str:
    return (f"python cli.py sweep {shlex.quote(study.file)} --out {shlex.quote(str(study.folder))}"
            f" --replay {member}")


def study_state(study: StudyData) -> dict:
    """Everything the study page draws, JSON-ready."""
    ok = [r for r in study.rows if r["status"] == "ok"]
    statuses: dict[str, int] = {}
    for r in study.rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    figures, quantile_rows, worst = [], [], []
    for col in study.metrics:
        x = _column(ok, col)
        if not np.isfinite(x).any():
            continue
        figures.append(distribution_figure(col, x))
        q = quantiles(x)
        quantile_rows.append([col, int(np.isfinite(x).sum()), q["min"], q["median"], q["p99"],
                              q["max"]])
        ranked = sorted((r for r in ok if math.isfinite(r.get(col, math.nan))),
                        key=lambda r: -r[col])[:WORST]
        for rank, r in enumerate(ranked, 1):
            worst.append([col, rank, r["member"], r[col], *[_cell(r[f]) for f in study.factors],
                          replay_command(study, r["member"])])
    if len(study.grid) >= 2:
        fa, fb = study.grid[0], study.grid[1]
        for col in study.metrics:
            if np.isfinite(_column(ok, col)).any():
                figures.append(heat_map_figure(col, fa, fb, ok, study.grid[2:]))
    for col, indices in (study.sensitivity or {}).items():
        figures.append(sobol_figure(col, indices))
    failed = [[r["member"], r["status"], r.get("message", ""), *[_cell(r[f]) for f in study.factors],
               replay_command(study, r["member"])] for r in study.rows if r["status"] != "ok"]
    return {"title": f"{study.name}: study", "figures": figures,
            "statuses": statuses, "members": len(study.rows),
            "quantiles": quantile_rows, "worst": worst, "failed": failed,
            "factors": study.factors, "grid": study.grid[:2], "sampling": study.sampling}


def _cell(v):
    return _finite(v) if isinstance(v, float) else v


def render_study(state: dict, study: StudyData, plotly_tag: str, version: str) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in sorted(state["statuses"].items()))
    if len(study.grid) >= 2:
        grid = (f"Heat maps span the grid factors {study.grid[0]} and {study.grid[1]}"
                + (f", each cell the mean over the draws and over {', '.join(study.grid[2:])}."
                   if study.grid[2:] else ", each cell the mean over the members there (the draws)."))
    else:
        grid = "No heat maps: the study has fewer than two grid factors with scalar values."
    sobol = ("" if study.sensitivity else
             " No Sobol indices: the study is not a saltelli study (docs/studies.md).")
    note = (f"{state['members']} members ({counts}); factors: {', '.join(study.factors)}. "
            f"Histograms are over the members that ran; the median and the 99th percentile are "
            f"marked. {grid}{sobol} The worst members are those with the largest value of each "
            f"metric column, with the command that replays each alone.")
    page = (HERE / "study.html").read_text()
    state_json = json.dumps(state, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return (page.replace("{{TITLE}}", html.escape(state["title"]))
            .replace("{{NOTE}}", html.escape(note))
            .replace("{{PLOTLY_VERSION}}", html.escape(version))
            .replace("{{STYLE}}", (HERE / "report.css").read_text())
            .replace("{{SCRIPT}}", (HERE / "report.js").read_text()
                     + (HERE / "study.js").read_text())
            .replace("{{STATE}}", state_json)
            .replace("{{PLOTLY}}", plotly_tag))
