"""Parameter values as data of a run (Drake's Context): one compiled diagram, its blocks built and
configured once, runs any values of the same shapes: the members of each part of a split batch,
and new values set between runs with Simulator.set_parameters, with no new block objects and no
new compiled code. Each new value gives the numbers of the diagram loaded anew with it."""
from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import blocksim
from blocksim.blocks.base import Block, Kernels, Param, register
from blocksim.engine.simulate import make_simulation
from blocksim.errors import ParameterError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MSD = EXAMPLES / "mass_spring_damper.yaml"


def final_x(result):
    return result["x.out"][..., -1, 0]


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_new_gain_runs_as_the_diagram_loaded_with_it(mode):
    d = blocksim.load(MSD, set={"simulation.mode": mode})
    sim = blocksim.Simulator(d)
    first = sim.run()
    blocks = sim.whole.blocks
    sim.set_parameters({"spring.gain": -9.0})
    again = sim.run()
    reference = blocksim.Simulator(blocksim.load(MSD, set={"simulation.mode": mode,
                                                           "parameters.k": 9.0})).run()
    np.testing.assert_array_equal(again["x.out"], reference["x.out"])
    assert not np.array_equal(again["x.out"], first["x.out"])
    assert again.metadata["overrides"]["spring.gain"] == "-9.0"
    assert sim.whole.blocks is blocks and sim.cd.blocks is blocks


@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_a_workspace_parameter_changes_every_expression_that_uses_it(mode):
    d = blocksim.load(MSD, set={"simulation.mode": mode})
    sim = blocksim.Simulator(d)
    original = sim.run()
    sim.set_parameters({"parameters.k": 9.0, "parameters.c": 0.1})
    changed = sim.run()
    reference = blocksim.Simulator(blocksim.load(
        MSD, set={"simulation.mode": mode, "parameters.k": 9.0, "parameters.c": 0.1})).run()
    np.testing.assert_array_equal(changed["x.out"], reference["x.out"])
    sim.set_parameters({"parameters.k": 4.0, "parameters.c": 0.4})    # the file's values again
    np.testing.assert_array_equal(sim.run()["x.out"], original["x.out"])


FIXED = {"simulation.mode": "interpreted", "simulation.solver": "rk4", "simulation.step": 0.01}
"""Members of an adaptive batch share their steps; on a fixed step each is its own single run."""


def test_per_member_values_in_a_batch_run_as_single_runs():
    sim = blocksim.Simulator(blocksim.load(MSD, set=FIXED), batch={"parameters.k": [4.0] * 3})
    sim.set_parameters(batch={"parameters.k": [1.0, 4.0, 16.0]})
    got = final_x(sim.run())
    for member, k in enumerate([1.0, 4.0, 16.0]):
        single = blocksim.simulate(blocksim.load(MSD, set={**FIXED, "parameters.k": k}))
        assert got[member] == final_x(single)


def test_a_batch_of_one_workspace_value_for_every_member_runs_that_value():
    """Every member's k = 9 (the file says 4): the batch runs k = 9, not the file's value."""
    d = blocksim.load(MSD, set=FIXED)
    both = final_x(blocksim.simulate(d, batch={"parameters.k": [9.0, 9.0]}))
    single = final_x(blocksim.simulate(blocksim.load(MSD, set={**FIXED, "parameters.k": 9.0})))
    assert both.tolist() == [single, single]


def test_values_that_cannot_change_between_runs_are_refused_and_change_nothing():
    d = blocksim.load(MSD, set={"simulation.mode": "interpreted"})
    sim = blocksim.Simulator(d)
    before = sim.run()["x.out"]
    with pytest.raises(ParameterError, match="keep its shape"):
        sim.set_parameters({"x.x0": [1.0, 2.0]})
    with pytest.raises(ParameterError, match="'signs' decides the structure"):
        sim.set_parameters({"force.signs": "+-"})
    with pytest.raises(ParameterError, match="no parameter 'gian'.*did you mean 'gain'"):
        sim.set_parameters({"spring.gian": 1.0})
    with pytest.raises(ParameterError, match="no block 'sprnig'|did you mean 'spring'"):
        sim.set_parameters({"sprnig.gain": 1.0})
    with pytest.raises(ParameterError, match="3 given for a batch of 1"):
        sim.set_parameters(batch={"spring.gain": [1.0, 2.0, 3.0]})
    np.testing.assert_array_equal(sim.run()["x.out"], before)


def test_a_limit_where_there_was_none_changes_the_structure():
    """x.upper = inf has no crossing; a finite upper limit would add one: refused."""
    d = blocksim.load(MSD, set={"simulation.mode": "interpreted"})
    sim = blocksim.Simulator(d)
    with pytest.raises(ParameterError, match="change the structure of the block"):
        sim.set_parameters({"x.upper": 0.5})


def test_the_parts_of_a_split_batch_share_the_whole_batchs_blocks():
    d = blocksim.load(MSD, set={"simulation.mode": "compiled", "simulation.solver": "rk4",
                                "simulation.step": 0.01})
    batch = {"parameters.k": [1.0 + 0.1 * m for m in range(64)]}
    split = blocksim.Simulator(d, batch=batch, threads=2)
    assert len(split.parts) == 8                              # chunks of 8 members
    assert all(sim.cd.blocks is split.whole.blocks for sim in split.parts)
    assert [sim.cd.first_member for sim in split.parts] == list(range(0, 64, 8))
    unsplit = make_simulation(split.whole, split.settings, split.log).run()
    np.testing.assert_array_equal(split.run()["x.out"], unsplit.signals["x.out"])
    module = split.parts[0].backend.module
    split.set_parameters(batch={"parameters.k": [2.0] * 64})
    assert split.parts[0].backend.module is module           # new values, the same compiled code
    reference = blocksim.simulate(blocksim.load(MSD, set={
        "simulation.mode": "compiled", "simulation.solver": "rk4", "simulation.step": 0.01,
        "parameters.k": 2.0}))
    np.testing.assert_array_equal(split.run()["x.out"][63], reference["x.out"])


BakedParams = namedtuple("BakedParams", "gain")


@njit(cache=True)
def baked_output(t, xc, xd, u, y, p):
    for b in range(y[0].shape[0]):
        y[0][b, 0] = p.gain[b, 0] * u[0][b, 0]


class BakedGain(Block):
    """A user block written before values were data of a run: its record built in kernels()
    from the block's own values."""

    type_name = "TestBakedGain"
    summary = "y = gain u, its record kept in the block (tests only)"
    params = {"gain": Param(1.0, "-", "gain")}

    def kernels(self):
        return Kernels(output=baked_output, params=BakedParams(self.param_as_row("gain", 1)))


register(BakedGain)


def test_a_block_that_keeps_its_values_in_itself_runs_whole_and_refuses_new_values(tmp_path):
    """Such a block still runs; its batch stays on one thread, and a new value for it is refused
    with a message saying what to do."""
    text = MSD.read_text().replace('spring: {type: Gain, gain: "${-k}"}',
                                   'spring: {type: TestBakedGain, gain: "${-k}"}')
    path = tmp_path / "baked.yaml"
    path.write_text(text.replace("solver: dop853", "solver: rk4, step: 0.01, mode: compiled"))
    sim = blocksim.Simulator(blocksim.load(path), batch={"x.x0": [1.0] * 64}, threads=2)
    assert not sim.whole.values_are_data and len(sim.parts) == 1
    reference = blocksim.simulate(blocksim.load(MSD, set={
        "simulation.solver": "rk4", "simulation.step": 0.01, "simulation.mode": "compiled"}))
    np.testing.assert_array_equal(sim.run()["x.out"][63], reference["x.out"])
    with pytest.raises(ParameterError, match="keeps its values in the block.*load the diagram"):
        sim.set_parameters({"spring.gain": -9.0})
    sim.set_parameters({"damper.gain": -0.8})      # a library block's values are data
    slower = blocksim.simulate(blocksim.load(MSD, set={
        "simulation.solver": "rk4", "simulation.step": 0.01, "simulation.mode": "compiled",
        "parameters.c": 0.8}))
    np.testing.assert_array_equal(sim.run()["x.out"][0], slower["x.out"])


def test_the_saved_diagram_of_a_run_carries_the_values_it_was_given(tmp_path):
    """Nothing lost: a run after set_parameters saves the values shared by every member in its
    diagram (the workspace value and the block parameters that follow it), per-member ones in
    its metadata."""
    import yaml

    sim = blocksim.Simulator(blocksim.load(MSD, set=FIXED), batch={"x.x0": [1.0, 2.0]})
    sim.set_parameters({"parameters.k": 9.0, "damper.gain": -0.8},
                       batch={"v.x0": [0.0, 0.5]})
    result = sim.run()
    result.save(tmp_path / "run")
    saved = yaml.safe_load((tmp_path / "run" / "diagram.yaml").read_text())
    assert saved["parameters"]["k"] == 9.0 and saved["blocks"]["spring"]["gain"] == -9.0
    assert saved["blocks"]["damper"]["gain"] == -0.8
    assert saved["blocks"]["v"]["x0"] == 0.0            # the file's: it varies per member
    assert result.metadata["overrides"]["v.x0"] == "[0.0, 0.5]"
    assert result.metadata["overrides"]["parameters.k"] == "9.0"
