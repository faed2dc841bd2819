"""Metrics declared in a diagram's `metrics:` section, computed per signal element after a run.

Each metric is `{name, kind, signal, reference, from, to, ...}`; `name` defaults to `kind`.
Error kinds use e = reference - signal. Values are per element (per joint) in the signal's units
(s for times, rad s for iae of an angle, and so on), or dimensionless for ratios.

The kinds live in one catalogue, METRIC_KINDS: `register_metric` adds one (a shipped kind or a
user's), `check_metrics` and `compute_metrics` read it, and docs/metrics.md is generated from it
(`python cli.py metrics --markdown`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ParameterError
from ..reading.limits import shown


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    reads: "error" (a signal and a reference signal, e = reference - signal), "signal" (one
           signal) or "events" (the run's events; computed by compute_metrics itself);
    units: the value's units, in words relative to the signal's ("the signal's units", "s", "-");
    doc: what the value is; options: {option: what it means (with units and default)};
    values(t, y, ref, options) -> (w,) per element, y and ref (n, w) on times t (n,) in s.
    """

    name: str
    reads: str
    units: str
    doc: str
    options: dict
    values: Callable | None


METRIC_KINDS: dict[str, MetricKind] = {}
"""Every metric kind, by name, in the order registered."""


def register_metric(name: str, reads: str, units: str, doc: str, options: dict | None = None):
    """Decorator: register values(t, y, ref, options) as metric kind `name` (see MetricKind)."""
    if reads not in ("error", "signal", "events"):
        raise ValueError(f"reads must be error, signal or events, not {reads!r}")

    def add(values):
        METRIC_KINDS[name] = MetricKind(name, reads, units, doc, dict(options or {}), values)
        return values
    return add


def _trapz(y: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(t)[:, None], axis=0)


@register_metric("max_abs_error", "error", "the signal's units", "max |e| over the window")
def _max_abs_error(t, y, ref, options):
    return np.max(np.abs(ref - y), axis=0)


@register_metric("rms_error", "error", "the signal's units",
                 "sqrt(1/T int e^2 dt) over the window (trapezoidal rule on the log grid)")
def _rms_error(t, y, ref, options):
    e = ref - y
    return np.sqrt(_trapz(e ** 2, t) / (t[-1] - t[0])) if len(t) > 1 else np.abs(e[0])


@register_metric("iae", "error", "the signal's units x s", "int |e| dt over the window")
def _iae(t, y, ref, options):
    return _trapz(np.abs(ref - y), t)


@register_metric("ise", "error", "the signal's units squared x s", "int e^2 dt over the window")
def _ise(t, y, ref, options):
    return _trapz((ref - y) ** 2, t)


@register_metric("phase_lag", "error", "s",
                 "the delay of the signal behind the reference that maximises their "
                 "cross-correlation (positive: the signal lags)")
def _phase_lag(t, y, ref, options):
    return _lag(t, y, ref)


@register_metric("amplitude_ratio", "error", "-",
                 "peak-to-peak of the signal over peak-to-peak of the reference")
def _amplitude_ratio(t, y, ref, options):
    return np.ptp(y, axis=0) / np.ptp(ref, axis=0)


@register_metric("overshoot", "signal", "-",
                 "(peak - final) / (final - initial), the peak taken in the direction of the "
                 "move; 0 when the signal ends where it started")
def _overshoot(t, y, ref, options):
    start, final = y[0], y[-1]
    span = final - start
    peak = np.where(span >= 0, np.max(y, axis=0), np.min(y, axis=0))
    return np.where(span != 0, (peak - final) / np.where(span != 0, span, 1.0), 0.0)


@register_metric("settling_time", "signal", "s",
                 "time from the window's start until the signal stays within a band of "
                 "tolerance |final - initial| around its final value",
                 {"tolerance": "the band's half-width as a fraction of the move (default 0.02)"})
def _settling_time(t, y, ref, options):
    tol = float(options.get("tolerance", 0.02))
    start, final = y[0], y[-1]
    band = tol * np.maximum(np.abs(final - start), np.finfo(float).tiny)
    out = np.empty(y.shape[1])
    for i in range(y.shape[1]):
        outside = np.nonzero(np.abs(y[:, i] - final[i]) > band[i])[0]
        out[i] = 0.0 if len(outside) == 0 else t[min(outside[-1] + 1, len(t) - 1)] - t[0]
    return out


@register_metric("peak", "signal", "the signal's units", "max |y| over the window")
def _peak(t, y, ref, options):
    return np.max(np.abs(y), axis=0)


@register_metric("rms", "signal", "the signal's units", "sqrt(1/T int y^2 dt) over the window")
def _rms(t, y, ref, options):
    return np.sqrt(_trapz(y ** 2, t) / (t[-1] - t[0]))


@register_metric("energy_drift", "signal", "-",
                 "max |y - y(0)| / |y(0)|: the relative drift of a conserved quantity (an energy)")
def _energy_drift(t, y, ref, options):
    return np.max(np.abs(y - y[0]), axis=0) / np.maximum(np.abs(y[0]), np.finfo(float).tiny)


@register_metric("final_value", "signal", "the signal's units", "y at the window's end")
def _final_value(t, y, ref, options):
    return y[-1]


def _alarm(y, options) -> np.ndarray:
    """(n, w) bool: the alarm per sample, |y| >= options' threshold (scalar or per element), or
    y != 0 without one (a detector's flag)."""
    threshold = options.get("threshold")
    if threshold is None:
        return y != 0.0
    return np.abs(y) >= np.broadcast_to(np.asarray(threshold, dtype=float), (y.shape[1],))


def _onset(options, kind: str, required: bool) -> float:
    onset = options.get("onset")
    if onset is None and not required:
        return np.inf
    if isinstance(onset, bool) or not isinstance(onset, (int, float, np.integer, np.floating)) \
            or not np.isfinite(onset):
        raise ParameterError(f"metric {kind} needs 'onset', the time of the real event (s, a finite "
                             f"number), got {shown(onset)}")
    return float(onset)


@register_metric("detection_delay", "signal", "s",
                 "the delay from `onset` to the detection (inf when there is none at or after "
                 "it): of a detector's `t_detect` (its first detection times, s, negative before "
                 "one; the located time, not the log's), its value at the window's end minus "
                 "`onset`; with `threshold`, of a residual or flag, the first logged sample at or "
                 "after `onset` where |y| >= threshold, minus `onset`",
                 {"onset": "the time of the real event (s), required",
                  "threshold": "read the signal as a residual or flag: alarm level on |y| (scalar "
                               "or per element); default: the signal is a detection time"})
def _detection_delay(t, y, ref, options):
    onset = _onset(options, "detection_delay", True)
    if options.get("threshold") is None:
        first = y[-1]
        return np.where(first >= onset - 1e-12, first - onset, np.inf)
    alarm = _alarm(y, options) & (t >= onset - 1e-12)[:, None]
    out = np.full(y.shape[1], np.inf)
    for i in range(y.shape[1]):
        hits = np.nonzero(alarm[:, i])[0]
        if len(hits):
            out[i] = t[hits[0]] - onset
    return out


@register_metric("false_alarms", "signal", "-",
                 "the number of times the alarm rises before `onset` within the window (an alarm "
                 "up at the window's start counts once): a detector's flag nonzero, or |y| >= "
                 "`threshold`",
                 {"onset": "the time of the real event (s); default: none, every alarm is false",
                  "threshold": "alarm level on |y| (scalar or per element; default: y != 0)"})
def _false_alarms(t, y, ref, options):
    onset = _onset(options, "false_alarms", False)
    before = t < onset - 1e-12
    alarm = _alarm(y[before], options)
    if not len(alarm):
        return np.zeros(y.shape[1])
    rises = alarm[1:] & ~alarm[:-1]
    return (alarm[0].astype(float) + rises.sum(axis=0)).astype(float)


register_metric("event_times", "events", "s",
                "per reference time t_ref_k, |t_k - t_ref_k| for the block's k-th event (inf "
                "where the run has fewer); reads `block` and `reference` (a list of times, s) "
                "instead of a signal",
                {"block": "the block whose events are timed",
                 "reference": "the expected event times, s",
                 "index": "only this event function of the block (default: all)"})(None)


def metric_values(kind: str, t: np.ndarray, y: np.ndarray, ref: np.ndarray | None,
                  options: dict) -> np.ndarray:
    """One metric for signal y (n, w) against ref (n, w) or None, on times t (n,); per element."""
    entry = METRIC_KINDS.get(kind)
    if entry is None or entry.values is None:
        raise ParameterError(f"unknown metric kind '{kind}'")
    return entry.values(t, y, ref, options)


def markdown() -> str:
    """docs/metrics.md: every metric kind, what it reads, its units and options."""
    lines = ["# Metric kinds", "",
             "Generated from the catalogue (`python cli.py metrics --markdown --out docs/metrics.md`).",
             "A diagram's `metrics:` list holds entries `{name, kind, signal, reference, from, to, ...}`:",
             "`name` defaults to the kind; `from` and `to` (s) bound the time window (default: the",
             "whole log); error kinds read e = reference - signal. Each value is per element of the",
             "signal (per joint), per batch member for a batch run.", ""]
    reads = {"error": "`signal` and `reference`", "signal": "`signal`", "events": "the run's events"}
    for kind in METRIC_KINDS.values():
        lines += [f"## {kind.name}", "", f"- value: {kind.doc}", f"- reads: {reads[kind.reads]}",
                  f"- units: {kind.units}"]
        lines += [f"- `{key}`: {text}" for key, text in kind.options.items()]
        lines.append("")
    return "\n".join(lines)


def _lag(t: np.ndarray, y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Delay (s) of y behind ref that maximises their cross-correlation (positive: y lags)."""
    dt = np.diff(t)
    if len(t) < 3 or not np.allclose(dt, dt[0], rtol=1e-9, atol=0):
        grid = np.linspace(t[0], t[-1], len(t))
        y = np.column_stack([np.interp(grid, t, y[:, i]) for i in range(y.shape[1])])
        ref = np.column_stack([np.interp(grid, t, ref[:, i]) for i in range(ref.shape[1])])
        step = grid[1] - grid[0]
    else:
        step = dt[0]
    out = np.empty(y.shape[1])
    for i in range(y.shape[1]):
        a = ref[:, i] - ref[:, i].mean()
        b = y[:, i] - y[:, i].mean()
        corr = np.correlate(b, a, mode="full")
        out[i] = (np.argmax(corr) - (len(a) - 1)) * step
    return out


def check_metrics(cd, logged, span: tuple[float, float] | None = None) -> None:
    """Refuse, before a run, a `metrics:` entry that compute_metrics would refuse after it: an
    unknown kind, a missing signal or reference, a signal that names no block output or is not
    logged, a window that misses the run's span (start, stop) in s, an event_times entry without
    a block that has event functions or without a list of reference times. cd: the compiled
    diagram; logged: {'block.port': (block, port)} of the run."""
    spec = cd.spec
    for k, item in enumerate(spec.metrics):
        where = spec.where.get(f"metrics[{k}]")
        kind, name = _kind_and_name(item, where)
        if METRIC_KINDS[kind].reads == "events":
            _event_reference(item, name, where)
            block = item.get("block")
            if block not in cd.blocks or not cd.blocks[block].n_zc:
                from ..errors import did_you_mean
                hint = did_you_mean(str(block), cd.blocks) if block not in cd.blocks else ""
                raise ParameterError(f"metric {shown(name)} (event_times): block {shown(block)} "
                                     + ("has no event functions" if block in cd.blocks
                                        else f"does not exist{hint}"), where=where)
            continue
        _needs_signal(item, kind, name, where)
        lo, hi = _window(item, name, where, span or (0.0, 0.0))
        miss = _missed_span(lo, hi, span) if span is not None else None
        if miss:
            raise ParameterError(f"metric {shown(name)}: its window {miss}", where=where)
        if kind in ("detection_delay", "false_alarms"):
            try:
                _onset(item, kind, kind == "detection_delay")
            except ParameterError as err:
                raise err.located(where=where)
        for key in ("signal", "reference") if "reference" in item else ("signal",):
            if not isinstance(item[key], str):
                raise ParameterError(f"metric {shown(name)}: {key} must name a logged signal as "
                                     f"'block.port', got {shown(item[key])}", where=where)
            block, port = cd.resolve_signal(item[key], where)
            if f"{block}.{port}" not in logged:
                raise ParameterError(f"metric {shown(name)} reads {key} {shown(item[key])}, which is not "
                                     f"logged (add it to log.signals)", where=where)


def _missed_span(lo: float, hi: float, span: tuple[float, float]) -> str | None:
    """How the window [lo, hi] (s) holds no time of the run's span (start, stop), or None."""
    if lo > span[1]:
        return f"starts at {lo:g} s, after the run ends at {span[1]:g} s"
    if hi < span[0]:
        return f"ends at {hi:g} s, before the run starts at {span[0]:g} s"
    if lo > hi:
        return f"starts at {lo:g} s, after it ends at {hi:g} s"
    return None


def _kind_and_name(item, where) -> tuple[str, str]:
    kind = item.get("kind")
    if not isinstance(kind, str) or kind not in METRIC_KINDS:
        from ..errors import did_you_mean
        hint = did_you_mean(kind, METRIC_KINDS) if isinstance(kind, str) else ""
        raise ParameterError(f"metric kind {shown(kind)} unknown{hint}; "
                             f"kinds: {', '.join(METRIC_KINDS)} (docs/metrics.md)", where=where)
    name = item.get("name", kind)
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"metric name must be a text such as tracking, got {shown(name)}",
                             where=where)
    return kind, name


def metric_names(spec) -> list[str]:
    """The names of a diagram's metrics, in the order of its metrics: section."""
    return [_kind_and_name(item, spec.where.get(f"metrics[{k}]"))[1]
            for k, item in enumerate(spec.metrics)]


def _window(item, name, where, whole: tuple[float, float]) -> tuple[float, float]:
    """The metric's window (from, to) in s, `whole` where a bound is not given; a bound that is
    not a finite number is refused."""
    bounds = []
    for key, default in zip(("from", "to"), whole):
        value = item.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value):
            raise ParameterError(f"metric {shown(name)}: {key} must be a time (s), a finite "
                                 f"number, got {shown(value)}", where=where)
        bounds.append(float(value))
    return bounds[0], bounds[1]


def _needs_signal(item, kind, name, where) -> None:
    if "signal" not in item:
        raise ParameterError(f"metric {shown(name)} needs 'signal'", where=where)
    if METRIC_KINDS[kind].reads == "error" and "reference" not in item:
        raise ParameterError(f"metric {shown(name)} ({kind}) needs 'reference'", where=where)


def compute_metrics(spec, result) -> dict:
    """{metric name: [value per element]} (batched runs: [[per element] per member])."""
    out = {}
    for k, item in enumerate(spec.metrics):
        where = spec.where.get(f"metrics[{k}]")
        kind, name = _kind_and_name(item, where)
        if METRIC_KINDS[kind].reads == "events":
            out[name] = _event_times(result, item, name, where)
            continue
        _needs_signal(item, kind, name, where)
        t = result.t
        lo, hi = _window(item, name, where, (t[0], t[-1]))
        window = (t >= lo - 1e-12) & (t <= hi + 1e-12)
        members = range(result.batch) if result.batched else [0]
        values = []
        for m in members:
            r = result.member(m) if result.batched else result
            y = _signal(r, item["signal"], where)[window]
            ref = _signal(r, item["reference"], where)[window] if "reference" in item else None
            if ref is not None and ref.shape != y.shape:
                ref = np.broadcast_to(ref, y.shape)
            values.append(metric_values(kind, t[window], y, ref, item).tolist())
        out[name] = values if result.batched else values[0]
    return out


def _event_times(result, item, name, where):
    """The event_times metric: per reference time (s), |t_k - t_ref_k| of the block's k-th event
    (inf where the run has fewer), per member for a batched run."""
    block, index = item.get("block"), item.get("index")
    ref = _event_reference(item, name, where)
    members = range(result.batch) if result.batched else [0]
    values = []
    events = [e for e in result.events
              if e.block == block and (index is None or e.index == int(index))]
    for m in members:
        times = [e.t for e in events if e.member == m]
        got = np.full(len(ref), np.inf)
        n = min(len(times), len(ref))
        got[:n] = np.abs(np.asarray(times[:n]) - ref[:n])
        values.append(got.tolist())
    return values if result.batched else values[0]


def _event_reference(item, name, where) -> np.ndarray:
    """The event_times metric's reference times (s), checked."""
    reference = item.get("reference")
    if item.get("block") is None or not isinstance(reference, (list, tuple, np.ndarray)) \
            or not len(reference):
        raise ParameterError(f"metric {shown(name)} (event_times) needs 'block' and 'reference', a "
                             "list of times (s)", where=where)
    try:
        return np.asarray([float(v) for v in np.ravel(reference)])
    except (TypeError, ValueError):
        raise ParameterError(f"metric {shown(name)}: reference must be a list of times (s)",
                             where=where) from None


def _signal(result, name, where):
    try:
        return result[name]
    except KeyError as err:
        raise ParameterError(f"metric signal: {err.args[0]} (add it to log.signals)",
                             where=where) from None


def format_table(metrics_by_variant: dict[str, dict[str, list]]) -> str:
    """A plain-text table: one row per variant and metric, one column per element (joint)."""
    rows = []
    width = 0
    for variant, metrics in metrics_by_variant.items():
        for name, values in metrics.items():
            flat = np.ravel(np.asarray(values, dtype=float))
            width = max(width, len(flat))
            rows.append((variant, name, flat))
    if not rows:
        return ""
    header = f"{'variant':<26} {'metric':<22}" + "".join(f"{'[' + str(i) + ']':>14}"
                                                        for i in range(width))
    lines = [header, "-" * len(header)]
    for variant, name, flat in rows:
        lines.append(f"{variant:<26} {name:<22}" + "".join(f"{v:>14.6g}" for v in flat))
    return "\n".join(lines)
