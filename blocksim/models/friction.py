"""Joint friction laws as pure models: static maps (viscous, Coulomb, Stribeck), Karnopp stick-slip, LuGre.

Each law lives once, as a scalar core here (`stribeck_torque`, `karnopp_torque`,
`karnopp_switching`, `lugre_bristle_rate`, `lugre_friction`, `lugre_steady_bristle`, built on
`stribeck_level` and `sign_or_tanh`): numba functions of floats, each compiled once on its own (not
copied into every call site: the generated loop's compile time; docs/architecture.md, "Physics").
The `*_into` kernels and the numpy API below, the friction blocks of `blocksim.blocks.friction` and
the Manipulator's joint friction in `blocksim.blocks.robot` all call these cores, so every mode and
every caller computes the same floats.

Sign convention: every law returns the friction torque tau_f as it enters the joint equation
`M qdd + c + G + tau_f = tau`: it opposes the motion, so tau_f * qd >= 0 for a passive static map.
Units: joint speed v in rad/s, torques in N m, bristle deflection z in rad.
References: the Stribeck curve as in Olsson, Astrom, Canudas de Wit, Gafvert, Lischinsky, "Friction
models and friction compensation", European Journal of Control 4 (1998); Karnopp, "Computer
simulation of stick-slip friction in mechanical dynamic systems", ASME J. Dyn. Syst. Meas. Control
107 (1985); LuGre: Canudas de Wit, Olsson, Astrom, Lischinsky, "A new model for control of systems
with friction", IEEE Trans. Automatic Control 40 (1995).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .arrays import as_batch, frozen_array, per_joint
from numpy.typing import ArrayLike

__all__ = [
    "StribeckFriction", "KarnoppFriction", "LuGreFriction",
    "viscous", "coulomb", "stribeck", "karnopp", "lugre_state_derivative", "lugre_torque",
    "lugre_steady_state_bristle", "dissipated_power", "lugre_dissipated_power",
    "sign_or_tanh", "stribeck_level", "stribeck_torque", "stribeck_signed", "stribeck_slope", "karnopp_region", "karnopp_torque_in",
    "karnopp_torque", "karnopp_switching",
    "karnopp_switching_in",
    "lugre_bristle_rate", "lugre_friction", "lugre_steady_bristle",
    "stribeck_into", "karnopp_into", "karnopp_zero_crossings_into", "velocity_zero_crossings_into",
    "lugre_state_derivative_into", "lugre_torque_into", "lugre_steady_state_bristle_into",
    "dissipated_power_into",
]


# ---------------------------------------------------------------- scalar cores (compiled once, called)

@njit(cache=True, error_model="numpy")
def sign_or_tanh(v, smoothing):
    """sign(v) with sign(0) = 0 when smoothing == 0, else tanh(v / smoothing); v and smoothing in rad/s."""
    if smoothing > 0.0:
        return math.tanh(v / smoothing)
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return 0.0


@njit(cache=True, error_model="numpy")
def stribeck_level(v, Fc, Fs, vs, delta):
    """g(v) = Fc + (Fs - Fc) exp(-|v / vs|^delta), N m: the Coulomb level Fc (N m) with the Stribeck
    hump up to the static level Fs (N m) at rest; v and the Stribeck speed vs in rad/s, delta > 0."""
    if Fs == Fc:
        return Fc
    return Fc + (Fs - Fc) * math.exp(-(abs(v / vs) ** delta))


@njit(cache=True, error_model="numpy")
def stribeck_torque(v, Fc, Fs, vs, delta, Fv, smoothing):
    """Static friction torque g(v) sgn(v) + Fv v, N m, at joint speed v (rad/s).

    g is stribeck_level; sgn is sign_or_tanh (exact sign when smoothing == 0, else tanh(v / smoothing),
    smoothing in rad/s); Fv the viscous coefficient, N m s/rad. Viscous-only and Coulomb + viscous
    maps are the cases Fc = Fs = 0 and Fs = Fc.
    """
    return stribeck_signed(v, sign_or_tanh(v, smoothing), Fc, Fs, vs, delta, Fv)


@njit(cache=True, error_model="numpy")
def stribeck_signed(v, sign, Fc, Fs, vs, delta, Fv):
    """g(v) sign + Fv v, N m: stribeck_torque with the sign given (a mode held through a solver's
    stages: +1, -1 or 0), v in rad/s."""
    return stribeck_level(v, Fc, Fs, vs, delta) * sign + Fv * v


def stribeck_slope(v, Fc, Fs, vs, delta, Fv, smoothing, sign=0.0):
    """d tau_f / d v (N m s/rad) of the static map at speed v (rad/s): of stribeck_torque with a
    smoothed sign (smoothing > 0: g' tanh + g sech^2 / smoothing + Fv), or of stribeck_signed with
    the sign held (smoothing == 0, sign +1 or -1: g' sign + Fv). An exact sign has no derivative at
    v = 0 unless it is held (the friction is a mode there, or sticks), and a Stribeck shape with
    delta <= 1 has none at v = 0 under a held sign: both raise ValueError. Plain Python: for
    linearisation, never called in a run."""
    if smoothing > 0.0:
        s = math.tanh(v / smoothing)
        ds = (1.0 - s * s) / smoothing
    elif sign != 0.0:
        s, ds = sign, 0.0
    else:
        raise ValueError("an exact friction sign has no derivative unless its sign is held")
    g = stribeck_level(v, Fc, Fs, vs, delta)
    dg = 0.0
    if Fs != Fc and v != 0.0:
        r = abs(v / vs)
        dg = -(Fs - Fc) * math.exp(-r ** delta) * delta * r ** (delta - 1.0) * math.copysign(1.0, v) / vs
    elif Fs != Fc and delta <= 1.0 and s != 0.0:
        raise ValueError("the Stribeck level with delta <= 1 has no derivative at v = 0")
    return dg * s + g * ds + Fv


@njit(cache=True, error_model="numpy")
def karnopp_torque(v, tau_applied, Fc, Fs, vs, delta, Fv, dv):
    """Karnopp stick-slip friction torque, N m (Karnopp 1985).

    Inside the band |v| < dv (rad/s) the joint sticks: friction balances the applied torque tau_applied
    (the net non-friction torque driving the joint, N m), clamped to +-Fs, so breakaway starts once
    |tau_applied| exceeds Fs. Outside the band it slips on stribeck_torque with the exact sign.
    """
    return karnopp_torque_in(karnopp_region(v, tau_applied, Fs, dv), v, tau_applied, Fc, Fs, vs,
                             delta, Fv)


@njit(cache=True, error_model="numpy")
def karnopp_region(v, tau_applied, Fs, dv):
    """Where the Karnopp law is at speed v (rad/s) and applied torque tau_applied (N m): 0 sticking
    (|v| < dv) within the static limit, +-2 sticking at +-Fs (|tau_applied| > Fs), +-1 slipping
    forwards or backwards (|v| >= dv). The mode a solver holds through its stages
    (karnopp_torque_in)."""
    if abs(v) < dv:
        return 2.0 if tau_applied > Fs else (-2.0 if tau_applied < -Fs else 0.0)
    return 1.0 if v > 0.0 else -1.0


@njit(cache=True, error_model="numpy")
def karnopp_torque_in(region, v, tau_applied, Fc, Fs, vs, delta, Fv):
    """karnopp_torque in a given region (karnopp_region), N m: tau_applied sticking, +-Fs at the
    static limit, the Stribeck curve with the region's sign slipping."""
    if region == 0.0:
        return tau_applied
    if region == 2.0:
        return Fs
    if region == -2.0:
        return -Fs
    return stribeck_signed(v, region, Fc, Fs, vs, delta, Fv)


@njit(cache=True, error_model="numpy")
def karnopp_switching(v, tau_applied, Fs, dv):
    """The two switching functions of the Karnopp law: (|v| - dv, rad/s: the stick band's edge;
    |tau_applied| - Fs, N m: the applied torque crossing the static limit)."""
    return karnopp_switching_in(karnopp_region(v, tau_applied, Fs, dv), v, tau_applied, Fs, dv)


@njit(cache=True, error_model="numpy")
def karnopp_switching_in(region, v, tau_applied, Fs, dv):
    """karnopp_switching for a held region (karnopp_region): slipping at +-1 the band edge is
    +-v - dv, which stays below zero once the speed has fallen into the band, even if it passes
    through the band and beyond within one step (|v| - dv would rise again and hide the entry);
    sticking at +-Fs the static limit is +-tau_applied - Fs. The values equal karnopp_switching's
    wherever the region is the one the law gives."""
    edge = region * v - dv if (region == 1.0 or region == -1.0) else abs(v) - dv
    static = (0.5 * region * tau_applied - Fs if (region == 2.0 or region == -2.0)
              else abs(tau_applied) - Fs)
    return edge, static


@njit(cache=True, error_model="numpy")
def lugre_bristle_rate(v, z, sigma0, Fc, Fs, vs, delta):
    """LuGre bristle dynamics (Canudas de Wit et al. 1995): dz/dt = v - sigma0 |v| z / g(v), rad/s.

    v joint speed, rad/s; z mean bristle deflection, rad; sigma0 bristle stiffness, N m/rad;
    g = stribeck_level(v, Fc, Fs, vs, delta), N m. At constant speed z settles to g(v) sgn(v) / sigma0.
    """
    return v - sigma0 * abs(v) * z / stribeck_level(v, Fc, Fs, vs, delta)


@njit(cache=True, error_model="numpy")
def lugre_friction(v, z, sigma0, sigma1, sigma2, Fc, Fs, vs, delta):
    """LuGre friction: (dz/dt, rad/s, from lugre_bristle_rate; tau_f = sigma0 z + sigma1 dz/dt + sigma2 v,
    N m), with sigma1 the bristle damping and sigma2 the viscous coefficient, N m s/rad."""
    zdot = lugre_bristle_rate(v, z, sigma0, Fc, Fs, vs, delta)
    return zdot, sigma0 * z + sigma1 * zdot + sigma2 * v


@njit(cache=True, error_model="numpy")
def lugre_steady_bristle(v, sigma0, Fc, Fs, vs, delta):
    """The bristle deflection where lugre_bristle_rate is zero at constant speed v (rad/s):
    z_ss = g(v) sgn(v) / sigma0, rad (exact sign, sgn(0) = 0)."""
    return stribeck_level(v, Fc, Fs, vs, delta) * sign_or_tanh(v, 0.0) / sigma0


# ---------------------------------------------------------------- kernels: (B, n) signals, (n,) parameters

@njit(cache=True)
def stribeck_into(qd, Fc, Fs, vs, delta, Fv, smoothing, out):
    """Static Stribeck + Coulomb + viscous friction torque (stribeck_torque), written into out.

    qd (B, n) joint speed, rad/s; Fc, Fs, vs, delta, Fv, smoothing (n,) as in StribeckFriction;
    out (B, n) friction torque, N m.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = stribeck_torque(qd[k, j], Fc[j], Fs[j], vs[j], delta[j], Fv[j], smoothing[j])


@njit(cache=True)
def velocity_zero_crossings_into(qd, out):
    """Zero-crossing functions of the exact-sign static laws: g = qd, shapes (B, n) (rad/s).

    An adaptive solver locates the sign changes of g and restarts there, so the jump of
    Fc sgn(qd) never falls inside a step.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = qd[k, j]


@njit(cache=True)
def karnopp_into(qd, tau_applied, Fc, Fs, vs, delta, Fv, dv, out):
    """Karnopp stick-slip friction torque (karnopp_torque), written into out.

    qd (B, n) joint speed, rad/s; tau_applied (B, n) the net non-friction torque driving each joint
    (motor torque minus gravity, Coriolis and coupling terms), N m; Fc, Fs, vs, delta, Fv, dv (n,) as in
    KarnoppFriction; out (B, n) friction torque, N m.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = karnopp_torque(qd[k, j], tau_applied[k, j], Fc[j], Fs[j], vs[j], delta[j], Fv[j],
                                       dv[j])


@njit(cache=True)
def karnopp_zero_crossings_into(qd, tau_applied, Fs, dv, out):
    """Zero-crossing functions of the Karnopp law (karnopp_switching), for event location by adaptive solvers.

    qd, tau_applied (B, n); Fs, dv (n,); out (B, 2 n):
    out[:, j] = |qd_j| - dv_j (entering or leaving the stick band) and
    out[:, n + j] = |tau_applied_j| - Fs_j (the applied torque crossing the static limit).
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j], out[k, n + j] = karnopp_switching(qd[k, j], tau_applied[k, j], Fs[j], dv[j])


@njit(cache=True)
def lugre_state_derivative_into(qd, z, sigma0, Fc, Fs, vs, delta, zdot_out):
    """LuGre bristle dynamics dz/dt = qd - sigma0 |qd| z / g(qd) (lugre_bristle_rate), written into zdot_out.

    qd (B, n) joint speed, rad/s; z (B, n) mean bristle deflection, rad; sigma0 (n,) bristle stiffness,
    N m/rad; Fc, Fs, vs, delta (n,) the Stribeck level g(v) = Fc + (Fs - Fc) exp(-|v / vs|^delta);
    zdot_out (B, n), rad/s.
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            zdot_out[k, j] = lugre_bristle_rate(qd[k, j], z[k, j], sigma0[j], Fc[j], Fs[j], vs[j], delta[j])


@njit(cache=True)
def lugre_torque_into(qd, z, sigma0, sigma1, sigma2, Fc, Fs, vs, delta, out):
    """LuGre friction torque F = sigma0 z + sigma1 dz/dt + sigma2 qd (lugre_friction), written into out.

    qd (B, n) rad/s; z (B, n) rad; sigma0 (n,) N m/rad; sigma1 (n,) bristle damping, N m s/rad;
    sigma2 (n,) viscous coefficient, N m s/rad; Fc, Fs, vs, delta (n,) as in lugre_state_derivative_into;
    out (B, n) friction torque, N m. dz/dt is recomputed here so the force needs only (qd, z).
    """
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = lugre_friction(qd[k, j], z[k, j], sigma0[j], sigma1[j], sigma2[j], Fc[j], Fs[j],
                                       vs[j], delta[j])[1]


@njit(cache=True)
def lugre_steady_state_bristle_into(qd, sigma0, Fc, Fs, vs, delta, out):
    """LuGre steady-state bristle deflection (lugre_steady_bristle), rad, written into out (B, n);
    qd (B, n) rad/s; sigma0, Fc, Fs, vs, delta (n,) as in lugre_state_derivative_into."""
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = lugre_steady_bristle(qd[k, j], sigma0[j], Fc[j], Fs[j], vs[j], delta[j])


@njit(cache=True)
def dissipated_power_into(tau_f, qd, out):
    """Power taken out of the joint by friction, tau_f * qd, W; all arrays (B, n)."""
    B, n = qd.shape
    for k in range(B):
        for j in range(n):
            out[k, j] = tau_f[k, j] * qd[k, j]


# ---------------------------------------------------------------- parameter sets

@dataclass(frozen=True, eq=False)
class StribeckFriction:
    """Static friction map tau_f = (Fc + (Fs - Fc) exp(-|qd/vs|^delta)) sgn(qd) + Fv qd, per joint.

    Fields are scalars or per-joint vectors of shape (n,):
    Fc: Coulomb level, N m (>= 0).
    Fs: static (breakaway) level, N m (>= 0); None means Fs = Fc (no Stribeck hump).
    vs: Stribeck speed, rad/s (> 0).
    Fv: viscous coefficient, N m s/rad (>= 0).
    delta: Stribeck shape exponent, dimensionless (> 0; 2 is Gaussian, 1 is Tustin's exponential).
    smoothing: eps, rad/s; 0 takes the exact sign (sign(0) = 0, zero crossing qd for adaptive solvers),
        eps > 0 replaces sgn(qd) by tanh(qd / eps), which keeps the right-hand side smooth for fixed steps.
    """

    Fc: ArrayLike = 0.0
    Fs: ArrayLike | None = None
    vs: ArrayLike = 1.0
    Fv: ArrayLike = 0.0
    delta: ArrayLike = 2.0
    smoothing: ArrayLike = 0.0

    def __post_init__(self):
        object.__setattr__(self, "Fc", frozen_array(self.Fc, "Fc", nonnegative=True))
        object.__setattr__(self, "Fs", self.Fc if self.Fs is None else frozen_array(self.Fs, "Fs", nonnegative=True))
        object.__setattr__(self, "vs", frozen_array(self.vs, "vs", positive=True))
        object.__setattr__(self, "Fv", frozen_array(self.Fv, "Fv", nonnegative=True))
        object.__setattr__(self, "delta", frozen_array(self.delta, "delta", positive=True))
        object.__setattr__(self, "smoothing", frozen_array(self.smoothing, "smoothing", nonnegative=True))

    @classmethod
    def viscous(cls, Fv) -> "StribeckFriction":
        """Pure viscous friction Fv qd (Fv in N m s/rad)."""
        return cls(Fc=0.0, Fv=Fv)

    @classmethod
    def coulomb_viscous(cls, Fc, Fv=0.0, smoothing=0.0) -> "StribeckFriction":
        """Coulomb + viscous friction Fc sgn(qd) + Fv qd (the W1/W2 plant uses smoothing = 1e-3 rad/s)."""
        return cls(Fc=Fc, Fv=Fv, smoothing=smoothing)

    def kernel_args(self, n: int):
        """(Fc, Fs, vs, delta, Fv, smoothing) as (n,) arrays, in stribeck_into's order."""
        return tuple(per_joint(v, n) for v in (self.Fc, self.Fs, self.vs, self.delta, self.Fv, self.smoothing))

    def torque(self, qd) -> np.ndarray:
        """Friction torque, N m, for joint speeds qd (rad/s) of shape (B, n), (n,) or scalar."""
        (v,), shape = as_batch(qd)
        out = np.empty_like(v)
        stribeck_into(v, *self.kernel_args(v.shape[1]), out)
        return out.reshape(shape)


@dataclass(frozen=True, eq=False)
class KarnoppFriction:
    """Karnopp stick-slip friction: sticks inside |qd| < dv, slips on the Stribeck curve outside.

    Fields are scalars or per-joint vectors of shape (n,):
    Fc: Coulomb level, N m. Fs: static (breakaway) limit, N m; None means Fs = Fc.
    vs: Stribeck speed, rad/s. Fv: viscous coefficient, N m s/rad. delta: Stribeck exponent.
    dv: half-width of the stick band, rad/s (> 0); small against the speeds of interest, large against
        the speed change of one solver step.
    Inside the band friction equals the applied torque (so the net torque, hence qdd, is zero) and is
    not passive: it may push the joint, which is why the band must stay small.
    """

    Fc: ArrayLike = 0.0
    Fs: ArrayLike | None = None
    vs: ArrayLike = 1.0
    Fv: ArrayLike = 0.0
    delta: ArrayLike = 2.0
    dv: ArrayLike = 1e-4

    def __post_init__(self):
        object.__setattr__(self, "Fc", frozen_array(self.Fc, "Fc", nonnegative=True))
        object.__setattr__(self, "Fs", self.Fc if self.Fs is None else frozen_array(self.Fs, "Fs", nonnegative=True))
        object.__setattr__(self, "vs", frozen_array(self.vs, "vs", positive=True))
        object.__setattr__(self, "Fv", frozen_array(self.Fv, "Fv", nonnegative=True))
        object.__setattr__(self, "delta", frozen_array(self.delta, "delta", positive=True))
        object.__setattr__(self, "dv", frozen_array(self.dv, "dv", positive=True))

    def kernel_args(self, n: int):
        """(Fc, Fs, vs, delta, Fv, dv) as (n,) arrays, in karnopp_into's order."""
        return tuple(per_joint(v, n) for v in (self.Fc, self.Fs, self.vs, self.delta, self.Fv, self.dv))

    def torque(self, qd, tau_applied) -> np.ndarray:
        """Friction torque, N m, for joint speeds qd (rad/s) and applied torques (N m), same shapes."""
        (v, t), shape = as_batch(qd, tau_applied)
        out = np.empty_like(v)
        karnopp_into(v, t, *self.kernel_args(v.shape[1]), out)
        return out.reshape(shape)

    def zero_crossings(self, qd, tau_applied) -> np.ndarray:
        """Switching functions, shape (B, 2n): |qd| - dv, then |tau_applied| - Fs."""
        (v, t), _ = as_batch(qd, tau_applied)
        n = v.shape[1]
        out = np.empty((v.shape[0], 2 * n))
        karnopp_zero_crossings_into(v, t, per_joint(self.Fs, n), per_joint(self.dv, n), out)
        return out


@dataclass(frozen=True, eq=False)
class LuGreFriction:
    """LuGre dynamic friction (Canudas de Wit, Olsson, Astrom, Lischinsky, IEEE TAC 1995), per joint.

    dz/dt = v - sigma0 |v| z / g(v),  g(v) = Fc + (Fs - Fc) exp(-|v / vs|^delta),
    F = sigma0 z + sigma1 dz/dt + sigma2 v, with z the mean bristle deflection (rad), v = qd (rad/s).
    Fields are scalars or per-joint vectors of shape (n,):
    sigma0: bristle stiffness, N m/rad (> 0). sigma1: bristle damping, N m s/rad (>= 0).
    sigma2: viscous coefficient, N m s/rad (>= 0). Fc: Coulomb level, N m (> 0).
    Fs: static level, N m (>= Fc usually); None means Fs = Fc. vs: Stribeck speed, rad/s (> 0).
    delta: Stribeck exponent (2 in the paper).
    At constant speed z settles to g(v) sgn(v) / sigma0 and F to the Stribeck curve with Fv = sigma2;
    near rest it acts as a spring of stiffness sigma0 (pre-sliding displacement).
    """

    sigma0: ArrayLike = 1e4
    sigma1: ArrayLike = 0.0
    sigma2: ArrayLike = 0.0
    Fc: ArrayLike = 1.0
    Fs: ArrayLike | None = None
    vs: ArrayLike = 1e-2
    delta: ArrayLike = 2.0

    def __post_init__(self):
        object.__setattr__(self, "sigma0", frozen_array(self.sigma0, "sigma0", positive=True))
        object.__setattr__(self, "sigma1", frozen_array(self.sigma1, "sigma1", nonnegative=True))
        object.__setattr__(self, "sigma2", frozen_array(self.sigma2, "sigma2", nonnegative=True))
        object.__setattr__(self, "Fc", frozen_array(self.Fc, "Fc", positive=True))
        object.__setattr__(self, "Fs", self.Fc if self.Fs is None else frozen_array(self.Fs, "Fs", positive=True))
        object.__setattr__(self, "vs", frozen_array(self.vs, "vs", positive=True))
        object.__setattr__(self, "delta", frozen_array(self.delta, "delta", positive=True))

    def level_args(self, n: int):
        """(Fc, Fs, vs, delta) as (n,) arrays: the Stribeck level g(v) arguments of the LuGre kernels."""
        return tuple(per_joint(v, n) for v in (self.Fc, self.Fs, self.vs, self.delta))

    def state_derivative(self, qd, z) -> np.ndarray:
        """dz/dt, rad/s, for joint speeds qd (rad/s) and bristle deflections z (rad), same shapes."""
        (v, zz), shape = as_batch(qd, z)
        out = np.empty_like(v)
        n = v.shape[1]
        lugre_state_derivative_into(v, zz, per_joint(self.sigma0, n), *self.level_args(n), out)
        return out.reshape(shape)

    def torque(self, qd, z) -> np.ndarray:
        """Friction torque F = sigma0 z + sigma1 dz/dt + sigma2 qd, N m."""
        (v, zz), shape = as_batch(qd, z)
        out = np.empty_like(v)
        n = v.shape[1]
        lugre_torque_into(v, zz, per_joint(self.sigma0, n), per_joint(self.sigma1, n),
                          per_joint(self.sigma2, n), *self.level_args(n), out)
        return out.reshape(shape)

    def steady_state_bristle(self, qd) -> np.ndarray:
        """The deflection where dz/dt = 0 at constant speed: z_ss = g(qd) sgn(qd) / sigma0, rad."""
        (v,), shape = as_batch(qd)
        out = np.empty_like(v)
        n = v.shape[1]
        lugre_steady_state_bristle_into(v, per_joint(self.sigma0, n), *self.level_args(n), out)
        return out.reshape(shape)

    def dissipated_power(self, qd, z) -> np.ndarray:
        """Power lost in the contact, F qd - d/dt(sigma0 z^2 / 2), W (the bristle spring stores the rest)."""
        v = np.asarray(qd, dtype=np.float64)
        return self.torque(v, z) * v - self.sigma0 * np.asarray(z) * self.state_derivative(v, z)


# ---------------------------------------------------------------- numpy-level functions

def viscous(qd, Fv) -> np.ndarray:
    """Viscous friction torque Fv qd, N m (qd rad/s, Fv N m s/rad)."""
    return StribeckFriction.viscous(Fv).torque(qd)


def coulomb(qd, Fc, smoothing=0.0) -> np.ndarray:
    """Coulomb friction torque Fc sgn(qd), N m; sgn(0) = 0, or tanh(qd / smoothing) when smoothing > 0."""
    return StribeckFriction.coulomb_viscous(Fc, 0.0, smoothing).torque(qd)


def stribeck(qd, Fc, Fs, vs, Fv=0.0, delta=2.0, smoothing=0.0) -> np.ndarray:
    """Stribeck friction torque (Fc + (Fs - Fc) exp(-|qd/vs|^delta)) sgn(qd) + Fv qd, N m."""
    return StribeckFriction(Fc=Fc, Fs=Fs, vs=vs, Fv=Fv, delta=delta, smoothing=smoothing).torque(qd)


def karnopp(qd, tau_applied, model: KarnoppFriction) -> np.ndarray:
    """Karnopp stick-slip friction torque, N m; see karnopp_into."""
    return model.torque(qd, tau_applied)


def lugre_state_derivative(qd, z, model: LuGreFriction) -> np.ndarray:
    """LuGre bristle derivative dz/dt, rad/s; see lugre_state_derivative_into."""
    return model.state_derivative(qd, z)


def lugre_torque(qd, z, model: LuGreFriction) -> np.ndarray:
    """LuGre friction torque, N m; see lugre_torque_into."""
    return model.torque(qd, z)


def lugre_steady_state_bristle(qd, model: LuGreFriction) -> np.ndarray:
    """Bristle deflection at constant speed, rad."""
    return model.steady_state_bristle(qd)


def dissipated_power(tau_f, qd) -> np.ndarray:
    """Power taken out of the joints by friction torque tau_f (N m) at speed qd (rad/s), W, elementwise."""
    (t, v), shape = as_batch(tau_f, qd)
    out = np.empty_like(v)
    dissipated_power_into(t, v, out)
    return out.reshape(shape)


def lugre_dissipated_power(qd, z, model: LuGreFriction) -> np.ndarray:
    """Power lost in a LuGre contact, W; see LuGreFriction.dissipated_power."""
    return model.dissipated_power(qd, z)
