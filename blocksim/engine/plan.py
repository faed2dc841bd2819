"""The plan of a run: every fact about a compiled diagram that a run needs, as plain data.

A RunPlan says which block is called for what, when, and on which slots of the run's arrays:
the output calls (with the outputs each serves, its rate, whether it varies in minor steps, is
read at solver stages, and at which major steps a reader needs it), the derivative, update and
zero-crossing calls, the signal slots, state slices and log slots, and the run's exact time
base. It is built once from the compiled diagram and the run's settings, and holds no block, no
function and none of the run's arrays (only the log times): the Python backend walks it with block methods, the numba backend renders it as
source (engine/python_backend.py, engine/numba_backend.py). Both run the same phases of a major
step (engine/major_step.py), so what a run means is written once, here and there.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields, replace
from functools import cached_property
from fractions import Fraction

import numpy as np

from ..blocks.base import Block, Kernels
from ..diagram.compiler import CompiledDiagram
from ..diagram.graph import block_order
from ..diagram.rates import Timebase, make_timebase
from ..solvers import SOLVERS
from .recorder import log_times

EVERY_STEP = -1
"""The rate of a call made at every major step (continuous and inherited-continuous blocks)."""


@dataclass(frozen=True)
class Slot:
    """One (B, width) signal array of the run: a block's output, or the zeros an unwired input
    reads (port is then the input's name)."""

    block: str
    port: str
    width: int
    unwired: bool = False


@dataclass(frozen=True)
class OutputStep:
    """One output call of the sorted order.

    block; serves: the outputs this call computes (a split call serves part of them); wanted:
    per output of the block (port order), True when this call computes it and someone reads it
    (a wire into an enabled block, or the log); rate: the index of its discrete rate in the time
    base, or EVERY_STEP; varies: recomputed at minor evaluations (it reads continuous state or
    t); at_stages: recomputed at solver stages (it feeds, through varying blocks, a derivative);
    when_rates, when_logged: for a call its readers need at some major steps only (see
    RunPlan.output_steps), the rates whose hits need it and whether the log does; lazy: such a
    call; modes: the block's modes are set just before this call at major steps (its last
    output call, when it has modes: Block.modes); log_read: a logged signal reads what it serves,
    itself or through direct feedthrough (Block.feedthrough), so a log sample between major
    steps recomputes it; a varying call that is not log_read may be left out there (its buffers
    then hold a value nobody reads before the next evaluation that computes it); time_only:
    its outputs are a function of t alone (see _Facts.time_only), so an evaluation at the time of
    its last one gives the numbers its buffers hold already, and a loop may leave it out (RK4's
    two stages at t + h/2, its last stage and the next major step at t + h)."""

    block: str
    serves: tuple[str, ...]
    wanted: tuple[bool, ...]
    rate: int
    varies: bool
    at_stages: bool
    lazy: bool = False
    when_rates: tuple[int, ...] = ()
    when_logged: bool = False
    modes: bool = False
    log_read: bool = True
    time_only: bool = False


@dataclass(frozen=True)
class UpdateStep:
    """One update call: block, and its rate index (EVERY_STEP: a continuous block with memory)."""

    block: str
    rate: int


@dataclass(frozen=True)
class RunPlan:
    """What a run does, as data (see the module docstring).

    solver: the solver's name; timebase: exact ticks and rates; start, stop (s, exact); fixed_step (s, exact; None for an
    adaptive solver); log_grid: the log times (s).
    slots: the run's signal arrays; outputs_of / inputs_of: block -> the slot of each of its
    outputs / inputs (port order); log: (signal name, slot) in log order.
    constant_outputs: blocks computed once at the start; output_steps: the other output calls in
    sorted order; derivatives: blocks with continuous states (sorted order); updates; crossings:
    blocks with zero crossings; order: every block once, in sorted order.
    xc_slices, xd_slices, zc_slices: block -> (start, stop) columns of the state arrays; n_xc,
    n_xd, n_zc: their widths; batch: members.
    first_stage_repeats_major: the first Runge-Kutta stage computes what the major step before
    it just computed (same t and xc, and no stage-read block holds discrete state the updates
    could have changed), so a loop may skip its outputs.
    stage_held, stage_xd: what a solver stage reads besides t, xc and the parameters: the slots
    its blocks (the stage-read ones and those with continuous states) read from blocks that only
    major steps compute (discrete, or not varying), and the discrete-state columns (modes
    included) of those blocks. A major step that leaves all of them as they were is a quiet hit:
    the derivative at the end of the last step is still the derivative there, so an adaptive
    solver goes on without a restart (its FSAL stage, or a stiff solver's history and Jacobian,
    kept).
    enabled: the blocks this plan calls (those enabled, or for a shared module's plan those
    enabled in some variant). switched: the blocks whose calls the compiled module makes only when
    the run's switch flags say so (RunPlan.compiled_as). compiled_as: the plan a compiled run's
    module is written for, when it serves every variant of the diagram's file (None: this plan's
    own): the blocks enabled in some variant, each block whose `enabled` differs among them
    switched by run data, so the variants share one compiled module.
    """

    batch: int
    solver: str
    timebase: Timebase
    start: Fraction
    stop: Fraction
    fixed_step: Fraction | None
    log_grid: np.ndarray
    slots: tuple[Slot, ...]
    outputs_of: dict[str, tuple[int, ...]]
    inputs_of: dict[str, tuple[int, ...]]
    log: tuple[tuple[str, int], ...]
    constant_outputs: tuple[str, ...]
    output_steps: tuple[OutputStep, ...]
    derivatives: tuple[str, ...]
    updates: tuple[UpdateStep, ...]
    crossings: tuple[str, ...]
    order: tuple[str, ...]
    xc_slices: dict[str, tuple[int, int]]
    xd_slices: dict[str, tuple[int, int]]
    zc_slices: dict[str, tuple[int, int]]
    n_xc: int
    n_xd: int
    n_zc: int
    first_stage_repeats_major: bool
    stage_held: tuple[int, ...] = ()
    stage_xd: tuple[tuple[int, int], ...] = ()
    enabled: frozenset[str] = frozenset()
    switched: tuple[str, ...] = ()
    compiled_as: "RunPlan | None" = None

    @property
    def stage_steps(self) -> tuple[OutputStep, ...]:
        """The output calls of a solver stage (before the derivatives)."""
        return tuple(o for o in self.output_steps if o.at_stages)

    @cached_property
    def step_ticks(self) -> int | None:
        """The fixed step in base ticks (None for an adaptive solver)."""
        return None if self.fixed_step is None else int(self.fixed_step / self.timebase.tick)

    @cached_property
    def stop_tick(self) -> int | Fraction:
        """The stop time in base ticks: an int, or a Fraction when it is off the tick grid."""
        ticks = (self.stop - self.start) / self.timebase.tick
        return int(ticks) if ticks.denominator == 1 else ticks


def plan_key(plan: RunPlan) -> tuple:
    """A hashable key of every field of the plan but its log times (log_grid): dictionaries as
    sorted items, compiled_as by its own key."""
    items = []
    for f in fields(plan):
        if f.name == "log_grid":
            continue
        value = getattr(plan, f.name)
        if isinstance(value, dict):
            value = tuple(sorted(value.items()))
        elif isinstance(value, RunPlan):
            value = plan_key(value)
        items.append(value)
    return tuple(items)


def signal_slots(cd: CompiledDiagram) -> tuple[list[Slot], dict, dict, dict]:
    """The run's signal arrays: (slots, outputs_of, inputs_of, index), index = {(block, output):
    its slot}; every output has a slot, and every unwired input a slot of zeros of its own."""
    slots, outputs_of, inputs_of = [], {}, {}
    index = {}
    for name, widths in cd.out_widths.items():
        for port, width in widths.items():
            index[(name, port)] = len(slots)
            slots.append(Slot(name, port, width))
    for name, blk in cd.blocks.items():
        outputs_of[name] = tuple(index[(name, o)] for o in blk.output_names())
        inputs = []
        for port in blk.input_names():
            src = cd.wires.get((name, port))
            if src is None:
                inputs.append(len(slots))
                slots.append(Slot(name, port, blk.unwired_width(port), unwired=True))
            else:
                inputs.append(index[src])
        inputs_of[name] = tuple(inputs)
    return slots, outputs_of, inputs_of, index


def make_plan(cd: CompiledDiagram, run, logged: dict[str, tuple[str, str]],
              compiled: bool = False) -> RunPlan:
    """The plan of one run of cd with the RunSettings `run`, logging `logged` ({signal name:
    (block, output)}); for a compiled run (`compiled`), with the plan its module is written for
    (RunPlan.compiled_as) when cd's file has variants that switch blocks on and off
    (CompiledDiagram.switchable)."""
    own = {n for n, b in cd.blocks.items() if b.enabled}
    plan = _plan(cd, run, logged, own)
    if not compiled:
        return plan
    switchable = cd.switchable
    union = own | set(switchable)
    if not switchable or not _shareable(cd, union - own):
        return plan
    shared = _plan(cd, run, logged, union)
    shared = replace(shared, switched=tuple(n for n in shared.order if n in switchable))
    # The shared module must make this run's decisions: the same zero crossings, and a quiet hit
    # where this plan has one. Its quiet-hit test reads what this plan's does and, besides, the
    # outputs and discrete states of blocks switched off here, which never change (no call
    # writes them), and nothing else; either may read those.
    off = union - own
    held_off = {i for n in off for i in plan.outputs_of[n]}
    xd_off = {cd.xd_slices[n] for n in off}
    if (shared.crossings != plan.crossings
            or set(shared.stage_held) - held_off != set(plan.stage_held) - held_off
            or set(shared.stage_xd) - xd_off != set(plan.stage_xd) - xd_off):
        return plan
    return replace(plan, compiled_as=shared)


def _shareable(cd: CompiledDiagram, off: set[str]) -> bool:
    """True when the blocks switched off in this run (enabled in another variant) can be written
    into a module shared with the variants that enable them: each has the kernels a compiled run
    needs."""
    return all(not Kernels.missing(cd.blocks[n], cd.sample_times[n]) for n in off)


def _plan(cd: CompiledDiagram, run, logged: dict[str, tuple[str, str]],
          enabled: set[str]) -> RunPlan:
    """The plan of a run calling the blocks `enabled` (the others output zeros, their states
    held)."""
    fixed_step = None if SOLVERS[run.solver].adaptive else run.step
    timebase = make_timebase(cd.sample_times, run.start, fixed_step)
    rate_index = {r.sample_time: i for i, r in enumerate(timebase.rates)}

    slots, outputs_of, inputs_of, index = signal_slots(cd)
    log = tuple((signal, index[bp]) for signal, bp in logged.items())

    order = block_order(cd.calls)
    facts = _Facts(cd, rate_index, {bp for bp in logged.values()}, order, enabled)
    constant, steps = [], []
    last_call = {call.block: k for k, call in enumerate(cd.calls)}
    for k, call in enumerate(cd.calls):
        name, blk = call.block, cd.blocks[call.block]
        if name not in enabled or not blk.output_names():
            continue
        st = cd.sample_times[name]
        if st.kind == "constant":
            constant.append(name)
            continue
        wanted = tuple(o in call.serves and (name, o) in facts.read for o in blk.output_names())
        if not any(wanted) and not facts.must_compute(name):
            continue
        when = facts.read_when.get(name)
        steps.append(OutputStep(
            name, tuple(call.serves), wanted,
            rate_index[st] if st.kind == "discrete" else EVERY_STEP,
            varies=name in cd.varying, at_stages=name in facts.stage_read,
            lazy=when is not None,
            when_rates=tuple(sorted(r for r in (when or ()) if r != "log")),
            when_logged=when is not None and "log" in when,
            modes=blk.n_modes > 0 and last_call[name] == k,
            log_read=any((name, o) in facts.log_read for o in call.serves),
            time_only=name in facts.time_only))
    updates = tuple(UpdateStep(n, rate_index[cd.sample_times[n]]
                               if cd.sample_times[n].kind == "discrete" else EVERY_STEP)
                    for n in order if n in enabled and facts.updates(n))
    return RunPlan(
        batch=cd.batch, solver=run.solver, timebase=timebase, start=run.start, stop=run.stop,
        fixed_step=fixed_step, log_grid=log_times(run.start, run.stop, run.log_every),
        slots=tuple(slots), outputs_of=outputs_of, inputs_of=inputs_of, log=log,
        constant_outputs=tuple(constant), output_steps=tuple(steps),
        derivatives=tuple(n for n in order if n in enabled and cd.blocks[n].n_xc > 0),
        updates=updates,
        crossings=tuple(n for n in order if n in enabled and cd.blocks[n].n_zc > 0),
        order=tuple(order), xc_slices=dict(cd.xc_slices), xd_slices=dict(cd.xd_slices),
        zc_slices=dict(cd.zc_slices), n_xc=cd.n_xc, n_xd=cd.n_xd, n_zc=cd.n_zc,
        first_stage_repeats_major=all(cd.blocks[n].n_xd == 0 for n in facts.stage_read),
        stage_held=facts.stage_held(index), stage_xd=facts.stage_xd(),
        enabled=frozenset(enabled))


class _Facts:
    """The analyses of a diagram's data flow that make a plan: who reads what, and when."""

    def __init__(self, cd: CompiledDiagram, rate_index: dict, logged: set[tuple[str, str]],
                 order: list[str], enabled: set[str]):
        self.cd = cd
        self.enabled = enabled
        self.rate_index = rate_index
        self.logged = logged
        self.read = {src for (dst, _), src in cd.wires.items() if dst in enabled} | logged
        self.stage_read = self._read_at_stages()
        self.log_read = self._read_by_log()
        self.read_when = self._read_when()
        self.time_only = self._time_only()
        self.stage_blocks = [n for n in order if n in enabled
                             and (n in self.stage_read or cd.blocks[n].n_xc > 0)]
        """The blocks a solver stage evaluates, in sorted order: the stage-read ones and those
        with continuous states."""

    def kernels(self, name: str):
        blk = self.cd.blocks[name]
        return blk.runtime_kernels() if name in self.enabled else None

    def must_compute(self, name: str) -> bool:
        """An output call made even when none of its outputs is read: a block without kernels
        (its Python methods may rely on their outputs), or one with update or zero-crossing
        kernels (the Kernels contract lets only the others be left out)."""
        k = self.kernels(name)
        return k is None or k.update is not None or k.zero_crossings is not None

    def updates(self, name: str) -> bool:
        """A block whose update does something: discrete or with memory (n_xd > 0), and with an
        update kernel or an update method of its own."""
        blk = self.cd.blocks[name]
        if not (self.cd.sample_times[name].kind == "discrete" or blk.n_xd > 0):
            return False
        k = self.kernels(name)
        return (k is not None and k.update is not None) or type(blk).update is not Block.update

    def _time_only(self) -> set[str]:
        """Varying blocks whose outputs are a function of t alone: no state of any kind and no
        zero crossing, computed in one output call, every input they read directly (feedthrough)
        wired from such a block, a constant block or a block switched off (whose outputs stay
        zero). A trajectory source, and an inverse-dynamics feedforward of it: kernels are pure
        functions of (t, x, u, parameters), so the same t gives the same numbers."""
        cd = self.cd
        calls = Counter(call.block for call in cd.calls)
        found: set[str] = set()
        for call in cd.calls:
            name, blk = call.block, cd.blocks[call.block]
            if (name not in self.enabled or name not in cd.varying or calls[name] > 1
                    or blk.n_xc or blk.n_xd or blk.n_zc or blk.n_modes):
                continue
            sources = [cd.wires.get((name, i)) for i, _ in blk.feedthrough()]
            if all(src is None or src[0] in found or src[0] not in self.enabled
                   or cd.sample_times[src[0]].kind == "constant" for src in sources):
                found.add(name)
        return found

    def _read_at_stages(self) -> set[str]:
        """Varying blocks whose outputs a solver stage reads: those feeding, through varying
        blocks, an input of a block with continuous states. The others (a reference read only by
        a discrete controller, a signal only logged) are computed at major steps alone: between
        them nobody reads them, and each major step recomputes them before any reader."""
        cd = self.cd
        stack = [n for n, b in cd.blocks.items() if n in self.enabled and b.n_xc > 0]
        seen, needed = set(), set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            for port in cd.blocks[name].input_names():
                src = cd.wires.get((name, port))
                if src is not None and src[0] in cd.varying and src[0] in self.enabled:
                    needed.add(src[0])
                    stack.append(src[0])
        return needed

    def _read_by_log(self) -> set[tuple[str, str]]:
        """The outputs (block, output) a logged signal reads in the same evaluation: the logged
        ones, and those their blocks read through direct feedthrough (Block.feedthrough), back to
        outputs that depend on states, time or discrete values alone (OutputStep.log_read)."""
        cd = self.cd
        stack = list(self.logged)
        needed: set[tuple[str, str]] = set()
        while stack:
            port = stack.pop()
            if port in needed:
                continue
            needed.add(port)
            name, output = port
            blk = cd.blocks[name]
            if name not in self.enabled:
                continue
            for i, o in blk.feedthrough():
                src = cd.wires.get((name, i))
                if o == output and src is not None:
                    stack.append(src)
        return needed

    def stage_held(self, index: dict) -> tuple[int, ...]:
        """The slots (by `index`: (block, output) -> slot) that stage blocks read from blocks a
        stage does not compute (RunPlan.stage_held), each once, in reading order; constants are
        left out (they never change)."""
        cd, held = self.cd, {}
        for name in self.stage_blocks:
            for port in cd.blocks[name].input_names():
                src = cd.wires.get((name, port))
                if src is None or src[0] in cd.varying:
                    continue
                if cd.sample_times[src[0]].kind != "constant":
                    held.setdefault(index[src], None)
        return tuple(held)

    def stage_xd(self) -> tuple[tuple[int, int], ...]:
        """The discrete-state columns (start, stop) of the stage blocks that have some."""
        cd = self.cd
        return tuple(cd.xd_slices[n] for n in self.stage_blocks if cd.blocks[n].n_xd > 0)

    def _read_when(self) -> dict[str, frozenset]:
        """Blocks a major step needs to compute only when a reader needs them: {name: the rate
        indices whose hits read it, and "log" when the log does}.

        A block with kernels, without state, update or zero crossings, that no solver stage reads,
        is a pure function of t and its inputs; when its only readers are discrete blocks (which
        read it at their hits), other such blocks, and the log, a loop that knows the step's hits
        and whether it logs may compute it at those steps alone (W2's reference, feedforward and
        sum, read by a 1 kHz controller in a 10 kHz loop, run at 1 kHz). Between those steps its
        buffers hold an older value that nobody reads, so every number read or logged is the
        same."""
        cd = self.cd
        readers: dict[str, set[str]] = {}
        for (dst, _), (src, _) in cd.wires.items():
            if dst in self.enabled:
                readers.setdefault(src, set()).add(dst)
        when: dict[str, frozenset] = {}
        for call in reversed(cd.calls):
            name = call.block
            blk, k = cd.blocks[name], self.kernels(name)
            if (k is None or name in when or name in self.stage_read or blk.n_xc or blk.n_xd
                    or k.update is not None or k.zero_crossings is not None
                    or cd.sample_times[name].kind in ("discrete", "constant")):
                continue
            atoms: set = set()
            for reader in readers.get(name, ()):
                st = cd.sample_times[reader]
                if reader in when:
                    atoms |= when[reader]
                elif st.kind == "discrete":
                    atoms.add(self.rate_index[st])
                else:
                    break                 # read at every major step
            else:
                if any((name, o) in self.logged for o in blk.output_names()):
                    atoms.add("log")
                if atoms:
                    when[name] = frozenset(atoms)
        return when
