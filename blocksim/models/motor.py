"""Joint actuators as pure models: a PMSM in the rotor dq frame and a brushed-DC (q-axis equivalent) motor.

Each joint j is driven through a gear of ratio N (motor speed omega_m = N qd); the motor's joint torque is
N times its air-gap torque and its rotor adds N^2 Jm to the joint's diagonal inertia.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .arrays import as_batch, frozen_array, per_joint
from numpy.typing import ArrayLike

__all__ = [
    "PMSM", "DCMotor",
    "pmsm_current_derivative_into", "pmsm_joint_torque_into",
    "dc_current_derivative_into", "dc_joint_torque_into",
    "electrical_angle", "electrical_speed",
]


# ---------------------------------------------------------------- kernels: (B, n) signals, (n,) parameters

@njit(cache=True)
def pmsm_current_derivative_into(i_d, i_q, v_d, v_q, qd, R, Ld, Lq, psi, p, N, did_out, diq_out):
    """PMSM stator equations in the rotor dq frame (amplitude-invariant Park), written into did_out, diq_out.

    i_d, i_q (B, n) stator currents, A; v_d, v_q (B, n) stator voltages, V; qd (B, n) joint speed, rad/s;
    R (n,) phase resistance, ohm; Ld, Lq (n,) inductances, H; psi (n,) magnet flux linkage, Wb;
    p (n,) pole pairs; N (n,) gear ratio; did_out, diq_out (B, n), A/s.
        Ld di_d/dt = v_d - R i_d + we Lq i_q
        Lq di_q/dt = v_q - R i_q - we (Ld i_d + psi),   we = p N qd (electrical speed, rad/s)
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            we = p[j] * N[j] * qd[k, j]
            idk = i_d[k, j]
            iqk = i_q[k, j]
            did_out[k, j] = (v_d[k, j] - R[j] * idk + we * Lq[j] * iqk) / Ld[j]
            diq_out[k, j] = (v_q[k, j] - R[j] * iqk - we * (Ld[j] * idk + psi[j])) / Lq[j]


@njit(cache=True)
def pmsm_joint_torque_into(i_d, i_q, psi, p, Ld, Lq, N, tau_out):
    """Joint torque of a geared PMSM, N Te with Te = 1.5 p (psi i_q + (Ld - Lq) i_d i_q), N m.

    i_d, i_q (B, n) A; psi (n,) Wb; p (n,) pole pairs; Ld, Lq (n,) H; N (n,) gear ratio; tau_out (B, n) N m.
    """
    B, n = i_q.shape
    for k in range(B):
        for j in range(n):
            iqk = i_q[k, j]
            te = 1.5 * p[j] * (psi[j] * iqk + (Ld[j] - Lq[j]) * i_d[k, j] * iqk)
            tau_out[k, j] = N[j] * te


@njit(cache=True)
def dc_current_derivative_into(i, v, qd, R, L, Ke, N, di_out):
    """Armature equation L di/dt = v - R i - Ke N qd, written into di_out.

    i (B, n) current, A; v (B, n) terminal voltage, V; qd (B, n) joint speed, rad/s; R (n,) ohm;
    L (n,) H; Ke (n,) back-EMF constant, V s/rad of motor shaft; N (n,) gear ratio; di_out (B, n) A/s.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            di_out[k, j] = (v[k, j] - R[j] * i[k, j] - Ke[j] * N[j] * qd[k, j]) / L[j]


@njit(cache=True)
def dc_joint_torque_into(i, Kt, N, tau_out):
    """Joint torque N Kt i, N m; i (B, n) A; Kt (n,) N m/A; N (n,) gear ratio; tau_out (B, n)."""
    B, n = i.shape
    for k in range(B):
        for j in range(n):
            tau_out[k, j] = N[j] * Kt[j] * i[k, j]


# ---------------------------------------------------------------- parameter sets

@dataclass(frozen=True, eq=False)
class PMSM:
    """Permanent-magnet synchronous motor behind a gear, modelled in the rotor dq frame.

    Amplitude-invariant Park transform (the 2/3 factor): dq currents have the amplitude of the phase
    currents, so power and torque carry a 1.5 factor. Fields are scalars or per-joint vectors (n,):
    R: phase resistance, ohm (> 0). Ld, Lq: d- and q-axis inductances, H (> 0; Ld = Lq for a surface magnet).
    psi: permanent-magnet flux linkage, Wb = V s/rad (electrical). p: pole pairs (> 0).
    Jm: rotor inertia, kg m^2 (>= 0), seen at the joint as N^2 Jm. N: gear ratio (> 0), omega_m = N qd.
    """

    R: ArrayLike
    Ld: ArrayLike
    Lq: ArrayLike
    psi: ArrayLike
    p: ArrayLike = 1.0
    Jm: ArrayLike = 0.0
    N: ArrayLike = 1.0

    def __post_init__(self):
        for name in ("R", "Ld", "Lq", "psi", "p", "N"):
            object.__setattr__(self, name, frozen_array(getattr(self, name), name, positive=True))
        object.__setattr__(self, "Jm", frozen_array(self.Jm, "Jm", nonnegative=True))

    @classmethod
    def from_torque_constant(cls, Kt, R, Ld, Lq=None, p=1.0, Jm=0.0, N=1.0) -> "PMSM":
        """A PMSM given its torque constant Kt = dTe/di_q (N m/A): psi = Kt / (1.5 p); Lq defaults to Ld."""
        return cls(R=R, Ld=Ld, Lq=Ld if Lq is None else Lq,
                   psi=np.asarray(Kt, dtype=np.float64) / (1.5 * np.asarray(p, dtype=np.float64)),
                   p=p, Jm=Jm, N=N)

    @property
    def torque_constant(self) -> np.ndarray:
        """Kt = 1.5 p psi, N m/A: air-gap torque per ampere of i_q with i_d = 0."""
        return 1.5 * self.p * self.psi

    @property
    def reflected_inertia(self) -> np.ndarray:
        """N^2 Jm, kg m^2: the rotor inertia as the joint feels it (added to the mass matrix diagonal)."""
        return self.N ** 2 * self.Jm

    def kernel_args(self, n: int):
        """(R, Ld, Lq, psi, p, N) as (n,) arrays, in pmsm_current_derivative_into's order."""
        return tuple(per_joint(v, n) for v in (self.R, self.Ld, self.Lq, self.psi, self.p, self.N))

    def current_derivative(self, i_d, i_q, v_d, v_q, qd):
        """(di_d/dt, di_q/dt), A/s, for currents (A), voltages (V) and joint speeds (rad/s) of one shape."""
        (a, b, c, d, w), shape = as_batch(i_d, i_q, v_d, v_q, qd)
        did = np.empty_like(a)
        diq = np.empty_like(a)
        pmsm_current_derivative_into(a, b, c, d, w, *self.kernel_args(a.shape[1]), did, diq)
        return did.reshape(shape), diq.reshape(shape)

    def joint_torque(self, i_d, i_q) -> np.ndarray:
        """N Te, N m, for dq currents (A)."""
        (a, b), shape = as_batch(i_d, i_q)
        n = a.shape[1]
        out = np.empty_like(a)
        pmsm_joint_torque_into(a, b, per_joint(self.psi, n), per_joint(self.p, n), per_joint(self.Ld, n),
                               per_joint(self.Lq, n), per_joint(self.N, n), out)
        return out.reshape(shape)

    def electrical_power(self, i_d, i_q, v_d, v_q) -> np.ndarray:
        """Power drawn from the supply, 1.5 (v_d i_d + v_q i_q), W."""
        return 1.5 * (np.asarray(v_d) * i_d + np.asarray(v_q) * i_q)

    def copper_loss(self, i_d, i_q) -> np.ndarray:
        """Resistive loss in the three phases, 1.5 R (i_d^2 + i_q^2), W."""
        return 1.5 * self.R * (np.square(i_d) + np.square(i_q))

    def magnetic_energy(self, i_d, i_q) -> np.ndarray:
        """Energy stored in the stator inductances, 0.75 (Ld i_d^2 + Lq i_q^2), J."""
        return 0.75 * (self.Ld * np.square(i_d) + self.Lq * np.square(i_q))

    def mechanical_power(self, i_d, i_q, qd) -> np.ndarray:
        """Power delivered to the joint, N Te qd = Te omega_m, W."""
        return self.joint_torque(i_d, i_q) * qd

    def steady_state_currents(self, v_d, v_q, qd):
        """(i_d, i_q), A, where di/dt = 0 under constant voltages (V) at a constant joint speed (rad/s).

        Solves [R, -we Lq; we Ld, R] [i_d; i_q] = [v_d; v_q - we psi] with we = p N qd.
        """
        we = self.p * self.N * np.asarray(qd, dtype=np.float64)
        rhs_q = np.asarray(v_q) - we * self.psi
        det = self.R ** 2 + we ** 2 * self.Ld * self.Lq
        i_d = (self.R * np.asarray(v_d) + we * self.Lq * rhs_q) / det
        i_q = (self.R * rhs_q - we * self.Ld * np.asarray(v_d)) / det
        return i_d, i_q


@dataclass(frozen=True, eq=False)
class DCMotor:
    """Brushed-DC motor behind a gear; also the q-axis equivalent of a PMSM under field-oriented control.

    Fields are scalars or per-joint vectors (n,):
    R: armature resistance, ohm (> 0). L: armature inductance, H (> 0).
    Kt: torque constant, N m/A. Ke: back-EMF constant, V s/rad of motor shaft; None means Ke = Kt
    (equal in SI units for an ideal machine). Jm: rotor inertia, kg m^2, seen at the joint as N^2 Jm. N: gear ratio, omega_m = N qd.
    L di/dt = v - R i - Ke N qd; joint torque N Kt i. W2 uses R = 0.5, L = 0.5e-3, Kt = Ke = 0.1,
    Jm = 1e-5, N = 100.
    """

    R: ArrayLike
    L: ArrayLike
    Kt: ArrayLike
    Ke: ArrayLike | None = None
    Jm: ArrayLike = 0.0
    N: ArrayLike = 1.0

    def __post_init__(self):
        for name in ("R", "L", "Kt", "N"):
            object.__setattr__(self, name, frozen_array(getattr(self, name), name, positive=True))
        object.__setattr__(self, "Ke", self.Kt if self.Ke is None else frozen_array(self.Ke, "Ke", positive=True))
        object.__setattr__(self, "Jm", frozen_array(self.Jm, "Jm", nonnegative=True))

    @property
    def reflected_inertia(self) -> np.ndarray:
        """N^2 Jm, kg m^2."""
        return self.N ** 2 * self.Jm

    def kernel_args(self, n: int):
        """(R, L, Ke, N) as (n,) arrays, in dc_current_derivative_into's order."""
        return tuple(per_joint(v, n) for v in (self.R, self.L, self.Ke, self.N))

    def current_derivative(self, i, v, qd) -> np.ndarray:
        """di/dt, A/s, for current (A), voltage (V) and joint speed (rad/s) of one shape."""
        (a, b, c), shape = as_batch(i, v, qd)
        out = np.empty_like(a)
        dc_current_derivative_into(a, b, c, *self.kernel_args(a.shape[1]), out)
        return out.reshape(shape)

    def joint_torque(self, i) -> np.ndarray:
        """N Kt i, N m."""
        (a,), shape = as_batch(i)
        n = a.shape[1]
        out = np.empty_like(a)
        dc_joint_torque_into(a, per_joint(self.Kt, n), per_joint(self.N, n), out)
        return out.reshape(shape)

    def steady_state_current(self, v, qd) -> np.ndarray:
        """Current where di/dt = 0 at constant voltage (V) and joint speed (rad/s): (v - Ke N qd) / R, A."""
        return (np.asarray(v, dtype=np.float64) - self.Ke * self.N * np.asarray(qd)) / self.R


def electrical_angle(q, p, N) -> np.ndarray:
    """Rotor electrical angle theta_e = p N q, rad, for joint angles q (rad) (rotor aligned at q = 0)."""
    return np.asarray(p, dtype=np.float64) * np.asarray(N) * np.asarray(q)


def electrical_speed(qd, p, N) -> np.ndarray:
    """Electrical speed we = p N qd, rad/s, for joint speeds qd (rad/s)."""
    return np.asarray(p, dtype=np.float64) * np.asarray(N) * np.asarray(qd)
