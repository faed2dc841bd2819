"""The elastic-joint robot plant (Spong 1987): a rigid arm driven through a spring, a damper and
optionally a gear backlash per joint, with the motor's rotor as a second body per joint.

    link side:   M(q) qdd + c(q, qd) + G(q) = tau_s
    motor side:  B_m thetadd + tau_s = tau - tau_f(thetad)
    spring:      tau_s = K (theta - q) + D (thetad - qd)   (with backlash: `models.elastic`)

theta is the motor angle divided by the gear ratio (link-side units, rad), tau the motor torque
times the gear ratio (N m, as the JointActuator's output), B_m = N^2 Jm the reflected rotor
inertia per joint (kg m^2). Spong's assumption: the rotor's kinetic energy is that of its own
spin (the gyroscopic coupling between rotor and link is neglected), so M(q) is the rigid arm's
without any rotor inertia and B_m is constant. The link side is the Manipulator's rigid body
(`robot_kernels.manipulator_accelerations` on the robot's Model and Data), the transmission's
law is `models.elastic`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError
from ..models.elastic import (MOTOR_INERTIA, backlash_crossings, contact_mode, spring_torque)
from ..models.joint_law import _law_friction, neutral_law
from ._kernels import kernel_params, packed
from .base import Kernels, Param, register
from .robot import DYNAMICS_PARAMS, FRICTION_LAWS, FRICTION_PARAMS, ROBOT_PARAMS, RobotBlock, \
    friction_law
from .robot_kernels import manipulator_accelerations

ElasticParams = namedtuple(
    "ElasticParams", "model law data use_cf crba joint motor_law has_motor_friction backlash "
                     "link tau_s qdd no_modes fext resets")
"""The ElasticManipulator's record: the link side's Model, neutral law (B, n, N_LAW) and Data (as
the Manipulator's), use_cf (closed-form 2R), crba; joint (B, n, N_JOINT) the transmission's
coefficients (`models.elastic`); motor_law (B, n, N_LAW) the motor side's friction columns and
has_motor_friction; backlash (any joint has a dead band: modes and zero crossings); scratch:
link (B, 2 n) the link state [q | qd], tau_s and qdd (B, n), no_modes (B, 0), fext (B, 6) zeros;
resets (B, n, 4) the initial state q0, qd0, theta0, thetad0 (read by initial_state only)."""


@njit(cache=True, error_model="numpy")
def elastic_link_side(xc, xd, p):
    """p.tau_s (B, n) = the spring torques at the state xc = [q | qd | theta | thetad] under the
    held contact modes xd, and p.qdd = the link accelerations they give (the rigid arm's forward
    dynamics with tau_s as the joint torque)."""
    model, joint, link, tau_s = p.model, p.joint, p.link, p.tau_s
    n = model[0].shape[0]
    for b in range(xc.shape[0]):
        for i in range(n):
            link[b, i] = xc[b, i]
            link[b, n + i] = xc[b, n + i]
            mode = xd[b, i] if p.backlash else 0.0
            tau_s[b, i] = spring_torque(joint, b, i, xc[b, 2 * n + i] - xc[b, i],
                                        xc[b, 3 * n + i] - xc[b, n + i], mode)
    manipulator_accelerations(link, p.no_modes, tau_s, p.fext, model, p.law, p.data, p.use_cf,
                              p.crba, False, False, False, p.qdd)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def elastic_output(t, xc, xd, u, y, p):
    """q, qd, qdd, theta, thetad, tau_spring from the state alone (no direct feedthrough)."""
    elastic_link_side(xc, xd, p)
    n = p.tau_s.shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            y[0][b, i] = xc[b, i]
            y[1][b, i] = xc[b, n + i]
            y[2][b, i] = p.qdd[b, i]
            y[3][b, i] = xc[b, 2 * n + i]
            y[4][b, i] = xc[b, 3 * n + i]
            y[5][b, i] = p.tau_s[b, i]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def elastic_derivative(t, xc, xd, u, dxc, p):
    """dxc = [qd | qdd | thetad | thetadd], B_m thetadd = tau - tau_s - tau_f(thetad)."""
    elastic_link_side(xc, xd, p)
    tau = u[0]
    n = p.tau_s.shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            w = xc[b, 3 * n + i]
            net = tau[b, i] - p.tau_s[b, i]
            if p.has_motor_friction:
                net -= _law_friction(p.motor_law, b, i, w)
            dxc[b, i] = xc[b, n + i]
            dxc[b, n + i] = p.qdd[b, i]
            dxc[b, 2 * n + i] = w
            dxc[b, 3 * n + i] = net / p.joint[b, i, MOTOR_INERTIA]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def elastic_zero_crossings(t, xc, xd, u, g, p):
    backlash_crossings(xc, p.joint, p.tau_s.shape[1], g)


@njit(cache=True, error_model="numpy")
def elastic_mode_rows(xc, joint, modes):
    """modes (B, n) = the contact of every joint at the state xc (`models.elastic.contact_mode`)."""
    n = modes.shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            modes[b, i] = contact_mode(joint, b, i, xc[b, 2 * n + i] - xc[b, i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def elastic_modes(t, xc, xd, u, p):
    """The contact modes at a major step (held through solver stages and event location)."""
    elastic_mode_rows(xc, p.joint, xd)


@register
class ElasticManipulator(RobotBlock):
    """A robot arm with elastic joints (Spong 1987): each joint's motor drives its link through a
    spring K (N m/rad) and a damper D (N m s/rad), optionally through a gear backlash (a dead band
    of width 2 b, rad, where no torque passes). Continuous states q, qd (link side) and theta,
    thetad (motor side, the motor angle divided by the gear ratio); input tau, the motor torque
    referred to the link side (N m: the drive's N Kt iq).

    Equations (module docstring of blocksim/blocks/elastic.py and blocksim/models/elastic.py):
    M(q) qdd + c + G = tau_s, B_m thetadd + tau_s = tau - tau_f(thetad), tau_s = K (theta - q)
    + D (thetad - qd) outside the dead band, 0 inside it. M(q) is the rigid arm's without rotor
    inertia (the rotor is the motor side's body: B_m = N^2 Jm, by default from the robot file's Jm
    and G). Motor-side friction `friction` (the static laws of the Manipulator, on thetad; a
    Coulomb or static level needs friction_smoothing > 0). The backlash contact is a mode per
    joint (+1, -1 in contact forwards, backwards; 0 in the band), held between major steps; each
    contact change |theta - q| = b is a located zero crossing, where the force law switches.
    In the stiff limit (K to infinity, theta = q) the plant is the Manipulator with rotor
    inertia: (M(q) + B_m) qdd + c + G = tau - tau_f(qd).
    Outputs q (rad), qd (rad/s), qdd (rad/s^2), theta (rad), thetad (rad/s), tau_spring (N m, the
    torque the transmission passes to the link), all from the state (feeding them back is no
    loop). Discrete states: the contact modes (`contact[joint]`) when a joint has backlash.
    """

    type_name = "ElasticManipulator"
    summary = "elastic-joint arm (Spong): tau -> motor theta, link q, spring torque; backlash"
    params = {
        **ROBOT_PARAMS, **DYNAMICS_PARAMS,
        "rotor_inertia": Param(False, "-", "must stay false: the rotor is the motor side's body "
                               "(motor_inertia), not a term of the link side's M(q)", kind="bool"),
        "method": Param("aba", "-", "link-side forward dynamics: aba (O(n)) or crba (mass matrix "
                        "+ Cholesky)", kind="str", choices=("aba", "crba")),
        "stiffness": Param(units="N m/rad", doc="joint stiffness K per joint (> 0)"),
        "damping": Param(0.0, "N m s/rad", "joint (transmission) damping D per joint (>= 0)"),
        "motor_inertia": Param(None, "kg m^2", "reflected rotor inertia B_m = N^2 Jm per joint "
                               "(> 0; default: the robot file's G^2 Jm)"),
        "backlash": Param(0.0, "rad", "backlash half-width b per joint (>= 0): no torque passes "
                          "while |theta - q| <= b"),
        "q0": Param(0.0, "rad", "initial link angles (scalar or per joint)"),
        "qd0": Param(0.0, "rad/s", "initial link velocities"),
        "theta0": Param(None, "rad", "initial motor angles, link-side units (default q0)"),
        "thetad0": Param(None, "rad/s", "initial motor velocities, link-side units (default qd0)"),
        **FRICTION_PARAMS,
        "friction": Param("none", "-", "motor-side friction law on thetad: none | model (the robot "
                          "file's viscous and Coulomb) | coulomb_viscous | stribeck", kind="str",
                          choices=FRICTION_LAWS),
    }
    inputs = ("tau",)
    outputs = ("q", "qd", "qdd", "theta", "thetad", "tau_spring")
    port_units = {"theta": "rad", "thetad": "rad/s", "tau_spring": "N m"}
    sample = "continuous"
    direct_feedthrough = False
    uses_closed_form = True

    def check_values(self, v):
        if v.rotor_inertia:
            raise ParameterError("rotor_inertia: true would put the rotor into the link side's "
                                 "M(q) as well; the elastic plant keeps it on the motor side "
                                 "(motor_inertia): drop rotor_inertia", block=self.name)
        super().check_values(v)
        checks = (("stiffness", "> 0", lambda x: x <= 0), ("damping", ">= 0", lambda x: x < 0),
                  ("backlash", ">= 0", lambda x: x < 0), ("Fv", ">= 0", lambda x: x < 0),
                  ("Fc", ">= 0", lambda x: x < 0), ("vs", "> 0", lambda x: x <= 0),
                  ("delta", "> 0", lambda x: x <= 0))
        for key, rule, bad in checks:
            wrong = getattr(v, key)[bad(getattr(v, key))]
            if wrong.size:
                raise ParameterError(f"'{key}' must be {rule} ({self.params[key].units}), got "
                                     f"{float(wrong[0]):g}", block=self.name)
        for key in ("Fs", "friction_smoothing"):
            if getattr(v, key) is not None and np.any(getattr(v, key) < 0):
                raise ParameterError(f"'{key}' must be >= 0", block=self.name)
        if v.friction in ("none", "model") and (np.any(v.Fv != 0) or np.any(v.Fc != 0)
                                                 or v.Fs is not None):
            raise ParameterError(f"Fv, Fc and Fs set the coulomb_viscous and stribeck laws; with "
                                 f"friction: {v.friction} they have no effect", block=self.name)
        robot = self.robot_of(v)
        given = robot.Jm * robot.gear ** 2 if v.motor_inertia is None else v.motor_inertia
        if np.any(np.asarray(given) <= 0):
            raise ParameterError(
                f"motor_inertia must be > 0 (kg m^2) for every joint: give it, or Jm and G per "
                f"joint in robot '{robot.name}'s file", block=self.name)
        if hasattr(self, "model"):              # new values of a block already set up
            self._check_smooth(v)

    def setup(self):
        super().setup()
        self._check_smooth(self.p)

    def _check_smooth(self, v):
        """The motor side's friction law has no exact sign (the plant has no stiction mode)."""
        if friction_law(self, v)[2]:
            raise ParameterError("motor-side Coulomb or static friction needs friction_smoothing "
                                 "> 0 (the elastic plant has no stiction mode)", block=self.name)

    def motor_inertia_rows(self, v) -> np.ndarray:
        """B_m (B, n) of the values v (kg m^2): motor_inertia, or the robot file's G^2 Jm."""
        if v.motor_inertia is None:
            robot = self.robot_of(v)
            return np.ascontiguousarray(np.broadcast_to(robot.Jm * robot.gear ** 2,
                                                        (v.batch, self.n)))
        return self.rows("motor_inertia", v)

    def resolve_widths(self, in_widths):
        self.joint_width("tau", in_widths.get("tau"))
        return {o: self.n for o in self.outputs}

    def configure(self, in_widths, out_widths):
        for key in ("q0", "qd0", "stiffness", "damping", "backlash"):
            self.rows(key)                       # their shapes (the values are the record's)
        self._crba = self.p.method == "crba"
        self._backlash = bool(np.any(self.rows("backlash") > 0))
        self._has_motor_friction = friction_law(self, self.p)[1]
        n = self.n
        self.n_xc = 4 * n
        self.n_zc = 2 * n if self._backlash else 0
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = n if self._backlash else 0

    def _start(self, key, fallback, v):
        return self.rows(fallback if getattr(v, key) is None else key, v)

    def record(self, v):
        B, n = v.batch, self.n
        model, data = self.model_data(v)
        joint = packed(self.rows("stiffness", v), self.rows("damping", v),
                       self.motor_inertia_rows(v), self.rows("backlash", v))
        resets = packed(self.rows("q0", v), self.rows("qd0", v), self._start("theta0", "q0", v),
                        self._start("thetad0", "qd0", v))
        return kernel_params(ElasticParams, model=model, law=neutral_law(B, n), data=data,
                             use_cf=self._use_cf, crba=self._crba, joint=joint,
                             motor_law=friction_law(self, v)[0],
                             has_motor_friction=self._has_motor_friction, backlash=self._backlash,
                             link=np.zeros((B, 2 * n)), tau_s=np.zeros((B, n)),
                             qdd=np.zeros((B, n)), no_modes=np.zeros((B, 0)),
                             fext=np.zeros((B, 6)), resets=resets)

    def state_names(self):
        names = self.model.joint_names
        xc = [f"{s}[{j}]" for s in ("q", "qd", "theta", "thetad") for j in names]
        return xc, [f"contact[{j}]" for j in names] if self.n_modes else []

    def initial_state(self, xc, xd, p=None):
        """q0, qd0, theta0, thetad0 of the run's record p (None: the block's own); the contact
        modes of that state (the first major step sets them again)."""
        p = self.own_record(p)
        for k in range(4):
            xc[:, k * self.n:(k + 1) * self.n] = p.resets[:, :, k]
        if self.n_modes:
            elastic_mode_rows(xc, p.joint, xd)

    def kernels(self):
        return Kernels(output=elastic_output, derivative=elastic_derivative,
                       zero_crossings=elastic_zero_crossings if self.n_zc else None,
                       modes=elastic_modes if self.n_modes else None)
