"""Robot kinematics blocks: Singularity, how close the arm is to a singularity, per batch member,
from q.

The measures are the models' (`models.singularities` for the Jacobian's, `models.arm_geometry`
for the named singularities of a spherical-wrist arm); this module maps the block's ports and
parameter record onto them. Units: m for the shoulder distance, dimensionless sines for the elbow
and wrist; the Jacobian measures in the units of the rows chosen by `part`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..models import singularities as sg
from ..models.arm_geometry import posture_of
from ..models.kinematics import jacobian
from ..models.model_data import member, poses, xtree
from ._kernels import kernel_params
from .base import Kernels, Param, register
from .robot import RobotBlock

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


@njit(cache=True, error_model="numpy", inline="always")
def singularity_output(t, xc, xd, u, y, p):
    singularity_rows(u[0], p.model, p.data, p.J, p.A, p.sv, p.r0, p.r1, y[0], y[1], y[2])


@njit(cache=True, error_model="numpy", inline="always")
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


__all__ = ["Singularity", "SingularityParams"]
