"""Robot kinematics blocks: Singularity, how close the arm is to a singularity, per batch member,
from q; CartesianTrajectory, a tool-space move (line or circle) as joint references q, qd, qdd.

The measures are the models' (`models.singularities` for the Jacobian's, `models.arm_geometry`
for the named singularities of a spherical-wrist arm); this module maps the block's ports and
parameter record onto them. Units: m for the shoulder distance, dimensionless sines for the elbow
and wrist; the Jacobian measures in the units of the rows chosen by `part`.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import BlocksimError, ParameterError
from ..models import singularities as sg
from ..models.cartesian_path import ToolPath, joint_motion
from ..models.frames import rpy_to_matrix
from ..reading import limits
from ..models.arm_geometry import posture_of
from ..models.kinematics import jacobian
from ..models.model_data import member, poses, xtree
from ._bases import times_within
from ._kernels import kernel_params
from .base import Kernels, Param, register
from .robot import RobotBlock
from .trajectories import (CUBIC, QUINTIC, path_timing, point_to_point_kernel,
                           trapezoidal_kernel)

SingularityParams = namedtuple("SingularityParams", "model data J A sv centre4 r0 r1")
"""The Singularity block's record: Model and Data; scratch J (6 n), A (m x m, m = max(6, n)) and
sv (6) for the singular values; centre4 (3,) the wrist centre in body frame 4 (zeros without a
spherical wrist); r0, r1 the Jacobian rows of `part`."""

WRIST_OUTPUTS = ("shoulder", "elbow", "wrist")


@njit(cache=True, error_model="numpy")
def singularity_rows(q, model, data, J, A, sv, r0, r1, manipulability, sigma_min, condition):
    """The Jacobian measures (`models.singularities.jacobian_measures`) of each member at q[b]."""
    n = q.shape[1]
    for b in range(q.shape[0]):
        jacobian(model, data, member(model, b), q, b, J)
        w, smin, cond = sg.jacobian_measures(J.reshape((6, n)), r0, r1, A, sv)
        manipulability[b, 0] = w
        sigma_min[b, 0] = smin
        condition[b, 0] = cond


@njit(cache=True, error_model="numpy")
def wrist_rows(q, model, data, centre4, shoulder, elbow, wrist):
    """|reach| (m), |elbow|, |wrist| of each member at q[b] (`models.arm_geometry`)."""
    n = q.shape[1]
    for b in range(q.shape[0]):
        reach, bend, turn = posture_of(model[0], xtree(model, member(model, b)), centre4, q, b,
                                       poses(data, n))
        shoulder[b, 0] = abs(reach)
        elbow[b, 0] = abs(bend)
        wrist[b, 0] = abs(turn)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def singularity_output(t, xc, xd, u, y, p):
    singularity_rows(u[0], p.model, p.data, p.J, p.A, p.sv, p.r0, p.r1, y[0], y[1], y[2])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def singularity_wrist_output(t, xc, xd, u, y, p):
    singularity_rows(u[0], p.model, p.data, p.J, p.A, p.sv, p.r0, p.r1, y[0], y[1], y[2])
    wrist_rows(u[0], p.model, p.data, p.centre4, y[3], y[4], y[5])


@register
class Singularity(RobotBlock):
    """How close the arm is to a singularity at q, from its geometric Jacobian J (the rows `part`
    selects: all, position or orientation) and, for a spherical-wrist arm, per singularity.

    manipulability: Yoshikawa's measure, the product of J's singular values (sqrt(det(J J^T)));
    sigma_min: J's smallest singular value; condition: sigma_max / sigma_min (inf at a
    singularity). With part 'all' the rows mix m/s and rad/s, so these depend on the unit of
    length; 'position' gives m/rad, 'orientation' 1.

    Robots with a spherical wrist (six revolute joints, axes 4 to 6 meeting in one point, axes 2
    and 3 parallel: kr6_like, puma560, and URDF or DH arms of that shape) have three more outputs,
    each 0 at its singularity: shoulder, the wrist centre's distance (m) from the plane through
    axis 1 parallel to axis 2 (axis 1 itself for an arm without shoulder offset); elbow, |sin| of
    the elbow angle (arm stretched or folded at 0); wrist, |sin| of the angle between axes 4 and
    6. Other robots do not have these ports."""

    type_name = "Singularity"
    summary = "q -> manipulability, smallest singular value, condition number; shoulder, elbow, wrist"
    params = {**RobotBlock.params,
              "part": Param("all", "-", "rows of J: all | position | orientation", kind="str",
                            choices=tuple(sg.PARTS))}
    inputs = ("q",)
    joint_angle_inputs = ("q",)
    outputs = ("manipulability", "sigma_min", "condition") + WRIST_OUTPUTS
    port_units = {"manipulability": None, "sigma_min": None, "condition": "-", "shoulder": "m",
                  "elbow": "-", "wrist": "-"}

    def setup(self):
        super().setup()
        self.has_wrist = self.model.wrist_arm is not None

    def output_names(self):
        return list(self.outputs if self.has_wrist else self.outputs[:3])

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {o: 1 for o in self.output_names()}

    def record(self, v):
        model, data = self.model_data(v)
        n = self.n
        m = max(6, n)
        r0, r1 = sg.PARTS[v.part]
        centre4 = self.model.wrist_arm.centre_in_4 if self.has_wrist else np.zeros(3)
        return kernel_params(SingularityParams, model=model, data=data, J=np.zeros(6 * n),
                             A=np.zeros((m, m)), sv=np.zeros(6), centre4=np.array(centre4),
                             r0=r0, r1=r1)

    def kernels(self):
        return Kernels(output=singularity_wrist_output if self.has_wrist else singularity_output)


__all__ = ["Singularity", "SingularityParams", "CartesianTrajectory", "CartesianParams"]


# ============================================================================ tool-space moves

CartesianParams = namedtuple("CartesianParams", "nodes switches t0 h")
"""CartesianTrajectory's record: nodes (Bm, N, n, 3) q, qd, qdd of each member (one row when
every member moves alike) at the node times t0 + k h, k = 0 .. N - 1; switches (Bm, 4) the times
where the profile's acceleration may jump (start, end of the first blend, start of the last,
end), for the breakpoints."""


@njit(cache=True, error_model="numpy")
def hermite_rows(t, nodes, t0, h, q, qd, qdd):
    """q, qd, qdd at t: the quintic Hermite interpolant of the nodes (q, qd, qdd matched at both
    ends of each interval, so C2), the first node before t0 and the last from the end on."""
    N = nodes.shape[1]
    n = nodes.shape[2]
    x = (t - t0) / h
    held = -1
    if x <= 0.0:
        held = 0
    elif x >= N - 1:
        held = N - 1
    k = min(int(x), N - 2) if held < 0 else 0
    x -= k
    for b in range(q.shape[0]):
        row = min(b, nodes.shape[0] - 1)
        for i in range(n):
            if held >= 0:                       # at rest on the first or the last node
                q[b, i] = nodes[row, held, i, 0]
                qd[b, i] = nodes[row, held, i, 1]
                qdd[b, i] = nodes[row, held, i, 2]
                continue
            p0 = nodes[row, k, i, 0]
            p1 = nodes[row, k + 1, i, 0]
            v0 = nodes[row, k, i, 1] * h
            v1 = nodes[row, k + 1, i, 1] * h
            a0 = nodes[row, k, i, 2] * h * h
            a1 = nodes[row, k + 1, i, 2] * h * h
            d = p1 - p0
            c3 = 10.0 * d - 6.0 * v0 - 4.0 * v1 - 0.5 * (3.0 * a0 - a1)
            c4 = -15.0 * d + 8.0 * v0 + 7.0 * v1 + 0.5 * (3.0 * a0 - 2.0 * a1)
            c5 = 6.0 * d - 3.0 * v0 - 3.0 * v1 - 0.5 * (a0 - a1)
            q[b, i] = p0 + x * (v0 + x * (0.5 * a0 + x * (c3 + x * (c4 + x * c5))))
            qd[b, i] = (v0 + x * (a0 + x * (3.0 * c3 + x * (4.0 * c4 + x * 5.0 * c5)))) / h
            qdd[b, i] = (a0 + x * (6.0 * c3 + x * (12.0 * c4 + x * 20.0 * c5))) / (h * h)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def cartesian_output(t, xc, xd, u, y, p):
    hermite_rows(t, p.nodes, p.t0, p.h, y[0], y[1], y[2])


PATHS = ("line", "circle")
PROFILES = {"quintic": QUINTIC, "cubic": CUBIC, "trapezoidal": None}


@register
class CartesianTrajectory(RobotBlock):
    """A tool-space move as joint references: the tool origin along a straight line (path: line,
    to `end`) or a circular arc (path: circle, about the axis `axis` through `centre` by `angle`,
    right-hand rule), the orientation turned from the start's to `end_rpy` (URDF roll-pitch-yaw
    in the base frame; default: held) by slerp, starting from the tool pose of q0 at t0 and
    timed by `profile`: over `duration`, quintic (minimum jerk: rest with zero acceleration at
    both ends) or cubic (rest at both ends); trapezoidal, the tool origin's speed along the path
    in a trapezoid (the Trapezoidal block's rules: v_max and a_max in m/s and m/s^2, the shortest
    move; duration and a_max; or duration alone, cruising at 1.5 times the mean speed). Held at
    the start before t0 and at the end after it.

    q follows the inverse kinematics on q0's branch (Newton's method from node to node, the pose
    error below 1e-13), qd = J^-1 [v; w] and qdd = J^-1 ([a; alpha] - Jdot qd) exactly at nodes
    every `node_step` seconds, between them their quintic Hermite interpolant (C2; the tool stays
    on the path to about 1e-15 m at node_step 1 ms). Refused when the diagram is loaded, naming
    the time, where the move comes within a clearance of a singularity (min_sigma on J's smallest
    singular value; for a spherical-wrist arm min_shoulder (m), min_elbow and min_wrist on the
    singularity measures of the Singularity block), changes the shoulder, elbow or wrist branch,
    leaves a joint's limits or the arm's reach: the arm never jumps. Six-joint arms."""

    type_name = "CartesianTrajectory"
    summary = "tool line or circle with slerp orientation -> joint q, qd, qdd on one IK branch"
    params = {**RobotBlock.params,
              "q0": Param(units="rad", doc="start joint vector (its branch is kept)"),
              "path": Param("line", "-", "line | circle", kind="str", choices=PATHS),
              "end": Param(None, "m", "line: end position of the tool origin (3,), base frame"),
              "centre": Param(None, "m", "circle: a point on its axis (3,), base frame"),
              "axis": Param(None, "-", "circle: axis direction (3,), the arc turns about it"),
              "angle": Param(None, "rad", "circle: arc angle (2 pi: a full circle)"),
              "end_rpy": Param(None, "rad", "end orientation, roll-pitch-yaw in the base frame "
                               "(default: the start's)"),
              "t0": Param(0.0, "s", "start time"),
              "duration": Param(None, "s", "move time (> 0; trapezoidal: default the shortest "
                                "v_max and a_max allow)"),
              "profile": Param("quintic", "-", "quintic (minimum jerk) | cubic | trapezoidal",
                               kind="str", choices=tuple(PROFILES)),
              "v_max": Param(None, "m/s", "trapezoidal: the tool origin's speed limit (> 0)"),
              "a_max": Param(None, "m/s^2", "trapezoidal: its acceleration limit (> 0)"),
              "node_step": Param(1e-3, "s", "spacing of the exact nodes (> 0)"),
              "min_sigma": Param(1e-4, "-", "clearance: J's smallest singular value"),
              "min_shoulder": Param(0.01, "m", "clearance: shoulder singularity measure"),
              "min_elbow": Param(0.01, "-", "clearance: elbow singularity measure (|sin|)"),
              "min_wrist": Param(0.01, "-", "clearance: wrist singularity measure (|sin|)")}
    inputs = ()
    outputs = ("q", "qd", "qdd")
    port_units = {"q": "rad", "qd": "rad/s", "qdd": "rad/s^2"}
    sample = "continuous"
    time_varying = True
    direct_feedthrough = False

    def resolve_widths(self, in_widths):
        return {o: self.n for o in self.outputs}

    def check_values(self, v):
        super().check_values(v)
        self.motion(v)

    def _scalar(self, v, key):
        a = np.asarray(getattr(v, key), dtype=float).reshape(-1)
        if not np.all(np.isfinite(a)):
            raise ParameterError(f"'{key}' must be finite, got {a[0]:g}", block=self.name)
        if np.any(a != a[0]):
            raise ParameterError(f"'{key}' is one number, the same for every member",
                                 block=self.name)
        return float(a[0])

    def _vector(self, v, key, b, size):
        value = getattr(v, key)
        if value is None:
            return None
        row = np.asarray(value, dtype=float)[b].reshape(-1)
        if row.size != size:
            raise ParameterError(f"'{key}' needs {size} values, got {row.size}", block=self.name)
        if not np.all(np.isfinite(row)):
            raise ParameterError(f"'{key}' must be finite, got {row.tolist()}", block=self.name)
        return row

    def _path(self, v, b, model):
        """(q0, ToolPath) of member b of the values v."""
        q0 = self._vector(v, "q0", b, model.n)
        T0 = model.fk(q0)
        rpy = self._vector(v, "end_rpy", b, 3)
        R1 = None if rpy is None else rpy_to_matrix(rpy)
        if v.path == "line":
            end = self._vector(v, "end", b, 3)
            if end is None:
                raise ParameterError("path: line needs 'end' (the tool origin's end position, m)",
                                     block=self.name)
            return q0, ToolPath(T0, "line", end=end, R1=R1)
        centre, axis = self._vector(v, "centre", b, 3), self._vector(v, "axis", b, 3)
        if centre is None or axis is None or v.angle is None:
            raise ParameterError("path: circle needs 'centre' (m), 'axis' and 'angle' (rad)",
                                 block=self.name)
        norm = float(np.linalg.norm(axis))
        if norm == 0.0:
            raise ParameterError("'axis' must not be zero", block=self.name)
        return q0, ToolPath(T0, "circle", centre=centre, axis=axis / norm,
                            angle=self._scalar(v, "angle"), R1=R1)

    def _profiles(self, v, paths):
        """(t0, duration, per member (switch times (4,), its s(t) profile: a function of the node
        times giving (3, N) s, ds/dt, d2s/dt2))."""
        t0 = self._scalar(v, "t0")
        given = None if v.duration is None else self._scalar(v, "duration")
        if given is not None and not given > 0.0:
            raise ParameterError("duration must be > 0", block=self.name)
        if v.profile != "trapezoidal":
            if given is None:
                raise ParameterError(f"profile: {v.profile} needs 'duration' (s)",
                                     block=self.name)
            P = np.array([[[0.0, 1.0, t0, t0 + given]]])

            def polynomial(times):
                out = np.empty((3, 1, 1))
                s = np.empty((3, times.shape[0]))
                for k, t in enumerate(times):
                    point_to_point_kernel(t, P, PROFILES[v.profile], out[0], out[1], out[2])
                    s[:, k] = out[:, 0, 0]
                return s
            switches = np.array([t0, t0, t0 + given, t0 + given])
            return t0, given, [(switches, polynomial)] * len(paths)
        limited = {k: None if getattr(v, k) is None else self._scalar(v, k)
                   for k in ("v_max", "a_max")}
        if given is None and None in limited.values():
            raise ParameterError("profile: trapezoidal needs v_max and a_max (m/s, m/s^2 of the "
                                 "tool origin), or duration (with or without a_max)",
                                 block=self.name)
        for key, value in limited.items():
            if value is not None and not value > 0.0:
                raise ParameterError(f"{key} must be > 0", block=self.name)
        lengths = np.array([path.length() for _, path in paths])
        moving = lengths > 0.0
        if np.any(~moving) and (given is None or limited["a_max"] is not None):
            raise ParameterError("a move that turns the tool without moving its origin has no "
                                 "path length for v_max and a_max: give duration alone",
                                 block=self.name)
        safe = np.where(moving, lengths, 1.0)
        limit = {k: np.full(len(paths), np.inf) if x is None else x / safe
                 for k, x in limited.items()}
        try:
            timing = path_timing(limit["v_max"], limit["a_max"],
                                 None if given is None else np.full(len(paths), given),
                                 np.full(len(paths), t0), np.zeros(len(paths), dtype=bool),
                                 "the tool", limited["a_max"] is not None, ("v_max", "a_max"))
        except ParameterError as err:
            raise err.located(block=self.name)
        durations = timing[:, 3] - t0
        if np.any(np.abs(durations - durations[0]) > 1e-12 * durations[0]):
            raise ParameterError("the members' moves take different times under v_max and a_max: "
                                 "give a duration", block=self.name)
        line = np.array([[[0.0, 1.0]]])
        out = []
        for b in range(len(paths)):
            row = np.ascontiguousarray(timing[b:b + 1])

            def trapezoid(times, row=row):
                y = np.empty((3, 1, 1))
                s = np.empty((3, times.shape[0]))
                for k, t in enumerate(times):
                    trapezoidal_kernel(t, line, row, y[0], y[1], y[2])
                    s[:, k] = y[:, 0, 0]
                return s
            out.append((row[0, :4].copy(), trapezoid))
        return t0, float(durations[0]), out

    def motion(self, v):
        """(nodes (Bm, N, n, 3), switch times (Bm, 4), t0, h) of the values v; each distinct
        move computed once."""
        model = self.robot_of(v)                # members differ in dynamics only
        paths = [self._path(v, b, model) for b in range(v.batch)]
        t0, duration, profiles = self._profiles(v, paths)
        step = self._scalar(v, "node_step")
        if not step > 0.0:
            raise ParameterError("node_step must be > 0", block=self.name)
        count = int(math.ceil(duration / step - 1e-9)) + 1
        limits.check("path_nodes", count, "the move takes",
                     f" (duration {duration:g} s / node_step {step:g} s, rounded up, + 1)",
                     block=self.name)
        h = duration / (count - 1)
        times = t0 + h * np.arange(count)
        times[-1] = t0 + duration
        clearance = {"sigma_min": self._scalar(v, "min_sigma"),
                     "shoulder": self._scalar(v, "min_shoulder"),
                     "elbow": self._scalar(v, "min_elbow"), "wrist": self._scalar(v, "min_wrist")}
        motions = self.__dict__.setdefault("_motions", {})
        rows, switches = [], []
        for (q0, path), (switch, profile) in zip(paths, profiles):
            s = profile(times)
            key = (id(model), q0.tobytes(), path.kind, path.angle, tuple(clearance.values()),
                   times.tobytes(), s.tobytes(),
                   *(None if a is None else a.tobytes()
                     for a in (path.end, path.centre, path.axis, path.R1)))
            if key not in motions:
                try:
                    q, qd, qdd = joint_motion(model, q0, path, times, s[0], s[1], s[2], clearance)
                except BlocksimError as err:
                    raise err.located(block=self.name)
                motions[key] = np.stack([q, qd, qdd], axis=-1)
            rows.append(motions[key])
            switches.append(switch)
        if all(r is rows[0] for r in rows):
            rows, switches = rows[:1], switches[:1]   # every member moves alike: one row
        return np.ascontiguousarray(np.stack(rows)), np.array(switches), t0, h

    def record(self, v):
        nodes, switches, t0, h = self.motion(v)
        return kernel_params(CartesianParams, nodes=nodes, switches=switches, t0=t0, h=h)

    def kernels(self):
        return Kernels(output=cartesian_output)

    def breakpoints(self, t0, t1, p=None):
        # where qdd may jump: the start and end, and a trapezoid's ends of its blends
        return times_within(self.own_record(p).switches, t0, t1)
