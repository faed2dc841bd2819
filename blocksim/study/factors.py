"""A study's factors: what each one varies (a parameter path) and how (a list of values, a range,
or a distribution), checked where the file writes it.

A factor's path is a block parameter `block.param` or a workspace value `parameters.X`, with an
optional element `[i]` of a vector (`plant.Fv[0]`: the first joint's viscous friction, the other
elements kept as the diagram has them). A factor is either

- a grid factor, whose values all members take in turn (full factorial with the other grid
  factors): `values: [v0, v1, ...]` (numbers, or lists of numbers for a vector parameter), or
  `linspace: [first, last, points]`; a bare list is `values:`;
- a drawn factor, one value per draw (`samples` draws, by `sampling`): `uniform: [low, high]`,
  `normal: [mean, std]`, `loguniform: [low, high]` (low > 0: uniform in log).

Values are in the parameter's own units (docs/blocks.md); the factor adds none.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ..errors import SourceLoc
from ..models.input_values import describe, integer, real
from ..reading.located_yaml import loc_of, to_plain

GRID_FORMS = ("values", "linspace")
DRAWN_FORMS = ("uniform", "normal", "loguniform")
FORMS = GRID_FORMS + DRAWN_FORMS

_PATH = re.compile(r"^(parameters\.[A-Za-z_]\w*|[A-Za-z_][\w/]*\.[A-Za-z_]\w*)(\[(\d+)\])?$")


@dataclass(frozen=True)
class Factor:
    """One factor: `path` as written (the summary's column name), the dotted key it sets
    (`key`), the element it sets (None: the whole value), its form and its arguments (`values`
    for a grid factor; the distribution's two numbers for a drawn one), and where it is written."""

    path: str
    key: str
    element: int | None
    form: str
    args: tuple
    where: SourceLoc | None = None

    @property
    def drawn(self) -> bool:
        return self.form in DRAWN_FORMS

    @property
    def size(self) -> int:
        """Values of a grid factor (1 for a drawn one)."""
        return 1 if self.drawn else len(self.args)

    def quantile(self, u: float) -> float:
        """The drawn value at probability u in (0, 1) (the distribution's inverse CDF)."""
        a, b = self.args
        if self.form == "uniform":
            return a + (b - a) * u
        if self.form == "normal":
            return a + b * float(special.ndtri(u))
        return math.exp(math.log(a) + (math.log(b) - math.log(a)) * u)


def read_factor(path: Any, spec: Any, where: SourceLoc | None, error) -> Factor:
    """The factor `path: spec` of a study file's factors section, checked."""
    what = f"factors: '{path}'"
    match = _PATH.match(str(path)) if isinstance(path, str) else None
    if match is None:
        raise error(f"factors: {path!r} is not a parameter path: write block.param or "
                    "parameters.NAME, with [i] for one element of a vector (plant.Fv[0])",
                    where=where)
    key, element = match.group(1), None if match.group(3) is None else int(match.group(3))
    if isinstance(spec, list):
        form, body, at = "values", spec, where
    elif isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in FORMS:
        form = next(iter(spec))
        body, at = spec[form], loc_of(spec, form, where)
    else:
        raise error(f"{what} must be a list of values or one of {', '.join(f'{f}: [...]' for f in FORMS)}"
                    f", got {describe(spec)}" + (f" with keys {', '.join(map(str, spec))}"
                                                 if isinstance(spec, dict) else ""), where=where)
    if not isinstance(body, list):
        raise error(f"{what}: {form} must be a list, got {describe(body)}", where=at)
    if form == "values":
        if not body:
            raise error(f"{what}: values is empty", where=at)
        values = tuple(_value(v, loc_of(body, i, at), f"{what}: values[{i}]", error, element)
                       for i, v in enumerate(body))
        return Factor(str(path), key, element, form, values, where)
    if form == "linspace":
        if len(body) != 3:
            raise error(f"{what}: linspace is [first, last, points], got {len(body)} values",
                        where=at)
        a = real(body[0], loc_of(body, 0, at), f"{what}: linspace first", error)
        b = real(body[1], loc_of(body, 1, at), f"{what}: linspace last", error)
        n = integer(body[2], loc_of(body, 2, at), f"{what}: linspace points", error, minimum=1)
        return Factor(str(path), key, element, "values",
                      tuple(float(v) for v in np.linspace(a, b, n)), where)
    if len(body) != 2:
        names = "[mean, std]" if form == "normal" else "[low, high]"
        raise error(f"{what}: {form} is {names}, got {len(body)} values", where=at)
    a = real(body[0], loc_of(body, 0, at), f"{what}: {form}[0]", error)
    b = real(body[1], loc_of(body, 1, at), f"{what}: {form}[1]", error)
    if form == "normal" and not b > 0:
        raise error(f"{what}: normal needs std > 0, got {b:g}", where=at)
    if form != "normal" and not a < b:
        raise error(f"{what}: {form} needs low < high, got [{a:g}, {b:g}]", where=at)
    if form == "loguniform" and not a > 0:
        raise error(f"{what}: loguniform needs low > 0, got {a:g}", where=at)
    return Factor(str(path), key, element, form, (a, b), where)


def _value(v: Any, where, what: str, error, element: int | None):
    """A grid value: a number, or (for a whole vector parameter) a list of numbers."""
    if isinstance(v, list) and element is None:
        if not v:
            raise error(f"{what} is an empty list", where=where)
        return tuple(real(x, loc_of(v, i, where), f"{what}[{i}]", error) for i, x in enumerate(v))
    if isinstance(v, list):
        raise error(f"{what} sets one element ([{element}]): a number, got a list", where=where)
    return real(to_plain(v), where, what, error)
