"""A study from its file to its summary: the file checked, the factors checked against the
diagram, the folder made (or resumed), the diagram compiled once by the driver under a file lock
in the compiled-code cache (its first unit, or for processes and Dask one member of it), into the
cache the workers share, before any unit is sent, the units on the executor, rows written as units finish, and
`summary.parquet` (and its CSV export) in member order at the end (and `sensitivity.json`, the Sobol indices, for a
saltelli study)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import time
from dataclasses import dataclass
from pathlib import Path

from ..version import __version__
from .executors import Compiler, run_units
from .file import load_study
from .nodes import compiled_text, node_type, type_name
from .store import StudyFolder, manifest_of, write_atomic
from .units import UnitRunner
from .work import Unit, split


@dataclass
class StudyRun:
    """What a study run did: its folder and summary file, every row in member order, the
    metric columns, how many units it ran now (of all), where they ran, and its wall time (s)."""

    folder: Path
    summary: Path
    rows: list[dict]
    metrics: tuple[str, ...]
    ran: int
    units: int
    where: str
    wall_s: float
    sensitivity: dict | None = None
    tuned: object = None          # study/tuning.py's Tuned, for a study with optimize:
    compiled: str = ""            # how the diagram was compiled, per node type (study/nodes.py)


@contextlib.contextmanager
def compile_lock():
    """Held while the driver compiles the diagram: two studies started at once on one cache
    compile it once (the second waits, then loads it)."""
    from ..engine.numba_backend import cache_dir
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "study-compile.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_study(path, out, executor: str | None = None, workers: int | None = None,
              scheduler: str | None = None, resume: bool = False, progress: bool = True,
              processes: bool = True, figures: bool = False, cpu: str | None = None) -> StudyRun:
    """Run the study of file `path` into folder `out` (docs/studies.md). executor, workers,
    scheduler: replace the file's; resume: finish the study in `out`, running only its missing
    units; processes: with a Dask LocalCluster, worker processes (False: threads, as in tests);
    figures: also draw DIR/figures (study/figures.py); cpu: "native" or "generic", replaces the
    file's (study/nodes.py)."""
    started = time.perf_counter()
    study = load_study(path)
    executor = executor or ("dask" if scheduler else study.executor)
    cpu = cpu or study.cpu
    runner = UnitRunner(study, threads=None)
    runner.check()
    total = study.members
    units = split(total, study.unit_size)
    folder = StudyFolder(out, manifest_of(study, runner.base.resolved_yaml(), total,
                                          len(units)), resume)
    done = folder.done()
    pending = [u for u in units if u.index not in done]
    if study.optimize is not None:       # candidates: popsize x parameters per generation
        t = study.optimize
        per = t.popsize * len(study.factors)
        total, initial = (t.generations + 1) * per, len(done) * per
    else:
        initial = total - sum(u.size for u in pending)
    from tqdm import tqdm
    bar = tqdm(total=total, initial=initial, unit="member", desc=study.name,
               disable=None if progress else True, leave=False)

    def on_done(unit, rows):
        folder.write_part(unit.index, rows)
        bar.update(unit.size)
    where = "nothing to run: every unit is done"
    tuned, compiled = None, []
    try:
        if study.optimize is not None:
            from .tuning import tune
            stored = (lambda g: folder.part_rows(g) if g in done else None) if resume else None
            with compile_lock():
                tuned = tune(study, runner, on_done, stored)
            compiled = [{"type": type_name(node_type()), "on": "the driver", "workers": 1}]
            where = f"threads: {tuned.batches} generations, one batch run each" + \
                (f" ({tuned.batches - tuned.ran} read back from their parts)"
                 if tuned.ran < tuned.batches else "")
        elif pending:
            first = pending[0].start
            compiler = Compiler(lambda: runner.run(Unit(-1, first, first + 1)), compile_lock,
                                first, cpu == "generic")
            where = run_units(executor, str(Path(path).resolve()), pending, runner, on_done,
                              compiler, workers or study.workers, scheduler or study.scheduler,
                              processes)
            compiled = compiler.plan
    finally:
        bar.close()
    if tuned is not None or pending:
        folder.note_run({"executor": "threads" if tuned is not None else executor,
                         "where": where, "cpu": cpu, "compiled": compiled,
                         "units_run": tuned.ran if tuned is not None else len(pending),
                         "blocksim": __version__})
    rows = folder.rows()
    summary = folder.write_summary(rows)
    if tuned is not None and tuned.best is not None:
        from .tuning import tuned_text
        tuned.file = folder.path / "tuned.yaml"
        write_atomic(tuned.file, tuned_text(study, runner, tuned.best))
    indices = None
    if study.sampling == "saltelli":
        from .report import metric_columns
        from .sensitivity import sobol_indices
        indices = sobol_indices([f.path for f in study.factors], rows,
                                metric_columns(rows, runner.metrics), study.seed, study.file)
        write_atomic(folder.path / "sensitivity.json", json.dumps(indices, indent=2) + "\n")
    if figures:
        from .figures import study_figures
        study_figures(study, rows, runner.metrics, folder.path, indices)
    ran = tuned.ran if tuned is not None else len(pending)
    return StudyRun(folder.path, summary, rows, runner.metrics, ran,
                    tuned.batches if tuned is not None else len(units), where,
                    time.perf_counter() - started, indices, tuned,
                    compiled_text(compiled) if compiled else "")
