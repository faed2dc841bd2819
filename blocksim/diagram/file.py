"""Reading a diagram file: the YAML read and checked for the format's keys, wires parsed into
endpoints, and variants and `set` overrides applied to the raw tables (what both the top diagram
and its subsystem files need; spec.py evaluates and flattens the result)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blocksim.diagram.settings import LOG_KEYS, SIMULATION_KEYS
from blocksim.diagram.yaml_loader import (IncludedLoc, YamlList, YamlMap, load_yaml, parse_yaml_text,
                                          to_plain)
from blocksim.reading.limits import shown
from blocksim.errors import DiagramFileError, ParameterError, SourceLoc, did_you_mean

FORMAT_VERSION = 1
"""The diagram format this program reads (the `blocksim:` key of a file)."""

DIAGRAM_KEYS = ("blocksim", "name", "description", "plugins", "parameters", "blocks", "connections",
                "simulation", "log", "scopes", "metrics", "variants", "analysis")
SUBSYSTEM_KEYS = ("blocksim", "name", "description", "plugins", "parameters", "blocks",
                  "connections", "inports", "outports")
SCOPE_KEYS = ("title", "signals", "ylabel", "file", "reference", "error")
ANALYSIS_KEYS = ("inputs", "outputs", "openings", "at", "trim", "period")
ANALYSIS_SIGNAL_KEYS = ("inputs", "outputs", "openings")
"""The `analysis:` section (docs/analysis.md): analysis points (lists of signals), the operating
point (or the trim that finds it) and the period of a discrete model."""
CONNECTION_KEYS = ("from", "to")
RESERVED_NAMES = ("parameters", "simulation", "log", "inports", "outports")
"""Names no block may take: they start override keys (`simulation.solver`) or subsystem endpoints."""

_IDENTIFIER = re.compile(r"^[A-Za-z0-9_]+$")
_ENDPOINT = re.compile(r"^\s*([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\s*$")


@dataclass
class BlockSpec:
    """One block of the flattened diagram, parameters evaluated, not yet checked against its type.

    `name` is the hierarchical path ("act/pi" inside subsystem `act`); `type` a library type name;
    `where` locates the block's name in its file, `param_where` each parameter (or the override
    that set it), `param_sources` the workspace parameters a value was computed from.
    """

    name: str
    type: str
    params: dict[str, Any]
    where: SourceLoc
    param_where: dict[str, SourceLoc] = field(default_factory=dict)
    param_sources: dict[str, dict[str, SourceLoc]] = field(default_factory=dict)
    """{parameter: {workspace parameter it reads: where that one is defined}}, for messages about
    a value that came from the workspace."""
    folder: str | None = None
    """The folder of the subsystem file that declares the block, against which its relative file
    parameters (a robot file, a data table) are read; None for the diagram's own blocks (its
    folder)."""


@dataclass
class Endpoint:
    """One end of a wire: a block and a port name (None: the block's only port, as in "a -> b")."""

    block: str
    port: str | None

    def __str__(self) -> str:
        return self.block if self.port is None else f"{self.block}.{self.port}"


@dataclass
class ConnectionSpec:
    """One wire from a driving output to one consuming input (fan-out is one ConnectionSpec per consumer)."""

    src: Endpoint
    dst: Endpoint
    where: SourceLoc


@dataclass
class Override:
    """One dotted-key override ("pid.Kp") with its value and where it came from.

    `origin` names the source in messages: "variant 'pid'" or "set". For a variant, `where` is the
    line of the key in the variant table; for `set`, a pseudo-location "set <key>". `label` is the
    key as the user wrote it (`key` loses its leading path when passed into a subsystem).
    """

    key: str
    value: Any
    where: SourceLoc
    origin: str
    label: str = ""

    def __post_init__(self):
        self.label = self.label or self.key

    def context(self) -> str:
        """The message prefix naming this override (empty for `set`: its location already does)."""
        return "" if self.origin == "set" else f"{self.origin}, override '{self.label}': "


# ---------------------------------------------------------------------------------------------
# reading one file
# ---------------------------------------------------------------------------------------------

def file_loc(display: str, via: tuple[str, ...] = ()) -> SourceLoc:
    """The location of a whole file (no line), keeping the subsystem chain."""
    return IncludedLoc(display, None, None, via) if via else SourceLoc(display)


def unknown_key(key: Any, valid: tuple[str, ...], section: str) -> str:
    return (f"unknown key '{key}' in {section}{did_you_mean(str(key), valid, clause=True)} "
            f"(valid keys: {', '.join(valid)})")


def _section(doc: YamlMap, key: str, kind: type) -> Any:
    """doc[key] as a YamlMap/YamlList (an absent or empty section becomes an empty one)."""
    value = doc.get(key)
    if value is None:
        empty = YamlMap(doc.loc(key)) if kind is dict else YamlList(doc.loc(key))
        doc[key] = empty
        doc.key_where.setdefault(key, doc.where)
        return empty
    if not isinstance(value, kind):
        shape = "a mapping (key: value lines)" if kind is dict else "a list (- item lines)"
        raise DiagramFileError(f"'{key}' must be {shape}", where=doc.loc(key))
    return value


def _check_names(items: YamlList, key: str) -> None:
    """inports/outports: a list of distinct port names."""
    seen: set[str] = set()
    for index, name in enumerate(items):
        where = items.loc(index)
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise DiagramFileError(f"{key}: '{name}' is not a port name (letters, digits, _)", where=where)
        if name in seen:
            raise DiagramFileError(f"{key}: '{name}' is declared twice", where=where)
        seen.add(name)


def _check_blocks(blocks: YamlMap) -> None:
    """Block names are identifiers, each block a mapping with a `type`."""
    for name, raw in blocks.items():
        where = blocks.loc(name)
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise DiagramFileError(f"block name '{name}' must be text made of letters, digits and _",
                                   where=where)
        if name in RESERVED_NAMES:
            raise DiagramFileError(f"'{name}' cannot name a block (reserved: {', '.join(RESERVED_NAMES)})",
                                   where=where, block=name)
        if not isinstance(raw, YamlMap):
            raise DiagramFileError(f"a block is a mapping such as {{type: Gain, gain: 2}}, not {shown(raw)}",
                                   where=where, block=name)
        block_type = raw.get("type")
        if block_type is None:
            raise DiagramFileError("the block has no type; write {type: <Type>, <param>: <value>, ...}",
                                   where=where, block=name)
        if not isinstance(block_type, str) or not block_type.strip():
            raise DiagramFileError(f"type must be a block type name or a subsystem file, not {shown(block_type)}",
                                   where=raw.loc("type"), block=name)
        for key in raw:
            if not isinstance(key, str) or not _IDENTIFIER.match(key):
                raise DiagramFileError(f"parameter name '{key}' must be letters, digits and _",
                                       where=raw.loc(key), block=name)


def read_diagram_file(path: str | Path, display: str, via: tuple[str, ...] = (), *,
                      subsystem: bool = False, text: str | None = None,
                      lines: bool = True) -> YamlMap:
    """Read a diagram (or, with `subsystem`, a subsystem) file and check its structure; `text`:
    the diagram's YAML text itself (then `path` is not read; `lines` False: a text written by
    the program, whose line numbers mean nothing to the user).

    Checks top-level keys (suggesting the closest valid one), the format version, the kind of each
    section (absent sections become empty ones), block names and types, and port declarations.
    Values are not evaluated here.
    """
    where = file_loc(display, via)
    doc = parse_yaml_text(text, display, via, lines) if text is not None \
        else load_yaml(path, display, via)
    if doc is None:
        raise DiagramFileError("the file is empty; a diagram needs at least blocks:", where=where)
    if not isinstance(doc, YamlMap):
        raise DiagramFileError("a diagram file is a mapping of keys such as name, parameters, blocks, "
                               "connections", where=getattr(doc, "where", where))
    valid = SUBSYSTEM_KEYS if subsystem else DIAGRAM_KEYS
    for key in doc:
        if key in valid:
            continue
        if subsystem and key in DIAGRAM_KEYS:
            raise DiagramFileError(f"a subsystem file cannot have '{key}': only the top diagram has "
                                   "simulation, log, scopes, metrics, variants and analysis",
                                   where=doc.loc(key))
        if not subsystem and key in SUBSYSTEM_KEYS:
            raise DiagramFileError(f"'{key}' belongs in a subsystem file (one used as a block's type), "
                                   "not in a diagram that is run", where=doc.loc(key))
        raise DiagramFileError(unknown_key(key, valid, "the diagram"), where=doc.loc(key))
    version = doc.get("blocksim", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise DiagramFileError(f"blocksim: the format version is a whole number such as {FORMAT_VERSION}, "
                               f"not {shown(version)}", where=doc.loc("blocksim"))
    if version > FORMAT_VERSION:
        raise DiagramFileError(f"this file needs blocksim format {version}, this program reads "
                               f"{FORMAT_VERSION}", where=doc.loc("blocksim"))
    for key in ("name", "description"):
        if key in doc and not isinstance(doc[key], (str, int, float)):
            raise DiagramFileError(f"'{key}' must be text", where=doc.loc(key))
    for key in ("parameters", "blocks", "simulation", "log", "variants", "analysis"):
        if key in valid:
            _section(doc, key, dict)
    for key in ("plugins", "connections", "scopes", "metrics", "inports", "outports"):
        if key in valid:
            _section(doc, key, list)
    if subsystem:
        _check_names(doc["inports"], "inports")
        _check_names(doc["outports"], "outports")
    elif not doc["blocks"]:
        raise DiagramFileError("the diagram has no blocks", where=doc.loc("blocks"))
    _check_blocks(doc["blocks"])
    return doc


# ---------------------------------------------------------------------------------------------
# connections
# ---------------------------------------------------------------------------------------------

def parse_endpoint(text: Any, where: SourceLoc, wire: str) -> Endpoint:
    """"block" or "block.port" -> Endpoint; anything else is a DiagramFileError at `where`."""
    match = _ENDPOINT.match(text) if isinstance(text, str) else None
    if match is None:
        shown = text.strip() if isinstance(text, str) else text
        raise DiagramFileError(f"connection '{wire}': '{shown}' is not an endpoint; write block.port or "
                               "block (names of letters, digits and _)", where=where)
    return Endpoint(match.group(1), match.group(2))


def parse_connection(item: Any, where: SourceLoc) -> list[tuple[Endpoint, Endpoint, SourceLoc, str]]:
    """One `connections:` item -> (src, dst, location, text) per consumer.

    Accepts "a.q -> b.ref", "a.q -> b.ref, c.in", {from: a.q, to: b.ref} and {from: a.q, to: [b.ref, c.in]}.
    """
    if isinstance(item, str):
        if item.count("->") != 1:
            raise DiagramFileError(f"connection '{item}' must have one '->': 'a.q -> b.ref' "
                                   "(fan out with 'a.q -> b.ref, c.in')", where=where)
        left, right = item.split("->")
        targets = [(part, where) for part in right.split(",")]
        text = item.strip()
    elif isinstance(item, dict):
        for key in item:
            if key not in CONNECTION_KEYS:
                raise DiagramFileError(unknown_key(key, CONNECTION_KEYS, "a connection"), where=item.loc(key))
        missing = [key for key in CONNECTION_KEYS if key not in item]
        if missing:
            raise DiagramFileError(f"a connection mapping needs {' and '.join(missing)}: "
                                   "{from: a.q, to: b.ref}", where=where)
        left, to = item["from"], item["to"]
        if isinstance(to, str):
            targets = [(part, item.loc("to")) for part in to.split(",")]
        elif isinstance(to, list) and to:
            targets = [(part, to.loc(index)) for index, part in enumerate(to)]
        else:
            raise DiagramFileError(f"connection 'to' must be an endpoint or a list of endpoints, not {shown(to)}",
                                   where=item.loc("to"))
        text = f"{left} -> {', '.join(str(part) for part, _ in targets)}"
    else:
        raise DiagramFileError("a connection is a string 'a.q -> b.ref' or a mapping "
                               f"{{from: a.q, to: b.ref}}, not {shown(item)}", where=where)
    src = parse_endpoint(left, where, text)
    return [(src, parse_endpoint(part, loc, text), loc, text) for part, loc in targets]


# ---------------------------------------------------------------------------------------------
# overrides
# ---------------------------------------------------------------------------------------------

def parse_set_option(text: str) -> tuple[str, Any]:
    """"pid.Kp=[500, 250]" -> ("pid.Kp", [500, 250]): the value is read as (safe) YAML flow text."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise DiagramFileError(f"--set expects key=value such as pid.Kp=[500, 250], got '{text}'")
    if not raw.strip():
        raise DiagramFileError(f"--set {key}= has no value")
    return key, to_plain(parse_yaml_text(raw.strip(), f"--set {key}"))


def _set(table: YamlMap, key: str, value: Any, where: SourceLoc) -> None:
    table[key] = value
    table.key_where[key] = where


def _override_target(doc: YamlMap, override: Override, scope: str) -> tuple[str, Any, str]:
    """Check where an override lands; returns (kind, table or block name, key).

    kind is "table" (set table[key]) or "nested" (pass key on to subsystem block `name`).
    `scope` is "" for the top diagram, else the subsystem's path with a trailing "/".
    """
    subsystem = bool(scope)
    key, where = override.key, override.where
    prefix = override.context()
    if not isinstance(key, str) or "." not in key:
        raise ParameterError(f"{prefix}an override key is block.param, parameters.NAME, simulation.KEY "
                             "or log.KEY", where=where)
    head, rest = key.split(".", 1)
    if head == "parameters" or (head in ("simulation", "log") and not subsystem):
        table = doc["parameters"] if head == "parameters" else _section(doc, head, dict)
        valid = tuple(table) if head == "parameters" else (SIMULATION_KEYS if head == "simulation" else LOG_KEYS)
        if rest not in valid:
            what = "workspace parameter" if head == "parameters" else f"{head} key"
            raise ParameterError(f"{prefix}no {what} '{rest}'{did_you_mean(rest, valid, clause=True)}", where=where)
        return "table", table, rest
    if head in DIAGRAM_KEYS:
        raise ParameterError(f"{prefix}'{head}' cannot be overridden; override block.param, "
                             "parameters.NAME, simulation.KEY or log.KEY", where=where)
    blocks = doc["blocks"]
    top, _, inner = head.partition("/")
    if top not in blocks:
        raise ParameterError(f"{prefix}unknown block '{scope}{top}'"
                             f"{did_you_mean(scope + top, [scope + name for name in blocks], clause=True)}", where=where)
    if inner:
        return "nested", top, f"{inner}.{rest}"
    if not _IDENTIFIER.match(rest):
        raise ParameterError(f"{prefix}'{rest}' is not a parameter name", where=where, block=scope + top)
    if rest == "type":
        raise ParameterError(f"{prefix}a block's type cannot be overridden", where=where, block=scope + top)
    return "table", blocks[top], rest


def apply_overrides(doc: YamlMap, overrides: list[Override], scope: str = "") -> dict[str, list[Override]]:
    """Write overrides into the raw file data, in order (later wins), before anything is evaluated.

    Returns the overrides meant for blocks inside subsystems ("act/pi.Kp"), by subsystem block,
    with their keys made relative to it ("pi.Kp"); the caller applies them when it expands that block.
    `scope` is "" for the top diagram, else the subsystem's path with a trailing "/".
    """
    nested: dict[str, list[Override]] = {}
    for override in overrides:
        kind, target, key = _override_target(doc, override, scope)
        if kind == "table":
            _set(target, key, override.value, override.where)
        else:
            nested.setdefault(target, []).append(Override(key, override.value, override.where, override.origin,
                                                          override.label))
    return nested


def variant_overrides(doc: YamlMap) -> dict[str, list[Override]]:
    """The `variants:` tables as Override lists (every key checked, whether applied or not)."""
    variants = doc["variants"]
    tables: dict[str, list[Override]] = {}
    for name, table in variants.items():
        if not isinstance(name, str):
            raise DiagramFileError(f"variant name {name!r} must be text", where=variants.loc(name))
        if table is None:
            table = YamlMap(variants.loc(name))
        if not isinstance(table, YamlMap):
            raise DiagramFileError(f"variant '{name}' must be a mapping of overrides such as "
                                   "{ff.enabled: false}", where=variants.loc(name))
        tables[name] = [Override(key, value, table.loc(key), f"variant '{name}'") for key, value in table.items()]
        for override in tables[name]:
            _override_target(doc, override, scope="")
    return tables
