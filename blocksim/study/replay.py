"""Replaying one member of a study alone (`sweep STUDY --out DIR --replay MEMBER`): its values
and noise streams come from the study seed and its index alone, so its run by itself gives its
summary row again. What "again" means depends on the solver: bit for bit for a fixed-step study,
and for an adaptive one run with `simulation.step_control: per_member` (each member takes its
own steps); an adaptive batch that shares one step size gives a member alone other steps, so its
metrics agree to the solver's tolerance only. The replay says which holds and what it found."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..errors import BlocksimError
from .file import load_study
from .store import StudyFolder, manifest_of, read_study
from .units import UnitRunner
from .work import Unit, split

IGNORED = ("wall_s", "host")
"""Columns a replay does not compare (they say when and where a member ran)."""


@dataclass
class Replay:
    """A replayed member: its stored row and its new one, the columns that differ, the largest
    absolute difference of a metric column, and the promise that holds for this study
    ("bit for bit" or "to the tolerance")."""

    member: int
    stored: dict
    row: dict
    differ: list[str]
    largest: float
    promise: str

    @property
    def identical(self) -> bool:
        return not self.differ

    def text(self) -> str:
        if self.identical:
            return (f"member {self.member}: its row again, bit for bit (every factor, seed, "
                    f"status and metric column; this study promises {self.promise})")
        verdict = "as promised" if self.promise == "to the tolerance" else \
            "NOT as promised (bit for bit)"
        return (f"member {self.member}: {len(self.differ)} column(s) differ ({', '.join(self.differ[:6])}"
                f"{', ...' if len(self.differ) > 6 else ''}), the largest metric difference "
                f"{self.largest:.3g}; this study promises {self.promise}: {verdict}")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return repr(a) == repr(b)           # bit for bit, NaN equal to NaN
    return a == b


def replay(path, out, member: int) -> Replay:
    """Run member `member` of the study of file `path` alone and compare it with its row in the
    study folder `out`."""
    study = load_study(path)
    runner = UnitRunner(study)
    total = study.members
    if not 0 <= member < total and study.optimize is None:
        raise BlocksimError(f"--replay {member}: the study has members 0..{total - 1}")
    StudyFolder(out, manifest_of(study, runner.base.resolved_yaml(), total,
                                 len(split(total, study.unit_size))), resume=True)
    rows = read_study(out).rows
    stored = next((r for r in rows if r["member"] == member), None)
    if stored is None:
        raise BlocksimError(f"--replay {member}: {out} has no row of member {member} yet (its "
                            "unit has not run: --resume runs it)")
    if study.optimize is None:
        row = runner.run(Unit(-1, member, member + 1))[0]
    else:       # a tuning's candidates were drawn by the search: its stored values, run again
        row = runner.run_values({f.path: [stored[f.path]] for f in study.factors}, member, 1)[0]
    row = json.loads(json.dumps(row))
    keys = [k for k in dict.fromkeys([*stored, *row]) if k not in IGNORED]
    differ = [k for k in keys if not _same(stored.get(k, math.nan), row.get(k, math.nan))]
    largest = max((abs(row[k] - stored[k]) for k in differ
                   if isinstance(row.get(k), float) and isinstance(stored.get(k), float)
                   and "[" in k), default=0.0)
    settings = runner.diagram.settings
    exact = not settings.adaptive or settings.step_control == "per_member"
    return Replay(member, stored, row, differ, largest,
                  "bit for bit" if exact else "to the tolerance")
