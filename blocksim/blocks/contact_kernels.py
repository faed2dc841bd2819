"""Compiled kernels of the contact and interaction-control blocks (`contact`): they map the blocks'
ports and parameter records onto the physics of `models.contact` and the robot's kinematics and
inverse dynamics (`models.kinematics`, `robot_kernels.inverse_dynamics_rows`). Both modes run these
kernels with the same record, so they compute identical numbers.
"""
from __future__ import annotations

from collections import namedtuple

from numba import njit

from ..models import model_data as md
from ..models.contact import (plane_contact, pose_error, sphere_contact, wall_force, wall_mode,
                              wall_witness)
from ..models.kinematics import jacobian, tool_pose
from ..models.model_data import member
from .robot_kernels import inverse_dynamics_rows

# ============================================================================ ContactWall, ContactSphere

ContactParams = namedtuple("ContactParams", "point normal radius k d sphere")
"""The contact blocks' record: point (B, 3) on the plane or the ball's centre (m), the plane's
unit outward normal (B, 3; unused for a ball), the ball's radius (B, 1) m (unused for a plane),
stiffness k (B, 1) N/m, damping d (B, 1) N s/m, sphere (a ball, else a plane). xd (B, 1) holds
the held mode (models.contact)."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def contact_geometry(p, b, pose, twist):
    """(delta, delta', n0, n1, n2) of member b: the plane's or the ball's (models.contact)."""
    if p.sphere:
        return sphere_contact(p.point[b], p.radius[b, 0], pose[b], twist[b])
    return plane_contact(p.point[b], p.normal[b], pose[b], twist[b])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def contact_output(t, xc, xd, u, y, p):
    pose, twist, wrench, pen, force = u[0], u[1], y[0], y[1], y[2]
    for b in range(pose.shape[0]):
        delta, rate, n0, n1, n2 = contact_geometry(p, b, pose, twist)
        f = wall_force(xd[b, 0], p.k[b, 0], p.d[b, 0], delta, rate)
        wrench[b, 0] = f * n0
        wrench[b, 1] = f * n1
        wrench[b, 2] = f * n2
        for j in range(3):
            wrench[b, 3 + j] = 0.0
        pen[b, 0] = delta
        force[b, 0] = f


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def contact_modes(t, xc, xd, u, p):
    for b in range(u[0].shape[0]):
        delta, rate, _, _, _ = contact_geometry(p, b, u[0], u[1])
        xd[b, 0] = wall_mode(p.k[b, 0], p.d[b, 0], delta, rate)


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def contact_zero_crossings(t, xc, xd, u, g, p):
    for b in range(u[0].shape[0]):
        delta, rate, _, _, _ = contact_geometry(p, b, u[0], u[1])
        g[b, 0] = wall_witness(xd[b, 0], p.k[b, 0], p.d[b, 0], delta, rate)


# ============================================================================ ToolTwist

TwistParams = namedtuple("TwistParams", "model data jac")
"""ToolTwist's record: Model, Data and the Jacobian's scratch jac (B, 6 n)."""


@njit(cache=True, error_model="numpy")
def tool_twist_rows(q, qd, model, data, jac, twist):
    """twist (B, 6) = J(q) qd per member: [v (m/s); w (rad/s)] of the tool in the base frame."""
    B, n = q.shape
    for b in range(B):
        jacobian(model, data, member(model, b), q, b, jac[b])
        for r in range(6):
            s = 0.0
            for c in range(n):
                s += jac[b, r * n + c] * qd[b, c]
            twist[b, r] = s


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def tool_twist_output(t, xc, xd, u, y, p):
    tool_twist_rows(u[0], u[1], p.model, p.data, p.jac, y[0])


# ============================================================================ impedance control

JointImpedanceParams = namedtuple("JointImpedanceParams", "model law data use_cf K D model_terms")
"""JointImpedance's record: Model, a neutral law, Data, use_cf (closed-form 2R); K (B, n) N m/rad,
D (B, n) N m s/rad; model_terms: add M(q) qdd_d + c(q, qd) to the gravity torque."""


@njit(cache=True, error_model="numpy")
def model_torque(q, qd, qdd, model, law, data, use_cf, model_terms, tau):
    """tau (B, n) = rnea(q, qd, qdd) = M qdd + c + G with model_terms, else G(q) = rnea(q, 0, 0)
    (data's v field is zeros: never written in these blocks' Data)."""
    if model_terms:
        inverse_dynamics_rows(q, qd, qdd, model, law, data, use_cf, False, tau)
    else:
        zeros = md.v(data, q.shape[1], q.shape[0])
        inverse_dynamics_rows(q, zeros, zeros, model, law, data, use_cf, False, tau)


@njit(cache=True, error_model="numpy")
def joint_impedance_rows(q_d, qd_d, qdd_d, q, qd, model, law, data, use_cf, K, D, model_terms,
                         tau):
    """tau = K (q_d - q) + D (qd_d - qd) + G(q) (+ M(q) qdd_d + c(q, qd) with model_terms)."""
    model_torque(q, qd, qdd_d, model, law, data, use_cf, model_terms, tau)
    B, n = q.shape
    for b in range(B):
        for i in range(n):
            tau[b, i] += K[b, i] * (q_d[b, i] - q[b, i]) + D[b, i] * (qd_d[b, i] - qd[b, i])


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def joint_impedance_output(t, xc, xd, u, y, p):
    joint_impedance_rows(u[0], u[1], u[2], u[3], u[4], p.model, p.law, p.data, p.use_cf, p.K, p.D,
                         p.model_terms, y[0])


CartesianImpedanceParams = namedtuple("CartesianImpedanceParams",
                                      "model law data use_cf K D model_terms work")
"""CartesianImpedance's record: Model, a neutral law, Data, use_cf; K (B, 6, 6) and D (B, 6, 6)
(rows and columns [x, y, z, rx, ry, rz]); model_terms: add c(q, qd); work (B, 39 + 6 n) scratch:
the tool pose (12), the pose error (6), the twist error (6), R_d R^T (9), the wrench (6), J (6 n)."""

W_POSE, W_ERR, W_ERRD, W_ROT, W_WRENCH, W_JAC = 0, 12, 18, 24, 33, 39


@njit(cache=True, error_model="numpy")
def cartesian_impedance_rows(pose_d, twist_d, q, qd, model, law, data, use_cf, K, D, model_terms,
                             work, tau, wrench):
    """wrench = K e + D (twist_d - J qd), e the pose error (models.contact.pose_error), and
    tau = J^T wrench + G(q) (+ c(q, qd) with model_terms)."""
    model_torque(q, qd, md.v(data, q.shape[1], q.shape[0]), model, law, data, use_cf, model_terms,
                 tau)
    B, n = q.shape
    for b in range(B):
        k = member(model, b)
        w = work[b]
        tool_pose(model, k, q, b, w, W_POSE)
        jac = w[W_JAC:W_JAC + 6 * n]
        jacobian(model, data, k, q, b, jac)
        pose_error(pose_d[b], w[W_POSE:W_POSE + 12], w[W_ROT:W_ROT + 9].reshape((3, 3)),
                   w[W_ERR:W_ERR + 6])
        for r in range(6):
            s = twist_d[b, r]
            for c in range(n):
                s -= jac[r * n + c] * qd[b, c]
            w[W_ERRD + r] = s
        for r in range(6):
            f = 0.0
            for c in range(6):
                f += K[b, r, c] * w[W_ERR + c] + D[b, r, c] * w[W_ERRD + c]
            wrench[b, r] = f
        for i in range(n):
            s = 0.0
            for r in range(6):
                s += jac[r * n + i] * wrench[b, r]
            tau[b, i] += s


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def cartesian_impedance_output(t, xc, xd, u, y, p):
    cartesian_impedance_rows(u[0], u[1], u[2], u[3], p.model, p.law, p.data, p.use_cf, p.K, p.D,
                             p.model_terms, p.work, y[0], y[1])


# ============================================================================ Admittance

AdmittanceParams = namedtuple("AdmittanceParams", "m d k")
"""Admittance's record: virtual mass m (B, 3) kg, damping d (B, 3) N s/m, stiffness k (B, 3) N/m.
The continuous state is [x (3, m) | x' (3, m/s)], the offset of the reference and its rate."""


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def admittance_output(t, xc, xd, u, y, p):
    pose0, twist0, pose, twist, offset = u[0], u[1], y[0], y[1], y[2]
    for b in range(xc.shape[0]):
        for j in range(12):
            pose[b, j] = pose0[b, j]
        for j in range(6):
            twist[b, j] = twist0[b, j]
        for j in range(3):
            pose[b, j] += xc[b, j]
            twist[b, j] += xc[b, 3 + j]
            offset[b, j] = xc[b, j]


@njit(cache=True, error_model="numpy", forceinline=True, _nrt=False)
def admittance_derivative(t, xc, xd, u, dxc, p):
    wrench, f_ref = u[2], u[3]
    for b in range(xc.shape[0]):
        for j in range(3):
            x, v = xc[b, j], xc[b, 3 + j]
            dxc[b, j] = v
            dxc[b, 3 + j] = (wrench[b, j] - f_ref[b, j] - p.d[b, j] * v - p.k[b, j] * x) / p.m[b, j]
