"""Animations of a saved run: the arm moving, as a GIF (matplotlib animation, Pillow writer).

The arm is drawn from `RobotModel.link_poses(q)`: a polyline from the base through every joint
(its frame origin, and the point of its axis nearest the previous link, so DH offsets along the
axis show as segments) and every link frame to the tool. An arm whose points all stay in one
coordinate plane (the planar 2R presets: the x-y plane) is drawn in 2-D with equal axes; any other
arm on an isometric orthographic 3-D axes. The tool's path so far is traced; a reference (the
logged `ref*.q`, if any) is drawn as a dashed grey ghost arm; several variants are overlaid, one
colour each. Frames are at t0 + k speed / fps (k = 0 .. floor((t_end - t0) fps / speed)), the joint
positions linearly interpolated from the log; every frame shows its time.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .errors import BlocksimError
from .plotting import (VARIANT_STYLE_CYCLE, diagram_doc, load_run, new_figure, select_variants,
                       source_diagram_path)

ROBOT_TYPES = ("Manipulator",)


def frame_times(t0: float, t1: float, fps: float, speed: float = 1.0) -> np.ndarray:
    """Times of the frames: t0 + k speed / fps up to t1 (both ends included when on the grid)."""
    if fps <= 0 or speed <= 0:
        raise BlocksimError("--fps and --speed must be positive")
    step = speed / fps
    n = int(math.floor((t1 - t0) / step + 1e-9)) + 1
    return t0 + step * np.arange(max(n, 1))


def _robot_block(doc: dict, signal: str | None):
    """(block name, its spec) of the robot plant: the block of `signal`, else the first Manipulator."""
    blocks = doc.get("blocks") or {}
    if signal:
        name = signal.split(".", 1)[0]
        spec = blocks.get(name)
        if isinstance(spec, dict) and "robot" in spec:
            return name, spec
    for name, spec in blocks.items():
        if isinstance(spec, dict) and spec.get("type") in ROBOT_TYPES:
            return name, spec
    for name, spec in blocks.items():
        if isinstance(spec, dict) and "robot" in spec:
            return name, spec
    return None, None


def resolve_robot(robot: str | None, result, run_dir: Path, signal: str | None):
    """(RobotModel, signal name): from --robot, else from the saved diagram's Manipulator."""
    from .blocks.robot import load_robot
    doc = diagram_doc(result)
    name, spec = _robot_block(doc, signal)
    if signal is None:
        if name is None:
            raise BlocksimError(f"{run_dir}: the saved diagram has no Manipulator block; name the "
                                "joint positions with --signal BLOCK.PORT (and --robot)")
        signal = f"{name}.q"
    if robot is None:
        if spec is None or not spec.get("robot"):
            raise BlocksimError(f"{run_dir}: no robot named in the saved diagram for '{signal}'; "
                                "give one with --robot NAME|FILE")
        robot = str(spec["robot"])
        src = source_diagram_path(result, run_dir)
        diagram_dir = str(src.parent) if src is not None else None
        try:
            model = load_robot(robot, diagram_dir)
        except BlocksimError:
            model = load_robot(robot, str(run_dir))
    else:
        model = load_robot(robot, None)
    return model, signal


def arm_points(model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polyline points (B, m, 3) of the arm for joint positions q (B, n), and the joint origins
    (B, n, 3)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if hasattr(model, "expand"):          # a chain with mimic joints (CoupledRobot): every joint
        q, model = model.expand(q), model.full
    B, n = q.shape
    links = np.asarray(model.link_poses(q)).reshape(B, n, 4, 4)
    offsets_inv = np.linalg.inv(np.asarray(model.link_offsets))
    joints = links @ offsets_inv                      # moved joint frames: axis along z
    tool = np.asarray(model.fk(q)).reshape(B, 4, 4)
    pts = np.zeros((B, 3 * n + 2, 3))
    prev = np.zeros((B, 3))
    k = 1
    for i in range(n):
        origin = joints[:, i, :3, 3]
        axis = joints[:, i, :3, 2]
        foot = origin + np.sum((prev - origin) * axis, axis=1)[:, None] * axis
        pts[:, k] = foot
        pts[:, k + 1] = origin
        pts[:, k + 2] = links[:, i, :3, 3]
        prev = links[:, i, :3, 3]
        k += 3
    pts[:, k] = tool[:, :3, 3]
    return pts, joints[:, :, :3, 3]


def _plane(points: np.ndarray) -> tuple[int, int] | None:
    """The two coordinate axes of the plane the points stay in, or None for a 3-D motion."""
    flat = points.reshape(-1, 3)
    span = np.ptp(flat, axis=0)
    scale = max(float(np.max(np.abs(flat))), 1e-9)
    still = [a for a in range(3) if span[a] <= 1e-9 * scale]
    if not still:
        return None
    drop = still[-1] if 2 in still else still[0]
    return tuple(a for a in range(3) if a != drop)  # type: ignore[return-value]


def _reference_signal(result, signal: str, width: int, reference: str | None) -> str | None:
    if reference is not None:
        if reference.lower() == "none":
            return None
        if reference not in result:
            from .errors import did_you_mean
            raise BlocksimError(f"no logged signal '{reference}'{did_you_mean(reference, result.names)}")
        return reference
    for name in result.names:
        block, _, port = name.partition(".")
        if block.split("/")[-1].startswith("ref") and port in ("q", "out", "q_d") \
                and name != signal:
            data = result[name]
            if data.shape[-1] == width:
                return name
    return None


def _joint_series(result, name: str, member: int) -> np.ndarray:
    data = np.asarray(result[name], dtype=float)
    if data.ndim == 3:
        if not 0 <= member < data.shape[0]:
            raise BlocksimError(f"--member {member}: the run has {data.shape[0]} batch members")
        data = data[member]
    return data


def _interp(t: np.ndarray, y: np.ndarray, times: np.ndarray) -> np.ndarray:
    return np.column_stack([np.interp(times, t, y[:, j]) for j in range(y.shape[1])])


def animate_run(run, variants=None, robot=None, signal=None, reference=None, fps=25.0,
                speed=1.0, member=0, dpi=80, out=None) -> Path:
    """Write a GIF of the arm moving for a saved run; returns its path (see the module docstring)."""
    run = Path(run)
    results = load_run(run)
    n_saved = len(results)
    if variants:
        results = select_variants(results, variants, run)
    else:
        results = dict([next(iter(results.items()))])
    first = next(iter(results.values()))
    model, signal = resolve_robot(robot, first, run, signal)
    tracks = []          # (label, t, q)
    for label, r in results.items():
        if signal not in r:
            from .errors import did_you_mean
            raise BlocksimError(f"{run}: no logged signal '{signal}' in '{label}'"
                                f"{did_you_mean(signal, r.names)}; logged: {', '.join(r.names)}")
        q = _joint_series(r, signal, member)
        if q.shape[1] != model.n:
            raise BlocksimError(f"'{signal}' has {q.shape[1]} elements but robot '{model.name}' "
                                f"has {model.n} joints")
        tracks.append((label, r.t, q))
    ref_name = _reference_signal(first, signal, model.n, reference)
    t0 = min(float(t[0]) for _, t, _ in tracks)
    t1 = max(float(t[-1]) for _, t, _ in tracks)
    times = frame_times(t0, t1, fps, speed)
    arms = [(label, *arm_points(model, _interp(t, q, times))) for label, t, q in tracks]
    ghost = None
    if ref_name is not None:
        qr = _joint_series(first, ref_name, member)
        ghost = arm_points(model, _interp(first.t, qr, times))[0]
    every = np.concatenate([a[1].reshape(-1, 3) for a in arms]
                           + ([ghost.reshape(-1, 3)] if ghost is not None else []))
    plane = _plane(every)
    if out is None:
        suffix = "" if n_saved == 1 else "_" + "_".join(results)
        out = run / f"animation{suffix}.gif"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    title = f"{model.name}: {signal}" + (f" (member {member})" if member else "")
    if len(arms) == 1:
        title += f", variant {arms[0][0]}"
    if plane is not None:
        _animate_2d(out, arms, ghost, times, plane, every, fps, dpi, title, ref_name)
    else:
        _animate_3d(out, arms, ghost, times, every, fps, dpi, title, ref_name)
    return out


_AXIS = "xyz"


def link_style(colour: str) -> dict:
    """How an arm is drawn: links as wide rounded bars, joints as white-filled rings."""
    return {"color": colour, "linewidth": 6, "solid_capstyle": "round", "alpha": 0.9,
            "marker": "o", "markersize": 7, "markerfacecolor": "white", "markeredgewidth": 2}


def viewing_azimuth(points: np.ndarray) -> float:
    """A camera azimuth (deg) that looks across the arm's motion: perpendicular to the main
    horizontal direction the points spread in, from 30 deg off it so depth still shows."""
    xy = points[:, :2] - points[:, :2].mean(axis=0)
    if not np.any(xy):
        return 45.0
    _, _, vt = np.linalg.svd(xy, full_matrices=False)
    spread = math.degrees(math.atan2(vt[0, 1], vt[0, 0]))
    return spread + 90.0 - 30.0


def _save(fig, update, n_frames: int, out: Path, fps: float, dpi: int) -> None:
    from matplotlib.animation import FuncAnimation, PillowWriter
    anim = FuncAnimation(fig, update, frames=n_frames, blit=False, repeat=False)
    anim.save(str(out), writer=PillowWriter(fps=fps), dpi=dpi)


def _animate_2d(out, arms, ghost, times, plane, every, fps, dpi, title, ref_name):
    a, b = plane
    fig = new_figure(figsize=(6.0, 6.0))
    ax = fig.add_subplot(1, 1, 1)
    lo, hi = every.min(axis=0), every.max(axis=0)
    centre = (lo + hi) / 2
    half = max(float(np.max(hi - lo)) / 2, 1e-3) * 1.1
    ax.set_xlim(centre[a] - half, centre[a] + half)
    ax.set_ylim(centre[b] - half, centre[b] + half)
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.3)
    ax.set_xlabel(f"{_AXIS[a]} [m]")
    ax.set_ylabel(f"{_AXIS[b]} [m]")
    ax.set_title(title)
    ax.plot([0], [0], marker="s", color="black", markersize=9)
    ghost_line = None
    if ghost is not None:
        (ghost_line,) = ax.plot([], [], "--", color="0.5", linewidth=2,
                                label=f"reference ({ref_name})")
    lines, paths = [], []
    for k, (label, pts, _) in enumerate(arms):
        colour = VARIANT_STYLE_CYCLE[k % len(VARIANT_STYLE_CYCLE)]
        (line,) = ax.plot([], [], "-", label=label, **link_style(colour))
        (path,) = ax.plot([], [], "-", color=colour, linewidth=0.8, alpha=0.6)
        lines.append(line)
        paths.append(path)
    ax.legend(fontsize=8, loc="upper right", title="arm (variant)", title_fontsize=8)
    stamp = ax.text(0.02, 0.96, "", transform=ax.transAxes, fontsize=10, va="top")

    def update(f):
        if ghost_line is not None:
            ghost_line.set_data(ghost[f, :, a], ghost[f, :, b])
        for (label, pts, _), line, path in zip(arms, lines, paths):
            line.set_data(pts[f, :, a], pts[f, :, b])
            path.set_data(pts[: f + 1, -1, a], pts[: f + 1, -1, b])
        stamp.set_text(f"t = {times[f]:.3f} s")
        return lines

    _save(fig, update, len(times), out, fps, dpi)


def _animate_3d(out, arms, ghost, times, every, fps, dpi, title, ref_name):
    fig = new_figure(figsize=(6.5, 6.5))
    ax = fig.add_subplot(1, 1, 1, projection="3d", proj_type="ortho")
    ax.view_init(elev=25.0, azim=viewing_azimuth(every))
    lo, hi = every.min(axis=0), every.max(axis=0)
    lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    centre = (lo + hi) / 2
    half = max(float(np.max(hi - lo)) / 2, 1e-3) * 1.05
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.set_title(title)
    ax.plot([0], [0], [0], marker="s", color="black", markersize=8)
    ghost_line = None
    if ghost is not None:
        (ghost_line,) = ax.plot([], [], [], "--", color="0.5", linewidth=2,
                                label=f"reference ({ref_name})")
    lines, joints_m, paths = [], [], []
    for k, (label, pts, jo) in enumerate(arms):
        colour = VARIANT_STYLE_CYCLE[k % len(VARIANT_STYLE_CYCLE)]
        style = link_style(colour)
        (line,) = ax.plot([], [], [], "-", label=label,
                          **{key: v for key, v in style.items() if not key.startswith("marker")})
        (jm,) = ax.plot([], [], [], "o", color=colour, markersize=style["markersize"],
                        markerfacecolor="white", markeredgewidth=2)
        (path,) = ax.plot([], [], [], "-", color=colour, linewidth=0.8, alpha=0.6)
        lines.append(line)
        joints_m.append(jm)
        paths.append(path)
    ax.legend(fontsize=8, loc="upper right", title="arm (variant)", title_fontsize=8)
    stamp = ax.text2D(0.02, 0.96, "", transform=ax.transAxes, fontsize=10, va="top")

    def update(f):
        if ghost_line is not None:
            ghost_line.set_data_3d(ghost[f, :, 0], ghost[f, :, 1], ghost[f, :, 2])
        for (label, pts, jo), line, jm, path in zip(arms, lines, joints_m, paths):
            line.set_data_3d(pts[f, :, 0], pts[f, :, 1], pts[f, :, 2])
            jm.set_data_3d(jo[f, :, 0], jo[f, :, 1], jo[f, :, 2])
            path.set_data_3d(pts[: f + 1, -1, 0], pts[: f + 1, -1, 1], pts[: f + 1, -1, 2])
        stamp.set_text(f"t = {times[f]:.3f} s")
        return lines

    _save(fig, update, len(times), out, fps, dpi)
