"""Robot blocks: the Manipulator plant and the model-based blocks built on RobotModel (inverse dynamics,
gravity compensation, computed torque, forward kinematics, Jacobian, energy).

Conventions shared by every block here
- SI units: rad (m for prismatic joints), rad/s, rad/s^2, N m (N), kg, m, J.
- Frames: the robot's base frame. Gravity is the robot file's vector (3-D presets: -9.81 m/s^2 along
  base z; the planar presets `two_link` and `two_link_point_mass` use -y with angle 0 = link
  horizontal along +x, as WORKLOADS.md) unless the block's `gravity` overrides it.
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

Compiled mode: every block's kernels are the module-level adapters at the end of each section
(`manipulator_output`, ...); the Python methods call the same adapters with the same parameter
tuple, so both modes compute identical numbers. That tuple holds four arrays and a few flags
("packed kernel data" below): a call's cost grows with the number of arrays it passes, so the
model, the per-joint law and all scratch are packed, allocated once in configure(). The small
inner helpers (friction law, closed-form 2R) are inlined; the n-joint RNEA/ABA/CRBA stay calls.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
from numba import njit

from ..errors import BlocksimError, ParameterError, WidthError
from ..models import planar2r as p2r
from ..models.friction import lugre_friction, stribeck_torque
from ..models import rigid_body_kernels as rbk
from ..models.robot import RobotModel
from .base import Block, Kernels, Param, register

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
    """Base of the robot blocks: resolves the robot parameters into per-member RobotModels and the
    kernel arrays: `self._jt` (n,) joint types, `self._mem` (Bm, mem_size(n)) one model row per
    member (xtree, tool, inertia, armature, gravity, closed-form parameters; Bm is 1 when every
    batch member has the same robot, else B) and `self._use_cf` (closed-form 2R kernels)."""

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
        self._jt, self._mem, self._use_cf = self._model_arrays()
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
        models, n = self.models, self.n
        jt = np.ascontiguousarray(np.array(models[0].arrays[0]), dtype=np.int64)
        use_cf = (self.uses_closed_form and self.p.closed_form == "auto"
                  and all(m.closed_form is not None for m in models))
        if use_cf and n != 2:
            raise BlocksimError(f"closed-form kernels are for 2 joints, robot has {n}")
        mem = np.zeros((len(models), mem_size(n)))
        for k, m in enumerate(models):
            _, xt, inertia, armature, tool = m.arrays
            mem[k] = np.concatenate([np.ravel(xt), np.ravel(tool), np.ravel(inertia),
                                     np.ravel(armature), np.ravel(m.gravity),
                                     m.closed_form.params() if use_cf else np.zeros(11)])
        return jt, mem, bool(use_cf)

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


# ============================================================================ packed kernel data
#
# A robot block's kernels take few arrays: numba passes every array argument of a call that it does
# not inline as a reference-counted struct, and a call from Python unboxes every array, so the cost
# of a call grows with the number of arrays, not with the arithmetic (a 2-joint arm's dynamics
# take a few tens of ns). Every robot block's parameter tuple is (jt, mem, law, work, flags...):
#   jt    (n,) int64 joint types;
#   mem   (Bm, MEM(n)) the member's model in one row: joint placements xtree (n, 12), tool (12),
#         inertia (n, 10), armature (n), gravity (3), closed-form 2R parameters (9) (Bm = 1 when
#         every batch member has the same robot, else B); views are taken by _xt, _tool, ...;
#   law   (B, n, N_LAW) the per-joint coefficients, columns named below (friction law, torque
#         limit, damping, spring, stops, computed-torque gains, the LuGre sigmas, the Karnopp band
#         and FKIND, which of the friction laws the joint has);
#   work  one float scratch array (_layout): the rigid-body workspace, per-call rows, the mass
#         matrix, poses, and the Manipulator's memo of its last accelerations and tool pose.

TAU_MAX, FV, FCP, FCN, FSP, FSN, VS, DELTA, EPS, DAMPING, STIFFNESS, Q_REST, Q_MIN, Q_MAX, \
    GAIN_P, GAIN_D, SIGMA0, SIGMA1, SIGMA2, DV, FKIND = range(21)
N_LAW = 21

#: Values of the FKIND column: a static map (none, model, coulomb_viscous, stribeck), LuGre, Karnopp.
KIND_STATIC, KIND_LUGRE, KIND_KARNOPP = 0.0, 1.0, 2.0

_WS_COLS = rbk.WS_COLS


def mem_size(n: int) -> int:
    """Length of a member's model row in `mem`."""
    return 23 * n + 26


@njit(cache=True, inline="always")
def _xt(mem, k, n):
    return mem[k, :12 * n].reshape((n, 12))


@njit(cache=True, inline="always")
def _tool(mem, k, n):
    return mem[k, 12 * n:12 * n + 12]


@njit(cache=True, inline="always")
def _inertia(mem, k, n):
    return mem[k, 12 * n + 12:22 * n + 12].reshape((n, 10))


@njit(cache=True, inline="always")
def _arm(mem, k, n):
    return mem[k, 22 * n + 12:23 * n + 12]


@njit(cache=True, inline="always")
def _grav(mem, k, n):
    return mem[k, 23 * n + 12:23 * n + 15]


@njit(cache=True, inline="always")
def _cf(mem, k, n):
    return mem[k, 23 * n + 15:23 * n + 26]


@njit(cache=True, inline="always")
def _layout(n, B):
    """Offsets in `work` of: the per-call rows (10 rows of n: q1, qd1, te, zero1, out1, bias, rhs,
    sol, free, stuck), f1 (6), M (n n), L (n n), poses (n + 2, 12), v (B, n), the acceleration memo
    (B rows of 5 n + 7: valid, q, qd, z (LuGre bristles, else unused), tau, f_ext (6), qdd), the pose
    memo (B rows of n + 13: valid, q, pose) and the end; the rigid-body workspace
    ((n + 1) x WS_COLS) comes first."""
    rows = (n + 1) * _WS_COLS
    f1 = rows + 10 * n
    M = f1 + 6
    L = M + n * n
    T = L + n * n
    V = T + 12 * (n + 2)
    MQ = V + B * n
    MP = MQ + B * (5 * n + 7)
    end = MP + B * (n + 13)
    return rows, f1, M, L, T, V, MQ, MP, end


@njit(cache=True, inline="always")
def _ws(work, n):
    return work[:(n + 1) * _WS_COLS].reshape((n + 1, _WS_COLS))


@njit(cache=True, inline="always")
def _row(work, n, r):
    """Per-call row r (0..9) as a (1, n) view."""
    start = (n + 1) * _WS_COLS + r * n
    return work[start:start + n].reshape((1, n))


def robot_work(n: int, batch: int) -> np.ndarray:
    """The `work` scratch array of a robot block with n joints and batch B."""
    return np.zeros(_layout(n, batch)[-1])


@njit(cache=True, error_model="numpy", inline="always")
def _member(array, b):
    """Row of a per-member model array: b when it has one row per member, else 0 (shared)."""
    return b if array.shape[0] > 1 else 0


@njit(cache=True, error_model="numpy", inline="always")
def _same(a, b):
    """a and b are the same float (a signed zero differs from the other; NaN never matches)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@njit(cache=True, error_model="numpy", inline="always")
def _holds(work, start, x, b, count):
    """work[start:start + count] remembers the floats of x[b, :count] (see _same): a memo hit."""
    for i in range(count):
        if not _same(work[start + i], x[b, i]):
            return False
    return True


@njit(cache=True, error_model="numpy")
def _joint_friction(w, Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps):
    """Friction torque of one joint at speed w (N m): models.friction.stribeck_torque with the
    levels (Fcp, Fsp) while w > 0 and (Fcn, Fsn) otherwise (magnitudes; at w = 0 the sign is 0).
    Compiled once and called, not inlined: inlining the core at each of the plant kernels' call
    sites made a cold compile of W2 several seconds slower, and the call costs W2 no run time."""
    forward = w > 0.0
    return stribeck_torque(w, Fcp if forward else Fcn, Fsp if forward else Fsn, vs, delta, Fv, eps)


@njit(cache=True, error_model="numpy", inline="always")
def _law_friction(law, b, i, w):
    """_joint_friction with joint i of member b's coefficients in `law`."""
    return _joint_friction(w, law[b, i, FV], law[b, i, FCP], law[b, i, FCN], law[b, i, FSP],
                           law[b, i, FSN], law[b, i, VS], law[b, i, DELTA], law[b, i, EPS])


@njit(cache=True, error_model="numpy", inline="always")
def _law_lugre(law, b, i, w, z):
    """(dz/dt, friction torque) of joint i's LuGre law at speed w and bristle deflection z:
    models.friction.lugre_friction with member b's coefficients in `law`."""
    return lugre_friction(w, z, law[b, i, SIGMA0], law[b, i, SIGMA1], law[b, i, SIGMA2],
                          law[b, i, FCP], law[b, i, FSP], law[b, i, VS], law[b, i, DELTA])


@njit(cache=True, error_model="numpy")
def _inverse_dynamics_1(jt, mem, k, use_cf, q1, qd1, qdd1, fext1, out1, ws):
    """One member's rnea: out1 (1, n) = M qdd + c + G - J^T fext with member model row k."""
    n = jt.shape[0]
    if use_cf and fext1.shape[0] == 0:
        p2r.rnea_into(_cf(mem, k, n), q1, qd1, qdd1, out1)
    else:
        rbk.rnea_into(jt, _xt(mem, k, n), _inertia(mem, k, n), _arm(mem, k, n), _tool(mem, k, n),
                      q1, qd1, qdd1, _grav(mem, k, n), fext1, out1, ws)


@njit(cache=True, error_model="numpy")
def _solve_free(M, rhs, free, L, out):
    """out = solution of M x = rhs restricted to the free joints (Cholesky), 0 for locked joints.

    M (n, n) symmetric positive definite, rhs (n,), free (n,) (nonzero: free), L (n, n) scratch,
    out (n,)."""
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
def _tool_pose(jt, mem, k, q, b, out, o):
    """out[o:o+12] = tool position (3, m) then rotation (9, row-major) in the base frame at
    q[b, :n]: the product of the joint transforms (rigid_body_kernels._joint_transform and
    _compose, operation for operation) kept in registers, then the tool frame."""
    n = jt.shape[0]
    a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
                                                        1.0, 0.0, 0.0, 0.0)
    for i in range(n + 1):
        x = 12 * i                        # joint i's placement, then (i = n) the tool frame
        r00, r01, r02 = mem[k, x], mem[k, x + 1], mem[k, x + 2]
        r10, r11, r12 = mem[k, x + 3], mem[k, x + 4], mem[k, x + 5]
        r20, r21, r22 = mem[k, x + 6], mem[k, x + 7], mem[k, x + 8]
        p0, p1, p2 = mem[k, x + 9], mem[k, x + 10], mem[k, x + 11]
        if i < n:
            qi = q[b, i]
            if jt[i] == 0:
                c = math.cos(qi)
                s = math.sin(qi)
                r00, r01 = r00 * c + r01 * s, r01 * c - r00 * s
                r10, r11 = r10 * c + r11 * s, r11 * c - r10 * s
                r20, r21 = r20 * c + r21 * s, r21 * c - r20 * s
            else:
                p0 = p0 + r02 * qi
                p1 = p1 + r12 * qi
                p2 = p2 + r22 * qi
        a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 = (
            a0 * r00 + a1 * r10 + a2 * r20, a0 * r01 + a1 * r11 + a2 * r21,
            a0 * r02 + a1 * r12 + a2 * r22,
            a3 * r00 + a4 * r10 + a5 * r20, a3 * r01 + a4 * r11 + a5 * r21,
            a3 * r02 + a4 * r12 + a5 * r22,
            a6 * r00 + a7 * r10 + a8 * r20, a6 * r01 + a7 * r11 + a8 * r21,
            a6 * r02 + a7 * r12 + a8 * r22,
            a0 * p0 + a1 * p1 + a2 * p2 + a9, a3 * p0 + a4 * p1 + a5 * p2 + a10,
            a6 * p0 + a7 * p1 + a8 * p2 + a11)
    out[o] = a9
    out[o + 1] = a10
    out[o + 2] = a11
    out[o + 3] = a0
    out[o + 4] = a1
    out[o + 5] = a2
    out[o + 6] = a3
    out[o + 7] = a4
    out[o + 8] = a5
    out[o + 9] = a6
    out[o + 10] = a7
    out[o + 11] = a8


# ============================================================================ Manipulator

@njit(cache=True, error_model="numpy", inline="always")
def _clipped(law, b, i, t):
    """The input torque t of joint i saturated to +-tau_max (N m)."""
    lim = law[b, i, TAU_MAX]
    if t > lim:
        return lim
    if t < -lim:
        return -lim
    return t


@njit(cache=True, error_model="numpy", inline="always")
def _less_passive(law, b, i, q, w, t):
    """t - damping w - stiffness (q - q_rest) of joint i (N m)."""
    return t - law[b, i, DAMPING] * w - law[b, i, STIFFNESS] * (q - law[b, i, Q_REST])


@njit(cache=True, error_model="numpy", inline="always")
def _effective_torque(law, b, i, q, w, z, t, has_friction):
    """(effective torque, stuck) of joint i: clip(t, +-tau_max) - friction(w, z) - damping w
    - stiffness (q - q_rest). Stuck (its friction left out here: it is the holding torque, up to
    the static level, that the caller solves for): the joint rests (w = 0 exactly) under an
    exact-sign static law with a static level, or its speed is inside a Karnopp band |w| < dv.
    z is the LuGre bristle deflection (unused by the other laws)."""
    t = _clipped(law, b, i, t)
    stuck = False
    if has_friction:
        kind = law[b, i, FKIND]
        if kind == KIND_LUGRE:
            t -= _law_lugre(law, b, i, w, z)[1]
        elif kind == KIND_KARNOPP:
            if abs(w) < law[b, i, DV]:
                stuck = True
            else:
                t -= _law_friction(law, b, i, w)
        else:
            t -= _law_friction(law, b, i, w)
            if w == 0.0 and law[b, i, EPS] == 0.0 and (law[b, i, FSP] > 0.0 or law[b, i, FSN] > 0.0):
                stuck = True
    return _less_passive(law, b, i, q, w, t), stuck


@njit(cache=True, error_model="numpy")
def _accelerations_general(b, xc, tau, fext, jt, mem, law, work, crba, has_fext, has_friction,
                           has_limits, use_cf, qdd):
    """Joint accelerations qdd[b] of member b (see manipulator_accelerations): any n, CRBA or ABA,
    external wrench, stiction and joints resting on a stop."""
    n = jt.shape[0]
    k = _member(mem, b)
    lay = _layout(n, xc.shape[0])
    ws = _ws(work, n)
    q1, qd1, te, zero1, out1, bias = (_row(work, n, 0), _row(work, n, 1), _row(work, n, 2),
                                      _row(work, n, 3), _row(work, n, 4), _row(work, n, 5))
    rhs, sol, free, stuck = (_row(work, n, 6)[0], _row(work, n, 7)[0], _row(work, n, 8)[0],
                             _row(work, n, 9)[0])
    f1 = work[lay[1]:lay[1] + 6].reshape((1, 6))
    no_fext = work[lay[1]:lay[1]].reshape((0, 6))
    M = work[lay[2]:lay[2] + n * n].reshape((1, n, n))
    L = work[lay[3]:lay[3] + n * n].reshape((n, n))
    for i in range(n):
        q1[0, i] = xc[b, i]
        qd1[0, i] = xc[b, n + i]
        zero1[0, i] = 0.0
    need_crba = crba
    lugre = xc.shape[1] > 2 * n
    for i in range(n):
        t, s = _effective_torque(law, b, i, xc[b, i], xc[b, n + i],
                                 xc[b, 2 * n + i] if lugre else 0.0, tau[b, i], has_friction)
        te[0, i] = t
        stuck[i] = 1.0 if s else 0.0
        free[i] = 0.0 if s else 1.0
        if s:
            need_crba = True
    fx = no_fext
    if has_fext:
        for j in range(6):
            f1[0, j] = fext[b, j]
        fx = f1
    if not need_crba:
        if use_cf and not has_fext:
            p2r.aba_into(_cf(mem, k, n), q1, qd1, te, out1)
        else:
            rbk.aba_into(jt, _xt(mem, k, n), _inertia(mem, k, n), _arm(mem, k, n), _tool(mem, k, n),
                         q1, qd1, te, _grav(mem, k, n), fx, out1, ws)
        for i in range(n):
            sol[i] = out1[0, i]
    have_m = False
    for _ in range(2 * n + 1):
        if need_crba:
            if not have_m:
                if use_cf and not has_fext:
                    p2r.mass_matrix_into(_cf(mem, k, n), q1, M)
                else:
                    rbk.mass_matrix_into(jt, _xt(mem, k, n), _inertia(mem, k, n), _arm(mem, k, n),
                                         q1, M, ws)
                _inverse_dynamics_1(jt, mem, k, use_cf, q1, qd1, zero1, fx, bias, ws)
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
                level = law[b, i, FSN] if hold > 0.0 else law[b, i, FSP]
                if abs(hold) > level:
                    # breakaway: the motion starts opposite to the holding torque
                    stuck[i] = 0.0
                    free[i] = 1.0
                    rhs[i] += level if hold > 0.0 else -level
                    need_crba = True
        if has_limits:
            for i in range(n):
                if free[i] and xc[b, n + i] == 0.0 and (
                        (xc[b, i] >= law[b, i, Q_MAX] and sol[i] > 0.0)
                        or (xc[b, i] <= law[b, i, Q_MIN] and sol[i] < 0.0)):
                    free[i] = 0.0
                    need_crba = True
        if not need_crba:
            break
    for i in range(n):
        qdd[b, i] = sol[i]


@njit(cache=True, error_model="numpy", inline="always")
def _accelerations_closed_form(b, xc, tau, mem, law, has_friction, has_limits, qdd):
    """qdd[b] of a planar 2R member by the closed form, all in registers; False (nothing written)
    when a joint sticks or rests on a stop: the general path decides those."""
    k = _member(mem, b)
    q1 = xc[b, 0]
    q2 = xc[b, 1]
    w1 = xc[b, 2]
    w2 = xc[b, 3]
    lugre = xc.shape[1] > 4
    t1, s1 = _effective_torque(law, b, 0, q1, w1, xc[b, 4] if lugre else 0.0, tau[b, 0],
                               has_friction)
    t2, s2 = _effective_torque(law, b, 1, q2, w2, xc[b, 5] if lugre else 0.0, tau[b, 1],
                               has_friction)
    if s1 or s2:
        return False
    a1, a2 = p2r.aba_one(_cf(mem, k, 2), q1, q2, w1, w2, t1, t2)
    if has_limits:
        if w1 == 0.0 and ((q1 >= law[b, 0, Q_MAX] and a1 > 0.0) or (q1 <= law[b, 0, Q_MIN] and a1 < 0.0)):
            return False
        if w2 == 0.0 and ((q2 >= law[b, 1, Q_MAX] and a2 > 0.0) or (q2 <= law[b, 1, Q_MIN] and a2 < 0.0)):
            return False
    qdd[b, 0] = a1
    qdd[b, 1] = a2
    return True


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_accelerations(xc, tau, fext, jt, mem, law, work, use_cf, crba, has_fext,
                              has_friction, has_limits, qdd):
    """Joint accelerations qdd (B, n) of the plant at the state xc = [q | qd] (or [q | qd | z] with
    LuGre friction, z its bristle deflections) under input torque tau.

    Effective torque: clip(tau, +-tau_max) - friction(qd, z) - damping qd - stiffness (q - q_rest);
    then forward dynamics by the closed-form 2R, the ABA, or CRBA + Cholesky (crba).
    Locked joints (qdd = 0, the others solved by CRBA + Cholesky on the free joints):
    - a joint resting on a stop (q at a limit, qd = 0) whose acceleration would push it through;
    - a joint at rest (qd = 0 exactly) under an exact-sign friction law, while the torque needed to
      hold it, tau_hold_i = sum_j M_ij qdd_j - rhs_i, stays within its static level (Fs, or Fc for
      coulomb_viscous and model): stiction. Beyond it the joint breaks away, with the static level
      opposing the motion that starts;
    - a joint inside its Karnopp band (|qd| < dv), by the same rule with the level Fs: the friction
      balances the net non-friction torque (the joint's acceleration is zero) up to Fs.
    The sets are settled by repetition (each joint changes at most once per call).

    Each member's result is remembered in `work` with the state, torque and wrench it came from;
    a call with the very same numbers (the derivative after the output at one solver stage) copies
    it instead of recomputing (a deterministic function of those numbers: the same bits).
    """
    B = xc.shape[0]
    n = jt.shape[0]
    memo = _layout(n, B)[6]
    stride = 5 * n + 7
    nx = xc.shape[1]
    nf = 6 if has_fext else 0
    for b in range(B):
        base = memo + b * stride
        if (work[base] == 1.0 and _holds(work, base + 1, xc, b, nx)
                and _holds(work, base + 1 + 3 * n, tau, b, n)
                and _holds(work, base + 1 + 4 * n, fext, b, nf)):
            for i in range(n):
                qdd[b, i] = work[base + 7 + 4 * n + i]
            continue
        done = False
        if use_cf and not crba and not has_fext:
            done = _accelerations_closed_form(b, xc, tau, mem, law, has_friction, has_limits, qdd)
        if not done:
            _accelerations_general(b, xc, tau, fext, jt, mem, law, work, crba, has_fext,
                                   has_friction, has_limits, use_cf, qdd)
        for i in range(nx):
            work[base + 1 + i] = xc[b, i]
        for i in range(n):
            work[base + 1 + 3 * n + i] = tau[b, i]
        for j in range(nf):
            work[base + 1 + 4 * n + j] = fext[b, j]
        for i in range(n):
            work[base + 7 + 4 * n + i] = qdd[b, i]
        work[base] = 1.0


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_pose(xc, jt, mem, work, pose):
    """pose (B, 12) = tool pose at q = xc[:, :n]; remembered per member with its q in `work`, so
    the second output call of an evaluation (the late one, for qdd) copies it."""
    B = xc.shape[0]
    n = jt.shape[0]
    lay = _layout(n, B)
    stride = n + 13
    for b in range(B):
        base = lay[7] + b * stride
        if not (work[base] == 1.0 and _holds(work, base + 1, xc, b, n)):
            _tool_pose(jt, mem, _member(mem, b), xc, b, work, base + 1 + n)
            for i in range(n):
                work[base + 1 + i] = xc[b, i]
            work[base] = 1.0
        for j in range(12):
            pose[b, j] = work[base + 1 + n + j]


@njit(cache=True, error_model="numpy", inline="always")
def _state_outputs(xc, n, q, qd):
    """q, qd (B, n) from the state xc = [q | qd ...]."""
    for b in range(xc.shape[0]):
        for i in range(n):
            q[b, i] = xc[b, i]
            qd[b, i] = xc[b, n + i]


@njit(cache=True, error_model="numpy")
def manipulator_outputs(xc, tau, fext, q, qd, qdd, pose, jt, mem, law, work, use_cf, crba,
                        has_fext, has_friction, has_limits, want_state, want_qdd, want_pose):
    """The Manipulator's outputs q, qd, qdd, pose (B, n / n / n / 12) at the state xc: q and qd
    when want_state, qdd when want_qdd, pose when want_pose."""
    if want_state:
        _state_outputs(xc, jt.shape[0], q, qd)
    if want_qdd:
        manipulator_accelerations(xc, tau, fext, jt, mem, law, work, use_cf, crba, has_fext,
                                  has_friction, has_limits, qdd)
    if want_pose:
        manipulator_pose(xc, jt, mem, work, pose)


@njit(cache=True, error_model="numpy")
def manipulator_rates(xc, tau, fext, dxc, jt, mem, law, work, use_cf, crba, has_fext,
                      has_friction, has_limits):
    """dxc = [qd | qdd] at the state xc (then dz/dt of the LuGre bristles when xc holds z)."""
    n = jt.shape[0]
    manipulator_accelerations(xc, tau, fext, jt, mem, law, work, use_cf, crba, has_fext,
                              has_friction, has_limits, dxc[:, n:])
    lugre = xc.shape[1] > 2 * n
    for b in range(xc.shape[0]):
        for i in range(n):
            dxc[b, i] = xc[b, n + i]
        if lugre:
            for i in range(n):
                dxc[b, 2 * n + i] = _law_lugre(law, b, i, xc[b, n + i], xc[b, 2 * n + i])[0]


# The compiled-mode adapters only unpack the tuples into the kernels' flat arguments (the Python
# methods call the kernels directly: a tuple costs as much as an array to pass from Python).

@njit(cache=True, error_model="numpy", inline="always")
def manipulator_output(t, xc, xd, u, y, p):
    manipulator_outputs(xc, u[0], u[1], y[0], y[1], y[2], y[3], p[0], p[1], p[2], p[3], p[4], p[5],
                        p[6], p[7], p[8], True, True, True)


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_partial_output(t, xc, xd, u, y, p, want):
    """Only the outputs flagged in want (q, qd, qdd, pose); q and qd are one copy, so either
    flag brings both."""
    if want[2] or want[3]:
        manipulator_outputs(xc, u[0], u[1], y[0], y[1], y[2], y[3], p[0], p[1], p[2], p[3], p[4],
                            p[5], p[6], p[7], p[8], want[0] or want[1], want[2], want[3])
    else:
        _state_outputs(xc, p[0].shape[0], y[0], y[1])


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_derivative(t, xc, xd, u, dxc, p):
    manipulator_rates(xc, u[0], u[1], dxc, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8])


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_closed_form_derivative(t, xc, xd, u, dxc, p):
    """dxc = [qd | qdd] of a planar 2R by the closed form alone: the Manipulator's derivative
    kernel when no joint can stick or rest on a stop (no exact-sign static friction, Karnopp band,
    LuGre state, stop or wrench; see Manipulator.kernels). The operations of manipulator_rates in
    that case, inlined, with nothing of the general path compiled in. It spells out the smooth case
    of _effective_torque rather than calling _accelerations_closed_form, whose sticking, LuGre and
    Karnopp branches would be inlined too: 3 s more of W1's first compile (8.5 -> 11.4 s)."""
    tau, mem, law, has_friction = u[0], p[1], p[2], p[7]
    for b in range(xc.shape[0]):
        q1 = xc[b, 0]
        q2 = xc[b, 1]
        w1 = xc[b, 2]
        w2 = xc[b, 3]
        t1 = _clipped(law, b, 0, tau[b, 0])
        t2 = _clipped(law, b, 1, tau[b, 1])
        if has_friction:
            t1 -= _law_friction(law, b, 0, w1)
            t2 -= _law_friction(law, b, 1, w2)
        a1, a2 = p2r.aba_one(_cf(mem, _member(mem, b), 2), q1, q2, w1, w2,
                         _less_passive(law, b, 0, q1, w1, t1), _less_passive(law, b, 1, q2, w2, t2))
        dxc[b, 0] = w1
        dxc[b, 1] = w2
        dxc[b, 2] = a1
        dxc[b, 3] = a2


@njit(cache=True, error_model="numpy")
def manipulator_crossings(xc, law, has_limits, exact_friction, g):
    """g = [q - q_max, q_min - q] per joint (rising; -1 for an infinite limit) when limits are set,
    then per joint (either direction) qd when the friction sign is exact, |qd| - dv for a Karnopp
    band."""
    B = xc.shape[0]
    n = law.shape[1]
    for b in range(B):
        j = 0
        if has_limits:
            for i in range(n):
                g[b, i] = xc[b, i] - law[b, i, Q_MAX] if math.isfinite(law[b, i, Q_MAX]) else -1.0
                g[b, n + i] = law[b, i, Q_MIN] - xc[b, i] if math.isfinite(law[b, i, Q_MIN]) else -1.0
            j = 2 * n
        if exact_friction:
            for i in range(n):
                if law[b, i, FKIND] == KIND_KARNOPP:
                    g[b, j + i] = abs(xc[b, n + i]) - law[b, i, DV]
                else:
                    g[b, j + i] = xc[b, n + i]


@njit(cache=True, error_model="numpy", inline="always")
def manipulator_zero_crossings(t, xc, xd, u, g, p):
    manipulator_crossings(xc, p[2], p[8], p[9], g)


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
        p, n, B = self.p, self.n, self.batch
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
        self._p = (self._jt, self._mem, law, robot_work(n, B), self._use_cf, p.method == "crba",
                   self._has_fext, has_friction, has_limits, exact)
        self._args = self._p[:9]
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

    def output(self, t, xc, xd, u, y):
        manipulator_outputs(xc, u[0], u[1], y[0], y[1], y[2], y[3], *self._args, True, True, True)

    def derivative(self, t, xc, xd, u, dxc):
        manipulator_rates(xc, u[0], u[1], dxc, *self._args)

    def zero_crossings(self, t, xc, xd, u, g):
        manipulator_crossings(xc, self._law, self._p[8], self._p[9], g)

    def on_event(self, t, xc, xd, u, mask):
        """A stop reached: q onto the limit, qd reversed and scaled by the restitution (or 0).
        A joint speed through zero under exact-sign friction: qd = 0 exactly, so the dynamics
        decide between sticking and reversing (see manipulator_accelerations). A Karnopp band
        entered or left: nothing to reset (the crossing only ends the step there)."""
        n = self.n
        if self._has_limits:
            for b, i in zip(*np.nonzero(mask[:, :n] | mask[:, n:2 * n])):
                upper = mask[b, i]
                xc[b, i] = self._q_max[b, i] if upper else self._q_min[b, i]
                bounce = -self._restitution[b, i] * xc[b, n + i]
                xc[b, n + i] = bounce if abs(bounce) >= STOP_CAPTURE_SPEED else 0.0
        if self._exact_friction and not self._karnopp:
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


def neutral_law(B: int, n: int) -> np.ndarray:
    """A law array (B, n, N_LAW) without friction, torque limit, damping, spring, stops or gains."""
    law = np.zeros((B, n, N_LAW))
    law[:, :, TAU_MAX] = np.inf
    law[:, :, VS] = 1.0
    law[:, :, DELTA] = 2.0
    law[:, :, Q_MIN] = -np.inf
    law[:, :, Q_MAX] = np.inf
    return law


# ============================================================================ inverse dynamics family

@njit(cache=True, error_model="numpy")
def _rnea_general(b, q, qd, qdd, jt, mem, work, tau):
    """tau[b] = M(q) qdd + c(q, qd) + G(q) of member b by the RNEA (any n)."""
    n = jt.shape[0]
    q1, qd1, qdd1, out1 = _row(work, n, 0), _row(work, n, 1), _row(work, n, 2), _row(work, n, 4)
    for i in range(n):
        q1[0, i] = q[b, i]
        qd1[0, i] = qd[b, i]
        qdd1[0, i] = qdd[b, i]
    f1 = _layout(n, q.shape[0])[1]
    _inverse_dynamics_1(jt, mem, _member(mem, b), False, q1, qd1, qdd1,
                        work[f1:f1].reshape((0, 6)), out1, _ws(work, n))
    for i in range(n):
        tau[b, i] = out1[0, i]


@njit(cache=True, error_model="numpy", inline="always")
def _closed_form_rnea(b, q, qd, qdd, mem, tau):
    """tau[b] = M(q) qdd + c(q, qd) + G(q) of member b of a planar 2R by the closed form."""
    t1, t2 = p2r.rnea_one(_cf(mem, _member(mem, b), 2), q[b, 0], q[b, 1], qd[b, 0], qd[b, 1],
                      qdd[b, 0], qdd[b, 1])
    tau[b, 0] = t1
    tau[b, 1] = t2


@njit(cache=True, error_model="numpy", inline="always")
def _add_friction(law, b, n, qd, tau):
    """tau[b] += friction(qd[b]) by the law's coefficients (N m)."""
    for i in range(n):
        tau[b, i] = tau[b, i] + _law_friction(law, b, i, qd[b, i])


@njit(cache=True, error_model="numpy")
def inverse_dynamics_rows(q, qd, qdd, jt, mem, law, work, use_cf, has_friction, tau):
    """tau (B, n) = M(q) qdd + c(q, qd) + G(q) (+ friction(qd) when the law has friction)."""
    B, n = q.shape
    for b in range(B):
        if use_cf:
            _closed_form_rnea(b, q, qd, qdd, mem, tau)
        else:
            _rnea_general(b, q, qd, qdd, jt, mem, work, tau)
        if has_friction:
            _add_friction(law, b, n, qd, tau)


@njit(cache=True, error_model="numpy", inline="always")
def inverse_dynamics_output(t, xc, xd, u, y, p):
    inverse_dynamics_rows(u[0], u[1], u[2], p[0], p[1], p[2], p[3], p[4], p[5], y[0])


@njit(cache=True, error_model="numpy", inline="always")
def _same_as_previous_member(a, b):
    """Row b of the (B, w) array a holds the same floats as row b - 1 (see _same)."""
    for i in range(a.shape[1]):
        if not _same(a[b, i], a[b - 1, i]):
            return False
    return True


@njit(cache=True, error_model="numpy", inline="always")
def inverse_dynamics_closed_form_output(t, xc, xd, u, y, p):
    """InverseDynamics of a planar 2R (its kernel when the model has the closed form): the
    operations of inverse_dynamics_rows, inlined, with nothing of the general RNEA compiled in.

    A member whose inputs are those of the member before, under a model all members share and no
    friction term, copies its torque: a sweep over the plant or the gains with one reference and
    one nominal feedforward evaluates the feedforward once per stage (same bits: it is a
    deterministic function of those numbers)."""
    q, qd, qdd, mem, law, has_friction, tau = u[0], u[1], u[2], p[1], p[2], p[5], y[0]
    shared = mem.shape[0] == 1 and not has_friction
    for b in range(q.shape[0]):
        if (shared and b > 0 and _same_as_previous_member(q, b)
                and _same_as_previous_member(qd, b) and _same_as_previous_member(qdd, b)):
            tau[b, 0] = tau[b - 1, 0]
            tau[b, 1] = tau[b - 1, 1]
            continue
        _closed_form_rnea(b, q, qd, qdd, mem, tau)
        if has_friction:
            _add_friction(law, b, 2, qd, tau)


@njit(cache=True, error_model="numpy")
def gravity_compensation_rows(q, jt, mem, law, work, use_cf, has_friction, tau):
    """tau = G(q) = rnea(q, 0, 0)."""
    B, n = q.shape
    lay = _layout(n, B)
    zeros = work[lay[5]:lay[5] + B * n].reshape((B, n))     # never written in this block's work
    inverse_dynamics_rows(q, zeros, zeros, jt, mem, law, work, use_cf, has_friction, tau)


@njit(cache=True, error_model="numpy", inline="always")
def gravity_compensation_output(t, xc, xd, u, y, p):
    gravity_compensation_rows(u[0], p[0], p[1], p[2], p[3], p[4], p[5], y[0])


@njit(cache=True, error_model="numpy")
def computed_torque_rows(q_d, qd_d, qdd_d, q, qd, jt, mem, law, work, use_cf, has_friction, tau):
    """tau = rnea(q, qd, v), v = qdd_d + Kd (qd_d - qd) + Kp (q_d - q) (v kept in `work`)."""
    B, n = q.shape
    lay = _layout(n, B)
    v = work[lay[5]:lay[5] + B * n].reshape((B, n))
    for b in range(B):
        for i in range(n):
            v[b, i] = (qdd_d[b, i] + law[b, i, GAIN_D] * (qd_d[b, i] - qd[b, i])
                       + law[b, i, GAIN_P] * (q_d[b, i] - q[b, i]))
    inverse_dynamics_rows(q, qd, v, jt, mem, law, work, use_cf, has_friction, tau)


@njit(cache=True, error_model="numpy", inline="always")
def computed_torque_output(t, xc, xd, u, y, p):
    computed_torque_rows(u[0], u[1], u[2], u[3], u[4], p[0], p[1], p[2], p[3], p[4], p[5], y[0])


class _JointInputs(RobotBlock):
    """Robot block whose inputs all have one value per joint."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS}
    uses_closed_form = True

    def resolve_widths(self, in_widths):
        for port, w in in_widths.items():
            self.joint_width(port, w)
        return {o: self.n for o in self.output_names()}

    def kernel_params(self, law, has_friction):
        return (self._jt, self._mem, law, robot_work(self.n, self.batch), self._use_cf, has_friction)


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

    def output(self, t, xc, xd, u, y):
        inverse_dynamics_rows(u[0], u[1], u[2], *self._p, y[0])

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

    def output(self, t, xc, xd, u, y):
        gravity_compensation_rows(u[0], *self._p, y[0])

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

    def output(self, t, xc, xd, u, y):
        computed_torque_rows(u[0], u[1], u[2], u[3], u[4], *self._p, y[0])

    def kernels(self):
        return Kernels(output=computed_torque_output, params=self._p)


# ============================================================================ kinematics and energy

@njit(cache=True, error_model="numpy")
def forward_kinematics_rows(q, jt, mem, work, position, rotation, pose):
    B = q.shape[0]
    for b in range(B):
        _tool_pose(jt, mem, _member(mem, b), q, b, pose[b], 0)
        for j in range(3):
            position[b, j] = pose[b, j]
        for j in range(9):
            rotation[b, j] = pose[b, 3 + j]


@njit(cache=True, error_model="numpy", inline="always")
def forward_kinematics_output(t, xc, xd, u, y, p):
    forward_kinematics_rows(u[0], p[0], p[1], p[2], y[0], y[1], y[2])


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
        self._p = (self._jt, self._mem, robot_work(self.n, self.batch))

    def output(self, t, xc, xd, u, y):
        forward_kinematics_rows(u[0], *self._p, *y)

    def kernels(self):
        return Kernels(output=forward_kinematics_output, params=self._p)


@njit(cache=True, error_model="numpy")
def jacobian_rows(jt, mem, q, work, J):
    """J (B, 6 n) = the 6 x n geometric Jacobian of the tool origin, rows [v; w], row-major.

    Column i: revolute [z_i x (p_tool - o_i); z_i], prismatic [z_i; 0]; poses (n + 2, 12) in work."""
    B, n = q.shape
    T0 = _layout(n, B)[4]
    poses = work[T0:T0 + 12 * (n + 2)].reshape((n + 2, 12))
    for b in range(B):
        k = _member(mem, b)
        xt = _xt(mem, k, n)
        rbk._set_identity(poses[n + 1])
        for i in range(n):
            rbk._joint_transform(jt[i], xt[i], q[b, i], poses[n])
            rbk._compose(poses[i - 1] if i > 0 else poses[n + 1], poses[n], poses[i])
        rbk._compose(poses[n - 1], _tool(mem, k, n), poses[n])
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


@njit(cache=True, error_model="numpy", inline="always")
def jacobian_output(t, xc, xd, u, y, p):
    jacobian_rows(p[0], p[1], u[0], p[2], y[0])


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
        self._p = (self._jt, self._mem, robot_work(self.n, self.batch))

    def output(self, t, xc, xd, u, y):
        jacobian_rows(self._p[0], self._p[1], u[0], self._p[2], y[0])

    def kernels(self):
        return Kernels(output=jacobian_output, params=self._p)


@njit(cache=True, error_model="numpy")
def energy_rows(q, qd, jt, mem, work, kinetic, potential, total):
    """kinetic = qd^T M(q) qd / 2, potential = -sum_i gravity . (m_i p_i + R_i h_i) (J; zero with
    every centre of mass at the base origin), total = their sum. Body i's pose is (R_i, p_i) and its
    inertia row holds m_i, h_i = m_i c_i (body frame). Scratch in work: M (1, n, n), poses
    (n + 1, 12), q1 (1, n)."""
    B, n = q.shape
    lay = _layout(n, B)
    M = work[lay[2]:lay[2] + n * n].reshape((1, n, n))
    poses = work[lay[4]:lay[4] + 12 * (n + 1)].reshape((n + 1, 12))
    q1 = _row(work, n, 0)
    ws = _ws(work, n)
    for b in range(B):
        k = _member(mem, b)
        xt, inertia, grav = _xt(mem, k, n), _inertia(mem, k, n), _grav(mem, k, n)
        for i in range(n):
            q1[0, i] = q[b, i]
        rbk.mass_matrix_into(jt, xt, inertia, _arm(mem, k, n), q1, M, ws)
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
            I = inertia[i]
            for r in range(3):
                mc = I[0] * P[9 + r] + P[3 * r] * I[1] + P[3 * r + 1] * I[2] + P[3 * r + 2] * I[3]
                V -= grav[r] * mc
        kinetic[b, 0] = T
        potential[b, 0] = V
        total[b, 0] = T + V


@njit(cache=True, error_model="numpy", inline="always")
def energy_output(t, xc, xd, u, y, p):
    energy_rows(u[0], u[1], p[0], p[1], p[2], y[0], y[1], y[2])


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
        self._p = (self._jt, self._mem, robot_work(self.n, self.batch))

    def output(self, t, xc, xd, u, y):
        energy_rows(u[0], u[1], *self._p, *y)

    def kernels(self):
        return Kernels(output=energy_output, params=self._p)
