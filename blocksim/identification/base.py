"""Base parameters (Gautier and Khalil): the identifiable linear combinations of the standard
parameters, found by QR with column pivoting of a regressor stacked over many random states."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .regressor import IdentificationModel


def random_states(model: IdentificationModel, count: int, seed=0, q_range=None,
                  qd_scale: float = 2.0, qdd_scale: float = 5.0):
    """`count` random joint states (q, qd, qdd), each (count, n): q uniform in the joint limits (or
    [-pi, pi] where a limit is infinite; `q_range` (2, n) overrides), qd and qdd normal with standard
    deviations qd_scale (rad/s) and qdd_scale (rad/s^2). Generic states: every parameter direction
    that can show in the torque does."""
    rng = np.random.default_rng(seed)
    n = model.n
    if q_range is None:
        lo = np.where(np.isfinite(model.robot.q_lower), model.robot.q_lower, -np.pi)
        hi = np.where(np.isfinite(model.robot.q_upper), model.robot.q_upper, np.pi)
    else:
        lo, hi = (np.asarray(v, dtype=float) for v in q_range)
    q = rng.uniform(lo, hi, size=(count, n))
    qd = qd_scale * rng.standard_normal((count, n))
    qdd = qdd_scale * rng.standard_normal((count, n))
    return q, qd, qdd


@dataclass(frozen=True)
class BaseParameters:
    """The base parameter set of a model: theta_base = K theta (b entries, b = rank).

    independent: indices (into the standard parameters) of the b columns kept, ascending;
    dependent: the others; K (b, p): K[:, independent] = I, K[:, dependent] = Kd, so that
    Y = Y[:, independent] K for every state (Y_base = Y[:, independent]); base_names: the name of
    the independent parameter each base parameter is built on, with an R suffix when others are
    regrouped into it (Khalil's ZZ1R); `diagonal` |R_kk| of the column-normalised pivoted QR, whose
    drop below `tolerance` fixes the rank.
    """

    names: tuple
    independent: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    rank: int
    tolerance: float
    diagonal: np.ndarray

    @property
    def base_names(self) -> list[str]:
        out = []
        for k, i in enumerate(self.independent):
            regrouped = np.any(np.abs(self.K[k, self.dependent]) > 0)
            out.append(self.names[i] + ("R" if regrouped else ""))
        return out

    @property
    def gap(self) -> float:
        """|R_{b-1,b-1}| / |R_{b,b}|: how clearly the rank stands out (inf when full rank)."""
        if self.rank >= len(self.diagonal):
            return np.inf
        return float(self.diagonal[self.rank - 1] / max(self.diagonal[self.rank], 1e-300))

    def base(self, theta) -> np.ndarray:
        """theta_base = K theta."""
        return self.K @ np.asarray(theta, dtype=float)

    def columns(self, Y) -> np.ndarray:
        """Y_base: the independent columns of a regressor (..., p) -> (..., b)."""
        return np.asarray(Y)[..., self.independent]

    def expressions(self, digits: int = 6) -> list[str]:
        """Each base parameter as the named linear combination of standard parameters."""
        lines = []
        for k, (name, i) in enumerate(zip(self.base_names, self.independent)):
            terms = [self.names[i]]
            for j in self.dependent:
                c = self.K[k, j]
                if c == 0.0:
                    continue
                sign = "-" if c < 0 else "+"
                mag = abs(c)
                coef = "" if abs(mag - 1.0) < 10 ** -digits else f"{mag:.{digits}g} "
                terms.append(f"{sign} {coef}{self.names[j]}")
            lines.append(f"{name} = " + " ".join(terms))
        return lines

    def unidentifiable(self) -> list[str]:
        """Standard parameters that appear in no base parameter (no effect on the torque)."""
        return [self.names[j] for j in self.dependent if not np.any(self.K[:, j] != 0.0)]


def base_parameters(model: IdentificationModel, samples: int = 200, seed=0, tolerance=None,
                    q_range=None, selection: str = "ordered", clean: float = 1e-10,
                    zero_column: float = 1e-10, qd_scale: float = 2.0,
                    qdd_scale: float = 5.0) -> BaseParameters:
    """Base parameters of `model` from its regressor W stacked over `samples` random states
    (`random_states` with qd_scale, qdd_scale; both 0: the static regressor Y(q, 0, 0), whose base
    parameters are the identifiable gravity combinations).

    Columns whose norm is below `zero_column` times the largest are round-off (a parameter with no
    effect on the torque, computed as a difference of equal terms) and are zeroed; the others are
    scaled to unit norm (so the rank does not depend on parameter units), then QR with
    column pivoting (scipy.linalg.qr, pivoting=True): the rank b is the number of diagonal entries
    |R_kk| above the tolerance (default max(rows, p) eps |R_00|, NumPy's matrix_rank rule).

    The independent set: `selection="pivoted"` keeps the first b pivot columns as they are;
    `"ordered"` (default) walks the columns in the standard order (link 1 first, then rotor and
    friction entries) with plain QR and keeps a column when it adds a direction (|R_kk| above the
    tolerance), Gautier's numerical rule: distal parameters then regroup into proximal ones, as in
    Khalil's symbolic tables (ZZ1R = ZZ1 + ...). If the ordered walk does not find exactly b columns
    (a near-dependent column), the pivoted set is used. Then Y_D = Y_I Kd (least squares, exact up
    to round-off), so Y theta = Y_I (theta_I + Kd theta_D); entries of Kd below `clean` times the
    largest are round-off and set to 0, so the printed combinations name only what truly regroups.
    """
    q, qd, qdd = random_states(model, samples, seed, q_range, qd_scale, qdd_scale)
    W = model.stacked(q, qd, qdd)
    norms = np.linalg.norm(W, axis=0)
    live = norms > zero_column * np.max(norms)
    scale = np.where(live, norms, 1.0)
    Ws = np.where(live, W / scale, 0.0)
    _, R, perm = scipy.linalg.qr(Ws, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    tol = max(W.shape) * np.finfo(float).eps * diag[0] if tolerance is None else float(tolerance)
    b = int(np.sum(diag > tol))
    ind = np.sort(perm[:b])
    if selection == "ordered":
        _, R0 = np.linalg.qr(Ws)
        walk = np.nonzero(np.abs(np.diag(R0)) > max(tol, 1e3 * np.finfo(float).eps))[0]
        if len(walk) == b and np.linalg.matrix_rank(Ws[:, walk], tol=tol) == b:
            ind = walk
    elif selection != "pivoted":
        raise ValueError(f"selection must be 'ordered' or 'pivoted', got {selection!r}")
    dep = np.setdiff1d(np.arange(model.p), ind)
    Kd_scaled, *_ = np.linalg.lstsq(Ws[:, ind], Ws[:, dep], rcond=None)
    Kd = Kd_scaled * scale[dep][None, :] / scale[ind][:, None]
    if Kd.size:
        Kd[np.abs(Kd) < clean * max(1.0, np.max(np.abs(Kd)))] = 0.0
    K = np.zeros((b, model.p))
    K[np.arange(b), ind] = 1.0
    K[:, dep] = Kd
    return BaseParameters(names=tuple(model.names), independent=ind, dependent=dep,
                          K=K, rank=b, tolerance=tol, diagonal=diag)


def regressor_rank(W, tolerance=None) -> int:
    """Numerical rank of a stacked regressor after unit-norm column scaling, by the same rule as
    `base_parameters` (singular values above max(rows, cols) eps s_max by default)."""
    norms = np.linalg.norm(W, axis=0)
    live = norms > 1e-10 * np.max(norms)
    s = np.linalg.svd(np.where(live, W / np.where(live, norms, 1.0), 0.0), compute_uv=False)
    tol = max(W.shape) * np.finfo(float).eps * s[0] if tolerance is None else float(tolerance)
    return int(np.sum(s > tol))
