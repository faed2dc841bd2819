"""Per-member step control (simulation.step_control: per_member): an adaptive batch whose members
each take their own steps, as independent runs. Each member equals its own single run bit for bit,
in both modes; interpreted and compiled batches agree step for step; a member that stops early
holds NaN after its stop while the others run on."""
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import BlocksimError

pytestmark = pytest.mark.usefixtures("compiled_cache")

W1 = Path(__file__).resolve().parents[1] / "examples" / "two_link_pid_vs_ff.yaml"
KP = [[400.0 * (1 + 0.001 * m), 200.0] for m in range(3)]      # Kp spread by 0.1 % per member
TOL = dict(solver="dopri5", rtol=1e-6, atol=1e-8)


def per_member(diagram, mode, batch, **settings):
    return blocksim.Simulator(diagram, batch=batch, mode=mode, step_control="per_member",
                              **settings).run()


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_each_member_is_its_own_run_bit_for_bit(mode):
    diagram = blocksim.load(W1, variant="pid_ff")
    batch = per_member(diagram, mode, {"pid.Kp": KP}, **TOL)
    assert_members_are_their_own_runs(batch, diagram, KP, mode)
    assert batch.stats["step_control"] == "per_member"


def assert_members_are_their_own_runs(batch, diagram, gains, mode):
    """Each member of W1's batch equals its own single run bit for bit, and the counters are
    the sums of theirs; the members took different steps (a shared step would have given all
    the same count)."""
    singles = [blocksim.simulate(diagram, batch={"pid.Kp": [kp]}, mode=mode, **TOL)
               for kp in gains]
    for m, single in enumerate(singles):
        np.testing.assert_array_equal(batch.t, single.t)
        for name in single.names:
            np.testing.assert_array_equal(batch[name][m], single[name][0], err_msg=f"{name} {m}")
    for key in ("nfev", "nsteps", "nrejected", "major_steps"):
        assert batch.stats[key] == sum(s.stats[key] for s in singles), key
    assert len({s.stats["nfev"] for s in singles}) > 1


def test_interpreted_and_compiled_batches_agree_step_for_step():
    diagram = blocksim.load(W1, variant="pid_ff")
    a = per_member(diagram, "interpreted", {"pid.Kp": KP}, **TOL)
    b = per_member(diagram, "compiled", {"pid.Kp": KP}, **TOL)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    same = ("nfev", "nsteps", "nrejected", "major_steps", "events")
    assert {k: b.stats[k] for k in same} == {k: a.stats[k] for k in same}


def test_shared_steps_differ_from_a_members_own_run_within_the_tolerance():
    diagram = blocksim.load(W1, variant="pid_ff")
    shared = blocksim.simulate(diagram, batch={"pid.Kp": KP}, **TOL)
    own = per_member(diagram, "interpreted", {"pid.Kp": KP}, **TOL)
    gap = np.max(np.abs(shared["plant.q"] - own["plant.q"]))
    assert 0 < gap < 1e-5, gap


# x' = k from 0; a relay at x = 1 stops the run: member k stops at t = 1 / k
RACE = """
blocksim: 1
blocks:
  k:     {type: Constant, value: 1.0}
  x:     {type: Integrator, x0: 0.0}
  relay: {type: Relay, switch_on: 1.0, switch_off: 0.5, on_value: 1.0, off_value: 0.0}
  stop:  {type: StopSimulation}
connections: [k -> x, x -> relay, relay -> stop]
simulation: {stop_time: 2.0, solver: dopri5}
log: {signals: [x.out], every: 0.125}
"""


def test_a_member_that_stops_early_holds_nan_after_its_stop_and_the_others_run_on():
    r = per_member(blocksim.load(RACE), "interpreted", {"k.value": [1.0, 2.0, 4.0]})
    slowest = blocksim.simulate(blocksim.load(RACE), batch={"k.value": [1.0]})
    assert r.stopped_by == "stop"
    ends = {m: max(e.t for e in r.events if e.member == m) for m in range(3)}
    assert ends == pytest.approx({0: 1.0, 1: 0.5, 2: 0.25}, abs=1e-9)
    # the times of the member that went furthest: the grid to 1 s, then its event's instant
    np.testing.assert_array_equal(r.t, slowest.t)
    assert len(r.t) == 10 and 0 < r.t[-1] - 1.0 < 1e-9
    x = r["x.out"][:, :, 0]
    for m, k in enumerate([1.0, 2.0, 4.0]):
        reached = r.t <= 1 / k + 1e-9
        np.testing.assert_allclose(x[m, reached], k * r.t[reached], atol=1e-12)
        assert np.isnan(x[m, ~reached]).all()


def test_a_misspelt_step_control_is_a_located_error_with_a_suggestion():
    text = RACE.replace("solver: dopri5}", "solver: dopri5, step_control: per-member}")
    with pytest.raises(BlocksimError) as info:
        blocksim.simulate(blocksim.load(text))
    assert "simulation.step_control must be one of shared, per_member, got 'per-member'" \
        in str(info.value)
    assert "did you mean 'per_member'" in str(info.value) and ":9:" in str(info.value)


def test_a_fixed_step_batch_is_the_same_under_either_step_control():
    diagram = blocksim.load(W1, variant="pid_ff")
    a = blocksim.simulate(diagram, batch={"pid.Kp": KP}, solver="rk4")
    b = per_member(diagram, "interpreted", {"pid.Kp": KP}, solver="rk4")
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert "step_control" not in b.stats


def test_each_run_of_a_per_member_batch_logs_into_arrays_of_its_own():
    """The members log into their rows of the batch's arrays: a second run writes new arrays, so
    the first run's Result keeps its numbers after the second."""
    diagram = blocksim.load(W1, variant="pid_ff")
    sim = blocksim.Simulator(diagram, batch={"pid.Kp": KP}, mode="compiled",
                             step_control="per_member", **TOL)
    first = sim.run()
    q = first["plant.q"]
    assert q.shape[0] == len(KP) and q.flags.c_contiguous and np.isfinite(q).all()
    q_copy = q.copy()
    second = sim.run()
    assert not np.shares_memory(first["plant.q"], second["plant.q"])
    np.testing.assert_array_equal(first["plant.q"], q_copy)
    np.testing.assert_array_equal(second["plant.q"], q_copy)


def test_a_member_that_fails_on_a_thread_raises_its_error_as_interpreted_mode_does():
    """Members on two threads, one of six with an infinite rate: its solver error (the member
    named) is raised once the others have stopped, word for word as the interpreted batch's."""
    batch = {"k.value": [1.0, 2.0, np.inf, 3.0, 4.0, 5.0]}
    errors = []
    for mode in ("interpreted", "compiled"):
        with pytest.raises(BlocksimError) as info:
            per_member(blocksim.load(RACE), mode, batch, threads=2)
        errors.append(str(info.value))
    assert "batch member 2" in errors[0] and "derivative of continuous state x[0]" in errors[0]
    assert errors[1] == errors[0]


# ---- members run one after another in one compiled loop (engine/adaptive_members.py) ---------

KP9 = [[400.0 * (1 + 0.001 * m), 200.0] for m in range(9)]


def test_members_run_in_one_compiled_loop_each_its_own_run_bit_for_bit():
    """Nine members in parts of two or three, each part's members one after another in one
    compiled call on two threads: every member's log and counts are those of its run alone."""
    diagram = blocksim.load(W1, variant="pid_ff")
    sim = blocksim.Simulator(diagram, batch={"pid.Kp": KP9}, mode="compiled",
                             step_control="per_member", threads=2, **TOL)
    assert len(sim.parts) < len(KP9) and all(p.members_loop is not None for p in sim.parts)
    batch = sim.run()
    assert_members_are_their_own_runs(batch, diagram, KP9, "compiled")
    # the reference and the feedforward, the same for all members, were logged from a table
    # the parts' first members filled (engine/log_table.py)
    assert all(log_table_rows(part) == len(batch.t) for part in sim.parts)
    again = sim.run()             # a second run: scratch and states from their start again
    for name in batch.names:
        np.testing.assert_array_equal(again[name], batch[name], err_msg=name)


STEPS = """
blocksim: 1
blocks:
  step: {type: Step, time: 0.5, initial: 0.0, final: 1.0}
  lag:  {type: TransferFunction, num: [1.0], den: [0.05, 1.0]}
connections: [step -> lag]
simulation: {stop_time: 1.5, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [lag.out], every: 0.01}
"""


def test_each_member_of_a_compiled_loop_stops_its_solver_at_its_own_breakpoints():
    """A step at a time of each member's own: member m restarts its solver at its step time
    alone (a restart at another member's would change its steps), and follows the first-order
    lag's analytic response 1 - exp(-(t - T) / tau) after it."""
    times = [0.3, 0.5, 0.7, 0.9, 1.1]
    diagram = blocksim.load(STEPS)
    sim = blocksim.Simulator(diagram, batch={"step.time": times}, mode="compiled",
                             step_control="per_member", threads=2)
    assert all(p.members_loop is not None for p in sim.parts)
    batch = sim.run()
    for m, T in enumerate(times):
        single = blocksim.simulate(diagram, batch={"step.time": [T]}, mode="compiled")
        np.testing.assert_array_equal(batch["lag.out"][m], single["lag.out"][0])
        y = batch["lag.out"][m, :, 0]
        expected = np.where(batch.t < T, 0.0, 1.0 - np.exp(-(batch.t - T) / 0.05))
        np.testing.assert_allclose(y, expected, atol=1e-6)
    singles = [blocksim.simulate(diagram, batch={"step.time": [T]}, mode="compiled").stats
               for T in times]
    assert batch.stats["nsteps"] == sum(s["nsteps"] for s in singles)


def test_members_that_stop_early_in_a_compiled_loop_are_as_in_interpreted_mode():
    """Six members of RACE, each stopped by its relay at t = 1 / k: the compiled loop hands each
    such member to a run of its own; log, NaN after each stop and events as interpreted."""
    batch = {"k.value": [1.0, 2.0, 4.0, 1.5, 3.0, 5.0]}
    a = per_member(blocksim.load(RACE), "interpreted", batch)
    b = per_member(blocksim.load(RACE), "compiled", batch, threads=2)
    np.testing.assert_array_equal(a.t, b.t)
    np.testing.assert_array_equal(a["x.out"], b["x.out"])
    assert [(e.t, e.block, e.member) for e in a.events] == \
        [(e.t, e.block, e.member) for e in b.events]
    assert b.stopped_by == "stop"


Rec = namedtuple("Rec", "gains model work order")
Noise = namedtuple("Noise", "seed first")


def test_a_records_member_view_is_found_by_comparing_it_with_its_members_alone():
    """Rows per member, shared arrays, scratch sized by the members, numbers and the index of
    the first row (a noise block's, keying its streams): each member's view is its record
    alone; a number that differs between the members alone otherwise has no member view."""
    from blocksim.engine.member_records import member_view, record_layout
    gains = np.arange(12.0).reshape(3, 2, 2)
    model = np.array([1.0, 2.0])

    def alone(m):
        return Rec(gains[m:m + 1].copy(), model.copy(), np.zeros(5), 2)
    part = Rec(gains, model, np.zeros(9), 2)
    layout = record_layout(part, alone(0), alone(1), 3)
    assert layout is not None
    for m in range(3):
        view = member_view(part, layout, m)
        assert type(view) is Rec and view.order == 2 and view.work.shape == (5,)
        np.testing.assert_array_equal(view.gains, gains[m:m + 1])
        assert view.model is model and np.shares_memory(view.work, part.work)
    noise = record_layout(Noise(7, 10), Noise(7, 10), Noise(7, 11), 3)
    assert [member_view(Noise(7, 10), noise, m) for m in range(3)] == \
        [Noise(7, 10), Noise(7, 11), Noise(7, 12)]
    assert record_layout(Noise(7, 10), Noise(7, 10), Noise(7, 12), 3) is None
    assert record_layout(Noise(7, 10), Noise(8, 10), Noise(8, 11), 3) is None
    # rows that are not those of the members alone, or an array that changes shape otherwise
    assert record_layout((gains,), (gains[1:2].copy(),), (gains[1:2].copy(),), 3) is None
    assert record_layout((np.zeros((3, 4)),), (np.zeros((2, 4)),), (np.zeros((2, 4)),), 3) \
        is None


def test_events_of_members_in_a_compiled_loop_are_listed_with_their_member():
    """RACE without its stop: each member's relay switches on at x = 1 (t = 1 / k) inside the
    compiled loop, which lists the events with their member; the log and the events are those
    of the interpreted batch, and the times those of the analytic crossing."""
    text = RACE.replace("  stop:  {type: StopSimulation}\n", "").replace(
        "connections: [k -> x, x -> relay, relay -> stop]", "connections: [k -> x, x -> relay]")
    ks = [1.0, 2.0, 4.0, 1.5, 3.0, 5.0]
    a = per_member(blocksim.load(text), "interpreted", {"k.value": ks})
    b = per_member(blocksim.load(text), "compiled", {"k.value": ks}, threads=2)
    np.testing.assert_array_equal(a["x.out"], b["x.out"])
    assert [(e.t, e.block, e.index, e.member) for e in a.events] == \
        [(e.t, e.block, e.index, e.member) for e in b.events]
    assert sorted(e.member for e in b.events) == list(range(len(ks)))
    for e in b.events:
        assert e.t == pytest.approx(1 / ks[e.member], abs=1e-9)


def test_ctrl_c_after_a_part_of_a_compiled_member_loop_keeps_its_members(monkeypatch):
    """Ctrl-C once the first part (three members, one thread) is done: the Simulator raises
    KeyboardInterrupt with the partial result, whose first three members are their runs alone
    and the others NaN."""
    from blocksim.engine import members

    class CtrlC(members.Progress):
        def update(self, done, force=False):
            if done >= 3:
                raise KeyboardInterrupt
    monkeypatch.setattr(members, "Progress", CtrlC)
    diagram = blocksim.load(W1, variant="pid_ff")
    sim = blocksim.Simulator(diagram, batch={"pid.Kp": KP9}, mode="compiled",
                             step_control="per_member", threads=1, **TOL)
    assert [p.cd.batch for p in sim.parts] == [3, 3, 3]
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    r = sim.last_result
    assert r.interrupted
    for m in range(3):
        single = blocksim.simulate(diagram, batch={"pid.Kp": [KP9[m]]}, mode="compiled", **TOL)
        np.testing.assert_array_equal(r["plant.q"][m], single["plant.q"][0])
    assert np.isnan(r["plant.q"][3:]).all()


def test_noise_streams_in_a_compiled_member_loop_are_keyed_by_the_members_index():
    """W1's study diagram with measurement noise, six members numbered from 3: the member loop
    runs them (the noise record's first-row index is member m's + m), and member m draws the
    noise of member 3 + m: its run alone numbered so, bit for bit."""
    diagram = blocksim.load(W1.parent / "sweeps" / "w1_study.yaml")
    errors = [-0.2, -0.1, 0.0, 0.05, 0.1, 0.2]
    sim = blocksim.Simulator(diagram, batch={"ff.param_error": errors}, first_member=3,
                             mode="compiled", step_control="per_member", threads=2, **TOL)
    assert all(p.members_loop is not None for p in sim.parts)
    batch = sim.run()
    for m in (0, 1, 5):
        single = blocksim.Simulator(diagram, batch={"ff.param_error": [errors[m]]},
                                    first_member=3 + m, mode="compiled", **TOL).run()
        for name in single.names:
            np.testing.assert_array_equal(batch[name][m], single[name][0], err_msg=f"{name} {m}")
    # the members' noise differs: member 0's drawn alone as member 0 is another stream
    other = blocksim.Simulator(diagram, batch={"ff.param_error": [errors[0]]}, mode="compiled",
                               **TOL).run()
    assert not np.array_equal(other["plant.q"][0], batch["plant.q"][0])


def log_table_rows(part) -> int:
    """The rows of the table of outputs of t alone a run of `part` shares between its members
    (0: each member computes its own)."""
    loop = part.members_loop[0]
    return loop.log_table(part.backend, part).shape[0]


def test_members_whose_reference_differs_compute_it_each_at_their_log_samples():
    """W1 with the reference's amplitude spread per member: a table of the reference shared
    between members would log member 0's for all. Each member is its run alone, bit for bit,
    and logs its own reference A_m (1 - cos(pi t)) exactly."""
    diagram = blocksim.load(W1, variant="pid_ff")
    amplitudes = [[0.5 * (1 + 0.01 * m), 0.3] for m in range(6)]
    sim = blocksim.Simulator(diagram, batch={"ref.amplitude": amplitudes}, mode="compiled",
                             step_control="per_member", threads=2, **TOL)
    assert all(p.members_loop is not None and log_table_rows(p) == 0 for p in sim.parts)
    batch = sim.run()
    for m, amplitude in enumerate(amplitudes):
        single = blocksim.simulate(diagram, batch={"ref.amplitude": [amplitude]},
                                   mode="compiled", **TOL)
        for name in single.names:
            np.testing.assert_array_equal(batch[name][m], single[name][0], err_msg=f"{name} {m}")
        expected = np.outer(1 - np.cos(np.pi * batch.t), amplitude)
        np.testing.assert_allclose(batch["ref.q"][m], expected, rtol=1e-14, atol=1e-15)


OFFSET = """
blocksim: 1
blocks:
  wave:   {type: Sine, amplitude: 1.0, frequency: 0.5}
  offset: {type: Constant, value: 0.0}
  total:  {type: Sum, signs: "++"}
  lag:    {type: TransferFunction, num: [1.0], den: [0.05, 1.0]}
connections: [wave -> total.in1, offset -> total.in2, total -> lag]
simulation: {stop_time: 1.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [total.out, lag.out], every: 0.01}
"""


def test_an_output_of_t_alone_reading_a_constant_of_each_member_is_computed_by_each():
    """sin(pi t) + c_m, a sum of t alone reading a constant spread per member: its record is
    the same for all members, the constant it reads is not, so no member reads another's sum;
    each logs its own sin(pi t) + c_m. With c the same for all, the sum is tabled and gives
    the same numbers."""
    offsets = [0.0, 1.0, 2.5, -4.0]
    diagram = blocksim.load(OFFSET)
    sims = [blocksim.Simulator(diagram, batch={"offset.value": values}, mode="compiled",
                               step_control="per_member", threads=1)
            for values in (offsets, [1.0] * 4)]
    spread, same = (sim.run() for sim in sims)
    assert [log_table_rows(sim.parts[0]) for sim in sims] == [0, 101]      # after their start
    for m, c in enumerate(offsets):
        np.testing.assert_allclose(spread["total.out"][m, :, 0],
                                   np.sin(np.pi * spread.t) + c, rtol=0, atol=1e-15)
        single = blocksim.simulate(diagram, batch={"offset.value": [c]}, mode="compiled")
        np.testing.assert_array_equal(spread["lag.out"][m], single["lag.out"][0])
    np.testing.assert_array_equal(same["total.out"], spread["total.out"][[1, 1, 1, 1]])
    np.testing.assert_array_equal(same["lag.out"], spread["lag.out"][[1, 1, 1, 1]])
