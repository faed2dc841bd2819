"""Joint actuators as pure models: a PMSM in the rotor dq frame and a brushed-DC (q-axis equivalent) motor.

Each joint j is driven through a gear of ratio N (motor speed omega_m = N qd); the motor's joint torque is
N times its air-gap torque and its rotor adds N^2 Jm to the joint's diagonal inertia. The rotor's
electrical angle and speed are p N q and p N qd (p pole pairs; the d axis is on phase a at q = 0).

Each equation lives once, as a scalar core here (`electrical`, `pmsm_current_rates`, `pmsm_torque`,
`pmsm_powers`, `dc_current_rate`, `dc_torque`, `dc_powers`): numba functions of floats, each
compiled once on its own (not copied into every call site: the generated loop's compile time). The
`*_into` kernels and the numpy API below and the motor blocks of `blocksim.blocks.actuators` call
them, so every mode computes the same floats.
Units: A, V, ohm, H, Wb (= V s/rad, electrical), rad, rad/s, N m, W, J.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .arrays import as_batch, frozen_array, per_joint
from numpy.typing import ArrayLike

__all__ = [
    "PMSM", "DCMotor",
    "electrical", "pmsm_current_rates", "pmsm_torque", "pmsm_powers",
    "dc_current_rate", "dc_torque", "dc_powers",
    "pmsm_current_derivative_into", "pmsm_joint_torque_into", "pmsm_powers_into",
    "dc_current_derivative_into", "dc_joint_torque_into",
    "electrical_angle", "electrical_speed",
]


# ---------------------------------------------------------------- scalar cores (compiled once, called)

@njit(cache=True, error_model="numpy")
def electrical(x, p, N):
    """p N x: the rotor's electrical angle (rad) of a joint angle x (rad), or its electrical speed
    (rad/s) of a joint speed x (rad/s), through a gear of ratio N and p pole pairs."""
    return p * N * x


@njit(cache=True, error_model="numpy")
def pmsm_current_rates(i_d, i_q, v_d, v_q, we, R, Ld, Lq, psi):
    """PMSM stator equations in the rotor dq frame (amplitude-invariant Park): (di_d/dt, di_q/dt), A/s.

        Ld di_d/dt = v_d - R i_d + we Lq i_q
        Lq di_q/dt = v_q - R i_q - we (Ld i_d + psi)
    i_d, i_q currents, A; v_d, v_q voltages, V; we electrical speed p N qd, rad/s; R ohm; Ld, Lq H;
    psi magnet flux linkage, Wb.
    """
    return ((v_d - R * i_d + we * Lq * i_q) / Ld,
            (v_q - R * i_q - we * (Ld * i_d + psi)) / Lq)


@njit(cache=True, error_model="numpy")
def pmsm_torque(i_d, i_q, psi, p, Ld, Lq, N):
    """Joint torque of a geared PMSM, N Te with Te = 1.5 p (psi i_q + (Ld - Lq) i_d i_q), N m.

    i_d, i_q A; psi Wb; p pole pairs; Ld, Lq H; N gear ratio. The 1.5 is the amplitude-invariant
    Park's; evaluated as ((N 1.5) p) (psi i_q + ((Ld - Lq) i_d) i_q), left to right.
    """
    return N * 1.5 * p * (psi * i_q + (Ld - Lq) * i_d * i_q)


@njit(cache=True, error_model="numpy")
def pmsm_powers(i_d, i_q, v_d, v_q, R, Ld, Lq):
    """PMSM power terms in amplitude-invariant dq: (electrical power 1.5 (v_d i_d + v_q i_q), W;
    copper loss 1.5 R (i_d^2 + i_q^2), W; magnetic energy 0.75 (Ld i_d^2 + Lq i_q^2), J)."""
    return (1.5 * (v_d * i_d + v_q * i_q), 1.5 * R * (i_d * i_d + i_q * i_q),
            0.75 * (Ld * i_d * i_d + Lq * i_q * i_q))


@njit(cache=True, error_model="numpy")
def dc_current_rate(i, v, qd, R, L, Ke, N):
    """Armature equation of a geared DC motor: di/dt = (v - R i - Ke N qd) / L, A/s.

    i current, A; v terminal voltage, V; qd joint speed, rad/s; R ohm; L H; Ke back-EMF constant,
    V s/rad of motor shaft; N gear ratio.
    """
    return (v - R * i - Ke * N * qd) / L


@njit(cache=True, error_model="numpy")
def dc_torque(i, Kt, N):
    """Joint torque of a geared DC motor, N Kt i, N m (i A, Kt N m/A)."""
    return N * Kt * i


@njit(cache=True, error_model="numpy")
def load_acceleration(tau, qd, tau_load, J, b):
    """The joint acceleration of a motor's own mechanical load, rad/s^2:
    J qdd = tau - b qd - tau_load, with tau the motor's joint torque (N m), qd the joint speed
    (rad/s), tau_load an external torque against the motion (N m), J the inertia at the joint
    (kg m^2, the load's plus the rotor's N^2 Jm) and b the viscous coefficient (N m s/rad)."""
    return (tau - b * qd - tau_load) / J


@njit(cache=True, error_model="numpy")
def dc_powers(i, v, R, L):
    """DC motor power terms: (electrical power v i, W; copper loss R i^2, W; magnetic energy
    0.5 L i^2, J) for current i (A), voltage v (V), resistance R (ohm) and inductance L (H)."""
    return v * i, R * i * i, 0.5 * L * i * i


# ---------------------------------------------------------------- kernels: (B, n) signals, (n,) parameters

@njit(cache=True)
def pmsm_current_derivative_into(i_d, i_q, v_d, v_q, qd, R, Ld, Lq, psi, p, N, did_out, diq_out):
    """PMSM stator equations (pmsm_current_rates at we = p N qd), written into did_out, diq_out.

    i_d, i_q (B, n) stator currents, A; v_d, v_q (B, n) stator voltages, V; qd (B, n) joint speed, rad/s;
    R (n,) phase resistance, ohm; Ld, Lq (n,) inductances, H; psi (n,) magnet flux linkage, Wb;
    p (n,) pole pairs; N (n,) gear ratio; did_out, diq_out (B, n), A/s.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            did_out[k, j], diq_out[k, j] = pmsm_current_rates(
                i_d[k, j], i_q[k, j], v_d[k, j], v_q[k, j], electrical(qd[k, j], p[j], N[j]),
                R[j], Ld[j], Lq[j], psi[j])


@njit(cache=True)
def pmsm_joint_torque_into(i_d, i_q, psi, p, Ld, Lq, N, tau_out):
    """Joint torque of a geared PMSM (pmsm_torque), N m, written into tau_out.

    i_d, i_q (B, n) A; psi (n,) Wb; p (n,) pole pairs; Ld, Lq (n,) H; N (n,) gear ratio; tau_out (B, n) N m.
    """
    B, n = i_q.shape
    for k in range(B):
        for j in range(n):
            tau_out[k, j] = pmsm_torque(i_d[k, j], i_q[k, j], psi[j], p[j], Ld[j], Lq[j], N[j])


@njit(cache=True)
def pmsm_powers_into(i_d, i_q, v_d, v_q, R, Ld, Lq, p_elec, p_copper, e_mag):
    """PMSM power terms (pmsm_powers) written into p_elec (W), p_copper (W) and e_mag (J).

    i_d, i_q (B, n) A; v_d, v_q (B, n) V; R (n,) ohm; Ld, Lq (n,) H; outputs (B, n).
    """
    B, n = i_q.shape
    for k in range(B):
        for j in range(n):
            p_elec[k, j], p_copper[k, j], e_mag[k, j] = pmsm_powers(i_d[k, j], i_q[k, j], v_d[k, j],
                                                                    v_q[k, j], R[j], Ld[j], Lq[j])


@njit(cache=True)
def dc_current_derivative_into(i, v, qd, R, L, Ke, N, di_out):
    """Armature equation (dc_current_rate), written into di_out.

    i (B, n) current, A; v (B, n) terminal voltage, V; qd (B, n) joint speed, rad/s; R (n,) ohm;
    L (n,) H; Ke (n,) back-EMF constant, V s/rad of motor shaft; N (n,) gear ratio; di_out (B, n) A/s.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            di_out[k, j] = dc_current_rate(i[k, j], v[k, j], qd[k, j], R[j], L[j], Ke[j], N[j])


@njit(cache=True)
def dc_joint_torque_into(i, Kt, N, tau_out):
    """Joint torque N Kt i (dc_torque), N m; i (B, n) A; Kt (n,) N m/A; N (n,) gear ratio; tau_out (B, n)."""
    B, n = i.shape
    for k in range(B):
        for j in range(n):
            tau_out[k, j] = dc_torque(i[k, j], Kt[j], N[j])


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

    def powers(self, i_d, i_q, v_d=0.0, v_q=0.0):
        """(electrical power, W; copper loss, W; magnetic energy, J) as pmsm_powers, for dq currents (A)
        and voltages (V) of one shape."""
        (a, b, c, d), shape = as_batch(i_d, i_q, v_d, v_q)
        n = a.shape[1]
        outs = [np.empty_like(a) for _ in range(3)]
        pmsm_powers_into(a, b, c, d, per_joint(self.R, n), per_joint(self.Ld, n), per_joint(self.Lq, n),
                         *outs)
        return tuple(o.reshape(shape) for o in outs)

    def electrical_power(self, i_d, i_q, v_d, v_q) -> np.ndarray:
        """Power drawn from the supply, 1.5 (v_d i_d + v_q i_q), W."""
        return self.powers(i_d, i_q, v_d, v_q)[0]

    def copper_loss(self, i_d, i_q) -> np.ndarray:
        """Resistive loss in the three phases, 1.5 R (i_d^2 + i_q^2), W."""
        return self.powers(i_d, i_q)[1]

    def magnetic_energy(self, i_d, i_q) -> np.ndarray:
        """Energy stored in the stator inductances, 0.75 (Ld i_d^2 + Lq i_q^2), J."""
        return self.powers(i_d, i_q)[2]

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
    """Rotor electrical angle theta_e = p N q, rad, for joint angles q (rad) of any shape (rotor aligned
    at q = 0): the numpy form of `electrical`, same products in the same order."""
    return np.asarray(p, dtype=np.float64) * np.asarray(N) * np.asarray(q)


def electrical_speed(qd, p, N) -> np.ndarray:
    """Electrical speed we = p N qd, rad/s, for joint speeds qd (rad/s) of any shape (see electrical_angle)."""
    return np.asarray(p, dtype=np.float64) * np.asarray(N) * np.asarray(qd)
