"""The map of a chain with mimic joints onto its independent joints, as numba kernels: the one
implementation that `CoupledRobot` (models/coupled.py) and the robot blocks' kernels share.

A chain of n_full joints whose mimic joints follow others (q_f = m q_leader + offset) has n
independent joints q; the chain's joints are q_full = G q + b, their rates and accelerations G qd
and G qdd, with G (n_full, n) constant (a unit per independent joint, the multiplier in the
leader's column for a mimic joint: one nonzero per row) and b (n_full,) the offsets (rad or m).
Generalised forces map back by virtual work, tau = G^T tau_full (N m or N), the mass matrix as
M_r = G^T M G (Featherstone 2008, sec. 3.2). A coupling array is [G | b], (n_full, n + 1).
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, error_model="numpy")
def expand_rows(coupling, x, shift, out):
    """out[r, i] = sum_k G[i, k] x[r, k] (+ b[i] when shift) for every row r: the chain's joint
    positions (shift) or rates / accelerations (no shift) from the independent joints'.
    coupling (n_full, n + 1) = [G | b] (`CoupledRobot.coupling`), x (R, >= n), out (R, n_full).
    G has one nonzero per row (a unit, or a mimic joint's multiplier), so each sum is one product."""
    n_full = coupling.shape[0]
    n = coupling.shape[1] - 1
    for r in range(x.shape[0]):
        for i in range(n_full):
            s = coupling[i, n] if shift else 0.0
            for k in range(n):
                g = coupling[i, k]
                if g != 0.0:
                    s += g * x[r, k]
            out[r, i] = s


@njit(cache=True, error_model="numpy")
def contract_rows(coupling, y, out):
    """out[r, k] = sum_i G[i, k] y[r, i] for every row r: generalised forces on the independent
    joints (N m or N) from the chain's joint torques, the virtual work of G. y (R, n_full),
    out (R, n)."""
    n_full = coupling.shape[0]
    n = coupling.shape[1] - 1
    for r in range(y.shape[0]):
        for k in range(n):
            s = 0.0
            for i in range(n_full):
                g = coupling[i, k]
                if g != 0.0:
                    s += g * y[r, i]
            out[r, k] = s


@njit(cache=True, error_model="numpy")
def contract_matrix(coupling, M, out):
    """out (n, n) = G^T M G of the chain's (n_full, n_full) matrix M: the mass matrix in the
    independent joints (kg m^2). G's one nonzero per row makes it n_full^2 products at most."""
    n_full = coupling.shape[0]
    n = coupling.shape[1] - 1
    for k in range(n):
        for l in range(n):
            out[k, l] = 0.0
    for i in range(n_full):
        for k in range(n):
            gi = coupling[i, k]
            if gi == 0.0:
                continue
            for j in range(n_full):
                for l in range(n):
                    gj = coupling[j, l]
                    if gj != 0.0:
                        out[k, l] += gi * M[i, j] * gj
