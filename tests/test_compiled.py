"""Compiled mode: the generated step function gives the interpreted run's numbers, reuses its
on-disk cache across parameter values, and falls back (auto) or refuses (compiled) cleanly."""
from pathlib import Path
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.blocks.base import Block, register
from blocksim.engine.simulate import make_simulation
from blocksim.engine.simulate import remembered as fast_restart_of
from blocksim.errors import SolverError

MSD = """
blocksim: 1
parameters: {k: 4.0, c: 0.4}
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: "${-k}"}
  damper: {type: Gain, gain: "${-c}"}
  force:  {type: Sum, signs: "++"}
connections: [v -> x, x -> spring, v -> damper, spring -> force.in1, damper -> force.in2, force -> v]
simulation: {stop_time: 3, solver: rk4, step: 0.001}
log: {signals: [x.out, v.out], every: 0.01}
"""


pytestmark = pytest.mark.usefixtures("compiled_cache")


def run(tmp_path, mode, text=MSD, **sets):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    overrides = {"simulation.mode": mode}
    overrides.update(sets)
    return blocksim.simulate(blocksim.load(path, set=overrides))


@pytest.mark.parametrize("solver", ["rk4", "heun", "euler"])
def test_compiled_fixed_step_equals_interpreted(tmp_path, solver):
    a = run(tmp_path, "interpreted", **{"simulation.solver": solver})
    b = run(tmp_path, "compiled", **{"simulation.solver": solver})
    assert b.stats.get("mode") == "compiled"
    np.testing.assert_array_equal(a.t, b.t)
    for name in ("x.out", "v.out"):
        assert np.max(np.abs(a[name] - b[name])) <= 1e-12


def test_compiled_adaptive_run_uses_compiled_functions_and_agrees(tmp_path):
    a = run(tmp_path, "interpreted", **{"simulation.solver": "dopri5"})
    b = run(tmp_path, "compiled", **{"simulation.solver": "dopri5"})
    np.testing.assert_array_equal(a.t, b.t)
    assert np.max(np.abs(a["x.out"] - b["x.out"])) <= 1e-12


def test_compiled_batch_equals_single_runs(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(MSD))
    d = blocksim.load(path, set={"simulation.mode": "compiled"})
    ks = [1.0, 4.0, 9.0]
    rb = blocksim.simulate(d, batch={"parameters.k": ks})
    for m, k in enumerate(ks):
        single = blocksim.simulate(blocksim.load(path, set={"simulation.mode": "interpreted",
                                                            "parameters.k": k}))
        assert np.max(np.abs(rb["x.out"][m] - single["x.out"])) <= 1e-12


def test_cache_is_keyed_by_structure_not_values(tmp_path):
    import os
    from pathlib import Path
    run(tmp_path, "compiled")
    folder = Path(os.environ["BLOCKSIM_CACHE_DIR"]) / "compiled"
    before = sorted(p.name for p in folder.glob("*.py"))
    run(tmp_path, "compiled", **{"parameters.k": 7.5, "spring.gain": -3.0})
    assert sorted(p.name for p in folder.glob("*.py")) == before


def test_a_new_diagram_of_a_known_structure_reuses_its_module_text(tmp_path, monkeypatch):
    """A newly loaded diagram whose structure this process has compiled (other parameter values)
    takes the module and its bound entry points from the memo, without writing the text again,
    and gives the interpreted run's numbers for its own values; another structure (one more
    block on the log) gets its own text."""
    from blocksim.engine import numba_backend
    first = make_simulation(blocksim.load(_written(tmp_path, MSD),
                                          set={"simulation.mode": "compiled"}).compile())
    first.run()
    written = []
    real = numba_backend.Generator.source
    monkeypatch.setattr(numba_backend.Generator, "source",
                        lambda self: written.append(1) or real(self))
    sets = {"parameters.k": 7.5, "parameters.c": 0.1}
    d = blocksim.load(_written(tmp_path, MSD), set={"simulation.mode": "compiled", **sets})
    again = make_simulation(d.compile())
    assert again.backend.code is first.backend.code and written == []
    x = again.run().signals["x.out"].ravel()
    ref = np.ravel(run(tmp_path, "interpreted", **sets)["x.out"])
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12)
    old = first.run().signals["x.out"].ravel()
    assert np.abs(x - old).max() > 0.1                        # the new values, not the old ones
    other = MSD.replace("log: {signals: [x.out, v.out]", "log: {signals: [x.out, v.out, force.out]")
    make_simulation(blocksim.load(_written(tmp_path, other),
                                  set={"simulation.mode": "compiled"}).compile())
    assert written == [1]


class PythonGain(Block):
    """A user block written in plain Python, with no compiled kernels."""

    type_name = "TestPythonGain"
    summary = "y = 2 u in plain Python (tests only)"

    def output(self, t, xc, xd, u, y):
        y[0][...] = 2.0 * u[0]


register(PythonGain)


def test_auto_falls_back_with_a_reason_and_compiled_refuses(tmp_path, capsys):
    text = MSD.replace("force:  {type: Sum, signs: \"++\"}",
                       "force:  {type: Sum, signs: \"++\"}\n  twice: {type: TestPythonGain}"
                       ).replace("force -> v]", "force -> v, x -> twice]")
    with pytest.raises(SolverError) as info:
        run(tmp_path, "compiled", text)
    assert "twice (TestPythonGain)" in str(info.value)
    r = run(tmp_path, "auto", text, **{"log.signals": ["x.out", "twice.out"]})
    assert "runs interpreted: twice (TestPythonGain)" in capsys.readouterr().err
    np.testing.assert_allclose(r["twice.out"], 2 * r["x.out"], rtol=0, atol=0)


W1 = Path(__file__).resolve().parents[1] / "examples" / "two_link_pid_vs_ff.yaml"


def test_w1_compiled_batch_equals_interpreted_single_runs():
    """W1 pid_ff compiled: only q and qd of the plant are computed at the output calls (qdd and
    the pose are read by nobody), the plant's rates and the feedforward take the planar 2R's
    closed-form kernels, and members that share the reference share the feedforward's evaluation;
    every member still equals its own interpreted run to 1e-12."""
    sets = {"simulation.stop_time": 0.3, "simulation.mode": "compiled"}
    d = blocksim.load(W1, variant="pid_ff", set=sets)
    gains = [[400.0, 200.0], [200.0, 100.0], [800.0, 50.0]]
    batch = blocksim.simulate(d, batch={"pid.Kp": gains})
    assert batch.stats["mode"] == "compiled"
    source = Path(make_simulation(d.compile({"pid.Kp": gains})).backend.module.__file__).read_text()
    for kernel in ("manipulator_partial_output", "manipulator_closed_form_derivative",
                   "inverse_dynamics_closed_form_output"):
        assert kernel in source
    assert "import manipulator_output " not in source and "manipulator_derivative " not in source
    for m, kp in enumerate(gains):
        single = blocksim.simulate(blocksim.load(W1, variant="pid_ff", set={
            **sets, "simulation.mode": "interpreted", "pid.Kp": kp}))
        for name in ("plant.q", "plant.qd", "u.out", "ff.tau"):
            assert np.max(np.abs(batch[name][m] - single[name])) <= 1e-12, name
    assert np.ptp(batch["plant.q"][:, -1, 0]) > 1e-5      # the gains really differ


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_simulator_runs_again_from_the_initial_state(tmp_path, mode):
    """Simulator.run() twice: the same numbers as simulate(), each Result with arrays of its own."""
    path = tmp_path / "d.yaml"
    path.write_text(dedent(MSD))
    d = blocksim.load(path, set={"simulation.mode": mode})
    sim = blocksim.Simulator(d, batch={"parameters.k": [1.0, 4.0]})
    first, second = sim.run(), sim.run()
    fresh = blocksim.simulate(d, batch={"parameters.k": [1.0, 4.0]})
    assert first["x.out"] is not second["x.out"]
    np.testing.assert_array_equal(first["x.out"], second["x.out"])
    np.testing.assert_array_equal(fresh["x.out"], second["x.out"])
    # x = cos(sqrt(k) t) e^(-c t / 2) to first order: the members really differ
    assert abs(first["x.out"][0, -1, 0] - first["x.out"][1, -1, 0]) > 1e-3


NOISY_MSD = """
blocksim: 1
parameters: {k: 4.0, c: 0.4}
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: "${-k}"}
  damper: {type: Gain, gain: "${-c}"}
  push:   {type: WhiteNoise, period: 0.01, variance: 0.5, seed: 3}
  sensor: {type: MeasurementNoise, period: 0.01, variance: 1e-4, seed: 5}
  force:  {type: Sum, signs: "+++"}
connections: [v -> x, x -> sensor, sensor -> spring, v -> damper, spring -> force.in1,
              damper -> force.in2, push -> force.in3, force -> v]
simulation: {stop_time: 0.5, solver: rk4, step: 0.001}
log: {signals: [x.out, sensor.out, push.out]}
"""


def test_batch_split_across_threads_gives_the_unsplit_numbers(tmp_path):
    """A compiled fixed-step batch runs in chunks of CHUNK_MEMBERS members on the stack
    (run_fixed_chunk), on two threads or one, and logs the numbers of the whole batch in one loop
    (run_fixed over all 70 members) bit for bit, the noise of each member included (its stream
    is keyed by the member's index in the whole batch, not in its chunk). The Gains after the
    sensor inherit its discrete rate and compile without an update kernel of their own."""
    from blocksim.engine.numba_backend import CHUNK_MEMBERS
    from blocksim.engine.simulate import make_simulation
    path = tmp_path / "d.yaml"
    path.write_text(dedent(NOISY_MSD))
    d = blocksim.load(path, set={"simulation.mode": "compiled"})
    batch = {"parameters.k": [1.0 + 0.1 * m for m in range(70)]}
    split = blocksim.Simulator(d, batch=batch, threads=2)
    assert CHUNK_MEMBERS == 8
    assert [sim.cd.batch for sim in split.parts] == [8] * 8 + [6]
    assert [sim.cd.first_member for sim in split.parts] == list(range(0, 70, 8))
    assert {sim.backend.loop for sim in split.parts} == {"run_fixed_chunk"}
    two, one = split.run(), blocksim.Simulator(d, batch=batch, threads=1).run()
    assert two.stats["threads"] == 2 and one.stats["threads"] == 1
    whole = make_simulation(split.whole, split.settings, split.log)
    assert whole.backend.loop == "run_fixed"
    unsplit = whole.run().signals
    assert two["x.out"].shape == (70, 501, 1)
    for name in ("x.out", "sensor.out", "push.out"):
        np.testing.assert_array_equal(two[name], one[name])
        np.testing.assert_array_equal(two[name], unsplit[name])
    # member 40's draws are its own: not those of member 0, the same row of another chunk
    assert not np.array_equal(two["push.out"][40], two["push.out"][0])


def test_threads_setting_is_checked_and_adaptive_batches_stay_whole(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(MSD))
    bad = blocksim.load(path, set={"simulation.threads": "two"})
    with pytest.raises(SolverError, match="simulation.threads must be a positive integer"):
        blocksim.Simulator(bad, batch={"parameters.k": [1.0] * 64})
    d = blocksim.load(path, set={"simulation.mode": "compiled", "simulation.solver": "dopri5",
                                 "simulation.threads": 2})
    sim = blocksim.Simulator(d, batch={"parameters.k": [1.0 + m for m in range(64)]})
    assert len(sim.parts) == 1 and sim.cd.batch == 64     # members share the adaptive steps


def test_simulate_again_reuses_the_diagram_compiled_for_the_same_batch(tmp_path):
    """Fast restart: simulate() on the same Diagram and batch runs the remembered Simulator (same
    numbers, new arrays), a new batch compiles anew, a call while the remembered one is running
    builds its own, and the Diagram keeps no log and still pickles."""
    import pickle
    path = tmp_path / "d.yaml"
    path.write_text(dedent(MSD))
    d = blocksim.load(path, set={"simulation.mode": "compiled"})
    first = blocksim.simulate(d, batch={"parameters.k": [1.0, 4.0]})
    remembered = fast_restart_of(d)
    again = blocksim.simulate(d, batch={"parameters.k": [1.0, 4.0]})
    assert fast_restart_of(d) is remembered
    assert again["x.out"] is not first["x.out"]
    np.testing.assert_array_equal(again["x.out"], first["x.out"])
    assert all(not part.recorder.data for part in remembered.parts)
    other = blocksim.simulate(d, batch={"parameters.k": [9.0, 16.0]})
    assert fast_restart_of(d) is not remembered
    # x = cos(sqrt(k) t) e^(-c t / 2) to first order: k = 9 is not k = 1
    assert abs(other["x.out"][0, -1, 0] - first["x.out"][0, -1, 0]) > 1e-3
    busy = fast_restart_of(d)
    with busy.busy:
        alone = blocksim.simulate(d, batch={"parameters.k": [9.0, 16.0]})
    assert fast_restart_of(d) is not busy
    np.testing.assert_array_equal(alone["x.out"], other["x.out"])
    assert fast_restart_of(pickle.loads(pickle.dumps(d))) is None


def test_generated_functions_count_no_references_unless_numba_needs_them(tmp_path):
    """The generated module's functions count no references to the arrays they handle (every
    one of them is the caller's); a module numba refuses without the counts (here a function that
    allocates: its functions are named as those of a generated module) is used with them, and later backends start from that module (its file in the
    cache folder)."""
    from blocksim.engine.numba_backend import NO_REFERENCE_COUNTS, ModuleCode
    d = blocksim.load(_written(tmp_path, MSD), set={"simulation.mode": "compiled"})
    sim = make_simulation(d.compile())
    source = Path(sim.backend.module.__file__).read_text()
    assert source.count("@njit(") == source.count(NO_REFERENCE_COUNTS) >= 7
    assert not sim.backend.code.counts

    allocating = (f"# {tmp_path}\nimport numpy as np\nfrom numba import njit\n\n\n"
                  f"@njit(cache=True, error_model='numpy'{NO_REFERENCE_COUNTS}\n"
                  "def outputs(n):\n    return np.arange(n).sum()\n")
    code = ModuleCode(allocating)
    assert not code.counts
    total = code.entry("outputs", (5,),
                       lambda dispatcher, signature: dispatcher.compile(signature))
    assert total(5) == 10 and code.counts
    assert NO_REFERENCE_COUNTS not in Path(code.module.__file__).read_text()
    assert ModuleCode(allocating).counts


def _written(tmp_path, text):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    return path


def test_argument_types_are_numbas_own_types_of_the_arguments():
    """argument_types (a memo keyed by type_key) gives what numba's dispatcher types each value
    as, for arrays of every layout and writability, tuples and named tuples of them, numbers of
    every width, and values it has no key for; values of one key share one type, and values
    numba types apart get keys apart."""
    from collections import namedtuple

    from numba import njit

    from blocksim.blocks._kernels import argument_types, type_key

    @njit
    def f(*args):
        return 0

    Record = namedtuple("Record", "a b")
    base = np.zeros((3, 4))
    readonly = np.ones(5)
    readonly.flags.writeable = False
    values = [base, base[:, 1:3], base.T, np.asfortranarray(base), readonly, np.ones(5),
              np.zeros(3, np.int32),
              np.zeros(()), (base, 2.0), Record(base, (1, True)), Record(readonly, 1.5), 1.0, True,
              None, 5, 2 ** 40, 2 ** 63, -(2 ** 63), np.float32(1.0), np.int64(3), "text",
              [1.0, 2.0]]
    expected = [f.typeof_pyval(v) for v in values]
    assert list(argument_types(f, tuple(values))) == expected
    assert list(argument_types(f, tuple(values))) == expected            # from the memo now
    keys = [type_key(v) for v in values]
    for i, ki in enumerate(keys):
        for j, kj in enumerate(keys):
            if ki is not None and ki == kj:
                assert expected[i] == expected[j]
    assert type_key(2 ** 64) != type_key(2 ** 63) and type_key(base) != type_key(base.T)


def test_the_compile_estimate_follows_w1s_measured_compiles():
    """auto mode weighs a run against estimated_compile_time (engine/mode.py): W1's module,
    kernels compiled, measured on a 2-core EPYC at 2.5-3.3 s under rk4, 6-7 s under dopri5,
    13.5 s with exact Coulomb friction (its crossings located as events) and 19-21 s under radau
    or bdf."""
    from blocksim.engine.mode import estimated_compile_time

    def estimate(**sets):
        d = blocksim.load(W1, variant="pid_ff", set={"simulation.mode": "compiled", **sets})
        return estimated_compile_time(make_simulation(d.compile()).backend.module_plan)
    assert 2.5 <= estimate() <= 3.5
    assert 5.0 <= estimate(**{"simulation.solver": "dopri5"}) <= 8.0
    assert 10.0 <= estimate(**{"simulation.solver": "dopri5", "plant.friction_smoothing": 0.0}) <= 16.0
    assert 15.0 <= estimate(**{"simulation.solver": "radau"}) <= 25.0
