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
plant's forward dynamics under it (`models.plant`). The blocks here map parameters onto the
Model, the law rows and a Data workspace, allocated once in configure(); their kernels
(`blocks.robot_kernels`) map ports onto those functions. Compiled mode calls the kernels'
adapters with the same parameter tuple the Python methods use, so both modes compute identical
numbers.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..errors import BlocksimError, ParameterError, WidthError
from ..models import model_data as md
from ..models.joint_law import (DAMPING, DELTA, DV, EPS, FCN, FCP, FKIND, FSN, FSP, FV, GAIN_D,
                                GAIN_P, KIND_KARNOPP, KIND_LUGRE, Q_MAX, Q_MIN, Q_REST, SIGMA0,
                                SIGMA1, SIGMA2, STIFFNESS, TAU_MAX, VS, neutral_law)
from ..models.robot import RobotModel
from .base import Block, Kernels, Param, register
from .robot_kernels import (DynamicsParams, KinematicsParams, ManipulatorParams,
                            computed_torque_output, energy_output, forward_kinematics_output,
                            gravity_compensation_output, inverse_dynamics_closed_form_output,
                            inverse_dynamics_output, jacobian_output,
                            manipulator_closed_form_derivative, manipulator_derivative,
                            manipulator_output, manipulator_partial_output,
                            manipulator_zero_crossings)

#: Impact speed (rad/s or m/s) below which a bounce off a joint stop is taken as inelastic, so a
#: joint with restitution comes to rest after finitely many events.
STOP_CAPTURE_SPEED = 1e-6

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

@functools.lru_cache(maxsize=32)
def _load_robot(source: str, stamp) -> RobotModel:
    path = Path(source)
    if path.suffix.lower() == ".urdf":
        return RobotModel.from_urdf(path)
    return RobotModel.from_yaml(path)


def load_robot(robot: str, diagram_dir: str | None) -> RobotModel:
    """The RobotModel named by a block's `robot` parameter: a preset, or a YAML/URDF file path
    relative to the diagram's folder (absolute paths are used as they are)."""
    if robot in RobotModel.preset_names():
        return _preset(robot)
    path = Path(robot)
    if not path.is_absolute():
        path = Path(diagram_dir or ".") / path
    if path.suffix.lower() not in (".yaml", ".yml", ".urdf") or not path.is_file():
        raise ParameterError(
            f"robot '{robot}' is neither a preset ({', '.join(RobotModel.preset_names())}) nor a "
            f"robot file (.yaml, .urdf); looked for {path}")
    return _load_robot(str(path.resolve()), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _preset(name: str) -> RobotModel:
    return RobotModel.preset(name)


def _link_index(key, model: RobotModel) -> int:
    """0-based link index of a `links` key: a 1-based number or a joint name."""
    if isinstance(key, str) and key in model.joint_names:
        return model.joint_names.index(key)
    try:
        index = int(key)
    except (TypeError, ValueError):
        raise ParameterError(f"links: '{key}' is neither a link number (1..{model.n}) nor a joint "
                             f"name ({', '.join(model.joint_names)})") from None
    if not 1 <= index <= model.n:
        raise ParameterError(f"links: link {index} does not exist; '{model.name}' has links 1..{model.n}")
    return index - 1


def _per_link(value: np.ndarray, n: int, key: str) -> np.ndarray:
    v = np.asarray(value, dtype=float).reshape(-1)
    if v.size == 1:
        return np.full(n, v[0])
    if v.size != n:
        raise ParameterError(f"'{key}' needs 1 or {n} values (one per link), got {v.size}")
    return v


class RobotBlock(Block):
    """Base of the robot blocks: resolves the robot parameters into per-member RobotModels, their
    stacked numba Model `self._model` (`models.model_data`; one row per member, or one row when
    every batch member has the same robot) and `self._use_cf` (closed-form 2R kernels)."""

    params = {**ROBOT_PARAMS}
    uses_closed_form = False

    def setup(self):
        try:
            base = load_robot(self.p.robot, self.diagram_dir)
            base = self._apply_links(base)
        except BlocksimError as err:
            raise err.located(block=self.name)
        self.n = base.n
        models, members = {}, []
        for b in range(self.batch):
            key = tuple(np.asarray(getattr(self.p, k)[b]).tobytes() if getattr(self.p, k) is not None
                        else b"" for k in ("param_error", "mass_scale", "payload_mass", "payload_com",
                                           "payload_inertia", "gravity"))
            if key not in models:
                try:
                    models[key] = self._member_model(base, b)
                except BlocksimError as err:
                    raise err.located(block=self.name)
                except (ValueError, TypeError) as err:
                    raise ParameterError(str(err), block=self.name) from None
            members.append(models[key])
        self.models = members if len(models) > 1 else members[:1]
        self.model = self.models[0]
        self._use_cf = self._closed_form()
        self._model = md.stack_model(self.models, self._use_cf)
        self.check()

    def check(self):
        """Subclass checks of their own parameters (raise ParameterError)."""

    def _apply_links(self, model: RobotModel) -> RobotModel:
        links = self.p.links
        if links is None:
            return model
        if not isinstance(links, dict):
            raise ParameterError("links must be a mapping {link: {mass, com, inertia}}")
        for key, spec in links.items():
            i = _link_index(key, model)
            if not isinstance(spec, dict) or set(spec) - {"mass", "com", "inertia"}:
                raise ParameterError(f"links: link {key} takes a mapping with mass (kg), com (m) and "
                                     f"inertia (kg m^2, about the com), got {spec!r}")
            model = model.with_link_params(i, **{k: np.asarray(v, dtype=float) if k != "mass"
                                                 else float(v) for k, v in spec.items()})
        return model

    def _member_model(self, model: RobotModel, b: int) -> RobotModel:
        """Batch member b's model: mass_scale, then param_error, then payload, gravity, rotor inertia."""
        p, n = self.p, model.n
        scale = _per_link(p.mass_scale[b], n, "mass_scale")
        for i in np.nonzero(scale != 1.0)[0]:
            mass = model.standard_parameters()[10 * i]
            model = model.with_link_params(int(i), mass=mass * scale[i])
        error = _per_link(p.param_error[b], n, "param_error")
        if np.any(1.0 + error <= 0.0):
            raise ParameterError("param_error must be > -1 (masses stay positive)")
        if np.any(error != 0.0):
            model = model.scaled(1.0 + error)
        if float(p.payload_mass[b]) != 0.0:
            model = model.with_payload(float(p.payload_mass[b]), p.payload_com[b],
                                       p.payload_inertia[b])
        options = {}
        if p.gravity is not None:
            options["gravity"] = np.asarray(p.gravity[b], dtype=float).reshape(3)
        if p.rotor_inertia is not None:
            options["rotor_inertia"] = p.rotor_inertia
        return model.with_options(**options) if options else model

    def _closed_form(self) -> bool:
        """True when this block uses the planar 2R closed-form kernels."""
        use_cf = (self.uses_closed_form and self.p.closed_form == "auto"
                  and all(m.closed_form is not None for m in self.models))
        if use_cf and self.n != 2:
            raise BlocksimError(f"closed-form kernels are for 2 joints, robot has {self.n}")
        return bool(use_cf)

    def model_data(self) -> tuple:
        """The block's Model and a fresh Data workspace for its batch, checked against each other."""
        data = md.make_data(self.n, self.batch)
        md.check(self._model, data, self.batch)
        return self._model, data

    def joint_width(self, port: str, width, expected: int | None = None):
        """Check an input's width against the robot's joint count n (or `expected`)."""
        need = self.n if expected is None else expected
        if width is not None and width != need:
            raise WidthError(f"input has width {width}, robot '{self.model.name}' needs {need}",
                             block=self.name, port=port)

    def rows(self, key: str) -> np.ndarray:
        """An array parameter as (B, n) (scalar or per joint)."""
        value = getattr(self.p, key)
        if value.ndim == 2 and value.shape[1] not in (1, self.n):
            raise ParameterError(f"'{key}' needs 1 or {self.n} values (one per joint), got "
                                 f"{value.shape[1]}", block=self.name)
        if value.ndim > 2:
            raise ParameterError(f"'{key}' must be a scalar or a vector", block=self.name)
        return np.ascontiguousarray(self.param_as_row(key, self.n))


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
    lugre (Canudas de Wit et al. 1995, as the LuGreFriction block): tau_f = sigma0 z + sigma1 z'
    + sigma2 qd, z' = qd - sigma0 |qd| z / g(qd), g = Fc + (Fs - Fc) exp(-|qd/vs|^delta) (Fc > 0);
    the bristle deflections z (rad, one per joint, initially 0) are continuous states after q and
    qd; no events (pre-sliding is a spring of stiffness sigma0); the bristles are fast, prefer an
    adaptive or stiff solver. karnopp (as the KarnoppFriction block, with the applied torque taken
    from the plant's own equations): inside the band |qd| < dv the friction balances the net
    non-friction torque, i.e. the torque that makes the joint's acceleration zero (the other
    joints' motion included), up to Fs; outside it the stribeck curve (exact sign) + Fv qd; each
    |qd| = dv is a zero crossing (qd is not reset: a joint entering the band keeps its speed).
    Joint stops (`q_min`, `q_max`): zero crossings q - q_max and q_min - q; at the located instant
    q is set to the limit and qd to -restitution qd (0: inelastic; impacts slower than
    STOP_CAPTURE_SPEED end at rest). A joint resting on a stop stays there while the dynamics push it
    outward (its acceleration is held at 0, the other joints move with it locked) and leaves as soon
    as they pull it back. Limits come only from these parameters, not from the robot file's qlim.
    Input `f_ext` (optional, 6): wrench exerted by the environment on the tool, [force (N); moment
    (N m)] in base coordinates, moment about the tool origin.
    Outputs: q (rad), qd (rad/s), qdd (rad/s^2; reads tau directly), pose (12: tool position (m) and
    rotation row-major). q, qd and pose come from the state, so feeding them back is no loop.
    """

    type_name = "Manipulator"
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

    def check(self):
        p = self.p
        for key in ("Fv", "Fc", "damping", "stiffness", "vs", "delta", "tau_max"):
            value = getattr(p, key)
            if np.any(value < 0) or (key in ("vs", "delta", "tau_max") and np.any(value == 0)):
                raise ParameterError(f"'{key}' must be {'> 0' if key in ('vs', 'delta', 'tau_max') else '>= 0'}",
                                     block=self.name)
        if p.friction_smoothing is not None and np.any(p.friction_smoothing < 0):
            raise ParameterError("friction_smoothing must be >= 0", block=self.name)
        if np.any(p.restitution < 0) or np.any(p.restitution > 1):
            raise ParameterError("restitution must lie in [0, 1]", block=self.name)
        if np.any(p.q_min > p.q_max):
            raise ParameterError("q_min must be <= q_max", block=self.name)
        if p.friction in ("none", "model") and (np.any(p.Fv != 0) or np.any(p.Fc != 0) or p.Fs is not None):
            raise ParameterError(f"Fv, Fc and Fs set the coulomb_viscous, stribeck, lugre and karnopp "
                                 f"laws; with friction: {p.friction} they have no effect", block=self.name)
        sigmas = [k for k in ("sigma0", "sigma1", "sigma2") if getattr(p, k) is not None]
        if p.friction != "lugre" and sigmas:
            raise ParameterError(f"{', '.join(sigmas)} set the lugre law; with friction: {p.friction} "
                                 f"they have no effect", block=self.name)
        if p.friction == "lugre":
            if p.sigma0 is None or np.any(p.sigma0 <= 0):
                raise ParameterError("friction: lugre needs sigma0 > 0 (bristle stiffness, N m/rad)",
                                     block=self.name)
            for key in ("sigma1", "sigma2"):
                if getattr(p, key) is not None and np.any(getattr(p, key) < 0):
                    raise ParameterError(f"'{key}' must be >= 0", block=self.name)
            if np.any(p.Fc <= 0) or (p.Fs is not None and np.any(p.Fs <= 0)):
                raise ParameterError("friction: lugre needs Fc > 0 and Fs > 0 (the Stribeck level g "
                                     "divides the bristle rate)", block=self.name)
            if np.any(p.Fv != 0):
                raise ParameterError("friction: lugre takes its viscous term from sigma2, not Fv",
                                     block=self.name)
        if p.friction in ("lugre", "karnopp") and p.friction_smoothing is not None:
            raise ParameterError(f"friction_smoothing smooths the static laws' sign; friction: "
                                 f"{p.friction} has none to smooth", block=self.name)
        if p.friction == "karnopp" and np.any(p.dv <= 0):
            raise ParameterError("'dv' must be > 0", block=self.name)
        if p.Fs is not None and np.any(p.Fs < 0):
            raise ParameterError("'Fs' must be >= 0", block=self.name)

    def resolve_widths(self, in_widths):
        self.joint_width("tau", in_widths.get("tau"))
        self.joint_width("f_ext", in_widths.get("f_ext"), 6)
        return {"q": self.n, "qd": self.n, "qdd": self.n, "pose": 12}

    def feedthrough(self):
        return {("tau", "qdd"), ("f_ext", "qdd")}

    def configure(self, in_widths, out_widths):
        p, n = self.p, self.n
        self._q0 = self.rows("q0")
        self._qd0 = self.rows("qd0")
        law, has_friction, exact = friction_law(self, self.model)
        self._q_min = self.rows("q_min")
        self._q_max = self.rows("q_max")
        self._restitution = self.rows("restitution")
        has_limits = bool(np.any(np.isfinite(self._q_min)) or np.any(np.isfinite(self._q_max)))
        for col, key in ((TAU_MAX, "tau_max"), (DAMPING, "damping"), (STIFFNESS, "stiffness"),
                         (Q_REST, "q_rest")):
            law[:, :, col] = self.rows(key)
        law[:, :, Q_MIN] = self._q_min
        law[:, :, Q_MAX] = self._q_max
        self._law = law
        self._has_fext = "f_ext" in self.connected
        model, data = self.model_data()
        self._p = ManipulatorParams(model, law, data, self._use_cf, p.method == "crba",
                                    self._has_fext, has_friction, has_limits, exact)
        self._lugre = p.friction == "lugre"
        self._karnopp = p.friction == "karnopp"
        self.n_xc = 3 * n if self._lugre else 2 * n
        self._has_limits = has_limits
        self._exact_friction = exact
        self.n_zc = (2 * n if has_limits else 0) + (n if exact else 0)
        self.zc_directions = np.array([1] * (2 * n if has_limits else 0) + [0] * (n if exact else 0),
                                      dtype=np.int64)

    def state_names(self):
        names = self.model.joint_names
        z = [f"z[{j}]" for j in names] if self._lugre else []
        return [f"q[{j}]" for j in names] + [f"qd[{j}]" for j in names] + z, []

    def initial_state(self, xc, xd):
        n = self.n
        xc[:, :n] = self._q0
        xc[:, n:2 * n] = self._qd0
        if self._lugre:
            xc[:, 2 * n:] = 0.0

    def on_event(self, t, xc, xd, u, mask, p=None):
        """A stop reached: q onto the limit, qd reversed and scaled by the restitution (or 0).
        A joint speed through zero under exact-sign friction: qd = 0 exactly, so the dynamics
        decide between sticking and reversing (see manipulator_accelerations). A Karnopp band
        entered or left: nothing to reset (the crossing only ends the step there). p: the run's
        record (None: the block's own)."""
        p = self.runtime_kernels().params if p is None else p
        n = self.n
        if p.has_limits:
            for b, i in zip(*np.nonzero(mask[:, :n] | mask[:, n:2 * n])):
                upper = mask[b, i]
                xc[b, i] = p.law[b, i, Q_MAX] if upper else p.law[b, i, Q_MIN]
                bounce = -self._restitution[b, i] * xc[b, n + i]
                xc[b, n + i] = bounce if abs(bounce) >= STOP_CAPTURE_SPEED else 0.0
        if p.exact and not self._karnopp:
            start = 2 * n if self._has_limits else 0
            for b, i in zip(*np.nonzero(mask[:, start:start + n])):
                xc[b, n + i] = 0.0
        return False

    def closed_form_only(self) -> bool:
        """True when the planar 2R's closed form alone gives qdd for every member and state: no
        joint can stick (exact-sign friction with a static level, a Karnopp band) or rest on a
        stop, and there is no wrench input, no LuGre state and no CRBA request."""
        law = self._law
        static = (law[:, :, FSP] > 0.0) | (law[:, :, FSN] > 0.0)
        can_stick = bool(np.any(static & (law[:, :, EPS] == 0.0)))
        return bool(self._use_cf and self.p.method != "crba" and not self._has_fext
                    and not self._has_limits and not self._lugre and not self._karnopp
                    and not can_stick)

    def kernels(self):
        derivative = (manipulator_closed_form_derivative if self.closed_form_only()
                      else manipulator_derivative)
        return Kernels(output=manipulator_output, partial_output=manipulator_partial_output,
                       derivative=derivative,
                       zero_crossings=manipulator_zero_crossings if self.n_zc else None,
                       params=self._p)


def friction_law(block: RobotBlock, model: RobotModel):
    """The block's per-joint law array (B, n, N_LAW) with the friction columns of its `friction`
    law filled (the others neutral: no torque limit, damping, spring or stops), whether it has
    friction, and whether its sign is exact with a nonzero Coulomb level (needs zero crossings)."""
    p, n, B = block.p, block.n, block.batch
    kind = p.friction
    zeros = np.zeros((B, n))
    if p.friction_smoothing is None:
        eps = np.full((B, n), model.friction_smoothing if kind == "model" else 0.0)
    else:
        eps = block.rows("friction_smoothing")
    vs, delta = block.rows("vs"), block.rows("delta")
    if kind == "none":
        Fv = Fcp = Fcn = zeros
    elif kind == "model":
        Fv = np.broadcast_to(model.viscous, (B, n))
        Fcp = np.broadcast_to(model.coulomb_pos, (B, n))
        Fcn = np.broadcast_to(-model.coulomb_neg, (B, n))
    else:
        Fv, Fcp = block.rows("Fv"), block.rows("Fc")
        Fcn = Fcp
    dynamic = kind in ("lugre", "karnopp")
    Fs = block.rows("Fs") if (kind in ("stribeck", "lugre", "karnopp") and p.Fs is not None) else Fcp
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
        law[:, :, SIGMA0] = block.rows("sigma0")
        for col, key in ((SIGMA1, "sigma1"), (SIGMA2, "sigma2")):
            law[:, :, col] = block.rows(key) if getattr(p, key) is not None else 0.0
        exact = False                     # no mode switch: pre-sliding is a spring
    elif kind == "karnopp":
        law[:, :, FKIND] = KIND_KARNOPP
        law[:, :, DV] = block.rows("dv")
        exact = True                      # the band edges |qd| = dv are zero crossings
    return law, has, exact


# ============================================================================ model-based blocks

class _JointInputs(RobotBlock):
    """Robot block whose inputs all have one value per joint."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS}
    uses_closed_form = True

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {o: self.n for o in self.output_names()}

    def kernel_params(self, law, has_friction):
        model, data = self.model_data()
        return DynamicsParams(model, law, data, self._use_cf, has_friction)


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
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        if self.p.include_friction:
            law, has_friction, _ = friction_law(self, self.model)
        else:
            law, has_friction = neutral_law(self.batch, self.n), False
        self._p = self.kernel_params(law, has_friction)

    def kernels(self):
        output = inverse_dynamics_closed_form_output if self._use_cf else inverse_dynamics_output
        return Kernels(output=output, params=self._p)


@register
class GravityCompensation(_JointInputs):
    """tau = G(q) = rnea(q, 0, 0) (N m): the torque that holds the arm still at q."""

    type_name = "GravityCompensation"
    summary = "tau = G(q), the gravity torque of a (possibly mismatched) robot model"
    inputs = ("q",)
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        self._p = self.kernel_params(neutral_law(self.batch, self.n), False)

    def kernels(self):
        return Kernels(output=gravity_compensation_output, params=self._p)


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
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        law = neutral_law(self.batch, self.n)
        law[:, :, GAIN_P] = self.rows("Kp")
        law[:, :, GAIN_D] = self.rows("Kd")
        self._p = self.kernel_params(law, False)

    def kernels(self):
        return Kernels(output=computed_torque_output, params=self._p)


# ============================================================================ kinematics and energy

@register
class ForwardKinematics(RobotBlock):
    """Tool pose in the base frame from q: position (3, m), rotation (9, row-major), pose (12:
    position then rotation, as the Manipulator's pose output)."""

    type_name = "ForwardKinematics"
    summary = "q -> tool position (m), rotation (row-major), pose"
    inputs = ("q",)
    outputs = ("position", "rotation", "pose")
    port_units = {"pose": "m, -"}

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"position": 3, "rotation": 9, "pose": 12}

    def configure(self, in_widths, out_widths):
        self._p = KinematicsParams(*self.model_data())

    def kernels(self):
        return Kernels(output=forward_kinematics_output, params=self._p)


@register
class Jacobian(RobotBlock):
    """J(q): the 6 x n geometric Jacobian of the tool origin in the base frame, rows [v (m/s);
    w (rad/s)] per unit joint rate, flattened row-major into 6 n values (J[r, c] at r n + c)."""

    type_name = "Jacobian"
    summary = "q -> geometric Jacobian of the tool (6 x n, row-major)"
    inputs = ("q",)
    outputs = ("J",)
    port_units = {"J": "m/rad, -"}

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"J": 6 * self.n}

    def configure(self, in_widths, out_widths):
        self._p = KinematicsParams(*self.model_data())

    def kernels(self):
        return Kernels(output=jacobian_output, params=self._p)


@register
class Energy(RobotBlock):
    """Mechanical energy of the arm (J): kinetic qd^T M qd / 2 (rotor inertia included when on),
    potential -sum_i m_i gravity . p_com_i (zero with every centre of mass at the base origin), total.

    Conserved by the Manipulator with tau = 0, no friction, damping or springs: a check of the solver."""

    type_name = "Energy"
    summary = "q, qd -> kinetic, potential and total energy (J)"
    inputs = ("q", "qd")
    outputs = ("kinetic", "potential", "total")

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {"kinetic": 1, "potential": 1, "total": 1}

    def configure(self, in_widths, out_widths):
        self._p = KinematicsParams(*self.model_data())

    def kernels(self):
        return Kernels(output=energy_output, params=self._p)
