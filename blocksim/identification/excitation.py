"""Periodic excitation trajectories for identification: finite Fourier series per joint (Swevers,
Verdonck and De Schutter 2007), at rest at t = 0 and at every period's end, with coefficients
optimised to minimise cond(Y_base) under joint position, velocity and acceleration limits and,
when asked, a minimum distance from singular poses (the tool Jacobian's smallest singular value,
`RobotModel.smallest_singular_value`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.optimize

from ..errors import ParameterError
from .base import BaseParameters
from .regressor import IdentificationModel


@dataclass(frozen=True)
class FourierExcitation:
    """q_i(t) = q0_i + sum_{l=1..L} [a_il / (wf l) sin(wf l t) - b_il / (wf l) cos(wf l t)],
    wf = 2 pi frequency: exactly the `FourierSeries` block's formula (a, b are velocity amplitudes,
    rad/s; q0 rad; frequency Hz). At rest at q0 when sum_l b_il / l = sum_l a_il = sum_l l b_il = 0.
    """

    frequency: float
    a: np.ndarray          # (n, L) rad/s
    b: np.ndarray          # (n, L) rad/s
    q0: np.ndarray         # (n,) rad

    @property
    def period(self) -> float:
        return 1.0 / self.frequency

    @property
    def n(self) -> int:
        return self.a.shape[0]

    @property
    def harmonics(self) -> int:
        return self.a.shape[1]

    def evaluate(self, t):
        """q, qd, qdd (N, n) at times t (N,) s."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        w = 2 * np.pi * self.frequency * np.arange(1, self.harmonics + 1)        # (L,)
        s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))                   # (N, L)
        q = self.q0 + (s / w) @ self.a.T - (c / w) @ self.b.T
        qd = c @ self.a.T + s @ self.b.T
        qdd = (c * w) @ self.b.T - (s * w) @ self.a.T
        return q, qd, qdd

    def block_parameters(self) -> dict:
        """The FourierSeries block's parameters (plain lists, ready for YAML or `set`)."""
        return {"frequency": float(self.frequency), "a": self.a.tolist(), "b": self.b.tolist(),
                "q0": self.q0.tolist()}

    def to_yaml(self, path, extra: dict | None = None) -> Path:
        """Write `{type: FourierSeries, frequency, a, b, q0}` (+ `extra` keys) to a YAML file."""
        import yaml
        data = {"type": "FourierSeries", **self.block_parameters(), **(extra or {})}
        path = Path(path)
        path.write_text(yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
        return path

    @classmethod
    def from_mapping(cls, data: dict) -> "FourierExcitation":
        a = np.atleast_2d(np.asarray(data["a"], dtype=float))
        b = np.atleast_2d(np.asarray(data["b"], dtype=float))
        q0 = np.broadcast_to(np.asarray(data.get("q0", 0.0), dtype=float), (a.shape[0],)).copy()
        return cls(float(data["frequency"]), a, b, q0)

    @classmethod
    def from_yaml(cls, path) -> "FourierExcitation":
        import yaml
        return cls.from_mapping(yaml.safe_load(Path(path).read_text()))


@dataclass(frozen=True)
class Limits:
    """Joint limits the excitation must respect: q_min, q_max (rad), qd_max (rad/s), qdd_max
    (rad/s^2), each (n,)."""

    q_min: np.ndarray
    q_max: np.ndarray
    qd_max: np.ndarray
    qdd_max: np.ndarray

    def violation(self, q, qd, qdd) -> float:
        """The largest excess over any limit on the samples given (<= 0 when all are met)."""
        return float(max(np.max(q - self.q_max), np.max(self.q_min - q),
                         np.max(np.abs(qd) - self.qd_max), np.max(np.abs(qdd) - self.qdd_max)))


def _rest_basis(L: int) -> np.ndarray:
    """Orthonormal basis (2L, 2L - 3) of the coefficient vectors [a; b] of one joint at rest at t = 0:
    sum_l a_l = 0, sum_l b_l / l = 0, sum_l l b_l = 0."""
    if L < 3:
        raise ParameterError("a rest-to-rest Fourier excitation needs at least 3 harmonics")
    l = np.arange(1, L + 1, dtype=float)
    A = np.zeros((3, 2 * L))
    A[0, :L] = 1.0
    A[1, L:] = 1.0 / l
    A[2, L:] = l
    return scipy.linalg.null_space(A)


def _design(t, frequency, L):
    """Per-joint maps from [a; b] (2L,) to q - q0, qd, qdd at times t: three (N, 2L) matrices."""
    w = 2 * np.pi * frequency * np.arange(1, L + 1)
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    Gq = np.hstack([s / w, -c / w])
    Gv = np.hstack([c, s])
    Ga = np.hstack([-s * w, c * w])
    return Gq, Gv, Ga


@dataclass
class ExcitationResult:
    """An optimised excitation and how it got there: cond(Y_base) of the random start and of the
    result (on the objective grid), the limit violation on the fine check grid (<= 0: all met),
    the optimiser's message and iteration count."""

    excitation: FourierExcitation
    start: FourierExcitation
    cond_start: float
    cond: float
    violation: float
    message: str
    iterations: int
    history: list = field(default_factory=list)
    singular_min: float | None = None
    """The smallest singular value of the constrained Jacobian rows on the fine grid (None
    without the constraint)."""


class _Problem:
    """The coefficient vector z (n (2L - 3),) of rest-to-rest series and its constraints."""

    def __init__(self, model, basis, frequency, L, q0, limits, n_objective, n_check):
        self.model, self.basis = model, basis
        self.frequency, self.L, self.q0, self.limits = frequency, L, np.asarray(q0, float), limits
        self.N = _rest_basis(L)
        self.m = self.N.shape[1]
        n = model.n
        T = 1.0 / frequency
        self.t_obj = np.arange(n_objective) * T / n_objective
        self.t_chk = np.arange(n_check) * T / n_check
        Gq, Gv, Ga = (G @ self.N for G in _design(self.t_chk, frequency, L))
        # linear constraints h - G z >= 0 on the dense grid, block diagonal over joints
        rows, rhs = [], []
        for j in range(n):
            for G, hi, lo in ((Gq, limits.q_max[j] - self.q0[j], self.q0[j] - limits.q_min[j]),
                              (Gv, limits.qd_max[j], limits.qd_max[j]),
                              (Ga, limits.qdd_max[j], limits.qdd_max[j])):
                for sign, bound in ((1.0, hi), (-1.0, lo)):
                    block = np.zeros((G.shape[0], n * self.m))
                    block[:, j * self.m:(j + 1) * self.m] = sign * G
                    rows.append(block)
                    rhs.append(np.full(G.shape[0], bound))
        # each row divided by its bound: every constraint reads G z <= 1 (well scaled for SLSQP)
        h = np.concatenate(rhs)
        self.G = np.vstack(rows) / h[:, None]
        self.h = np.ones_like(h)

    def excitation(self, z) -> FourierExcitation:
        c = (self.N @ z.reshape(self.model.n, self.m).T).T            # (n, 2L)
        return FourierExcitation(self.frequency, c[:, :self.L].copy(), c[:, self.L:].copy(),
                                 self.q0.copy())

    def log_cond(self, z) -> float:
        q, qd, qdd = self.excitation(z).evaluate(self.t_obj)
        W = self.basis.columns(self.model.stacked(q, qd, qdd))
        # singular values as square roots of the Gram matrix's eigenvalues: two orders of magnitude
        # faster than an SVD of the tall W here, and exact enough below cond = 1e7
        lam = np.linalg.eigvalsh(W.T @ W)
        return float(0.5 * np.log10(lam[-1] / max(lam[0], lam[-1] * 1e-300)))

    def feasible_scale(self, z) -> float:
        """The largest s with G (s z) <= h."""
        g = self.G @ z
        pos = g > 0
        return float(np.min(self.h[pos] / g[pos])) if np.any(pos) else 1.0


def limits_for(model: IdentificationModel, q_min=None, q_max=None, qd_max=1.0, qdd_max=5.0,
               margin: float = 0.0) -> Limits:
    """Limits from the robot's joint range (narrowed by `margin` rad) and/or the values given."""
    n = model.n
    lo = np.broadcast_to(np.asarray(q_min if q_min is not None else model.robot.q_lower, float), (n,))
    hi = np.broadcast_to(np.asarray(q_max if q_max is not None else model.robot.q_upper, float), (n,))
    lo = np.maximum(lo, model.robot.q_lower) + margin
    hi = np.minimum(hi, model.robot.q_upper) - margin
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ParameterError("excitation: give q_min and q_max for joints without limits in the robot file")
    return Limits(lo, hi, np.broadcast_to(np.asarray(qd_max, float), (n,)).copy(),
                  np.broadcast_to(np.asarray(qdd_max, float), (n,)).copy())


def random_excitation(model, frequency, harmonics, q0, limits, seed=0, fill: float = 0.9,
                      n_check: int = 400) -> FourierExcitation:
    """A random rest-to-rest series scaled to use `fill` of the tightest limit (a feasible start)."""
    prob = _Problem(model, None, frequency, harmonics, q0, limits, 2, n_check)
    z = np.random.default_rng(seed).standard_normal(model.n * prob.m)
    z = fill * prob.feasible_scale(z) * z
    return prob.excitation(z * inside_scale(prob.excitation(z), limits))


def optimise_excitation(model: IdentificationModel, basis: BaseParameters, *, frequency: float,
                        harmonics: int, q0, limits: Limits, seed=0, n_objective: int = 60,
                        n_check: int = 150, max_iter: int = 100, fd_step: float = 1e-4,
                        min_singular_value: float | None = None,
                        singular_part: str = "all") -> ExcitationResult:
    """Fourier coefficients minimising cond(Y_base) (on `n_objective` samples of one period) under
    the joint limits (linear in the coefficients, imposed on a grid of `n_check` samples per period
    by SLSQP), from a random feasible start (`seed`). The result is then scaled into the limits on a
    fine grid (200 samples per period of the highest harmonic, `inside_scale`), where the limits are
    checked again (`violation`).

    min_singular_value: the excitation keeps the smallest singular value of the tool Jacobian's
    rows `singular_part` ('all', 'position', 'orientation'; m/rad for position rows) at or above
    it on the check grid, a nonlinear SLSQP constraint (finite-difference Jacobian) that keeps the
    arm away from singular poses, where the motion is badly conditioned and a drive's speeds run
    up; a random start that comes nearer is shrunk towards q0 until it keeps the distance (q0
    itself nearer is a ParameterError), and `singular_min` reports the value reached on the fine
    grid."""
    q0 = np.broadcast_to(np.asarray(q0, dtype=float), (model.n,))
    if np.any(q0 <= limits.q_min) or np.any(q0 >= limits.q_max):
        raise ParameterError("excitation q0 must lie strictly inside the joint limits")
    prob = _Problem(model, basis, frequency, harmonics, q0, limits, n_objective, n_check)
    z = np.random.default_rng(seed).standard_normal(model.n * prob.m)
    z0 = 0.9 * prob.feasible_scale(z) * z
    history = []

    def objective(zv):
        v = prob.log_cond(zv)
        history.append(v)
        return v

    cons = [{"type": "ineq", "fun": lambda zv: prob.h - prob.G @ zv, "jac": lambda zv: -prob.G}]
    robot = model.robot

    def sigma_min(ex: FourierExcitation, t) -> np.ndarray:
        return robot.smallest_singular_value(ex.evaluate(t)[0], singular_part)

    def acceptable(zv) -> bool:
        return min_singular_value is None or \
            float(np.min(sigma_min(prob.excitation(zv), prob.t_chk))) >= (1 - 1e-3) * min_singular_value

    if min_singular_value is not None:
        at_rest = float(robot.smallest_singular_value(q0, singular_part))
        if at_rest < min_singular_value:
            raise ParameterError(f"excitation q0 is nearer a singular pose than min_singular_value "
                                 f"allows: the Jacobian's smallest singular value ({singular_part} "
                                 f"rows) is {at_rest:.4g} there, below {min_singular_value:g}")
        lo, hi = 0.0, 1.0          # a start too near a singular pose is shrunk towards q0
        if not acceptable(z0):
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if acceptable(mid * z0) else (lo, mid)
            z0 = lo * z0
        cons.append({"type": "ineq", "fun": lambda zv: sigma_min(prob.excitation(zv), prob.t_chk)
                     / min_singular_value - 1.0})
    res = scipy.optimize.minimize(objective, z0, method="SLSQP", constraints=cons,
                                  options={"maxiter": max_iter, "ftol": 1e-6, "eps": fd_step})
    z1 = res.x * inside_scale(prob.excitation(res.x), limits)

    best = z1 if prob.log_cond(z1) < prob.log_cond(z0) and acceptable(z1) else z0
    ex = prob.excitation(best)
    violation = limits.violation(*ex.evaluate(_fine_grid(ex)))
    smin = None if min_singular_value is None else float(np.min(sigma_min(ex, _fine_grid(ex))))
    return ExcitationResult(ex, prob.excitation(z0), 10 ** prob.log_cond(z0), 10 ** prob.log_cond(best),
                            violation, str(res.message), int(res.nit), history, smin)


def _fine_grid(ex: FourierExcitation, per_harmonic: int = 200) -> np.ndarray:
    """One period sampled `per_harmonic` times per period of the highest harmonic."""
    count = per_harmonic * ex.harmonics
    return np.arange(count + 1) / (count * ex.frequency)


def inside_scale(ex: FourierExcitation, limits: Limits, safety: float = 1e-3) -> float:
    """The factor (<= 1) on the coefficients that brings the excitation inside every limit on the
    fine grid, less `safety` (relative): between grid points a harmonic's peak can exceed the
    samples by at most 1 - cos(pi / 200) = 1.2e-4 of its amplitude."""
    q, qd, qdd = ex.evaluate(_fine_grid(ex))
    dq = q - ex.q0
    with np.errstate(divide="ignore"):
        ratios = [np.where(dq > 0, (limits.q_max - ex.q0) / dq, np.inf),
                  np.where(dq < 0, (limits.q_min - ex.q0) / dq, np.inf),
                  limits.qd_max / np.abs(qd), limits.qdd_max / np.abs(qdd)]
    s = min(float(np.min(r)) for r in ratios)
    return min(1.0, s * (1.0 - safety))


def condition_number(model: IdentificationModel, basis: BaseParameters, excitation, samples=200):
    """cond(Y_base) of an excitation sampled at `samples` points of one period."""
    t = np.arange(samples) / (samples * excitation.frequency)
    W = basis.columns(model.stacked(*excitation.evaluate(t)))
    return float(np.linalg.cond(W))
