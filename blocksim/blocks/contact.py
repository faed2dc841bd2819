"""Contact and interaction-control blocks: a plane wall that turns the tool's pose and twist into a
wrench, the tool twist J(q) qd, joint-space and Cartesian impedance control and admittance control.

Conventions (those of the robot blocks, `robot`): SI units; every vector in the robot's base frame.
A pose is 12 values (tool position (m), then its rotation matrix row-major, as the Manipulator's and
ForwardKinematics' `pose`); a twist 6 values [v (m/s); w (rad/s)] (the tool origin's linear and the
tool's angular velocity); a wrench 6 values [f (N); m (N m)], exerted by the environment on the
tool, moment about the tool origin: the Manipulator's `f_ext`, which enters its dynamics as
J(q)^T f_ext. The physics is in `models.contact`, the kernels in `blocks.contact_kernels`.
"""
from __future__ import annotations

import numpy as np

from ..errors import ParameterError, WidthError
from ..models.joint_law import neutral_law
from ._kernels import kernel_params
from .base import Block, Kernels, Param, register
from .contact_kernels import (AdmittanceParams, CartesianImpedanceParams, ContactParams,
                              JointImpedanceParams, TwistParams, W_JAC, admittance_derivative,
                              admittance_output, cartesian_impedance_output, contact_modes,
                              contact_output, contact_zero_crossings, joint_impedance_output,
                              tool_twist_output)
from .robot import DYNAMICS_PARAMS, ROBOT_PARAMS, RobotBlock

POSE_UNITS = "m, -"
TWIST_UNITS = "m/s, rad/s"
WRENCH_UNITS = "N, N m"


def _width(block: Block, port: str, width, need: int) -> None:
    if width is not None and width != need:
        raise WidthError(f"input has width {width}, needs {need}", block=block.name, port=port)


def _vector(block: Block, v, key: str, size: int) -> np.ndarray:
    """Parameter `key` of the values v as (B, size): a scalar repeated, or `size` values."""
    value = getattr(v, key).reshape(v.batch, -1)
    if value.shape[1] not in (1, size):
        raise ParameterError(f"'{key}' needs 1 or {size} values, got {value.shape[1]}",
                             block=block.name)
    return np.ascontiguousarray(np.broadcast_to(value, (v.batch, size)))


def _not_negative(block: Block, v, keys, strict=()) -> None:
    for key in keys:
        value = getattr(v, key)
        if np.any(value < 0) or (key in strict and np.any(value == 0)):
            raise ParameterError(f"'{key}' must be {'> 0' if key in strict else '>= 0'}, got "
                                 f"{value.reshape(v.batch, -1)[0].tolist()}", block=block.name)


CONTACT_LAW = {
    "stiffness": Param(units="N/m", doc="contact stiffness k (> 0)"),
    "damping": Param(0.0, "N s/m", "contact damping d (>= 0)"),
}


class _Contact(Block):
    """An obstacle as a one-sided spring-damper (models.contact): tool pose and twist in, the
    wrench on the tool out, its region (free, pressing, clipped) a held mode with one crossing
    function per member. Subclasses give the geometry's parameters and record."""

    family = "interaction"
    inputs = ("pose", "twist")
    outputs = ("wrench", "penetration", "force")
    sample = "continuous"
    port_units = {"pose": POSE_UNITS, "twist": TWIST_UNITS, "wrench": WRENCH_UNITS,
                  "penetration": "m", "force": "N"}

    def check_values(self, v):
        _not_negative(self, v, ("stiffness", "damping"), strict=("stiffness",))

    def check_point(self, v, key: str) -> np.ndarray:
        """A 3-vector parameter of the values v as (B, 3), its length checked."""
        value = getattr(v, key).reshape(v.batch, -1)
        if value.shape[1] != 3:
            raise ParameterError(f"'{key}' needs 3 values (x, y, z in the base frame), got "
                                 f"{value.shape[1]}", block=self.name)
        return np.ascontiguousarray(value)

    def resolve_widths(self, in_widths):
        _width(self, "pose", in_widths.get("pose"), 12)
        _width(self, "twist", in_widths.get("twist"), 6)
        return {"wrench": 6, "penetration": 1, "force": 1}

    def configure(self, in_widths, out_widths):
        self.n_xd = self.n_modes = 1
        self.n_zc = 1
        self.zc_directions = np.zeros(1, dtype=np.int64)

    def law_record(self, v, point, normal, radius, sphere):
        return kernel_params(ContactParams, point=point, normal=normal, radius=radius,
                             k=self.param_as_row("stiffness", 1, v),
                             d=self.param_as_row("damping", 1, v), sphere=sphere)

    def state_names(self):
        return [], ["mode (0 free, 1 pressing, 2 clipped)"]

    def kernels(self):
        return Kernels(output=contact_output, modes=contact_modes,
                       zero_crossings=contact_zero_crossings)


@register
class ContactWall(_Contact):
    """A plane wall as a one-sided spring-damper: the wrench it exerts on the tool.

    The plane passes through `point` with outward normal n = normal / |normal| (from the wall into
    free space). Penetration delta = (point - p) . n (m, > 0 inside the wall) and its rate
    delta' = -v . n (m/s), from the tool origin's position p (`pose`) and velocity v (`twist`,
    e.g. ToolTwist's J(q) qd). Normal force (N), Kelvin-Voigt clipped at zero:

        F = max(0, stiffness delta + damping delta')  where delta > 0, else 0

    A wall only pushes: the clip keeps the damper from pulling the tool back as it separates, so
    F >= 0 always (F jumps to damping v_a on touching at approach speed v_a). Output `wrench`
    = [F n; 0, 0, 0] in the base frame, at the tool origin (the contact point): the Manipulator's
    `f_ext` convention. The region (free, pressing, clipped) is a mode held through solver stages
    (`Block.modes`); one crossing function per member locates each switch: the penetration
    while free (contact onset), the force while pressing, min(delta, -(k delta + d delta')) while
    clipped. An approach that presses and stays fires one event, at the onset.
    """

    type_name = "ContactWall"
    summary = "plane wall, one-sided spring-damper: tool pose, twist -> wrench (base frame)"
    params = {
        "point": Param(units="m", doc="a point on the wall's plane (3 values, base frame)"),
        "normal": Param(units="-", doc="the plane's outward normal (3 values, base frame; any "
                        "nonzero length: it is normalised)"),
        **CONTACT_LAW,
    }

    def check_values(self, v):
        super().check_values(v)
        self.check_point(v, "point")
        normal = self.check_point(v, "normal")
        if np.any(np.linalg.norm(normal, axis=1) == 0):
            raise ParameterError("'normal' must be a nonzero vector (the wall's outward "
                                 "direction), got [0, 0, 0]", block=self.name)

    def record(self, v):
        normal = self.check_point(v, "normal")
        return self.law_record(v, self.check_point(v, "point"),
                               normal / np.linalg.norm(normal, axis=1)[:, None],
                               np.zeros((v.batch, 1)), False)


@register
class ContactSphere(_Contact):
    """A ball obstacle as a one-sided spring-damper: the wrench it exerts on the tool.

    Penetration delta = radius - |p - centre| (m, > 0 inside the ball) along the ball's outward
    normal at the point nearest the tool origin, n = (p - centre) / |p - centre|, its rate
    delta' = -v . n (m/s); the force law, modes and crossings are ContactWall's:
    F = max(0, stiffness delta + damping delta') inside, 0 outside, and `wrench` = [F n; 0, 0, 0]
    in the base frame at the tool origin (the Manipulator's `f_ext` convention). A small radius
    makes a point obstacle."""

    type_name = "ContactSphere"
    summary = "ball obstacle, one-sided spring-damper: tool pose, twist -> wrench (base frame)"
    params = {
        "centre": Param(units="m", doc="the ball's centre (3 values, base frame)"),
        "radius": Param(units="m", doc="the ball's radius (> 0)"),
        **CONTACT_LAW,
    }

    def check_values(self, v):
        super().check_values(v)
        self.check_point(v, "centre")
        _not_negative(self, v, ("radius",), strict=("radius",))

    def record(self, v):
        return self.law_record(v, self.check_point(v, "centre"), np.zeros((v.batch, 3)),
                               self.param_as_row("radius", 1, v), True)


@register
class ToolTwist(RobotBlock):
    """The tool's twist J(q) qd: [v (m/s); w (rad/s)], the tool origin's linear and the tool's
    angular velocity in the base frame (J the Jacobian block's geometric Jacobian)."""

    type_name = "ToolTwist"
    summary = "q, qd -> tool twist J(q) qd (base frame)"
    family = "interaction"
    inputs = ("q", "qd")
    joint_angle_inputs = ("q",)
    outputs = ("twist",)
    port_units = {"twist": TWIST_UNITS}

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {"twist": 6}

    def record(self, v):
        model, data = self.model_data(v)
        return kernel_params(TwistParams, model=model, data=data, jac=np.zeros((v.batch, 6 * self.n)))

    def kernels(self):
        return Kernels(output=tool_twist_output)


class _Impedance(RobotBlock):
    """A model-based controller: its robot model gives G(q) and, with model_terms, more."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS}
    uses_closed_form = True

    def structure(self, v):
        return self.closed_form_of(v), bool(v.model_terms)


@register
class JointImpedance(_Impedance):
    """Joint-space impedance control (Hogan 1985): a spring K and damper D per joint about the
    reference, with gravity compensated by the block's robot model,

        tau = K (q_d - q) + D (qd_d - qd) + G(q)                       (N m)

    and with `model_terms` the model's inertial terms too, tau = K e + D e' + M(q) qdd_d
    + c(q, qd) + G(q) (an exact model then leaves M(q) e'' + D e' + K e = -J^T f_ext, e = q_d - q,
    the Manipulator's f_ext). qd_d and qdd_d
    may stay unwired (zero). Every input feeds the output directly."""

    type_name = "JointImpedance"
    summary = "tau = K (q_d - q) + D (qd_d - qd) + G(q) [+ M qdd_d + c]: joint impedance"
    family = "interaction"
    params = {**_Impedance.params,
              "K": Param(units="N m/rad", doc="joint stiffness per joint (>= 0)"),
              "D": Param(units="N m s/rad", doc="joint damping per joint (>= 0)"),
              "model_terms": Param(False, "-", "add M(q) qdd_d + c(q, qd) to G(q)", kind="bool")}
    inputs = ("q_d", "qd_d", "qdd_d", "q", "qd")
    optional_inputs = ("qd_d", "qdd_d")
    joint_angle_inputs = ("q_d",)
    outputs = ("tau",)

    def check_values(self, v):
        super().check_values(v)
        _not_negative(self, v, ("K", "D"))

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {"tau": self.n}

    def configure(self, in_widths, out_widths):
        for key in ("K", "D"):
            self.rows(key)                       # their shapes (the values are the record's)

    def record(self, v):
        model, data = self.model_data(v)
        return kernel_params(JointImpedanceParams, model=model, law=neutral_law(v.batch, self.n),
                             data=data, use_cf=self._use_cf, K=self.rows("K", v),
                             D=self.rows("D", v), model_terms=bool(v.model_terms))

    def kernels(self):
        return Kernels(output=joint_impedance_output)


def _gain_matrix(block: Block, v, key: str) -> np.ndarray:
    """A 6 x 6 gain per member from 6 diagonal values or a full 6 x 6 matrix (36 values), checked:
    symmetric part positive semi-definite."""
    value = getattr(v, key)
    shape = value.shape[1:]
    if shape in ((), (1,), (6,)):
        out = np.zeros((v.batch, 6, 6))
        diag = np.broadcast_to(value.reshape(v.batch, -1), (v.batch, 6))
        for r in range(6):
            out[:, r, r] = diag[:, r]
    elif shape == (6, 6):
        out = np.array(value, dtype=float)
    else:
        raise ParameterError(f"'{key}' needs 6 values (the diagonal: x, y, z, rx, ry, rz) or a "
                             f"6 x 6 matrix, got shape {list(shape)}", block=block.name)
    for b in range(v.batch):
        if np.linalg.eigvalsh(0.5 * (out[b] + out[b].T)).min() < -1e-12 * max(1.0, np.abs(out[b]).max()):
            raise ParameterError(f"'{key}' must be positive semi-definite (no negative stiffness "
                                 f"or damping), got {np.diag(out[b]).tolist()} on its diagonal",
                                 block=block.name)
    return np.ascontiguousarray(out)


@register
class CartesianImpedance(_Impedance):
    """Cartesian impedance control (Hogan 1985; Siciliano et al. 2009, ch. 9): a spring K and
    damper D at the tool about the reference pose, mapped to the joints by J(q)^T, with gravity
    compensated by the block's robot model,

        e      = [p_d - p; rotation vector of R_d R^T]                 (m; rad)
        wrench = K e + D (twist_d - J(q) qd)                           (N; N m)
        tau    = J(q)^T wrench + G(q)                                  (N m)

    and with `model_terms` also c(q, qd) (Coriolis and centrifugal). Frames: e, the twists and
    `wrench` (an output: the wrench the controller applies at the tool origin) are in the base
    frame; rows and columns of K and D are [x, y, z, rx, ry, rz]. At rest against an environment
    wrench f_ext (an exact model, J of full rank) K e = -f_ext: a stiffness k in series with an
    environment of stiffness k_env holds the force k k_env / (k + k_env) times the commanded
    penetration. pose_d is 12 values (as ForwardKinematics' pose), twist_d 6 (unwired: zero).
    Every input feeds the outputs directly."""

    type_name = "CartesianImpedance"
    summary = "tau = J^T (K e + D e') + G(q) [+ c]: Cartesian impedance at the tool"
    family = "interaction"
    params = {**_Impedance.params,
              "K": Param(units="N/m, N m/rad", doc="stiffness: 6 diagonal values [x, y, z, rx, ry, "
                         "rz] or a 6 x 6 matrix (positive semi-definite)"),
              "D": Param(units="N s/m, N m s/rad", doc="damping: 6 diagonal values or a 6 x 6 "
                         "matrix (positive semi-definite)"),
              "model_terms": Param(False, "-", "add c(q, qd) (Coriolis, centrifugal) to G(q)",
                                   kind="bool")}
    inputs = ("pose_d", "twist_d", "q", "qd")
    optional_inputs = ("twist_d",)
    outputs = ("tau", "wrench")
    port_units = {"pose_d": POSE_UNITS, "twist_d": TWIST_UNITS, "wrench": WRENCH_UNITS}

    def check_values(self, v):
        super().check_values(v)
        for key in ("K", "D"):
            _gain_matrix(self, v, key)

    def resolve_widths(self, in_widths):
        _width(self, "pose_d", in_widths.get("pose_d"), 12)
        _width(self, "twist_d", in_widths.get("twist_d"), 6)
        for port in ("q", "qd"):
            self.joint_width(port, in_widths.get(port))
        return {"tau": self.n, "wrench": 6}

    def unwired_width(self, port):
        return 6 if port == "twist_d" else super().unwired_width(port)

    def record(self, v):
        model, data = self.model_data(v)
        return kernel_params(CartesianImpedanceParams, model=model,
                             law=neutral_law(v.batch, self.n), data=data, use_cf=self._use_cf,
                             K=_gain_matrix(self, v, "K"), D=_gain_matrix(self, v, "D"),
                             model_terms=bool(v.model_terms),
                             work=np.zeros((v.batch, W_JAC + 6 * self.n)))

    def kernels(self):
        return Kernels(output=cartesian_impedance_output)


@register
class Admittance(Block):
    """Admittance control: the measured wrench shapes the motion reference. Per Cartesian axis
    j = x, y, z of the base frame, the reference's offset x_j (m) obeys

        M_j x_j'' + D_j x_j' + K_j x_j = f_j - f_ref_j                 (N)

    from x = x' = 0, with f the force part of `wrench` (exerted by the environment on the tool,
    as ContactWall's output and the Manipulator's f_ext) and f_ref (3, N) the force the
    environment should exert at rest. Outputs the modified reference for an inner position or
    impedance loop: `pose` = pose_0 with its position moved by x (the rotation passed through),
    `twist` = twist_0 + [x'; 0], and `offset` x. With K = 0 the offset moves until f = f_ref:
    the settled contact force equals the set force whatever the environment's stiffness. To
    press with a force F along a wall's outward normal n, f_ref = F n. Only the states feed the
    wrench through, so the loop through the environment is no algebraic loop."""

    type_name = "Admittance"
    summary = "M x'' + D x' + K x = f - f_ref per axis: force -> motion reference"
    family = "interaction"
    params = {"M": Param(units="kg", doc="virtual mass per axis (x, y, z; > 0)"),
              "D": Param(units="N s/m", doc="virtual damping per axis (>= 0)"),
              "K": Param(0.0, "N/m", "virtual stiffness per axis (>= 0; 0 holds the set force)")}
    inputs = ("pose_0", "twist_0", "wrench", "f_ref")
    optional_inputs = ("twist_0",)
    outputs = ("pose", "twist", "offset")
    sample = "continuous"
    port_units = {"pose_0": POSE_UNITS, "twist_0": TWIST_UNITS, "wrench": WRENCH_UNITS,
                  "f_ref": "N", "pose": POSE_UNITS, "twist": TWIST_UNITS, "offset": "m"}

    def check_values(self, v):
        _not_negative(self, v, ("M", "D", "K"), strict=("M",))
        for key in ("M", "D", "K"):
            _vector(self, v, key, 3)

    def feedthrough(self):
        return {("pose_0", "pose"), ("twist_0", "twist")}

    def resolve_widths(self, in_widths):
        for port, need in (("pose_0", 12), ("twist_0", 6), ("wrench", 6), ("f_ref", 3)):
            _width(self, port, in_widths.get(port), need)
        return {"pose": 12, "twist": 6, "offset": 3}

    def unwired_width(self, port):
        return 6 if port == "twist_0" else super().unwired_width(port)

    def configure(self, in_widths, out_widths):
        self.n_xc = 6

    def record(self, v):
        return kernel_params(AdmittanceParams, m=_vector(self, v, "M", 3),
                             d=_vector(self, v, "D", 3), k=_vector(self, v, "K", 3))

    def state_names(self):
        return [f"x[{a}]" for a in "xyz"] + [f"xd[{a}]" for a in "xyz"], []

    def kernels(self):
        return Kernels(output=admittance_output, derivative=admittance_derivative)
