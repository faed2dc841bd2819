"""The core block library, one block at a time outside any diagram: outputs against their formulas,
linear blocks against scipy.signal, noise statistics, and the errors users see."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.signal as sig
from scipy.interpolate import CubicSpline

from blockcheck import BlockCheck
from blocksim.blocks import REGISTRY
from blocksim.blocks.base import BatchValue
from blocksim.errors import BlocksimError, ExpressionError, ParameterError, WidthError

CORE = ["Constant", "Step", "Ramp", "Sine", "Chirp", "Clock", "FromFile", "WhiteNoise",
        "Gain", "Sum", "Product", "Function", "Saturation", "DeadZone", "RateLimiter", "Quantizer",
        "Abs", "Sign", "Mux", "Demux", "Selector", "Switch", "Integrator", "TransferFunction",
        "StateSpace", "FilteredDerivative", "ZeroOrderHold", "UnitDelay", "DiscreteIntegrator",
        "DiscreteTransferFunction", "DiscreteStateSpace", "Scope", "Terminator", "StopSimulation"]


# ---- the library as a whole -------------------------------------------------------------------------

@pytest.mark.parametrize("type_name", CORE)
def test_every_block_is_registered_and_documented(type_name):
    cls = REGISTRY[type_name]
    assert cls.summary and cls.__doc__
    for key, decl in cls.all_params().items():
        assert decl.units and decl.doc, f"{type_name}.{key} needs units and a doc"


def test_unknown_parameter_suggests_the_closest_name():
    with pytest.raises(ParameterError) as err:
        BlockCheck("Saturation", {"uper": 1.0})
    assert "did you mean 'upper'" in str(err.value) and "block 'blk'" in str(err.value)


# ---- sources ----------------------------------------------------------------------------------------

def test_step_jumps_at_its_time_per_channel_and_declares_breakpoints():
    b = BlockCheck("Step", {"time": [1.0, 2.0], "initial": -1.0, "final": [3.0, 4.0]})
    np.testing.assert_array_equal(b.output(0.5), [[-1, -1]])
    np.testing.assert_array_equal(b.output(1.0), [[3, -1]])
    np.testing.assert_array_equal(b.output(2.5), [[3, 4]])
    assert b.block.breakpoints(0.0, 1.5) == [1.0]
    assert b.block.breakpoints(1.0, 5.0) == [2.0]
    assert not b.block.time_varying     # piecewise constant: held through the solver's stages


def test_step_vector_lengths_must_agree():
    with pytest.raises(ParameterError, match="'time' has 2.*'final' has 3"):
        BlockCheck("Step", {"time": [1, 2], "final": [1, 2, 3]})


def test_ramp_and_sine_follow_their_formulas():
    r = BlockCheck("Ramp", {"slope": [2.0, -1.0], "start_time": 0.5, "initial": 1.0})
    np.testing.assert_allclose(r.output(0.2), [[1.0, 1.0]])
    np.testing.assert_allclose(r.output(2.0), [[1.0 + 3.0, 1.0 - 1.5]])
    assert r.block.breakpoints(0.0, 1.0) == [0.5]
    s = BlockCheck("Sine", {"amplitude": [1.0, 2.0], "frequency": 3.0, "phase": 0.25, "bias": 0.5})
    t = 0.37
    np.testing.assert_allclose(s.output(t), np.array([[1, 2]]) * np.sin(2 * np.pi * 3 * t + 0.25) + 0.5)


def test_batched_parameters_give_one_row_per_member():
    b = BlockCheck("Sine", {"frequency": BatchValue([1.0, 2.0]), "amplitude": [1.0, 3.0]}, batch=2)
    t = 0.1
    np.testing.assert_allclose(b.output(t), [[math.sin(2 * math.pi * t), 3 * math.sin(2 * math.pi * t)],
                                             [math.sin(4 * math.pi * t), 3 * math.sin(4 * math.pi * t)]])


@pytest.mark.parametrize("method", ["linear", "logarithmic"])
def test_chirp_matches_scipy_during_the_sweep_then_holds_f1(method):
    f0, f1, T = 0.5, 4.0, 3.0
    b = BlockCheck("Chirp", {"f0": f0, "f1": f1, "duration": T, "amplitude": 2.0, "method": method})
    times = np.linspace(0, T, 37)
    y = np.array([b.output(t)[0, 0] for t in times])
    np.testing.assert_allclose(y, 2.0 * sig.chirp(times, f0, T, f1, method=method, phi=-90),
                               atol=1e-12)
    # after the sweep: frequency f1, phase continuing from the end of the sweep
    for dt in (0.01, 0.3, 2.0):
        cycles = _chirp_cycles(f0, f1, T, T, method) + f1 * dt
        assert b.output(T + dt)[0, 0] == pytest.approx(2.0 * math.sin(2 * math.pi * cycles),
                                                       abs=1e-12)
    assert b.block.breakpoints(0.0, 10.0) == [T]


def _chirp_cycles(f0, f1, T, t, method):
    if method == "linear":
        return f0 * t + 0.5 * (f1 - f0) / T * t * t
    k = f1 / f0
    return f0 * T / math.log(k) * (k ** (t / T) - 1)


def test_clock_is_time():
    np.testing.assert_array_equal(BlockCheck("Clock", batch=2).output(1.25), [[1.25], [1.25]])


@pytest.fixture
def table(tmp_path):
    t = np.array([0.0, 0.5, 1.0, 2.0])
    a = np.array([0.0, 1.0, 4.0, 2.0])
    bcol = np.array([1.0, -1.0, 0.0, 3.0])
    path = tmp_path / "table.csv"
    path.write_text("t, a, b\n" + "\n".join(f"{x},{y},{z}" for x, y, z in zip(t, a, bcol)))
    return tmp_path, t, a, bcol


def test_from_file_csv_linear_zoh_cubic(table):
    folder, t, a, bcol = table
    lin = BlockCheck("FromFile", {"path": "table.csv"}, diagram_dir=str(folder))
    assert lin.out_widths == {"out": 2}
    for tq in (0.0, 0.2, 0.75, 1.5, 2.0):
        np.testing.assert_allclose(lin.output(tq), [[np.interp(tq, t, a), np.interp(tq, t, bcol)]])
    np.testing.assert_allclose(lin.output(5.0), [[2.0, 3.0]])      # held after the table
    np.testing.assert_allclose(lin.output(-1.0), [[0.0, 1.0]])     # and before it
    assert lin.block.breakpoints(0, 5) == []
    zoh = BlockCheck("FromFile", {"path": "table.csv", "columns": ["b"], "interpolation": "zoh"},
                     diagram_dir=str(folder))
    np.testing.assert_allclose([zoh.output(x)[0, 0] for x in (0.49, 0.5, 1.99)], [1.0, -1.0, 0.0])
    assert zoh.block.breakpoints(0.0, 1.0) == [0.5, 1.0]
    assert lin.block.time_varying and not zoh.block.time_varying
    cub = BlockCheck("FromFile", {"path": "table.csv", "columns": "a", "interpolation": "cubic"},
                     diagram_dir=str(folder))
    spline = CubicSpline(t, a)
    for tq in (0.1, 0.7, 1.3, 1.9):
        assert cub.output(tq)[0, 0] == pytest.approx(float(spline(tq)), abs=1e-12)


def test_from_file_npz_with_a_matrix_key_and_errors(tmp_path, table):
    folder, *_ = table
    t = np.array([0.0, 1.0, 2.0])
    np.savez(tmp_path / "q.npz", t=t, q=np.array([[0, 10], [1, 11], [2, 12]]), s=t * 2)
    b = BlockCheck("FromFile", {"path": str(tmp_path / "q.npz"), "columns": ["q"]})
    np.testing.assert_allclose(b.output(1.5), [[1.5, 11.5]])
    strict = BlockCheck("FromFile", {"path": "table.csv", "extrapolation": "error"},
                        diagram_dir=str(folder))
    with pytest.raises(BlocksimError, match="outside the table"):
        strict.output(2.5)
    with pytest.raises(ParameterError, match="no column 'c'; it has: a, b"):
        BlockCheck("FromFile", {"path": "table.csv", "columns": ["c"]}, diagram_dir=str(folder))
    with pytest.raises(ParameterError, match="not found"):
        BlockCheck("FromFile", {"path": "missing.csv"}, diagram_dir=str(folder))


def test_white_noise_statistics_over_1e5_samples():
    batch, hits = 1000, 100
    b = BlockCheck("WhiteNoise", {"period": 0.01, "variance": 4.0, "mean": 1.0, "seed": 7},
                   batch=batch)
    samples = b.run_discrete([()] * hits)[:, :, 0]          # (hits, members)
    n = samples.size
    assert abs(samples.mean() - 1.0) < 5 * 2.0 / math.sqrt(n)
    assert abs(samples.var() / 4.0 - 1.0) < 5 * math.sqrt(2.0 / n)
    z = (samples - 1.0) / 2.0
    lag1 = np.mean(z[1:] * z[:-1])                           # successive samples
    across = np.mean(z[:, 1:] * z[:, :-1])                   # neighbouring batch members
    assert abs(lag1) < 5 / math.sqrt(n) and abs(across) < 5 / math.sqrt(n)
    skew, kurt = np.mean(z ** 3), np.mean(z ** 4)
    assert abs(skew) < 5 * math.sqrt(6 / n) and abs(kurt - 3) < 5 * math.sqrt(24 / n)


def test_white_noise_is_a_pure_function_of_seed_member_channel_and_k():
    params = {"period": 0.1, "width": 3, "seed": 42}
    first = BlockCheck("WhiteNoise", params, batch=2).run_discrete([()] * 5)
    again = BlockCheck("WhiteNoise", params, batch=4).run_discrete([()] * 5)
    np.testing.assert_array_equal(first, again[:, :2])       # members keep their streams
    assert len(np.unique(first)) == first.size                # channels, members, hits all differ
    other = BlockCheck("WhiteNoise", dict(params, seed=43)).run_discrete([()] * 5)
    assert not np.any(other[:, 0] == first[:, 0])
    jump = BlockCheck("WhiteNoise", params, batch=2)
    jump.xd[...] = 3.0                                        # restart from a checkpointed k
    np.testing.assert_array_equal(jump.output(0.3), first[3])


# ---- math -------------------------------------------------------------------------------------------

def test_gain_sum_and_product():
    g = BlockCheck("Gain", {"gain": [[1, 2], [3, 4], [5, 6]]}, 2)
    np.testing.assert_allclose(g.output(0, [1.0, -1.0]), [[-1, -1, -1]])
    s = BlockCheck("Sum", {"signs": "+-+"}, {"in1": 2, "in2": 1, "in3": 2})
    np.testing.assert_allclose(s.output(0, [1, 2], 10, [100, 200]), [[91, 192]])
    assert BlockCheck("Sum", {"signs": "-"}).inputs == ["in"]
    p = BlockCheck("Product", {"ops": "*/*"}, {"in1": 2, "in2": 1, "in3": 2})
    np.testing.assert_allclose(p.output(0, [2, 3], 4, [1, 2]), [[0.5, 1.5]])
    r = BlockCheck("Product", {"ops": "/"})
    assert r.inputs == ["in"] and r.output(0, 4.0)[0, 0] == 0.25


def test_sum_width_mismatch_names_block_and_port():
    with pytest.raises(WidthError) as err:
        BlockCheck("Sum", {"signs": "++"}, {"in1": 2, "in2": 3}, name="err_sum")
    assert err.value.block == "err_sum" and err.value.port in ("in1", "in2")


def test_function_evaluates_elementwise_with_indexing_vectors_and_time():
    f = BlockCheck("Function", {"expr": "sin(u1) * u2[0] + [t, 2*t, norm(u1)]", "inputs": 2},
                   {"in1": 3, "in2": 2}, batch=2)
    assert f.out_widths == {"out": 3}
    u1, u2 = np.array([1.0, 2.0, 3.0]), np.array([[2.0, 0.0], [3.0, 0.0]])
    expected = np.sin(u1) * u2[:, :1] + [0.5, 1.0, np.linalg.norm(u1)]
    np.testing.assert_allclose(f.output(0.5, u1, u2), expected, rtol=1e-14)
    g = BlockCheck("Function", {"expr": "atan2(u[1], u[0]) + max(u[0], 2, u[2]) - u[-1] ** 2 % 3"},
                   3)
    u = np.array([1.0, -2.0, 2.5])
    assert g.output(0, u)[0, 0] == pytest.approx(math.atan2(-2, 1) + 2.5 - (2.5 ** 2) % 3)
    h = BlockCheck("Function", {"expr": "dot(u[0:2], u[1:3]) + sum(u)", "width": 2}, 3)
    assert h.out_widths == {"out": 2}
    np.testing.assert_allclose(h.output(0, u), [[1 * -2 + -2 * 2.5 + 1.5] * 2])
    assert not h.block.time_varying and f.block.time_varying


def test_a_function_of_time_fed_by_a_constant_varies_with_time(tmp_path):
    """Its drivers are all constant, but its output depends on t: it runs continuous (it was
    taken as constant and logged exp(0) = 1 throughout)."""
    import blocksim
    path = tmp_path / "d.yaml"
    path.write_text("blocksim: 1\nname: f of t\nblocks:\n  c: {type: Constant, value: 2.0}\n"
                    "  f: {type: Function, expr: 'u * exp(-t)'}\nconnections:\n  - c -> f\n"
                    "simulation: {stop_time: 1.0, solver: rk4, step: 0.01}\n")
    r = blocksim.simulate(blocksim.load(path))
    np.testing.assert_allclose(r["f.out"][:, 0], 2.0 * np.exp(-r.t), rtol=1e-15)


@pytest.mark.parametrize("expr, message", [
    ("__import__('os').system('ls')", "attributes"),
    ("__import__('os')", "unknown function '__import__'"),
    ("u.real", "attributes"),
    ("(lambda x: x)(u)", "Lambda"),
    ("[x for x in u]", "ListComp"),
    ("u if u else 1", "IfExp"),
    ("'text'", "only numbers"),
    ("sinn(u)", "did you mean 'sin'"),
    ("v + 1", "unknown name 'v'"),
    ("u +", "not valid"),
])
def test_function_rejects_everything_but_arithmetic(expr, message):
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(")):
        BlockCheck("Function", {"expr": expr})


def test_function_width_errors_name_the_port():
    with pytest.raises(WidthError) as err:
        BlockCheck("Function", {"expr": "u1[3] + u2", "inputs": 2}, {"in1": 2, "in2": 1})
    assert err.value.port == "in1" and "out of range" in str(err.value)
    with pytest.raises(WidthError, match="width 2, parameter width is 3"):
        BlockCheck("Function", {"expr": "u", "width": 3}, 2)


def test_saturation_output_and_crossings_at_both_limits():
    s = BlockCheck("Saturation", {"lower": [-1.0, -2.0], "upper": 1.0}, 1)
    np.testing.assert_allclose(s.output(0, 1.5), [[1.0, 1.0]])
    np.testing.assert_allclose(s.output(0, -1.5), [[-1.0, -1.5]])
    np.testing.assert_allclose(s.zero_crossings(0, 1.5), [[2.5, 3.5, 0.5, 0.5]])
    assert s.block.n_zc == 4 and list(s.block.zc_directions) == [0, 0, 0, 0]
    free = BlockCheck("Saturation", {"upper": 2.0}, 1)
    assert np.all(free.zero_crossings(0, 0.0)[:, 0] > 0)      # no crossing at an infinite limit
    with pytest.raises(ParameterError, match="lower must be <= upper"):
        BlockCheck("Saturation", {"lower": 1.0, "upper": 0.0})


def test_dead_zone_quantizer_abs_sign():
    d = BlockCheck("DeadZone", {"start": -0.5, "end": 1.0}, 4)
    np.testing.assert_allclose(d.output(0, [-2.0, 0.0, 0.9, 3.0]), [[-1.5, 0, 0, 2.0]])
    np.testing.assert_allclose(d.zero_crossings(0, [0.0] * 4)[0, :4], [0.5] * 4)
    q = BlockCheck("Quantizer", {"interval": 0.5}, 5)
    np.testing.assert_allclose(q.output(0, [0.25, -0.25, 0.74, -1.3, 0.0]),
                               [[0.5, -0.5, 0.5, -1.5, 0.0]])
    a = BlockCheck("Abs", {}, 3)
    np.testing.assert_allclose(a.output(0, [-2.0, 0.0, 3.0]), [[2.0, 0.0, 3.0]])
    sg = BlockCheck("Sign", {}, 3)
    np.testing.assert_allclose(sg.output(0, [-2.0, 0.0, 3.0]), [[-1.0, 0.0, 1.0]])
    np.testing.assert_allclose(sg.zero_crossings(0, [-2.0, 0.0, 3.0]), [[-2.0, 0.0, 3.0]])
    assert sg.block.n_zc == 3


def test_rate_limiter_bounds_the_slope_from_the_last_major_step():
    r = BlockCheck("RateLimiter", {"rising": 2.0, "falling": [-1.0, -4.0]}, 1)
    np.testing.assert_allclose(r.output(0.0, 5.0), [[5.0, 5.0]])     # first output is the input
    r.update(0.0, 5.0)
    np.testing.assert_allclose(r.output(0.5, 10.0), [[6.0, 6.0]])    # + 2 * 0.5
    np.testing.assert_allclose(r.output(0.5, 0.0), [[4.5, 3.0]])     # - 1 * 0.5, - 4 * 0.5
    np.testing.assert_allclose(r.output(0.5, 5.2), [[5.2, 5.2]])     # within the bounds: u
    r.update(0.5, 0.0)
    np.testing.assert_allclose(r.output(1.0, 0.0), [[4.0, 1.0]])
    with pytest.raises(ParameterError):
        BlockCheck("RateLimiter", {"falling": 1.0})


# ---- routing ----------------------------------------------------------------------------------------

def test_mux_demux_selector():
    m = BlockCheck("Mux", {"inputs": [2, -1]}, {"in1": 2, "in2": 3})
    assert m.out_widths == {"out": 5}
    np.testing.assert_array_equal(m.output(0, [1, 2], [3, 4, 5]), [[1, 2, 3, 4, 5]])
    d = BlockCheck("Demux", {"sizes": [1, 3]}, 4)
    assert d.outputs == ["out1", "out2"] and d.out_widths == {"out1": 1, "out2": 3}
    y1, y2 = d.output(0, [1, 2, 3, 4])
    np.testing.assert_array_equal(y1, [[1]])
    np.testing.assert_array_equal(y2, [[2, 3, 4]])
    e = BlockCheck("Demux", {"outputs": 3}, 6)
    assert [y.tolist() for y in e.output(0, np.arange(6.0))] == [[[0, 1]], [[2, 3]], [[4, 5]]]
    s = BlockCheck("Selector", {"indices": [2, 0, 2]}, 3)
    np.testing.assert_array_equal(s.output(0, [10, 11, 12]), [[12, 10, 12]])


@pytest.mark.parametrize("type_name, params, widths, port", [
    ("Mux", {"inputs": [2, 2]}, {"in1": 2, "in2": 3}, "in2"),
    ("Demux", {"sizes": [1, 2]}, 4, "in"),
    ("Demux", {"outputs": 3}, 4, "in"),
    ("Selector", {"indices": [0, 3]}, 3, "in"),
    ("Switch", {}, {"in1": 2, "in2": 3, "in3": 2}, "in2"),
    ("StateSpace", {"A": [[0, 1], [0, 0]], "B": [0, 1], "C": [1, 0]}, 2, "in"),
    ("Integrator", {}, {"in": 3, "reset": 2}, "reset"),
])
def test_width_errors_name_block_and_port(type_name, params, widths, port):
    if port == "reset":
        params = {"reset": "rising"}
    with pytest.raises(WidthError) as err:
        BlockCheck(type_name, params, widths, name="wrong")
    assert err.value.block == "wrong" and err.value.port == port
    assert f"block 'wrong', port '{port}'" in str(err.value)


@pytest.mark.parametrize("criteria, passed", [(">=", [1, 1, 0]), (">", [1, 0, 0]),
                                              ("~=0", [1, 1, 1])])
def test_switch_criteria_and_crossing_on_the_control(criteria, passed):
    s = BlockCheck("Switch", {"threshold": 0.5, "criteria": criteria}, {"in1": 3, "in2": 3, "in3": 1})
    control = [2.0, 0.5, -1.0]
    y = s.output(0, [10.0, 20.0, 30.0], control, -7.0)
    np.testing.assert_array_equal(y, [[v if p else -7.0 for v, p in zip([10, 20, 30], passed)]])
    g = s.zero_crossings(0, 0.0, control, 0.0)
    np.testing.assert_allclose(g, [control] if criteria == "~=0" else [np.subtract(control, 0.5)])


# ---- continuous -------------------------------------------------------------------------------------

def test_integrator_plain_vector():
    b = BlockCheck("Integrator", {"x0": [1.0, 2.0]}, 1)
    np.testing.assert_array_equal(b.output(0), [[1.0, 2.0]])
    np.testing.assert_array_equal(b.derivative(0, 3.0), [[3.0, 3.0]])
    assert b.block.n_zc == 0 and b.block.feedthrough() == set()


def test_integrator_limits_stop_the_state_and_release_it():
    b = BlockCheck("Integrator", {"x0": 0.0, "lower": -1.0, "upper": [0.5, 2.0]}, 2)
    assert list(b.block.zc_directions) == [1, 1, -1, -1]
    np.testing.assert_allclose(b.zero_crossings(0, 0), [[-0.5, -2.0, 1.0, 1.0]])
    b.xc[...] = [[0.5000001, 1.0]]                      # a step overshot the upper limit slightly
    assert not b.on_event(0.3, [[True, False, False, False]])
    np.testing.assert_array_equal(b.xc, [[0.5, 1.0]])     # clamped exactly
    np.testing.assert_array_equal(b.derivative(0.3, [1.0, 1.0]), [[0.0, 1.0]])   # pushes outward
    np.testing.assert_array_equal(b.derivative(0.3, [-1.0, 1.0]), [[-1.0, 1.0]])  # points back in
    b.xc[...] = [[0.6, 1.0]]                               # a stage inside a step: output clamped
    np.testing.assert_array_equal(b.output(0.3), [[0.5, 1.0]])
    with_x0_out = BlockCheck("Integrator", {"x0": 5.0, "upper": 1.0}, 1)
    np.testing.assert_array_equal(with_x0_out.xc, [[1.0]])   # x0 starts within the limits


def test_integrator_limit_is_reached_exactly_with_event_location():
    # x' = 1 from 0, upper 0.3: locate the crossing by bisection on the RK4 solution, clamp, go on
    b = BlockCheck("Integrator", {"upper": 0.3}, 1)
    h, t = 0.1, 0.0
    for _ in range(6):
        x = b.xc.copy()
        b.xc[...] = x + h * b.derivative(t, 1.0, xc=x)
        t += h
        g = b.zero_crossings(t, 1.0)
        if g[0, 0] >= 0 > (x[0, 0] - 0.3):
            b.on_event(t, g >= 0)
    assert b.xc[0, 0] == 0.3 and b.output(t, 1.0)[0, 0] == 0.3


def test_integrator_reset_and_external_initial_condition():
    b = BlockCheck("Integrator", {"reset": "rising", "initial_condition": "external",
                                  "upper": 10.0}, {"in": 2, "reset": 1, "x0": 2})
    assert b.inputs == ["in", "reset", "x0"]
    assert b.block.feedthrough() == {("x0", "out")}
    assert list(b.block.zc_directions) == [1, 1, -1, -1, 1]
    np.testing.assert_array_equal(b.output(0, 0, 0, [3.0, 20.0]), [[3.0, 10.0]])  # before loading
    b.update(0, 0, 0, [3.0, 20.0])
    np.testing.assert_array_equal(b.xc, [[3.0, 10.0]])
    b.xc[...] = [[7.0, 8.0]]
    np.testing.assert_array_equal(b.output(1, 0, 0, [0, 0]), [[7.0, 8.0]])     # x0 input ignored
    assert b.zero_crossings(1, 0, -0.5, 0)[0, 4] == -0.5
    b.on_event(1.0, [[False, False, False, False, True]], 0, 0.5, [-1.0, 4.0])
    np.testing.assert_array_equal(b.xc, [[-1.0, 4.0]])
    internal = BlockCheck("Integrator", {"x0": [1.0, 2.0], "reset": "either"}, {"in": 2, "reset": 2})
    internal.xc[...] = [[5.0, 6.0]]
    internal.on_event(0.0, [[False, True]], 0, [0, 0])
    np.testing.assert_array_equal(internal.xc, [[5.0, 2.0]])     # per-channel reset


def _realisation(b):
    blk = b.block
    return blk._A[0, 0], blk._B[0, 0], blk._C[0, 0], blk._D[0, 0]


@pytest.mark.parametrize("num, den", [([1.0], [1.0, 3.0, 2.0]), ([2.0, 1.0, 5.0], [4.0, 2.0, 3.0]),
                                      ([1.0, 0.0], [1.0, 0.4, 4.0, 1.0]), ([0.0, 3.0], [2.0, 1.0])])
def test_transfer_function_realises_num_over_den(num, den):
    b = BlockCheck("TransferFunction", {"num": num, "den": den}, 1)
    A, Bm, C, D = _realisation(b)
    n_tf, d_tf = sig.ss2tf(A, Bm, C, D)
    num_ref = np.trim_zeros(np.asarray(num) / den[0], "f")
    np.testing.assert_allclose(n_tf[0, -len(num_ref):], num_ref, atol=1e-12)
    np.testing.assert_allclose(d_tf, np.asarray(den) / den[0], atol=1e-12)
    assert (b.block.feedthrough() == {("in", "out")}) == (len(num_ref) == len(den))


def test_transfer_function_step_response_matches_lsim_per_channel():
    num, den = [1.0, 4.0], [1.0, 1.2, 4.0]
    b = BlockCheck("TransferFunction", {"num": num, "den": den}, 2)
    times = np.linspace(0.0, 6.0, 61)
    gains = np.array([1.0, -2.5])
    y = b.integrate(lambda t: (gains,), times, substeps=10)
    _, y_ref, _ = sig.lsim((num, den), np.ones_like(times), times)
    np.testing.assert_allclose(y[:, 0, :], np.outer(y_ref, gains), atol=1e-7)
    with pytest.raises(ParameterError, match="improper"):
        BlockCheck("TransferFunction", {"num": [1, 0, 0], "den": [1, 1]})


def test_state_space_mimo_response_matches_lsim():
    A = [[0.0, 1.0], [-4.0, -0.8]]
    Bm = [[0.0, 1.0], [1.0, 0.5]]
    C = [[1.0, 0.0], [0.3, 1.0], [0.0, 2.0]]
    D = [[0.0, 0.0], [0.0, 0.0], [0.1, 0.0]]
    b = BlockCheck("StateSpace", {"A": A, "B": Bm, "C": C, "D": D, "x0": [0.5, -0.2]}, 2)
    assert b.out_widths == {"out": 3} and b.block.feedthrough() == {("in", "out")}
    times = np.linspace(0.0, 4.0, 41)
    u_of_t = lambda t: (np.array([np.sin(3 * t), 1.0]),)  # noqa: E731
    y = b.integrate(u_of_t, times, substeps=20)
    fine = np.linspace(0.0, 4.0, 4001)                  # lsim holds u linear between its samples
    u = np.array([u_of_t(t)[0] for t in fine])
    _, y_ref, _ = sig.lsim((A, Bm, C, D), u, fine, X0=[0.5, -0.2])
    np.testing.assert_allclose(y[:, 0, :], y_ref[::100], atol=2e-6)
    no_d = BlockCheck("StateSpace", {"A": A, "B": Bm, "C": C}, 2)
    assert no_d.block.feedthrough() == set()
    with pytest.raises(ParameterError, match="B has 3 rows, A has 2"):
        BlockCheck("StateSpace", {"A": A, "B": [[1], [2], [3]], "C": [1, 0]}, 1)


def test_filtered_derivative_is_n_s_over_s_plus_n():
    b = BlockCheck("FilteredDerivative", {"N": [10.0, 50.0]}, 2)
    for channel, N in enumerate((10.0, 50.0)):
        blk = b.block
        n_tf, d_tf = sig.ss2tf(blk._A[0, channel], blk._B[0, channel], blk._C[0, channel],
                               blk._D[0, channel])
        np.testing.assert_allclose(n_tf[0], [N, 0.0], atol=1e-9)
        np.testing.assert_allclose(d_tf, [1.0, N])
    times = np.linspace(0, 0.5, 51)
    y = b.integrate(lambda t: (np.array([t, 2 * t]),), times, substeps=20)
    np.testing.assert_allclose(y[:, 0, 0], 1 - np.exp(-10 * times), atol=1e-7)
    np.testing.assert_allclose(y[:, 0, 1], 2 * (1 - np.exp(-50 * times)), atol=1e-6)


# ---- discrete ---------------------------------------------------------------------------------------

def test_zero_order_hold_and_unit_delay():
    z = BlockCheck("ZeroOrderHold", {"period": 0.1}, 2)
    assert z.block.feedthrough() == {("in", "out")}
    np.testing.assert_array_equal(z.output(0.1, [1.0, 2.0]), [[1.0, 2.0]])
    d = BlockCheck("UnitDelay", {"period": 0.1, "x0": 9.0}, 1)
    np.testing.assert_array_equal(d.run_discrete([1.0, 2.0, 3.0])[:, 0, 0], [9.0, 1.0, 2.0])


@pytest.mark.parametrize("method", ["forward", "backward", "trapezoidal"])
def test_discrete_integrator_closed_forms(method):
    T, K, x0 = 0.1, 2.0, 0.5
    b = BlockCheck("DiscreteIntegrator", {"period": T, "gain": K, "x0": x0, "method": method}, 1)
    k = np.arange(8.0)
    y = b.run_discrete(list(k))[:, 0, 0]                     # u(k) = k
    # sum of u(j) for j < k is k(k-1)/2
    expected = {"forward": x0 + K * T * k * (k - 1) / 2,
                "backward": x0 + K * T * k * (k + 1) / 2,
                "trapezoidal": x0 + K * T * k ** 2 / 2}[method]
    np.testing.assert_allclose(y, expected, rtol=1e-14)
    assert (b.block.feedthrough() == set()) == (method == "forward")


def test_discrete_integrator_limits_do_not_wind_up():
    b = BlockCheck("DiscreteIntegrator", {"period": 1.0, "upper": 2.0, "method": "backward"}, 1)
    y = b.run_discrete([1.0] * 5 + [-1.0] * 2)[:, 0, 0]
    np.testing.assert_array_equal(y, [1, 2, 2, 2, 2, 1, 0])


@pytest.mark.parametrize("num, den", [([0.2, 0.3], [1.0, -0.5]), ([1.0], [2.0, -1.0, 0.3]),
                                      ([0.0, 0.1, 0.2], [1.0, -1.2, 0.5]),
                                      ([1.0, 2.0, 3.0], [1.0])])
def test_discrete_transfer_function_matches_lfilter(num, den):
    rng = np.random.default_rng(1)
    u = rng.standard_normal((30, 2))
    b = BlockCheck("DiscreteTransferFunction", {"period": 0.01, "num": num, "den": den}, 2)
    y = b.run_discrete([row for row in u])[:, 0, :]
    np.testing.assert_allclose(y, sig.lfilter(num, den, u, axis=0), atol=1e-12)
    assert (b.block.feedthrough() == {("in", "out")}) == (num[0] != 0)


def test_discrete_transfer_function_in_powers_of_z():
    # (z + 0.5) / (z^2 - z + 0.21) = (z^-1 + 0.5 z^-2) / (1 - z^-1 + 0.21 z^-2)
    u = np.sin(np.arange(20.0))
    b = BlockCheck("DiscreteTransferFunction", {"period": 1, "num": [1, 0.5], "den": [1, -1, 0.21],
                                                "form": "z"}, 1)
    y = b.run_discrete(list(u))[:, 0, 0]
    np.testing.assert_allclose(y, sig.lfilter([0, 1, 0.5], [1, -1, 0.21], u), atol=1e-12)
    assert b.block.feedthrough() == set()


def test_discrete_state_space_matches_dlsim():
    A = [[0.9, 0.1], [-0.2, 0.8]]
    Bm = [[0.0], [0.1]]
    C = [[1.0, 0.0]]
    D = [[0.05]]
    u = np.cos(0.3 * np.arange(25.0))
    b = BlockCheck("DiscreteStateSpace", {"period": 0.05, "A": A, "B": Bm, "C": C, "D": D,
                                          "x0": [1.0, 0.0]}, 1)
    y = b.run_discrete(list(u))[:, 0, 0]
    _, y_ref, _ = sig.dlsim((A, Bm, C, D, 0.05), u, x0=[1.0, 0.0])
    np.testing.assert_allclose(y, y_ref[:, 0], atol=1e-12)


# ---- sinks ------------------------------------------------------------------------------------------

def test_scope_terminator_ports():
    assert BlockCheck("Scope").inputs == ["in"]
    s = BlockCheck("Scope", {"inputs": 3}, {"in1": 2, "in2": 1, "in3": 4})
    assert s.inputs == ["in1", "in2", "in3"] and s.outputs == [] and s.out_widths == {}
    assert BlockCheck("Terminator", {}, 3).outputs == []


def test_stop_simulation_stops_when_the_input_becomes_nonzero():
    s = BlockCheck("StopSimulation", {}, 2)
    assert list(s.block.zc_directions) == [1, 1]
    np.testing.assert_array_equal(s.zero_crossings(0, [0.0, 0.0]), [[-1, -1]])
    np.testing.assert_array_equal(s.zero_crossings(0, [0.0, -3.0]), [[-1, 1]])
    assert s.on_event(1.0, [[False, True]]) is True
    assert s.block.stop_requested(0, None, None, s.u([[0.0, 2.0]]))
