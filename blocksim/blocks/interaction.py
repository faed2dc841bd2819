"""Interaction blocks, collision detection: the momentum observer's residual, the direct residual
of the inverse dynamics, and a detector with thresholds, hysteresis and a minimum duration.

Conventions (those of `robot`): SI units, joint torques in N m (forces in N for prismatic joints),
the plant's torque balance M(q) qdd + c(q, qd) + G(q) = tau - tau_f + tau_ext with
tau_ext = J(q)^T f_ext the joint torque of the environment's wrench. Both residuals estimate
tau_ext with that sign: a residual of +5 N m on joint 1 is an external torque pushing joint 1
forwards. The observer's and the direct residual's robot model (ROBOT_PARAMS) and friction model
(FRICTION_PARAMS) are the controller's knowledge, not the plant's: they may differ from it.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from ._bases import JointBlock
from ._kernels import kernel_params
from .base import Kernels, Param, SampleTime, register
from .interaction_kernels import (DetectorParams, MomentumObserverParams, detector_output,
                                  detector_update, detector_zc, direct_residual_output,
                                  discrete_observer_output, discrete_observer_update,
                                  observer_derivative, observer_output, observer_update)
from .robot import (DYNAMICS_PARAMS, FRICTION_PARAMS, ROBOT_PARAMS, _JointInputs,
                    check_friction_values, friction_law)


class _ResidualBlock(_JointInputs):
    """A robot block that subtracts its friction model (`friction`, none by default) from the
    measured torque: the friction law's rows of its values, as the Manipulator's."""

    params = {**ROBOT_PARAMS, **DYNAMICS_PARAMS, **FRICTION_PARAMS}
    takes_mimic = False

    def friction_of(self, v):
        """(law (B, n, N_LAW), has friction) of the values v."""
        law, has, _ = friction_law(self, v)
        return law, has

    def check_values(self, v):
        super().check_values(v)
        check_friction_values(self, v)

    def configure(self, in_widths, out_widths):
        self._has_friction = self.friction_of(self.p)[1]


@register
class MomentumObserver(_ResidualBlock):
    """The generalised-momentum residual r (N m) of De Luca et al. (ICRA 2003, IROS 2006):

        r(t) = K_O (p(t) - p(0) - int_0^t (tau - tau_f(qd) + C^T(q, qd) qd - G(q) + r) ds),
        p = M(q) qd,

    so that dr/dt = K_O (tau_ext - r) per joint on an exact model: r follows the external joint
    torque tau_ext = J^T f_ext through the first-order filter K_O / (s + K_O), a step of tau_ext
    shows as tau_ext (1 - exp(-K_O t)). It needs q, qd and the joint torque `tau` (commanded, or
    derived from the motor currents), never qdd. `friction`: the observer's friction model
    tau_f(qd), subtracted from tau (none by default: the plant's friction then shows in r).

    Continuous (no `period`): the integral is a continuous state. Discrete (`period` T): forward
    Euler at its hits, I_{k+1} = I_k + T (tau_k - tau_f - beta_k + r_k) with beta = G - C^T qd,
    r_k = K_O (p_k - p_0 - I_k) read before the hit's update (a step of tau_ext shows as
    tau_ext (1 - (1 - K_O T)^k) after k samples). p(0) is the momentum at the first major step
    (or hit), so r starts at zero; any other start error would decay as exp(-K_O t).
    Outputs r (N m), which reads q and qd directly (not tau).
    """

    type_name = "MomentumObserver"
    summary = "generalised-momentum residual r -> tau_ext through K_O/(s + K_O) (collision detection)"
    params = {**_ResidualBlock.params,
              "gain": Param(units="1/s", doc="observer gain K_O per joint (> 0): the residual's "
                            "bandwidth in rad/s"),
              "period": Param(None, "s", "sample period of the discrete form (forward Euler); "
                              "none: continuous", kind="time", role="period")}
    inputs = ("q", "qd", "tau")
    joint_angle_inputs = ("q",)
    outputs = ("r",)
    port_units = {"r": "N m"}

    def sample_time(self):
        if self.p.period is None:
            return SampleTime.continuous()
        return SampleTime.discrete(self.p.period)

    def feedthrough(self):
        return {("q", "r"), ("qd", "r")}

    def check_values(self, v):
        super().check_values(v)
        if np.any(v.gain <= 0):
            raise ParameterError(f"gain must be > 0 (the observer's bandwidth K_O, 1/s), got "
                                 f"{v.gain.tolist()}", block=self.name)
        if v.period is not None and v.period <= 0:
            raise ParameterError(f"period must be > 0 s, got {float(v.period)}", block=self.name)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.rows("gain")
        n = self.n
        self._discrete = self.p.period is not None
        self.n_xc = 0 if self._discrete else n
        self.n_xd = (2 * n + 1) if self._discrete else (n + 1)

    def record(self, v):
        law, _ = self.friction_of(v)
        model, data = self.model_data(v)
        period = 0.0 if v.period is None else float(Fraction(v.period))
        return kernel_params(MomentumObserverParams, model=model, law=law, data=data,
                             use_cf=self._use_cf, has_friction=self._has_friction,
                             gain=self.rows("gain", v), period=period,
                             scratch=np.zeros((v.batch, self.n)))

    def state_names(self):
        names = self.model.joint_names
        integral = [f"I[{j}]" for j in names]
        memory = [f"p0[{j}]" for j in names] + ["started"]
        return ([], integral + memory) if self._discrete else (integral, memory)

    def kernels(self):
        if self._discrete:
            return Kernels(output=discrete_observer_output, update=discrete_observer_update)
        return Kernels(output=observer_output, derivative=observer_derivative,
                       update=observer_update)


@register
class DirectResidual(_ResidualBlock):
    """The direct residual r = M(q) qdd + c(q, qd) + G(q) + tau_f(qd) - tau (N m): the torque the
    robot model needs for the measured motion minus the measured joint torque (the seed tutorial's
    sensorless check, model torque against the torque the motor currents imply). An estimate of
    tau_ext without lag, but it needs qdd: from measured positions that is a double difference,
    which amplifies encoder quantisation by 1 / T^2 (the momentum observer avoids it).
    `friction`: the friction model added to the model torque (none by default). All four inputs
    feed r directly."""

    type_name = "DirectResidual"
    summary = "r = M qdd + c + G (+ tau_f) - tau: inverse-dynamics residual of measured motion"
    inputs = ("q", "qd", "qdd", "tau")
    joint_angle_inputs = ("q",)
    outputs = ("r",)
    port_units = {"r": "N m"}

    def record(self, v):
        law, _ = self.friction_of(v)
        return self.dynamics_record(v, law, self._has_friction)

    def kernels(self):
        return Kernels(output=direct_residual_output)


@register
class CollisionDetector(JointBlock):
    """Thresholds on a residual (per joint, N m): a joint is detected when |r| reaches its
    `threshold` and has stayed at or above its `release` level for `min_duration` s since; it is
    released (quiet again) when |r| falls to `release` (release <= threshold: hysteresis).

    Each switch is a located zero crossing (docs/semantics.md, Events): |r| - threshold (rising)
    while quiet, |r| - release (falling) while pending or detected, and with a minimum duration
    t - (t_pending + min_duration) (rising) while pending; under an adaptive solver the switch is
    at the located instant, under a fixed-step solver or on a discrete residual at the step or hit
    where it happened. The modes are discrete states, changed only by events (`on_event`).
    Outputs: flag (1 detected, 0 not, per joint), any (1 when some joint is detected: feed it to a
    StopSimulation to stop the run, or to a Switch's control to change to a reaction), t_detect
    (the first detection time of each joint, s; -1 before it, kept after a release).
    """

    type_name = "CollisionDetector"
    summary = "per-joint thresholds with hysteresis and minimum duration on a residual: flag, time"
    params = {"threshold": Param(units="units of r", doc="detection level on |r| per joint (> 0)"),
              "release": Param(None, "units of r", "release level on |r| per joint, 0 <= release "
                               "<= threshold (default: the threshold, no hysteresis)"),
              "min_duration": Param(0.0, "s", "time |r| must stay above the release level after "
                                    "reaching the threshold before the flag rises (>= 0)")}
    inputs = ("r",)
    outputs = ("flag", "any", "t_detect")
    port_units = {"r": "N m", "flag": "-", "any": "-", "t_detect": "s"}
    width_params = ("threshold", "release", "min_duration")

    def check_values(self, v):
        self.positive("threshold", v=v)
        self.positive("release", "min_duration", allow_zero=True, v=v)
        if v.release is not None:
            threshold = v.threshold.reshape(v.batch, -1)
            release = v.release.reshape(v.batch, -1)
            if threshold.shape[1] in (1, release.shape[1]) or release.shape[1] == 1:
                bad = release > threshold
                if np.any(bad):
                    member = int(np.flatnonzero(bad.any(axis=1))[0])
                    raise ParameterError(
                        f"release must be <= threshold (hysteresis: quiet again when |r| falls to "
                        f"release), got release {release[member].tolist()} and threshold "
                        f"{threshold[member].tolist()}", block=self.name)

    def resolve_widths(self, in_widths):
        widths = super().resolve_widths(in_widths)
        return {**widths, "any": None if widths["flag"] is None else 1}

    def configure(self, in_widths, out_widths):
        self.width = out_widths["flag"]
        self.rows_of(self.p)
        w = self.width
        self._timed = bool(np.any(self.p.min_duration > 0))
        self.n_xd = 3 * w + 1
        self.n_zc = (3 if self._timed else 2) * w
        self.zc_directions = np.array([1] * w + [-1] * w + ([1] * w if self._timed else []),
                                      dtype=np.int64)

    def structure(self, v):
        return bool(np.any(v.min_duration > 0))

    def record(self, v):
        rows = self.rows_of(v)
        release = rows.get("release", rows["threshold"])
        return kernel_params(DetectorParams, threshold=rows["threshold"],
                             release=np.ascontiguousarray(release),
                             min_duration=rows["min_duration"], timed=self._timed)

    def initial_state(self, xc, xd, p=None):
        w = self.width
        xd[...] = 0.0
        xd[:, 2 * w:3 * w] = -1.0

    def state_names(self):
        w = self.width
        return [], ([f"mode[{i}]" for i in range(w)] + [f"t_pending[{i}]" for i in range(w)]
                    + [f"t_first[{i}]" for i in range(w)] + ["started"])

    def kernels(self):
        return Kernels(output=detector_output, update=detector_update,
                       zero_crossings=detector_zc)

    def on_event(self, t, xc, xd, u, mask, p=None):
        """Quiet channels whose |r| reached the threshold: detected (pending with a minimum
        duration); pending or detected ones whose |r| fell to the release level: quiet; pending
        ones whose minimum duration elapsed: detected. The first detection time is kept."""
        p = self.own_record(p)
        self.update(t, xc, xd, u, p)          # started already in a run: the modes are kept
        w = self.width
        mode = xd[:, :w].copy()
        rise = mask[:, :w] & (mode == 0.0)
        fall = mask[:, w:2 * w] & (mode != 0.0)
        due = (mask[:, 2 * w:3 * w] & (mode == 1.0)) if self._timed else np.zeros_like(rise)
        timed = p.min_duration > 0.0
        new = mode.copy()
        new[rise & timed] = 1.0
        new[rise & ~timed] = 2.0
        new[due] = 2.0
        new[fall] = 0.0
        xd[:, w:2 * w][rise] = t
        first = xd[:, 2 * w:3 * w]
        first[(new == 2.0) & (first < 0.0)] = t
        xd[:, :w] = new
        return False
