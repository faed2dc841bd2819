"""Speed of the rigid-body algorithms (rnea, mass_matrix, aba) for the Puma 560: microseconds per call.

Run by hand:  python benchmarks/dynamics.py [--robot puma560] [--batch 1000]
Prints, per algorithm, the time per call at B = 1 through the public method and through the
low-level kernel (model.arrays + a preallocated workspace and output), and the time per batch
member at B = --batch through the kernel. Targets: < 50 us per call at B = 1, < 2 us per member.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run from a checkout

from blocksim.models import rigid_body_kernels as rbk
from blocksim.models.robot import RobotModel


def per_call(fn, min_time=0.3):
    """Best-of-5 mean time of fn() in seconds, each run long enough to be measured."""
    fn()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = time.perf_counter() - t0
        if dt > min_time / 5:
            break
        reps *= 4
    best = dt / reps
    for _ in range(4):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="puma560")
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args(argv)
    model = RobotModel.preset(args.robot)
    n = model.n
    jt, xt, inertia, arm, tool = model.arrays
    g = model.gravity
    ws = model.workspace()
    rng = np.random.default_rng(0)
    rows = []
    for B in (1, args.batch):
        q, qd, qdd = (np.ascontiguousarray(rng.uniform(-2, 2, (B, n))) for _ in range(3))
        out = np.empty((B, n))
        out_m = np.empty((B, n, n))
        tau = model.rnea(q, qd, qdd)
        kernels = {
            "rnea": lambda: rbk.rnea_into(jt, xt, inertia, arm, tool, q, qd, qdd, g, rbk.NO_FEXT, out, ws),
            "mass_matrix": lambda: rbk.mass_matrix_into(jt, xt, inertia, arm, q, out_m, ws),
            "aba": lambda: rbk.aba_into(jt, xt, inertia, arm, tool, q, qd, tau, g, rbk.NO_FEXT, out, ws),
        }
        if B == 1:
            methods = {
                "rnea": lambda: model.rnea(q[0], qd[0], qdd[0]),
                "mass_matrix": lambda: model.mass_matrix(q[0]),
                "aba": lambda: model.aba(q[0], qd[0], tau[0]),
            }
            for name in kernels:
                rows.append((name, "method, B=1", per_call(methods[name]) * 1e6, "us/call"))
                rows.append((name, "kernel, B=1", per_call(kernels[name]) * 1e6, "us/call"))
        else:
            for name in kernels:
                rows.append((name, f"kernel, B={B}", per_call(kernels[name]) / B * 1e6, "us/member"))
    print(f"{model.name}: {n} joints, numba kernels (warm)")
    for name, how, value, unit in sorted(rows, key=lambda r: r[0]):
        print(f"  {name:12s} {how:16s} {value:8.3f} {unit}")


if __name__ == "__main__":
    main()
