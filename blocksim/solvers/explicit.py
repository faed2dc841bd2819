"""Explicit Runge-Kutta solvers: one shared stepping function over the tableaux, fixed-step and adaptive."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from blocksim.errors import SolverError
from blocksim.solvers.base import (BOUND_SNAP_FRACTION, MIN_STEP_SPACINGS, Interpolant, Solver,
                                   select_initial_step)
from blocksim.solvers.stages import memberwise_error_norm, memberwise_stage_sum
from blocksim.solvers.step_control import (hermite_at, power_series_at, step_after_accept,
                                           step_after_reject)
from blocksim.solvers.tableaux import (BogackiShampineTableau, DOP853Tableau, DormandPrinceTableau,
                                       EulerTableau, HeunTableau, Kutta3Tableau, MidpointTableau,
                                       RK4Tableau, Tableau)

def rk_step(evaluate, t: float, t_new: float, x: np.ndarray, f0: np.ndarray, tableau: type[Tableau],
            K: np.ndarray) -> np.ndarray:
    """One explicit Runge-Kutta step from (t, x) to t_new: fills the stages K[:s] and returns x_new.

    evaluate(t, x) -> (B, n) is the right-hand side; f0 = evaluate(t, x) is given (it may be an FSAL stage).
    K: (s + 1 or more, B, n) fresh array, kept by the caller for the error estimate and dense output.
    A stage with c = 1 is evaluated at exactly t_new, and no stage after it (a source's breakpoint at
    t_new is then seen consistently).
    """
    h = t_new - t
    stages = K.reshape(K.shape[0], -1)
    x_flat = x.reshape(-1)
    K[0] = f0
    for i in range(1, tableau.n_stages):
        x_stage = np.empty_like(x)
        memberwise_stage_sum(x_flat, h, tableau.A[i], stages, i, x_stage.reshape(-1))
        c = tableau.c[i]
        K[i] = evaluate(t_new if c == 1.0 else min(t + c * h, t_new), x_stage)
    x_new = np.empty_like(x)
    memberwise_stage_sum(x_flat, h, tableau.b, stages, tableau.n_stages, x_new.reshape(-1))
    return x_new


class HermiteInterpolant:
    """Cubic Hermite interpolant on [t0, t1] from states x0, x1 and derivatives f0, f1 (all (B, n))."""

    def __init__(self, t0: float, t1: float, x0: np.ndarray, x1: np.ndarray, f0: np.ndarray, f1: np.ndarray):
        self.t0, self.h = t0, t1 - t0
        self.x0, self.x1, self.f0, self.f1 = x0, x1, f0, f1

    def __call__(self, t: float) -> np.ndarray:
        out = np.empty_like(self.x0)
        hermite_at(t, self.t0, self.h, self.x0.reshape(-1), self.x1.reshape(-1),
                   np.ascontiguousarray(self.f0).reshape(-1),
                   np.ascontiguousarray(self.f1).reshape(-1), out.reshape(-1))
        return out


class PowerSeriesInterpolant:
    """x(t_old + theta h) = x_old + theta (Q_0 + theta (Q_1 + ...)) with Q_j of shape (B, n)."""

    def __init__(self, t_old: float, h: float, x_old: np.ndarray, Q: np.ndarray):
        self.t_old, self.h, self.x_old, self.Q = t_old, h, x_old, Q

    def __call__(self, t: float) -> np.ndarray:
        out = np.empty_like(self.x_old)
        power_series_at(t, self.t_old, self.h, self.x_old.reshape(-1),
                        self.Q.reshape(self.Q.shape[0], -1), out.reshape(-1))
        return out


class RungeKutta(Solver):
    """Common machinery of the explicit Runge-Kutta solvers: constant steps on an exact grid, dense output.

    Fixed steps land on t_grid + k * step (k counted, not accumulated; the grid restarts at t_bound when a
    shortened step lands there, and at restart()).
    """

    tableau: ClassVar[type[Tableau]]

    def __init__(self, fun, t0, x0, t_bound, **options):
        super().__init__(fun, t0, x0, t_bound, **options)
        self._f: np.ndarray | None = None          # fun(t, x) at the current point, when known
        self._K: np.ndarray | None = None          # stages of the last accepted step
        self._interpolant: Interpolant | None = None
        self._grid_start = self.t
        self._grid_count = 0

    def _forget_derivative(self) -> None:
        self._f = None
        self._K = None
        self._interpolant = None
        self._grid_start = self.t
        self._grid_count = 0

    def _derivative_now(self) -> np.ndarray:
        """fun at the current point, reused when known (FSAL stage or dense-output end derivative)."""
        if self._f is None:
            self._f = self._eval(self.t, self.x)
            if not np.isfinite(self._f).all():
                self._f = None
                self._fail("the derivative at the current state is not finite")
        return self._f

    def _new_stages(self) -> np.ndarray:
        return np.empty((self.tableau.n_stages + 1,) + self.x.shape)

    def _accept(self, t_new: float, x_new: np.ndarray, K: np.ndarray) -> None:
        self.t_old, self.x_old = self.t, self.x
        self.t, self.x = t_new, x_new
        self._K = K
        self._f = K[self.tableau.n_stages] if self.tableau.fsal else None
        self._interpolant = None

    def _grid_step(self) -> None:
        """One step of the constant size `step`, shortened (or stretched by rounding) onto t_bound."""
        h = self.initial_step
        count = self._grid_count + 1
        t_new = self._grid_start + count * h
        landed = t_new >= self.t_bound - BOUND_SNAP_FRACTION * h
        if landed:
            t_new = self.t_bound
        if t_new <= self.t:
            self._fail("the step is below the time resolution", h)
        f0 = self._derivative_now()
        K = self._new_stages()
        x_new = rk_step(self._eval, self.t, t_new, self.x, f0, self.tableau, K)
        if not np.isfinite(x_new).all():
            self._fail("the state became non-finite (NaN or Inf)", t_new - self.t)
        if self.tableau.fsal:
            K[-1] = self._eval(t_new, x_new)
        if landed:
            self._grid_start, self._grid_count = t_new, 0
        else:
            self._grid_count = count
        self._accept(t_new, x_new, K)

    def _dense_output_impl(self) -> Interpolant:
        if self._interpolant is None:
            self._interpolant = self._make_interpolant()
        return self._interpolant

    def _make_interpolant(self) -> Interpolant:
        tab = self.tableau
        if tab.P_rows is None:
            f_end = self._derivative_now()
            return HermiteInterpolant(self.t_old, self.t, self.x_old, self.x, self._K[0], f_end)
        h = self.t - self.t_old
        K = self._K
        if tab.A_dense is not None and len(K) < tab.P_rows.shape[1]:
            K = self._K = self._extend_stages(K, h)
        stages = K.reshape(K.shape[0], -1)
        zero = np.zeros(stages.shape[1])
        Q = np.empty((len(tab.P_rows),) + self.x.shape)
        for j, weights in enumerate(tab.P_rows):
            memberwise_stage_sum(zero, h, weights, stages, len(weights), Q[j].reshape(-1))
        return PowerSeriesInterpolant(self.t_old, h, self.x_old, Q)

    def _extend_stages(self, K: np.ndarray, h: float) -> np.ndarray:
        """Append the extra stages the dense output needs (DOP853: three evaluations of fun)."""
        tab = self.tableau
        n_main = len(K)
        K_ext = np.empty((n_main + len(tab.A_dense),) + self.x.shape)
        K_ext[:n_main] = K
        stages = K_ext.reshape(K_ext.shape[0], -1)
        x_old = self.x_old.reshape(-1)
        for r, (a, c) in enumerate(zip(tab.A_dense, tab.c_dense)):
            i = n_main + r
            x_stage = np.empty_like(self.x)
            memberwise_stage_sum(x_old, h, a, stages, i, x_stage.reshape(-1))
            K_ext[i] = self._eval(self.t_old + c * h, x_stage)
        return K_ext


class FixedStepRungeKutta(RungeKutta):
    """An explicit Runge-Kutta method with a constant step `step` (s), required."""

    adaptive = False

    def __init__(self, fun, t0, x0, t_bound, **options):
        super().__init__(fun, t0, x0, t_bound, **options)
        if self.initial_step is None:
            raise SolverError(f"solver {self.name} is fixed-step: give its step size `step` (s)")
        self.fixed_step = True

    def _step_impl(self) -> None:
        self._grid_step()


class AdaptiveRungeKutta(RungeKutta):
    """An embedded explicit Runge-Kutta pair with error control (or constant steps when fixed_step=True).

    The error of a step is the RMS over all (B, n) elements of err / (atol + rtol * max(|x|, |x_new|)),
    so the batch shares each step. The step size follows h * SAFETY * err**(-1 / (error_order + 1)),
    bounded by MIN_FACTOR and MAX_FACTOR, without growth right after a rejection, and at most max_step
    (solvers/step_control.py).
    The suggestion for the next step (_h_next) survives restart(); a step cut short by t_bound keeps the
    suggestion it was planned with.
    """

    adaptive = True

    def __init__(self, fun, t0, x0, t_bound, **options):
        super().__init__(fun, t0, x0, t_bound, **options)
        if self.fixed_step and self.initial_step is None:
            raise SolverError(f"solver {self.name} with fixed_step=True needs its step size `step` (s)")
        self._h_next = None if self.initial_step is None else min(self.initial_step, self.max_step)
        self._error_exponent = -1.0 / (self.tableau.error_order + 1)

    def _step_impl(self) -> None:
        if self.fixed_step:
            self._grid_step()
            return
        f0 = self._derivative_now()
        if self._h_next is None:
            self._h_next = select_initial_step(self, f0, self.tableau.error_order)
        t, x = self.t, self.x
        min_step = MIN_STEP_SPACINGS * (np.nextafter(t, np.inf) - t)
        h = min(self._h_next, self.max_step)
        rejected = False
        reason = "the tolerance cannot be met"
        while True:
            if h < min_step:
                self._fail(f"step size underflow, {reason}", h)
            t_new = t + h
            clipped = t_new >= self.t_bound - BOUND_SNAP_FRACTION * h
            if clipped:
                t_new = self.t_bound
            h_taken = t_new - t
            K = self._new_stages()
            x_new = rk_step(self._eval, t, t_new, x, f0, self.tableau, K)
            if np.isfinite(x_new).all():
                K[-1] = self._eval(t_new, x_new)
                error = self._error_norm(K, h_taken, x, x_new)
            else:
                error = math.inf
            if error < 1.0:
                # a step cut short by the bound says nothing against the step size that was planned
                self._h_next = step_after_accept(error, self._error_exponent, rejected, h,
                                                 h_taken, clipped)
                break
            self.nrejected += 1
            rejected = True
            h = step_after_reject(error, self._error_exponent, h_taken)
            reason = "the tolerance cannot be met" if math.isfinite(error) else \
                "the state or its derivative is not finite"
        self._accept(t_new, x_new, K)

    def _error_norm(self, K: np.ndarray, h: float, x: np.ndarray, x_new: np.ndarray) -> float:
        """Scaled RMS error of the step (solvers.stages.memberwise_error_norm)."""
        tab = self.tableau
        return memberwise_error_norm(tab.E, _NO_WEIGHTS if tab.E3 is None else tab.E3,
                                     K.reshape(K.shape[0], -1), h, x.reshape(-1),
                                     x_new.reshape(-1), self.rtol, self.atol)


_NO_WEIGHTS = np.zeros(0)
"""The second error estimate of a tableau that has none (memberwise_error_norm's E3)."""


class Euler(FixedStepRungeKutta):
    """Forward Euler, order 1 (fixed step)."""

    name = "euler"
    tableau = EulerTableau
    order = tableau.order


class Heun(FixedStepRungeKutta):
    """Heun's method (explicit trapezoid), order 2 (fixed step)."""

    name = "heun"
    tableau = HeunTableau
    order = tableau.order


class Midpoint(FixedStepRungeKutta):
    """Explicit midpoint rule, order 2 (fixed step)."""

    name = "midpoint"
    tableau = MidpointTableau
    order = tableau.order


class RK3(FixedStepRungeKutta):
    """Kutta's third-order method (fixed step)."""

    name = "rk3"
    tableau = Kutta3Tableau
    order = tableau.order


class RK4(FixedStepRungeKutta):
    """Classical fourth-order Runge-Kutta (fixed step)."""

    name = "rk4"
    tableau = RK4Tableau
    order = tableau.order


class RK23(AdaptiveRungeKutta):
    """Bogacki-Shampine 3(2), FSAL, cubic dense output (MATLAB's ode23)."""

    name = "rk23"
    tableau = BogackiShampineTableau
    order = tableau.order


class Dopri5(AdaptiveRungeKutta):
    """Dormand-Prince 5(4), FSAL, fourth-order dense output (MATLAB's ode45, Simulink's ode45)."""

    name = "dopri5"
    tableau = DormandPrinceTableau
    order = tableau.order


class DOP853(AdaptiveRungeKutta):
    """Hairer's DOP853: order 8, 7th-order dense output (three extra evaluations, only when asked)."""

    name = "dop853"
    tableau = DOP853Tableau
    order = tableau.order
