"""The limits on what one input may ask of blocksim: every bound on a diagram's size, its
expressions and its run, with its value, unit, why it exists and how to raise it, in one table.

A limit is there so that a mistaken or hostile diagram is refused in seconds with a message
instead of hanging or exhausting memory; each default is far above what a real diagram needs.
A user who means it raises a limit with its environment variable (a whole number, `_` and
exponents allowed: `BLOCKSIM_MAX_BLOCKS=500_000`, `BLOCKSIM_MAX_STEPS=1e10`), read every time
the limit is checked. Every message says the number found, the limit and the variable.

The table sits in the lowest layer (reading/ imports only errors), so the diagram and robot
loaders, the expression language, the compiler and the engine all read the same numbers.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blocksim.errors import BlocksimError, SourceLoc


class LimitError(BlocksimError):
    """An input would need more than a limit of LIMITS allows (blocks, expression size, array
    elements, steps, log samples, memory). `limit` is the LIMITS key; the message says the number
    found, the limit and the environment variable that raises it."""

    def __init__(self, message: str, *, limit: str | None = None, where: SourceLoc | None = None,
                 block: str | None = None, port: str | None = None):
        self.limit = limit
        super().__init__(message, where=where, block=block, port=port)


@dataclass(frozen=True)
class Limit:
    """One limit: its default (in `unit`), why it exists, and the variable that raises it."""

    name: str
    default: int
    unit: str
    why: str
    variable: str = field(init=False)
    """The environment variable that sets this limit: BLOCKSIM_MAX_<NAME>."""

    def __post_init__(self):
        object.__setattr__(self, "variable", f"BLOCKSIM_MAX_{self.name.upper()}")


LIMITS: dict[str, Limit] = {limit.name: limit for limit in (
    Limit("file_bytes", 64_000_000, "bytes",
          "the size of one input file (diagram, subsystem, robot file, identification config), "
          "checked before it is read (a diagram of tens of thousands of blocks is a few megabytes)"),
    Limit("yaml_nodes", 500_000, "mappings and lists",
          "what one file may expand to: aliases are copied, so a few lines of anchors can "
          "expand exponentially (an alias bomb)"),
    Limit("yaml_depth", 200, "levels",
          "mappings and lists inside each other in one file (a diagram needs about ten): the "
          "YAML parser recurses once per level and, some ten thousand levels down, overflows "
          "the stack"),
    Limit("blocks", 100_000, "blocks",
          "blocks of the flattened diagram, counted before subsystems are expanded: subsystem "
          "files that include each other several times expand exponentially"),
    Limit("subsystem_depth", 50, "levels",
          "subsystems inside subsystems (a file that includes the next, and so on): each level "
          "is a step of a recursive expansion"),
    Limit("expression_chars", 10_000, "characters",
          "the text of one ${...} expression or Function block expression (a formula, not a "
          "program)"),
    Limit("expression_depth", 200, "levels",
          "the nesting of one expression (brackets, calls, operators, each level one): deeper "
          "expressions exhaust the parser's and the evaluator's recursion"),
    Limit("array_elements", 10_000_000, "elements",
          "one array that a ${...} expression builds (zeros, ones, eye, linspace, broadcasting, "
          "@, concat), checked before it is allocated (8 bytes each)"),
    Limit("program_size", 1_000_000, "instructions",
          "the stack program a Function block compiles its expression to (about the expression's "
          "size times its output width), run at every step; estimated before it is built"),
    Limit("steps", 1_000_000_000, "major steps",
          "a run's steps, estimated before it starts: span / fixed step, span / max_step, or "
          "span / the fastest discrete period (each a hit)"),
    Limit("log_samples", 100_000_000, "samples",
          "the log's time grid (span / log interval + 1), estimated before it is allocated"),
    Limit("path_nodes", 100_000, "nodes",
          "the nodes of one CartesianTrajectory (duration / node_step + 1), each an inverse "
          "kinematics solution worked out when the diagram is loaded (about 0.2 ms each)"),
)}
"""Every limit, by name (docs/semantics.md, "Bad input", lists them)."""

RUN_MEMORY_VARIABLE = "BLOCKSIM_MAX_RUN_MEMORY"
"""Bytes a run's arrays may take (default: the memory the machine has available now)."""


def _number(text: str, variable: str) -> int:
    """The whole number an environment variable holds ("500_000", "1e9"); else a LimitError."""
    try:
        value = float(text.replace("_", "").strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1 and value == int(value)):
        raise LimitError(f"{variable} must be a whole number >= 1 (such as 500_000 or 1e9), got "
                         f"'{text}'", where=SourceLoc(f"environment {variable}"))
    return int(value)


def limit(name: str) -> int:
    """The value of limit `name` now: its environment variable when set, else its default."""
    entry = LIMITS[name]
    text = os.environ.get(entry.variable)
    return entry.default if text is None or not text.strip() else _number(text, entry.variable)


def count(value: int | float) -> str:
    """A count for a message: 1,234,567; a huge one as 1.2e+303."""
    return f"{value:,}" if value < 1e15 else f"{float(value):.3g}"


def exceeded(name: str, found: int | float, what: str, detail: str = "") -> str:
    """The message for `what` ("the diagram flattens to") finding `found` over limit `name`,
    with `detail` (" (block 'arm' brings 90,000 of them)") after the limit."""
    entry = LIMITS[name]
    return (f"{what} {count(found)} {entry.unit}, more than the limit of {count(limit(name))}"
            f"{detail}; if you mean it, raise the limit with the environment variable "
            f"{entry.variable}")


def check(name: str, found: int | float, what: str, detail: str = "", *,
          where: SourceLoc | None = None, block: str | None = None) -> None:
    """Raise a LimitError when `found` exceeds limit `name` (message: see exceeded)."""
    if found > limit(name):
        raise LimitError(exceeded(name, found, what, detail), limit=name, where=where, block=block)


def shorten(text: str, width: int = 60) -> str:
    """`text` for a message: as it is when short, else its start and its length."""
    text = str(text)
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text):,} characters)"


def shown(value: Any, width: int = 60) -> str:
    """A value a user gave, for a message: on one line (an array as a list), its start and its
    length when longer than `width` characters, so a mistaken megabyte of text is not echoed."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, separator=", ", threshold=50, max_line_width=10**9)
        text = " ".join(text.split())
    else:
        text = repr(value)
        if "\n" in text:               # numpy's repr of an array inside a list or a mapping
            text = " ".join(text.split())
    return shorten(text, width)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now (Linux: MemAvailable of /proc/meminfo,
    else the available physical pages), None where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def memory_limit() -> tuple[int | None, str]:
    """(bytes a run may take, where that number comes from): BLOCKSIM_MAX_RUN_MEMORY when set,
    else the memory available now (None: unknown, no check)."""
    text = os.environ.get(RUN_MEMORY_VARIABLE)
    if text is not None and text.strip():
        return _number(text, RUN_MEMORY_VARIABLE), RUN_MEMORY_VARIABLE
    return available_memory(), "available on this machine now"


def size_text(nbytes: int | float) -> str:
    """Bytes for a message: 12.3 GB (decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} bytes"


__all__ = ["LIMITS", "Limit", "LimitError", "limit", "check", "exceeded", "count", "shorten", "shown",
           "available_memory", "memory_limit", "size_text", "RUN_MEMORY_VARIABLE"]
