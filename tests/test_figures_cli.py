"""Figures and the command line: plot (units, dashed reference, a colour per variant, PNG
and SVG), animate (GIF frames for a planar and a 3-D arm), draw (every block placed), compare
(B - A of a metric), and docs/blocks.md kept up to date with the registry.

Runs are made in process (interpreted mode, short) and saved in the `simulate --out` layout; the
commands under test run as `python cli.py ...` subprocesses, as a user runs them.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.engine.metrics import compute_metrics

ROOT = Path(__file__).resolve().parents[1]
W1 = ROOT / "examples" / "two_link_pid_vs_ff.yaml"

LEVEL = """
blocksim: 1
name: a first-order lag towards a constant level
parameters:
  level: 1.0
blocks:
  c:   {type: Constant, value: $level}
  e:   {type: Sum, signs: "+-"}
  k:   {type: Gain, gain: 5.0}
  x:   {type: Integrator, x0: 0.0}
connections:
  - c -> e.in1
  - x -> e.in2
  - e -> k
  - k -> x
simulation: {stop_time: 0.5, solver: rk4, step: 0.01}
log: {signals: [c.out, x.out]}
metrics:
  - {name: level, kind: final_value, signal: c.out}
  - {name: peak_x, kind: peak, signal: x.out}
variants:
  low: {}
  high: {parameters.level: 2.0}
"""

KR6 = """
blocksim: 1
name: kr6_like arm falling from rest (tau = 0)
blocks:
  zero:  {type: Constant, value: [0, 0, 0, 0, 0, 0]}
  plant: {type: Manipulator, robot: kr6_like, q0: [0.3, -0.8, 0.5, 0.2, 0.4, 0.0]}
connections:
  - zero -> plant.tau
simulation: {stop_time: 0.1, solver: rk4, step: 5.0e-3}
log: {signals: [plant.q], every: 5.0e-3}
"""


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def save_study(path, out, variants=None, set=None):  # noqa: A002
    """Run a diagram's variants in process and save them as `simulate --out` does."""
    base = blocksim.load(path, set=set)
    out.mkdir(parents=True)
    metrics = {}
    for v in variants or base.variants or [None]:
        d = base if v is None else base.with_variant(v)
        r = blocksim.simulate(d)
        r.metrics = compute_metrics(d.spec, r)
        metrics[v or "default"] = r.metrics
        r.save(out / (v or "default"))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return out


@pytest.fixture(scope="module")
def w1_run(tmp_path_factory):
    """W1's two-link arm, 0.2 s, variants pid and pid_ff."""
    out = tmp_path_factory.mktemp("w1") / "run"
    return save_study(W1, out, variants=["pid", "pid_ff"], set={"simulation.stop_time": 0.2})


@pytest.fixture(scope="module")
def level_runs(tmp_path_factory):
    """Two runs of the lag diagram; in B every level is 0.25 higher."""
    folder = tmp_path_factory.mktemp("level")
    (folder / "level.yaml").write_text(LEVEL)
    a = save_study(folder / "level.yaml", folder / "A")
    b = save_study(folder / "level.yaml", folder / "B", set={"c.value": "${level + 0.25}"})
    return a, b


def svg_text(path: Path) -> str:
    text = path.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg"))
    return " ".join(re.findall(r">([^<>]+)</text>", text))


# ----------------------------------------------------------------------------- plot

def test_plot_units_reference_dashed_and_variant_colours(w1_run):
    from blocksim.plotting import diagram_doc, load_run, scope_figure, signal_units
    results = load_run(w1_run)
    assert list(results) == ["pid", "pid_ff"]
    units = signal_units(diagram_doc(results["pid"]))
    assert units["plant.q"] == "rad" and units["plant.qd"] == "rad/s"
    assert units["u.out"] == "N m"          # a Sum feeding plant.tau: inferred along the wire
    fig = scope_figure({"title": "tracking", "signals": ["ref.q", "plant.q"]}, results, units)
    axes = fig.axes
    assert len(axes) == 2                   # one subplot per joint
    # each subplot is a joint of the robot, named as in its file; the y axis says what it shows
    assert [ax.get_title(loc="left") for ax in axes] == ["shoulder", "elbow"]
    assert [ax.get_ylabel() for ax in axes] == ["joint angle [rad]"] * 2
    # the legend is outside the axes: no data hidden under it
    fig.draw_without_rendering()                # the layout is made when the figure is drawn
    legend = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
    assert all(legend.x0 >= ax.get_window_extent().x1 for ax in axes)
    assert axes[-1].get_xlabel() == "time [s]"
    lines = axes[0].get_lines()
    ref = [ln for ln in lines if ln.get_label() == "ref.q"]
    plant = [ln for ln in lines if ln.get_label().startswith("plant.q")]
    assert len(ref) == 1 and ref[0].get_linestyle() == "--"      # same in both variants: once
    assert len(plant) == 2 and all(ln.get_linestyle() == "-" for ln in plant)
    colours = {ln.get_color() for ln in plant}
    assert len(colours) == 2 and ref[0].get_color() not in colours
    # the plotted data are the logged data
    np.testing.assert_array_equal(plant[0].get_ydata(), results["pid"]["plant.q"][:, 0])
    # a scope's ylabel wins over the units
    fig = scope_figure({"title": "t", "signals": ["u.out"], "ylabel": "torque [N m]"}, results,
                       units)
    assert [ax.get_ylabel() for ax in fig.axes] == ["torque [N m]"] * 2      # as written
    fig = scope_figure({"title": "t", "signals": ["u.out"], "ylabel": ["shoulder [N m]", "elbow"]},
                       results, units)
    assert [ax.get_ylabel() for ax in fig.axes] == ["shoulder [N m]", "elbow"]


def test_subplots_named_by_their_ylabels_carry_no_generic_title():
    """A per-subplot ylabel list names each element (the five-bar's lambda_x, lambda_y): no
    "element k" or "joint k" title beside it; a robot's joint names stay."""
    from blocksim.plotting import row_labels
    two = [["plant.lambda"], ["plant.lambda"]]
    assert row_labels(two, {"plant.lambda": "N"}, None) == [("force [N]", "element 1"),
                                                           ("force [N]", "element 2")]
    assert row_labels(two, {}, None, ["lambda_x (N)", "lambda_y (N)"]) == [
        ("lambda_x (N)", ""), ("lambda_y (N)", "")]
    assert row_labels(two, {}, (), ["a", "b"]) == [("a", ""), ("b", "")]
    assert row_labels(two, {}, ("shoulder", "elbow"), ["a", "b"]) == [("a", "shoulder"),
                                                                      ("b", "elbow")]


def test_a_tracking_scope_draws_its_error(w1_run, tmp_path):
    """error: [ref.q, plant.q] adds a figure of e = ref.q - plant.q per joint, in rad."""
    from blocksim.plotting import draw_scope, load_run
    results = load_run(w1_run)
    paths = draw_scope({"title": "Joint tracking", "signals": ["ref.q", "plant.q"],
                        "error": ["ref.q", "plant.q"]}, results, tmp_path, 0, formats=("svg",))
    assert [p.name for p in paths] == ["joint_tracking.svg", "joint_tracking_error.svg"]
    text = svg_text(paths[1])
    assert "Joint tracking: error" in text and "tracking error [rad]" in text
    assert "ref.q - plant.q (pid)" in text and "ref.q - plant.q (pid_ff)" in text


def test_cli_plot_writes_png_and_svg_with_units(w1_run, tmp_path, capsys):
    out = tmp_path / "figs"
    proc = cli("plot", w1_run, "--signals", "ref.q", "plant.q", "--variants", "pid", "pid_ff",
               "--out", out)
    png, svg = out / "signals.png", out / "signals.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and str(svg) in proc.stdout
    text = svg_text(svg)
    assert "joint angle [rad]" in text and "shoulder" in text and "elbow" in text
    assert "time [s]" in text
    assert "plant.q (pid)" in text and "plant.q (pid_ff)" in text
    # without --signals: the diagram's scopes (from the source file), torque labelled in N m
    cli("plot", w1_run, "--out", tmp_path / "scopes", "--variants", "pid_ff")
    svgs = sorted((tmp_path / "scopes").glob("*.svg"))
    assert [p.stem for p in svgs] == ["joint_torque", "joint_tracking", "joint_tracking_error"]
    assert "[N m]" in svg_text(svgs[0])
    from blocksim.cli import main
    assert main(["plot", str(w1_run), "--variants", "nope"]) == 1
    assert "no variant 'nope'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- animate

def gif_frames(path: Path) -> int:
    from PIL import Image
    with Image.open(path) as im:
        assert im.format == "GIF"
        return im.n_frames


def test_animate_planar_arm(w1_run, tmp_path):
    out = tmp_path / "arm.gif"
    cli("animate", w1_run, "--variant", "pid_ff", "--fps", 25, "--out", out)
    assert gif_frames(out) == 6                     # t = 0, 0.04, ..., 0.2 s
    # the robot and signal come from the saved diagram; default file in the run folder
    from blocksim.cli import main
    assert main(["animate", str(w1_run), "--variant", "pid", "--variant", "pid_ff",
                 "--fps", "10"]) == 0
    assert gif_frames(w1_run / "animation_pid_pid_ff.gif") == 3


def test_animate_3d_arm(tmp_path):
    from blocksim.animation import _plane, arm_points
    from blocksim.models.robot import RobotModel
    (tmp_path / "kr6.yaml").write_text(KR6)
    run = save_study(tmp_path / "kr6.yaml", tmp_path / "run")
    out = tmp_path / "kr6.gif"
    cli("animate", run, "--robot", "kr6_like", "--signal", "plant.q", "--fps", 50, "--out", out)
    assert gif_frames(out) == 6                     # 0.1 s at 50 frames/s, both ends
    # the drawn skeleton ends at the tool (fk), and this arm needs the 3-D view
    model = RobotModel.preset("kr6_like")
    q = np.array([[0.3, -0.8, 0.5, 0.2, 0.4, 0.0]])
    pts, _ = arm_points(model, q)
    np.testing.assert_allclose(pts[0, -1], model.fk(q[0])[:3, 3], atol=1e-12)
    assert _plane(pts) is None
    planar = RobotModel.preset("two_link")
    assert _plane(arm_points(planar, np.array([[0.3, 0.5], [1.0, -0.4]]))[0]) == (0, 1)


# ----------------------------------------------------------------------------- draw

def test_draw_places_every_block(tmp_path):
    out = tmp_path / "w1.svg"
    cli("draw", W1, "--variant", "pid_ff", "--out", out)
    text = svg_text(out)
    d = blocksim.load(W1, variant="pid_ff").compile()
    for name, blk in d.blocks.items():
        assert re.search(rf"\b{re.escape(name)}\b", text), name
        assert blk.type_name in text
    assert "tau" in text and "meas_d" in text       # port names
    assert "(disabled)" in text                     # ct and gc are off in this variant
    from blocksim.drawing import layout
    names = list(d.blocks)
    edges = {(src, dst) for (dst, _), (src, _) in d.wires.items()}
    pos, back = layout(names, edges, {n: 1.0 for n in names})
    assert set(pos) == set(names)
    assert len(set(pos.values())) == len(names)     # no two blocks at one place
    assert pos["ref"][0] < pos["pid"][0] < pos["u"][0] < pos["plant"][0]   # left to right
    assert ("plant", "pid") in back                 # feedback drawn right to left
    png = tmp_path / "msd.png"
    cli("draw", ROOT / "examples" / "mass_spring_damper.yaml", "--out", png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_draw_shows_parameters_and_colours_blocks_by_sample_time(tmp_path):
    """W2: the PID runs at 1 kHz, the current loop at 10 kHz, the plant continuous: three
    outline colours named in the legend, the fastest rate red; the given parameters in the box."""
    from blocksim.drawing import CONTINUOUS_COLOUR, DISCRETE_COLOURS, rate_colours
    w2 = ROOT / "examples" / "two_link_foc.yaml"
    out = tmp_path / "w2.svg"
    cli("draw", w2, "--out", out)
    text = svg_text(out)
    assert "Kp = [400, 200]" in text and "sample time" in text
    assert "discrete, T = 0.0001 s" in text and "discrete, T = 0.001 s" in text
    assert "continuous" in text
    cd = blocksim.load(w2).compile()
    colours = rate_colours(cd.sample_times)
    assert colours[str(cd.sample_times["act/pi"])] == DISCRETE_COLOURS[0]        # 10 kHz
    assert colours[str(cd.sample_times["pid"])] == DISCRETE_COLOURS[1]           # 1 kHz
    assert colours[str(cd.sample_times["plant"])] == CONTINUOUS_COLOUR
    svg = out.read_text()
    assert DISCRETE_COLOURS[0] in svg and DISCRETE_COLOURS[1] in svg


# ----------------------------------------------------------------------------- compare

def test_compare_prints_metric_differences(level_runs, tmp_path):
    a, b = level_runs
    out = tmp_path / "cmp"
    proc = cli("compare", a, b, "--out", out)
    rows = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1] in ("level", "peak_x"):
            rows[(parts[0], parts[1])] = parts
    assert rows[("low", "level")][3:6] == ["1", "1.25", "+0.25"]
    assert rows[("high", "level")][3:6] == ["2", "2.25", "+0.25"]
    assert rows[("low", "level")][6] == "+25.00"
    diff = json.loads((out / "metrics_diff.json").read_text())
    level = [r for r in diff["metrics"] if r["metric"] == "level"]
    assert [r["B-A"] for r in level] == pytest.approx([0.25, 0.25], abs=1e-12)
    assert (out / "compare_x_out.svg").exists() and (out / "compare_c_out.png").exists()
    proc = cli("compare", a, b, "--no-figures", "--fail-rel", 0.2, check=False)
    assert proc.returncode == 1                      # 25 % > 20 %


# ----------------------------------------------------------------------------- docs

def test_docs_blocks_md_is_up_to_date():
    from blocksim.blocks.catalog import markdown
    path = ROOT / "docs" / "blocks.md"
    assert path.exists(), "docs/blocks.md is missing"
    assert path.read_text() == markdown(), (
        "docs/blocks.md is out of date: run `python cli.py blocks --markdown --out docs/blocks.md`")


def test_blocks_markdown_cli_matches_catalog(tmp_path):
    from blocksim.blocks.catalog import markdown
    proc = cli("blocks", "--markdown")
    assert proc.stdout == markdown()
    assert "### Manipulator" in proc.stdout and "| `q0` | rad |" in proc.stdout
    assert "- outputs: q (rad), qd (rad/s), qdd (rad/s^2)" in proc.stdout


def test_a_scope_block_is_logged_and_plotted(tmp_path):
    """A Scope wired to v (not in log.signals) gets v logged and its own figure, beside the
    diagram's scopes: entry."""
    diagram = tmp_path / "d.yaml"
    diagram.write_text(
        "blocksim: 1\nname: oscillator\nblocks:\n"
        "  x: {type: Integrator, x0: 1.0}\n  v: {type: Integrator, x0: 0.0}\n"
        "  k: {type: Gain, gain: -4.0}\n  speed: {type: Scope, title: Speed of the mass}\n"
        "connections: [v -> x, x -> k, k -> v, v -> speed]\n"
        "simulation: {stop_time: 1.0, solver: rk4, step: 0.01}\n"
        "log: {signals: [x.out]}\nscopes: [{title: Position, signals: [x.out]}]\n")
    spec = blocksim.load(diagram).spec
    assert spec.scopes[-1] == {"title": "Speed of the mass", "signals": ["v"]}
    r = blocksim.simulate(blocksim.load(diagram))
    np.testing.assert_allclose(r["v.out"][:, 0], -2.0 * np.sin(2.0 * r.t), atol=1e-8)
    proc = cli("simulate", diagram, "--out", tmp_path / "out", "--plot")
    figures = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert len(figures) == 2, (figures, proc.stdout)
    assert any("speed" in name.lower() for name in figures)


def test_simulate_plot_without_scopes_draws_every_logged_signal(tmp_path):
    """A diagram without scopes: `simulate --plot` draws each logged signal in a figure of its
    own, as `plot` does for the run folder (it wrote nothing before, and said nothing)."""
    diagram = tmp_path / "d.yaml"
    diagram.write_text(
        "blocksim: 1\nname: oscillator\nblocks:\n"
        "  x: {type: Integrator, x0: 1.0}\n  v: {type: Integrator, x0: 0.0}\n"
        "  k: {type: Gain, gain: -4.0}\n"
        "connections: [v -> x, x -> k, k -> v]\n"
        "simulation: {stop_time: 1.0, solver: rk4, step: 0.01}\n"
        "log: {signals: [x.out, v.out]}\n")
    proc = cli("simulate", diagram, "--out", tmp_path / "out", "--plot")
    svgs = sorted((tmp_path / "out").glob("*.svg"))
    assert len(svgs) == 2 and all(str(p) in proc.stdout or p.name in proc.stdout for p in svgs)
    assert {"x.out", "v.out"} == {name for p in svgs for name in ("x.out", "v.out")
                                  if name in svg_text(p)}
    cli("plot", tmp_path / "out", "--out", tmp_path / "again")
    assert sorted(p.name for p in (tmp_path / "again").glob("*.svg")) == [p.name for p in svgs]


def test_the_3d_camera_looks_across_the_arms_motion():
    """An arm that sweeps along x is seen from 30 deg off the y axis (azimuth 60 deg), one that
    sweeps along y from 150 deg: the motion spreads across the picture, not towards the camera."""
    from blocksim.animation import viewing_azimuth
    s = np.linspace(-1.0, 1.0, 50)
    along_x = np.column_stack([s, 0.05 * s ** 2, np.ones_like(s)])
    along_y = along_x[:, [1, 0, 2]]
    assert viewing_azimuth(along_x) % 180 == pytest.approx(60.0)
    assert viewing_azimuth(along_y) % 180 == pytest.approx(150.0)
