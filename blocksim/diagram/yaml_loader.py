"""Safe YAML reading for diagram files: plain data whose mappings and lists remember file and line."""
from __future__ import annotations

import functools
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, SequenceNode

from blocksim.errors import DiagramFileError, SourceLoc

MAX_NODES = 200_000
"""Most mappings and lists one file may expand to (aliases are copied, so this stops alias bombs)."""


@dataclass(frozen=True)
class IncludedLoc(SourceLoc):
    """A place in a subsystem file, with the chain of including blocks that led there.

    `via` holds one step per level, outermost first, such as "arm.yaml:12 (subsystem 'act',
    actuator.yaml)"; str() puts them before the place itself, joined by " > ", so that an error
    deep inside a subsystem says how the top diagram reached it.
    """

    via: tuple[str, ...] = ()

    def __str__(self) -> str:
        return " > ".join((*self.via, SourceLoc.__str__(self)))


def plain_loc(where: SourceLoc) -> str:
    """The place itself ("file:line"), without the subsystem chain of an IncludedLoc."""
    return SourceLoc.__str__(where)


class YamlMap(dict):
    """A YAML mapping: a dict that also knows where it starts (`where`) and where each key is (`key_where`)."""

    def __init__(self, where: SourceLoc):
        super().__init__()
        self.where = where
        self.key_where: dict[Any, SourceLoc] = {}

    def loc(self, key: Any) -> SourceLoc:
        """Location of `key` when it was written in the file, else of the mapping itself."""
        return self.key_where.get(key, self.where)


class YamlList(list):
    """A YAML sequence: a list that also knows where it starts (`where`) and where each item is (`item_where`)."""

    def __init__(self, where: SourceLoc):
        super().__init__()
        self.where = where
        self.item_where: list[SourceLoc] = []

    def loc(self, index: int) -> SourceLoc:
        """Location of item `index`, else of the list itself."""
        if 0 <= index < len(self.item_where):
            return self.item_where[index]
        return self.where


_INT = re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$")
_FLOAT = re.compile(r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
              "tag:yaml.org,2002:timestamp"}


class DiagramLoader(yaml.SafeLoader):
    """SafeLoader that builds YamlMap/YamlList with locations and reads scalars as YAML 1.2 does.

    Differences from PyYAML's YAML 1.1 defaults, chosen for numeric diagrams: `1e-3` is a float
    (1.1 reads a string), only true/false are booleans (not yes/no/on/off), `012` is twelve (not
    octal), `1:30` is a string (not sexagesimal), dates stay strings. Duplicate keys are errors.
    Aliases are expanded into copies so that overriding one use never changes another.
    Set `file` (and `via`) before `get_single_data()`.
    """

    file: str = "<yaml>"
    via: tuple[str, ...] = ()
    lines: bool = True          # False: the text was written by the program (no line to show)

    def __init__(self, stream):
        super().__init__(stream)
        self.node_count = 0

    def location(self, mark) -> SourceLoc:
        """The SourceLoc (1-based line and column) of a YAML mark in this file."""
        if mark is None or not self.lines:
            return self.make_loc(None, None)
        return self.make_loc(mark.line + 1, mark.column + 1)

    def make_loc(self, line: int | None, column: int | None = None) -> SourceLoc:
        """A SourceLoc in this file, carrying the subsystem chain when there is one."""
        if self.via:
            return IncludedLoc(self.file, line, column, self.via)
        return SourceLoc(self.file, line, column)

    def construct_object(self, node, deep=False):
        """Construct `node`, building collections anew at every alias (see the class docstring)."""
        if isinstance(node, (MappingNode, SequenceNode)):
            self.constructed_objects.pop(node, None)
            self.node_count += 1
            if self.node_count > MAX_NODES:
                raise DiagramFileError(f"the file expands to more than {MAX_NODES} mappings and lists "
                                       "(too many aliases?)", where=self.location(node.start_mark))
        return super().construct_object(node, deep=deep)

    def construct_located_map(self, node: MappingNode) -> YamlMap:
        """A mapping as YamlMap; duplicate and unhashable keys are errors."""
        data = YamlMap(self.location(node.start_mark))
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            key_loc = self.location(key_node.start_mark)
            if isinstance(key, (YamlMap, YamlList)):
                raise DiagramFileError("a mapping key must be a name or number, not a "
                                       f"{'mapping' if isinstance(key, dict) else 'list'}", where=key_loc)
            if key in data:
                raise DiagramFileError(f"duplicate key '{key}' (first written at line "
                                       f"{data.key_where[key].line})", where=key_loc)
            data[key] = self.construct_object(value_node, deep=True)
            data.key_where[key] = key_loc
        return data

    def construct_located_seq(self, node: SequenceNode) -> YamlList:
        """A sequence as YamlList."""
        data = YamlList(self.location(node.start_mark))
        for item_node in node.value:
            data.append(self.construct_object(item_node, deep=True))
            data.item_where.append(self.location(item_node.start_mark))
        return data

    def construct_core_int(self, node) -> int:
        """Decimal (leading zeros allowed), 0x hexadecimal or 0o octal integers."""
        text = self.construct_scalar(node)
        if text[:2] in ("0x", "0o"):
            return int(text, 0)
        return int(text, 10)


DiagramLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
DiagramLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
DiagramLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
DiagramLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
DiagramLoader.add_constructor("tag:yaml.org,2002:map", DiagramLoader.construct_located_map)
DiagramLoader.add_constructor("tag:yaml.org,2002:seq", DiagramLoader.construct_located_seq)
DiagramLoader.add_constructor("tag:yaml.org,2002:int", DiagramLoader.construct_core_int)


def _yaml_error(err: yaml.YAMLError, text: str, file: str, via: tuple[str, ...]) -> DiagramFileError:
    """Turn a PyYAML error into a DiagramFileError at its line, with a hint for common slips."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if tag:
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        message = f"the YAML tag {shown} is not allowed; a diagram file is plain data"
    line = None
    if mark is not None:
        line = mark.line + 1
        lines = text.splitlines()
        source_line = lines[mark.line] if mark.line < len(lines) else ""
        if "\t" in source_line:
            message += "; indent with spaces, not tabs"
        elif "${" in source_line:
            message += "; quote ${...} expressions inside {...} or [...]: \"${Kp / 4}\""
    where = IncludedLoc(file, line, None, via) if via else SourceLoc(file, line)
    return DiagramFileError(message, where=where)


def parse_yaml_text(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True) -> Any:
    """Parse YAML text (one document) into YamlMap/YamlList/scalars; `file` names it in locations
    (with line numbers unless `lines` is False: a text the program wrote from a dict).

    Each call returns a fresh tree; a text parsed before is rebuilt from its pickled tree, 40
    times faster than parsing (a batch over workspace parameters reads its file once per member)."""
    return pickle.loads(_parsed(text, file, tuple(via), lines))


@functools.lru_cache(maxsize=64)
def _parsed(text: str, file: str, via: tuple[str, ...], lines: bool = True) -> bytes:
    return pickle.dumps(_parse(text, file, via, lines))


def _parse(text: str, file: str, via: tuple[str, ...], lines: bool = True) -> Any:
    loader = DiagramLoader(text)
    loader.file = file
    loader.via = via
    loader.lines = lines
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise _yaml_error(err, text, file, via) from None
    except RecursionError:
        raise DiagramFileError("the YAML is nested too deeply",
                               where=IncludedLoc(file, None, None, via) if via else SourceLoc(file)) from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, display: str | None = None, via: tuple[str, ...] = ()) -> Any:
    """Read and parse a YAML file; `display` is the name used in messages (default: `path` as given)."""
    display = str(path) if display is None else display
    where = IncludedLoc(display, None, None, via) if via else SourceLoc(display)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DiagramFileError("no such diagram file", where=where) from None
    except IsADirectoryError:
        raise DiagramFileError("is a directory, not a diagram file", where=where) from None
    except UnicodeDecodeError as err:
        raise DiagramFileError(f"not UTF-8 text ({err.reason} at byte {err.start})", where=where) from None
    except OSError as err:
        raise DiagramFileError(f"cannot read the file: {err.strerror}", where=where) from None
    return parse_yaml_text(text, display, via)


def to_plain(value: Any) -> Any:
    """A copy of `value` with YamlMap/YamlList turned into plain dicts and lists."""
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value
