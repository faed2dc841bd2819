"""Robot blocks: the Manipulator plant and the model-based blocks built on RobotModel (inverse dynamics,
gravity compensation, computed torque, forward kinematics, Jacobian, energy).

Conventions shared by every block here
- SI units: rad (m for prismatic joints), rad/s, rad/s^2, N m (N), kg, m, J.
- Frames: the robot's base frame. Gravity is the robot file's vector (3-D presets: -9.81 m/s^2 along
  base z; the planar presets `two_link` and `two_link_point_mass` use -y with angle 0 = link
  horizontal along +x) unless the block's `gravity` overrides it.
- Joint torque balance of the plant:  M(q) qdd + c(q, qd) + G(q) = tau_sat - tau_f - d qd
  - k (q - q_rest) + J(q)^T f_ext, with tau_sat the input torque saturated to +-tau_max and tau_f
  the joint friction: a static map of qd, LuGre (of qd and the bristle states z) or Karnopp (inside
  its band, the holding torque solved from this very equation).
- Tool pose outputs (`pose`, 12 values): position x, y, z (m), then the rotation matrix R of the
  tool frame in the base frame, row-major (R00, R01, R02, R10, ..., R22).
- The Jacobian output J (6 n values) is the 6 x n geometric Jacobian of the tool origin in the base
  frame, rows [v (m/s); w (rad/s)], flattened row-major.

Robot parameters (every block): `robot` is a preset name (RobotModel.preset_names()) or a robot
YAML/URDF file relative to the diagram's folder. A block may model a robot that differs from the
file: `links` overrides (mass, com, inertia of a link, 1-based index or joint name), `mass_scale`
(masses only), `param_error` (masses and inertias together: a density error), a payload, `gravity`
and `rotor_inertia`. In a batch run, `param_error`, `mass_scale`, the payload (`payload_mass`,
`payload_com`, `payload_inertia`) and `gravity` may differ per member; `robot`, `links` and
`rotor_inertia` are shared by every member.

The planar 2R presets dispatch to the closed-form kernels of `models.planar2r` (`closed_form:
auto`), which equal the general RNEA/ABA to 1e-12 and are several times faster.

The physics is in `models`: the rigid-body algorithms and the kinematics on the robot's Model and
Data (`models.model_data`, `models.kinematics`), the per-joint law (`models.joint_law`) and the
plant's forward dynamics under it (`models.plant`). The blocks here map parameter values onto
their kernels' record (`blocks.robot_kernels`): the Model, the law rows and a Data workspace for
the values' members, built by `record(values)`; the values are data of a run (one block serves
every part of a split batch and new values between runs), the structure (the robot and its links,
n, the friction law's kind, which crossings and law terms exist, the closed form) is the block's.
Both modes run the kernels with that record, so they compute identical numbers.

A chain with mimic joints (`models.coupled.CoupledRobot`, from a URDF or a robot YAML with a URDF
source) has the ports of its independent joints; the Model and Data are the whole chain's and its
record (a Coupled* record of `robot_kernels`) carries the map [G | b] (`models.coupled_map`) to
the coupled kernels that the blocks with `takes_mimic` pick for such a robot. The other robot blocks
refuse it, naming the mimic joint.
"""
from __future__ import annotations


import numpy as np

from ..errors import BlocksimError, ParameterError, WidthError
from ..models import model_data as md
from ..models.coupled import CoupledRobot
from ..models.plant import rates_jacobian
from ..models.joint_law import (DAMPING, DELTA, DV, EPS, FCN, FCP, FKIND, FSN, FSP, FV, GAIN_D,
                                GAIN_P, KIND_KARNOPP, KIND_LUGRE, Q_MAX, Q_MIN, Q_REST, SIGMA0,
                                SIGMA1, SIGMA2, STIFFNESS, TAU_MAX, VS, neutral_law)
from ..models.robot import RobotModel
from .base import Block, Kernels, Param, register
from .robot_models import (MEMBER_KEYS, _key, _member_model, _with_links, chain_of, frozen_links,
                           load_robot)
from ._kernels import kernel_params, packed
from .robot_kernels import (RESET_Q0, RESET_QD0, CoupledDynamicsParams,
                            CoupledKinematicsParams, CoupledManipulatorParams, DynamicsParams,
                            KinematicsParams, ManipulatorParams, computed_torque_closed_form_output,
                            computed_torque_output,
                            coupled_computed_torque_output, coupled_energy_output,
                            coupled_forward_kinematics_output, coupled_gravity_compensation_output,
                            coupled_inverse_dynamics_output, coupled_jacobian_output,
                            coupled_manipulator_derivative, coupled_manipulator_output,
                            coupled_manipulator_partial_output, energy_output,
                            forward_kinematics_output, gravity_compensation_closed_form_output,
                            gravity_compensation_output,
                            inverse_dynamics_closed_form_output, inverse_dynamics_output,
                            jacobian_output, manipulator_closed_form_derivative,
                            manipulator_derivative, manipulator_event,
                            manipulator_held_sign_derivative, manipulator_mode_rows,
                            manipulator_modes, manipulator_output, manipulator_partial_output,
                            manipulator_zero_crossings)

FRICTION_LAWS = ("none", "model", "coulomb_viscous", "stribeck")
#: The Manipulator's laws: the static maps, and LuGre (bristle state) and Karnopp (stick band).
PLANT_FRICTION_LAWS = FRICTION_LAWS + ("lugre", "karnopp")

ROBOT_PARAMS = {
    "robot": Param(units="-", doc="preset name (two_link, two_link_point_mass, puma560, kr6_like) or "
                   "robot YAML/URDF file, relative to the diagram", kind="str"),
    "param_error": Param(0.0, "-", "relative error on link masses and inertias together, scalar or per "
                         "link (0.1 = 10 % heavy); per batch member"),
    "mass_scale": Param(1.0, "-", "factor on link masses only (com and inertia about it kept), scalar or "
                        "per link; per batch member"),
    "links": Param(None, "-", "per-link overrides {index (1-based) or joint name: {mass, com, inertia}}",
                   kind="any"),
    "payload_mass": Param(0.0, "kg", "payload fixed to the tool; per batch member"),
    "payload_com": Param((0.0, 0.0, 0.0), "m", "payload centre of mass in the tool frame"),
    "payload_inertia": Param((0.0, 0.0, 0.0), "kg m^2",
                             "payload inertia about its com, tool axes (3 diagonal, 6 or 3x3 values)"),
    "gravity": Param(None, "m/s^2", "gravity vector (3,) in the base frame (default: the robot's)"),
    "rotor_inertia": Param(None, "-", "add the reflected rotor inertia N^2 Jm on M's diagonal "
                           "(default: the robot file's choice)", kind="bool"),
}

DYNAMICS_PARAMS = {
    "closed_form": Param("auto", "-", "auto: closed-form kernels for the planar 2R presets; never: "
                         "always the general RNEA/ABA/CRBA", kind="str", choices=("auto", "never")),
}

FRICTION_PARAMS = {
    "friction": Param("none", "-", "joint friction law: none | model (the robot file's viscous and "
                      "Coulomb) | coulomb_viscous | stribeck", kind="str", choices=FRICTION_LAWS),
    "Fv": Param(0.0, "N m s/rad", "viscous coefficient per joint"),
    "Fc": Param(0.0, "N m", "Coulomb level per joint"),
    "Fs": Param(None, "N m", "static (breakaway) level per joint, stribeck, lugre and karnopp laws "
                 "(default Fc)"),
    "vs": Param(1.0, "rad/s", "Stribeck speed per joint (> 0)"),
    "delta": Param(2.0, "-", "Stribeck shape exponent (2: Gaussian)"),
    "friction_smoothing": Param(None, "rad/s", "eps: sign(qd) becomes tanh(qd / eps); 0 = exact sign "
                                "(with a zero crossing at qd = 0 in the plant). Default: the robot "
                                "file's value for friction: model, else 0"),
}


# ============================================================================ robot models

def robot_notes(blocks) -> dict:
    """{(robot name, note): [block names]}: what the robot files of the robot blocks among
    `blocks` ({name: block}, set up) left out or lumped, e.g. a URDF's branches off the chain."""
    users = {}
    for name, blk in blocks.items():
        if isinstance(blk, RobotBlock):
            for note in blk.model.notes:
                users.setdefault((blk.model.name, note), []).append(name)
    return users


def _blocks_taking_mimic() -> str:
    """The robot blocks that take a chain with mimic joints (`takes_mimic`), as "A, B and C"."""
    from .base import REGISTRY
    names = [name for name, cls in REGISTRY.items() if getattr(cls, "takes_mimic", False)]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


class RobotBlock(Block):
    """Base of the robot blocks. Structure (fixed when the block is built): the robot with its
    `links` overrides (`self.model`, kinds str and any), its joint count `self.n`, and
    `self._use_cf` (closed-form 2R kernels, when every member's robot has the closed form). Values
    (data of a run, `record(v)`): the per-member RobotModels of v stacked into one numba Model
    (`models.model_data`; one row per member, or one row when every member of v has the same
    robot) and a Data workspace for v.batch members."""

    params = {**ROBOT_PARAMS}
    uses_closed_form = False
    takes_mimic = False
    """True for the blocks whose kernels take a chain with mimic joints (ports in its independent
    joints, `robot_kernels`' coupled kernels); the others refuse such a robot."""
    joint_angle_inputs: tuple[str, ...] = ()
    """The inputs that carry joint angles of the block's robot (rad): their sources are checked
    against its joint limits before a run (diagram/joint_references.py)."""

    def robot_of(self, v) -> RobotModel:
        """The robot of the values v with its link overrides (kept: the same object each time)."""
        try:
            model = load_robot(v.robot, self.diagram_dir)
            links = frozen_links(v.links)
            model = model if links is None else _with_links(model, links)
        except BlocksimError as err:
            raise err.located(block=self.name)
        if isinstance(model, CoupledRobot) and not self.takes_mimic:
            c = model.couplings[0]
            raise ParameterError(
                f"robot '{model.name}' has mimic joints on its chain (joint '{c.follower}' follows "
                f"joint '{c.leader}'), which a {self.type_name} block does not take; the "
                f"{_blocks_taking_mimic()} blocks do", block=self.name)
        return model

    def member_models(self, v) -> list[RobotModel]:
        """The RobotModels of the members of v: one per member, or one when they are all the same."""
        robot = self.robot_of(v)
        arrays = [getattr(v, k) for k in MEMBER_KEYS]
        models, members = {}, []
        for b in range(v.batch):
            key = tuple(None if a is None else _key(a[b]) for a in arrays)
            if key not in models:
                try:
                    models[key] = _member_model(robot, key, v.rotor_inertia)
                except BlocksimError as err:
                    raise err.located(block=self.name)
                except (ValueError, TypeError) as err:
                    raise ParameterError(str(err), block=self.name) from None
            members.append(models[key])
        return members if len(models) > 1 else members[:1]

    def check_values(self, v):
        """Every member's robot can be built (link and per-member values fit the robot), and
        rotor_inertia: true has rotor data to add."""
        self.member_models(v)
        if v.rotor_inertia:
            robot = chain_of(self.robot_of(v))
            if not np.any(robot.Jm * robot.gear ** 2):
                raise ParameterError(
                    f"rotor_inertia: true, but robot '{robot.name}' has no rotor data (Jm and "
                    "gear per joint in its file), so there is nothing to add: give them, or drop "
                    "rotor_inertia", block=self.name)

    def setup(self):
        self.model = self.robot_of(self.p)
        self.n = self.model.n
        self.n_chain = chain_of(self.model).n
        self.coupled = isinstance(self.model, CoupledRobot)
        self.coupling = self.model.coupling if self.coupled else None
        self._use_cf = self.closed_form_of(self.p)

    def closed_form_of(self, v) -> bool:
        """True when the planar 2R closed-form kernels serve the values v (structure)."""
        use_cf = (self.uses_closed_form and v.closed_form == "auto"
                  and all(m.closed_form is not None for m in self.member_models(v)))
        if use_cf and self.n != 2:
            raise BlocksimError(f"closed-form kernels are for 2 joints, robot has {self.n}")
        return bool(use_cf)

    def structure(self, v):
        return self.closed_form_of(v)

    def model_data(self, v) -> tuple:
        """The Model of the values v and a fresh Data workspace for v.batch members, checked
        against each other."""
        model = md.stack_model([chain_of(m) for m in self.member_models(v)], self._use_cf)
        data = md.make_data(self.n_chain, v.batch)
        md.check(model, data, v.batch)
        return model, data

    def kernel_record(self, plain, coupled, **fields):
        """The block's kernel record of these fields: of type `plain`, or for a chain with mimic
        joints of type `coupled` with the map [G | b] as its `coupling` (an ordinary chain's
        record carries nothing more)."""
        if self.coupled:
            return kernel_params(coupled, **fields, coupling=self.coupling)
        return kernel_params(plain, **fields)

    def joint_width(self, port: str, width, expected: int | None = None):
        """Check an input's width against the robot's joint count n (or `expected`)."""
        need = self.n if expected is None else expected
        if width is not None and width != need:
            raise WidthError(f"input has width {width}, robot '{self.model.name}' needs {need}",
                             block=self.name, port=port)

    def rows(self, key: str, v=None) -> np.ndarray:
        """An array parameter of the values v (the block's own by default) as (B, n) (scalar or
        per joint)."""
        value = getattr(self.p if v is None else v, key)
        if value.ndim == 2 and value.shape[1] not in (1, self.n):
            raise ParameterError(f"'{key}' needs 1 or {self.n} values (one per joint), got "
                                 f"{value.shape[1]}", block=self.name)
        if value.ndim > 2:
            raise ParameterError(f"'{key}' must be a scalar or a vector", block=self.name)
        return np.ascontiguousarray(self.param_as_row(key, self.n, v))


# ============================================================================ Manipulator

@register
class Manipulator(RobotBlock):
    """The robot arm as a plant: continuous states q, qd; input joint torques; outputs the motion.

    Equation (module docstring): M(q) qdd + c + G = sat(tau) - tau_f - damping qd
    - stiffness (q - q_rest) + J^T f_ext, integrated from q0, qd0.
    Forward dynamics: `method: aba` (O(n) articulated-body algorithm) or `crba` (mass matrix by CRBA,
    then Cholesky); the planar 2R presets use the closed form unless `closed_form: never`.
    Friction (`friction`): none; model (the robot file's viscous + Coulomb, asymmetric Coulomb
    allowed); coulomb_viscous (Fv qd + Fc sgn(qd)); stribeck ((Fc + (Fs - Fc) exp(-|qd/vs|^delta))
    sgn(qd) + Fv qd). sgn is tanh(qd / friction_smoothing) when that is > 0 (W1's plant: 1e-3 rad/s);
    with an exact sign each qd = 0 is a zero crossing: the solver stops there, qd is set to 0, and
    the joint sticks while the torque needed to hold it stays within the static level (Fs; Fc for
    coulomb_viscous and model), breaking away once it exceeds it (stick-slip, no chattering).
    The sign is a mode (Simulink's zero-crossing modes, `Block.modes`): sign(qd) per joint (+1,
    -1, 0), set at major steps and held through solver stages, dense output and event location,
    so a stage whose qd has crossed zero keeps the friction of the step's start and the switch
    happens at the located crossing (the step stays smooth: no rejected steps across it). A joint
    held at 0 (at rest at the major step, as after the qd = 0 event) is judged live: stuck while
    qd = 0 exactly within the static level, else breaking away with that level opposing the
    motion (a continuous transition), then sign(qd).
    lugre (Canudas de Wit et al. 1995, as the LuGreFriction block): tau_f = sigma0 z + sigma1 z'
    + sigma2 qd, z' = qd - sigma0 |qd| z / g(qd), g = Fc + (Fs - Fc) exp(-|qd/vs|^delta) (Fc > 0);
    the bristle deflections z (rad, one per joint, initially 0) are continuous states after q and
    qd; no events (pre-sliding is a spring of stiffness sigma0); the bristles are fast, prefer an
    adaptive or stiff solver. karnopp (as the KarnoppFriction block, with the applied torque taken
    from the plant's own equations): inside the band |qd| < dv the friction balances the net
    non-friction torque, i.e. the torque that makes the joint's acceleration zero (the other
    joints' motion included), up to Fs; outside it the stribeck curve (exact sign) + Fv qd; each
    |qd| = dv is a zero crossing (qd is not reset: a joint entering the band keeps its speed).
    The region is a mode per joint (0 inside the band, +1 / -1 slipping forwards / backwards), held
    between major steps like the sign; the band edge's crossing function follows it: s qd - dv
    slipping with sign s (so a speed that passes through the whole band within one step still
    fires), |qd| - dv inside. Breakaway inside the band is no mode: the holding torque reaching
    Fs is a continuous transition (the acceleration starts from zero).
    Joint stops (`q_min`, `q_max`): zero crossings q - q_max and q_min - q; at the located instant
    q is set to the limit and qd to -restitution qd (0: inelastic; impacts slower than
    STOP_CAPTURE_SPEED end at rest). A joint resting on a stop stays there while the dynamics push it
    outward (its acceleration is held at 0, the other joints move with it locked) and leaves as soon
    as they pull it back. The stop contact is judged live in every evaluation, not held as a mode:
    it changes continuously (resting needs qd = 0 exactly, and the acceleration passes through
    zero where the joint leaves). Limits come only from these parameters, not from the robot
    file's qlim.
    Input `f_ext` (optional, 6): wrench exerted by the environment on the tool, [force (N); moment
    (N m)] in base coordinates, moment about the tool origin.
    Outputs: q (rad), qd (rad/s), qdd (rad/s^2; reads tau directly), pose (12: tool position (m) and
    rotation row-major). q, qd and pose come from the state, so feeding them back is no loop.
    Discrete states: the n friction modes (`sign[joint]` or `region[joint]`) when the friction is
    exact-sign or Karnopp; none otherwise (no friction, smooth sign, LuGre).
    A chain with mimic joints (a URDF, or a robot YAML with a URDF source): n is its independent
    joints and every port and per-joint value is theirs; the chain moves as q_full = G q + b and
    qdd solves G^T M G qdd = tau - G^T (h - J^T f_ext), h the chain's Coriolis, centrifugal
    and gravity torques (CRBA and Cholesky whatever `method` says; docs/robot-files.md).
    """

    type_name = "Manipulator"
    takes_mimic = True
    summary = "robot arm plant: tau -> q, qd, qdd, tool pose (ABA/CRBA, friction, stops, payload)"
    params = {
        **ROBOT_PARAMS, **DYNAMICS_PARAMS,
        "q0": Param(0.0, "rad", "initial joint positions (scalar or per joint)"),
        "qd0": Param(0.0, "rad/s", "initial joint velocities"),
        "method": Param("aba", "-", "forward dynamics: aba (O(n)) or crba (mass matrix + Cholesky)",
                        kind="str", choices=("aba", "crba")),
        **FRICTION_PARAMS,
        "friction": Param("none", "-", "joint friction law: none | model (the robot file's viscous "
                          "and Coulomb) | coulomb_viscous | stribeck | lugre | karnopp", kind="str",
                          choices=PLANT_FRICTION_LAWS),
        "sigma0": Param(None, "N m/rad", "LuGre bristle stiffness per joint (> 0; friction: lugre)"),
        "sigma1": Param(None, "N m s/rad", "LuGre bristle damping per joint (default 0)"),
        "sigma2": Param(None, "N m s/rad", "LuGre viscous coefficient per joint (default 0)"),
        "dv": Param(1e-4, "rad/s", "Karnopp stick band half-width per joint (> 0; friction: karnopp)"),
        "damping": Param(0.0, "N m s/rad", "joint damping coefficient per joint"),
        "stiffness": Param(0.0, "N m/rad", "joint spring stiffness per joint"),
        "q_rest": Param(0.0, "rad", "spring rest position per joint"),
        "tau_max": Param(np.inf, "N m", "actuator torque limit per joint: tau saturates to +-tau_max"),
        "q_min": Param(-np.inf, "rad", "lower joint stop per joint (-inf: none)"),
        "q_max": Param(np.inf, "rad", "upper joint stop per joint (inf: none)"),
        "restitution": Param(0.0, "-", "coefficient of restitution at the stops, 0..1"),
    }
    inputs = ("tau", "f_ext")
    outputs = ("q", "qd", "qdd", "pose")
    port_units = {"pose": "m, -"}
    optional_inputs = ("f_ext",)
    sample = "continuous"
    uses_closed_form = True

    def infinite_ok(self):
        return ("tau_max", "q_min", "q_max")

    def unwired_width(self, port):
        return 6 if port == "f_ext" else super().unwired_width(port)

    def doubtful(self):
        """q0 outside the robot's joint limits (the robot file's qlim / URDF limits)."""
        robot = self.robot_of(self.p)
        q0 = self.p.q0.reshape(self.p.batch, -1)
        if q0.shape[1] not in (1, self.n):
            return []                        # not a q0 at all: configure refuses its length
        q0 = np.broadcast_to(q0, (self.p.batch, self.n))
        out = []
        for i in range(self.n):
            lo, hi = robot.q_lower[i], robot.q_upper[i]
            bad = q0[:, i][(q0[:, i] < lo) | (q0[:, i] > hi)]
            if bad.size:
                out.append(("q0", f"joint {i + 1} ({robot.joint_names[i]}) starts at {bad[0]:g}, "
                                  f"outside its limits [{lo:g}, {hi:g}] in robot '{robot.name}'"))
        return out

    def check_values(self, v):
        super().check_values(v)
        check_friction_values(self, v)
        for key in ("damping", "stiffness", "tau_max"):
            value = getattr(v, key)
            if np.any(value < 0) or (key == "tau_max" and np.any(value == 0)):
                raise ParameterError(f"'{key}' must be {'> 0' if key == 'tau_max' else '>= 0'}",
                                     block=self.name)
        if np.any(v.restitution < 0) or np.any(v.restitution > 1):
            raise ParameterError("restitution must lie in [0, 1]", block=self.name)
        # per member: a scalar limit of shape (B,) against the other's (B, n) rows
        lower, upper = (x.reshape(x.shape[0], -1) for x in (v.q_min, v.q_max))
        if lower.shape[1] in (1, upper.shape[1]) or upper.shape[1] == 1:
            if np.any(lower > upper):
                raise ParameterError("q_min must be <= q_max", block=self.name)
        sigmas = [k for k in ("sigma0", "sigma1", "sigma2") if getattr(v, k) is not None]
        if v.friction != "lugre" and sigmas:
            raise ParameterError(f"{', '.join(sigmas)} set the lugre law; with friction: {v.friction} "
                                 f"they have no effect", block=self.name)
        if v.friction == "lugre":
            if v.sigma0 is None or np.any(v.sigma0 <= 0):
                raise ParameterError("friction: lugre needs sigma0 > 0 (bristle stiffness, N m/rad)",
                                     block=self.name)
            for key in ("sigma1", "sigma2"):
                if getattr(v, key) is not None and np.any(getattr(v, key) < 0):
                    raise ParameterError(f"'{key}' must be >= 0", block=self.name)
            if np.any(v.Fc <= 0) or (v.Fs is not None and np.any(v.Fs <= 0)):
                raise ParameterError("friction: lugre needs Fc > 0 and Fs > 0 (the Stribeck level g "
                                     "divides the bristle rate)", block=self.name)
            if np.any(v.Fv != 0):
                raise ParameterError("friction: lugre takes its viscous term from sigma2, not Fv",
                                     block=self.name)
        if v.friction in ("lugre", "karnopp") and v.friction_smoothing is not None:
            raise ParameterError(f"friction_smoothing smooths the static laws' sign; friction: "
                                 f"{v.friction} has none to smooth", block=self.name)
        if v.friction == "karnopp" and np.any(v.dv <= 0):
            raise ParameterError("'dv' must be > 0", block=self.name)

    def resolve_widths(self, in_widths):
        self.joint_width("tau", in_widths.get("tau"))
        self.joint_width("f_ext", in_widths.get("f_ext"), 6)
        return {"q": self.n, "qd": self.n, "qdd": self.n, "pose": 12}

    def feedthrough(self):
        return {("tau", "qdd"), ("f_ext", "qdd")}

    def law_of(self, v):
        """The joint law (B, n, N_LAW) of the values v (friction, torque limit, damping, spring,
        stops) and what of it decides the structure: whether it has friction, stops (has_limits)
        and exact-sign crossings (exact), and whether a joint can stick (can_stick)."""
        law, has_friction, exact = friction_law(self, v)
        q_min, q_max = self.rows("q_min", v), self.rows("q_max", v)
        has_limits = bool(np.any(np.isfinite(q_min)) or np.any(np.isfinite(q_max)))
        for col, key in ((TAU_MAX, "tau_max"), (DAMPING, "damping"), (STIFFNESS, "stiffness"),
                         (Q_REST, "q_rest")):
            law[:, :, col] = self.rows(key, v)
        law[:, :, Q_MIN] = q_min
        law[:, :, Q_MAX] = q_max
        static = (law[:, :, FSP] > 0.0) | (law[:, :, FSN] > 0.0)
        can_stick = bool(np.any(static & (law[:, :, EPS] == 0.0)))
        return law, has_friction, has_limits, exact, can_stick

    def steep_terms(self, xc, xd):
        """A friction sign smoothed as tanh(qd / eps) with a Coulomb or static level F, at a
        joint speed within 3 eps of zero: its tangent F / eps sech^2(qd / eps) (N m s/rad)
        holds only for speeds well inside that band."""
        law = self.law_of(self.p)[0][0]
        qd = np.asarray(xc)[self.n:2 * self.n]
        out = []
        for j, name in enumerate(self.model.joint_names):
            eps = law[j, EPS]
            level = max(abs(law[j, FCP]), abs(law[j, FCN]), abs(law[j, FSP]), abs(law[j, FSN]))
            if eps > 0 and level > 0 and abs(qd[j]) < 3 * eps:
                slope = level / eps / np.cosh(qd[j] / eps) ** 2
                out.append(f"friction of joint {name} smoothed over {eps:g} rad/s: slope "
                           f"{slope:.4g} N m s/rad at qd = {qd[j]:.3g} rad/s")
        return out

    def state_jacobian(self, xc, xd, u):
        """The rates' exact Jacobian by tau (and f_ext when wired) from the RNEA's analytic
        derivatives and the joint law's (models.plant.rates_jacobian): none with LuGre or
        Karnopp friction, a stuck joint, a torque at its limit, a joint at a stop, or a chain
        with mimic joints."""
        if self._lugre or self._karnopp or self.coupled:
            return None
        p = self.own_record()
        found = rates_jacobian(p.model, p.law, 0, xc, xd, u[0], u[1] if self._has_fext else None)
        if found is None:
            return None
        return found[0], {"tau": found[1], **({"f_ext": found[2]} if self._has_fext else {})}

    def structure(self, v):
        """Closed form, stops, exact-sign crossings (and friction modes), and the
        closed-form-only derivative."""
        _, _, has_limits, exact, can_stick = self.law_of(v)
        use_cf = self.closed_form_of(v)
        return use_cf, has_limits, exact, self._closed_form_only(use_cf, has_limits, can_stick,
                                                                 exact)

    def _closed_form_only(self, use_cf, has_limits, can_stick, exact) -> bool:
        """True when the planar 2R's closed form alone gives qdd for every member and state: no
        joint can stick (exact-sign friction with a static level, a Karnopp band) or rest on a
        stop, no friction mode is held (exact sign), and there is no wrench input, no LuGre state
        and no CRBA request."""
        return bool(use_cf and self.p.method != "crba" and "f_ext" not in self.connected
                    and not has_limits and self.p.friction not in ("lugre", "karnopp")
                    and not can_stick and not exact)

    def configure(self, in_widths, out_widths):
        p, n = self.p, self.n
        for key in ("q0", "qd0", "restitution"):
            self.rows(key)                       # their shapes (the values are the record's)
        _, self._has_friction, self._has_limits, self._exact, can_stick = self.law_of(p)
        self._has_fext = "f_ext" in self.connected
        self._crba = p.method == "crba"
        self._lugre = p.friction == "lugre"
        self._karnopp = p.friction == "karnopp"
        self._cf_only = self._closed_form_only(self._use_cf, self._has_limits, can_stick,
                                               self._exact)
        # the closed form under held exact signs, the general path only for a joint at sign 0
        self._cf_held = bool(self._exact and self._closed_form_only(self._use_cf,
                                                                    self._has_limits, False,
                                                                    False))
        self.n_xc = 3 * n if self._lugre else 2 * n
        limits, exact = 2 * n if self._has_limits else 0, n if self._exact else 0
        self.n_zc = limits + exact
        self.zc_directions = np.array([1] * limits + [0] * exact, dtype=np.int64)
        # the friction mode of every joint, held between major steps (Block.modes), wherever the
        # friction has exact-sign crossings (never with LuGre: the memo of the accelerations
        # keeps the modes in the state's third n columns)
        self.n_xd = self.n_modes = exact

    def record(self, v):
        law = self.law_of(v)[0]
        model, data = self.model_data(v)
        resets = packed(self.rows("q0", v), self.rows("qd0", v), self.rows("restitution", v))
        return self.kernel_record(ManipulatorParams, CoupledManipulatorParams, model=model,
                                  law=law, data=data, use_cf=self._use_cf, crba=self._crba,
                                  has_fext=self._has_fext, has_friction=self._has_friction,
                                  has_limits=self._has_limits, exact=self._exact, resets=resets)

    def state_names(self):
        names = self.model.joint_names
        z = [f"z[{j}]" for j in names] if self._lugre else []
        mode = "region" if self._karnopp else "sign"
        modes = [f"{mode}[{j}]" for j in names] if self.n_modes else []
        return [f"q[{j}]" for j in names] + [f"qd[{j}]" for j in names] + z, modes

    def initial_state(self, xc, xd, p=None):
        """q0, qd0 of the run's record p (None: the block's own); LuGre bristles at rest; the
        friction modes of qd0 (the first major step sets them again)."""
        p = self.own_record(p)
        n = self.n
        xc[:, :n] = p.resets[:, :, RESET_Q0]
        xc[:, n:2 * n] = p.resets[:, :, RESET_QD0]
        if self._lugre:
            xc[:, 2 * n:] = 0.0
        if self.n_modes:
            manipulator_mode_rows(xc, p.law, xd)

    def kernels(self):
        if self.coupled:
            output, partial, derivative = (coupled_manipulator_output,
                                           coupled_manipulator_partial_output,
                                           coupled_manipulator_derivative)
        else:
            output, partial = manipulator_output, manipulator_partial_output
            derivative = (manipulator_closed_form_derivative if self._cf_only
                          else manipulator_held_sign_derivative if self._cf_held
                          else manipulator_derivative)
        # an event kernel where a crossing has a reaction: a stop, or an exact sign (a Karnopp
        # band's edges reset nothing)
        reacts = self._has_limits or (self._exact and not self._karnopp)
        return Kernels(output=output, partial_output=partial, derivative=derivative,
                       zero_crossings=manipulator_zero_crossings if self.n_zc else None,
                       modes=manipulator_modes if self.n_modes else None,
                       event=manipulator_event if reacts else None)


def check_friction_values(block: RobotBlock, v) -> None:
    """The FRICTION_PARAMS of the values v: Fv, Fc, Fs >= 0, vs and delta > 0, smoothing >= 0, and
    no coefficients that the law `none` or `model` would ignore (ParameterError)."""
    for key in ("Fv", "Fc", "vs", "delta"):
        value = getattr(v, key)
        if np.any(value < 0) or (key in ("vs", "delta") and np.any(value == 0)):
            raise ParameterError(f"'{key}' must be {'> 0' if key in ('vs', 'delta') else '>= 0'}",
                                 block=block.name)
    if v.friction_smoothing is not None and np.any(v.friction_smoothing < 0):
        raise ParameterError("friction_smoothing must be >= 0", block=block.name)
    if v.friction in ("none", "model") and (np.any(v.Fv != 0) or np.any(v.Fc != 0) or v.Fs is not None):
        laws = [law for law in block.all_params()["friction"].choices if law not in ("none", "model")]
        raise ParameterError(f"Fv, Fc and Fs set the {', '.join(laws[:-1])} and {laws[-1]} laws; "
                             f"with friction: {v.friction} they have no effect", block=block.name)
    if v.Fs is not None and np.any(v.Fs < 0):
        raise ParameterError("'Fs' must be >= 0", block=block.name)
    robot = block.robot_of(v) if v.friction == "model" else None
    followers = robot.followers_with_friction() if isinstance(robot, CoupledRobot) else []
    if followers:
        raise ParameterError(
            f"friction: model acts on the independent joints of robot '{robot.name}', but its "
            f"mimic joint '{followers[0]}' has friction of its own in the "
            "file, which that law would drop: give the independent joints' coefficients with "
            "coulomb_viscous or stribeck instead", block=block.name)


def friction_law(block: RobotBlock, v):
    """The per-joint law array (B, n, N_LAW) of the block's values v with the friction columns of
    its `friction` law filled (the others neutral: no torque limit, damping, spring or stops),
    whether it has friction, and whether its sign is exact with a nonzero Coulomb level (needs
    zero crossings). The `model` law reads the robot file's coefficients."""
    model, n, B = block.model, block.n, v.batch
    kind = v.friction
    zeros = np.zeros((B, n))
    if v.friction_smoothing is None:
        eps = np.full((B, n), model.friction_smoothing if kind == "model" else 0.0)
    else:
        eps = block.rows("friction_smoothing", v)
    vs, delta = block.rows("vs", v), block.rows("delta", v)
    if kind == "none":
        Fv = Fcp = Fcn = zeros
    elif kind == "model":
        Fv = np.broadcast_to(model.viscous, (B, n))
        Fcp = np.broadcast_to(model.coulomb_pos, (B, n))
        Fcn = np.broadcast_to(-model.coulomb_neg, (B, n))
    else:
        Fv, Fcp = block.rows("Fv", v), block.rows("Fc", v)
        Fcn = Fcp
    dynamic = kind in ("lugre", "karnopp")
    Fs = (block.rows("Fs", v) if (kind in ("stribeck", "lugre", "karnopp") and v.Fs is not None)
          else Fcp)
    Fsn = Fs if kind in ("stribeck", "lugre", "karnopp") else Fcn
    if dynamic:
        eps = zeros                       # LuGre has no sign; Karnopp slips with the exact sign
    has = kind != "none"
    exact = has and bool(np.any((eps == 0) & ((Fcp != 0) | (Fcn != 0) | (Fs != 0))))
    law = neutral_law(B, n)
    for col, value in ((FV, Fv), (FCP, Fcp), (FCN, Fcn), (FSP, Fs), (FSN, Fsn), (VS, vs),
                       (DELTA, delta), (EPS, eps)):
        law[:, :, col] = value
    if kind == "lugre":
        law[:, :, FKIND] = KIND_LUGRE
        law[:, :, SIGMA0] = block.rows("sigma0", v)
        for col, key in ((SIGMA1, "sigma1"), (SIGMA2, "sigma2")):
            law[:, :, col] = block.rows(key, v) if getattr(v, key) is not None else 0.0
        exact = False                     # no mode switch: pre-sliding is a spring
    elif kind == "karnopp":
        law[:, :, FKIND] = KIND_KARNOPP
        law[:, :, DV] = block.rows("dv", v)
        exact = True                      # the band edges |qd| = dv are zero crossings
    return law, has, exact


# ============================================================================ model-based blocks

class _JointInputs(RobotBlock):
    """Robot block whose inputs all have one value per joint."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS}
    uses_closed_form = True
    takes_mimic = True

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {o: self.n for o in self.output_names()}

    def dynamics_record(self, v, law, has_friction):
        """The block's record for the values v with this law."""
        model, data = self.model_data(v)
        return self.kernel_record(DynamicsParams, CoupledDynamicsParams, model=model, law=law,
                                  data=data, use_cf=self._use_cf, has_friction=has_friction)


@register
class InverseDynamics(_JointInputs):
    """The feedforward torque tau = M(q) qdd + c(q, qd) + G(q) (N m) of its own robot model (RNEA).

    Rigid body only unless `include_friction`, which adds the friction law of `friction` (default:
    the robot file's viscous + Coulomb, smoothing as that file says). Its robot parameters model the
    controller's knowledge: `param_error: [0, 0.1]` gives a feedforward whose link 2 is 10 % heavy.
    All three inputs feed the output directly.
    """

    type_name = "InverseDynamics"
    summary = "tau = M(q) qdd + c(q, qd) + G(q) of a (possibly mismatched) robot model"
    params = {**_JointInputs.params,
              "include_friction": Param(False, "-", "add the joint friction law below to tau",
                                        kind="bool"),
              **FRICTION_PARAMS,
              "friction": Param("model", "-", "friction law added when include_friction: model | "
                                "coulomb_viscous | stribeck", kind="str", choices=FRICTION_LAWS)}
    inputs = ("q", "qd", "qdd")
    joint_angle_inputs = ("q",)
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        # friction: the law's kind decides; its rows are the record's (built here for their shapes)
        self._has_friction = self.p.include_friction and friction_law(self, self.p)[1]

    def record(self, v):
        law = friction_law(self, v)[0] if self.p.include_friction else neutral_law(v.batch, self.n)
        return self.dynamics_record(v, law, self._has_friction)

    def kernels(self):
        if self.coupled:
            return Kernels(output=coupled_inverse_dynamics_output)
        output = inverse_dynamics_closed_form_output if self._use_cf else inverse_dynamics_output
        return Kernels(output=output)


@register
class GravityCompensation(_JointInputs):
    """tau = G(q) = rnea(q, 0, 0) (N m): the torque that holds the arm still at q."""

    type_name = "GravityCompensation"
    summary = "tau = G(q), the gravity torque of a (possibly mismatched) robot model"
    inputs = ("q",)
    joint_angle_inputs = ("q",)
    outputs = ("tau",)

    def record(self, v):
        return self.dynamics_record(v, neutral_law(v.batch, self.n), False)

    def kernels(self):
        if self.coupled:
            return Kernels(output=coupled_gravity_compensation_output)
        return Kernels(output=gravity_compensation_closed_form_output if self._use_cf
                       else gravity_compensation_output)


@register
class ComputedTorque(_JointInputs):
    """Computed-torque (inverse-dynamics) control:
    tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + c(q, qd) + G(q)  (N m).

    On an exact model the closed loop is e'' + Kd e' + Kp e = 0 per joint (e = q_d - q).
    Inputs q_d, qd_d, qdd_d (the reference) and q, qd (the measurement), all fed through directly.
    """

    type_name = "ComputedTorque"
    summary = "tau = M(q)(qdd_d + Kd ed + Kp e) + c + G: inverse-dynamics control"
    params = {**_JointInputs.params,
              "Kp": Param(units="1/s^2", doc="position gain per joint (wn^2)"),
              "Kd": Param(units="1/s", doc="velocity gain per joint (2 zeta wn)")}
    inputs = ("q_d", "qd_d", "qdd_d", "q", "qd")
    joint_angle_inputs = ("q_d",)
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        for key in ("Kp", "Kd"):
            self.rows(key)                       # their shapes (the values are the record's)

    def record(self, v):
        law = neutral_law(v.batch, self.n)
        law[:, :, GAIN_P] = self.rows("Kp", v)
        law[:, :, GAIN_D] = self.rows("Kd", v)
        return self.dynamics_record(v, law, False)

    def kernels(self):
        if self.coupled:
            return Kernels(output=coupled_computed_torque_output)
        return Kernels(output=computed_torque_closed_form_output if self._use_cf
                       else computed_torque_output)


# ============================================================================ kinematics and energy

class _Kinematics(RobotBlock):
    """Robot block whose record is its Model and Data."""

    takes_mimic = True

    def record(self, v):
        model, data = self.model_data(v)
        return self.kernel_record(KinematicsParams, CoupledKinematicsParams, model=model,
                                  data=data)


@register
class ForwardKinematics(_Kinematics):
    """Tool pose in the base frame from q: position (3, m), rotation (9, row-major), pose (12:
    position then rotation, as the Manipulator's pose output)."""

    type_name = "ForwardKinematics"
    summary = "q -> tool position (m), rotation (row-major), pose"
    inputs = ("q",)
    joint_angle_inputs = ("q",)
    outputs = ("position", "rotation", "pose")
    port_units = {"pose": "m, -"}

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"position": 3, "rotation": 9, "pose": 12}

    def kernels(self):
        return Kernels(output=coupled_forward_kinematics_output if self.coupled
                       else forward_kinematics_output)


@register
class Jacobian(_Kinematics):
    """J(q): the 6 x n geometric Jacobian of the tool origin in the base frame, rows [v (m/s);
    w (rad/s)] per unit joint rate, flattened row-major into 6 n values (J[r, c] at r n + c)."""

    type_name = "Jacobian"
    summary = "q -> geometric Jacobian of the tool (6 x n, row-major)"
    inputs = ("q",)
    joint_angle_inputs = ("q",)
    outputs = ("J",)
    port_units = {"J": "m/rad, -"}

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"J": 6 * self.n}

    def kernels(self):
        return Kernels(output=coupled_jacobian_output if self.coupled else jacobian_output)


@register
class Energy(_Kinematics):
    """Mechanical energy of the arm (J): kinetic qd^T M qd / 2 (rotor inertia included when on),
    potential -sum_i m_i gravity . p_com_i (zero with every centre of mass at the base origin), total.

    Conserved by the Manipulator with tau = 0, no friction, damping or springs: a check of the solver."""

    type_name = "Energy"
    summary = "q, qd -> kinetic, potential and total energy (J)"
    inputs = ("q", "qd")
    joint_angle_inputs = ("q",)
    outputs = ("kinetic", "potential", "total")

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {"kinetic": 1, "potential": 1, "total": 1}

    def kernels(self):
        return Kernels(output=coupled_energy_output if self.coupled else energy_output)
