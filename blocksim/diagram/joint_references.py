"""Warnings for joint references and setpoints that leave the robot's joint limits.

A reference of 30 rad on a joint that turns +-2.9 rad is almost always degrees written as radians,
or a setpoint meant for another joint; the run would go on and track it, silently wrong. Before a
run, every source that feeds a robot's joint angles (a trajectory generator or a Constant, Step,
Sine, ... without inputs or states) is sampled over the run's span, and a value beyond the limits
of the robot it feeds is a BlocksimWarning at the source's line. Joint angles are the angle inputs
of the robot blocks (InverseDynamics.q, ComputedTorque.q_d, ForwardKinematics.q, ...) and the
reference of a controller whose measurement is a Manipulator's q (PID.ref beside PID.meas).
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np

from ..blocks._kernels import entry_point
from ..blocks.robot import RobotBlock
from ..errors import BlocksimError, BlocksimWarning

SAMPLES = 1001
"""Instants at which a source is sampled over the run (its breakpoints added): fine enough for a
reference's peak to within 1e-5 of its swing for a smooth one-period motion."""

MAX_SAMPLED_VALUES = 2_000_000
"""Above this many member-instants the grid is thinned (a large batch): the check stays fast."""


def joint_angle_targets(blocks: dict, wires: dict) -> list[tuple[str, str, RobotBlock]]:
    """(block, input port, robot block) for every input that carries a robot's joint angles."""
    targets = []
    for name, blk in blocks.items():
        if not blk.enabled:
            continue
        if isinstance(blk, RobotBlock):
            targets += [(name, port, blk) for port in blk.joint_angle_inputs]
        elif "ref" in blk.input_names() and "meas" in blk.input_names():
            driver = wires.get((name, "meas"))
            robot = blocks.get(driver[0]) if driver else None
            if isinstance(robot, RobotBlock) and driver[1] == "q" and robot.enabled:
                targets.append((name, "ref", robot))
    return targets


def sampled_range(block, port: str, start: float, stop: float):
    """(lowest, highest): the (B, width) minimum and maximum of output `port` of a source block
    over [start, stop] (s), or None for a block that is not a pure function of time (it has
    inputs or states) or has no output kernel."""
    kernels = block.runtime_kernels()
    if block.input_names() or block.n_xc or block.n_xd or kernels is None \
            or kernels.output is None:
        return None
    batch = block.p.batch
    record = block.own_record()
    breaks = tuple(t for t in block.breakpoints(start, stop) if start <= t <= stop)
    widths = tuple(block.out_widths.values())
    index = block.output_names().index(port)
    try:
        key = (kernels.output, pickle.dumps(record), widths, batch, start, stop, breaks, index)
    except (pickle.PicklingError, TypeError, AttributeError):
        key = None
    found = _RANGES.get(key) if key is not None else None
    if found is not None:
        return found[0].copy(), found[1].copy()
    count = int(min(SAMPLES, max(51, MAX_SAMPLED_VALUES // max(batch, 1))))
    grid = np.union1d(np.linspace(start, stop, count), breaks)
    ys = tuple(np.zeros((batch, w)) for w in widths)
    xc, xd = np.zeros((batch, 0)), np.zeros((batch, 0))
    args = (xc, xd, (), ys, record)
    output = entry_point(kernels.output, args, wait=False)
    lowest = np.full(ys[index].shape, np.inf)
    highest = np.full(ys[index].shape, -np.inf)
    for t in grid:
        output(float(t), *args)
        np.minimum(lowest, ys[index], out=lowest)
        np.maximum(highest, ys[index], out=highest)
    if key is not None:
        _RANGES[key] = (lowest.copy(), highest.copy())
        if len(_RANGES) > 256:             # bounded: forget all (safe beside other threads)
            _RANGES.clear()
    return lowest, highest


_RANGES: dict = {}
"""sampled_range's answers by the source's output kernel, parameter record, widths, batch, span,
breakpoints and port (at most 256, then all forgotten): a source is a pure function of time and
its parameters, so a diagram loaded again for each run of a sweep samples each reference once."""


def warn_references_outside_limits(spec, blocks: dict, wires: dict, start: float,
                                   stop: float) -> None:
    """Warn once per source output whose sampled values leave the joint limits of a robot it
    feeds (see the module's docstring)."""
    seen = set()
    for name, port, robot_block in joint_angle_targets(blocks, wires):
        source = wires.get((name, port))
        if source is None or source in seen:
            continue
        seen.add(source)
        src = blocks[source[0]]
        try:
            found = sampled_range(src, source[1], start, stop)
            robot = robot_block.robot_of(robot_block.p)
        except (BlocksimError, ArithmeticError, ValueError):
            continue                   # the run itself reports what is wrong
        if found is None or found[0].shape[1] != robot.n:
            continue
        lowest, highest = found
        for i in range(robot.n):
            lo, hi = robot.q_lower[i], robot.q_upper[i]
            below, above = lowest[:, i].min(), highest[:, i].max()
            if below >= lo - 1e-9 and above <= hi + 1e-9:
                continue
            worst = below if lo - below > above - hi else above
            where = spec.blocks[source[0]].where
            warnings.warn(BlocksimWarning(
                f"{where}: block '{source[0]}', output {source[1]} (into {name}.{port}): joint "
                f"{i + 1} ({robot.joint_names[i]}) reaches {worst:g} rad, outside its limits "
                f"[{lo:g}, {hi:g}] in robot '{robot.name}' (angles are in rad)"), stacklevel=2)
            break
