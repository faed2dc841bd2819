"""Trim: an equilibrium of a diagram with chosen states, inputs and outputs fixed or free,
found by scipy.optimize.least_squares on the diagram's own functions (analysis/evaluation.py).

At an equilibrium every signal is constant: every continuous derivative is zero, and a major
step at which every rate hits leaves the discrete states and the held outputs as they are (each
update is a fixed point). The unknowns are the states not fixed, the held outputs and the
injections at the free inputs (analysis inputs: an offset added to the signal); the targets are
those zeros, and the measured outputs at their given values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..diagram.diagram import Diagram, load as load_diagram
from ..errors import AnalysisError
from .evaluation import prepare, state_names
from .points import analysis_settings

TOLERANCE = 1e-9
"""The largest residual (in the units of each derivative, state or output, relative to
max(1, its scale)) that an operating point found may leave."""


@dataclass
class Trim:
    """An operating point found by trim: states {block: continuous states},
    discrete_states {block: discrete states without the modes}, inputs {signal: the injection
    added there}, outputs {signal: the measured value}, residual: the largest residual left
    (relative), nfev: evaluations of the residual."""

    states: dict[str, list[float]]
    discrete_states: dict[str, list[float]]
    inputs: dict[str, list[float]]
    outputs: dict[str, list[float]]
    residual: float
    nfev: int

    @property
    def at(self) -> dict:
        """The operating point as `linearize`'s `at` (and the analysis: section's)."""
        return {"states": self.states, "discrete_states": self.discrete_states,
                "inputs": self.inputs}


def trim(diagram, inputs=(), outputs=None, states=None, discrete_states=None) -> Trim:
    """An equilibrium of the diagram (the module docstring), from its initial state.

    inputs: the signals whose injections trim moves ("tau": a holding torque); outputs:
    {signal: values} the measured signals must take; states, discrete_states: {block:
    [value, or None for a free element]} the states held where given (the others are free)."""
    d = diagram if isinstance(diagram, Diagram) else load_diagram(diagram)
    cd0 = d.compile()
    outputs = dict(outputs or {})
    points = analysis_settings(cd0, inputs=list(inputs), outputs=list(outputs), openings=[],
                               at="initial", need_outputs=False)
    cd, snap, ev = prepare(d, cd0, points)
    t0 = float(snap.t)
    names = state_names(cd, ev)
    v = ev.v0.copy()
    fixed = set(ev.fixed_columns)
    for table, kind in ((states or {}, "continuous"), (discrete_states or {}, "discrete")):
        for block, values in table.items():
            columns = _columns_of(cd, ev, block, kind)
            if len(values) != len(columns):
                raise AnalysisError(f"trim: block '{block}' has {len(columns)} {kind} state(s), "
                                    f"given {len(values)} values", block=block)
            for c, value in zip(columns, values):
                if value is not None:
                    v[c] = float(value)
                    fixed.add(c)
    held_and_discrete = list(range(ev.n_xc, ev.n - sum(w for _, w in ev.injections)))
    free = [c for c in ev.state_columns + held_and_discrete + ev.u_columns if c not in fixed]
    target = np.concatenate([np.atleast_1d(np.asarray(outputs[k], dtype=float))
                             for k in outputs]) if outputs else np.zeros(0)
    hits = np.ones(len(ev.sim.plan.timebase.rates), dtype=np.bool_)

    def residual(x):
        w = v.copy()
        w[free] = x
        parts = [ev.flow(w, t0)[:ev.n_xc]]
        if hits.size:
            after = ev.jump(w, t0, hits)
            parts.append(after[ev.n_out:][held_and_discrete] - w[held_and_discrete])
            y = after[:ev.n_out]
        else:
            y = ev.flow(w, t0)[ev.n_xc:]
        parts.append(y - target)
        return np.concatenate(parts)

    scale = np.maximum(1.0, np.abs(residual(v[free])))
    found = least_squares(lambda x: residual(x) / scale, v[free], method="trf", x_scale="jac",
                          xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=200 * (len(free) + 1))
    r = residual(found.x) / scale
    worst = int(np.argmax(np.abs(r))) if r.size else 0
    if r.size and abs(r[worst]) > TOLERANCE:
        what = _residual_name(worst, ev, names, held_and_discrete, list(outputs))
        raise AnalysisError(f"trim found no equilibrium: the largest residual left is "
                            f"{r[worst]:.3g} ({what}); free more states or inputs, or fix fewer "
                            "outputs")
    v[free] = found.x
    ev.set_vector(v)
    y = residual(found.x)[-target.size:] + target if target.size else np.zeros(0)
    return Trim(
        states={n: v[a:b].tolist() for n, (a, b) in cd0.xc_slices.items() if b > a},
        discrete_states={n: v[ev.n_xc + ev.xd_columns.index(a):
                              ev.n_xc + ev.xd_columns.index(a) + (b - a - cd0.blocks[n].n_modes)]
                         .tolist() for n, (a, b) in cd0.xd_slices.items()
                         if b - a > cd0.blocks[n].n_modes},
        inputs={points.names[s]: v[ev.input_columns[s]].tolist() for s in points.inputs},
        outputs={k: y[i:i + np.atleast_1d(outputs[k]).size].tolist()
                 for i, k in zip(np.cumsum([0] + [np.atleast_1d(outputs[k]).size
                                                 for k in outputs])[:-1], outputs)},
        residual=float(np.abs(r).max(initial=0.0)), nfev=int(found.nfev))


def _columns_of(cd, ev, block: str, kind: str) -> list[int]:
    if block not in cd.blocks:
        from ..errors import did_you_mean
        raise AnalysisError(f"trim: no block '{block}'{did_you_mean(block, cd.blocks)}")
    if kind == "continuous":
        return list(range(*cd.xc_slices[block]))
    a, b = cd.xd_slices[block]
    return [ev.n_xc + ev.xd_columns.index(c) for c in range(a, b - cd.blocks[block].n_modes)]


def _residual_name(index: int, ev, names, held_and_discrete, outputs) -> str:
    if index < ev.n_xc:
        return f"the derivative of {names[index]}"
    index -= ev.n_xc
    if index < len(held_and_discrete):
        return f"the update of {names[held_and_discrete[index]]}"
    return f"output {outputs[0] if len(outputs) == 1 else 'of ' + ', '.join(outputs)}"
