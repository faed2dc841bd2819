"""One definition of a run: the plan is data, both backends follow the phases of MAJOR_STEP,
and the start-up computes each output once."""
import pickle
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.blocks.base import Block, Param, register
from blocksim.engine import major_step
from blocksim.engine.major_step import MAJOR_STEP, PHASE_NAMES, Phase
from blocksim.engine.numba_backend import Generator, NumbaBackend
from blocksim.engine.plan import EVERY_STEP, make_plan
from blocksim.engine.scheduler import Simulation, run_settings
from blocksim.engine.simulate import logged_signals, make_simulation

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
W1 = EXAMPLES / "two_link_pid_vs_ff.yaml"
W2 = EXAMPLES / "two_link_foc.yaml"


def plan_of(diagram):
    cd = diagram.compile()
    return cd, make_plan(cd, run_settings(diagram.settings, diagram.log_settings, cd),
                         logged_signals(cd, diagram.log_settings))


def _contents(value):
    """Every object inside a plan's fields (containers opened)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _contents(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _contents(k)
            yield from _contents(v)
    elif hasattr(value, "__dataclass_fields__"):
        yield value
        for name in value.__dataclass_fields__:
            yield from _contents(getattr(value, name))
    else:
        yield value


def test_the_plan_is_data_without_blocks_functions_or_the_runs_arrays():
    d = blocksim.load(W2, set={"simulation.stop_time": 0.01})
    cd, plan = plan_of(d)
    found = list(_contents(plan))
    assert not [v for v in found if callable(v) or isinstance(v, Block)]
    arrays = [v for v in found if isinstance(v, np.ndarray)]
    assert len(arrays) == 1 and arrays[0] is plan.log_grid     # the log times, s
    again = pickle.loads(pickle.dumps(plan))
    assert again.output_steps == plan.output_steps and again.slots == plan.slots
    # every block output has one slot, every unwired input one of zeros
    outputs = [(s.block, s.port) for s in plan.slots if not s.unwired]
    assert outputs == [(n, o) for n, b in cd.blocks.items() for o in b.output_names()]
    for name, slots in plan.outputs_of.items():
        assert [(plan.slots[i].port, plan.slots[i].width) for i in slots] == \
            list(cd.out_widths[name].items())


def test_the_plans_facts_of_w2_stage_reads_rates_and_when():
    d = blocksim.load(W2, set={"simulation.stop_time": 0.01})
    cd, plan = plan_of(d)
    steps = {o.block: o for o in plan.output_steps}
    # a derivative reads the plant's and the current loop's varying outputs at every stage
    stage = {o.block for o in plan.stage_steps}
    assert stage and stage <= set(cd.varying)
    for o in plan.output_steps:
        assert o.rate == EVERY_STEP or cd.sample_times[o.block].kind == "discrete"
        assert not o.at_stages or o.varies
        assert not (o.lazy and o.at_stages)
    # the 1 kHz controller's reference is computed at the 1 kHz hits (and when logged) only
    pid_rate = plan.timebase.rate_index(cd.sample_times["pid"])
    assert steps["ff"].lazy and steps["ff"].when_rates == (pid_rate,)
    assert steps["ref"].when_logged and not steps["ff"].when_logged
    # the updates are the blocks that really update, at their rates
    assert all(u.rate == EVERY_STEP or u.rate == plan.timebase.rate_index(cd.sample_times[u.block])
               for u in plan.updates)
    assert {"pid"} <= {u.block for u in plan.updates}


def test_calls_of_time_alone_are_the_reference_and_its_feedforward():
    """W1: the cosine reference and the inverse dynamics of it (no state, inputs of t alone) are
    functions of t alone; the PID (a state), the sum it feeds (reads the PID) and the plant are
    not. The compiled loops leave such a call out at the time of its last evaluation, with the
    same numbers (tests/test_example_w1.py and the compiled tests hold both modes equal)."""
    d = blocksim.load(W1, variant="pid_ff", set={"simulation.stop_time": 0.01})
    cd, plan = plan_of(d)
    assert {o.block for o in plan.output_steps if o.time_only} == {"ref", "ff"}
    module = Generator(plan, cd.blocks, {}).source()
    fixed = module[module.index("def run_fixed("):module.index("def run_fixed_one(")]
    assert fixed.count("if ti != t_memo") == 2 and fixed.count("= np.nan") == 2


def test_both_backends_follow_the_major_step_and_refuse_an_unknown_phase(monkeypatch):
    assert PHASE_NAMES[0] == "outputs" and PHASE_NAMES[-1] == "advance"
    assert [p.name for p in MAJOR_STEP] == list(PHASE_NAMES) and all(p.rule for p in MAJOR_STEP)
    d = blocksim.load(W1, set={"simulation.mode": "compiled", "simulation.solver": "rk4",
                               "simulation.step": 0.001, "simulation.stop_time": 0.01})
    sim = make_simulation(d.compile(), d.settings, d.log_settings)
    assert isinstance(sim.backend, NumbaBackend) and sim.backend.runs_whole_loop
    # the generated loop renders the phases between outputs and advance in MAJOR_STEP's order
    source = Path(sim.backend.module.__file__).read_text()
    loop = source[source.index("def run_fixed("):]
    marks = [loop.index(f"# {name}\n") for name in PHASE_NAMES]
    assert marks == sorted(marks)
    # a phase that one backend does not know stops both from running a step the other would not
    monkeypatch.setattr(major_step, "MAJOR_STEP",
                        MAJOR_STEP[:-1] + (Phase("brand_new", "a rule"), MAJOR_STEP[-1]))
    with pytest.raises(NotImplementedError, match="scheduler has no handler .* brand_new"):
        Simulation(sim.cd, sim.settings, logged_signals(sim.cd, d.log_settings))
    with pytest.raises(NotImplementedError, match="numba backend has no handler .* brand_new"):
        Generator(sim.plan, sim.cd.blocks, sim.records).fixed_loop()


class StartCounter(Block):
    """Test block: a discrete block that counts its output calls at each time."""

    type_name = "TestStartCounter"
    summary = "counts its output calls (tests only)"
    params = {"period": Param(units="s", kind="time", role="period")}
    inputs = ()
    sample = "discrete"
    calls: list = []

    def resolve_widths(self, in_widths):
        return {"out": 1}

    def output(self, t, xc, xd, u, y):
        StartCounter.calls.append(t)
        y[0][...] = t


register(StartCounter)

COUNTED = """
blocksim: 1
blocks:
  counter: {type: TestStartCounter, period: 0.01}
  plant:   {type: Integrator, x0: 0.0}
connections:
  - counter -> plant
simulation: {stop_time: 0.05, solver: SOLVER, step: 0.01, mode: interpreted}
"""


@pytest.mark.parametrize("solver", ["rk4", "dopri5"])
def test_each_hit_computes_a_discrete_output_once_the_start_included(tmp_path, solver):
    path = tmp_path / "counted.yaml"
    path.write_text(COUNTED.replace("SOLVER", solver))
    StartCounter.calls = []
    r = blocksim.simulate(blocksim.load(path))
    # one call per hit at 0, 0.01, ..., 0.05: the start-up no longer computes the outputs twice
    assert StartCounter.calls == [float(k) / 100 for k in range(6)]
    # the integrator integrates the held staircase: x(0.05) = 0.01 * (0 + 0.01 + ... + 0.04)
    assert r["plant.out"][-1, 0] == pytest.approx(0.01 * sum(k / 100 for k in range(5)),
                                                     abs=1e-15)


def test_a_solver_stage_computes_only_what_a_derivative_reads():
    """The Python backend evaluates at a stage what the numba one does: the blocks a derivative
    reads; the log and the crossings between major steps see every varying block."""
    d = blocksim.load(W2, set={"simulation.stop_time": 0.01, "simulation.mode": "interpreted"})
    sim = make_simulation(d.compile(), d.settings, d.log_settings)
    backend = sim.backend
    assert len(backend.stage) == len(sim.plan.stage_steps) < len(backend.minor)
    assert len(backend.major) == len(sim.plan.output_steps) + sum(o.modes for o in sim.plan.output_steps)


SIGNED = """
blocksim: 1
blocks:
  wave: {type: Sine, frequency: 1.0}
  s:    {type: Sign}
  x:    {type: Integrator}
connections: [wave -> s, s -> x]
simulation: {stop_time: 1.0}
"""


def test_check_shows_the_plans_facts(tmp_path):
    """`blocksim check` says, per call, what the plan knows: read at solver stages, modes held,
    calls that nobody needs (W2's motor powers, not logged)."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]

    def check(path):
        proc = subprocess.run([sys.executable, str(root / "cli.py"), "check", str(path)],
                              capture_output=True, text=True, timeout=300, cwd=root)
        assert proc.returncode == 0, proc.stderr
        return {line.split()[1]: line for line in proc.stdout.splitlines()
                if line.strip()[:1].isdigit()}, proc.stdout

    path = tmp_path / "signed.yaml"
    path.write_text(SIGNED)
    lines, _ = check(path)
    assert "read at solver stages" in lines["s"] and "holds 1 mode through the stages" in lines["s"]
    assert "read at solver stages" not in lines["x"]
    _, text = check(W2)
    skipped = [line for line in text.splitlines() if "not computed" in line]
    assert skipped and all("act/motor" in line or "plant" in line for line in skipped)
