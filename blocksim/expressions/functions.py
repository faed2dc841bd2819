"""The functions and constants of blocksim's expression language: one table for the `${...}`
parameter expressions of a diagram and for the Function block's run-time expressions.

Each function has its workspace form (numpy, on numbers and arrays, at load time) and, where it is
marked `scalar`, a form the Function block compiles to a per-element stack program that a numba
kernel runs at every step (expressions/runtime.py): "unary" (one argument, elementwise),
"elementwise" (two or more arguments, combined element by element) or "reduction" (a vector to
one number). A test holds the two forms to the same numbers.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from blocksim.reading.limits import shown

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
"""Names every expression knows; a workspace parameter of the same name takes precedence."""


def describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {shown(value)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "an empty value (null)"
    return f"a {type(value).__name__}"


def plain(value: Any) -> Any:
    """Numpy scalars and 0-d arrays as Python int/float/bool; other values unchanged."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def as_int(value: Any, what: str) -> int:
    """An integer argument or index; integral floats (2.0) are accepted."""
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be an integer, not {describe(value)}")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{what} must be an integer, not {value}")
    return int(value)


def _rounding(func: Callable) -> Callable:
    """floor/ceil/round: Python ints for a single number (usable as sizes), float arrays otherwise."""
    def apply(x, *rest):
        result = func(x, *rest)
        if np.ndim(result) == 0 and not rest:
            return int(result)
        return result
    return apply


def _extremum(reduce: Callable, pairwise: Callable) -> Callable:
    """min/max: of one array's elements (with `axis`), or elementwise over several arguments."""
    def apply(*args, axis=None):
        if len(args) == 1:
            return reduce(args[0], axis=None if axis is None else as_int(axis, "axis"))
        if axis is not None:
            raise ValueError("axis= only applies to a single argument")
        return functools.reduce(pairwise, args)
    return apply


def _reduction(func: Callable) -> Callable:
    def apply(x, axis=None):
        return func(x, axis=None if axis is None else as_int(axis, "axis"))
    return apply


def _filled(func: Callable) -> Callable:
    """zeros(n) / zeros(n, m) (and ones): float arrays of that shape."""
    def apply(*dims):
        return func(tuple(as_int(d, "a size") for d in dims))
    return apply


def _log(x, base=None):
    return np.log(x) if base is None else np.log(x) / np.log(base)


def _norm(x, order=None, axis=None):
    return np.linalg.norm(x, ord=order, axis=None if axis is None else as_int(axis, "axis"))


def _linspace(start, stop, count):
    return np.linspace(start, stop, as_int(count, "the number of points"))


def _length(x):
    if np.ndim(x) == 0:
        raise ValueError("len() needs a list or array, not a single number")
    return int(np.shape(x)[0])


def _concat(*parts):
    return np.concatenate([np.atleast_1d(part) for part in parts]).astype(float)


# how many elements a function's result will have, from its arguments, before it is computed
# (the ${...} evaluator refuses an array beyond the array_elements limit); None: not known
# before (the arguments are not sizes), the function then says what is wrong itself

def _sizes(*dims, **_) -> int | None:
    try:
        return math.prod(as_int(d, "a size") for d in dims)
    except ValueError:
        return None


def _square(n, **_) -> int | None:
    try:
        return as_int(n, "the size") ** 2
    except ValueError:
        return None


def _points(start, stop, count, **_) -> int | None:
    try:
        return as_int(count, "the number of points")
    except ValueError:
        return None


def _diagonal(x, *rest, **_) -> int | None:
    return np.size(x) ** 2 if np.ndim(x) == 1 else None


def _joined(*parts, **_) -> int:
    return sum(np.size(part) for part in parts)


def _broadcast(*args, **_) -> int | None:
    try:
        return math.prod(np.broadcast_shapes(*(np.shape(a) for a in args)))
    except ValueError:
        return None


@dataclass(frozen=True)
class Function:
    """One function an expression may call: its workspace form (`apply`, numpy), how many
    positional arguments and which keywords that form takes, its run-time form in a Function
    block (`scalar`: "unary", "elementwise", "reduction", or None when only `${...}` has it), and,
    for a function whose result can be larger than its arguments, `elements`: the result's
    number of elements from the arguments, known before it is made."""

    apply: Callable
    min_args: int
    max_args: int | None
    keywords: tuple[str, ...] = ()
    scalar: str | None = None
    elements: Callable[..., int | None] | None = None


_UNARY_ELEMENTWISE = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sqrt": np.sqrt,
    "exp": np.exp, "log10": np.log10, "abs": np.abs, "sign": np.sign,
    "floor": _rounding(np.floor), "ceil": _rounding(np.ceil),
}
"""One-argument functions that the Function block also computes per element at run time."""

FUNCTIONS: dict[str, Function] = {
    **{name: Function(func, 1, 1, scalar="unary") for name, func in _UNARY_ELEMENTWISE.items()},
    **{name: Function(func, 1, 1) for name, func in {
        "log2": np.log2, "radians": np.radians, "degrees": np.degrees,
        "array": lambda x: np.array(x, dtype=float), "diag": np.diag,
        "transpose": np.transpose, "inv": np.linalg.inv, "det": np.linalg.det, "len": _length,
    }.items() if name != "diag"},
    "diag": Function(np.diag, 1, 1, elements=_diagonal),
    "log": Function(_log, 1, 2, scalar="unary"),
    "atan2": Function(np.arctan2, 2, 2, scalar="elementwise", elements=_broadcast),
    "hypot": Function(np.hypot, 2, 2, scalar="elementwise", elements=_broadcast),
    "pow": Function(np.power, 2, 2, scalar="elementwise", elements=_broadcast),
    "min": Function(_extremum(np.min, np.minimum), 1, None, ("axis",), scalar="elementwise",
                    elements=_broadcast),
    "max": Function(_extremum(np.max, np.maximum), 1, None, ("axis",), scalar="elementwise",
                    elements=_broadcast),
    "sum": Function(_reduction(np.sum), 1, 1, ("axis",), scalar="reduction"),
    "norm": Function(_norm, 1, 2, ("axis",), scalar="reduction"),
    "dot": Function(np.dot, 2, 2, scalar="reduction"),
    "round": Function(_rounding(np.round), 1, 2),
    "mean": Function(_reduction(np.mean), 1, 1, ("axis",)),
    "zeros": Function(_filled(np.zeros), 1, 2, elements=_sizes),
    "ones": Function(_filled(np.ones), 1, 2, elements=_sizes),
    "eye": Function(lambda n: np.eye(as_int(n, "the size")), 1, 1, elements=_square),
    "linspace": Function(_linspace, 3, 3, elements=_points),
    "concat": Function(_concat, 1, None, elements=_joined),
    "clip": Function(np.clip, 3, 3, elements=_broadcast),
    "where": Function(np.where, 3, 3, elements=_broadcast),
}
"""The functions an expression may call. All work elementwise on arrays (lists become arrays).
At run time (`scalar` set) a Function block's `log` takes one argument, `min` and `max` two or
more (elementwise), and `sum`, `norm`, `dot` reduce its vectors."""
