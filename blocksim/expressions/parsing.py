"""Parsing an expression's text into a syntax tree within the limits (reading/limits.py): its
length in characters and its nesting depth, so that neither Python's parser nor the recursive
walks over the tree (the `${...}` evaluator, the Function block's compiler) can be exhausted.
Both languages parse their text here."""
from __future__ import annotations

import ast
import contextlib
import re
import sys
from typing import Iterator

from blocksim.reading.limits import LimitError, check, exceeded, limit, shorten

_FRAMES_PER_LEVEL = 4
"""Python frames a walk over the tree (evaluator, compiler, unparse) takes per level, at most."""

_INT_DIGITS = re.compile(r"Exceeds the limit \((\d+) digits\)")


def depth_of(tree: ast.AST) -> int:
    """The nesting depth of a tree: expression nodes (ast.expr) on the longest path from the
    root, counted without recursion ("1" is 1, "-x" 2, "sin(a + b)" 3)."""
    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.expr):
            depth += 1
            deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


@contextlib.contextmanager
def recursion_for(depth: int) -> Iterator[None]:
    """Python's recursion limit raised (never lowered) for walking a tree `depth` levels deep,
    for the duration: a user who raised the depth limit gets the walks to go that deep."""
    needed = _FRAMES_PER_LEVEL * depth + 1000
    old = sys.getrecursionlimit()
    if needed > old:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if needed > old:
            sys.setrecursionlimit(old)


def too_deep(text: str) -> LimitError:
    """The error for an expression nested past what the parser or a walk over its tree can take
    (the parser stops before it can say how deep)."""
    return LimitError(f"the expression '{shorten(text)}' is nested too deeply: more than the "
                      f"limit of {limit('expression_depth')} levels; if you mean it, raise the "
                      f"limit with the environment variable BLOCKSIM_MAX_EXPRESSION_DEPTH",
                      limit="expression_depth")


PARSER_BRACKETS = 200
"""Brackets ((), [], {}) Python's parser takes nested inside each other: a fixed bound of the
parser, below which the expression_depth limit can be raised."""


def _too_many_brackets(text: str) -> SyntaxError:
    """The error for brackets nested deeper than Python's parser takes (a bound of the parser,
    not a limit a user can raise: the message says how to write the expression instead)."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return SyntaxError(f"brackets nested {deepest:,} deep, more than the {PARSER_BRACKETS} the "
                       "parser takes (a fixed bound: give parts of the expression names as "
                       "workspace parameters)")


def parse_expression(text: str) -> ast.Expression:
    """The syntax tree of `text` (one expression, ast mode "eval"), checked against the length
    and depth limits first (a LimitError), else a SyntaxError for malformed text. The parser's
    own failures on deep text (RecursionError, its stack overflow raised as MemoryError) and on
    a huge integer literal are reported as such, never as a traceback."""
    check("expression_chars", len(text), f"the expression '{shorten(text)}' has")
    depth_limit = limit("expression_depth")
    try:
        with recursion_for(depth_limit):
            tree = ast.parse(text.strip(), mode="eval")
    except (RecursionError, MemoryError):
        raise too_deep(text) from None
    except SyntaxError as err:
        if "too many nested parentheses" in str(err.msg):
            raise _too_many_brackets(text) from None
        digits = _INT_DIGITS.search(str(err.msg))
        if digits:
            raise SyntaxError(f"an integer of more than {digits.group(1)} digits is too large "
                              "for a number") from None
        raise
    depth = depth_of(tree) if len(text) > depth_limit else 0    # each level takes a character
    if depth > depth_limit:
        raise LimitError(exceeded("expression_depth", depth,
                                  f"the expression '{shorten(text)}' is nested"),
                         limit="expression_depth")
    return tree


__all__ = ["parse_expression", "depth_of", "recursion_for", "too_deep"]
