"""Bounded tables of what a process remembers between calls (a diagram's switchable blocks, the
variants a process has run, the event arrays of runs without crossings): a table that reaches its
bound forgets everything and starts over, which needs no lock beside other threads."""
from __future__ import annotations


def kept(table: dict, key, make, bound: int = 64):
    """table[key], made by make() when missing; the table holds at most `bound` keys (past that
    all are forgotten). Two threads missing the same key at once may both call make(); both get
    the value the table kept first."""
    found = table.get(key)
    if found is None:
        if len(table) >= bound:
            table.clear()
        found = table.setdefault(key, make())
    return found


__all__ = ["kept"]
