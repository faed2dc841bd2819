"""Frequency response of the nonlinear diagram itself (as Simulink's frestimate): a multisine
injected at the analysis input by a run of the diagram from its operating point, the response
at the analysis output measured over whole periods once the run has settled, set against the
linear model at the same frequencies (docs/analysis.md, "Frequency response of the diagram").

The injection is the sum of K sines at multiples m_k f0 of a base frequency f0 (one period
1 / f0 holds every line a whole number of times), each of the same peak amplitude a, with
Schroeder's phases -pi k (k - 1) / K (a low crest factor: the sum's peak stays near
a sqrt(2 K) rather than K a). A loop seen from one point (input, output and opening at one
signal) is measured closed, as it runs: the injection u is added to the signal s, its readers
read r = s + u, and s = H r with H the model (-L), so H = S / R from the two spectra; any other
model is measured with its openings held as in the linearisation, H = Y / U. A linear diagram
in periodic steady state answers only at the lines; what the output holds at the other
frequencies of the window (harmonics and intermodulation of a block that saturates or switches,
a transient not yet settled) is the distortion, reported relative to the lines' power: the
check that the amplitude is small enough.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ..diagram.compiler import compile_diagram
from ..diagram.diagram import Diagram, load as load_diagram
from ..diagram.settings import LogSettings
from ..diagram.spec import BlockSpec, ConnectionSpec, Endpoint
from ..engine.simulate import make_simulation
from ..errors import AnalysisError, SourceLoc
from .linearize import LinearModel, linear_model
from .margins import response
from .operating_point import load, snapshot
from .points import instrument
from .report import margins_of, modes

LINES = 10
"""Frequencies measured by default."""

AMPLITUDE = 1e-3
"""The default peak of each sine, relative to max(1, |the signal's value at the operating
point|) (in the signal's units: 1 mN m on a torque of up to 1 N m)."""

SETTLE_TIME_CONSTANTS = 12
"""The run settles for this many of the slowest time constant of the measured model's poles
(e^-12 = 6e-6 of a transient left) before the measurement window."""

DISTORTION_LIMIT = 1e-6
"""The largest distortion (the output's power away from the lines over its power at them) of
a response measured as linear; above it, the report says the diagram did not answer linearly at
that amplitude."""


@dataclass
class FrequencyResponse:
    """A measured frequency response: frequencies (Hz), measured (the nonlinear diagram's
    response, complex: output over input, or the loop L = -model for a loop, as the Bode plot
    draws it), linear (the linear model's at the same frequencies, likewise), amplitude (the peak of each sine, in the input's units),
    distortion (the output's power away from the lines over that at them), settle and window
    (s: the run's time before the measurement and the measurement, one period 1 / f0), mode
    (the run's execution mode), model (the LinearModel compared with)."""

    frequencies: np.ndarray
    measured: np.ndarray
    linear: np.ndarray
    amplitude: float
    distortion: float
    settle: float
    window: float
    mode: str
    model: LinearModel

    @property
    def gain_error(self) -> np.ndarray:
        """20 log10 |measured / linear| per frequency, dB."""
        return 20 * np.log10(np.abs(self.measured / self.linear))

    @property
    def phase_error(self) -> np.ndarray:
        """angle(measured / linear) per frequency, deg (in (-180, 180])."""
        return np.degrees(np.angle(self.measured / self.linear))

    @property
    def linear_enough(self) -> bool:
        return self.distortion <= DISTORTION_LIMIT

    def table(self) -> str:
        """Per frequency: Hz, the measured and the linear gain (dB) and phase (deg), and their
        differences."""
        rows = [f"{'Hz':>10}  {'gain dB':>9}  {'linear':>9}  {'phase deg':>9}  {'linear':>9}  "
                f"{'d dB':>8}  {'d deg':>8}"]
        for f, h, g, dg, dp in zip(self.frequencies, self.measured, self.linear,
                                   self.gain_error, self.phase_error):
            rows.append(f"{f:>10.5g}  {20 * math.log10(abs(h)):>9.3f}  "
                        f"{20 * math.log10(abs(g)):>9.3f}  {math.degrees(np.angle(h)):>9.3f}  "
                        f"{math.degrees(np.angle(g)):>9.3f}  {dg:>8.4f}  {dp:>8.4f}")
        return "\n".join(rows)

    def as_dict(self) -> dict:
        return {"frequencies": self.frequencies.tolist(),
                "measured": {"gain_db": (20 * np.log10(np.abs(self.measured))).tolist(),
                             "phase_deg": np.degrees(np.angle(self.measured)).tolist()},
                "linear": {"gain_db": (20 * np.log10(np.abs(self.linear))).tolist(),
                           "phase_deg": np.degrees(np.angle(self.linear)).tolist()},
                "gain_error_db": self.gain_error.tolist(),
                "phase_error_deg": self.phase_error.tolist(),
                "amplitude": self.amplitude, "distortion": self.distortion,
                "linear_enough": self.linear_enough, "settle": self.settle,
                "window": self.window, "mode": self.mode, "loop": self.model.loop,
                "input": self.model.inputs[0], "output": self.model.outputs[0],
                "units": "frequencies Hz, gains dB, phases deg, settle and window s, amplitude "
                         "the input's units (peak of each sine)"}


def frequency_response(diagram, band=None, lines: int = LINES, amplitude: float | None = None,
                       settle: float | None = None, mode: str | None = None, inputs=None,
                       outputs=None, openings=None, at=None, period=None, *,
                       origin: str = "keyword", model: LinearModel | None = None
                       ) -> FrequencyResponse:
    """The diagram's frequency response from its one analysis input to its one output (one
    element each), measured by a run (the module docstring) and set against its linear model.

    band: (lowest, highest) frequency in Hz (default: a decade either side of the loop's
    crossover, or of the model's modes, up to half the Nyquist frequency), `lines` frequencies
    spaced evenly in log between them, each rounded to a multiple of the base frequency (the
    lowest); amplitude: the peak of each sine in the input's units (default AMPLITUDE
    max(1, |u0|)); settle: s before the measurement (default SETTLE_TIME_CONSTANTS of the slowest
    time constant of the measured model's poles); mode: the run's execution mode (auto,
    interpreted, compiled; default: the diagram's simulation.mode); the analysis keywords as for linear_model; model: that linear model
    when the caller has it already."""
    d = diagram if isinstance(diagram, Diagram) else load_diagram(diagram)
    if model is None:
        model = linear_model(d, inputs, outputs, openings, at, period, origin=origin)
    points = model.settings
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise AnalysisError(
            f"a frequency response is measured from one input to one output (one element each), "
            f"not {len(model.inputs)} inputs and {len(model.outputs)} outputs "
            f"({', '.join(model.inputs)} to {', '.join(model.outputs)})",
            where=points.loc("inputs") or points.loc("outputs"))
    cd0 = d.compile()
    u_point, y_point = points.inputs[0], points.outputs[0]
    closed = bool(model.loop)
    run_points = replace(points, openings=()) if closed else points
    inst = instrument(cd0, run_points)
    snap = snapshot(cd0, d.settings, d.log_settings, points.at)
    t0 = snap.t

    # the time grid: the log at the model's period (or a step of the run), the window a whole
    # number of log intervals
    step = d.settings.step if not d.settings.adaptive and d.settings.step is not None else None
    tick = Fraction(model.dt).limit_denominator(10 ** 12) if model.dt else None
    lo, hi = _band(model, band)
    if tick is None:
        tick = Fraction(1, 2 ** max(0, math.ceil(math.log2(8 * hi))))
        if step is not None:
            tick = max(1, round(tick / step)) * step
    if step is not None and (tick / step).denominator != 1:
        tick = step * math.ceil(tick / step)
    samples = max(2, math.ceil(1 / (lo * tick)))
    window = samples * tick
    f0 = 1 / float(window)
    m = _lines(lo, hi, lines, f0, samples)
    freqs = m * f0

    u_width = cd0.out_widths[u_point.block][u_point.port]
    scale = max(1.0, float(np.max(np.abs(snap.signals[u_point.signal]))))
    a = float(amplitude) if amplitude is not None else AMPLITUDE * scale
    if not a > 0 or not math.isfinite(a):
        raise AnalysisError(f"the injection's amplitude must be a positive number, not {a}")
    if settle is None:
        settle = SETTLE_TIME_CONSTANTS * _slowest_time_constant(model, closed)
    settle_ticks = math.ceil(Fraction(settle).limit_denominator(10 ** 12) / tick)
    settle_time = settle_ticks * tick

    hold = None
    if model.dt:
        period = Fraction(model.dt).limit_denominator(10 ** 12)
        hold = (period, t0 % period)
    spec, logged, names = _excited(inst, u_point, y_point, u_width, freqs, a, closed, hold)
    cd = compile_diagram(spec, 1)
    timing = {"start_time": t0, "stop_time": t0 + settle_time + window}
    settings = d.settings.changed(timing | ({"mode": mode} if mode is not None else {}),
                                  origin="frequency response")
    log = LogSettings(signals=tuple(logged), every=tick, file=d.settings.file)
    sim = make_simulation(cd, settings, log, logged={n: logged[n] for n in logged})
    base_start = sim.start
    offsets = {}
    for text, value in points.at.inputs.items():
        offsets[next(p for p in points.inputs if points.names[p] == text)] = value

    def start():
        base_start()
        load(sim, cd, snap, inst.injection, inst.opened, offsets)
    sim.start = start
    out = sim.run()
    if out.interrupted:
        raise AnalysisError("the frequency-response run was interrupted")
    y = out.signals[names["y"]][0, -samples:, y_point.index or 0]
    u = out.signals[names["u"]][0, -samples:, u_point.index or 0]
    Y, U = np.fft.rfft(y), np.fft.rfft(u)
    measured = Y[m] / U[m]
    others = np.ones(Y.size, dtype=bool)
    others[0] = False
    others[m] = False
    if samples % 2 == 0:
        others[-1] = False
    distortion = max(_distortion(Y, m, others), _distortion(U, m, others))
    linear = response(model.A, model.B, model.C, model.D, model.dt, 2 * math.pi * freqs)[:, 0, 0]
    if closed:                                       # the loop L = -model, as drawn
        measured, linear = -measured, -linear
    return FrequencyResponse(freqs, measured, linear, a, distortion, float(settle_time),
                             float(window), out.stats.get("mode", "interpreted"), model)


def _distortion(X: np.ndarray, m: np.ndarray, others: np.ndarray) -> float:
    """The power of spectrum X away from the lines m (others: those bins) over its power at
    them."""
    power = np.sum(np.abs(X[m]) ** 2)
    return float(np.sum(np.abs(X[others]) ** 2) / power) if power > 0 else math.inf


def _band(model: LinearModel, band) -> tuple[float, float]:
    """The band measured (Hz): given, or a decade either side of the loop's crossover (of the
    model's modes otherwise), below half the Nyquist frequency."""
    nyquist = 0.5 / model.dt if model.dt else math.inf
    if band is not None:
        lo, hi = (float(b) for b in band)
        if not 0 < lo < hi:
            raise AnalysisError(f"the band of a frequency response is two frequencies in Hz, "
                                f"0 < lowest < highest, not {lo} and {hi}")
        if hi >= nyquist:
            raise AnalysisError(f"the band's highest frequency {hi} Hz is not below the model's "
                                f"Nyquist frequency {nyquist} Hz")
        return lo, hi
    if model.loop:
        centre = margins_of(model).crossover
        lo, hi = centre / 10, centre * 10
    else:
        found = [f for f, _ in modes(model) if f > 0]
        if not found:
            raise AnalysisError("a model without modes has no default band: give one (Hz)")
        lo, hi = min(found) / 10, max(found) * 10
    return lo, min(hi, nyquist / 2)


def _lines(lo: float, hi: float, count: int, f0: float, samples: int) -> np.ndarray:
    """count multiples of f0, spaced evenly in log from lo to hi, rounded, distinct, each below
    the window's Nyquist bin."""
    if count < 1:
        raise AnalysisError(f"a frequency response needs at least one frequency, not {count}")
    wanted = np.geomspace(lo, hi, count) if count > 1 else np.array([lo])
    m = []
    for f in wanted:
        k = max(1, int(round(f / f0)))
        while k in m:
            k += 1
        m.append(k)
    m = np.array(m)
    if m.max() >= samples // 2:
        raise AnalysisError(f"the highest frequency {m.max() * f0:.6g} Hz is not below half the "
                            f"rate of the measurement ({samples / 2 * f0:.6g} Hz)")
    return m


def _slowest_time_constant(model: LinearModel, closed: bool) -> float:
    """The slowest time constant (s) of the poles of what is run: the closed loop for a loop
    model, the model otherwise; a pole on the stability boundary never settles (an error)."""
    A = model.A
    if closed:
        k = 1.0 / (1.0 - model.D[0, 0])
        A = A + k * model.B @ model.C
    eig = np.linalg.eigvals(A).astype(complex) if A.size else np.zeros(0, complex)
    if model.dt:
        eig = eig[np.abs(eig) > 0]
        rates = -np.log(np.abs(eig)) / model.dt
    else:
        rates = -eig.real
    if rates.size and rates.min() <= 1e-9 * max(1.0, np.abs(rates).max()):
        raise AnalysisError(
            f"what is run ({'the closed loop' if closed else 'the model'}) has a pole on or "
            "beyond the stability boundary (an integrator, an undamped mode or an instability): "
            "its response to a sine does not settle, so it has no frequency response to measure "
            "(close a loop around it, or add damping)")
    return float(1.0 / rates.min()) if rates.size else 0.0


def _excited(inst, u_point, y_point, width, freqs, a, closed, hold):
    """The instrumented spec with the multisine added to the input's injection (a Sine of K
    elements, a Gain that sums them into the input's element; for a discrete model held over
    its period by a ZeroOrderHold, hold = (period, offset) in s, as the model holds its inputs),
    the signals to log {name: (block, port)} and which is the output ("y") and the input ("u")
    of the measurement."""
    spec = inst.spec
    blocks, connections = dict(spec.blocks), list(spec.connections)
    signal = u_point.signal
    held = inst.injection[signal]
    loc = spec.blocks[held].where or SourceLoc(spec.file)
    K = len(freqs)
    k = np.arange(1, K + 1)
    stem = held + "_multisine"
    sines, gather, total = stem, stem + "_gain", stem + "_sum"
    blocks[sines] = BlockSpec(sines, "Sine", {"amplitude": np.full(K, a), "frequency": freqs,
                                              "phase": -math.pi * k * (k - 1) / K}, loc)
    rows = np.zeros((width, K))
    rows[u_point.index or 0] = 1.0
    blocks[gather] = BlockSpec(gather, "Gain", {"gain": rows}, loc)
    blocks[total] = BlockSpec(total, "Sum", {"signs": "++"}, loc)
    connections = [ConnectionSpec(Endpoint(total, None), c.dst, c.where)
                   if c.src.block == held else c for c in connections]
    excitation = gather
    if hold is not None:
        excitation = stem + "_hold"
        blocks[excitation] = BlockSpec(excitation, "ZeroOrderHold",
                                       {"period": hold[0], "offset": hold[1]}, loc)
        connections.append(ConnectionSpec(Endpoint(gather, None), Endpoint(excitation, "in"),
                                          loc))
    connections += [ConnectionSpec(Endpoint(sines, None), Endpoint(gather, "in"), loc),
                    ConnectionSpec(Endpoint(held, None), Endpoint(total, "in1"), loc),
                    ConnectionSpec(Endpoint(excitation, None), Endpoint(total, "in2"), loc)]
    y_name = f"{y_point.block}.{y_point.port}"
    logged = {y_name: y_point.signal}
    if closed:
        feed = inst.feeds[signal]
        u_name = f"{feed}.out"
        logged[u_name] = (feed, "out")
    else:
        u_name = f"{excitation}.out"
        logged[u_name] = (excitation, "out")
    return replace(spec, blocks=blocks, connections=connections), logged, {"y": y_name,
                                                                          "u": u_name}
