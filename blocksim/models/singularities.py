"""How close a joint vector is to a singularity: measures of the geometric Jacobian, and for
spherical-wrist arms which singularity (`arm_geometry`: shoulder, elbow, wrist) and how far.

Jacobian measures, of the rows of J (6 x n, rows [v (m/s); w (rad/s)] per unit joint rate) that
`part` selects ('all' rows 0-5, 'position' rows 0-2, 'orientation' rows 3-5), from its k = min(rows,
n) singular values sigma_1 >= ... >= sigma_k:
- manipulability (Yoshikawa, The International Journal of Robotics Research 4(2), 1985):
  w = sigma_1 ... sigma_k = sqrt(det(J J^T)) when n >= rows, sqrt(det(J^T J)) when n < rows; the
  volume of the velocity ellipsoid, 0 at a singularity;
- sigma_min = sigma_k: the smallest tool speed per unit joint speed in the worst direction, 0 at a
  singularity;
- condition number sigma_1 / sigma_k (1 isotropic, infinite at a singularity).
With part 'all' the rows mix m/s and rad/s: the numbers depend on the unit of length, so compare
them along one arm's motions, or take part 'position' or 'orientation' for measures in one unit.

The singular values come from one-sided Jacobi rotations (Hestenes 1958; Demmel & Veselic, SIAM J.
Matrix Anal. Appl. 13(4), 1992): accurate to the last bits even for the smallest, which forming
J^T J would lose below 1e-8 sigma_1.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import kinematics as kin

__all__ = ["PARTS", "part_rows", "singular_values", "jacobian_measures", "measures_into"]

#: The row ranges of the Jacobian's parts.
PARTS = {"all": (0, 6), "position": (0, 3), "orientation": (3, 6)}

#: Jacobi sweeps at most (a 6 x 6 matrix converges in 5 to 8).
MAX_SWEEPS = 60


def part_rows(part):
    """(first, end) rows of a Jacobian part name; ValueError naming the choices otherwise."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    return PARTS[part]


@njit(cache=True, error_model="numpy")
def singular_values(A, m, k, out):
    """out[:k] = the singular values of the m x k matrix A[:m, :k] (m >= k), largest first; A is
    overwritten (its columns made orthogonal)."""
    for _ in range(MAX_SWEEPS):
        rotated = False
        for i in range(k - 1):
            for j in range(i + 1, k):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for r in range(m):
                    alpha += A[r, i] * A[r, i]
                    beta += A[r, j] * A[r, j]
                    gamma += A[r, i] * A[r, j]
                if gamma == 0.0 or abs(gamma) <= 1e-15 * math.sqrt(alpha * beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for r in range(m):
                    ai = A[r, i]
                    aj = A[r, j]
                    A[r, i] = c * ai - s * aj
                    A[r, j] = s * ai + c * aj
        if not rotated:
            break
    for i in range(k):
        acc = 0.0
        for r in range(m):
            acc += A[r, i] * A[r, i]
        out[i] = math.sqrt(acc)
    for i in range(1, k):                       # largest first (insertion sort of k <= 6)
        x = out[i]
        j = i - 1
        while j >= 0 and out[j] < x:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = x


@njit(cache=True, error_model="numpy")
def jacobian_measures(J, r0, r1, A, sv):
    """(manipulability, sigma_min, condition number) of rows r0:r1 of J (6, n) (module
    docstring); scratch A (>= max(rows, n) x min(rows, n)) and sv (>= min(rows, n))."""
    rows = r1 - r0
    n = J.shape[1]
    if rows >= n:
        for r in range(rows):
            for c in range(n):
                A[r, c] = J[r0 + r, c]
        m, k = rows, n
    else:
        for r in range(rows):
            for c in range(n):
                A[c, r] = J[r0 + r, c]
        m, k = n, rows
    singular_values(A, m, k, sv)
    w = 1.0
    for i in range(k):
        w *= sv[i]
    smin = sv[k - 1]
    cond = sv[0] / smin if smin > 0.0 else math.inf
    return w, smin, cond


@njit(cache=True, error_model="numpy")
def measures_into(jtype, xtree, tool, q, r0, r1, out):
    """out[k] = (manipulability, sigma_min, condition number) of the Jacobian rows r0:r1 at q[k]."""
    n = jtype.shape[0]
    poses = np.empty((n + 2, 12))
    J = np.empty((6, n))
    A = np.empty((max(6, n), max(6, n)))
    sv = np.empty(6)
    for k in range(q.shape[0]):
        kin.chain_jacobian(jtype, xtree, tool, q, k, poses, J)
        w, smin, cond = jacobian_measures(J, r0, r1, A, sv)
        out[k, 0] = w
        out[k, 1] = smin
        out[k, 2] = cond
