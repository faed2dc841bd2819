"""Drift control of the closed-chain plant on the five-bar linkage (examples/five_bar.yaml):
accuracy and cost of projection, Baumgarte and no correction under a fixed-step solver.

Run by hand:  python benchmarks/closed_chain_drift.py [--step 1e-3] [--alpha 10] [--beta 10]
Each choice runs the example's 3 s under rk4 at the step (compiled mode, after a warm-up run that
compiles), against the independent minimal-coordinate reference of tests/five_bar_reference.py
(scipy DOP853 at 1e-13): the largest |phi| on the log (m), the error of q at 3 s and over the log
(rad), of lambda (N), the energy balance E - E0 - (W_motor - W_damper) (J), and the run time as
a ratio to the run without correction (the same run, the same machine).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                  # run from a checkout
sys.path.insert(0, str(ROOT / "tests"))

import blocksim                                 # noqa: E402
import five_bar_reference as ref               # noqa: E402

EXAMPLE = ROOT / "examples" / "five_bar.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=float, default=1e-3, help="rk4 step (s)")
    ap.add_argument("--alpha", type=float, default=10.0, help="Baumgarte alpha (1/s)")
    ap.add_argument("--beta", type=float, default=10.0, help="Baumgarte beta (1/s)")
    args = ap.parse_args()
    times = np.round(np.arange(301) * 0.01, 12)
    q_ref, lam_ref = ref.simulate(times)
    base = {"simulation.mode": "compiled", "simulation.solver": "rk4", "simulation.step": args.step}
    choices = {"projection": {"plant.drift": "projection"},
               "baumgarte": {"plant.drift": "baumgarte", "plant.alpha": args.alpha,
                             "plant.beta": args.beta},
               "none": {"plant.drift": "none"}}
    rows, seconds = {}, {}
    for name, extra in choices.items():
        d = blocksim.load(EXAMPLE, set={**base, **extra})
        blocksim.simulate(d)                                        # compiles (once)
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            r = blocksim.simulate(d)
            best = min(best, time.perf_counter() - t0)
        seconds[name] = best
        q = r["plant.q"]
        rows[name] = (np.max(r["plant.phi_norm"]), np.max(np.abs(q[-1] - q_ref[-1])),
                      np.max(np.abs(q - q_ref)), np.max(np.abs(r["plant.lambda"] - lam_ref)),
                      np.max(np.abs(r["plant.balance"])))
    print(f"rk4 at {args.step:g} s over 3 s; Baumgarte alpha = {args.alpha:g}, beta = "
          f"{args.beta:g} 1/s")
    print(f"{'drift':12s} {'max |phi| m':>12s} {'q(3) rad':>10s} {'max q rad':>10s} "
          f"{'lambda N':>10s} {'balance J':>10s} {'time / none':>11s}")
    for name, (phi, q3, qmax, lam, bal) in rows.items():
        print(f"{name:12s} {phi:12.2e} {q3:10.2e} {qmax:10.2e} {lam:10.2e} {bal:10.2e} "
              f"{seconds[name] / seconds['none']:11.2f}")


if __name__ == "__main__":
    main()
