"""A per-member part's table of the outputs of t alone on the log grid: computed by the first
member to reach each log sample, read by the others.

The members of a part of a per-member batch (engine/adaptive_members.py) log on one grid, and a
block whose outputs are a function of t alone (OutputStep.time_only: a trajectory source, an
inverse-dynamics feedforward of it) gives every member the same numbers at a log time when its
record, and the signals it reads from outside such blocks (a constant), are the same for all of
them. A log sample between steps then copies those outputs from the table instead of computing
them again: on W1 (a cosine reference, its closed-form inverse dynamics) they were a fifth of a
member's loop, the reference's cosine and sine and the feedforward's four trigonometric functions
at each of the 2001 log samples (0.11 of 0.53 ms on one thread).

The table is an (n_log, 1 + width) array: column 0 is 1.0 once row k holds the outputs at log
time k, columns 1.. the tabled signals in the plan's order of calls, each (1, width) signal row
by row (loops.stash). A single run, a lockstep batch and a part whose members differ in what
these blocks read pass an empty table (no rows), and every member computes its own. The copied
numbers are those the member's own calls would give, bit for bit: the same kernels at the same
t on the same numbers.
"""
from __future__ import annotations

import numpy as np

from .member_records import rows_equal, same_for_members
from .source_text import indent

NO_TABLE = np.zeros((0, 1))
"""The table of a run that has none: no rows, so no log sample reads or writes one."""


def tabled_steps(plan) -> list[tuple[int, list[int]]]:
    """(index in plan.output_steps, the slots of the outputs it computes and someone reads) of
    each call of t alone that a log sample computes (OutputStep.time_only and log_read)."""
    found = []
    for k, step in enumerate(plan.output_steps):
        if step.time_only and step.log_read:
            slots = [i for i, wanted in zip(plan.outputs_of[step.block], step.wanted) if wanted]
            found.append((k, slots))
    return found


def width(plan) -> int:
    """The numbers of one log time in the table (0: the plan has no tabled call)."""
    return sum(plan.slots[i].width for _, slots in tabled_steps(plan) for i in slots)


def render(plan) -> tuple[list[str], list[str]]:
    """The statements before and after the adaptive loop's outputs site: a log sample (mode 2)
    reads the tabled outputs from the table when another member has written them (their calls
    then see their memo at te and are left out), else it computes them and writes them."""
    steps = tabled_steps(plan)
    if not steps:
        return [], []
    signals = [f"s[{i}]" for _, slots in steps for i in slots]
    read = [f"col = unstash(log_table[log_pos], col, {sig})" for sig in signals]
    write = [f"col = stash(log_table[log_pos], col, {sig})" for sig in signals]
    memos = [f"t_memo{k} = te" for k, _ in steps]
    before = ["# a per-member part's outputs of t alone at a log time: from its table, when "
              "another member computed them (engine/log_table.py)",
              "tabled = mode == 2 and log_table.shape[0] > 0",
              "if tabled and log_table[log_pos, 0] != 0.0:",
              "    col = 1"] + indent(read + memos + ["tabled = False"], 4)
    after = ["if tabled:", "    col = 1"] + indent(write + ["log_table[log_pos, 0] = 1.0"], 4)
    return before, after


def table_blocks(plan) -> list[str]:
    """The blocks whose records must be the same for all members for a table to be shared."""
    return [plan.output_steps[k].block for k, _ in tabled_steps(plan)]


def for_part(plan, records: dict, layouts: dict, signals, n_log: int) -> np.ndarray:
    """The table of a run of a part (a fresh one, nothing tabled yet), or NO_TABLE when the
    members may differ in a tabled output: a tabled block's record differs between members
    (layouts: its member view, engine/member_records.py), or a signal a tabled call reads from
    outside the tabled calls (a constant, a block switched off) differs, in any bit, between
    rows of the part's signal arrays `signals` (the run started: constant outputs set)."""
    w = width(plan)
    if w == 0:
        return NO_TABLE
    names = table_blocks(plan)
    if any(name in records and not same_for_members(records[name], layouts[name])
           for name in names):
        return NO_TABLE
    inside = {i for name in names for i in plan.outputs_of[name]}
    outside = {i for name in names for i in plan.inputs_of[name]} - inside
    if not all(rows_equal(signals[i]) for i in outside):
        return NO_TABLE
    return np.zeros((n_log, 1 + w))


__all__ = ["NO_TABLE", "tabled_steps", "width", "render", "table_blocks", "for_part"]
