"""Trim: equilibria with chosen states, inputs and outputs fixed or free (least squares on the
diagram's own functions), and linearisation there (docs/analysis.md)."""
import math

import numpy as np
import pytest

import blocksim
from blocksim.analysis import linear_model
from blocksim.cli import main
from blocksim.errors import BlocksimError

G = 9.81


def test_the_holding_torque_of_the_double_pendulum_held_horizontal():
    d = blocksim.load("examples/double_pendulum.yaml")
    found = blocksim.trim(d, inputs=["tau"], states={"plant": [0.0, 0.0, 0.0, 0.0]})
    # point masses of 1 kg at 1 m and 2 m from the shoulder, links horizontal: tau = G(0)
    assert found.inputs["tau"] == pytest.approx([3 * G, G], rel=1e-12)
    assert found.residual < 1e-12
    m = linear_model(d, inputs=["tau"], outputs=["plant.q"], at=found.at)
    assert m.u0 == pytest.approx([3 * G, G]) and m.x0 == pytest.approx([0, 0, 0, 0])
    # horizontal and held: gravity's stiffness is zero (G ~ cos q), so A has no q columns
    assert np.abs(m.A[2:, :2]).max() < 1e-6


def test_a_free_state_is_solved_for():
    d = blocksim.load("examples/double_pendulum.yaml")
    found = blocksim.trim(d, inputs=["tau"], states={"plant": [-math.pi / 2, None, 0.0, 0.0]},
                          outputs={})
    # hanging shoulder, free elbow: no torque is one equilibrium the solver may reach from q0 =
    # 0.9 rad; every equilibrium holds tau2 = g cos(q1 + q2) and tau1 = 2 g cos q1 + tau2
    q2 = found.states["plant"][1]
    tau = found.inputs["tau"]
    assert tau[1] == pytest.approx(G * math.cos(-math.pi / 2 + q2), abs=1e-9)
    assert tau[0] == pytest.approx(2 * G * math.cos(-math.pi / 2) + tau[1], abs=1e-9)


def test_a_discrete_loop_is_trimmed_to_its_fixed_point():
    d = blocksim.load("examples/analysis/current_loop.yaml")
    found = blocksim.trim(d, inputs=["iq_ref"], outputs={"motor.i": 2.0})
    # 2 A through 0.5 ohm: 1 V, which the PI's integral gives alone, Ki z = 1 V
    assert found.states == {"motor": pytest.approx([2.0])}
    assert found.discrete_states["pi"] == pytest.approx([1.0 / 3142.0], rel=1e-12)
    assert found.inputs["iq_ref"] == pytest.approx([2.0]) and found.outputs["motor.i"] == [2.0]


def test_no_equilibrium_names_the_residual():
    d = blocksim.load("examples/analysis/current_loop.yaml")
    with pytest.raises(BlocksimError) as err:
        blocksim.trim(d, outputs={"motor.i": 2.0})
    assert str(err.value) == ("trim found no equilibrium: the largest residual left is -0.0002 "
                              "(the update of pi.zq[0]); free more states or inputs, or fix "
                              "fewer outputs")


def test_trim_on_the_command_line_prints_the_operating_point(capsys):
    assert main(["trim", "examples/double_pendulum.yaml", "--input", "tau",
                 "--state", "plant=[0, 0, 0, 0]"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("# the operating point, for the analysis: section (analysis.at)\n"
                        "at:\n  states:\n    plant: [0.0, 0.0, 0.0, 0.0]\n"
                        "  discrete_states: {}\n  inputs:\n    tau: [29.43, 9.81]\n")
    assert main(["trim", "examples/double_pendulum.yaml", "--state", "plant"]) == 1
    assert capsys.readouterr().err == ("error: --state expects NAME=VALUE such as "
                                       "plant=[0, 0, 0, 0], got 'plant'\n")
