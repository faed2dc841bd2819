"""Tests of blocksim.solvers: convergence orders, tolerances, batches, restarts, events and failures."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.integrate

from blocksim.errors import SolverError
from blocksim.solvers import SOLVERS, find_first_crossing, make_solver, solver_names

FIXED = ["euler", "heun", "midpoint", "rk3", "rk4"]
EXPLICIT_ADAPTIVE = ["rk23", "dopri5", "dop853"]
STIFF = ["radau", "bdf", "lsoda"]
ADAPTIVE = EXPLICIT_ADAPTIVE + STIFF


def forced_decay(t, x):
    """y' = -y + sin t, elementwise over the (B, n) batch."""
    return -x + np.sin(t)


def forced_decay_exact(t, y0=1.0):
    """Exact solution of y' = -y + sin t with y(0) = y0."""
    return (np.sin(t) - np.cos(t)) / 2 + (y0 + 0.5) * np.exp(-t)


def damped_oscillator(t, x):
    """q'' = -4 q - 0.5 q' + cos(3 t) as x = (q, q'), shape (B, 2)."""
    q, qd = x[:, 0], x[:, 1]
    return np.stack([qd, -4.0 * q - 0.5 * qd + np.cos(3.0 * t)], axis=1)


def options_for(name, **adaptive):
    return {"step": 0.01} if name in FIXED else adaptive


def run_to_end(solver, on_step=None):
    while solver.status == "running":
        solver.step()
        if on_step is not None:
            on_step(solver)
    return solver


def fixed_step_errors(name, h):
    """Max error over the step grid and over the step midpoints (dense output) on [0, 2] with step h."""
    solver = make_solver(name, forced_decay, 0.0, np.array([[1.0]]), 2.0, step=h, fixed_step=True)
    grid, mids = [], []

    def measure(s):
        grid.append(abs(s.x[0, 0] - forced_decay_exact(s.t)))
        t_mid = 0.5 * (s.t_old + s.t)
        mids.append(abs(s.dense_output()(t_mid)[0, 0] - forced_decay_exact(t_mid)))

    run_to_end(solver, measure)
    return max(grid), max(mids)


def observed_order(steps, errors):
    return np.polyfit(np.log(steps), np.log(errors), 1)[0]


# Step sizes in the asymptotic range and well above round-off (dop853's error at h = 1/6 is 3e-14).
ORDER_CASES = [
    ("euler", 1, [0.02, 0.01, 0.005]),
    ("heun", 2, [0.04, 0.02, 0.01]),
    ("midpoint", 2, [0.04, 0.02, 0.01]),
    ("rk3", 3, [0.1, 0.05, 0.025]),
    ("rk4", 4, [0.1, 0.05, 0.025]),
    ("rk23", 3, [0.1, 0.05, 0.025]),
    ("dopri5", 5, [0.1, 0.05, 0.025]),
    ("dop853", 8, [2 / 3, 1 / 3, 1 / 6]),
]


@pytest.mark.parametrize("name, nominal, steps", ORDER_CASES)
def test_observed_convergence_order_matches_nominal(name, nominal, steps):
    errors = [fixed_step_errors(name, h)[0] for h in steps]
    assert abs(observed_order(steps, errors) - nominal) < 0.3
    assert SOLVERS[name].order == nominal


def test_dopri5_dense_output_converges_at_fifth_order():
    # The 4th-order continuous extension has local error O(h^5), the same order as the global error.
    steps = [0.1, 0.05, 0.025]
    errors = [fixed_step_errors("dopri5", h)[1] for h in steps]
    assert abs(observed_order(steps, errors) - 5) < 0.3


@pytest.mark.parametrize("name", ADAPTIVE)
@pytest.mark.parametrize("rtol", [1e-6, 1e-9])
def test_adaptive_run_meets_its_tolerance(name, rtol):
    solver = make_solver(name, forced_decay, 0.0, np.array([[1.0]]), 2.0, rtol=rtol, atol=rtol * 1e-3)
    worst = []
    run_to_end(solver, lambda s: worst.append(abs(s.x[0, 0] / forced_decay_exact(s.t) - 1)))
    assert solver.t == 2.0
    # Explicit pairs stay below rtol here; the multistep codes within a few times it.
    assert max(worst) < (1.0 if name in EXPLICIT_ADAPTIVE else 10.0) * rtol


@pytest.mark.parametrize("name, scipy_class", [("rk23", scipy.integrate.RK23), ("dopri5", scipy.integrate.RK45),
                                               ("dop853", scipy.integrate.DOP853)])
def test_explicit_pairs_agree_with_scipy_step_for_step(name, scipy_class):
    # Independent implementation of the same methods and step control: same grid, states and dense output.
    ours = make_solver(name, forced_decay, 0.0, np.array([[1.0]]), 2.0, rtol=1e-6, atol=1e-9, step=0.1)
    ref = scipy_class(lambda t, y: -y + np.sin(t), 0.0, np.array([1.0]), 2.0, rtol=1e-6, atol=1e-9,
                      first_step=0.1)
    while ours.status == "running":
        ours.step()
        ref.step()
        assert ours.t == pytest.approx(ref.t, rel=1e-11, abs=1e-13)
        assert ours.x[0, 0] == pytest.approx(ref.y[0], abs=1e-12)
        ours_dense, ref_dense = ours.dense_output(), ref.dense_output()
        for theta in (0.25, 0.5, 0.9):
            t = ref.t_old + theta * (ref.t - ref.t_old)
            assert ours_dense(t)[0, 0] == pytest.approx(ref_dense(t)[0], abs=1e-12)
    assert ref.status == "finished"
    assert ours.nfev == ref.nfev


@pytest.mark.parametrize("name", FIXED + ["dopri5"])
def test_fixed_step_batch_equals_single_runs_exactly(name):
    x0 = np.array([[1.0, 0.0], [-0.5, 2.0], [2.0, -1.0]])
    options = {"step": 0.01, "fixed_step": True}
    batch = make_solver(name, damped_oscillator, 0.0, x0, 0.5, **options)
    singles = [make_solver(name, damped_oscillator, 0.0, x0[[k]], 0.5, **options) for k in range(3)]
    while batch.status == "running":
        batch.step()
        dense = batch.dense_output()
        t_mid = 0.5 * (batch.t_old + batch.t)
        for k, single in enumerate(singles):
            single.step()
            assert single.t == batch.t
            assert np.array_equal(single.x[0], batch.x[k])
            assert np.array_equal(single.dense_output()(t_mid)[0], dense(t_mid)[k])
    assert batch.nsteps == 50


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_batch_members_match_single_runs_to_tolerance(name):
    x0 = np.array([[1.0, 0.0], [-0.5, 2.0], [2.0, -1.0]])
    rtol, atol = 1e-8, 1e-10
    batch = run_to_end(make_solver(name, damped_oscillator, 0.0, x0, 1.0, rtol=rtol, atol=atol))
    for k in range(3):
        single = run_to_end(make_solver(name, damped_oscillator, 0.0, x0[[k]], 1.0, rtol=rtol, atol=atol))
        assert single.t == batch.t == 1.0
        np.testing.assert_allclose(batch.x[k], single.x[0], rtol=20 * rtol, atol=20 * atol)


@pytest.mark.parametrize("name", ["radau", "bdf", "lsoda"])
def test_stiff_problem_solved_in_few_steps(name):
    # y' = -1000 (y - cos t): an explicit method needs h < 3.3e-3 for stability, so >= 300 steps on [0, 1].
    k = 1000.0

    def stiff(t, x):
        return -k * (x - np.cos(t))

    def exact(t):
        return k * (k * np.cos(t) + np.sin(t)) / (k * k + 1) - k * k / (k * k + 1) * np.exp(-k * t)

    solver = run_to_end(make_solver(name, stiff, 0.0, np.array([[0.0]]), 1.0, rtol=1e-6, atol=1e-9))
    assert solver.nsteps < 150            # radau 57, bdf 116, lsoda 100; dopri5 needs 378
    assert solver.x[0, 0] == pytest.approx(exact(1.0), rel=1e-5)
    explicit = run_to_end(make_solver("dopri5", stiff, 0.0, np.array([[0.0]]), 1.0, rtol=1e-6, atol=1e-9))
    assert explicit.nsteps > 3 * solver.nsteps


def test_stiff_batch_uses_block_diagonal_jacobian_and_agrees():
    # Robertson's chemical kinetics, the classic stiff test, on two batch members with scaled rates.
    rates = np.array([[0.04, 3e7, 1e4], [0.08, 3e7, 1e4]])

    def robertson(t, x, rates=rates):
        a, b, c = rates[:, 0], rates[:, 1], rates[:, 2]
        r1 = a * x[:, 0]
        r2 = b * x[:, 1] ** 2
        r3 = c * x[:, 1] * x[:, 2]
        return np.stack([-r1 + r3, r1 - r2 - r3, r2], axis=1)

    x0 = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    reference = [scipy.integrate.solve_ivp(lambda t, y: robertson(t, y.reshape(1, 3), rates[[k]]).ravel(),
                                           (0.0, 100.0), x0[k], method="Radau", rtol=1e-9, atol=1e-13).y[:, -1]
                 for k in range(2)]
    for name in ["radau", "bdf"]:
        solver = run_to_end(make_solver(name, robertson, 0.0, x0, 100.0, rtol=1e-6, atol=1e-10))
        assert solver.nsteps < 200
        np.testing.assert_allclose(solver.x.sum(axis=1), 1.0, atol=1e-8)   # mass is conserved
        np.testing.assert_allclose(solver.x, reference, rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("name", solver_names())
def test_steps_land_exactly_on_moved_bounds_and_dense_output_is_exact_at_ends(name):
    solver = make_solver(name, forced_decay, 0.0, np.array([[1.0]]), 0.3,
                         **options_for(name, rtol=1e-6, atol=1e-9))
    for bound in (0.3, 0.7, 0.7 + 1.0 / 3.0):
        if bound != solver.t_bound:
            solver.set_bound(bound)
        expected = bound
        while solver.status == "running":
            solver.step()
            assert solver.t <= expected
            dense = solver.dense_output()
            assert np.array_equal(dense(solver.t), solver.x)
            assert np.array_equal(dense(solver.t_old), solver.x_old)
        assert solver.t == expected
        assert solver.status == "finished"
        assert abs(solver.x[0, 0] - forced_decay_exact(solver.t)) < 5e-3   # euler: 2e-3
    with pytest.raises(RuntimeError):
        solver.step()


@pytest.mark.parametrize("name", solver_names())
def test_solver_made_on_an_empty_interval_starts_after_set_bound_or_restart(name):
    x0 = np.array([[1.0], [-0.5]])
    moved = make_solver(name, forced_decay, 0.0, x0, 0.0, **options_for(name, rtol=1e-8, atol=1e-10))
    restarted = make_solver(name, forced_decay, 0.0, x0, 0.0, **options_for(name, rtol=1e-8, atol=1e-10))
    assert moved.status == restarted.status == "finished"
    moved.set_bound(0.5)
    restarted.restart(0.0, x0, 0.5)
    for solver in (run_to_end(moved), run_to_end(restarted)):
        assert solver.t == 0.5
        np.testing.assert_allclose(solver.x[:, 0], forced_decay_exact(0.5, x0[:, 0]), atol=5e-3)  # euler: 3e-3


def test_fixed_step_grid_is_counted_not_accumulated():
    solver = make_solver("rk4", forced_decay, 0.0, np.array([[1.0]]), 1.0, step=0.1)
    times = []
    run_to_end(solver, lambda s: times.append(s.t))
    assert times == [k * 0.1 for k in range(1, 11)]
    solver = make_solver("rk4", forced_decay, 0.0, np.array([[1.0]]), 0.25, step=0.1)
    times = []
    run_to_end(solver, lambda s: times.append(s.t))
    assert times == [0.1, 0.2, 0.25]
    solver.set_bound(1.0)
    run_to_end(solver, lambda s: times.append(s.t))
    assert times[3:] == [0.25 + k * 0.1 for k in range(1, 8)] + [1.0]


@pytest.mark.parametrize("name", ["rk23", "dopri5", "dop853"])
def test_restart_forgets_the_fsal_stage_but_keeps_the_step_size(name):
    stages = {"rk23": 3, "dopri5": 6, "dop853": 12}[name]
    solver = make_solver(name, forced_decay, 0.0, np.array([[1.0]]), 10.0, rtol=1e-6, atol=1e-9)
    solver.step()
    solver.step()

    def extra_evaluations_of_one_step():
        """Evaluations of fun beyond `stages` per attempt (0 when the first stage is reused, FSAL)."""
        nfev, nrejected = solver.nfev, solver.nrejected
        solver.step()
        attempts = 1 + solver.nrejected - nrejected
        return solver.nfev - nfev - stages * attempts

    assert extra_evaluations_of_one_step() == 0    # the first stage is the previous step's last one
    solver.set_bound(5.0)
    assert extra_evaluations_of_one_step() == 0    # moving the bound is no discontinuity
    solver.restart(solver.t, solver.x + 0.1, 5.0)
    with pytest.raises(RuntimeError):
        solver.dense_output()
    # f at the new state is evaluated afresh, and only it: the step size was kept, not chosen again
    # by Hairer's rule (which would cost one more evaluation).
    assert extra_evaluations_of_one_step() == 1


def test_fixed_step_dense_output_evaluates_the_end_derivative_once_and_reuses_it():
    solver = make_solver("rk4", forced_decay, 0.0, np.array([[1.0]]), 1.0, step=0.1)
    solver.step()
    assert solver.nfev == 4
    dense = solver.dense_output()
    solver.dense_output()
    assert solver.nfev == 5
    assert dense(0.05)[0, 0] == pytest.approx(forced_decay_exact(0.05), abs=1e-6)
    solver.step()
    assert solver.nfev == 8                        # the end derivative was the next step's first stage
    solver.restart(solver.t, solver.x, 1.0)
    solver.step()
    assert solver.nfev == 12


def free_fall(t, x):
    """Height and velocity (m, m/s) of a body falling under 9.81 m/s^2."""
    return np.stack([x[:, 1], np.full(len(x), -9.81)], axis=1)


def first_event(name, x0, event_function, directions, xtol=1e-12, t_bound=1.0):
    """Step `name` and search each step's dense output for the first crossing; (t_event, mask) or None."""
    solver = make_solver(name, free_fall, 0.0, x0, t_bound, rtol=1e-8, atol=1e-10)
    g_old = event_function(solver.x)
    while solver.status == "running":
        solver.step()
        dense = solver.dense_output()
        g_new = event_function(solver.x)
        found = find_first_crossing(lambda t: event_function(dense(t)), solver.t_old, solver.t,
                                    g_old, g_new, np.asarray(directions), xtol)
        if found is not None:
            return found
        g_old = g_new
    return None


def test_ground_impact_located_to_1e_10_s_on_dop853_dense_output():
    t_event, mask = first_event("dop853", np.array([[1.0, 0.0]]), lambda x: x[:, [0]], [-1])
    assert abs(t_event - math.sqrt(2 / 9.81)) < 1e-10
    assert mask.tolist() == [[True]]
    assert first_event("dop853", np.array([[1.0, 0.0]]), lambda x: x[:, [0]], [+1]) is None


def test_component_starting_at_zero_is_not_a_crossing():
    # g = (height, velocity): the velocity starts at exactly 0 and moves away; the height crosses later.
    t_event, mask = first_event("dopri5", np.array([[1.0, 0.0]]), lambda x: x, [0, 0])
    assert abs(t_event - math.sqrt(2 / 9.81)) < 1e-9
    assert mask.tolist() == [[True, False]]


def test_batch_crossings_report_the_earliest_and_its_companions():
    # Member 0 crosses first at 0.3; member 1's second component 4e-13 s later (within xtol / 2: the
    # same event), member 0's second 2e-12 s later (more than xtol: a later event).
    roots = np.array([[0.3, 0.3 + 2e-12, 0.5], [0.7, 0.3 + 4e-13, -1.0]])

    def g(t):
        return t - roots

    t_event, mask = find_first_crossing(g, 0.0, 1.0, g(0.0), g(1.0), np.zeros(3), 1e-12)
    assert 0.3 <= t_event <= 0.3 + 1e-12
    assert np.all(g(t_event)[mask] >= 0)
    assert mask.tolist() == [[True, False, False], [False, True, False]]


def test_crossing_reaching_zero_exactly_at_the_end_is_reported():
    def g(t):
        return np.array([[t - 1.0, -(t - 1.0)]])

    t_event, mask = find_first_crossing(g, 0.0, 1.0, g(0.0), g(1.0), np.array([+1, 0]), 1e-12)
    assert t_event == 1.0
    assert mask.tolist() == [[True, True]]
    # Starting at zero and leaving: nothing, in either direction.
    assert find_first_crossing(g, 1.0, 2.0, g(1.0), g(2.0), np.array([0, 0]), 1e-12) is None


def test_direction_filtering():
    def g(t):
        return np.array([[np.sin(t), -np.sin(t)]])

    up, mask_up = find_first_crossing(g, -1.0, 1.0, g(-1.0), g(1.0), np.array([+1, +1]), 1e-12)
    assert abs(up) <= 1e-12 and mask_up.tolist() == [[True, False]]
    down, mask_down = find_first_crossing(g, -1.0, 1.0, g(-1.0), g(1.0), np.array([-1, -1]), 1e-12)
    assert abs(down) <= 1e-12 and mask_down.tolist() == [[False, True]]


def square(t, x):
    """y' = y^2, whose solution from y(0) = 1 is 1 / (1 - t): a pole at t = 1 s."""
    with np.errstate(over="ignore", invalid="ignore"):
        return x * x


@pytest.mark.parametrize("name", ["rk23", "dopri5", "dop853", "radau", "bdf", "lsoda"])
def test_blow_up_raises_solver_error_naming_the_time(name):
    # No step size meets the tolerance near the pole at t = 1 s.
    solver = make_solver(name, square, 0.0, np.array([[1.0]]), 2.0, rtol=1e-6, atol=1e-9)
    with pytest.raises(SolverError) as failure:
        run_to_end(solver)
    message = str(failure.value)
    assert name in message
    if name in EXPLICIT_ADAPTIVE:
        assert "rtol=1e-06" in message and "step size" in message
    t_failed = float(re.search(r"at t = ([0-9.eE+-]+) s", message).group(1))
    assert 0.99 < t_failed < 1.01       # rk23 may step just past the pole before giving up
    assert solver.status == "failed"


def test_fixed_step_blow_up_raises_solver_error():
    solver = make_solver("rk4", square, 0.0, np.array([[1.0]]), 2.0, step=0.01)
    with pytest.raises(SolverError, match=r"rk4 .* at t = 1\.\d+ s.*not finite"):
        run_to_end(solver)
    assert 1.0 <= solver.t < 2.0


def test_unknown_solver_name_suggests_the_closest():
    with pytest.raises(SolverError, match="did you mean 'dopri5'"):
        make_solver("dopri", forced_decay, 0.0, np.array([[1.0]]), 1.0)
    assert solver_names() == ["euler", "heun", "midpoint", "rk3", "rk4", "rk23", "dopri5", "dop853",
                              "radau", "bdf", "lsoda"]


def test_bad_options_are_reported():
    with pytest.raises(SolverError, match="fixed-step"):
        make_solver("rk4", forced_decay, 0.0, np.array([[1.0]]), 1.0)
    with pytest.raises(SolverError, match="fixed_step"):
        make_solver("dopri5", forced_decay, 0.0, np.array([[1.0]]), 1.0, fixed_step=True)
    with pytest.raises(SolverError, match="no fixed-step mode"):
        make_solver("radau", forced_decay, 0.0, np.array([[1.0]]), 1.0, step=0.1, fixed_step=True)
    with pytest.raises(SolverError, match="rtol"):
        make_solver("dopri5", forced_decay, 0.0, np.array([[1.0]]), 1.0, rtol=1e-20)
    with pytest.raises(SolverError, match="not finite"):
        make_solver("dopri5", forced_decay, 0.0, np.array([[np.nan]]), 1.0)


def test_max_step_is_honoured():
    solver = make_solver("dop853", forced_decay, 0.0, np.array([[1.0]]), 2.0, max_step=0.05)
    steps = []
    run_to_end(solver, lambda s: steps.append(s.t - s.t_old))
    assert max(steps) <= 0.05 * (1 + 1e-12) and len(steps) == 40
