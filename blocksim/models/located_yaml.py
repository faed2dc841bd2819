"""Located reading of the input files below the diagram layer: robot files (YAML and URDF),
identification configs and data logs.

The YAML rules are the diagram loader's (`blocksim.diagram.yaml_loader`), so that a robot file
or an identification config reads exactly as a diagram does: plain data only (no tags), YAML 1.2
scalars (`1e-3` is a float, only true/false are booleans, `012` is twelve, dates and `1:30` stay
strings), duplicate keys are errors, aliases are expanded into copies with at most MAX_NODES
mappings and lists, and every mapping and list remembers its file and line. The diagram loader
cannot be imported from here (models may import only blocksim.errors), hence this reader; the
test suite parses the same texts with both and checks that they agree.

Every function takes `error`, the BlocksimError subclass to raise (RobotFileError for a robot
file, IdentifyConfigError for a config, ...), so that each kind of file keeps its own class.
"""
from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, SequenceNode

from ..errors import BlocksimError, ParameterError, SourceLoc

MAX_NODES = 200_000
"""Most mappings and lists one file may expand to (aliases are copied, so this stops alias bombs)."""


class YamlMap(dict):
    """A YAML mapping: a dict that also knows where it starts (`where`) and where each key is."""

    def __init__(self, where: SourceLoc):
        super().__init__()
        self.where = where
        self.key_where: dict[Any, SourceLoc] = {}

    def loc(self, key: Any) -> SourceLoc:
        """Location of `key` when it was written in the file, else of the mapping itself."""
        return self.key_where.get(key, self.where)


class YamlList(list):
    """A YAML sequence: a list that also knows where it starts (`where`) and where each item is."""

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


_INT = re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+|0o[0-7]+)$")
_FLOAT = re.compile(r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
              "tag:yaml.org,2002:timestamp"}


class InputLoader(yaml.SafeLoader):
    """SafeLoader building YamlMap/YamlList with locations, with the diagram loader's scalar rules
    and limits (see the module docstring). Set `file` and `error` before `get_single_data()`."""

    file: str = "<yaml>"
    error: type[BlocksimError] = ParameterError

    def __init__(self, stream):
        super().__init__(stream)
        self.node_count = 0

    def location(self, mark) -> SourceLoc:
        """The SourceLoc (1-based line and column) of a YAML mark in this file."""
        if mark is None:
            return SourceLoc(self.file)
        return SourceLoc(self.file, mark.line + 1, mark.column + 1)

    def construct_object(self, node, deep=False):
        """Construct `node`, building collections anew at every alias (copies, never shared)."""
        if isinstance(node, (MappingNode, SequenceNode)):
            self.constructed_objects.pop(node, None)
            self.node_count += 1
            if self.node_count > MAX_NODES:
                raise self.error(f"the file expands to more than {MAX_NODES} mappings and lists "
                                 "(too many aliases?)", where=self.location(node.start_mark))
        return super().construct_object(node, deep=deep)

    def get_single_data(self):
        """The document's data; a node graph whose aliases would expand to more than MAX_NODES
        mappings and lists is refused before anything is built (counted once per node, so the
        refusal takes milliseconds however large the expansion)."""
        node = self.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def expanded(n) -> int:
            if not isinstance(n, (MappingNode, SequenceNode)):
                return 0
            if id(n) not in sizes:
                sizes[id(n)] = MAX_NODES + 1          # a cycle counts as too large
                items = n.value if isinstance(n, SequenceNode) else [v for kv in n.value for v in kv]
                sizes[id(n)] = min(MAX_NODES + 1, 1 + sum(expanded(item) for item in items))
            return sizes[id(n)]

        if expanded(node) > MAX_NODES:
            raise self.error(f"the file expands to more than {MAX_NODES} mappings and lists "
                             "(too many aliases?)", where=self.location(node.start_mark))
        return self.construct_document(node)

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
        """Decimal (leading zeros allowed), 0x hexadecimal or 0o octal integers."""
        text = self.construct_scalar(node)
        if text[:2] in ("0x", "0o"):
            return int(text, 0)
        return int(text, 10)


InputLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
InputLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
InputLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
InputLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
InputLoader.add_constructor("tag:yaml.org,2002:map", InputLoader.construct_located_map)
InputLoader.add_constructor("tag:yaml.org,2002:seq", InputLoader.construct_located_seq)
InputLoader.add_constructor("tag:yaml.org,2002:int", InputLoader.construct_core_int)


def _yaml_error(err: yaml.YAMLError, text: str, file: str, error: type[BlocksimError]) -> BlocksimError:
    """A PyYAML error as `error` at its line, with a hint for tabs."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    tag = re.search(r"constructor for the tag '([^']*)'", problem)
    if tag:
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        message = f"the YAML tag {shown} is not allowed; the file is plain data"
    line = None
    if mark is not None:
        line = mark.line + 1
        lines = text.splitlines()
        if mark.line < len(lines) and "\t" in lines[mark.line]:
            message += "; indent with spaces, not tabs"
    return error(message, where=SourceLoc(file, line))


def parse_yaml_text(text: str, file: str, error: type[BlocksimError] = ParameterError) -> Any:
    """Parse YAML text (one document) into YamlMap/YamlList/scalars; `file` names it in locations."""
    loader = InputLoader(text)
    loader.file = file
    loader.error = error
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise _yaml_error(err, text, file, error) from None
    except RecursionError:
        raise error("the YAML is nested too deeply", where=SourceLoc(file)) from None
    finally:
        loader.dispose()


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
    """Why the system refused to read `path`, in words: no such file, no such folder F, F is a
    file not a folder, is a folder, permission denied, or the system's own words."""
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
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return err.strerror or str(err)


def read_input_bytes(path, what: str, error: type[BlocksimError] = ParameterError,
                     display: str | None = None) -> bytes:
    """The bytes of input file `path`; an operating-system refusal raises `error` at the path
    ("PATH: cannot read the WHAT: no such folder /x"). `display` names the file in messages."""
    path = Path(path)
    where = SourceLoc(str(path) if display is None else display)
    try:
        return path.read_bytes()
    except OSError as err:
        raise error(f"cannot read the {what}: {os_reason(err, path)}", where=where) from None


def decode_utf8(data: bytes, file: str, error: type[BlocksimError] = ParameterError) -> str:
    """`data` as UTF-8 text; an invalid byte raises `error` at its line (and names its offset)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise error(f"not UTF-8 text ({err.reason} at byte {err.start})",
                    where=SourceLoc(file, line)) from None


def read_yaml(path, what: str, error: type[BlocksimError] = ParameterError,
              display: str | None = None) -> Any:
    """Read and parse a YAML input file (see the module docstring); `what` names the kind of file
    in messages ("robot file"), `display` the file (default: `path` as given)."""
    display = str(path) if display is None else display
    text = decode_utf8(read_input_bytes(path, what, error, display), display, error)
    return parse_yaml_text(text, display, error)


def to_plain(value: Any) -> Any:
    """A copy of `value` with YamlMap/YamlList turned into plain dicts and lists."""
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value
