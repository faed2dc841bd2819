"""Tuning (`optimize:` in a study file): minimise one metric column over chosen parameters within
bounds, subject to limits on other metric columns, by SciPy's differential evolution drawing its
candidates in whole generations, so that each generation is one batch run.

    optimize:
      minimize: rms_error[0]                 # a metric column (docs/studies.md, the rows)
      parameters:                            # the parameters tuned, each within [low, high]
        pid.Kp[0]: [100, 800]                # in the parameter's own units
        pid.Kd[0]: [10, 80]
      subject_to:                            # limits on other metric columns (optional)
        peak_torque[0]: {max: 60}            # N m here: the column's own units
      popsize: 8                             # candidates per generation: popsize x parameters
      generations: 10                        # generations after the first (SciPy's maxiter)

Every candidate is a member of the study (a row of the summary, numbered in the order it was
drawn, one part per generation, so `--resume` continues a search from its stored generations). A candidate that breaks a limit, or whose run fails, scores
`PENALTY` plus how far it is outside its limits, so the search moves back inside. The answer is
the feasible candidate with the least metric, written as `tuned.yaml`: a `variants:` entry the
diagram can take as it is, and the same values as `--set` options.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import SourceLoc
from ..models.input_values import integer, mapping, real, text
from ..reading.located_yaml import loc_of, where_of
from .factors import Factor, read_factor

PENALTY = 1.0e30
"""The score of a candidate outside a limit or without a value (plus its distance outside)."""

KEYS = ("minimize", "parameters", "subject_to", "popsize", "generations")


@dataclass(frozen=True)
class Tuning:
    """A checked optimize: section: the column minimised, the limits {column: (min, max)} (None:
    no bound), SciPy's popsize and maxiter, and where each key is written."""

    minimize: str
    limits: dict[str, tuple[float | None, float | None]]
    popsize: int = 8
    generations: int = 10
    where: dict[str, SourceLoc] = field(default_factory=dict)


def read_optimize(body, at: SourceLoc | None, error, unknown_key) -> tuple[Tuning, tuple[Factor, ...]]:
    """The optimize: section and the factors it tunes (uniform within its bounds, the forms a
    study reads: study/factors.py)."""
    body = mapping(body, at, "optimize", error)
    for key in body:
        if key not in KEYS:
            raise error(unknown_key(key, KEYS, "optimize"), where=loc_of(body, key, at))
    where = {k: loc_of(body, k, at) for k in body}
    for key in ("minimize", "parameters"):
        if key not in body:
            raise error(f"optimize needs '{key}'", where=where_of(body, at))
    minimize = text(body["minimize"], where["minimize"], "optimize.minimize", error)
    params = mapping(body["parameters"], where["parameters"], "optimize.parameters", error)
    if not params:
        raise error("optimize.parameters is empty: name at least one parameter and its bounds",
                    where=where["parameters"])
    factors = tuple(read_factor(path, {"uniform": bounds}, loc_of(params, path, where["parameters"]),
                                error) for path, bounds in params.items())
    limits = {}
    for col, spec in mapping(body.get("subject_to") or {}, where.get("subject_to"),
                             "optimize.subject_to", error).items():
        there = loc_of(body["subject_to"], col, where["subject_to"])
        spec = mapping(spec, there, f"optimize.subject_to.{col}", error)
        for key in spec:
            if key not in ("min", "max"):
                raise error(unknown_key(key, ("min", "max"), f"optimize.subject_to.{col}"),
                            where=loc_of(spec, key, there))
        if not spec:
            raise error(f"optimize.subject_to.{col} needs min or max", where=there)
        limits[str(col)] = tuple(None if spec.get(k) is None else
                                 real(spec[k], loc_of(spec, k, there),
                                      f"optimize.subject_to.{col}.{k}", error)
                                 for k in ("min", "max"))
    popsize = integer(body.get("popsize", 8), where.get("popsize"), "optimize.popsize", error,
                      minimum=1)
    if popsize * len(factors) < 5:
        raise error(f"optimize.popsize: {popsize} x {len(factors)} parameter(s) is "
                    f"{popsize * len(factors)} candidates per generation; differential evolution "
                    "needs at least 5", where=where.get("popsize", at))
    generations = integer(body.get("generations", 10), where.get("generations"),
                          "optimize.generations", error, minimum=1)
    return Tuning(minimize, limits, popsize, generations, where), factors


def score(row: dict, tuning: Tuning) -> float:
    """A candidate's score: its metric, or PENALTY plus its distance outside the limits."""
    value = row.get(tuning.minimize, math.nan)
    outside = 0.0
    for col, (lo, hi) in tuning.limits.items():
        v = row.get(col, math.nan)
        if not math.isfinite(v):
            return PENALTY * 2
        outside += max(0.0, (lo - v) if lo is not None else 0.0) + \
            max(0.0, (v - hi) if hi is not None else 0.0)
    if row["status"] != "ok" or not math.isfinite(value):
        return PENALTY * 2
    return value if outside == 0.0 else PENALTY + outside


@dataclass
class Tuned:
    """The tuning's answer: the best feasible row (None: no candidate met the limits), the
    generations (batch runs) of the search, how many of them ran now (the others were read back
    from their parts by --resume), and the file written."""

    best: dict | None
    batches: int
    file: Path | None
    ran: int = 0


def tune(study, runner, on_done, stored=None) -> Tuned:
    """Run the optimisation of `study` (its optimize: section) on `runner` (a UnitRunner of this
    process); on_done(unit, rows) gets each generation's rows. stored(generation): the rows a
    previous run of the study wrote for that generation, or None (--resume): differential
    evolution is seeded by the study seed, so given the same scores it draws the same candidates,
    and a resumed search scores the generations on disk from their rows, runs only the others,
    and ends where an uninterrupted one ends."""
    from scipy.optimize import differential_evolution

    from .work import Unit
    tuning = study.optimize
    rows: list[dict] = []
    units: list[int] = []
    ran = 0

    def generation(x: np.ndarray) -> np.ndarray:
        nonlocal ran
        x = np.atleast_2d(x)
        values = {f.path: [float(v) for v in x[i]] for i, f in enumerate(study.factors)}
        n = x.shape[1]
        got = stored(len(units)) if stored is not None else None
        if got is not None:
            _check_stored(got, values, len(units), len(rows))
        else:
            got = runner.run_values(values, len(rows), n)
            on_done(Unit(len(units), len(rows), len(rows) + n), got)
            ran += 1
        units.append(len(rows))
        rows.extend(got)
        return np.array([score(r, tuning) for r in got])
    differential_evolution(generation, [f.args for f in study.factors], popsize=tuning.popsize,
                           maxiter=tuning.generations, seed=study.seed, vectorized=True,
                           updating="deferred", polish=False, tol=0.0)
    feasible = [r for r in rows if score(r, tuning) < PENALTY]
    best = min(feasible, key=lambda r: (r[tuning.minimize], r["member"])) if feasible else None
    return Tuned(best, len(units), None, ran)


def _check_stored(got: list[dict], values: dict[str, list], generation: int, first: int) -> None:
    """The stored rows of a generation are the candidates the search draws now, bit for bit."""
    n = len(next(iter(values.values())))
    same = [r["member"] for r in got] == list(range(first, first + n)) and all(
        repr(float(r[path])) == repr(v) for path, vs in values.items() for r, v in zip(got, vs))
    if not same:
        from ..errors import BlocksimError
        raise BlocksimError(f"--resume: generation {generation} on disk holds other candidates "
                            "than the search draws now (another SciPy version?); nothing more "
                            "was run (run the study again in a new folder)")


def tuned_text(study, runner, best: dict) -> str:
    """tuned.yaml: the best candidate's values as a variant of the diagram (whole parameters:
    an element factor gives its vector with the others as the diagram has them)."""
    batch = runner.batch({f.path: [best[f.path]] for f in study.factors}, 1)
    values = {key: v[0] for key, v in batch.items()}
    sets = " ".join(f"--set {k}={json.dumps(v)}" for k, v in {**study.overrides, **values}.items())
    flow = ", ".join(f"{k}: {json.dumps(v)}" for k, v in values.items())
    return (f"# {study.name}: tuned by {study.file} (member {best['member']}: "
            f"{study.optimize.minimize} = {best[study.optimize.minimize]!r})\n"
            f"# as options: python cli.py simulate {study.diagram} {sets}\n"
            f"variants:\n  tuned: {{{flow}}}\n")
