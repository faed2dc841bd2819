"""The identification regressor tau = Y(q, qd, qdd) theta: ten inertial parameters per link, the
reflected rotor inertia and joint friction (viscous, Coulomb, optional Stribeck) per joint.

Built on `RobotModel.regressor`; see `IdentificationModel` for the parameter order and units.
"""
from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..models.friction import coulomb
from ..models.robot import RobotModel

FRICTION_KINDS = ("none", "coulomb_viscous", "stribeck")


class IdentificationModel:
    """What is identified, and the regressor of it.

    theta (the standard parameters, `names`) is, in order:
    - per link i: m_i (kg), mcx_i, mcy_i, mcz_i (kg m), Ixx_i, Ixy_i, Ixz_i, Iyy_i, Iyz_i, Izz_i
      (kg m^2, about the link-frame origin, link axes) - `RobotModel.standard_parameters`;
    - with `rotor_inertia`: Ia_i = N^2 Jm (kg m^2), the reflected rotor inertia, torque Ia_i qdd_i;
    - with friction `coulomb_viscous` or `stribeck`: fv_i (N m s/rad), fcp_i (N m, the Coulomb
      level while qd_i > 0), fcn_i (N m, signed level while qd_i < 0, usually negative);
    - with `stribeck`: fs_i (N m), the static excess Fs - Fc of a fixed-shape Stribeck column
      sign(qd_i) exp(-|qd_i / vs_i|^delta). The shape (vs_i in rad/s, delta: the config's
      `model.stribeck_speed` and `model.stribeck_exponent`) is fixed, so the model stays linear
      in theta.

    The Coulomb and Stribeck columns take the sign of qd as the robot file's friction law does
    (`models.friction.coulomb`): exact for `friction_smoothing` 0, tanh(qd / friction_smoothing)
    for a width > 0 rad/s; None takes the robot file's `friction_smoothing`. A plant whose sign
    is smooth fitted with an exact one (or the reverse) biases the Coulomb and viscous estimates
    wherever |qd| is of the order of the width.
    """

    def __init__(self, robot: RobotModel, *, rotor_inertia: bool = False,
                 friction: str = "coulomb_viscous", stribeck_speed=0.1,
                 stribeck_exponent: float = 2.0, friction_smoothing: float | None = None):
        if friction not in FRICTION_KINDS:
            raise ParameterError(f"friction must be one of {', '.join(FRICTION_KINDS)}, got {friction!r}")
        self.robot = robot.with_options(rotor_inertia=bool(rotor_inertia))
        self.n = robot.n
        self.rotor_inertia = bool(rotor_inertia)
        self.friction = friction
        self.friction_smoothing = float(robot.friction_smoothing if friction_smoothing is None
                                        else friction_smoothing)
        if not self.friction_smoothing >= 0:
            raise ParameterError(f"friction_smoothing must be >= 0 (rad/s), got {self.friction_smoothing}")
        self.stribeck_speed = np.broadcast_to(np.asarray(stribeck_speed, dtype=float),
                                              (self.n,)).copy()
        self.stribeck_exponent = float(stribeck_exponent)
        if np.any(self.stribeck_speed <= 0):
            raise ParameterError("stribeck_speed must be > 0 (rad/s)")
        names = self.robot.parameter_names(friction=friction != "none")
        if friction == "stribeck":
            names += [f"fs{i + 1}" for i in range(self.n)]
        self.names = names
        self.p = len(names)

    # ------------------------------------------------------------------ layout
    @property
    def n_links(self) -> int:
        return self.n

    def link_slice(self, i: int) -> slice:
        """Entries of link i's ten inertial parameters in theta."""
        return slice(10 * i, 10 * i + 10)

    def rotor_slice(self) -> slice:
        """Entries of Ia_1..Ia_n (empty without rotor inertia)."""
        k = 10 * self.n
        return slice(k, k + (self.n if self.rotor_inertia else 0))

    def friction_slice(self) -> slice:
        """Entries fv_1, fcp_1, fcn_1, fv_2, ... (empty without friction)."""
        k = self.rotor_slice().stop
        return slice(k, k + (3 * self.n if self.friction != "none" else 0))

    def stribeck_slice(self) -> slice:
        """Entries fs_1..fs_n (empty unless friction is stribeck)."""
        k = self.friction_slice().stop
        return slice(k, k + (self.n if self.friction == "stribeck" else 0))

    # ------------------------------------------------------------------ regressor
    def regressor(self, q, qd, qdd) -> np.ndarray:
        """Y of shape (N, n, p) for states (N, n) (rad, rad/s, rad/s^2): tau_k = Y[k] @ theta (N m)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        qdd = np.atleast_2d(np.asarray(qdd, dtype=float))
        Y = self.robot.regressor(q, qd, qdd, friction=self.friction != "none",
                                 smoothing=self.friction_smoothing)
        if self.friction == "stribeck":
            Y = np.concatenate([Y, self._stribeck_columns(qd, self.friction_smoothing)], axis=2)
        return Y

    def _stribeck_columns(self, qd, smoothing):
        shape = coulomb(qd, 1.0, smoothing) * \
            np.exp(-np.abs(qd / self.stribeck_speed) ** self.stribeck_exponent)
        return shape[:, :, None] * np.eye(self.n)

    def sign_columns(self) -> np.ndarray:
        """Indices into theta of the entries whose columns hold the sign of qd (fcp, fcn and, with
        Stribeck, fs): the only columns that depend on `friction_smoothing`."""
        fr = self.friction_slice()
        cols = [k for k in range(fr.start, fr.stop) if (k - fr.start) % 3 != 0]
        return np.array(cols + list(range(self.stribeck_slice().start, self.stribeck_slice().stop)),
                        dtype=int)

    def sign_regressor(self, qd, smoothing: float) -> np.ndarray:
        """The columns `sign_columns` of the regressor (N, n, k) at joint speeds qd (N, n) rad/s
        with the sign smoothed over `smoothing` rad/s (0: exact), as `regressor` builds them."""
        qd = np.atleast_2d(np.asarray(qd, dtype=float))
        sign = coulomb(qd, 1.0, smoothing)
        eye = np.eye(self.n)
        parts = []
        if self.friction != "none":
            F = np.stack([np.maximum(sign, 0.0)[:, :, None] * eye,
                          np.maximum(-sign, 0.0)[:, :, None] * eye], axis=3)     # (N, n, n, 2)
            parts.append(F.reshape(qd.shape[0], self.n, 2 * self.n))
        if self.friction == "stribeck":
            parts.append(self._stribeck_columns(qd, smoothing))
        return np.concatenate(parts, axis=2) if parts else np.zeros((qd.shape[0], self.n, 0))

    def with_friction_smoothing(self, smoothing: float) -> "IdentificationModel":
        """The same model with the sign of its friction columns smoothed over `smoothing` rad/s."""
        return IdentificationModel(self.robot, rotor_inertia=self.rotor_inertia,
                                   friction=self.friction, stribeck_speed=self.stribeck_speed,
                                   stribeck_exponent=self.stribeck_exponent,
                                   friction_smoothing=smoothing)

    def stacked(self, q, qd, qdd) -> np.ndarray:
        """The regressor stacked sample by sample: (N n, p), row k n + j is joint j of sample k."""
        Y = self.regressor(q, qd, qdd)
        return Y.reshape(-1, self.p)

    def torque(self, theta, q, qd, qdd) -> np.ndarray:
        """tau (N, n) = Y theta (N m)."""
        return self.regressor(q, qd, qdd) @ np.asarray(theta, dtype=float)

    # ------------------------------------------------------------------ parameters
    def parameters_of(self, robot: RobotModel, stribeck=None) -> np.ndarray:
        """theta of a robot model with the same kinematics: its links, N^2 Jm (when identified), its
        viscous and Coulomb friction (from the robot file), and `stribeck` (n,) Fs - Fc (default 0)."""
        if robot.n != self.n:
            raise ParameterError(f"robot '{robot.name}' has {robot.n} joints, the model {self.n}")
        model = robot.with_options(rotor_inertia=self.rotor_inertia)
        theta = model.standard_parameters(friction=self.friction != "none")
        if self.friction == "stribeck":
            extra = np.zeros(self.n) if stribeck is None else np.asarray(stribeck, dtype=float)
            theta = np.concatenate([theta, extra])
        return theta

    def robot_from(self, theta, name: str | None = None) -> RobotModel:
        """A RobotModel with the kinematics of `self.robot` and the parameters theta (the Stribeck
        entries, which RobotModel has no field for, are dropped)."""
        theta = np.asarray(theta, dtype=float)
        model = self.robot.with_standard_parameters(theta[:self.friction_slice().stop])
        model = model.with_options(friction_smoothing=self.friction_smoothing)
        return model.with_options(name=name) if name else model
