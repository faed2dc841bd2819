"""Diagram and subsystem files through the one YAML reader of blocksim
(`blocksim.reading.located_yaml`: its rules, its limits, its located YamlMap/YamlList), with
DiagramFileError and "diagram file" in every message."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from blocksim.errors import DiagramFileError
from blocksim.reading.located_yaml import (IncludedLoc, YamlList, YamlMap, plain_loc, read_yaml,
                                           to_plain)
from blocksim.reading.located_yaml import parse_yaml_text as _parse_yaml_text

WHAT = "diagram file"
"""A diagram file, as messages name it."""


def parse_yaml_text(text: str, file: str, via: tuple[str, ...] = (), lines: bool = True) -> Any:
    """Parse the text of a diagram file (see reading.located_yaml.parse_yaml_text); `via` is the
    chain of subsystems that led to it, `lines` False for a text the program wrote."""
    return _parse_yaml_text(text, file, via, lines, error=DiagramFileError, what=WHAT)


def load_yaml(path: str | Path, display: str | None = None, via: tuple[str, ...] = ()) -> Any:
    """Read and parse a diagram file; `display` is the name used in messages (default: `path` as given)."""
    return read_yaml(path, WHAT, DiagramFileError, display, via)


__all__ = ["IncludedLoc", "YamlList", "YamlMap", "plain_loc", "to_plain", "parse_yaml_text", "load_yaml"]
