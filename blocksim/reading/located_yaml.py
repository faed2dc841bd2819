"""The one YAML reader of blocksim: diagram and subsystem files, robot files and identification
configs are all read by it, so each reads by the same rules and is refused with the same messages.

The rules: plain data only (no tags); YAML 1.2 scalars (`1e-3` is a float, only true/false are
booleans, `012` is twelve, `1:30` and dates stay strings); duplicate keys are errors; integers
beyond the float range (1.8e308) are errors; aliases are expanded into copies (overriding one use
never changes another), counted before anything is built against the yaml_nodes limit; every
mapping and list remembers its file, line and column (YamlMap, YamlList).

Any text is read or refused in time linear in its size: the file's size (file_bytes) and its
characters (no control characters, no lone surrogates, each refused at its line and column) are
checked before it is parsed, and the parser is libyaml's where PyYAML has it (ten times faster
than PyYAML's own, which stays the fallback), with Python's garbage collector paused while the
tree is built.

Every function takes `error`, the BlocksimError subclass to raise (DiagramFileError for a diagram,
RobotFileError for a robot file, IdentifyConfigError for a config), and `what`, the kind of file
as messages name it ("diagram file"); a limit exceeded is a LimitError whatever the file.
"""
from __future__ import annotations

import errno
import os
import pickle
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from blocksim.errors import BlocksimError, ParameterError, SourceLoc
from blocksim.reading.collector import collector_paused
from blocksim.reading.dependencies import note_content
from blocksim.reading.limits import LimitError, exceeded, limit, shorten


# ------------------------------------------------------------------- located data

@dataclass(frozen=True)
class IncludedLoc(SourceLoc):
    """A place in a subsystem file, with the chain of including blocks that led there.

    `via` holds one step per level, outermost first, such as "arm.yaml:12 (subsystem 'act',
    actuator.yaml)"; str() puts them before the place itself, joined by " > ", so that an error
    deep inside a subsystem says how the top diagram reached it. A chain deeper than
    SHOWN_LEVELS shows its first and last steps and how many are left out between them (a message
    stays one readable line however deep the nesting).
    """

    via: tuple[str, ...] = ()

    SHOWN_LEVELS = 6

    def __str__(self) -> str:
        steps = self.via
        if len(steps) > self.SHOWN_LEVELS:
            half = self.SHOWN_LEVELS // 2
            steps = (*steps[:half], f"... ({len(steps) - 2 * half} more levels)", *steps[-half:])
        return " > ".join((*steps, SourceLoc.__str__(self)))


def plain_loc(where: SourceLoc) -> str:
    """The place itself ("file:line"), without the subsystem chain of an IncludedLoc."""
    return SourceLoc.__str__(where)


def file_loc(file: str, via: tuple[str, ...] = ()) -> SourceLoc:
    """The location of a whole file (no line), with its subsystem chain when there is one."""
    return IncludedLoc(file, None, None, via) if via else SourceLoc(file)


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


def loc_of(container: Any, key: Any, fallback: SourceLoc | None) -> SourceLoc | None:
    """Where `container[key]` was written: its line when the container came from a file (YamlMap,
    YamlList), else `fallback` (plain data given in Python)."""
    if isinstance(container, (YamlMap, YamlList)):
        return container.loc(key)
    return fallback


def where_of(value: Any, fallback: SourceLoc | None) -> SourceLoc | None:
    """Where a mapping or list read from a file starts, else `fallback`."""
    return value.where if isinstance(value, (YamlMap, YamlList)) else fallback


def to_plain(value: Any) -> Any:
    """A copy of `value` with YamlMap/YamlList turned into plain dicts and lists."""
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value


# ------------------------------------------------------------------- the loader

_INT = re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$")
_FLOAT = re.compile(r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
              "tag:yaml.org,2002:timestamp"}

_INT_CHARS = 1100
"""An integer literal longer than this is beyond the float range whatever its base (the check
below is exact; this only keeps Python from converting thousands of digits)."""

_FLOAT_BITS = 1024
"""Integers of more bits are beyond the largest float (1.8e308), the range of every number."""


def _a(what: str) -> str:
    """`what` with its article: "a diagram file", "an identification config"."""
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


class _LocatedResolver(Resolver):
    """Scalars read as YAML 1.2 does (see the module docstring)."""


class _LocatedConstructor(SafeConstructor):
    """SafeConstructor that builds YamlMap/YamlList with locations by the rules of the module
    docstring. Set `file`, `via`, `lines`, `error` and `what` before `get_single_data()`."""

    file: str = "<yaml>"
    via: tuple[str, ...] = ()
    lines: bool = True          # False: the text was written by the program (no line to show)
    error: type[BlocksimError] = ParameterError
    what: str = "YAML file"

    def location(self, mark) -> SourceLoc:
        """The SourceLoc (1-based line and column) of a YAML mark in this file."""
        if mark is None or not self.lines:
            return file_loc(self.file, self.via)
        if self.via:
            return IncludedLoc(self.file, mark.line + 1, mark.column + 1, self.via)
        return SourceLoc(self.file, mark.line + 1, mark.column + 1)

    def get_single_data(self):
        """The document's data; a node graph whose aliases would expand to more mappings and
        lists than the yaml_nodes limit is refused before anything is built (each node counted
        once, so the refusal takes milliseconds however large the expansion)."""
        node = self.get_single_node()
        if node is None:
            return None
        found = self._expanded_size(node)
        if found > limit("yaml_nodes"):
            raise LimitError(exceeded("yaml_nodes", found, "the file expands to",
                                      " (each use of an alias is a copy)"),
                             limit="yaml_nodes", where=self.location(node.start_mark))
        return self.construct_document(node)

    def _expanded_size(self, root) -> int:
        """The number of mappings and lists `root` expands to, its aliases copied; an alias
        inside the collection it names (which would expand without end) is an error."""
        sizes: dict[int, int] = {}
        open_nodes: set[int] = set()

        def size(node) -> int:
            if not isinstance(node, (MappingNode, SequenceNode)):
                return 0
            key = id(node)
            if key in sizes:
                return sizes[key]
            if key in open_nodes:
                raise self.error("an alias is used inside the mapping or list it names (which "
                                 "would expand without end)", where=self.location(node.start_mark))
            open_nodes.add(key)
            items = node.value if isinstance(node, SequenceNode) else [v for kv in node.value for v in kv]
            sizes[key] = 1 + sum(size(item) for item in items)
            open_nodes.discard(key)
            return sizes[key]

        return size(root)

    def construct_object(self, node, deep=False):
        """Construct `node`, building collections anew at every alias (copies, never shared)."""
        if isinstance(node, (MappingNode, SequenceNode)):
            self.constructed_objects.pop(node, None)
        return super().construct_object(node, deep=deep)

    def construct_located_map(self, node: MappingNode) -> YamlMap:
        """A mapping as YamlMap; duplicate and unhashable keys are errors."""
        data = YamlMap(self.location(node.start_mark))
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            key_loc = self.location(key_node.start_mark)
            if isinstance(key, (YamlMap, YamlList)):
                raise self.error("a mapping key must be a name or number, not a "
                                 f"{'mapping' if isinstance(key, dict) else 'list'}", where=key_loc)
            if key in data:
                raise self.error(f"duplicate key '{key}' (first written at line "
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
        float range (1.8e308: every number becomes a float or a size)."""
        text = self.construct_scalar(node)
        value = None
        if len(text) <= _INT_CHARS:
            value = int(text, 0) if text[:2] in ("0x", "0o") else int(text, 10)
        if value is None or value.bit_length() > _FLOAT_BITS:
            raise self.error(f"the integer {shorten(text, 40)} is too large for a number "
                             "(beyond 1.8e308)", where=self.location(node.start_mark))
        return value


_LocatedResolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_LocatedResolver.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_LocatedResolver.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_LocatedResolver.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_LocatedConstructor.add_constructor("tag:yaml.org,2002:map", _LocatedConstructor.construct_located_map)
_LocatedConstructor.add_constructor("tag:yaml.org,2002:seq", _LocatedConstructor.construct_located_seq)
_LocatedConstructor.add_constructor("tag:yaml.org,2002:int", _LocatedConstructor.construct_core_int)


class LocatedLoader(Reader, Scanner, Parser, Composer, _LocatedConstructor, _LocatedResolver):
    """The reader over PyYAML's own (pure Python) parser (see the module docstring)."""

    def __init__(self, stream):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _LocatedConstructor.__init__(self)
        _LocatedResolver.__init__(self)


if getattr(yaml, "__with_libyaml__", False):
    from yaml.cyaml import CParser

    class FastLocatedLoader(CParser, _LocatedConstructor, _LocatedResolver):
        """The reader over libyaml's parser: the same tree, about ten times faster."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            _LocatedConstructor.__init__(self)
            _LocatedResolver.__init__(self)

    LOADER: type = FastLocatedLoader
else:                                       # pragma: no cover (PyYAML built without libyaml)
    LOADER = LocatedLoader
"""The loader every YAML input is read with."""


# ------------------------------------------------------------------- text

_NOT_YAML = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character YAML does not allow in a file: control characters (other than tab and line
breaks) and lone surrogates."""

_CHARACTER_NAMES = {0: "NUL", 7: "BEL", 8: "backspace", 0x0B: "vertical tab", 0x0C: "form feed",
                    0x1B: "ESC", 0x7F: "DEL"}


def check_characters(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True, *,
                     error: type[BlocksimError] = ParameterError, what: str = "YAML file") -> None:
    """Refuse a text over the file_bytes limit or holding a character YAML does not allow
    (a control character, a lone surrogate), at its line and column."""
    if len(text) * 4 > limit("file_bytes"):         # else it cannot exceed the limit
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit("file_bytes"):
            raise LimitError(exceeded("file_bytes", size, f"the {what} text has"),
                             limit="file_bytes", where=file_loc(file, via))
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
    message = (f"the character U+{code:04X} ({name}){place} is not allowed in {_a(what)}; "
               "remove it (in a double-quoted string, write it as an escape such as \\x07)")
    raise error(message, where=IncludedLoc(file, line, column, via) if via
                else SourceLoc(file, line, column))


_OPENS = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
          yaml.FlowSequenceStartToken)
_CLOSES = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_LINE_PREFIX = re.compile(r"^[ \t?:-]*", re.MULTILINE)


def check_nesting(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True) -> None:
    """Refuse a text whose mappings and lists nest deeper than the yaml_depth limit, at the line
    where it goes past it, before it is parsed: libyaml's composer recurses once per level in C
    and overflows the stack (a crash, not an error) some ten thousand levels down.

    Linear in the text: a bound from counting brackets and indentation settles it for almost
    every file; only a text that might be too deep is scanned into tokens (no recursion)."""
    depth_limit = limit("yaml_depth")
    widest = max((len(m) for m in _LINE_PREFIX.findall(text)), default=0)
    if text.count("[") + text.count("{") + 2 * (widest + 1) <= depth_limit:
        return                          # block levels each indent, or open on one line's prefix
    scanner = (CParser if LOADER is not LocatedLoader else _Scanning)(text)
    depth = 0
    try:
        while True:
            token = scanner.get_token()
            if token is None or isinstance(token, yaml.StreamEndToken):
                return
            if isinstance(token, _OPENS):
                depth += 1
                if depth > depth_limit:
                    mark = token.start_mark
                    where = (file_loc(file, via) if not lines else
                             IncludedLoc(file, mark.line + 1, mark.column + 1, via) if via else
                             SourceLoc(file, mark.line + 1, mark.column + 1))
                    raise LimitError(exceeded("yaml_depth", depth, "mappings and lists here nest"),
                                     limit="yaml_depth", where=where)
            elif isinstance(token, _CLOSES):
                depth -= 1
    except yaml.YAMLError:
        return                          # the parser stops at the same place and says why
    finally:
        if hasattr(scanner, "dispose"):
            scanner.dispose()


class _Scanning(Reader, Scanner):
    """PyYAML's own scanner alone, for check_nesting where libyaml is missing."""

    def __init__(self, stream):
        Reader.__init__(self, stream)
        Scanner.__init__(self)


def _yaml_error(err: yaml.YAMLError, text: str, file: str, via: tuple[str, ...],
                error: type[BlocksimError], what: str) -> BlocksimError:
    """A PyYAML error as `error` at its line, with a hint for common slips."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if tag:
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        message = f"the YAML tag {shown} is not allowed; {_a(what)} is plain data"
    line = None
    if mark is not None:
        line = mark.line + 1
        lines = text.splitlines()
        source_line = lines[mark.line] if mark.line < len(lines) else ""
        if "\t" in source_line:
            message += "; indent with spaces, not tabs"
        elif "${" in source_line:
            message += "; quote ${...} expressions inside {...} or [...]: \"${Kp / 4}\""
    return error(message, where=IncludedLoc(file, line, None, via) if via else SourceLoc(file, line))


def _parse(text: str, file: str, via: tuple[str, ...], lines: bool,
           error: type[BlocksimError], what: str) -> Any:
    check_characters(text, file, via, lines, error=error, what=what)
    check_nesting(text, file, via, lines)
    loader = LOADER(text)
    loader.file, loader.via, loader.lines, loader.error, loader.what = file, via, lines, error, what
    try:
        with collector_paused():
            return loader.get_single_data()
    except yaml.YAMLError as err:
        raise _yaml_error(err, text, file, via, error, what) from None
    except RecursionError:
        raise error("the YAML is nested too deeply", where=file_loc(file, via)) from None
    finally:
        loader.dispose()


def parse_yaml_text(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True, *,
                    error: type[BlocksimError] = ParameterError, what: str = "YAML file") -> Any:
    """Parse YAML text (one document) into YamlMap/YamlList/scalars; `file` names it in locations
    (with line numbers unless `lines` is False: a text the program wrote from a dict), `via` is
    the chain of subsystems that led to it (IncludedLoc).

    Each call returns a fresh tree. A text asked for a second time is kept as its pickled tree
    (the last _CACHED texts), rebuilt from it 4 to 40 times faster than parsing: a batch over
    workspace parameters reads its file once per member, a subsystem file is parsed once however
    many blocks use it (each use has its own chain `via`: the copy's locations are given it)."""
    via = tuple(via)
    key = (text, file, lines, error, what)
    cached = _pickled.get(key)
    if cached is not None:
        _pickled[key] = _pickled.pop(key)                 # the most recently used, last
        pickled_via, pickled = cached
        with collector_paused():
            tree = pickle.loads(pickled)
            if pickled_via != via:
                _give_chain(tree, via)
        return tree
    tree = _parse(text, file, via, lines, error, what)
    if hash(key) in _seen:
        with collector_paused():
            try:
                _pickled[key] = (via, pickle.dumps(tree))
            except RecursionError:
                raise error("the YAML is nested too deeply", where=file_loc(file, via)) from None
        while len(_pickled) > _CACHED:
            del _pickled[next(iter(_pickled))]
    else:
        _seen[hash(key)] = None
        while len(_seen) > 4 * _CACHED:
            del _seen[next(iter(_seen))]
    return tree


def _give_chain(tree: Any, via: tuple[str, ...]) -> None:
    """Every location in `tree` (of one file) given the subsystem chain `via` (none: plain)."""
    def located(where: SourceLoc) -> SourceLoc:
        if via:
            return IncludedLoc(where.file, where.line, where.column, via)
        return SourceLoc(where.file, where.line, where.column)

    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, YamlMap):
            node.where = located(node.where)
            node.key_where = {key: located(where) for key, where in node.key_where.items()}
            stack.extend(node.values())
        elif isinstance(node, YamlList):
            node.where = located(node.where)
            node.item_where = [located(where) for where in node.item_where]
            stack.extend(node)


_CACHED = 64
_pickled: dict[tuple, tuple[tuple[str, ...], bytes]] = {}
"""Texts parsed twice: the chain their tree was parsed with, and the tree, pickled (oldest first)."""
_seen: dict[int, None] = {}
"""The hashes of texts parsed once (oldest first): a second parse keeps the tree."""


# ------------------------------------------------------------------- files

def _missing_folder(path: Path) -> Path | None:
    """The first folder on the way to `path` that does not exist (None when its folder exists)."""
    parent = path.parent
    missing = None
    while not parent.exists() and parent != parent.parent:
        missing, parent = parent, parent.parent
    return missing


def _file_on_the_way(path: Path) -> Path | None:
    """The first component before the last of `path` that is a file where a folder must be."""
    for ancestor in reversed(path.parents):
        if ancestor.is_file():
            return ancestor
    return None


def os_reason(err: OSError, path: Path) -> str:
    """Why the system refused to read or make `path`, in words: no such file, no such folder F,
    F is a file not a folder, is a folder, permission denied, or the system's own words."""
    if isinstance(err, FileExistsError):
        # what mkdir(parents=True, exist_ok=True) says when a file is where a folder must be
        blocking = _file_on_the_way(path)
        if blocking is not None:
            return f"{blocking} is a file, not a folder"
        return "is a file, not a folder" if path.exists() and not path.is_dir() else "exists"
    if isinstance(err, FileNotFoundError):
        missing = _missing_folder(path)
        return "no such file" if missing is None else f"no such folder {missing}"
    if isinstance(err, NotADirectoryError):
        blocking = _file_on_the_way(path)
        return "not a directory" if blocking is None else f"{blocking} is a file, not a folder"
    if isinstance(err, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(err, PermissionError):
        return "permission denied"
    if err.errno == errno.ELOOP:
        return "a loop of symbolic links"
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return err.strerror or str(err)


def read_input_bytes(path, what: str, error: type[BlocksimError] = ParameterError,
                     display: str | None = None, *, where: SourceLoc | None = None,
                     limited: bool = True) -> bytes:
    """The bytes of input file `path` (a WHAT: "robot file"); an operating-system refusal raises
    `error` ("PATH: cannot read the WHAT: no such folder /x"). A `limited` file larger than the
    file_bytes limit is refused unread (a device or a pipe is read up to the limit, never without
    end). `where` (default: `display`, default `path` as given) locates the messages."""
    path = Path(path)
    where = where if where is not None else SourceLoc(str(path) if display is None else display)
    cap = limit("file_bytes") if limited else -1
    try:
        with path.open("rb") as stream:
            if limited:
                size = os.fstat(stream.fileno()).st_size
                if size > cap:
                    raise LimitError(exceeded("file_bytes", size, f"the {what} has"),
                                     limit="file_bytes", where=where)
            data = stream.read(cap + 1 if limited else -1)
    except OSError as err:
        raise error(f"cannot read the {what}: {os_reason(err, path)}", where=where) from None
    if limited and len(data) > cap:
        raise LimitError(exceeded("file_bytes", len(data), f"the {what} has at least"),
                         limit="file_bytes", where=where)
    note_content(path, data)
    return data


def decode_utf8(data: bytes, file: str, error: type[BlocksimError] = ParameterError,
                via: tuple[str, ...] = ()) -> str:
    """`data` as UTF-8 text; an invalid byte raises `error` at its line (and names its offset)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise error(f"not UTF-8 text ({err.reason} at byte {err.start})",
                    where=IncludedLoc(file, line, None, via) if via else SourceLoc(file, line)) from None


def read_yaml(path, what: str, error: type[BlocksimError] = ParameterError,
              display: str | None = None, via: tuple[str, ...] = ()) -> Any:
    """Read and parse a YAML input file (see the module docstring); `what` names the kind of file
    in messages ("robot file"), `display` the file (default: `path` as given), `via` the chain of
    subsystems that led to it."""
    display = str(path) if display is None else display
    text = decode_utf8(read_input_bytes(path, what, error, where=file_loc(display, via)), display,
                       error, via)
    text = text.replace("\r\n", "\n").replace("\r", "\n")      # universal newlines, as text mode
    return parse_yaml_text(text, display, via, error=error, what=what)
