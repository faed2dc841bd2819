"""Where a study's units run: `threads` (this process, one unit after another, each batch split
over the machine's cores as any batch run is), `processes` (a pool of worker processes of the
standard library, one thread each) or `dask` (Dask distributed: a LocalCluster on loopback, or a
running scheduler at an address). Each worker makes its own UnitRunner once, from the study file,
and sends back the rows of each unit it ran; the driver writes them (study/store.py).

A worker process that dies (kill -9, out of memory) loses only the units it held: the process
pool is made again for the units not done (at most `RESTARTS` times), and Dask sends a dead
worker's units to the others.
"""
from __future__ import annotations

import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from ..errors import BlocksimError
from ..version import __version__
from .work import Unit

RESTARTS = 3
"""Times the process pool is made again after a worker died, before the study stops."""

_local = threading.local()


def worker_runner(study_file: str):
    """This worker thread's UnitRunner of the study file (made at its first unit). One thread
    each: a worker's batch runs are not split further."""
    cached = getattr(_local, "runners", None)
    if cached is None:
        cached = _local.runners = {}
    if study_file not in cached:
        from .file import load_study
        from .units import UnitRunner
        cached[study_file] = UnitRunner(load_study(study_file), threads=1)
    return cached[study_file]


def run_unit(study_file: str, unit: Unit) -> list[dict]:
    """A worker's task: the rows of one unit."""
    return worker_runner(study_file).run(unit)


def worker_version() -> str:
    return __version__


Done = Callable[[Unit, list], None]


def run_units(executor: str, study_file: str, units: list[Unit], runner, on_done: Done,
              workers: int | None = None, scheduler: str | None = None,
              processes: bool = True) -> str:
    """Run `units` on `executor`, calling on_done(unit, rows) in the driver as each finishes (in
    the order they finish); returns a line saying where they ran."""
    if executor == "threads":
        for unit in units:
            on_done(unit, runner.run(unit))
        return "threads: in this process"
    if executor == "processes":
        return _processes(study_file, units, on_done, workers)
    return _dask(study_file, units, on_done, workers, scheduler, processes)


def _processes(study_file: str, units: list[Unit], on_done: Done, workers: int | None) -> str:
    import multiprocessing

    from ..engine.simulate import available_cores
    workers = workers or available_cores()
    pending = {u.index: u for u in units}
    restarts = 0
    while pending:
        context = multiprocessing.get_context("spawn")
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                futures = {pool.submit(run_unit, study_file, u): u for u in pending.values()}
                for future in as_completed(futures):
                    unit = futures[future]
                    on_done(unit, future.result())
                    del pending[unit.index]
        except BrokenProcessPool:
            restarts += 1
            if restarts > RESTARTS:
                raise BlocksimError(f"the processes executor lost a worker {restarts} times; "
                                    f"{len(pending)} units did not run (--resume runs them)") \
                    from None
    return f"processes: {workers} worker processes" + \
        (f", made again {restarts} time(s) after a worker died" if restarts else "")


def _dask(study_file: str, units: list[Unit], on_done: Done, workers: int | None,
          scheduler: str | None, processes: bool) -> str:
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:
        raise BlocksimError("the dask executor needs Dask distributed: pip install -e .[dask]") \
            from None
    from ..engine.simulate import available_cores
    cluster = None
    if scheduler:
        client = Client(scheduler)
        where = f"dask: the scheduler at {scheduler}"
    else:
        workers = workers or available_cores()
        loopback = {"host": "127.0.0.1"} if processes else {}     # threads: in-process comms
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=None, **loopback)
        client = Client(cluster)
        where = f"dask: a LocalCluster of {workers} {'processes' if processes else 'threads'} " \
                "on loopback"
    try:
        versions = client.run(worker_version)
        other = {w: v for w, v in versions.items() if v != __version__}
        if other:
            raise BlocksimError(f"dask workers run another blocksim version than this driver's "
                                f"{__version__}: " + ", ".join(f"{w} ({v})" for w, v in other.items()))
        futures = {client.submit(run_unit, study_file, u, pure=False, retries=RESTARTS): u
                   for u in units}
        for future in dask_completed(futures):
            on_done(futures[future], future.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return where + f" ({len(versions)} workers, blocksim {__version__})"
