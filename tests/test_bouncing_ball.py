"""The Integrator's state port and examples/bouncing_ball.yaml: the classic bouncing ball as a pure
block diagram, whose velocity restarts from -e times its state port (no algebraic loop), finds
every impact of its 3 s run within 1e-9 s of the analytic times, in both modes."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.errors import AlgebraicLoopError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bouncing_ball.yaml"
G, E, H = 9.81, 0.8, 1.0     # m/s^2, -, m


def impact_times(count: int) -> np.ndarray:
    """A ball dropped from H at rest, bouncing with restitution E: t1 = sqrt(2 H / G), then
    flights of 2 E^k v1 / G with v1 = sqrt(2 G H)."""
    v1 = np.sqrt(2 * G * H)
    return np.cumsum([np.sqrt(2 * H / G)] + [2 * E ** k * v1 / G for k in range(1, count)])


_RUNS: dict = {}


def ball(mode: str):
    """The example's run in `mode`, once per test session (the tests that ask for it use the
    compiled_cache fixture, so compiled code goes to the session's cache folder)."""
    if mode not in _RUNS:
        _RUNS[mode] = blocksim.simulate(blocksim.load(EXAMPLE, set={"simulation.mode": mode}))
    return _RUNS[mode]


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_every_impact_of_the_example_is_found_within_1e_9_s(mode, compiled_cache):
    r = ball(mode)
    resets = np.array([e.t for e in r.events if e.block == "v"])
    floor = np.array([e.t for e in r.events if e.block == "x"])
    # six impacts before 3 s (the seventh is at 3.117 s), each a reset of v and a stop of x on
    # its lower limit at the same instant
    assert len(resets) == 6 and impact_times(7)[6] > 3.0
    np.testing.assert_array_equal(floor, resets)
    np.testing.assert_allclose(resets, impact_times(6), rtol=0, atol=1e-9)
    x, v = r["x.out"][:, 0], r["v.out"][:, 0]
    assert x.min() >= -1e-12                       # never through the floor
    # between the 6th impact and 3 s the ball flies up with E^6 v1
    t6, v6 = impact_times(6)[5], E ** 6 * np.sqrt(2 * G * H)
    dt = 3.0 - t6
    assert x[-1] == pytest.approx(v6 * dt - G * dt ** 2 / 2, abs=1e-9)
    assert v[-1] == pytest.approx(v6 - G * dt, abs=1e-9)
    # the state port equals the output on the log grid (no reset falls on it)
    np.testing.assert_array_equal(r["v.state"], r["v.out"])


def test_both_modes_give_the_same_ball_bit_for_bit(compiled_cache):
    a, b = ball("interpreted"), ball("compiled")
    assert [(e.t, e.block, e.index) for e in a.events] == \
        [(e.t, e.block, e.index) for e in b.events]
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_the_example_checks_and_runs_through_the_cli(tmp_path):
    assert EXAMPLE.read_text().startswith("# Purpose: ")

    def cli(*args):
        proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    checked = cli("check", EXAMPLE)
    assert "is valid" in checked.stdout and "warning" not in (checked.stdout + checked.stderr)
    cli("simulate", EXAMPLE, "--out", tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())["default"]
    assert metrics["first_apex"][0] == pytest.approx(E ** 2 * H, abs=1e-5)    # log grid 1 ms
    assert metrics["second_apex"][0] == pytest.approx(E ** 4 * H, abs=1e-5)
    assert metrics["final_position"][0] == pytest.approx(0.0687074610, abs=1e-9)
    # the impacts against the analytic times, as the example's event_times metric says them
    assert len(metrics["impact_time_error"]) == 6 and max(metrics["impact_time_error"]) < 1e-9


def test_the_event_times_metric_counts_missing_events_as_infinitely_wrong():
    from types import SimpleNamespace

    from blocksim.engine.metrics import compute_metrics
    from blocksim.errors import ParameterError
    events = [SimpleNamespace(t=t, block="v", index=0, member=0) for t in (0.5, 1.25)]
    result = SimpleNamespace(events=events, batch=1, batched=False, t=np.array([0.0, 2.0]))
    spec = SimpleNamespace(where={}, metrics=[
        {"name": "hits", "kind": "event_times", "block": "v", "reference": [0.5, 1.0, 1.5]}])
    assert compute_metrics(spec, result) == {"hits": [0.0, 0.25, np.inf]}
    spec.metrics[0].pop("block")
    with pytest.raises(ParameterError, match="needs 'block' and 'reference'"):
        compute_metrics(spec, result)


# ---- the state port ---------------------------------------------------------------------------

LOOP = """
blocksim: 1
blocks:
  gravity: {type: Constant, value: -9.81}
  v:       {type: Integrator, reset: falling, initial_condition: external}
  rebound: {type: Gain, gain: -0.8}
  x:       {type: Integrator, x0: 1.0, lower: 0.0}
connections: [gravity -> v.in, v.out -> x, x -> v.reset, SOURCE -> rebound, rebound -> v.x0]
simulation: {stop_time: 1.0}
"""


def test_the_state_port_has_no_feedthrough_so_feeding_it_to_x0_is_no_loop(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP.replace("SOURCE", "v.out"))
    with pytest.raises(AlgebraicLoopError, match="v.x0 -> v.out"):
        blocksim.load(path).compile()
    path.write_text(LOOP.replace("SOURCE", "v.state").replace(
        "initial_condition: external}", "initial_condition: external, state_port: true}"))
    blocksim.load(path).compile()
    blk = BlockCheck("Integrator", {"state_port": True, "initial_condition": "external",
                                    "reset": "rising"}, 1).block
    assert blk.output_names() == ["out", "state"]
    assert blk.feedthrough() == {("x0", "out")}
    plain = BlockCheck("Integrator", {}, 1).block
    assert plain.output_names() == ["out"] and plain.n_xd == 0   # the default is unchanged


def test_at_a_reset_the_output_shows_the_reset_value_and_the_state_port_the_value_before():
    b = BlockCheck("Integrator", {"x0": [0.5, -1.0], "upper": 2.0, "reset": "rising",
                                  "state_port": True}, {"in": 2, "reset": 1}, batch=2)
    assert b.block.state_names() == (["x[0]", "x[1]"], ["on limit[0]", "on limit[1]", "state held",
                                                        "held x[0]", "held x[1]"])
    b.xc[...] = [[2.0000001, 0.25], [1.5, 0.75]]      # member 0 overshot its upper limit
    # member 0 reaches its limit and is reset in the same event; member 1 is not reset
    mask = np.array([[True, False, False, False, True], [False] * 5])
    b.on_event(0.7, mask, [1.0, 1.0], 1.0)
    out, state = b.output(0.7, [1.0, 1.0], 1.0)
    np.testing.assert_array_equal(out, [[0.5, -1.0], [1.5, 0.75]])       # reset values
    np.testing.assert_array_equal(state, [[2.0, 0.25], [1.5, 0.75]])     # before it, clamped
    # the updates of that major step release it: from then on state = out
    b.update(0.7, [1.0, 1.0], 1.0)
    out, state = b.output(0.7, [1.0, 1.0], 1.0)
    np.testing.assert_array_equal(state, out)
    np.testing.assert_array_equal(b.derivative(0.7, [1.0, 1.0]), [[1.0, 1.0], [1.0, 1.0]])


def test_with_an_external_x0_the_state_port_shows_the_state_before_it_is_loaded():
    b = BlockCheck("Integrator", {"x0": 0.25, "initial_condition": "external",
                                  "state_port": True}, 1)
    out, state = b.output(0.0, 1.0, 3.0)
    assert (out[0, 0], state[0, 0]) == (3.0, 0.25)    # x0 input; the x0 parameter
    b.update(0.0, 1.0, 3.0)                            # loaded at the first major step
    out, state = b.output(0.0, 1.0, -7.0)
    assert (out[0, 0], state[0, 0]) == (3.0, 3.0)


STEP_RESET = """
blocksim: 1
blocks:
  one:   {type: Constant, value: 1.0}
  kick:  {type: Step, time: 0.5, initial: -1.0, final: 1.0}
  x:     {type: Integrator, x0: 0.25, reset: rising, state_port: true}
connections: [one -> x.in, kick -> x.reset]
simulation: {stop_time: 1.0, solver: dopri5}
log: {signals: [x.out, x.state], every: 0.25}
"""


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_reset_on_the_log_grid_logs_both_values(tmp_path, mode, compiled_cache):
    """A reset at t = 0.5 (a step's jump, fired at its major step): the log at 0.5 shows the
    reset value on out and the value just before it on state, and the two agree elsewhere."""
    path = tmp_path / "step_reset.yaml"
    path.write_text(STEP_RESET)
    r = blocksim.simulate(blocksim.load(path, set={"simulation.mode": mode}))
    assert [(e.t, e.block) for e in r.events] == [(0.5, "x")]
    np.testing.assert_array_equal(r.t, [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(r["x.out"][:, 0], [0.25, 0.5, 0.25, 0.5, 0.75], atol=1e-12)
    np.testing.assert_allclose(r["x.state"][:, 0], [0.25, 0.5, 0.75, 0.5, 0.75], atol=1e-12)


def test_a_free_channel_integrates_past_a_limit_and_one_on_the_limit_stops_there():
    """The limit mode the ball's floor relies on: inside a step that crosses the floor a free
    channel integrates on (smooth dynamics to locate the crossing on); once an event has clamped
    it, it stays while u pushes outward, and the major step's update frees it when u points in."""
    b = BlockCheck("Integrator", {"x0": 1.0, "lower": 0.0}, 1)
    assert b.block.state_names() == (["x[0]"], ["on limit[0]"])
    assert b.xd.tolist() == [[0.0]]
    b.xc[...] = -1e-3                                   # a solver stage beyond the floor
    assert b.derivative(0.5, -4.0)[0, 0] == -4.0
    assert b.output(0.5, -4.0)[0, 0] == 0.0             # the output is clamped all the same
    b.on_event(0.5, [[False, True]], -4.0)              # the crossing x - lower, falling
    assert b.xc.tolist() == [[0.0]] and b.xd.tolist() == [[1.0]]
    assert b.derivative(0.5, -4.0)[0, 0] == 0.0         # pushed outward: stays on the floor
    assert b.derivative(0.5, 3.0)[0, 0] == 3.0          # pushed back in: leaves at once
    b.update(0.5, 3.0)                                  # the major step judges with its input
    assert b.xd.tolist() == [[0.0]]
    b.update(0.5, -3.0)
    assert b.xd.tolist() == [[1.0]]
