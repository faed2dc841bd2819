"""Trajectory generators: qd and qdd equal the derivatives of q (central differences) and their closed
forms, boundary conditions hold (rest at q0 and qf, limits respected, via points met), and the
reference reaches a simulation as the diagram says (logged grid, breakpoints, integration)."""
from textwrap import dedent

import numpy as np
import pytest
from scipy.interpolate import CubicSpline

import blocksim
from blocksim.blocks.base import BatchValue
from blocksim.errors import BlocksimError
from blockcheck import BlockCheck

CASES = {
    "cosine": ("CosineRamp", {"amplitude": [0.5, 0.3], "period": 2.0, "offset": [0.1, -0.2]}),
    "sine": ("SineTrajectory", {"amplitude": [1.0, 0.5], "frequency": [0.5, 2.0],
                                "phase": [0.3, -1.0], "offset": [0.0, 1.0]}),
    "cubic": ("Polynomial", {"q0": [0.0, 1.0], "qf": [1.0, -0.5], "t0": 0.5, "tf": 2.5, "order": 3}),
    "quintic": ("Polynomial", {"q0": [0.0, 1.0], "qf": [1.0, -0.5], "t0": 0.5, "tf": 2.5}),
    "minjerk": ("MinimumJerk", {"q0": [0.2, 1.0, -1.0], "qf": [1.0, -0.5, 0.0], "t0": 0.2,
                                "duration": 1.5}),
    "trapezoid": ("Trapezoidal", {"q0": [0.0, 0.0], "qf": [1.0, -2.0], "vmax": [1.0, 1.0],
                                  "amax": [2.0, 2.0], "t0": 0.25}),
    "triangle": ("Trapezoidal", {"q0": [0.0, 0.5], "qf": [1.0, 0.0], "vmax": [10.0, 10.0],
                                 "amax": [4.0, 4.0]}),
    "via": ("ViaPoints", {"times": [0.0, 1.0, 2.5, 3.0],
                          "points": [[0.0, 0.0], [1.0, -0.5], [0.2, 0.7], [0.5, 0.0]]}),
    "fourier": ("FourierSeries", {"frequency": 0.2, "q0": [0.1, -0.3],
                                  "a": [[0.3, -0.1, 0.05], [-0.2, 0.4, 0.1]],
                                  "b": [[0.1, 0.2, -0.15], [0.0, -0.3, 0.2]]}),
}


def source(type_name, params, batch=1):
    return BlockCheck(type_name, params, in_widths={}, batch=batch)


def evaluate(block, times):
    """q, qd, qdd at each time: three (n, width) arrays (batch member 0)."""
    rows = [block.output(float(t)) for t in times]
    return tuple(np.array([r[k][0] for r in rows]) for k in range(3))


@pytest.mark.parametrize("case", list(CASES))
def test_derivatives_equal_central_differences_of_q(case):
    type_name, params = CASES[case]
    blk = source(type_name, params)
    breaks = np.array(blk.block.breakpoints(-1.0, 100.0) or [np.inf])
    rng = np.random.default_rng(7)
    times = rng.uniform(0.0, 4.0, 40)
    times = times[np.min(np.abs(times[:, None] - breaks[None, :]), axis=1) > 1e-3]
    h = 1e-5
    q, qd, qdd = evaluate(blk, times)
    qp, qdp, _ = evaluate(blk, times + h)
    qm, qdm, _ = evaluate(blk, times - h)
    vel_scale = np.max(np.abs(qd)) + 1.0
    acc_scale = np.max(np.abs(qdd)) + 1.0
    np.testing.assert_allclose(qd, (qp - qm) / (2 * h), rtol=0, atol=2e-8 * vel_scale)
    np.testing.assert_allclose(qdd, (qdp - qdm) / (2 * h), rtol=0, atol=2e-8 * acc_scale)


def test_cosine_ramp_is_the_workload_reference():
    """W1's reference: q_d = A (1 - cos(pi t)), A = [0.5, 0.3], is CosineRamp with period 2."""
    blk = source("CosineRamp", {"amplitude": [0.5, 0.3], "period": 2.0})
    A = np.array([0.5, 0.3])
    for t in (0.0, 0.3, 1.0, 1.7):
        q, qd, qdd = (y[0] for y in blk.output(t))
        np.testing.assert_allclose(q, A * (1 - np.cos(np.pi * t)), rtol=1e-15, atol=1e-16)
        np.testing.assert_allclose(qd, A * np.pi * np.sin(np.pi * t), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(qdd, A * np.pi ** 2 * np.cos(np.pi * t), rtol=1e-14, atol=1e-15)
    q, qd, _ = blk.output(0.0)
    assert np.all(q == 0) and np.all(qd == 0)


def test_sine_trajectory_closed_form():
    blk = source(*CASES["sine"])
    a, f, ph, off = np.array([1.0, 0.5]), np.array([0.5, 2.0]), np.array([0.3, -1.0]), np.array([0, 1.0])
    w = 2 * np.pi * f
    t = 0.37
    q, qd, qdd = (y[0] for y in blk.output(t))
    np.testing.assert_allclose(q, off + a * np.sin(w * t + ph), rtol=1e-15)
    np.testing.assert_allclose(qd, a * w * np.cos(w * t + ph), rtol=1e-14)
    np.testing.assert_allclose(qdd, -a * w ** 2 * np.sin(w * t + ph), rtol=1e-14)


@pytest.mark.parametrize("order, s_quarter, peak_speed", [(3, 3 / 16 - 2 / 64, 1.5),
                                                          (5, 10 / 64 - 15 / 256 + 6 / 1024, 1.875)])
def test_polynomial_closed_form_and_rest_to_rest(order, s_quarter, peak_speed):
    q0, qf, t0, tf = np.array([0.0, 1.0]), np.array([1.0, -0.5]), 0.5, 2.5
    T, D = tf - t0, qf - q0
    blk = source("Polynomial", {"q0": list(q0), "qf": list(qf), "t0": t0, "tf": tf, "order": order})
    q, qd, qdd = (y[0] for y in blk.output(t0 + T / 4))
    np.testing.assert_allclose(q, q0 + D * s_quarter, rtol=1e-15, atol=1e-15)
    q, qd, qdd = (y[0] for y in blk.output(t0 + T / 2))
    np.testing.assert_allclose(q, (q0 + qf) / 2, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(qd, peak_speed * D / T, rtol=1e-15)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-15)
    for t in (0.0, t0):                               # held, then leaving at rest
        q, qd, _ = (y[0] for y in blk.output(t))
        np.testing.assert_array_equal(q, q0)
        np.testing.assert_array_equal(qd, 0.0)
    for t in (tf - 1e-9, tf, 10.0):                   # arriving at rest, then held
        q, qd, qdd = (y[0] for y in blk.output(t))
        np.testing.assert_allclose(q, qf, atol=1e-9)
        np.testing.assert_allclose(qd, 0.0, atol=1e-8)
    _, _, qdd_start = (y[0] for y in blk.output(t0))
    _, _, qdd_end = (y[0] for y in blk.output(tf - 1e-12))
    if order == 5:                                    # quintic: zero end accelerations too
        np.testing.assert_allclose(qdd_start, 0.0, atol=1e-15)
        np.testing.assert_allclose(qdd_end, 0.0, atol=1e-9)
    else:                                             # cubic: qdd jumps to +-6 D / T^2
        np.testing.assert_allclose(qdd_start, 6 * D / T ** 2, rtol=1e-15)
        np.testing.assert_allclose(qdd_end, -6 * D / T ** 2, rtol=1e-9)
    assert blk.block.breakpoints(0.0, 10.0) == [t0, tf]


def test_minimum_jerk_equals_quintic_polynomial():
    mj = source("MinimumJerk", {"q0": [0.2, 1.0], "qf": [1.0, -0.5], "t0": 0.2, "duration": 1.5})
    poly = source("Polynomial", {"q0": [0.2, 1.0], "qf": [1.0, -0.5], "t0": 0.2, "tf": 1.7,
                                 "order": 5})
    for t in np.linspace(0.0, 2.0, 41):
        for a, b in zip(mj.output(t), poly.output(t)):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    q, qd, qdd = (y[0] for y in mj.output(0.2 + 0.75))
    np.testing.assert_allclose(qd, 1.875 * np.array([0.8, -1.5]) / 1.5, rtol=1e-15)


def test_trapezoidal_synchronises_joints_and_respects_limits():
    params = dict(CASES["trapezoid"][1])
    blk = source("Trapezoidal", params)
    # joint 2 is slowest (2 rad at 1 rad/s, 2 rad/s^2): 2/1 + 1/2 = 2.5 s; joint 1 alone: 1.5 s
    assert blk.block.motion_time[0] == pytest.approx(2.5, rel=1e-15)
    t = np.linspace(0.0, 3.0, 3001)
    q, qd, qdd = evaluate(blk, t)
    vmax, amax = np.array(params["vmax"]), np.array(params["amax"])
    assert np.all(np.abs(qd) <= vmax * (1 + 1e-12)) and np.all(np.abs(qdd) <= amax * (1 + 1e-12))
    np.testing.assert_allclose(np.max(np.abs(qd), axis=0), [0.5, 1.0], rtol=1e-12)   # limiting joint at vmax
    np.testing.assert_allclose(np.max(np.abs(qdd), axis=0), [1.0, 2.0], rtol=1e-12)
    # synchronised: one path coordinate for every joint (a straight line in joint space)
    s = (q - params["q0"]) / (np.array(params["qf"]) - params["q0"])
    np.testing.assert_allclose(s[:, 0], s[:, 1], atol=1e-15)
    start, end = (y[0] for y in blk.output(0.25)[:2]), (y[0] for y in blk.output(0.25 + 2.5)[:2])
    q0, qd0 = start
    np.testing.assert_array_equal(q0, params["q0"]); np.testing.assert_array_equal(qd0, 0.0)
    qf, qdf = end
    np.testing.assert_allclose(qf, params["qf"], atol=1e-15); np.testing.assert_array_equal(qdf, 0.0)
    np.testing.assert_allclose(blk.block.breakpoints(0.0, 10.0), [0.25, 0.75, 2.25, 2.75], rtol=1e-15)


def test_trapezoidal_becomes_triangular_when_vmax_is_not_reached():
    blk = source(*CASES["triangle"])
    assert blk.block.motion_time[0] == pytest.approx(1.0, rel=1e-15)        # 2 sqrt(1 / 4)
    q, qd, qdd = (y[0] for y in blk.output(0.5))
    np.testing.assert_allclose(qd, [2.0, -1.0], rtol=1e-15)                 # peak sqrt(amax D)
    np.testing.assert_allclose(q, [0.5, 0.25], rtol=1e-15)
    assert blk.block.breakpoints(0.0, 2.0) == [0.5, 1.0]


def test_trapezoidal_with_a_duration():
    plain = source("Trapezoidal", {"q0": [0.0, 1.0], "qf": [3.0, 0.0], "duration": 2.0})
    q, qd, _ = (y[0] for y in plain.output(1.0))
    np.testing.assert_allclose(qd, 1.5 * np.array([3.0, -1.0]) / 2.0, rtol=1e-15)   # 1.5 x mean speed
    slow = source("Trapezoidal", {"q0": [0.0], "qf": [1.0], "amax": 4.0, "vmax": 10.0, "duration": 2.0})
    t = np.linspace(0, 2.5, 2501)
    q, qd, qdd = evaluate(slow, t)
    assert np.max(np.abs(qdd)) == pytest.approx(4.0, rel=1e-15)
    np.testing.assert_allclose(q[t >= 2.0], 1.0, atol=1e-15)
    assert q[t < 2.0][-1] < 1.0
    with pytest.raises(BlocksimError, match="too short"):
        source("Trapezoidal", {"q0": [0.0], "qf": [1.0], "amax": 4.0, "duration": 0.9})
    with pytest.raises(BlocksimError, match="vmax and amax"):
        source("Trapezoidal", {"q0": [0.0], "qf": [1.0], "vmax": 1.0})


def test_via_points_pass_through_points_with_zero_end_velocity():
    params = CASES["via"][1]
    times, points = np.array(params["times"]), np.array(params["points"])
    blk = source("ViaPoints", params)
    for tk, pk in zip(times, points):
        np.testing.assert_allclose(blk.output(tk)[0][0], pk, atol=1e-15)
    for t in (times[0], times[-1], -1.0, 5.0):
        np.testing.assert_array_equal(blk.output(t)[1][0], 0.0)
    eps = 1e-9                                  # qd and qdd continuous across interior knots
    for tk in times[1:-1]:
        left, right = blk.output(tk - eps), blk.output(tk + eps)
        np.testing.assert_allclose(left[1], right[1], atol=1e-7)
        np.testing.assert_allclose(left[2], right[2], atol=1e-6)
    spline = CubicSpline(times, points, bc_type="clamped")
    for t in np.linspace(0.05, 2.95, 17):
        q, qd, qdd = (y[0] for y in blk.output(t))
        np.testing.assert_allclose(q, spline(t), atol=1e-14)
        np.testing.assert_allclose(qd, spline(t, 1), atol=1e-13)
        np.testing.assert_allclose(qdd, spline(t, 2), atol=1e-12)
    assert blk.block.breakpoints(0.0, 3.0) == [1.0, 2.5, 3.0]


def fourier_reference(t, f, a, b, q0):
    wf = 2 * np.pi * f
    l = np.arange(1, a.shape[1] + 1)
    w = wf * l
    q = q0 + np.sum(a / w * np.sin(w * t) - b / w * np.cos(w * t), axis=1)
    qd = np.sum(a * np.cos(w * t) + b * np.sin(w * t), axis=1)
    qdd = np.sum(w * (b * np.cos(w * t) - a * np.sin(w * t)), axis=1)
    return q, qd, qdd


def test_fourier_series_matches_formula_and_is_periodic():
    params = CASES["fourier"][1]
    a, b, q0 = np.array(params["a"]), np.array(params["b"]), np.array(params["q0"])
    blk = source("FourierSeries", params)
    for t in (0.0, 0.7, 3.3, 4.9):
        for got, want in zip(blk.output(t), fourier_reference(t, 0.2, a, b, q0)):
            np.testing.assert_allclose(got[0], want, rtol=1e-13, atol=1e-14)
        later = blk.output(t + 5.0)                      # period 1 / 0.2 s
        for x, y in zip(blk.output(t), later):
            np.testing.assert_allclose(x, y, atol=1e-12)


def test_fourier_series_starts_at_rest_under_the_seed_constraints():
    """sum_l a_il = 0, sum_l b_il / l = 0, sum_l l b_il = 0  =>  q(0) = q0, qd(0) = qdd(0) = 0."""
    rng = np.random.default_rng(3)
    n, L = 3, 4
    a = rng.normal(size=(n, L))
    a -= a.mean(axis=1, keepdims=True)
    l = np.arange(1, L + 1)
    constraints = np.vstack([1 / l, l])
    null = np.linalg.svd(constraints)[2][2:]             # basis of {b : C b = 0}
    b = rng.normal(size=(n, null.shape[0])) @ null
    q0 = np.array([0.3, -0.2, 1.0])
    blk = source("FourierSeries", {"frequency": 0.1, "a": a.tolist(), "b": b.tolist(),
                                   "q0": q0.tolist()})
    q, qd, qdd = (y[0] for y in blk.output(0.0))
    np.testing.assert_allclose(q, q0, atol=1e-14)
    np.testing.assert_allclose(qd, 0.0, atol=1e-14)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-13)


def test_batched_parameters_give_one_trajectory_per_member():
    blk = source("MinimumJerk", {"q0": 0.0, "qf": BatchValue([1.0, 2.0]), "duration": 1.0}, batch=2)
    q, qd, _ = blk.output(0.5)
    np.testing.assert_allclose(q[:, 0], [0.5, 1.0], rtol=1e-15)
    np.testing.assert_allclose(qd[:, 0], [1.875, 3.75], rtol=1e-15)


def write(tmp_path, text):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    return path


def test_engine_logs_the_reference_on_its_grid(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      ref: {type: CosineRamp, amplitude: [0.5, 0.3], period: 2.0}
    connections: []
    simulation: {stop_time: 2.0, solver: rk4, step: 1.0e-3}
    log: {signals: [ref.q, ref.qd, ref.qdd], every: 1.0e-3}
    """)
    r = blocksim.simulate(blocksim.load(path))
    assert len(r.t) == 2001 and r.t[-1] == 2.0
    A = np.array([0.5, 0.3])
    np.testing.assert_allclose(r["ref.q"], A * (1 - np.cos(np.pi * r.t[:, None])), atol=1e-15)
    np.testing.assert_allclose(r["ref.qdd"], A * np.pi ** 2 * np.cos(np.pi * r.t[:, None]),
                               atol=1e-14)


@pytest.mark.parametrize("type_name, params", [
    ("Polynomial", "{q0: [0.0, 1.0], qf: [1.0, -0.5], t0: 0.3, tf: 1.3, order: 3}"),
    ("Trapezoidal", "{q0: [0.0, 0.0], qf: [1.0, -2.0], vmax: [1.0, 1.0], amax: [2.0, 2.0], t0: 0.3}"),
])
def test_adaptive_solver_integrates_qdd_back_to_q_across_breakpoints(tmp_path, type_name, params):
    """Integrating qdd twice from rest reproduces q: the solver stops on the jumps of qdd."""
    path = write(tmp_path, f"""
    blocksim: 1
    blocks:
      ref: {{type: {type_name}, {params[1:-1]}}}
      v:   {{type: Integrator, x0: 0.0}}
      x:   {{type: Integrator, x0: [0.0, 0.0]}}
      q0:  {{type: Constant, value: [0.0, {'1.0' if type_name == 'Polynomial' else '0.0'}]}}
      pos: {{type: Sum, signs: "++"}}
    connections: [ref.qdd -> v, v -> x, x -> pos.in1, q0 -> pos.in2]
    simulation: {{stop_time: 3.0, solver: dopri5, rtol: 1.0e-10, atol: 1.0e-12}}
    log: {{signals: [ref.q, ref.qd, v.out, pos.out], every: 0.01}}
    """)
    r = blocksim.simulate(blocksim.load(path))
    np.testing.assert_allclose(r["v.out"], r["ref.qd"], atol=1e-9)
    np.testing.assert_allclose(r["pos.out"], r["ref.q"], atol=1e-9)


def test_bad_parameters_are_reported():
    with pytest.raises(BlocksimError, match="tf must be > t0"):
        source("Polynomial", {"q0": 0.0, "qf": 1.0, "t0": 1.0, "tf": 1.0})
    with pytest.raises(BlocksimError, match="order"):
        source("Polynomial", {"q0": 0.0, "qf": 1.0, "tf": 1.0, "order": 4})
    with pytest.raises(BlocksimError, match="increasing"):
        source("ViaPoints", {"times": [0.0, 2.0, 1.0], "points": [0.0, 1.0, 2.0]})
    with pytest.raises(BlocksimError, match="one row per time"):
        source("ViaPoints", {"times": [0.0, 1.0], "points": [[0.0, 1.0, 2.0]]})
    with pytest.raises(BlocksimError, match="one shape"):
        source("FourierSeries", {"frequency": 1.0, "a": [[1.0, 2.0]], "b": [[1.0]]})


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_form_is_importable_and_computes_the_same(case):
    """Compiled mode calls Kernels.output by module and name with the block's parameter tuple (a full
    compiled run of SineTrajectory is in test_pid; compiling one diagram per generator is slow)."""
    from blocksim.engine.numba_backend import _import_name
    blk = source(*CASES[case])
    k = blk.block.runtime_kernels()
    module, name = _import_name(k.output)
    assert module == "blocksim.blocks.trajectories" and k.derivative is None and k.update is None
    for t in (0.0, 0.77, 2.5, 3.9):
        want = blk.output(t)
        got = tuple(np.zeros_like(w) for w in want)
        k.output(t, blk.xc, blk.xd, (), got, k.params)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
