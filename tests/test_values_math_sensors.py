"""Parameter values as data of a run, for the math, routing, sink and sensor blocks: what the
contract test (test_block_contract.py) does not reach: checks of new values, the Python-side
methods that read the run's record, and MeasurementNoise's member-keyed stream."""
from __future__ import annotations

import numpy as np
import pytest

from blockcheck import BlockCheck
from blocksim.blocks import REGISTRY
from blocksim.blocks.base import BatchValue
from blocksim.errors import ParameterError


@pytest.mark.parametrize("type_name, params, changes, message", [
    ("Saturation", {"lower": -1.0, "upper": [1.0, 2.0]}, {"upper": [-2.0, 2.0]},
     "lower must be <= upper"),
    ("DeadZone", {"start": -0.5, "end": 0.5}, {"start": BatchValue([0.0, 0.6])},
     "start must be <= end"),
    ("RateLimiter", {}, {"falling": 0.5}, "rising must be >= 0 and falling <= 0"),
    ("Quantizer", {"interval": 0.1}, {"interval": 0.0}, "interval must be > 0"),
    ("Encoder", {"counts": 1000}, {"gear": BatchValue([1.0, -1.0])}, "gear must be > 0"),
    ("MeasurementNoise", {"period": 0.01}, {"variance": -1.0}, "variance must be >= 0"),
])
def test_new_values_are_checked_as_the_files_are(type_name, params, changes, message):
    blk = BlockCheck(type_name, params, in_widths=2, batch=2).block
    with pytest.raises(ParameterError, match=message):
        blk.changed_values(blk.p, changes)
    with pytest.raises(ParameterError, match=message):
        BlockCheck(type_name, {**params, **{k: (v.values[1] if isinstance(v, BatchValue) else v)
                                            for k, v in changes.items()}}, in_widths=2)


def test_limits_of_a_scalar_and_a_vector_are_compared_member_by_member():
    # a scalar lower and a 3-vector upper in a batch of 2: (2,) against (2, 3)
    blk = BlockCheck("Saturation", {"lower": -1.0, "upper": [1.0, 2.0, 3.0]}, in_widths=3,
                     batch=2).block
    with pytest.raises(ParameterError, match="lower must be <= upper"):
        blk.changed_values(blk.p, {"lower": BatchValue([-1.0, 2.5])})
    with pytest.raises(ParameterError, match="vector parameters must have one length"):
        REGISTRY["Saturation"]("s", {"lower": [-1.0, 0.0], "upper": [1.0, 2.0, 3.0]}, batch=2)


def test_string_and_structural_parameters_cannot_change_between_runs():
    for type_name, params, key, value in [
            ("Sum", {"signs": "+-"}, "signs", "++"),
            ("Switch", {}, "criteria", ">"),
            ("Selector", {"indices": [1, 0]}, "indices", [0, 1]),
            ("SampleDelay", {"period": 0.01, "delay": 2}, "delay", 3),
            ("Function", {"expr": "2 * u"}, "expr", "3 * u")]:
        blk = BlockCheck(type_name, params, in_widths=2, batch=2).block
        with pytest.raises(ParameterError, match=f"'{key}' decides the structure"):
            blk.changed_values(blk.p, {key: value})


def test_sample_delay_starts_from_the_x0_of_the_runs_record():
    check = BlockCheck("SampleDelay", {"period": 0.01, "delay": 2, "x0": [1.0, 2.0]},
                       in_widths=2, batch=2)
    blk = check.block
    assert check.xd.tolist() == [[1.0, 2.0, 1.0, 2.0]] * 2       # the block's own values
    new = blk.changed_values(blk.p, {"x0": BatchValue([[3.0, 4.0], [5.0, 6.0]])})
    xd = np.zeros((2, blk.n_xd))
    blk.initial_state(np.zeros((2, 0)), xd, blk.record(new))
    assert xd.tolist() == [[3.0, 4.0, 3.0, 4.0], [5.0, 6.0, 5.0, 6.0]]
    part = blk.record(blk.member_values(new, 1, 2))
    xd = np.zeros((1, blk.n_xd))
    blk.initial_state(np.zeros((1, 0)), xd, part)
    assert xd.tolist() == [[5.0, 6.0, 5.0, 6.0]]
    # the record's x0 and the kernels: the delayed output is the stored x0 until N updates
    y = (np.zeros((1, 2)),)
    k = blk.runtime_kernels()
    k.output(0.0, np.zeros((1, 0)), xd, (np.ones((1, 2)),), y, part)
    assert y[0].tolist() == [[5.0, 6.0]]


def test_stop_simulation_takes_the_runs_record():
    check = BlockCheck("StopSimulation", {}, in_widths=2, batch=1)
    blk = check.block
    rec = blk.record(blk.p)
    u = (np.array([[0.0, 1.0]]),)
    assert blk.stop_requested(0.0, check.xc, check.xd, u, rec)
    assert blk.stop_requested(0.0, check.xc, check.xd, u)
    assert blk.on_event(0.0, check.xc, check.xd, u, np.array([[False, True]]), rec)


def test_a_member_of_measurement_noise_draws_its_global_members_noise():
    """The record of member 1's values (a part of a split batch starting at member 1) computes
    what a block built anew for member 1 alone (first_member 1) computes, and what member 1 of
    the whole batch computes: the noise is keyed by the member's index in the whole batch."""
    params = {"period": 0.01, "variance": 0.5, "mean": [0.1, -0.2], "seed": 5}
    check = BlockCheck("MeasurementNoise", params, in_widths=2, batch=2)
    blk = check.block
    assert type(blk.record(blk.p)) is type(blk.runtime_kernels().params)
    whole = blk.changed_values(blk.p, {"variance": BatchValue([0.5, 2.0]),
                                       "mean": BatchValue([[0.1, -0.2], [0.3, 0.4]])})
    before = {key: id(value) for key, value in vars(blk).items()}
    of_whole, part = blk.record(whole), blk.record(blk.member_values(whole, 1, 2))
    assert {key: id(value) for key, value in vars(blk).items()} == before
    assert part.first == 1 and of_whole.first == 0
    fresh = REGISTRY["MeasurementNoise"]("blk", {**params, "variance": 2.0, "mean": [0.3, 0.4]},
                                         batch=1, first_member=1)
    fresh.connected = blk.connected
    fresh.in_widths, fresh.out_widths = dict(blk.in_widths), dict(blk.out_widths)
    fresh.configure(dict(blk.in_widths), dict(blk.out_widths))
    k = blk.runtime_kernels()
    rng = np.random.default_rng(3)
    u = (rng.normal(size=(2, 2)),)
    xd = np.array([[4.0], [4.0]])
    ys = {}
    for tag, kernel_args in {"whole": (xd, u, of_whole), "part": (xd[1:], (u[0][1:],), part),
                             "fresh": (xd[1:], (u[0][1:],), fresh.runtime_kernels().params)
                             }.items():
        x, uu, rec = kernel_args
        y = (np.zeros((x.shape[0], 2)),)
        k.output(0.0, np.zeros((x.shape[0], 0)), x.copy(), uu, y, rec)
        ys[tag] = y[0]
    assert np.array_equal(ys["part"], ys["fresh"])
    assert np.array_equal(ys["whole"][1:], ys["part"])
    assert not np.array_equal(ys["whole"][:1], ys["part"])
