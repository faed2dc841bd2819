"""Linearisation of a diagram at an operating point: A, B, C, D from the diagram's own
derivative, output and update functions (engine/python_backend.py, the blocks' kernels), by
scaled central differences (analysis/evaluation.py).

A diagram without discrete blocks gives a continuous model, dx/dt = A x + B u, y = C x + D u.
A diagram with discrete blocks (or any diagram, given a period) gives the exact z-domain model
over one period T, x[k+1] = A x[k] + B u[k], y[k] = C x[k] + D u[k], with the injections held
over each period (a zero-order hold on u) and blocksim's own semantics inside it: at each sample
hit the major step's outputs and updates (its sample delays, holds and feedthrough), between
hits the linearised continuous dynamics integrated exactly (a matrix exponential, not the run's
solver). The default period is the diagram's hyperperiod (the least common multiple of its
discrete periods), over which the model is time-invariant.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np
from scipy.linalg import expm

from ..diagram.diagram import Diagram, load as load_diagram
from ..diagram.rates import make_timebase
from ..errors import AnalysisError, BlocksimError
from .evaluation import Evaluation, prepare, state_names
from .points import AnalysisSettings, analysis_settings, check_at_inputs, operating_point
from .trim import trim

CONTROL_MISSING = ("linearize returns a python-control StateSpace, and python-control is not "
                   "installed: pip install -e '.[control]' (or pip install control)")


@dataclass
class LinearModel:
    """A linearised diagram: x' = A x + B u (dt = 0) or x[k+1] = A x[k] + B u[k] (dt = the
    period in s), y = C x + D u, in the deviations from the operating point, in the diagram's
    units (SI). inputs, outputs, states: one name per element ("plant.tau[1]"); time: the
    operating point's time (s); x0, u0, y0: the states, the injections (zero unless the
    operating point gives them, as trim does; at an opening, the signal's value there) and the
    measured outputs there; nonsmooth: the blocks linearised in the mode they hold there, as
    "name (Type)"; openings: the signals cut; loop: the signal where the model is a loop seen
    from one point (its only input and output, and an opening: the model is -L there), else "";
    name: the diagram's; trimmed: below."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    dt: float
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    states: tuple[str, ...]
    time: float
    x0: np.ndarray
    u0: np.ndarray
    y0: np.ndarray
    nonsmooth: tuple[str, ...] = ()
    steep: tuple[str, ...] = ()
    """The smooth terms steep at the operating point, "name (Type): what, its slope" (a
    smoothed friction sign at rest): linearised by a tangent that holds only near it."""
    exact: tuple[str, ...] = ()
    """The blocks whose rows of A and B are their own exact Jacobian ("name (Type)": the
    Manipulator's, from the RNEA's analytic derivatives), the rest being differences."""
    openings: tuple[str, ...] = field(default=())
    loop: str = ""
    name: str = ""
    trimmed: dict | None = None
    """The operating point a trim found (trim's `at`: states, discrete_states, inputs), when
    the analysis asked for one."""
    settings: AnalysisSettings | None = field(default=None, repr=False, compare=False)
    """The analysis points and the operating point (a trim's found) the model was made at."""

    def to_statespace(self):
        """The model as a python-control StateSpace with its names (inputs, outputs, states),
        each '.' written '_' (python-control keeps '.' for system.signal): plant_q[0]."""
        try:
            import control
        except ImportError:
            raise AnalysisError(CONTROL_MISSING) from None
        return control.ss(self.A, self.B, self.C, self.D, self.dt if self.dt else 0,
                          inputs=control_names(self.inputs),
                          outputs=control_names(self.outputs),
                          states=control_names(self.states), name=self.name or None)


def control_names(names) -> list[str]:
    """blocksim's names as python-control signal names: '.' (system.signal there) as '_'."""
    return [n.replace(".", "_") for n in names]


def linearize(diagram, inputs=None, outputs=None, openings=None, at=None, period=None):
    """The diagram (a Diagram, or what blocksim.load takes) linearised at an operating point,
    as a python-control StateSpace with named inputs, outputs and states (docs/analysis.md).
    inputs, outputs, openings: signals ("plant.tau", or one element: "plant.tau[1]"); at:
    "initial", a time of a run (s), {"time": t}, {"states": {block: values}}, or "trim" (the
    equilibrium that the diagram's analysis.trim finds); period: of a discrete model (s). Each
    keyword given replaces the diagram's `analysis:` key of that name."""
    return linear_model(diagram, inputs, outputs, openings, at, period).to_statespace()


def linear_model(diagram, inputs=None, outputs=None, openings=None, at=None, period=None, *,
                 origin: str = "keyword") -> LinearModel:
    """linearize's model as numpy arrays with its names (LinearModel), without python-control.
    origin: how messages name the keywords ("option": as the command line's --output)."""
    d = diagram if isinstance(diagram, Diagram) else load_diagram(diagram)
    cd0 = d.compile()
    points = analysis_settings(cd0, inputs, outputs, openings, at, period, origin)
    trimmed = None
    if points.at.trim is not None:
        points, trimmed = _trimmed(d, cd0, points)
    cd, snap, ev = prepare(d, cd0, points)
    t0 = float(snap.t)
    discrete = any(st.kind == "discrete" for st in cd.sample_times.values())
    if discrete or points.period is not None:
        A, B, C, D, states, dt, y0 = _discrete(ev, cd, snap.t, points)
    else:
        A, B, C, D, states, dt, y0 = _continuous(ev, t0)
    names = state_names(cd, ev)
    return LinearModel(
        A, B, C, D, dt,
        inputs=_element_names(cd0, points.inputs, points.names),
        outputs=_element_names(cd0, points.outputs, points.names),
        states=tuple(names[i] for i in states), time=t0, x0=ev.v0[states],
        u0=ev.v0[ev.u_columns],
        y0=y0, nonsmooth=_nonsmooth(cd0), steep=_steep(cd0, snap), exact=ev.exact,
        openings=tuple(points.names[s] for s in points.openings),
        loop=points.names[points.inputs[0]] if len(points.inputs) == 1
        and points.inputs == points.outputs and points.inputs[0] in points.openings else "",
        name=d.name, trimmed=trimmed, settings=points)


def _trimmed(d: Diagram, cd0, points):
    """The analysis settings with the operating point that the trim of points.at.trim finds
    (its injections must be at analysis inputs), and that point as trim's `at`."""
    where = points.loc("trim") or points.loc("at")
    spec = dict(points.at.trim)
    try:
        found = trim(d, **spec)
    except BlocksimError as err:
        raise err.located(where=where) from None
    at = operating_point(found.at, where, cd0)
    check_at_inputs(cd0, points, at, where)
    return replace(points, at=at), found.at


def _continuous(ev: Evaluation, t: float):
    """A, B, C, D of dx/dt and y at the operating point: the flow's Jacobian."""
    J = ev.flow_jacobian(t, ev.state_columns + ev.u_columns)
    xs, us = ev.state_columns, ev.u_columns
    rows_x = J[xs]
    rows_y = J[ev.n_xc:]
    y0 = ev.flow(ev.v0, t)[ev.n_xc:]
    ev.set_vector(ev.v0)
    return (rows_x[:, xs], rows_x[:, us], rows_y[:, xs], rows_y[:, us], xs, 0.0, y0)


def _discrete(ev: Evaluation, cd, t0: Fraction, points):
    """The exact model over one period (the module docstring): the major steps at the sample
    hits inside [t0, t0 + T) and the exact flow of the linearised continuous dynamics between
    them, composed; y and its feedthrough from the major step at t0."""
    tb = make_timebase(cd.sample_times, t0, None)
    hyper = math.lcm(*(r.period for r in tb.rates)) * tb.tick if tb.rates else None
    T = points.period if points.period is not None else hyper
    if hyper is not None and (T / hyper).denominator != 1:
        raise AnalysisError(
            f"analysis.period {float(T)} s is not a multiple of the diagram's hyperperiod "
            f"{float(hyper)} s (the least common multiple of its discrete periods), over "
            "which the model is time-invariant", where=points.loc("period"))
    tb = make_timebase(cd.sample_times, t0, None, extra=[T])
    n_frame = int(T / tb.tick)
    ticks = sorted({0} | {n for r in tb.rates for n in range(r.offset, n_frame, r.period)})
    fixed = set(ev.fixed_columns)
    columns = [c for c in range(ev.n) if c not in fixed]
    flow = ev.flow_jacobian(float(t0), columns)[ev.state_columns]
    M = np.zeros((ev.n, ev.n))
    M[ev.state_columns] = flow
    n_out = ev.n_out
    P = np.eye(ev.n)
    Y = None
    jumps, flows = {}, {}
    for k, n in enumerate(ticks):
        hits = np.array([r.hits(n) for r in tb.rates], dtype=np.bool_)
        t = float(t0 + n * tb.tick)
        key = tuple(hits)
        if key not in jumps:
            jumps[key] = ev.jacobian(lambda v: ev.jump(v, t, hits), columns)
        J = jumps[key]
        if k == 0:
            Y = J[:n_out] @ P
        steps = (ticks[k + 1] if k + 1 < len(ticks) else n_frame) - n
        if steps not in flows:
            flows[steps] = expm(M * float(steps * tb.tick))
        P = flows[steps] @ J[n_out:] @ P
    hits0 = [r.hits(0) for r in tb.rates]
    held = [i for _, _, rate, a, b in ev.held_slices() if not hits0[rate] for i in range(a, b)]
    xs = ev.state_columns + [ev.n_xc + i for i in range(len(ev.xd_columns))] + held
    us = ev.u_columns
    y0 = ev.jump(ev.v0, float(t0), np.array(hits0, dtype=np.bool_))[:n_out]
    ev.set_vector(ev.v0)
    return (P[np.ix_(xs, xs)], P[np.ix_(xs, us)], Y[:, xs], Y[:, us], xs, float(T), y0)



def _element_names(cd, points, written) -> tuple[str, ...]:
    """One name per element: the point as written for a scalar signal or one element
    ("zoh.out[0]"), else the signal as written with each element's index ("plant.q[1]")."""
    out = []
    for point in points:
        width = cd.out_widths[point.block][point.port]
        text = written[point]
        out += ([text] if width == 1 or point.index is not None
                else [f"{text}[{i}]" for i in range(width)])
    return tuple(out)


def _steep(cd, snap) -> tuple[str, ...]:
    """The terms the blocks find steep at the operating point (Block.steep_terms)."""
    return tuple(f"{n} ({b.type_name}): {text}" for n, b in cd.blocks.items() if b.enabled
                 for text in b.steep_terms(snap.xc[n], snap.xd[n]))


def _nonsmooth(cd) -> tuple[str, ...]:
    """The blocks that switch (modes) or have events (zero crossings): linearised in the mode
    and region they hold at the operating point."""
    return tuple(f"{n} ({b.type_name})" for n, b in cd.blocks.items()
                 if b.enabled and (b.n_modes > 0 or b.n_zc > 0))
