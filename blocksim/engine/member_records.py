"""One member's view of a part's parameter records: what lets a compiled loop run the members of
a per-member batch one after another on the rows of one Simulation (engine/adaptive_members.py),
each member seeing the record it would have alone.

A record (Block.record) is a tuple, often a namedtuple, of arrays and numbers. Which of its arrays
carry one row per member is the block's own business; it is found here by comparison: the record
of a part of M >= 2 members against the records of its first two members alone. An array is
  - per member when it is (M, ...) in the part and (1, ...) alone, its rows those of the members
    alone: member m's view is rows m:m+1;
  - shared when it is the same array (shape and numbers) in all three: every member reads it whole;
  - scratch sized by the members when it is 1-D, longer in the part, and its first numbers are
    those of each member alone (a robot's Data workspace): member m's view is that prefix;
and a number is
  - shared when it is the same in all three;
  - the index of the first row when it is an integer the same in the part and its first member
    alone and one more in its second (a noise block's index of its first member in the whole
    batch, which keys its streams): member m's view is that index + m.
Anything else has no member view, and the batch runs each member as a Simulation of its own.
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

MEMBER, SHARED, PREFIX, FIRST_ROW = "member", "shared", "prefix", "first_row"


def record_layout(part: Any, first: Any, second: Any, members: int):
    """The layout of record `part` (of `members` >= 2 members) given the records of its first and
    second members alone: a leaf is (MEMBER,), (SHARED,), (PREFIX, length) or (FIRST_ROW,); a
    tuple is ("tuple", its namedtuple class or None, [its items' layouts]). None when some item
    has no member view (see the module's docstring)."""
    if isinstance(part, tuple):
        if not (type(first) is type(part) is type(second)) or \
                not len(first) == len(part) == len(second):
            return None
        cls = type(part)
        if cls is not tuple and (not hasattr(cls, "_fields") or _importable(cls) is None):
            return None
        items = [record_layout(a, b, c, members) for a, b, c in zip(part, first, second)]
        return None if any(item is None for item in items) else \
            ("tuple", None if cls is tuple else cls, items)
    if isinstance(part, np.ndarray):
        if not (isinstance(first, np.ndarray) and isinstance(second, np.ndarray)) or \
                not part.dtype == first.dtype == second.dtype or not part.flags.c_contiguous:
            return None
        if first.shape == second.shape == part.shape:
            same = np.array_equal(part, first, equal_nan=part.dtype.kind == "f") and \
                np.array_equal(part, second, equal_nan=part.dtype.kind == "f")
            return (SHARED,) if same else None
        if part.ndim >= 1 and part.shape == (members,) + first.shape[1:] and \
                first.shape[:1] == (1,) and first.shape == second.shape:
            kind = part.dtype.kind == "f"
            same = np.array_equal(part[0:1], first, equal_nan=kind) and \
                np.array_equal(part[1:2], second, equal_nan=kind)
            return (MEMBER,) if same else None
        if part.ndim == first.ndim == second.ndim == 1 and first.shape == second.shape and \
                part.shape[0] > first.shape[0]:
            n = first.shape[0]
            kind = part.dtype.kind == "f"
            same = np.array_equal(part[:n], first, equal_nan=kind) and \
                np.array_equal(part[:n], second, equal_nan=kind)
            return (PREFIX, n) if same else None
        return None
    if isinstance(part, (bool, int, float, np.bool_, np.integer, np.floating)):
        if not type(first) is type(part) is type(second):
            return None
        if part == first == second:
            return (SHARED,)
        index = isinstance(part, (int, np.integer)) and not isinstance(part, bool)
        return (FIRST_ROW,) if index and part == first and second == first + 1 else None
    return None


def member_view(record: Any, layout, m: int):
    """Member m's view of `record` (Python objects: views of its arrays), after `layout`."""
    kind = layout[0]
    if kind == "tuple":
        items = [member_view(r, sub, m) for r, sub in zip(record, layout[2])]
        return tuple(items) if layout[1] is None else layout[1](*items)
    if kind == MEMBER:
        return record[m:m + 1]
    if kind == PREFIX:
        return record[:layout[1]]
    if kind == FIRST_ROW:
        return record + m
    return record


def same_for_members(record: Any, layout) -> bool:
    """Whether every member's view of `record` (after `layout`) holds the numbers of the first
    member's: its per-member arrays' rows are all equal (scratch and shared items are the same
    for all; a first row's index is not)."""
    kind = layout[0]
    if kind == "tuple":
        return all(same_for_members(r, sub) for r, sub in zip(record, layout[2]))
    if kind == MEMBER:
        return rows_equal(record)
    return kind != FIRST_ROW


def rows_equal(a: np.ndarray) -> bool:
    """Whether every row of `a` holds the bits of its first (NaN equal to itself, -0.0 not to
    0.0: what a kernel cannot tell apart)."""
    return a[1:].tobytes() == np.repeat(a[:1], len(a) - 1, axis=0).tobytes()


def view_source(layout, expr: str, m: str, classes: dict) -> str:
    """The numba expression of member `m`'s view of the record at `expr`, after `layout`;
    classes: {namedtuple class: its alias in the module}, filled with the classes it names."""
    kind = layout[0]
    if kind == "tuple":
        items = [view_source(sub, f"{expr}[{k}]", m, classes) for k, sub in enumerate(layout[2])]
        if layout[1] is None:
            return "(" + "".join(f"{item}, " for item in items) + ")"
        alias = classes.setdefault(layout[1], f"_R{len(classes)}")
        return f"{alias}({', '.join(items)})"
    if kind == MEMBER:
        return f"{expr}[{m}:{m} + 1]"
    if kind == PREFIX:
        return f"{expr}[:{layout[1]}]"
    if kind == FIRST_ROW:
        return f"({expr} + {m})"
    return expr


def class_import(cls, alias: str) -> str:
    """The import line of a record's namedtuple class under view_source's alias."""
    module, name = _importable(cls)
    return f"from {module} import {name} as {alias}"


def _importable(cls):
    """(module, name) of a class importable under its own name, else None."""
    try:
        module = importlib.import_module(cls.__module__)
    except ImportError:
        return None
    name = cls.__qualname__
    return (cls.__module__, name) if getattr(module, name, None) is cls else None


__all__ = ["record_layout", "member_view", "same_for_members", "rows_equal", "view_source", "class_import"]
