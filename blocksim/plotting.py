"""Figures of logged signals: the diagram's scopes, or chosen signals, with variants overlaid, as PNG
and SVG; and the loading of saved run folders shared by plot, animate and compare.

Conventions:
- time in s on the x axis; one subplot per signal element, titled by the robot's joint names when
  there is one per joint ("joint k" without names); the y label says what the signal is and its
  units ("joint torque [N m]"): a scope's `ylabel` wins, as written, else the units the producing
  block declares for the port (`blocks.catalog.port_units`: q rad, qd rad/s, tau N m, i A, v V,
  ...), else the units of the input ports the signal drives, followed along the wires through
  unit-preserving blocks (Sum, Saturation, ...), so a Sum feeding `plant.tau` is labelled N m;
- the legend sits outside the axes, to the right, so it never hides a trace;
- references are dashed: the signals named in a scope's `reference` when it has one, else the
  outputs of blocks whose name starts with `ref`. A reference that is the same in every variant is
  drawn once, in black; otherwise each variant's reference is dashed in that variant's colour;
- a scope's `error: [reference, signal]` adds a figure of the tracking error e = reference -
  signal per element (file `<scope>_error`);
- one colour per variant (and per batch member); with a single variant, one colour per signal;
  several signals of one variant in one subplot differ by line style (solid, dash-dot, dotted);
- SVG text is kept as text (`svg.fonttype: none`), so figures stay editable and searchable.

matplotlib is imported only here and only when a figure is drawn, with the Agg canvas (no pyplot
state, no display needed).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VARIANT_STYLE_CYCLE = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
                       "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
SIGNAL_LINESTYLES = ("-", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)))
REFERENCE_COLOUR = "black"


# ----------------------------------------------------------------------------- matplotlib

def new_figure(figsize=(8.0, 5.0), dpi=100, layout=None):
    """A matplotlib Figure on the Agg canvas, without pyplot (imports matplotlib on first use)."""
    import matplotlib
    matplotlib.rcParams["svg.fonttype"] = "none"
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, out: Path, stem: str, formats=("png", "svg"), dpi=120) -> list[Path]:
    """Write fig as out/stem.png and out/stem.svg (or the given formats). The layout (sizes in
    inches, the same at any dpi) is computed for the first format and kept for the others: it
    is a third of the time of drawing a figure of many curves."""
    import matplotlib
    paths = []
    engine = fig.get_layout_engine()
    try:
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            for ext in formats:
                path = Path(out) / f"{stem}.{ext}"
                fig.savefig(path, dpi=dpi)
                paths.append(path)
                fig.set_layout_engine("none")
    finally:
        fig.set_layout_engine(engine)
    return paths


def file_stem(text: str) -> str:
    """A file name from a title: letters and digits, the rest underscores, lower case."""
    stem = "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()
    while "__" in stem:
        stem = stem.replace("__", "_")
    return stem or "figure"


# ----------------------------------------------------------------------------- saved runs

def load_run(run) -> dict:
    """The results of a saved run folder as {variant: Result}, in the run's variant order.

    `run` is a folder written by `simulate --out` (one subfolder per variant, and metrics.json
    listing them in order) or by `Result.save` (signals.npz in the folder itself; its variant is
    the folder's name).
    """
    from .engine.result import Result
    from .errors import BlocksimError
    run = Path(run)
    if not run.exists():
        raise BlocksimError(f"{run}: no such run folder")
    if (run / "signals.npz").exists():
        return {run.name: Result.load(run)}
    found = {p.name: p for p in sorted(run.iterdir()) if (p / "signals.npz").exists()}
    if not found:
        raise BlocksimError(f"{run}: no saved run here (no signals.npz in it or in its subfolders)")
    order = []
    mpath = run / "metrics.json"
    if mpath.exists():
        try:
            order = [v for v in json.loads(mpath.read_text()) if v in found]
        except (ValueError, TypeError):
            order = []
    order += [v for v in found if v not in order]
    return {v: Result.load(found[v]) for v in order}


def select_variants(results: dict, variants, run="run") -> dict:
    """Only the named variants (in the order given); an unknown name is an error."""
    if not variants:
        return results
    from .errors import did_you_mean
    from .errors import BlocksimError
    for v in variants:
        if v not in results:
            raise BlocksimError(f"{run}: no variant '{v}'{did_you_mean(v, results)}; variants: "
                                f"{', '.join(results)}")
    return {v: results[v] for v in variants}


def diagram_doc(result) -> dict:
    """The resolved diagram saved with a run, as a dict (empty when there is none)."""
    import yaml
    if not getattr(result, "diagram", None):
        return {}
    try:
        doc = yaml.safe_load(result.diagram)
    except yaml.YAMLError:
        return {}
    return doc if isinstance(doc, dict) else {}


def source_diagram_path(result, run_dir: Path | None = None) -> Path | None:
    """The diagram file the run came from (run.json's `diagram`), when it still exists."""
    src = (getattr(result, "metadata", None) or {}).get("diagram")
    if not src:
        return None
    candidates = [Path(src)]
    if run_dir is not None and not Path(src).is_absolute():
        candidates.append(Path(run_dir) / src)
    for c in candidates:
        if c.is_file():
            return c
    return None


def run_scopes(results: dict, run_dir: Path) -> list[dict]:
    """The scopes of the run's diagram: from the saved diagram, else from the source file."""
    import yaml
    first = next(iter(results.values()))
    scopes = diagram_doc(first).get("scopes")
    if not scopes:
        src = source_diagram_path(first, run_dir)
        if src is not None:
            try:
                doc = yaml.safe_load(src.read_text()) or {}
                scopes = doc.get("scopes") if isinstance(doc, dict) else None
            except (OSError, yaml.YAMLError):
                scopes = None
    return [s for s in (scopes or []) if isinstance(s, dict) and s.get("signals")]


def expand_members(results: dict) -> dict:
    """Batch runs become one entry per member ('variant#k'), each an unbatched Result."""
    out = {}
    for label, r in results.items():
        if getattr(r, "batched", False) and r.batch > 1:
            for k in range(r.batch):
                out[f"{label}#{k}"] = r.member(k)
        elif getattr(r, "batched", False):
            out[label] = r.member(0)
        else:
            out[label] = r
    return out


# ----------------------------------------------------------------------------- units

def _connections(doc: dict) -> list[tuple[str, str | None, str, str | None]]:
    """(src block, src port or None, dst block, dst port or None) from a diagram's connections."""
    out = []
    for conn in doc.get("connections") or []:
        if isinstance(conn, str):
            if "->" not in conn:
                continue
            src, dst = (s.strip() for s in conn.split("->", 1))
        elif isinstance(conn, dict) and "from" in conn and "to" in conn:
            src, dst = str(conn["from"]).strip(), str(conn["to"]).strip()
        else:
            continue
        sb, _, sp = src.partition(".")
        db, _, dp = dst.partition(".")
        out.append((sb, sp or None, db, dp or None))
    return out


def signal_units(doc: dict) -> dict[str, str]:
    """{'block.port': units} for every output of the diagram whose units are known or inferable.

    Units come from the block's declaration or its port's name (`catalog.port_units`); a generic
    output (`out`) takes the units of the named inputs it drives (u.out -> plant.tau: N m); units
    flow both ways through unit-preserving blocks (Sum, Saturation, ZeroOrderHold, ...).
    """
    from .blocks import REGISTRY
    from .blocks.catalog import port_units, preserves_units
    blocks = {n: (b or {}).get("type") for n, b in (doc.get("blocks") or {}).items()
              if isinstance(b, dict)}

    def outputs_of(name):
        cls = REGISTRY.get(blocks.get(name))
        return list(cls.outputs) if cls is not None else []

    def inputs_of(name):
        cls = REGISTRY.get(blocks.get(name))
        return list(cls.inputs) if cls is not None else []

    wires = []
    for sb, sp, db, dp in _connections(doc):
        if sb not in blocks or db not in blocks:
            continue
        if sp is None:
            outs = outputs_of(sb)
            sp = outs[0] if len(outs) == 1 else "out"
        if dp is None:
            ins = inputs_of(db)
            dp = ins[0] if len(ins) == 1 else "in"
        wires.append((sb, sp, db, dp))
    units: dict[str, str] = {}
    for name, type_name in blocks.items():
        for port in outputs_of(name):
            u = port_units(type_name, port)
            if u:
                units[f"{name}.{port}"] = u
    for _ in range(len(blocks) + 1):
        changed = False
        for sb, sp, db, dp in wires:
            src = f"{sb}.{sp}"
            dtype = blocks.get(db)
            if src not in units:
                u = port_units(dtype, dp)
                if u is None and preserves_units(dtype):
                    outs = [units.get(f"{db}.{o}") for o in outputs_of(db)]
                    known = {o for o in outs if o}
                    u = known.pop() if len(known) == 1 else None
                if u:
                    units[src] = u
                    changed = True
            if preserves_units(dtype) and src in units:
                for o in outputs_of(db):
                    key = f"{db}.{o}"
                    if key not in units and not port_units(dtype, o):
                        units[key] = units[src]
                        changed = True
        if not changed:
            break
    return units


def _port_of(name: str) -> str:
    return name.split(".", 1)[1] if "." in name else name


# ----------------------------------------------------------------------------- figures

def is_reference(name: str, scope: dict) -> bool:
    """A reference trace is drawn dashed: named in the scope's `reference` when it has one, else
    from a block whose name starts with 'ref'."""
    if "reference" in scope:                  # named: only those (an empty list: none)
        refs = scope["reference"]
        return name in ([refs] if isinstance(refs, str) else list(refs))
    return name.split(".")[0].split("/")[-1].startswith("ref")


def _series(r, name):
    data = np.asarray(r[name], dtype=float)
    if data.ndim == 3:
        data = data[0]
    if data.ndim == 1:
        data = data[:, None]
    return data


MEANINGS = {"rad": "angle", "rad/s": "speed", "rad/s^2": "acceleration", "m": "position",
            "m/s": "speed", "m/s^2": "acceleration", "N m": "torque", "N": "force", "A": "current",
            "V": "voltage", "W": "power", "J": "energy", "s": "time", "Hz": "frequency"}
"""What a signal of these units is, for axis labels ("joint torque [N m]")."""


def axis_label(signals: list[str], units: dict[str, str], per_joint: bool = False) -> str:
    """The y label of a subplot: what the signals are, from their units ("torque [N m]"; "joint
    torque" when the rows are the robot's joints), else their port names, then the units."""
    us = []
    for s in signals:
        u = units.get(s)
        if u and u not in us:
            us.append(u)
    if len(us) == 1 and us[0] in MEANINGS:
        text = ("joint " if per_joint else "") + MEANINGS[us[0]]
    else:
        ports = []
        for s in signals:
            p = _port_of(s)
            if p not in ports:
                ports.append(p)
        text = ", ".join(ports)
    if us:
        text += " [" + ", ".join(us) + "]"
    return text


def robot_joint_names(result, run_dir: Path | None = None) -> tuple[str, ...] | None:
    """The joint names of the robot the run's blocks name (`robot: ...`), when they all name one
    robot and it loads (a preset, or a robot file beside the diagram); None otherwise."""
    from .blocks.robot import load_robot
    doc = diagram_doc(result)
    robots = {str(b["robot"]) for b in (doc.get("blocks") or {}).values()
              if isinstance(b, dict) and b.get("robot") is not None}
    if len(robots) != 1:
        return None
    robot = robots.pop()
    try:
        src = source_diagram_path(result, run_dir)
        return tuple(load_robot(robot, str(src.parent) if src else None).joint_names)
    except Exception:               # a figure is drawn without names rather than not at all
        return None


class _Difference:
    """A Result seen through one more signal, `name` = a - b (a scope's `error`)."""

    def __init__(self, result, name: str, a: str, b: str):
        self._r, self._name, self._a, self._b = result, name, a, b
        self.t = result.t
        self.names = [*result.names, name]

    def __contains__(self, name):
        return name == self._name or name in self._r

    def __getitem__(self, name):
        if name == self._name:
            return np.asarray(self._r[self._a]) - np.asarray(self._r[self._b])
        return self._r[name]


def error_scope(scope: dict, results: dict, units: dict[str, str]):
    """The figure of a scope's `error: [reference, signal]`: e = reference - signal per element,
    in the signal's units, as (scope, results, units) for scope_figure; None without `error`."""
    pair = scope.get("error")
    if not pair:
        return None
    from .errors import BlocksimError
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise BlocksimError(f"scope '{scope.get('title', '')}': error is [reference, signal], "
                            f"got {pair!r}")
    a, b = map(str, pair)
    name = f"{a} - {b}"
    title = f"{scope.get('title', 'scope')}: error"
    unit = units.get(b) or units.get(a)
    derived = {label: _Difference(r, name, a, b) for label, r in expand_members(results).items()}
    return ({"title": title, "signals": [name], "reference": [],
             "ylabel": f"tracking error [{unit}]" if unit else "tracking error"}, derived, units)


def shared_references(refs: list[str], results: dict) -> dict[str, bool]:
    """{reference: True when it is the same in every run of results}: such a reference is drawn
    once, in black."""
    shared = {}
    for s in refs:
        series = [(r.t, _series(r, s)) for r in results.values()]
        t0, y0 = series[0]
        shared[s] = all(len(t) == len(t0) and np.allclose(t, t0) and y.shape == y0.shape
                        and np.allclose(y, y0, rtol=1e-12, atol=1e-12) for t, y in series[1:])
    return shared


def scope_signals(scope: dict, results: dict):
    """(runs, signals, widths) of a scope: the runs with batch members expanded ({label:
    Result}), the scope's signal names, and each signal's widest element count over the runs; a
    signal some run did not log is a BlocksimError naming the run and the closest name."""
    from .errors import BlocksimError, did_you_mean
    signals = [str(s) for s in scope.get("signals", [])]
    runs = expand_members(results)
    for label, r in runs.items():
        for s in signals:
            if s not in r:
                raise BlocksimError(f"no logged signal '{s}' in run '{label}'{did_you_mean(s, r.names)};"
                                    f" logged: {', '.join(r.names)}")
    return runs, signals, {s: max(_series(r, s).shape[1] for r in runs.values()) for s in signals}


def scope_figure(scope: dict, results: dict, units: dict[str, str] | None = None, index: int = 0,
                 joints: tuple[str, ...] | None = None):
    """One figure for a scope: a subplot per signal element, variants overlaid; returns the Figure.

    scope: {title, signals, reference (optional), ylabel (optional: one label, or one per
    subplot, shown as written)}; results: {variant label: Result}; units: {'block.port': units}
    (signal_units of the diagram); joints: the robot's joint names, which title the subplots
    when there is one per joint (default: from the runs' diagram; "joint k" without names).
    The legend sits outside the axes, to the right, so it never hides data.
    """
    units = units or {}
    results, signals, widths = scope_signals(scope, results)
    n_rows = max(widths.values())
    if joints is None:
        joints = robot_joint_names(next(iter(results.values())))
    fig = new_figure(figsize=(9.5, 2.2 * n_rows + 1.0), layout="constrained")
    axes = fig.subplots(n_rows, 1, sharex=True, squeeze=False)[:, 0]
    refs = [s for s in signals if is_reference(s, scope)]
    others = [s for s in signals if s not in refs]
    many = len(results) > 1
    shared_ref = shared_references(refs, results)
    for v_index, (variant, r) in enumerate(results.items()):
        colour = VARIANT_STYLE_CYCLE[v_index % len(VARIANT_STYLE_CYCLE)]
        for s in refs:
            if shared_ref[s] and v_index > 0:
                continue
            data = _series(r, s)
            c = REFERENCE_COLOUR if (shared_ref[s] or not many) else colour
            label = s if (shared_ref[s] or not many) else f"{s} ({variant})"
            for i in range(data.shape[1]):
                axes[i].plot(r.t, data[:, i], linestyle="--", color=c, linewidth=1.3,
                             label=label, zorder=3)
        for s_index, s in enumerate(others):
            data = _series(r, s)
            if many:
                c = colour
                style = SIGNAL_LINESTYLES[s_index % len(SIGNAL_LINESTYLES)]
                label = f"{s} ({variant})"
            else:
                c = VARIANT_STYLE_CYCLE[s_index % len(VARIANT_STYLE_CYCLE)]
                style = "-"
                label = s
            for i in range(data.shape[1]):
                axes[i].plot(r.t, data[:, i], linestyle=style, color=c, linewidth=1.2,
                             label=label)
    label_axes(fig, axes, [[s for s in signals if widths[s] > i] for i in range(n_rows)], units,
               joints, scope.get("ylabel"))
    fig.suptitle(str(scope.get("title", f"scope {index}")))
    return fig


def row_labels(present: list[list[str]], units: dict[str, str],
               joints: tuple[str, ...] | None, ylabel=None) -> list[tuple[str, str]]:
    """(y label, title) of each subplot of a figure with a subplot per signal element: the y
    label says what its signals are and their units (axis_label; a user's `ylabel` as written,
    or one per subplot); with several subplots, each is titled by its joint when there is one
    per joint of the robot (`joints`; else "joint k" in a robot's diagram, "element k"
    elsewhere, unless `ylabel` names each subplot), and the title is "" for a single subplot."""
    n = len(present)
    per_joint = n > 1 and joints is not None and len(joints) == n
    named = isinstance(ylabel, (list, tuple))
    out = []
    for i in range(n):
        if isinstance(ylabel, (list, tuple)):
            label = str(ylabel[i]) if i < len(ylabel) else ""
        elif ylabel:
            label = str(ylabel)
        else:
            label = axis_label(present[i], units, per_joint)
        title = "" if n == 1 or (named and not per_joint) else (
            joints[i] if per_joint else (f"joint {i + 1}" if joints is not None
                                         else f"element {i + 1}"))
        out.append((label, title))
    return out


def label_axes(fig, axes, present: list[list[str]], units: dict[str, str],
               joints: tuple[str, ...] | None, ylabel=None) -> None:
    """Labels of a figure with a subplot per signal element: each y axis says what its signals
    are and their units (axis_label; a user's `ylabel` as written, or one per subplot), each
    subplot is titled by its joint when there is one per joint of the robot (`joints`; else
    "joint k" in a robot's diagram, "element k" elsewhere), time on the x axis, and the legend
    outside the axes to the right."""
    for ax, (label, title) in zip(axes, row_labels(present, units, joints, ylabel)):
        ax.set_ylabel(label)
        if title:
            ax.set_title(title, loc="left", fontsize=9)
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=7, loc="outside right upper")
    axes[-1].set_xlabel("time [s]")


def draw_scope(scope: dict, results: dict, out: Path, index: int, units=None,
               formats=("png", "svg")) -> list[Path]:
    """One scope's figure written as PNG and SVG into out; returns the paths."""
    signals = list(scope.get("signals", []))
    if not signals:
        return []
    if units is None:
        units = signal_units(diagram_doc(next(iter(results.values()))))
    joints = robot_joint_names(next(iter(results.values())))
    fig = scope_figure(scope, results, units, index, joints)
    title = str(scope.get("title", f"scope {index}"))
    stem = scope.get("file") or file_stem(title)
    paths = save_figure(fig, Path(out), stem, formats)
    error = error_scope(scope, results, units)
    if error is not None:
        paths += save_figure(scope_figure(*error, index, joints), Path(out), f"{stem}_error",
                             formats)
    return paths


def logged_signal_scopes(result) -> list[dict]:
    """One scope per logged signal of a Result: what is drawn for a diagram without scopes."""
    return [{"title": name, "signals": [name]} for name in result.names]


def scope_figures(spec, results: dict, out: Path) -> list[Path]:
    """Every scope of the diagram, variants overlaid (`simulate --plot`); a diagram without
    scopes gets a figure of each logged signal, as `plot` draws for its run folder."""
    first = next(iter(results.values()))
    units = signal_units(diagram_doc(first))
    if not units and getattr(spec, "blocks", None):
        doc = {"blocks": {n: {"type": b.type} for n, b in spec.blocks.items()},
               "connections": [f"{c.src.block}{'.' + c.src.port if c.src.port else ''} -> "
                               f"{c.dst.block}{'.' + c.dst.port if c.dst.port else ''}"
                               for c in getattr(spec, "connections", [])]}
        units = signal_units(doc)
    paths = []
    for k, scope in enumerate(spec.scopes or logged_signal_scopes(first)):
        paths += draw_scope(scope, results, Path(out), k, units)
    return paths


def _group_by_units(signals: list[str], units: dict[str, str]) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for s in signals:
        groups.setdefault(units.get(s, ""), []).append(s)
    return list(groups.values())


def plot_run(run, signals=None, variants=None, out=None, formats=("png", "svg"),
             title=None) -> list[Path]:
    """Figures from a saved run folder (one written by `simulate --out`, or a single Result.save).

    signals: the signals to plot (default: the diagram's scopes, else every logged signal); signals
    with different units go to separate figures. variants: the variants to overlay (default all).
    Writes PNG and SVG into out (default: the run folder) and returns the paths.
    """
    run = Path(run)
    results = select_variants(load_run(run), variants, run)
    out = Path(out) if out else run
    out.mkdir(parents=True, exist_ok=True)
    first = next(iter(results.values()))
    units = signal_units(diagram_doc(first))
    if signals:
        groups = _group_by_units(list(signals), units)
        if len(groups) == 1:
            scopes = [{"title": title or "signals", "signals": groups[0]}]
        else:
            scopes = [{"title": title or "signals", "signals": g,
                       "file": "signals_" + file_stem("_".join(g))} for g in groups]
    else:
        scopes = run_scopes(results, run) or logged_signal_scopes(first)
    paths = []
    for k, scope in enumerate(scopes):
        paths += draw_scope(scope, results, out, k, units, formats)
    return paths


# ----------------------------------------------------------------------------- Bode plots

def bode_figure(f_hz, H, title: str, labels, margins: dict | None = None, modes=(),
                measured=None):
    """A Bode plot: |H| in dB and its phase in degrees (unwrapped) against frequency (Hz, log
    axis), one curve per (output, input) pair of H (n, outputs, inputs), labelled `labels`
    (one per pair). margins (the fields of analysis.margins.Margins): the gain crossover and
    phase margin marked on the phase plot (the loop's phase shifted by whole turns to lie in
    (-360, 0] deg at the crossover, so that the margin is measured from -180 deg), the phase
    crossover and gain margin on the magnitude plot. modes (Hz): the oscillatory modes of a
    model that is no loop, marked on the magnitude plot. measured: (frequencies in Hz, complex
    response) of the first pair measured by a run of the diagram, drawn as markers over the
    curve (each phase on the curve's branch)."""
    import numpy as np
    fig = new_figure(figsize=(8.0, 6.5), layout="constrained")
    mag_ax, ph_ax = fig.subplots(2, 1, sharex=True)
    pairs = [(i, j) for i in range(H.shape[1]) for j in range(H.shape[2])]
    phases = {pair: np.degrees(np.unwrap(np.angle(H[:, pair[0], pair[1]]))) for pair in pairs}
    fc = (margins or {}).get("crossover")
    if fc is not None and np.isfinite(fc):       # a loop: its phase at crossover in (-360, 0]
        k = int(np.argmin(np.abs(np.asarray(f_hz) - fc)))
        phases[(0, 0)] = phases[(0, 0)] - 360.0 * np.ceil(phases[(0, 0)][k] / 360.0)
    for (i, j), label in zip(pairs, labels):
        h = H[:, i, j]
        mag_ax.semilogx(f_hz, 20 * np.log10(np.maximum(np.abs(h), 1e-300)), label=label)
        ph_ax.semilogx(f_hz, phases[(i, j)], label=label)
    mag_ax.set_ylabel("magnitude (dB)")
    ph_ax.set_ylabel("phase (deg)")
    ph_ax.set_xlabel("frequency (Hz)")
    mag_ax.set_title(title)
    for ax in (mag_ax, ph_ax):
        ax.grid(True, which="both", alpha=0.3)
    if margins:
        fc, pm = margins.get("crossover"), margins.get("phase_margin")
        if fc is not None and pm is not None and np.isfinite(fc):
            mag_ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
            mag_ax.axvline(fc, color="tab:green", lw=0.8, ls=":")
            k = int(np.argmin(np.abs(np.asarray(f_hz) - fc)))
            phase_c = float(phases[(0, 0)][k])
            edge = phase_c - pm
            ph_ax.axhline(edge, color="0.4", lw=0.8, ls="--")
            ph_ax.annotate("", xy=(fc, phase_c), xytext=(fc, edge),
                           arrowprops={"arrowstyle": "<->", "color": "tab:green"})
            ph_ax.text(fc, (phase_c + edge) / 2, f"  PM {pm:.2f} deg at {fc:.4g} Hz",
                       color="tab:green", va="center")
        fg, gm = margins.get("gain_margin_frequency"), margins.get("gain_margin")
        if fg is not None and gm is not None and np.isfinite(fg) and np.isfinite(gm):
            mag_ax.axvline(fg, color="tab:red", lw=0.8, ls=":")
            mag_ax.annotate("", xy=(fg, -gm), xytext=(fg, 0.0),
                            arrowprops={"arrowstyle": "<->", "color": "tab:red"})
            mag_ax.text(fg, -gm / 2, f"  GM {gm:.2f} dB at {fg:.4g} Hz", color="tab:red",
                        va="center")
    if measured is not None:
        fm, hm = (np.asarray(v) for v in measured)
        curve = np.interp(np.log(fm), np.log(np.asarray(f_hz)), phases[(0, 0)])
        ph = np.degrees(np.angle(hm))
        ph = ph + 360.0 * np.round((curve - ph) / 360.0)
        mag_ax.semilogx(fm, 20 * np.log10(np.abs(hm)), "o", mfc="none", color="tab:orange",
                        label="measured by a run of the diagram")
        ph_ax.semilogx(fm, ph, "o", mfc="none", color="tab:orange")
    if not margins:
        for f in modes:
            if f_hz[0] <= f <= f_hz[-1]:
                mag_ax.axvline(f, color="0.5", lw=0.8, ls=":")
                mag_ax.text(f, 0.03, f" {f:.4g} Hz", color="0.3", va="bottom", ha="right",
                            rotation=90, fontsize="small", transform=mag_ax.get_xaxis_transform())
    if len(pairs) > 1 or measured is not None:
        mag_ax.legend(fontsize="small")
    return fig
