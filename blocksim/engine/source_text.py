"""Small helpers for writing the generated module's source: indentation, blocks of statements,
the signal and parameter tuples' items as locals, and the copies of a loop's forms on the stack."""
from __future__ import annotations

import math
import re

from .stack_arrays import STACK_LIMIT


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


def stack_form(template: str, name: str, parts: dict, slot_widths: list[int],
               arrays: dict[str, tuple[int, ...]], bounded: frozenset[str],
               members: int = 1) -> str:
    """The source of a loop's form on the stack: `template` formatted with `parts`, named `name`,
    its first statements rebinding the signal tuple s and the arguments named in `arrays`
    ({argument: shape}, 2 or 3 dimensions) to copies on the function's own stack
    (engine/stack_arrays.py), copied back into the arrays given before its return. For the
    arguments in `bounded` the shape's first number is a bound, and the copy has as many rows as
    the argument (the stage rows of the run's solver, where the shape has those of the largest).

    members = 1: the one-member form (run_fixed_one, run_adaptive_one), every shape a constant.
    members = C > 1: the chunk form (run_fixed_chunk), for a batch, or a part of one, of at most C
    members: the member dimension (a signal's first, an argument's first, or the second of a
    3-dimensional one) is a bound too, and the copies have as many members as the arrays given
    (xc's rows). Nothing ("") when the copies would take more than STACK_LIMIT bytes: the run
    then takes the loop over the arrays given."""
    size = 8 * (members * sum(slot_widths) + sum(math.prod(shape) for shape in arrays.values()))
    if size > STACK_LIMIT:
        return ""
    cut = "[:members]" if members > 1 else ""
    lines = (["members = xc.shape[0]"] if cut else []) + [
        "s_given = s",
        "s = (" + "".join(f"stack_matrix({members}, {w}){cut}, " for w in slot_widths) + ")"]
    lines += [f"copy2d(s[{i}], s_given[{i}])" for i in range(len(slot_widths))]
    back = [f"copy2d(s_given[{i}], s[{i}])" for i in range(len(slot_widths))]
    for arg, shape in arrays.items():
        rows = f"{arg}_given.shape[0]" if arg in bounded else str(shape[0])
        if len(shape) == 2:
            made = f"stack_matrix({shape[0]}, {shape[1]})" + (
                cut or (f"[:{rows}]" if arg in bounded else ""))
        elif cut:                # rows x members x width, both first two bounded: one C block
            made = (f"stack_matrix({shape[0] * shape[1]}, {shape[2]})[:{rows} * members]"
                    f".reshape(({rows}, members, {shape[2]}))")
        else:
            made = f"stack_array3({', '.join(map(str, shape))})" + (
                f"[:{rows}]" if arg in bounded else "")
        lines += [f"{arg}_given = {arg}", f"{arg} = {made}"]
        lines += _copied(arg, f"{arg}_given", len(shape))
        back += _copied(f"{arg}_given", arg, len(shape))

    def copied_back(m):          # the loops return once, at their end: copies at each of
        pad = m.group(1)         # three returns made W1's first compile half as long again
        return "\n".join([f"{pad}result = {m.group(2)}"] + [pad + line for line in back]
                         + [f"{pad}return result"])
    text = template.format(name=name, prologue="\n" + block(lines, 4), **parts)
    return _RETURN.sub(copied_back, text)


def _copied(dst: str, src: str, ndim: int) -> list[str]:
    if ndim == 2:
        return [f"copy2d({dst}, {src})"]
    return [f"for row in range({dst}.shape[0]):", f"    copy2d({dst}[row], {src}[row])"]


_RETURN = re.compile(r"^( *)return (.+)$", re.M)
