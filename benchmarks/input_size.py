"""Reading large inputs: time linear in the input's size.

Three inputs at growing sizes: a chain of N Gain blocks (`c -> g0 -> ... -> t`), N subsystem
instances of 20 Gains each, and a workspace of N chained parameters (`p1: ${p0 + 1}`, ...). For
each it prints the file's size, the CPU seconds of `blocksim.load`, of `compile()` and of the
run's plan (`engine.plan.make_plan`, as `cli.py check` and every run make it), the microseconds
per block (or parameter) of reading it (load and compile), the ratio of that per-item cost to the
smallest size's (1.0 is linear time; 2.0 would be twice the cost per item) and the same ratio for
the plan, and the ratio of the load to PyYAML's own C loader reading the same text (the floor of
any YAML reader). CPU time, not wall time: the
machine is shared. Run by hand: python benchmarks/input_size.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("BLOCKSIM_FIRST_RUN", "compile")   # time compiled kernels, not twins

import blocksim  # noqa: E402
from blocksim.engine.plan import make_plan  # noqa: E402
from blocksim.engine.scheduler import run_settings  # noqa: E402
from blocksim.engine.simulate import logged_signals  # noqa: E402


def chain_yaml(n: int) -> str:
    """A chain of n Gain blocks between a Constant and a Terminator."""
    lines = ["blocksim: 1", "name: gain chain", "blocks:", "  c: {type: Constant, value: 1.0}"]
    lines += [f"  gain_{k}: {{type: Gain, gain: 1.0}}" for k in range(n)]
    lines += ["  t: {type: Terminator}", "connections:", "  - c -> gain_0"]
    lines += [f"  - gain_{k} -> gain_{k + 1}" for k in range(n - 1)]
    lines += [f"  - gain_{n - 1} -> t", "simulation: {stop_time: 0.001, solver: rk4, step: 0.001}"]
    return "\n".join(lines) + "\n"


PART = "\n".join(["blocksim: 1", "inports: [u]", "outports: [y]", "blocks:",
                  *(f"  g{i}: {{type: Gain, gain: 1.0}}" for i in range(20)),
                  "connections:", "  - inports.u -> g0", *(f"  - g{i} -> g{i + 1}" for i in range(19)),
                  "  - g19 -> outports.y"]) + "\n"
"""A subsystem of 20 Gains in a chain."""


def subsystems_yaml(n: int) -> str:
    """n instances of PART (part.yaml) in a chain: 20 n blocks."""
    lines = ["blocksim: 1", "blocks:", "  c: {type: Constant, value: 1.0}"]
    lines += [f"  s{k}: {{type: part.yaml}}" for k in range(n)]
    lines += ["  t: {type: Terminator}", "connections:", "  - c -> s0"]
    lines += [f"  - s{k} -> s{k + 1}" for k in range(n - 1)] + [f"  - s{n - 1} -> t"]
    return "\n".join(lines) + "\n"


def parameters_yaml(n: int) -> str:
    """A workspace of n parameters, each one more than the one before, read by one Constant."""
    lines = ["blocksim: 1", "parameters:", "  p0: 1.0"]
    lines += [f"  p{k}: ${{p{k - 1} + 1}}" for k in range(1, n)]
    lines += ["blocks:", f"  c: {{type: Constant, value: \"${{p{n - 1}}}\"}}", "  t: {type: Terminator}",
              "connections: [c -> t]"]
    return "\n".join(lines) + "\n"


def measure(path: Path, text: str) -> tuple[float, float, float, float]:
    """(load, compile, plan, PyYAML CSafeLoader) CPU seconds for the diagram `text` at `path`."""
    path.write_text(text)
    started = time.process_time()
    diagram = blocksim.load(str(path))
    loaded = time.process_time()
    compiled = diagram.compile()
    done = time.process_time()
    make_plan(compiled, run_settings(diagram.settings, diagram.log_settings, compiled),
              logged_signals(compiled, diagram.log_settings))
    planned = time.process_time()
    yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return loaded - started, done - loaded, planned - done, time.process_time() - planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 10,000 items only")
    args = parser.parse_args()
    sizes = (2_500, 5_000, 10_000) if args.quick else (2_500, 10_000, 40_000)
    cases = [("Gain chain", "blocks", chain_yaml, 1),
             ("subsystems of 20 Gains", "blocks", subsystems_yaml, 20),
             ("chained parameters", "parameters", parameters_yaml, 1)]
    print(f"{'input':24} {'items':>7} {'MB':>5} {'load s':>6} {'compile s':>9} {'plan s':>6} "
          f"{'read us/item':>12} {'read vs smallest':>16} {'plan vs smallest':>16} {'load vs PyYAML C':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "part.yaml").write_text(PART)
        measure(folder / "warm.yaml", chain_yaml(10))               # imports, first calls
        for title, unit, make, per in cases:
            base = plan_base = None
            for size in sizes:
                count = size if per == 1 else size // per
                text = make(count)
                load, comp, plan, floor = measure(folder / f"{unit}{size}.yaml", text)
                items = count * per
                per_item, plan_per_item = (load + comp) / items * 1e6, plan / items * 1e6
                base, plan_base = base or per_item, plan_base or plan_per_item
                plan_ratio = f"{plan_per_item / plan_base:15.2f}x" if plan >= 0.01 else f"{'-':>16}"
                print(f"{title:24} {items:7,} {len(text) / 1e6:5.2f} {load:6.2f} {comp:9.2f} {plan:6.2f} "
                      f"{per_item:12.1f} {per_item / base:15.2f}x {plan_ratio} {load / floor:15.1f}x",
                      flush=True)


if __name__ == "__main__":
    main()
