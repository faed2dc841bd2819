"""Field-oriented-control blocks: Clarke and Park transforms and their inverses, an average-value
inverter (the voltage circle of the DC bus) and space-vector PWM duty cycles.

Transforms are amplitude-invariant (the 2/3 factor): a balanced three-phase set of amplitude A is a
vector of length A, and power is 1.5 (vd id + vq iq). Park rotates by the electrical angle
theta_e = p N q (rad), the PMSM block's output. Each piece lives once, as a scalar core of
`blocksim.models.foc`; the kernels here map ports and parameters onto the cores' arguments.
Every block works per channel (one motor per joint); scalar inputs expand to the width.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import ParameterError
from ..models.foc import (clarke_transform, inverse_clarke_transform, inverse_park_transform,
                          park_transform, svpwm_duty_cycles, svpwm_voltage_limit, voltage_magnitude)
from ._bases import JointBlock
from ._kernels import NO_PARAMS, no_update
from .base import Kernels, Param, register

VdcParams = namedtuple("VdcParams", "vdc")
"""The inverter's and SVPWM's record: the DC-link voltage row (B, n) in V."""


class FocBlock(JointBlock):
    """A per-channel FOC block whose values are data of the run: configure() keeps the structure
    (the width, crossings), `record(v)` builds the kernels' record from the values v (none for a
    transform), check_values(v) checks them."""

    def configure(self, in_widths, out_widths):
        self.width = max(out_widths.values())


@njit(cache=True)
def clarke_kernel(a, b, c, alpha, beta, zero):
    """clarke_transform per channel; inputs (B, n or 1), outputs (B, n)."""
    wa, wb, wc = a.shape[1], b.shape[1], c.shape[1]
    for k in range(alpha.shape[0]):
        for j in range(alpha.shape[1]):
            alpha[k, j], beta[k, j], zero[k, j] = clarke_transform(
                a[k, j if wa > 1 else 0], b[k, j if wb > 1 else 0], c[k, j if wc > 1 else 0])


@njit(cache=True)
def inverse_clarke_kernel(alpha, beta, zero, a, b, c):
    """inverse_clarke_transform per channel; inputs (B, n or 1), outputs (B, n)."""
    w1, w2, w3 = alpha.shape[1], beta.shape[1], zero.shape[1]
    for k in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[k, j], b[k, j], c[k, j] = inverse_clarke_transform(
                alpha[k, j if w1 > 1 else 0], beta[k, j if w2 > 1 else 0], zero[k, j if w3 > 1 else 0])


@njit(cache=True)
def rotate_kernel(x, y, theta, inverse, x_out, y_out):
    """park_transform (inverse False: alpha-beta -> dq) or inverse_park_transform (True) by theta (rad)."""
    w1, w2, w3 = x.shape[1], y.shape[1], theta.shape[1]
    for k in range(x_out.shape[0]):
        for j in range(x_out.shape[1]):
            u = x[k, j if w1 > 1 else 0]
            v = y[k, j if w2 > 1 else 0]
            th = theta[k, j if w3 > 1 else 0]
            if inverse:
                x_out[k, j], y_out[k, j] = inverse_park_transform(u, v, th)
            else:
                x_out[k, j], y_out[k, j] = park_transform(u, v, th)


@njit(cache=True, forceinline=True, _nrt=False)
def clarke_output(t, xc, xd, u, y, p):
    clarke_kernel(u[0], u[1], u[2], y[0], y[1], y[2])


@njit(cache=True, forceinline=True, _nrt=False)
def inverse_clarke_output(t, xc, xd, u, y, p):
    inverse_clarke_kernel(u[0], u[1], u[2], y[0], y[1], y[2])


@njit(cache=True, forceinline=True, _nrt=False)
def park_output(t, xc, xd, u, y, p):
    rotate_kernel(u[0], u[1], u[2], False, y[0], y[1])


@njit(cache=True, forceinline=True, _nrt=False)
def inverse_park_output(t, xc, xd, u, y, p):
    rotate_kernel(u[0], u[1], u[2], True, y[0], y[1])


class Transform(FocBlock):
    """The shared shape of the FOC transforms: memoryless, every output reads every input, no
    parameters; `kernel` is the output adapter. A frame transform carries whatever it is given
    (currents in A or voltages in V): its ports have no units of their own."""

    params = {}
    kernel = None

    def record(self, v):
        return NO_PARAMS

    def kernels(self):
        return Kernels(output=type(self).kernel, update=no_update)


@register
class Clarke(Transform):
    """Amplitude-invariant Clarke transform: phase quantities (a, b, c) -> (alpha, beta, zero).

    alpha = (2a - b - c) / 3, beta = (b - c) / sqrt(3), zero = (a + b + c) / 3 (A or V).
    """

    type_name = "Clarke"
    summary = "abc -> alpha, beta, zero (amplitude-invariant)"
    inputs = ("a", "b", "c")
    outputs = ("alpha", "beta", "zero")
    port_units = dict.fromkeys(inputs + outputs)

    kernel = clarke_output


@register
class InverseClarke(Transform):
    """Inverse Clarke transform: (alpha, beta, zero) -> phase quantities (a, b, c); zero is optional."""

    type_name = "InverseClarke"
    summary = "alpha, beta (, zero) -> abc"
    inputs = ("alpha", "beta", "zero")
    optional_inputs = ("zero",)
    outputs = ("a", "b", "c")
    port_units = dict.fromkeys(inputs + outputs)

    kernel = inverse_clarke_output


@register
class Park(Transform):
    """Park transform into the rotor frame at electrical angle theta_e (rad):
    d = alpha cos(theta_e) + beta sin(theta_e), q = -alpha sin(theta_e) + beta cos(theta_e)."""

    type_name = "Park"
    summary = "alpha, beta -> d, q at the electrical angle theta_e"
    inputs = ("alpha", "beta", "theta_e")
    outputs = ("d", "q")
    port_units = dict.fromkeys(("alpha", "beta", "d", "q"))

    kernel = park_output


@register
class InversePark(Transform):
    """Inverse Park transform from the rotor frame at electrical angle theta_e (rad):
    alpha = d cos(theta_e) - q sin(theta_e), beta = d sin(theta_e) + q cos(theta_e)."""

    type_name = "InversePark"
    summary = "d, q -> alpha, beta at the electrical angle theta_e"
    inputs = ("d", "q", "theta_e")
    outputs = ("alpha", "beta")
    port_units = dict.fromkeys(("alpha", "beta", "d", "q"))

    kernel = inverse_park_output


@njit(cache=True)
def circle_limit_kernel(v1, v2, vdc, limited, v1_out, v2_out, saturated):
    """The voltage vector scaled onto the circle |v| = svpwm_voltage_limit(vdc) (V), its direction
    kept, where the held mode `limited` (B, n) is 1, passed through where it is 0; saturated = the
    mode. Where the limit acts this is voltage_circle_limit's arithmetic; in a solver stage past the
    located crossing the held mode may scale a vector inside the circle onto it, or leave one
    outside it (the mode switches at the crossing)."""
    w1, w2 = v1.shape[1], v2.shape[1]
    for k in range(v1_out.shape[0]):
        for j in range(v1_out.shape[1]):
            x, y = v1[k, j if w1 > 1 else 0], v2[k, j if w2 > 1 else 0]
            mag = voltage_magnitude(x, y)
            if limited[k, j] != 0.0 and mag > 0.0:
                scale = svpwm_voltage_limit(vdc[k, j]) / mag
                x, y = x * scale, y * scale
            v1_out[k, j], v2_out[k, j] = x, y
            saturated[k, j] = limited[k, j]


@njit(cache=True)
def circle_modes_kernel(v1, v2, vdc, limited):
    """limited = 1 where |v| > vdc / sqrt(3) (the limit acts), else 0: the held mode."""
    w1, w2 = v1.shape[1], v2.shape[1]
    for k in range(limited.shape[0]):
        for j in range(limited.shape[1]):
            mag = voltage_magnitude(v1[k, j if w1 > 1 else 0], v2[k, j if w2 > 1 else 0])
            limited[k, j] = 1.0 if mag > svpwm_voltage_limit(vdc[k, j]) else 0.0


@njit(cache=True)
def circle_crossings_kernel(v1, v2, vdc, g):
    """g = |v| - vdc / sqrt(3) (V): the kink of the limit (continuous, whatever the mode)."""
    w1, w2 = v1.shape[1], v2.shape[1]
    for k in range(g.shape[0]):
        for j in range(g.shape[1]):
            g[k, j] = (voltage_magnitude(v1[k, j if w1 > 1 else 0], v2[k, j if w2 > 1 else 0])
                       - svpwm_voltage_limit(vdc[k, j]))


@njit(cache=True, forceinline=True, _nrt=False)
def inverter_output(t, xc, xd, u, y, p):
    circle_limit_kernel(u[0], u[1], p.vdc, xd, y[0], y[1], y[2])


@njit(cache=True, forceinline=True, _nrt=False)
def inverter_modes(t, xc, xd, u, p):
    circle_modes_kernel(u[0], u[1], p.vdc, xd)


@njit(cache=True, forceinline=True, _nrt=False)
def inverter_zc(t, xc, xd, u, g, p):
    circle_crossings_kernel(u[0], u[1], p.vdc, g)


@register
class Inverter(FocBlock):
    """Average-value three-phase inverter: the commanded voltage vector, limited to what the DC bus
    can make with space-vector modulation, |v| <= Vdc / sqrt(3) (V), its direction kept.

    Works in either frame (the length of a vector is the same in dq and alpha-beta): `frame: dq`
    has inputs vd_ref, vq_ref and outputs vd, vq; `frame: alphabeta` inputs v_alpha_ref, v_beta_ref
    and outputs v_alpha, v_beta. Output `saturated` is 1 while the limit acts. Switching ripple and
    dead time are averaged out (one PWM period is far below the current loop's time constant).

    A zero crossing per channel at |v| = Vdc / sqrt(3) makes an adaptive solver step onto the edge
    of the circle; whether a channel is limited is a mode (xd, Block.modes), held through the
    solver's stages until that located crossing: the output is scaled onto the circle only while
    the held mode says limited, and `saturated` is the held mode.
    """

    type_name = "Inverter"
    summary = "average-value inverter: voltage vector limited to the circle Vdc / sqrt(3)"
    params = {
        "vdc": Param(units="V", doc="DC-link voltage (> 0)"),
        "frame": Param("dq", "-", "port names: dq or alphabeta", kind="str",
                       choices=("dq", "alphabeta")),
    }
    inputs = ("vd_ref", "vq_ref")                       # frame dq; alphabeta: v_alpha_ref, v_beta_ref
    outputs = ("vd", "vq", "saturated")                 # frame dq; alphabeta: v_alpha, v_beta, saturated
    width_params = ("vdc",)

    def check_values(self, v):
        self.positive("vdc", v=v)

    def input_names(self):
        return ["vd_ref", "vq_ref"] if self.p.frame == "dq" else ["v_alpha_ref", "v_beta_ref"]

    def output_names(self):
        return (["vd", "vq"] if self.p.frame == "dq" else ["v_alpha", "v_beta"]) + ["saturated"]

    def configure(self, in_widths, out_widths):
        super().configure(in_widths, out_widths)
        self.n_zc = self.width
        self.zc_directions = np.zeros(self.n_zc, dtype=np.int64)
        self.n_xd = self.n_modes = self.width      # limited or not per channel, held (Block.modes)

    def record(self, v):
        return VdcParams(self.rows_of(v)["vdc"])

    def state_names(self):
        return [], [f"limited[{j}]" for j in range(self.n_xd)]

    def kernels(self):
        return Kernels(output=inverter_output, update=no_update, zero_crossings=inverter_zc,
                       modes=inverter_modes)


@njit(cache=True)
def svpwm_kernel(v_alpha, v_beta, vdc, da, db, dc):
    """svpwm_duty_cycles per channel: centred duties by min-max injection, clipped to [0, 1]."""
    w1, w2 = v_alpha.shape[1], v_beta.shape[1]
    for k in range(da.shape[0]):
        for j in range(da.shape[1]):
            da[k, j], db[k, j], dc[k, j] = svpwm_duty_cycles(v_alpha[k, j if w1 > 1 else 0],
                                                             v_beta[k, j if w2 > 1 else 0], vdc[k, j])


@njit(cache=True, forceinline=True, _nrt=False)
def svpwm_output(t, xc, xd, u, y, p):
    svpwm_kernel(u[0], u[1], p.vdc, y[0], y[1], y[2])


@register
class SVPWM(FocBlock):
    """Space-vector PWM duty cycles (da, db, dc) in [0, 1] for a stator voltage (v_alpha, v_beta) (V).

    Min-max zero-sequence injection, centred in the carrier: the phase references (inverse Clarke)
    are shifted by -(max + min) / 2 and d_x = 1/2 + v_x / vdc. Inside the hexagon (always within
    |v| <= vdc / sqrt(3)) the average phase-to-neutral voltages give the command back exactly;
    outside it the duties clip to [0, 1].
    """

    type_name = "SVPWM"
    summary = "space-vector PWM duties from v_alpha, v_beta and the DC link"
    params = {"vdc": Param(units="V", doc="DC-link voltage (> 0)")}
    inputs = ("v_alpha", "v_beta")
    outputs = ("da", "db", "dc")
    width_params = ("vdc",)

    def check_values(self, v):
        if np.any(v.vdc <= 0):
            raise ParameterError("vdc must be > 0", block=self.name)

    def record(self, v):
        return VdcParams(self.rows_of(v)["vdc"])

    def kernels(self):
        return Kernels(output=svpwm_output, update=no_update)
