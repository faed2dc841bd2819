"""Work units: members start..stop-1 of a study run as one batch of one compiled diagram, and the
summary rows they give (one per member).

A `UnitRunner` is made once per process (the driver's, each worker's): it loads the diagram with
the study's overrides and its noise blocks' seeds derived from the study seed, and keeps one
Simulator per batch size, whose values each unit sets anew (fast restart: nothing compiles again).
Members are numbered by their index in the whole study (Simulator's `first_member`), so a
member's noise streams are those of its own run alone. A unit whose batch fails (a member
diverges, a solver gives up) runs again member by member: each failing member becomes a row with
its status and message, the others rows with their metrics.
"""
from __future__ import annotations

import json
import socket
import time
from typing import Any

import numpy as np

from ..diagram.diagram import load
from ..engine.metrics import metric_names
from ..engine.simulate import Simulator
from ..errors import BlocksimError, NonFiniteStateError, SolverError
from .file import Study, StudyFileError
from .sampling import member_seed, member_values, noise_seed
from .work import Unit

FIXED_COLUMNS = ("member",)
RUN_COLUMNS = ("seed", "status", "message", "wall_s", "host")
"""The summary's columns besides the factors' (after them) and the metrics' (last)."""


def noise_overrides(diagram, seed: int) -> dict[str, int]:
    """{"block.seed": seed} for the diagram's blocks with an integer seed parameter (its noise
    sources and sensors), derived from the study seed and the seed the file gives them."""
    cd = diagram.compile()
    out = {}
    for name, blk in cd.blocks.items():
        decl = blk.all_params().get("seed")
        if decl is not None and decl.kind == "int":
            out[f"{name}.seed"] = noise_seed(seed, int(cd.values[name].seed))
    return out


class UnitRunner:
    """Runs the units of one study in this process (see the module docstring). threads: the
    threads of each batch run (None: the diagram's simulation.threads)."""

    def __init__(self, study: Study, threads: int | None = None):
        self.study = study
        self.threads = threads
        self.total = study.members
        self.base = base = load(study.diagram, variant=study.variant, set=study.overrides)
        seeds = noise_overrides(base, study.seed)
        self.diagram = load(study.diagram, variant=study.variant,
                                     set={**study.overrides, **seeds}) if seeds else base
        self.metrics = self._metrics()
        self._bases = self._element_bases()
        self._sims: dict[int, Any] = {}
        self.host = socket.gethostname()

    def _metrics(self) -> tuple[str, ...]:
        names = metric_names(self.diagram.spec)
        if not names:
            raise StudyFileError(f"the diagram {self.study.diagram} declares no metrics: a study "
                                 "keeps its metrics per member (add a metrics: section)",
                                 where=self.study.loc("diagram"))
        if self.study.metrics is None:
            return tuple(names)
        for k, name in enumerate(self.study.metrics):
            if name not in names:
                from ..errors import did_you_mean
                raise StudyFileError(f"metrics[{k}]: the diagram has no metric '{name}'"
                                     f"{did_you_mean(name, names)}; its metrics: {', '.join(names)}",
                                     where=self.study.loc("metrics"))
        return self.study.metrics

    def _element_bases(self) -> dict[str, np.ndarray]:
        """The diagram's value of each parameter a factor sets one element of."""
        spec = self.diagram.spec
        cd = None
        bases = {}
        for f in self.study.factors:
            if f.element is None or f.key in bases:
                continue
            if f.key.startswith("parameters."):
                value = spec.parameters.get(f.key.partition(".")[2])
            else:
                block, _, param = f.key.partition(".")
                value = spec.blocks[block].params.get(param) if block in spec.blocks else None
                if value is None and block in spec.blocks:
                    cd = cd or self.diagram.compile()
                    value = getattr(cd.values[block], param, None)
                    value = None if value is None else np.asarray(value)[0]
            arr = None if value is None else np.atleast_1d(np.asarray(value, dtype=float))
            if arr is None or arr.ndim != 1 or not f.element < arr.size:
                size = "no value" if arr is None else f"{arr.size} element(s)"
                raise StudyFileError(f"factors: '{f.path}': {f.key} has {size} in the diagram, "
                                     f"so no element [{f.element}]", where=f.where)
            bases[f.key] = arr
        return bases

    def batch(self, values: dict[str, list], n: int) -> dict[str, list]:
        """The Simulator's batch {dotted key: [value per member]} of the factors' values."""
        out: dict[str, list] = {}
        for f in self.study.factors:
            if f.element is None:
                out[f.key] = [list(v) if isinstance(v, tuple) else v for v in values[f.path]]
        for key, base in self._bases.items():
            members = [base.copy() for _ in range(n)]
            for f in self.study.factors:
                if f.key == key:
                    for arr, v in zip(members, values[f.path]):
                        arr[f.element] = v
            out[key] = [arr.tolist() for arr in members]
        return out

    def check(self) -> None:
        """Each factor's key fits the diagram (member 0's value compiled): a wrong path is an
        error at the factor's line, before any unit runs."""
        values = member_values(self.study.factors, self.study.samples, self.study.sampling,
                               self.study.seed, range(1))
        batch = self.batch(values, 1)
        for f in self.study.factors:
            try:
                self.diagram.compile({f.key: batch[f.key]})
            except BlocksimError as err:
                raise StudyFileError(f"factors: '{f.path}': {err}", where=f.where) from None

    def _run(self, batch: dict[str, list], first: int, n: int):
        sim = self._sims.get(n)
        if sim is None:
            sim = Simulator(self.diagram, batch=batch, threads=self.threads,
                                     first_member=first)
            self._sims[n] = sim
        else:
            sim.set_parameters(batch=batch, first_member=first)
        return sim.run()

    def run(self, unit: Unit) -> list[dict]:
        """The summary rows of `unit`'s members, in member order."""
        study = self.study
        values = member_values(study.factors, study.samples, study.sampling, study.seed,
                               range(unit.start, unit.stop))
        return self.run_values(values, unit.start, unit.size)

    def run_values(self, values: dict[str, list], first: int, n: int) -> list[dict]:
        """The rows of members first..first+n-1 given their factors' values ({path: [value per
        member]}): one batch run, or member by member when the batch fails."""
        started = time.perf_counter()
        try:
            result = self._run(self.batch(values, n), first, n)
            metrics = {name: result.metrics[name] for name in self.metrics}
        except BlocksimError as err:
            if n > 1:
                self._sims.pop(n, None)
                return [row for i in range(n) for row in
                        self.run_values({k: v[i:i + 1] for k, v in values.items()}, first + i, 1)]
            return [self._row(first, values, 0, _status(err), str(err),
                              time.perf_counter() - started, None)]
        wall = (time.perf_counter() - started) / n
        return [self._row(first + i, values, i, "ok", "", wall, metrics) for i in range(n)]

    def _row(self, member: int, values, i: int, status: str, message: str, wall: float,
             metrics: dict | None) -> dict:
        row: dict[str, Any] = {"member": member}
        for f in self.study.factors:
            v = values[f.path][i]
            row[f.path] = json.dumps(list(v)) if isinstance(v, tuple) else float(v)
        row.update(seed=member_seed(self.study.seed, member), status=status, message=message,
                   wall_s=wall, host=self.host)
        if metrics is not None:
            for name in self.metrics:
                for j, x in enumerate(np.ravel(np.asarray(metrics[name][i], dtype=float))):
                    row[f"{name}[{j}]"] = float(x)
        return row


NON_FINITE = ("non-finite", "not finite")
"""Words of a solver's reason (blocksim/solvers: Solver._fail) when it stopped because the state
or its derivative became NaN or Inf: such a member diverged, whichever layer noticed it."""


def _status(err: BlocksimError) -> str:
    """A failed member's status: diverged (a state or its derivative became NaN or Inf, noticed
    by the scheduler's check or by the solver's step) or failed (a solver gave up on the
    tolerance, a value its block refuses)."""
    if isinstance(err, NonFiniteStateError):
        return "diverged"
    if isinstance(err, SolverError) and any(w in str(err) for w in NON_FINITE):
        return "diverged"
    return "failed"
