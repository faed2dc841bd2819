"""blocksim's reference workloads W1-W3 (benchmarks/README.md) through blocksim and by hand, in one run.

Runs W1 (pid_ff: rk4 1 ms and dopri5 rtol 1e-6, and dopri5 with the plant's Coulomb friction
exact, its crossings located as events), W2 and W3 through blocksim in interpreted and
compiled mode (B = 1, and B = 1000 per member), next to the hand-written loops of
benchmarks/references.py (pure Python and numba), and prints medians and ratios blocksim /
hand-written numba, each ratio the median over rounds that run the hand loop and then blocksim's
calls (a shared machine's speed drifts between rounds, not within one), four ways: a new
Diagram each time (`simulate(load(...))`: the file's bytes read and recognised, the spec and
the Simulator made for the last such Diagram reused), simulate() again on one Diagram (fast
restart), Simulator.run(), and a new Diagram of content the engine has not seen (its remembered
specs and Simulators forgotten first: the file parsed and the diagram compiled in Python every
call; in rounds of its own, after the other three's). A compiled fixed-step batch is timed on one thread and on all cores, and W1
dopri5 with per-member steps (simulation.step_control: per_member) as a compiled B = 1000 batch on
all cores. W1 under radau and bdf (rtol 1e-6) compiled: the compiled stiff loops against SciPy's
Radau and BDF over the compiled derivatives. Also: the
wall time of a warm `python cli.py simulate` of W1, the import time of blocksim, and the first-run
compile time of W1 under rk4 and dopri5 (a fresh cache folder).
Peers (bdsim, PathSim, pydrake) are run on W1 when installed, skipped otherwise.

    python benchmarks/run.py [--repeats 5] [--quick] [--only LABEL] [--processes N]

Never run in CI. Numbers depend on the machine's load: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import blocksim  # noqa: E402
from blocksim.diagram.spec import forget_specs  # noqa: E402
from blocksim.engine.simulate import forget_simulators  # noqa: E402
import references as ref  # noqa: E402

W1 = ROOT / "examples" / "two_link_pid_vs_ff.yaml"
W2 = ROOT / "examples" / "two_link_foc.yaml"
W3 = ROOT / "examples" / "puma560_computed_torque.yaml"


def w1_logging_what_the_hand_loop_reads(folder: Path) -> Path:
    """W1's file logging ref.q and plant.q alone (log.signals, and no scopes, which add their
    signals to the log): the signals the hand-written adaptive loop reads at each log time (the
    state q and the analytic reference, for max |e|)."""
    text = W1.read_text()
    start, end = text.index("\nscopes:\n"), text.index("\nvariants:\n")
    text = text[:start] + text[end:]
    old = "log: {signals: [ref.q, plant.q, plant.qd, u.out, pid.out, ff.tau], every: 1.0e-3}"
    if old not in text:
        raise SystemExit(f"{W1.name}: its log line changed; update benchmarks/run.py")
    path = folder / "w1_log_q.yaml"
    path.write_text(text.replace(old, "log: {signals: [ref.q, plant.q], every: 1.0e-3}"))
    return path


def timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def interleaved(calls, hand, repeats: int) -> tuple[list[float], float | None, list[float | None]]:
    """Each of `calls` and the hand-written loop `hand` (or None) run in turn, `repeats` rounds:
    (the median time of each call, the hand loop's median, and the median over rounds of each
    call's time over the hand loop's in the same round). A shared machine's speed drifts over
    seconds; a ratio taken within one round sees both sides at the same speed."""
    rows: list[list[float]] = [[] for _ in calls]
    hands: list[float] = []
    for _ in range(repeats):
        if hand is not None:
            # twice, the second timed: right after a batch run a hand loop of W1 dopri5 took
            # 0.5-0.6 ms instead of 0.27 (the machine's caches and clocks after two busy cores)
            hands.append(timed(hand, 2)[1])
        for row, call in zip(rows, calls):
            row.append(timed(call, 1)[0])
    times = [statistics.median(row) for row in rows]
    if hand is None:
        return times, None, [None] * len(calls)
    ratios = [statistics.median(t / h for t, h in zip(row, hands)) for row in rows]
    return times, statistics.median(hands), ratios


GAIN_BLOCK = {"W1": "pid", "W2": "pid", "W3": "ct"}
"""The block whose proportional gain Kp the batch runs spread (a block parameter: the members
share one resolved diagram; a workspace-parameter batch re-resolves the file per member)."""


def blocksim_case(label: str, path: Path, variant: str | None, mode: str, batch: int, sets=None):
    """Callables running one simulation: simulate() of a newly loaded Diagram (the engine
    recognises its content and runs the Simulator it built for the last one: fast restart by
    content), simulate() of one Diagram again (fast restart), a Simulator (the diagram compiled
    once, for its run()), and simulate() of a newly loaded Diagram whose content the engine has
    not seen (its Simulators and specs forgotten first: the file read and the diagram compiled in
    Python each call, as for a file loaded with other `set` values each time)."""
    overrides = {"simulation.mode": mode}
    overrides.update(sets or {})
    d = blocksim.load(path, variant=variant, set=overrides)
    members = None
    if batch > 1:
        # B members with proportional gains spread by 0.1 % each
        block = GAIN_BLOCK[label.split()[0]]
        kp = np.asarray(d.spec.blocks[block].params["Kp"], dtype=float)
        members = {f"{block}.Kp": [(kp * (1 + 1e-3 * k)).tolist() for k in range(batch)]}
    prepared = blocksim.Simulator(d, batch=members)

    def unseen():
        forget_simulators()
        forget_specs()
        return blocksim.simulate(blocksim.load(path, variant=variant, set=overrides),
                                 batch=members)
    return ((lambda: blocksim.simulate(blocksim.load(path, variant=variant, set=overrides),
                                       batch=members)),
            (lambda: blocksim.simulate(d, batch=members)), prepared, unseen)


def max_error(result, ref_name, plant_name):
    e = np.abs(result[ref_name] - result[plant_name])
    return e.max(axis=-2)


def cli_wall_time(repeats: int) -> list[float]:
    cmd = [sys.executable, str(ROOT / "cli.py"), "simulate", str(W1), "--variant", "pid_ff",
           "--quiet"]
    subprocess.run(cmd, capture_output=True, check=True)     # warm the cache
    return timed(lambda: subprocess.run(cmd, capture_output=True, check=True), repeats)


def import_time(repeats: int) -> list[float]:
    cmd = [sys.executable, "-c", "import blocksim"]
    return timed(lambda: subprocess.run(cmd, capture_output=True, check=True), repeats)


def first_compile_time(solver: str = "rk4") -> float:
    """Seconds of W1 pid_ff's first compiled run under `solver` in a new process with an empty
    blocksim cache (numba's kernels stay cached): the generated module's compile and one run."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, BLOCKSIM_CACHE_DIR=tmp)
        code = ("import time, blocksim; d = blocksim.load(r'%s', variant='pid_ff', "
                "set={'simulation.mode': 'compiled', 'simulation.solver': '%s'}); "
                "t = time.perf_counter(); "
                "blocksim.simulate(d); print(time.perf_counter() - t)" % (W1, solver))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)
        return float(out.stdout.strip().splitlines()[-1])


def w1_stiff(solver: str, repeats: int) -> tuple[float, float, dict, dict]:
    """W1 pid_ff under radau or bdf (rtol 1e-6, atol 1e-8), compiled mode, Simulator.run():
    medians (s) of the compiled stiff loop (engine/stiff_loop.py and bdf_loop.py: blocksim's
    Radau IIA and BDF) and of SciPy's Radau or BDF stepping in Python over the same compiled
    derivatives (the scheduler's loop, the path before the compiled loops and the baseline here),
    alternating; and each path's run statistics."""
    d = blocksim.load(W1, variant="pid_ff", set={
        "simulation.mode": "compiled", "simulation.solver": solver, "simulation.rtol": 1e-6,
        "simulation.atol": 1e-8})
    compiled, scipy_path = blocksim.Simulator(d), blocksim.Simulator(d)
    scipy_path.parts[0].backend.loop = None          # the scheduler's loop, SciPy's solver
    stats = [compiled.run().stats, scipy_path.run().stats]     # warm
    times: tuple[list, list] = ([], [])
    for _ in range(repeats):
        times[0].extend(timed(compiled.run, 1))
        times[1].extend(timed(scipy_path.run, 1))
    return statistics.median(times[0]), statistics.median(times[1]), *stats


def across_processes(count: int) -> None:
    """This benchmark with the same arguments (but --processes) run in `count` processes one
    after the other, and each table row's ratios given as the median over the processes with
    the lowest and highest. Within one process a compiled run's time holds to a few per cent,
    while from one process to the next it moved by a third (W2 7.7 to 12.4 ms, the same module
    and the same hand loop), whatever the addresses, the core or the hash seed; so one process's
    ratio is a sample of that spread."""
    argv, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg.startswith("--processes="):
            skip = False
        elif arg == "--processes":
            skip = True
        else:
            argv.append(arg)
    rows: dict[str, list[list[float]]] = {}
    for k in range(count):
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv],
                             capture_output=True, text=True, check=True).stdout
        print(f"process {k + 1} of {count} done", file=sys.stderr, flush=True)
        for line in out.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            ratios = [float(r[:-1]) for c in cells for r in c.split(" / ")
                      if r.endswith("x") and r[:-1].replace(".", "", 1).isdigit()]
            if line.startswith("|") and ratios:
                key = " | ".join(c for c in cells[:4] if not c.endswith(" ms"))   # not times
                rows.setdefault(key, []).append(ratios)
    print(f"\n| row | ratios: median over {count} processes (lowest-highest) |")
    print("| --- | --- |")
    for row, samples in rows.items():
        columns = zip(*samples)
        print(f"| {row} | " + " / ".join(
            f"{statistics.median(c):.2f}x ({min(c):.2f}-{max(c):.2f})" for c in columns) + " |")


def peers() -> list[str]:
    return [name for name in ("bdsim", "pathsim", "pydrake")
            if importlib.util.find_spec(name) is not None]


def main() -> None:
    # timings are of compiled kernels: a first run here waits for the compiler rather than
    # running the kernels' Python twins (and the child processes inherit it)
    os.environ.setdefault("BLOCKSIM_FIRST_RUN", "compile")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="skip B = 1000 and the CLI timings")
    parser.add_argument("--only", default=None,
                        help="run only the workloads whose label contains this text (e.g. "
                             "'exact Coulomb'); implies --quick")
    parser.add_argument("--processes", type=int, default=1,
                        help="run the benchmark in this many processes, one after the other, "
                             "and print each row's ratios as the median over them with their "
                             "range (a compiled run's speed differs from one process to the "
                             "next: W2 took 7.7 to 12.4 ms)")
    args = parser.parse_args()
    if args.processes > 1:
        return across_processes(args.processes)
    args.quick = args.quick or args.only is not None
    n = args.repeats
    print(f"# blocksim benchmarks, {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}, load "
          f"{os.getloadavg()[0]:.2f}")

    # warm everything once (kernels and generated modules compiled, caches filled)
    ref.w1_numba(True), ref.w1_dopri5_numba(True), ref.w2_numba(), ref.w3_reference()
    ref.w1_coulomb_dopri5_numba()
    hand = {
        "W1 pid_ff": (lambda: ref.w1_numba(True), lambda: ref.w1_python(True)),
        "W1 pid_ff dopri5": (lambda: ref.w1_dopri5_numba(True), None),
        "W1 pid_ff dopri5, log q only": (lambda: ref.w1_dopri5_numba(True), None),
        "W1 pid_ff dopri5 exact Coulomb": (lambda: ref.w1_coulomb_dopri5_numba(), None),
        "W2": (lambda: ref.w2_numba(), lambda: ref.w2_python()),
        "W3": (lambda: ref.w3_reference(), None),
    }
    workloads = [("W1 pid_ff", W1, "pid_ff", {}),
                 ("W1 pid_ff dopri5", W1, "pid_ff", {"simulation.solver": "dopri5",
                                                     "simulation.rtol": 1e-6,
                                                     "simulation.atol": 1e-8}),
                 # the hand loop's log: q and the reference alone (W1's file logs six signals,
                 # every block's outputs computed at each of the 2,001 log samples)
                 ("W1 pid_ff dopri5, log q only",
                  w1_logging_what_the_hand_loop_reads(Path(tempfile.mkdtemp())), "pid_ff",
                  {"simulation.solver": "dopri5", "simulation.rtol": 1e-6,
                   "simulation.atol": 1e-8}),
                 # the plant's Coulomb friction with an exact sign: each joint speed's zero
                 # crossing is an event (located, qd = 0, the joint sticks or breaks away)
                 ("W1 pid_ff dopri5 exact Coulomb", W1, "pid_ff",
                  {"simulation.solver": "dopri5", "simulation.rtol": 1e-6,
                   "simulation.atol": 1e-8, "plant.friction_smoothing": 0.0}),
                 ("W2", W2, None, {}), ("W3", W3, None, {})]
    if not args.quick or args.only is not None:    # each member its own steps (simulation.
        # step_control: per_member); a B = 1000 row, which --only can select
        per_member_sets = {"simulation.solver": "dopri5", "simulation.rtol": 1e-6,
                           "simulation.atol": 1e-8, "simulation.step_control": "per_member"}
        workloads.append(("W1 pid_ff dopri5 per member", W1, "pid_ff", per_member_sets))
        # ... logging what the hand loop logs, as the B = 1 row "log q only"
        workloads.append(("W1 pid_ff dopri5 per member, log q only",
                          w1_logging_what_the_hand_loop_reads(Path(tempfile.mkdtemp())),
                          "pid_ff", per_member_sets))
    hand["W1 pid_ff dopri5 per member"] = hand["W1 pid_ff dopri5"]
    hand["W1 pid_ff dopri5 per member, log q only"] = hand["W1 pid_ff dopri5"]
    if args.only is not None:
        workloads = [w for w in workloads if args.only in w[0]]
    rows = []
    for label, path, variant, sets in workloads:
        if not path.exists():
            print(f"{label}: {path.name} missing, skipped")
            continue
        numba_fn, python_fn = hand.get(label, (None, None))
        python_t = statistics.median(timed(python_fn, max(1, n // 2))) if python_fn else None
        per_member = "per member" in label
        for mode in ("compiled",) if per_member else ("interpreted", "compiled"):
            # the event run at B = 1 (an interpreted batch of 1000 would fire its events member
            # by member in Python for minutes)
            batches = (1000,) if per_member else (1,) if args.quick or "exact" in label \
                or "log q only" in label \
                else (1, 1000)
            for batch in batches:
                # a compiled fixed-step batch splits across the cores (simulation.threads:
                # auto); its single-thread time is measured too
                split = mode == "compiled" and batch > 1 and "dopri5" not in label
                for threads in (("1", "auto") if split else ("auto",)):
                    fresh, again, prepared, unseen = blocksim_case(
                        label, path, variant, mode, batch, {**sets, "simulation.threads": threads})
                    calls = (fresh, again, prepared.run)
                    for call in calls:
                        call()    # warm
                    # a compiled batch's row (a quarter of a second to 2.5 s a call) gets the
                    # rounds of a single run: one round of W1 dopri5 per member read anywhere from
                    # 0.51x to 0.62x on this machine, and W2's from 0.55x to 0.61x; an interpreted
                    # batch (7 s a call for W2) gets half
                    count = n if batch == 1 or mode == "compiled" else max(1, n // 2)
                    times, numba_t, ratios = interleaved(calls, numba_fn, count)
                    # the whole compile in rounds of its own: its garbage and the caches it
                    # leaves cold would land on the calls after it (W1's simulate(load()) 2.8x
                    # alone, 3.2x after it)
                    unseen_t, _, unseen_r = interleaved((unseen,), numba_fn, count)
                    times, ratios = times + unseen_t, ratios + unseen_r
                    times = [t / batch for t in times]
                    ratios = [r and r / batch for r in ratios]
                    threads_used = min(prepared._threads, len(prepared.parts))
                    rows.append((label, mode, batch, threads_used, times, numba_t, ratios,
                                 python_t))
    print("\n| workload | mode | B | threads | simulate(load()) / simulate() again / "
          "Simulator.run() / simulate(load()) of content not seen before, per member | "
          "hand numba | ratios | hand Python |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, mode, batch, threads, times, numba_t, ratios, python_t in rows:
        ratios = (" / ".join(f"{r:.2f}x" for r in ratios) if numba_t else "-")
        print(f"| {label} | {mode} | {batch} | {threads} | "
              + " / ".join(f"{t * 1e3:.3f}" for t in times)
              + (f" ms | {numba_t * 1e3:.3f} ms" if numba_t else " ms | -")
              + f" | {ratios} | "
              + (f"{python_t * 1e3:.1f} ms |" if python_t else "- |"))
    print("\n| workload | mode | compiled loop (run_stiff, run_bdf) | SciPy's solver over compiled "
          "derivatives | ratio | steps / evaluations |")
    print("| --- | --- | --- | --- | --- | --- |")
    for solver in ("radau", "bdf"):
        ours, theirs, ours_stats, theirs_stats = w1_stiff(solver, n)
        print(f"| W1 pid_ff {solver} rtol 1e-6 | compiled | {ours * 1e3:.2f} ms | "
              f"{theirs * 1e3:.2f} ms | {ours / theirs:.3f}x | {ours_stats['nsteps']} / "
              f"{ours_stats['nfev']} against {theirs_stats['nsteps']} / {theirs_stats['nfev']} |")
    if not args.quick:
        cli = statistics.median(cli_wall_time(n))
        imp = statistics.median(import_time(n))
        print(f"\nwarm `python cli.py simulate {W1.name} --variant pid_ff --quiet`: {cli:.3f} s wall")
        print(f"`import blocksim`: {imp:.3f} s wall (a bare python start included)")
        for solver in ("rk4", "dopri5"):
            print(f"first-run compile + run of W1 pid_ff under {solver} (empty cache): "
                  f"{first_compile_time(solver):.1f} s")
    found = peers()
    print(f"\npeers installed: {', '.join(found) if found else 'none (bdsim, pathsim, pydrake)'}")


if __name__ == "__main__":
    main()
