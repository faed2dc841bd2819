"""The transmission of an elastic joint (Spong 1987): the spring and damper between the motor side
and the link side, with an optional gear backlash; numba functions of one joint's coefficients,
inlined into the ElasticManipulator's kernels (`blocks.elastic`).

Conventions (SI): theta is the motor angle divided by the gear ratio (link-side units, rad), q the
link angle (rad); delta = theta - q is the transmission's deflection (rad), ddelta its rate
(rad/s). The spring torque tau_s (N m) acts on the link (+tau_s) and on the motor (-tau_s):

    no backlash (b = 0):   tau_s = K delta + D ddelta
    backlash b > 0 (a dead band of width 2 b, the dead-zone model of Nordin and Gutman 2002):
        contact forwards   (delta >  b):  tau_s = K (delta - b) + D ddelta
        contact backwards  (delta < -b):  tau_s = K (delta + b) + D ddelta
        in the band        (|delta| <= b): tau_s = 0

K in N m/rad, D in N m s/rad, b in rad. The contact is a mode per joint (+1, -1, 0; `contact_mode`)
held between major steps, and its changes are the zero crossings of `backlash_crossings`, so the
force law switches exactly at the located instant (Block.modes, docs/semantics.md "Events").

Joint coefficient array `joint` (B, n, N_JOINT): columns STIFFNESS (K), DAMPING (D),
MOTOR_INERTIA (B_m = N^2 Jm, kg m^2, the rotor reflected to the link side) and BACKLASH (b).
"""
from __future__ import annotations

from numba import njit

STIFFNESS, DAMPING, MOTOR_INERTIA, BACKLASH = range(4)
N_JOINT = 4


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def contact_mode(joint, b, i, delta):
    """The contact of joint i of member b at the deflection delta (rad): +1 forwards (delta > b),
    -1 backwards (delta < -b), 0 inside the dead band (and always 0 without backlash)."""
    gap = joint[b, i, BACKLASH]
    if gap == 0.0:
        return 0.0
    if delta > gap:
        return 1.0
    if delta < -gap:
        return -1.0
    return 0.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def spring_torque(joint, b, i, delta, ddelta, mode):
    """The transmission torque tau_s (N m) of joint i of member b at the deflection delta (rad)
    and its rate ddelta (rad/s) in the held contact mode (module docstring)."""
    k = joint[b, i, STIFFNESS]
    d = joint[b, i, DAMPING]
    gap = joint[b, i, BACKLASH]
    if gap == 0.0:
        return k * delta + d * ddelta
    if mode > 0.0:
        return k * (delta - gap) + d * ddelta
    if mode < 0.0:
        return k * (delta + gap) + d * ddelta
    return 0.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def backlash_crossings(xc, joint, n, g):
    """g (B, 2 n): delta_i - b_i (the forward contact's edge) and -b_i - delta_i (the backward
    one), at the state xc = [q | qd | theta | thetad]; a joint without backlash gives 1 (never
    crossing). Either direction: entering and leaving a contact are both events."""
    for b in range(xc.shape[0]):
        for i in range(n):
            gap = joint[b, i, BACKLASH]
            if gap == 0.0:
                g[b, i] = 1.0
                g[b, n + i] = 1.0
            else:
                delta = xc[b, 2 * n + i] - xc[b, i]
                g[b, i] = delta - gap
                g[b, n + i] = -gap - delta

