"""A work unit of a study: members start..stop-1, run as one batch (study/units.py runs it)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    """Work unit `index`: members start..stop-1."""

    index: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def split(total: int, size: int) -> list[Unit]:
    """The units of a study of `total` members, `size` members each (the last one fewer)."""
    return [Unit(k, a, min(a + size, total)) for k, a in enumerate(range(0, total, size))]
