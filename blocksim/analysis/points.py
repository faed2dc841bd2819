"""Analysis points and the settings of a linearisation: what the `analysis:` section of a diagram
asks (or the caller's keywords), checked against the diagram, and the diagram instrumented with
them.

An input is an injection added to a signal (every reader of the signal reads signal + u), an
output is a signal measured (as its driver computes it), and an opening cuts a signal: its
readers read the signal's value at the operating point plus any injection there, so the loop
through it is open. The instrumented diagram is the user's with, per input or opening, a
Constant whose output the analysis sets (the injection), and per input that is not an opening a
Sum adding it to the signal (docs/analysis.md). A Constant adds no rate: the Sum runs at the
signal's rate, so every block keeps the sample time it has in the user's diagram.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..blocks.base import exact_time
from ..diagram.compiler import CompiledDiagram
from ..diagram.file import unknown_key
from ..diagram.spec import BlockSpec, ConnectionSpec, DiagramSpec, Endpoint
from ..errors import AnalysisError, BlocksimError, SourceLoc, did_you_mean
from ..reading.limits import shown

AT_KEYS = ("time", "states", "discrete_states", "inputs")
"""The keys of a mapping `at:` (the operating point): a time of a run, or given states (and
the injections' values there, as trim finds them)."""

TRIM_KEYS = ("states", "discrete_states", "inputs", "outputs")
"""The keys of `trim:` (the operating point found by blocksim.trim, whose keywords they are):
states and discrete_states {block: [values, null for free]}, inputs [signals], outputs
{signal: values}."""


class Point(NamedTuple):
    """An analysis point: the output port (block, port) of a signal and, for one element of a
    vector signal, its 0-based index (None: the whole signal)."""

    block: str
    port: str
    index: int | None = None

    @property
    def signal(self) -> tuple[str, str]:
        return self.block, self.port

    def elements(self, width: int) -> list[int]:
        """The signal's elements this point takes, for a signal of this width."""
        return list(range(width)) if self.index is None else [self.index]


_ELEMENT = re.compile(r"^(?P<signal>.*)\[(?P<index>[^\[\]]*)\]$")


def resolve_point(cd: CompiledDiagram, text: str, where: SourceLoc | None,
                  purpose: str) -> Point:
    """A signal name as an analysis point: "block.port" (or what CompiledDiagram.resolve_signal
    takes) for the whole signal, "block.port[i]" for its element i (0-based); errors name the
    location, block and port (an index out of range with the signal's width)."""
    found = _ELEMENT.match(text.strip())
    if found is None:
        return Point(*cd.resolve_signal(text, where, purpose=purpose))
    block, port = cd.resolve_signal(found["signal"].strip(), where, purpose=purpose)
    width = cd.out_widths[block][port]
    raw = found["index"].strip()
    if not raw.isdigit() or int(raw) >= width:
        raise AnalysisError(f"no element {raw if raw.isdigit() else shown(raw)} in {text} "
                            f"{purpose}: the signal has width {width} (elements 0 to "
                            f"{width - 1})", where=where, block=block, port=port)
    index = int(raw)
    return Point(block, port, index)


@dataclass(frozen=True)
class OperatingPointSpec:
    """Where to linearise: time (s, exact) of a run from the initial state (None: the initial
    state itself, at the start time), or states {block: values} that replace the initial
    continuous states of those blocks, discrete_states {block: values} their discrete states
    (without the modes), and inputs {signal text: values} the injections' values at analysis
    inputs (added to the signal; zero when not given), at the start time; or trim: the
    equilibrium that blocksim.trim finds with these keywords."""

    time: Fraction | None = None
    states: Mapping[str, np.ndarray] = field(default_factory=dict)
    discrete: Mapping[str, np.ndarray] = field(default_factory=dict)
    inputs: Mapping[str, np.ndarray] = field(default_factory=dict)
    trim: Mapping[str, Any] | None = None
    """blocksim.trim's keywords: the operating point is the equilibrium it finds (the fields
    above are then unused)."""


@dataclass(frozen=True)
class AnalysisSettings:
    """A linearisation's analysis points (resolved Points, in the order given),
    its operating point and the period of a discrete model (s, exact; None: continuous for a
    diagram without discrete blocks, the hyperperiod of the discrete rates otherwise).
    names: the signals as the user wrote them; where: the location of each item, by key
    ("inputs[0]", "at", "period")."""

    inputs: tuple[Point, ...]
    outputs: tuple[Point, ...]
    openings: tuple[Point, ...]
    at: OperatingPointSpec
    period: Fraction | None
    names: Mapping[Point, str]
    where: Mapping[str, SourceLoc]

    def loc(self, key: str) -> SourceLoc | None:
        return self.where.get(key)


def analysis_settings(cd: CompiledDiagram, inputs=None, outputs=None, openings=None, at=None,
                      period=None, origin: str = "keyword",
                      need_outputs: bool = True) -> AnalysisSettings:
    """The diagram's `analysis:` section with the caller's keywords replacing its keys (a
    keyword given as None keeps the section's), every signal resolved on the compiled diagram
    cd and every value checked; errors name the file and line of the item, or the keyword
    ("keyword outputs"; origin "option": the command line's "--output")."""
    spec = cd.spec
    section = dict(spec.analysis)
    where = {key[len("analysis."):]: loc for key, loc in spec.where.items()
             if key.startswith("analysis.")}
    for key, value in (("inputs", inputs), ("outputs", outputs), ("openings", openings),
                       ("at", at), ("period", period)):
        if value is None:
            continue
        given = SourceLoc(f"--{key.rstrip('s')}" if origin == "option" else f"keyword {key}")
        if key in ("inputs", "outputs", "openings"):
            value = [value] if isinstance(value, str) else list(value)
            for index in range(len(value)):
                where[f"{key}[{index}]"] = given
        section[key] = value
        where[key] = given
    default = spec.where.get("analysis", SourceLoc(spec.file))
    names: dict[Point, str] = {}

    def signals(key: str) -> tuple[Point, ...]:
        out = []
        for index, text in enumerate(section.get(key) or ()):
            loc = where.get(f"{key}[{index}]", where.get(key, default))
            if not isinstance(text, str):
                raise AnalysisError(f"analysis.{key}[{index}] must be a signal name such as "
                                    f"plant.q, not {shown(text)}", where=loc)
            point = resolve_point(cd, text, loc, purpose=f"for analysis.{key}")
            for other in out:
                if other == point:
                    raise AnalysisError(f"analysis.{key} names {text} twice", where=loc)
                if other.signal == point.signal and None in (other.index, point.index):
                    raise AnalysisError(f"analysis.{key} names {names[other]} and {text}, which "
                                        "overlap (name the whole signal or its elements)",
                                        where=loc, block=point.block, port=point.port)
            names.setdefault(point, text)
            out.append(point)
        return tuple(out)

    at_where = where.get("at", default)
    if section.get("trim") is not None and (at is None or at == "trim"):
        if section.get("at") not in (None, "trim"):
            raise AnalysisError("analysis.at and analysis.trim both give the operating point: "
                                "keep one (at: trim takes the trim's)", where=at_where)
        point = OperatingPointSpec(trim=_trim_keywords(section["trim"],
                                                       where.get("trim", default)))
    elif section.get("at") == "trim":
        raise AnalysisError("analysis.at: trim needs an analysis.trim section (the trim's "
                            "states, inputs and outputs)", where=at_where)
    else:
        point = operating_point(section.get("at"), at_where, cd)
    found = AnalysisSettings(signals("inputs"), signals("outputs"), signals("openings"),
                             point,
                             _period(section.get("period"), where.get("period", default)),
                             names, where)
    check_at_inputs(cd, found, found.at, at_where)
    if not found.outputs and need_outputs:
        raise AnalysisError("a linearisation needs at least one output (analysis.outputs: the "
                            "signals measured, such as plant.q)", where=where.get("outputs", default))
    return found


def check_at_inputs(cd: CompiledDiagram, points: AnalysisSettings, at: OperatingPointSpec,
                    where: SourceLoc | None) -> None:
    """Every injection an operating point gives is at an analysis input."""
    for text in at.inputs:
        if resolve_point(cd, text, None, "for analysis.at.inputs") not in points.inputs:
            raise AnalysisError(f"analysis.at.inputs: {text} is not an analysis input (inputs: "
                                f"{', '.join(points.names[p] for p in points.inputs) or 'none'})",
                                where=where)


def operating_point(value: Any, where: SourceLoc, cd: CompiledDiagram) -> OperatingPointSpec:
    """`at:` read: absent or "initial" (the initial state), a time in s (a run to that time),
    {time: t}, or {states: {block: [values]}} (the block's continuous states replaced)."""
    if value is None or (isinstance(value, str) and value == "initial"):
        return OperatingPointSpec()
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        value = {"time": value}
    if not isinstance(value, dict):
        raise AnalysisError(f"analysis.at must be initial, a time in s, {{time: t}} or "
                            f"{{states: {{block: [values]}}}}, not {shown(value)}", where=where)
    for key in value:
        if key not in AT_KEYS:
            raise AnalysisError(unknown_key(key, AT_KEYS, "analysis.at"), where=where)
    if "time" in value and len(value) > 1:
        raise AnalysisError("analysis.at takes a time of a run or given states, not both",
                            where=where)
    if "time" in value:
        try:
            t = exact_time(value["time"])
        except BlocksimError as err:
            raise AnalysisError(f"analysis.at.time: {err.message}", where=where) from None
        start = exact_time(cd.spec.simulation.get("start_time", 0.0))
        if t < start:
            raise AnalysisError(f"analysis.at.time {float(t)} s is before the start time "
                                f"{float(start)} s", where=where)
        return OperatingPointSpec(time=t)
    found = {}
    for key, kind in (("states", "continuous"), ("discrete_states", "discrete")):
        table = value.get(key, {})
        if not isinstance(table, dict):
            raise AnalysisError(f"analysis.at.{key} is a mapping {{block: [its {kind} states]}}",
                                where=where)
        found[key] = {}
        for name, given in table.items():
            if name not in cd.blocks:
                raise AnalysisError(f"analysis.at.{key}: no block {shown(name)}"
                                    f"{did_you_mean(str(name), cd.blocks)}", where=where)
            blk = cd.blocks[name]
            n = blk.n_xc if kind == "continuous" else blk.n_xd - blk.n_modes
            labels = blk.state_names()[0 if kind == "continuous" else 1][:n]
            found[key][name] = _row(given, n, f"analysis.at.{key}: block '{name}' has {n} {kind} "
                                    f"state(s) ({', '.join(labels) or 'none'})", where, name)
    inputs = value.get("inputs", {})
    if not isinstance(inputs, dict):
        raise AnalysisError("analysis.at.inputs is a mapping {signal: [the injection's values]}",
                            where=where)
    found["inputs"] = {}
    for text, given in inputs.items():
        point = resolve_point(cd, str(text), where, purpose="for analysis.at.inputs")
        width = len(point.elements(cd.out_widths[point.block][point.port]))
        found["inputs"][str(text)] = _row(given, width, f"analysis.at.inputs: {text} has width "
                                          f"{width}", where, point.block)
    return OperatingPointSpec(states=found["states"], discrete=found["discrete_states"],
                              inputs=found["inputs"])


def _trim_keywords(value: Any, where: SourceLoc) -> dict[str, Any]:
    """`trim:` read as blocksim.trim's keywords (TRIM_KEYS), each of its kind; the values are
    checked by trim itself."""
    if not isinstance(value, dict):
        raise AnalysisError(f"analysis.trim is a mapping with keys {', '.join(TRIM_KEYS)}, not "
                            f"{shown(value)}", where=where)
    for key in value:
        if key not in TRIM_KEYS:
            raise AnalysisError(unknown_key(key, TRIM_KEYS, "analysis.trim"), where=where)
    kinds = {"states": dict, "discrete_states": dict, "outputs": dict, "inputs": list}
    for key, kind in kinds.items():
        if key in value and not isinstance(value[key], kind):
            what = "a list of signals" if kind is list else "a mapping"
            raise AnalysisError(f"analysis.trim.{key} must be {what}, not {shown(value[key])}",
                                where=where)
    return dict(value)


def _row(given, n: int, what: str, where: SourceLoc, block: str) -> np.ndarray:
    row = np.atleast_1d(np.asarray(given, dtype=float)) if _numeric(given) else None
    if row is None or row.ndim != 1 or row.size != n:
        raise AnalysisError(f"{what}, given {shown(given)}", where=where, block=block)
    return row


def _numeric(value) -> bool:
    try:
        np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


def _period(value, where: SourceLoc) -> Fraction | None:
    if value is None:
        return None
    try:
        period = exact_time(value)
    except BlocksimError as err:
        raise AnalysisError(f"analysis.period: {err.message}", where=where) from None
    if period <= 0:
        raise AnalysisError(f"analysis.period must be a positive time in s, not {shown(value)}",
                            where=where)
    return period


# ---------------------------------------------------------------------------------------------
# the instrumented diagram
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instrumented:
    """The diagram with its analysis points: spec (to compile); injection[signal] the Constant
    block (of the signal's width) whose output is added to the signal's readers (at an opened
    element, the element's value seen downstream) for each signal with inputs or openings;
    opened[signal] the elements of it that are cut; feeds: below."""

    spec: DiagramSpec
    injection: Mapping[tuple[str, str], str]
    opened: Mapping[tuple[str, str], tuple[int, ...]]
    feeds: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """The block whose output the signal's readers read instead (the Sum, or the Constant)."""


def instrument(cd: CompiledDiagram, points: AnalysisSettings) -> Instrumented:
    """The spec of cd with its analysis points (the module docstring). Per signal with inputs or
    openings, a Constant of zeros of its width (the injection) and the readers of the signal
    wired to: the Constant alone where every element is opened; the signal plus the Constant
    (a Sum) where none is; the signal with its opened elements masked out (a Gain of 0 there
    and 1 elsewhere) plus the Constant where some are (zoh.out[0] opened, zoh.out[1] not)."""
    spec = cd.spec
    blocks = dict(spec.blocks)
    taken = set(blocks)
    connections = list(spec.connections)
    injection, opened, feeds = {}, {}, {}

    def fresh(stem: str) -> str:
        name, k = stem, 1
        while name in taken:
            k += 1
            name = f"{stem}_{k}"
        taken.add(name)
        return name

    for signal in dict.fromkeys(p.signal for p in points.inputs + points.openings):
        block, port = signal
        width = cd.out_widths[block][port]
        cut = sorted({i for p in points.openings if p.signal == signal for i in p.elements(width)})
        key, first = next((k, i) for k in ("inputs", "openings")
                          for i, p in enumerate(getattr(points, k)) if p.signal == signal)
        loc = points.loc(f"{key}[{first}]") or SourceLoc(spec.file)
        stem = f"analysis_{block.replace('/', '_')}_{port}"
        held = fresh(stem + "_u")
        blocks[held] = BlockSpec(held, "Constant", {"value": np.zeros(width)}, loc)
        feed, live = held, Endpoint(block, port)
        ours = {held}
        if len(cut) < width:
            if cut:
                mask = fresh(stem + "_mask")
                keep = np.ones(width)
                keep[cut] = 0.0
                blocks[mask] = BlockSpec(mask, "Gain", {"gain": keep}, loc)
                connections.append(ConnectionSpec(live, Endpoint(mask, "in"), loc))
                live = Endpoint(mask, None)
                ours.add(mask)
            feed = fresh(stem + "_sum")
            ours.add(feed)
            blocks[feed] = BlockSpec(feed, "Sum", {"signs": "++"}, loc)
        readers = [conn for conn in connections
                   if (conn.src.block, conn.src.port or _only_output(cd, conn.src.block)) == signal
                   and conn.dst.block not in ours]
        for conn in readers:
            connections[connections.index(conn)] = ConnectionSpec(Endpoint(feed, None), conn.dst,
                                                                   conn.where)
        if feed != held:
            connections.append(ConnectionSpec(live, Endpoint(feed, "in1"), loc))
            connections.append(ConnectionSpec(Endpoint(held, None), Endpoint(feed, "in2"), loc))
        injection[signal] = held
        opened[signal] = tuple(cut)
        feeds[signal] = feed
    return Instrumented(replace(spec, blocks=blocks, connections=connections), injection, opened,
                        feeds)


def _only_output(cd: CompiledDiagram, block: str) -> str | None:
    outs = cd.blocks[block].output_names() if block in cd.blocks else []
    return outs[0] if len(outs) == 1 else None
