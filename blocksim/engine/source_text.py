"""Small helpers for writing the generated module's source: indentation, blocks of statements,
and the signal and parameter tuples' items as locals."""
from __future__ import annotations

import re


def indent(stmts: list[str], spaces: int) -> list[str]:
    """Each statement indented by `spaces`."""
    return [" " * spaces + st for st in stmts]


def unpacked(text: str) -> str:
    """s[i] and p[i] written as the locals s_i and p_i (a loop unpacks the tuples once at entry:
    an item taken from a tuple costs a reference count each time)."""
    return re.sub(r"\b([sp])\[(\d+)\]", r"\1_\2", text)


def block(stmts: list[str], spaces: int) -> str:
    """Statements as an indented block of source ('pass' when there are none)."""
    return "\n".join(indent(stmts or ["pass"], spaces))


def unpack_tuples(n_slots: int, n_params: int, spaces: int) -> str:
    """The statements s_i = s[i] and p_i = p[i] for every signal slot and parameter record."""
    return block([f"s_{i} = s[{i}]" for i in range(n_slots)]
                 + [f"p_{i} = p[{i}]" for i in range(n_params)], spaces)
