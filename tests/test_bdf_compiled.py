"""The compiled BDF loop (engine/bdf_loop.py, solvers/bdf_kernels.py): a run under bdf without
zero crossings steps inside compiled code with a variable-order BDF (NDF) of its own, SciPy's
method, constants and rules. Its kernels are checked against independent arithmetic (backward
differences and interpolation of polynomials, SciPy's own functions), its runs against analytic
solutions and against the interpreted run (SciPy's BDF), the Bari problems in
tests/test_stiff_references.py; its batch, divergence and interrupt runs beside radau's in
tests/test_stiff_compiled.py."""
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate._ivp import bdf as scipy_bdf

import blocksim
from blocksim.solvers import bdf_kernels as bk
from test_quiet_hits import LOUD, QUIET, x_exact

pytestmark = pytest.mark.usefixtures("compiled_cache")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def backward_differences(y, t, h, order):
    """D[j] = the j-th backward difference of y at t on the grid of step h, j = 0..order, for a
    batch of one member and the states y(t) (n,)."""
    values = [np.asarray(y(t - k * h), dtype=float) for k in range(order + 1)]
    D = np.zeros((bk.MAX_ORDER + 3, 1, len(values[0])))
    for j in range(order + 1):
        D[j, 0] = sum((-1) ** k * math.comb(j, k) * values[k] for k in range(j + 1))
    return D


def cubic(t):
    return np.array([1.0 - 2.0 * t + 0.5 * t ** 2 - 3.0 * t ** 3, 4.0 + t ** 3])


def scratch():
    return [np.zeros((bk.MAX_ORDER + 1, bk.MAX_ORDER + 1)) for _ in range(3)] + \
        [np.zeros(bk.MAX_ORDER + 1)]


@pytest.mark.parametrize("order", [3, 4, 5])
@pytest.mark.parametrize("factor", [0.5, 0.2, 1.7, 10.0])
def test_a_step_change_gives_the_differences_on_the_new_grid(order, factor):
    # for a polynomial of degree <= order the differences are exact on any grid: rescaling them
    # to the step h * factor must give the differences taken on that grid
    t, h = 0.7, 0.05
    D = backward_differences(cubic, t, h, order)
    bk.change_differences(D, order, factor, *scratch())
    expected = backward_differences(cubic, t, h * factor, order)
    # (R U)'s entries grow as factor^order (about 1e6 at factor 10, order 5): its rounding with
    # them, about 1e-9 of the differences' size there
    np.testing.assert_allclose(D[:order + 1], expected[:order + 1], rtol=1e-9, atol=1e-8)


def test_the_step_change_is_scipys():
    rng = np.random.default_rng(7)
    for order in range(1, bk.MAX_ORDER + 1):
        D = rng.normal(size=(bk.MAX_ORDER + 3, 1, 4))
        theirs = D[:, 0].copy()
        scipy_bdf.change_D(theirs, order, 0.37)
        bk.change_differences(D, order, 0.37, *scratch())
        np.testing.assert_allclose(D[:, 0], theirs, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("order", [3, 4, 5])
def test_the_dense_output_interpolates_the_grid(order):
    # the interpolating polynomial of a cubic through order + 1 >= 4 grid points is the cubic
    t, h = 0.7, 0.05
    D = backward_differences(cubic, t, h, order)
    out = np.zeros((1, 2))
    for te in (t, t - 0.3 * h, t - h, t - 2.5 * h):
        bk.dense_at(te, t, h, order, D, out)
        np.testing.assert_allclose(out[0], cubic(te), rtol=1e-13)
    # and SciPy's BdfDenseOutput gives the same numbers
    dense = scipy_bdf.BdfDenseOutput(t - h, t, h, order, D[:order + 1, 0].copy())
    bk.dense_at(t - 0.3 * h, t, h, order, D, out)
    np.testing.assert_allclose(out[0], dense(t - 0.3 * h), rtol=1e-14)


def test_the_predictor_and_the_update_follow_the_differences():
    # on the differences of a cubic (order 3) the predictor is the cubic one step ahead, and an
    # accepted step whose corrector lands on the cubic leaves the differences at the new time
    t, h, order = 0.7, 0.05, 3
    D = backward_differences(cubic, t, h, order)
    x_predict, psi = np.zeros((1, 2)), np.zeros((1, 2))
    bk.predict(D, order, x_predict, psi)
    # the 4th difference of a cubic vanishes: the predictor (the sum of the differences up to
    # order) is the cubic's value at t + h
    np.testing.assert_allclose(x_predict[0], cubic(t + h), rtol=1e-13)
    expected_psi = sum(bk.GAMMA[j] * D[j, 0] for j in range(1, order + 1)) / bk.ALPHA[order]
    np.testing.assert_allclose(psi[0], expected_psi, rtol=1e-14)
    d = (cubic(t + h) - x_predict[0]).reshape(1, 2)        # the corrector's distance: ~0
    bk.update_differences(D, d, order)
    np.testing.assert_allclose(D[:order + 1], backward_differences(cubic, t + h, h, order)[:order + 1],
                               rtol=1e-12, atol=1e-12)


def test_the_order_rule_weighs_the_neighbouring_orders():
    # order 2, error norms (below, at, above) = (0.5, 0.1, 0.2): 0.5^(-1/2) = 1.41,
    # 0.1^(-1/3) = 2.15, 0.2^(-1/4) = 1.50: the order stays, the step grows by 0.9 * 2.15
    order, factor = bk.order_choice(2, 0.5, 0.1, 0.2, 0.9)
    assert order == 2 and factor == pytest.approx(0.9 * 0.1 ** (-1 / 3))
    order, factor = bk.order_choice(2, 0.01, 0.1, 0.2, 0.9)      # below wins: 10
    assert order == 1 and factor == pytest.approx(9.0)
    order, factor = bk.order_choice(1, np.inf, 0.5, 1e-6, 1.0)   # above wins, at most MAX_FACTOR
    assert order == 2 and factor == bk.MAX_FACTOR
    order, factor = bk.order_choice(5, 1.0, 1.0, np.inf, 0.9)    # a tie keeps the lower order
    assert order == 4 and factor == pytest.approx(0.9)


def test_the_newton_increment_solves_the_iteration_matrix():
    rng = np.random.default_rng(3)
    J = rng.normal(size=(2, 3, 3))
    c = 0.04
    LU, piv = np.zeros((2, 3, 3)), np.zeros((2, 3), dtype=np.int64)
    bk.iteration_matrix(J, c, LU, piv)
    f, psi, d = (rng.normal(size=(2, 3)) for _ in range(3))
    dy = np.zeros((2, 3))
    bk.newton_increment(f, c, psi, d, LU, piv, dy)
    for m in range(2):
        expected = np.linalg.solve(np.eye(3) - c * J[m], c * f[m] - psi[m] - d[m])
        np.testing.assert_allclose(dy[m], expected, rtol=1e-12)


def test_w1_under_bdf_steps_in_compiled_code_with_scipys_steps():
    # SciPy's BDF over the interpreted diagram against blocksim's compiled BDF: the same 279
    # steps and 830 evaluations, the log within 1e-9 rad (rounding in the LU factors and sums)
    d = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff")
    settings = dict(solver="bdf", rtol=1e-6, atol=1e-8)
    a = blocksim.Simulator(d, mode="interpreted", **settings).run()
    sim = blocksim.Simulator(d, mode="compiled", **settings)
    b = sim.run()
    assert sim.parts[0].backend.loop == "run_bdf" and b.stats["mode"] == "compiled"
    np.testing.assert_array_equal(a.t, b.t)
    assert (b.stats["nsteps"], b.stats["nfev"]) == (a.stats["nsteps"], a.stats["nfev"]) == (279, 830)
    assert np.max(np.abs(a["plant.q"] - b["plant.q"])) < 1e-9
    err = np.max(np.abs(b["ref.q"] - b["plant.q"]), axis=0)
    np.testing.assert_allclose(err, [0.0068, 0.0054], atol=1e-4)


def test_a_per_member_batch_under_bdf_is_its_members_own_runs():
    # simulation.step_control: per_member: each member its own compiled BDF run, as alone; the
    # batch's counters are the sums of its members' (Jacobians and LU factorisations included)
    d = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff")
    gains = [[400.0 * (1 + 0.001 * m), 200.0] for m in range(3)]
    settings = dict(solver="bdf", rtol=1e-6, atol=1e-8, step_control="per_member")
    batch = blocksim.Simulator(d, batch={"pid.Kp": gains}, mode="compiled", **settings).run()
    alone = [blocksim.simulate(blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml",
                                             variant="pid_ff", set={"pid.Kp": kp}),
                               mode="compiled", **settings) for kp in gains]
    for key in ("nsteps", "nfev", "njev", "nlu"):
        assert batch.stats[key] == sum(r.stats[key] for r in alone), key
    for m, r in enumerate(alone):
        np.testing.assert_array_equal(batch["plant.q"][m], r["plant.q"])


@pytest.fixture(scope="module")
def quiet_runs():
    """(interpreted, compiled, compiled Simulator) of the quiet-hit plant under bdf."""
    out = {}
    for name, text in (("quiet", QUIET), ("loud", LOUD)):
        diagram = blocksim.load(text.replace("solver: dopri5", "solver: bdf"))
        a = blocksim.Simulator(diagram, mode="interpreted").run()
        sim = blocksim.Simulator(diagram, mode="compiled")
        out[name] = (a, sim.run(), sim)
    return out


def test_sample_hits_bound_the_compiled_bdf_steps_on_the_analytic_solution(quiet_runs):
    interpreted, compiled, sim = quiet_runs["quiet"]
    assert sim.parts[0].backend.loop == "run_bdf" and compiled.stats["mode"] == "compiled"
    np.testing.assert_array_equal(interpreted.t, compiled.t)
    exact = x_exact(compiled.t)
    error = np.max(np.abs(compiled["x.out"].reshape(-1) - exact))
    scipy_error = np.max(np.abs(interpreted["x.out"].reshape(-1) - exact))
    assert error < 2e-7 and error <= 2 * scipy_error, (error, scipy_error)
    # the two paths part where a decision sits on the rounding's edge (1,296 steps against
    # 1,314), but never by more than SciPy's own distance from the exact solution
    assert np.max(np.abs(compiled["x.out"] - interpreted["x.out"])) <= scipy_error


def test_quiet_hits_keep_the_history_and_loud_hits_restart(quiet_runs):
    quiet, loud = quiet_runs["quiet"][1].stats, quiet_runs["loud"][1].stats
    # a restart is a new solver at order 1 with a Jacobian afresh: one per major step at least
    assert loud["njev"] >= loud["major_steps"] - 1
    # the quiet run's 300 hits restart nothing: one Jacobian for the whole run
    assert quiet["major_steps"] == 301 and quiet["njev"] < 0.1 * quiet["major_steps"]
    # the interpreted (SciPy) path follows the same rule: its steps and evaluations
    interpreted = quiet_runs["quiet"][0].stats
    assert abs(quiet["nfev"] - interpreted["nfev"]) < 0.05 * interpreted["nfev"]
    assert abs(quiet["nsteps"] - interpreted["nsteps"]) < 0.05 * interpreted["nsteps"]
    # the loud run restarts at every hit in both: the same steps and evaluations
    loud_interpreted = quiet_runs["loud"][0].stats
    assert (loud["nsteps"], loud["nfev"]) == (loud_interpreted["nsteps"], loud_interpreted["nfev"])
