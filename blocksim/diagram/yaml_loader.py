"""Safe YAML reading for diagram files: plain data whose mappings and lists remember file and line.

Any text is read or refused in time linear in its size: the file's size, its characters and what
its aliases expand to are checked against the limits (expressions/limits.py) before they cost
anything, and the parser is libyaml's where PyYAML has it (ten times faster than PyYAML's own,
which stays the fallback), with Python's garbage collector paused while the tree is built."""
from __future__ import annotations

import contextlib
import gc
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from blocksim.errors import DiagramFileError, SourceLoc
from blocksim.reading.limits import LimitError, exceeded, limit, shorten

_NOT_YAML = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character YAML does not allow in a file: control characters (other than tab and line
breaks) and lone surrogates."""

_CHARACTER_NAMES = {0: "NUL", 7: "BEL", 8: "backspace", 0x0B: "vertical tab", 0x0C: "form feed",
                    0x1B: "ESC", 0x7F: "DEL"}

_INT_CHARS = 1100
"""An integer literal longer than this is beyond the float range whatever its base (the check
below is exact; this only keeps Python from converting thousands of digits)."""

_FLOAT_BITS = 1024
"""Integers of more bits are beyond the largest float (1.8e308), the range of every number."""


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


class _DiagramResolver(Resolver):
    """Scalars read as YAML 1.2 does (see DiagramLoader)."""


class _DiagramConstructor(SafeConstructor):
    """SafeConstructor that builds YamlMap/YamlList with locations and reads scalars as YAML 1.2 does.

    Differences from PyYAML's YAML 1.1 defaults, chosen for numeric diagrams: `1e-3` is a float
    (1.1 reads a string), only true/false are booleans (not yes/no/on/off), `012` is twelve (not
    octal), `1:30` is a string (not sexagesimal), dates stay strings. Duplicate keys are errors,
    and so are integers beyond the float range. Aliases are expanded into copies so that
    overriding one use never changes another; the copies count towards the yaml_nodes limit.
    Set `file` (and `via`) before `get_single_data()`.
    """

    file: str = "<yaml>"
    via: tuple[str, ...] = ()
    lines: bool = True          # False: the text was written by the program (no line to show)

    def __init__(self):
        super().__init__()
        self.node_count = 0
        self.max_nodes = limit("yaml_nodes")

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
            if self.node_count > self.max_nodes:
                raise LimitError(exceeded("yaml_nodes", self.node_count,
                                          "the file (its aliases copied) expands to more than"),
                                 limit="yaml_nodes", where=self.location(node.start_mark))
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
        """Decimal (leading zeros allowed), 0x hexadecimal or 0o octal integers, within the
        float range (1.8e308: every number of a diagram becomes a float or a size)."""
        text = self.construct_scalar(node)
        value = None
        if len(text) <= _INT_CHARS:
            value = int(text, 0) if text[:2] in ("0x", "0o") else int(text, 10)
        if value is None or value.bit_length() > _FLOAT_BITS:
            raise DiagramFileError(f"the integer {shorten(text, 40)} is too large for a number "
                                   "(beyond 1.8e308)", where=self.location(node.start_mark))
        return value


_DiagramResolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_DiagramResolver.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_DiagramResolver.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_DiagramResolver.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_DiagramConstructor.add_constructor("tag:yaml.org,2002:map", _DiagramConstructor.construct_located_map)
_DiagramConstructor.add_constructor("tag:yaml.org,2002:seq", _DiagramConstructor.construct_located_seq)
_DiagramConstructor.add_constructor("tag:yaml.org,2002:int", _DiagramConstructor.construct_core_int)


class DiagramLoader(Reader, Scanner, Parser, Composer, _DiagramConstructor, _DiagramResolver):
    """The diagram reader over PyYAML's own (pure Python) parser (see _DiagramConstructor)."""

    def __init__(self, stream):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _DiagramConstructor.__init__(self)
        _DiagramResolver.__init__(self)


if getattr(yaml, "__with_libyaml__", False):
    from yaml.cyaml import CParser

    class FastDiagramLoader(CParser, _DiagramConstructor, _DiagramResolver):
        """The diagram reader over libyaml's parser: the same tree, about ten times faster."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            _DiagramConstructor.__init__(self)
            _DiagramResolver.__init__(self)

    LOADER: type = FastDiagramLoader
else:                                       # pragma: no cover (PyYAML built without libyaml)
    LOADER = DiagramLoader
"""The loader diagram files are read with."""


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

    Each call returns a fresh tree. A text asked for a second time is kept as its pickled tree
    (the last _CACHED texts), rebuilt from it 4 to 40 times faster than parsing: a batch over
    workspace parameters reads its file once per member, a subsystem is read once per use."""
    key = (text, file, tuple(via), lines)
    pickled = _pickled.get(key)
    if pickled is not None:
        _pickled[key] = _pickled.pop(key)                 # the most recently used, last
        with _collector_paused():
            return pickle.loads(pickled)
    tree = _parse(text, file, key[2], lines)
    if hash(key) in _seen:
        with _collector_paused():
            try:
                _pickled[key] = pickle.dumps(tree)
            except RecursionError:
                raise DiagramFileError("the YAML is nested too deeply",
                                       where=_file_loc(file, key[2])) from None
        while len(_pickled) > _CACHED:
            del _pickled[next(iter(_pickled))]
    else:
        _seen[hash(key)] = None
        while len(_seen) > 4 * _CACHED:
            del _seen[next(iter(_seen))]
    return tree


_CACHED = 64
_pickled: dict[tuple, bytes] = {}
"""Texts parsed twice: their trees, pickled (oldest first)."""
_seen: dict[int, None] = {}
"""The hashes of texts parsed once (oldest first): a second parse keeps the tree."""


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's garbage collector off for the duration: building a tree of a million small
    objects (none of them in a reference cycle) otherwise triggers collections all along."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _file_loc(file: str, via: tuple[str, ...]) -> SourceLoc:
    return IncludedLoc(file, None, None, via) if via else SourceLoc(file)


def check_characters(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True) -> None:
    """Refuse a text over the file_bytes limit or holding a character YAML does not allow
    (a control character, a lone surrogate), at its line and column."""
    if len(text) * 4 > limit("file_bytes"):         # else it cannot exceed the limit
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit("file_bytes"):
            raise LimitError(exceeded("file_bytes", size, "the diagram text has"),
                             limit="file_bytes", where=_file_loc(file, via))
    bad = _NOT_YAML.search(text)
    if bad is None:
        return
    pos = bad.start()
    line = text.count("\n", 0, pos) + 1 if lines else None
    column = pos - text.rfind("\n", 0, pos) if lines else None
    code = ord(bad.group())
    name = _CHARACTER_NAMES.get(code, "a lone surrogate" if 0xD800 <= code <= 0xDFFF
                                else "a control character")
    place = f" (column {column})" if column else ""
    message = (f"the character U+{code:04X} ({name}){place} is not allowed in a diagram file; "
               "remove it (in a double-quoted string, write it as an escape such as \\x07)")
    raise DiagramFileError(message, where=IncludedLoc(file, line, column, via) if via
                           else SourceLoc(file, line, column))


def _parse(text: str, file: str, via: tuple[str, ...], lines: bool = True) -> Any:
    check_characters(text, file, via, lines)
    loader = LOADER(text)
    loader.file = file
    loader.via = via
    loader.lines = lines
    try:
        with _collector_paused():
            return loader.get_single_data()
    except yaml.YAMLError as err:
        raise _yaml_error(err, text, file, via) from None
    except RecursionError:
        raise DiagramFileError("the YAML is nested too deeply", where=_file_loc(file, via)) from None
    finally:
        loader.dispose()


def read_text(path: str | Path, where: SourceLoc) -> str:
    """The UTF-8 text of a diagram file, refused unread when it is larger than the file_bytes
    limit (a device or a pipe is read up to the limit, never without end)."""
    cap = limit("file_bytes")
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > cap:
                raise LimitError(exceeded("file_bytes", size, "the file has"), limit="file_bytes",
                                 where=where)
            data = stream.read(cap + 1)
    except FileNotFoundError:
        raise DiagramFileError("no such diagram file", where=where) from None
    except IsADirectoryError:
        raise DiagramFileError("is a directory, not a diagram file", where=where) from None
    except OSError as err:
        raise DiagramFileError(f"cannot read the file: {err.strerror}", where=where) from None
    if len(data) > cap:
        raise LimitError(exceeded("file_bytes", len(data), "the file has at least"),
                         limit="file_bytes", where=where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DiagramFileError(f"not UTF-8 text ({err.reason} at byte {err.start})", where=where) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")     # universal newlines, as text mode


def load_yaml(path: str | Path, display: str | None = None, via: tuple[str, ...] = ()) -> Any:
    """Read and parse a YAML file; `display` is the name used in messages (default: `path` as given)."""
    display = str(path) if display is None else display
    return parse_yaml_text(read_text(path, _file_loc(display, via)), display, via)


def to_plain(value: Any) -> Any:
    """A copy of `value` with YamlMap/YamlList turned into plain dicts and lists."""
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value
