"""Engine overhead: a chain of 20 Gain blocks closed through an Integrator, rk4, 10,000 steps.

Prints microseconds per block evaluation at B = 1, and per member at B = 1000, next to the cost of
the same arithmetic done by one numba kernel call (the floor the engine's overhead is measured
against). Run by hand: python benchmarks/engine_overhead.py
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("BLOCKSIM_FIRST_RUN", "compile")   # time compiled kernels, not twins

import blocksim  # noqa: E402

N_GAINS = 20
STEPS = 10_000
STEP = 1e-4


def chain_yaml() -> str:
    gain = 0.5 ** (1 / N_GAINS)  # the loop gain is -0.5: x' = -0.5 x
    lines = ["blocksim: 1", "name: gain chain", "blocks:", "  x: {type: Integrator, x0: 1.0}"]
    lines += [f"  g{k}: {{type: Gain, gain: {gain!r}}}" for k in range(N_GAINS)]
    lines += ["  neg: {type: Gain, gain: -1.0}", "connections:", "  - x -> g0"]
    lines += [f"  - g{k} -> g{k + 1}" for k in range(N_GAINS - 1)]
    lines += [f"  - g{N_GAINS - 1} -> neg", "  - neg -> x"]
    lines += [f"simulation: {{stop_time: {STEPS * STEP!r}, solver: rk4, step: {STEP!r}}}",
              "log: {signals: [x.out], every: 0.01}"]
    return "\n".join(lines) + "\n"


def run(path: Path, batch: int) -> float:
    d = blocksim.load(path)
    members = {"x.x0": list(np.linspace(0.5, 1.5, batch))} if batch > 1 else None
    started = time.perf_counter()
    r = blocksim.simulate(d, batch=members)
    elapsed = time.perf_counter() - started
    x_end = r["x.out"][..., -1, 0]
    expected = np.exp(-0.5 * STEPS * STEP)
    assert np.allclose(x_end / (np.linspace(0.5, 1.5, batch) if batch > 1 else 1.0), expected,
                       rtol=1e-9), "the benchmark diagram computed a wrong answer"
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chain.yaml"
        path.write_text(chain_yaml())
        run(path, 1)  # compile the kernels once
        evaluations = STEPS * 5 * (N_GAINS + 2)   # rk4: 4 stages + the major step, every block
        for batch in (1, 1000):
            times = [run(path, batch) for _ in range(3)]
            best = min(times)
            per_eval = best / evaluations * 1e6
            print(f"B = {batch:5d}: {statistics.median(times):.3f} s median, {best:.3f} s best; "
                  f"{per_eval:.3f} us per block evaluation"
                  + (f", {per_eval / batch * 1000:.3f} ns per member" if batch > 1 else ""))


if __name__ == "__main__":
    main()
