"""RobotModel: an immutable serial-chain manipulator (revolute and prismatic joints) and its dynamics.

Built from DH tables, URDF files or the shipped YAML presets; the algorithms are the numba kernels
of `rigid_body_kernels` (RNEA, CRBA, ABA after Featherstone), batched over a leading axis.

Conventions (everywhere in this module)
- SI units: m, kg, s, N, N m; angles in rad. Gravity is a vector in the base frame (m/s^2).
- q, qd, qdd, tau have shape (n,) or (B, n); results keep the batch shape of the input
  ((n,) in, (n,) out; (B, n) in, (B, n) out; matrices (n, n) or (B, n, n)).
- Joint variables: a revolute joint turns its link by q about the joint's z axis (DH) or URDF
  axis; a prismatic joint slides it by q along that axis. DH offsets are added: theta = q + theta0
  (revolute), d = q + d0 (prismatic).
- Standard DH (Denavit-Hartenberg 1955, Corke's `DHRobot`): link frame i sits at the distal end of
  link i and  T_{i-1,i} = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i).
- Modified DH (Craig 1986, Khalil): link frame i sits on joint i and
  T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i); a link row holds
  (alpha_{i-1}, a_{i-1}, d_i, theta_i) under the keys alpha, a, d, theta.
- Link inertial data (mass, com, inertia) are given in the link frame (DH frame i, or the URDF
  child-link frame); `inertia` is the tensor about the centre of mass with link-frame axes.
- The tool frame is fixed in the last link frame (`tool`, identity by default).
- Rigid-body terms: tau = M(q) qdd + C(q, qd) qd + g(q) - J(q)^T f_ext. With `rotor_inertia=True`
  the reflected rotor inertia N^2 Jm is added to M's diagonal (and so to rnea/aba); joint friction
  (`friction_torque`) is never part of rnea/aba/mass_matrix: add it where the plant has it.
- f_ext: a wrench exerted BY the environment ON the tool, [force (N); moment (N m)] in base
  coordinates, moment about the tool origin; shape (6,) or (B, 6).

Low-level kernel API (for blocks, no Python overhead beyond one numba call):
    jt, xt, inertia, armature, tool = model.arrays
    ws = model.workspace()            # scratch, one per caller/thread
    rbk.rnea_into(jt, xt, inertia, armature, tool, q, qd, qdd, model.gravity, rbk.NO_FEXT, out, ws)
with `rbk = blocksim.models.rigid_body_kernels`; see that module for every kernel and shape. The
blocks call the same kernels on the Model/Data form of `model_data` (`stack_model` builds a Model
from RobotModels, one row of fields per batch member).
"""
from __future__ import annotations

import functools
import math
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import BlocksimError, ParameterError, SourceLoc, did_you_mean
from . import arm_geometry
from . import ik_solutions
from . import kinematics as kin
from . import rigid_body_kernels as rbk
from . import singularities
from .frames import (JointSpec, homogeneous, inertial_from_params, pack_pose, params_from_inertial,
                     params_transform_matrix, rotx, rotz, transform_params)
from .input_values import text
from .friction import coulomb
from ..reading.located_yaml import loc_of
from .planar2r import Distributed2R, ik_2r
from .robot_file import (CONVENTIONS, RobotFileError, inertia_tensor, link_values, model_values,
                         pose_matrix, read_robot_yaml, source_path)
from .urdf import URDFError, parse_urdf

__all__ = ["RobotModel", "JointSpec", "IKError", "NO_FEXT", "PARAMETER_ORDER", "RobotFileError"]

NO_FEXT = rbk.NO_FEXT

#: The ten standard inertial parameters of a link, about the link-frame origin (Khalil).
PARAMETER_ORDER = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")

_DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


class IKError(BlocksimError):
    """Inverse kinematics did not reach the pose (unreachable, singular, or too few iterations)."""


# ----------------------------------------------------------------------------- small geometry

def _rot_h(R):
    return homogeneous(R=R)


def _trans_h(x=0.0, y=0.0, z=0.0):
    return homogeneous(p=(x, y, z))


# ----------------------------------------------------------------------------- joint description

def _dh_joint(row, convention):
    """JointSpec of one checked DH row (`robot_file.link_values`); see the module docstring for
    both conventions."""
    a, alpha, d, theta = row["a"], row["alpha"], row["d"], row["theta"]
    if convention == "standard":
        placement = _rot_h(rotz(theta)) @ _trans_h(z=d)
        offset = _trans_h(x=a) @ _rot_h(rotx(alpha))
    else:
        placement = _rot_h(rotx(alpha)) @ _trans_h(x=a) @ _rot_h(rotz(theta)) @ _trans_h(z=d)
        offset = np.eye(4)
    return JointSpec(name=row["name"], jtype=row["jtype"], placement=placement, offset=offset,
                     theta=params_from_inertial(row["mass"], row["com"], row["inertia"]),
                     lower=row["lower"], upper=row["upper"], viscous=row["viscous"],
                     coulomb_pos=row["coulomb_pos"], coulomb_neg=row["coulomb_neg"],
                     Jm=row["Jm"], gear=row["gear"])


# ----------------------------------------------------------------------------- the model

class RobotModel:
    """An immutable serial manipulator: kinematics, rigid-body dynamics, friction, regressor.

    Attributes (read-only): `name`, `n` (joints), `joint_names`, `joint_types` ('revolute' or
    'prismatic'), `gravity` (3,), `rotor_inertia` (bool), `q_lower`/`q_upper` (n,),
    `viscous`, `coulomb_pos`, `coulomb_neg` (n,), `Jm`, `gear` (n,), `armature` (n,) = N^2 Jm when
    rotor inertia is on else 0, `friction_smoothing` (s: 0 for sign, > 0 for tanh(qd / s)),
    `tool` (4x4 in the last link frame), `link_offsets` (n, 4, 4), `arrays` (kernel arrays),
    `closed_form` (a `Distributed2R` for planar 2R arms, else None), `wrist_arm` (the geometry
    of a spherical-wrist arm, else None; computed on first use).

    The public methods share one scratch workspace: a model is not safe to call from several
    threads at once (give each thread its own `workspace()` and use the kernels).
    """

    def __init__(self, joints, *, tool=None, gravity=_DEFAULT_GRAVITY, name="robot",
                 rotor_inertia=False, friction_smoothing=0.0, planar_lengths=None, notes=()):
        if len(joints) == 0:
            raise ParameterError("a robot needs at least one movable joint")
        self._joints = tuple(joints)
        self.name = str(name)
        self.n = len(joints)
        self.rotor_inertia = bool(rotor_inertia)
        self.friction_smoothing = float(friction_smoothing)
        self._planar_lengths = planar_lengths
        self.notes = tuple(notes)
        g = np.asarray(gravity, dtype=float).reshape(3)
        self.gravity = _frozen(g)
        self.tool = _frozen(np.asarray(tool if tool is not None else np.eye(4), dtype=float))
        js = self._joints
        self.joint_names = tuple(j.name for j in js)
        self.joint_types = tuple("revolute" if j.jtype == 0 else "prismatic" for j in js)
        self.q_lower = _frozen(np.array([j.lower for j in js]))
        self.q_upper = _frozen(np.array([j.upper for j in js]))
        self.viscous = _frozen(np.array([j.viscous for j in js]))
        self.coulomb_pos = _frozen(np.array([j.coulomb_pos for j in js]))
        self.coulomb_neg = _frozen(np.array([j.coulomb_neg for j in js]))
        self.Jm = _frozen(np.array([j.Jm for j in js]))
        self.gear = _frozen(np.array([j.gear for j in js]))
        reflected = np.array([j.gear ** 2 * j.Jm for j in js])
        self.reflected_rotor_inertia = _frozen(reflected)
        self.armature = _frozen(reflected if self.rotor_inertia else np.zeros(self.n))
        self.link_offsets = _frozen(np.stack([j.offset for j in js]))
        # kernel arrays: body frames are the moved joint frames
        jtype = np.array([j.jtype for j in js], dtype=np.int64)
        xtree = np.empty((self.n, 12))
        inertia = np.empty((self.n, 10))
        self._to_body = np.empty((self.n, 10, 10))
        prev = np.eye(4)
        for i, j in enumerate(js):
            xtree[i] = pack_pose(prev @ j.placement)
            self._to_body[i] = params_transform_matrix(j.offset)
            inertia[i] = self._to_body[i] @ j.theta
            prev = j.offset
        tool_body = prev @ self.tool
        self.arrays = (_frozen(jtype), _frozen(xtree), _frozen(inertia), self.armature,
                       _frozen(pack_pose(tool_body)))
        self._ws = rbk.workspace(self.n)
        self.closed_form = self._detect_closed_form()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dh(cls, links, convention="standard", gravity=_DEFAULT_GRAVITY, name="robot", *,
                tool=None, base=None, rotor_inertia=False, friction_smoothing=0.0):
        """A model from a DH table: `links` is a list of dicts, one per joint, with keys

        type ('revolute' | 'prismatic'), a (m), alpha (rad), d (m), theta (rad, the offset),
        mass (kg), com (3,) m in the link frame, inertia (kg m^2, about the com, link axes:
        3 diagonal values, 6 values Ixx Ixy Ixz Iyy Iyz Izz, or 3x3), Jm (kg m^2) and G (gear
        ratio; reflected inertia G^2 Jm), viscous (N m s/rad) and coulomb (N m; scalar or
        [Tc+, Tc-]) at the joint, or B and Tc at the motor (scaled by G^2 and |G|), qlim [lo, hi],
        name. `convention` is 'standard' or 'modified' (formulas in the module docstring).
        `tool` and `base` are 4x4 poses or {xyz, rpy}: the tool in the last link frame, the first
        DH frame in the world (base) frame.
        """
        text(convention, None, "convention", choices=CONVENTIONS)
        return cls._from_rows(links, convention, gravity, name,
                              None if tool is None else pose_matrix(tool, None, "tool"),
                              None if base is None else pose_matrix(base, None, "base"),
                              rotor_inertia, friction_smoothing, None, ParameterError)

    @classmethod
    def _from_rows(cls, links, convention, gravity, name, tool, base, rotor_inertia,
                   friction_smoothing, where, error):
        """`from_dh` on checked options (tool and base 4x4 or None): each row is checked by
        `robot_file.link_values` at its own line (`where` is the table's place), errors of class
        `error`."""
        rows = [link_values(link, i, loc_of(links, i, where), error) for i, link in enumerate(links)]
        joints = [_dh_joint(row, convention) for row in rows]
        base_T = np.eye(4) if base is None else base
        if not np.allclose(base_T, np.eye(4)):
            joints[0] = replace(joints[0], placement=base_T @ joints[0].placement)
        planar = None
        if (convention == "standard" and len(rows) == 2 and np.allclose(base_T, np.eye(4))
                and tool is None and all(row["jtype"] == 0 for row in rows)
                and all(row[k] == 0.0 for row in rows for k in ("alpha", "d", "theta"))):
            planar = (rows[0]["a"], rows[1]["a"])
        return cls(joints, tool=tool, gravity=gravity, name=name, rotor_inertia=rotor_inertia,
                   friction_smoothing=friction_smoothing, planar_lengths=planar)

    @classmethod
    def from_urdf(cls, path, *, base_link=None, tip_link=None, gravity=_DEFAULT_GRAVITY,
                  rotor_inertia=False, friction_smoothing=0.0, names_at=None):
        """A model from a URDF file (or an XML string starting with '<'); see `blocksim.models.urdf`.

        The chain runs from `base_link` (default: the root link) to `tip_link` (default: the last
        movable link of the one moving branch, followed through single fixed children, e.g.
        `tool0`); the tool frame is the tip link's frame. What off the chain was lumped or dropped
        is in `model.notes`. A file that cannot be read, malformed XML and wrong values raise
        `URDFError` (a RobotFileError) at the element's line (a wrong base or tip name at
        `names_at[key]`, when given).
        """
        desc = parse_urdf(path, base_link=base_link, tip_link=tip_link, names_at=names_at)
        if desc.couplings:
            c = desc.couplings[0]
            raise URDFError(f"joint '{c.follower}' on the chain mimics joint '{c.leader}': a chain "
                            "with mimic joints has fewer independent coordinates than joints, which "
                            "a RobotModel does not hold: load it with "
                            "blocksim.models.coupled.CoupledRobot.from_urdf (dynamics in the "
                            "independent joints); the robot blocks take it as it is (the .urdf, or "
                            "a robot YAML with it as source)",
                            where=c.where)
        return cls(desc.joints, tool=desc.tool, gravity=gravity, name=desc.name,
                   rotor_inertia=rotor_inertia, friction_smoothing=friction_smoothing,
                   notes=desc.notes)

    @classmethod
    def from_yaml(cls, path):
        """A model from a YAML robot file: the keys of `from_dh` (name, convention, gravity, tool,
        base, rotor_inertia, friction_smoothing) and `links` (the DH table), or `source: arm.urdf`
        (a URDF path relative to the YAML file) with name, gravity, the two flags and the chain's
        `base_link` and `tip_link` (link names of the URDF).

        The file is read as diagrams are (UTF-8, YAML 1.2 scalars, no duplicate keys) and every
        value is checked before the model is built: a file that cannot be read or holds a wrong
        key or value raises `RobotFileError` naming the file and line."""
        return cls._from_mapping(read_robot_yaml(path), str(path))

    @classmethod
    def _from_mapping(cls, data, where, urdf=None):
        """The model of a robot mapping read from file `where` (located or plain data); a URDF
        `source` is read by `urdf` (the options of `from_urdf`; default `from_urdf` itself, which
        refuses mimic joints on the chain; `CoupledRobot.chain_of_urdf` takes them)."""
        loc = SourceLoc(where)
        values = model_values(data, where)
        gravity = _DEFAULT_GRAVITY if values["gravity"] is None else values["gravity"]
        if values["source"] is not None:
            # a URDF file (relative to this file) with the options given here
            try:
                model = (urdf or cls.from_urdf)(source_path(where, values["source"]),
                                                gravity=gravity,
                                      rotor_inertia=values["rotor_inertia"],
                                      friction_smoothing=values["friction_smoothing"],
                                      base_link=values["base_link"], tip_link=values["tip_link"],
                                      names_at={k: loc_of(data, k, loc)
                                                for k in ("base_link", "tip_link")})
            except RobotFileError as err:
                if err.where is not None and err.where.line is None:      # the file itself
                    err.message += f" (the 'source' of {loc_of(data, 'source', loc)})"
                    err.args = (str(err),)
                raise
            if values["overrides"]:
                model = (_overridden(model, values["overrides"]) if isinstance(model, RobotModel)
                         else model.rebuilt(_overridden(model.full, values["overrides"])))
            return model if values["name"] is None else model.with_options(name=values["name"])
        try:
            return cls._from_rows(values["links"], values["convention"], gravity,
                                  values["name"] or Path(where).stem, values["tool"], values["base"],
                                  values["rotor_inertia"], values["friction_smoothing"],
                                  loc_of(data, "links", loc), RobotFileError)
        except ParameterError as err:
            raise err.located(where=loc)

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def preset_names() -> tuple[str, ...]:
        """Names of the shipped robots (YAML files in blocksim/models/robots/; listed once)."""
        folder = resources.files("blocksim.models").joinpath("robots")
        return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")))

    @classmethod
    def preset(cls, name):
        """A shipped robot by name: two_link, two_link_point_mass, puma560, kr6_like."""
        names = cls.preset_names()
        if name not in names:
            hint = did_you_mean(name, names)
            raise ParameterError(f"unknown robot preset '{name}'{hint}; known: {', '.join(names)}")
        ref = resources.files("blocksim.models").joinpath("robots", name + ".yaml")
        with resources.as_file(ref) as p:
            return cls.from_yaml(p)

    def _rebuild(self, joints=None, **kw):
        args = dict(tool=self.tool.copy(), gravity=self.gravity.copy(), name=self.name,
                    rotor_inertia=self.rotor_inertia, friction_smoothing=self.friction_smoothing,
                    planar_lengths=self._planar_lengths, notes=self.notes)
        args.update(kw)
        return RobotModel(self._joints if joints is None else joints, **args)

    def with_options(self, *, gravity=None, rotor_inertia=None, friction_smoothing=None, name=None):
        """A copy with other gravity (3,), rotor-inertia flag, friction smoothing or name."""
        kw = {}
        if gravity is not None:
            kw["gravity"] = np.asarray(gravity, dtype=float)
        if rotor_inertia is not None:
            kw["rotor_inertia"] = rotor_inertia
        if friction_smoothing is not None:
            kw["friction_smoothing"] = friction_smoothing
        if name is not None:
            kw["name"] = name
        return self._rebuild(**kw)

    def with_payload(self, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """A new model carrying a rigid payload fixed to the tool.

        mass (kg); com (3,) m in the tool frame; inertia about the payload's com with tool-frame
        axes (3, 6 or 3x3 values, kg m^2; default 0, a point mass). Added to the last link.
        """
        Ic = inertia_tensor(inertia if inertia is not None else (0.0, 0.0, 0.0), None,
                            "payload inertia")
        theta_tool = params_from_inertial(mass, com, Ic)
        theta_link = transform_params(theta_tool, np.asarray(self.tool))
        last = self._joints[-1]
        joints = list(self._joints)
        joints[-1] = replace(last, theta=last.theta + theta_link)
        return self._rebuild(joints)

    def with_link_params(self, i, *, mass=None, com=None, inertia=None):
        """A new model with link i's mass (kg), com (m, link frame) or inertia (about the com)
        replaced; what is not given is kept (the com and inertia about the com stay put)."""
        m0, c0, I0 = inertial_from_params(self._joints[i].theta)
        m = m0 if mass is None else float(mass)
        c = c0 if com is None else np.asarray(com, dtype=float)
        Ic = I0 if inertia is None else inertia_tensor(inertia, None, f"link {i + 1} inertia")
        joints = list(self._joints)
        joints[i] = replace(joints[i], theta=params_from_inertial(m, c, Ic))
        return self._rebuild(joints)

    def scaled(self, mass_factor):
        """A new model whose links are heavier by `mass_factor` (scalar or one per link) at equal
        shape: mass and inertia scale together, centres of mass stay (a density error)."""
        f = np.broadcast_to(np.asarray(mass_factor, dtype=float), (self.n,))
        joints = [replace(j, theta=j.theta * fi) for j, fi in zip(self._joints, f)]
        return self._rebuild(joints)

    def with_standard_parameters(self, theta):
        """A new model from a parameter vector ordered as `parameter_names()` (friction and
        rotor entries, when present, are read too)."""
        theta = np.asarray(theta, dtype=float)
        joints = []
        n10 = 10 * self.n
        for i, j in enumerate(self._joints):
            joints.append(replace(j, theta=theta[10 * i:10 * i + 10].copy()))
        k = n10
        if self.rotor_inertia and theta.size >= k + self.n:
            joints = [replace(j, Jm=theta[k + i] / j.gear ** 2) for i, j in enumerate(joints)]
            k += self.n
        if theta.size >= k + 3 * self.n:
            fr = theta[k:k + 3 * self.n].reshape(self.n, 3)
            joints = [replace(j, viscous=fr[i, 0], coulomb_pos=fr[i, 1], coulomb_neg=fr[i, 2])
                      for i, j in enumerate(joints)]
        return self._rebuild(joints)

    def workspace(self):
        """A fresh kernel scratch array, shape (n + 1, WS_COLS)."""
        return rbk.workspace(self.n)

    # ------------------------------------------------------------------ helpers
    def _batch(self, x, name, width=None):
        width = self.n if width is None else width
        a = np.asarray(x, dtype=float)
        if a.ndim == 1:
            a = a[None, :]
            single = True
        elif a.ndim == 2:
            single = False
        else:
            raise ParameterError(f"{name} must have shape ({width},) or (B, {width}), got {a.shape}")
        if a.shape[1] != width:
            raise ParameterError(f"{name} must have shape ({width},) or (B, {width}), got {np.shape(x)}")
        return np.ascontiguousarray(a), single

    def _fext(self, f_ext, B):
        if f_ext is None:
            return NO_FEXT
        f, _ = self._batch(f_ext, "f_ext", 6)
        if f.shape[0] == 1 and B > 1:
            f = np.ascontiguousarray(np.broadcast_to(f, (B, 6)))
        if f.shape[0] != B:
            raise ParameterError(f"f_ext has {f.shape[0]} rows for a batch of {B}")
        return f

    def _same_batch(self, *arrays):
        B = max(a.shape[0] for a in arrays)
        out = []
        for a in arrays:
            if a.shape[0] != B:
                if a.shape[0] != 1:
                    raise ParameterError(f"batch sizes differ: {a.shape[0]} and {B}")
                a = np.ascontiguousarray(np.broadcast_to(a, (B, a.shape[1])))
            out.append(a)
        return out

    def _gravity(self, gravity):
        if gravity is None:
            return self.gravity
        g = np.asarray(gravity, dtype=float).reshape(3)
        return np.ascontiguousarray(g)

    # ------------------------------------------------------------------ dynamics
    def rnea(self, q, qd, qdd, gravity=None, f_ext=None):
        """Inverse dynamics tau = M qdd + C qd + g - J^T f_ext (N m / N), RNEA, O(n).

        gravity (3,) m/s^2 in the base frame overrides the model's; f_ext: tool wrench (6,) or
        (B, 6), see the module docstring.
        """
        q, single = self._batch(q, "q")
        qd, _ = self._batch(qd, "qd")
        qdd, _ = self._batch(qdd, "qdd")
        q, qd, qdd = self._same_batch(q, qd, qdd)
        out = np.empty_like(q)
        jt, xt, inertia, arm, tool = self.arrays
        rbk.rnea_into(jt, xt, inertia, arm, tool, q, qd, qdd, self._gravity(gravity),
                      self._fext(f_ext, q.shape[0]), out, self._ws)
        return out[0] if single else out

    def mass_matrix(self, q):
        """Joint-space inertia matrix M(q) (n x n), CRBA; includes N^2 Jm when rotor inertia is on."""
        q, single = self._batch(q, "q")
        out = np.empty((q.shape[0], self.n, self.n))
        jt, xt, inertia, arm, _ = self.arrays
        rbk.mass_matrix_into(jt, xt, inertia, arm, q, out, self._ws)
        return out[0] if single else out

    def aba(self, q, qd, tau, f_ext=None, gravity=None):
        """Forward dynamics qdd = M^-1 (tau + J^T f_ext - C qd - g) by the ABA, O(n)."""
        q, single = self._batch(q, "q")
        qd, _ = self._batch(qd, "qd")
        tau, _ = self._batch(tau, "tau")
        q, qd, tau = self._same_batch(q, qd, tau)
        out = np.empty_like(q)
        jt, xt, inertia, arm, tool = self.arrays
        rbk.aba_into(jt, xt, inertia, arm, tool, q, qd, tau, self._gravity(gravity),
                     self._fext(f_ext, q.shape[0]), out, self._ws)
        return out[0] if single else out

    def gravity_torque(self, q):
        """g(q) = rnea(q, 0, 0): the torque that holds the arm still (N m)."""
        z = np.zeros_like(np.asarray(q, dtype=float))
        return self.rnea(q, z, z)

    def nonlinear_effects(self, q, qd):
        """C(q, qd) qd + g(q) = rnea(q, qd, 0) (N m)."""
        return self.rnea(q, qd, np.zeros_like(np.asarray(qd, dtype=float)))

    def coriolis_matrix(self, q, qd):
        """C(q, qd) in Christoffel form: C qd = velocity-product torques, dM/dt - 2 C skew."""
        q, single = self._batch(q, "q")
        qd, _ = self._batch(qd, "qd")
        q, qd = self._same_batch(q, qd)
        out = np.empty((q.shape[0], self.n, self.n))
        jt, xt, inertia, _, _ = self.arrays
        rbk.coriolis_matrix_into(jt, xt, inertia, q, qd, out, self._ws)
        return out[0] if single else out

    def kinetic_energy(self, q, qd):
        """T = qd^T M(q) qd / 2 (J), rotor inertia included when on."""
        qd_b, single = self._batch(qd, "qd")
        M = self.mass_matrix(np.atleast_2d(q))
        T = 0.5 * np.einsum("bi,bij,bj->b", qd_b, M, qd_b)
        return T[0] if single else T

    def potential_energy(self, q):
        """V = -sum_i m_i gravity . p_com_i (J), zero with every centre of mass at the base origin."""
        q_b, single = self._batch(q, "q")
        poses = self._body_poses(q_b)
        inertia = self.arrays[2]
        m = inertia[:, 0]
        h = inertia[:, 1:4]
        R = poses[..., :9].reshape(q_b.shape[0], self.n, 3, 3)
        p = poses[..., 9:]
        mc = m[None, :, None] * p + np.einsum("bnij,nj->bni", R, h)
        V = -np.einsum("bni,i->b", mc, self.gravity)
        return V[0] if single else V

    def friction_torque(self, qd, smoothing=None):
        """Joint friction viscous * qd + Coulomb (N m): +coulomb_pos while qd > 0, coulomb_neg while
        qd < 0, 0 at rest; with smoothing s > 0 (default: the model's) sign is tanh(qd / s)."""
        qd, single = self._batch(qd, "qd")
        out = np.empty_like(qd)
        s = self.friction_smoothing if smoothing is None else float(smoothing)
        rbk.friction_into(self.viscous, self.coulomb_pos, self.coulomb_neg, s, qd, out)
        return out[0] if single else out

    # ------------------------------------------------------------------ kinematics
    def _body_poses(self, q_b):
        out = np.empty((q_b.shape[0], self.n, 12))
        kin.body_poses_into(self.arrays[0], self.arrays[1], q_b, out)
        return out

    def fk(self, q):
        """Tool pose in the base frame, 4x4 (or (B, 4, 4)), position in m."""
        q, single = self._batch(q, "q")
        out = np.empty((q.shape[0], 4, 4))
        kin.fk_into(self.arrays[0], self.arrays[1], self.arrays[4], q, out)
        return out[0] if single else out

    def link_poses(self, q):
        """Poses of the n link frames (DH frame i or URDF link) in the base frame: (n, 4, 4) or (B, n, 4, 4)."""
        q, single = self._batch(q, "q")
        P = self._body_poses(q)
        T = np.zeros((q.shape[0], self.n, 4, 4))
        T[..., :3, :3] = P[..., :9].reshape(q.shape[0], self.n, 3, 3)
        T[..., :3, 3] = P[..., 9:]
        T[..., 3, 3] = 1.0
        T = T @ self.link_offsets
        return T[0] if single else T

    def jacobian(self, q):
        """Geometric Jacobian (6 x n) of the tool origin in the base frame, rows [v (m/s); w (rad/s)]."""
        q, single = self._batch(q, "q")
        out = np.empty((q.shape[0], 6, self.n))
        kin.jacobian_into(self.arrays[0], self.arrays[1], self.arrays[4], q, out)
        return out[0] if single else out

    def ik(self, pose, q0=None, tol=1e-10, max_iter=200, position_only=False):
        """Joint angles placing the tool at `pose` (4x4 in the base frame; or a position (3,)).

        Damped least squares (Levenberg-Marquardt with adaptive damping) on the 6-vector error
        [p_target - p; rotation vector of R_target R^T] (m, rad), from q0 (default: zeros).
        Planar 2R presets use the closed form (for a position alone, the elbow branch nearest
        q0; a full pose must lie in the arm's plane and fixes the branch). Converged when the
        error norm is below `tol`; raises IKError naming the remaining error otherwise.
        """
        pose = np.asarray(pose, dtype=float)
        if pose.shape == (3,):
            position_only = True
            pose = homogeneous(p=pose)
        if pose.shape != (4, 4):
            raise ParameterError(f"ik: pose must be 4x4 or a position (3,), got {pose.shape}")
        q = np.zeros(self.n) if q0 is None else np.array(q0, dtype=float).reshape(self.n)
        if self._planar_lengths is not None:
            return self._ik_planar(pose, q, tol, position_only)
        rows = slice(0, 3) if position_only else slice(0, 6)

        def error(qv):
            T = self.fk(qv)
            e = np.empty(6)
            e[:3] = pose[:3, 3] - T[:3, 3]
            e[3:] = kin.rotation_vector(pose[:3, :3] @ T[:3, :3].T)
            return e[rows]

        e = error(q)
        err = np.linalg.norm(e)
        lam = 1e-3
        for _ in range(max_iter):
            if err < tol:
                return q
            J = self.jacobian(q)[rows]
            A = J @ J.T + lam * np.eye(J.shape[0])
            dq = J.T @ np.linalg.solve(A, e)
            step = np.linalg.norm(dq)
            if step > 0.5:
                dq *= 0.5 / step
            q_new = q + dq
            e_new = error(q_new)
            err_new = np.linalg.norm(e_new)
            if err_new < err:
                q, e, err = q_new, e_new, err_new
                lam = max(lam * 0.1, 1e-12)
            else:
                lam *= 10.0
                if lam > 1e8:
                    break
        if err < tol:
            return q
        raise IKError(f"inverse kinematics of '{self.name}' did not reach the pose: remaining error "
                      f"{_describe_error(e, position_only)} (tolerance {tol:g}); the pose may be "
                      f"out of reach or need another start q0")

    @functools.cached_property
    def wrist_arm(self):
        """The zero-pose geometry (`arm_geometry.WristArm`) when the arm has six revolute joints,
        a spherical wrist and parallel axes 2 and 3 (read from the joint axes), else None."""
        return arm_geometry.wrist_arm(self)

    def ik_all(self, pose, q_near=None, *, starts=ik_solutions.STARTS):
        """Every joint vector placing the tool at `pose` (4x4, base frame, m) within the joint
        limits ([-pi, pi] on revolute joints without limits), nearest `q_near` first (default:
        the zero pose), as an `IKSolutions` (.q (k, n), .labels, .complete, .note).

        Arms with a spherical wrist (`wrist_arm`): the closed form, up to eight solutions, each
        labelled (shoulder, elbow, wrist), the list complete. Other arms: the damped least
        squares of `ik` from `starts` starts, solutions found once each, the list possibly
        incomplete (`complete` False). A pose out of reach gives an empty list with a note.
        """
        return ik_solutions.ik_all(self, pose, q_near, starts)

    # ------------------------------------------------------------------ singularities
    def _jacobian_measure(self, q, part, column):
        try:
            r0, r1 = singularities.part_rows(part)
        except ValueError as err:
            raise ParameterError(str(err)) from None
        q, single = self._batch(q, "q")
        out = np.empty((q.shape[0], 3))
        singularities.measures_into(self.arrays[0], self.arrays[1], self.arrays[4], q, r0, r1, out)
        return float(out[0, column]) if single else out[:, column]

    def manipulability(self, q, part="all"):
        """Yoshikawa's manipulability of the Jacobian rows `part` ('all', 'position',
        'orientation'): the product of their singular values, sqrt(det(J J^T)); 0 at a
        singularity (`models.singularities`; part 'all' mixes m and rad)."""
        return self._jacobian_measure(q, part, 0)

    def smallest_singular_value(self, q, part="all"):
        """The smallest singular value of the Jacobian rows `part` (m/rad for 'position', 1 for
        'orientation'): the slowest tool speed per unit joint speed; 0 at a singularity."""
        return self._jacobian_measure(q, part, 1)

    def condition_number(self, q, part="all"):
        """sigma_max / sigma_min of the Jacobian rows `part`: 1 isotropic, inf at a singularity."""
        return self._jacobian_measure(q, part, 2)

    def singularity_distances(self, q):
        """How far q is from each singularity of a spherical-wrist arm (`wrist_arm`), a dict of
        floats (or (B,) arrays): 'shoulder' the wrist centre's distance (m) from the plane through
        axis 1 parallel to axis 2, 'elbow' |sin| of the elbow angle (shoulder, elbow and wrist
        centre in line at 0), 'wrist' |sin| of the angle between axes 4 and 6
        (`models.arm_geometry`). ParameterError for other arms."""
        arm = self.wrist_arm
        if arm is None:
            raise ParameterError(
                f"robot '{self.name}' has no spherical wrist (six revolute joints, axes 4 to 6 "
                "meeting in one point, axes 2 and 3 parallel), so its singularities are not "
                "named: use manipulability, smallest_singular_value or condition_number")
        q, single = self._batch(q, "q")
        out = np.empty((q.shape[0], 3))
        arm_geometry.postures_into(self.arrays[0], self.arrays[1], arm.centre_in_4, q, out)
        out = np.abs(out)
        return {name: (float(out[0, i]) if single else out[:, i])
                for i, name in enumerate(("shoulder", "elbow", "wrist"))}

    def _ik_planar(self, pose, q0, tol, position_only):
        l1, l2 = self._planar_lengths
        x, y = pose[0, 3], pose[1, 3]
        try:
            sols = [ik_2r(x, y, l1, l2, s) for s in (1.0, -1.0)]
        except ValueError as exc:
            raise IKError(f"inverse kinematics of '{self.name}': {exc}") from None
        best, best_key, e = None, None, None
        for s in sols:
            qs = np.array(s)
            qs = q0 + (qs - q0 + math.pi) % (2 * math.pi) - math.pi
            T = self.fk(qs)
            err = np.empty(6)
            err[:3] = pose[:3, 3] - T[:3, 3]
            err[3:] = kin.rotation_vector(pose[:3, :3] @ T[:3, :3].T)
            if position_only:
                err = err[:3]
            # a full pose fixes q1 + q2, so the branch with the smaller error wins; a position
            # alone has two branches, and the one nearest q0 wins
            key = (0.0 if position_only else round(float(np.linalg.norm(err)), 9),
                   float(np.linalg.norm(qs - q0)))
            if best is None or key < best_key:
                best, best_key, e = qs, key, err
        if np.linalg.norm(e) > max(tol, 1e-9):
            raise IKError(f"inverse kinematics of '{self.name}' (planar 2R): the pose is not reachable "
                          f"in the arm's plane, remaining error {_describe_error(e, position_only)}")
        return best

    # ------------------------------------------------------------------ identification
    def parameter_names(self, friction=False):
        """Names of the entries of `standard_parameters()`: m1, mcx1, ..., Izz1, m2, ... (links),
        then Ia1..Ian (reflected rotor inertia, when on), then fv_i, fcp_i, fcn_i (friction)."""
        names = [f"{p}{i + 1}" for i in range(self.n) for p in PARAMETER_ORDER]
        if self.rotor_inertia:
            names += [f"Ia{i + 1}" for i in range(self.n)]
        if friction:
            names += [f"{p}{i + 1}" for i in range(self.n) for p in ("fv", "fcp", "fcn")]
        return names

    def standard_parameters(self, friction=False):
        """theta: per link m (kg), m c (kg m), inertia about the link-frame origin (kg m^2; tensor
        entries Ixx Ixy Ixz Iyy Iyz Izz), link frame axes; then N^2 Jm per joint when rotor inertia
        is on; then (viscous, Coulomb+, Coulomb-) per joint with friction=True."""
        parts = [j.theta for j in self._joints]
        if self.rotor_inertia:
            parts.append(self.armature)
        if friction:
            parts.append(np.stack([self.viscous, self.coulomb_pos, self.coulomb_neg], 1).reshape(-1))
        return np.concatenate(parts)

    def regressor(self, q, qd, qdd, friction=False, smoothing=0.0):
        """Y(q, qd, qdd) with rnea(q, qd, qdd) = Y @ standard_parameters() (plus
        friction_torque(qd, smoothing) when friction=True: the Coulomb columns are the law's sign,
        exact for smoothing 0, tanh(qd / smoothing) for smoothing > 0 rad/s, split into its positive
        and negative parts): shape (n, p) or (B, n, p), p = len(parameter_names())."""
        q, single = self._batch(q, "q")
        qd, _ = self._batch(qd, "qd")
        qdd, _ = self._batch(qdd, "qdd")
        q, qd, qdd = self._same_batch(q, qd, qdd)
        B = q.shape[0]
        Yb = np.empty((B, self.n, 10 * self.n))
        rbk.body_regressor_into(self.arrays[0], self.arrays[1], q, qd, qdd, self.gravity, Yb, self._ws)
        Yb = Yb.reshape(B, self.n, self.n, 10)
        Y = [np.einsum("bnik,ikl->bnil", Yb, self._to_body).reshape(B, self.n, 10 * self.n)]
        eye = np.eye(self.n)
        if self.rotor_inertia:
            Y.append(qdd[:, :, None] * eye)
        if friction:
            F = np.zeros((B, self.n, self.n, 3))
            F[..., 0] = qd[:, :, None] * eye
            sign = coulomb(qd, 1.0, smoothing)
            F[..., 1] = np.maximum(sign, 0.0)[:, :, None] * eye
            F[..., 2] = np.maximum(-sign, 0.0)[:, :, None] * eye
            Y.append(F.reshape(B, self.n, 3 * self.n))
        Y = np.concatenate(Y, axis=2)
        return Y[0] if single else Y

    # ------------------------------------------------------------------ misc
    def _detect_closed_form(self):
        if self._planar_lengths is None:
            return None
        gx, gy, gz = self.gravity
        if gx != 0.0 or gz != 0.0 or gy > 0.0:
            return None
        l1, l2 = self._planar_lengths
        vals = []
        for j, length in zip(self._joints, (l1, l2)):
            m, c, Ic = inertial_from_params(j.theta)
            if abs(c[1]) > 0.0:
                return None
            vals.append((m, length + c[0], Ic[2, 2]))
        (m1, c1, I1), (m2, c2, I2) = vals
        return Distributed2R(m1, m2, l1, l2, c1, c2, I1, I2, -gy,
                             float(self.armature[0]), float(self.armature[1]))

    def __repr__(self):
        kinds = "".join("R" if t == "revolute" else "P" for t in self.joint_types)
        return f"RobotModel({self.name!r}, {self.n} joints {kinds}, gravity={self.gravity.tolist()})"


def _overridden(model, overrides):
    """`model` with a robot file's checked `overrides` ({joint name: ({key: value}, SourceLoc)},
    `robot_file.override_values`) in place of the URDF's values: a body's mass, com and inertia
    (what is not given is kept, as `with_link_params` keeps it), the joint's friction and Jm. A
    name that is not a chain joint is a RobotFileError at its line."""
    joints = list(model._joints)
    for name, (values, where) in overrides.items():
        if name not in model.joint_names:
            raise RobotFileError(f"overrides: '{name}' is not a joint of the chain"
                                 f"{did_you_mean(name, model.joint_names)}; the chain's joints: "
                                 f"{', '.join(model.joint_names)}", where=where)
        i = model.joint_names.index(name)
        m0, c0, I0 = inertial_from_params(joints[i].theta)
        theta = params_from_inertial(values.get("mass", m0), values.get("com", c0),
                                     values.get("inertia", I0))
        joints[i] = replace(joints[i], theta=theta, **{k: float(values[k]) for k in
                            ("viscous", "coulomb_pos", "coulomb_neg", "Jm") if k in values})
    return model._rebuild(joints)


def _describe_error(e, position_only):
    if position_only:
        return f"position {np.linalg.norm(e[:3]):.3g} m"
    return f"position {np.linalg.norm(e[:3]):.3g} m, orientation {np.linalg.norm(e[3:]):.3g} rad"


def _frozen(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a
