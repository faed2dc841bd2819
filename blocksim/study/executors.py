"""Where a study's units run: `threads` (this process, one unit after another, each batch split
over the machine's cores as any batch run is), `processes` (a pool of worker processes of the
standard library, one thread each) or `dask` (Dask distributed: a LocalCluster on loopback, or a
running scheduler at an address). Each worker makes its own UnitRunner once, from the study file,
and sends back the rows of each unit it ran; the driver writes them (study/store.py).

Before any unit is sent, the diagram is compiled once per node type of the workers
(study/nodes.py): by the driver for its own type, by one worker for each other type.

A worker process that dies (kill -9, out of memory) loses only the units it held: the process
pool is made again for the units not done (at most `RESTARTS` times), and Dask sends a dead
worker's units to the others.
"""
from __future__ import annotations

import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Callable

from ..errors import BlocksimError
from ..version import __version__
from .nodes import (GENERIC_ENV, check_workers, generic_environment, groups, node_type,
                    type_key, type_name)
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


def compile_member(study_file: str, member: int) -> str:
    """A worker's task: run one member (rows dropped), which compiles the diagram for this
    worker's node type into its cache; returns the worker's host name."""
    runner = worker_runner(study_file)
    runner.run(Unit(-1, member, member + 1))
    return runner.host


Done = Callable[[Unit, list], None]


@dataclass
class Compiler:
    """How the driver has the diagram compiled once per node type: `here()` compiles it in the
    driver (under the compile lock); `lock` is that lock, held while a worker compiles for
    another type; `member` is the member each compile runs; `generic`: cpu: generic."""

    here: Callable[[], None]
    lock: Callable
    member: int
    generic: bool = False
    plan: list = field(default_factory=list)

    def compile(self, nodes: dict[str, dict], on_worker: Callable[[str], str] | None,
                generic: bool | None = None) -> None:
        """Compile for every node type of `nodes` ({worker: node_type report}) once: the
        driver's own type here, each other type on its first worker (on_worker(worker))."""
        check_workers(nodes, self.generic if generic is None else generic)
        mine = type_key(node_type())
        for group in groups(nodes):
            node = nodes[group[0]]
            with self.lock():
                if type_key(node) == mine:
                    self.here()
                    on = "the driver"
                else:
                    on = group[0]
                    on_worker(group[0])
            self.plan.append({"type": type_name(node), "on": on, "workers": len(group),
                              "cpu": node["cpu"], "features": node["features"]})


def run_units(executor: str, study_file: str, units: list[Unit], runner, on_done: Done,
              compiler: Compiler, workers: int | None = None, scheduler: str | None = None,
              processes: bool = True) -> str:
    """Run `units` on `executor`, the diagram compiled first once per node type (compiler),
    calling on_done(unit, rows) in the driver as each finishes (in the order they finish);
    returns a line saying where they ran."""
    if executor == "threads":
        compiler.compile({"the driver": node_type()}, None, generic=False)
        for unit in units:
            on_done(unit, runner.run(unit))
        return "threads: in this process"
    if executor == "processes":
        return _processes(study_file, units, on_done, compiler, workers)
    return _dask(study_file, units, on_done, compiler, workers, scheduler, processes)


def _processes(study_file: str, units: list[Unit], on_done: Done, compiler: Compiler,
               workers: int | None) -> str:
    import multiprocessing

    from ..engine.simulate import available_cores
    workers = workers or available_cores()
    pending = {u.index: u for u in units}
    restarts = 0
    while pending:
        context = multiprocessing.get_context("spawn")
        try:
            with generic_environment(compiler.generic), \
                    ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                if not compiler.plan:     # the pool's processes: this machine, one node type
                    node = pool.submit(node_type).result()
                    compiler.compile({"a worker process": node}, lambda _: pool.submit(
                        compile_member, study_file, compiler.member).result())
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


def _dask(study_file: str, units: list[Unit], on_done: Done, compiler: Compiler,
          workers: int | None, scheduler: str | None, processes: bool) -> str:
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
        local = {"host": "127.0.0.1"} if processes else {}     # threads: in-process comms
        if processes and compiler.generic:
            local["env"] = dict(GENERIC_ENV)        # a worker its nanny restarts gets it too
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=None, **local)
        client = Client(cluster)
        where = f"dask: a LocalCluster of {workers} {'processes' if processes else 'threads'} " \
                "on loopback"
    try:
        nodes = {f"worker {w}": n for w, n in client.run(node_type).items()}
        compiler.compile(nodes, lambda worker: client.submit(
            compile_member, study_file, compiler.member, workers=[worker.split(" ", 1)[1]],
            allow_other_workers=False, pure=False).result())
        futures = {client.submit(run_unit, study_file, u, pure=False, retries=RESTARTS): u
                   for u in units}
        for future in dask_completed(futures):
            on_done(futures[future], future.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return where + f" ({len(nodes)} workers, blocksim {__version__})"
