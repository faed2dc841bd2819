"""A run of one member takes the loops' one-member form (run_fixed_one, run_adaptive_one), and a
compiled fixed-step batch its chunk form (run_fixed_chunk, chunks of up to CHUNK_MEMBERS members):
the same loop over copies of its arrays on its own stack (engine/stack_arrays.py). The forms give
the same numbers to the last bit, events and counters included; a diagram too large for the
stack runs in the arrays it is given."""
from pathlib import Path

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

import blocksim
from blocksim.engine import source_text
from blocksim.engine.numba_backend import CHUNK_MEMBERS, FIXED_STAGE_ROWS, Generator
from blocksim.engine.simulate import make_simulation
from blocksim.engine.stack_arrays import stack_array3, stack_matrix

pytestmark = pytest.mark.usefixtures("compiled_cache")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@njit(cache=False, _nrt=False)
def _filled():
    a = stack_matrix(2, 3)
    b = stack_array3(2, 2, 3)
    for i in range(2):
        for j in range(3):
            a[i, j] = 10.0 * i + j
            b[1, i, j] = -a[i, j]
            b[0, i, j] = 0.5
    total = 0.0
    for i in range(2):
        for j in range(3):
            total += a[i, j] + b[1, i, j] + b[0, i, j]
    return a.shape[0], a.shape[1], a.strides[0], b.shape[0], b.strides[0], b.strides[1], \
        a[1, 2], b[1, 1, 2], total


def test_stack_arrays_have_the_shape_and_strides_of_c_ordered_float_arrays():
    assert _filled() == (2, 3, 24, 2, 48, 24, 12.0, -12.0, 3.0)


def test_a_stack_array_shape_is_a_constant_of_the_source():
    @njit(cache=False, _nrt=False)
    def varying(n):
        return stack_matrix(1, n).shape[0]
    with pytest.raises(TypingError, match="constant of the source"):
        varying(3)


def both_forms(diagram):
    """One run through the one-member form and one through the batch form of the same module."""
    one, general = blocksim.Simulator(diagram), blocksim.Simulator(diagram)
    backend = general.parts[0].backend
    assert one.parts[0].backend.loop.endswith("_one")
    backend.loop = backend.loop[:-len("_one")]
    return one.run(), general.run()


def assert_identical(a, b):
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert a.stats == b.stats
    assert [(e.t, e.block, e.index) for e in a.events] == [(e.t, e.block, e.index) for e in b.events]


def test_w2_fixed_step_in_the_one_member_loop_is_the_batch_loop_bit_for_bit():
    d = blocksim.load(EXAMPLES / "two_link_foc.yaml",
                      set={"simulation.mode": "compiled", "simulation.stop_time": 0.2})
    a, b = both_forms(d)
    assert a.stats["mode"] == "compiled" and a.stats["nsteps"] == 2000
    assert_identical(a, b)


def test_exact_coulomb_under_dopri5_in_the_one_member_loop_is_the_batch_loop_bit_for_bit():
    """Located stick and slip events: the crossing functions, the search and the reactions run on
    the stack copies."""
    d = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff", set={
        "simulation.mode": "compiled", "simulation.solver": "dopri5", "simulation.rtol": 1e-6,
        "simulation.atol": 1e-8, "plant.friction_smoothing": 0.0})
    a, b = both_forms(d)
    assert a.stats["events"] > 0
    assert_identical(a, b)


def test_a_diagram_too_large_for_the_stack_has_no_one_member_form(monkeypatch):
    d = blocksim.load(EXAMPLES / "two_link_pid_vs_ff.yaml", variant="pid_ff",
                      set={"simulation.mode": "compiled"})
    sim = blocksim.Simulator(d).parts[0]
    plan, blocks = sim.plan, sim.cd.blocks
    source = Generator(plan, blocks, {}).source()
    assert "def run_fixed_one(" in source and "def run_adaptive_one(" in source
    monkeypatch.setattr(source_text, "STACK_LIMIT", 64)
    source = Generator(plan, blocks, {}).source()
    assert "def run_fixed(" in source and "def run_adaptive(" in source
    assert "_one(" not in source


def w2_batch(members: int, threads: int = 2, stop_time: float = 0.2) -> blocksim.Simulator:
    d = blocksim.load(EXAMPLES / "two_link_foc.yaml",
                      set={"simulation.mode": "compiled", "simulation.stop_time": stop_time})
    kp = np.asarray(d.spec.blocks["pid"].params["Kp"], dtype=float)
    return blocksim.Simulator(d, batch={"pid.Kp": [kp * (1 + 1e-3 * m) for m in range(members)]},
                              threads=threads)


def test_w2_batch_in_chunks_is_the_batch_loop_bit_for_bit():
    """11 members: a chunk of 8 on the stack's full rows and one of 3 on its first rows, on two
    threads; against one loop over the 11 members in the arrays given (run_fixed)."""
    chunked = w2_batch(11)
    assert [part.cd.batch for part in chunked.parts] == [CHUNK_MEMBERS, 11 - CHUNK_MEMBERS]
    assert {part.backend.loop for part in chunked.parts} == {"run_fixed_chunk"}
    whole = make_simulation(chunked.whole, chunked.settings, chunked.log)
    assert whole.backend.loop == "run_fixed"
    a, b = chunked.run(), whole.run()
    assert a.stats["nsteps"] == b.stats["nsteps"] == 2000 and a.stats["threads"] == 2
    np.testing.assert_array_equal(a.t, b.t)
    for name in a.names:
        np.testing.assert_array_equal(a[name], b.signals[name], err_msg=name)


def test_a_batch_whose_chunk_is_too_large_for_the_stack_splits_one_part_a_thread(monkeypatch):
    """Room on the stack for one member but not for a chunk: the module has run_fixed_one and no
    run_fixed_chunk, and a batch of 64 runs in two parts of 32 members (one a thread) in the
    arrays given, with the numbers of the whole batch."""
    sim = w2_batch(1, stop_time=0.05).parts[0]
    one_member = 8 * (sum(slot.width for slot in sim.plan.slots)   # xc, K, x0, xd, signals
                      + sim.plan.n_xd + (FIXED_STAGE_ROWS + 2) * sim.plan.n_xc)
    monkeypatch.setattr(source_text, "STACK_LIMIT", 2 * one_member)
    source = Generator(sim.plan, sim.cd.blocks, {}).source()
    assert "def run_fixed_one(" in source and "def run_fixed_chunk(" not in source
    split = w2_batch(64, stop_time=0.05)
    assert [part.cd.batch for part in split.parts] == [32, 32]
    assert {part.backend.loop for part in split.parts} == {"run_fixed"}
    whole = make_simulation(split.whole, split.settings, split.log).run()
    a = split.run()
    for name in a.names:
        np.testing.assert_array_equal(a[name], whole.signals[name], err_msg=name)
