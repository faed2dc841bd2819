"""A loaded diagram: its validated spec plus how it was loaded (variant, overrides), ready to compile."""
from __future__ import annotations

import functools
from dataclasses import replace
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..blocks.base import BatchValue
from ..errors import BlocksimError, ParameterError
from ..memo import kept
from ..reading.dependencies import recording
from .compiler import CompiledDiagram, compile_diagram
from .settings import LogSettings, SimulationSettings, log_settings, simulation_settings
from .spec import DiagramSpec, load_spec


_SWITCHABLE: dict = {}
"""Diagram.switchable's answers by the diagram's source and overrides (at most 64: past that all
are forgotten)."""

_VARIANTS_RUN: dict = {}
"""The variants of each file (keyed as _SWITCHABLE) whose compiled runs this process has planned,
or has been told to expect (Diagram.expect_variants): from two on, they share one module (at most
64 files: past that all are forgotten)."""


TEXT_NAME, DICT_NAME = "<text>", "<dict>"
"""How a diagram given as YAML text or as a dict is named in messages (in place of a file)."""


class Diagram:
    """A diagram file loaded with a variant and `set` overrides (precedence:
    file < variant < set < batch). Stateless: compile it as often as you like.

    text: the diagram's YAML itself (then `path` only names it in messages, and relative file
    names in it are relative to the working directory)."""

    def __init__(self, path, variant: str | None = None, overrides: dict[str, Any] | None = None,
                 text: str | None = None):
        self.path = Path(path)
        self.text = text
        self.variant = variant
        self.overrides = dict(overrides or {})
        with recording() as sources:
            self.spec: DiagramSpec = load_spec(self.path, variant=variant,
                                               overrides=self.overrides, text=text,
                                               lines=str(path) != DICT_NAME)
        self.sources = tuple(sources)
        """The files the spec was read from (reading/dependencies.py: the diagram file, its
        subsystem files, each with a digest of the bytes read): with path, text, variant and
        overrides, what makes two Diagrams the same diagram."""

    @functools.cached_property
    def settings(self) -> SimulationSettings:
        """The simulation section, typed and checked (on first use; errors name file and line)."""
        return simulation_settings(self.spec)

    @functools.cached_property
    def log_settings(self) -> LogSettings:
        """The log section, typed and checked (on first use)."""
        return log_settings(self.spec)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def variants(self) -> list[str]:
        return list(self.spec.variants)

    def with_variant(self, variant: str | None) -> "Diagram":
        return Diagram(self.path, variant, self.overrides, self.text)

    @functools.cached_property
    def switchable(self) -> frozenset[str]:
        """The blocks whose `enabled` differs among the file's variants (the file without a
        variant counted as one), under this diagram's overrides; a block whose `enabled` is an
        expression counts too. Once two variants of the file run in the process (_switchable), a
        compiled run writes its module for all of them, their calls switched by run data, so
        every variant runs one compiled module (RunPlan.compiled_as).
        Empty for a file with fewer than two variants, or when a variant does not load (that
        variant's own run then says why). Remembered for the process by the file's path, size
        and modification time (or its text) and the overrides: a sweep that loads the file anew
        for every run reads its variants once. (Any answer gives each run a module that is
        right for it; a stale one could only cost sharing.)"""
        if len(self.spec.variants) < 2:
            return frozenset()
        key = self._file_key()
        if key is None:
            return self._switchable_now()
        return kept(_SWITCHABLE, key, self._switchable_now)

    def _file_key(self):
        """The diagram's file (path, size and modification time, or its text) and overrides, as
        a key; None when it cannot be made."""
        try:
            stamp = None if self.text is not None else self.path.stat()
            return (str(self.path), self.text, stamp and (stamp.st_size, stamp.st_mtime_ns),
                    pickle.dumps(sorted(self.overrides.items())))
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            return None

    def expect_variants(self, variants) -> None:
        """Say that this process will run these variants of the diagram's file (names, None for
        the file without a variant), as the CLI does when it runs a study's variants: their
        compiled runs share one module from the first (Diagram.switchable). Without it the first
        compiled run of a file's variant gets a module written for that variant alone, which
        compiles faster (W1's `pid_ff`: 2.5 s against 2.9 s); the second variant of the same
        file compiled in the process turns to the shared module, so a loop over variants
        compiles at most two modules."""
        key = self._file_key()
        if key is not None and len(self.spec.variants) > 1:
            kept(_VARIANTS_RUN, key, set).update(variants)

    def _switchable_now(self) -> frozenset[str]:
        flags: dict[str, set] = {}
        for variant in [None, *self.spec.variants]:
            try:
                spec = self.spec if variant == self.variant else load_spec(
                    self.path, variant=variant, overrides=self.overrides, text=self.text,
                    lines=str(self.path) != DICT_NAME)
            except BlocksimError:
                return frozenset()
            for name, blk in spec.blocks.items():
                value = blk.params.get("enabled", True)
                flags.setdefault(name, set()).add(value if isinstance(value, bool) else None)
        return frozenset(name for name, seen in flags.items() if len(seen) > 1 or None in seen)

    def compile(self, batch: dict[str, list] | None = None) -> CompiledDiagram:
        """Compile for one run, or for a batch: {dotted key: [value per member]} (a part of a
        batch is a member range of it, CompiledDiagram.for_members)."""
        cd = self._compile(batch)
        return replace(cd, switchable_of=self._switchable) if len(self.spec.variants) > 1 else cd

    def _switchable(self) -> frozenset[str]:
        """The blocks a compiled run's module is written for beyond those this variant enables
        (CompiledDiagram.switchable_of): Diagram.switchable once two variants of the file are
        run or expected in this process (expect_variants), else none: a variant run alone gets
        a module of its own. A diagram without a file key shares as soon as it can."""
        key = self._file_key()
        if key is None:
            return self.switchable
        seen = kept(_VARIANTS_RUN, key, set)
        seen.add(self.variant)
        return self.switchable if len(seen) > 1 else frozenset()

    def _compile(self, batch: dict[str, list] | None) -> CompiledDiagram:
        if not batch:
            return compile_diagram(self.spec, 1)
        sizes = {key: len(values) for key, values in batch.items()}
        if len(set(sizes.values())) != 1:
            raise ParameterError(f"batch lists must all have the same length, got {sizes}")
        size = len(next(iter(batch.values())))
        block_params: dict[tuple[str, str], Any] = {}
        workspace = {k: v for k, v in batch.items() if k.startswith("parameters.")}
        for key, values in batch.items():
            if key in workspace:
                continue
            block, _, param = key.partition(".")
            if block in ("simulation", "log") or block not in self.spec.blocks or not param:
                raise ParameterError(f"batch key '{key}' must name a block parameter "
                                     "('block.param') or a workspace parameter ('parameters.X')")
            block_params[(block, param)] = BatchValue(list(values))
        if workspace:
            block_params.update(self._batched_workspace(workspace, size, block_params))
        return compile_diagram(self.spec, size, block_params)

    def _batched_workspace(self, workspace, size, already):
        """Per-member specs for workspace-parameter batches; block parameters that differ become
        batched values (expressions that use the parameter follow it)."""
        out = self.workspace_values(workspace, size)
        return {key: value for key, value in out.items() if key not in already}

    def workspace_values(self, workspace: dict[str, list], size: int) -> dict[tuple[str, str], Any]:
        """The block parameters that follow workspace parameters given one value per member
        ({"parameters.X": [value per member]}): {(block, param): BatchValue} for each parameter
        whose expression gives, in some member, another value than in the file (the file's
        expressions evaluated once per member)."""
        members, specs = [], {}
        for k in range(size):
            member = {key: values[k] for key, values in workspace.items()}
            try:                                    # members with the same values share a spec
                seen = pickle.dumps(sorted(member.items()))
            except (pickle.PicklingError, TypeError, AttributeError):
                seen = k
            if seen not in specs:
                specs[seen] = load_spec(self.path, variant=self.variant,
                                        overrides={**self.overrides, **member}, text=self.text,
                                        lines=str(self.path) != DICT_NAME)
            members.append(specs[seen])
        out = {}
        for name, bspec in self.spec.blocks.items():
            for param, value in bspec.params.items():
                values = [m.blocks[name].params[param] for m in members]
                if all(_same(value, v) for v in values):
                    continue
                out[(name, param)] = BatchValue(values)
        return out

    def resolved_yaml(self, simulation: dict[str, Any] | None = None,
                      values: dict[str, Any] | None = None) -> str:
        """The diagram after variants, overrides and expressions, as YAML (saved with each run, a
        diagram file that runs again as it is).
        simulation: keys of the simulation section a run was given anew (keyword settings);
        values: {"block.param" or "parameters.X": value} a run was given anew, one value for
        every member (Simulator.set_parameters)."""
        spec = self.spec
        values = values or {}
        blocks = {n: {"type": b.type, **_plain(b.params)} for n, b in spec.blocks.items()}
        parameters = _plain(spec.parameters)
        for key, value in values.items():
            head, _, name = key.partition(".")
            if head == "parameters":
                parameters[name] = _plain(value)
            else:
                blocks[head][name] = _plain(value)
        doc = {
            "blocksim": spec.version,
            "name": spec.name,
            "parameters": parameters,
            "blocks": blocks,
            "connections": [
                f"{c.src.block}{'.' + c.src.port if c.src.port else ''} -> "
                f"{c.dst.block}{'.' + c.dst.port if c.dst.port else ''}" for c in spec.connections],
            "simulation": _plain({**spec.simulation, **(simulation or {})}),
            "log": _plain(spec.log),
            "scopes": _plain(spec.scopes),
            "metrics": _plain(spec.metrics),
        }
        if spec.analysis:
            doc["analysis"] = _plain(spec.analysis)
        # a diagram file of its own, which runs again as it is: the variant is applied (and
        # named in a comment, not a key the loader would refuse)
        origin = f"# resolved from {self.path.name}" + \
            (f", variant {spec.variant}" if spec.variant else "") + "\n"
        return origin + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def load(source, variant: str | None = None, set: dict[str, Any] | None = None) -> Diagram:  # noqa: A002
    """Load a diagram (README, "From Python") from
    - a file: a path (str or pathlib.Path);
    - YAML text: a str with at least one line break (messages name it "<text>:LINE");
    - a dict, as the YAML would read (messages name it "<dict>", with the block and port).
    Relative file names inside text or a dict (robot files, subsystems) are relative to the
    working directory. `variant` applies one of its variants, `set` = {dotted key: value}
    overrides (as the CLI's --set)."""
    if isinstance(source, dict):
        return Diagram(DICT_NAME, variant, set, text=_dict_text(source))
    if isinstance(source, str) and "\n" in source:
        return Diagram(TEXT_NAME, variant, set, text=source)
    return Diagram(source, variant, set)


def _dict_text(doc: dict) -> str:
    """A diagram given as a dict, as YAML text without line numbers to point at: the loader
    reads it as it reads a file (the same checks), and its messages name "<dict>"."""
    try:
        text = yaml.safe_dump(_plain_strict(doc), sort_keys=False, default_flow_style=None)
    except yaml.YAMLError as err:
        raise ParameterError(f"the diagram dict holds a value YAML cannot write: {err}") from None
    return text


def _plain_strict(value):
    """_plain, but a value of another type is refused (a diagram dict holds what YAML holds)."""
    if isinstance(value, dict):
        return {_plain_strict(k): _plain_strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_strict(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise ParameterError(f"the diagram dict holds {type(value).__name__} {value!r}: a diagram "
                         "holds numbers, strings, booleans, lists and dicts")
