"""The cost of the run-size checks (engine/run_size.py): building a Simulator for W1
(examples/two_link_pid_vs_ff.yaml, variant pid_ff) with the checks, against the same build with
them switched off in the same process (the baseline), B = 1 and B = 1000, interpreted and compiled.

Prints the minimum over the repeats of each, alternating the two, and their ratio. Run by hand:
python benchmarks/run_size_checks.py [--repeats 200]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("BLOCKSIM_FIRST_RUN", "compile")   # time compiled kernels, not twins

import blocksim  # noqa: E402
from blocksim.engine import scheduler, simulate  # noqa: E402

W1 = Path(__file__).resolve().parents[1] / "examples" / "two_link_pid_vs_ff.yaml"


def build_time(diagram, batch, mode: str) -> float:
    started = time.perf_counter()
    blocksim.Simulator(diagram, batch=batch, mode=mode)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    diagram = blocksim.load(W1, variant="pid_ff")
    checks = {"on": (scheduler.check_run_length, simulate.check_run_memory),
              "off": (lambda *a: None, lambda *a: None)}
    print(f"building a Simulator for W1 pid_ff, minimum of {args.repeats} (ms)")
    print(f"{'case':<26}{'checks on':>11}{'checks off':>12}{'ratio':>8}")
    for mode in ("interpreted", "compiled"):
        for members in (1, 1000):
            batch = {"pid.Kp": [[400.0 * (1 + 0.001 * k), 200.0] for k in range(members)]} \
                if members > 1 else None
            build_time(diagram, batch, mode)            # compiles the step function once
            best = {"on": float("inf"), "off": float("inf")}
            for _ in range(args.repeats):
                for state, (length, memory) in checks.items():
                    scheduler.check_run_length, simulate.check_run_memory = length, memory
                    best[state] = min(best[state], build_time(diagram, batch, mode))
            scheduler.check_run_length, simulate.check_run_memory = checks["on"]
            print(f"{mode + ', B = ' + str(members):<26}{best['on'] * 1e3:>11.3f}"
                  f"{best['off'] * 1e3:>12.3f}{best['on'] / best['off']:>8.3f}")


if __name__ == "__main__":
    main()
