"""Joint friction blocks: static maps (viscous, Coulomb, Stribeck), Karnopp stick-slip and LuGre.

Every block is vector-valued, one channel per joint; a scalar parameter applies to every joint and a
scalar input expands to the width. Friction torques enter the joint equation as
`M qdd + c + G + tau_f = tau`: they oppose the motion. Each law lives once, as a scalar core of
`blocksim.models.friction`; the kernels here map ports and per-member parameters onto the cores'
arguments, packed into one (B, n, K) array per block with named columns (XX_NAME constants below).
A law that switches (an exact sign, Karnopp's regions) holds its mode through solver stages
(Block.modes) and switches at the located crossing.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import ParameterError
from ..models.friction import (karnopp_region, karnopp_switching_in, karnopp_torque_in,
                               lugre_bristle_rate, lugre_friction, sign_or_tanh, stribeck_signed,
                               stribeck_torque)
from ._bases import ActuatorBlock, PackedParams, PackedStateParams
from ._kernels import fill_rows, no_update, packed
from .base import Kernels, Param, register


# =====================================================================================================
# friction
# =====================================================================================================

# JointFriction's packed parameter columns (P[b, j, column])
JF_FC, JF_FS, JF_VS, JF_DELTA, JF_FV, JF_EPS = range(6)


@njit(cache=True)
def static_friction_kernel(qd, P, tau, p_diss):
    """tau = stribeck_torque (N m), p_diss = tau qd (W); qd (B, n or 1) rad/s, P (B, n, 6) columns JF_*."""
    wq = qd.shape[1]
    for b in range(tau.shape[0]):
        for j in range(tau.shape[1]):
            v = qd[b, j if wq > 1 else 0]
            f = stribeck_torque(v, P[b, j, JF_FC], P[b, j, JF_FS], P[b, j, JF_VS], P[b, j, JF_DELTA],
                                P[b, j, JF_FV], P[b, j, JF_EPS])
            tau[b, j] = f
            p_diss[b, j] = f * v


@njit(cache=True)
def held_sign_friction_kernel(qd, P, sign, tau, p_diss):
    """static_friction_kernel with the held sign (B, n) where the sign is exact (eps == 0)."""
    wq = qd.shape[1]
    for b in range(tau.shape[0]):
        for j in range(tau.shape[1]):
            v = qd[b, j if wq > 1 else 0]
            eps = P[b, j, JF_EPS]
            s = sign[b, j] if eps == 0.0 else sign_or_tanh(v, eps)
            f = stribeck_signed(v, s, P[b, j, JF_FC], P[b, j, JF_FS], P[b, j, JF_VS],
                                P[b, j, JF_DELTA], P[b, j, JF_FV])
            tau[b, j] = f
            p_diss[b, j] = f * v


@njit(cache=True)
def friction_sign_kernel(qd, sign):
    """sign = sgn(qd) (B, n), the exact sign held until the next major step."""
    wq = qd.shape[1]
    for b in range(sign.shape[0]):
        for j in range(sign.shape[1]):
            sign[b, j] = sign_or_tanh(qd[b, j if wq > 1 else 0], 0.0)


@njit(cache=True, forceinline=True, _nrt=False)
def joint_friction_output(t, xc, xd, u, y, p):
    static_friction_kernel(u[0], p.coeffs, y[0], y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def joint_friction_held_output(t, xc, xd, u, y, p):
    held_sign_friction_kernel(u[0], p.coeffs, xd, y[0], y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def joint_friction_modes(t, xc, xd, u, p):
    friction_sign_kernel(u[0], xd)


@njit(cache=True, forceinline=True, _nrt=False)
def expand_zc(t, xc, xd, u, g, p):
    """g = the first input, expanded to g's width (crossings at qd = 0)."""
    fill_rows(u[0], g)


FRICTION_MODELS = ("viscous", "coulomb", "stribeck")


@register
class JointFriction(ActuatorBlock):
    """Static joint friction map, per joint: the torque that opposes the joint speed qd.

        viscous:  tau = Fv qd
        coulomb:  tau = Fc sgn(qd) + Fv qd
        stribeck: tau = (Fc + (Fs - Fc) exp(-|qd / vs|^delta)) sgn(qd) + Fv qd

    With eps = 0 the sign is exact (sgn(0) = 0) and a zero crossing is declared at qd = 0, so an
    adaptive solver steps onto the jump (the sign is a mode, held through the solver's stages
    until then); eps > 0 replaces sgn(qd) by tanh(qd / eps) (smooth, for
    fixed-step solvers: W1's plant uses eps = 1e-3 rad/s). A joint that should come to rest under
    exact Coulomb friction chatters around qd = 0: use KarnoppFriction or LuGreFriction for sticking.
    Outputs tau (N m, to be subtracted from the driving torque) and p_diss = tau qd (W, >= 0), the
    power the friction takes out of the joint.
    """

    type_name = "JointFriction"
    summary = "static friction map per joint (viscous, Coulomb, Stribeck), tau opposes qd"
    params = {
        "model": Param("coulomb", "-", "which terms act: viscous | coulomb | stribeck", kind="str",
                       choices=FRICTION_MODELS),
        "Fv": Param(0.0, "N m s/rad", "viscous coefficient (>= 0)"),
        "Fc": Param(0.0, "N m", "Coulomb level (>= 0; coulomb and stribeck models)"),
        "Fs": Param(None, "N m", "static (breakaway) level, stribeck model (default: Fc)"),
        "vs": Param(None, "rad/s", "Stribeck speed (> 0), stribeck model"),
        "delta": Param(2.0, "-", "Stribeck shape exponent (> 0; 2 Gaussian, 1 Tustin)"),
        "eps": Param(0.0, "rad/s", "smoothing speed: 0 exact sign with a zero crossing, "
                                   "> 0 tanh(qd / eps)"),
    }
    inputs = ("qd",)
    outputs = ("tau", "p_diss")
    width_params = ("Fv", "Fc", "Fs", "vs", "delta", "eps")

    def check_values(self, v):
        p = v
        self.positive("Fv", "Fc", "Fs", "eps", allow_zero=True, v=v)
        self.positive("vs", "delta", v=v)
        if p.model != "stribeck" and (p.Fs is not None or p.vs is not None):
            raise ParameterError(f"Fs and vs belong to the stribeck model, not model '{p.model}'",
                                 block=self.name)
        if p.model == "viscous" and np.any(p.Fc != 0):
            raise ParameterError("model 'viscous' has no Coulomb level: drop Fc or use model "
                                 "'coulomb'", block=self.name)
        if p.model == "stribeck" and p.vs is None and p.Fs is not None and np.any(p.Fs != p.Fc):
            raise ParameterError("model 'stribeck' with Fs != Fc needs the Stribeck speed vs",
                                 block=self.name)

    def structure(self, v):
        """Whether the exact sign has a zero crossing at qd = 0 (some eps == 0, a Coulomb term)."""
        return (v.model != "viscous" and bool(np.any(v.eps == 0)),)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_zc = self.width if self.structure(self.p)[0] else 0
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = self.n_zc      # the exact sign of qd, held (Block.modes)

    def record(self, v):
        rows = self.rows_of(v)
        return PackedParams(packed(rows["Fc"], rows.get("Fs", rows["Fc"]),
                                   rows.get("vs", np.ones((v.batch, self.width))),
                                   rows["delta"], rows["Fv"], rows["eps"]))

    def state_names(self):
        return [], [f"sign[{j}]" for j in range(self.n_xd)]

    def kernels(self):
        if self.n_zc:
            return Kernels(output=joint_friction_held_output, update=no_update,
                           zero_crossings=expand_zc, modes=joint_friction_modes)
        return Kernels(output=joint_friction_output, update=no_update)


# KarnoppFriction's packed parameter columns
KF_FC, KF_FS, KF_VS, KF_DELTA, KF_FV, KF_DV = range(6)


@njit(cache=True)
def karnopp_kernel(qd, tau_applied, P, region, tau, p_diss):
    """karnopp_torque_in the held region (B, n) (N m) and its power tau qd (W); signals (B, n or
    1), P (B, n, 6) columns KF_*."""
    wq = qd.shape[1]
    wt = tau_applied.shape[1]
    for b in range(tau.shape[0]):
        for j in range(tau.shape[1]):
            v = qd[b, j if wq > 1 else 0]
            f = karnopp_torque_in(region[b, j], v, tau_applied[b, j if wt > 1 else 0],
                                  P[b, j, KF_FC], P[b, j, KF_FS], P[b, j, KF_VS],
                                  P[b, j, KF_DELTA], P[b, j, KF_FV])
            tau[b, j] = f
            p_diss[b, j] = f * v


@njit(cache=True)
def karnopp_regions_kernel(qd, tau_applied, P, region):
    """region = karnopp_region per joint (B, n): sticking, sticking at the static limit, slipping."""
    wq = qd.shape[1]
    wt = tau_applied.shape[1]
    for b in range(region.shape[0]):
        for j in range(region.shape[1]):
            region[b, j] = karnopp_region(qd[b, j if wq > 1 else 0],
                                          tau_applied[b, j if wt > 1 else 0], P[b, j, KF_FS],
                                          P[b, j, KF_DV])


@njit(cache=True)
def karnopp_crossings_kernel(qd, tau_applied, P, region, g):
    """karnopp_switching_in the held region (B, n): g[:, j] the band edge, g[:, n + j] the static
    limit."""
    n = P.shape[1]
    wq = qd.shape[1]
    wt = tau_applied.shape[1]
    for b in range(g.shape[0]):
        for j in range(n):
            g[b, j], g[b, n + j] = karnopp_switching_in(region[b, j], qd[b, j if wq > 1 else 0],
                                                        tau_applied[b, j if wt > 1 else 0],
                                                        P[b, j, KF_FS], P[b, j, KF_DV])


@njit(cache=True, forceinline=True, _nrt=False)
def karnopp_output(t, xc, xd, u, y, p):
    karnopp_kernel(u[0], u[1], p.coeffs, xd, y[0], y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def karnopp_modes(t, xc, xd, u, p):
    karnopp_regions_kernel(u[0], u[1], p.coeffs, xd)


@njit(cache=True, forceinline=True, _nrt=False)
def karnopp_zc(t, xc, xd, u, g, p):
    karnopp_crossings_kernel(u[0], u[1], p.coeffs, xd, g)


@register
class KarnoppFriction(ActuatorBlock):
    """Karnopp stick-slip friction per joint (Karnopp 1985): sticks inside a small speed band.

    While |qd| < dv the joint sticks: the friction equals the applied torque tau_applied (so the net
    torque and the acceleration are zero) up to the static limit Fs; beyond Fs it breaks away.
    Outside the band it slips: tau = (Fc + (Fs - Fc) exp(-|qd/vs|^delta)) sgn(qd) + Fv qd.
    tau_applied is the net non-friction torque driving the joint (spring force, motor torque minus
    gravity...), N m. Zero crossings at the band edges |qd| = dv and at the static limit
    |tau_applied| = Fs make adaptive solvers step onto every mode switch. dv must be small against
    the speeds of interest and large against the speed change of one step. Outputs tau (N m) and
    p_diss = tau qd (W; inside the band friction may push, so keep dv small).
    """

    type_name = "KarnoppFriction"
    summary = "stick-slip friction: stick band |qd| < dv, static limit Fs, Stribeck slip curve"
    params = {
        "Fc": Param(units="N m", doc="Coulomb (sliding) level (>= 0)"),
        "Fs": Param(None, "N m", "static (breakaway) limit (default: Fc)"),
        "vs": Param(1.0, "rad/s", "Stribeck speed (> 0)"),
        "delta": Param(2.0, "-", "Stribeck shape exponent (> 0)"),
        "Fv": Param(0.0, "N m s/rad", "viscous coefficient (>= 0)"),
        "dv": Param(1e-4, "rad/s", "half-width of the stick band (> 0)"),
    }
    inputs = ("qd", "tau_applied")
    outputs = ("tau", "p_diss")
    width_params = ("Fc", "Fs", "vs", "delta", "Fv", "dv")

    def check_values(self, v):
        self.positive("Fc", "Fs", "Fv", allow_zero=True, v=v)
        self.positive("vs", "delta", "dv", v=v)

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_zc = 2 * self.width
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = self.width    # the region per joint, held (Block.modes)

    def record(self, v):
        r = self.rows_of(v)
        return PackedParams(packed(r["Fc"], r.get("Fs", r["Fc"]), r["vs"], r["delta"], r["Fv"],
                                   r["dv"]))

    def kernels(self):
        return Kernels(output=karnopp_output, update=no_update, zero_crossings=karnopp_zc,
                       modes=karnopp_modes)

    def state_names(self):
        return [], [f"region[{j}]" for j in range(self.n_xd)]


# LuGreFriction's packed parameter columns
LG_SIGMA0, LG_SIGMA1, LG_SIGMA2, LG_FC, LG_FS, LG_VS, LG_DELTA = range(7)


@njit(cache=True)
def lugre_derivative_kernel(qd, z, P, zdot):
    """dz/dt = lugre_bristle_rate (rad/s); qd (B, n or 1) rad/s, z (B, n) rad, P (B, n, 7) columns LG_*."""
    wq = qd.shape[1]
    for b in range(z.shape[0]):
        for j in range(z.shape[1]):
            zdot[b, j] = lugre_bristle_rate(qd[b, j if wq > 1 else 0], z[b, j], P[b, j, LG_SIGMA0],
                                            P[b, j, LG_FC], P[b, j, LG_FS], P[b, j, LG_VS],
                                            P[b, j, LG_DELTA])


@njit(cache=True)
def lugre_output_kernel(qd, z, P, tau, p_diss, z_out):
    """tau = lugre_friction's torque (N m), p_diss = tau qd (W), z_out = z (rad)."""
    wq = qd.shape[1]
    for b in range(z.shape[0]):
        for j in range(z.shape[1]):
            v = qd[b, j if wq > 1 else 0]
            zz = z[b, j]
            f = lugre_friction(v, zz, P[b, j, LG_SIGMA0], P[b, j, LG_SIGMA1], P[b, j, LG_SIGMA2],
                               P[b, j, LG_FC], P[b, j, LG_FS], P[b, j, LG_VS], P[b, j, LG_DELTA])[1]
            tau[b, j] = f
            p_diss[b, j] = f * v
            z_out[b, j] = zz


@njit(cache=True, forceinline=True, _nrt=False)
def lugre_output(t, xc, xd, u, y, p):
    lugre_output_kernel(u[0], xc, p.coeffs, y[0], y[1], y[2])


@njit(cache=True, forceinline=True, _nrt=False)
def lugre_derivative(t, xc, xd, u, dxc, p):
    lugre_derivative_kernel(u[0], xc, p.coeffs, dxc)


@register
class LuGreFriction(ActuatorBlock):
    """LuGre dynamic friction per joint (Canudas de Wit, Olsson, Astrom, Lischinsky, IEEE TAC 1995).

        dz/dt = qd - sigma0 |qd| z / g(qd),   g(v) = Fc + (Fs - Fc) exp(-|v / vs|^delta)
        tau   = sigma0 z + sigma1 dz/dt + sigma2 qd

    z is the mean bristle deflection (rad), a continuous state per joint. Near rest the contact is a
    spring of stiffness sigma0 (pre-sliding: sticking without a mode switch, so no events); at
    constant speed tau settles on the Stribeck curve g(qd) sgn(qd) + sigma2 qd. The bristle dynamics
    are fast (rate sigma0 |qd| / g): prefer an adaptive or stiff solver. Outputs tau (N m),
    p_diss = tau qd (W: dissipation plus the power into the bristle spring) and z (rad).
    """

    type_name = "LuGreFriction"
    summary = "LuGre dynamic friction: bristle state z, pre-sliding spring, Stribeck curve"
    params = {
        "sigma0": Param(units="N m/rad", doc="bristle stiffness (> 0)"),
        "sigma1": Param(0.0, "N m s/rad", "bristle damping (>= 0)"),
        "sigma2": Param(0.0, "N m s/rad", "viscous coefficient (>= 0)"),
        "Fc": Param(units="N m", doc="Coulomb level (> 0)"),
        "Fs": Param(None, "N m", "static level (default: Fc)"),
        "vs": Param(1e-2, "rad/s", "Stribeck speed (> 0)"),
        "delta": Param(2.0, "-", "Stribeck shape exponent (> 0)"),
        "z0": Param(0.0, "rad", "initial bristle deflection"),
    }
    inputs = ("qd",)
    outputs = ("tau", "p_diss", "z")
    port_units = {"z": "rad"}
    sample = "continuous"
    width_params = ("sigma0", "sigma1", "sigma2", "Fc", "Fs", "vs", "delta", "z0")

    def check_values(self, v):
        self.positive("sigma1", "sigma2", allow_zero=True, v=v)
        self.positive("sigma0", "Fc", "Fs", "vs", "delta", v=v)

    def feedthrough(self):
        return {("qd", "tau"), ("qd", "p_diss")}

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xc = self.width

    def record(self, v):
        r = self.rows_of(v)
        return PackedStateParams(packed(r["sigma0"], r["sigma1"], r["sigma2"], r["Fc"],
                                        r.get("Fs", r["Fc"]), r["vs"], r["delta"]), r["z0"])

    def state_names(self):
        return [f"z[{j}]" for j in range(self.n_xc)], []

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xc[...] = p.x0

    def kernels(self):
        return Kernels(output=lugre_output, derivative=lugre_derivative)
