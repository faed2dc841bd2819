"""Figures of logged signals: the diagram's scopes, with variants overlaid, as PNG and SVG."""
from __future__ import annotations

from pathlib import Path



VARIANT_STYLE_CYCLE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
                       "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan")


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def is_reference(name: str, scope: dict) -> bool:
    """A reference trace is drawn dashed: named in the scope's `reference`, or from a block whose
    name starts with 'ref'."""
    refs = scope.get("reference", [])
    refs = [refs] if isinstance(refs, str) else list(refs)
    return name in refs or name.split(".")[0].startswith("ref")


def draw_scope(scope: dict, results: dict, out: Path, index: int) -> list[Path]:
    """One figure: a subplot per signal element, each variant in its own colour, time in s."""
    plt = _pyplot()
    signals = list(scope.get("signals", []))
    if not signals:
        return []
    first = next(iter(results.values()))
    n_rows = max(first[s].shape[-1] for s in signals)
    fig, axes = plt.subplots(n_rows, 1, figsize=(8, 2.4 * n_rows + 0.8), sharex=True,
                             squeeze=False)
    for v_index, (variant, r) in enumerate(results.items()):
        colour = VARIANT_STYLE_CYCLE[v_index % len(VARIANT_STYLE_CYCLE)]
        for s in signals:
            data = r[s]
            if data.ndim == 3:
                data = data[0]
            dashed = is_reference(s, scope)
            if dashed and v_index > 0:
                continue
            for i in range(data.shape[1]):
                label = s if len(results) == 1 or dashed else f"{s} ({variant})"
                axes[i, 0].plot(r.t, data[:, i], linestyle="--" if dashed else "-",
                                color="black" if dashed else colour, linewidth=1.2,
                                label=label)
    ylabel = scope.get("ylabel", "")
    for i in range(n_rows):
        ax = axes[i, 0]
        ax.set_ylabel(f"{ylabel} [{i}]" if n_rows > 1 else ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[-1, 0].set_xlabel("time [s]")
    title = scope.get("title", f"scope {index}")
    fig.suptitle(title)
    fig.tight_layout()
    stem = scope.get("file") or "".join(c if c.isalnum() else "_" for c in title).strip("_").lower()
    paths = []
    for ext in ("png", "svg"):
        path = out / f"{stem}.{ext}"
        fig.savefig(path, dpi=120)
        paths.append(path)
    plt.close(fig)
    return paths


def scope_figures(spec, results: dict, out: Path) -> list[Path]:
    """Every scope of the diagram, variants overlaid."""
    paths = []
    for k, scope in enumerate(spec.scopes):
        paths += draw_scope(scope, results, Path(out), k)
    return paths


def plot_run(run, signals=None, variants=None, out=None) -> list[Path]:
    """Figures from a saved run folder (one written by `simulate --out`, or a single Result.save)."""
    from .engine.result import Result
    run = Path(run)
    if (run / "signals.npz").exists():
        results = {run.name: Result.load(run)}
    else:
        results = {p.name: Result.load(p) for p in sorted(run.iterdir())
                   if (p / "signals.npz").exists()}
    if not results:
        from .errors import BlocksimError
        raise BlocksimError(f"{run}: no saved run here (no signals.npz)")
    if variants:
        results = {v: results[v] for v in variants if v in results}
    out = Path(out) if out else run
    out.mkdir(parents=True, exist_ok=True)
    scopes = []
    if signals:
        scopes = [{"title": "signals", "signals": signals}]
    else:
        import yaml
        first = next(iter(results.values()))
        if first.diagram:
            doc = yaml.safe_load(first.diagram) or {}
            scopes = doc.get("scopes") or []
        if not scopes:
            scopes = [{"title": n, "signals": [n]} for n in first.names]
    paths = []
    for k, scope in enumerate(scopes):
        paths += draw_scope(scope, results, out, k)
    return paths


