"""A study's folder (`python cli.py sweep STUDY.yaml --out DIR`) as the study page reads it: its
manifest, its rows through the study store's readers, its study file's factors when the file is
still there, and its Sobol indices when it has them. Nothing is written."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import BlocksimError

GRID_MAX_VALUES = 40
"""Without its study file, a factor column counts as a grid factor (heat maps) when it has at
most this many distinct values, each taken by more than one member."""


@dataclass
class StudyData:
    """What a study page shows. folder: the study folder as the user named it; file: the study
    file as the manifest records it (the replay commands name both); rows: one per member, in
    member order; factors: the factor columns; grid: those a heat map may span (grid factors with
    scalar values, in the study file's order); metrics: the metric columns (`name[j]`);
    sensitivity: {column: {factor: {S1, S1_conf, ST, ST_conf}}} of a saltelli study, else None;
    sampling: the study's sampling ("" when its file is gone)."""

    folder: Path
    name: str
    file: str
    rows: list[dict]
    factors: list[str]
    grid: list[str]
    metrics: list[str]
    sensitivity: dict | None
    sampling: str
    members: int


def is_study_folder(path) -> bool:
    """Whether `path` is a study's output folder (its manifest.json says `study:`)."""
    manifest = Path(path) / "manifest.json"
    if not manifest.is_file():
        return False
    try:
        return "study" in json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def read_study(folder) -> StudyData:
    """The study of `folder` (see StudyData); a folder without a study's manifest, or one that
    does not read, is an error naming it."""
    from ..study.store import read_study as read_stored
    stored = read_stored(folder)
    folder, manifest, rows = stored.folder, stored.manifest, stored.rows
    if not stored.complete:
        raise BlocksimError(f"{folder}: the study has no summary yet (it has not finished); "
                            "`python cli.py sweep STUDY --out DIR --resume` finishes it")
    if not rows:
        raise BlocksimError(f"{folder}: the study has no rows")
    first = list(rows[0])
    factors = first[1:first.index("seed")]
    from ..study.report import metric_columns
    metrics = [c for c in dict.fromkeys(c for r in rows for c in r) if "[" in c
               and c not in factors and c.endswith("]")]
    grid, sampling, kept = _study_file_facts(manifest.get("file", ""), factors, rows)
    if kept:
        metrics = metric_columns(rows, kept) or metrics
    sensitivity = None
    indices = folder / "sensitivity.json"
    if indices.is_file():
        try:
            sensitivity = json.loads(indices.read_text(encoding="utf-8"))
        except ValueError as err:
            raise BlocksimError(f"{indices}: does not read as JSON ({err})") from None
    return StudyData(folder=folder, name=str(manifest.get("name") or folder.name),
                     file=str(manifest.get("file", "STUDY.yaml")), rows=rows, factors=factors,
                     grid=grid, metrics=metrics, sensitivity=sensitivity or None,
                     sampling=sampling, members=int(manifest.get("members", len(rows))))


def _study_file_facts(file: str, factors: list[str], rows: list[dict]):
    """(grid factors, sampling, metric names) from the study file when it still loads; else the
    grid guessed from the columns (GRID_MAX_VALUES), sampling "" and the metrics unknown."""
    from ..study import StudyFileError, load_study
    try:
        study = load_study(file)
    except (StudyFileError, BlocksimError, OSError):
        study = None
    if study is not None and [f.path for f in study.factors] == factors:
        grid = [f.path for f in study.factors if not f.drawn and f.size > 1
                and not isinstance(f.args[0], tuple)]
        return grid, study.sampling, tuple(study.metrics or ())
    grid = []
    for name in factors:
        values = [r[name] for r in rows]
        if not all(isinstance(v, float) for v in values):
            continue
        distinct = set(values)
        if 2 <= len(distinct) <= GRID_MAX_VALUES and len(values) > len(distinct):
            grid.append(name)
    return grid, "", ()
