"""Compiled mode: one generated, numba-compiled step function per diagram structure.

The generator writes a Python module that calls every block's kernels (Block.kernels()) in
sorted order over the run's signal and state arrays, numba compiles it, and the module is kept
in an on-disk cache keyed by the generated text, that is by the diagram's structure (block
kernels, wiring, state layout, rates), never by parameter values: a new gain or mass reuses
the compiled code. Fixed-step runs of diagrams without zero crossings execute their whole time
loop (major steps, exact hits, Runge-Kutta stages, logging) in compiled code, returning to
Python between chunks only for the progress bar and Ctrl-C; other runs use the scheduler's
loop with compiled output, derivative, update and zero-crossing functions.

Cache folder: $BLOCKSIM_CACHE_DIR, else ~/.cache/blocksim (numba's own cache sits beside the
generated files, in __pycache__). Delete the folder to force recompilation.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import re
import sys
import time as _time
from pathlib import Path

import numpy as np

from ..blocks._kernels import entry_point
from ..blocks.base import Kernels
from ..solvers import SOLVERS
from .scheduler import RunOutput, Simulation

CHUNK_SECONDS = 0.2
"""Wall time between returns to Python in the compiled fixed-step loop (progress, Ctrl-C)."""

GENERATOR_VERSION = 6
"""Bumped whenever the generated code's form changes, so old cache entries are not reused."""


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


def _import_name(fn) -> tuple[str, str]:
    """(module, name) under which a kernel can be imported by the generated code."""
    py = getattr(fn, "py_func", fn)
    module, name = py.__module__, py.__name__
    if getattr(importlib.import_module(module), name, None) is not fn:
        raise TypeError(f"kernel {module}.{name} is not a module-level function")
    return module, name


class Generator:
    """Writes the source of one diagram's compiled module.

    Every entry point is written out flat, block call by block call: run_fixed holds the whole
    fixed-step loop (major outputs, logging, updates and every Runge-Kutta stage's minor outputs
    and derivatives) in one function, so numba infers and LLVM optimises each call site once
    (nesting step functions made every level re-optimise all the code below it), and the kernels,
    declared inline, cost no call at all. outputs, derivatives, updates and zero_crossings serve
    the scheduler's loop (adaptive and event runs) and are compiled only when it calls them.

    An output call none of whose outputs is read (by a wire into an enabled block, or by the log)
    is left out, unless the block keeps discrete state or zero crossings; a call of which only some
    outputs are read uses the block's partial_output kernel when it has one.
    """

    def __init__(self, sim: Simulation):
        self.sim = sim
        cd = sim.cd
        self.imports: dict[tuple[str, str], str] = {}
        self.signals: list[np.ndarray] = []
        self._signal_index: dict[int, int] = {}
        for buf in sim.out_bufs.values():
            self._signal(buf)
        self.params: list[tuple] = []        # the blocks' parameter records, as they are
        self.param_index: dict[str, int] = {}
        self.kernels = {}
        for name in sim.order:
            blk = cd.blocks[name]
            if blk.enabled:
                k = blk.runtime_kernels()
                if k is not None:
                    self.kernels[name] = k
                    self.param_index[name] = len(self.params)
                    self.params.append(sim.records.get(name, k.params))
        self.logged = [self._signal(buf) for _, buf in sim.recorder.sources]
        self.rate_index = {r.sample_time: i for i, r in enumerate(sim.timebase.rates)}
        logged = {id(buf) for _, buf in sim.recorder.sources}
        self.logged_outputs = {key for key, buf in sim.out_bufs.items() if id(buf) in logged}
        self.read = self._read_outputs()
        self.stage_read = self._read_at_stages()
        self.read_when = self._read_when()

    def _read_outputs(self) -> set[tuple[str, str]]:
        """(block, output) pairs some enabled block or the log reads."""
        cd = self.sim.cd
        return {src for (dst, _), src in cd.wires.items() if cd.blocks[dst].enabled} \
            | self.logged_outputs

    def _read_at_stages(self) -> set[str]:
        """Varying blocks whose outputs a solver stage reads: those feeding, through varying
        blocks, an input of a block with continuous states. The others (a reference read only by
        a discrete controller, a signal only logged) are computed at major steps alone: between
        them nobody reads them, and each major step recomputes them before any reader."""
        cd = self.sim.cd
        stack = [n for n in self.kernels if cd.blocks[n].n_xc > 0]
        seen, needed = set(), set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            for port in cd.blocks[name].input_names():
                src = cd.wires.get((name, port))
                if src is not None and src[0] in cd.varying and cd.blocks[src[0]].enabled:
                    needed.add(src[0])
                    stack.append(src[0])
        return needed

    def _read_when(self) -> dict[str, str]:
        """Blocks computed at major steps only when a reader needs them: {name: condition}.

        A block without state, update or zero crossings that no solver stage reads is a pure
        function of t and its inputs; when its only readers are discrete blocks (which read it
        at their hits), other such blocks, and the log, the loop computes it at the major steps
        where one of them reads (W2's reference, feedforward and sum, read by a 1 kHz controller
        in a 10 kHz loop, run at 1 kHz). Between those steps its buffers hold an older value that
        nobody reads, so every number read or logged is the same."""
        cd = self.sim.cd
        readers: dict[str, set[str]] = {}
        for (dst, _), (src, _) in cd.wires.items():
            if cd.blocks[dst].enabled:
                readers.setdefault(src, set()).add(dst)
        when: dict[str, frozenset[str]] = {}
        for call in reversed(cd.calls):
            name = call.block
            blk, k = cd.blocks[name], self.kernels.get(name)
            if (k is None or name in when or name in self.stage_read or blk.n_xc or blk.n_xd
                    or k.update is not None or k.zero_crossings is not None
                    or cd.sample_times[name].kind in ("discrete", "constant")):
                continue
            atoms: set[str] = set()
            for reader in readers.get(name, ()):
                st = cd.sample_times[reader]
                if reader in when:
                    atoms |= when[reader]
                elif st.kind == "discrete":
                    atoms.add(f"hits[{self.rate_index[st]}]")
                else:
                    break                 # read at every major step
            else:
                if any((name, o) in self.logged_outputs for o in blk.output_names()):
                    atoms.add("log_now")
                if atoms:
                    when[name] = frozenset(atoms)
        return {name: " or ".join(sorted(atoms)) for name, atoms in when.items()}

    def _signal(self, arr: np.ndarray) -> int:
        key = id(arr)
        if key not in self._signal_index:
            self._signal_index[key] = len(self.signals)
            self.signals.append(arr)
        return self._signal_index[key]

    def _fn(self, fn) -> str:
        key = _import_name(fn)
        if key not in self.imports:
            self.imports[key] = f"_k{len(self.imports)}"
        return self.imports[key]

    def _args(self, name: str, extra: str | None, t: str = "t", dxc: str = "dxc") -> str:
        cd, sim = self.sim.cd, self.sim
        a, b = cd.xc_slices[name]
        c, d = cd.xd_slices[name]
        _, _, u, y, _, _ = sim.views[name]
        us = "".join(f"s[{self._signal(arr)}], " for arr in u)
        args = [t, f"xc[:, {a}:{b}]", f"xd[:, {c}:{d}]", f"({us})"]
        if extra == "y":
            args.append("(" + "".join(f"s[{self._signal(arr)}], " for arr in y) + ")")
        elif extra == "dxc":
            args.append(f"{dxc}[:, {a}:{b}]")
        elif extra == "g":
            e, f = cd.zc_slices[name]
            args.append(f"g[:, {e}:{f}]")
        args.append(f"p[{self.param_index[name]}]")
        return ", ".join(args)

    def _output_call(self, call, t: str) -> str | None:
        """The source of one output call, or None when nothing it computes is used."""
        name = call.block
        blk, k = self.sim.cd.blocks[name], self.kernels[name]
        outs = blk.output_names()
        want = tuple(o in call.serves and (name, o) in self.read for o in outs)
        if not any(want) and k.update is None and k.zero_crossings is None:
            return None
        if k.partial_output is not None and not all(want):
            flags = "(" + "".join(f"{w}, " for w in want) + ")"
            return f"{self._fn(k.partial_output)}({self._args(name, 'y', t)}, {flags})"
        return f"{self._fn(k.output)}({self._args(name, 'y', t)})"

    def first_stage_repeats_major(self) -> bool:
        """True when the first Runge-Kutta stage would recompute exactly what the major step just
        computed: it evaluates at the same t and xc, and the updates between them change no state
        that a stage-read block holds (none of them has discrete state)."""
        cd = self.sim.cd
        return all(cd.blocks[name].n_xd == 0 for name in self.stage_read)

    def output_body(self, major: str | None, t: str = "t", minor: str = "stage",
                    stage_guard: str | None = None, lazy: bool = False) -> list[str]:
        """Statements computing the outputs in sorted order. major: the expression telling a major
        step (discrete blocks then run at their hits, held blocks every time), or None for minor
        evaluations alone. minor: which varying blocks run at minor evaluations: "stage" (those a
        solver stage reads) or "all" (for logging and zero crossings between major steps).
        stage_guard: a condition on the stage-read blocks' calls (the loop's "not the first
        stage", when that stage repeats the major step). lazy: blocks of read_when run at major
        steps only when their condition holds (the fixed-step loop, which knows log_now)."""
        cd = self.sim.cd
        lines = []
        for call in cd.calls:
            name = call.block
            blk = cd.blocks[name]
            st = cd.sample_times[name]
            if not blk.enabled or not blk.output_names() or st.kind == "constant":
                continue
            stage = name in cd.varying and (minor == "all" or name in self.stage_read)
            if major is None and not stage:
                continue
            text = self._output_call(call, t)
            if text is None:
                continue
            if major is not None and st.kind == "discrete":
                lines += [f"if {major} and hits[{self.rate_index[st]}]:", "    " + text]
            elif major is not None and not stage and lazy and name in self.read_when:
                lines += [f"if {major} and ({self.read_when[name]}):", "    " + text]
            elif major is not None and not stage:
                lines += [f"if {major}:", "    " + text]
            elif stage_guard is not None:
                lines += [f"if {stage_guard}:", "    " + text]
            else:
                lines.append(text)
        return lines

    def derivative_body(self, t: str = "t", dxc: str = "dxc") -> list[str]:
        """The derivative calls, writing into the (B, n_xc) array named dxc."""
        return [f"{self._fn(self.kernels[name].derivative)}({self._args(name, 'dxc', t, dxc)})"
                for name, *_ in self.sim.deriv_calls]

    def update_body(self) -> list[str]:
        lines = []
        for rate, name, *_ in self.sim.update_calls:
            if self.kernels[name].update is None:
                continue                  # Block's empty update (missing_kernels checked it)
            call = f"{self._fn(self.kernels[name].update)}({self._args(name, None)})"
            lines += [call] if rate < 0 else [f"if hits[{rate}]:", "    " + call]
        return lines

    def record_body(self) -> list[str]:
        return [f"copy_to_log(logs[{j}], log_pos, s[{i}])" for j, i in enumerate(self.logged)]

    def source(self) -> str:
        sim = self.sim
        zc = [f"{self._fn(self.kernels[name].zero_crossings)}({self._args(name, 'g')})"
              for name, _ in sim.zc_blocks]
        functions = [
            ("def outputs(t, hits, major, xc, xd, s, p):", self.output_body("major", minor="all")),
            ("def derivatives(t, xc, xd, dxc, s, p):",
             self.output_body(None) + self.derivative_body()),
            ("def updates(t, hits, xc, xd, s, p):", self.update_body()),
            ("def zero_crossings(t, xc, xd, g, s, p):", zc),
        ]
        # the loop reads the tuples' items from locals unpacked once at entry (an item taken from
        # a tuple costs a reference count each time)
        fixed = FIXED_LOOP.format(
            unpack=_block([f"s_{i} = s[{i}]" for i in range(len(self.signals))]
                          + [f"p_{i} = p[{i}]" for i in range(len(self.params))], 4),
            outputs=_unpacked(_block(self.output_body(
                "major", "ti", stage_guard="i != 0" if self.first_stage_repeats_major() else None,
                lazy=True), 12)),
            record=_unpacked(_block(self.record_body(), 20)),
            updates=_unpacked(_block(self.update_body(), 16)),
            derivatives=_unpacked(_block(self.derivative_body("ti", "K[i]"), 12)))
        lines = [f'"""Generated by blocksim (generator {GENERATOR_VERSION}) for one diagram '
                 'structure; do not edit."""',
                 f"# library fingerprint {library_fingerprint()}",
                 "import numpy as np", "from numba import njit",
                 "from blocksim.solvers.explicit import _combine",
                 "from blocksim.engine.loops import all_finite, copy1d, copy_to_log, rate_hits"]
        for (module, name), alias in sorted(self.imports.items(), key=lambda kv: kv[1]):
            lines.append(f"from {module} import {name} as {alias}")
        for header, stmts in functions:
            lines += ["", "", "@njit(cache=True, error_model='numpy')", header]
            lines += _indent(stmts, 4) or ["    pass"]
        return "\n".join(lines) + "\n" + fixed


def _indent(stmts: list[str], spaces: int) -> list[str]:
    return [" " * spaces + st for st in stmts]


def _unpacked(text: str) -> str:
    """s[i] and p[i] written as the locals s_i and p_i."""
    return re.sub(r"\b([sp])\[(\d+)\]", r"\1_\2", text)


def _block(stmts: list[str], spaces: int) -> str:
    """Statements as an indented block of source ('pass' when there are none)."""
    return "\n".join(_indent(stmts or ["pass"], spaces))


FIXED_LOOP = """

@njit(cache=True, error_model='numpy', nogil=True)
def run_fixed(k0, k1, last_k, num0, dnum, den, step_ticks, t_stop, per, off, hits,
              xc, xd, dxc, s, p, logs, log_stride, log_pos, A, b, c, K, x0):
    \"\"\"Major steps k0..k1-1 on the fixed grid: outputs, log, updates, one explicit Runge-Kutta
    step of xc each (the arithmetic of solvers.explicit.rk_step; the stage states are combined
    straight into xc, which x0 keeps the step's start of, and the derivatives written straight
    into the stage rows K[i]; dxc is left alone).

    Pass i = -1 of the inner loop is the major step (outputs with discrete hits, log, updates),
    passes 0.. are the Runge-Kutta stages (minor outputs, derivatives): every block call is
    written once, which is what numba's compile time grows with.

    Returns (status, next k, log position): status 0 = chunk done, 1 = reached the stop time,
    2 = a state became NaN/Inf at step k (the caller names the block).\"\"\"
{unpack}
    n_stages = b.shape[0]
    stages = K.reshape((K.shape[0], -1))
    x0_flat = x0.reshape(-1)
    xc_flat = xc.reshape(-1)
    k = k0
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
                _combine(x0_flat, h, A[i], stages, i, xc_flat)
                ti = t_new if c[i] == 1.0 else min(t + c[i] * h, t_new)
{outputs}
            if major:
                if log_now:
{record}
                    log_pos += 1
{updates}
                if not (all_finite(xc) and all_finite(xd)):
                    return 2, k, log_pos
                if k == last_k:
                    return 1, k, log_pos
                t_new = t_stop if k + 1 == last_k else (num0 + (k + 1) * step_ticks * dnum) / den
                if xc.shape[1] == 0:
                    break
                h = t_new - t
                copy1d(x0_flat, xc_flat)
                continue
{derivatives}
        if xc.shape[1] > 0:
            _combine(x0_flat, h, b, stages, n_stages, xc_flat)
        k += 1
    return 0, k, log_pos
"""


def load_module(source: str):
    """Import the generated module from the cache (writing it once); numba caches its machine code."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:20]
    name = f"blocksim_diagram_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class CompiledSimulation(Simulation):
    """A Simulation whose evaluations run in one compiled module (same semantics, same numbers)."""

    binds_kernels = False

    stop_requested = False
    """Set from another thread to end a fixed-step run at its next chunk, as Ctrl-C does."""

    def __init__(self, cd, settings, logged):
        super().__init__(cd, settings, logged)
        gen = Generator(self)
        self.module = load_module(gen.source())
        self.s = tuple(gen.signals)
        self.p = tuple(gen.params)
        self.nohits = np.zeros(len(self.timebase.rates), dtype=np.bool_)
        self._entries: dict[str, object] = {}

    @property
    def logs(self) -> tuple:
        """The recorder's arrays in the order of its sources (the generated record statements)."""
        return tuple(self.recorder.data[name] for name, _ in self.recorder.sources)

    def is_cached(self) -> bool:
        """True when numba has compiled code for this module on disk (any signature)."""
        folder = Path(self.module.__file__).parent / "__pycache__"
        name = self.module.__name__
        entry = "run_fixed" if not SOLVERS[self.settings.solver].adaptive else "derivatives"
        return any(folder.glob(f"{name}.{entry}-*.nbi"))

    def _entry(self, name: str, args: tuple):
        """The module's function `name` bound to the types of (t, *args) at its first call (the
        scheduler's loop calls it every step; numba's typing of the records would cost more)."""
        fn = self._entries.get(name)
        if fn is None:
            fn = self._entries[name] = entry_point(getattr(self.module, name), args)
        return fn

    def outputs_major(self, t, hits):
        args = (hits, True, self.xc, self.xd, self.s, self.p)
        self._entry("outputs", args)(t, *args)

    def outputs_minor(self, t):
        args = (self.nohits, False, self.xc, self.xd, self.s, self.p)
        self._entry("outputs", args)(t, *args)

    def rhs(self, t, x):
        np.copyto(self.xc, x)
        args = (self.xc, self.xd, self.dxc, self.s, self.p)
        self._entry("derivatives", args)(t, *args)
        return self.dxc.copy()

    def zero_crossings(self, t):
        args = (self.xc, self.xd, self.g, self.s, self.p)
        self._entry("zero_crossings", args)(t, *args)
        return self.g.copy()

    def run_updates(self, t, hits):
        args = (hits, self.xc, self.xd, self.s, self.p)
        self._entry("updates", args)(t, *args)

    def members_independent(self) -> bool:
        """True when the run is the compiled fixed-step loop: every member then steps on the same
        grid with nothing shared (no adaptive step size, no event), so a batch may be split into
        parts run apart (Simulator's threads) with the same numbers."""
        solver_cls = SOLVERS[self.settings.solver]
        return not (solver_cls.adaptive or self.zc_blocks or not hasattr(solver_cls, "tableau"))

    def run(self) -> RunOutput:
        if not self.members_independent():
            return super().run()
        return self._run_fixed(SOLVERS[self.settings.solver].tableau)

    def _run_fixed(self, tableau) -> RunOutput:
        from .scheduler import _Progress
        s, tb, cd = self.settings, self.timebase, self.cd
        step_ticks = int(s.step / tb.tick)
        span = (s.stop - s.start) / s.step
        last_k = int(span) if span.denominator == 1 else int(span) + 1
        num0, dnum, den = tb.integer_form
        if max(abs(num0), abs(dnum) * step_ticks * (last_k + 1), den) >= 2 ** 53:
            return super().run()     # times beyond exact float integers: the Python loop copes
        log_stride = int(s.log_every / s.step)
        for name in self.order:
            xc, xd, *_ = self.views[name]
            cd.blocks[name].initial_state(xc, xd, *self._extra(name))
        for method, args in self.constant_calls:
            method(float(s.start), *args)
        per = np.array([r.period for r in tb.rates], dtype=np.int64)
        off = np.array([r.offset for r in tb.rates], dtype=np.int64)
        hits = np.zeros(len(tb.rates), dtype=np.bool_)
        B, n = self.xc.shape
        K = np.zeros((len(tableau.b) + 1, B, n))
        x0 = np.zeros((B, n))
        progress = _Progress(s, s.progress)
        k, log_pos, status, interrupted = 0, 0, 0, False
        chunk = 64
        try:
            while status == 0:
                if self.stop_requested:
                    interrupted = True
                    break
                started = _time.perf_counter()
                status, k, log_pos = self.module.run_fixed(
                    k, min(k + chunk, last_k + 1), last_k, num0, dnum, den, step_ticks,
                    float(s.stop), per, off, hits, self.xc, self.xd, self.dxc,
                    self.s, self.p, self.logs, log_stride, log_pos, tableau.A, tableau.b, tableau.c, K, x0)
                elapsed = _time.perf_counter() - started
                chunk = max(16, int(chunk * min(4.0, CHUNK_SECONDS / max(elapsed, 1e-6))))
                progress.update(float(s.start) + k * float(s.step), force=True)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            progress.close()
        self.recorder.count = log_pos
        if status == 2:
            t = tb.time(k * step_ticks) if k != last_k else float(s.stop)
            self.check_finite(t)
        t_log, data = self.recorder.finished()
        stats = {"major_steps": k + 1, "nsteps": k, "mode": "compiled"}
        return RunOutput(t_log, data, [], stats, interrupted, None)
