"""Robot blocks: the Manipulator plant and the model-based blocks built on RobotModel (inverse dynamics,
gravity compensation, computed torque, forward kinematics, Jacobian, energy).

Conventions shared by every block here
- SI units: rad (m for prismatic joints), rad/s, rad/s^2, N m (N), kg, m, J.
- Frames: the robot's base frame. Gravity is the robot file's vector (3-D presets: -9.81 m/s^2 along
  base z; the planar presets `two_link` and `two_link_point_mass` use -y with angle 0 = link
  horizontal along +x, as WORKLOADS.md) unless the block's `gravity` overrides it.
- Joint torque balance of the plant:  M(q) qdd + c(q, qd) + G(q) = tau_sat - tau_f(qd) - d qd
  - k (q - q_rest) + J(q)^T f_ext, with tau_sat the input torque saturated to +-tau_max.
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

Compiled mode: every block's kernels are the module-level adapters at the end of each section
(`manipulator_output`, ...); the Python methods call the same adapters with the same parameter
tuple, so both modes compute identical numbers. Scratch lives in that tuple, allocated once in
configure().
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
from numba import njit

from ..errors import BlocksimError, ParameterError, WidthError
from ..models import planar2r as p2r
from ..models import rigid_body_kernels as rbk
from ..models.robot import RobotModel
from .base import Block, Kernels, Param, register

#: Impact speed (rad/s or m/s) below which a bounce off a joint stop is taken as inelastic, so a
#: joint with restitution comes to rest after finitely many events.
STOP_CAPTURE_SPEED = 1e-6

FRICTION_LAWS = ("none", "model", "coulomb_viscous", "stribeck")

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
    "Fs": Param(None, "N m", "static (breakaway) level per joint, stribeck law (default Fc)"),
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
    """Base of the robot blocks: resolves the robot parameters into per-member RobotModels and the
    kernel arrays (`self._model`: jtype, xtree, inertia (Bm, n, 10), armature (Bm, n), tool (12,),
    gravity (Bm, 3), closed-form parameters (Bm, 9), closed-form flag, workspace); Bm is 1 when
    every batch member has the same robot, else B."""

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
        self._model = self._model_arrays()
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

    def _model_arrays(self):
        models = self.models
        jt, xt, _, _, tool = (np.array(a) for a in models[0].arrays)
        inertia = np.ascontiguousarray(np.stack([m.arrays[2] for m in models]))
        armature = np.ascontiguousarray(np.stack([m.arrays[3] for m in models]))
        gravity = np.ascontiguousarray(np.stack([m.gravity for m in models]))
        use_cf = (self.uses_closed_form and self.p.closed_form == "auto"
                  and all(m.closed_form is not None for m in models))
        cf = np.ascontiguousarray(np.stack([m.closed_form.params() if use_cf else np.zeros(9)
                                            for m in models]))
        return (jt, xt, inertia, armature, tool, gravity, cf, use_cf, rbk.workspace(self.n))

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


# ============================================================================ shared kernels

@njit(cache=True, error_model="numpy")
def _member(array, b):
    """Row of a per-member model array: b when it has one row per member, else 0 (shared)."""
    return b if array.shape[0] > 1 else 0


@njit(cache=True, error_model="numpy")
def _joint_friction(w, Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps):
    """Friction torque of one joint at speed w (N m): Fv w + level(w) s, s = sign(w) (eps = 0) or
    tanh(w / eps); level = Fc + (Fs - Fc) exp(-|w / vs|^delta), with (Fcp, Fsp) while s > 0 and
    (Fcn, Fsn) while s < 0 (magnitudes), as models.friction's Stribeck law."""
    if eps > 0.0:
        s = math.tanh(w / eps)
    elif w > 0.0:
        s = 1.0
    elif w < 0.0:
        s = -1.0
    else:
        s = 0.0
    if s > 0.0:
        fc = Fcp
        fs = Fsp
    else:
        fc = Fcn
        fs = Fsn
    level = fc
    if fs != fc:
        level = fc + (fs - fc) * math.exp(-(abs(w / vs) ** delta))
    return Fv * w + level * s


@njit(cache=True, error_model="numpy")
def _copy_row(src, b, dst):
    """dst[0, :] = src[b, :]."""
    for i in range(dst.shape[1]):
        dst[0, i] = src[b, i]


@njit(cache=True, error_model="numpy")
def _inverse_dynamics_1(m, k, q1, qd1, qdd1, fext1, out1):
    """One member's rnea: out1 (1, n) = M qdd + c + G - J^T fext with member model row k."""
    jt, xt, inertia, arm, tool, grav, cf, use_cf, ws = m
    if use_cf and fext1.shape[0] == 0:
        p2r.rnea_into(cf[k], q1, qd1, qdd1, out1)
    else:
        rbk.rnea_into(jt, xt, inertia[k], arm[k], tool, q1, qd1, qdd1, grav[k], fext1, out1, ws)


@njit(cache=True, error_model="numpy")
def _solve_free(M, rhs, free, L, out):
    """out = solution of M x = rhs restricted to the free joints (Cholesky), 0 for locked joints.

    M (n, n) symmetric positive definite, rhs (n,), free (n,) bool, L (n, n) scratch, out (n,)."""
    n = M.shape[0]
    for i in range(n):
        if not free[i]:
            continue
        for j in range(i + 1):
            if not free[j]:
                continue
            s = M[i, j]
            for c in range(j):
                if free[c]:
                    s -= L[i, c] * L[j, c]
            if i == j:
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    for i in range(n):
        if not free[i]:
            out[i] = 0.0
            continue
        s = rhs[i]
        for c in range(i):
            if free[c]:
                s -= L[i, c] * out[c]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        if not free[i]:
            continue
        s = out[i]
        for c in range(i + 1, n):
            if free[c]:
                s -= L[c, i] * out[c]
        out[i] = s / L[i, i]


@njit(cache=True, error_model="numpy")
def _tool_pose(jt, xt, tool, q, b, T, out, col):
    """out[b, col:col+12] = tool position (3, m) then rotation (9, row-major) in the base frame.

    T (3, 12) scratch poses (R row-major, p)."""
    rbk._set_identity(T[0])
    for i in range(jt.shape[0]):
        rbk._joint_transform(jt[i], xt[i], q[b, i], T[2])
        rbk._compose(T[0], T[2], T[1])
        for j in range(12):
            T[0, j] = T[1, j]
    rbk._compose(T[0], tool, T[1])
    for j in range(3):
        out[b, col + j] = T[1, 9 + j]
    for j in range(9):
        out[b, col + 3 + j] = T[1, j]


# ============================================================================ Manipulator

@njit(cache=True, error_model="numpy")
def manipulator_accelerations(q, qd, tau, fext, m, law, scr, crba, has_fext, qdd):
    """Joint accelerations qdd (B, n) of the plant at (q, qd) under input torque tau (B, n).

    Effective torque: clip(tau, +-tau_max) - friction(qd) - damping qd - stiffness (q - q_rest);
    then forward dynamics by the closed-form 2R, the ABA, or CRBA + Cholesky (crba).
    Locked joints (qdd = 0, the others solved by CRBA + Cholesky on the free joints):
    - a joint resting on a stop (q at a limit, qd = 0) whose acceleration would push it through;
    - a joint at rest (qd = 0 exactly) under an exact-sign friction law, while the torque needed to
      hold it, tau_hold_i = sum_j M_ij qdd_j - rhs_i, stays within its static level (Fs, or Fc for
      coulomb_viscous and model): stiction. Beyond it the joint breaks away, with the static level
      opposing the motion that starts.
    The sets are settled by repetition (each joint changes at most once per call).
    """
    jt, xt, inertia, arm, tool, grav, cf, use_cf, ws = m
    (tau_max, Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps, has_friction,
     damping, stiffness, q_rest, q_min, q_max, has_limits) = law
    q1, qd1, te, zero1, out1, f1, no_fext, M, L, bias, rhs, sol, free, stuck = scr
    B, n = q.shape
    for b in range(B):
        k = _member(inertia, b)
        _copy_row(q, b, q1)
        _copy_row(qd, b, qd1)
        need_crba = crba
        for i in range(n):
            t = tau[b, i]
            lim = tau_max[b, i]
            if t > lim:
                t = lim
            elif t < -lim:
                t = -lim
            w = qd[b, i]
            stuck[i] = False
            if has_friction:
                t -= _joint_friction(w, Fv[b, i], Fcp[b, i], Fcn[b, i], Fsp[b, i], Fsn[b, i],
                                     vs[b, i], delta[b, i], eps[b, i])
                if w == 0.0 and eps[b, i] == 0.0 and (Fsp[b, i] > 0.0 or Fsn[b, i] > 0.0):
                    stuck[i] = True
                    need_crba = True
            free[i] = not stuck[i]
            te[0, i] = t - damping[b, i] * w - stiffness[b, i] * (q[b, i] - q_rest[b, i])
        fx = no_fext
        if has_fext:
            for j in range(6):
                f1[0, j] = fext[b, j]
            fx = f1
        if not need_crba:
            if use_cf and not has_fext:
                p2r.aba_into(cf[k], q1, qd1, te, out1)
            else:
                rbk.aba_into(jt, xt, inertia[k], arm[k], tool, q1, qd1, te, grav[k], fx, out1, ws)
            for i in range(n):
                sol[i] = out1[0, i]
        have_m = False
        for _ in range(2 * n + 1):
            if need_crba:
                if not have_m:
                    if use_cf and not has_fext:
                        p2r.mass_matrix_into(cf[k], q1, M)
                    else:
                        rbk.mass_matrix_into(jt, xt, inertia[k], arm[k], q1, M, ws)
                    _inverse_dynamics_1(m, k, q1, qd1, zero1, fx, bias)
                    for i in range(n):
                        rhs[i] = te[0, i] - bias[0, i]
                    have_m = True
                _solve_free(M[0], rhs, free, L, sol)
            need_crba = False
            for i in range(n):
                if stuck[i]:
                    hold = -rhs[i]
                    for j in range(n):
                        if free[j]:
                            hold += M[0, i, j] * sol[j]
                    level = Fsn[b, i] if hold > 0.0 else Fsp[b, i]
                    if abs(hold) > level:
                        # breakaway: the motion starts opposite to the holding torque
                        stuck[i] = False
                        free[i] = True
                        rhs[i] += level if hold > 0.0 else -level
                        need_crba = True
            if has_limits:
                for i in range(n):
                    if free[i] and qd[b, i] == 0.0 and (
                            (q[b, i] >= q_max[b, i] and sol[i] > 0.0)
                            or (q[b, i] <= q_min[b, i] and sol[i] < 0.0)):
                        free[i] = False
                        need_crba = True
            if not need_crba:
                break
        for i in range(n):
            qdd[b, i] = sol[i]


@njit(cache=True, inline="always")
def manipulator_output(t, xc, xd, u, y, p):
    m, law, scr, crba, has_fext, pose_scratch, qdd, exact_friction = p
    n = y[0].shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            y[0][b, i] = xc[b, i]
            y[1][b, i] = xc[b, n + i]
    manipulator_accelerations(y[0], y[1], u[0], u[1], m, law, scr, crba, has_fext, y[2])
    for b in range(xc.shape[0]):
        _tool_pose(m[0], m[1], m[4], y[0], b, pose_scratch, y[3], 0)


@njit(cache=True, inline="always")
def manipulator_derivative(t, xc, xd, u, dxc, p):
    m, law, scr, crba, has_fext, pose_scratch, qdd, exact_friction = p
    n = xc.shape[1] // 2
    q = xc[:, :n]
    qd = xc[:, n:]
    manipulator_accelerations(q, qd, u[0], u[1], m, law, scr, crba, has_fext, qdd)
    for b in range(xc.shape[0]):
        for i in range(n):
            dxc[b, i] = qd[b, i]
            dxc[b, n + i] = qdd[b, i]


@njit(cache=True, error_model="numpy")
def manipulator_crossings(xc, q_min, q_max, has_limits, exact_friction, g):
    """g = [q - q_max, q_min - q] per joint (rising; -1 for an infinite limit) when limits are set,
    then [qd] per joint (either direction) when the friction sign is exact."""
    B = xc.shape[0]
    n = xc.shape[1] // 2
    for b in range(B):
        j = 0
        if has_limits:
            for i in range(n):
                g[b, i] = xc[b, i] - q_max[b, i] if math.isfinite(q_max[b, i]) else -1.0
                g[b, n + i] = q_min[b, i] - xc[b, i] if math.isfinite(q_min[b, i]) else -1.0
            j = 2 * n
        if exact_friction:
            for i in range(n):
                g[b, j + i] = xc[b, n + i]


@njit(cache=True, inline="always")
def manipulator_zero_crossings(t, xc, xd, u, g, p):
    law = p[1]
    manipulator_crossings(xc, law[13], law[14], law[15], p[7], g)


@register
class Manipulator(RobotBlock):
    """The robot arm as a plant: continuous states q, qd; input joint torques; outputs the motion.

    Equation (module docstring): M(q) qdd + c + G = sat(tau) - tau_f(qd) - damping qd
    - stiffness (q - q_rest) + J^T f_ext, integrated from q0, qd0.
    Forward dynamics: `method: aba` (O(n) articulated-body algorithm) or `crba` (mass matrix by CRBA,
    then Cholesky); the planar 2R presets use the closed form unless `closed_form: never`.
    Friction (`friction`): none; model (the robot file's viscous + Coulomb, asymmetric Coulomb
    allowed); coulomb_viscous (Fv qd + Fc sgn(qd)); stribeck ((Fc + (Fs - Fc) exp(-|qd/vs|^delta))
    sgn(qd) + Fv qd). sgn is tanh(qd / friction_smoothing) when that is > 0 (W1's plant: 1e-3 rad/s);
    with an exact sign each qd = 0 is a zero crossing: the solver stops there, qd is set to 0, and
    the joint sticks while the torque needed to hold it stays within the static level (Fs; Fc for
    coulomb_viscous and model), breaking away once it exceeds it (stick-slip, no chattering).
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
    optional_inputs = ("f_ext",)
    sample = "continuous"
    uses_closed_form = True

    def infinite_ok(self):
        return ("tau_max", "q_min", "q_max")

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
            raise ParameterError(f"Fv, Fc and Fs set the coulomb_viscous and stribeck laws; with friction: "
                                 f"{p.friction} they have no effect", block=self.name)

    def resolve_widths(self, in_widths):
        self.joint_width("tau", in_widths.get("tau"))
        self.joint_width("f_ext", in_widths.get("f_ext"), 6)
        return {"q": self.n, "qd": self.n, "qdd": self.n, "pose": 12}

    def feedthrough(self):
        return {("tau", "qdd"), ("f_ext", "qdd")}

    def configure(self, in_widths, out_widths):
        p, n, B = self.p, self.n, self.batch
        self._q0 = self.rows("q0")
        self._qd0 = self.rows("qd0")
        law, exact = friction_rows(self, self.model)
        self._q_min = self.rows("q_min")
        self._q_max = self.rows("q_max")
        self._restitution = self.rows("restitution")
        has_limits = bool(np.any(np.isfinite(self._q_min)) or np.any(np.isfinite(self._q_max)))
        self._law = (self.rows("tau_max"), *law, self.rows("damping"), self.rows("stiffness"),
                     self.rows("q_rest"), self._q_min, self._q_max, has_limits)
        self._scratch = robot_scratch(n)
        self._has_fext = "f_ext" in self.connected
        self._p = (self._model, self._law, self._scratch, p.method == "crba", self._has_fext,
                   np.zeros((3, 12)), np.zeros((B, n)), exact)
        self.n_xc = 2 * n
        self._has_limits = has_limits
        self._exact_friction = exact
        self.n_zc = (2 * n if has_limits else 0) + (n if exact else 0)
        self.zc_directions = np.array([1] * (2 * n if has_limits else 0) + [0] * (n if exact else 0),
                                      dtype=np.int64)

    def state_names(self):
        names = self.model.joint_names
        return [f"q[{j}]" for j in names] + [f"qd[{j}]" for j in names], []

    def initial_state(self, xc, xd):
        n = self.n
        xc[:, :n] = self._q0
        xc[:, n:] = self._qd0

    def output(self, t, xc, xd, u, y):
        manipulator_output(t, xc, xd, u, y, self._p)

    def derivative(self, t, xc, xd, u, dxc):
        manipulator_derivative(t, xc, xd, u, dxc, self._p)

    def zero_crossings(self, t, xc, xd, u, g):
        manipulator_zero_crossings(t, xc, xd, u, g, self._p)

    def on_event(self, t, xc, xd, u, mask):
        """A stop reached: q onto the limit, qd reversed and scaled by the restitution (or 0).
        A joint speed through zero under exact-sign friction: qd = 0 exactly, so the dynamics
        decide between sticking and reversing (see manipulator_accelerations)."""
        n = self.n
        if self._has_limits:
            for b, i in zip(*np.nonzero(mask[:, :n] | mask[:, n:2 * n])):
                upper = mask[b, i]
                xc[b, i] = self._q_max[b, i] if upper else self._q_min[b, i]
                bounce = -self._restitution[b, i] * xc[b, n + i]
                xc[b, n + i] = bounce if abs(bounce) >= STOP_CAPTURE_SPEED else 0.0
        if self._exact_friction:
            start = 2 * n if self._has_limits else 0
            for b, i in zip(*np.nonzero(mask[:, start:start + n])):
                xc[b, n + i] = 0.0
        return False

    def kernels(self):
        return Kernels(output=manipulator_output, derivative=manipulator_derivative,
                       zero_crossings=manipulator_zero_crossings if self.n_zc else None,
                       params=self._p)


def friction_rows(block: RobotBlock, model: RobotModel):
    """The friction law of a block as kernel rows (Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps (B, n),
    has_friction) and whether its sign is exact with a nonzero Coulomb level (needs zero crossings)."""
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
        Fv = np.ascontiguousarray(np.broadcast_to(model.viscous, (B, n)))
        Fcp = np.ascontiguousarray(np.broadcast_to(model.coulomb_pos, (B, n)))
        Fcn = np.ascontiguousarray(np.broadcast_to(-model.coulomb_neg, (B, n)))
    else:
        Fv, Fcp = block.rows("Fv"), block.rows("Fc")
        Fcn = Fcp
    Fs = block.rows("Fs") if (kind == "stribeck" and p.Fs is not None) else Fcp
    Fsn = Fs if kind == "stribeck" else Fcn
    has = kind != "none"
    exact = has and bool(np.any((eps == 0) & ((Fcp != 0) | (Fcn != 0) | (Fs != 0))))
    law = (Fv, Fcp, Fcn, Fs, Fsn, vs, delta, eps, has)
    return tuple(np.ascontiguousarray(a, dtype=float) if isinstance(a, np.ndarray) else a
                 for a in law), exact


def robot_scratch(n: int):
    """Per-call scratch of the dynamics kernels (one member at a time): q1, qd1, te, zero1, out1
    (1, n); f1 (1, 6); no_fext (0, 6); M (1, n, n); L (n, n); bias (1, n); rhs, sol (n,); free,
    stuck (n,) bool."""
    return (np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n)), np.zeros((1, n)),
            np.zeros((1, 6)), np.zeros((0, 6)), np.zeros((1, n, n)), np.zeros((n, n)),
            np.zeros((1, n)), np.zeros(n), np.zeros(n), np.ones(n, dtype=np.bool_),
            np.zeros(n, dtype=np.bool_))


# ============================================================================ inverse dynamics family

@njit(cache=True, error_model="numpy")
def inverse_dynamics_rows(q, qd, qdd, m, law, scr, tau):
    """tau (B, n) = M(q) qdd + c(q, qd) + G(q) (+ friction(qd) when the law has friction)."""
    (Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps, has_friction) = law
    q1, qd1, qdd1, zero1, out1, f1, no_fext = scr[:7]
    B, n = q.shape
    for b in range(B):
        k = _member(m[2], b)
        _copy_row(q, b, q1)
        _copy_row(qd, b, qd1)
        _copy_row(qdd, b, qdd1)
        _inverse_dynamics_1(m, k, q1, qd1, qdd1, no_fext, out1)
        for i in range(n):
            t = out1[0, i]
            if has_friction:
                t += _joint_friction(qd[b, i], Fv[b, i], Fcp[b, i], Fcn[b, i], Fsp[b, i], Fsn[b, i],
                                     vs[b, i], delta[b, i], eps[b, i])
            tau[b, i] = t


@njit(cache=True, inline="always")
def inverse_dynamics_output(t, xc, xd, u, y, p):
    m, law, scr = p
    inverse_dynamics_rows(u[0], u[1], u[2], m, law, scr, y[0])


@njit(cache=True, inline="always")
def gravity_compensation_output(t, xc, xd, u, y, p):
    m, law, scr, zeros = p
    inverse_dynamics_rows(u[0], zeros, zeros, m, law, scr, y[0])


@njit(cache=True, error_model="numpy")
def computed_torque_rows(q_d, qd_d, qdd_d, q, qd, Kp, Kd, v, m, law, scr, tau):
    """tau = rnea(q, qd, v), v = qdd_d + Kd (qd_d - qd) + Kp (q_d - q)  (v: (B, n) scratch)."""
    for b in range(q.shape[0]):
        for i in range(q.shape[1]):
            v[b, i] = qdd_d[b, i] + Kd[b, i] * (qd_d[b, i] - qd[b, i]) + Kp[b, i] * (q_d[b, i] - q[b, i])
    inverse_dynamics_rows(q, qd, v, m, law, scr, tau)


@njit(cache=True, inline="always")
def computed_torque_output(t, xc, xd, u, y, p):
    m, law, scr, Kp, Kd, v = p
    computed_torque_rows(u[0], u[1], u[2], u[3], u[4], Kp, Kd, v, m, law, scr, y[0])


class _JointInputs(RobotBlock):
    """Robot block whose inputs all have one value per joint."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS}
    uses_closed_form = True

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {o: self.n for o in self.output_names()}

    def _no_friction(self):
        B, n = self.batch, self.n
        z = np.zeros((B, n))
        return (z, z, z, z, z, np.ones((B, n)), np.full((B, n), 2.0), z, False)


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
        law = friction_rows(self, self.model)[0] if self.p.include_friction else self._no_friction()
        self._p = (self._model, law, robot_scratch(self.n))

    def output(self, t, xc, xd, u, y):
        inverse_dynamics_output(t, xc, xd, u, y, self._p)

    def kernels(self):
        return Kernels(output=inverse_dynamics_output, params=self._p)


@register
class GravityCompensation(_JointInputs):
    """tau = G(q) = rnea(q, 0, 0) (N m): the torque that holds the arm still at q."""

    type_name = "GravityCompensation"
    summary = "tau = G(q), the gravity torque of a (possibly mismatched) robot model"
    inputs = ("q",)
    outputs = ("tau",)

    def configure(self, in_widths, out_widths):
        self._p = (self._model, self._no_friction(), robot_scratch(self.n),
                   np.zeros((self.batch, self.n)))

    def output(self, t, xc, xd, u, y):
        gravity_compensation_output(t, xc, xd, u, y, self._p)

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
        self._p = (self._model, self._no_friction(), robot_scratch(self.n), self.rows("Kp"),
                   self.rows("Kd"), np.zeros((self.batch, self.n)))

    def output(self, t, xc, xd, u, y):
        computed_torque_output(t, xc, xd, u, y, self._p)

    def kernels(self):
        return Kernels(output=computed_torque_output, params=self._p)


# ============================================================================ kinematics and energy

@njit(cache=True, inline="always")
def forward_kinematics_output(t, xc, xd, u, y, p):
    m, T, pose = p
    q = u[0]
    for b in range(q.shape[0]):
        _tool_pose(m[0], m[1], m[4], q, b, T, pose, 0)
        for j in range(3):
            y[0][b, j] = pose[b, j]
        for j in range(9):
            y[1][b, j] = pose[b, 3 + j]
        for j in range(12):
            y[2][b, j] = pose[b, j]


@register
class ForwardKinematics(RobotBlock):
    """Tool pose in the base frame from q: position (3, m), rotation (9, row-major), pose (12:
    position then rotation, as the Manipulator's pose output)."""

    type_name = "ForwardKinematics"
    summary = "q -> tool position (m), rotation (row-major), pose"
    inputs = ("q",)
    outputs = ("position", "rotation", "pose")

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"position": 3, "rotation": 9, "pose": 12}

    def configure(self, in_widths, out_widths):
        self._p = (self._model, np.zeros((3, 12)), np.zeros((self.batch, 12)))

    def output(self, t, xc, xd, u, y):
        forward_kinematics_output(t, xc, xd, u, y, self._p)

    def kernels(self):
        return Kernels(output=forward_kinematics_output, params=self._p)


@njit(cache=True, error_model="numpy")
def jacobian_rows(jt, xt, tool, q, poses, J):
    """J (B, 6 n) = the 6 x n geometric Jacobian of the tool origin, rows [v; w], row-major.

    Column i: revolute [z_i x (p_tool - o_i); z_i], prismatic [z_i; 0]; poses (n + 2, 12) scratch."""
    B, n = q.shape
    for b in range(B):
        rbk._set_identity(poses[n + 1])
        for i in range(n):
            rbk._joint_transform(jt[i], xt[i], q[b, i], poses[n])
            rbk._compose(poses[i - 1] if i > 0 else poses[n + 1], poses[n], poses[i])
        rbk._compose(poses[n - 1], tool, poses[n])
        Tt = poses[n]
        for i in range(n):
            T = poses[i]
            zx = T[2]
            zy = T[5]
            zz = T[8]
            if jt[i] == 0:
                dx = Tt[9] - T[9]
                dy = Tt[10] - T[10]
                dz = Tt[11] - T[11]
                J[b, i] = zy * dz - zz * dy
                J[b, n + i] = zz * dx - zx * dz
                J[b, 2 * n + i] = zx * dy - zy * dx
                J[b, 3 * n + i] = zx
                J[b, 4 * n + i] = zy
                J[b, 5 * n + i] = zz
            else:
                J[b, i] = zx
                J[b, n + i] = zy
                J[b, 2 * n + i] = zz
                J[b, 3 * n + i] = 0.0
                J[b, 4 * n + i] = 0.0
                J[b, 5 * n + i] = 0.0


@njit(cache=True, inline="always")
def jacobian_output(t, xc, xd, u, y, p):
    m, poses = p
    jacobian_rows(m[0], m[1], m[4], u[0], poses, y[0])


@register
class Jacobian(RobotBlock):
    """J(q): the 6 x n geometric Jacobian of the tool origin in the base frame, rows [v (m/s);
    w (rad/s)] per unit joint rate, flattened row-major into 6 n values (J[r, c] at r n + c)."""

    type_name = "Jacobian"
    summary = "q -> geometric Jacobian of the tool (6 x n, row-major)"
    inputs = ("q",)
    outputs = ("J",)

    def resolve_widths(self, in_widths):
        self.joint_width("q", in_widths.get("q"))
        return {"J": 6 * self.n}

    def configure(self, in_widths, out_widths):
        self._p = (self._model, np.zeros((self.n + 2, 12)))

    def output(self, t, xc, xd, u, y):
        jacobian_output(t, xc, xd, u, y, self._p)

    def kernels(self):
        return Kernels(output=jacobian_output, params=self._p)


@njit(cache=True, error_model="numpy")
def energy_rows(q, qd, m, M, poses, q1, kinetic, potential, total):
    """kinetic = qd^T M(q) qd / 2, potential = -sum_i gravity . (m_i p_i + R_i h_i) (J; zero with
    every centre of mass at the base origin), total = their sum. Body i's pose is (R_i, p_i) and its
    inertia row holds m_i, h_i = m_i c_i (body frame). Scratch: M (1, n, n), poses (n + 1, 12),
    q1 (1, n)."""
    jt, xt, inertia, arm, tool, grav, cf, use_cf, ws = m
    B, n = q.shape
    for b in range(B):
        k = _member(inertia, b)
        for i in range(n):
            q1[0, i] = q[b, i]
        rbk.mass_matrix_into(jt, xt, inertia[k], arm[k], q1, M, ws)
        T = 0.0
        for i in range(n):
            for j in range(n):
                T += qd[b, i] * M[0, i, j] * qd[b, j]
        T *= 0.5
        V = 0.0
        for i in range(n):
            rbk._joint_transform(jt[i], xt[i], q[b, i], poses[n])
            if i == 0:
                for j in range(12):
                    poses[0, j] = poses[n, j]
            else:
                rbk._compose(poses[i - 1], poses[n], poses[i])
            P = poses[i]
            I = inertia[k, i]
            for r in range(3):
                mc = I[0] * P[9 + r] + P[3 * r] * I[1] + P[3 * r + 1] * I[2] + P[3 * r + 2] * I[3]
                V -= grav[k, r] * mc
        kinetic[b, 0] = T
        potential[b, 0] = V
        total[b, 0] = T + V


@njit(cache=True, inline="always")
def energy_output(t, xc, xd, u, y, p):
    m, M, poses, q1 = p
    energy_rows(u[0], u[1], m, M, poses, q1, y[0], y[1], y[2])


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
        n = self.n
        self._p = (self._model, np.zeros((1, n, n)), np.zeros((n + 1, 12)), np.zeros((1, n)))

    def output(self, t, xc, xd, u, y):
        energy_output(t, xc, xd, u, y, self._p)

    def kernels(self):
        return Kernels(output=energy_output, params=self._p)
