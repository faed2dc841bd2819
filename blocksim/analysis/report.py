"""A linearisation's files: the model (model.npz, model.json), its loop's margins (margins.json),
the frequency response the Bode plot draws and one measured by a run (frequency_response.json),
in an output folder (docs/analysis.md)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..errors import AnalysisError
from .linearize import LinearModel
from .margins import Margins, frequency_grid, loop_margins, response


def margins_of(model: LinearModel) -> Margins:
    """The margins of a model that is a loop seen from one point (model.loop: its input, output
    and an opening at one signal, so the model is -L); an AnalysisError says what is missing
    otherwise."""
    if not model.loop:
        raise AnalysisError(
            "margins are those of a loop seen from one point: give one input, the same signal "
            f"as the only output and as an opening (this model has inputs {list(model.inputs)}, "
            f"outputs {list(model.outputs)}, openings {list(model.openings)})")
    return loop_margins(model.A, model.B, model.C, model.D, model.dt, sign=-1.0)


def modes(model: LinearModel) -> list[tuple[float, float]]:
    """The model's poles as (natural frequency in Hz, damping ratio), one per real pole or
    complex pair, slowest first: s = -zeta w_n +- j w_n sqrt(1 - zeta^2) (a discrete pole z as
    s = ln(z) / dt; z = 0, a sample of delay, has none). A pole at the origin is (0, 1); a
    damping ratio within 1e-9 of zero is 0."""
    eig = np.linalg.eigvals(model.A).astype(complex) if model.A.size else np.zeros(0, complex)
    if model.dt:
        eig = eig[np.abs(eig) > 0]
        eig = np.log(eig) / model.dt
    out = []
    for s in eig:
        if s.imag < 0:
            continue
        wn = abs(s)
        zeta = float(-s.real / wn) if wn else 1.0
        out.append((wn / (2 * math.pi), 0.0 if abs(zeta) < 1e-9 else zeta))
    return sorted(out)


def bode_data(model: LinearModel) -> tuple[np.ndarray, np.ndarray]:
    """(frequencies in Hz, response (n, outputs, inputs)) on the margins' grid: of the loop L
    for a loop model (-model), of the model itself otherwise."""
    w = frequency_grid(model.A, model.dt)[::10]
    H = response(model.A, model.B, model.C, model.D, model.dt, w)
    return w / (2 * math.pi), (-H if model.loop else H)


def write_model(model: LinearModel, folder: Path) -> list[Path]:
    """model.npz (A, B, C, D, dt and the names, no pickles) and model.json (the same, with the
    operating point and the blocks linearised in their mode)."""
    folder = Path(folder)
    names = {"inputs": list(model.inputs), "outputs": list(model.outputs),
             "states": list(model.states)}
    np.savez(folder / "model.npz", A=model.A, B=model.B, C=model.C, D=model.D,
             dt=np.float64(model.dt), **{k: np.array(v, dtype=str) for k, v in names.items()})
    doc = {"name": model.name, "dt": model.dt, "time": model.time, **names,
           "A": model.A.tolist(), "B": model.B.tolist(), "C": model.C.tolist(),
           "D": model.D.tolist(), "x0": model.x0.tolist(), "u0": model.u0.tolist(),
           "y0": model.y0.tolist(), "openings": list(model.openings), "loop": model.loop,
           "exact": list(model.exact), "nonsmooth": list(model.nonsmooth),
           "steep": list(model.steep),
           "trimmed": model.trimmed,
           "modes": [{"frequency": f, "damping": z} for f, z in modes(model)],
           "units": "SI, the diagram's signals' own; time in s; dt 0: continuous; modes: "
                    "natural frequency Hz, damping ratio"}
    (folder / "model.json").write_text(json.dumps(doc, indent=1) + "\n")
    return [folder / "model.npz", folder / "model.json"]


def write_margins(margins: Margins, folder: Path) -> Path:
    """margins.json: every crossover and margin (Hz, deg, dB, s); inf as null."""
    doc = {k: _finite(v) for k, v in margins.as_dict().items()}
    doc["units"] = "frequencies Hz, phases deg, gains dB, delay_margin s"
    path = Path(folder) / "margins.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def write_frequency_response(measured, folder: Path) -> Path:
    """frequency_response.json: a FrequencyResponse (analysis/frequency_response.py) measured by
    a run, with the linear model's at the same frequencies (Hz, dB, deg)."""
    path = Path(folder) / "frequency_response.json"
    path.write_text(json.dumps({k: _finite(v) for k, v in measured.as_dict().items()},
                               indent=1) + "\n")
    return path


def _finite(value):
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
