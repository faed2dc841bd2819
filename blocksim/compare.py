"""Compare two saved runs: metric differences (per variant, metric, joint: A, B, B - A, relative)
and the largest signal differences, printed; overlay figures of their common signals.

Variants are matched by name; when each run holds a single variant under different names (two
`Result.save` folders), those two are compared. Signals are compared on run A's time grid over the
common time span (B linearly interpolated). Relative differences are (B - A) / |A|, blank where
A = 0.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from .errors import BlocksimError
from .plotting import (VARIANT_STYLE_CYCLE, diagram_doc, file_stem, label_axes, load_run,
                       new_figure, robot_joint_names, save_figure, signal_units)


def pair_variants(a: dict, b: dict, variants=None) -> list[tuple[str, str, str]]:
    """(label, variant in A, variant in B) for the variants both runs hold."""
    if variants:
        missing = [v for v in variants if v not in a or v not in b]
        if missing:
            raise BlocksimError(f"variant(s) {', '.join(missing)} not in both runs; A has "
                                f"{', '.join(a)}, B has {', '.join(b)}")
        return [(v, v, v) for v in variants]
    common = [v for v in a if v in b]
    if common:
        return [(v, v, v) for v in common]
    if len(a) == 1 and len(b) == 1:
        va, vb = next(iter(a)), next(iter(b))
        return [(f"{va} vs {vb}", va, vb)]
    raise BlocksimError(f"the runs share no variant: A has {', '.join(a)}, B has {', '.join(b)}")


def metric_rows(a: dict, b: dict, pairs) -> tuple[list[dict], list[str]]:
    """One row per (variant, metric, joint) present in both runs; notes on the rest."""
    rows, notes = [], []
    for label, va, vb in pairs:
        ma, mb = a[va].metrics or {}, b[vb].metrics or {}
        for name in ma:
            if name not in mb:
                notes.append(f"{label}: metric '{name}' only in A")
                continue
            xa = np.ravel(np.asarray(ma[name], dtype=float))
            xb = np.ravel(np.asarray(mb[name], dtype=float))
            if xa.shape != xb.shape:
                notes.append(f"{label}: metric '{name}' has {xa.size} values in A, {xb.size} in B")
                continue
            for j, (va_, vb_) in enumerate(zip(xa, xb)):
                diff = vb_ - va_
                rel = diff / abs(va_) if va_ != 0 and math.isfinite(va_) else float("nan")
                rows.append({"variant": label, "metric": name, "joint": j, "A": float(va_),
                             "B": float(vb_), "B-A": float(diff), "relative": float(rel)})
        notes += [f"{label}: metric '{n}' only in B" for n in mb if n not in ma]
    return rows, notes


def _series(r, name):
    y = np.asarray(r[name], dtype=float)
    if y.ndim == 3:
        y = y[0]
    return y


def signal_rows(a: dict, b: dict, pairs, signals=None) -> list[dict]:
    """max |B - A| per (variant, signal, element) on A's grid over the common time span."""
    rows = []
    for label, va, vb in pairs:
        ra, rb = a[va], b[vb]
        names = signals or [n for n in ra.names if n in rb]
        for s in names:
            if s not in ra or s not in rb:
                raise BlocksimError(f"signal '{s}' is not logged in both runs ({label})")
            ya, yb = _series(ra, s), _series(rb, s)
            if ya.shape[1] != yb.shape[1]:
                continue
            lo, hi = max(ra.t[0], rb.t[0]), min(ra.t[-1], rb.t[-1])
            mask = (ra.t >= lo) & (ra.t <= hi)
            if not mask.any():
                continue
            t = ra.t[mask]
            for j in range(ya.shape[1]):
                d = np.interp(t, rb.t, yb[:, j]) - ya[mask, j]
                rows.append({"variant": label, "signal": s, "element": j,
                             "max_abs_diff": float(np.max(np.abs(d))),
                             "at_time": float(t[int(np.argmax(np.abs(d)))])})
    return rows


def _no_nan(rows: list[dict]) -> list[dict]:
    """Rows for JSON: NaN (an undefined relative difference) becomes null."""
    return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in r.items()} for r in rows]


def _fmt(x: float) -> str:
    return "" if not math.isfinite(x) else f"{x:.6g}"


def format_metric_rows(rows: list[dict]) -> str:
    if not rows:
        return "no metric in common"
    head = (f"{'variant':<24} {'metric':<18} {'joint':>5} {'A':>13} {'B':>13} {'B - A':>13} "
            f"{'relative':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        rel = "" if not math.isfinite(r["relative"]) else f"{100 * r['relative']:+.2f} %"
        lines.append(f"{r['variant']:<24} {r['metric']:<18} {r['joint']:>5} {_fmt(r['A']):>13} "
                     f"{_fmt(r['B']):>13} {r['B-A']:>+13.6g} {rel:>10}")
    return "\n".join(lines)


def format_signal_rows(rows: list[dict]) -> str:
    if not rows:
        return "no signal in common"
    head = f"{'variant':<24} {'signal':<22} {'elem':>5} {'max |B - A|':>13} {'at t [s]':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['variant']:<24} {r['signal']:<22} {r['element']:>5} "
                     f"{r['max_abs_diff']:>13.6g} {r['at_time']:>10.4g}")
    return "\n".join(lines)


def overlay_figures(a: dict, b: dict, pairs, out: Path, signals=None, names=("A", "B")):
    """One figure per common signal: each variant in its colour, A solid, B dotted."""
    first = next(iter(a.values()))
    units = signal_units(diagram_doc(first))
    joints = robot_joint_names(first)
    common = signals or [n for n in first.names
                         if all(n in a[va] and n in b[vb] for _, va, vb in pairs)]
    paths = []
    for s in common:
        width = _series(a[pairs[0][1]], s).shape[1]
        fig = new_figure(figsize=(9.5, 2.2 * width + 1.0), layout="constrained")
        axes = fig.subplots(width, 1, sharex=True, squeeze=False)[:, 0]
        for k, (label, va, vb) in enumerate(pairs):
            colour = VARIANT_STYLE_CYCLE[k % len(VARIANT_STYLE_CYCLE)]
            ya, yb = _series(a[va], s), _series(b[vb], s)
            for j in range(min(width, ya.shape[1], yb.shape[1])):
                axes[j].plot(a[va].t, ya[:, j], "-", color=colour, linewidth=1.2,
                             label=f"{label} ({names[0]})")
                axes[j].plot(b[vb].t, yb[:, j], ":", color=colour, linewidth=1.8,
                             label=f"{label} ({names[1]})")
        label_axes(fig, axes, [[s]] * width, units, joints)
        fig.suptitle(f"{s}: {names[0]} (solid) vs {names[1]} (dotted)")
        paths += save_figure(fig, out, "compare_" + file_stem(s))
    return paths


def compare_command(run_a, run_b, variants=None, signals=None, out=None, figures=True,
                    fail_rel=None) -> int:
    """`blocksim compare`: print the differences, write figures and tables; the exit status."""
    a, b = load_run(run_a), load_run(run_b)
    pairs = pair_variants(a, b, variants)
    print(f"A: {run_a}\nB: {run_b}\n")
    rows, notes = metric_rows(a, b, pairs)
    print("metrics (per joint):")
    print(format_metric_rows(rows))
    for note in notes:
        print(f"note: {note}")
    srows = signal_rows(a, b, pairs, signals)
    print("\nsignals (on A's time grid, over the common span):")
    print(format_signal_rows(srows))
    if out is None and figures:
        out = f"runs/compare-{Path(run_a).resolve().name}-vs-{Path(run_b).resolve().name}"
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics_diff.json").write_text(json.dumps(
            {"A": str(run_a), "B": str(run_b), "metrics": _no_nan(rows), "signals": srows,
             "notes": notes}, indent=2) + "\n")
        with (out / "metrics_diff.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["variant", "metric", "joint", "A", "B", "B-A", "relative"])
            for r in rows:
                w.writerow([r["variant"], r["metric"], r["joint"], repr(r["A"]), repr(r["B"]),
                            repr(r["B-A"]), repr(r["relative"])])
        if figures:
            for path in overlay_figures(a, b, pairs, out, signals):
                print(f"wrote {path}")
        print(f"saved to {out}/")
    if fail_rel is not None:
        bad = [r for r in rows if math.isfinite(r["relative"]) and abs(r["relative"]) > fail_rel]
        if bad:
            print(f"{len(bad)} metric value(s) differ by more than {100 * fail_rel:g} %")
            return 1
    return 0
