"""Fixed-step runs with zero crossings in compiled code: under euler ... rk4 a diagram with events
runs in the generated module's run_adaptive with fixed steps (one step from each major time to
the next, never rejected, f(t, x) evaluated anew at each major step, a crossing reported at the
step's end and not located, as Simulink's fixed-step solvers do), and takes the interpreted
run's events, log and counters to the last bit: resets, held modes, a clamp, a terminal event,
a batch whose members cross at different steps, a state that becomes non-finite."""
import math
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError
from test_compiled_adaptive import assert_same_run
from test_compiled_events import SWITCHES, assert_same_events, both
from test_divergence import BLOWUP

pytestmark = pytest.mark.usefixtures("compiled_cache")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
STEP = 1e-3


def test_the_bouncing_ball_under_rk4_bounces_in_compiled_code_bit_for_bit():
    """Each impact is reported at the end of the step in which x reached 0: the first at the
    grid point at or after sqrt(2 h / g) = 0.45152 s (h = 1 m, g = 9.81 m/s^2)."""
    a, b, sim = both(blocksim.load(EXAMPLES / "bouncing_ball.yaml"), solver="rk4", step=STEP)
    assert sim.parts[0].backend.loop == "run_adaptive_one" and b.stats["mode"] == "compiled"
    assert len(a.events) >= 8
    assert_same_events(a, b)
    assert_same_run(a, b)
    first = b.events[0].t
    assert 0.0 <= first - math.sqrt(2 / 9.81) < STEP
    assert abs(first / STEP - round(first / STEP)) < 1e-9          # on the grid
    # four evaluations per step, one step per major time (3 s at 1 ms)
    assert b.stats["nsteps"] == 3000 and b.stats["nfev"] == 4 * 3000
    assert b.stats["nrejected"] == 0


@pytest.mark.parametrize("solver", ["rk4", "euler", "heun"])
def test_held_modes_a_clamp_and_a_terminal_event_under_a_fixed_step(tmp_path, solver):
    """The Sign's fall at t_f = (pi - 0.3) / (2 pi) is reported at the next grid point; the run
    stops at the step where y = the integral of the sign falls below -0.03 (near 2 t_f + 0.03)."""
    path = tmp_path / "switches.yaml"
    path.write_text(SWITCHES)
    a, b, sim = both(blocksim.load(path), solver=solver, step=STEP)
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_events(a, b)
    assert_same_run(a, b)
    assert b.stopped_by == "stop"
    fall = (np.pi - 0.3) / (2 * np.pi)
    sign_events = [e.t for e in b.events if e.block == "sg"]
    assert len(sign_events) == 1 and 0.0 <= sign_events[0] - fall < STEP + 1e-12
    assert abs(b.t[-1] - (2 * fall + 0.03)) < 3 * STEP


@pytest.mark.parametrize("settings", [{"stop_time": 2.5005}, {"max_step": 1e-4}],
                         ids=["stop off the step grid", "max_step given"])
def test_a_stop_off_the_grid_and_a_max_step_as_interpreted(settings):
    """The last step shortened onto a stop time off the 1 ms grid; a max_step, which a
    fixed-step solver does not read: the interpreted run's steps, events and log."""
    a, b, sim = both(blocksim.load(EXAMPLES / "bouncing_ball.yaml"), solver="rk4", step=STEP,
                     **settings)
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert_same_events(a, b)
    assert_same_run(a, b)
    assert b.t[-1] == settings.get("stop_time", 3.0)
    assert b.stats["nfev"] == 4 * b.stats["nsteps"]


def test_a_batch_whose_members_cross_at_different_steps(tmp_path):
    path = tmp_path / "switches.yaml"
    path.write_text(SWITCHES)
    diagram = blocksim.load(path)
    runs = [blocksim.simulate(diagram, batch={"s.phase": [0.3, 1.1]}, mode=mode, solver="rk4",
                              step=STEP) for mode in ("interpreted", "compiled")]
    assert {e.member for e in runs[1].events} == {0, 1}
    assert_same_events(*runs)
    assert_same_run(*runs)


def test_w1_with_exact_coulomb_friction_under_rk4_in_compiled_code_bit_for_bit():
    """W1 (pid_ff) at 1 ms with the plant's Coulomb friction exact: the velocity sign's crossings
    fire at step ends, as in the interpreted run."""
    diagram = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff",
                            set={"plant.friction_smoothing": 0.0})
    a, b, sim = both(diagram, solver="rk4", step=STEP)
    assert sim.parts[0].backend.loop == "run_adaptive_one"
    assert len(a.events) >= 2 and {e.index for e in a.events} == {0, 1}
    assert_same_events(a, b)
    assert_same_run(a, b)


def test_a_fixed_step_that_runs_away_fails_with_the_interpreted_message(tmp_path):
    """x' = x^2 from 1 leaves every number near t = 1 s; a Sign on x gives the run a crossing,
    so the compiled run is run_adaptive's fixed steps: the same error, naming the block."""
    path = tmp_path / "blowup.yaml"
    text = BLOWUP.replace("SOLVER", "rk4").replace(
        "connections: [x -> sq, sq -> x]",
        "  sg: {type: Sign}\nconnections: [x -> sq, sq -> x, x -> sg]")
    path.write_text(text)
    messages = []
    for mode in ("interpreted", "compiled"):
        with pytest.raises(BlocksimError) as caught:
            blocksim.simulate(blocksim.load(path), mode=mode, step=STEP)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "x[0]" in messages[1] and "blowup.yaml:5" in messages[1]
