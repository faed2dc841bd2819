"""Simulated runs of an identification config's data diagram, and the small conversions the
pipeline and the payload task share (per-joint values, plain numbers for metrics.json)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .excitation import FourierExcitation
from .processing import Measurement


def joint_vector(value, n, default=None):
    """A per-joint config value (one number or one per joint; `default` when None) as (n,)."""
    if value is None:
        value = default
    return None if value is None else np.broadcast_to(np.asarray(value, float), (n,)).copy()


def simulate_run(diagram: Path, excitation: FourierExcitation, periods: int, sets: dict | None = None):
    """Run the excitation diagram (blocks ref: FourierSeries, plant: Manipulator) for `periods`
    periods from rest at q0; returns the exact logged Measurement (t, plant.q, u.out) and the result."""
    import blocksim
    over = {f"ref.{k}": v for k, v in excitation.block_parameters().items()}
    over.update({"plant.q0": excitation.q0.tolist(), "plant.qd0": 0.0,
                 "simulation.stop_time": periods * excitation.period, "simulation.mode": "compiled"})
    over.update(sets or {})
    r = blocksim.simulate(blocksim.load(diagram, set=over))
    return Measurement(r.t.copy(), r["plant.q"].copy(), r["u.out"].copy()), r


def plain(x):
    """x with numpy arrays and numbers as lists and floats, non-finite floats as text (JSON)."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    return x
