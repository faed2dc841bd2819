"""Which values each member of a study takes, from the study seed and the member's index alone.

The members are the full factorial of the grid factors (the first factor varying slowest) times
`samples` draws of the drawn factors: member m is grid point m // samples, draw m % samples.
A draw is a point u in the unit cube (one coordinate per drawn factor, in file order) that each
factor's inverse CDF maps to its value:

- `random`: u from the member's own generator, numpy's default_rng(member_seed(seed, m)): any
  member is drawn alone, and more samples leave the first members as they were;
- `lhs`, `sobol`: row m % samples of one Latin hypercube or scrambled Sobol design of `samples`
  points seeded by the study seed (scipy.stats.qmc): the design is a function of (seed, samples),
  so a member's values are again a function of the study seed and its index;
- `saltelli`: row m of Saltelli's design for Sobol indices (SALib), samples (d + 2) rows for d
  drawn factors, again a function of (seed, samples).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .factors import Factor

_HALF_ULP = 2.0 ** -53


def member_seed(seed: int, member: int) -> int:
    """Member `member`'s seed (64 bits) of a study seeded `seed`: numpy's SeedSequence([seed,
    member]), so members' streams are independent and each is found without the others."""
    return int(np.random.SeedSequence([seed, member]).generate_state(1, np.uint64)[0])


def noise_seed(seed: int, file_seed: int) -> int:
    """The seed a noise block (WhiteNoise, MeasurementNoise) runs with in a study seeded `seed`,
    for the seed the diagram gives it: members' streams are then keyed by (this seed, member
    index), the study seed and the member's index alone."""
    return int(np.random.SeedSequence([seed, int(file_seed) % 2 ** 64, 1])
               .generate_state(1, np.uint64)[0])


def draws(samples: int, sampling: str, dims: int) -> int:
    """Draws of the drawn factors per grid point: `samples`, or for Saltelli's design (Sobol
    indices) samples (dims + 2) rows: a base of `samples` points, its other half, and one
    mixed row per factor."""
    return samples * (dims + 2) if sampling == "saltelli" else samples


def member_count(factors: tuple[Factor, ...], samples: int, sampling: str = "random") -> int:
    dims = sum(f.drawn for f in factors)
    return math.prod(f.size for f in factors if not f.drawn) * draws(samples, sampling, dims)


@functools.lru_cache(maxsize=8)
def _design(sampling: str, dims: int, samples: int, seed: int) -> np.ndarray:
    if sampling == "saltelli":
        from .sensitivity import saltelli_design
        return saltelli_design(dims, samples, seed)
    from scipy.stats import qmc
    if sampling == "lhs":
        return qmc.LatinHypercube(d=dims, seed=seed).random(samples)
    return qmc.Sobol(d=dims, scramble=True, seed=seed).random(samples)


def unit_point(sampling: str, dims: int, samples: int, seed: int, member: int) -> np.ndarray:
    """Member `member`'s point u in (0, 1)^dims (see the module docstring)."""
    if sampling == "random":
        rng = np.random.default_rng(member_seed(seed, member))
        return (rng.integers(0, 2 ** 53, size=dims).astype(float) + 0.5) * _HALF_ULP
    rows = draws(samples, sampling, dims)
    u = _design(sampling, dims, samples, seed)[member % rows]
    return np.clip(u, _HALF_ULP, 1.0 - _HALF_ULP)      # a Sobol point may be 0: the normal's -inf


def member_values(factors: tuple[Factor, ...], samples: int, sampling: str, seed: int,
                  members: range) -> dict[str, list]:
    """{factor path: [value per member]} for `members` (a range of member indices)."""
    grid = [f for f in factors if not f.drawn]
    drawn = [f for f in factors if f.drawn]
    sizes = [f.size for f in grid]
    per_point = draws(samples, sampling, len(drawn))
    out: dict[str, list] = {f.path: [] for f in factors}
    for m in members:
        if grid:
            for f, i in zip(grid, np.unravel_index(m // per_point, sizes)):
                out[f.path].append(f.args[int(i)])
        if drawn:
            u = unit_point(sampling, len(drawn), samples, seed, m)
            for f, x in zip(drawn, u):
                out[f.path].append(f.quantile(float(x)))
    return out
