"""simulate(): compile a diagram for a run (or a batch), run the scheduler, return a Result."""
from __future__ import annotations

from typing import Any

from ..diagram.diagram import Diagram
from ..errors import SourceLoc
from .result import Result, run_metadata
from .scheduler import Simulation, settings_from


def logged_signals(cd) -> dict[str, tuple[str, str]]:
    """Signals to log: log.signals (default: every block output) plus what the scopes show."""
    spec = cd.spec
    wanted = spec.log.get("signals")
    where = spec.where.get("log.signals", SourceLoc(spec.file))
    names: list[str] = []
    if wanted is None:
        names = cd.signal_names()
    else:
        names = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    for k, scope in enumerate(spec.scopes):
        names.extend(scope.get("signals", []))
    logged: dict[str, tuple[str, str]] = {}
    for text in names:
        block, port = cd.resolve_signal(str(text), where)
        logged.setdefault(f"{block}.{port}", (block, port))
    return logged


def simulate(diagram: Diagram, batch: dict[str, list] | None = None, **settings: Any) -> Result:
    """Run a loaded diagram. `batch` = {dotted key: [value per member]} runs B members at once;
    keyword settings override the simulation section (stop_time=..., solver=...)."""
    if settings:
        overrides = dict(diagram.overrides)
        overrides.update({f"simulation.{k}": v for k, v in settings.items()})
        diagram = Diagram(diagram.path, diagram.variant, overrides)
    cd = diagram.compile(batch)
    sim = Simulation(cd, settings_from(cd.spec, cd), logged_signals(cd))
    out = sim.run()
    meta = run_metadata(seed=cd.spec.simulation.get("seed"))
    meta.update(diagram=str(diagram.path), variant=diagram.variant,
                solver=sim.settings.solver, overrides={k: str(v) for k, v in
                                                       diagram.overrides.items()})
    return Result(out.t, out.signals, batch=cd.batch, batched=bool(batch), events=out.events,
                  stats=out.stats, interrupted=out.interrupted, stopped_by=out.stopped_by,
                  diagram=diagram.resolved_yaml(), metadata=meta, aliases=cd.spec.aliases)
