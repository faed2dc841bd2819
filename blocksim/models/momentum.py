"""The generalised momentum of a serial chain and the terms of its time derivative, for the
momentum observer of collision detection (De Luca and Mattone, "Actuator failure detection and
isolation using generalized momenta", ICRA 2003; De Luca, Albu-Schaeffer, Haddadin and Hirzinger,
"Collision detection and safe reaction with the DLR-III lightweight manipulator arm", IROS 2006).

With the plant's torque balance M(q) qdd + C(q, qd) qd + G(q) = tau - tau_f + tau_ext, the
momentum p = M(q) qd changes as

    dp/dt = Mdot qd + M qdd = tau - tau_f + C^T(q, qd) qd - G(q) + tau_ext,

because Mdot = C + C^T for the Christoffel C (Mdot - 2 C is skew-symmetric). The observer needs
p and beta = G(q) - C^T(q, qd) qd (N m), never qdd. C^T qd is also the gradient dT/dq of the
kinetic energy T = qd^T M qd / 2: its joint i is qd^T (dM/dq_i) qd / 2.

Units: SI (rad, rad/s, kg m^2 s^-1 = N m s for p, N m for beta). Frames: those of the Model
(`model_data`); gravity is the Model's. The planar 2R presets take the closed form of `planar2r`
(M, the Coriolis factor b = m2 l1 c2 sin q2 and G from the same functions the plant uses), every
other robot the CRBA, the Christoffel Coriolis matrix and the RNEA of `rigid_body_kernels`.
"""
from __future__ import annotations

from numba import njit

from . import model_data as md
from . import planar2r as p2r
from . import rigid_body_kernels as rbk
from .model_data import OUT1, Q1, QD1, ZERO1, joint_row, member


@njit(cache=True, error_model="numpy")
def momentum_terms(model, data, b, use_cf, q, qd, p, beta):
    """p (n,) = M(q) qd (N m s) and beta (n,) = G(q) - C(q, qd)^T qd (N m) of batch member b,
    at row b of q and qd (B, n). Data's joint rows Q1, QD1, ZERO1, OUT1, its mass and chol fields
    are the scratch (ZERO1 stays zero); p and beta must not be views of those."""
    k = member(model, b)
    n = q.shape[1]
    if use_cf:
        cf = md.closed_form(model, k)
        m11, m12, m22 = p2r.mass_entries(cf, q[b, 1])
        bf, g1, g2 = p2r.bias_factors(cf, q[b, 0], q[b, 1])
        w1, w2 = qd[b, 0], qd[b, 1]
        p[0] = m11 * w1 + m12 * w2
        p[1] = m12 * w1 + m22 * w2
        # C^T qd = (0, -b w1 (w1 + w2)): the 2R's c = (-b (2 w1 w2 + w2^2), b w1^2) in Christoffel form
        beta[0] = g1
        beta[1] = g2 + bf * w1 * (w1 + w2)
        return
    q1, qd1 = joint_row(data, n, Q1), joint_row(data, n, QD1)
    zero, gq = joint_row(data, n, ZERO1), joint_row(data, n, OUT1)
    for i in range(n):
        q1[0, i] = q[b, i]
        qd1[0, i] = qd[b, i]
    mass = md.mass(data, n)
    md.mass_matrix(model, data, k, q1, mass)
    cor = md.chol(data, n).reshape((1, n, n))
    rbk.coriolis_matrix_into(model[0], md.xtree(model, k), md.inertia(model, k), q1, qd1, cor,
                             md.ws(data, n))
    md.rnea(model, data, k, q1, zero, zero, md.no_fext(data, n), gq)
    for i in range(n):
        s = 0.0
        c = 0.0
        for j in range(n):
            s += mass[0, i, j] * qd1[0, j]
            c += cor[0, j, i] * qd1[0, j]
        p[i] = s
        beta[i] = gq[0, i] - c
