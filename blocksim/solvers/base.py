"""The Solver contract: one integrator of x' = fun(t, x) over a batch of states, stepped by the scheduler."""
from __future__ import annotations

import abc
from typing import Callable, ClassVar

import numpy as np

from blocksim.errors import SolverError
from blocksim.solvers.step_control import initial_step_choice, initial_step_probe

RUNNING = "running"
"""Solver status: step() may be called."""
FINISHED = "finished"
"""Solver status: t == t_bound; call set_bound() or restart() to go on."""
FAILED = "failed"
"""Solver status: the last step raised SolverError; only restart() revives it."""

BOUND_SNAP_FRACTION = 1e-6
"""A step that would end within this fraction of its own length short of t_bound ends on t_bound instead,
so rounding in t never leaves a sliver step before a sample hit (Hairer's codes stretch by 1 %)."""

MIN_STEP_SPACINGS = 10
"""A step shorter than this many floating-point spacings of t is an underflow: the tolerance cannot be met."""

MIN_RTOL = 100 * np.finfo(float).eps
"""Smallest relative tolerance accepted: below it the error estimate is round-off."""

DerivativeFn = Callable[[float, np.ndarray], np.ndarray]
Interpolant = Callable[[float], np.ndarray]


class Solver(abc.ABC):
    """Integrates x' = fun(t, x) for x of shape (B, n) (B = batch members, n states), forward in time.

    Rules for subclasses (the scheduler relies on them):
    1. Implement `_step_impl()`: advance from (t, x) by one accepted step, never past t_bound, set
       t_old, x_old, t, x (new arrays: the previous ones may still be referenced by an interpolant).
       Raise SolverError through `_fail()` when no step size can make progress.
    2. Implement `_dense_output_impl()`: an interpolant on [t_old, t]; the base class makes it exact at
       both ends.
    3. Override `_forget_derivative()` to drop every cached derivative or stage (called by restart()).
    4. Call fun only through `_eval()` so that nfev counts every evaluation.
    5. Evaluate fun only in step() (and dense_output()), never in __init__, restart() or set_bound(): fun may
       leave the state it was called with in its caller's buffers (the engine's right-hand side writes it
       into the run's state), and the caller reads them after building or restarting a solver.
    Time is in seconds (the diagram's time unit); x is whatever the diagram's states are.
    """

    name: ClassVar[str]
    order: ClassVar[int]
    adaptive: ClassVar[bool]

    def __init__(self, fun: DerivativeFn, t0: float, x0: np.ndarray, t_bound: float, *,
                 step: float | None = None, rtol: float = 1e-6, atol: float = 1e-8,
                 max_step: float = np.inf, fixed_step: bool = False):
        x = np.array(x0, dtype=float)
        if x.ndim != 2:
            raise ValueError(f"{self.name}: x0 must have shape (B, n), got shape {x.shape}")
        t0 = float(t0)
        t_bound = float(t_bound)
        if not (np.isfinite(t0) and np.isfinite(t_bound)) or t_bound < t0:
            raise ValueError(f"{self.name}: need finite t0 <= t_bound, got t0={t0!r}, t_bound={t_bound!r}")
        if step is not None and not (np.isfinite(step) and step > 0):
            raise SolverError(f"solver {self.name}: step must be a positive number of seconds, got {step!r}")
        if not (max_step > 0):
            raise SolverError(f"solver {self.name}: max_step must be positive, got {max_step!r}")
        if not (rtol >= MIN_RTOL and np.isfinite(rtol)):
            raise SolverError(f"solver {self.name}: rtol must be a number >= {MIN_RTOL:.1e}, got {rtol!r}")
        if not (atol >= 0 and np.isfinite(atol)):
            raise SolverError(f"solver {self.name}: atol must be a number >= 0, got {atol!r}")
        self.fun = fun
        self.t: float = t0
        self.t_old: float | None = None
        self.x: np.ndarray = x
        self.x_old: np.ndarray | None = None
        self.t_bound: float = t_bound
        self.initial_step: float | None = None if step is None else float(step)
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.max_step = float(max_step)
        self.fixed_step = bool(fixed_step)
        self.nfev = 0
        self.nsteps = 0
        self.nrejected = 0
        self.status = FINISHED if t0 == t_bound else RUNNING
        self._check_finite_state(x, t0)

    # -- the contract ---------------------------------------------------------------------------
    def step(self) -> None:
        """Advance one accepted step, landing exactly on t_bound when it is reached."""
        if self.status != RUNNING:
            raise RuntimeError(f"{self.name}: step() on a {self.status} solver at t = {self.t!r}; "
                               "call set_bound() or restart() first")
        try:
            self._step_impl()
        except SolverError:
            self.status = FAILED
            raise
        self.nsteps += 1
        if self.t == self.t_bound:
            self.status = FINISHED

    def dense_output(self) -> Interpolant:
        """Interpolant x(t) of shape (B, n) on [t_old, t] of the last accepted step, exact at both ends."""
        if self.t_old is None:
            raise RuntimeError(f"{self.name}: no step taken since the start or the last restart()")
        t_old, t_new, x_old, x_new = self.t_old, self.t, self.x_old, self.x
        inner = self._dense_output_impl()

        def interpolant(t: float) -> np.ndarray:
            if t == t_new:
                return x_new.copy()
            if t == t_old:
                return x_old.copy()
            return inner(t)

        return interpolant

    def restart(self, t: float, x: np.ndarray, t_bound: float) -> None:
        """Continue from a new state after a discontinuity; forget cached derivatives, keep the step size."""
        x = np.array(x, dtype=float)
        if x.shape != self.x.shape:
            raise ValueError(f"{self.name}: restart state has shape {x.shape}, expected {self.x.shape}")
        t, t_bound = float(t), float(t_bound)
        if t_bound < t:
            raise ValueError(f"{self.name}: t_bound={t_bound!r} is before t={t!r}")
        self._check_finite_state(x, t)
        self.t, self.x, self.t_bound = t, x, t_bound
        self.t_old = None
        self.x_old = None
        self._forget_derivative()
        self.status = FINISHED if t == t_bound else RUNNING

    def set_bound(self, t_bound: float) -> None:
        """Move the bound without a discontinuity (cached derivatives stay valid)."""
        t_bound = float(t_bound)
        if t_bound < self.t:
            raise ValueError(f"{self.name}: t_bound={t_bound!r} is before t={self.t!r}")
        if self.status == FAILED:
            raise RuntimeError(f"{self.name}: set_bound() on a failed solver; call restart()")
        self.t_bound = t_bound
        self.status = FINISHED if self.t == t_bound else RUNNING

    @property
    def step_size(self) -> float | None:
        """Length (s) of the last accepted step, None before the first one."""
        return None if self.t_old is None else self.t - self.t_old

    # -- for subclasses ---------------------------------------------------------------------------
    @abc.abstractmethod
    def _step_impl(self) -> None: ...

    @abc.abstractmethod
    def _dense_output_impl(self) -> Interpolant: ...

    def _forget_derivative(self) -> None:
        """Drop cached derivatives and stages (nothing cached in the base class)."""

    def _eval(self, t: float, x: np.ndarray) -> np.ndarray:
        """fun(t, x), counted in nfev, checked for shape."""
        self.nfev += 1
        f = self.fun(t, x)
        if np.shape(f) != x.shape:
            raise ValueError(f"{self.name}: fun returned shape {np.shape(f)}, expected {x.shape}")
        return f

    def _describe(self) -> str:
        """The solver and its settings, for error messages."""
        if self.initial_step is None or (self.adaptive and not self.fixed_step):
            return f"solver {self.name} (rtol={self.rtol:g}, atol={self.atol:g})"
        return f"solver {self.name} (fixed step {self.initial_step:g} s)"

    def _fail(self, reason: str, h: float | None = None) -> None:
        """Raise SolverError naming the solver, its tolerances, the time and the step size (s)."""
        step = "" if h is None else f" with step size {h:.3g} s"
        raise SolverError(f"{self._describe()} cannot continue at t = {self.t:.12g} s{step}: {reason}")

    def _check_finite_state(self, x: np.ndarray, t: float) -> None:
        if not np.isfinite(x).all():
            bad = np.argwhere(~np.isfinite(x))[0]
            raise SolverError(f"{self._describe()}: state at t = {t:.12g} s is not finite "
                              f"(member {bad[0]}, state {bad[1]})")


def select_initial_step(solver: Solver, f0: np.ndarray, error_order: int) -> float:
    """First step (s) by Hairer's rule (Hairer, Norsett & Wanner, Solving ODEs I, sec. II.4), RMS norm.

    Costs one evaluation of fun. error_order is the order of the error estimate (error ~ h**(order + 1)).
    The arithmetic is solvers/step_control.py's, shared with the compiled adaptive loop.
    """
    t0, x0 = solver.t, solver.x
    interval = solver.t_bound - t0
    if x0.size == 0 or interval == 0:
        return min(interval, solver.max_step) if interval > 0 else solver.max_step
    x_flat, f_flat = x0.reshape(-1), np.ascontiguousarray(f0).reshape(-1)
    x_probe = np.empty_like(x0)
    h0, d1 = initial_step_probe(x_flat, f_flat, solver.rtol, solver.atol, interval,
                                x_probe.reshape(-1))
    f1 = solver._eval(t0 + h0, x_probe)
    return initial_step_choice(x_flat, f_flat, np.ascontiguousarray(f1).reshape(-1), solver.rtol,
                               solver.atol, interval, solver.max_step, h0, d1, error_order)
