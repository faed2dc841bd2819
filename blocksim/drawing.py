"""A picture of the block diagram itself: blocks as boxes (name, type), input ports on the left,
output ports on the right, wires as arrows labelled with their widths; PNG or SVG.

Layout (layered, left to right, as Simulink diagrams are drawn): the block graph of the compiled
diagram minus its feedback wires (the back edges of a depth-first search from the sources, in file
order) is a DAG; a block's column is its longest path from a source; within a column, blocks are
ordered by the mean row of their drivers (a few barycentre sweeps) to keep wires short. Forward
wires are drawn as smooth curves; feedback wires run below the blocks, right to left, each in its
own lane. Disabled blocks are greyed. Subsystems are drawn flattened (`parent/inner`).

In SVG, each block's box is the element whose id is the block's name (flattened inside
subsystems), so a page can find, style and click it (the HTML report does).

Each box shows the parameters the diagram gives the block (`Kp = [400, 200]`, shortened), and its
outline is coloured by sample time as Simulink's sample-time colours: continuous in blue,
discrete rates from the fastest in red, green, orange, ..., constant in magenta; a legend names the
rates.
"""
from __future__ import annotations

from pathlib import Path

from .plotting import new_figure

BOX_W = 2.6
COL_GAP = 2.2
PORT_PITCH = 0.42
ROW_GAP = 0.7
LANE_PITCH = 0.32
LINE_PITCH = 0.22          # one line of parameter text in a box
MAX_PARAM_LINES = 3
CONTINUOUS_COLOUR, CONSTANT_COLOUR, DISABLED_COLOUR = "#2b4c7e", "#b0309c", "#9a9a9a"
DISCRETE_COLOURS = ("#c62828", "#2e7d32", "#ef6c00", "#00838f", "#6a1b9a", "#5d4037")
"""Outline colours by sample time; discrete rates from the fastest."""
HIDDEN_PARAMS = ("enabled", "workspace_names", "workspace_values")
"""Parameters not shown in a box (the loader's, or shown by the box's style)."""


def rate_colours(sample_times: dict) -> dict[str, str]:
    """{str(sample time): outline colour} of the diagram's rates (sample_time_colour's rule)."""
    discrete = sorted({st for st in sample_times.values() if st.kind == "discrete"},
                      key=lambda st: (st.period, st.offset))
    colours = {str(st): DISCRETE_COLOURS[k % len(DISCRETE_COLOURS)] for k, st in enumerate(discrete)}
    for st in sample_times.values():
        if st.kind == "constant":
            colours[str(st)] = CONSTANT_COLOUR
        elif st.kind != "discrete":
            colours[str(st)] = CONTINUOUS_COLOUR
    return colours


def rate_label(st) -> str:
    """'discrete, T = 0.001 s' (', offset 0.0005 s' when there is one), 'continuous', 'constant'."""
    if st.kind != "discrete":
        return st.kind
    text = f"discrete, T = {float(st.period):g} s"
    return text + (f", offset {float(st.offset):g} s" if st.offset else "")


def param_lines(params: dict) -> list[str]:
    """The box's parameter text: `name = value` per given parameter, values shortened, at most
    MAX_PARAM_LINES lines (the last says how many more)."""
    import numpy as np
    lines = []
    for key, value in params.items():
        if key in HIDDEN_PARAMS:
            continue
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if isinstance(value, float):
            text = f"{value:.4g}"
        elif isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
            text = "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
        else:
            text = str(value)
        line = f"{key} = {text}"
        lines.append(line if len(line) <= 26 else line[:25] + "…")
    if len(lines) > MAX_PARAM_LINES:
        lines = lines[:MAX_PARAM_LINES - 1] + [f"(+{len(lines) - MAX_PARAM_LINES + 1} more)"]
    return lines


def _feedback_edges(names: list[str], edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Back edges of a DFS over the block graph, started from the sources in file order."""
    succ: dict[str, list[str]] = {n: [] for n in names}
    indeg = {n: 0 for n in names}
    for a, b in sorted(edges, key=lambda e: (names.index(e[0]), names.index(e[1]))):
        succ[a].append(b)
        indeg[b] += 1
    state = {n: 0 for n in names}          # 0 new, 1 on the stack, 2 done
    back = set()
    roots = [n for n in names if indeg[n] == 0] + names
    for root in roots:
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state[nxt] == 1:
                back.add((node, nxt))
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(succ[nxt])))
    return back


def layout(names: list[str], edges: set[tuple[str, str]], heights: dict[str, float]):
    """Block centres {name: (x, y)} and the feedback edges, for blocks `names` (file order)."""
    import networkx as nx
    back = _feedback_edges(names, edges)
    dag = nx.DiGraph()
    dag.add_nodes_from(names)
    dag.add_edges_from(e for e in edges if e not in back and e[0] != e[1])
    column = {}
    for n in nx.topological_sort(dag):
        preds = list(dag.predecessors(n))
        column[n] = max((column[p] + 1 for p in preds), default=0)
    # blocks that only feed later columns sit just before their first consumer
    for n in reversed(list(nx.topological_sort(dag))):
        succs = list(dag.successors(n))
        if succs and not list(dag.predecessors(n)):
            column[n] = max(column[n], min(column[s] for s in succs) - 1)
    n_cols = max(column.values(), default=0) + 1
    cols: list[list[str]] = [[] for _ in range(n_cols)]
    for n in names:
        cols[column[n]].append(n)
    rank = {n: float(i) for col in cols for i, n in enumerate(col)}
    for _ in range(4):
        for col in cols[1:]:
            for n in col:
                preds = [p for p in dag.predecessors(n)]
                if preds:
                    rank[n] = sum(rank[p] for p in preds) / len(preds)
            col.sort(key=lambda n: (rank[n], names.index(n)))
            for i, n in enumerate(col):
                rank[n] = float(i)
        for col in reversed(cols[:-1]):
            for n in col:
                succs = list(dag.successors(n))
                if succs:
                    rank[n] = sum(rank[s] for s in succs) / len(succs)
            col.sort(key=lambda n: (rank[n], names.index(n)))
            for i, n in enumerate(col):
                rank[n] = float(i)
    pos = {}
    for c, col in enumerate(cols):
        total = sum(heights[n] for n in col) + ROW_GAP * (len(col) - 1)
        y = total / 2
        for n in col:
            pos[n] = (c * (BOX_W + COL_GAP), y - heights[n] / 2)
            y -= heights[n] + ROW_GAP
    return pos, back


def draw_compiled(cd, title: str = ""):
    """A Figure of a compiled diagram (`blocksim.load(path).compile()`)."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path as MPath
    names = list(cd.blocks)
    ins = {n: list(b.input_names()) for n, b in cd.blocks.items()}
    outs = {n: list(b.output_names()) for n, b in cd.blocks.items()}
    shown = {n: param_lines(cd.spec.blocks[n].params) if n in cd.spec.blocks else [] for n in names}
    heights = {n: max(max(len(ins[n]), len(outs[n]), 2) * PORT_PITCH + 0.35,
                      0.75 + LINE_PITCH * len(shown[n])) for n in names}
    colours = rate_colours(cd.sample_times)
    edges = {(src, dst) for (dst, _), (src, _) in cd.wires.items()}
    pos, back = layout(names, edges, heights)

    def in_port(n, p):
        x, y = pos[n]
        k, m = ins[n].index(p), len(ins[n])
        return x - BOX_W / 2, y + (m - 1) / 2 * PORT_PITCH - k * PORT_PITCH

    def out_port(n, p):
        x, y = pos[n]
        k, m = outs[n].index(p), len(outs[n])
        return x + BOX_W / 2, y + (m - 1) / 2 * PORT_PITCH - k * PORT_PITCH

    xs = [p[0] for p in pos.values()]
    lows = [pos[n][1] - heights[n] / 2 for n in names]
    highs = [pos[n][1] + heights[n] / 2 for n in names]
    n_back = len([w for w in cd.wires.items() if (w[1][0], w[0][0]) in back or w[1][0] == w[0][0]])
    x0, x1 = min(xs) - BOX_W, max(xs) + BOX_W
    y0 = min(lows) - 0.5 - LANE_PITCH * (n_back + 1)
    n_long = sum(1 for (dst, _), (src, _) in cd.wires.items()
                 if (src, dst) not in back and src != dst
                 and round((pos[dst][0] - pos[src][0]) / (BOX_W + COL_GAP)) > 1)
    y1 = max(highs) + 0.6 + LANE_PITCH * n_long
    width_in = max(5.0, (x1 - x0) * 0.75)
    height_in = max(3.0, (y1 - y0) * 0.75 + 0.5)
    fig = new_figure(figsize=(width_in, height_in))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1 + 0.3)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.text((x0 + x1) / 2, y1 + 0.1, title, ha="center", va="bottom", fontsize=11,
                fontweight="bold")
    for n in names:
        blk = cd.blocks[n]
        x, y = pos[n]
        h = heights[n]
        face = "#f7f9fc" if blk.enabled else "#e6e6e6"
        edge = colours[str(cd.sample_times[n])] if blk.enabled else DISABLED_COLOUR
        box = ax.add_patch(FancyBboxPatch((x - BOX_W / 2, y - h / 2), BOX_W, h,
                                          boxstyle="round,pad=0.02,rounding_size=0.12",
                                          facecolor=face, edgecolor=edge, linewidth=1.4,
                                          linestyle="-" if blk.enabled else "--", zorder=2))
        box.set_gid(n)                  # in SVG: the box's element has id = the block's name
        ax.text(x, y + h / 2 + 0.06, n, ha="center", va="bottom", fontsize=9, fontweight="bold",
                zorder=4, color="black" if blk.enabled else "#777777")
        label = blk.type_name + ("" if blk.enabled else " (disabled)")
        top = y + LINE_PITCH * len(shown[n]) / 2
        ax.text(x, top, label, ha="center", va="center", fontsize=8, style="italic", zorder=4,
                color=edge)
        for k, line in enumerate(shown[n]):
            ax.text(x, top - LINE_PITCH * (k + 1), line, ha="center", va="center", fontsize=6,
                    zorder=4, color="#333333")
        for p in ins[n]:
            px, py = in_port(n, p)
            ax.plot([px], [py], marker=">", color=edge, markersize=4, zorder=5)
            ax.text(px + 0.08, py, p, ha="left", va="center", fontsize=6.5, zorder=4,
                    color="#333333")
        for p in outs[n]:
            px, py = out_port(n, p)
            ax.plot([px], [py], marker=">", color=edge, markersize=4, zorder=5)
            ax.text(px - 0.08, py, p, ha="right", va="center", fontsize=6.5, zorder=4,
                    color="#333333")
    col_of = {n: round(pos[n][0] / (BOX_W + COL_GAP)) for n in names}
    gap_use: dict[tuple[float, str], int] = {}

    def gap_x(x: float, side: str) -> float:
        """A vertical track in the gap right of x ('out') or left of x ('in'), one per wire."""
        k = gap_use.get((x, side), 0)
        gap_use[(x, side)] = k + 1
        step = min(0.14, (COL_GAP / 2 - 0.3) / 6)
        return x + 0.25 + k * step if side == "out" else x - 0.25 - k * step

    lane_low = lane_high = 0
    bottom = min(lows) - 0.45
    top = max(highs) + 0.45
    for (dst, dport), (src, sport) in cd.wires.items():
        (sx, sy), (dx, dy) = out_port(src, sport), in_port(dst, dport)
        width = cd.out_widths.get(src, {}).get(sport, "?")
        span = col_of[dst] - col_of[src]
        if (src, dst) in back or src == dst or dx <= sx:
            lane_low += 1
            ly = bottom - LANE_PITCH * lane_low
            gx0, gx1 = gap_x(sx, "out"), gap_x(dx, "in")
            verts = [(sx, sy), (gx0, sy), (gx0, ly), (gx1, ly), (gx1, dy), (dx, dy)]
            codes = [MPath.MOVETO] + [MPath.LINETO] * 5
            colour = "#b5542b"
            lx, ly_text = (gx0 + gx1) / 2, ly
        elif span > 1:
            lane_high += 1
            ly = top + LANE_PITCH * lane_high
            gx0, gx1 = gap_x(sx, "out"), gap_x(dx, "in")
            verts = [(sx, sy), (gx0, sy), (gx0, ly), (gx1, ly), (gx1, dy), (dx, dy)]
            codes = [MPath.MOVETO] + [MPath.LINETO] * 5
            colour = "#333333"
            lx, ly_text = (gx1 + dx) / 2, dy
        else:
            mx = (sx + dx) / 2
            verts = [(sx, sy), (mx, sy), (mx, dy), (dx, dy)]
            codes = [MPath.MOVETO, MPath.CURVE4, MPath.CURVE4, MPath.CURVE4]
            colour = "#333333"
            lx, ly_text = dx - 0.5, dy
        ax.add_patch(FancyArrowPatch(path=MPath(verts, codes), arrowstyle="-|>", mutation_scale=9,
                                     color=colour, linewidth=1.0, zorder=1))
        ax.text(lx, ly_text, str(width), ha="center", va="center", fontsize=6.5, color=colour,
                zorder=6, bbox=dict(boxstyle="round,pad=0.12", facecolor="white",
                                    edgecolor="none", alpha=0.9))
    from matplotlib.lines import Line2D
    used = {str(st) for st in cd.sample_times.values()}
    labels = {str(st): rate_label(st) for st in cd.sample_times.values()}
    handles = [Line2D([], [], color=c, linewidth=2, label=labels[rate])
               for rate, c in colours.items() if rate in used]
    if handles:
        ax.legend(handles=handles, loc="lower right", fontsize=7, title="sample time",
                  title_fontsize=7, frameon=False)
    return fig


def svg_text(fig) -> str:
    """A figure as SVG text, its text kept as text (searchable, styled by the page)."""
    import io

    import matplotlib
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "blocksim"}):
        fig.savefig(buffer, format="svg")
    return buffer.getvalue()


def draw_diagram(path, out, variant=None, set=None) -> Path:  # noqa: A002
    """Render the diagram file (after variant and overrides) to out (.png, .svg or .pdf)."""
    import blocksim

    from .errors import BlocksimError
    out = Path(out)
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise BlocksimError(f"--out {out}: the file name must end in .png, .svg or .pdf")
    d = blocksim.load(path, variant=variant, set=set or None)
    cd = d.compile()
    title = d.name + (f" (variant {variant})" if variant else "")
    fig = draw_compiled(cd, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    import matplotlib
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, dpi=110)
    return out
