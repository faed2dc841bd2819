"""Events in the compiled adaptive loop (engine/adaptive_loop.py): a run with zero crossings
under rk23, dopri5 or dop853 locates them inside compiled code with the crossing search the
interpreted run uses (solvers/events.py), and takes the interpreted run's steps, events, logs
and counters to the last bit: resets, held modes switched at the event, a mode that switches a
moment after t, a terminal event, and a batch whose members cross at different times."""
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.solvers.events import find_first_crossing
from test_compiled_adaptive import assert_same_run

pytestmark = pytest.mark.usefixtures("compiled_cache")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# a Sign held through the stages (its crossing switches it), a Relay reading it, a hard-limited
# Integrator of the sine (its clamp is a reset at the event), y = the integral of the sign, and
# a stop when y leaves the dead zone [-0.03, 1] (DeadZone's output becomes nonzero)
SWITCHES = """
blocksim: 1
blocks:
  s:    {type: Sine, amplitude: 1.0, frequency: 1.0, phase: 0.3}
  sg:   {type: Sign}
  rl:   {type: Relay, switch_on: 0.5, switch_off: -0.5}
  x:    {type: Integrator, lower: -0.05, upper: 0.12}
  y:    {type: Integrator}
  stop: {type: StopSimulation}
  band: {type: DeadZone, start: -0.03, end: 1.0}
connections: [s -> sg, sg -> rl, s -> x, sg -> y, y -> band, band -> stop]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [sg.out, rl.out, x.out, y.out], every: 0.001}
"""


def both(diagram, **settings):
    """(interpreted Result, compiled Result, compiled Simulator)."""
    a = blocksim.Simulator(diagram, mode="interpreted", **settings).run()
    sim = blocksim.Simulator(diagram, mode="compiled", **settings)
    return a, sim.run(), sim


def assert_same_events(a, b):
    assert [(e.t, e.block, e.index, e.member) for e in b.events] == \
        [(e.t, e.block, e.index, e.member) for e in a.events]
    assert b.stopped_by == a.stopped_by


def test_the_bouncing_ball_bounces_in_compiled_code_bit_for_bit(monkeypatch):
    """Resets through the Integrator's state port and a limit: every impact at the interpreted
    run's time, the same log and counters, in run_adaptive, which runs the reactions itself."""
    no_python_services(monkeypatch)
    a, b, sim = both(blocksim.load(EXAMPLES / "bouncing_ball.yaml"))
    assert sim.parts[0].backend.loop == "run_adaptive_one" and b.stats["mode"] == "compiled"
    assert len(a.events) >= 8
    assert_same_events(a, b)
    assert_same_run(a, b)
    # the first impact at sqrt(2 h / g) (h = 1 m, g = 9.81 m/s^2)
    assert abs(b.events[0].t - np.sqrt(2 / 9.81)) < 1e-9


@pytest.mark.parametrize("solver", ["dopri5", "rk23", "dop853"])
def test_held_modes_clamps_and_a_terminal_event_as_interpreted(tmp_path, monkeypatch, solver):
    """The Sign switches at each zero of sin(2 pi t + 0.3), the Relay follows, x is clamped at
    its limits, and the run stops where y = the integral of the sign falls below -0.03: every
    reaction, the terminal one included, inside run_adaptive."""
    no_python_services(monkeypatch)
    path = tmp_path / "switches.yaml"
    path.write_text(SWITCHES)
    a, b, sim = both(blocksim.load(path), solver=solver)
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_events(a, b)
    assert_same_run(a, b)
    assert b.stopped_by == "stop"
    # y = t while the sign is +1, up to its fall at t_f = (pi - 0.3) / (2 pi) = 0.452 s, then
    # y = 2 t_f - t: -0.03 at 2 t_f + 0.03 = 0.934 s, before the next rise at 0.952 s
    fall = (np.pi - 0.3) / (2 * np.pi)
    assert abs(b.t[-1] - (2 * fall + 0.03)) < 1e-8
    assert [e.t for e in b.events if e.block == "sg"] == pytest.approx([fall], abs=1e-10)
    assert [e.block for e in b.events if e.block != "x"][-1] == "stop"


def test_a_batch_whose_members_cross_at_different_times(tmp_path, monkeypatch):
    """Two members with different sine phases: each event is its own member's, located in the
    shared steps as the interpreted run locates it."""
    no_python_services(monkeypatch)
    path = tmp_path / "switches.yaml"
    path.write_text(SWITCHES)
    diagram = blocksim.load(path)
    a = blocksim.simulate(diagram, batch={"s.phase": [0.3, 1.1]}, mode="interpreted")
    b = blocksim.simulate(diagram, batch={"s.phase": [0.3, 1.1]}, mode="compiled")
    assert {e.member for e in b.events} == {0, 1}
    assert_same_events(a, b)
    assert_same_run(a, b)


def test_the_compiled_search_is_the_interpreted_one():
    """find_first_crossing drives the numba search the compiled loop runs: on g = (t - 0.3)^3
    (a triple root, where regula falsi is slow) the bracket ends within xtol of 0.3 s."""
    def g(t):
        return np.array([[(t - 0.3) ** 3]])
    t_event, mask = find_first_crossing(g, 0.0, 1.0, g(0.0), g(1.0), np.zeros(1), 1e-12)
    assert 0.3 <= t_event <= 0.3 + 1e-12 and mask.tolist() == [[True]]


def test_w1_with_exact_coulomb_friction_in_compiled_code_bit_for_bit(monkeypatch):
    """W1 (pid_ff) with the plant's Coulomb friction exact (the sign's crossings located, qd set
    to 0 at each, the joint then sticking or breaking away) under dopri5, in run_adaptive
    alone."""
    no_python_services(monkeypatch)
    diagram = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff",
                            set={"plant.friction_smoothing": 0.0})
    a, b, sim = both(diagram, solver="dopri5", rtol=1e-6, atol=1e-8)
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert len(a.events) == 2 and {e.index for e in a.events} == {0, 1}
    assert_same_events(a, b)
    assert_same_run(a, b)


# a Sign and a DeadZone: blocks whose reactions are their modes alone (no on_event of their own)
SIGN_AND_BAND = """
blocksim: 1
blocks:
  s:    {type: Sine, amplitude: 1.0, frequency: 1.0, phase: 0.3}
  sg:   {type: Sign}
  y:    {type: Integrator}
  band: {type: DeadZone, start: -0.03, end: 0.2}
connections: [s -> sg, sg -> y, y -> band]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [sg.out, y.out, band.out], every: 0.001}
"""


def no_python_services(monkeypatch):
    """Make any return of run_adaptive to Python for an event fail the test."""
    from blocksim.engine import adaptive_loop

    def refuse(sim, status, *args):
        raise AssertionError(f"run_adaptive asked Python for service {status}")
    monkeypatch.setattr(adaptive_loop, "_serve", refuse)


def test_held_modes_switch_in_compiled_code_without_python(tmp_path, monkeypatch):
    """Sign and DeadZone hold modes and react by them alone: every event, its baseline probe and
    the modes of the step ahead run inside run_adaptive, with the interpreted run's events, steps
    and log to the last bit; the sign falls at (pi - 0.3) / (2 pi) s and rises a period later."""
    path = tmp_path / "band.yaml"
    path.write_text(SIGN_AND_BAND)
    no_python_services(monkeypatch)
    a, b, sim = both(blocksim.load(path))
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_events(a, b)
    assert_same_run(a, b)
    fall = (np.pi - 0.3) / (2 * np.pi)
    assert [e.t for e in b.events if e.block == "sg"] == \
        pytest.approx([fall, fall + 0.5, fall + 1.0, fall + 1.5], abs=1e-10)


def test_a_python_on_event_keeps_the_reactions_in_python(tmp_path, monkeypatch):
    """A block whose on_event is a Python method of its own (a user's block) is served by Python
    at each event, called with the located mask, and the numbers stay the interpreted run's."""
    from blocksim.blocks.math import Sign
    from blocksim.engine import adaptive_loop
    seen = []

    def on_event(self, t, xc, xd, u, mask, p=None):
        seen.append(t)
        return False
    monkeypatch.setattr(Sign, "on_event", on_event, raising=False)
    served = []
    serve = adaptive_loop._serve
    monkeypatch.setattr(adaptive_loop, "_serve",
                        lambda sim, status, *args: served.append(status) or
                        serve(sim, status, *args))
    path = tmp_path / "band.yaml"
    path.write_text(SIGN_AND_BAND)
    a, b, _ = both(blocksim.load(path))
    assert adaptive_loop.EVENT in served
    assert len(seen) == 2 * len([e for e in a.events if e.block == "sg"])   # both runs
    assert_same_events(a, b)
    assert_same_run(a, b)


@pytest.mark.parametrize("tick, start", [(Fraction(1, 1000), Fraction(1, 4)),
                                         (Fraction(1, 3000), Fraction(0))])
def test_the_loops_floor_tick_is_the_timebases(tick, start):
    """tick_at_or_before, the tick an event off the grid counts from in compiled code, equals
    Timebase.tick_at_or_before at random times, and (for a decimal tick, whose times are read
    exactly from their shortest text) at every tick's own time and just before and after it. A
    time that is a non-decimal tick's rounded float is left out: the two may differ by that
    tick there, which is never a sample hit (an event there is not at a major time), so the next
    major time is the same."""
    from blocksim.diagram.rates import Timebase
    from blocksim.engine.loops import tick_at_or_before
    tb = Timebase(tick, start, ())
    num0, dnum, den = tb.integer_form
    rng = np.random.default_rng(7)
    times = float(start) + rng.uniform(0.0, 2.0, 2000)
    rest = tick.denominator
    while rest % 2 == 0 or rest % 5 == 0:
        rest //= 2 if rest % 2 == 0 else 5
    decimal = rest == 1
    if decimal:
        grid = [tb.time(n) for n in range(0, 2000, 7)]
        times = np.concatenate([times, grid, np.nextafter(grid, np.inf),
                                np.nextafter(grid[1:], -np.inf)])
    for t in times:
        n = round((t - float(start)) / float(tick))
        if not decimal and t in (tb.time(n - 1), tb.time(n), tb.time(n + 1)):
            continue
        assert tick_at_or_before(float(t), num0, dnum, den) == tb.tick_at_or_before(float(t))


STOP_AT_START = """
blocksim: 1
blocks:
  c:    {type: Constant, value: 1.0}
  x:    {type: Integrator}
  stop: {type: StopSimulation}
connections: [c -> x, c -> stop]
simulation: {stop_time: 1.0, solver: dopri5}
log: {signals: [x.out], every: 0.1}
"""


def test_a_stop_condition_true_at_the_start_stops_in_compiled_code(tmp_path, monkeypatch):
    """A StopSimulation whose input is nonzero at t = 0 stops the run there (its stop_requested
    kernel, checked at the first major step): one log sample at 0, stopped_by the block."""
    path = tmp_path / "stop.yaml"
    path.write_text(STOP_AT_START)
    no_python_services(monkeypatch)
    a, b, _ = both(blocksim.load(path))
    assert b.stopped_by == a.stopped_by == "stop"
    assert b.t.tolist() == a.t.tolist() == [0.0]
    assert_same_run(a, b)


SLIDING = """
blocksim: 1
blocks:
  x:  {type: Integrator, x0: 1.0}
  sg: {type: Sign}
  k:  {type: Gain, gain: -1.0}
connections: [x -> sg, sg -> k, k -> x]
simulation: {stop_time: 2.0, solver: dopri5}
log: {signals: [x.out], every: 0.01}
"""


def test_a_chattering_switch_stops_with_an_error_in_both_modes(tmp_path):
    """x' = -sign(x) from x = 1 reaches 0 at t = 1 s and would then switch forever without time
    advancing (a sliding mode: Zeno behaviour). Both modes stop at the 1000th event in a row with
    the same error naming the Sign's line, instead of hanging."""
    from blocksim.engine.scheduler import MAX_CONSECUTIVE_EVENTS
    path = tmp_path / "sliding.yaml"
    path.write_text(SLIDING)
    diagram = blocksim.load(path)
    messages = []
    for mode in ("interpreted", "compiled"):
        with pytest.raises(blocksim.errors.SolverError) as err:
            blocksim.Simulator(diagram, mode=mode).run()
        messages.append(str(err.value))
        assert err.value.block == "sg" and err.value.where.line == 5     # the Sign's line
    assert messages[0] == messages[1]
    assert f"{MAX_CONSECUTIVE_EVENTS} zero-crossing events in a row" in messages[0]
    t = float(messages[0].split("up to t = ")[1].split(" s")[0])
    assert 1.0 <= t < 1.0 + 1e-8


# a Relay on a Gain of the integral of a sine: the gain is read by the relay alone, whose output
# is only logged, so no solver stage computes it, and the step-end crossing functions need it
# computed at the step's end
RELAY_ON_A_GAIN = """
blocksim: 1
blocks:
  s:  {type: Sine, amplitude: 1.0, frequency: 1.0}
  x:  {type: Integrator}
  k:  {type: Gain, gain: 2.0}
  rl: {type: Relay, switch_on: 0.2, switch_off: 0.1}
connections: [s -> x, x -> k, k -> rl]
simulation: {stop_time: 1.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [rl.out, x.out], every: 0.01}
"""


def test_a_crossing_function_reading_an_output_no_stage_computes(tmp_path, monkeypatch):
    """2 x = (1 - cos 2 pi t) / pi: the relay switches on where it reaches 0.2, at
    t = acos(1 - 0.2 pi) / (2 pi), and off on the way down where it falls to 0.1; the compiled
    loop computes the gain at each step's end before the crossing functions, as the interpreted
    run does (where every output varying between major steps is a stage's, the FSAL stage's
    outputs serve: W1 with exact Coulomb friction above)."""
    no_python_services(monkeypatch)
    path = tmp_path / "relay.yaml"
    path.write_text(RELAY_ON_A_GAIN)
    a, b, sim = both(blocksim.load(path))
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_events(a, b)
    assert_same_run(a, b)
    on = np.arccos(1 - 0.2 * np.pi) / (2 * np.pi)
    off = 1 - np.arccos(1 - 0.1 * np.pi) / (2 * np.pi)
    assert [e.t for e in b.events] == pytest.approx([on, off], abs=1e-8)
