"""The HTML report of a saved run: one offline page with every scope as an interactive plotly
figure (variants overlaid, toggled from the legend, units on every axis), every other logged
signal, the metrics table (sortable), the run's settings and provenance, and the block diagram
(click a block: its traces are highlighted; hover a trace: its block and port).

Self-contained by default (plotly.js's cartesian bundle inside the page, 1.5 MB of it);
`plotly="shared"` writes plotly.min.js once beside the page and links it, so the reports of one
folder share it."""
from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path

from ..engine.result import atomic_write
from ..errors import BlocksimError
from .decimate import DEFAULT_MAX_POINTS
from .page_data import Packer

HERE = Path(__file__).parent
SHARED_PLOTLY = "plotly.min.js"
PLOTLY_FILE = "plotly-cartesian.min.js"
PLOTLY_VERSION = "4.1.1 (cartesian bundle)"


def plotly_js() -> tuple[str, str]:
    """(plotly.js's text, its version): the cartesian bundle vendored in web/vendor (every
    trace type the pages draw, 1.5 MB: a new browser profile compiles it in about a third of
    the full bundle's time)."""
    return (HERE / "vendor" / PLOTLY_FILE).read_text(encoding="utf-8"), PLOTLY_VERSION


def diagram_svg(results: dict, run_dir: Path) -> str:
    """The block diagram as `draw` makes it (each block's element has id = its name), from the
    run's source file when it still exists (every block, as the file gives them), else from the
    first variant's saved diagram; "" when neither loads."""
    import blocksim

    from ..drawing import draw_compiled, svg_text
    from ..plotting import source_diagram_path
    first = next(iter(results.values()))
    source = source_diagram_path(first, run_dir)
    for what in ([source] if source else []) + ([first.diagram] if first.diagram else []):
        try:
            d = blocksim.load(what)
            svg = svg_text(draw_compiled(d.compile(), d.name))
        except BlocksimError:
            continue
        return compact_svg(svg)
    return ""


def compact_svg(svg: str) -> str:
    """matplotlib's SVG, smaller for a page: from <svg> on, without its metadata, blank runs
    between tags, the font list of every text (report.css gives it once) and no-op rotations,
    with coordinates to 0.1 pt (a third of the size; the text itself is left as it is)."""
    import re
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r">\s+<", "><", svg)

    svg = re.sub(r"font-family: [^;\"]*(; )?", "", svg)      # the page's style gives it once
    svg = re.sub(r' transform="rotate\(-0 [^)]*\)"', "", svg)
    svg = re.sub(r' (x|y)="(-?\d+\.\d)\d*"', r' \1="\2"', svg)

    def path(m):
        data = re.sub(r"(\d+\.\d)\d+", r"\1", m.group(1))
        return ' d="' + " ".join(data.split()) + '"'
    return re.sub(r' d="([^"]*)"', path, svg)


def provenance(results: dict, settings: dict) -> list[dict]:
    """One row per variant: its settings (the resolved simulation: section), solver statistics,
    and where it came from."""
    rows = []
    for label, r in results.items():
        meta = r.metadata
        digest = hashlib.sha256(r.diagram.encode()).hexdigest()[:16] if r.diagram else ""
        rows.append({"variant": label, "diagram": str(meta.get("diagram", "")),
                     "diagram SHA-256": digest, "solver": str(meta.get("solver", "")),
                     "simulation": settings.get(label, ""),
                     "statistics": ", ".join(f"{k} {v}" for k, v in r.stats.items()),
                     "samples": len(r.t),
                     "time": f"{r.t[0]:g}..{r.t[-1]:g} s" if len(r.t) else "",
                     "overrides": json.dumps(meta.get("overrides") or {}),
                     "blocksim": str(meta.get("blocksim", "")),
                     "git revision": str(meta.get("git_revision", ""))[:12],
                     "python, numpy, scipy": f"{meta.get('python', '')}, {meta.get('numpy', '')}, "
                                             f"{meta.get('scipy', '')}"})
    return rows


def metric_rows(results: dict) -> list[list]:
    """[variant, metric, value per element...] rows of the metrics table."""
    rows = []
    for label, r in results.items():
        for name, values in (r.metrics or {}).items():
            flat = values if isinstance(values, list) else [values]
            rows.append([label, name, *flat])
    return rows


def context(results: dict, run_dir: Path) -> dict:
    """What the figures need of the run's diagram, read once: its name, scopes, signal units and
    the robot's joint names (the same for every rerun of one diagram: serve reads it once)."""
    from ..plotting import diagram_doc, robot_joint_names, run_scopes, signal_units
    first = next(iter(results.values()))
    doc = diagram_doc(first)
    settings = {}
    for label, r in results.items():
        section = (doc if r is first else diagram_doc(r)).get("simulation") or {}
        settings[label] = ", ".join(f"{k}: {v}" for k, v in section.items())
    return {"name": doc.get("name") or Path(run_dir).name, "scopes": run_scopes(results, run_dir),
            "units": signal_units(doc), "joints": robot_joint_names(first, run_dir),
            "settings": settings}


def page_state(results: dict, run_dir: Path, cap: int = DEFAULT_MAX_POINTS, title=None,
               known: dict | None = None) -> dict:
    """Everything the page draws, as JSON-ready data (the figures reference Packer's blob);
    known: the run's context() when the caller has it."""
    from .traces import all_figures
    if cap < 4:
        raise BlocksimError(f"--max-points {cap}: a trace needs at least 4 points")
    known = known or context(results, run_dir)
    packer = Packer()
    figures = all_figures(results, known, packer, cap)
    return {"title": title or f"{known['name']}: report", "cap": cap, "figures": figures,
            "metrics": metric_rows(results),
            "provenance": provenance(results, known["settings"]),
            "variants": list(results), "blob": packer.blob()}


def render(state: dict, svg: str, plotly: str = "inline") -> str:
    """The page's HTML: the template with the state, the diagram and plotly.js (inline, or a
    <script src> of the shared copy)."""
    js, version = plotly_js()
    if plotly == "inline":
        library = f"<script>{js}</script>"
    else:
        library = f'<script src="{SHARED_PLOTLY}"></script>'
    decimated = sum(1 for f in state["figures"] for t in f["traces"] if t["index"] is not None)
    n_traces = sum(len(f["traces"]) for f in state["figures"])
    note = (f"At most {state['cap']:,} points per trace are drawn (longer traces keep each "
            f"bucket's minimum and maximum; {decimated} of {n_traces} traces thinned); values "
            "are drawn to 1/65,534 of each trace's range. The exact values are in the run's "
            "files (signals.npz, signals.csv).")
    page = (HERE / "report.html").read_text()
    state_json = json.dumps(state, separators=(",", ":")).replace("</", "<\\/")
    return (page.replace("{{TITLE}}", html.escape(state["title"]))
            .replace("{{NOTE}}", html.escape(note))
            .replace("{{PLOTLY_VERSION}}", html.escape(version))
            .replace("{{DIAGRAM}}", svg or "<p>(the diagram could not be drawn)</p>")
            .replace("{{STYLE}}", (HERE / "report.css").read_text())
            .replace("{{SCRIPT}}", (HERE / "report.js").read_text())
            .replace("{{STATE}}", state_json)
            .replace("{{PLOTLY}}", library))


def write_report(run_dir, out=None, plotly: str = "inline", cap: int = DEFAULT_MAX_POINTS) -> Path:
    """Write the report of the saved run `run_dir` (a `simulate --out` folder or one saved run),
    or the study page of a study folder (`sweep --out`: web/study_page.py), to `out` (default
    RUN_DIR/report.html); with plotly="shared", plotly.min.js beside it."""
    from .study_data import is_study_folder
    if plotly not in ("inline", "shared"):
        raise BlocksimError(f"--plotly {plotly}: inline or shared")
    run_dir = Path(run_dir)
    out = Path(out) if out else run_dir / "report.html"
    if out.suffix.lower() not in (".html", ".htm"):
        raise BlocksimError(f"--out {out}: the report's file name must end in .html")
    js, version = plotly_js()
    tag = f"<script>{js}</script>" if plotly == "inline" else \
        f'<script src="{SHARED_PLOTLY}"></script>'
    if is_study_folder(run_dir):
        from .study_data import read_study
        from .study_page import render_study, study_state
        study = read_study(run_dir)
        text = render_study(study_state(study), study, tag, version)
    else:
        from ..plotting import load_run
        results = load_run(run_dir)
        text = render(page_state(results, run_dir, cap), diagram_svg(results, run_dir), plotly)
    out.parent.mkdir(parents=True, exist_ok=True)
    if plotly == "shared":
        shared = out.parent / SHARED_PLOTLY
        if not shared.is_file() or shared.read_text(encoding="utf-8") != js:
            atomic_write(shared, lambda fh: fh.write(js), text=True)
    atomic_write(out, lambda fh: fh.write(text), text=True)
    return out
