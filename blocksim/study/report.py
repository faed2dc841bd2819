"""The table a study prints at its end: members by status, each metric column's distribution
(min, median, 99th percentile, max over the members that ran) and the worst members, each with
the command that replays it."""
from __future__ import annotations

import numpy as np

WORST = 5


def metric_columns(rows: list[dict], metrics: tuple[str, ...]) -> list[str]:
    """The rows' metric columns (`name[j]`), in the order of the study's metrics."""
    seen = dict.fromkeys(c for r in rows for c in r)
    return [c for m in metrics for c in seen if c.startswith(f"{m}[")]


def summary_text(rows: list[dict], metrics: tuple[str, ...], study_file: str, out: str) -> str:
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    lines = [f"{len(rows)} members: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))]
    cols = metric_columns(rows, metrics)
    ok = [r for r in rows if r["status"] == "ok"]
    if ok and cols:
        width = max(len(c) for c in cols)
        lines.append(f"{'metric':<{width}} {'min':>12} {'median':>12} {'p99':>12} {'max':>12}")
        for c in cols:
            x = np.array([r.get(c, np.nan) for r in ok], dtype=float)
            q = np.nanquantile(x, [0.0, 0.5, 0.99, 1.0]) if np.isfinite(x).any() else [np.nan] * 4
            lines.append(f"{c:<{width}} " + " ".join(f"{v:>12.6g}" for v in q))
        first = cols[0]
        worst = sorted(ok, key=lambda r: -r.get(first, -np.inf))[:WORST]
        lines.append(f"worst by {first}:")
        lines += [f"  member {r['member']}: {r[first]:.6g}   replay: python cli.py sweep "
                  f"{study_file} --out {out} --replay {r['member']}" for r in worst]
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        lines.append("members that did not run:")
    for r in failed[:WORST]:
        lines.append(f"  member {r['member']} {r['status']}: {r['message']}   replay: python cli.py "
                     f"sweep {study_file} --out {out} --replay {r['member']}")
    if len(failed) > WORST:
        lines.append(f"  and {len(failed) - WORST} more (their status and message: the summary)")
    return "\n".join(lines)
