"""The robot blocks' parameter values as data of a run: new values between runs
(Simulator.set_parameters) on the same blocks compute what a diagram loaded with those values
computes, bit for bit; values that would change a block's structure are refused."""
import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.errors import ParameterError

# the arm under a mismatched gravity compensation falls onto its lower stop and bounces
ARM = """
blocksim: 1
name: arm on its stop
blocks:
  gc:    {type: GravityCompensation, robot: two_link, param_error: [-0.5, 0.0],
          gravity: [0.0, -9.81, 0.0]}
  plant: {type: Manipulator, robot: two_link, q0: [0.0, 0.2], q_min: [-0.3, -2.0],
          restitution: 0.5, friction: coulomb_viscous, Fv: [0.5, 0.3], Fc: [1.0, 0.5],
          friction_smoothing: 1.0e-3}
  en:    {type: Energy, robot: two_link}
  fk:    {type: ForwardKinematics, robot: two_link}
  ff:    {type: InverseDynamics, robot: two_link, include_friction: true, friction: stribeck,
          Fc: 0.2, Fs: 0.3, payload_mass: 0.05}
  ct:    {type: ComputedTorque, robot: two_link, Kp: [100, 100], Kd: [20, 20],
          gravity: [0.0, -9.81, 0.0]}
connections:
  - plant.q -> gc.q
  - gc.tau -> plant.tau
  - plant.q -> en.q
  - plant.qd -> en.qd
  - plant.q -> fk.q
  - plant.q -> ff.q
  - plant.qd -> ff.qd
  - plant.qdd -> ff.qdd
  - plant.q -> ct.q_d
  - plant.qd -> ct.qd_d
  - plant.qdd -> ct.qdd_d
  - plant.q -> ct.q
  - plant.qd -> ct.qd
simulation: {stop_time: 0.6, solver: rk4, step: 1.0e-3, mode: interpreted}
log: {signals: [plant.q, plant.qd, gc.tau, en.total, fk.pose, ff.tau, ct.tau], every: 1.0e-3}
"""

SIGNALS = ["plant.q", "plant.qd", "gc.tau", "en.total", "fk.pose", "ff.tau", "ct.tau"]

NEW = {"plant.q0": [0.1, -0.1], "plant.restitution": 0.8, "plant.Fc": [0.5, 0.2],
       "plant.q_max": 1.5,                         # the plant has stops already: more of them
       "gc.param_error": [-0.4, 0.1], "gc.payload_mass": 0.2, "en.mass_scale": 1.3,
       "fk.param_error": 0.1, "ff.Fs": 0.4, "ff.payload_mass": 0.1, "ct.Kp": [50, 80],
       "ct.gravity": [0.0, -9.0, 0.0]}


@pytest.fixture
def arm(tmp_path):
    path = tmp_path / "arm.yaml"
    path.write_text(ARM)
    return path


def assert_same(a, b):
    for s in SIGNALS:
        np.testing.assert_array_equal(a[s], b[s], err_msg=s)


def test_the_arm_reaches_its_stop_and_every_block_serves_new_values(arm):
    sim = blocksim.Simulator(blocksim.load(arm))
    assert sim.whole.values_are_data
    first = sim.run()
    assert first["plant.q"][:, 0].min() == pytest.approx(-0.3, abs=1e-9)    # on the stop
    own = {name: blk.runtime_kernels().params for name, blk in sim.whole.blocks.items()}
    laws = {name: p.law.copy() for name, p in own.items() if hasattr(p, "law")}
    sim.set_parameters(NEW)
    again = sim.run()
    assert_same(again, blocksim.simulate(blocksim.load(arm, set=NEW)))
    assert not np.array_equal(again["plant.q"], first["plant.q"])
    # the blocks' own records (of the file's values) are untouched by the run's new values
    for name, blk in sim.whole.blocks.items():
        assert blk.runtime_kernels().params is own[name]
        if name in laws:
            np.testing.assert_array_equal(own[name].law, laws[name])
    sim.set_parameters({"plant.q0": [0.0, 0.2]})
    assert sim.run()["plant.q"][0].tolist() == [0.0, 0.2]


def test_batch_members_take_new_values_each(arm):
    members = [[-0.5, 0.0], [-0.3, 0.1], [0.2, 0.0]]
    sim = blocksim.Simulator(blocksim.load(arm), batch={"gc.param_error": members})
    q0 = [[0.0, 0.2], [0.05, 0.1], [-0.1, 0.0]]
    sim.set_parameters({"plant.restitution": 0.3}, batch={"plant.q0": q0})
    r = sim.run()
    for b in range(3):
        single = blocksim.simulate(blocksim.load(arm, set={
            "gc.param_error": members[b], "plant.q0": q0[b], "plant.restitution": 0.3}))
        for s in SIGNALS:
            np.testing.assert_array_equal(r[s][b], single[s], err_msg=(s, b))


@pytest.mark.parametrize("key, value, match", [
    ("plant.q_min", [-np.inf, -np.inf], "structure"),      # the stops gone (none above)
    ("plant.friction_smoothing", 0.0, "structure"),        # exact sign: zero crossings
    ("gc.gravity", [1.0, -9.81, 0.0], "structure"),        # no closed form any more
    ("ff.payload_com", [0.0, 0.1, 0.0], "structure"),      # a com off the link axis: no closed form
    ("plant.robot", "puma560", "decides the structure"),
    ("plant.restitution", 1.5, "restitution"),
    ("gc.param_error", [-1.5, 0.0], "param_error must be > -1"),
    ("gc.param_error", [0.1, 0.2, 0.3], "shape"),
])
def test_values_that_change_the_structure_or_fail_the_checks_are_refused(arm, key, value, match):
    sim = blocksim.Simulator(blocksim.load(arm))
    with pytest.raises(ParameterError, match=match):
        sim.set_parameters({key: value})


def test_compiled_runs_take_new_values_without_compiling_again(arm, compiled_cache):
    d = blocksim.load(arm, set={"simulation.mode": "compiled"})
    sim = blocksim.Simulator(d)
    sim.run()
    sim.set_parameters(NEW)
    again = sim.run()
    assert_same(again, blocksim.simulate(blocksim.load(arm, set=NEW)))      # interpreted


def test_link_overrides_are_structure_and_a_members_model_keeps_the_bits_of_its_values():
    links = {2: {"mass": 1.5, "com": [0.1, 0.0, 0.0]}}
    blk = BlockCheck("InverseDynamics", {"robot": "two_link", "links": links,
                                         "gravity": [0.0, -9.81, -0.0]}, in_widths=2).block
    assert blk.robot_of(blk.p) is blk.model                   # built once, kept
    assert blk.model.standard_parameters()[10] == 1.5
    rows = blk.runtime_kernels().params.model[1]
    np.testing.assert_array_equal(blk.record(blk.p).model[1], rows)
    # -0.0 is its own value: a member's model is keyed by the bits of its values
    zero = blk.changed_values(blk.p, {"gravity": [0.0, -9.81, 0.0]})
    assert np.signbit(blk.member_models(blk.p)[0].gravity[2])
    assert not np.signbit(blk.member_models(zero)[0].gravity[2])
    with pytest.raises(ParameterError, match="decides the structure"):
        blk.changed_values(blk.p, {"links": {1: {"mass": 2.0}}})
