"""The compiled stiff loop (engine/stiff_loop.py, solvers/radau_kernels.py): a run under radau
without zero crossings steps inside compiled code with a Radau IIA of its own, SciPy's method and
constants (the batch, divergence and interrupt tests run bdf's loop too: tests/test_bdf_compiled.py). Its kernels are checked against independent arithmetic (numpy's solves, the
collocation conditions, an analytic Jacobian), its runs against analytic solutions and against
the interpreted run (SciPy's Radau), the Bari problems in tests/test_stiff_references.py."""
import math

import numpy as np
import pytest

import blocksim
from blocksim.engine import stiff_loop
from blocksim.errors import BlocksimError
from blocksim.solvers import radau_kernels as rk
from test_divergence import BLOWUP
from test_quiet_hits import LOUD, QUIET, x_exact

pytestmark = pytest.mark.usefixtures("compiled_cache")


def test_lu_factors_solve_real_and_complex_systems_member_by_member():
    rng = np.random.default_rng(7)
    for dtype in (float, complex):
        A = rng.normal(size=(3, 5, 5)).astype(dtype)
        if dtype is complex:
            A = A + 1j * rng.normal(size=A.shape)
        b = rng.normal(size=(3, 5)).astype(dtype)
        LU, piv = A.copy(), np.zeros((3, 5), dtype=np.int64)
        rk.lu_factor(LU, piv)
        x = b.copy()
        rk.lu_solve(LU, piv, x)
        for m in range(3):
            np.testing.assert_allclose(x[m], np.linalg.solve(A[m], b[m]), rtol=1e-12)


def test_the_collocation_polynomial_passes_through_the_stages():
    # x_old + Q [theta, theta^2, theta^3] at theta = C[i] is x_old + Z[i] (P's defining property),
    # and the transformations T and TI are each other's inverse
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(3, 2, 4))
    x_old = rng.normal(size=(2, 4))
    Q, out = np.zeros_like(Z), np.zeros_like(x_old)
    rk.dense_coefficients(Z, Q)
    for i in range(3):
        rk.dense_at(1.0 + 0.25 * rk.C[i], 1.0, 0.25, x_old, Q, out)
        np.testing.assert_allclose(out, x_old + Z[i], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(rk.T @ rk.TI, np.eye(3), atol=1e-13)
    # A = T diag(1 / MU_REAL, 1 / MU_COMPLEX as a 2 x 2 block) TI is Radau IIA's matrix: its
    # eigenvalues' inverses are MU_REAL and MU_COMPLEX
    s6 = math.sqrt(6)
    A = np.array([[(88 - 7 * s6) / 360, (296 - 169 * s6) / 1800, (-2 + 3 * s6) / 225],
                  [(296 + 169 * s6) / 1800, (88 + 7 * s6) / 360, (-2 - 3 * s6) / 225],
                  [(16 - s6) / 36, (16 + s6) / 36, 1 / 9]])
    mu = sorted(1 / np.linalg.eigvals(A), key=lambda z: z.imag)
    np.testing.assert_allclose(mu, sorted([rk.MU_REAL, rk.MU_COMPLEX, np.conj(rk.MU_COMPLEX)],
                                          key=lambda z: z.imag), rtol=1e-12)


def test_the_finite_difference_jacobian_matches_the_analytic_one():
    # f = (-0.04 y0 + 1e4 y1 y2, 0.04 y0 - 1e4 y1 y2 - 3e7 y1^2, 3e7 y1^2) (Robertson), two members
    def f(y):
        y0, y1, y2 = y.T
        return np.stack([-0.04 * y0 + 1e4 * y1 * y2, 0.04 * y0 - 1e4 * y1 * y2 - 3e7 * y1 ** 2,
                         3e7 * y1 ** 2], axis=1)

    def jac(y):
        y0, y1, y2 = y
        return np.array([[-0.04, 1e4 * y2, 1e4 * y1],
                         [0.04, -1e4 * y2 - 6e7 * y1, -1e4 * y1],
                         [0.0, 6e7 * y1, 0.0]])

    y = np.array([[0.9, 2e-5, 0.1], [0.5, 1e-6, 0.5]])
    f0 = f(y)
    J = np.zeros((2, 3, 3))
    factor = np.full((2, 3), np.nan)
    y_scale, step, retry, max_diff, f_scale = (np.zeros((2, 3)) for _ in range(5))
    x = np.zeros((2, 3))
    rk.jacobian_steps(y, f0, 1e-10, factor, y_scale, step)
    for j in range(3):
        rk.perturbed(y, j, step, x)
        rk.jacobian_column(J, j, f(x), f0, max_diff, f_scale)
    for j in range(3):
        if rk.jacobian_retry_steps(y, j, max_diff, f_scale, factor, y_scale, retry):
            rk.perturbed(y, j, retry, x)
            rk.jacobian_retry_column(J, j, f(x), f0, max_diff, f_scale, factor, step, retry)
    rk.jacobian_finish(J, step, factor, max_diff, f_scale)
    for m in range(2):
        exact = jac(y[m])
        np.testing.assert_allclose(J[m], exact, rtol=1e-5, atol=1e-6 * np.abs(exact).max())


def test_the_step_controller_is_gustafssons():
    # one-step rule without history: err^-1/4; two-step: (h / h_old) (err_old / err)^1/4 err^-1/4
    assert rk.predict_factor(0.1, np.nan, 16.0, np.nan) == pytest.approx(0.5)
    assert rk.predict_factor(0.1, 0.2, 16.0, 1.0) == pytest.approx(0.5 * 0.5 * 0.5)
    assert rk.predict_factor(0.1, 0.05, 0.0625, 1.0) == pytest.approx(2.0)   # min(1, ...)
    assert rk.safety_factor(1) == pytest.approx(0.9) and rk.safety_factor(6) < 0.9


@pytest.fixture(scope="module")
def quiet_runs():
    """(interpreted, compiled, compiled Simulator) of the quiet-hit plant under radau."""
    out = {}
    for name, text in (("quiet", QUIET), ("loud", LOUD)):
        diagram = blocksim.load(text.replace("solver: dopri5", "solver: radau"))
        a = blocksim.Simulator(diagram, mode="interpreted").run()
        sim = blocksim.Simulator(diagram, mode="compiled")
        out[name] = (a, sim.run(), sim)
    return out


def test_sample_hits_bound_the_compiled_radau_steps_on_the_analytic_solution(quiet_runs):
    interpreted, compiled, sim = quiet_runs["quiet"]
    assert sim.parts[0].backend.loop == "run_stiff" and compiled.stats["mode"] == "compiled"
    np.testing.assert_array_equal(interpreted.t, compiled.t)
    exact = x_exact(compiled.t)
    error = np.max(np.abs(compiled["x.out"].reshape(-1) - exact))
    scipy_error = np.max(np.abs(interpreted["x.out"].reshape(-1) - exact))
    assert error < 1e-7 and error <= 2 * scipy_error, (error, scipy_error)
    # rtol 1e-8: the compiled run lands on SciPy's within the tolerance everywhere
    scaled = np.abs(compiled["x.out"] - interpreted["x.out"]) / (1e-10 + 1e-8 * np.abs(
        interpreted["x.out"]))
    assert scaled.max() <= 10


def test_quiet_hits_keep_the_jacobian_and_loud_hits_restart(quiet_runs):
    quiet, loud = quiet_runs["quiet"][1].stats, quiet_runs["loud"][1].stats
    # a restart estimates the Jacobian afresh: at least once per major step of the loud run
    assert loud["njev"] >= loud["major_steps"] - 1
    # the quiet run's 300 hits restart nothing: its Jacobian is estimated a few times only
    assert quiet["major_steps"] == 301 and quiet["njev"] < 0.1 * quiet["major_steps"]
    # and the interpreted (SciPy) path follows the same rule: about as many evaluations
    interpreted = quiet_runs["quiet"][0].stats
    assert abs(quiet["nfev"] - interpreted["nfev"]) < 0.1 * interpreted["nfev"]
    assert quiet["nsteps"] == interpreted["nsteps"]


LOOPS = {"radau": "run_stiff", "bdf": "run_bdf"}


@pytest.mark.parametrize("solver", ["radau", "bdf"])
def test_a_batch_steps_its_members_together_as_one_system(solver):
    # members are independent systems sharing one step size (the RMS norm over the batch; bdf:
    # one order too), as the interpreted path's block-diagonal SciPy solver; each lands on its
    # analytic solution
    # x'' + c x' + k x = 0 (x0 = 1 m, k = 100 N/m per kg, c = 0.4 ... 40 N s/m per kg: the
    # stiffest member's eigenvalues are -2.6 and -37.4 1/s)
    text = """
blocksim: 1
blocks:
  x:      {type: Integrator, x0: 1.0}
  v:      {type: Integrator, x0: 0.0}
  spring: {type: Gain, gain: -100.0}
  damper: {type: Gain, gain: -0.4}
  force:  {type: Sum, signs: "++"}
connections: [x -> spring, v -> damper, spring -> force.in1, damper -> force.in2, force -> v,
              v -> x]
simulation: {stop_time: 1.0, solver: SOLVER, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [x.out]}
"""
    gains = [-0.4, -4.0, -40.0]
    diagram = blocksim.load(text.replace("SOLVER", solver))
    a = blocksim.simulate(diagram, batch={"damper.gain": gains}, mode="interpreted")
    sim = blocksim.Simulator(diagram, batch={"damper.gain": gains}, mode="compiled")
    b = sim.run()
    assert sim.parts[0].backend.loop == LOOPS[solver]
    assert b.stats["nsteps"] == a.stats["nsteps"]
    for m, gain in enumerate(gains):
        c = -gain
        roots = np.roots([1.0, c, 100.0])
        r1, r2 = roots
        c1 = -r2 / (r1 - r2)          # x(0) = 1, x'(0) = 0
        exact = np.real(c1 * np.exp(r1 * b.t) + (1 - c1) * np.exp(r2 * b.t))
        assert np.max(np.abs(b["x.out"][m].reshape(-1) - exact)) < 1e-6, gain


@pytest.mark.parametrize("solver", ["radau", "bdf"])
def test_a_run_that_diverges_is_blamed_on_its_block(tmp_path, solver):
    path = tmp_path / "blowup.yaml"
    path.write_text(BLOWUP.replace("SOLVER", solver))
    sim = blocksim.Simulator(blocksim.load(path), mode="compiled")
    assert sim.parts[0].backend.loop == LOOPS[solver]
    with pytest.raises(BlocksimError) as caught:
        sim.run()
    err = caught.value
    assert err.block == "x" and "x[0]" in err.message and "blowup.yaml:5" in str(err)


@pytest.mark.parametrize("solver", ["radau", "bdf"])
def test_an_interrupt_between_chunks_keeps_the_log_up_to_the_time_reached(monkeypatch, solver):
    diagram = blocksim.load(QUIET.replace("solver: dopri5", f"solver: {solver}"))
    whole = blocksim.Simulator(diagram, mode="compiled").run()

    class CtrlC(stiff_loop.Progress):
        def update(self, t, force=False):
            if t > 0.5:
                raise KeyboardInterrupt
    monkeypatch.setattr(stiff_loop, "Progress", CtrlC)
    sim = blocksim.Simulator(diagram, mode="compiled")
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    r = sim.last_result
    assert r.interrupted and np.all(np.diff(r.t) > 0)
    reached = r.t[-1]
    assert 0.5 < reached < 3.0
    n = np.searchsorted(whole.t, reached)
    np.testing.assert_array_equal(r.t[:n], whole.t[:n])
    np.testing.assert_array_equal(r["x.out"][:n], whole["x.out"][:n])
    assert abs(r["x.out"].reshape(-1)[-1] - x_exact(reached)) < 1e-6
