"""Cost of one evaluation of the closed-chain plant (the five-bar, 4 joints, 2 loop rows): the
block's output and derivative at one solver stage, as a run calls them, against a hand-written
numba five-bar in the same run.

Run by hand:  python benchmarks/closed_chain_speed.py [--evaluations 20000]

Three numba loops over the same states (q at the example's start, qd varied per evaluation so
that no two evaluations share a state), each timed as the best of 5:
- memo:     closed_chain_output then closed_chain_derivative, as the block runs them (the second
            finds the first's qdd and lambda in the record's memo);
- no memo:  the same with the memo cleared between the two (each solves the dynamics: the block
            before the memo);
- by hand:  one solve of the five-bar written out: the 2R mass matrix, Coriolis and gravity terms
            of each branch in closed form, the loop Jacobian and Jcdot qd, the 2 x 2 Schur
            complement; its qdd and lambda are checked against the block's (to 1e-12).
It prints microseconds per evaluation and the ratios to the hand-written one; then the compiled
example under rk4 at 1 ms over 3 s: wall time per derivative evaluation of the whole run.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                  # run from a checkout
sys.path.insert(0, str(ROOT / "tests"))

import blocksim                                 # noqa: E402
from blocksim.blocks.closed_chain import closed_chain_derivative, closed_chain_output  # noqa: E402
from blockcheck import BlockCheck              # noqa: E402

EXAMPLE = ROOT / "examples" / "five_bar.yaml"
Q0 = (-1.6580627893946132, -1.4835298641951802)
G0, L1, L2, M1, M2, BASE, DAMPING = 9.81, 0.2, 0.25, 0.5, 0.4, 0.2, 0.02


@njit(cache=True)
def _state(xc, k):
    """Evaluation k's state: the start's q, a qd that differs every evaluation."""
    n = 4
    for i in range(n):
        xc[0, n + i] = 0.3 * math.sin(0.001 * k + i)


@njit(cache=True)
def block_loop(xc, xd, u, y, dxc, p, count, clear):
    s = 0.0
    for k in range(count):
        _state(xc, k)
        closed_chain_output(0.0, xc, xd, u, y, p)
        if clear:
            p.memo[0, 0] = 0.0
        closed_chain_derivative(0.0, xc, xd, u, dxc, p)
        s += dxc[0, 4]
    return s


@njit(cache=True, inline="always")
def _branch(th, ph, thd, phd, tau, M, f, J, gam, r):
    """One branch's 2R terms (rows r, r + 1 of M and f; its tip's J (2, 2) and Jdot qd)."""
    lc1, lc2 = L1 / 2, L2 / 2
    i1, i2 = M1 * L1 * L1 / 12, M2 * L2 * L2 / 12
    c2, s2 = math.cos(ph), math.sin(ph)
    M[r, r] = i1 + i2 + M1 * lc1 * lc1 + M2 * (L1 * L1 + lc2 * lc2 + 2 * L1 * lc2 * c2)
    M[r, r + 1] = M[r + 1, r] = i2 + M2 * (lc2 * lc2 + L1 * lc2 * c2)
    M[r + 1, r + 1] = i2 + M2 * lc2 * lc2
    h = M2 * L1 * lc2 * s2
    c1, s1 = math.cos(th), math.sin(th)
    c12, s12 = math.cos(th + ph), math.sin(th + ph)
    g1 = (M1 * lc1 + M2 * L1) * G0 * c1 + M2 * lc2 * G0 * c12
    g2 = M2 * lc2 * G0 * c12
    f[r] = tau + h * (2 * thd * phd + phd * phd) - g1 - DAMPING * thd
    f[r + 1] = -h * thd * thd - g2 - DAMPING * phd
    J[0, 0], J[0, 1] = -L1 * s1 - L2 * s12, -L2 * s12
    J[1, 0], J[1, 1] = L1 * c1 + L2 * c12, L2 * c12
    w = thd + phd
    gam[0] = -L1 * c1 * thd * thd - L2 * c12 * w * w
    gam[1] = -L1 * s1 * thd * thd - L2 * s12 * w * w


@njit(cache=True)
def by_hand(q, qd, tau, qdd, lam):
    """qdd (4) and lambda (2) of the five-bar: M qdd = f + Jc^T lambda, Jc qdd = -Jcdot qd."""
    M = np.zeros((4, 4))
    f = np.zeros(4)
    Ja, Jb = np.zeros((2, 2)), np.zeros((2, 2))
    ga, gb = np.zeros(2), np.zeros(2)
    _branch(q[0], q[1], qd[0], qd[1], tau[0], M, f, Ja, ga, 0)
    _branch(q[2], q[3], qd[2], qd[3], tau[1], M, f, Jb, gb, 2)
    Jc = np.zeros((2, 4))
    Jc[:, :2] = Ja
    Jc[:, 2:] = -Jb
    Minv = np.zeros((4, 4))
    for r in (0, 2):
        det = M[r, r] * M[r + 1, r + 1] - M[r, r + 1] * M[r + 1, r]
        Minv[r, r], Minv[r + 1, r + 1] = M[r + 1, r + 1] / det, M[r, r] / det
        Minv[r, r + 1] = Minv[r + 1, r] = -M[r, r + 1] / det
    X = Minv @ Jc.T
    S = Jc @ X
    u = Minv @ f
    rhs = -(ga - gb) - Jc @ u
    det = S[0, 0] * S[1, 1] - S[0, 1] * S[1, 0]
    lam[0] = (S[1, 1] * rhs[0] - S[0, 1] * rhs[1]) / det
    lam[1] = (S[0, 0] * rhs[1] - S[1, 0] * rhs[0]) / det
    qdd[:] = u + X @ lam


@njit(cache=True)
def hand_loop(xc, tau, count):
    qdd, lam = np.zeros(4), np.zeros(2)
    s = 0.0
    for k in range(count):
        _state(xc, k)
        by_hand(xc[0, :4], xc[0, 4:8], tau, qdd, lam)
        s += qdd[0]
    return s


def best_of(fn, repeats=5):
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evaluations", type=int, default=20000)
    args = ap.parse_args()
    count = args.evaluations
    tau = np.array([0.2, -0.15])
    blk = BlockCheck("ClosedChain", {"chain": "five_bar", "q0": list(Q0), "singular": "none"},
                     in_widths={"tau": 2})
    p = blk.block.runtime_kernels().params
    xc, xd, y = blk.xc, blk.xd, blk.y
    u = blk.u([tau])
    dxc = np.zeros_like(xc)
    # the block and the hand-written five-bar agree (an independent check of both)
    _state(xc, 7)
    closed_chain_output(0.0, xc, xd, u, y, p)
    qdd, lam = np.zeros(4), np.zeros(2)
    by_hand(xc[0, :4].copy(), xc[0, 4:8].copy(), tau, qdd, lam)
    gap = max(np.max(np.abs(y[2][0] - qdd)), np.max(np.abs(y[3][0] - lam)))
    assert gap < 1e-12, gap
    for clear in (False, True):                                  # compile and warm
        block_loop(xc, xd, u, y, dxc, p, 10, clear)
    hand_loop(xc.copy(), tau, 10)
    memo = best_of(lambda: block_loop(xc, xd, u, y, dxc, p, count, False)) / count
    plain = best_of(lambda: block_loop(xc, xd, u, y, dxc, p, count, True)) / count
    hand = best_of(lambda: hand_loop(xc.copy(), tau, count)) / count
    print(f"five-bar, {count} evaluations (output + derivative at one state), best of 5; the "
          f"block's qdd and lambda equal the hand-written ones to {gap:.1e}")
    print(f"{'':10s} {'us/eval':>8s} {'/ by hand':>10s}")
    for name, sec in (("memo", memo), ("no memo", plain), ("by hand", hand)):
        print(f"{name:10s} {sec * 1e6:8.2f} {sec / hand:10.2f}")
    print(f"the memo saves {100 * (1 - memo / plain):.0f} % of an evaluation")
    d = blocksim.load(EXAMPLE, set={"simulation.mode": "compiled", "simulation.solver": "rk4",
                                    "simulation.step": 1e-3, "plant.singular": "none"})
    blocksim.simulate(d)                                         # compiles (once)
    wall = best_of(lambda: blocksim.simulate(d), 3)
    evaluations = 4 * 3000                                       # rk4: 4 stages a step
    print(f"compiled example, rk4 1 ms, 3 s: {wall:.3f} s, {evaluations} derivative "
          f"evaluations, {wall / evaluations * 1e6:.2f} us each (the whole run: the major "
          "steps' outputs, logging and projection included)")


if __name__ == "__main__":
    main()
