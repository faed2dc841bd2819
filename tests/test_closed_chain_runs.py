"""The closed-chain plant in runs: compiled mode equals interpreted mode, a batch of 1000
five-bars with their own link masses equals its members, and a projection smaller than its
tolerance is no discontinuity (the adaptive solver is not restarted at the major steps)."""
import sys
from pathlib import Path

import numpy as np

import blocksim

sys.path.insert(0, str(Path(__file__).parent))
from modecheck import assert_same, signal_changes  # noqa: E402
import five_bar_reference as ref  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "five_bar.yaml"
RK4 = {"simulation.solver": "rk4", "simulation.step": 1e-3}


def run(mode, **settings):
    return blocksim.simulate(blocksim.load(EXAMPLE, set={"simulation.mode": mode,
                                                         "simulation.stop_time": 0.5,
                                                         **settings}))


def test_compiled_equals_interpreted_under_rk4_with_projection_and_under_dop853():
    for settings in (RK4, {}):
        a, b = run("interpreted", **settings), run("compiled", **settings)
        assert_same(a, b, 0.0)
        assert signal_changes(a, "plant.lambda") and signal_changes(a, "plant.q")


def test_a_batch_of_1000_five_bars_with_their_own_masses_equals_its_members():
    rng = np.random.default_rng(19)
    masses = [list(row) for row in
              np.array([0.5, 0.4, 0.5, 0.4]) * rng.uniform(0.7, 1.3, size=(1000, 4))]
    settings = {**RK4, "simulation.stop_time": 0.1, "simulation.mode": "compiled"}
    batch = blocksim.simulate(blocksim.load(EXAMPLE, set=settings), batch={"plant.masses": masses})
    q = batch["plant.q"]
    assert q.shape == (1000, 11, 4)
    assert np.ptp(q[:, -1, 0]) > 1e-4                        # the members differ
    for m in (0, 517, 999):
        single = blocksim.simulate(blocksim.load(EXAMPLE, set={
            **settings, "simulation.mode": "interpreted", "plant.masses": masses[m]}))
        for name in ("plant.q", "plant.lambda", "plant.balance"):
            assert np.max(np.abs(batch[name][m] - single[name])) == 0.0, name
    q_ref, lam_ref = ref.simulate(batch.t, masses=masses[517])
    assert np.max(np.abs(q[517] - q_ref)) < 1e-9
    assert np.max(np.abs(batch["plant.lambda"][517] - lam_ref)) < 1e-8


def test_a_projection_within_its_tolerance_does_not_restart_the_adaptive_solver(tmp_path):
    text = EXAMPLE.read_text().replace(
        "connections:\n  - tau -> plant.tau",
        "  zoh:   {type: ZeroOrderHold, period: 0.01}\nconnections:\n  - tau -> plant.tau\n"
        "  - plant.q -> zoh")
    path = tmp_path / "sampled.yaml"
    path.write_text(text)
    base = {"simulation.rtol": 1e-10, "simulation.atol": 1e-10, "simulation.stop_time": 1.0}

    def go(**extra):
        return blocksim.simulate(blocksim.load(path, set={**base, **extra}))

    none = go(**{"plant.drift": "none"})
    quiet = go(**{"plant.projection_tol": 1e-8})
    every = go(**{"plant.projection_tol": 0.0})
    assert none.stats["major_steps"] == quiet.stats["major_steps"] == 101
    assert quiet.stats["nfev"] == none.stats["nfev"]          # no restart at the 100 hits
    # projecting at every hit restarts the solver at each of the 99 inner hits: f(t, x) anew
    assert 90 <= every.stats["nfev"] - none.stats["nfev"] <= 130
    assert_same(quiet, none, 0.0)
    assert np.max(every["plant.phi_norm"]) < 1e-11
    # the compiled adaptive loop sees the reset through the projection count, as the scheduler
    compiled = go(**{"plant.projection_tol": 0.0, "simulation.mode": "compiled"})
    assert compiled.stats["nfev"] == every.stats["nfev"]
    assert_same(compiled, every, 0.0)
