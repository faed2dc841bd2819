"""Signal sources: blocks with no inputs whose outputs are functions of time only (or of a seed and
the sample index, for noise)."""
from __future__ import annotations

import csv
import math
import os
from collections import namedtuple

import numpy as np
from numba import njit

from ..errors import BlocksimError, ParameterError
from ..twins import own_twin
from ._bases import OFFSET, PERIOD, times_within
from ._kernels import NoParams, fill_rows, kernel_params, no_update
from .base import Block, Kernels, Param, common_width, register

ConstantParams = namedtuple("ConstantParams", "value")
"""Constant kernel's record: the value as a (B, w) row."""


@njit(cache=True, forceinline=True, _nrt=False)
def constant_output(t, xc, xd, u, y, p):
    fill_rows(p.value, y[0])


@register
class Constant(Block):
    """A constant value (scalar, vector), computed once."""

    type_name = "Constant"
    summary = "constant output value"
    params = {"value": Param(1.0, "any", "the output value (scalar or vector)")}
    inputs = ()
    sample = "constant"

    def resolve_widths(self, in_widths):
        return {"out": self.param_width("value")}

    def record(self, v):
        return kernel_params(ConstantParams,
                             value=self.param_as_row("value", self.out_widths["out"], v))

    def kernels(self):
        # computed once in Python while it is constant-rate; the kernel is there for when it is not
        return Kernels(output=constant_output)


class TimeSource(Block):
    """Shared shape of the time-driven sources: no inputs, continuous, width from vector params.

    A subclass names its output kernel and its record type (`record_type`): the `width_params` of
    the run's values, each a (B, width) row, field named as the parameter (`record(v)`)."""

    inputs = ()
    sample = "continuous"
    time_varying = True
    width_params: tuple[str, ...] = ()

    output_kernel = None
    """The module-level compiled output(t, xc, xd, u, y, p) (see Kernels)."""

    record_type: type = None
    """The output kernel's parameter record (a namedtuple with the `width_params` as fields)."""

    def setup(self):
        self._width = common_width(self, self.width_params)

    def resolve_widths(self, in_widths):
        return {"out": self._width}

    def row_fields(self, width, v) -> dict:
        """Every width parameter of the values v as a (B, width) array, by name."""
        return {key: self.param_as_row(key, width, v) for key in self.width_params}

    def record(self, v):
        return kernel_params(self.record_type, **self.row_fields(self.out_widths["out"], v))

    def kernels(self):
        return Kernels(output=self.output_kernel)


# ---- Step, Ramp, Sine, Chirp ----------------------------------------------------------------------

@njit(cache=True, forceinline=True, _nrt=False)
def step_kernel(t, time, initial, final, y):
    """y = initial for t < time, final for t >= time, elementwise."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = final[b, i] if t >= time[b, i] else initial[b, i]


StepParams = namedtuple("StepParams", "time initial final")


@njit(cache=True, forceinline=True, _nrt=False)
def step_output(t, xc, xd, u, y, p):
    step_kernel(t, p.time, p.initial, p.final, y[0])


@register
class Step(TimeSource):
    """A jump from `initial` to `final` at `time` (the output is `final` from `time` on).

    The step time is a breakpoint: adaptive solvers stop on it instead of smearing the jump. The
    output is piecewise constant, so it is evaluated at major steps only (time_varying False):
    solver stages inside the step that ends on the step time see `initial`, as they should.
    """

    type_name = "Step"
    summary = "step from initial to final at a time"
    params = {"time": Param(1.0, "s", "step time"),
              "initial": Param(0.0, "units of y", "output before the step"),
              "final": Param(1.0, "units of y", "output from the step time on")}
    width_params = ("time", "initial", "final")
    time_varying = False
    output_kernel = staticmethod(step_output)
    record_type = StepParams

    def breakpoints(self, t0, t1, p=None):
        return times_within(self.own_record(p).time, t0, t1)


@njit(cache=True, forceinline=True, _nrt=False)
def ramp_kernel(t, slope, start, initial, y):
    """y = initial + slope * max(0, t - start), elementwise."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            dt = t - start[b, i]
            y[b, i] = initial[b, i] + (slope[b, i] * dt if dt > 0.0 else 0.0)


RampParams = namedtuple("RampParams", "slope start_time initial")


@njit(cache=True, forceinline=True, _nrt=False)
def ramp_output(t, xc, xd, u, y, p):
    ramp_kernel(t, p.slope, p.start_time, p.initial, y[0])


@register
class Ramp(TimeSource):
    """y = initial + slope * (t - start_time) from start_time on, `initial` before (a kink there)."""

    type_name = "Ramp"
    summary = "ramp of a given slope from a start time"
    params = {"slope": Param(1.0, "units of y / s", "rate of rise after the start time"),
              "start_time": Param(0.0, "s", "time the ramp starts"),
              "initial": Param(0.0, "units of y", "output up to the start time")}
    width_params = ("slope", "start_time", "initial")
    output_kernel = staticmethod(ramp_output)
    record_type = RampParams

    def breakpoints(self, t0, t1, p=None):
        return times_within(self.own_record(p).start_time, t0, t1)


@njit(cache=True, forceinline=True, _nrt=False)
def sine_kernel(t, amplitude, frequency, phase, bias, y):
    """y = amplitude sin(2 pi frequency t + phase) + bias, elementwise (frequency in Hz)."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            y[b, i] = amplitude[b, i] * math.sin(2.0 * math.pi * frequency[b, i] * t
                                                 + phase[b, i]) + bias[b, i]


SineParams = namedtuple("SineParams", "amplitude frequency phase bias")


@njit(cache=True, forceinline=True, _nrt=False)
def sine_output(t, xc, xd, u, y, p):
    sine_kernel(t, p.amplitude, p.frequency, p.phase, p.bias, y[0])


@register
class Sine(TimeSource):
    """y = amplitude * sin(2 pi frequency t + phase) + bias; frequency in Hz, phase in rad."""

    type_name = "Sine"
    summary = "sine wave (frequency in Hz)"
    params = {"amplitude": Param(1.0, "units of y", "peak amplitude"),
              "frequency": Param(1.0, "Hz", "frequency"),
              "phase": Param(0.0, "rad", "phase at t = 0"),
              "bias": Param(0.0, "units of y", "offset added to the wave")}
    width_params = ("amplitude", "frequency", "phase", "bias")
    output_kernel = staticmethod(sine_output)
    record_type = SineParams


@njit(cache=True)
def chirp_kernel(t, f0, f1, duration, amplitude, logarithmic, y):
    """Swept sine y = amplitude sin(phi(t)), phi' = 2 pi f(t), f from f0 to f1 (Hz) over `duration`
    (s), linearly or geometrically in time; after `duration` the frequency stays f1."""
    for b in range(y.shape[0]):
        for i in range(y.shape[1]):
            fa, fb, T = f0[b, i], f1[b, i], duration[b, i]
            tau = t if t < T else T
            if logarithmic and fa != fb:
                ratio = fb / fa
                cycles = fa * T / math.log(ratio) * (ratio ** (tau / T) - 1.0)
            else:
                cycles = fa * tau + 0.5 * (fb - fa) / T * tau * tau
            if t > T:
                cycles += fb * (t - T)
            y[b, i] = amplitude[b, i] * math.sin(2.0 * math.pi * cycles)


ChirpParams = namedtuple("ChirpParams", "f0 f1 duration amplitude logarithmic")


@njit(cache=True, forceinline=True, _nrt=False)
def chirp_output(t, xc, xd, u, y, p):
    chirp_kernel(t, p.f0, p.f1, p.duration, p.amplitude, p.logarithmic, y[0])


@register
class Chirp(TimeSource):
    """Swept sine for frequency-response tests: the frequency goes from f0 to f1 (Hz) over `duration`
    (s), linearly or logarithmically (geometrically) in time, then stays at f1. The phase is
    continuous; y(0) = 0."""

    type_name = "Chirp"
    summary = "swept sine from f0 to f1 Hz over a duration"
    params = {"f0": Param(0.1, "Hz", "frequency at t = 0"),
              "f1": Param(10.0, "Hz", "frequency reached at t = duration"),
              "duration": Param(10.0, "s", "sweep time"),
              "amplitude": Param(1.0, "units of y", "peak amplitude"),
              "method": Param("linear", "-", "frequency law in time", kind="str",
                              choices=("linear", "logarithmic"))}
    width_params = ("f0", "f1", "duration", "amplitude")

    def check_values(self, v):
        if np.any(v.duration <= 0):
            raise ParameterError("duration must be positive", block=self.name)
        if v.method == "logarithmic" and (np.any(v.f0 <= 0) or np.any(v.f1 <= 0)):
            raise ParameterError("a logarithmic sweep needs f0 > 0 and f1 > 0", block=self.name)

    output_kernel = staticmethod(chirp_output)
    record_type = ChirpParams

    def row_fields(self, width, v):
        return {**super().row_fields(width, v), "logarithmic": v.method == "logarithmic"}

    def breakpoints(self, t0, t1, p=None):
        return times_within(self.own_record(p).duration, t0, t1)


@njit(cache=True, forceinline=True, _nrt=False)
def clock_output(t, xc, xd, u, y, p):
    out = y[0]
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[b, i] = t


@register
class Clock(TimeSource):
    """y = t, the simulation time in s."""

    type_name = "Clock"
    summary = "simulation time"
    params = {}
    port_units = {"out": "s"}
    output_kernel = staticmethod(clock_output)
    record_type = NoParams


# ---- FromFile ---------------------------------------------------------------------------------------

INTERPOLATIONS = ("linear", "zoh", "cubic")


@njit(cache=True)
def table_kernel(t, times, values, coefs, method, y):
    """Interpolate the table at t (s), held at its ends; method 0 linear, 1 zoh, 2 cubic (`coefs`:
    (4, n - 1, m) piecewise-polynomial coefficients, highest power first, as SciPy's CubicSpline)."""
    n = times.shape[0]
    if t <= times[0]:
        for b in range(y.shape[0]):
            for j in range(y.shape[1]):
                y[b, j] = values[0, j]
        return
    if t >= times[n - 1]:
        for b in range(y.shape[0]):
            for j in range(y.shape[1]):
                y[b, j] = values[n - 1, j]
        return
    k = np.searchsorted(times, t, side="right") - 1
    dt = t - times[k]
    w = dt / (times[k + 1] - times[k])
    for j in range(y.shape[1]):
        if method == 0:
            v = values[k, j] + w * (values[k + 1, j] - values[k, j])
        elif method == 1:
            v = values[k, j]
        else:
            v = ((coefs[0, k, j] * dt + coefs[1, k, j]) * dt + coefs[2, k, j]) * dt + coefs[3, k, j]
        for b in range(y.shape[0]):
            y[b, j] = v


@register
class FromFile(Block):
    """Plays back columns of a table against time: a CSV file with a header row (a column named `t`
    or `time`, in s) or an NPZ file with key `t` and one key per signal (1-D, or 2-D (n, m) for m
    columns). Relative paths start at the diagram's folder. Interpolation linear, zoh (sample and
    hold, with breakpoints at the table times) or cubic (not-a-knot spline); outside the table the
    output holds the end values, or the run stops with an error (`extrapolation: error`)."""

    type_name = "FromFile"
    summary = "signals read from a CSV or NPZ table, interpolated in time"
    params = {"path": Param(units="-", doc="CSV (header row) or NPZ file; relative to the diagram",
                            kind="str"),
              "columns": Param(None, "-", "names of the columns / NPZ keys to output, in order "
                                          "(default: every one but time)", kind="any"),
              "interpolation": Param("linear", "-", "how to read between table times", kind="str",
                                     choices=INTERPOLATIONS),
              "extrapolation": Param("hold", "-", "outside the table: hold the end values or fail",
                                     kind="str", choices=("hold", "error"))}
    inputs = ()
    sample = "continuous"
    time_varying = True
    # no array parameters: the table comes from the file (its path, a str, is structure), read
    # once in setup(); the record carries it with the range of t accepted

    def setup(self):
        path = self.p.path
        if self.diagram_dir and not os.path.isabs(path):
            path = os.path.join(self.diagram_dir, path)
        if not os.path.isfile(path):
            raise ParameterError(f"file '{path}' not found", block=self.name)
        try:
            names, times, blocks = (self.read_npz(path) if path.endswith(".npz")
                                    else self.read_csv(path))
        except (OSError, ValueError) as err:
            raise ParameterError(f"cannot read '{path}': {err}", block=self.name) from None
        chosen = names if self.p.columns is None else self.p.columns
        if isinstance(chosen, str):
            chosen = [chosen]
        missing = [c for c in chosen if c not in names]
        if missing:
            raise ParameterError(f"'{path}' has no column '{missing[0]}'; it has: {', '.join(names)}",
                                 block=self.name)
        if not chosen:
            raise ParameterError(f"'{path}' has no signal columns", block=self.name)
        times = np.ascontiguousarray(times, dtype=float)
        if times.ndim != 1 or times.size < 2 or not np.all(np.isfinite(times)) \
                or np.any(np.diff(times) <= 0):
            raise ParameterError(f"'{path}': time must hold at least two finite, strictly increasing "
                                 f"values", block=self.name)
        values = np.ascontiguousarray(np.column_stack([blocks[c] for c in chosen]), dtype=float)
        if not np.all(np.isfinite(values)):
            raise ParameterError(f"'{path}' holds NaN or Inf values", block=self.name)
        self._times, self._values = times, values
        self._method = INTERPOLATIONS.index(self.p.interpolation)
        # a zoh table is piecewise constant between its breakpoints: major steps suffice
        self.time_varying = self._method != 1
        if self._method == 2:
            from scipy.interpolate import CubicSpline
            self._coefs = np.ascontiguousarray(CubicSpline(times, values, axis=0).c)
        else:
            self._coefs = np.zeros((4, 1, 1))
        self._span = (float(times[0]), float(times[-1]))

    @staticmethod
    def read_csv(path):
        with open(path, newline="") as fh:
            header = [h.strip() for h in next(csv.reader(fh))]
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        if data.shape[1] != len(header):
            raise ValueError(f"{len(header)} header names for {data.shape[1]} columns")
        tcol = next((k for k, h in enumerate(header) if h in ("t", "time")), None)
        if tcol is None:
            raise ValueError("no time column (named 't' or 'time') in the header")
        names = [h for k, h in enumerate(header) if k != tcol]
        return names, data[:, tcol], {h: data[:, k] for k, h in enumerate(header) if k != tcol}

    @staticmethod
    def read_npz(path):
        with np.load(path, allow_pickle=False) as npz:
            if "t" not in npz.files:
                raise ValueError("no key 't'")
            times = npz["t"]
            blocks = {k: npz[k].reshape(len(times), -1) for k in npz.files if k != "t"}
        return list(blocks), times, blocks

    def resolve_widths(self, in_widths):
        return {"out": self._values.shape[1]}

    def configure(self, in_widths, out_widths):
        lo, hi = self._span
        slack = 1e-12 * max(1.0, abs(lo), abs(hi))
        self._check = self.p.extrapolation == "error"
        # extrapolation: error in compiled mode (which cannot raise a located BlocksimError): an
        # out-of-table time sets this flag state to NaN, so the run stops at the first major step at
        # or after that time with the non-finite-state error naming the block (interpreted mode
        # raises at the offending time itself, which may be a solver stage)
        self.n_xd = 1 if self._check else 0
        self._slack = slack

    def record(self, v):
        lo, hi = self._span
        return kernel_params(FromFileParams, times=self._times, values=self._values,
                             coefs=self._coefs, method=self._method, earliest=lo - self._slack,
                             latest=hi + self._slack, check=self._check)

    def state_names(self):
        lo, hi = self._span
        return [], [f"'time outside the table [{lo}, {hi}] s (extrapolation: error)'"] * self.n_xd

    def initial_state(self, xc, xd, p=None):
        xd[...] = 0.0

    def output(self, t, xc, xd, u, y, p=None):
        # Python-only part: interpreted mode raises the located error at the offending time
        p = self.own_record(p)
        if p.check:
            if t < p.earliest or t > p.latest:
                lo, hi = float(p.times[0]), float(p.times[-1])
                raise BlocksimError(f"time {t} s is outside the table's [{lo}, {hi}] s "
                                    f"(extrapolation: error)", block=self.name)
        from_file_output(float(t), xc, xd, u, y, p)

    def kernels(self):
        return Kernels(output=from_file_output, update=no_update if self._check else None)

    def breakpoints(self, t0, t1, p=None):
        p = self.own_record(p)
        if p.method != 1:
            return []
        return times_within(p.times, t0, t1)


FromFileParams = namedtuple("FromFileParams",
                            "times values coefs method earliest latest check")
"""FromFile kernel's record: the table (times (n,), values (n, m), cubic coefs), the method index
in INTERPOLATIONS, the range of t (s) accepted, whether to check it (extrapolation: error)."""


@njit(cache=True, forceinline=True, _nrt=False)
def from_file_output(t, xc, xd, u, y, p):
    """The table at t; with p.check, a t outside [earliest, latest] sets the flag state to NaN."""
    if p.check and (t < p.earliest or t > p.latest):
        for b in range(xd.shape[0]):
            xd[b, 0] = math.nan
    table_kernel(t, p.times, p.values, p.coefs, p.method, y[0])


# ---- WhiteNoise -------------------------------------------------------------------------------------

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
S30, S27, S31, S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
TWO_POW_M53 = 2.0 ** -53


@njit(cache=True)
def splitmix64(z):
    """The SplitMix64 finaliser: a bijective 64-bit mix (Steele, Lea, Flood 2014)."""
    z = z + GOLDEN_GAMMA
    z = (z ^ (z >> S30)) * MIX1
    z = (z ^ (z >> S27)) * MIX2
    return z ^ (z >> S31)


def _splitmix64_twin(z):
    """splitmix64 under CPython: the same wrapping arithmetic, without numpy's overflow warning."""
    with np.errstate(over="ignore"):
        return splitmix64.py_func(z)


own_twin(splitmix64, _splitmix64_twin)


@njit(cache=True)
def gaussian(seed, member, channel, k):
    """A standard normal number that is a pure function of (seed, member, channel, k): counter-based
    hashing (SplitMix64 chained over the key) then Box-Muller."""
    h = splitmix64(seed)
    h = splitmix64(h ^ np.uint64(member))
    h = splitmix64(h ^ np.uint64(channel))
    h = splitmix64(h ^ np.uint64(k))
    h1 = splitmix64(h)
    h2 = splitmix64(h1)
    u1 = (np.float64(h1 >> S11) + 0.5) * TWO_POW_M53
    u2 = (np.float64(h2 >> S11) + 0.5) * TWO_POW_M53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@njit(cache=True)
def noise_kernel(seed, first, hit, mean, std, y):
    """y[b, i] = mean + std * N(seed, first + b, i, k) with k = hit[b, 0], the sample index, and
    first the batch index of row 0 (Block.first_member)."""
    for b in range(y.shape[0]):
        k = np.uint64(hit[b, 0])
        for i in range(y.shape[1]):
            y[b, i] = mean[b, i] + std[b, i] * gaussian(seed, first + b, i, k)


@register
class WhiteNoise(Block):
    """Band-limited white noise: a new Gaussian sample at every hit, held in between.

    Sample k of channel i in batch member b is a pure function of (seed, b, i, k) (a counter-based
    generator), and k is the block's discrete state: reruns, checkpoints and batch members are
    reproducible, and members and channels are independent streams. For a continuous-time white
    noise of power spectral density S, use variance = S / period.
    """

    type_name = "WhiteNoise"
    summary = "seeded Gaussian noise, a new sample every period"
    params = {"period": PERIOD, "offset": OFFSET,
              "variance": Param(1.0, "(units of y)^2", "variance of each sample"),
              "mean": Param(0.0, "units of y", "mean of each sample"),
              "seed": Param(0, "-", "seed of the generator", kind="int"),
              "width": Param(None, "-", "number of channels (default: from variance / mean)",
                             kind="int")}
    inputs = ()
    sample = "discrete"
    time_varying = True

    def check_values(self, v):
        if np.any(v.variance < 0):
            raise ParameterError("variance must be >= 0", block=self.name)

    def setup(self):
        self._width = common_width(self, ("variance", "mean"))
        if self.p.width is not None:
            if self.p.width < 1 or self._width not in (1, self.p.width):
                raise ParameterError(f"width {self.p.width} does not fit variance / mean of "
                                     f"{self._width} elements", block=self.name)
            self._width = self.p.width

    def resolve_widths(self, in_widths):
        return {"out": self._width}

    def configure(self, in_widths, out_widths):
        self.n_xd = 1

    def record(self, v):
        # member b's stream is keyed by its index in the whole batch: v.first_member + b
        width = self.out_widths["out"]
        return kernel_params(NoiseParams, seed=np.uint64(v.seed % 2 ** 64), first=v.first_member,
                             mean=self.param_as_row("mean", width, v),
                             std=np.sqrt(self.param_as_row("variance", width, v)))

    def state_names(self):
        return [], ["sample index k"]

    def initial_state(self, xc, xd, p=None):
        xd[...] = 0.0

    def kernels(self):
        return Kernels(output=noise_output, update=noise_update)


NoiseParams = namedtuple("NoiseParams", "seed first mean std")
"""WhiteNoise kernels' record: the seed (uint64), the batch index of row 0 (Params.first_member),
mean and standard deviation (B, w)."""


@njit(cache=True, forceinline=True, _nrt=False)
def noise_output(t, xc, xd, u, y, p):
    noise_kernel(p.seed, p.first, xd, p.mean, p.std, y[0])


@njit(cache=True, forceinline=True, _nrt=False)
def noise_update(t, xc, xd, u, p):
    for b in range(xd.shape[0]):
        xd[b, 0] += 1.0
