"""The per-joint law of the robot blocks: torque limit, damping, spring, end stops, friction, gains.

One law array (B, n, N_LAW) per block holds joint i of batch member b's coefficients in row
law[b, i], its columns named below; `neutral_law` is the law without any of them. The functions
here are the law's physics, pure numba functions of (law, b, i) and the joint's state, inlined
into the callers (the Manipulator's forward dynamics in `models.plant`, the model-based blocks).

Friction modes: where the plant's friction switches at a zero crossing (an exact sign, a Karnopp
band edge) the Manipulator holds a mode per joint (`joint_mode`: the sign, or the Karnopp region),
set at major steps only and passed to `effective_torque` and `crossings` in every other
evaluation, so a solver stage past the switch keeps the law of the step's start (Simulink's
zero-crossing modes). The model-based blocks have no crossings and no modes: they call
`_law_friction`, the live law.

Units: torques N m (N for a prismatic joint), speeds rad/s (m/s), positions rad (m); damping
N m s/rad, stiffness N m/rad. Signs: friction opposes the motion, tau_f(w) > 0 for w > 0.

Columns:
    TAU_MAX              actuator torque limit: the input saturates to +-tau_max (inf: none)
    FV, FCP, FCN         viscous coefficient; Coulomb level (magnitude) while w > 0, while w < 0
    FSP, FSN             static (breakaway) level while w > 0, while w < 0 (= FCP, FCN: none)
    VS, DELTA            Stribeck speed (> 0) and shape exponent
    EPS                  sign smoothing: sign(w) (0) or tanh(w / eps)
    DAMPING, STIFFNESS, Q_REST   joint damping, spring stiffness, spring rest position
    Q_MIN, Q_MAX         end stops (-inf, inf: none)
    GAIN_P, GAIN_D       computed-torque gains Kp (1/s^2), Kd (1/s)
    SIGMA0, SIGMA1, SIGMA2   LuGre bristle stiffness, bristle damping, viscous coefficient
    DV                   Karnopp stick band half-width (rad/s)
    FKIND                which friction law: KIND_STATIC, KIND_LUGRE or KIND_KARNOPP
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .friction import (karnopp_region, karnopp_switching_in, lugre_friction, sign_or_tanh,
                       stribeck_signed, stribeck_slope, stribeck_torque)

TAU_MAX, FV, FCP, FCN, FSP, FSN, VS, DELTA, EPS, DAMPING, STIFFNESS, Q_REST, Q_MIN, Q_MAX, \
    GAIN_P, GAIN_D, SIGMA0, SIGMA1, SIGMA2, DV, FKIND = range(21)
N_LAW = 21

#: Values of the FKIND column: a static map (none, model, coulomb_viscous, stribeck), LuGre, Karnopp.
KIND_STATIC, KIND_LUGRE, KIND_KARNOPP = 0.0, 1.0, 2.0


def neutral_law(B: int, n: int) -> np.ndarray:
    """A law array (B, n, N_LAW) without friction, torque limit, damping, spring, stops or gains."""
    law = np.zeros((B, n, N_LAW))
    law[:, :, TAU_MAX] = np.inf
    law[:, :, VS] = 1.0
    law[:, :, DELTA] = 2.0
    law[:, :, Q_MIN] = -np.inf
    law[:, :, Q_MAX] = np.inf
    return law


@njit(cache=True, error_model="numpy")
def _joint_friction(w, Fv, Fcp, Fcn, Fsp, Fsn, vs, delta, eps):
    """Friction torque of one joint at speed w (N m): models.friction.stribeck_torque with the
    levels (Fcp, Fsp) while w > 0 and (Fcn, Fsn) otherwise (magnitudes; at w = 0 the sign is 0).
    Compiled once and called, not inlined: inlining the core at each of the plant kernels' call
    sites made a cold compile of W2 several seconds slower, and the call costs W2 no run time."""
    forward = w > 0.0
    return stribeck_torque(w, Fcp if forward else Fcn, Fsp if forward else Fsn, vs, delta, Fv, eps)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _law_friction(law, b, i, w):
    """_joint_friction with joint i of member b's coefficients in `law`."""
    return _joint_friction(w, law[b, i, FV], law[b, i, FCP], law[b, i, FCN], law[b, i, FSP],
                           law[b, i, FSN], law[b, i, VS], law[b, i, DELTA], law[b, i, EPS])


@njit(cache=True, error_model="numpy")
def _joint_friction_held(w, sign, Fv, Fcp, Fcn, Fsp, Fsn, vs, delta):
    """Friction torque of one joint at speed w (N m) with its sign held (+1 or -1, a mode of the
    last major step): models.friction.stribeck_signed with the levels (Fcp, Fsp) while the held
    sign is +1 and (Fcn, Fsn) while it is -1, whatever the sign of w in a solver stage, so the
    torque is smooth in w until the located crossing switches the sign. Where w has the held
    sign it is the very float of _joint_friction (the same operations). Called, not inlined, as
    _joint_friction."""
    forward = sign > 0.0
    return stribeck_signed(w, sign, Fcp if forward else Fcn, Fsp if forward else Fsn, vs, delta, Fv)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _law_friction_held(law, b, i, w, sign):
    """_joint_friction_held with joint i of member b's coefficients in `law`."""
    return _joint_friction_held(w, sign, law[b, i, FV], law[b, i, FCP], law[b, i, FCN],
                                law[b, i, FSP], law[b, i, FSN], law[b, i, VS], law[b, i, DELTA])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _law_lugre(law, b, i, w, z):
    """(dz/dt, friction torque) of joint i's LuGre law at speed w and bristle deflection z:
    models.friction.lugre_friction with member b's coefficients in `law`."""
    return lugre_friction(w, z, law[b, i, SIGMA0], law[b, i, SIGMA1], law[b, i, SIGMA2],
                          law[b, i, FCP], law[b, i, FSP], law[b, i, VS], law[b, i, DELTA])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def clipped(law, b, i, t):
    """The input torque t of joint i saturated to +-tau_max (N m)."""
    lim = law[b, i, TAU_MAX]
    if t > lim:
        return lim
    if t < -lim:
        return -lim
    return t


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def less_passive(law, b, i, q, w, t):
    """t - damping w - stiffness (q - q_rest) of joint i (N m)."""
    return t - law[b, i, DAMPING] * w - law[b, i, STIFFNESS] * (q - law[b, i, Q_REST])


@njit(cache=True, error_model="numpy")
def effective_torque(law, b, i, q, w, z, t, has_friction, mode):
    """(effective torque, stuck) of joint i: clip(t, +-tau_max) - friction(w, z) - damping w
    - stiffness (q - q_rest) (N m). z is the LuGre bristle deflection (rad; unused by the other
    laws); mode the joint's held friction mode (joint_mode, set at major steps; 0.0 for a block
    without modes).

    Stuck (its friction left out here: it is the holding torque, up to the static level, that
    the caller solves for):
    - exact-sign static law: with mode +-1 the joint slips with that sign whatever the sign of w
      (never stuck); with mode 0 (at rest at the major step, or a smooth or frictionless joint)
      the sign is live: stuck while w = 0 exactly under a static level, else sign(w) (or tanh);
    - Karnopp: mode 0 (inside the band |w| < dv at the major step) stuck, +-1 slipping on the
      Stribeck curve with that sign.
    Compiled once and called, not inlined (as _joint_friction): inlined with every friction law
    at each call site it made the Manipulator's first compile about a third longer, for no
    measurable run time (W1 compiled 3.1-3.3 ms either way)."""
    t = clipped(law, b, i, t)
    stuck = False
    if has_friction:
        kind = law[b, i, FKIND]
        if kind == KIND_LUGRE:
            t -= _law_lugre(law, b, i, w, z)[1]
        elif kind == KIND_KARNOPP:
            if mode == 0.0:
                stuck = True
            else:
                t -= _law_friction_held(law, b, i, w, mode)
        elif mode != 0.0:
            t -= _law_friction_held(law, b, i, w, mode)
        else:
            t -= _law_friction(law, b, i, w)
            if w == 0.0 and law[b, i, EPS] == 0.0 and (law[b, i, FSP] > 0.0 or law[b, i, FSN] > 0.0):
                stuck = True
    return less_passive(law, b, i, q, w, t), stuck


def effective_torque_slopes(law, b, i, q, w, t, mode):
    """(d/dq, d/dw, d/dt) of effective_torque's torque for joint i of member b at position q,
    speed w and input torque t under the held friction mode (N m/rad, N m s/rad, 1), or None where
    it has no derivative or this does not cover it: the input exactly at its limit +-tau_max, a
    joint stuck (exact-sign static friction at rest), LuGre (the bristle state is a state of its
    own) and Karnopp. Plain Python (models.friction.stribeck_slope): for linearisation."""
    lim = law[b, i, TAU_MAX]
    if abs(t) == lim:
        return None
    d_t = 1.0 if abs(t) < lim else 0.0
    d_w = -law[b, i, DAMPING]
    kind = law[b, i, FKIND]
    if kind != KIND_STATIC:
        return None
    forward = (mode > 0.0) if mode != 0.0 else (w > 0.0)
    eps = law[b, i, EPS]
    levels = (law[b, i, FCP], law[b, i, FSP]) if forward else (law[b, i, FCN], law[b, i, FSN])
    if eps == 0.0 and mode == 0.0:
        if w == 0.0 and (law[b, i, FSP] > 0.0 or law[b, i, FSN] > 0.0):
            return None                   # stuck: the holding torque is solved, not a law
        mode = math.copysign(1.0, w) if w != 0.0 else 0.0
    if eps > 0.0 and w == 0.0 and (law[b, i, FCP], law[b, i, FSP]) != (law[b, i, FCN], law[b, i, FSN]):
        return None                       # asymmetric levels: one-sided slopes at rest
    if eps > 0.0 or mode != 0.0:
        try:
            d_w -= stribeck_slope(w, levels[0], levels[1], law[b, i, VS], law[b, i, DELTA],
                                  law[b, i, FV], eps, mode)
        except ValueError:
            return None
    else:
        d_w -= law[b, i, FV]              # no Coulomb or static level: viscous only
    return -law[b, i, STIFFNESS], d_w, d_t


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def joint_mode(law, b, i, w):
    """The friction mode joint i holds from a major step at speed w (rad/s) until the next one:
    Karnopp 0 inside the band |w| < dv (stuck), +1 / -1 slipping forwards / backwards
    (models.friction.karnopp_region with no applied torque: the static limit is no mode here, the
    dynamics decide breakaway continuously); an exact-sign static law sign(w) (+1, -1, or 0 at
    rest); 0 for every other joint (smooth sign, LuGre, no friction: nothing held)."""
    kind = law[b, i, FKIND]
    if kind == KIND_KARNOPP:
        return karnopp_region(w, 0.0, math.inf, law[b, i, DV])
    if kind == KIND_STATIC and law[b, i, EPS] == 0.0:
        return sign_or_tanh(w, 0.0)
    return 0.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def static_level(law, b, i, hold):
    """The static friction level (N m) a stuck joint i can hold against the holding torque hold:
    FSN while hold > 0 (the joint would start moving backwards), else FSP."""
    return law[b, i, FSN] if hold > 0.0 else law[b, i, FSP]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def pushed_into_stop(law, b, i, q, w, a):
    """Joint i rests on a stop (w = 0 exactly, q at or beyond a limit) and the acceleration a
    pushes it through: it is held there (qdd_i = 0)."""
    return w == 0.0 and ((q >= law[b, i, Q_MAX] and a > 0.0) or (q <= law[b, i, Q_MIN] and a < 0.0))


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def friction_rate(law, b, i, w, z):
    """dz/dt of joint i's LuGre bristle deflection z at speed w (rad/s)."""
    return _law_lugre(law, b, i, w, z)[0]


@njit(cache=True, error_model="numpy")
def crossings(xc, modes, law, has_limits, exact_friction, g):
    """The law's event functions g (B, 2 n + n) at the plant state xc = [q | qd ...] under the
    held friction modes (B, n) (joint_mode): per joint q - q_max, q_min - q (rising; -1 for an
    infinite limit) when limits are set, then per joint (either direction) qd when the friction
    sign is exact, and for a Karnopp band the edge of the held region
    (models.friction.karnopp_switching_in): s qd - dv slipping with sign s, which stays below
    zero once the speed has fallen into the band even if it passes through the band within one
    step; |qd| - dv inside it. Both are continuous where the region switches (rad/s)."""
    B = xc.shape[0]
    n = law.shape[1]
    for b in range(B):
        j = 0
        if has_limits:
            for i in range(n):
                g[b, i] = xc[b, i] - law[b, i, Q_MAX] if math.isfinite(law[b, i, Q_MAX]) else -1.0
                g[b, n + i] = law[b, i, Q_MIN] - xc[b, i] if math.isfinite(law[b, i, Q_MIN]) else -1.0
            j = 2 * n
        if exact_friction:
            for i in range(n):
                if law[b, i, FKIND] == KIND_KARNOPP:
                    g[b, j + i] = karnopp_switching_in(modes[b, i], xc[b, n + i], 0.0, math.inf,
                                                       law[b, i, DV])[0]
                else:
                    g[b, j + i] = xc[b, n + i]
