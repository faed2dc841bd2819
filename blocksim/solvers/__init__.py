"""ODE integrators behind one Solver contract, looked up by name; event location on dense output."""
from __future__ import annotations

import numpy as np

from blocksim.errors import SolverError, did_you_mean
from blocksim.solvers.base import FAILED, FINISHED, RUNNING, Solver
from blocksim.solvers.events import find_first_crossing
from blocksim.solvers.explicit import DOP853, RK3, RK4, RK23, Dopri5, Euler, Heun, Midpoint
from blocksim.solvers.stiff import BDF, LSODA, Radau

SOLVERS: dict[str, type[Solver]] = {cls.name: cls for cls in (
    Euler, Heun, Midpoint, RK3, RK4, RK23, Dopri5, DOP853, Radau, BDF, LSODA)}
"""Solver classes by the name a diagram's `simulation.solver` uses."""


def solver_names() -> list[str]:
    """Names of all solvers, fixed-step ones first, in the order of SOLVERS."""
    return list(SOLVERS)


def make_solver(name: str, fun, t0: float, x0: np.ndarray, t_bound: float, **options) -> Solver:
    """The solver `name` integrating x' = fun(t, x) from (t0, x0 of shape (B, n)) towards t_bound (s).

    options are the Solver keywords: step, rtol, atol, max_step, fixed_step.
    Raises SolverError for an unknown name, suggesting the closest valid one.
    """
    try:
        cls = SOLVERS[name]
    except KeyError:
        raise SolverError(f"unknown solver '{name}'{did_you_mean(name, SOLVERS)}: "
                          f"valid solvers are {', '.join(SOLVERS)}") from None
    return cls(fun, t0, x0, t_bound, **options)


__all__ = ["SOLVERS", "Solver", "make_solver", "solver_names", "find_first_crossing",
           "RUNNING", "FINISHED", "FAILED", "Euler", "Heun", "Midpoint", "RK3", "RK4", "RK23", "Dopri5",
           "DOP853", "Radau", "BDF", "LSODA"]
