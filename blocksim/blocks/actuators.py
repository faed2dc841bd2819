"""Actuator blocks: DC and PMSM motors behind a gear, and the current loop of field-oriented control
(TorqueToCurrent, CurrentController); the joint friction blocks are in `blocks.friction`.

Every block is vector-valued, one channel per joint; a scalar parameter applies to every joint and a
scalar input expands to the width. Friction torques enter the joint equation as
`M qdd + c + G + tau_f = tau`: they oppose the motion. Each law lives once, as a scalar core of
`blocksim.models` (friction: Stribeck, Karnopp, LuGre; motor: DC, PMSM; foc: the current PI); the
kernels here map ports and per-member parameters onto the cores' arguments, so a batch may sweep any
parameter, packed into one (B, n, K) array per block with named columns (XX_NAME constants below):
compiled code pays a few ns for every array argument of a call.

Compiled mode (base.Kernels): each block's runtime methods call module-level adapters
`f(t, xc, xd, u, y | dxc | g, p)` with the parameter record p of the run's values (`record(v)`:
the values are data of the run, the block holds its structure only), the same adapters the
generated diagram code calls, so both modes compute the same numbers. Adapters are inlined into
the caller; the kernels they call are compiled once and cached by numba.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError
from ..models.foc import current_pi_axis, current_pi_dq, q_current_setpoint, tune_current_pi
from ..models.motor import (dc_current_rate, dc_powers, dc_torque, electrical, load_acceleration,
                            pmsm_current_rates, pmsm_powers, pmsm_torque)
from ._bases import OFFSET, PERIOD, ActuatorBlock, PackedParams, PackedStateParams
from ._kernels import no_update, packed
from .base import Kernels, Param, register

CurrentPIParams = namedtuple("CurrentPIParams", "coeffs decouple Ts")
"""The current controller's record: gains and motor constants packed (B, n, K) (columns CP_*),
whether to decouple the axes, and the sample period Ts (s)."""


# =====================================================================================================
# motors
# =====================================================================================================

class OwnLoad:
    """A motor block that may carry its own mechanical load (`J_load` given: states q, qd and
    the ports that go with them), a structure of its values."""

    def structure(self, v):
        """Whether the block carries its own load."""
        return (v.J_load is not None,)

    @property
    def has_load(self) -> bool:
        return self.structure(self.p)[0]


# DCMotor's packed parameter columns (the last three: its own load, when it has one)
DC_R, DC_L, DC_KT, DC_KE, DC_N, DC_J, DC_B = range(7)


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_derivative_kernel(i, v, qd, P, di):
    """di/dt = dc_current_rate (A/s); signals (B, n or 1), P (B, n, 5) columns DC_*."""
    wv = v.shape[1]
    wq = qd.shape[1]
    for b in range(i.shape[0]):
        for j in range(i.shape[1]):
            di[b, j] = dc_current_rate(i[b, j], v[b, j if wv > 1 else 0], qd[b, j if wq > 1 else 0],
                                       P[b, j, DC_R], P[b, j, DC_L], P[b, j, DC_KE], P[b, j, DC_N])


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_load_derivative_kernel(x, v, tau_load, P, dx):
    """The motor with its own load, x = [i | q | qd] (B, 3 n): di/dt = dc_current_rate,
    dq/dt = qd, dqd/dt = load_acceleration of the motor's torque (A/s, rad/s, rad/s^2)."""
    n = P.shape[1]
    wv = v.shape[1]
    wl = tau_load.shape[1]
    for b in range(x.shape[0]):
        for j in range(n):
            i, w = x[b, j], x[b, 2 * n + j]
            dx[b, j] = dc_current_rate(i, v[b, j if wv > 1 else 0], w, P[b, j, DC_R],
                                       P[b, j, DC_L], P[b, j, DC_KE], P[b, j, DC_N])
            dx[b, n + j] = w
            dx[b, 2 * n + j] = load_acceleration(dc_torque(i, P[b, j, DC_KT], P[b, j, DC_N]), w,
                                                 tau_load[b, j if wl > 1 else 0], P[b, j, DC_J],
                                                 P[b, j, DC_B])


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_load_output(t, xc, xd, u, y, p):
    """The motor with its own load: the motor's outputs at the load's speed, then q and qd."""
    n = y[0].shape[1]
    dc_motor_output_kernel(xc[:, :n], u[0], xc[:, 2 * n:], p.coeffs, y[0], y[1], y[2], y[3],
                           y[4], y[5], (True, True, True, True, True, True))
    for b in range(xc.shape[0]):
        for j in range(n):
            y[6][b, j] = xc[b, n + j]
            y[7][b, j] = xc[b, 2 * n + j]


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_load_derivative(t, xc, xd, u, dxc, p):
    dc_motor_load_derivative_kernel(xc, u[0], u[1], p.coeffs, dxc)


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_output_kernel(i, v, qd, P, i_out, tau, p_elec, p_copper, e_mag, p_mech, want):
    """Current (A), joint torque dc_torque (N m), the dc_powers terms (W, W, J) and tau qd (W): those
    flagged in want (6 bools, in the output order)."""
    wv = v.shape[1]
    wq = qd.shape[1]
    for b in range(i.shape[0]):
        for j in range(i.shape[1]):
            ik = i[b, j]
            t = dc_torque(ik, P[b, j, DC_KT], P[b, j, DC_N])
            pe, pc, em = dc_powers(ik, v[b, j if wv > 1 else 0], P[b, j, DC_R], P[b, j, DC_L])
            if want[0]:
                i_out[b, j] = ik
            if want[1]:
                tau[b, j] = t
            if want[2]:
                p_elec[b, j] = pe
            if want[3]:
                p_copper[b, j] = pc
            if want[4]:
                e_mag[b, j] = em
            if want[5]:
                p_mech[b, j] = t * qd[b, j if wq > 1 else 0]


@register
class DCMotor(OwnLoad, ActuatorBlock):
    """Brushed-DC motor behind a gear, per joint; also the q-axis model of a PMSM under FOC (W2).

        L di/dt = v - R i - Ke N qd,   joint torque tau = N Kt i

    v is the terminal voltage (V), qd the joint speed (rad/s; the motor turns at N qd), i the
    armature current (A), a continuous state. Power outputs, so that energy balances can be
    integrated: p_elec = v i, p_copper = R i^2, p_mech = tau qd (W), and the magnetic energy
    e_mag = 0.5 L i^2 (J); with Ke = Kt, p_elec = p_copper + d(e_mag)/dt + p_mech exactly.
    Jm is the rotor inertia: the joint feels N^2 Jm, which belongs in the plant's mass matrix when
    the motor drives a plant; it is listed here so the motor is described in one place.

    Its own load (`J_load` given): the block also integrates the joint's motion,
    (J_load + N^2 Jm) qdd = tau - b_load qd - tau_load, from q0, qd0, so a speed or position loop
    needs no plant: the `qd` input goes, an optional input `tau_load` (N m, against the motion;
    zero when unwired) comes, and outputs `q` (rad) and `qd` (rad/s) are added.
    """

    type_name = "DCMotor"
    summary = "DC motor (q-axis equivalent) behind a gear: L di/dt = v - R i - Ke N qd, tau = N Kt i"
    params = {
        "R": Param(units="ohm", doc="armature (phase) resistance (> 0)"),
        "L": Param(units="H", doc="armature inductance (> 0)"),
        "Kt": Param(units="N m/A", doc="torque constant of the motor shaft (> 0)"),
        "Ke": Param(None, "V s/rad", "back-EMF constant of the motor shaft (default: Kt)"),
        "N": Param(1.0, "-", "gear ratio: motor speed N qd, joint torque N Kt i (> 0)"),
        "Jm": Param(0.0, "kg m^2", "rotor inertia (>= 0), seen at the joint as N^2 Jm"),
        "i0": Param(0.0, "A", "initial current"),
        "J_load": Param(None, "kg m^2", "inertia of the block's own load at the joint (> 0; "
                        "default: none, the joint's speed comes in on qd)"),
        "b_load": Param(0.0, "N m s/rad", "viscous friction of the own load at the joint (>= 0)"),
        "q0": Param(0.0, "rad", "initial joint position, with J_load"),
        "qd0": Param(0.0, "rad/s", "initial joint speed, with J_load"),
    }
    inputs = ("v", "qd")
    optional_inputs = ("tau_load",)
    outputs = ("i", "tau", "p_elec", "p_copper", "e_mag", "p_mech")
    sample = "continuous"
    width_params = ("R", "L", "Kt", "Ke", "N", "Jm", "i0", "J_load", "b_load", "q0", "qd0")

    def check_values(self, v):
        self.positive("R", "L", "Kt", "Ke", "N", "J_load", v=v)
        self.positive("Jm", "b_load", allow_zero=True, v=v)

    def input_names(self):
        return ["v", "tau_load"] if self.has_load else ["v", "qd"]

    def output_names(self):
        return list(self.outputs) + (["q", "qd"] if self.has_load else [])

    def feedthrough(self):
        return {("v", "p_elec")} if self.has_load else {("v", "p_elec"), ("qd", "p_mech")}

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xc = self.width * (3 if self.has_load else 1)

    def record(self, v):
        r = self.rows_of(v)
        columns = [r["R"], r["L"], r["Kt"], r.get("Ke", r["Kt"]), r["N"]]
        x0 = r["i0"]
        if v.J_load is not None:
            columns += [r["J_load"] + r["N"] ** 2 * r["Jm"], r["b_load"]]
            x0 = np.concatenate([r["i0"], r["q0"], r["qd0"]], axis=1)
        return PackedStateParams(packed(*columns), x0)

    def state_names(self):
        names = [f"i[{j}]" for j in range(self.width)]
        if self.has_load:
            names += [f"q[{j}]" for j in range(self.width)] + [f"qd[{j}]" for j in range(self.width)]
        return names, []

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xc[...] = p.x0

    def kernels(self):
        if self.has_load:
            return Kernels(output=dc_motor_load_output, derivative=dc_motor_load_derivative)
        return Kernels(output=dc_motor_output, partial_output=dc_motor_partial_output,
                       derivative=dc_motor_derivative)


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_output(t, xc, xd, u, y, p):
    dc_motor_output_kernel(xc, u[0], u[1], p.coeffs, y[0], y[1], y[2], y[3], y[4], y[5],
                           (True, True, True, True, True, True))


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_partial_output(t, xc, xd, u, y, p, want):
    dc_motor_output_kernel(xc, u[0], u[1], p.coeffs, y[0], y[1], y[2], y[3], y[4], y[5], want)


@njit(cache=True, forceinline=True, _nrt=False)
def dc_motor_derivative(t, xc, xd, u, dxc, p):
    dc_motor_derivative_kernel(xc, u[0], u[1], p.coeffs, dxc)


# PMSM's packed parameter columns (the last two: its own load, when it has one)
PM_R, PM_LD, PM_LQ, PM_PSI, PM_P, PM_N, PM_J, PM_B = range(8)


@njit(cache=True)
def pmsm_derivative_kernel(x, vd, vq, qd, P, dx):
    """pmsm_current_rates (A/s) at we = p N qd; x = (id, iq) side by side (B, 2 n)."""
    n = P.shape[1]
    wd = vd.shape[1]
    wq = vq.shape[1]
    ws = qd.shape[1]
    for b in range(x.shape[0]):
        for j in range(n):
            we = electrical(qd[b, j if ws > 1 else 0], P[b, j, PM_P], P[b, j, PM_N])
            dx[b, j], dx[b, n + j] = pmsm_current_rates(
                x[b, j], x[b, n + j], vd[b, j if wd > 1 else 0], vq[b, j if wq > 1 else 0], we,
                P[b, j, PM_R], P[b, j, PM_LD], P[b, j, PM_LQ], P[b, j, PM_PSI])


@njit(cache=True)
def pmsm_output_kernel(x, vd, vq, qd, q, P, id_out, iq_out, tau, theta_e, p_elec, p_copper, e_mag,
                       p_mech):
    """Currents (A), joint torque pmsm_torque (N m), electrical angle p N q (rad), the pmsm_powers
    terms (W, W, J) and tau qd (W)."""
    n = P.shape[1]
    wd = vd.shape[1]
    wq = vq.shape[1]
    ws = qd.shape[1]
    wa = q.shape[1]
    for b in range(x.shape[0]):
        for j in range(n):
            a = x[b, j]
            c = x[b, n + j]
            N, p, Ld, Lq = P[b, j, PM_N], P[b, j, PM_P], P[b, j, PM_LD], P[b, j, PM_LQ]
            t = pmsm_torque(a, c, P[b, j, PM_PSI], p, Ld, Lq, N)
            id_out[b, j] = a
            iq_out[b, j] = c
            tau[b, j] = t
            theta_e[b, j] = electrical(q[b, j if wa > 1 else 0], p, N)
            p_elec[b, j], p_copper[b, j], e_mag[b, j] = pmsm_powers(
                a, c, vd[b, j if wd > 1 else 0], vq[b, j if wq > 1 else 0], P[b, j, PM_R], Ld, Lq)
            p_mech[b, j] = t * qd[b, j if ws > 1 else 0]


@njit(cache=True)
def pmsm_load_derivative_kernel(x, vd, vq, tau_load, P, dx):
    """The PMSM with its own load, x = [id | iq | q | qd] (B, 4 n): pmsm_current_rates at
    we = p N qd, dq/dt = qd, dqd/dt = load_acceleration of the motor's torque."""
    n = P.shape[1]
    wd, wq, wl = vd.shape[1], vq.shape[1], tau_load.shape[1]
    for b in range(x.shape[0]):
        for j in range(n):
            a, c, w = x[b, j], x[b, n + j], x[b, 3 * n + j]
            Ld, Lq, psi, pp, N = (P[b, j, PM_LD], P[b, j, PM_LQ], P[b, j, PM_PSI], P[b, j, PM_P],
                                  P[b, j, PM_N])
            dx[b, j], dx[b, n + j] = pmsm_current_rates(
                a, c, vd[b, j if wd > 1 else 0], vq[b, j if wq > 1 else 0], electrical(w, pp, N),
                P[b, j, PM_R], Ld, Lq, psi)
            dx[b, 2 * n + j] = w
            dx[b, 3 * n + j] = load_acceleration(pmsm_torque(a, c, psi, pp, Ld, Lq, N), w,
                                                 tau_load[b, j if wl > 1 else 0], P[b, j, PM_J],
                                                 P[b, j, PM_B])


@njit(cache=True, forceinline=True, _nrt=False)
def pmsm_load_output(t, xc, xd, u, y, p):
    """The PMSM with its own load: the motor's outputs at the load's q and qd, then q and qd."""
    n = y[0].shape[1]
    pmsm_output_kernel(xc[:, :2 * n], u[0], u[1], xc[:, 3 * n:], xc[:, 2 * n:3 * n], p.coeffs,
                       y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7])
    for b in range(xc.shape[0]):
        for j in range(n):
            y[8][b, j] = xc[b, 2 * n + j]
            y[9][b, j] = xc[b, 3 * n + j]


@njit(cache=True, forceinline=True, _nrt=False)
def pmsm_load_derivative(t, xc, xd, u, dxc, p):
    pmsm_load_derivative_kernel(xc, u[0], u[1], u[2], p.coeffs, dxc)


@njit(cache=True, forceinline=True, _nrt=False)
def pmsm_output(t, xc, xd, u, y, p):
    pmsm_output_kernel(xc, u[0], u[1], u[2], u[3], p.coeffs, y[0], y[1], y[2], y[3], y[4], y[5], y[6],
                       y[7])


@njit(cache=True, forceinline=True, _nrt=False)
def pmsm_derivative(t, xc, xd, u, dxc, p):
    pmsm_derivative_kernel(xc, u[0], u[1], u[2], p.coeffs, dxc)


@register
class PMSM(OwnLoad, ActuatorBlock):
    """Permanent-magnet synchronous motor behind a gear, in the rotor dq frame, per joint.

        Ld did/dt = vd - R id + we Lq iq
        Lq diq/dt = vq - R iq - we (Ld id + psi),      we = p N qd (electrical speed, rad/s)
        tau = N 1.5 p (psi iq + (Ld - Lq) id iq)       (joint torque, N m)

    dq quantities are amplitude-invariant (Park with the 2/3 factor), hence the 1.5 factors:
    p_elec = 1.5 (vd id + vq iq), p_copper = 1.5 R (id^2 + iq^2), e_mag = 0.75 (Ld id^2 + Lq iq^2),
    p_mech = tau qd, and p_elec = p_copper + d(e_mag)/dt + p_mech exactly. Give the flux linkage
    psi or the torque constant Kt = 1.5 p psi. theta_e = p N q (rad, not wrapped; the rotor's d axis
    is on phase a at q = 0) feeds Park / InversePark; input q is optional (theta_e = 0 without it).
    Jm is the rotor inertia, seen at the joint as N^2 Jm (add it to the plant's mass matrix).

    Its own load (`J_load` given): the block also integrates the joint's motion,
    (J_load + N^2 Jm) qdd = tau - b_load qd - tau_load, from q0, qd0: inputs vd, vq and an
    optional tau_load (N m, against the motion), outputs also q (rad) and qd (rad/s), and
    theta_e from its own q.
    """

    type_name = "PMSM"
    summary = "PMSM in dq behind a gear: currents id, iq, torque 1.5 p (psi iq + (Ld-Lq) id iq) N"
    params = {
        "R": Param(units="ohm", doc="phase resistance (> 0)"),
        "Ld": Param(units="H", doc="d-axis inductance (> 0)"),
        "Lq": Param(None, "H", "q-axis inductance (> 0; default: Ld, a surface magnet)"),
        "psi": Param(None, "Wb", "permanent-magnet flux linkage (give psi or Kt)"),
        "Kt": Param(None, "N m/A", "torque constant 1.5 p psi (give psi or Kt)"),
        "p": Param(1.0, "-", "pole pairs (> 0)"),
        "N": Param(1.0, "-", "gear ratio: rotor speed N qd (> 0)"),
        "Jm": Param(0.0, "kg m^2", "rotor inertia (>= 0), seen at the joint as N^2 Jm"),
        "id0": Param(0.0, "A", "initial d current"),
        "iq0": Param(0.0, "A", "initial q current"),
        "J_load": Param(None, "kg m^2", "inertia of the block's own load at the joint (> 0; "
                        "default: none, the joint's motion comes in on qd and q)"),
        "b_load": Param(0.0, "N m s/rad", "viscous friction of the own load at the joint (>= 0)"),
        "q0": Param(0.0, "rad", "initial joint position, with J_load"),
        "qd0": Param(0.0, "rad/s", "initial joint speed, with J_load"),
    }
    inputs = ("vd", "vq", "qd", "q")
    optional_inputs = ("q", "tau_load")
    outputs = ("id", "iq", "tau", "theta_e", "p_elec", "p_copper", "e_mag", "p_mech")
    sample = "continuous"
    width_params = ("R", "Ld", "Lq", "psi", "Kt", "p", "N", "Jm", "id0", "iq0", "J_load",
                    "b_load", "q0", "qd0")

    def check_values(self, v):
        if (v.psi is None) == (v.Kt is None):
            raise ParameterError("give exactly one of psi (flux linkage, Wb) and Kt (N m/A)",
                                 block=self.name)
        self.positive("R", "Ld", "Lq", "psi", "Kt", "p", "N", "J_load", v=v)
        self.positive("Jm", "b_load", allow_zero=True, v=v)

    def input_names(self):
        return ["vd", "vq", "tau_load"] if self.has_load else list(self.inputs)

    def output_names(self):
        return list(self.outputs) + (["q", "qd"] if self.has_load else [])

    def feedthrough(self):
        electrical_power = {("vd", "p_elec"), ("vq", "p_elec")}
        return electrical_power if self.has_load else \
            electrical_power | {("q", "theta_e"), ("qd", "p_mech")}

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_xc = (4 if self.has_load else 2) * self.width

    def record(self, v):
        r = self.rows_of(v)
        psi = r["psi"] if "psi" in r else r["Kt"] / (1.5 * r["p"])
        columns = [r["R"], r["Ld"], r.get("Lq", r["Ld"]), psi, r["p"], r["N"]]
        # x0 = (id0, iq0[, q0, qd0]) side by side, the layout of the state
        x0 = [r["id0"], r["iq0"]]
        if v.J_load is not None:
            columns += [r["J_load"] + r["N"] ** 2 * r["Jm"], r["b_load"]]
            x0 += [r["q0"], r["qd0"]]
        return PackedStateParams(packed(*columns), np.concatenate(x0, axis=1))

    def state_names(self):
        w = self.width
        kinds = ("id", "iq", "q", "qd") if self.has_load else ("id", "iq")
        return [f"{k}[{j}]" for k in kinds for j in range(w)], []

    def initial_state(self, xc, xd, p=None):
        p = self.own_record(p)
        xc[...] = p.x0

    def kernels(self):
        if self.has_load:
            return Kernels(output=pmsm_load_output, derivative=pmsm_load_derivative)
        return Kernels(output=pmsm_output, derivative=pmsm_derivative)


# =====================================================================================================
# current loop
# =====================================================================================================

# TorqueToCurrent's packed parameter columns
TC_N, TC_KT = range(2)


@njit(cache=True, forceinline=True, _nrt=False)
def torque_to_current_kernel(tau, P, iq):
    """iq* = q_current_setpoint (A); P (B, n, 2) columns TC_*."""
    wt = tau.shape[1]
    for b in range(iq.shape[0]):
        for j in range(iq.shape[1]):
            iq[b, j] = q_current_setpoint(tau[b, j if wt > 1 else 0], P[b, j, TC_N], P[b, j, TC_KT])


@njit(cache=True, forceinline=True, _nrt=False)
def torque_to_current_output(t, xc, xd, u, y, p):
    torque_to_current_kernel(u[0], p.coeffs, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def torque_to_current_dq_output(t, xc, xd, u, y, p):
    """iq* and id* = 0."""
    torque_to_current_kernel(u[0], p.coeffs, y[0])
    y[1][:, :] = 0.0


@register
class TorqueToCurrent(ActuatorBlock):
    """Current set-point for a joint torque command: iq* = tau* / (N Kt), and id* = 0 (optional output).

    tau in N m at the joint, N the gear ratio, Kt the motor's torque constant (N m/A; for a PMSM the
    amplitude-invariant 1.5 p psi). With `with_id` the block also outputs id* = 0 (A) for a dq
    current controller (maximum torque per ampere of a surface magnet).
    """

    type_name = "TorqueToCurrent"
    summary = "iq* = tau* / (N Kt) (and id* = 0)"
    params = {
        "N": Param(1.0, "-", "gear ratio (> 0)"),
        "Kt": Param(units="N m/A", doc="motor torque constant (> 0)"),
        "with_id": Param(False, "-", "also output id = 0", kind="bool"),
    }
    inputs = ("tau",)
    outputs = ("iq",)                                   # and id with with_id: true
    width_params = ("N", "Kt")

    def check_values(self, v):
        self.positive("N", "Kt", v=v)

    def output_names(self):
        return ["iq", "id"] if self.p.with_id else ["iq"]

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self._output = torque_to_current_dq_output if self.p.with_id else torque_to_current_output

    def record(self, v):
        r = self.rows_of(v)
        return PackedParams(packed(r["N"], r["Kt"]))

    def kernels(self):
        return Kernels(output=self._output, update=no_update)


# CurrentController's packed parameter columns (gains after bandwidth tuning)
CC_KPD, CC_KID, CC_KPQ, CC_KIQ, CC_LD, CC_LQ, CC_PSI, CC_P, CC_N, CC_VMAX = range(10)


@njit(cache=True, forceinline=True, _nrt=False)
def current_pi_q_kernel(iq_ref, iq, qd, z, P, decouple, Ts, v, update):
    """current_pi_axis on the q axis per member and joint, with the back-EMF feed-forward
    we psi (we = p N qd) when decoupling, else -0.0 (which changes no float).

    Signals (B, n or 1), z (B, n) A s, P (B, n, 10) columns CC_*. update False: the held voltage
    into v (B, n) V; True: z <- z_next in place (v is not touched).
    """
    wr = iq_ref.shape[1]
    wm = iq.shape[1]
    ws = qd.shape[1]
    for b in range(z.shape[0]):
        for j in range(P.shape[1]):
            ff = (electrical(qd[b, j if ws > 1 else 0], P[b, j, CC_P], P[b, j, CC_N]) * P[b, j, CC_PSI]
                  if decouple else -0.0)
            vk, zn = current_pi_axis(iq_ref[b, j if wr > 1 else 0], iq[b, j if wm > 1 else 0], z[b, j],
                                     P[b, j, CC_KPQ], P[b, j, CC_KIQ], ff, P[b, j, CC_VMAX], Ts)
            if update:
                z[b, j] = zn
            else:
                v[b, j] = vk


@njit(cache=True)
def current_pi_dq_kernel(id_ref, iq_ref, i_d, i_q, qd, z, P, decouple, Ts, vd, vq, update):
    """current_pi_dq per member and joint, we = p N qd (rad/s) for the decoupling feed-forward.

    z = (z_d, z_q) side by side (B, 2 n); update False: voltages into vd, vq; True: z <- z_next.
    """
    n = P.shape[1]
    w1, w2, w3, w4, w5 = id_ref.shape[1], iq_ref.shape[1], i_d.shape[1], i_q.shape[1], qd.shape[1]
    for b in range(z.shape[0]):
        for j in range(n):
            we = electrical(qd[b, j if w5 > 1 else 0], P[b, j, CC_P], P[b, j, CC_N]) if decouple else 0.0
            vdk, vqk, zdn, zqn = current_pi_dq(
                id_ref[b, j if w1 > 1 else 0], iq_ref[b, j if w2 > 1 else 0], i_d[b, j if w3 > 1 else 0],
                i_q[b, j if w4 > 1 else 0], z[b, j], z[b, n + j], we, P[b, j, CC_KPD], P[b, j, CC_KID],
                P[b, j, CC_KPQ], P[b, j, CC_KIQ], P[b, j, CC_LD], P[b, j, CC_LQ], P[b, j, CC_PSI], decouple,
                P[b, j, CC_VMAX], Ts)
            if update:
                z[b, j] = zdn
                z[b, n + j] = zqn
            else:
                vd[b, j] = vdk
                vq[b, j] = vqk


@njit(cache=True, forceinline=True, _nrt=False)
def current_pi_q_output(t, xc, xd, u, y, p):
    """The q-axis PI output; p a CurrentPIParams (as the other three current-PI adapters)."""
    current_pi_q_kernel(u[0], u[1], u[2], xd, p.coeffs, p.decouple, p.Ts, y[0], False)


@njit(cache=True, forceinline=True, _nrt=False)
def current_pi_q_update(t, xc, xd, u, p):
    current_pi_q_kernel(u[0], u[1], u[2], xd, p.coeffs, p.decouple, p.Ts, xd, True)


@njit(cache=True, forceinline=True, _nrt=False)
def current_pi_dq_output(t, xc, xd, u, y, p):
    current_pi_dq_kernel(u[0], u[1], u[2], u[3], u[4], xd, p.coeffs, p.decouple, p.Ts, y[0], y[1], False)


@njit(cache=True, forceinline=True, _nrt=False)
def current_pi_dq_update(t, xc, xd, u, p):
    current_pi_dq_kernel(u[0], u[1], u[2], u[3], u[4], xd, p.coeffs, p.decouple, p.Ts, xd, xd, True)


@register
class CurrentController(ActuatorBlock):
    """Discrete PI current controller of field-oriented control, at its own period, per joint.

    At each hit k: e = i* - i, u = Kp e + Ki z[k] (+ decoupling feed-forward), the voltage is u
    limited to v_max and held until the next hit; the integral z (A s) is updated after the output,
    by forward Euler z[k+1] = z[k] + Ts e[k], only while the limit is not active (anti-windup by
    conditional integration, as in the reference workload W2, examples/two_link_foc.yaml).
      axes q:  inputs iq_ref, iq (and qd); output vq; u clamped to +-v_max (a DC motor or the q axis).
      axes dq: inputs id_ref (optional, 0), iq_ref, id, iq (and qd); outputs vd, vq; the vector is
               scaled onto the circle |v| <= v_max keeping its direction (Vdc / sqrt(3) for SVPWM).
    Gains: Kp, Ki, or `bandwidth` wc (rad/s) with the motor's R and L (or Ld, Lq): Kp = L wc,
    Ki = R wc per axis, which cancels the R-L pole so the closed loop is first order at wc while wc
    stays well below the sampling rate (a fiftieth of it keeps the error within a few per cent).
    Decoupling (`decouple: true`, needs qd wired): vd += -we Lq iq, vq += we (Ld id + psi) with
    we = p N qd (for a DC motor: p = 1 and psi = Ke, i.e. back-EMF compensation Ke N qd).
    """

    type_name = "CurrentController"
    summary = "discrete PI current loop (q or dq), voltage limit, conditional-integration anti-windup"
    params = {
        "period": PERIOD, "offset": OFFSET,
        "axes": Param("dq", "-", "dq: both axes, circle limit; q: q axis only, clamp", kind="str",
                      choices=("dq", "q")),
        "Kp": Param(None, "V/A", "proportional gain (or give bandwidth)"),
        "Ki": Param(None, "V/(A s)", "integral gain (or give bandwidth)"),
        "Kp_d": Param(None, "V/A", "d-axis proportional gain (default: Kp, or Ld wc)"),
        "Ki_d": Param(None, "V/(A s)", "d-axis integral gain (default: Ki, or R wc)"),
        "bandwidth": Param(None, "rad/s", "closed-loop bandwidth wc: Kp = L wc, Ki = R wc"),
        "R": Param(None, "ohm", "motor resistance, for bandwidth tuning"),
        "L": Param(None, "H", "motor inductance (both axes), for tuning and decoupling"),
        "Ld": Param(None, "H", "d-axis inductance (default: L)"),
        "Lq": Param(None, "H", "q-axis inductance (default: L)"),
        "psi": Param(0.0, "Wb", "flux linkage for decoupling (a DC motor: Ke, V s/rad)"),
        "p": Param(1.0, "-", "pole pairs, for decoupling"),
        "N": Param(1.0, "-", "gear ratio, for decoupling (we = p N qd)"),
        "decouple": Param(False, "-", "add the dq decoupling / back-EMF feed-forward", kind="bool"),
        "v_max": Param(np.inf, "V", "voltage limit (> 0, may be inf)"),
    }
    inputs = ("id_ref", "iq_ref", "id", "iq", "qd")      # axes dq; axes q: iq_ref, iq, qd
    outputs = ("vd", "vq")                              # axes dq; axes q: vq
    optional_inputs = ("id_ref", "qd")
    sample = "discrete"
    width_params = ("Kp", "Ki", "Kp_d", "Ki_d", "bandwidth", "R", "L", "Ld", "Lq", "psi", "p", "N",
                    "v_max")

    def infinite_ok(self):
        return ("v_max",)

    def check_values(self, v):
        p = v
        tuned = p.bandwidth is not None
        if tuned == (p.Kp is not None or p.Ki is not None):
            raise ParameterError("give the gains Kp and Ki, or bandwidth (with R and L), not both",
                                 block=self.name)
        if not tuned and (p.Kp is None or p.Ki is None):
            raise ParameterError("give both Kp and Ki", block=self.name)
        Lq_given = p.Lq if p.Lq is not None else p.L
        Ld_given = p.Ld if p.Ld is not None else p.L
        if tuned:
            self.positive("bandwidth", v=v)
            if p.R is None or Lq_given is None or (p.axes == "dq" and Ld_given is None):
                raise ParameterError("bandwidth tuning needs the motor's R and L (or Ld, Lq)",
                                     block=self.name)
        if p.decouple and (Lq_given is None or Ld_given is None) and p.axes == "dq":
            raise ParameterError("decoupling needs the motor's L (or Ld and Lq)", block=self.name)
        self.positive("Kp", "Ki", "Kp_d", "Ki_d", "R", "psi", allow_zero=True, v=v)
        self.positive("L", "Ld", "Lq", "p", "N", "v_max", v=v)

    def input_names(self):
        if self.p.axes == "q":
            return ["iq_ref", "iq", "qd"]
        return ["id_ref", "iq_ref", "id", "iq", "qd"]

    def output_names(self):
        return ["vq"] if self.p.axes == "q" else ["vd", "vq"]

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        if self.p.decouple and "qd" not in self.connected:
            raise ParameterError("decouple: true needs the joint speed qd wired", block=self.name)
        w = self.width
        self.n_xd = w if self.p.axes == "q" else 2 * w
        if self.p.axes == "q":
            self._output, self._update = current_pi_q_output, current_pi_q_update
        else:
            self._output, self._update = current_pi_dq_output, current_pi_dq_update

    def record(self, v):
        r = self.rows_of(v)
        zeros = np.zeros((v.batch, self.width))
        L = r.get("L")
        Ld = r.get("Ld", L if L is not None else zeros)
        Lq = r.get("Lq", L if L is not None else zeros)
        if v.bandwidth is not None:
            gains = tune_current_pi(r["R"], Ld if self.p.axes == "dq" else Lq, r["bandwidth"], Lq)
            Kp_q, Ki_q = gains.Kp_q, gains.Ki_q
            Kp_d, Ki_d = r.get("Kp_d", gains.Kp_d), r.get("Ki_d", gains.Ki_d)
        else:
            Kp_q, Ki_q = r["Kp"], r["Ki"]
            Kp_d, Ki_d = r.get("Kp_d", Kp_q), r.get("Ki_d", Ki_q)
        gains = tuple(np.ascontiguousarray(g) for g in (Kp_d, Ki_d, Kp_q, Ki_q))
        return CurrentPIParams(packed(*gains, Ld, Lq, r["psi"], r["p"], r["N"], r["v_max"]),
                               bool(v.decouple), float(v.period))

    def gains_of(self, p=None) -> dict[str, np.ndarray]:
        """The gains of the record p (the block's own by default), (B, n) each: Kp_d, Ki_d,
        Kp_q, Ki_q (after bandwidth tuning)."""
        p = self.own_record(p)
        return {name: np.ascontiguousarray(p.coeffs[:, :, k])
                for name, k in zip(("Kp_d", "Ki_d", "Kp_q", "Ki_q"),
                                   (CC_KPD, CC_KID, CC_KPQ, CC_KIQ))}

    @property
    def gains(self) -> dict[str, np.ndarray]:
        """The gains of the block's own values, (B, n) each: Kp_d, Ki_d, Kp_q, Ki_q (after
        bandwidth tuning)."""
        return self.gains_of()

    def state_names(self):
        w = self.width
        names = [f"zq[{j}]" for j in range(w)]
        return [], names if self.p.axes == "q" else [f"zd[{j}]" for j in range(w)] + names

    def kernels(self):
        return Kernels(output=self._output, update=self._update)
