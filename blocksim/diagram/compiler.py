"""Compile a validated diagram spec: blocks instantiated, wires checked, widths, order, rates, states.

The result, `CompiledDiagram`, is everything the scheduler needs and everything `blocksim check`
prints; no checking is left for the run's hot loop.
"""
from __future__ import annotations

import math
import warnings
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..blocks import REGISTRY
from ..blocks.base import Block, Params, SampleTime
from ..blocks.plugins import load_installed
from ..errors import (BlocksimError, BlocksimWarning, ParameterError, SourceLoc,
                      UnknownBlockTypeError, WidthError, WiringError, did_you_mean)
from ..reading.collector import collector_paused
from ..reading.limits import shown
from .graph import OutputCall, block_order, sorted_calls
from .joint_references import warn_references_outside_limits
from .rates import resolve_sample_times
from .settings import simulation_settings


@dataclass
class CompiledDiagram:
    """A diagram ready to run for a batch of B members: its structure (blocks, wires, widths,
    order, rates, state layout) and the values of one run's parameters.

    blocks        name -> Block, in file order (structure only: they serve any values)
    values        name -> the block's parameter values for these B members (data of the run:
                  `for_members` and `with_values` give other values on the same blocks)
    wires         (consumer, input port) -> (driver, output port)
    in_widths     name -> {input port: width};  out_widths likewise for outputs
    calls         output calls in sorted (data-flow) order
    sample_times  name -> resolved SampleTime
    varying       blocks whose outputs change between major steps (they read continuous state or t)
    first_member  the whole batch's index of member 0 (non-zero for a part of a split batch)
    xc_slices, xd_slices, zc_slices   name -> (start, stop) columns in the run's state arrays
    switchable_of a function giving the blocks whose `enabled` differs among the variants of
                  the diagram's file (Diagram.switchable), asked only by a compiled run's plan
                  (`switchable`): its module is written for every variant, these blocks' calls
                  switched by run data (engine/plan.py, RunPlan.compiled_as)
    """

    spec: Any
    batch: int
    blocks: dict[str, Block]
    wires: dict[tuple[str, str], tuple[str, str]]
    in_widths: dict[str, dict[str, int]]
    out_widths: dict[str, dict[str, int]]
    calls: list[OutputCall]
    sample_times: dict[str, SampleTime]
    varying: set[str]
    first_member: int = 0
    xc_slices: dict[str, tuple[int, int]] = field(default_factory=dict)
    xd_slices: dict[str, tuple[int, int]] = field(default_factory=dict)
    zc_slices: dict[str, tuple[int, int]] = field(default_factory=dict)
    values: dict[str, Params] = field(default_factory=dict)
    switchable_of: Any = None

    @property
    def switchable(self) -> frozenset[str]:
        """The blocks of this diagram that the file's variants switch on and off (switchable_of,
        asked now: it reads every variant of the file once per Diagram); empty without one."""
        return frozenset() if self.switchable_of is None else \
            frozenset(self.switchable_of()) & self.blocks.keys()

    @property
    def values_are_data(self) -> bool:
        """True when every block reads its values through `Block.record` (no part of a batch or
        new value needs new blocks)."""
        return all(blk.values_are_data for blk in self.blocks.values())

    def records(self) -> dict[str, tuple]:
        """The kernels' parameter records of this run's values, for the blocks that build them
        from values (`Block.has_record`; the others keep their own)."""
        out = {}
        for name, blk in self.blocks.items():
            if blk.has_record():
                v = self.values[name]
                k = blk.runtime_kernels() if v is blk.p else None
                out[name] = k.params if k is not None else blk.record(v)
        return out

    def for_members(self, start: int, stop: int) -> "CompiledDiagram":
        """Members start..stop-1 of this batch as a diagram of their own: the same blocks, wires
        and layout, the values sliced (a part of a split batch, run on its own thread)."""
        if not 0 <= start < stop <= self.batch:
            raise ValueError(f"members {start}..{stop - 1} of a batch of {self.batch}")
        return replace(self, batch=stop - start, first_member=self.first_member + start,
                       values={n: self.blocks[n].member_values(v, start, stop)
                               for n, v in self.values.items()})

    def numbered_from(self, first: int) -> "CompiledDiagram":
        """The same diagram and values with its members numbered from `first` (the index of
        member 0 in a larger whole, such as a study's): what a member's noise streams are keyed
        by, so a member run alone or in any batch draws the same numbers."""
        if first == self.first_member:
            return self
        return replace(self, first_member=int(first),
                       values={n: Params(v.items(), v.batch, first) for n, v in self.values.items()})

    def with_values(self, changes: dict[tuple[str, str], Any]) -> "CompiledDiagram":
        """The same diagram with new values for some array parameters: {(block, param): value
        for every member, or BatchValue of one per member}. Checked as the file's values are
        (`Block.changed_values`: kind, shape, checks, the structure kept); no block is made."""
        by_block: dict[str, dict[str, Any]] = {}
        for (name, param), value in changes.items():
            if name not in self.blocks:
                raise ParameterError(f"no block {shown(name)}{did_you_mean(name, self.blocks)}")
            by_block.setdefault(name, {})[param] = value
        values = dict(self.values)
        for name, given in by_block.items():
            blk = self.blocks[name]
            if not blk.values_are_data:
                raise ParameterError(
                    f"{blk.type_name} keeps its values in the block (it builds no record from "
                    "values, Block.record); load the diagram again with the new value",
                    where=self.spec.blocks[name].where, block=name)
            try:
                values[name] = blk.changed_values(values[name], given)
            except BlocksimError as err:
                raise err.located(where=self.spec.blocks[name].where, block=name)
        return replace(self, values=values)

    @property
    def n_xc(self) -> int:
        return max([b for _, b in self.xc_slices.values()], default=0)

    @property
    def n_xd(self) -> int:
        return max([b for _, b in self.xd_slices.values()], default=0)

    @property
    def n_zc(self) -> int:
        return max([b for _, b in self.zc_slices.values()], default=0)

    def signal_names(self) -> list[str]:
        """Every block output as 'block.port', in file order."""
        return [f"{name}.{port}" for name, blk in self.blocks.items() for port in blk.output_names()]

    def resolve_signal(self, text: str, where: SourceLoc | None = None,
                       purpose: str = "to log") -> tuple[str, str]:
        """'block.port' (or 'block' for a single-output block, or a subsystem alias) -> (block,
        port); purpose: what the signal is for, in the message about a block that does not exist."""
        text = self.spec.aliases.get(text, text)
        name, _, port = text.partition(".")
        if name not in self.blocks:
            raise WiringError(f"no block {shown(name)} {purpose}{did_you_mean(name, self.blocks)}",
                              where=where)
        outs = self.blocks[name].output_names()
        if not port:
            if len(outs) != 1:
                raise WiringError(f"block '{name}' has outputs {', '.join(outs) or 'none'}: name one "
                                  f"as '{name}.PORT'", where=where, block=name)
            port = outs[0]
        if port not in outs:
            raise WiringError(f"{self.blocks[name].type_name} has no output '{port}'"
                              f"{did_you_mean(port, outs)}; outputs: {', '.join(outs) or 'none'}",
                              where=where, block=name, port=port)
        return name, port


def instantiate(spec, batch: int, batch_params: dict[tuple[str, str], Any]) -> dict[str, Block]:
    """One Block per block spec, parameters checked; errors carry the file and line."""
    blocks: dict[str, Block] = {}
    diagram_dir = str(_parent(spec.file))
    for name, bspec in spec.blocks.items():
        cls = REGISTRY.get(bspec.type)
        if cls is None:
            load_installed()                 # installed packages' blocks, looked for once
            cls = REGISTRY.get(bspec.type)
        if cls is None:
            raise UnknownBlockTypeError(
                f"unknown block type {shown(bspec.type)}{did_you_mean(bspec.type, REGISTRY)}; "
                "`blocksim blocks` lists the library (a block of your own: name its module in "
                "the diagram's plugins:)", where=bspec.where, block=name)
        params = dict(bspec.params)
        params.update({p: v for (b, p), v in batch_params.items() if b == name})
        try:
            blocks[name] = cls(name, params, batch=batch, diagram_dir=bspec.folder or diagram_dir)
        except BlocksimError as err:
            key = _param_in_message(err, bspec.param_where)
            sources = bspec.param_sources.get(key, {})
            if sources and err.where is None:
                err.message += " (computed from " + ", ".join(
                    f"workspace parameter '{ref}' at {loc}" for ref, loc in sources.items()) + ")"
            raise err.located(where=bspec.param_where.get(key, bspec.where), block=name)
        warn_unlikely_angles(blocks[name], bspec)
    return blocks


FULL_TURN = 2 * math.pi


def warn_unlikely_angles(block: Block, bspec) -> None:
    """Warn (BlocksimWarning) about an angle parameter (units rad; not a phase) that the diagram
    gives beyond one full turn, 2 pi rad: most often degrees written where blocksim takes
    radians (an amplitude of 30, a q0 of 90); and about what the block finds doubtful
    (Block.doubtful: a q0 outside the robot's joint limits)."""
    for key, why in block.doubtful():
        where = bspec.param_where.get(key, bspec.where)
        warnings.warn(BlocksimWarning(f"{where}: block '{block.name}', parameter '{key}': {why}"),
                      stacklevel=2)
    for key, decl in block.all_params().items():
        if decl.units != "rad" or key.startswith("phase") or key not in bspec.params \
                or decl.kind != "array":
            continue
        value = getattr(block.p, key)
        finite = np.abs(value[np.isfinite(value)]) if value is not None else np.zeros(0)
        if finite.size and finite.max() > FULL_TURN + 1e-9:
            where = bspec.param_where.get(key, bspec.where)
            biggest = float(finite.max())
            warnings.warn(BlocksimWarning(
                f"{where}: block '{block.name}', parameter '{key}': {biggest:g} rad is more than "
                f"a full turn (2 pi); angles are in rad: for degrees write "
                f"${{radians({biggest:g})}}"), stacklevel=2)


def _parent(path: str):
    from pathlib import Path
    return Path(path).resolve().parent if path else Path.cwd()


def _param_in_message(err: BlocksimError, param_where: dict) -> str | None:
    """The parameter an error is about: named in quotes, or the message's first word ("Fc must
    be >= 0")."""
    for key in param_where:
        if f"'{key}'" in err.message:
            return key
    first = err.message.split(" ", 1)[0]
    return first if first in param_where else None


def connect(spec, blocks: dict[str, Block]) -> dict[tuple[str, str], tuple[str, str]]:
    """Check every wire's ports and every input's driver; returns consumer -> driver."""
    wires: dict[tuple[str, str], tuple[str, str]] = {}
    wire_where: dict[tuple[str, str], SourceLoc] = {}
    for conn in spec.connections:
        src_port = _port(blocks, conn.src.block, conn.src.port, "output", conn.where)
        dst_port = _port(blocks, conn.dst.block, conn.dst.port, "input", conn.where)
        key = (conn.dst.block, dst_port)
        if key in wires:
            first = wire_where[key]
            raise WiringError(
                f"input already driven by {'.'.join(wires[key])} (line {first.line}); an input "
                "takes one wire (use a Sum to add signals)", where=conn.where,
                block=conn.dst.block, port=dst_port)
        wires[key] = (conn.src.block, src_port)
        wire_where[key] = conn.where
    for name, blk in blocks.items():
        blk.connected = frozenset(p for p in blk.input_names() if (name, p) in wires)
        for port in blk.input_names():
            if (name, port) not in wires and port not in blk.optional_inputs:
                raise WiringError(
                    f"input '{port}' of {blk.type_name} is not connected (wire it, or feed a "
                    "Constant)", where=spec.blocks[name].where, block=name, port=port)
    return wires


def _port(blocks, name: str, port: str | None, kind: str, where: SourceLoc) -> str:
    blk = blocks[name]
    names = blk.output_names() if kind == "output" else blk.input_names()
    if port is None:
        if len(names) != 1:
            raise WiringError(
                f"{blk.type_name} has {len(names)} {kind}s ({', '.join(names) or 'none'}): "
                f"name one, as '{name}.PORT'", where=where, block=name)
        return names[0]
    if port not in names:
        raise WiringError(
            f"{blk.type_name} has no {kind} '{port}'{did_you_mean(port, names)}; its {kind}s: "
            f"{', '.join(names) or 'none'}", where=where, block=name, port=port)
    return port


def infer_widths(spec, blocks, wires):
    """Propagate signal widths through the diagram until every port has one; check them all.

    A feedback loop whose width nothing fixes (a scalar integrator in a loop of gains) is taken
    as width 1, as Simulink does for an unspecified width.
    """
    out_w: dict[tuple[str, str], int | None] = {
        (n, o): None for n, b in blocks.items() for o in b.output_names()}

    def inputs_of(name):
        return {p: out_w[wires[(name, p)]] for p in blocks[name].input_names() if (name, p) in wires}

    readers: dict[str, list[str]] = {name: [] for name in blocks}
    for (dst, _), (src, _) in wires.items():
        readers[src].append(dst)

    def resolve(name):
        """Block `name`'s output widths from its inputs'; True when one became known."""
        blk = blocks[name]
        try:
            outs = blk.resolve_widths(inputs_of(name))
        except BlocksimError as err:
            if isinstance(err, WidthError) and (name, err.port) in wires \
                    and out_w[wires[(name, err.port)]] is not None:
                src = wires[(name, err.port)]
                origin = width_origin(spec, blocks, wires, out_w, src)
                if origin:
                    err.message += f"; the width {out_w[src]} of {src[0]}.{src[1]} {origin}"
            raise err.located(where=_input_where(spec, name, err.port), block=name)
        changed = False
        for port, w in outs.items():
            if w is not None and out_w[(name, port)] is None:
                out_w[(name, port)] = int(w)
                changed = True
            elif w is not None and out_w[(name, port)] != w:
                raise WidthError(f"output width changed from {out_w[(name, port)]} to {w}",
                                 where=spec.blocks[name].where, block=name, port=port)
        return changed

    # every block once in file order, then again each time an input's width became known (a
    # block's widths follow from its inputs': linear in the diagram, in whatever order it is)
    queue = deque(blocks)
    queued = set(blocks)
    pending = iter(list(out_w))                # a width once known stays known: scan once
    while True:
        while queue:
            name = queue.popleft()
            queued.discard(name)
            if resolve(name):
                for reader in readers[name]:
                    if reader not in queued:
                        queued.add(reader)
                        queue.append(reader)
        unknown = next((k for k in pending if out_w[k] is None), None)
        if unknown is None:
            break
        out_w[unknown] = 1
        queue.extend(readers[unknown[0]])
        queued.update(readers[unknown[0]])
    in_widths = {n: {p: w for p, w in inputs_of(n).items()} for n in blocks}
    out_widths = {n: {o: out_w[(n, o)] for o in b.output_names()} for n, b in blocks.items()}
    return in_widths, out_widths


def width_origin(spec, blocks, wires, out_w, signal: tuple[str, str]) -> str:
    """Where the width of `signal` (block, port) comes from, in words: the parameter of the
    block upstream that sets it ("comes from block 'ref', parameter 'amplitude' (d.yaml:4)"),
    following blocks whose output takes an input's width; "" when no parameter sets it."""
    seen = set()
    block, _ = signal
    width = out_w[signal]
    while block not in seen:
        seen.add(block)
        blk, bspec = blocks[block], spec.blocks.get(block)
        given = bspec.params if bspec is not None else {}
        for key, decl in blk.all_params().items():
            value = getattr(blk.p, key, None)
            if key in given and decl.kind == "array" and isinstance(value, np.ndarray) \
                    and value.ndim == 2 and value.shape[1] == width:
                return (f"comes from block '{block}', parameter '{key}' "
                        f"({bspec.param_where.get(key, bspec.where)})")
        if "robot" in given:
            return (f"comes from block '{block}', parameter 'robot' ({given['robot']}, "
                    f"{bspec.param_where.get('robot', bspec.where)})")
        upstream = [wires[(block, p)] for p in blk.input_names()
                    if (block, p) in wires and out_w.get(wires[(block, p)]) == width]
        if not upstream:
            return ""
        block = upstream[0][0]
    return ""


def _input_where(spec, name: str, port: str | None) -> SourceLoc:
    if port is not None:
        for conn in spec.connections:
            if conn.dst.block == name and conn.dst.port in (port, None):
                return conn.where
    return spec.blocks[name].where


def varying_blocks(blocks, wires, sample_times, calls) -> set[str]:
    """Blocks whose outputs change between major steps: they read continuous state or time,
    directly or through a direct-feedthrough path. Discrete and constant blocks hold theirs."""
    varying: set[str] = set()
    for call in calls:
        name = call.block
        blk = blocks[name]
        if sample_times[name].kind in ("discrete", "constant"):
            continue
        if blk.n_xc > 0 or blk.time_varying:
            varying.add(name)
            continue
        for i, _ in blk.feedthrough():
            if (name, i) in wires and wires[(name, i)][0] in varying:
                varying.add(name)
                break
    return varying


@collector_paused()             # tens of thousands of blocks: reading/collector.py
def compile_diagram(spec, batch: int = 1,
                    batch_params: dict[tuple[str, str], Any] | None = None) -> CompiledDiagram:
    """Everything before the first step: blocks, wires, widths, order, rates and state layout,
    and the values of the batch's members (a part of the batch is `for_members`)."""
    blocks = instantiate(spec, batch, batch_params or {})
    wires = connect(spec, blocks)
    in_widths, out_widths = infer_widths(spec, blocks, wires)
    for name, blk in blocks.items():
        blk.in_widths, blk.out_widths = in_widths[name], out_widths[name]
        try:
            blk.configure(in_widths[name], out_widths[name])
        except BlocksimError as err:
            raise err.located(where=spec.blocks[name].where, block=name)
    file_order = list(blocks)
    try:
        calls = sorted_calls(blocks, wires, file_order)
    except BlocksimError as err:
        raise err.located(where=SourceLoc(spec.file))
    order = block_order(calls)
    try:
        sample_times = resolve_sample_times(blocks, wires, order)
    except BlocksimError as err:
        raise err.located(where=spec.blocks[err.block].where if err.block else None)
    try:
        span = simulation_settings(spec)
    except BlocksimError:
        span = None                    # reported where the settings are read
    if span is not None:
        warn_references_outside_limits(spec, blocks, wires, float(span.start), float(span.stop))
    cd = CompiledDiagram(spec, batch, blocks, wires, in_widths, out_widths, calls, sample_times,
                         varying_blocks(blocks, wires, sample_times, calls), 0,
                         values={name: blk.p for name, blk in blocks.items()})
    x = d = z = 0
    for name, blk in blocks.items():
        cd.xc_slices[name] = (x, x + blk.n_xc)
        cd.xd_slices[name] = (d, d + blk.n_xd)
        cd.zc_slices[name] = (z, z + blk.n_zc)
        x, d, z = x + blk.n_xc, d + blk.n_xd, z + blk.n_zc
    return cd

