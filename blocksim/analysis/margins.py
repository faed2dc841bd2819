"""Stability margins of a loop, computed by blocksim from the state-space model on a dense
frequency grid: gain and phase crossovers (refined by a bracketing root finder on the exact
frequency response), gain and phase margins, delay margin, and the closed loop's bandwidth.

The response is evaluated from A, B, C, D at each frequency (s = j w, or z = exp(j w T) up to
the Nyquist frequency), never through a transfer function: a polynomial build of a fast
sampled loop loses its digits (thousands of spurious crossovers for a 1 kHz loop). A phase
crossover is a sign change of Im L with Re L < 0 that the refined root confirms (|Im L| <=
1e-6 |L| there), so rounding noise where |L| is tiny or a pole's jump of Im L between +inf and
-inf is no crossover (python-control's `margin` gave -280 dB on a delay-free discrete loop).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.linalg import solve
from scipy.optimize import brentq

from ..errors import AnalysisError

POINTS_PER_DECADE = 2000
"""The grid's density: crossovers closer than a two-thousandth of a decade could hide; every
crossover found is refined to the float's precision."""

CONFIRM = 1e-6
"""A refined phase crossover is one where |Im L| <= CONFIRM |L| (a true zero of Im L)."""


@dataclass
class Margins:
    """A loop's margins. Frequencies in Hz, phases in degrees, gains in dB, delays in s.

    gain_crossovers, phase_margins: every frequency where |L| = 1 and 180 + angle L there;
    phase_crossovers, gain_margins: every frequency where angle L = -180 (mod 360) and
    -20 log10 |L| there. phase_margin, crossover: the smallest phase margin and its frequency;
    gain_margin, gain_margin_frequency: the gain margin nearest 0 dB (inf when the phase never
    crosses -180); delay_margin: the smallest PM / (2 pi f) over the crossovers with a positive
    margin (the pure delay that makes the loop unstable; inf without a crossover);
    bandwidth: the first frequency where the closed loop's |L / (1 + L)| falls 3 dB below its
    value at the grid's lowest frequency (nan when it does not fall); stable: the closed
    loop's poles (x' = (A + B (1 - D)^-1 C) x for the loop -L) are inside the stability region;
    dt: the period of a discrete loop (s; 0 continuous); grid: the frequencies searched (Hz,
    lowest and highest)."""

    gain_crossovers: list[float]
    phase_margins: list[float]
    phase_crossovers: list[float]
    gain_margins: list[float]
    phase_margin: float
    crossover: float
    gain_margin: float
    gain_margin_frequency: float
    delay_margin: float
    bandwidth: float
    stable: bool
    dt: float
    grid: tuple[float, float] = field(default=(0.0, 0.0))

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    def table(self) -> str:
        """The margins as a short table, in degrees, dB, Hz and ms."""
        def num(x, unit, scale=1.0, digits=4):
            return "none" if not math.isfinite(x) else f"{x * scale:.{digits}g} {unit}"
        rows = [("phase margin", num(self.phase_margin, "deg")),
                ("gain crossover", num(self.crossover, "Hz")),
                ("gain margin", num(self.gain_margin, "dB")),
                ("phase crossover", num(self.gain_margin_frequency, "Hz")),
                ("delay margin", num(self.delay_margin, "ms", 1e3)),
                ("closed-loop bandwidth", num(self.bandwidth, "Hz")),
                ("closed loop", "stable" if self.stable else "UNSTABLE")]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def response(A, B, C, D, dt: float, w: np.ndarray) -> np.ndarray:
    """C (s I - A)^-1 B + D at s = j w (dt = 0) or z = exp(j w dt): (len(w), outputs, inputs)."""
    n = A.shape[0]
    s = np.exp(1j * w * dt) if dt else 1j * w
    out = np.empty((len(w), C.shape[0], B.shape[1]), dtype=complex)
    eye = np.eye(n)
    for k, sk in enumerate(s):
        out[k] = (C @ solve(sk * eye - A, B) if n else 0.0) + D
    return out


def frequency_grid(A, dt: float) -> np.ndarray:
    """Frequencies (rad/s) around the model's dynamics: two decades below its slowest nonzero
    pole and above its fastest (continuous), or from four decades below the Nyquist frequency
    (or the slowest pole) to just below it (discrete)."""
    eig = np.linalg.eigvals(A) if A.size else np.zeros(0)
    if dt:
        with np.errstate(divide="ignore"):
            rates = np.abs(np.log(eig[np.abs(eig) > 0]) / dt)
        nyquist = math.pi / dt
        rates = rates[(rates > 1e-12 * nyquist)]
        low = min([nyquist * 1e-4] + [r / 100 for r in rates])
        high = nyquist * (1 - 1e-9)
    else:
        rates = np.abs(eig)
        rates = rates[rates > 1e-9 * max(1.0, rates.max(initial=0.0))]
        low = rates.min() / 100 if rates.size else 1e-2
        high = rates.max() * 100 if rates.size else 1e2
    n = max(int(POINTS_PER_DECADE * math.log10(high / low)), 100)
    return np.logspace(math.log10(low), math.log10(high), n)


def loop_margins(A, B, C, D, dt: float = 0.0, sign: float = -1.0) -> Margins:
    """The margins of the single-input single-output loop L = sign (C (sI - A)^-1 B + D).

    sign -1: the model is the response from an injection to the signal measured where the loop
    is opened (blocksim's linearisation with input, output and opening at one signal), which is
    -L for a negative-feedback loop L."""
    if B.shape[1] != 1 or C.shape[0] != 1:
        raise AnalysisError(f"margins need a loop with one input and one output, not "
                            f"{B.shape[1]} inputs and {C.shape[0]} outputs (open the loop at "
                            "one scalar signal, or pick one element)")
    w = frequency_grid(A, dt)

    def L(x):
        return sign * response(A, B, C, D, dt, np.atleast_1d(x))[:, 0, 0]

    H = L(w)
    mag = np.abs(H)
    gain_x = [_refine(lambda x: math.log(abs(L(x)[0])), w[k], w[k + 1])
              for k in np.nonzero(np.diff(np.sign(np.log(np.maximum(mag, 1e-300)))))[0]]
    phase_x = []
    for k in np.nonzero(np.diff(np.sign(H.imag)) != 0)[0]:
        x = _refine(lambda x: L(x)[0].imag, w[k], w[k + 1])
        value = L(x)[0]
        if value.real < 0 and abs(value.imag) <= CONFIRM * abs(value):
            phase_x.append(x)
    if dt:                                    # a crossover exactly at the Nyquist frequency
        value = L(math.pi / dt)[0]
        if value.real < 0 and abs(value.imag) <= CONFIRM * abs(value):
            phase_x.append(math.pi / dt)
    pms = [math.degrees(np.angle(-L(x)[0])) for x in gain_x]
    gms = [-20 * math.log10(abs(L(x)[0])) for x in phase_x]
    hz = 1 / (2 * math.pi)
    if pms:
        k = int(np.argmin(pms))
        pm, wc = pms[k], gain_x[k]
    else:
        pm, wc = math.inf, math.nan
    if gms:
        k = int(np.argmin(np.abs(gms)))
        gm, wg = gms[k], phase_x[k]
    else:
        gm, wg = math.inf, math.nan
    delays = [math.radians(p) / x for p, x in zip(pms, gain_x) if p > 0]
    closed = H / (1 + H)
    below = np.nonzero(np.abs(closed) < abs(closed[0]) / math.sqrt(2))[0]
    bandwidth = math.nan
    if below.size and below[0] > 0:
        level = abs(closed[0]) / math.sqrt(2)
        k = below[0]
        bandwidth = _refine(lambda x: abs(L(x)[0] / (1 + L(x)[0])) - level, w[k - 1], w[k]) * hz
    return Margins(
        gain_crossovers=[x * hz for x in gain_x], phase_margins=pms,
        phase_crossovers=[x * hz for x in phase_x], gain_margins=gms,
        phase_margin=pm, crossover=wc * hz, gain_margin=gm, gain_margin_frequency=wg * hz,
        delay_margin=min(delays) if delays else math.inf, bandwidth=bandwidth,
        stable=_closed_loop_stable(A, B, C, D, dt, sign), dt=dt,
        grid=(float(w[0] * hz), float(w[-1] * hz)))


def _refine(f, a: float, b: float) -> float:
    """The root of f between grid points a and b (f changes sign there) to the float's
    precision; the grid point nearer zero when the sign change is a jump (a pole)."""
    fa, fb = f(a), f(b)
    if fa == 0:
        return a
    if fb == 0 or fa * fb > 0:
        return b
    return brentq(f, a, b, xtol=1e-14 * b, rtol=4 * np.finfo(float).eps)


def _closed_loop_stable(A, B, C, D, dt: float, sign: float) -> bool:
    """The loop closed: u = -L-feedback of the measured signal, x' = (A - sign B (1 + sign D)^-1
    C) x; poles in the left half plane (continuous) or inside the unit circle (discrete)."""
    if not A.size:
        return True
    k = -sign / (1.0 + sign * D[0, 0])
    eig = np.linalg.eigvals(A + k * B @ C)
    return bool(np.all(np.abs(eig) < 1) if dt else np.all(eig.real < 0))
