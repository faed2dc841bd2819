"""Variants that switch blocks on and off share one compiled module (Diagram.switchable,
RunPlan.compiled_as) once a process runs two of them or is told it will (Diagram.expect_variants,
as the CLI does for a study): the module is written for every block some variant enables, each
switched block's calls made only when the run's flag enables it, so a study file compiles once.
A variant run alone gets a module of its own, which runs faster. Every variant still takes its
own run's steps to the last bit: the same numbers as its interpreted run, and as a module written
for it alone."""
from pathlib import Path

import numpy as np
import pytest

import blocksim
import blocksim.diagram.diagram as diagram_module
from test_compiled_adaptive import assert_same_run

pytestmark = pytest.mark.usefixtures("compiled_cache")


@pytest.fixture(autouse=True)
def new_process(monkeypatch):
    """No variant run yet in this process: each test starts as a new process would."""
    monkeypatch.setattr(diagram_module, "_VARIANTS_RUN", {})

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# a mass-spring-damper (k = 4 N/m, c = 0.4 N s/m, m = 1 kg, x0 = 1 m) under position feedback of
# 1 N/m, either continuous or sampled by a 20 Hz hold; the third variant has both
SWITCHED = """
blocksim: 1
blocks:
  x:       {type: Integrator, x0: 1.0}
  v:       {type: Integrator, x0: 0.0}
  spring:  {type: Gain, gain: -4.0}
  damper:  {type: Gain, gain: -0.4}
  cont:    {type: Gain, gain: -1.0}
  hold:    {type: ZeroOrderHold, period: 0.05}
  sampled: {type: Gain, gain: -1.0}
  force:   {type: Sum, signs: "++++"}
connections: [x -> spring, v -> damper, x -> cont, x -> hold, hold -> sampled,
              spring -> force.in1, damper -> force.in2, cont -> force.in3,
              sampled -> force.in4, force -> v, v -> x]
simulation: {stop_time: 2.0, solver: dopri5, rtol: 1.0e-8, atol: 1.0e-10}
log: {signals: [x.out, v.out, force.out], every: 0.01}
variants:
  continuous: {hold.enabled: false, sampled.enabled: false}
  sampled: {cont.enabled: false}
  both: {}
"""


def module_of(sim):
    return sim.parts[0].backend.module.__name__


def own_module_run(text, variant, **settings):
    """The compiled run of a variant with a module written for its own plan alone (no block
    switched): what a run was before variants shared modules. (Simulator, Result)"""
    d = blocksim.load(text, variant=variant)
    d.switchable = frozenset()
    sim = blocksim.Simulator(d, mode="compiled", **settings)
    return sim, sim.run()


def test_the_diagram_names_the_blocks_its_variants_switch():
    w1 = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff")
    assert w1.switchable == {"pid", "ff", "ct", "gc"}
    assert blocksim.load(SWITCHED).switchable == {"cont", "hold", "sampled"}
    # fewer than two variants: nothing to share
    single = SWITCHED.split("variants:")[0] + "variants:\n  continuous: {cont.enabled: false}\n"
    assert blocksim.load(single).switchable == frozenset()
    # an expression may differ wherever its parameters do
    flagged = SWITCHED.replace("cont:    {type: Gain, gain: -1.0}",
                               "cont:    {type: Gain, gain: -1.0, enabled: $use_cont}")
    flagged = flagged.replace("blocks:", "parameters: {use_cont: true}\nblocks:", 1)
    assert blocksim.load(flagged).switchable == {"cont", "hold", "sampled"}


def test_every_variant_of_the_w1_file_runs_one_module_with_its_own_numbers():
    base = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml")
    base.expect_variants(base.variants)
    modules = set()
    for variant in base.variants:
        d = base.with_variant(variant)
        compiled = blocksim.Simulator(d, mode="compiled")
        b = compiled.run()
        a = blocksim.Simulator(d, mode="interpreted").run()
        assert b.stats["mode"] == "compiled" and compiled.parts[0].backend.loop == "run_fixed_one"
        assert compiled.parts[0].plan.compiled_as is not None
        modules.add(module_of(compiled))
        np.testing.assert_array_equal(a.t, b.t)
        for name in a.names:
            np.testing.assert_array_equal(a[name], b[name], err_msg=f"{variant}: {name}")
    assert len(modules) == 1
    # the computed-torque variant, PID and feedforward switched off in the shared module: they
    # output zeros, and the controller alone tracks within 10 mrad (the plant's friction is
    # unknown to it)
    ct = blocksim.simulate(base.with_variant("computed_torque"), mode="compiled")
    np.testing.assert_array_equal(ct["pid.out"], 0.0)
    np.testing.assert_array_equal(ct["ff.tau"], 0.0)
    assert np.max(np.abs(ct["ref.q"] - ct["plant.q"])) < 0.01


@pytest.mark.parametrize("variant", ["continuous", "sampled", "both"])
def test_a_switched_off_hold_keeps_the_quiet_hits_and_the_steps(variant):
    d = blocksim.load(SWITCHED, variant=variant)
    d.expect_variants(d.variants)
    compiled = blocksim.Simulator(d, mode="compiled")
    b = compiled.run()
    a = blocksim.Simulator(d, mode="interpreted").run()
    assert compiled.parts[0].backend.loop == "run_adaptive_one"
    assert compiled.parts[0].plan.compiled_as is not None
    assert_same_run(a, b)
    own, alone = own_module_run(SWITCHED, variant)
    assert own.parts[0].plan.compiled_as is None and module_of(own) != module_of(compiled)
    assert_same_run(alone, b)
    modules = {module_of(blocksim.Simulator(blocksim.load(SWITCHED, variant=v), mode="compiled"))
               for v in ("continuous", "sampled", "both")}
    assert len(modules) == 1


def test_a_variant_that_switches_off_a_block_with_crossings_compiles_its_own_module():
    # the clamp's crossings are events of the runs that enable it: a run without it has none,
    # so it runs a module (and a loop) of its own
    text = SWITCHED.replace("x:       {type: Integrator, x0: 1.0}",
                            "x:       {type: Integrator, x0: 1.0}\n"
                            "  clamp:   {type: Integrator, x0: 0.0, lower: -0.1, upper: 0.1}")
    text = text.replace("v -> x]", "v -> x, x -> clamp]")
    text = text.replace("  both: {}", "  both: {}\n  unclamped: {clamp.enabled: false}")
    plans = {}
    blocksim.load(text).expect_variants(["both", "unclamped"])
    for variant in ("both", "unclamped"):
        d = blocksim.load(text, variant=variant)
        compiled = blocksim.Simulator(d, mode="compiled")
        b = compiled.run()
        a = blocksim.Simulator(d, mode="interpreted").run()
        assert_same_run(a, b)
        plans[variant] = compiled.parts[0].plan
    assert plans["both"].compiled_as is not None
    assert plans["unclamped"].compiled_as is None


@pytest.mark.parametrize("variant", ["computed_torque", "pid_ff"])
def test_a_switched_off_block_with_states_keeps_them_under_dopri5(variant):
    # computed_torque switches the PID off: its two integrator states stay at zero and count in
    # the error norm as in the interpreted run, so the steps are the interpreted run's, bit for bit
    d = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant=variant)
    d.expect_variants(d.variants)
    settings = dict(solver="dopri5", rtol=1e-6, atol=1e-8)
    compiled = blocksim.Simulator(d, mode="compiled", **settings)
    b = compiled.run()
    a = blocksim.Simulator(d, mode="interpreted", **settings).run()
    assert compiled.parts[0].backend.loop == "run_adaptive_one"
    assert compiled.parts[0].plan.compiled_as is not None
    assert_same_run(a, b)
    if variant == "pid_ff":        # the study's reference run, as in a module of its own
        assert (b.stats["nsteps"], b.stats["nfev"]) == (249, 1543)
    else:
        np.testing.assert_array_equal(b["pid.out"], 0.0)


def test_a_variant_run_alone_has_a_module_of_its_own_until_a_second_variant_runs():
    first = blocksim.Simulator(blocksim.load(SWITCHED, variant="both"), mode="compiled")
    assert first.parts[0].plan.compiled_as is None          # written for this variant alone
    alone = first.run()
    again = blocksim.Simulator(blocksim.load(SWITCHED, variant="both"), mode="compiled")
    assert again.parts[0].plan.compiled_as is None          # the same variant again: its own
    second = blocksim.Simulator(blocksim.load(SWITCHED, variant="sampled"), mode="compiled")
    third = blocksim.Simulator(blocksim.load(SWITCHED, variant="both"), mode="compiled")
    assert second.parts[0].plan.compiled_as is not None
    assert third.parts[0].plan.compiled_as is not None
    assert module_of(second) == module_of(third) != module_of(first)
    assert_same_run(alone, third.run())                    # the same steps, bit for bit
    # other overrides are another study: its first variant runs alone again
    other = blocksim.load(SWITCHED, variant="both", set={"spring.gain": -5.0})
    assert blocksim.Simulator(other, mode="compiled").parts[0].plan.compiled_as is None


def test_the_cli_says_a_study_will_run_its_variants(tmp_path, capsys):
    from blocksim.cli import main
    path = tmp_path / "switched.yaml"
    path.write_text(SWITCHED)
    assert main(["simulate", str(path), "--mode", "compiled", "--quiet"]) == 0
    (seen,) = diagram_module._VARIANTS_RUN.values()
    assert seen == {"continuous", "sampled", "both"}
    # and a diagram so told shares from its first compiled run (`--mode` is one of its overrides)
    d = blocksim.load(path, variant="continuous", set={"simulation.mode": "compiled"})
    assert blocksim.Simulator(d, mode="compiled").parts[0].plan.compiled_as is not None
