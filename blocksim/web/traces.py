"""The figures of a page as data: every scope of a run (and its error figure), then every logged
signal no scope shows, each as rows (one per signal element) of traces (one per signal, element
and variant or batch member), with the same labels, units, colours and reference rules as the
static figures (plotting.py), and the trace values packed for the page (page_data.Packer)."""
from __future__ import annotations

from ..plotting import (VARIANT_STYLE_CYCLE, REFERENCE_COLOUR, _series, error_scope,
                        is_reference, row_labels, scope_signals, shared_references)
from .decimate import minmax_indices
from .page_data import Packer

DASHES = ("solid", "dashdot", "dot", "longdashdot", "dash")
"""Line styles of several signals of one variant in one row (plotting.SIGNAL_LINESTYLES)."""


def signal_blocks(name: str) -> list[str]:
    """The blocks a trace comes from: 'plant.q' -> ['plant']; an error 'ref.q - plant.q' ->
    ['ref', 'plant']."""
    return [part.strip().split(".")[0] for part in name.split(" - ")]


def figure_list(results: dict, scopes: list[dict], units: dict) -> list[tuple[dict, dict]]:
    """(scope, results) of every figure of the page: each scope of the run's diagram and its
    error figure, then one figure per logged signal that no scope shows."""
    figures = []
    shown = set()
    for scope in scopes:
        figures.append((scope, results))
        shown.update(scope.get("signals", []))
        error = error_scope(scope, results, units)
        if error is not None:
            figures.append((error[0], error[1]))
    first = next(iter(results.values()))
    for name in first.names:
        if name not in shown:
            figures.append(({"title": f"logged: {name}", "signals": [name]}, results))
    return figures


def figure_spec(scope: dict, results: dict, units: dict, joints, packer: Packer,
                cap: int) -> dict:
    """One figure: {title, rows: [{label, title}], traces: [...]}; each trace names its label,
    signal, block(s), port, element, variant, row, colour and dash, and where its values are in
    the page's data (its time vector, its kept sample indices when decimated, its values)."""
    runs, signals, widths = scope_signals(scope, results)
    n_rows = max(widths.values())
    rows = row_labels([[s for s in signals if widths[s] > i] for i in range(n_rows)], units,
                      joints, scope.get("ylabel"))
    refs = [s for s in signals if is_reference(s, scope)]
    others = [s for s in signals if s not in refs]
    shared = shared_references(refs, runs)
    many = len(runs) > 1
    traces = []

    def add(r, s, variant, colour, dash, label):
        data = _series(r, s)
        time = packer.time(r.t)
        for i in range(data.shape[1]):
            y = data[:, i]
            keep = minmax_indices(y, cap)
            block = signal_blocks(s)
            port = s.split(".", 1)[1] if " - " not in s and "." in s else s
            traces.append({"label": label, "signal": s, "blocks": block, "port": port,
                           "element": i, "variant": variant, "row": i, "colour": colour,
                           "dash": dash, "unit": units.get(s.split(" - ")[-1], ""),
                           "time": time, "points": int(len(keep)), "samples": int(len(y)),
                           "index": None if len(keep) == len(y) else packer.indices(keep),
                           "values": packer.values(y[keep])})

    for v_index, (variant, r) in enumerate(runs.items()):
        colour = VARIANT_STYLE_CYCLE[v_index % len(VARIANT_STYLE_CYCLE)]
        for s in refs:
            if shared[s] and v_index > 0:
                continue
            c = REFERENCE_COLOUR if (shared[s] or not many) else colour
            add(r, s, None if shared[s] else variant, _css(c), "dash",
                s if (shared[s] or not many) else f"{s} ({variant})")
        for s_index, s in enumerate(others):
            if many:
                add(r, s, variant, _css(colour), DASHES[s_index % len(DASHES)], f"{s} ({variant})")
            else:
                add(r, s, variant, _css(VARIANT_STYLE_CYCLE[s_index % len(VARIANT_STYLE_CYCLE)]),
                    "solid", s)
    return {"title": str(scope.get("title", "scope")),
            "rows": [{"label": label, "title": title} for label, title in rows],
            "traces": traces}


TABLEAU = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c",
           "tab:red": "#d62728", "tab:purple": "#9467bd", "tab:brown": "#8c564b",
           "tab:pink": "#e377c2", "tab:gray": "#7f7f7f", "tab:olive": "#bcbd22",
           "tab:cyan": "#17becf", "black": "#000000"}


def _css(colour: str) -> str:
    """A matplotlib colour name of the static figures as the page's CSS colour."""
    return TABLEAU.get(colour, colour)


def all_figures(results: dict, context: dict, packer: Packer, cap: int) -> list:
    """The specs of every figure of the page (figure_list), the run's context (report.context:
    its scopes, units and joint names) read once."""
    return [figure_spec(scope, runs, context["units"], context["joints"], packer, cap)
            for scope, runs in figure_list(results, context["scopes"], context["units"])]


def expected_traces(figures: list[dict]) -> dict[str, list[str]]:
    """{block: the labels of the traces that come from it} (what a click on it highlights)."""
    out: dict[str, list[str]] = {}
    for k, fig in enumerate(figures):
        for j, tr in enumerate(fig["traces"]):
            for b in tr["blocks"]:
                out.setdefault(b, []).append(f"{k}:{j}")
    return out

