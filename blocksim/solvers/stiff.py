"""Stiff solvers radau, bdf and lsoda: SciPy's implementations behind blocksim's Solver contract."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from blocksim.errors import SolverError
from blocksim.solvers.base import FINISHED, MIN_STEP_SPACINGS, Interpolant, Solver


class ScipyStiffSolver(Solver):
    """Wraps a scipy.integrate OdeSolver: the (B, n) state is flattened to B * n, the solver is rebuilt after
    restart() (its history and Jacobian start afresh), SciPy's failures become SolverError.

    SciPy's solver is built at the first step() after construction, restart() or a set_bound() before any
    step, never in them: building it evaluates fun at (t, x), at a probe for the first step size and at
    finite-difference probes for the Jacobian, and fun may leave the state it was called with in its
    caller's buffers (the engine's right-hand side does), which the caller reads after building or
    restarting a solver (Solver rule 5).

    Batch members are assumed independent (fun's member k reads only x[k]), so the finite-difference
    Jacobian is estimated block-diagonally: n evaluations of fun instead of B * n.
    nrejected stays 0: SciPy does not report rejected steps. There is no fixed-step mode.
    """

    adaptive = True
    scipy_name: ClassVar[str]      # the scipy.integrate class, imported when a solver is built

    @property
    def scipy_class(self):
        import scipy.integrate   # imported here: SciPy costs ~0.2 s of start-up that most runs skip
        return getattr(scipy.integrate, self.scipy_name)

    def __init__(self, fun, t0, x0, t_bound, **options):
        super().__init__(fun, t0, x0, t_bound, **options)
        if self.fixed_step:
            raise SolverError(f"solver {self.name} has no fixed-step mode; use an explicit solver "
                              "(euler, heun, midpoint, rk3, rk4) or fixed_step with rk23/dopri5/dop853")
        self._solver = None                      # SciPy's solver, built by _scipy() at the next step
        self._first_step = self.initial_step     # the step (s) that build tries first (None: SciPy's choice)

    def _scipy(self):
        """SciPy's solver from (t, x) to t_bound, built now if restart() or set_bound() dropped it."""
        if self._solver is None:
            self._solver = self._build(self._first_step)
        return self._solver

    def _flat_fun(self, t: float, y: np.ndarray) -> np.ndarray:
        return np.asarray(self._eval(t, y.reshape(self.x.shape)), dtype=float).reshape(-1)

    def _batch_options(self) -> dict:
        """Options telling SciPy that the Jacobian is block-diagonal over the batch (Radau, BDF)."""
        B, n = self.x.shape
        if B == 1:
            return {}
        import scipy.sparse
        return {"jac_sparsity": scipy.sparse.block_diag([np.ones((n, n))] * B, format="csc")}

    def _build(self, first_step: float | None):
        room = self.t_bound - self.t
        if first_step is not None:
            first_step = min(first_step, self.max_step, room) if room > 0 else None
        return self.scipy_class(self._flat_fun, self.t, self.x.reshape(-1), self.t_bound,
                                rtol=self.rtol, atol=self.atol, max_step=self.max_step,
                                first_step=first_step, **self._batch_options())

    def _step_impl(self) -> None:
        solver = self._scipy()
        message = solver.step()
        if solver.status == "failed":
            self._fail(f"SciPy's {self.scipy_class.__name__} failed: {message}", self._suggested_step())
        t_new = self.t_bound if solver.status == "finished" else float(solver.t)
        if t_new - self.t < MIN_STEP_SPACINGS * (np.nextafter(self.t, np.inf) - self.t) and t_new < self.t_bound:
            self._fail("step size underflow, the tolerance cannot be met", t_new - self.t)
        self.t_old, self.x_old = self.t, self.x
        self.t, self.x = t_new, solver.y.reshape(self.x.shape).copy()

    def _dense_output_impl(self) -> Interpolant:
        inner = self._solver.dense_output()
        shape = self.x.shape
        return lambda t: inner(t).reshape(shape)

    def _suggested_step(self) -> float | None:
        """The step (s) SciPy would try next, or the last one taken; before a build, the one it will try."""
        if self._solver is None:
            return self._first_step
        h = getattr(self._solver, "h_abs", None)
        return h if h is not None else self._solver.step_size

    def _forget_derivative(self) -> None:
        self._first_step = self._suggested_step() or self.initial_step
        self._solver = None

    def set_bound(self, t_bound: float) -> None:
        super().set_bound(t_bound)
        if self._solver is None or self._solver.t_old is None:
            # No step yet: build at the next step, so that SciPy chooses its first step for the new interval.
            self._solver, self._first_step = None, self.initial_step
            return
        self._solver.t_bound = self.t_bound
        self._solver.status = "finished" if self.status == FINISHED else "running"
        self._move_critical_time()

    def _move_critical_time(self) -> None:
        """Tell the SciPy solver's internals about a moved t_bound (nothing to do for Radau and BDF)."""


class Radau(ScipyStiffSolver):
    """Implicit Runge-Kutta Radau IIA of order 5 (scipy.integrate.Radau).

    A step cut short by t_bound leaves SciPy's Radau at the short step (it keeps a step size,
    and its LU factors, unless the error estimate asks for 1.2 times more), so a run through many
    bounds would crawl at the length of the last cut. When the bound moves on (set_bound), the
    step it proposed before the cut is given back (its LU factors, which depend on the step, and
    the two-step predictor dropped, as SciPy does at max_step)."""

    name = "radau"
    order = 5
    scipy_name = "Radau"
    _cut_from: float | None = None          # the step (s) proposed before a cut at t_bound

    def _step_impl(self) -> None:
        solver = self._scipy()
        proposed = solver.h_abs
        super()._step_impl()
        cut = self.t == self.t_bound and self.t - self.t_old < proposed
        self._cut_from = proposed if cut else None

    def set_bound(self, t_bound: float) -> None:
        super().set_bound(t_bound)
        solver, proposed = self._solver, self._cut_from
        if solver is not None and proposed is not None and solver.h_abs < proposed:
            solver.h_abs = proposed
            solver.h_abs_old = solver.error_norm_old = None
            solver.LU_real = solver.LU_complex = None
        self._cut_from = None


class BDF(ScipyStiffSolver):
    """Variable-order (1 to 5) backward differentiation formulas (scipy.integrate.BDF)."""

    name = "bdf"
    order = 5
    scipy_name = "BDF"


class LSODA(ScipyStiffSolver):
    """Adams / BDF with automatic stiffness switching, ODEPACK's LSODA (scipy.integrate.LSODA); order is
    the highest it may use (Adams 12)."""

    name = "lsoda"
    order = 12
    scipy_name = "LSODA"

    def _batch_options(self) -> dict:
        B, n = self.x.shape
        if B == 1:
            return {}
        return {"lband": n - 1, "uband": n - 1}   # a block-diagonal Jacobian lies in this band

    def _suggested_step(self) -> float | None:
        return self._first_step if self._solver is None else self._solver.step_size

    def _move_critical_time(self) -> None:
        # SciPy's LSODA keeps the critical time (no stepping past it) in LSODA's work array rwork[0];
        # SciPy's own constructor sets it there in the same way.
        integrator = self._solver._lsoda_solver._integrator
        integrator.rwork[0] = self.t_bound
        integrator.call_args[4] = integrator.rwork
