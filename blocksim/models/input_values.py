"""Checked values of input files (robot files, identification configs): each function returns the
value in the Python type the code needs, or raises the caller's error class at the value's place
in the file, naming the key and saying what was found ("must be a number, got the text 'heavy'").

`where` is a SourceLoc (from `reading.located_yaml.loc_of`) or None for plain data given in Python; `what`
names the value in messages ("link 1 ('shoulder'): mass"). Numbers are YAML ints and floats, not
booleans; NaN is refused everywhere and infinity unless `infinite=True`.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from ..errors import BlocksimError, ParameterError, SourceLoc, did_you_mean
from ..reading.located_yaml import loc_of


def describe(value: Any) -> str:
    """What a value read from a file is, for messages: "the text 'abc'", "a list", "true"."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the text {shown!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def real(value: Any, where: SourceLoc | None, what: str, error: type[BlocksimError] = ParameterError,
         *, minimum: float | None = None, positive: bool = False, infinite: bool = False) -> float:
    """A finite number (infinite too with `infinite`), at least `minimum`, above 0 with `positive`."""
    if not _is_number(value):
        raise error(f"{what} must be a number, got {describe(value)}", where=where)
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not infinite):
        raise error(f"{what} must be a finite number, got {x}", where=where)
    if positive and not x > 0:
        raise error(f"{what} must be > 0, got {x:g}", where=where)
    if minimum is not None and x < minimum:
        raise error(f"{what} must be >= {minimum:g}, got {x:g}", where=where)
    return x


def integer(value: Any, where: SourceLoc | None, what: str, error: type[BlocksimError] = ParameterError,
            *, minimum: int | None = None) -> int:
    """A whole number (written without a fraction), at least `minimum`."""
    if not (isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))):
        raise error(f"{what} must be a whole number, got {describe(value)}", where=where)
    if minimum is not None and value < minimum:
        raise error(f"{what} must be >= {minimum}, got {value}", where=where)
    return int(value)


def flag(value: Any, where: SourceLoc | None, what: str, error: type[BlocksimError] = ParameterError) -> bool:
    """true or false."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{what} must be true or false, got {describe(value)}", where=where)
    return bool(value)


def text(value: Any, where: SourceLoc | None, what: str, error: type[BlocksimError] = ParameterError,
         *, choices: Iterable[str] | None = None) -> str:
    """A string (one of `choices` when given, with the closest one suggested)."""
    if not isinstance(value, str):
        raise error(f"{what} must be a text, got {describe(value)}", where=where)
    if choices is not None:
        choices = tuple(choices)
        if value not in choices:
            raise error(f"{what} must be one of {', '.join(choices)}, got {value!r}"
                        f"{did_you_mean(value, choices)}", where=where)
    return value


def reals(value: Any, where: SourceLoc | None, what: str, error: type[BlocksimError] = ParameterError,
          *, sizes: Iterable[int] = (3,), scalar: bool = False, infinite: bool = False,
          minimum: float | None = None, positive: bool = False) -> np.ndarray:
    """A flat list of numbers with one of `sizes` entries (a lone number too when `scalar`), as a
    float array; each entry is checked as `real` does, at its own line."""
    sizes = tuple(sizes)
    if scalar and _is_number(value):
        return np.array([real(value, where, what, error, infinite=infinite, minimum=minimum,
                              positive=positive)])
    if not isinstance(value, (list, tuple, np.ndarray)):
        want = " or ".join(str(s) for s in sizes)
        raise error(f"{what} must be a list of {want} numbers{' or one number' if scalar else ''}, "
                    f"got {describe(value)}", where=where)
    if len(value) not in sizes:
        want = " or ".join(str(s) for s in sizes)
        alone = "one number or " if scalar else ""
        raise error(f"{what} must be {alone}a list of {want} numbers, got {len(value)} values",
                    where=where)
    return np.array([real(item, loc_of(value, i, where), f"{what}[{i}]", error, infinite=infinite,
                          minimum=minimum, positive=positive) for i, item in enumerate(value)])


def matrix(value: Any, where: SourceLoc | None, what: str, rows: int, cols: int,
           error: type[BlocksimError] = ParameterError) -> np.ndarray:
    """A rows x cols nested list of finite numbers."""
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != rows:
        raise error(f"{what} must be {rows} rows of {cols} numbers, got {describe(value)}", where=where)
    return np.stack([reals(row, loc_of(value, i, where), f"{what}[{i}]", error, sizes=(cols,))
                     for i, row in enumerate(value)])


def mapping(value: Any, where: SourceLoc | None, what: str,
            error: type[BlocksimError] = ParameterError) -> dict:
    """A mapping (key: value)."""
    if not isinstance(value, dict):
        raise error(f"{what} must be a mapping (key: value), got {describe(value)}", where=where)
    return value


def known_keys(data: dict, allowed: Iterable[str], what: str, where: SourceLoc | None,
               error: type[BlocksimError] = ParameterError) -> None:
    """Every key of `data` is in `allowed`; an unknown one is named at its line with the closest
    allowed one suggested and the allowed ones listed."""
    allowed = sorted(allowed)
    for key in data:
        if key not in allowed:
            raise error(f"unknown {what} key '{key}'{did_you_mean(key, allowed)}; allowed: "
                        f"{', '.join(allowed)}", where=loc_of(data, key, where))
