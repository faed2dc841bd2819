"""A reference or setpoint that leaves the joint limits of the robot it feeds is a warning at the
source's line, before the run (degrees written as radians, or a setpoint for another joint)."""
import warnings
from pathlib import Path
from textwrap import dedent

import pytest

import blocksim
from blocksim.errors import BlocksimWarning

ROOT = Path(__file__).resolve().parents[1]


def warnings_of(diagram) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        diagram.compile()
    return [str(w.message) for w in caught if issubclass(w.category, BlocksimWarning)]


def test_a_cosine_ramp_beyond_the_elbow_limit_is_named_with_its_peak():
    """q_d = A (1 - cos(pi t)) peaks at 2 A = -6 rad at t = 1 s; the PUMA elbow stops at -3.93."""
    path = ROOT / "examples/puma560_computed_torque.yaml"
    said = warnings_of(blocksim.load(path, set={"parameters.A": [0.5, 0.4, -3, 0.6, 0.4,
                                                                       0.5]}))
    assert said == [f"{path}:9: block 'ref', output q (into ct.q_d): joint 3 (elbow) reaches -6 "
                    "rad, outside its limits [-3.92699, 0.785398] in robot 'puma560' (angles "
                    "are in rad)"]


def test_a_constant_setpoint_tracked_by_a_pid_against_the_plant_q_is_checked():
    text = """
    blocksim: 1
    blocks:
      ref:   {type: Constant, value: [0.3, -1.2, 0.9, 0.5, -0.6, 20]}
      pd:    {type: PID, Kp: 100, Ki: 0, Kd: 10}
      plant: {type: Manipulator, robot: kr6_like, q0: 0.0, qd0: 0.0}
    connections: [ref -> pd.ref, plant.q -> pd.meas, plant.qd -> pd.meas_d, pd -> plant.tau]
    simulation: {stop_time: 0.01, solver: rk4, step: 1.0e-3}
    """
    said = warnings_of(blocksim.load(dedent(text).lstrip()))
    assert len(said) == 1
    assert said[0].startswith("<text>:3: block 'ref', output out (into pd.ref): joint 6 (A6) "
                              "reaches 20 rad, outside its limits [-6.10865, 6.10865]")


def test_a_sweep_member_beyond_the_limits_is_caught_and_references_inside_are_quiet():
    path = ROOT / "examples/puma560_computed_torque.yaml"
    d = blocksim.load(path)
    assert warnings_of(d) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d.compile(batch={"ref.amplitude": [[0.5, 0.4, -0.3, 0.6, 0.4, 0.5],
                                           [0.5, -0.6, -0.3, 0.6, 0.4, 0.5]]})
    said = [str(w.message) for w in caught if issubclass(w.category, BlocksimWarning)]
    assert len(said) == 1 and "joint 2 (shoulder) reaches -1.2 rad" in said[0]


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")
                                           if "identify" not in p.name))
def test_the_examples_stay_inside_their_robots_limits(example):
    d = blocksim.load(ROOT / "examples" / example)
    for variant in [None] + d.variants:
        assert warnings_of(d.with_variant(variant)) == []
