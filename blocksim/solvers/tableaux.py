"""Butcher tableaux of blocksim's explicit Runge-Kutta methods: the methods are data, stepped by rk_step()."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from blocksim.solvers import dop853_coefficients as dop853


class Tableau:
    """An explicit Runge-Kutta method as data (notation of Hairer, Norsett & Wanner, Solving ODEs I, II.1).

    With s stages k_i = f(t + c_i h, x + h sum_j A_ij k_j) the step is x_new = x + h sum_i b_i k_i.
    Row s of the stage array K holds f(t + h, x_new) ("first same as last" when `fsal`).
    - E: (s + 1,) weights of the embedded error estimate, err = h * E . K (None: no estimate).
    - E3: (s + 1,) DOP853's second, 3rd-order estimate, combined with E as in Hairer's code (None otherwise).
    - P: (s + 1 + extra, degree) dense output in the power basis,
      x(t_old + theta h) = x_old + h sum_k K_k sum_j P[k, j] theta**(j + 1); None: cubic Hermite.
    - A_dense, c_dense: the extra stages the dense output needs (rows s + 1 ... of K), evaluated on demand.
    Subclasses set the class attributes; __init_subclass__ checks the shapes and stores contiguous
    float64 rows (the stage kernels read one row at a time).
    """

    order: ClassVar[int]                  # order of the propagated solution x_new
    error_order: ClassVar[int | None] = None  # order of the embedded estimate (error ~ h**(error_order + 1))
    fsal: ClassVar[bool] = False          # f(t_new, x_new) is evaluated by every step (error estimate uses it)
    A: ClassVar[np.ndarray]
    b: ClassVar[np.ndarray]
    c: ClassVar[np.ndarray]
    E: ClassVar[np.ndarray | None] = None
    E3: ClassVar[np.ndarray | None] = None
    P: ClassVar[np.ndarray | None] = None
    A_dense: ClassVar[np.ndarray | None] = None
    c_dense: ClassVar[np.ndarray | None] = None
    n_stages: ClassVar[int]
    P_rows: ClassVar[np.ndarray | None]   # P transposed: one contiguous row of stage weights per power

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.A = np.ascontiguousarray(cls.A, dtype=float)
        cls.b = np.ascontiguousarray(cls.b, dtype=float)
        cls.c = np.ascontiguousarray(cls.c, dtype=float)
        s = cls.n_stages = len(cls.b)
        assert cls.A.shape == (s, s) and cls.c.shape == (s,)
        assert np.all(np.triu(cls.A) == 0), "explicit methods only"
        for name in ("E", "E3"):
            weights = getattr(cls, name)
            if weights is not None:
                setattr(cls, name, np.ascontiguousarray(weights, dtype=float))
                assert getattr(cls, name).shape == (s + 1,)
        if cls.E is not None:
            assert cls.fsal and cls.error_order is not None
        if cls.A_dense is not None:
            cls.A_dense = np.ascontiguousarray(cls.A_dense, dtype=float)
            cls.c_dense = np.ascontiguousarray(cls.c_dense, dtype=float)
        cls.P_rows = None if cls.P is None else np.ascontiguousarray(np.asarray(cls.P, dtype=float).T)


class EulerTableau(Tableau):
    """Forward Euler, order 1."""

    order = 1
    A = [[0.0]]
    b = [1.0]
    c = [0.0]


class HeunTableau(Tableau):
    """Heun's method (explicit trapezoid), order 2."""

    order = 2
    A = [[0.0, 0.0],
         [1.0, 0.0]]
    b = [0.5, 0.5]
    c = [0.0, 1.0]


class MidpointTableau(Tableau):
    """Explicit midpoint rule, order 2."""

    order = 2
    A = [[0.0, 0.0],
         [0.5, 0.0]]
    b = [0.0, 1.0]
    c = [0.0, 0.5]


class Kutta3Tableau(Tableau):
    """Kutta's third-order method (Hairer, Norsett & Wanner, Solving ODEs I, table II.1.1)."""

    order = 3
    A = [[0.0, 0.0, 0.0],
         [0.5, 0.0, 0.0],
         [-1.0, 2.0, 0.0]]
    b = [1 / 6, 2 / 3, 1 / 6]
    c = [0.0, 0.5, 1.0]


class RK4Tableau(Tableau):
    """The classical fourth-order Runge-Kutta method."""

    order = 4
    A = [[0.0, 0.0, 0.0, 0.0],
         [0.5, 0.0, 0.0, 0.0],
         [0.0, 0.5, 0.0, 0.0],
         [0.0, 0.0, 1.0, 0.0]]
    b = [1 / 6, 1 / 3, 1 / 3, 1 / 6]
    c = [0.0, 0.5, 0.5, 1.0]


class BogackiShampineTableau(Tableau):
    """Bogacki-Shampine 3(2) pair with its cubic Hermite dense output.

    Source: P. Bogacki, L. F. Shampine, "A 3(2) pair of Runge-Kutta formulas", Appl. Math. Lett. 2 (1989);
    coefficients as in SciPy's RK23 (scipy/integrate/_ivp/rk.py).
    """

    order = 3
    error_order = 2
    fsal = True
    A = [[0.0, 0.0, 0.0],
         [1 / 2, 0.0, 0.0],
         [0.0, 3 / 4, 0.0]]
    b = [2 / 9, 1 / 3, 4 / 9]
    c = [0.0, 1 / 2, 3 / 4]
    E = [5 / 72, -1 / 12, -1 / 9, 1 / 8]
    P = [[1, -4 / 3, 5 / 9],
         [0, 1, -2 / 3],
         [0, 4 / 3, -8 / 9],
         [0, -1, 1]]


class DormandPrinceTableau(Tableau):
    """Dormand-Prince 5(4) pair with Shampine's fourth-order dense output.

    Sources: J. R. Dormand, P. J. Prince, "A family of embedded Runge-Kutta formulae", J. Comp. Appl. Math. 6
    (1980); L. W. Shampine, "Some practical Runge-Kutta formulas", Math. Comp. 46 (1986) (dense output, optimum
    c_6); coefficients as in SciPy's RK45 (scipy/integrate/_ivp/rk.py).
    """

    order = 5
    error_order = 4
    fsal = True
    A = [[0, 0, 0, 0, 0, 0],
         [1 / 5, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0]]
    b = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]
    c = [0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1]
    E = [-71 / 57600, 0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40]
    P = [[1, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432],
         [0, 0, 0, 0],
         [0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799],
         [0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072],
         [0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632],
         [0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844],
         [0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423]]


def _hairer_dense_output_power_basis(b: np.ndarray, D: np.ndarray, n_total: int, fsal_row: int) -> np.ndarray:
    """DOP853's dense output rewritten in the power basis used by Tableau.P.

    Hairer's code evaluates x_old + theta (F0 + (1-theta)(F1 + theta (F2 + (1-theta)(F3 + ...)))) with
    F0 = h b.K, F1 = h K0 - F0, F2 = 2 F0 - h (K0 + f_new), F3..F6 = h D.K. Each F_i is h c_i.K, and its
    weight w_i(theta) = theta (1-theta) theta (1-theta) ... (i + 1 factors) is expanded here into monomials.
    Returns P of shape (n_total, 7).
    """
    n_power = 3 + len(D)
    weights = np.zeros((n_power, n_total))
    weights[0, :len(b)] = b
    weights[1] = -weights[0]
    weights[1, 0] += 1.0
    weights[2] = 2.0 * weights[0]
    weights[2, 0] -= 1.0
    weights[2, fsal_row] -= 1.0
    weights[3:] = D
    P = np.zeros((n_total, n_power))
    w = np.polynomial.Polynomial([0.0, 1.0])
    one_minus = np.polynomial.Polynomial([1.0, -1.0])
    theta = np.polynomial.Polynomial([0.0, 1.0])
    for i in range(n_power):
        if i > 0:
            w = w * (one_minus if i % 2 == 1 else theta)
        coef = np.zeros(n_power + 1)
        coef[:len(w.coef)] = w.coef
        P += np.outer(weights[i], coef[1:])
    return P


class DOP853Tableau(Tableau):
    """Hairer's DOP853: order 8 with 5th- and 3rd-order error estimates and a 7th-order dense output
    that needs three extra stages. Coefficients: blocksim/solvers/dop853_coefficients.py (Hairer's code)."""

    order = 8
    error_order = 7
    fsal = True
    A = dop853.A[:dop853.N_STAGES, :dop853.N_STAGES]
    b = dop853.B
    c = dop853.C[:dop853.N_STAGES]
    E = dop853.E5
    E3 = dop853.E3
    A_dense = dop853.A[dop853.N_STAGES + 1:]
    c_dense = dop853.C[dop853.N_STAGES + 1:]
    P = _hairer_dense_output_power_basis(dop853.B, dop853.D, dop853.N_STAGES_EXTENDED, dop853.N_STAGES)
