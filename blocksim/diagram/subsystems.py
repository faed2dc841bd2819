"""Subsystems: expand blocks whose type is a diagram file into their inner blocks ("act/pi") and
rewire connections through the subsystem's inports and outports, so the engine sees one flat diagram."""
from __future__ import annotations

import errno
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from blocksim.blocks.plugins import load_plugins
from blocksim.expressions.evaluate import Resolved, evaluate_workspace, references, resolve_value
from blocksim.expressions.runtime import workspace_names
from blocksim.diagram.file import (BlockSpec, ConnectionSpec, Endpoint, Override, apply_overrides,
                                   parse_connection, read_diagram_file)
from blocksim.diagram.yaml_loader import IncludedLoc, YamlMap, load_yaml, plain_loc
from blocksim.reading.limits import check, count, limit, shown
from blocksim.expressions.parsing import recursion_for
from blocksim.errors import (BlocksimError, DiagramFileError, ParameterError, SourceLoc, WiringError,
                             did_you_mean)

LIBRARY_DIR = Path(__file__).resolve().parent.parent / "library"
"""Shipped subsystems: a block type `Name` is the subsystem `blocksim/library/Name.yaml` when that file exists."""

SUBSYSTEM_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class _Boundary:
    """A port of the subsystem being expanded, seen from inside: `inports.NAME` or `outports.NAME`."""

    kind: str
    name: str


Source = Endpoint | _Boundary


@dataclass
class Flattened:
    """One file's content after expansion, and how it connects to the block that includes it.

    `inport_consumers[NAME]` are the leaf inputs fed by `inports.NAME` (with the location of the wire
    reaching each); `outport_drivers[NAME]` the leaf output driving `outports.NAME`, or the inport it
    passes through. `pending_aliases` are aliases whose signal enters through an inport, resolved
    by the including level.
    """

    blocks: dict[str, BlockSpec] = field(default_factory=dict)
    connections: list[ConnectionSpec] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    inports: list[str] = field(default_factory=list)
    outports: list[str] = field(default_factory=list)
    inport_consumers: dict[str, list[tuple[Endpoint, SourceLoc]]] = field(default_factory=dict)
    outport_drivers: dict[str, tuple[Source, SourceLoc]] = field(default_factory=dict)
    pending_aliases: dict[str, str] = field(default_factory=dict)
    label: str = ""


def subsystem_file(block_type: str, including_dir: Path) -> Path | None:
    """The subsystem file a block type names, or None for a library block type.

    A type ending in .yaml/.yml is a file relative to the including file's folder; any other type
    is a shipped subsystem when blocksim/library/<type>.yaml exists.
    """
    if block_type.endswith(SUBSYSTEM_SUFFIXES):
        return including_dir / block_type
    return _shipped(block_type)


@functools.lru_cache(maxsize=1024)
def _shipped(block_type: str) -> Path | None:
    """blocksim/library/<type>.yaml when it exists (asked once per type: a diagram of many
    blocks of one type asks it for each). A type longer than a file name may be is no shipped
    file: None, so that the diagram's line says the type is unknown."""
    shipped = LIBRARY_DIR / f"{block_type}.yaml"
    try:
        return shipped if shipped.is_file() else None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return None
        raise


def _display(path: Path) -> str:
    """How messages name a subsystem file: its path joined to the including file's, as the user gave it."""
    return os.path.normpath(path)


def _via(where: SourceLoc) -> tuple[str, ...]:
    return where.via if isinstance(where, IncludedLoc) else ()


def _signal(endpoint: Endpoint) -> str:
    return str(endpoint)


def function_workspace(params: dict[str, Any], workspace: Mapping[str, Any], where: SourceLoc,
                       block: str) -> dict[str, Any]:
    """A Function block's workspace_names and workspace_values: the workspace parameters its
    expression reads, with their values (numbers or vectors) from this file's workspace."""
    expr, inputs = params.get("expr"), params.get("inputs", 1)
    if not isinstance(expr, str) or isinstance(inputs, bool) or not isinstance(inputs, int):
        return {}                                 # the block says what is wrong with them
    try:
        names = workspace_names(expr, inputs, workspace)
    except BlocksimError as err:
        raise err.located(where=where, block=block) from None
    if not names:
        return {}
    pairs, values = [], []
    for name in names:
        try:
            value = np.ravel(np.asarray(workspace[name], dtype=float))
        except (TypeError, ValueError):
            raise ParameterError(f"expression '{expr}' reads workspace parameter '{name}', which "
                                 f"is not a number or a vector of numbers: {shown(workspace[name])}",
                                 where=where, block=block) from None
        pairs.append([name, len(value)])
        values.append(value)
    return {"workspace_names": pairs, "workspace_values": np.concatenate(values)}


class _Scope:
    """The expansion of one file (the top diagram or one use of a subsystem file)."""

    def __init__(self, doc: YamlMap, path: Path, display: str, workspace: Mapping[str, Any],
                 nested_overrides: Mapping[str, list[Override]], prefix: str, via: tuple[str, ...],
                 stack: tuple[Path, ...], subsystem: bool):
        self.doc = doc
        self.path = path
        self.display = display
        self.workspace = workspace
        self.nested_overrides = nested_overrides
        self.prefix = prefix
        self.via = via
        self.stack = stack
        self.subsystem = subsystem
        self.out = Flattened(inports=list(doc.get("inports") or []), outports=list(doc.get("outports") or []))
        self.children: dict[str, Flattened] = {}
        self.drivers_into: dict[tuple[str, str], list[tuple[Endpoint, SourceLoc]]] = {}

    # -- blocks -----------------------------------------------------------------------------

    def workspace_where(self, name: str) -> SourceLoc:
        """Where workspace parameter `name` of this file is defined (the file when unknown)."""
        table = self.doc.get("parameters")
        if hasattr(table, "loc") and name in table:
            return table.loc(name)
        return SourceLoc(self.display)

    def expand_blocks(self) -> None:
        blocks = self.doc["blocks"]
        for name, raw in blocks.items():
            full = self.prefix + name
            where = blocks.loc(name)
            params: dict[str, Any] = {}
            for key, value in raw.items():
                if key == "type":
                    continue
                try:
                    params[key] = resolve_value(value, self.workspace, raw.loc(key), f"parameter '{key}'",
                                                known=self.workspace)
                except BlocksimError as err:
                    raise err.located(block=full) from None
            param_where = {key: raw.loc(key) for key in params}
            sources = {key: {ref: self.workspace_where(ref) for ref in sorted(references(raw[key]))
                             if ref in self.workspace}
                       for key in params if references(raw[key])}
            if raw["type"] == "Function":
                params.update(function_workspace(params, self.workspace, raw.loc("expr"), full))
            sub_path = subsystem_file(raw["type"], self.path.parent)
            if sub_path is None:
                if name in self.nested_overrides:
                    override = self.nested_overrides[name][0]
                    raise ParameterError(f"{override.context()}'{full}' is a {raw['type']} block, not a "
                                         f"subsystem, so '{override.label}' names nothing", where=override.where)
                folder = str(Path(self.path).resolve().parent) if self.prefix else None
                self.out.blocks[full] = BlockSpec(full, raw["type"], params, where, param_where,
                                                  sources, folder)
            else:
                self.children[name] = self.expand_subsystem(name, raw, sub_path, params, param_where, where)

    def expand_subsystem(self, name: str, raw: YamlMap, sub_path: Path, params: dict[str, Any],
                         param_where: dict[str, SourceLoc], where: SourceLoc) -> Flattened:
        full = self.prefix + name
        block_type = raw["type"]
        display = _display(sub_path)
        problem = _not_a_file(sub_path)
        if problem:
            raise DiagramFileError(f"subsystem file {block_type} {problem} ({display})",
                                   where=raw.loc("type"), block=full)
        resolved = sub_path.resolve()
        if resolved in self.stack:
            cycle = self.stack[self.stack.index(resolved):]
            chain = " > ".join(_display(p) for p in (*cycle, resolved))
            raise DiagramFileError(f"subsystem {block_type} contains itself ({chain})", where=where, block=full)
        check("subsystem_depth", len(self.stack), f"subsystem {block_type} is nested",
              where=raw.loc("type"), block=full)
        via = _via(where) + (f"{plain_loc(where)} (subsystem '{full}', {block_type})",)
        doc = read_diagram_file(sub_path, display, via, subsystem=True)
        load_plugins(doc["plugins"], sub_path.parent, doc["plugins"].loc)
        nested = apply_overrides(doc, self.nested_overrides.get(name, []), scope=f"{full}/")
        mask = doc["parameters"]
        enabled = None
        for key, value in params.items():
            if key == "enabled" and key not in mask:
                if not isinstance(value, bool):
                    raise ParameterError(f"parameter 'enabled' must be true or false, not {shown(value)}",
                                         where=param_where[key], block=full)
                enabled = value
                continue
            if key not in mask:
                listed = ", ".join(mask) if mask else "none"
                raise ParameterError(f"'{key}' is not a parameter of subsystem {block_type}"
                                     f"{did_you_mean(key, mask, clause=True)} (its parameters: {listed})",
                                     where=param_where[key], block=full)
            mask[key] = Resolved(value)
            mask.key_where[key] = param_where[key]
        workspace = evaluate_workspace(mask, mask.loc)
        child = _Scope(doc, sub_path, display, workspace, nested, f"{full}/", via, (*self.stack, resolved),
                       subsystem=True).expand()
        child.label = block_type
        if enabled is False:
            for block in child.blocks.values():
                block.params["enabled"] = False
                block.param_where["enabled"] = param_where["enabled"]
        self.out.blocks.update(child.blocks)
        self.out.connections.extend(child.connections)
        self.out.aliases.update(child.aliases)
        return child

    # -- connections ------------------------------------------------------------------------

    def check_endpoint(self, endpoint: Endpoint, side: str, where: SourceLoc, text: str) -> Endpoint:
        """Check a local endpoint's block (and, for subsystems, port); fill a subsystem's only port."""
        block, port = endpoint.block, endpoint.port
        blocks = self.doc["blocks"]
        if block in ("inports", "outports"):
            if not self.subsystem:
                raise WiringError(f"connection '{text}': {block}.NAME only exists inside a subsystem file",
                                  where=where)
            if (block == "inports") != (side == "from"):
                raise WiringError(f"connection '{text}': {block}.{port} can only be a "
                                  f"{'source' if block == 'inports' else 'destination'}", where=where)
            declared = self.out.inports if block == "inports" else self.out.outports
            if port not in declared:
                listed = ", ".join(declared) if declared else "none declared"
                raise WiringError(f"connection '{text}': no {block[:-1]} '{port}'"
                                  f"{did_you_mean(port or '', declared, clause=True)} ({block}: {listed})",
                                  where=where)
            return endpoint
        if block not in blocks:
            names = list(blocks) + (["inports", "outports"] if self.subsystem else [])
            hint = did_you_mean(block, names, clause=True)
            raise WiringError(f"connection '{text}': unknown block '{block}'{hint}", where=where)
        child = self.children.get(block)
        if child is None:
            return Endpoint(block, port)
        ports, kind = (child.outports, "outport") if side == "from" else (child.inports, "inport")
        if port is None:
            if len(ports) != 1:
                listed = ", ".join(ports) if ports else "none"
                raise WiringError(f"connection '{text}': subsystem '{self.prefix + block}' has "
                                  f"{len(ports)} {kind}s ({listed}); name one as {block}.<{kind}>", where=where)
            return Endpoint(block, ports[0])
        if port not in ports:
            listed = ", ".join(ports) if ports else "none"
            raise WiringError(f"connection '{text}': subsystem '{self.prefix + block}' ({child.label}) has no "
                              f"{kind} '{port}'{did_you_mean(port, ports, clause=True)} ({kind}s: {listed})",
                              where=where)
        return endpoint

    def source_of(self, endpoint: Endpoint, where: SourceLoc, seen: frozenset = frozenset()) -> Source:
        """The leaf output (or this file's inport) that drives a local source endpoint."""
        if endpoint.block == "inports":
            return _Boundary("inport", endpoint.port)
        child = self.children.get(endpoint.block)
        if child is None:
            return Endpoint(self.prefix + endpoint.block, endpoint.port)
        full = f"{self.prefix}{endpoint.block}.{endpoint.port}"
        if endpoint.port not in child.outport_drivers:
            raise WiringError(f"'{full}' is not driven inside subsystem {child.label} "
                              f"(nothing is wired to outports.{endpoint.port})", where=where)
        driver, _ = child.outport_drivers[endpoint.port]
        if isinstance(driver, Endpoint):
            return driver
        key = (endpoint.block, driver.name)
        if key in seen:
            raise WiringError(f"'{full}' is wired back to its own pass-through inport '{driver.name}'",
                              where=where)
        feeds = self.drivers_into.get(key, [])
        if len(feeds) != 1:
            lines = ", ".join(str(loc) for _, loc in feeds)
            problem = "nothing drives it" if not feeds else f"it has {len(feeds)} drivers ({lines})"
            raise WiringError(f"'{full}' passes inport '{self.prefix}{endpoint.block}.{driver.name}' "
                              f"through, but {problem}", where=where)
        source, source_where = feeds[0]
        return self.source_of(source, source_where, seen | {key})

    def consumers_of(self, endpoint: Endpoint, where: SourceLoc) -> list[tuple[Source, SourceLoc]]:
        """The leaf inputs (or this file's outport) a local destination endpoint feeds.

        A child's pass-through (inport straight to outport) is not followed here: the wire leaving
        that outport finds its driver through source_of, so each flat wire is made once.
        """
        if endpoint.block == "outports":
            return [(_Boundary("outport", endpoint.port), where)]
        child = self.children.get(endpoint.block)
        if child is None:
            return [(Endpoint(self.prefix + endpoint.block, endpoint.port), where)]
        return list(child.inport_consumers.get(endpoint.port, []))

    def wire(self) -> None:
        connections = self.doc["connections"]
        wires = []
        for index, item in enumerate(connections):
            for src, dst, where, text in parse_connection(item, connections.loc(index)):
                src = self.check_endpoint(src, "from", where, text)
                dst = self.check_endpoint(dst, "to", where, text)
                wires.append((src, dst, where, text))
                if dst.block in self.children:
                    self.drivers_into.setdefault((dst.block, dst.port), []).append((src, where))
        for src, dst, where, text in wires:
            source = self.source_of(src, where)
            for consumer, consumer_where in self.consumers_of(dst, where):
                if isinstance(consumer, _Boundary):
                    if consumer.name in self.out.outport_drivers:
                        first = self.out.outport_drivers[consumer.name][1]
                        raise WiringError(f"connection '{text}': outports.{consumer.name} already has a driver "
                                          f"(at {first})", where=where)
                    self.out.outport_drivers[consumer.name] = (source, where)
                elif isinstance(source, _Boundary):
                    self.out.inport_consumers.setdefault(source.name, []).append((consumer, consumer_where))
                else:
                    self.out.connections.append(ConnectionSpec(source, consumer, consumer_where))

    # -- aliases ----------------------------------------------------------------------------

    def alias(self, name: str, local_block: str, port: str) -> None:
        """Name `name` after whatever drives the child's inport `port`, if anything does."""
        feeds = self.drivers_into.get((local_block, port), [])
        if len(feeds) != 1:
            return
        try:
            source = self.source_of(*feeds[0])
        except WiringError:
            return
        self.record_alias(name, source)

    def record_alias(self, name: str, source: Source) -> None:
        if isinstance(source, Endpoint):
            self.out.aliases[name] = _signal(source)
        else:
            self.out.pending_aliases[name] = source.name

    def make_aliases(self) -> None:
        for local, child in self.children.items():
            full = self.prefix + local
            for port in child.outports:
                if port not in child.outport_drivers:
                    continue
                driver, _ = child.outport_drivers[port]
                if isinstance(driver, Endpoint):
                    self.record_alias(f"{full}.{port}", driver)
                else:
                    self.alias(f"{full}.{port}", local, driver.name)
            for port in child.inports:
                self.alias(f"{full}.{port}", local, port)
            for name, port in child.pending_aliases.items():
                self.alias(name, local, port)
            if len(child.outports) == 1:
                single = f"{full}.{child.outports[0]}"
                if single in self.out.aliases:
                    self.out.aliases[full] = self.out.aliases[single]
                elif single in self.out.pending_aliases:
                    self.out.pending_aliases[full] = self.out.pending_aliases[single]

    def expand(self) -> Flattened:
        self.expand_blocks()
        self.wire()
        self.make_aliases()
        return self.out


def _not_a_file(path: Path) -> str:
    """Why `path` cannot be read as a subsystem file ("" when it can be)."""
    try:
        if path.is_file():
            path.resolve(strict=True)
            return ""
        if path.is_dir():
            return "is a directory, not a subsystem file"
        if os.path.islink(path):
            path.resolve(strict=True)
            return "is a symbolic link to nothing"
    except RuntimeError:                # a loop of symbolic links (Python before 3.13)
        return "is a loop of symbolic links"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a loop of symbolic links"
        if err.errno == errno.ENOENT and os.path.islink(path):
            return "is a symbolic link to nothing"
        return f"cannot be read: {err.strerror}"
    return "not found"


def flat_size(doc: YamlMap, path: Path, stack: tuple[Path, ...] = (),
              sizes: dict[Path, int] | None = None) -> tuple[int, dict[str, int]]:
    """How many blocks `doc` flattens to, counted without expanding anything: (the total, the
    count of each of its blocks). A block type cannot be overridden, so a subsystem file's count
    is the file's own: each file is read once, however often it is used (subsystem files that
    include each other several times expand exponentially, and this sees it first). A file that
    cannot be read, or contains itself, counts 1 (the expansion says what is wrong with it)."""
    sizes = {} if sizes is None else sizes
    blocks = doc.get("blocks") if isinstance(doc, YamlMap) else None
    each: dict[str, int] = {}
    for name, raw in (blocks.items() if isinstance(blocks, YamlMap) else ()):
        block_type = raw.get("type") if isinstance(raw, YamlMap) else None
        sub = subsystem_file(block_type, path.parent) if isinstance(block_type, str) else None
        each[name] = 1
        if sub is None or _not_a_file(sub):
            continue
        resolved = sub.resolve()
        if resolved in stack:
            continue
        if resolved not in sizes and len(stack) < limit("subsystem_depth"):
            try:
                child = load_yaml(sub, _display(sub))
            except BlocksimError:
                child = None
            sizes[resolved] = flat_size(child, sub, (*stack, resolved), sizes)[0]
        each[name] = sizes.get(resolved, 1)
    return sum(each.values()), each


def flatten(doc: YamlMap, *, path: Path, display: str, workspace: Mapping[str, Any],
            nested_overrides: Mapping[str, list[Override]]) -> Flattened:
    """Expand every subsystem of the top diagram `doc` (already overridden, workspace evaluated).

    Returns the flat blocks, one ConnectionSpec per driver -> consumer wire, and the aliases of
    every subsystem port. Errors inside a subsystem carry the chain of including blocks. A
    diagram that would flatten to more blocks than the `blocks` limit is refused before any
    subsystem is expanded, at the block that brings the most.
    """
    top = path.resolve()
    with recursion_for(limit("subsystem_depth")):
        total, each = flat_size(doc, path, (top,))
        if total > limit("blocks"):
            name = max(each, key=each.get)
            blocks = doc["blocks"]
            detail = "" if each[name] == 1 else \
                f" (block '{name}', {blocks[name]['type']}, brings {count(each[name])} of them)"
            check("blocks", total, "the diagram flattens to", detail,
                  where=blocks.loc(name) if each[name] > 1 else doc.loc("blocks"),
                  block=name if each[name] > 1 else None)
        return _Scope(doc, path, display, workspace, nested_overrides, prefix="", via=(),
                      stack=(top,), subsystem=False).expand()
