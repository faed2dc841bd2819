"""Estimation of the base parameters by ordinary and weighted least squares (with each parameter's
relative standard deviation), and a physically consistent estimate of the standard parameters
(positive masses, positive definite pseudo-inertias; Wensing, Kim and Slotine 2017) through the
log-Cholesky parametrisation of Rucker and Wensing (2022), solved by scipy.optimize.least_squares."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from .base import BaseParameters
from .regressor import IdentificationModel


@dataclass(frozen=True)
class Estimate:
    """A least-squares estimate of the base parameters.

    beta (b,) in the units of the base parameters; cov (b, b) their covariance; rel_std (b,) the
    relative standard deviation 100 sigma_k / |beta_k| (%); sigma (n,) the torque noise standard
    deviation per joint (N m) estimated from the residuals; residual (N, n) tau - Y_base beta (N m);
    method 'OLS' or 'WLS'.
    """

    beta: np.ndarray
    cov: np.ndarray
    rel_std: np.ndarray
    sigma: np.ndarray
    residual: np.ndarray
    method: str

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))


def _joint_sigma(residual, b):
    """Per-joint noise std from residuals (N, n): ||r_j||^2 / (N - b / n) (the b parameters' degrees
    of freedom shared evenly between the joint equations)."""
    N, n = residual.shape
    dof = max(N - b / n, 1.0)
    return np.sqrt(np.sum(residual ** 2, axis=0) / dof)


def _solve(Yb, tau, weights):
    """Weighted LS: rows of joint j scaled by weights[j]; returns beta and (W^T W)^-1."""
    N, n, b = Yb.shape
    A = (Yb * weights[None, :, None]).reshape(-1, b)
    y = (tau * weights[None, :]).reshape(-1)
    Q, R = np.linalg.qr(A)
    beta = scipy.linalg.solve_triangular(R, Q.T @ y)
    Rinv = scipy.linalg.solve_triangular(R, np.eye(b))
    return beta, Rinv @ Rinv.T


def ordinary_least_squares(Yb, tau) -> Estimate:
    """OLS on Y_base (N, n, b) and tau (N, n): beta = argmin ||tau - Y_base beta||. Its covariance
    takes one noise variance for every joint (the mean of the per-joint estimates), the textbook
    OLS assumption that WLS drops."""
    N, n, b = Yb.shape
    beta, P = _solve(Yb, tau, np.ones(n))
    r = tau - Yb @ beta
    s2 = np.sum(r ** 2) / max(N * n - b, 1)
    cov = s2 * P
    return Estimate(beta, cov, _rel(beta, cov), _joint_sigma(r, b), r, "OLS")


def weighted_least_squares(Yb, tau, sigma=None, iterations: int = 2) -> Estimate:
    """WLS: each joint's equations weighted by 1 / sigma_j, sigma from the OLS residuals (or given,
    e.g. from the spread between periods), then re-estimated from the WLS residuals (`iterations`
    rounds). cov = (Y^T Sigma^-1 Y)^-1 with Sigma = diag(sigma_j^2)."""
    N, n, b = Yb.shape
    if sigma is None:
        sigma = ordinary_least_squares(Yb, tau).sigma
        fixed = False
    else:
        fixed = True
    sigma = np.maximum(np.asarray(sigma, float), 1e-12 * max(1.0, float(np.max(np.abs(tau)))))
    for _ in range(max(1, iterations)):
        beta, P = _solve(Yb, tau, 1.0 / sigma)
        r = tau - Yb @ beta
        if fixed:
            break
        sigma = np.maximum(_joint_sigma(r, b), 1e-300)
    return Estimate(beta, P, _rel(beta, P), sigma, r, "WLS")


def _rel(beta, cov):
    return 100.0 * np.sqrt(np.diag(cov)) / np.maximum(np.abs(beta), 1e-300)


# ----------------------------------------------------------------------------- physical consistency

def pseudo_inertia(theta10) -> np.ndarray:
    """The 4x4 pseudo-inertia J = [[Sigma, h], [h^T, m]] of ten standard parameters (m, h = m c,
    inertia I about the frame origin): Sigma = tr(I)/2 1 - I is the second moment of the mass
    distribution. A physical body has J positive (semi-)definite (Wensing et al. 2017), which implies
    m > 0 and the triangle inequalities on the principal moments."""
    m, hx, hy, hz, xx, xy, xz, yy, yz, zz = (float(v) for v in theta10)
    I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = (hx, hy, hz)
    J[3, 3] = m
    return J


def _theta_of_pseudo(J) -> np.ndarray:
    S = J[:3, :3]
    I = np.trace(S) * np.eye(3) - S
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3],
                     I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]])


def log_cholesky_to_theta(x) -> np.ndarray:
    """Ten standard parameters of the log-Cholesky vector x = (alpha, d1, d2, d3, s12, s23, s13, t1,
    t2, t3): J = U U^T, U = e^alpha [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3],
    [0, 0, 0, 1]] (Rucker and Wensing 2022). Every x gives a positive definite J, hence a physically
    consistent body, and every such body has exactly one x."""
    al, d1, d2, d3, s12, s23, s13, t1, t2, t3 = x
    U = np.exp(al) * np.array([[np.exp(d1), s12, s13, t1], [0.0, np.exp(d2), s23, t2],
                               [0.0, 0.0, np.exp(d3), t3], [0.0, 0.0, 0.0, 1.0]])
    return _theta_of_pseudo(U @ U.T)


def _log_cholesky_jacobian(x) -> np.ndarray:
    """d theta / d x (10, 10) of `log_cholesky_to_theta` at x (dJ = dU U^T + U dU^T, theta linear
    in J)."""
    al, d1, d2, d3, s12, s23, s13, t1, t2, t3 = x
    e = np.exp(al)
    U = e * np.array([[np.exp(d1), s12, s13, t1], [0.0, np.exp(d2), s23, t2],
                      [0.0, 0.0, np.exp(d3), t3], [0.0, 0.0, 0.0, 1.0]])
    entries = [(0, 0, np.exp(d1)), (1, 1, np.exp(d2)), (2, 2, np.exp(d3)), (0, 1, 1.0), (1, 2, 1.0),
               (0, 2, 1.0), (0, 3, 1.0), (1, 3, 1.0), (2, 3, 1.0)]
    out = np.empty((10, 10))
    dU = U
    out[:, 0] = _theta_of_pseudo(dU @ U.T + U @ dU.T)
    for k, (r, c, v) in enumerate(entries, start=1):
        dU = np.zeros((4, 4))
        dU[r, c] = e * v
        out[:, k] = _theta_of_pseudo(dU @ U.T + U @ dU.T)
    return out


def theta_to_log_cholesky(theta10, floor: float = 1e-6) -> np.ndarray:
    """Inverse of `log_cholesky_to_theta`. A semi-definite or inconsistent J (a slender rod, an OLS
    estimate) is first lifted to eigenvalues >= floor * max(trace J, 1e-9)."""
    J = pseudo_inertia(theta10)
    w, V = np.linalg.eigh(J)
    w = np.maximum(w, floor * max(float(np.sum(np.abs(w))), 1e-9))
    J = (V * w) @ V.T
    P = np.eye(4)[::-1]
    L = np.linalg.cholesky(P @ J @ P)           # J = U U^T with U = P L P upper triangular
    U = P @ L @ P
    al = np.log(U[3, 3])
    V = U / U[3, 3]
    return np.array([al, np.log(V[0, 0]), np.log(V[1, 1]), np.log(V[2, 2]), V[0, 1], V[1, 2],
                     V[0, 2], V[0, 3], V[1, 3], V[2, 3]])


@dataclass(frozen=True)
class Consistency:
    """Per link: mass m (kg) and the smallest eigenvalue of the pseudo-inertia (kg m^2); per joint
    the rotor inertia and friction entries that must not be negative. `ok` when all masses and
    eigenvalues are > 0 and rotor inertias, viscous and Coulomb levels have the right sign."""

    masses: np.ndarray
    min_eig: np.ndarray
    sign_violations: list

    @property
    def ok(self) -> bool:
        return bool(np.all(self.masses > 0) and np.all(self.min_eig > 0) and not self.sign_violations)


def consistency(model: IdentificationModel, theta) -> Consistency:
    """Physical-consistency check of a standard parameter vector."""
    theta = np.asarray(theta, float)
    masses = np.array([theta[model.link_slice(i)][0] for i in range(model.n)])
    eig = np.array([np.linalg.eigvalsh(pseudo_inertia(theta[model.link_slice(i)]))[0]
                    for i in range(model.n)])
    bad = []
    for k in range(model.rotor_slice().start, model.rotor_slice().stop):
        if theta[k] < 0:
            bad.append(model.names[k])
    fr = model.friction_slice()
    for k in range(fr.start, fr.stop):
        kind = (k - fr.start) % 3
        if (kind in (0, 1) and theta[k] < 0) or (kind == 2 and theta[k] > 0):
            bad.append(model.names[k])
    return Consistency(masses, eig, bad)


def complete_standard(basis: BaseParameters, beta, prior) -> np.ndarray:
    """A standard parameter vector with K theta = beta: the dependent parameters keep their prior
    (CAD) values, the independent ones absorb the rest, theta_I = beta - Kd theta_D. It is what an
    OLS estimate says about the individual links (used for its consistency check)."""
    theta = np.array(prior, dtype=float)
    ind, dep = basis.independent, basis.dependent
    theta[ind] = np.asarray(beta, float) - basis.K[:, dep] @ theta[dep]
    return theta


@dataclass(frozen=True)
class ConsistentEstimate:
    """The physically consistent estimate: theta (p,) standard parameters, beta = K theta, cost
    (half the weighted squared torque residual plus the prior term), and the solver's message."""

    theta: np.ndarray
    beta: np.ndarray
    cost: float
    message: str
    nfev: int


def physically_consistent(model: IdentificationModel, basis: BaseParameters, Yb, tau, sigma,
                          prior, prior_weight: float = 1e-3, start=None,
                          max_nfev: int = 500) -> ConsistentEstimate:
    """min over x of ||Sigma^-1/2 (tau - Y_base K theta(x))||^2 + prior_weight ||x - x_prior||^2.

    theta(x): each link from its log-Cholesky vector (always a positive definite pseudo-inertia,
    hence positive mass), rotor inertias Ia >= 0, viscous fv >= 0, Coulomb fcp >= 0 >= fcn (bounds),
    Stribeck excess free. The data enter through the triangular factor R of the weighted Y_base
    (||Q R beta - y||^2 = ||R beta - Q^T y||^2 + const), so each residual evaluation is b numbers
    however long the record. The prior term (on the log-Cholesky vectors of the prior, i.e. CAD,
    links) only decides the directions the torque cannot see (the non-base combinations) and weakly
    regularises poorly excited ones; prior_weight is per unit of the weighted squared residual,
    whose scale is one per sample.
    """
    N, n, b = Yb.shape
    w = 1.0 / np.asarray(sigma, float)
    A = (Yb * w[None, :, None]).reshape(-1, b)
    y = (tau * w[None, :]).reshape(-1)
    Q, R = np.linalg.qr(A)
    z = Q.T @ y
    prior = np.asarray(prior, float)
    nl = 10 * model.n
    x_prior = np.concatenate([theta_to_log_cholesky(prior[model.link_slice(i)])
                              for i in range(model.n)])
    lin_lo = np.full(model.p - nl, -np.inf)
    lin_hi = np.full(model.p - nl, np.inf)
    rot, fr = model.rotor_slice(), model.friction_slice()
    lin_lo[rot.start - nl:rot.stop - nl] = 0.0
    for k in range(fr.start, fr.stop):
        if (k - fr.start) % 3 == 2:
            lin_hi[k - nl] = 0.0
        else:
            lin_lo[k - nl] = 0.0
    lo = np.concatenate([np.full(nl, -np.inf), lin_lo])
    hi = np.concatenate([np.full(nl, np.inf), lin_hi])
    sqrt_w = np.sqrt(prior_weight)

    def theta_of(x):
        links = [log_cholesky_to_theta(x[10 * i:10 * i + 10]) for i in range(model.n)]
        return np.concatenate(links + [x[nl:]])

    def residual(x):
        return np.concatenate([R @ (basis.K @ theta_of(x)) - z, sqrt_w * (x[:nl] - x_prior)])

    RK = R @ basis.K
    jac_prior = np.hstack([sqrt_w * np.eye(nl), np.zeros((nl, model.p - nl))])

    def jacobian(x):
        D = np.zeros((model.p, model.p))
        for i in range(model.n):
            D[10 * i:10 * i + 10, 10 * i:10 * i + 10] = _log_cholesky_jacobian(x[10 * i:10 * i + 10])
        D[nl:, nl:] = np.eye(model.p - nl)
        return np.vstack([RK @ D, jac_prior])

    if start is None:
        lin0 = prior[nl:].copy()
    else:
        lin0 = np.asarray(start, float)[nl:].copy()
        x_start = np.concatenate([theta_to_log_cholesky(np.asarray(start, float)[model.link_slice(i)])
                                  for i in range(model.n)])
    span = np.maximum(np.abs(lin0), 1e-3)
    lin0 = np.clip(lin0, lin_lo + 1e-3 * span, lin_hi - 1e-3 * span)
    x0 = np.concatenate([x_prior if start is None else x_start, lin0])
    # a trial step far outside (the log-Cholesky exponentials) overflows in the cost, is rejected
    # by the trust region and changes nothing: not a warning for the user
    with np.errstate(over="ignore", invalid="ignore"):
        sol = scipy.optimize.least_squares(residual, x0, jac=jacobian, bounds=(lo, hi),
                                           method="trf", x_scale="jac", tr_solver="lsmr",
                                           xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=max_nfev)
    theta = theta_of(sol.x)
    return ConsistentEstimate(theta, basis.K @ theta, float(sol.cost), str(sol.message), int(sol.nfev))


# ----------------------------------------------------------------------------- friction sign width

def fit_friction_smoothing(model: IdentificationModel, basis: BaseParameters, data, Y,
                           bounds=(1e-4, 1.0)) -> tuple[float, np.ndarray]:
    """The width eps (rad/s) of the friction law's smooth sign tanh(qd / eps) that the data fit
    best, and the regressor Y (N, n, p) with its sign columns at that width.

    A separable least squares: for each eps the base parameters enter linearly, so the WLS
    residual (weights 1 / sigma_j of a first WLS fit on Y, kept fixed so residuals at different
    widths compare) is minimised over log10 eps in `bounds` by a bounded scalar search, and the
    exact sign (eps = 0) is taken when it fits better still. `data` is the ProcessedData Y was
    built from (`data.parallel(model.regressor(*data.states))`): only the sign columns are
    rebuilt, on its full-rate speeds, and filtered as the rest."""
    cols = model.sign_columns()
    if cols.size == 0:
        return model.friction_smoothing, Y
    qd = data.states[1]
    weights = 1.0 / weighted_least_squares(basis.columns(Y), data.tau).sigma

    def at(eps):
        Yk = np.array(Y)
        Yk[..., cols] = data.parallel(model.sign_regressor(qd, eps))
        return Yk

    def cost(eps):
        Yb = basis.columns(at(eps))
        beta, _ = _solve(Yb, data.tau, weights)
        return float(np.sum(((data.tau - Yb @ beta) * weights) ** 2))

    lo, hi = np.log10(bounds[0]), np.log10(bounds[1])
    sol = scipy.optimize.minimize_scalar(lambda x: cost(10.0 ** x), bounds=(lo, hi),
                                         method="bounded", options={"xatol": 0.01})
    eps = float(10.0 ** sol.x)
    if cost(0.0) < cost(eps):
        eps = 0.0
    return eps, at(eps)
