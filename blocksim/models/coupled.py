"""CoupledRobot: a serial chain with mimic joints on it, in its independent coordinates.

A mimic joint follows another joint of the chain, q_f = multiplier * q_leader + offset (as
Pinocchio and the URDF model it). The robot's coordinates are its independent joints, q (n_r,);
the chain's joints (every moving joint, n) are

    q_full = G q + b,   qd_full = G qd,   qdd_full = G qdd

with G (n, n_r) constant (a unit row per independent joint, the multiplier in its leader's column
for a mimic joint) and b (n,) the offsets, so there is no drift term. The dynamics in q follow by
the virtual work of the full chain's joint torques (Featherstone 2008, sec. 3.2, a constraint
whose Jacobian is constant):

    M_r = G^T M(q_full) G,   c_r = G^T c(q_full, qd_full),   tau_r = G^T tau_full,

the rotor inertias and friction of every joint, mimic ones included, carried along by G (a mimic
joint's rotor adds multiplier^2 N^2 Jm to its leader's diagonal). The full chain's kernels
(`RobotModel`, RNEA, CRBA) are used as they are: one expansion before and one contraction after.
The tool Jacobian is J(q_full) G; the identification regressor G^T Y(q_full, ...) on the full
chain's parameters. SI units as in `RobotModel`: m, kg, s, N m; angles in rad; gravity in the base
frame; f_ext the wrench of the environment on the tool.
"""
from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from .coupled_map import contract_matrix, contract_rows, expand_rows
from .robot import RobotModel, _DEFAULT_GRAVITY
from .robot_file import read_robot_yaml
from .urdf import parse_urdf


class CoupledRobot:
    """A serial chain whose joints include mimic joints, with its dynamics in the independent
    joints (see the module docstring).

    Attributes: `full` (the RobotModel of every chain joint), `couplings` (the URDF reader's
    `Coupling`s), `G` (n_full, n) and `b` (n_full,), `n` (independent joints), `joint_names`,
    `q_lower` / `q_upper` (the independent joints' limits; a follower's own <limit> is not
    checked), `gravity`, `rotor_inertia`, `name`,
    `notes`.
    """

    def __init__(self, full: RobotModel, couplings):
        self.full = full
        self.couplings = tuple(couplings)
        names = full.joint_names
        followers = {c.follower: c for c in self.couplings}
        self.independent = tuple(i for i, name in enumerate(names) if name not in followers)
        G = np.zeros((full.n, len(self.independent)))
        b = np.zeros(full.n)
        for k, i in enumerate(self.independent):
            G[i, k] = 1.0
        for c in self.couplings:
            i = names.index(c.follower)
            G[i, self.independent.index(names.index(c.leader))] = c.multiplier
            b[i] = c.offset
        coupling = np.hstack([G, b[:, None]])
        coupling.setflags(write=False)
        #: [G | b] (n_full, n + 1): the map as the compiled kernels take it (`expand_rows`)
        self.coupling = coupling
        self.G, self.b = coupling[:, :-1], coupling[:, -1]
        self.n = len(self.independent)
        self.joint_names = tuple(names[i] for i in self.independent)
        self.q_lower = full.q_lower[list(self.independent)]
        self.q_upper = full.q_upper[list(self.independent)]
        self.gravity = full.gravity
        self.rotor_inertia = full.rotor_inertia
        self.friction_smoothing = full.friction_smoothing
        self.name = full.name
        self.closed_form = None
        self.notes = full.notes + tuple(
            f"joint '{c.follower}' follows joint '{c.leader}': q = {c.multiplier:g} q_{c.leader} "
            f"{'-' if c.offset < 0 else '+'} {abs(c.offset):g}" for c in self.couplings)

    @classmethod
    def from_urdf(cls, path, *, base_link=None, tip_link=None, gravity=_DEFAULT_GRAVITY,
                  rotor_inertia=False, friction_smoothing=0.0):
        """The chain from `base_link` to `tip_link` of a URDF file (or an XML string), mimic
        joints on it included (`RobotModel.from_urdf` for the rest of the options and errors)."""
        desc = parse_urdf(path, base_link=base_link, tip_link=tip_link)
        full = RobotModel(desc.joints, tool=desc.tool, gravity=gravity, name=desc.name,
                          rotor_inertia=rotor_inertia, friction_smoothing=friction_smoothing,
                          notes=desc.notes)
        return cls(full, desc.couplings)

    @staticmethod
    def chain_of_urdf(path, *, base_link=None, tip_link=None, names_at=None, **options):
        """The chain of a URDF file as the blocks take it: a CoupledRobot when mimic joints are on
        it, else the plain RobotModel (options and errors as `RobotModel.from_urdf`)."""
        desc = parse_urdf(path, base_link=base_link, tip_link=tip_link, names_at=names_at)
        options = {"gravity": _DEFAULT_GRAVITY, **options}
        full = RobotModel(desc.joints, tool=desc.tool, name=desc.name, notes=desc.notes, **options)
        return CoupledRobot(full, desc.couplings) if desc.couplings else full

    @staticmethod
    def chain_of_yaml(path):
        """A YAML robot file as the blocks take it (`RobotModel.from_yaml`): a CoupledRobot when
        its URDF `source` has mimic joints on the chain from `base_link` to `tip_link`."""
        return RobotModel._from_mapping(read_robot_yaml(path), str(path),
                                        urdf=CoupledRobot.chain_of_urdf)

    def rebuilt(self, full):
        """This coupling on another model of the same chain (`full`: same joints)."""
        return CoupledRobot(full, self.couplings)

    def with_options(self, **options):
        """A copy with other gravity, rotor_inertia, friction_smoothing or name
        (`RobotModel.with_options`)."""
        return CoupledRobot(self.full.with_options(**options), self.couplings)

    def with_link_params(self, i, **values):
        """A copy with chain link i's (0-based, every chain joint counted) mass, com or inertia
        replaced (`RobotModel.with_link_params`)."""
        return CoupledRobot(self.full.with_link_params(i, **values), self.couplings)

    def with_payload(self, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """A copy carrying a payload fixed to the tool (`RobotModel.with_payload`)."""
        return CoupledRobot(self.full.with_payload(mass, com, inertia), self.couplings)

    def scaled(self, mass_factor):
        """A copy whose chain links are heavier by mass_factor (scalar or one per chain link,
        `RobotModel.scaled`)."""
        return CoupledRobot(self.full.scaled(mass_factor), self.couplings)

    def followers_with_friction(self):
        """Names of the mimic joints whose own viscous or Coulomb coefficient is nonzero."""
        names = self.full.joint_names
        return [c.follower for c in self.couplings
                if any(getattr(self.full, k)[names.index(c.follower)] != 0.0
                       for k in ("viscous", "coulomb_pos", "coulomb_neg"))]

    def __getattr__(self, name):
        # the independent joints' own per-joint data (friction coefficients, rotor data)
        if name in ("viscous", "coulomb_pos", "coulomb_neg", "Jm", "gear"):
            return getattr(self.full, name)[list(self.independent)]
        raise AttributeError(name)

    # ------------------------------------------------------------------ the map
    def _rows(self, x, name):
        a = np.asarray(x, dtype=float)
        if a.ndim not in (1, 2) or a.shape[-1] != self.n:
            raise ParameterError(f"{name} must have shape ({self.n},) or (B, {self.n}) (the "
                                 f"independent joints {', '.join(self.joint_names)}), got {a.shape}")
        return a

    def _mapped(self, x, shift):
        a = np.atleast_2d(x)
        out = np.empty((a.shape[0], self.full.n))
        expand_rows(self.coupling, np.ascontiguousarray(a), shift, out)
        return out if a.ndim == np.ndim(x) else out[0]

    def expand(self, q):
        """The chain's joint positions q_full = G q + b (rad or m), (n_full,) or (B, n_full)."""
        return self._mapped(self._rows(q, "q"), True)

    def expand_rate(self, qd, name="qd"):
        """The chain's joint rates (or accelerations) G qd."""
        return self._mapped(self._rows(qd, name), False)

    def contract(self, tau_full):
        """Generalised forces on the independent joints, G^T tau_full (N m or N)."""
        y = np.asarray(tau_full, dtype=float)
        a = np.ascontiguousarray(np.atleast_2d(y))
        out = np.empty((a.shape[0], self.n))
        contract_rows(self.coupling, a, out)
        return out if y.ndim == 2 else out[0]

    # ------------------------------------------------------------------ kinematics
    def fk(self, q):
        """Tool pose in the base frame, 4x4 (or (B, 4, 4)), m."""
        return self.full.fk(self.expand(q))

    def jacobian(self, q):
        """Geometric tool Jacobian in the independent joints, J(q_full) G: (6, n) or (B, 6, n)."""
        return self.full.jacobian(self.expand(q)) @ self.G

    # ------------------------------------------------------------------ dynamics
    def rnea(self, q, qd, qdd, gravity=None, f_ext=None):
        """tau_r = M_r qdd + c_r - (J G)^T f_ext (N m): G^T RNEA at the expanded state."""
        return self.contract(self.full.rnea(self.expand(q), self.expand_rate(qd),
                                            self.expand_rate(qdd, "qdd"), gravity, f_ext))

    def mass_matrix(self, q):
        """M_r = G^T M(q_full) G (kg m^2), (n, n) or (B, n, n); rotor inertias when on."""
        M = self.full.mass_matrix(self.expand(q))
        rows = M.reshape(-1, self.full.n, self.full.n)
        out = np.empty((rows.shape[0], self.n, self.n))
        for r in range(rows.shape[0]):
            contract_matrix(self.coupling, rows[r], out[r])
        return out.reshape(M.shape[:-2] + (self.n, self.n))

    def nonlinear_effects(self, q, qd):
        """c_r = G^T (C(q_full, qd_full) qd_full + g(q_full)) (N m)."""
        return self.rnea(q, qd, np.zeros_like(np.asarray(qd, dtype=float)))

    def gravity_torque(self, q):
        """G^T g(q_full): the torques that hold the arm still (N m)."""
        z = np.zeros_like(np.asarray(q, dtype=float))
        return self.rnea(q, z, z)

    def aba(self, q, qd, tau, f_ext=None, gravity=None):
        """Forward dynamics qdd = M_r^-1 (tau - c_r + (J G)^T f_ext) (rad/s^2), by a Cholesky
        solve of the n x n reduced system."""
        tau = self._rows(tau, "tau")
        bias = self.rnea(q, qd, np.zeros_like(np.asarray(qd, dtype=float)), gravity, f_ext)
        M = self.mass_matrix(q)
        rhs = tau - bias
        L = np.linalg.cholesky(M)
        y = np.linalg.solve(L, rhs[..., None])
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]

    def friction_torque(self, qd, smoothing=None):
        """G^T of every chain joint's friction at qd_full (N m)."""
        return self.contract(self.full.friction_torque(self.expand_rate(qd), smoothing))

    def kinetic_energy(self, q, qd):
        """T = qd^T M_r qd / 2 (J), the full chain's at (q_full, qd_full)."""
        return self.full.kinetic_energy(self.expand(q), self.expand_rate(qd))

    def potential_energy(self, q):
        """V of the full chain at q_full (J)."""
        return self.full.potential_energy(self.expand(q))

    # ------------------------------------------------------------------ identification
    def parameter_names(self, friction=False):
        """The full chain's parameter names (every link's, mimic joints' included)."""
        return self.full.parameter_names(friction)

    def standard_parameters(self, friction=False):
        """The full chain's standard parameters (`RobotModel.standard_parameters`)."""
        return self.full.standard_parameters(friction)

    def regressor(self, q, qd, qdd, friction=False, smoothing=0.0):
        """G^T Y(q_full, qd_full, qdd_full): rnea(q, qd, qdd) = regressor @ standard_parameters()."""
        Y = self.full.regressor(self.expand(q), self.expand_rate(qd), self.expand_rate(qdd, "qdd"),
                                friction, smoothing)
        return np.swapaxes(np.swapaxes(Y, -1, -2) @ self.G, -1, -2)

    def __repr__(self):
        return (f"CoupledRobot({self.name!r}, {self.n} independent of {self.full.n} joints, "
                f"{len(self.couplings)} mimic)")
