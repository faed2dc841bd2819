"""The blocks' event and stop_requested kernels (Kernels.event, Kernels.stop_requested), called
directly from numba code compiled without its runtime (_nrt=False, as the generated loop is): an
allocation inside one fails to compile, and the resets are exact. The Integrator's, the Relay's
and the Manipulator's kernels are also checked bit for bit against the Python reactions they
replace (kept here as references), on random states and masks given as non-contiguous column views
of a larger array."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from blocksim.blocks.continuous import integrator_event
from blocksim.blocks.math import relay_event
from blocksim.blocks.robot_kernels import RESTITUTION, STOP_CAPTURE_SPEED, manipulator_event
from blocksim.blocks.sinks import stop_at_start, stop_event
from blocksim.models.joint_law import Q_MAX, Q_MIN

from blockcheck import BlockCheck

RNG = np.random.default_rng(11)


def without_runtime(kernel):
    """kernel called from a function compiled with _nrt=False (no allocation possible)."""
    @njit(_nrt=False)
    def call(t, xc, xd, u, mask, p):
        return kernel(t, xc, xd, u, mask, p)
    return call


def stop_check_without_runtime(kernel):
    @njit(_nrt=False)
    def call(t, xc, xd, u, p):
        return kernel(t, xc, xd, u, p)
    return call


def column_view(mask):
    """mask as a non-contiguous column view of a wider bool array (as the run's full mask)."""
    mask = np.asarray(mask, dtype=bool)
    n = mask.shape[1]
    wide = np.zeros((mask.shape[0], 2 * n + 3), dtype=bool)
    view = wide[:, 2:2 + 2 * n:2]                     # every other column
    view[...] = mask
    assert n < 2 or not view.flags.c_contiguous
    return view


def same_bits(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))


def test_the_harness_refuses_an_allocating_kernel():
    @njit(inline="always")
    def allocating(t, xc, xd, u, mask, p):
        hit = mask.copy()
        return bool(hit.any())

    with pytest.raises(Exception):
        without_runtime(allocating)(0.0, np.zeros((1, 1)), np.zeros((1, 0)), (np.zeros((1, 1)),),
                                    column_view([[True]]), ())


# ---- Integrator --------------------------------------------------------------------------------

def old_integrator_on_event(blk, xc, xd, u, mask, p):
    """Integrator.on_event before it became a kernel (numpy on whole arrays)."""
    width = blk.n_xc
    if blk._has_limits:
        hit = mask[:, :width] | mask[:, width:2 * width]
        clamped = np.clip(xc, p.lower, p.upper)
        xc[hit] = clamped[hit]
    if blk._reset_width:
        resets = mask[:, blk.n_zc - blk._reset_width:]
        if blk._reset_width == 1:
            resets = np.repeat(resets, width, axis=1)
        if blk._state_port:
            h = blk._held
            members = resets.any(axis=1) & (xd[:, h] == 0.0)
            xd[members, h] = 1.0
            xd[members, h + 1:h + 1 + width] = np.clip(xc, p.lower, p.upper)[members]
        x0 = u[blk._index["x0"]] if blk._external else p.x0
        start = np.empty_like(xc)
        wx = x0.shape[1]
        for b in range(start.shape[0]):
            for i in range(width):
                v = x0[b, i if wx > 1 else 0]
                lo, hi = p.lower[b, i], p.upper[b, i]
                start[b, i] = lo if v < lo else (hi if v > hi else v)
        xc[resets] = start[resets]
    if blk._has_limits:
        a = blk._on_limit
        xd[:, a:a + blk.n_xc] = (xc <= p.lower) | (xc >= p.upper)
    return False


def test_integrator_event_clamps_onto_the_limit_keeps_the_state_port_and_resets():
    check = BlockCheck("Integrator", {"x0": [0.25, -0.5], "lower": -1.0, "upper": 1.0,
                                      "reset": "rising", "state_port": True},
                       {"in": 2, "reset": 1}, batch=2)
    blk = check.block
    k = blk.runtime_kernels()
    assert k.event is integrator_event and k.stop_requested is None
    p = k.params
    assert p.reset_width == 1
    xc = np.array([[1.5, 0.3], [0.2, -1.25]])
    xd = np.zeros((2, blk.n_xd))                     # [on limit 0, 1 | state held | held x 0, 1]
    mask = np.zeros((2, 5), dtype=bool)
    mask[0, 0] = True                                # member 0: channel 0 reached upper
    mask[1, 3] = True                                # member 1: channel 1 reached lower ...
    mask[1, 4] = True                                # ... and a reset at the same instant
    u = check.u((0.0, 1.0))
    assert without_runtime(integrator_event)(0.7, xc, xd, u, column_view(mask), p) is False
    same_bits(xc, [[1.0, 0.3], [0.25, -0.5]])
    same_bits(xd, [[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.2, -1.0]])
    # a second reset at the same instant keeps the first's held value
    xc[1] = [0.9, 0.9]
    without_runtime(integrator_event)(0.7, xc, xd, u, column_view(mask), p)
    same_bits(xd[1], [0.0, 0.0, 1.0, 0.2, -1.0])


def test_integrator_event_with_an_external_x0_and_a_reset_per_channel():
    check = BlockCheck("Integrator", {"upper": 2.0, "reset": "either",
                                      "initial_condition": "external"},
                       {"in": 2, "reset": 2, "x0": 2}, batch=1)
    blk = check.block
    p = blk.runtime_kernels().params
    xc = np.array([[1.0, 1.0]])
    xd = np.ones((1, blk.n_xd))
    mask = np.array([[False, False, False, False, False, True]])   # channel 1's reset
    u = check.u((0.0, [0.0, 1.0], [7.0, -3.0]))
    without_runtime(integrator_event)(0.0, xc, xd, u, column_view(mask), p)
    same_bits(xc, [[1.0, -3.0]])                      # x0 input, within the limits
    mask[0, 4] = True
    without_runtime(integrator_event)(0.0, xc, xd, u, column_view(mask), p)
    same_bits(xc, [[2.0, -3.0]])                      # 7 clamped onto upper
    same_bits(xd, [[1.0, 1.0, 0.0]])                  # x0 loaded | on limit 0, not 1


@pytest.mark.parametrize("params, widths", [
    ({"x0": [0.5, -0.25, 3.0], "lower": [-1.0, 0.0, -np.inf], "upper": [1.0, 0.0, 2.0],
      "reset": "either", "state_port": True}, {"in": 3, "reset": 1}),
    ({"x0": 0.0, "lower": -0.0, "upper": 0.5, "reset": "rising", "state_port": True},
     {"in": 3, "reset": 3}),
    ({"lower": -1.0, "upper": 1.0, "reset": "either", "initial_condition": "external",
      "state_port": True}, {"in": 3, "reset": 3, "x0": 1}),
    ({"lower": -1.0, "upper": 1.0}, {"in": 3}),
    ({"x0": 1.0, "reset": "falling"}, {"in": 3, "reset": 1}),
])
def test_integrator_event_equals_the_python_reaction_bit_for_bit(params, widths):
    batch = 5
    check = BlockCheck("Integrator", params, widths, batch=batch)
    blk = check.block
    p = blk.runtime_kernels().params
    call = without_runtime(integrator_event)
    values = np.array([-2.0, -1.0, -0.0, 0.0, 0.25, 0.5, 1.0, 3.0, np.nan, np.inf])
    for _ in range(40):
        xc = RNG.choice(values, size=(batch, blk.n_xc))
        xd = RNG.choice([0.0, 1.0], size=(batch, blk.n_xd))
        u = tuple(RNG.choice(values, size=(batch, w)) for w in widths.values())
        mask = RNG.random((batch, blk.n_zc)) < 0.4
        xc2, xd2 = xc.copy(), xd.copy()
        assert call(0.1, xc, xd, u, column_view(mask), p) is False
        old_integrator_on_event(blk, xc2, xd2, u, mask, p)
        same_bits(xc, xc2)
        same_bits(xd, xd2)
        xc3, xd3 = xc2.copy(), xd2.copy()             # through Block.on_event (interpreted)
        assert blk.on_event(0.1, xc3, xd3, u, column_view(mask)) is False


def test_an_integrator_without_crossings_has_no_event_kernel():
    assert BlockCheck("Integrator", {}, {"in": 1}).block.runtime_kernels().event is None


# ---- Relay -------------------------------------------------------------------------------------

def test_relay_event_switches_only_in_the_crossings_direction():
    check = BlockCheck("Relay", {"switch_on": 0.5, "switch_off": -0.5}, 2)
    blk = check.block
    k = blk.runtime_kernels()
    assert k.event is relay_event
    call = without_runtime(relay_event)
    xd = np.array([[0.0, 1.0, 1.0]])                  # started: channel 0 off, channel 1 on
    mask = [[True, True, False, True]]                # on-crossings of 0 and 1, off-crossing of 1
    assert call(0.2, check.xc, xd, check.u(([0.6, -0.6],)), column_view(mask), k.params) is False
    same_bits(xd, [[1.0, 0.0, 1.0]])                  # 0 on, 1 off (its on-crossing: nothing)
    # a relay not started yet starts from the start rule first, then switches
    xd = np.zeros((1, 3))
    call(0.0, check.xc, xd, check.u(([0.7, -0.7],)), column_view([[False, False, True, False]]),
         k.params)
    same_bits(xd, [[0.0, 0.0, 1.0]])


def test_relay_event_equals_the_python_reaction_bit_for_bit():
    batch, w = 4, 3
    check = BlockCheck("Relay", {"switch_on": [0.5, 0.0, 1.0], "switch_off": [-0.5, 0.0, 1.0],
                                 "initial_state": "on"}, w, batch=batch)
    blk = check.block
    p = blk.runtime_kernels().params
    call = without_runtime(relay_event)
    for _ in range(40):
        xd = RNG.choice([0.0, 1.0], size=(batch, w + 1))
        u = (RNG.choice([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan], size=(batch, w)),)
        mask = RNG.random((batch, 2 * w)) < 0.5
        xd2 = xd.copy()
        call(0.1, check.xc, xd, u, column_view(mask), p)
        blk.runtime_kernels().update(0.1, check.xc, xd2, u, p)      # the old on_event
        mode = xd2[:, :w]
        on = mode != 0.0
        mode[mask[:, :w] & ~on] = 1.0
        mode[mask[:, w:2 * w] & on] = 0.0
        same_bits(xd, xd2)


# ---- Manipulator -------------------------------------------------------------------------------

def manipulator(batch=1, **params):
    return BlockCheck("Manipulator", {"robot": "two_link", **params},
                      in_widths={"tau": 2, "f_ext": 6}, batch=batch, connected=["tau"])


def test_manipulator_event_bounces_off_a_stop_and_stops_an_exact_sign_joint():
    check = manipulator(batch=3, q_min=[-0.5, -2.0], q_max=[0.5, 2.0], restitution=0.5,
                        friction="coulomb_viscous", Fc=1.0, friction_smoothing=0.0)
    blk = check.block
    k = blk.runtime_kernels()
    assert k.event is manipulator_event and blk.n_zc == 6
    xc = np.array([[0.7, 0.2, 2.0, -0.4],
                   [0.1, -2.1, 0.3, -1e-7],
                   [0.0, 0.0, 0.3, 0.01]])
    mask = np.zeros((3, 6), dtype=bool)
    mask[0, 0] = True                                 # joint 0 reached q_max
    mask[0, 5] = True                                 # joint 1's speed through zero
    mask[1, 3] = True                                 # joint 1 reached q_min, slowly: captured
    xd = check.xd.copy()
    assert without_runtime(manipulator_event)(0.1, xc, xd, check.u([0.0]), column_view(mask),
                                              k.params) is False
    same_bits(xc, [[0.5, 0.2, -1.0, 0.0],
                   [0.1, -2.0, 0.3, 0.0],
                   [0.0, 0.0, 0.3, 0.01]])
    same_bits(xd, check.xd)


def old_manipulator_on_event(blk, xc, mask, p):
    """Manipulator.on_event before it became a kernel."""
    n = blk.n
    if p.has_limits:
        for b, i in zip(*np.nonzero(mask[:, :n] | mask[:, n:2 * n])):
            upper = mask[b, i]
            xc[b, i] = p.law[b, i, Q_MAX] if upper else p.law[b, i, Q_MIN]
            bounce = -p.resets[b, i, RESTITUTION] * xc[b, n + i]
            xc[b, n + i] = bounce if abs(bounce) >= STOP_CAPTURE_SPEED else 0.0
    if p.exact and not blk._karnopp:
        start = 2 * n if p.has_limits else 0
        for b, i in zip(*np.nonzero(mask[:, start:start + n])):
            xc[b, n + i] = 0.0


@pytest.mark.parametrize("params", [
    {"q_min": [-0.5, -2.0], "q_max": [0.5, 2.0], "restitution": [0.5, 0.0]},
    {"q_max": [0.5, np.inf], "restitution": 0.8, "friction": "stribeck", "Fc": 1.0, "Fs": 2.0,
     "friction_smoothing": 0.0},
    {"friction": "coulomb_viscous", "Fc": 1.0, "friction_smoothing": 0.0},
    {"q_min": [-0.5, -2.0], "q_max": [0.5, 2.0], "friction": "karnopp", "Fc": 1.0},
])
def test_manipulator_event_equals_the_python_reaction_bit_for_bit(params):
    batch = 4
    check = manipulator(batch=batch, **params)
    blk = check.block
    p = blk.runtime_kernels().params
    call = without_runtime(manipulator_event)
    values = np.array([-3.0, -0.5, -1e-7, -0.0, 0.0, 1e-7, 0.3, 2.5])
    for _ in range(30):
        xc = RNG.choice(values, size=(batch, blk.n_xc))
        mask = RNG.random((batch, blk.n_zc)) < 0.4
        xc2 = xc.copy()
        call(0.1, xc, check.xd, check.u([0.0]), column_view(mask), p)
        old_manipulator_on_event(blk, xc2, mask, p)
        same_bits(xc, xc2)


@pytest.mark.parametrize("params", [{}, {"friction": "karnopp", "Fc": 1.0},
                                    {"friction": "coulomb_viscous", "Fc": 1.0,
                                     "friction_smoothing": 0.01}])
def test_a_manipulator_whose_crossings_reset_nothing_has_no_event_kernel(params):
    assert manipulator(**params).block.runtime_kernels().event is None


# ---- StopSimulation ----------------------------------------------------------------------------

def test_stop_kernels_stop_on_any_fired_function_and_on_a_nonzero_input_at_the_start():
    check = BlockCheck("StopSimulation", {}, in_widths=3, batch=2)
    blk = check.block
    k = blk.runtime_kernels()
    assert (k.event, k.stop_requested) == (stop_event, stop_at_start)
    event, at_start = without_runtime(stop_event), stop_check_without_runtime(stop_at_start)
    mask = np.zeros((2, 3), dtype=bool)
    assert event(0.0, check.xc, check.xd, check.u([0.0]), column_view(mask), k.params) is False
    mask[1, 2] = True
    assert event(0.0, check.xc, check.xd, check.u([0.0]), column_view(mask), k.params) is True
    assert at_start(0.0, check.xc, check.xd, check.u([0.0]), k.params) is False
    assert at_start(0.0, check.xc, check.xd, check.u(([[0.0, 0.0, 0.0], [0.0, -2.0, 0.0]],)),
                    k.params) is True
    assert at_start(0.0, check.xc, check.xd, check.u([[0.0, np.nan, 0.0]]), k.params) is True
    assert blk.stop_requested(0.0, check.xc, check.xd, check.u([-0.0])) is False
    assert blk.on_event(0.0, check.xc, check.xd, check.u([0.0]), column_view(mask)) is True
