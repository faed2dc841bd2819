"""Compiled mode: the generated step function gives the interpreted run's numbers, reuses its
on-disk cache across parameter values, and falls back (auto) or refuses (compiled) cleanly."""
from textwrap import dedent

import numpy as np
import pytest

import blocksim
from blocksim.blocks.base import Block, register
from blocksim.errors import SolverError

MSD = """
blocksim: 1
parameters: {k: 4.0, c: 0.4}
blocks:
  v:      {type: Integrator, x0: 0.0}
  x:      {type: Integrator, x0: 1.0}
  spring: {type: Gain, gain: "${-k}"}
  damper: {type: Gain, gain: "${-c}"}
  force:  {type: Sum, signs: "++"}
connections: [v -> x, x -> spring, v -> damper, spring -> force.in1, damper -> force.in2, force -> v]
simulation: {stop_time: 3, solver: rk4, step: 0.001}
log: {signals: [x.out, v.out], every: 0.01}
"""


pytestmark = pytest.mark.usefixtures("compiled_cache")


def run(tmp_path, mode, text=MSD, **sets):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(text))
    overrides = {"simulation.mode": mode}
    overrides.update(sets)
    return blocksim.simulate(blocksim.load(path, set=overrides))


@pytest.mark.parametrize("solver", ["rk4", "heun", "euler"])
def test_compiled_fixed_step_equals_interpreted(tmp_path, solver):
    a = run(tmp_path, "interpreted", **{"simulation.solver": solver})
    b = run(tmp_path, "compiled", **{"simulation.solver": solver})
    assert b.stats.get("mode") == "compiled"
    np.testing.assert_array_equal(a.t, b.t)
    for name in ("x.out", "v.out"):
        assert np.max(np.abs(a[name] - b[name])) <= 1e-12


def test_compiled_adaptive_run_uses_compiled_functions_and_agrees(tmp_path):
    a = run(tmp_path, "interpreted", **{"simulation.solver": "dopri5"})
    b = run(tmp_path, "compiled", **{"simulation.solver": "dopri5"})
    np.testing.assert_array_equal(a.t, b.t)
    assert np.max(np.abs(a["x.out"] - b["x.out"])) <= 1e-12


def test_compiled_batch_equals_single_runs(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(dedent(MSD))
    d = blocksim.load(path, set={"simulation.mode": "compiled"})
    ks = [1.0, 4.0, 9.0]
    rb = blocksim.simulate(d, batch={"parameters.k": ks})
    for m, k in enumerate(ks):
        single = blocksim.simulate(blocksim.load(path, set={"simulation.mode": "interpreted",
                                                            "parameters.k": k}))
        assert np.max(np.abs(rb["x.out"][m] - single["x.out"])) <= 1e-12


def test_cache_is_keyed_by_structure_not_values(tmp_path):
    import os
    from pathlib import Path
    run(tmp_path, "compiled")
    folder = Path(os.environ["BLOCKSIM_CACHE_DIR"]) / "compiled"
    before = sorted(p.name for p in folder.glob("*.py"))
    run(tmp_path, "compiled", **{"parameters.k": 7.5, "spring.gain": -3.0})
    assert sorted(p.name for p in folder.glob("*.py")) == before


class PythonGain(Block):
    """A user block written in plain Python, with no compiled kernels."""

    type_name = "TestPythonGain"
    summary = "y = 2 u in plain Python (tests only)"

    def output(self, t, xc, xd, u, y):
        y[0][...] = 2.0 * u[0]


register(PythonGain)


def test_auto_falls_back_with_a_reason_and_compiled_refuses(tmp_path, capsys):
    text = MSD.replace("force:  {type: Sum, signs: \"++\"}",
                       "force:  {type: Sum, signs: \"++\"}\n  twice: {type: TestPythonGain}"
                       ).replace("force -> v]", "force -> v, x -> twice]")
    with pytest.raises(SolverError) as info:
        run(tmp_path, "compiled", text)
    assert "twice (TestPythonGain)" in str(info.value)
    r = run(tmp_path, "auto", text, **{"log.signals": ["x.out", "twice.out"]})
    assert "runs interpreted: twice (TestPythonGain)" in capsys.readouterr().err
    np.testing.assert_allclose(r["twice.out"], 2 * r["x.out"], rtol=0, atol=0)
