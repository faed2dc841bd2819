"""The Relay: on/off with hysteresis, its mode a discrete state that changes only at a located
zero crossing (u - switch_on rising while off, u - switch_off falling while on); at the located
instant under an adaptive solver, at the major step after the crossing under a fixed-step one;
elementwise; the same numbers in both modes."""
import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.errors import ParameterError

F = 1.0            # Hz, the sine's frequency
ON, OFF = 0.5, -0.5

# a scalar relay with switch points +-0.5 on sin(2 pi F t), its output integrated (so dopri5 has a
# state to step; max_step keeps its steps shorter than the input's half period, which its error
# control alone does not see), and a vector relay with per-element switch points and values
SINE = """
blocksim: 1
blocks:
  sn:   {type: Sine, amplitude: 1.0, frequency: 1.0}
  rl:   {type: Relay, switch_on: 0.5, switch_off: -0.5, on_value: 2.0, off_value: -1.0}
  vec:  {type: Relay, switch_on: [0.5, 0.8], switch_off: [-0.5, 0.2], on_value: [1.0, 5.0],
         off_value: [0.0, -5.0]}
  int:  {type: Integrator}
connections: [sn -> rl, sn -> vec, rl -> int]
simulation: {stop_time: 3.0, solver: dopri5, max_step: 0.1}
log: {signals: [sn.out, rl.out, vec.out, int.out], every: 0.001}
"""


def crossing_times(level: float, rising: bool, stop: float = 3.0) -> np.ndarray:
    """Times in (0, stop] where sin(2 pi F t) passes `level` rising (or falling)."""
    a = np.arcsin(level)
    first = a if rising else np.pi - a
    k = np.arange(-1, int(stop * F) + 2)
    t = (first + 2 * np.pi * k) / (2 * np.pi * F)
    return t[(t > 0) & (t <= stop)]


def switch_times(on: float, off: float, stop: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """On and off times of a relay on the sine, starting off (sin 0 = 0 lies between the switch
    points): on at each rising pass of `on`, off at each falling pass of `off` after it."""
    ons, offs = crossing_times(on, True, stop), crossing_times(off, False, stop)
    return ons, offs[offs > ons[0]]


def run(tmp_path, text, mode, **sets):
    path = tmp_path / "relay.yaml"
    path.write_text(text)
    return blocksim.simulate(blocksim.load(path, set={"simulation.mode": mode, **sets}))


_RUNS: dict = {}


def sine_run(tmp_path, mode: str, solver: str):
    """SINE in `mode`, adaptive (dopri5) or fixed-step (rk4, 0.01 s), once per test session (the
    tests that ask for it use the compiled_cache fixture)."""
    if (mode, solver) not in _RUNS:
        fixed = {"simulation.solver": "rk4", "simulation.step": 0.01, "log.every": 0.01}
        _RUNS[mode, solver] = run(tmp_path, SINE, mode, **(fixed if solver == "rk4" else {}))
    return _RUNS[mode, solver]


def events_of(r, block, index):
    return np.array([e.t for e in r.events if e.block == block and e.index == index])


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_switching_times_are_the_analytic_asin_times(tmp_path, mode, compiled_cache):
    r = sine_run(tmp_path, mode, "dopri5")
    ons, offs = switch_times(ON, OFF)
    assert len(ons) == 3 and len(offs) == 3
    # function 0 (u - switch_on, rising) switches on, function 1 (u - switch_off, falling) off
    np.testing.assert_allclose(events_of(r, "rl", 0), ons, rtol=0, atol=1e-9)
    np.testing.assert_allclose(events_of(r, "rl", 1), offs, rtol=0, atol=1e-9)
    assert len(events_of(r, "rl", 0)) + len(events_of(r, "rl", 1)) == \
        len([e for e in r.events if e.block == "rl"])
    # the output is exactly the on or the off value, on exactly between an on and the next off
    t, y = r.t, r["rl.out"][:, 0]
    assert set(np.unique(y)) == {2.0, -1.0}
    on = np.zeros_like(t, dtype=bool)
    for a, b in zip(ons, list(offs) + [np.inf]):
        on |= (t >= a) & (t < b)
    np.testing.assert_array_equal(y, np.where(on, 2.0, -1.0))
    # between the switch points the relay keeps its mode: on while the sine falls from 0.5 to
    # -0.5 (a relay without hysteresis would be off there), off while it rises from -0.5 to 0.5
    u = r["sn.out"][:, 0]
    band = (u > OFF) & (u < ON)
    assert np.any(band & (y == 2.0)) and np.any(band & (y == -1.0))
    # the integral of the output is the piecewise-linear one of those times
    edges = np.concatenate([[0.0], np.sort(np.concatenate([ons, offs])), [3.0]])
    levels = [-1.0 if k % 2 == 0 else 2.0 for k in range(len(edges) - 1)]
    assert r["int.out"][-1, 0] == pytest.approx(np.dot(levels, np.diff(edges)), abs=1e-9)


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_vector_relay_switches_each_element_at_its_own_points(tmp_path, mode, compiled_cache):
    r = sine_run(tmp_path, mode, "dopri5")
    ons0, offs0 = switch_times(0.5, -0.5)
    ons1, offs1 = switch_times(0.8, 0.2)
    # element i's functions: i (switch on) and 2 + i (switch off)
    np.testing.assert_allclose(events_of(r, "vec", 0), ons0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(events_of(r, "vec", 2), offs0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(events_of(r, "vec", 1), ons1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(events_of(r, "vec", 3), offs1, rtol=0, atol=1e-9)
    y = r["vec.out"]
    assert set(np.unique(y[:, 0])) == {0.0, 1.0} and set(np.unique(y[:, 1])) == {-5.0, 5.0}


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_with_a_fixed_step_solver_the_switch_is_at_the_major_step_after_the_crossing(
        tmp_path, mode, compiled_cache):
    r = sine_run(tmp_path, mode, "rk4")
    ons, offs = switch_times(ON, OFF)
    h = 0.01
    after = lambda times: np.ceil(np.round(times / h, 9)) * h          # noqa: E731
    np.testing.assert_allclose(events_of(r, "rl", 0), after(ons), rtol=0, atol=1e-12)
    np.testing.assert_allclose(events_of(r, "rl", 1), after(offs), rtol=0, atol=1e-12)
    t, y = r.t, r["rl.out"][:, 0]
    for a in after(ons):
        k = int(np.argmin(np.abs(t - a)))
        assert (y[k - 1], y[k]) == (-1.0, 2.0)      # off at the step before, on at the step after


def test_both_modes_agree_bit_for_bit(tmp_path, compiled_cache):
    for solver in ("dopri5", "rk4"):
        a, b = sine_run(tmp_path, "interpreted", solver), sine_run(tmp_path, "compiled", solver)
        assert [(e.t, e.block, e.index) for e in a.events] == \
            [(e.t, e.block, e.index) for e in b.events]
        np.testing.assert_array_equal(a.t, b.t)
        for name in a.names:
            np.testing.assert_array_equal(a[name], b[name], err_msg=f"{solver} {name}")


# a slow triangle, -0.6 + 0.1 t up to t = 10 s (0.4), then down at 0.1/s: through the band
# [-0.3333, 0.3333] once up (at 9.333 s) and once down (at 17.333 s, both off the log grid),
# over hundreds of solver steps
TRIANGLE = """
blocksim: 1
blocks:
  up:    {type: Ramp, slope: 0.1, initial: -0.6}
  down:  {type: Ramp, slope: -0.2, start_time: 10.0}
  u:     {type: Sum, signs: "++"}
  rl:    {type: Relay, switch_on: 0.3333, switch_off: -0.3333}
  int:   {type: Integrator}
connections: [up -> u.in1, down -> u.in2, u -> rl, rl -> int]
simulation: {stop_time: 20.0, solver: dopri5, max_step: 0.02}
log: {signals: [u.out, rl.out], every: 0.01}
"""


def test_a_slow_ramp_switches_once_each_way_without_chatter(tmp_path):
    r = run(tmp_path, TRIANGLE, "interpreted")
    assert r.stats["nsteps"] >= 900                 # many steps near each switch point
    events = [(e.block, e.index) for e in r.events]
    assert events == [("rl", 0), ("rl", 1)]         # on once, off once: no chatter
    np.testing.assert_allclose([e.t for e in r.events], [9.333, 17.333], rtol=0, atol=1e-9)
    y = r["rl.out"][:, 0]
    assert np.count_nonzero(np.diff(y)) == 2
    t = r.t
    np.testing.assert_array_equal(y, np.where((t >= 9.333) & (t < 17.333), 1.0, 0.0))


# ---- the block alone ---------------------------------------------------------------------------

def test_switch_off_above_switch_on_is_refused_with_a_clear_message():
    with pytest.raises(ParameterError, match=r"switch_off must be <= switch_on.*switch_off "
                                             r"\[0.6\] and switch_on \[0.5\]"):
        BlockCheck("Relay", {"switch_on": 0.5, "switch_off": 0.6})
    with pytest.raises(ParameterError, match=r"switch_off must be <= switch_on.*\[0.0, 2.0\]"):
        BlockCheck("Relay", {"switch_on": [1.0, 1.0], "switch_off": [0.0, 2.0]}, 2)
    BlockCheck("Relay", {"switch_on": 0.5, "switch_off": 0.5})       # no hysteresis: allowed
    blk = BlockCheck("Relay", {"switch_on": 0.5, "switch_off": -0.5}, 1, batch=2).block
    with pytest.raises(ParameterError, match="switch_off must be <= switch_on"):
        blk.changed_values(blk.p, {"switch_off": 1.0})


def test_the_first_major_step_starts_the_mode_from_the_input():
    for u, initial, expected in [(0.7, "off", 1.0), (0.5, "off", 1.0), (-0.5, "on", 0.0),
                                 (0.0, "off", 0.0), (0.0, "on", 1.0)]:
        b = BlockCheck("Relay", {"switch_on": 0.5, "switch_off": -0.5, "initial_state": initial})
        assert b.output(0.0, u)[0, 0] == expected, (u, initial)
        b.update(0.0, u)
        assert b.xd.tolist() == [[expected, 1.0]]       # on[0], started
        # from then on the input does not switch it: only a located crossing does
        assert b.output(0.1, -u if u else 0.9)[0, 0] == expected


def test_the_mode_changes_only_in_on_event_and_only_in_the_crossings_direction():
    b = BlockCheck("Relay", {"switch_on": [0.5, 0.2], "switch_off": -0.5, "on_value": [1.0, 3.0],
                             "off_value": -1.0}, 1)
    assert list(b.block.zc_directions) == [1, 1, -1, -1]
    b.update(0.0, 0.0)                                   # both start off
    np.testing.assert_array_equal(b.zero_crossings(0.0, 0.0), [[-0.5, -0.2, -1.0, -1.0]])
    # a solver stage far above switch_on: still off (the mode is held inside steps)
    np.testing.assert_array_equal(b.output(0.1, 0.9), [[-1.0, -1.0]])
    np.testing.assert_array_equal(b.derivative(0.1, 0.9), np.zeros((1, 0)))
    # element 1's switch-on crossing is located: only element 1 switches
    b.on_event(0.2, [[False, True, False, False]], 0.2)
    np.testing.assert_array_equal(b.output(0.2, 0.2), [[-1.0, 3.0]])
    # an on element's switch-on function sits at 1, its switch-off function is u - switch_off
    np.testing.assert_array_equal(b.zero_crossings(0.2, 0.2), [[-0.3, 1.0, -1.0, 0.7]])
    # a crossing that does not apply (switch off while off) changes nothing
    b.on_event(0.3, [[False, False, True, False]], -0.6)
    np.testing.assert_array_equal(b.output(0.3, -0.6), [[-1.0, 3.0]])
    b.on_event(0.4, [[False, False, False, True]], -0.5)
    np.testing.assert_array_equal(b.output(0.4, -0.5), [[-1.0, -1.0]])
    assert b.block.state_names() == ([], ["on[0]", "on[1]", "started"])
