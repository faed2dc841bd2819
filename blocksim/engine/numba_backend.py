"""The numba backend: a plan rendered as one generated, numba-compiled module (compiled mode).

The generator writes a Python module that calls every block's kernels (Block.kernels()) as the
plan of the run says (engine/plan.py), over the run's signal and state arrays; numba compiles
it, and the module is kept in an on-disk cache keyed by the generated text, that is by the
diagram's structure (block kernels, wiring, state layout, rates), never by parameter values: a
new gain or mass reuses the compiled code. Its entry points outputs, derivatives, updates and
zero_crossings serve the scheduler's time loop (the runs no whole loop below serves); run_fixed
is the rendering of the phases of a major step (engine/major_step.py) as a whole fixed-step loop
(major steps, exact hits, Runge-Kutta stages, logging) for runs without zero crossings, returning
to Python between chunks only for the progress bar and Ctrl-C; run_adaptive
(engine/adaptive_loop.py) runs explicit Runge-Kutta runs with error control or with zero
crossings, run_stiff (engine/stiff_loop.py) radau and run_bdf (engine/bdf_loop.py) bdf without
them.

Cache folder: $BLOCKSIM_CACHE_DIR, else ~/.cache/blocksim; the generated modules are kept in its
subfolder compiled/, and numba's own cache (an index .nbi and data .nbc files per function) beside
them, in compiled/__pycache__. Delete the folder to force recompilation. The cache heals itself
and is trusted only when it should be (engine/cache_guard.py): a damaged entry is set aside as
NAME.damaged-TIMESTAMP with a one-line warning and rebuilt; a cache folder that cannot be written
(read-only, a file, no space) or is not trusted (writable by every user, or owned by another
user) is warned about and the run goes on without it. BLOCKSIM_CACHE_SHARED=group opts in to a
cache shared by a group, on a cluster's shared file system: folders and files of other users
of one of your groups are trusted, and so is a folder writable by every user that has the sticky
bit; blocksim then creates its folders group-writable (with a umask of 002).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import linecache
import os
import sys
import time as _time
import types
from pathlib import Path

import numpy as np
from numba.core.errors import NumbaError
from numba.core.dispatcher import Dispatcher

from ..blocks._kernels import argument_types, entry_point
from ..blocks.base import Block, Kernels
from ..solvers import SOLVERS
from . import adaptive_loop, cache_guard, stiff_loop
from .context import RunContext
from .loops import first_chunk, next_chunk
from .major_step import phase_handlers
from .mode import estimated_compile_time
from .plan import EVERY_STEP, OutputStep, RunPlan, plan_key
from .progress import Progress
from .run_output import RunOutput
from .source_text import block as _block, indent as _indent, stack_form, unpack_tuples
from .source_text import unpacked as _unpacked

GENERATOR_VERSION = 24
"""Bumped whenever the generated code's form changes, so old cache entries are not reused."""

NO_REFERENCE_COUNTS = ", _nrt=False)"
"""How every decorator of a generated module ends: numba counts no references to the arrays its
functions handle. Each array there is owned by the caller (the run's context, records and logs)
and outlives the call, so the counts only cost time: an atomic increment and decrement for every
view, tuple of arrays and record field a kernel call makes, a third of W1's compiled fixed-step
run (1.87 -> 1.24 ms, the same numbers). Numba refuses to compile without them what would need
them (an allocation, a returned view, in a kernel or a helper compiled inside): such a module is
used with the counts on (ModuleCode). So is every module that calls kernels from outside
blocksim (Generator.source)."""


def cache_dir() -> Path:
    """Where generated modules and numba's compiled code are kept (BLOCKSIM_CACHE_DIR overrides)."""
    root = os.environ.get("BLOCKSIM_CACHE_DIR") or Path.home() / ".cache" / "blocksim"
    return Path(root) / "compiled"


@functools.lru_cache(maxsize=1)
def library_fingerprint() -> str:
    """A hash of blocksim's own source files (paths, sizes, modification times): generated modules
    are keyed by it too, so a changed kernel is never served stale from the cache."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1(GENERATOR_VERSION.to_bytes(4, "little"))
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def missing_kernels(cd) -> list[str]:
    """Blocks that keep a compiled diagram from compiled mode: 'name (Type): what is missing'
    (the rule is Kernels.missing)."""
    problems = []
    for name, blk in cd.blocks.items():
        lacking = Kernels.missing(blk, cd.sample_times[name]) if blk.enabled else []
        if lacking:
            problems.append(f"{name} ({blk.type_name}): no compiled {', '.join(lacking)}")
    return problems


def kernels_compiled(blocks) -> bool:
    """True when numba has compiled every kernel of these blocks on this machine, in this process
    or in its disk cache (for some argument types): compiling a module that calls them then
    compiles the module alone, not the kernels' first compile (up to a minute for the robot
    dynamics)."""
    for blk in blocks:
        k = blk.runtime_kernels()
        if k is None:
            continue
        for field in dataclasses.fields(k):
            fn = getattr(k, field.name)
            if field.name == "params" or fn is None or getattr(fn, "overloads", None):
                continue
            cache = getattr(fn, "_cache", None)
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            if index is None or not os.path.exists(index):
                return False
    return True


def _import_name(fn) -> tuple[str, str]:
    """(module, name) under which a kernel can be imported by the generated code."""
    py = getattr(fn, "py_func", fn)
    module, name = py.__module__, py.__name__
    if getattr(importlib.import_module(module), name, None) is not fn:
        raise TypeError(f"kernel {module}.{name} is not a module-level function")
    return module, name


class Generator:
    """Writes the source of one plan's compiled module.

    Every entry point is written out flat, block call by block call: run_fixed holds the whole
    fixed-step loop (major outputs, logging, updates and every Runge-Kutta stage's minor outputs
    and derivatives) in one function, so numba infers and LLVM optimises each call site once
    (nesting step functions made every level re-optimise all the code below it), and the kernels,
    declared inline, cost no call at all. outputs, derivatives, updates and zero_crossings serve
    the scheduler's loop (adaptive and event runs) and are compiled only when it calls them.

    An output call of which only some outputs are read (OutputStep.wanted) uses the block's
    partial_output kernel when it has one.
    """

    def __init__(self, plan: RunPlan, blocks: dict, records: dict):
        """plan: the run's plan; the module is written for plan.compiled_as when it has one (the
        plan of every variant of the file), whose switched blocks' calls are made only when this
        run's switch flags (the last item of the parameter tuple, one per switched block: is it
        enabled here) say so."""
        plan = plan.compiled_as or plan
        self.plan = plan
        self.imports: dict[tuple[str, str], str] = {}
        self.params: list = []        # the blocks' parameter records, as they are
        self.param_index: dict[str, int] = {}
        self.kernels = {}
        for name in plan.order:
            if name in plan.enabled:
                k = blocks[name].runtime_kernels()
                if k is not None:
                    self.kernels[name] = k
                    self.param_index[name] = len(self.params)
                    self.params.append(records.get(name, k.params))
        self.switch_index = {name: j for j, name in enumerate(plan.switched)}
        self.reactions_compiled = all(
            name not in blocks or (type(blocks[name]).on_event is Block.on_event
                                   and type(blocks[name]).stop_requested is Block.stop_requested)
            for name in plan.crossings)
        """Whether every block with zero crossings reacts to its events (and says whether to
        stop at the start) in kernels: the adaptive loop then runs a run's hybrid rules itself,
        with no return to Python at events (a block's Python on_event keeps them in Python)."""
        if plan.switched:
            # a tuple, passed by value: its flags sit in registers through the loops (an array's
            # would be loaded again after every store the loop makes, as any store may alias it)
            self.params.append(tuple(bool(blocks[n].enabled) for n in plan.switched))

    def structure_key(self) -> tuple:
        """What the module's text is a function of: the plan it is written for (every field but
        the log times, which no loop's text reads), each called block's kernels (the functions,
        not their parameter values) and the number of parameter records. Two diagrams with one
        key get the same text from source()."""
        kernels = tuple((name, k.output, k.partial_output, k.derivative, k.update,
                         k.zero_crossings, k.modes, k.event, k.stop_requested)
                   for name, k in self.kernels.items())
        return plan_key(self.plan), kernels, len(self.params), self.reactions_compiled

    def _switched(self, name: str, call: str) -> str:
        """A block's call as a statement, made only when the run's flag enables the block when it
        is one of the plan's switched blocks."""
        j = self.switch_index.get(name)
        return call if j is None else f"if p[{len(self.params) - 1}][{j}]: {call}"

    def _fn(self, fn) -> str:
        key = _import_name(fn)
        if key not in self.imports:
            self.imports[key] = f"_k{len(self.imports)}"
        return self.imports[key]

    def _args(self, name: str, extra: str | None, t: str = "t", dxc: str = "dxc") -> str:
        plan = self.plan
        a, b = plan.xc_slices[name]
        c, d = plan.xd_slices[name]
        us = "".join(f"s[{i}], " for i in plan.inputs_of[name])
        args = [t, f"xc[:, {a}:{b}]", f"xd[:, {c}:{d}]", f"({us})"]
        if extra == "y":
            args.append("(" + "".join(f"s[{i}], " for i in plan.outputs_of[name]) + ")")
        elif extra == "dxc":
            args.append(f"{dxc}[:, {a}:{b}]")
        elif extra == "g":
            e, f = plan.zc_slices[name]
            args.append(f"g[:, {e}:{f}]")
        elif extra == "mask":
            e, f = plan.zc_slices[name]
            args.append(f"ev_mask[:, {e}:{f}]")
        args.append(f"p[{self.param_index[name]}]")
        return ", ".join(args)

    def _output_call(self, step: OutputStep, t: str) -> str:
        k = self.kernels[step.block]
        if k.partial_output is not None and not all(step.wanted):
            flags = "(" + "".join(f"{w}, " for w in step.wanted) + ")"
            call = f"{self._fn(k.partial_output)}({self._args(step.block, 'y', t)}, {flags})"
        else:
            call = f"{self._fn(k.output)}({self._args(step.block, 'y', t)})"
        return self._switched(step.block, call)

    def output_body(self, major: str | None, t: str = "t", minor: str = "stage",
                    stage_guard: str | None = None, lazy: bool = False,
                    unlogged_guard: str | None = None, memo: bool = False) -> list[str]:
        """Statements computing the outputs in sorted order. major: the expression telling a major
        step (discrete blocks then run at their hits, held blocks every time), or None for minor
        evaluations alone. minor: which varying blocks run at minor evaluations: "stage" (those a
        solver stage reads) or "all" (for logging and zero crossings between major steps).
        stage_guard: a condition on the stage-read blocks' calls (the loop's "not the first
        stage", when that stage repeats the major step). lazy: calls a reader needs at some major
        steps only run at those (the fixed-step loop, which knows log_now). unlogged_guard: a
        condition on the calls a log sample does not need (not OutputStep.log_read) made at every
        evaluation otherwise (the adaptive loop's "not a log sample", whose output site serves
        the major steps, the crossing functions and the log samples). memo: a call of t alone
        (OutputStep.time_only) is left out at the time of its last evaluation, which its local
        t_memo<k> keeps (entry_locals: NaN at the function's entry; one local per call, shared by
        every site that renders it in the function, so a site that leaves a call out, or
        computes it at another time, keeps the others right)."""
        lines = []
        for k, step in enumerate(self.plan.output_steps):
            stage = step.varies if minor == "all" else step.at_stages
            if major is None and not stage:
                continue
            body = [self._output_call(step, t)]
            if memo and step.time_only:
                body = [f"if {t} != t_memo{k}:", "    " + body[0], f"    t_memo{k} = {t}"]
            if major is not None and step.modes:
                # the modes first, at major steps only: every other evaluation holds them
                modes = self._switched(step.block, f"{self._fn(self.kernels[step.block].modes)}"
                                                   f"({self._args(step.block, None, t)})")
                lines += [f"if {major}" + (f" and hits[{step.rate}]:" if step.rate != EVERY_STEP
                                           else ":"), "    " + modes]
            guard = None
            if major is not None and step.rate != EVERY_STEP:
                guard = f"{major} and hits[{step.rate}]"
            elif major is not None and not stage and lazy and step.lazy:
                atoms = [f"hits[{r}]" for r in step.when_rates] + \
                    (["log_now"] if step.when_logged else [])
                guard = f"{major} and ({' or '.join(atoms)})"
            elif major is not None and not stage:
                guard = major
            elif stage_guard is not None:
                guard = stage_guard
            elif unlogged_guard is not None and not step.log_read:
                guard = unlogged_guard
            lines += body if guard is None else [f"if {guard}:"] + ["    " + ln for ln in body]
        return lines

    def entry_locals(self, memo: bool) -> str:
        """A rendered loop's first statements: the signal and parameter tuples' items unpacked
        into locals, and with memo the memo locals of output_body(memo=True), no evaluation
        yet (NaN)."""
        memos = [f"t_memo{k} = np.nan" for k, step in enumerate(self.plan.output_steps)
                 if memo and step.time_only]
        return unpack_tuples(len(self.plan.slots), len(self.params), 4) + \
            "".join(f"\n    {line}" for line in memos)

    def derivative_body(self, t: str = "t", dxc: str = "dxc") -> list[str]:
        """The derivative calls, writing into the (B, n_xc) array named dxc."""
        return [self._switched(name, f"{self._fn(self.kernels[name].derivative)}"
                                     f"({self._args(name, 'dxc', t, dxc)})")
                for name in self.plan.derivatives]

    def update_body(self) -> list[str]:
        lines = []
        for u in self.plan.updates:
            call = self._switched(u.block, f"{self._fn(self.kernels[u.block].update)}"
                                           f"({self._args(u.block, None)})")
            lines += [call] if u.rate == EVERY_STEP else [f"if hits[{u.rate}]:", "    " + call]
        return lines

    def record_body(self) -> list[str]:
        return [f"copy_to_log(logs[{j}], log_pos, s[{slot}])"
                for j, (_, slot) in enumerate(self.plan.log)]

    def zero_crossing_body(self, t: str = "t") -> list[str]:
        """The zero-crossing calls at time `t`, writing into the (B, n_zc) array named g."""
        return [self._switched(name, f"{self._fn(self.kernels[name].zero_crossings)}"
                                     f"({self._args(name, 'g', t)})")
                for name in self.plan.crossings]

    def fire_events_body(self) -> list[str]:
        """Simulation.fire_events at time t for the located crossings in ev_mask: each block with
        one, in the plan's order, notes its events (ev_times, ev_rows: the block's index in
        plan.crossings, the function, the member) and reacts (its event kernel); stop_now and
        stopped_by (that index + 1) when one asks to stop."""
        lines = ["stop_now = False"]
        for k, name in enumerate(self.plan.crossings):
            e, f = self.plan.zc_slices[name]
            body = [f"n_events = note_events(ev_times, ev_rows, n_events, t, {k}, ev_mask, "
                    f"{e}, {f})"]
            event = self.kernels[name].event
            if event is not None:
                body += [f"if {self._fn(event)}({self._args(name, 'mask')}):",
                         "    stop_now = True", f"    stopped_by = {k + 1}"]
            lines += self._guarded(name, f"any_fired(ev_mask, {e}, {f})", body)
        return lines

    def stop_at_start_body(self) -> list[str]:
        """Simulation._stop_requested_at_start: the first block (the plan's order) whose
        stop_requested kernel says so sets stop_now and stopped_by."""
        lines = []
        for k, name in enumerate(self.plan.crossings):
            check = self.kernels[name].stop_requested
            if check is not None:
                lines += self._guarded(name, f"not stop_now and {self._fn(check)}"
                                             f"({self._args(name, None)})",
                                       ["stop_now = True", f"stopped_by = {k + 1}"])
        return lines

    def _guarded(self, name: str, condition: str, body: list[str]) -> list[str]:
        j = self.switch_index.get(name)
        if j is not None:
            condition = f"p[{len(self.params) - 1}][{j}] and {condition}"
        return [f"if {condition}:"] + _indent(body, 4)

    # ---- the phases of a major step in the fixed-step loop (engine/major_step.py) ---------------
    # "outputs" and "advance" are the loop's frame (the outputs of the major pass and of every
    # stage are one block of calls; advance is the Runge-Kutta step); the phases between them
    # are rendered in MAJOR_STEP's order inside the loop's major pass, at 16 spaces.
    def _render_events_at_t(self) -> list[str]:
        if self.plan.crossings:
            raise NotImplementedError("the fixed-step loop runs plans without zero crossings")
        return []

    def _render_log(self) -> list[str]:
        return ["if log_now:"] + _indent(self.record_body(), 4) + ["    log_pos += 1"]

    def _render_updates(self) -> list[str]:
        return self.update_body()

    def _render_finite_check(self) -> list[str]:
        return ["if not (all_finite(xc) and all_finite(xd)):", "    status = 2", "    break"]

    def _render_stop(self) -> list[str]:
        return ["if k == last_k:", "    status = 1", "    break"]

    def fixed_loop(self) -> str:
        """run_fixed: the phases of MAJOR_STEP rendered, in order, as one fixed-step loop; and the
        same loop on the stack (source_text.stack_form): run_fixed_one for a run of one member,
        run_fixed_chunk for a batch, or a part of one, of at most CHUNK_MEMBERS members."""
        frame = {"outputs": "frame", "advance": "frame"}
        phases = phase_handlers("numba backend", lambda name: frame.get(name) or getattr(
            self, "_render_" + name, None))
        if phases[0][0] != "outputs" or phases[-1][0] != "advance":
            raise NotImplementedError("the fixed-step loop's frame puts outputs first and the "
                                      "advance last")
        major = []
        for name, render in phases[1:-1]:
            major += [f"# {name}"] + render()
        guard = "i != 0" if self.plan.first_stage_repeats_major else None
        # the loop reads the tuples' items from locals unpacked once at entry (an item taken from
        # a tuple costs a reference count each time)
        parts = dict(
            unpack=self.entry_locals(memo=True),
            outputs=_unpacked(_block(self.output_body("major", "ti", stage_guard=guard,
                                                      lazy=True, memo=True), 12)),
            major_phases=_unpacked(_block(major, 16)),
            derivatives=_unpacked(_block(self.derivative_body("ti", "K[i]"), 12)))
        # the same loop for one member, and for a chunk of members, its signals, states and
        # stage rows on its own stack (engine/stack_arrays.py), when they fit
        plan, widths = self.plan, [slot.width for slot in self.plan.slots]

        def on_stack(name, members):
            arrays = {"xc": (members, plan.n_xc), "xd": (members, plan.n_xd),
                      "K": (FIXED_STAGE_ROWS, members, plan.n_xc), "x0": (members, plan.n_xc)}
            return stack_form(FIXED_LOOP, name, parts, widths, arrays, frozenset({"K"}), members)
        return FIXED_LOOP.format(name="run_fixed", prologue="", **parts) \
            + on_stack("run_fixed_one", 1) + on_stack("run_fixed_chunk", CHUNK_MEMBERS)

    def source(self) -> str:
        functions = [
            ("def outputs(t, hits, major, xc, xd, s, p):", self.output_body("major", minor="all")),
            ("def derivatives(t, xc, xd, dxc, s, p):",
             self.output_body(None) + self.derivative_body()),
            ("def updates(t, hits, xc, xd, s, p):", self.update_body()),
            ("def zero_crossings(t, xc, xd, g, s, p):", self.zero_crossing_body()),
        ]
        # both whole-run loops, whichever solver this run has: the module's text stays that of the
        # diagram's structure (a run under another solver reuses it), and numba compiles a
        # function only when it is first called
        loop = "" if self.plan.crossings else self.fixed_loop()
        if adaptive_loop.renderable(self.plan):
            loop += adaptive_loop.render(self)
        if stiff_loop.renderable(self.plan):
            loop += stiff_loop.render(self)
        lines = [f'"""Generated by blocksim (generator {GENERATOR_VERSION}) for one diagram '
                 'structure; do not edit."""',
                 f"# library fingerprint {library_fingerprint()}",
                 "import numpy as np", "from numba import njit",
                 "import math",
                 "from blocksim.solvers.stages import memberwise_error_norm, memberwise_stage_sum",
                 "from blocksim.solvers.step_control import (hermite_at, initial_step_choice, "
                 "initial_step_probe, power_series_at, step_after_accept, step_after_reject)",
                 "from blocksim.engine.loops import all_finite, copy1d, copy_to_log, next_major_time, "
                 "rate_hits, stash, unchanged, unstash", stiff_loop.IMPORTS,
                 "from blocksim.engine.stack_arrays import stack_array3, stack_matrix",
                 "from blocksim.solvers.events import copy2d"]
        if adaptive_loop.renderable(self.plan):
            lines.append("from blocksim.solvers.events import (any_fired, any_zero, "
                         "baseline_after_event, baseline_from_probe, baseline_needed, "
                         "clear_fired, crossed_into, crossing_mask, "
                         "crossing_search_begin, crossing_search_next, fired_before, "
                         "mark_fired, note_events, probe_needed)")
            lines.append("from blocksim.engine.loops import tick_at_or_before")
        for (module, name), alias in sorted(self.imports.items(), key=lambda kv: kv[1]):
            lines.append(f"from {module} import {name} as {alias}")
        for header, stmts in functions:
            lines += ["", "", f"@njit(cache=True, error_model='numpy', no_cfunc_wrapper=True{NO_REFERENCE_COUNTS}", header]
            lines += _indent(stmts, 4) or ["    pass"]
        source = "\n".join(lines) + "\n" + loop
        if source.count("@njit(") != source.count(NO_REFERENCE_COUNTS):
            raise AssertionError("a decorator of the generated module does not end with "
                                 f"{NO_REFERENCE_COUNTS!r}")
        return source if self.own_kernels_only() else with_reference_counts(source)

    def own_kernels_only(self) -> bool:
        """True when every kernel the module calls is blocksim's own (none from a plugin).

        A function numba compiles on its own, first reached from a function without reference
        counts, is compiled without them too (numba passes the flag on to callees it compiles
        for a caller). One that returns one of its array arguments would then, called later from
        code that counts, release a reference it never took, and free an array still in use.
        blocksim's own helpers return numbers, never arrays (tests/test_architecture.py checks
        it); a plugin's may not, so a module with a plugin's kernels keeps the counts."""
        return all(module == "blocksim" or module.startswith("blocksim.")
                   for module, _ in self.imports)


FIXED_STAGE_ROWS = max(len(solver.tableau.b) + 1 for solver in SOLVERS.values()
                       if not solver.adaptive and hasattr(solver, "tableau"))
"""The rows of K (the stages and one more) of the fixed-step solver with the most stages: those
of run_fixed_one's stack, whichever such solver the run has."""

CHUNK_MEMBERS = 8
"""The most members of run_fixed_chunk, the fixed-step loop over a chunk of members on its own
stack: a compiled fixed-step batch runs in chunks of this many members (engine/simulate.py),
each chunk's arrays in registers and the stack where the batch's own would pass through memory.
W2, per member on one thread: 5.1 ms in one loop over the batch, 4.1 ms in chunks of 4, 8 or 16."""

FIXED_LOOP = """

@njit(cache=True, error_model='numpy', nogil=True, no_cfunc_wrapper=True, _nrt=False)
def {name}(k0, k1, last_k, num0, dnum, den, step_ticks, t_stop, per, off, hits,
              xc, xd, dxc, s, p, logs, log_stride, log_pos, A, b, c, K, x0):
    \"\"\"Major steps k0..k1-1 on the fixed grid, each the phases of blocksim's major step
    (engine/major_step.py) followed by one explicit Runge-Kutta step of xc (the arithmetic of
    solvers.explicit.rk_step with solvers.stages.memberwise_stage_sum; the stage states are
    combined straight into xc, which x0 keeps the step's start of, and the derivatives written
    straight into the stage rows K[i]; dxc is left alone).

    Pass i = -1 of the inner loop is the major step (outputs with discrete hits, then the phases
    after them), passes 0.. are the Runge-Kutta stages (minor outputs, derivatives): every block
    call is written once, which is what numba's compile time grows with.

    Returns (status, next k, log position): status 0 = chunk done, 1 = reached the stop time,
    2 = a state became NaN/Inf at step k (the caller names the block).\"\"\"{prologue}
{unpack}
    n_stages = b.shape[0]
    stages = K.reshape((K.shape[0], -1))
    x0_flat = x0.reshape(-1)
    xc_flat = xc.reshape(-1)
    k = k0
    status = 0
    while k < k1:
        n = k * step_ticks
        t = t_stop if k == last_k else (num0 + n * dnum) / den
        t_new = t
        h = 0.0
        rate_hits(n, per, off, hits)
        log_now = k % log_stride == 0 or k == last_k
        for i in range(-1, n_stages):
            major = i < 0
            ti = t
            if i > 0:
                memberwise_stage_sum(x0_flat, h, A[i], stages, i, xc_flat)
                ti = t_new if c[i] == 1.0 else min(t + c[i] * h, t_new)
            # outputs
{outputs}
            if major:
{major_phases}
                # advance
                t_new = t_stop if k + 1 == last_k else (num0 + (k + 1) * step_ticks * dnum) / den
                if xc.shape[1] == 0:
                    break
                h = t_new - t
                copy1d(x0_flat, xc_flat)
                continue
{derivatives}
        if status != 0:
            break
        if xc.shape[1] > 0:
            memberwise_stage_sum(x0_flat, h, b, stages, n_stages, xc_flat)
        k += 1
    return status, k, log_pos
"""


def module_name(source: str) -> str:
    """The name of the generated module of text `source` (its file is NAME.py in cache_dir())."""
    return f"blocksim_diagram_{hashlib.sha1(source.encode()).hexdigest()[:20]}"


def load_module(source: str):
    """The generated module of `source`, from the cache folder (written there once, set aside and
    written anew when damaged), its functions cached by numba beside it; or, when the cache cannot
    be used (engine/cache_guard.py says why, in a warning), the module built in memory with numba's
    cache off, so the run goes on without the cache."""
    name = module_name(source)
    if name in sys.modules:
        return sys.modules[name]
    folder = cache_dir()
    shared = cache_guard.sharing()
    path = folder / f"{name}.py"
    module = None
    try:
        why = cache_guard.prepare_folder(folder, shared) or \
            cache_guard.store_source(path, source.encode(), shared)
        if why is None:
            module, why = _cached_module(name, source, path, shared)
    except OSError as err:                  # e.g. a folder on the way that may not be read
        why = f"{err.filename or folder} cannot be used ({err.strerror or err})"
    if module is None:
        cache_guard.warn(f"compiled cache not used: {why}; this run goes on without it (compiled "
                         "code is then built anew in every run)")
        text = _uncached(source)
        filename = f"<blocksim generated module {name}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        module = _exec_module(name, text, filename, file=None)
    return module


def _compiled_entry(dispatcher, signature):
    """The entry point of dispatcher's overload for signature, compiled first when it has none."""
    overload = dispatcher.overloads.get(signature)
    return overload.entry_point if overload is not None else dispatcher.compile(signature)


def _cached_module(name: str, source: str, path: Path, shared: str):
    """(module, None) for the generated module executed from its file in the cache folder, with
    numba's cache for its functions; (None, why not) when numba's cache folder for it, or one of
    its files there, is not trusted, or numba finds no folder it can write."""
    pycache = path.parent / "__pycache__"
    try:
        if not pycache.exists():
            pycache.mkdir(mode=cache_guard.FOLDER_MODE[shared])
    except OSError:
        pass                  # another process made it, or numba reports the folder below
    try:
        module = _exec_module(name, source, str(path), file=str(path))
    except RuntimeError as err:                         # numba: "cannot cache function ..."
        return None, f"numba cannot write a cache folder for {path} ({err})"
    own = next(fn for fn in vars(module).values()      # a function of its own, not imported
               if isinstance(fn, Dispatcher) and fn.py_func.__module__ == name)
    numba_folder = Path(own.stats.cache_path)
    why = cache_guard.untrusted_entries(numba_folder, name + ".", shared)
    if why is not None:
        sys.modules.pop(name, None)
        return None, why
    return module, None


def _exec_module(name: str, source: str, filename: str, file: str | None):
    """The module `name` executed from `source` (compiled with `filename` as its file name, which
    numba's cache locates and stamps), registered in sys.modules. The code is the generated text
    itself, not a bytecode file: no .pyc is kept that could be damaged."""
    module = types.ModuleType(name)
    if file is not None:
        module.__file__ = file
    sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def with_reference_counts(source: str) -> str:
    """The generated module's text with numba's reference counts on in every function."""
    return source.replace(NO_REFERENCE_COUNTS, ")")


def _uncached(source: str) -> str:
    """The generated module's text with numba's cache off (a run without the cache)."""
    text = source.replace("@njit(cache=True,", "@njit(cache=False,")
    if text.count("cache=False") != source.count("@njit(cache=True,"):
        raise AssertionError("the generated module's decorators are not those of Generator")
    return text


class ModuleCode:
    """A plan's generated module and its functions compiled so far, shared by the backends of a
    per-member batch.

    The module's functions count no references (NO_REFERENCE_COUNTS). When numba refuses one of
    them for that (a plugin's kernel that allocates, or returns a view), the module with the
    counts on takes its place; it stays the choice in later processes, which find its file in
    the cache folder. blocksim's own kernels never need it: each is compiled without counts
    whoever compiles it first (forceinline=True, _nrt=False), and a helper of theirs that
    allocates is compiled with them (_nrt=True), its arrays its own (tests/test_architecture.py)."""

    def __init__(self, source: str):
        self.source = source
        self.counted_source = with_reference_counts(source)
        self.counts = source == self.counted_source
        if not self.counts and (cache_dir() / f"{module_name(self.counted_source)}.py").exists():
            source, self.counts = self.counted_source, True
        self.module = load_module(source)
        self.entries: dict[tuple, object] = {}

    def entry(self, name: str, args: tuple, compile):
        """The entry point compile(dispatcher, signature) gives for the module's function `name`
        and the numba types of args (argument_types), compiled (or loaded from numba's cache,
        healing a damaged entry) once per signature: diagrams of one structure share the module,
        and their records' types may differ (an integer parameter where another has a float)."""
        signature = argument_types(getattr(self.module, name), args)
        fn = self.entries.get((name, signature))
        if fn is None:
            try:
                fn = self._compiled(name, signature, compile)
            except NumbaError:
                if self.counts:
                    raise
                self.module, self.counts = load_module(self.counted_source), True
                fn = self._compiled(name, signature, compile)
            self.entries[name, signature] = fn
        return fn

    def _compiled(self, name: str, signature: tuple, compile):
        dispatcher = getattr(self.module, name)
        return cache_guard.compile_healing(lambda: compile(dispatcher, signature),
                                           f"{self.module.__name__}.{name}")


_CODES: dict[tuple, ModuleCode] = {}
"""The ModuleCode of each structure met in this process (Generator.structure_key): a newly loaded
diagram of a known structure, whatever its parameter values, skips writing the module's text
(about a millisecond for W1) and finds its bound entry points."""


def module_code(gen: "Generator") -> ModuleCode:
    """The ModuleCode of the module gen writes, made on the first request for its structure, and
    made anew (from the text kept) when its module has left sys.modules: it is then loaded from
    the cache folder again, as in a new process."""
    key = gen.structure_key()
    code = _CODES.get(key)
    if code is None or sys.modules.get(code.module.__name__) is not code.module:
        if len(_CODES) >= 256:              # a long session of many structures: start over
            _CODES.clear()
        code = _CODES[key] = ModuleCode(gen.source() if code is None else code.source)
    return code


class NumbaBackend:
    """Evaluations of a plan in its generated module (the PythonBackend's methods, with the same
    numbers), and the whole fixed-step loop (run_loop) where the run allows it."""

    mode = "compiled"
    compiled = True
    """Its plan is made with the plan of the module it runs (make_plan(compiled=True)): a file's
    variants that switch blocks share one module (RunPlan.compiled_as)."""

    def __init__(self, plan: RunPlan, context: RunContext, blocks: dict, records: dict,
                 like: "NumbaBackend | None" = None):
        """like: a backend of the same plan (another member of a per-member batch), whose module
        and bound entry points this one shares: only its arrays and parameter records are its
        own (writing the module's source and typing the loops' arguments cost milliseconds)."""
        self.plan = plan
        self.context = context
        self.blocks = blocks
        gen = Generator(plan, blocks, records)
        self.module_plan = gen.plan
        """The plan the module is written for (RunPlan.compiled_as): what its loops read."""
        self.p = tuple(gen.params)
        self.code = module_code(gen) if like is None else like.code
        self._bound: dict[str, object] = {}
        """The entry points this backend called, by function name: its arrays and records keep
        their types for its life, so it types them once (ModuleCode.entry), not at every run."""
        self.s = context.signals
        self.nohits = np.zeros(len(plan.timebase.rates), dtype=np.bool_)
        solver = SOLVERS[plan.solver]
        self.runs_whole_loop = not (solver.adaptive or plan.crossings
                                    or not hasattr(solver, "tableau"))
        """True when the run is the compiled fixed-step loop: every member then steps on the
        same grid with nothing shared (no adaptive step size, no event), so a batch may be split
        into parts run apart (Simulator's threads) with the same numbers."""
        # a run of one member, or a chunk of a few, on its own stack when the module has it
        form = "_one" if plan.batch == 1 else "_chunk" if plan.batch <= CHUNK_MEMBERS else ""
        fixed, adaptive = (name + form if hasattr(self.module, name + form) else name
                           for name in ("run_fixed", "run_adaptive"))
        self.loop = fixed if self.runs_whole_loop else \
            adaptive if adaptive_loop.supports(plan, solver) else \
            stiff_loop.loop_for(plan, solver)
        """The module's function that runs the whole time loop of this run (None: the
        scheduler's loop runs it, calling the module's functions)."""

    @property
    def module(self):
        """The generated module this backend runs."""
        return self.code.module

    def compile_estimate(self) -> float | None:
        """The estimated seconds of compiling this backend's module (engine/mode.py,
        estimated_compile_time), or None while a kernel of the blocks it calls is not compiled on
        this machine yet."""
        plan = self.module_plan
        if not kernels_compiled(self.blocks[name] for name in plan.enabled):
            return None
        return estimated_compile_time(plan)

    def is_cached(self) -> bool:
        """True when numba has compiled code for this module on disk (any signature; whether it
        loads is found when it is loaded, which heals a damaged entry)."""
        entry = self.loop or "derivatives"
        folder = getattr(self.module, entry).stats.cache_path     # None: built without the cache
        return folder is not None and \
            any(Path(folder).glob(f"{self.module.__name__}.{entry}-*.nbi"))

    def _bound_entry(self, name: str, args: tuple, compile, code: "ModuleCode | None" = None):
        """The module's function `name` (or code's, another generated module's) bound at this
        backend's first call of it (ModuleCode.entry, for the types of args), and kept under its
        name."""
        fn = self._bound.get(name)
        if fn is None:
            fn = self._bound[name] = (code or self.code).entry(name, args, compile)
        return fn

    def _entry(self, name: str, args: tuple):
        """The module's function `name` bound to the types of (t, *args) at its first call (the
        scheduler's loop calls it every step; numba's typing of the records would cost more)."""
        return self._bound_entry(name, args,
                                 lambda dispatcher, signature: entry_point(dispatcher, args))

    def loop_entry(self, name: str, args: tuple):
        """The module's whole-run loop `name` (run_fixed, run_adaptive) compiled, or loaded from
        numba's cache (healing a damaged entry), for arguments of these types, and bound once per
        backend: the dispatcher's typing of its arguments (the signal and record tuples) would
        cost a millisecond at every call."""
        return self._bound_entry(name, args, _compiled_entry)

    def members_entry(self, loop, args: tuple):
        """The loop over a part's members (engine/adaptive_members.py, MembersLoop `loop`)
        compiled for arguments of these types, bound once per backend as loop_entry binds."""
        return self._bound_entry("run_adaptive_members", args, _compiled_entry, loop.code)

    def outputs_major(self, t, hits):
        ctx = self.context
        args = (hits, True, ctx.xc, ctx.xd, self.s, self.p)
        self._entry("outputs", args)(t, *args)

    def outputs_minor(self, t):
        ctx = self.context
        args = (self.nohits, False, ctx.xc, ctx.xd, self.s, self.p)
        self._entry("outputs", args)(t, *args)

    def outputs_logged(self, t):
        """A log sample between major steps: every varying block here (the module's outputs);
        the rendered adaptive loop computes only the logged ones (OutputStep.log_read)."""
        self.outputs_minor(t)

    def rhs(self, t, x):
        ctx = self.context
        np.copyto(ctx.xc, x)
        args = (ctx.xc, ctx.xd, ctx.dxc, self.s, self.p)
        self._entry("derivatives", args)(t, *args)
        return ctx.dxc.copy()

    def zero_crossings(self, t):
        ctx = self.context
        args = (ctx.xc, ctx.xd, ctx.g, self.s, self.p)
        self._entry("zero_crossings", args)(t, *args)
        return ctx.g.copy()

    def run_updates(self, t, hits):
        ctx = self.context
        args = (hits, ctx.xc, ctx.xd, self.s, self.p)
        self._entry("updates", args)(t, *args)

    def run_loop(self, sim) -> RunOutput | list | None:
        """The run of Simulation sim (started: initial states and constant outputs set) in the
        module's own loop, chunk by chunk (run_fixed, or run_adaptive: engine/adaptive_loop.py);
        a part of a per-member batch, its members one after another (engine/adaptive_members.py:
        a list of segments of its members' outputs); None when its times are beyond exact float
        integers (the scheduler's loop then runs it)."""
        if sim.members_loop is not None:
            loop, alone = sim.members_loop
            return loop.run(self, sim, alone)
        if self.loop in ("run_adaptive", "run_adaptive_one"):
            return adaptive_loop.run(self, sim)
        if self.loop in stiff_loop.LOOPS.values():
            return stiff_loop.run(self, sim)
        s, tb, ctx = sim.settings, self.plan.timebase, self.context
        tableau = SOLVERS[s.solver].tableau
        step_ticks = self.plan.step_ticks
        span = (s.stop - s.start) / s.step
        last_k = int(span) if span.denominator == 1 else int(span) + 1
        num0, dnum, den = tb.integer_form
        if max(abs(num0), abs(dnum) * step_ticks * (last_k + 1), den) >= 2 ** 53:
            return None
        log_stride = int(s.log_every / s.step)
        # a period or offset beyond the run's last tick hits as that tick would (int64-safe)
        beyond = step_ticks * (last_k + 1) + 1
        per = np.array([min(r.period, beyond) for r in tb.rates], dtype=np.int64)
        off = np.array([min(r.offset, beyond) for r in tb.rates], dtype=np.int64)
        hits = np.zeros(len(tb.rates), dtype=np.bool_)
        B, n = ctx.xc.shape
        K = np.zeros((len(tableau.b) + 1, B, n))
        x0 = np.zeros((B, n))
        logs = tuple(sim.recorder.data[name] for name, _ in sim.recorder.sources)
        progress = Progress(s.start, s.stop, s.progress)
        k, log_pos, status, interrupted = 0, 0, 0, False
        chunk = first_chunk(B * n, 64)

        def args(k0, k1, log_pos):
            return (k0, k1, last_k, num0, dnum, den, step_ticks, float(s.stop), per, off, hits,
                    ctx.xc, ctx.xd, ctx.dxc, self.s, self.p, logs, log_stride, log_pos,
                    tableau.A, tableau.b, tableau.c, K, x0)
        try:
            loop = self.loop_entry(self.loop, args(0, 1, 0))
            while status == 0:
                if sim.stop_requested:
                    interrupted = True
                    break
                started = _time.perf_counter()
                status, k, log_pos = loop(*args(k, min(k + chunk, last_k + 1), log_pos))
                elapsed = _time.perf_counter() - started
                chunk = next_chunk(chunk, elapsed, 16)
                progress.update(float(s.start) + k * float(s.step), force=True)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            progress.close()
        sim.recorder.count = log_pos
        if status == 2:
            sim.check_finite(tb.time(k * step_ticks) if k != last_k else float(s.stop))
        t_log, data = sim.recorder.finished()
        stats = {"major_steps": k + 1, "nsteps": k, "mode": "compiled"}
        return RunOutput(t_log, data, [], stats, interrupted, None)
