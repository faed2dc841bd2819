"""Reading a study file (`python cli.py sweep STUDY.yaml`): read as diagrams are (UTF-8, YAML 1.2
scalars, no duplicate keys, every key located), every key checked for its name, kind and range
before anything runs. A wrong one is a StudyFileError at its line: "study.yaml:7: factors:
'x.x0': uniform needs low < high, got [2.0, 1.0]".

The keys, their checks, units and meanings are in one table (`KEYS`), which docs/studies.md
describes; the factor forms are in study/factors.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..diagram.file import unknown_key
from ..errors import ParameterError, SourceLoc
from ..models.input_values import describe, integer, mapping, text
from ..reading.located_yaml import YamlMap, loc_of, read_yaml, to_plain, where_of
from .factors import Factor, read_factor
from .nodes import CPUS
from .sampling import member_count

FORMAT = 1
EXECUTORS = ("threads", "processes", "dask")
SAMPLINGS = ("random", "lhs", "sobol", "saltelli")


class StudyFileError(ParameterError):
    """A study file that cannot be read, is malformed, or holds a key or value of the wrong kind;
    the message names the file, line and key."""


E = StudyFileError

KEYS = ("study", "name", "diagram", "variant", "set", "seed", "samples", "sampling", "unit_size",
        "executor", "workers", "scheduler", "cpu", "factors", "metrics", "optimize")
"""The top-level keys of a study file, in the order docs/studies.md describes them."""


@dataclass(frozen=True)
class Study:
    """A checked study: the diagram it runs (path, variant, overrides shared by every member),
    its factors, how distributions are sampled and how many draws, the seed every member's
    values and noise streams derive from, the members per work unit, the executor, the target
    workers compile for (cpu: native, each node type its own; generic: one for all), the metrics
    kept (None: every metric of the diagram), and where each key was written."""

    file: str
    diagram: Path
    factors: tuple[Factor, ...]
    name: str = ""
    variant: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    samples: int = 1
    sampling: str = "random"
    unit_size: int = 64
    executor: str = "threads"
    workers: int | None = None
    scheduler: str | None = None
    cpu: str = "native"
    metrics: tuple[str, ...] | None = None
    optimize: Any = None
    where: dict[str, SourceLoc] = field(default_factory=dict)

    def loc(self, key: str) -> SourceLoc:
        return self.where.get(key, SourceLoc(self.file))

    @property
    def members(self) -> int:
        """How many members the study has (study/sampling.py)."""
        return member_count(self.factors, self.samples, self.sampling)


def load_study(path) -> Study:
    """The study of file `path`, every key and value checked (see the module docstring)."""
    file = str(path)
    doc = read_yaml(path, "study file", E)
    top = where_of(doc, SourceLoc(file))
    if not isinstance(doc, dict):
        raise E(f"a study file is a mapping (study: 1, diagram: ..., factors: ...), got "
                f"{describe(doc)}", where=top)
    for key in doc:
        if key not in KEYS:
            raise E(unknown_key(key, KEYS, "the study file"), where=loc_of(doc, key, top))
    where = {key: loc_of(doc, key, top) for key in doc}
    if doc.get("study", FORMAT) != FORMAT:
        raise E(f"study: {doc['study']!r} is not a study format this version reads (study: "
                f"{FORMAT})", where=where["study"])
    if "diagram" not in doc:
        raise E("a study file needs 'diagram' (the diagram file its members run)", where=top)
    diagram = Path(text(doc["diagram"], where["diagram"], "diagram", E))
    if not diagram.is_absolute():
        diagram = Path(file).parent / diagram
    if not diagram.is_file():
        raise E(f"diagram: no such file {diagram}", where=where["diagram"])
    overrides = {}
    if doc.get("set") is not None:
        body = mapping(doc["set"], where["set"], "set", E)
        overrides = {str(k): to_plain(v) for k, v in body.items()}
    tuning = None
    if "optimize" in doc:
        if "factors" in doc:
            raise E("a study with optimize: tunes optimize.parameters; it has no factors: "
                    "(run the sweep as a study of its own)", where=where["factors"])
        from .tuning import read_optimize
        tuning, factors = read_optimize(doc["optimize"], where["optimize"], E, unknown_key)
    else:
        factors_doc = mapping(doc.get("factors"), where.get("factors", top), "factors", E) \
            if "factors" in doc else None
        if not factors_doc:
            raise E("a study file needs 'factors' (at least one parameter path and its values) "
                    "or 'optimize'", where=where.get("factors", top))
        factors = tuple(read_factor(name, spec, loc_of(factors_doc, name, where["factors"]), E)
                        for name, spec in factors_doc.items())
    study = dict(
        file=file, diagram=diagram, factors=factors, overrides=overrides, where=where,
        name=text(doc["name"], where["name"], "name", E) if "name" in doc else diagram.stem,
        variant=text(doc["variant"], where["variant"], "variant", E)
        if doc.get("variant") is not None else None,
        seed=integer(doc.get("seed", 0), where.get("seed"), "seed", E, minimum=0),
        samples=integer(doc.get("samples", 1), where.get("samples"), "samples", E, minimum=1),
        sampling=text(doc.get("sampling", "random"), where.get("sampling"), "sampling", E,
                      choices=SAMPLINGS),
        unit_size=integer(doc.get("unit_size", 64), where.get("unit_size"), "unit_size", E,
                          minimum=1),
        executor=text(doc.get("executor", "threads"), where.get("executor"), "executor", E,
                      choices=EXECUTORS),
        workers=None if doc.get("workers") is None else
        integer(doc["workers"], where["workers"], "workers", E, minimum=1),
        scheduler=None if doc.get("scheduler") is None else
        text(doc["scheduler"], where["scheduler"], "scheduler", E),
        cpu=text(doc.get("cpu", "native"), where.get("cpu"), "cpu", E, choices=CPUS),
        metrics=_metrics(doc, where), optimize=tuning)
    checked = Study(**study)
    drawn = [f for f in factors if f.drawn]
    if checked.sampling in ("sobol", "saltelli") and drawn \
            and checked.samples & (checked.samples - 1):
        raise E(f"sampling: {checked.sampling} needs samples a power of 2 (its balance holds for "
                f"2^k points), got {checked.samples}", where=checked.loc("samples"))
    if checked.sampling == "saltelli" and len(drawn) != len(factors):
        grid = next(f for f in factors if not f.drawn)
        raise E(f"factors: '{grid.path}': sampling: saltelli (Sobol indices) needs every factor "
                "drawn (uniform, normal, loguniform), not a list of values", where=grid.where)
    if checked.samples > 1 and not drawn:
        raise E(f"samples: {checked.samples} draws, but no factor is a distribution (uniform, "
                "normal, loguniform): every draw would be the same member", where=checked.loc("samples"))
    return checked


def _metrics(doc: YamlMap, where: dict) -> tuple[str, ...] | None:
    if doc.get("metrics") is None:
        return None
    items = doc["metrics"]
    if not isinstance(items, list) or not items:
        raise E(f"metrics must be a list of the diagram's metric names, got {describe(items)}",
                where=where["metrics"])
    return tuple(text(v, loc_of(items, i, where["metrics"]), f"metrics[{i}]", E)
                 for i, v in enumerate(items))
