"""The operating point of a linearisation: the diagram's states, modes and signals at the
initial state, at given states, or at a time of a run, taken from the engine's own run of the
diagram (engine/scheduler.py) and loaded into the run of the instrumented diagram."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..diagram.compiler import CompiledDiagram
from ..diagram.settings import LogSettings, SimulationSettings
from ..engine.scheduler import Simulation, run_settings
from .points import OperatingPointSpec


@dataclass(frozen=True)
class Snapshot:
    """A diagram's run at time t (s, exact) just before the major step at t does its updates:
    xc, xd (modes included) by block and every output signal by (block, port), one member."""

    t: Fraction
    xc: dict[str, np.ndarray]
    xd: dict[str, np.ndarray]
    signals: dict[tuple[str, str], np.ndarray]


class _UntilTime(Simulation):
    """A run whose last major step (at its stop time) computes the outputs, sets the modes and
    stops before the updates, so that its context is the state of the major step at that time:
    what the linearised major step starts from."""

    def _phase_updates(self, step) -> bool:
        if step.t >= float(self.settings.stop):
            return True
        return super()._phase_updates(step)


def snapshot(cd: CompiledDiagram, settings: SimulationSettings, log: LogSettings,
             at: OperatingPointSpec) -> Snapshot:
    """The run of cd (one member) at the operating point `at`: the initial states (with the
    given states in place of some blocks' continuous ones) at the start time, their outputs
    and modes there; or a run from them to at.time, stopped before that step's updates."""
    if at.time is not None and at.time > settings.start:
        timed = settings.changed({"stop_time": at.time}, origin="analysis.at")
        sim = _UntilTime(cd, run_settings(timed, log, cd), {})
        sim.run()
        t = at.time
    else:
        sim = Simulation(cd, run_settings(settings, log, cd), {})
        sim.start()
        for name, values in at.states.items():
            a, b = cd.xc_slices[name]
            sim.context.xc[:, a:b] = values
        for name, values in at.discrete.items():
            a, _ = cd.xd_slices[name]
            sim.context.xd[:, a:a + values.size] = values
        t = settings.start
        sim.backend.outputs_major(float(t), sim.hits_at(0))
    ctx, plan = sim.context, sim.plan
    return Snapshot(
        t,
        {n: ctx.xc[0, a:b].copy() for n, (a, b) in cd.xc_slices.items()},
        {n: ctx.xd[0, a:b].copy() for n, (a, b) in cd.xd_slices.items()},
        {(slot.block, slot.port): ctx.signals[k][0].copy() for k, slot in enumerate(plan.slots)
         if not slot.unwired})


def load(sim: Simulation, cd: CompiledDiagram, snap: Snapshot,
         injection: dict[tuple[str, str], str], opened: dict[tuple[str, str], tuple[int, ...]],
         offsets=None) -> None:
    """Put the snapshot of the user's diagram into the started run `sim` of its instrumented
    diagram cd: the states and signals of every block of the snapshot, and each signal's
    injection: at its opened elements (opened[signal]) the signal's value there (what its
    readers read at the operating point), zero elsewhere, plus the offsets at analysis inputs
    ({Point: values}, as the operating point gives them)."""
    ctx, plan = sim.context, sim.plan
    for name, values in snap.xc.items():
        a, b = cd.xc_slices[name]
        ctx.xc[:, a:b] = values
    for name, values in snap.xd.items():
        a, b = cd.xd_slices[name]
        ctx.xd[:, a:b] = values
    for k, slot in enumerate(plan.slots):
        value = snap.signals.get((slot.block, slot.port))
        if value is not None and not slot.unwired:
            ctx.signals[k][:] = value
    for signal, block in injection.items():
        value = np.zeros_like(snap.signals[signal])
        cut = list(opened.get(signal, ()))
        value[cut] = snap.signals[signal][cut]
        for point, offset in (offsets or {}).items():
            if point.signal == signal:
                value[point.elements(value.size)] += offset
        ctx.signals[plan.outputs_of[block][0]][:] = value
