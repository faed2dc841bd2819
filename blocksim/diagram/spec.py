"""A diagram file as validated data: read the YAML, apply a variant and overrides, evaluate the
parameters and flatten subsystems into a DiagramSpec whose every item remembers its file and line."""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from blocksim.reading.dependencies import load_context, note, recording, unchanged
from blocksim.reading.limits import shown
from blocksim.blocks.plugins import load_plugins
from blocksim.expressions.evaluate import Resolved, evaluate_workspace, resolve_value
from blocksim.diagram.file import (ANALYSIS_KEYS, ANALYSIS_SIGNAL_KEYS, FORMAT_VERSION, LOG_KEYS, SCOPE_KEYS, SIMULATION_KEYS, BlockSpec,
                                   ConnectionSpec, Endpoint, Override, apply_overrides,
                                   parse_set_option, read_diagram_file, unknown_key,
                                   variant_overrides)
from blocksim.diagram.subsystems import flatten
from blocksim.diagram.yaml_loader import YamlList, YamlMap, to_plain
from blocksim.errors import DiagramFileError, SourceLoc, did_you_mean

__all__ = ["DiagramSpec", "BlockSpec", "ConnectionSpec", "Endpoint", "Override", "forget_specs",
           "load_spec", "parse_set_option"]


@dataclass
class DiagramSpec:
    """A whole diagram as the compiler consumes it: flat, evaluated, every item located.

    `aliases` maps a subsystem port ("act.tau") to the signal that carries it ("act/motor.tau"), so
    log, scope and metric names may use either. `where` locates the other items by dotted key:
    "simulation", "simulation.step", "log.signals", "log.signals[0]", "scopes[0]", "scopes[0].signals",
    "metrics[1]", "analysis.inputs[0]", "analysis.at", "parameters.Kp", "variants.pid", "variants.pid.ff.enabled", "blocks", "connections".
    """

    name: str
    file: str
    version: int
    parameters: dict[str, Any]
    blocks: dict[str, BlockSpec]
    connections: list[ConnectionSpec]
    simulation: dict[str, Any]
    log: dict[str, Any]
    scopes: list[dict]
    metrics: list[dict]
    analysis: dict[str, Any]
    variants: dict[str, dict[str, Any]]
    variant: str | None
    aliases: dict[str, str]
    where: dict[str, SourceLoc]


# ---------------------------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------------------------

def _signal_list(value: Any, where: SourceLoc, what: str, locations: dict[str, SourceLoc]) -> list[str]:
    """A list of signal names ("plant.q"); a single name is a list of one."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise DiagramFileError(f"{what} must be a list of signal names such as [plant.q, ref.q]", where=where)
    for index, name in enumerate(value):
        loc = value.loc(index) if isinstance(value, YamlList) else where
        if not isinstance(name, str):
            raise DiagramFileError(f"{what}[{index}] must be a signal name such as plant.q, not {shown(name)}",
                                   where=loc)
        locations[f"{what}[{index}]"] = loc
    return list(value)


def _resolve_table(table: YamlMap, valid: tuple[str, ...] | None, what: str, workspace: Mapping[str, Any],
                   locations: dict[str, SourceLoc],
                   signal_keys: tuple[str, ...] = ("signals",)) -> dict[str, Any]:
    """Evaluate a mapping section ({key: value}); keys checked against `valid` (None: any); the
    values of `signal_keys` are lists of signal names."""
    result: dict[str, Any] = {}
    for key, value in table.items():
        where = table.loc(key)
        if valid is not None and key not in valid:
            raise DiagramFileError(unknown_key(key, valid, what), where=where)
        locations[f"{what}.{key}"] = where
        if key in signal_keys:
            result[key] = _signal_list(value, where, f"{what}.{key}", locations)
        else:
            result[key] = resolve_value(value, workspace, where, f"{what}.{key}", known=workspace)
    return result


def _resolve_items(items: YamlList, what: str, valid: tuple[str, ...] | None, required: str,
                   workspace: Mapping[str, Any], locations: dict[str, SourceLoc]) -> list[dict]:
    """Evaluate a list of mappings (scopes, metrics), each needing the key `required`."""
    result = []
    for index, item in enumerate(items):
        label, where = f"{what}[{index}]", items.loc(index)
        if not isinstance(item, YamlMap):
            raise DiagramFileError(f"{label} must be a mapping such as {{{required}: ...}}", where=where)
        if required not in item:
            raise DiagramFileError(f"{label} needs '{required}'", where=where)
        locations[label] = where
        result.append(_resolve_table(item, valid, label, workspace, locations))
    return result


# ---------------------------------------------------------------------------------------------
# the whole diagram
# ---------------------------------------------------------------------------------------------

def scope_blocks(blocks: Mapping[str, BlockSpec], connections) -> list[dict]:
    """The figure of each Scope block, as a `scopes:` entry: its title (default: the block's
    name) and the signals wired to its inputs, in port order (so they are logged and plotted)."""
    out = []
    for name, block in blocks.items():
        if block.type != "Scope":
            continue
        wires = sorted((c for c in connections if c.dst.block == name), key=_input_number)
        if wires:
            out.append({"title": str(block.params.get("title") or name),
                        "signals": [str(c.src) for c in wires]})
    return out


def _input_number(wire) -> int:
    """K of a wire into port inK (1 for `in` or the block's only port)."""
    port = wire.dst.port
    return int(port[2:]) if port and port[2:].isdigit() else 1


_SPECS: OrderedDict = OrderedDict()
"""The specs load_spec made lately (at most SPECS_KEPT, the least recently used forgotten first),
by what each was loaded from (_spec_key), with the files it was read from and its plugins; none
read from more than SPEC_KEPT_BYTES of YAML (a large diagram's load is its parse, and its spec
would hold memory for long)."""
SPECS_KEPT = 32
SPEC_KEPT_BYTES = 1 << 20
_SPECS_LOCK = threading.Lock()


def load_spec(path: str | Path, variant: str | None = None,
              overrides: Mapping[str, Any] | None = None, *, text: str | None = None,
              lines: bool = True) -> DiagramSpec:
    """Read a diagram file into a flat, evaluated DiagramSpec (`text`: the diagram's YAML given
    as text, named `path` in messages, with its line numbers unless `lines` is False; relative
    file names in it are then relative to the working directory).

    `variant` applies one of the file's `variants:` tables; `overrides` ({dotted key: value}, like
    `--set`) comes last. Precedence, later wins: the file, the variant, the overrides. Raises
    BlocksimError subclasses with file:line for every mistake found at this level.

    A load of the same file (or text), variant and overrides, in the same working directory and
    with the same BLOCKSIM_ environment variables (the reading limits), gives the spec made
    before while the bytes of every file it was read from are the same (read again and
    compared by digest: reading/dependencies.py), its plugins imported again as a load does: a
    loop of load() and simulate() reads the YAML once. The spec is shared by those loads: read
    it, do not change it (a changed value goes in `overrides`).
    """
    key = _spec_key(path, variant, overrides, text, lines)
    if key is not None:
        with _SPECS_LOCK:
            kept = _SPECS.get(key)
        if kept is not None and unchanged(kept[1]):
            spec, sources, plugins = kept
            load_plugins(*plugins)
            note(sources)
            with _SPECS_LOCK:
                if key in _SPECS:
                    _SPECS.move_to_end(key)
            return spec
    with recording() as sources:
        spec, plugins = _read_spec(path, variant, overrides, text, lines)
    if key is not None and _source_bytes(sources, text) <= SPEC_KEPT_BYTES:
        with _SPECS_LOCK:
            _SPECS[key] = (spec, tuple(sources), plugins)
            while len(_SPECS) > SPECS_KEPT:
                _SPECS.popitem(last=False)
    return spec


def _source_bytes(sources, text: str | None) -> float:
    """The size in bytes of the YAML a spec was read from: its text and the files noted (inf
    when one cannot be stat'ed any more)."""
    total = 0 if text is None else len(text)
    for kind, path, _ in sources:
        if kind == "content":
            try:
                total += os.path.getsize(path)
            except OSError:
                return math.inf
    return total


def _spec_key(path, variant, overrides, text, lines) -> tuple | None:
    """What a spec depends on besides the bytes of its files; None when the overrides do not
    pickle."""
    context = load_context(overrides)
    return None if context is None else (str(path), text, variant, lines, context)


def forget_specs() -> None:
    """Let go of the specs load_spec keeps (the next load of each file reads it anew)."""
    with _SPECS_LOCK:
        _SPECS.clear()


def _read_spec(path, variant, overrides, text, lines) -> tuple[DiagramSpec, tuple]:
    """load_spec's work: the spec, and the arguments of load_plugins that imported its plugins."""
    display = str(path)
    doc = read_diagram_file(path, display, text=text, lines=lines)
    plugins = (doc["plugins"], Path(path).parent, doc["plugins"].loc)
    load_plugins(*plugins)
    variants = variant_overrides(doc)
    chosen: list[Override] = []
    if variant is not None:
        if variant not in variants:
            listed = ", ".join(variants) if variants else "none"
            hint = did_you_mean(variant, variants, clause=True)
            raise DiagramFileError(f"unknown variant '{variant}'{hint} "
                                   f"(this diagram's variants: {listed})", where=doc.loc("variants"))
        chosen += variants[variant]
    for key, value in (overrides or {}).items():
        chosen.append(Override(key, value, SourceLoc(f"set {key}"), "set"))
    nested = apply_overrides(doc, chosen)

    raw_parameters = doc["parameters"]
    workspace = evaluate_workspace(raw_parameters, raw_parameters.loc)
    nested = {block: [Override(o.key, Resolved(resolve_value(o.value, workspace, o.where,
                                                             f"{o.context()}value", known=workspace)),
                               o.where, o.origin, o.label) for o in items]
              for block, items in nested.items()}
    flat = flatten(doc, path=Path(path), display=display, workspace=workspace, nested_overrides=nested)

    locations: dict[str, SourceLoc] = {key: doc.loc(key) for key in doc}
    locations.update({f"parameters.{key}": raw_parameters.loc(key) for key in raw_parameters})
    for name, table in doc["variants"].items():
        locations[f"variants.{name}"] = doc["variants"].loc(name)
        for key in table or {}:
            locations[f"variants.{name}.{key}"] = table.loc(key)
    simulation = _resolve_table(doc["simulation"], SIMULATION_KEYS, "simulation", workspace, locations)
    simulation.setdefault("start_time", 0.0)
    log = _resolve_table(doc["log"], LOG_KEYS, "log", workspace, locations)
    scopes = _resolve_items(doc["scopes"], "scopes", SCOPE_KEYS, "signals", workspace, locations)
    scopes += scope_blocks(flat.blocks, flat.connections)
    metrics = _resolve_items(doc["metrics"], "metrics", None, "kind", workspace, locations)
    analysis = _resolve_table(doc["analysis"], ANALYSIS_KEYS, "analysis", workspace, locations,
                              ANALYSIS_SIGNAL_KEYS)
    name = doc.get("name")
    spec = DiagramSpec(
        name=str(name) if name is not None else Path(path).stem,
        file=display,
        version=doc.get("blocksim", FORMAT_VERSION),
        parameters=workspace,
        blocks=flat.blocks,
        connections=flat.connections,
        simulation=simulation,
        log=log,
        scopes=scopes,
        metrics=metrics,
        analysis=analysis,
        variants={name: {o.key: to_plain(o.value) for o in table} for name, table in variants.items()},
        variant=variant,
        aliases=flat.aliases,
        where=locations,
    )
    return spec, plugins


