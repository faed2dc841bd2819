"""Whole-process start-up: a warm `python cli.py simulate` of W1, `import blocksim`, and the floor.

Times, as whole processes (wall clock from the parent, and the child's CPU time), alternating
the commands run by run:

- warm CLI: `python cli.py simulate examples/two_link_pid_vs_ff.yaml --variant pid_ff --quiet`
  with W1's compiled code already in the cache (the benchmark runs `--mode compiled` once first,
  which builds it when it is missing);
- `import blocksim`;
- the floor, a hand-written process doing the least any compiled run must: Python, NumPy and
  numba started, and one numba function loaded from numba's disk cache and called (numba's CPU
  target initialised, as it must be before any compiled code runs). It is timed in its natural
  form (numba's own start, which imports scipy.linalg) and with SciPy's two BLAS modules loaded
  the way blocksim loads them (blocksim/engine/numba_start.py).

Prints the median of N runs of each, and the warm CLI as a multiple of the floor. The target
(benchmarks/README.md) is a warm CLI run within 0.8 s on an idle 2-core machine.

    python benchmarks/cli_start.py [--repeats 5]

Never run in CI. Numbers depend on the machine's load: compare the ratios of one run.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
W1 = ROOT / "examples" / "two_link_pid_vs_ff.yaml"
CLI = [sys.executable, str(ROOT / "cli.py"), "simulate", str(W1), "--variant", "pid_ff", "--quiet"]

FLOOR_KERNEL = '''
from numba import njit

@njit(cache=True)
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s
'''

FLOOR = "import numpy as np; import floor_kernel; floor_kernel.total(np.ones(3))"
FLOOR_BLAS = ("import importlib.util as u; spec = u.spec_from_file_location('numba_start', %r); "
              "m = u.module_from_spec(spec); spec.loader.exec_module(m); m.load_blas_modules(); "
              % str(ROOT / "blocksim" / "engine" / "numba_start.py")) + FLOOR
"""The floor with blocksim's loading of SciPy's BLAS modules, its file run alone (importing it as
blocksim.engine.numba_start would import the whole package first)."""


def run(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of cmd as a child process; its exit status must be 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # a user's Python keeps its bytecode files
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "floor_kernel.py").write_text(FLOOR_KERNEL)
        commands = {
            "warm CLI (W1 pid_ff --quiet)": (CLI, ROOT),
            "import blocksim": ([sys.executable, "-c", "import blocksim"], ROOT),
            "floor: numba + one cached function": ([sys.executable, "-c", FLOOR], folder),
            "floor, BLAS modules as blocksim loads them": ([sys.executable, "-c", FLOOR_BLAS],
                                                           folder),
        }
        subprocess.run(CLI + ["--mode", "compiled"], capture_output=True, env=env, check=True)
        for cmd, cwd in commands.values():          # warm-up: bytecode and numba caches written
            run(cmd, env, cwd)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, (cmd, cwd) in commands.items():
                times[name].append(run(cmd, env, cwd))
    load = os.getloadavg()[0]
    print(f"whole processes, median of {args.repeats} (load average {load:.2f}, "
          f"{os.cpu_count()} cores)")
    medians = {}
    for name, pairs in times.items():
        wall = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        medians[name] = wall
        print(f"  {name:44s} {wall:6.3f} s wall  {cpu:6.3f} s CPU  "
              f"({min(w for w, _ in pairs):.3f}-{max(w for w, _ in pairs):.3f} s wall)")
    cli = medians["warm CLI (W1 pid_ff --quiet)"]
    print(f"warm CLI / floor: {cli / medians['floor: numba + one cached function']:.2f}x, "
          f"/ floor with BLAS modules: "
          f"{cli / medians['floor, BLAS modules as blocksim loads them']:.2f}x; target 0.8 s "
          f"wall on an idle machine: {'met' if cli <= 0.8 else 'not met'} here")


if __name__ == "__main__":
    main()
