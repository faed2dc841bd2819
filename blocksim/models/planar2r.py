"""Closed-form dynamics of the planar 2R arm (Lagrange's equations, as Spong, Hutchinson & Vidyasagar
2020): an independent check of the general algorithms.

Conventions (those of the two_link presets): the arm moves in the x-y plane of the base frame,
joint axes along +z, angle 0 = link along +x (horizontal), gravity g (m/s^2, > 0) along -y.
SI units, angles in rad. q, qd, qdd, tau have shape (2,) or (B, 2); results match the batch shape.

Two forms, written independently from their sources:
- `PointMass2R`: masses m1, m2 at the link ends (preset two_link_point_mass);
- `Distributed2R`: centres of mass at c1, c2 from the joints, inertias I1, I2 about the centres
  of mass about z (plant P2, preset two_link).
Both give M(q), c(q, qd) (the velocity-product vector), C(q, qd) (Christoffel form, C qd = c),
G(q), kinetic and potential energy (V = 0 at y = 0). The numba kernels `*_into` evaluate the
distributed form over a (B, 2) batch from a parameter vector (m1, m2, l1, l2, c1, c2, I1, I2, g).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

G_STANDARD = 9.81


def _split(q):
    q = np.asarray(q, dtype=float)
    return q[..., 0], q[..., 1]


def _mat(a11, a12, a21, a22):
    return np.stack([np.stack([a11, a12], -1), np.stack([a21, a22], -1)], -2)


@dataclass(frozen=True)
class PointMass2R:
    """Point masses m1, m2 (kg) at the ends of links of lengths l1, l2 (m); the point-mass Lagrange formulas."""

    m1: float
    m2: float
    l1: float
    l2: float
    g: float = G_STANDARD

    def mass_matrix(self, q):
        """M(q) = [[(m1+m2) l1^2 + m2 l2^2 + 2 m2 l1 l2 cos q2, m2 l2^2 + m2 l1 l2 cos q2], [., m2 l2^2]]."""
        _, q2 = _split(q)
        m1, m2, l1, l2 = self.m1, self.m2, self.l1, self.l2
        c2 = np.cos(q2)
        m11 = (m1 + m2) * l1 ** 2 + m2 * l2 ** 2 + 2 * m2 * l1 * l2 * c2
        m12 = m2 * l2 ** 2 + m2 * l1 * l2 * c2
        m22 = m2 * l2 ** 2 + 0 * c2
        return _mat(m11, m12, m12, m22)

    def velocity_product(self, q, qd):
        """H_cor = [c (2 qd1 qd2 + qd2^2), -c qd1^2] with c = -m2 l1 l2 sin q2."""
        _, q2 = _split(q)
        qd1, qd2 = _split(qd)
        c = -self.m2 * self.l1 * self.l2 * np.sin(q2)
        return np.stack([c * (2 * qd1 * qd2 + qd2 ** 2), -c * qd1 ** 2], -1)

    def coriolis_matrix(self, q, qd):
        """C = [[-h qd2, -h (qd1 + qd2)], [h qd1, 0]], h = m2 l1 l2 sin q2."""
        _, q2 = _split(q)
        qd1, qd2 = _split(qd)
        h = self.m2 * self.l1 * self.l2 * np.sin(q2)
        return _mat(-h * qd2, -h * (qd1 + qd2), h * qd1, 0 * h)

    def gravity(self, q):
        """g1 = (m1+m2) g l1 cos q1 + m2 g l2 cos(q1+q2), g2 = m2 g l2 cos(q1+q2) (N m)."""
        q1, q2 = _split(q)
        g2 = self.m2 * self.g * self.l2 * np.cos(q1 + q2)
        g1 = (self.m1 + self.m2) * self.g * self.l1 * np.cos(q1) + g2
        return np.stack([g1, g2], -1)

    def kinetic_energy(self, q, qd):
        """T = m1 l1^2 qd1^2 / 2 + m2 |v2|^2 / 2 written from the hand's velocity."""
        _, q2 = _split(q)
        qd1, qd2 = _split(qd)
        m1, m2, l1, l2 = self.m1, self.m2, self.l1, self.l2
        t1 = 0.5 * m1 * l1 ** 2 * qd1 ** 2
        t2 = 0.5 * m2 * (l1 ** 2 * qd1 ** 2 + l2 ** 2 * (qd1 + qd2) ** 2
                         + 2 * l1 * l2 * np.cos(q2) * qd1 * (qd1 + qd2))
        return t1 + t2

    def potential_energy(self, q):
        """V = m1 g l1 sin q1 + m2 g (l1 sin q1 + l2 sin(q1+q2)) (J)."""
        q1, q2 = _split(q)
        return (self.m1 * self.g * self.l1 * np.sin(q1)
                + self.m2 * self.g * (self.l1 * np.sin(q1) + self.l2 * np.sin(q1 + q2)))

    def inverse_dynamics(self, q, qd, qdd):
        """tau = M qdd + H_cor + g (N m)."""
        return (np.einsum("...ij,...j->...i", self.mass_matrix(q), np.asarray(qdd, float))
                + self.velocity_product(q, qd) + self.gravity(q))

    def forward_dynamics(self, q, qd, tau):
        """qdd = M^-1 (tau - H_cor - g) (rad/s^2)."""
        rhs = np.asarray(tau, float) - self.velocity_product(q, qd) - self.gravity(q)
        return np.linalg.solve(self.mass_matrix(q), rhs[..., None])[..., 0]


@dataclass(frozen=True)
class Distributed2R:
    """Links of lengths l1, l2 (m), masses m1, m2 (kg), centres of mass c1, c2 (m) from the joints,
    inertias I1, I2 (kg m^2) about the centres of mass about z; plant P2's formulas.
    Ja1, Ja2 (kg m^2): armature, the reflected rotor inertia N^2 Jm of geared drives,
    added to M11 and M22 (the plant of workload W2); 0 for the bare arm."""

    m1: float
    m2: float
    l1: float
    l2: float
    c1: float
    c2: float
    I1: float
    I2: float
    g: float = G_STANDARD
    Ja1: float = 0.0
    Ja2: float = 0.0

    @classmethod
    def uniform_rods(cls, m1, m2, l1, l2, g=G_STANDARD):
        """Uniform slender links: c = l / 2, I = m l^2 / 12 (the `two_link` preset)."""
        return cls(m1, m2, l1, l2, l1 / 2, l2 / 2, m1 * l1 ** 2 / 12, m2 * l2 ** 2 / 12, g)

    def params(self) -> np.ndarray:
        """The parameter vector of the numba kernels: (m1, m2, l1, l2, c1, c2, I1, I2, g, Ja1, Ja2)."""
        return np.array([self.m1, self.m2, self.l1, self.l2, self.c1, self.c2, self.I1, self.I2, self.g,
                         self.Ja1, self.Ja2])

    def mass_matrix(self, q):
        """M11 = I1 + I2 + m1 c1^2 + m2 (l1^2 + c2^2 + 2 l1 c2 cos q2) + Ja1,
        M12 = I2 + m2 (c2^2 + l1 c2 cos q2), M22 = I2 + m2 c2^2 + Ja2 (kg m^2)."""
        _, q2 = _split(q)
        m1, m2, l1, c1, c2, I1, I2 = self.m1, self.m2, self.l1, self.c1, self.c2, self.I1, self.I2
        cq2 = np.cos(q2)
        m11 = I1 + I2 + m1 * c1 ** 2 + m2 * (l1 ** 2 + c2 ** 2 + 2 * l1 * c2 * cq2) + self.Ja1
        m12 = I2 + m2 * (c2 ** 2 + l1 * c2 * cq2)
        m22 = I2 + m2 * c2 ** 2 + 0 * cq2 + self.Ja2
        return _mat(m11, m12, m12, m22)

    def velocity_product(self, q, qd):
        """c = [-b (2 qd1 qd2 + qd2^2), b qd1^2], b = m2 l1 c2 sin q2 (N m)."""
        _, q2 = _split(q)
        qd1, qd2 = _split(qd)
        b = self.m2 * self.l1 * self.c2 * np.sin(q2)
        return np.stack([-b * (2 * qd1 * qd2 + qd2 ** 2), b * qd1 ** 2], -1)

    def coriolis_matrix(self, q, qd):
        """Christoffel C = [[-b qd2, -b (qd1 + qd2)], [b qd1, 0]] (N m s/rad)."""
        _, q2 = _split(q)
        qd1, qd2 = _split(qd)
        b = self.m2 * self.l1 * self.c2 * np.sin(q2)
        return _mat(-b * qd2, -b * (qd1 + qd2), b * qd1, 0 * b)

    def gravity(self, q):
        """G = [(m1 c1 + m2 l1) g cos q1 + m2 c2 g cos(q1+q2), m2 c2 g cos(q1+q2)] (N m)."""
        q1, q2 = _split(q)
        g2 = self.m2 * self.c2 * self.g * np.cos(q1 + q2)
        g1 = (self.m1 * self.c1 + self.m2 * self.l1) * self.g * np.cos(q1) + g2
        return np.stack([g1, g2], -1)

    def kinetic_energy(self, q, qd):
        """T = qd^T M qd / 2 (J)."""
        qd = np.asarray(qd, float)
        return 0.5 * np.einsum("...i,...ij,...j->...", qd, self.mass_matrix(q), qd)

    def potential_energy(self, q):
        """V = m1 g c1 sin q1 + m2 g (l1 sin q1 + c2 sin(q1+q2)) (J)."""
        q1, q2 = _split(q)
        return (self.m1 * self.g * self.c1 * np.sin(q1)
                + self.m2 * self.g * (self.l1 * np.sin(q1) + self.c2 * np.sin(q1 + q2)))

    def inverse_dynamics(self, q, qd, qdd):
        """tau = M qdd + c + G (N m)."""
        return (np.einsum("...ij,...j->...i", self.mass_matrix(q), np.asarray(qdd, float))
                + self.velocity_product(q, qd) + self.gravity(q))

    def forward_dynamics(self, q, qd, tau):
        """qdd = M^-1 (tau - c - G) (rad/s^2)."""
        rhs = np.asarray(tau, float) - self.velocity_product(q, qd) - self.gravity(q)
        return np.linalg.solve(self.mass_matrix(q), rhs[..., None])[..., 0]


def ik_2r(x, y, l1, l2, elbow_up_sign=1.0):
    """Closed-form inverse kinematics of the 2R arm: (q1, q2) placing the tip at (x, y) (m).

    elbow_up_sign = +1 gives q2 >= 0, -1 gives q2 <= 0. Raises ValueError when the point is out of
    the annulus |l1 - l2| <= r <= l1 + l2.
    """
    c2 = (x * x + y * y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    if c2 > 1.0 + 1e-12 or c2 < -1.0 - 1e-12:
        raise ValueError(f"point ({x:.6g}, {y:.6g}) is out of reach of the 2R arm "
                         f"(reach {abs(l1 - l2):.6g} to {l1 + l2:.6g} m)")
    c2 = min(1.0, max(-1.0, c2))
    s2 = elbow_up_sign * math.sqrt(max(0.0, 1.0 - c2 * c2))
    q2 = math.atan2(s2, c2)
    q1 = math.atan2(y, x) - math.atan2(l2 * s2, l1 + l2 * c2)
    return q1, q2


# Numba kernels: p = (m1, m2, l1, l2, c1, c2, I1, I2, g, Ja1, Ja2) (Distributed2R.params()); the
# per-member functions are the one copy of the formulas, which the block kernels call too.

@njit(cache=True, error_model="numpy")
def mass_entries(p, q2):
    """(M11, M12, M22) of the distributed 2R at elbow angle q2 (kg m^2)."""
    m1, m2, l1, c1, c2, I1, I2 = p[0], p[1], p[2], p[4], p[5], p[6], p[7]
    cq2 = math.cos(q2)
    return (I1 + I2 + m1 * c1 * c1 + m2 * (l1 * l1 + c2 * c2 + 2.0 * l1 * c2 * cq2) + p[9],
            I2 + m2 * (c2 * c2 + l1 * c2 * cq2),
            I2 + m2 * c2 * c2 + p[10])


@njit(cache=True, error_model="numpy")
def bias_factors(p, q1, q2):
    """(b, G1, G2): the Coriolis factor b = m2 l1 c2 sin q2 and the gravity torques (N m)."""
    m1, m2, l1, c1, c2, g = p[0], p[1], p[2], p[4], p[5], p[8]
    b = m2 * l1 * c2 * math.sin(q2)
    g2 = m2 * c2 * g * math.cos(q1 + q2)
    g1 = (m1 * c1 + m2 * l1) * g * math.cos(q1) + g2
    return b, g1, g2


@njit(cache=True, error_model="numpy")
def rnea_one(p, q1, q2, w1, w2, a1, a2):
    """(tau1, tau2) = M qdd + c + G of one member (N m)."""
    m11, m12, m22 = mass_entries(p, q2)
    b, g1, g2 = bias_factors(p, q1, q2)
    return (m11 * a1 + m12 * a2 - b * (2.0 * w1 * w2 + w2 * w2) + g1,
            m12 * a1 + m22 * a2 + b * w1 * w1 + g2)


@njit(cache=True, error_model="numpy")
def aba_one(p, q1, q2, w1, w2, t1, t2):
    """(qdd1, qdd2) = M^-1 (tau - c - G) of one member, by Cramer's rule (rad/s^2)."""
    m11, m12, m22 = mass_entries(p, q2)
    b, g1, g2 = bias_factors(p, q1, q2)
    r1 = t1 + b * (2.0 * w1 * w2 + w2 * w2) - g1
    r2 = t2 - b * w1 * w1 - g2
    det = m11 * m22 - m12 * m12
    return (m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det


@njit(cache=True, error_model="numpy")
def mass_matrix_into(p, q, out):
    """out (B, 2, 2) = M(q) of the distributed 2R."""
    for k in range(q.shape[0]):
        m11, m12, m22 = mass_entries(p, q[k, 1])
        out[k, 0, 0] = m11
        out[k, 0, 1] = m12
        out[k, 1, 0] = m12
        out[k, 1, 1] = m22


@njit(cache=True, error_model="numpy")
def rnea_into(p, q, qd, qdd, out):
    """out (B, 2) = M qdd + c + G of the distributed 2R (N m)."""
    for k in range(q.shape[0]):
        out[k, 0], out[k, 1] = rnea_one(p, q[k, 0], q[k, 1], qd[k, 0], qd[k, 1], qdd[k, 0],
                                        qdd[k, 1])


@njit(cache=True, error_model="numpy")
def aba_into(p, q, qd, tau, out):
    """out (B, 2) = M^-1 (tau - c - G) of the distributed 2R (rad/s^2)."""
    for k in range(q.shape[0]):
        out[k, 0], out[k, 1] = aba_one(p, q[k, 0], q[k, 1], qd[k, 0], qd[k, 1], tau[k, 0],
                                       tau[k, 1])
