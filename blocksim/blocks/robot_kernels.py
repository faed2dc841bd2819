"""Compiled kernels of the robot blocks (`robot`): they map the blocks' ports and parameter records
onto the robot's physics in `models` (forward dynamics under the joint law in `models.plant`,
inverse dynamics and kinematics on the Model/Data of `models.model_data`).

Every robot block's parameter record (`ManipulatorParams`, `DynamicsParams`, `KinematicsParams`,
declared below) holds the members' Model, the per-joint law (B, n, N_LAW) of `models.joint_law`
where the block has one, the Data workspace, then the block's flags, read by name (`p.model`).
Block's default methods (interpreted mode) and the generated code (compiled mode) run the same
kernels with the same record, so both modes compute identical numbers. The adapters (`*_output`,
...) only unpack the record (numba passes a named tuple as the plain tuple it is); the small inner
helpers (the joint law, the closed-form 2R) are inlined, the n-joint RNEA/ABA/CRBA stay calls.
"""
from __future__ import annotations

import math
from collections import namedtuple

from numba import njit

from ..models import planar2r as p2r
from ..models.joint_law import (FKIND, GAIN_D, GAIN_P, KIND_KARNOPP, Q_MAX, Q_MIN,
                                _law_friction, _law_friction_held, clipped, crossings,
                                friction_rate, joint_mode, less_passive)
from ..models.kinematics import energy, jacobian, tool_pose
from ..models import model_data as md
from ..models.model_data import OUT1, Q1, QD1, TE, joint_row, member
from ..models.coupled_map import contract_rows, expand_rows
from ..models.plant import accelerations_closed_form, accelerations_coupled, accelerations_general


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _same(a, b):
    """a and b are the same float (a signed zero differs from the other; NaN never matches)."""
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _holds(memo, b, start, x, count):
    """memo[b, start:start + count] remembers the floats of x[b, :count] (see _same): a hit."""
    for i in range(count):
        if not _same(memo[b, start + i], x[b, i]):
            return False
    return True


# ============================================================================ Manipulator

ManipulatorParams = namedtuple(
    "ManipulatorParams", "model law data use_cf crba has_fext has_friction has_limits exact resets")
"""The Manipulator's record: Model, law (B, n, N_LAW), Data; use_cf (closed-form 2R), crba
(forward dynamics by CRBA), has_fext (the wrench input is wired), has_friction, has_limits (joint
stops, zero crossings), exact (exact-sign friction or Karnopp band edges: zero crossings, and a
friction mode per joint held in xd); resets (B, n, 3), the values only the Python-side methods
read, columns RESET_Q0, RESET_QD0 (the initial state) and RESTITUTION (the bounce off a stop).

The kernels take the block's xd as the held friction modes (B, n) (`joint_law.joint_mode`), or
(B, 0) when the plant has none (no exact-sign friction, no Karnopp band)."""

RESET_Q0, RESET_QD0, RESTITUTION = range(3)

@njit(cache=True, error_model="numpy")
def manipulator_accelerations(xc, modes, tau, fext, model, law, data, use_cf, crba, has_fext,
                              has_friction, has_limits, qdd):
    """Joint accelerations qdd (B, n) of the plant at the state xc = [q | qd] (or [q | qd | z] with
    LuGre friction) under the held friction modes (B, n or 0) and the input torque tau:
    `models.plant` (the closed form 2R when it decides, else the general path).

    Each member's result is remembered in the acc_memo field of data with the state, modes,
    torque and wrench it came from; a call with the very same numbers (the derivative after the
    output at one solver stage) copies it instead of recomputing (a deterministic function of
    those numbers: the same bits). The modes are part of the key: the same state under another
    mode (a major step's switch, the probe a moment after an event) has other accelerations.
    They sit after the state in the memo's 3 n state columns (a plant with modes has no LuGre
    bristles, so 2 n + n fit).
    """
    B = xc.shape[0]
    memo = md.acc_memo(data, model[0].shape[0], B)
    for b in range(B):
        if _memo_hit(memo, b, xc, modes, tau, fext, has_fext, qdd):
            continue
        done = False
        if use_cf and not crba and not has_fext:
            done = accelerations_closed_form(b, xc, modes, tau, model, law, has_friction,
                                             has_limits, qdd)
        if not done:
            accelerations_general(b, xc, modes, tau, fext, model, law, data, crba, has_fext,
                                  has_friction, has_limits, use_cf, qdd)
        _memo_store(memo, b, xc, modes, tau, fext, has_fext, qdd)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _memo_hit(memo, b, xc, modes, tau, fext, has_fext, qdd):
    """Member b's accelerations memo (manipulator_accelerations) holds this very state, modes,
    torque and wrench: qdd[b] copied from it, True. n = tau's width (the plant's joints)."""
    n = tau.shape[1]
    nx = xc.shape[1]
    if (memo[b, 0] == 1.0 and _holds(memo, b, 1, xc, nx)
            and _holds(memo, b, 1 + nx, modes, modes.shape[1])
            and _holds(memo, b, 1 + 3 * n, tau, n)
            and _holds(memo, b, 1 + 4 * n, fext, 6 if has_fext else 0)):
        for i in range(n):
            qdd[b, i] = memo[b, 7 + 4 * n + i]
        return True
    return False


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _memo_store(memo, b, xc, modes, tau, fext, has_fext, qdd):
    """Remember member b's accelerations qdd[b] with what they came from (_memo_hit's key)."""
    n = tau.shape[1]
    nx = xc.shape[1]
    for i in range(nx):
        memo[b, 1 + i] = xc[b, i]
    for i in range(modes.shape[1]):
        memo[b, 1 + nx + i] = modes[b, i]
    for i in range(n):
        memo[b, 1 + 3 * n + i] = tau[b, i]
    for j in range(6 if has_fext else 0):
        memo[b, 1 + 4 * n + j] = fext[b, j]
    for i in range(n):
        memo[b, 7 + 4 * n + i] = qdd[b, i]
    memo[b, 0] = 1.0


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_pose(xc, model, data, pose):
    """pose (B, 12) = tool pose at q = xc[:, :n]; remembered per member with its q in
    data's pose_memo, so the second output call of an evaluation (the late one, for qdd) copies it."""
    B = xc.shape[0]
    n = model[0].shape[0]
    memo = md.pose_memo(data, n, B)
    for b in range(B):
        if not (memo[b, 0] == 1.0 and _holds(memo, b, 1, xc, n)):
            tool_pose(model, member(model, b), xc, b, memo[b], 1 + n)
            for i in range(n):
                memo[b, 1 + i] = xc[b, i]
            memo[b, 0] = 1.0
        for j in range(12):
            pose[b, j] = memo[b, 1 + n + j]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _state_outputs(xc, n, q, qd):
    """q, qd (B, n) from the state xc = [q | qd ...]."""
    for b in range(xc.shape[0]):
        for i in range(n):
            q[b, i] = xc[b, i]
            qd[b, i] = xc[b, n + i]


@njit(cache=True, error_model="numpy")
def manipulator_outputs(xc, modes, tau, fext, q, qd, qdd, pose, model, law, data, use_cf, crba,
                        has_fext, has_friction, has_limits, want_state, want_qdd, want_pose):
    """The Manipulator's outputs q, qd, qdd, pose (B, n / n / n / 12) at the state xc under the
    held friction modes: q and qd when want_state, qdd when want_qdd, pose when want_pose."""
    if want_state:
        _state_outputs(xc, model[0].shape[0], q, qd)
    if want_qdd:
        manipulator_accelerations(xc, modes, tau, fext, model, law, data, use_cf, crba, has_fext,
                                  has_friction, has_limits, qdd)
    if want_pose:
        manipulator_pose(xc, model, data, pose)


@njit(cache=True, error_model="numpy")
def manipulator_rates(xc, modes, tau, fext, dxc, model, law, data, use_cf, crba, has_fext,
                      has_friction, has_limits):
    """dxc = [qd | qdd] at the state xc under the held friction modes (then dz/dt of the LuGre
    bristles when xc holds z)."""
    n = model[0].shape[0]
    manipulator_accelerations(xc, modes, tau, fext, model, law, data, use_cf, crba, has_fext,
                              has_friction, has_limits, dxc[:, n:])
    state_rates_but_qdd(xc, law, n, dxc)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def state_rates_but_qdd(xc, law, n, dxc):
    """The rates of the Manipulator's state other than qdd: dq/dt = qd (rad/s), and dz/dt of the
    LuGre bristles (rad/s) when xc holds z."""
    lugre = xc.shape[1] > 2 * n
    for b in range(xc.shape[0]):
        for i in range(n):
            dxc[b, i] = xc[b, n + i]
        if lugre:
            for i in range(n):
                dxc[b, 2 * n + i] = friction_rate(law, b, i, xc[b, n + i], xc[b, 2 * n + i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_output(t, xc, xd, u, y, p):
    manipulator_outputs(xc, xd, u[0], u[1], y[0], y[1], y[2], y[3], p.model, p.law, p.data,
                        p.use_cf, p.crba, p.has_fext, p.has_friction, p.has_limits, True, True,
                        True)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_partial_output(t, xc, xd, u, y, p, want):
    """Only the outputs flagged in want (q, qd, qdd, pose); q and qd are one copy, so either
    flag brings both."""
    if want[2] or want[3]:
        manipulator_outputs(xc, xd, u[0], u[1], y[0], y[1], y[2], y[3], p.model, p.law, p.data,
                            p.use_cf, p.crba, p.has_fext, p.has_friction, p.has_limits,
                            want[0] or want[1], want[2], want[3])
    else:
        _state_outputs(xc, y[0].shape[1], y[0], y[1])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_derivative(t, xc, xd, u, dxc, p):
    manipulator_rates(xc, xd, u[0], u[1], dxc, p.model, p.law, p.data, p.use_cf, p.crba,
                      p.has_fext, p.has_friction, p.has_limits)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_closed_form_derivative(t, xc, xd, u, dxc, p):
    """dxc = [qd | qdd] of a planar 2R by the closed form alone: the Manipulator's derivative
    kernel when no joint can stick or rest on a stop (no exact-sign static friction, Karnopp band,
    LuGre state, stop or wrench; see Manipulator.kernels). The operations of manipulator_rates in
    that case, inlined, with nothing of the general path compiled in. It spells out the smooth case
    of joint_law.effective_torque rather than calling plant.accelerations_closed_form, whose
    sticking, LuGre and Karnopp branches would be inlined too: 3 s more of W1's first compile
    (8.5 -> 11.4 s)."""
    tau, model, law, has_friction = u[0], p.model, p.law, p.has_friction
    for b in range(xc.shape[0]):
        q1 = xc[b, 0]
        q2 = xc[b, 1]
        w1 = xc[b, 2]
        w2 = xc[b, 3]
        t1 = clipped(law, b, 0, tau[b, 0])
        t2 = clipped(law, b, 1, tau[b, 1])
        if has_friction:
            t1 -= _law_friction(law, b, 0, w1)
            t2 -= _law_friction(law, b, 1, w2)
        a1, a2 = p2r.aba_one(md.closed_form(model, member(model, b)), q1, q2, w1, w2,
                             less_passive(law, b, 0, q1, w1, t1), less_passive(law, b, 1, q2, w2, t2))
        dxc[b, 0] = w1
        dxc[b, 1] = w2
        dxc[b, 2] = a1
        dxc[b, 3] = a2


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_held_sign_derivative(t, xc, xd, u, dxc, p):
    """dxc = [qd | qdd] of a planar 2R with exact-sign friction held in modes (xd: the sign of
    each joint, +-1 or 0), no stop, wrench, LuGre, Karnopp band or CRBA: the Manipulator's
    derivative kernel in that case. A member whose joints both slip with a held sign takes the
    closed form inlined (effective_torque's held branch, then the 2R's ABA: the operations of
    accelerations_closed_form, so the same floats); a member with a joint at sign 0, which may
    stick, takes manipulator_accelerations' paths for that member (the closed form when it
    decides, else the general solve). No accelerations memo: recomputing the closed form costs
    less than keeping it."""
    tau, model, law = u[0], p.model, p.law
    qdd = dxc[:, 2:]
    for b in range(xc.shape[0]):
        m1 = xd[b, 0]
        m2 = xd[b, 1]
        w1 = xc[b, 2]
        w2 = xc[b, 3]
        dxc[b, 0] = w1
        dxc[b, 1] = w2
        if m1 == 0.0 or m2 == 0.0:
            if not accelerations_closed_form(b, xc, xd, tau, model, law, p.has_friction, False,
                                             qdd):
                accelerations_general(b, xc, xd, tau, u[1], model, law, p.data, False, False,
                                      p.has_friction, False, True, qdd)
            continue
        q1 = xc[b, 0]
        q2 = xc[b, 1]
        t1 = clipped(law, b, 0, tau[b, 0])
        t2 = clipped(law, b, 1, tau[b, 1])
        if p.has_friction:
            t1 -= _law_friction_held(law, b, 0, w1, m1)
            t2 -= _law_friction_held(law, b, 1, w2, m2)
        a1, a2 = p2r.aba_one(md.closed_form(model, member(model, b)), q1, q2, w1, w2,
                             less_passive(law, b, 0, q1, w1, t1), less_passive(law, b, 1, q2, w2, t2))
        dxc[b, 2] = a1
        dxc[b, 3] = a2


#: Impact speed (rad/s or m/s) below which a bounce off a joint stop is taken as inelastic, so a
#: joint with restitution comes to rest after finitely many events.
STOP_CAPTURE_SPEED = 1e-6


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_event(t, xc, xd, u, mask, p):
    """The Manipulator's reaction to located crossings (mask: [q - q_max | q - q_min] per joint
    when it has stops, then the exact-sign crossings qd per joint). A stop reached: q onto the
    limit, qd reversed and scaled by the restitution (or 0 below STOP_CAPTURE_SPEED). A joint
    speed through zero under exact-sign friction: qd = 0 exactly, so the dynamics decide between
    sticking and reversing (see manipulator_accelerations; the next major step holds sign 0 for
    it, and the sign it leaves with once it moves). A Karnopp band entered or left (the law's
    FKIND column KIND_KARNOPP): nothing to reset (the crossing ends the step there, and the major
    step switches the region)."""
    law, resets = p.law, p.resets
    n = law.shape[1]
    if p.has_limits:
        for b in range(mask.shape[0]):
            for i in range(n):
                upper = mask[b, i]
                if upper or mask[b, n + i]:
                    xc[b, i] = law[b, i, Q_MAX] if upper else law[b, i, Q_MIN]
                    bounce = -resets[b, i, RESTITUTION] * xc[b, n + i]
                    xc[b, n + i] = bounce if abs(bounce) >= STOP_CAPTURE_SPEED else 0.0
    if p.exact:
        start = 2 * n if p.has_limits else 0
        for b in range(mask.shape[0]):
            for i in range(n):
                if mask[b, start + i] and law[b, i, FKIND] != KIND_KARNOPP:
                    xc[b, n + i] = 0.0
    return False


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_zero_crossings(t, xc, xd, u, g, p):
    crossings(xc, xd, p.law, p.has_limits, p.exact, g)


@njit(cache=True, error_model="numpy")
def manipulator_mode_rows(xc, law, modes):
    """modes (B, n) = the friction mode of every joint at the state xc = [q | qd]
    (`joint_law.joint_mode`: Karnopp region, exact sign, or 0)."""
    n = law.shape[1]
    for b in range(xc.shape[0]):
        for i in range(n):
            modes[b, i] = joint_mode(law, b, i, xc[b, n + i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def manipulator_modes(t, xc, xd, u, p):
    """The Manipulator's modes kernel (major steps only): xd = the joints' friction modes at the
    state; every other evaluation holds them (the accelerations' memo keys on them)."""
    manipulator_mode_rows(xc, p.law, xd)


# ============================================================================ inverse dynamics family

DynamicsParams = namedtuple("DynamicsParams", "model law data use_cf has_friction")
"""The record of InverseDynamics, GravityCompensation and ComputedTorque: Model, law (B, n,
N_LAW: friction columns, ComputedTorque's gains), Data, use_cf (closed-form 2R), has_friction."""

@njit(cache=True, error_model="numpy")
def _rnea_general(b, q, qd, qdd, model, data, tau):
    """tau[b] = M(q) qdd + c(q, qd) + G(q) of member b by the RNEA (any n)."""
    n = q.shape[1]
    q1, qd1, qdd1, out1 = (joint_row(data, n, Q1), joint_row(data, n, QD1),
                           joint_row(data, n, TE), joint_row(data, n, OUT1))
    for i in range(n):
        q1[0, i] = q[b, i]
        qd1[0, i] = qd[b, i]
        qdd1[0, i] = qdd[b, i]
    md.inverse_dynamics(model, data, member(model, b), False, q1, qd1, qdd1, md.no_fext(data, n),
                        out1)
    for i in range(n):
        tau[b, i] = out1[0, i]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _closed_form_rnea(b, q, qd, qdd, model, tau):
    """tau[b] = M(q) qdd + c(q, qd) + G(q) of member b of a planar 2R by the closed form."""
    t1, t2 = p2r.rnea_one(md.closed_form(model, member(model, b)), q[b, 0], q[b, 1], qd[b, 0],
                          qd[b, 1], qdd[b, 0], qdd[b, 1])
    tau[b, 0] = t1
    tau[b, 1] = t2


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _add_friction(law, b, n, qd, tau):
    """tau[b] += friction(qd[b]) by the law's coefficients (N m)."""
    for i in range(n):
        tau[b, i] = tau[b, i] + _law_friction(law, b, i, qd[b, i])


@njit(cache=True, error_model="numpy")
def inverse_dynamics_rows(q, qd, qdd, model, law, data, use_cf, has_friction, tau):
    """tau (B, n) = M(q) qdd + c(q, qd) + G(q) (+ friction(qd) when the law has friction)."""
    B, n = q.shape
    for b in range(B):
        if use_cf:
            _closed_form_rnea(b, q, qd, qdd, model, tau)
        else:
            _rnea_general(b, q, qd, qdd, model, data, tau)
        if has_friction:
            _add_friction(law, b, n, qd, tau)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def inverse_dynamics_output(t, xc, xd, u, y, p):
    inverse_dynamics_rows(u[0], u[1], u[2], p.model, p.law, p.data, p.use_cf, p.has_friction,
                          y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _same_as_previous_member(a, b):
    """Row b of the (B, w) array a holds the same floats as row b - 1 (see _same)."""
    for i in range(a.shape[1]):
        if not _same(a[b, i], a[b - 1, i]):
            return False
    return True


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def inverse_dynamics_closed_form_output(t, xc, xd, u, y, p):
    """InverseDynamics of a planar 2R (its kernel when the model has the closed form): the
    operations of inverse_dynamics_rows, inlined, with nothing of the general RNEA compiled in.

    A member whose inputs are those of the member before, under a model all members share and no
    friction term, copies its torque: a sweep over the plant or the gains with one reference and
    one nominal feedforward evaluates the feedforward once per stage (same bits: it is a
    deterministic function of those numbers)."""
    q, qd, qdd, tau = u[0], u[1], u[2], y[0]
    model, law, has_friction = p.model, p.law, p.has_friction
    shared = model[1].shape[0] == 1 and not has_friction
    for b in range(q.shape[0]):
        if (shared and b > 0 and _same_as_previous_member(q, b)
                and _same_as_previous_member(qd, b) and _same_as_previous_member(qdd, b)):
            tau[b, 0] = tau[b - 1, 0]
            tau[b, 1] = tau[b - 1, 1]
            continue
        _closed_form_rnea(b, q, qd, qdd, model, tau)
        if has_friction:
            _add_friction(law, b, 2, qd, tau)


@njit(cache=True, error_model="numpy")
def gravity_compensation_rows(q, model, law, data, use_cf, has_friction, tau):
    """tau = G(q) = rnea(q, 0, 0); data's v field is zeros (never written in this block's Data)."""
    zeros = md.v(data, q.shape[1], q.shape[0])
    inverse_dynamics_rows(q, zeros, zeros, model, law, data, use_cf, has_friction, tau)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def gravity_compensation_output(t, xc, xd, u, y, p):
    gravity_compensation_rows(u[0], p.model, p.law, p.data, p.use_cf, p.has_friction, y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def gravity_compensation_closed_form_output(t, xc, xd, u, y, p):
    """GravityCompensation of a planar 2R (its kernel when the model has the closed form): the
    operations of gravity_compensation_rows with the closed form's, nothing of the general RNEA
    compiled in (the same floats)."""
    q, model = u[0], p.model
    zeros = md.v(p.data, 2, q.shape[0])
    for b in range(q.shape[0]):
        _closed_form_rnea(b, q, zeros, zeros, model, y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _commanded_acceleration(q_d, qd_d, qdd_d, q, qd, law, v):
    """v (B, n) = qdd_d + Kd (qd_d - qd) + Kp (q_d - q) (rad/s^2), the gains from the law's
    GAIN_D and GAIN_P columns."""
    B, n = q.shape
    for b in range(B):
        for i in range(n):
            v[b, i] = (qdd_d[b, i] + law[b, i, GAIN_D] * (qd_d[b, i] - qd[b, i])
                       + law[b, i, GAIN_P] * (q_d[b, i] - q[b, i]))


@njit(cache=True, error_model="numpy")
def computed_torque_rows(q_d, qd_d, qdd_d, q, qd, model, law, data, use_cf, has_friction, tau):
    """tau = rnea(q, qd, v), v = qdd_d + Kd (qd_d - qd) + Kp (q_d - q) (v kept in data)."""
    v = md.v(data, q.shape[1], q.shape[0])
    _commanded_acceleration(q_d, qd_d, qdd_d, q, qd, law, v)
    inverse_dynamics_rows(q, qd, v, model, law, data, use_cf, has_friction, tau)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def computed_torque_output(t, xc, xd, u, y, p):
    computed_torque_rows(u[0], u[1], u[2], u[3], u[4], p.model, p.law, p.data, p.use_cf,
                         p.has_friction, y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def computed_torque_closed_form_output(t, xc, xd, u, y, p):
    """ComputedTorque of a planar 2R (its kernel when the model has the closed form): the
    operations of computed_torque_rows with the closed form's, nothing of the general RNEA
    compiled in (the same floats)."""
    q, qd = u[3], u[4]
    v = md.v(p.data, 2, q.shape[0])
    _commanded_acceleration(u[0], u[1], u[2], q, qd, p.law, v)
    for b in range(q.shape[0]):
        _closed_form_rnea(b, q, qd, v, p.model, y[0])


# ============================================================================ kinematics and energy

KinematicsParams = namedtuple("KinematicsParams", "model data")
"""The record of ForwardKinematics, Jacobian and Energy: Model and Data."""

@njit(cache=True, error_model="numpy")
def forward_kinematics_rows(q, model, data, position, rotation, pose):
    """pose (B, 12) = the tool pose (p, then R row-major), position (B, 3) and rotation (B, 9)."""
    for b in range(q.shape[0]):
        tool_pose(model, member(model, b), q, b, pose[b], 0)
        _pose_parts(pose, b, position, rotation)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def _pose_parts(pose, b, position, rotation):
    """Member b's tool pose (p, then R row-major) split into position (m) and rotation (-)."""
    for j in range(3):
        position[b, j] = pose[b, j]
    for j in range(9):
        rotation[b, j] = pose[b, 3 + j]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def forward_kinematics_output(t, xc, xd, u, y, p):
    forward_kinematics_rows(u[0], p.model, p.data, y[0], y[1], y[2])


@njit(cache=True, error_model="numpy")
def jacobian_rows(q, model, data, J):
    """J (B, 6 n) = the tool's geometric Jacobian per member, rows [v; w] flattened row-major."""
    for b in range(q.shape[0]):
        jacobian(model, data, member(model, b), q, b, J[b])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def jacobian_output(t, xc, xd, u, y, p):
    jacobian_rows(u[0], p.model, p.data, y[0])


@njit(cache=True, error_model="numpy")
def energy_rows(q, qd, model, data, kinetic, potential, total):
    """kinetic, potential (J) per member (`models.kinematics.energy`) and their sum total."""
    for b in range(q.shape[0]):
        kin, pot = energy(model, data, member(model, b), q, qd, b)
        kinetic[b, 0] = kin
        potential[b, 0] = pot
        total[b, 0] = kin + pot


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def energy_output(t, xc, xd, u, y, p):
    energy_rows(u[0], u[1], p.model, p.data, y[0], y[1], y[2])


# ============================================================================ chains with mimic joints
# The kernels of the blocks above for a chain with mimic joints (`models.coupled_map`): ports and
# the law in the n independent joints, the Model and Data the full chain's (n_full joints); one
# expansion (q, qd, qdd -> the chain's) before the chain's kernels and one contraction (G^T)
# after. A block picks them when its robot has mimic joints, so ordinary chains compile and run
# none of this: their records are the ones above, the coupled ones those records with the map
# [G | b] (n_full, n + 1) (`models.coupled_map`) appended as `coupling`.

CoupledManipulatorParams = namedtuple("CoupledManipulatorParams",
                                      ManipulatorParams._fields + ("coupling",))
CoupledDynamicsParams = namedtuple("CoupledDynamicsParams", DynamicsParams._fields + ("coupling",))
CoupledKinematicsParams = namedtuple("CoupledKinematicsParams",
                                     KinematicsParams._fields + ("coupling",))

@njit(cache=True, error_model="numpy")
def coupled_manipulator_accelerations(xc, modes, tau, fext, model, law, data, coupling, has_fext,
                                      has_friction, has_limits, qdd):
    """qdd (B, n) in the independent joints (`plant.accelerations_coupled`), remembered per member
    as manipulator_accelerations does."""
    B = xc.shape[0]
    memo = md.acc_memo(data, model[0].shape[0], B)
    for b in range(B):
        if _memo_hit(memo, b, xc, modes, tau, fext, has_fext, qdd):
            continue
        accelerations_coupled(b, xc, modes, tau, fext, model, law, data, coupling, has_fext,
                              has_friction, has_limits, qdd)
        _memo_store(memo, b, xc, modes, tau, fext, has_fext, qdd)


# numba's inline: it returns views, which a function compiled on its own cannot without
# reference counts (docs/architecture.md, "Physics")
@njit(cache=True, error_model="numpy", inline="always")
def _expanded_row(data, coupling, x, b, shift, row):
    """The chain's joint values of x[b] (independent joints) in data's joint row `row`, (1, n_full)."""
    n_full = coupling.shape[0]
    out = joint_row(data, n_full, row)
    expand_rows(coupling, x[b:b + 1, :coupling.shape[1] - 1], shift, out)
    return out


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_manipulator_pose(xc, model, data, coupling, pose):
    """pose (B, 12) = tool pose at the chain's q_full = G q + b, q = xc[:, :n]; remembered per
    member with its q (manipulator_pose)."""
    B = xc.shape[0]
    n_full = model[0].shape[0]
    n = coupling.shape[1] - 1
    memo = md.pose_memo(data, n_full, B)
    for b in range(B):
        if not (memo[b, 0] == 1.0 and _holds(memo, b, 1, xc, n)):
            q1 = _expanded_row(data, coupling, xc, b, True, Q1)
            tool_pose(model, member(model, b), q1, 0, memo[b], 1 + n)
            for i in range(n):
                memo[b, 1 + i] = xc[b, i]
            memo[b, 0] = 1.0
        for j in range(12):
            pose[b, j] = memo[b, 1 + n + j]


@njit(cache=True, error_model="numpy")
def coupled_manipulator_outputs(xc, modes, tau, fext, q, qd, qdd, pose, model, law, data,
                                coupling, has_fext, has_friction, has_limits, want_state,
                                want_qdd, want_pose):
    """manipulator_outputs of a chain with mimic joints (every port in the independent joints)."""
    if want_state:
        _state_outputs(xc, law.shape[1], q, qd)
    if want_qdd:
        coupled_manipulator_accelerations(xc, modes, tau, fext, model, law, data, coupling,
                                          has_fext, has_friction, has_limits, qdd)
    if want_pose:
        coupled_manipulator_pose(xc, model, data, coupling, pose)


@njit(cache=True, error_model="numpy")
def coupled_manipulator_rates(xc, modes, tau, fext, dxc, model, law, data, coupling, has_fext,
                              has_friction, has_limits):
    """dxc = [qd | qdd (| dz/dt)] in the independent joints (manipulator_rates)."""
    n = law.shape[1]
    coupled_manipulator_accelerations(xc, modes, tau, fext, model, law, data, coupling, has_fext,
                                      has_friction, has_limits, dxc[:, n:2 * n])
    state_rates_but_qdd(xc, law, n, dxc)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_manipulator_output(t, xc, xd, u, y, p):
    coupled_manipulator_outputs(xc, xd, u[0], u[1], y[0], y[1], y[2], y[3], p.model, p.law,
                                p.data, p.coupling, p.has_fext, p.has_friction, p.has_limits,
                                True, True, True)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_manipulator_partial_output(t, xc, xd, u, y, p, want):
    if want[2] or want[3]:
        coupled_manipulator_outputs(xc, xd, u[0], u[1], y[0], y[1], y[2], y[3], p.model, p.law,
                                    p.data, p.coupling, p.has_fext, p.has_friction,
                                    p.has_limits, want[0] or want[1], want[2], want[3])
    else:
        _state_outputs(xc, y[0].shape[1], y[0], y[1])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_manipulator_derivative(t, xc, xd, u, dxc, p):
    coupled_manipulator_rates(xc, xd, u[0], u[1], dxc, p.model, p.law, p.data, p.coupling,
                              p.has_fext, p.has_friction, p.has_limits)


@njit(cache=True, error_model="numpy")
def coupled_inverse_dynamics_rows(q, qd, qdd, moving, model, law, data, coupling, has_friction,
                                  tau):
    """tau (B, n) = G^T (M qdd_full + c + G)(q_full, qd_full) in the independent joints (+ their
    friction when the law has it); moving False: qd = qdd = 0 (gravity torques; qd, qdd unread)."""
    n_full = model[0].shape[0]
    n = law.shape[1]
    for b in range(q.shape[0]):
        q1 = _expanded_row(data, coupling, q, b, True, Q1)
        qd1 = joint_row(data, n_full, QD1)
        qdd1 = joint_row(data, n_full, TE)
        if moving:
            expand_rows(coupling, qd[b:b + 1, :n], False, qd1)
            expand_rows(coupling, qdd[b:b + 1, :n], False, qdd1)
        else:
            for i in range(n_full):
                qd1[0, i] = 0.0
                qdd1[0, i] = 0.0
        out1 = joint_row(data, n_full, OUT1)
        md.rnea(model, data, member(model, b), q1, qd1, qdd1, md.no_fext(data, n_full), out1)
        contract_rows(coupling, out1, tau[b:b + 1])
        if has_friction and moving:
            _add_friction(law, b, n, qd, tau)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_inverse_dynamics_output(t, xc, xd, u, y, p):
    coupled_inverse_dynamics_rows(u[0], u[1], u[2], True, p.model, p.law, p.data, p.coupling,
                                  p.has_friction, y[0])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_gravity_compensation_output(t, xc, xd, u, y, p):
    coupled_inverse_dynamics_rows(u[0], u[0], u[0], False, p.model, p.law, p.data, p.coupling,
                                  False, y[0])


@njit(cache=True, error_model="numpy")
def coupled_computed_torque_rows(q_d, qd_d, qdd_d, q, qd, model, law, data, coupling, tau):
    """computed_torque_rows in the independent joints: v = qdd_d + Kd (qd_d - qd) + Kp (q_d - q)
    (kept in data's v field, its first n columns), tau = G^T rnea(q_full, qd_full, G v)."""
    B, n = q.shape
    v = md.v(data, model[0].shape[0], B)
    for b in range(B):
        for i in range(n):
            v[b, i] = (qdd_d[b, i] + law[b, i, GAIN_D] * (qd_d[b, i] - qd[b, i])
                       + law[b, i, GAIN_P] * (q_d[b, i] - q[b, i]))
    coupled_inverse_dynamics_rows(q, qd, v, True, model, law, data, coupling, False, tau)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_computed_torque_output(t, xc, xd, u, y, p):
    coupled_computed_torque_rows(u[0], u[1], u[2], u[3], u[4], p.model, p.law, p.data,
                                 p.coupling, y[0])


@njit(cache=True, error_model="numpy")
def coupled_forward_kinematics_rows(q, model, data, coupling, position, rotation, pose):
    """forward_kinematics_rows at the chain's q_full = G q + b."""
    for b in range(q.shape[0]):
        q1 = _expanded_row(data, coupling, q, b, True, Q1)
        tool_pose(model, member(model, b), q1, 0, pose[b], 0)
        _pose_parts(pose, b, position, rotation)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_forward_kinematics_output(t, xc, xd, u, y, p):
    coupled_forward_kinematics_rows(u[0], p.model, p.data, p.coupling, y[0], y[1], y[2])


@njit(cache=True, error_model="numpy")
def coupled_jacobian_rows(q, model, data, coupling, J):
    """J (B, 6 n) = J(q_full) G, the tool's geometric Jacobian in the independent joints (rows
    [v; w], row-major); the chain's (6, n_full) Jacobian is kept in data's joint rows QD1..RHS."""
    n_full = model[0].shape[0]
    n = coupling.shape[1] - 1
    Jf = md.joint_rows(data, n_full, QD1, 6)
    for b in range(q.shape[0]):
        q1 = _expanded_row(data, coupling, q, b, True, Q1)
        jacobian(model, data, member(model, b), q1, 0, Jf.reshape(6 * n_full))
        contract_rows(coupling, Jf, J[b].reshape((6, n)))


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_jacobian_output(t, xc, xd, u, y, p):
    coupled_jacobian_rows(u[0], p.model, p.data, p.coupling, y[0])


@njit(cache=True, error_model="numpy")
def coupled_energy_rows(q, qd, model, data, coupling, kinetic, potential, total):
    """energy_rows at the chain's (q_full, qd_full): the kinetic energy is qd^T M_r qd / 2."""
    for b in range(q.shape[0]):
        q_full = _expanded_row(data, coupling, q, b, True, OUT1)
        qd_full = _expanded_row(data, coupling, qd, b, False, md.BIAS)
        kin, pot = energy(model, data, member(model, b), q_full, qd_full, 0)
        kinetic[b, 0] = kin
        potential[b, 0] = pot
        total[b, 0] = kin + pot


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def coupled_energy_output(t, xc, xd, u, y, p):
    coupled_energy_rows(u[0], u[1], p.model, p.data, p.coupling, y[0], y[1], y[2])
