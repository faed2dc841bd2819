"""Parameter values as data of a run for the continuous, discrete and control blocks: new values
keep the blocks (checked, and refused where they would change a block's structure), x0 lives in
the record, a part of a split batch runs its members' values on the whole batch's blocks, and
Simulator.set_parameters gives the numbers of a diagram loaded with the new values."""
from __future__ import annotations

from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blockcheck import BlockCheck
from blocksim.blocks.base import BatchValue
from blocksim.engine.simulate import make_simulation
from blocksim.errors import ParameterError

# only blocks whose values are data (Gain and the blocks of continuous, discrete and control), so
# that a batch splits into parts of the same blocks and new values build no block
LOOP = """
blocksim: 1
blocks:
  ss:   {type: StateSpace, A: [[0, 1], [-4, -0.4]], B: [0, 1], C: [1, 0], x0: [1.0, 0.0]}
  g:    {type: Gain, gain: -0.5}
  int:  {type: Integrator, x0: 0.5}
  pid:  {type: PID, Kp: 2.0, Ki: 1.0, Kd: 0.1, N: 50.0, z0: 0.1}
  tf:   {type: TransferFunction, num: [0.5, 1.0, 1.0], den: [1.0, 3.0, 2.0]}
  fd:   {type: FilteredDerivative, N: 20.0}
  zoh:  {type: ZeroOrderHold, period: 0.02}
  ud:   {type: UnitDelay, period: 0.02, x0: 0.3}
  dint: {type: DiscreteIntegrator, period: 0.02, gain: 0.5, method: trapezoidal, lower: -0.4,
         upper: 0.4, x0: 0.1}
  dtf:  {type: DiscreteTransferFunction, period: 0.02, num: [0.2, 0.1], den: [1.0, -0.5]}
  dss:  {type: DiscreteStateSpace, period: 0.02, A: [[0.9]], B: [[0.1]], C: [[1.0]], x0: 0.2}
  dpid: {type: PID, Kp: 1.0, Ki: 2.0, period: 0.02, z0: -0.1}
connections:
  - pid -> ss
  - ss -> g
  - g -> int
  - int -> pid.ref
  - ss -> pid.meas
  - pid -> tf
  - tf -> fd
  - fd -> zoh
  - zoh -> ud
  - ud -> dint
  - dint -> dtf
  - dtf -> dss
  - dss -> dpid.meas
  - int -> dpid.ref
simulation: {stop_time: 0.6, solver: rk4, step: 0.01}
log: {signals: [ss.out, int.out, pid.out, tf.out, fd.out, zoh.out, ud.out, dint.out, dtf.out,
                dss.out, dpid.out], every: 0.01}
"""

pytestmark = pytest.mark.usefixtures("compiled_cache")

NEW_VALUES = {"ss.x0": [0.5, 0.2], "ss.A": [[0, 1], [-3, -0.5]], "int.x0": -0.2,
              "pid.Kp": 3.0, "pid.Kd": 0.2, "pid.z0": 0.3, "tf.den": [1.0, 2.0, 2.0],
              "fd.N": 30.0, "ud.x0": -0.3, "dint.upper": 0.3, "dint.x0": 0.5,
              "dtf.num": [0.3, 0.1], "dss.x0": -0.1, "dpid.Ki": 3.0, "dpid.z0": 0.2}


def load(tmp_path, mode, name="loop.yaml", **sets):
    path = tmp_path / name
    path.write_text(dedent(LOOP))
    return blocksim.load(path, set={"simulation.mode": mode, **sets})


def assert_same_numbers(a, b):
    assert a.names == b.names
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


# ---- structure and checks of new values ------------------------------------------------------

@pytest.mark.parametrize("type_name, params, change", [
    ("Integrator", {}, {"upper": 1.0}),                                  # limit crossings appear
    ("Integrator", {"lower": -1.0}, {"lower": -np.inf}),                # and disappear
    ("TransferFunction", {"num": [1.0], "den": [1.0, 2.0]}, {"den": [0.0, 2.0]}),  # order 1 -> 0
    ("TransferFunction", {"num": [1.0, 1.0], "den": [1.0, 2.0]}, {"num": [0.0, 1.0]}),  # no D
    ("StateSpace", {"A": [[-1.0]], "B": [[1.0]], "C": [[1.0]]}, {"D": 0.5}),   # feedthrough
    ("DiscreteStateSpace", {"period": 0.1, "A": [[0.5]], "B": [[1.0]], "C": [[1.0]], "D": 1.0},
     {"D": 0.0}),
    ("DiscreteTransferFunction", {"period": 0.1, "num": [1.0, 0.5], "den": [1.0, -0.5]},
     {"num": [1.0, 0.0], "den": [1.0, 0.0]}),                              # order 1 -> 0
    ("DiscreteTransferFunction", {"period": 0.1, "num": [1.0, 0.5], "den": [1.0, -0.5]},
     {"num": [0.0, 0.5]}),                                                  # b0 = 0: no D
    ("PID", {"Kp": 1.0}, {"Kd": 0.1}),                                      # a filter state
])
def test_new_values_that_change_the_structure_are_refused(type_name, params, change):
    blk = BlockCheck(type_name, params, in_widths=1, connected=("ref", "meas", "in")).block
    with pytest.raises(ParameterError, match="change the structure"):
        blk.changed_values(blk.p, change)


@pytest.mark.parametrize("type_name, params, change, message", [
    ("Integrator", {"lower": -1.0, "upper": 1.0}, {"lower": 2.0}, "lower must be <= upper"),
    ("DiscreteIntegrator", {"period": 0.1, "upper": 0.5}, {"lower": 1.0},
     "lower must be <= upper"),
    ("PID", {}, {"N": 0.0}, "N must be > 0"),
    ("PID", {"upper": 1.0}, {"lower": 2.0}, "lower must be <= upper"),
    ("PID", {"Kb": 1.0}, {"Kb": -1.0}, "Kb must be >= 0"),
    ("FilteredDerivative", {}, {"N": -1.0}, "N must be > 0"),
    ("TransferFunction", {"num": [1.0], "den": [1.0, 2.0]}, {"num": [1.0, 1.0, 1.0]},
     "keep its shape"),
    ("DiscreteTransferFunction", {"period": 0.1, "num": [1.0], "den": [1.0, -0.5]},
     {"den": [0.0, 1.0]}, r"den\[0\]"),
])
def test_new_values_are_checked_as_the_files_are(type_name, params, change, message):
    blk = BlockCheck(type_name, params, in_widths=1).block
    with pytest.raises(ParameterError, match=message):
        blk.changed_values(blk.p, change)


def test_new_values_of_the_same_structure_reach_initial_state_and_on_event_through_the_record():
    check = BlockCheck("Integrator", {"x0": [0.5, 2.0], "upper": 1.0, "reset": "rising"},
                       {"in": 2, "reset": 1})
    blk = check.block
    np.testing.assert_array_equal(check.xc, [[0.5, 1.0]])          # x0 within the limits
    v = blk.changed_values(blk.p, {"x0": [-0.5, 0.25], "upper": 0.0})
    record = blk.record(v)
    xc, xd = np.zeros((1, 2)), np.zeros((1, blk.n_xd))                # its limit modes
    blk.initial_state(xc, xd, record)
    np.testing.assert_array_equal(xc, [[-0.5, 0.0]])
    xc[...] = [[3.0, 3.0]]
    mask = np.array([[True, False, False, False, True]])          # upper limit of channel 0, reset
    u = check.u((0.0, 1.0))
    blk.on_event(0.1, xc, xd, u, mask, record)
    np.testing.assert_array_equal(xc, [[-0.5, 0.0]])              # reset to the new x0
    blk.on_event(0.1, xc, xd, u, mask)                             # the block's own values
    np.testing.assert_array_equal(xc, [[0.5, 1.0]])
    np.testing.assert_array_equal(blk.p.x0, [[0.5, 2.0]])         # the file's values unchanged


def test_a_part_of_the_batch_keeps_the_order_of_the_whole():
    """Members 0..1 have a cancelling pole and zero at z = 0 (trailing zeros in num and den), the
    others not: the part of the first two keeps the whole batch's first order."""
    num = BatchValue([[0.2, 0.0], [0.3, 0.0], [0.2, 0.1], [0.4, 0.1]])
    den = BatchValue([[1.0, 0.0], [1.0, 0.0], [1.0, -0.5], [1.0, -0.6]])
    blk = BlockCheck("DiscreteTransferFunction", {"period": 0.1, "num": num, "den": den},
                     in_widths=1, batch=4).block
    assert blk.n_xd == 1
    whole = blk.record(blk.p)
    part = blk.record(blk.member_values(blk.p, 0, 2))
    for name in ("A", "B", "C", "D"):
        np.testing.assert_array_equal(getattr(part, name), getattr(whole, name)[:2])
    assert part.scratch.shape == (2, 1) and part.x0.shape == (2, 1)


# ---- runs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["interpreted", "compiled"])
def test_set_parameters_gives_the_numbers_of_the_diagram_loaded_with_the_values(tmp_path, mode):
    sim = blocksim.Simulator(load(tmp_path, mode))
    before = sim.run()
    blocks = dict(sim.whole.blocks)
    sim.set_parameters(NEW_VALUES)
    after = sim.run()
    assert all(sim.whole.blocks[n] is blk for n, blk in blocks.items())   # no block made
    fresh = blocksim.simulate(load(tmp_path, mode, "fresh.yaml",
                                   **NEW_VALUES))
    assert_same_numbers(after, fresh)
    assert not np.array_equal(before["dpid.out"], after["dpid.out"])
    for name in before.names:
        assert np.all(np.isfinite(after[name])), name


def test_a_split_batch_runs_its_parts_on_the_whole_batchs_blocks_bit_for_bit(tmp_path):
    B = 64
    k = np.arange(B)
    batch = {"pid.Kp": list(2.0 + 0.05 * k), "int.x0": list(0.5 - 0.01 * k),
             "ss.x0": [[1.0 - 0.01 * i, 0.0] for i in k],
             # the first half has no s^2 term in num (no direct feedthrough on its own)
             "tf.num": [[0.0 if i < B // 2 else 0.5, 1.0, 1.0] for i in k],
             "ud.x0": list(0.01 * k), "dint.x0": list(0.2 - 0.005 * k),
             # the first half has a cancelling pole and zero at z = 0 (order 0 on its own)
             "dtf.num": [[0.2, 0.0 if i < B // 2 else 0.1] for i in k],
             "dtf.den": [[1.0, 0.0 if i < B // 2 else -0.5] for i in k],
             "dss.x0": list(0.2 + 0.01 * k), "dpid.z0": list(-0.1 + 0.002 * k),
             "fd.N": list(20.0 + k)}
    d = load(tmp_path, "compiled")
    split = blocksim.Simulator(d, batch, threads=2)
    assert len(split.parts) == 8                      # chunks of 8 members, on two threads
    for part in split.parts:
        assert all(part.cd.blocks[n] is blk for n, blk in split.whole.blocks.items())
    whole = make_simulation(split.whole, split.settings, split.log)     # one loop, 64 members
    a, b = split.run(), whole.run()
    assert a.names == list(b.signals)
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b.signals[name], err_msg=name)
    assert a.stats.get("threads") == 2
