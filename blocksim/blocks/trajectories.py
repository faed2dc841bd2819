"""Joint-space trajectory generators: vector references q, qd, qdd (one value per joint) with exact
analytic derivatives, for tracking controllers and feedforward (rad, rad/s, rad/s^2 for revolute
joints; m, m/s, m/s^2 for prismatic ones)."""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError
from ._bases import times_within
from ._kernels import packed
from .base import Block, Kernels, Param, common_width, register

PackedParams = namedtuple("PackedParams", "packed")
"""CosineRamp and SineTrajectory kernels' record: the `width_params` packed (B, n, K) in order."""


class Trajectory(Block):
    """Shared shape of the generators: no inputs, outputs q, qd, qdd of one width (the number of
    joints, from the vector parameters listed in `width_params`), continuous and time varying.

    Segment ends (where qdd or a higher derivative jumps) are breakpoints, so adaptive solvers stop
    on them instead of stepping across a kink in the reference.
    """

    inputs = ()
    outputs = ("q", "qd", "qdd")
    port_units = {"q": "rad", "qd": "rad/s", "qdd": "rad/s^2"}
    sample = "continuous"
    time_varying = True
    width_params: tuple[str, ...] = ()
    """A generator's record (`record(v)`, overridden) holds what its kernel reads, precomputed from
    the values v: rows, packed rows, a path's switching times, spline coefficients per member."""

    def setup(self):
        self._width = self.joints()

    def joints(self) -> int:
        """The number of joints, from the shapes of the `width_params`."""
        return common_width(self, self.width_params)

    def resolve_widths(self, in_widths):
        return {o: self._width for o in self.outputs}

    output_kernel = None
    """The module-level compiled output(t, xc, xd, u, y, p) of the generator (see Kernels)."""

    def kernels(self):
        return Kernels(output=self.output_kernel)

    def row(self, key, v):
        """An array parameter of the values v as (B, width) for the kernels (a scalar repeated
        over the joints)."""
        return np.ascontiguousarray(self.param_as_row(key, self._width, v))

    def packed(self, *keys, v) -> np.ndarray:
        """Array parameters of the values v as one (B, width, len(keys)) array (_kernels.packed
        of their rows)."""
        return packed(*(self.row(k, v) for k in keys))

    def positive(self, *keys, v):
        """Raise a ParameterError unless each of `keys` of the values v is > 0."""
        for key in keys:
            if np.any(getattr(v, key) <= 0):
                raise ParameterError(f"{key} must be > 0", block=self.name)


# ---- periodic references ------------------------------------------------------------------------

@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def cosine_ramp_kernel(t, P, q, qd, qdd):
    """q = offset + A (1 - cos(w t)), qd = A w sin(w t), qdd = A w^2 cos(w t), w = 2 pi / period;
    P (B, n, 3): amplitude, period, offset."""
    last = math.nan
    w = c = s = 0.0
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            if P[b, i, 1] != last:       # joints and members of one period share cos and sin
                last = P[b, i, 1]
                w = 2.0 * math.pi / last
                c = math.cos(w * t)
                s = math.sin(w * t)
            a = P[b, i, 0]
            q[b, i] = P[b, i, 2] + a * (1.0 - c)
            qd[b, i] = a * w * s
            qdd[b, i] = a * w * w * c


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def cosine_ramp_output(t, xc, xd, u, y, p):
    cosine_ramp_kernel(t, p.packed, y[0], y[1], y[2])


@register
class CosineRamp(Trajectory):
    """q = offset + amplitude (1 - cos(2 pi t / period)), with its exact qd and qdd.

    Starts at rest at q = offset and reaches offset + 2 amplitude at t = period / 2 (the reference
    q_d = A (1 - cos(pi t)) of workloads W1-W3 is period 2 s). Smooth for all t: no breakpoints.
    """

    type_name = "CosineRamp"
    summary = "q = offset + A (1 - cos(2 pi t / period)), with exact qd, qdd"
    params = {"amplitude": Param(units="rad", doc="A per joint (scalar or vector)"),
              "period": Param(units="s", doc="period of the cosine (> 0)"),
              "offset": Param(0.0, "rad", "q0 added to the ramp (the value at t = 0)")}
    width_params = ("amplitude", "period", "offset")
    output_kernel = staticmethod(cosine_ramp_output)

    def check_values(self, v):
        self.positive("period", v=v)

    def record(self, v):
        return PackedParams(self.packed(*self.width_params, v=v))


@njit(cache=True, error_model="numpy")
def sine_trajectory_kernel(t, P, q, qd, qdd):
    """q = offset + A sin(w t + phase), qd = A w cos(.), qdd = -A w^2 sin(.), w = 2 pi frequency;
    P (B, n, 4): amplitude, frequency, phase, offset."""
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            w = 2.0 * math.pi * P[b, i, 1]
            a = P[b, i, 0]
            arg = w * t + P[b, i, 2]
            s = math.sin(arg)
            q[b, i] = P[b, i, 3] + a * s
            qd[b, i] = a * w * math.cos(arg)
            qdd[b, i] = -a * w * w * s


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def sine_trajectory_output(t, xc, xd, u, y, p):
    sine_trajectory_kernel(t, p.packed, y[0], y[1], y[2])


@register
class SineTrajectory(Trajectory):
    """q = offset + amplitude sin(2 pi frequency t + phase), with its exact qd and qdd (frequency in
    Hz, phase in rad)."""

    type_name = "SineTrajectory"
    summary = "q = offset + A sin(2 pi f t + phase), with exact qd, qdd"
    params = {"amplitude": Param(1.0, "rad", "A per joint"),
              "frequency": Param(1.0, "Hz", "f per joint (>= 0)"),
              "phase": Param(0.0, "rad", "phase at t = 0"),
              "offset": Param(0.0, "rad", "mean value q0")}
    width_params = ("amplitude", "frequency", "phase", "offset")
    output_kernel = staticmethod(sine_trajectory_output)

    def check_values(self, v):
        if np.any(v.frequency < 0):
            raise ParameterError("frequency must be >= 0", block=self.name)

    def record(self, v):
        return PackedParams(self.packed(*self.width_params, v=v))


# ---- point to point -------------------------------------------------------------------------------

CUBIC, QUINTIC = 0, 1


@njit(cache=True, error_model="numpy")
def point_to_point_kernel(t, P, shape, q, qd, qdd):
    """Rest-to-rest motion q = q0 + (qf - q0) s(x), x = (t - t0) / (t_end - t0) in [0, 1), held at
    q0 before t0 and at qf from t_end on. shape 0: cubic s = 3 x^2 - 2 x^3 (zero end velocities);
    1: quintic (minimum jerk) s = 10 x^3 - 15 x^4 + 6 x^5 (zero end velocities and accelerations).
    The segment is chosen by comparing t with t0 and t_end themselves, the very numbers reported
    as breakpoints, so a solver stage on a breakpoint sees the segment that starts there.
    P (B, n, 4): q0, qf, t0, t_end."""
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            q0 = P[b, i, 0]
            qf = P[b, i, 1]
            t0 = P[b, i, 2]
            t_end = P[b, i, 3]
            if t < t0:
                q[b, i] = q0
                qd[b, i] = 0.0
                qdd[b, i] = 0.0
            elif t >= t_end:
                q[b, i] = qf
                qd[b, i] = 0.0
                qdd[b, i] = 0.0
            else:
                T = t_end - t0
                d = qf - q0
                x = (t - t0) / T
                if shape == 0:
                    s = x * x * (3.0 - 2.0 * x)
                    sd = 6.0 * x * (1.0 - x)
                    sdd = 6.0 - 12.0 * x
                else:
                    s = x * x * x * (10.0 + x * (-15.0 + 6.0 * x))
                    sd = 30.0 * x * x * (1.0 - x) * (1.0 - x)
                    sdd = x * (60.0 + x * (-180.0 + 120.0 * x))
                q[b, i] = q0 + d * s
                qd[b, i] = d * sd / T
                qdd[b, i] = d * sdd / (T * T)


PointToPointParams = namedtuple("PointToPointParams", "packed shape")
"""Point-to-point kernel's record: q0, qf, t0, t_end packed (B, n, 4); CUBIC or QUINTIC."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def point_to_point_output(t, xc, xd, u, y, p):
    point_to_point_kernel(t, p.packed, p.shape, y[0], y[1], y[2])


class PointToPoint(Trajectory):
    """Shared runtime of the polynomial rest-to-rest generators."""

    shape = QUINTIC
    output_kernel = staticmethod(point_to_point_output)

    def record(self, v):
        t_end = np.ascontiguousarray(self.end_row(v))
        return PointToPointParams(packed(self.row("q0", v), self.row("qf", v), self.row("t0", v),
                                         t_end), self.shape)

    def end_row(self, v) -> np.ndarray:
        """The end time of the motion per joint of the values v, (B, width) s."""
        raise NotImplementedError

    def breakpoints(self, t0, t1, p=None):
        # the start and end times as the kernel reads them: columns 2 and 3 of the packed rows
        return times_within(self.own_record(p).packed[:, :, 2:4], t0, t1)


@register
class Polynomial(PointToPoint):
    """Point to point from q0 at t0 to qf at tf by a polynomial in time, held outside [t0, tf].

    order 3: cubic, starts and ends at rest (qd = 0); qdd jumps at t0 and tf.
    order 5: quintic, also zero acceleration at both ends (the minimum-jerk profile).
    """

    type_name = "Polynomial"
    summary = "cubic or quintic rest-to-rest point-to-point motion over [t0, tf]"
    params = {"q0": Param(units="rad", doc="start position"),
              "qf": Param(units="rad", doc="final position"),
              "t0": Param(0.0, "s", "start time"),
              "tf": Param(units="s", doc="end time (> t0)"),
              "order": Param(5, "-", "3 (cubic) or 5 (quintic)", kind="int")}
    width_params = ("q0", "qf", "t0", "tf")

    def check_values(self, v):
        width = self.joints()
        if v.order not in (3, 5):
            raise ParameterError(f"order must be 3 or 5, got {v.order}", block=self.name)
        if np.any(self.param_as_row("tf", width, v) <= self.param_as_row("t0", width, v)):
            raise ParameterError("tf must be > t0", block=self.name)

    def setup(self):
        super().setup()
        self.shape = CUBIC if self.p.order == 3 else QUINTIC

    def end_row(self, v):
        return self.row("tf", v)


@register
class MinimumJerk(PointToPoint):
    """Minimum-jerk point to point (Flash and Hogan): q = q0 + (qf - q0)(10 s^3 - 15 s^4 + 6 s^5),
    s = (t - t0) / duration; rest with zero acceleration at both ends, held outside."""

    type_name = "MinimumJerk"
    summary = "minimum-jerk rest-to-rest motion (10 s^3 - 15 s^4 + 6 s^5)"
    params = {"q0": Param(units="rad", doc="start position"),
              "qf": Param(units="rad", doc="final position"),
              "t0": Param(0.0, "s", "start time"),
              "duration": Param(units="s", doc="motion time (> 0)")}
    width_params = ("q0", "qf", "t0", "duration")
    shape = QUINTIC

    def check_values(self, v):
        self.positive("duration", v=v)

    def end_row(self, v):
        return self.row("t0", v) + self.row("duration", v)


# ---- trapezoidal velocity ------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def trapezoidal_kernel(t, line, path, q, qd, qdd):
    """q = q0 + dq s(t) along the straight joint-space line, where the path coordinate s goes from
    0 to 1 with a trapezoidal speed: acceleration a_path from t_start to t_cruise, cruise at v_path
    until t_brake, deceleration until t_end (t_cruise = t_brake: triangular). Per member, path
    (B, 6): the four switching times t_start, t_cruise, t_brake, t_end (s), v_path (1/s), a_path
    (1/s^2); line (B, n, 2): q0, dq. Segments are chosen by comparing t with the switching times
    themselves (the breakpoints)."""
    for b in range(q.shape[0]):
        t_start = path[b, 0]
        t_cruise = path[b, 1]
        t_brake = path[b, 2]
        t_end = path[b, 3]
        v_path = path[b, 4]
        a = path[b, 5]
        if t < t_start:
            s, sd, sdd = 0.0, 0.0, 0.0
        elif t >= t_end:
            s, sd, sdd = 1.0, 0.0, 0.0
        elif t < t_cruise:
            tau = t - t_start
            s, sd, sdd = 0.5 * a * tau * tau, a * tau, a
        elif t < t_brake:
            ta = t_cruise - t_start
            s, sd, sdd = 0.5 * a * ta * ta + v_path * (t - t_cruise), v_path, 0.0
        else:
            r = t_end - t
            s, sd, sdd = 1.0 - 0.5 * a * r * r, a * r, -a
        for i in range(q.shape[1]):
            q[b, i] = line[b, i, 0] + line[b, i, 1] * s
            qd[b, i] = line[b, i, 1] * sd
            qdd[b, i] = line[b, i, 1] * sdd


TrapezoidalParams = namedtuple("TrapezoidalParams", "line path")
"""Trapezoidal kernel's record: line (B, n, 2) q0, dq; path (B, 6) switching times, v, a."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def trapezoidal_output(t, xc, xd, u, y, p):
    trapezoidal_kernel(t, p.line, p.path, y[0], y[1], y[2])


def path_timing(vs, as_, duration, t0, still, who, has_amax, names=("vmax", "amax")):
    """The trapezoidal profile of a path coordinate s from 0 to 1 (`trapezoidal_kernel`), per
    member: path (B, 6) the switching times t_start, t_cruise, t_brake, t_end (s), the cruise
    speed (1/s) and acceleration (1/s^2). vs and as_ (B,) are s's speed and acceleration limits
    (inf: none), duration (B,) or None for the shortest motion; `still` members do not move
    (duration 0). duration alone cruises at 1.5 times the mean speed (blends of duration / 3);
    with has_amax a duration accelerates at as_. ParameterError when a duration is too short for
    the limits (`who` needs more, the limits called `names` in the message)."""
    vs = np.array(vs, dtype=float)
    as_ = np.array(as_, dtype=float)
    vs[still] = 1.0
    as_[still] = 1.0
    if duration is None:
        triangular = vs * vs >= as_
        vs = np.where(triangular, np.sqrt(as_), vs)
        duration = np.where(triangular, 2.0 / vs, 1.0 / vs + vs / as_)
        duration[still] = 0.0
    else:
        duration = np.asarray(duration, dtype=float)
        if not has_amax:
            vs = 1.5 / duration
            as_ = 4.5 / duration ** 2
        else:
            disc = as_ * as_ * duration * duration - 4.0 * as_
            short = ~still & (disc < -1e-12 * as_ * as_ * duration * duration)
            if np.any(short):
                raise ParameterError(
                    f"duration {float(duration[short][0]):g} s is too short for {names[1]}: {who} "
                    f"needs {float(2.0 / np.sqrt(as_[short][0])):g} s")
            v_needed = 0.5 * (as_ * duration - np.sqrt(np.maximum(disc, 0.0)))
            if np.any(v_needed > vs * (1 + 1e-12)):
                raise ParameterError(f"duration is too short for {names[0]}")
            vs = v_needed
    t_acc = vs / as_
    t0 = np.asarray(t0, dtype=float)
    path = np.stack([t0, t0 + t_acc, t0 + duration - t_acc, t0 + duration, vs, as_], axis=-1)
    return np.ascontiguousarray(path, dtype=float)


@register
class Trapezoidal(Trajectory):
    """Trapezoidal velocity profile (linear segments with parabolic blends) from q0 to qf, starting
    at t0, every joint synchronised: all joints move along the straight line in joint space with one
    common path profile, so they start, cruise and stop together, timed by the slowest joint.

    Timing, one of:
      vmax and amax (per joint, > 0): the shortest motion with |qd_i| <= vmax_i and |qdd_i| <= amax_i;
          triangular (no cruise) when no joint can reach its vmax;
      duration and amax: that duration, accelerating at the largest rate every joint allows (error
          when it is shorter than the limits permit); with vmax too, the duration must respect it;
      duration alone: cruise at 1.5 times the mean speed (blends of duration / 3 each).
    """

    type_name = "Trapezoidal"
    summary = "trapezoidal-velocity point to point, joints synchronised to the slowest"
    params = {"q0": Param(units="rad", doc="start position"),
              "qf": Param(units="rad", doc="final position"),
              "vmax": Param(None, "rad/s", "speed limit per joint (> 0)"),
              "amax": Param(None, "rad/s^2", "acceleration limit per joint (> 0)"),
              "duration": Param(None, "s", "motion time (> 0; default: the shortest the limits allow)"),
              "t0": Param(0.0, "s", "start time (scalar)")}
    width_params = ("q0", "qf")
    output_kernel = staticmethod(trapezoidal_output)

    def check_values(self, v):
        self.joints()                       # q0 and qf of one length first
        if v.duration is None and (v.vmax is None or v.amax is None):
            raise ParameterError("give vmax and amax, or duration (with or without amax)",
                                 block=self.name)
        for key in ("vmax", "amax", "duration"):
            if getattr(v, key) is not None:
                self.positive(key, v=v)
                if key != "duration":
                    common_width(self, ("q0", "qf", key))
        if (v.duration is not None and v.duration.ndim > 1) or v.t0.ndim > 1:
            raise ParameterError("duration and t0 are scalars (the joints move together)",
                                 block=self.name)
        self.timing(v)                      # a duration too short for the limits

    def timing(self, v):
        """The motion of the values v: line (B, n, 2) q0 and dq, path (B, 6) the switching times,
        v_path and a_path (see trapezoidal_kernel), and the duration per member (s). Raises a
        ParameterError when a given duration is too short for the limits."""
        w = self.joints()

        def row(key):
            return np.ascontiguousarray(self.param_as_row(key, w, v))

        q0 = row("q0")
        dq = np.ascontiguousarray(row("qf") - q0)
        dist = np.abs(dq)
        moving = dist > 0
        safe = np.where(moving, dist, 1.0)
        # the path coordinate s in [0, 1]: its speed and acceleration limits from every joint's
        inf = np.full_like(dist, np.inf)
        vs = np.min(np.where(moving, self.param_as_row("vmax", w, v) / safe, inf), axis=1) \
            if v.vmax is not None else np.full(v.batch, np.inf)
        as_ = np.min(np.where(moving, self.param_as_row("amax", w, v) / safe, inf), axis=1) \
            if v.amax is not None else np.full(v.batch, np.inf)
        still = ~moving.any(axis=1)          # members where no joint moves: hold q0
        duration = None if v.duration is None else np.broadcast_to(v.duration, (v.batch,))
        try:
            path = path_timing(vs, as_, duration, np.broadcast_to(v.t0, (v.batch,)), still,
                               "the slowest joint", v.amax is not None)
        except ParameterError as err:
            raise err.located(block=self.name)
        line = np.stack([q0, dq], axis=-1)
        return (np.ascontiguousarray(line, dtype=float), path, path[:, 3] - path[:, 0])

    def record(self, v):
        line, path, _ = self.timing(v)
        return TrapezoidalParams(line, path)

    @property
    def motion_time(self) -> np.ndarray:
        """Duration of the motion per batch member of the block's own values (s)."""
        return self.timing(self.p)[2]

    def breakpoints(self, t0, t1, p=None):
        # the four switching times as the kernel reads them: columns 0..3 of the path
        return times_within(self.own_record(p).path[:, :4], t0, t1)


# ---- splines through via points ------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def spline_kernel(t, times, coefs, ends, q, qd, qdd):
    """Piecewise cubic through via points, held (at rest) outside [times[0], times[-1]].

    times (B, m) s; coefs (B, 4, m - 1, n), highest power first in (t - times[k]) as SciPy's
    CubicSpline; ends (B, 2, n) the first and last points.
    """
    m = times.shape[1]
    for b in range(q.shape[0]):
        if t <= times[b, 0] or t >= times[b, m - 1]:
            e = 0 if t <= times[b, 0] else 1
            for i in range(q.shape[1]):
                q[b, i] = ends[b, e, i]
                qd[b, i] = 0.0
                qdd[b, i] = 0.0
            continue
        k = np.searchsorted(times[b], t, side="right") - 1
        dt = t - times[b, k]
        for i in range(q.shape[1]):
            c0, c1, c2, c3 = coefs[b, 0, k, i], coefs[b, 1, k, i], coefs[b, 2, k, i], coefs[b, 3, k, i]
            q[b, i] = ((c0 * dt + c1) * dt + c2) * dt + c3
            qd[b, i] = (3.0 * c0 * dt + 2.0 * c1) * dt + c2
            qdd[b, i] = 6.0 * c0 * dt + 2.0 * c1


SplineParams = namedtuple("SplineParams", "times coefs ends")
"""ViaPoints kernel's record: times (B, m), spline coefs (B, 4, m - 1, n), ends (B, 2, n)."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def spline_output(t, xc, xd, u, y, p):
    spline_kernel(t, p.times, p.coefs, p.ends, y[0], y[1], y[2])


@register
class ViaPoints(Trajectory):
    """A smooth motion through via points: per joint the clamped cubic spline (zero velocity at the
    first and last point, continuous qdd everywhere in between) through points[k] at times[k],
    held at the first point before times[0] and at the last after times[-1].

    times: m strictly increasing times (s), m >= 2; points: m rows, one column per joint (a flat
    list of m values is one joint). The spline is computed once per run's values, before its first step.
    """

    type_name = "ViaPoints"
    summary = "clamped cubic spline through via points (zero end velocities)"
    params = {"times": Param(units="s", doc="via-point times, strictly increasing (m >= 2)"),
              "points": Param(units="rad", doc="positions: m rows (one per time) x n joints")}
    output_kernel = staticmethod(spline_output)

    def points_of(self, v) -> np.ndarray:
        """The points of the values v as (B, m, n), checked against the times' shape."""
        times, points = v.times, v.points
        if times.ndim != 2 or times.shape[1] < 2:
            raise ParameterError("times must be a list of at least 2 times", block=self.name)
        if points.ndim == 2:
            points = points[:, :, None]
        if points.ndim != 3 or points.shape[1] != times.shape[1]:
            raise ParameterError(f"points must have one row per time ({times.shape[1]} rows), got "
                                 f"shape {points.shape[1:]}", block=self.name)
        return points

    def check_values(self, v):
        self.points_of(v)
        if np.any(np.diff(v.times, axis=1) <= 0):
            raise ParameterError("times must be strictly increasing", block=self.name)

    def setup(self):
        self._width = self.points_of(self.p).shape[2]

    def record(self, v):
        from scipy.interpolate import CubicSpline   # only ViaPoints needs SciPy: keep it off start-up
        times, points = np.ascontiguousarray(v.times), self.points_of(v)
        m, n = times.shape[1], self._width
        coefs = np.empty((v.batch, 4, m - 1, n))
        for b in range(v.batch):
            coefs[b] = CubicSpline(times[b], points[b], bc_type="clamped", axis=0).c
        ends = np.stack([points[:, 0, :], points[:, -1, :]], axis=1)
        return SplineParams(times, coefs, np.ascontiguousarray(ends, dtype=float))

    def breakpoints(self, t0, t1, p=None):
        return times_within(self.own_record(p).times, t0, t1)


# ---- identification excitation -------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def fourier_kernel(t, rows, ab, q, qd, qdd):
    """Finite Fourier series per joint i (Swevers et al.), w_l = wf l:
        q   = q0 + sum_l a_il / w_l sin(w_l t) - b_il / w_l cos(w_l t)
        qd  = sum_l a_il cos(w_l t) + b_il sin(w_l t)
        qdd = sum_l w_l (b_il cos(w_l t) - a_il sin(w_l t))
    rows (B, n + 1): q0 (rad) per joint, then wf (rad/s); ab (B, n, L, 2) rad/s: a, b."""
    n = q.shape[1]
    for m in range(q.shape[0]):
        wf = rows[m, n]
        for i in range(n):
            pos = rows[m, i]
            vel = 0.0
            acc = 0.0
            for k in range(ab.shape[2]):
                w = wf * (k + 1)
                s = math.sin(w * t)
                c = math.cos(w * t)
                ak, bk = ab[m, i, k, 0], ab[m, i, k, 1]
                pos += (ak * s - bk * c) / w
                vel += ak * c + bk * s
                acc += w * (bk * c - ak * s)
            q[m, i] = pos
            qd[m, i] = vel
            qdd[m, i] = acc


FourierParams = namedtuple("FourierParams", "rows ab")
"""FourierSeries kernel's record: rows (B, n + 1) q0 then wf; ab (B, n, L, 2) rad/s."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def fourier_output(t, xc, xd, u, y, p):
    fourier_kernel(t, p.rows, p.ab, y[0], y[1], y[2])


@register
class FourierSeries(Trajectory):
    """The periodic excitation trajectory for dynamic identification (Swevers, Verdonck
    and De Schutter 2007): with wf = 2 pi frequency,

        q_i(t) = q0_i + sum_{l=1..L} [a_il / (wf l) sin(wf l t) - b_il / (wf l) cos(wf l t)]

    so a and b are velocity amplitudes (rad/s) and qd_i = sum_l a_il cos + b_il sin. The motion is
    periodic with period 1 / frequency; its mean is q0. It starts at rest at q0 when, per joint,
    sum_l b_il / l = 0 (q(0) = q0), sum_l a_il = 0 (qd(0) = 0) and sum_l l b_il = 0 (qdd(0) = 0), the
    constraints one imposes while optimising the coefficients for cond(Y).
    """

    type_name = "FourierSeries"
    summary = "finite Fourier series excitation trajectory (identification)"
    params = {"frequency": Param(units="Hz", doc="base frequency f (> 0), period 1 / f"),
              "a": Param(units="rad/s", doc="sine coefficients a_il: n joints x L harmonics"),
              "b": Param(units="rad/s", doc="cosine coefficients b_il: n joints x L harmonics"),
              "q0": Param(0.0, "rad", "offset (mean position) per joint")}
    output_kernel = staticmethod(fourier_output)

    def coefficients(self, v) -> tuple[np.ndarray, np.ndarray]:
        """a and b of the values v as (B, n, L) each, checked to have one shape."""
        a, b = v.a, v.b
        if a.ndim == 2:
            a = a[:, None, :]
        if b.ndim == 2:
            b = b[:, None, :]
        if a.ndim != 3 or a.shape != b.shape:
            raise ParameterError(f"a and b must be matrices of one shape (n joints x L harmonics), "
                                 f"got {v.a.shape[1:]} and {v.b.shape[1:]}",
                                 block=self.name)
        return a, b

    def check_values(self, v):
        width = self.coefficients(v)[0].shape[1]
        if v.frequency.ndim != 1:
            raise ParameterError("frequency must be a scalar", block=self.name)
        if np.any(v.frequency <= 0):
            raise ParameterError("frequency must be > 0", block=self.name)
        q0_width = self.param_width("q0")
        if q0_width not in (1, width):
            raise ParameterError(f"q0 has {q0_width} elements, a and b have {width} rows",
                                 block=self.name)

    def setup(self):
        self._width = self.coefficients(self.p)[0].shape[1]

    def record(self, v):
        a, b = self.coefficients(v)
        rows = np.concatenate([self.row("q0", v), (2.0 * np.pi * v.frequency)[:, None]], axis=1)
        return FourierParams(np.ascontiguousarray(rows, dtype=float),
                             np.ascontiguousarray(np.stack([a, b], axis=-1), dtype=float))
