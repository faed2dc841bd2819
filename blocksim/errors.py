"""Errors that blocksim reports to its users, each able to say where in which file it happened."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class SourceLoc:
    """A place in a diagram file: path and 1-based line (and column, when known)."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}"


class BlocksimError(Exception):
    """Base of every error caused by user input or by a run that cannot go on.

    `where` is the file location, `block` and `port` name the diagram item (any may be None).
    str(err) reads: "file.yaml:12: block 'pid', port 'ref': message".
    """

    def __init__(self, message: str, *, where: SourceLoc | None = None,
                 block: str | None = None, port: str | None = None):
        self.message = message
        self.where = where
        self.block = block
        self.port = port
        super().__init__(self.__str__())

    def located(self, where: SourceLoc | None = None, block: str | None = None,
                port: str | None = None) -> "BlocksimError":
        """Fill in location details that are still missing; returns self for `raise err.located(...)`."""
        if self.where is None and where is not None:
            self.where = where
        if self.block is None and block is not None:
            self.block = block
        if self.port is None and port is not None:
            self.port = port
        self.args = (self.__str__(),)
        return self

    def __str__(self) -> str:
        parts = []
        if self.where is not None:
            parts.append(f"{self.where}: ")
        item = []
        if self.block is not None:
            item.append(f"block '{self.block}'")
        if self.port is not None:
            item.append(f"port '{self.port}'")
        if item:
            parts.append(", ".join(item) + ": ")
        parts.append(self.message)
        return "".join(parts)


class DiagramFileError(BlocksimError):
    """The YAML file cannot be read or does not have the diagram format (syntax, schema, version)."""


class ExpressionError(BlocksimError):
    """A ${...} expression is malformed, names something unknown, or tries more than arithmetic."""


class ParameterError(BlocksimError):
    """A block parameter is unknown, missing, or has the wrong kind or shape."""


class UnknownBlockTypeError(BlocksimError):
    """A block's type is neither in the library nor a subsystem file."""


class WiringError(BlocksimError):
    """A wire names an unknown block or port, an input is unconnected, or an input has two drivers."""


class WidthError(BlocksimError):
    """Signal widths on a wire or at a block's ports do not agree."""


class AlgebraicLoopError(BlocksimError):
    """A cycle made only of direct-feedthrough paths; the message names every block on it."""


class SampleTimeError(BlocksimError):
    """A period, offset or fixed step is invalid or inconsistent (a step that does not divide a period)."""


class SolverError(BlocksimError):
    """An integrator cannot go on: the tolerance cannot be met, or the step became too small."""


class AnalysisError(BlocksimError):
    """An analysis (linearisation, margins) that cannot be done as asked: an analysis point,
    operating point or period that does not fit the diagram."""


class NonFiniteStateError(BlocksimError):
    """A state became NaN or Inf; the message names the block and the time."""


def closest_name(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `name` (difflib's ratio at least 0.5), or None when none is close."""
    matches = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1, cutoff=0.5)
    return matches[0] if matches else None


def did_you_mean(name: str, candidates: Iterable[str], clause: bool = False) -> str:
    """The hint for a misspelt name, to append to a message: " (did you mean 'x'?)" (or, as a
    clause of its own, "; did you mean 'x'?"), or "" when no candidate is close. The one helper
    for every such hint in blocksim."""
    match = closest_name(name, candidates)
    if match is None:
        return ""
    return f"; did you mean '{match}'?" if clause else f" (did you mean '{match}'?)"


class BlocksimWarning(UserWarning):
    """Input that runs but is probably not what was meant (an angle of 30 rad: degrees?). The
    message names the file, line, block and parameter, as errors do."""


class MissingExtraError(BlocksimError):
    """An optional library a command needs is not installed; the message names the extra."""


def require_extra(module: str, extra: str, purpose: str):
    """The optional library `module` (imported), or a MissingExtraError saying which extra of
    blocksim installs it: "writing Parquet needs pyarrow, which is not installed: pip install -e
    '.[data]' (or pip install pyarrow)"."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise MissingExtraError(f"{purpose} needs {package}, which is not installed: "
                                f"pip install -e '.[{extra}]' (or pip install {package})") from None
