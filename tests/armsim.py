"""An independent simulator of a planar two-link arm for the identification tests: closed-form
dynamics (the textbook M(q), Coriolis and gravity terms of a planar 2R arm, written here and
sharing no code with blocksim's models), fixed-step RK4, joint friction Fv qd + Fc tanh(qd / eps),
and a continuous PD + feedforward law tracking a reference. Then what a drive reports: q rounded to encoder
counts, the torque with white noise of a given share of its rms.

Units SI: lengths m, masses kg, inertias kg m^2 (about the centre of mass, axis normal to the
plane), angles rad, torques N m, friction Fv N m s/rad, Fc N m, eps rad/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Arm:
    """A planar 2R arm moving in the vertical x-y plane, gravity g along -y, angle 0 along +x; link i
    of length l_i has mass m_i, centre of mass at lc_i from joint i on the link's axis and inertia
    I_i about it; joint i has viscous Fv_i, Coulomb Fc_i (both directions alike) and the width eps
    of tanh(qd / eps)."""

    l: tuple = (1.0, 0.8)
    m: tuple = (3.0, 2.0)
    lc: tuple = (0.5, 0.4)
    I: tuple = (0.25, 0.10666666666666667)
    Fv: tuple = (0.5, 0.3)
    Fc: tuple = (1.0, 0.5)
    eps: float = 0.02
    g: float = 9.81

    def rigid(self, q, qd, qdd):
        """tau (2,) of the rigid body (no friction) at one state."""
        M11, M12, M22, h1, h2 = self._mass_bias(q, qd)
        return np.array([M11 * qdd[0] + M12 * qdd[1] + h1, M12 * qdd[0] + M22 * qdd[1] + h2])

    def _mass_bias(self, q, qd):
        """The entries M11, M12, M22 of the mass matrix and the Coriolis + gravity torques h1, h2."""
        (l1, _), (m1, m2), (c1, c2), (I1, I2), g = self.l, self.m, self.lc, self.I, self.g
        cos2, sin2 = math.cos(q[1]), math.sin(q[1])
        M11 = I1 + I2 + m1 * c1 ** 2 + m2 * (l1 ** 2 + c2 ** 2 + 2 * l1 * c2 * cos2)
        M12 = I2 + m2 * (c2 ** 2 + l1 * c2 * cos2)
        M22 = I2 + m2 * c2 ** 2
        k = m2 * l1 * c2 * sin2
        g2 = m2 * c2 * g * math.cos(q[0] + q[1])
        g1 = (m1 * c1 + m2 * l1) * g * math.cos(q[0]) + g2
        return M11, M12, M22, -k * (2 * qd[0] * qd[1] + qd[1] ** 2) + g1, k * qd[0] ** 2 + g2

    def friction(self, qd):
        """Joint friction torque (2,) at joint speeds qd."""
        return np.array([self.Fv[j] * qd[j] + self.Fc[j] * math.tanh(qd[j] / self.eps)
                         for j in range(2)])

    def accel(self, q, qd, tau):
        """qdd (2,) under joint torques tau: M^-1 (tau - h - friction)."""
        M11, M12, M22, h1, h2 = self._mass_bias(q, qd)
        f = self.friction(qd)
        r1, r2 = tau[0] - h1 - f[0], tau[1] - h2 - f[1]
        det = M11 * M22 - M12 * M12
        return np.array([(M22 * r1 - M12 * r2) / det, (M11 * r2 - M12 * r1) / det])


def run(arm: Arm, reference, duration: float, *, ff_arm: Arm | None = None, dt: float = 1e-3,
        kp=(400.0, 200.0), kd=(40.0, 20.0)):
    """Simulate `duration` s from rest at reference(0) under the continuous control law tau =
    Kp (q_r - q) + Kd (qd_r - qd) + ff_arm's rigid torque and friction at the reference (ff_arm
    None: no feedforward), evaluated at every RK4 stage, so the logged torque is the torque the
    arm feels at the logged instant. reference(t) gives (q, qd, qdd), (2,) each. Returns t (N,),
    q (N, 2), tau (N, 2), one sample per step dt."""
    steps = int(round(duration / dt))
    kp, kd = np.asarray(kp), np.asarray(kd)

    def torque(t, q, qd):
        qr, qdr, qddr = (np.asarray(v, float) for v in reference(t))
        tau = kp * (qr - q) + kd * (qdr - qd)
        if ff_arm is not None:
            tau = tau + ff_arm.rigid(qr, qdr, qddr) + ff_arm.friction(qdr)
        return tau

    def accel(t, q, qd):
        return arm.accel(q, qd, torque(t, q, qd))

    q, qd = np.array(reference(0.0)[0], float), np.zeros(2)
    ts, qs, taus = [], [], []
    for k in range(steps + 1):
        t = k * dt
        ts.append(t)
        qs.append(q.copy())
        taus.append(torque(t, q, qd))
        if k == steps:
            break
        a1 = accel(t, q, qd)
        a2 = accel(t + 0.5 * dt, q + 0.5 * dt * qd, qd + 0.5 * dt * a1)
        a3 = accel(t + 0.5 * dt, q + 0.5 * dt * (qd + 0.5 * dt * a1), qd + 0.5 * dt * a2)
        a4 = accel(t + dt, q + dt * (qd + 0.5 * dt * a2), qd + dt * a3)
        q = q + dt * qd + dt * dt / 6 * (a1 + a2 + a3)
        qd = qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return np.array(ts), np.array(qs), np.array(taus)


def measured(q, tau, *, counts: float = 2 ** 18, noise_share: float = 0.015, seed: int = 0):
    """What a drive reports: q rounded to whole encoder counts (2 pi / counts rad), tau with white
    noise of std noise_share x the rms of each joint's torque."""
    rng = np.random.default_rng(seed)
    res = 2 * np.pi / counts
    qm = np.round(q / res) * res
    sigma = noise_share * np.sqrt(np.mean(tau ** 2, axis=0))
    return qm, tau + sigma * rng.standard_normal(tau.shape), sigma
