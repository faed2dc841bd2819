"""Tool-space moves and their joint motion: a straight line or a circular arc of the tool origin
with the orientation interpolated by slerp, resolved into joint angles on one inverse-kinematics
branch, with the joint velocities and accelerations from the Jacobian.

Conventions: base frame, m, rad, s. A move starts at the tool pose of a joint vector q0 and runs
along a path parameter s in [0, 1] (its time profile s(t), ds/dt, d2s/dt2 is the caller's):
- line: p(s) = p0 + s (p1 - p0);
- circle: p(s) = c + Rot(axis, s angle) (p0 - c), about the unit `axis` through the centre c;
- orientation: R(s) = R0 exp(s [k theta]), the slerp from R0 to R1 (k theta the rotation vector of
  R0^T R1); its angular velocity R0 k theta ds/dt is along a fixed direction.
Joint motion (six joints): q(s) by Newton's method on the pose error from the previous node's
prediction, so it stays on q0's branch; qd = J^-1 [v; w]; qdd = J^-1 ([a; alpha] - Jdot qd), with
Jdot qd the tool's acceleration at qdd = 0 (`bias_acceleration`). The motion is refused, naming
the time, where it comes within the given clearances of a singularity (`singularities`,
`arm_geometry`), changes branch, leaves the joint limits or the arm's reach.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from . import arm_geometry as ag
from . import kinematics as kin
from .ik_solutions import pose_error
from .subproblems import rotation

__all__ = ["ToolPath", "PathError", "bias_acceleration", "joint_motion"]

#: Newton iterations per node at most, and the pose error (m, rad) each node must reach.
NEWTON_STEPS = 8
NODE_TOL = 1e-13


class PathError(ParameterError):
    """A tool move that cannot be followed on its branch (singularity, branch change, limits)."""


@dataclass(frozen=True, eq=False)
class ToolPath:
    """A tool move from the pose T0 (4x4): kind 'line' (to `end`, m) or 'circle' (about `centre`
    (m) and the unit `axis` by `angle` (rad)), the orientation from T0's to R1 (3x3) by slerp."""

    T0: np.ndarray
    kind: str
    end: np.ndarray | None = None
    centre: np.ndarray | None = None
    axis: np.ndarray | None = None
    angle: float = 0.0
    R1: np.ndarray | None = None

    @property
    def turn(self):
        """The orientation's rotation vector over the whole move, base frame (rad)."""
        R0 = self.T0[:3, :3]
        R1 = R0 if self.R1 is None else self.R1
        return R0 @ kin.rotation_vector(R0.T @ R1)

    def length(self):
        """The tool origin's path length (m)."""
        if self.kind == "line":
            return float(np.linalg.norm(self.end - self.T0[:3, 3]))
        r = self.T0[:3, 3] - self.centre
        radius = float(np.linalg.norm(r - self.axis * float(self.axis @ r)))
        return radius * abs(self.angle)

    def at(self, s):
        """(pose 4x4, dp/ds (3,), d2p/ds2 (3,), dphi/ds (3,)) at path parameter s; dphi/ds is the
        angular velocity per unit ds/dt (constant)."""
        p0 = self.T0[:3, 3]
        if self.kind == "line":
            dp = self.end - p0
            p, ddp = p0 + s * dp, np.zeros(3)
        else:
            R = rotation(self.axis, s * self.angle)
            r = R @ (p0 - self.centre)
            p = self.centre + r
            dp = self.angle * np.cross(self.axis, r)
            ddp = self.angle * np.cross(self.axis, dp)
        turn = self.turn
        norm = float(np.linalg.norm(turn))
        Rs = rotation(turn / norm, s * norm) if norm > 0.0 else np.eye(3)
        T = np.eye(4)
        T[:3, :3] = Rs @ self.T0[:3, :3]
        T[:3, 3] = p
        return T, dp, ddp, turn


def bias_acceleration(model, q, qd):
    """Jdot(q, qd) qd (6,): the tool origin's linear and the tool's angular acceleration (m/s^2,
    rad/s^2, base frame) at joint velocity qd and zero joint acceleration
    (`kinematics.bias_acceleration_into`)."""
    out = np.empty((1, 6))
    kin.bias_acceleration_into(model.arrays[0], model.arrays[1], model.arrays[4],
                               np.ascontiguousarray(np.asarray(q, dtype=float)[None, :]),
                               np.ascontiguousarray(np.asarray(qd, dtype=float)[None, :]), out)
    return out[0]


def _solve(J, b, t):
    try:
        return np.linalg.solve(J, b)
    except np.linalg.LinAlgError:
        raise PathError(f"the tool path meets a singularity at {_when(t)}: the Jacobian is "
                        "singular there") from None


def _newton(model, target, q, t):
    for _ in range(NEWTON_STEPS):
        e = pose_error(model, target, q)
        if float(np.linalg.norm(e)) < NODE_TOL:
            return q, True
        q = q + _solve(model.jacobian(q), e, t)
    return q, float(np.linalg.norm(pose_error(model, target, q))) < NODE_TOL


def _when(t):
    return f"t = {t:.6g} s"


def joint_motion(model, q0, path, times, s, sd, sdd, clearance):
    """(q, qd, qdd), each (N, 6), of the move `path` from q0 at the node times (N,) with path
    parameter s, sd, sdd there. clearance: {'sigma_min': smallest singular value of J, and for a
    spherical-wrist arm 'shoulder' (m), 'elbow', 'wrist' (`arm_geometry` measures)}; the move
    is refused (PathError naming the time) where it comes closer, changes branch, leaves the joint
    limits or the arm's reach."""
    if model.n != 6:
        raise PathError(f"tool moves need a six-joint arm (a full pose fixes six joint "
                        f"variables); robot '{model.name}' has {model.n}")
    N = times.shape[0]
    q = np.empty((N, 6))
    qd = np.empty((N, 6))
    qdd = np.empty((N, 6))
    arm = model.wrist_arm
    start = None if arm is None else ag.labels(arm, *ag.posture(arm, model, q0))
    qk = np.asarray(q0, dtype=float)
    before = None
    for k in range(N):
        T, dp, ddp, turn = path.at(float(s[k]))
        if k > 0:
            h = times[k] - times[k - 1]
            qk = q[k - 1] + qd[k - 1] * h + 0.5 * qdd[k - 1] * h * h
        qk, ok = _newton(model, T, qk, times[k])
        if not ok:
            raise PathError(f"the tool path leaves the arm's reach at {_when(times[k])}: inverse "
                            f"kinematics on the branch of q0 does not reach the pose there")
        if arm is not None:
            before = _check_posture(arm, model, qk, start, clearance, times[k], before)
        J = model.jacobian(qk)
        smin = model.smallest_singular_value(qk)
        if smin < clearance["sigma_min"]:
            raise PathError(f"the tool path comes within {clearance['sigma_min']:g} of a "
                            f"singularity at {_when(times[k])} (smallest singular value of the "
                            f"Jacobian {smin:.3g})")
        outside = (qk < model.q_lower - 1e-12) | (qk > model.q_upper + 1e-12)
        if np.any(outside):
            i = int(np.argmax(outside))
            raise PathError(f"joint {model.joint_names[i]} leaves its limits [{model.q_lower[i]:.6g}, "
                            f"{model.q_upper[i]:.6g}] rad at {_when(times[k])} (q = {qk[i]:.6g})")
        twist = np.concatenate([dp * sd[k], turn * sd[k]])
        q[k] = qk
        qd[k] = _solve(J, twist, times[k])
        acc = np.concatenate([ddp * sd[k] ** 2 + dp * sdd[k], turn * sdd[k]])
        qdd[k] = _solve(J, acc - bias_acceleration(model, qk, qd[k]), times[k])
    return q, qd, qdd


_NAMES = {"shoulder": ("shoulder", "the wrist centre's distance from the plane through axis 1 "
                       "parallel to axis 2", "m"),
          "elbow": ("elbow", "|sin| of the elbow angle", ""),
          "wrist": ("wrist", "|sin| of the angle between axes 4 and 6", "")}


def _signed(arm, measures):
    """The posture quantities whose signs are the labels (`arm_geometry.labels`)."""
    reach, elbow, wrist = measures
    return reach * arm.front, reach * elbow, wrist


def _check_posture(arm, model, q, start, clearance, t, before):
    """Refuse q at time t (s) near a singularity or off the start's branch; returns (t, signed
    posture) for the next node. before: the previous node's, or None at the first. A branch
    change is timed where the changed quantity passes through zero, linear between the nodes."""
    measures = ag.posture(arm, model, q)
    for key, value in zip(("shoulder", "elbow", "wrist"), measures):
        limit = clearance[key]
        if abs(value) < limit:
            name, what, unit = _NAMES[key]
            raise PathError(f"the tool path reaches the {name} singularity at {_when(t)}: "
                            f"{what} is {abs(value):.3g}{' ' + unit if unit else ''}, below the "
                            f"clearance {limit:g}")
    labels = ag.labels(arm, *measures)
    signed = _signed(arm, measures)
    for i, (key, a, b) in enumerate(zip(("shoulder", "elbow", "wrist"), start, labels)):
        if a != b:
            where = _when(t)
            if before is not None:
                t0, m0 = before[0], before[1][i]
                m1 = signed[i]
                crossing = t0 + (t - t0) * m0 / (m0 - m1) if m0 != m1 else t
                where = f"t = {crossing:.6g} s (between the nodes at {t0:.6g} and {t:.6g} s)"
            raise PathError(f"the tool path changes the {key} branch from '{a}' to '{b}' at "
                            f"{where}")
    return t, signed
