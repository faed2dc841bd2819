"""Sources and trajectories whose values are data of a run: the Python-side methods (breakpoints,
FromFile's output) read the run's record, checks of values refuse new values as they refuse the
file's, and WhiteNoise's record keys each member's stream by its index in the whole batch."""
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.blocks import REGISTRY
from blocksim.blocks.base import BatchValue
from blocksim.errors import BlocksimError, ParameterError
from blockcheck import BlockCheck
from test_compiled_blocks import TABLE


def source(type_name, params, batch=1, **kw):
    return BlockCheck(type_name, params, in_widths={}, batch=batch, **kw).block


BREAKS = [
    ("Step", {"time": [1.0, 2.0]}, {"time": BatchValue([[1.5, 2.0], [0.5, 3.0]])}),
    ("Ramp", {"start_time": 0.5}, {"start_time": BatchValue([0.25, 0.75])}),
    ("Chirp", {"duration": 2.0}, {"duration": BatchValue([3.0, 4.0])}),
    ("Polynomial", {"q0": 0.0, "qf": [1.0, 2.0], "t0": 0.5, "tf": 2.0},
     {"tf": BatchValue([2.5, 3.0])}),
    ("MinimumJerk", {"q0": 0.0, "qf": 1.0, "duration": 1.0}, {"t0": BatchValue([0.2, 0.4])}),
    ("Trapezoidal", {"q0": [0.0, 0.0], "qf": [1.0, -2.0], "vmax": 1.0, "amax": 2.0, "t0": 0.25},
     {"vmax": BatchValue([1.0, 0.5])}),
    ("ViaPoints", {"times": [0.0, 1.0, 2.0], "points": [0.0, 1.0, 0.0]},
     {"times": BatchValue([[0.0, 1.5, 2.0], [0.5, 1.0, 3.0]])}),
]


@pytest.mark.parametrize("type_name, params, changes", BREAKS, ids=[b[0] for b in BREAKS])
def test_breakpoints_are_those_of_the_runs_record(type_name, params, changes):
    blk = source(type_name, params, batch=2)
    new = blk.changed_values(blk.p, changes)
    record = blk.record(new)
    given = dict(params)
    given.update({k: v for k, v in changes.items()})
    fresh = source(type_name, given, batch=2)
    assert blk.breakpoints(-1.0, 10.0, record) == fresh.breakpoints(-1.0, 10.0)
    assert blk.breakpoints(-1.0, 10.0, record) != blk.breakpoints(-1.0, 10.0)
    # the block's own record when p is omitted
    assert blk.breakpoints(-1.0, 10.0) == source(type_name, params, batch=2).breakpoints(-1.0, 10.0)


def test_new_values_are_checked_as_the_files_are():
    refused = [
        ("Chirp", {}, {"duration": 0.0}, "duration must be positive"),
        ("Chirp", {"method": "logarithmic"}, {"f0": -1.0}, "f0 > 0"),
        ("WhiteNoise", {"period": 0.1}, {"variance": -1.0}, "variance"),
        ("CosineRamp", {"amplitude": 1.0, "period": 2.0}, {"period": 0.0}, "period must be > 0"),
        ("SineTrajectory", {}, {"frequency": -1.0}, "frequency must be >= 0"),
        ("Polynomial", {"q0": 0.0, "qf": 1.0, "tf": 1.0}, {"t0": 1.0}, "tf must be > t0"),
        ("MinimumJerk", {"q0": 0.0, "qf": 1.0, "duration": 1.0}, {"duration": -1.0}, "duration"),
        ("Trapezoidal", {"q0": [0.0], "qf": [1.0], "amax": 4.0, "duration": 2.0},
         {"duration": 0.9}, "too short"),
        ("Trapezoidal", {"q0": [0.0], "qf": [1.0], "vmax": 1.0, "amax": 4.0}, {"vmax": 0.0},
         "vmax must be > 0"),
        ("ViaPoints", {"times": [0.0, 1.0, 2.0], "points": [0.0, 1.0, 0.0]},
         {"times": [0.0, 2.0, 1.0]}, "increasing"),
        ("FourierSeries", {"frequency": 0.5, "a": [[0.1]], "b": [[0.2]]}, {"frequency": 0.0},
         "frequency must be > 0"),
    ]
    for type_name, params, changes, message in refused:
        blk = source(type_name, params)
        with pytest.raises(ParameterError, match=message):
            blk.changed_values(blk.p, changes)


def test_trapezoidal_motion_time_is_that_of_its_own_values():
    blk = source("Trapezoidal", {"q0": [0.0], "qf": [1.0], "duration": BatchValue([2.0, 3.0])},
                 batch=2)
    assert blk.motion_time.tolist() == [2.0, 3.0]
    record = blk.record(blk.changed_values(blk.p, {"duration": 4.0}))
    assert record.path[:, 3].tolist() == [4.0, 4.0] and blk.motion_time.tolist() == [2.0, 3.0]


def test_from_file_output_reads_the_runs_record(tmp_path):
    (tmp_path / "table.csv").write_text(TABLE)
    check = BlockCheck("FromFile", {"path": "table.csv", "extrapolation": "error"}, in_widths={},
                       batch=2, diagram_dir=str(tmp_path))
    blk = check.block
    record = blk.record(blk.p)
    y, y_own = (tuple(np.zeros((2, w)) for w in blk.out_widths.values()) for _ in range(2))
    blk.output(0.7, check.xc, check.xd, (), y, record)
    blk.output(0.7, check.xc, check.xd, (), y_own)
    for a, b in zip(y, y_own):
        np.testing.assert_array_equal(a, b)
    wide = record._replace(latest=1e9)           # the record, not the block, says what is allowed
    blk.output(100.0, check.xc, check.xd, (), y, wide)
    with pytest.raises(BlocksimError, match="outside the table"):
        blk.output(100.0, check.xc, check.xd, (), y, record)
    xd = np.ones((2, blk.n_xd))
    blk.initial_state(check.xc, xd, record)
    assert not xd.any()


def _noise_outputs(blk, record, xd):
    k = blk.runtime_kernels()
    y = (np.zeros((xd.shape[0], blk.out_widths["out"])),)
    k.output(0.3, np.zeros((xd.shape[0], 0)), xd.copy(), (), y, record)
    return y[0]


def test_white_noise_record_keys_a_parts_streams_by_their_index_in_the_whole_batch():
    params = {"period": 0.1, "width": 3, "seed": 7, "variance": BatchValue([1.0, 2.0, 3.0]),
              "mean": BatchValue([0.0, 1.0, 2.0])}
    blk = source("WhiteNoise", params, batch=3)
    before = {key: id(value) for key, value in vars(blk).items()}
    whole = blk.record(blk.p)
    part = blk.record(blk.member_values(blk.p, 1, 3))
    assert {key: id(value) for key, value in vars(blk).items()} == before
    assert type(part) is type(blk.runtime_kernels().params) and part.first == 1
    # the reference: a block built anew for members 1 and 2, as the whole batch's part
    fresh = REGISTRY["WhiteNoise"]("blk", {**params, "variance": BatchValue([2.0, 3.0]),
                                           "mean": BatchValue([1.0, 2.0])},
                                   batch=2, first_member=1)
    fresh.in_widths, fresh.out_widths = {}, {"out": 3}
    fresh.configure({}, {"out": 3})
    xd = np.array([[3.0], [5.0], [8.0]])
    of_whole = _noise_outputs(blk, whole, xd)
    of_part = _noise_outputs(blk, part, xd[1:])
    of_fresh = _noise_outputs(fresh, fresh.runtime_kernels().params, xd[1:])
    np.testing.assert_array_equal(of_part, of_fresh)
    np.testing.assert_array_equal(of_part, of_whole[1:])


SOURCES = """
blocksim: 1
blocks:
  step: {type: Step, time: 0.3, initial: 0.0, final: 2.0}
  ref:  {type: MinimumJerk, q0: 0.0, qf: 1.0, t0: 0.1, duration: 0.5}
  sum:  {type: Sum, signs: "++"}
  x:    {type: Integrator, x0: 0.0}
connections: [step -> sum.in1, ref.q -> sum.in2, sum -> x]
simulation: {stop_time: 1, solver: dopri5, mode: interpreted}
log: {signals: [x.out], every: 0.05}
"""


def test_new_times_set_between_runs_give_the_run_of_a_diagram_with_them(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(SOURCES))
    sim = blocksim.Simulator(blocksim.load(path))
    first = sim.run()
    sim.set_parameters({"step.time": 0.6, "ref.duration": 0.25})
    second = sim.run()
    text = dedent(SOURCES).replace("time: 0.3", "time: 0.6").replace("duration: 0.5",
                                                                       "duration: 0.25")
    path.write_text(text)
    fresh = blocksim.simulate(blocksim.load(path))
    np.testing.assert_array_equal(second.t, fresh.t)
    np.testing.assert_array_equal(second["x.out"], fresh["x.out"])
    assert not np.array_equal(first["x.out"], second["x.out"])


def test_a_simulation_of_new_values_on_the_same_blocks_steps_on_their_breakpoints(tmp_path):
    from blocksim.engine.simulate import make_simulation
    path = tmp_path / "d.yaml"
    path.write_text(dedent(SOURCES))
    d = blocksim.load(path)
    cd = d.compile(None)
    changed = cd.with_values({("step", "time"): 0.6, ("ref", "duration"): 0.25})
    assert changed.blocks["step"] is cd.blocks["step"] and changed.blocks["ref"] is cd.blocks["ref"]
    out = make_simulation(changed, d.settings, d.log_settings).run()
    path.write_text(dedent(SOURCES).replace("time: 0.3", "time: 0.6")
                    .replace("duration: 0.5", "duration: 0.25"))
    fresh = blocksim.simulate(blocksim.load(path))
    np.testing.assert_array_equal(out.t, fresh.t)
    np.testing.assert_array_equal(out.signals["x.out"][0], fresh["x.out"])


def test_white_noise_python_twin_equals_the_kernel_without_overflow_warnings():
    """A first run draws the noise through the kernels' Python twins: the same numbers as the
    compiled hash, and no numpy overflow warning from its wrapping 64-bit arithmetic."""
    import warnings

    from blocksim.blocks import sources
    from blocksim.twins import python_twin

    twin = python_twin(sources.gaussian)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        drawn = [twin(np.uint64(7), b, 1, np.uint64(k)) for b in range(2) for k in range(50)]
    assert drawn == [sources.gaussian(np.uint64(7), b, 1, np.uint64(k))
                     for b in range(2) for k in range(50)]


def test_a_kernel_run_as_its_twin_overflows_to_inf_without_a_warning_as_compiled():
    """A Fourier excitation with coefficients near the float limit: its twin, as the engine calls
    it on a first run (before the kernels are compiled), gives the compiled kernel's inf, with no
    numpy overflow warning (numba's error_model="numpy" warns of nothing)."""
    import warnings

    from blocksim.blocks.trajectories import fourier_kernel
    from blocksim.twins import quiet_twin

    rows = np.array([[0.0, 2.0 * np.pi]])                    # q0 = 0 rad, wf = 2 pi rad/s
    ab = np.full((1, 1, 2, 2), 1e308)                        # rad/s
    outputs = [np.zeros((1, 1)) for _ in range(6)]
    fourier_kernel(0.1, rows, ab, *outputs[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet_twin(fourier_kernel)(0.1, rows, ab, *outputs[3:])
    for compiled, twin in zip(outputs[:3], outputs[3:]):
        np.testing.assert_array_equal(twin, compiled)
    assert np.isinf(outputs[5]).all()                        # qdd overflowed
