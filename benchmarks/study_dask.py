"""A W1 Monte Carlo study on a 2-worker Dask LocalCluster against the same members as one
in-process batch run (the issue's target: total <= T_start + 1.2 T_inproc, warm cache).

    python benchmarks/study_dask.py [--members 10000] [--workers 2] [--unit-size 250]

T_inproc: `simulate(d, batch=...)` of the study's members with `threads: auto`, compiled, in this
process (after a warm-up run that loads or builds the compiled module). T_start: from creating
the cluster and client until every worker has imported blocksim and loaded the compiled diagram
(one member run on each worker). T_study: `run_study` on that cluster (its driver runs the first
unit itself). Also the study with the processes executor and with threads, for comparison. The
members are drawn as examples/sweeps/w1_monte_carlo.yaml draws them (three of its factors).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STUDY = """\
study: 1
name: W1 Monte Carlo (benchmark)
diagram: {diagram}
seed: 2026
samples: {members}
unit_size: {unit}
set: {{simulation.mode: compiled, simulation.progress: false}}
factors:
  ff.param_error: {{normal: [0.0, 0.1]}}
  plant.Fv[0]: {{uniform: [0.25, 0.75]}}
  plant.Fc[0]: {{uniform: [0.5, 1.5]}}
"""


def warm(study_file: str) -> float:
    """A worker's start: blocksim imported, the diagram loaded and its compiled module run."""
    from blocksim.study.executors import worker_runner
    from blocksim.study.work import Unit
    started = time.perf_counter()
    worker_runner(study_file).run(Unit(-1, 0, 1))
    return time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=10000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--unit-size", type=int, default=250)
    args = p.parse_args()
    import blocksim
    from blocksim.study import load_study, member_values, run_study
    from blocksim.study.units import UnitRunner
    tmp = Path(tempfile.mkdtemp(prefix="blocksim-study-bench-"))
    study_file = tmp / "study.yaml"
    study_file.write_text(STUDY.format(diagram=ROOT / "examples" / "sweeps" / "w1_study.yaml",
                                       members=args.members, unit=args.unit_size))
    study = load_study(study_file)
    runner = UnitRunner(study)
    values = member_values(study.factors, study.samples, study.sampling, study.seed,
                           range(study.members))
    batch = runner.batch(values, study.members)
    d = runner.diagram
    blocksim.simulate(d, batch={k: v[:64] for k, v in batch.items()})      # warm: compiled module
    started = time.perf_counter()
    blocksim.simulate(d, batch=batch, threads="auto")
    t_inproc = time.perf_counter() - started
    print(f"T_inproc  {t_inproc:8.2f} s   simulate(d, batch) of {study.members} members, threads auto")

    from distributed import Client, LocalCluster
    started = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=None)
    client = Client(cluster)
    client.run(warm, str(study_file))
    t_start = time.perf_counter() - started
    print(f"T_start   {t_start:8.2f} s   LocalCluster of {args.workers} processes until every "
          "worker ran one member")
    started = time.perf_counter()
    run = run_study(study_file, tmp / "dask", scheduler=cluster.scheduler_address, progress=False)
    t_study = time.perf_counter() - started
    client.close()
    cluster.close()
    ok = sum(r["status"] == "ok" for r in run.rows)
    print(f"T_study   {t_study:8.2f} s   dask, {run.units} units of {args.unit_size}, {ok} ok; "
          f"T_start + T_study = {t_start + t_study:.2f} s = T_start + "
          f"{t_study / t_inproc:.2f} T_inproc (target: <= 1.2)")
    for executor in ("processes", "threads"):
        started = time.perf_counter()
        run_study(study_file, tmp / executor, executor=executor, workers=args.workers,
                  progress=False)
        t = time.perf_counter() - started
        print(f"{executor:<9} {t:8.2f} s   = {t / t_inproc:.2f} T_inproc")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"({os.cpu_count()} cores; cache {os.environ.get('BLOCKSIM_CACHE_DIR', '~/.cache/blocksim')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
