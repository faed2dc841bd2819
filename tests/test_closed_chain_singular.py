"""The closed-chain plant near its singular configurations, and the projection's tolerance taken
from the run: the five-bar driven until its distal links align (the passive joints' loop
Jacobian singular), against the configuration computed from the geometry alone."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.blocks.closed_chain import _within_tolerance
from blocksim.errors import BlocksimWarning, ParameterError
from blocksim.models.closed_chain_file import preset
from blocksim.twins import python_twin

sys.path.insert(0, str(Path(__file__).parent))
from blockcheck import BlockCheck  # noqa: E402
from modecheck import assert_same  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "five_bar.yaml"
PROXIMAL, DISTAL, BASE = 0.2, 0.25, 0.2        # m: the five-bar's links and pivot distance
RATIO = 0.05

DRIVEN = f"""\
blocksim: 1
name: five-bar driven into its singular configuration
blocks:
  tau:   {{type: Constant, value: [-2.0, 2.0]}}        # N m: the mirror pair spreads the elbows
  plant: {{type: ClosedChain, chain: five_bar, q0: [-1.6580627893946132, -1.4835298641951802],
          singular: stop, singular_ratio: {RATIO}}}
connections:
  - tau -> plant.tau
simulation: {{stop_time: 0.4, solver: dop853, rtol: 1.0e-10, atol: 1.0e-10}}
log: {{signals: [plant.q, plant.tool], every: 1.0e-2}}
"""


def distal_ratio(q):
    """sigma_min / sigma_max of the passive columns of the five-bar's Jc, from the geometry: the
    columns are l2 times the normals of the two distal links, and two unit vectors at an angle d
    have singular values sqrt(1 +- cos d): the ratio is min(|tan(d / 2)|, |cot(d / 2)|), d the
    angle between the links' directions (d = pi: aligned, the singular configuration)."""
    d = (q[..., 0] + q[..., 1]) - (q[..., 2] + q[..., 3])
    t = np.abs(np.tan(d / 2))
    return np.minimum(t, 1.0 / t)


def symmetric_configuration_at(ratio):
    """(th1, th2) of the mirror-symmetric five-bar whose distal-link ratio is `ratio`: the elbows
    2 l2 sin(d / 2) = 2 l2 / sqrt(1 + ratio^2) apart, th1 = -pi/2 - a, th2 = -pi/2 + a with the
    elbows BASE + 2 l1 sin(a) apart."""
    gap = 2 * DISTAL / np.sqrt(1 + ratio ** 2)
    a = np.arcsin((gap - BASE) / (2 * PROXIMAL))
    return -np.pi / 2 - a, -np.pi / 2 + a


def test_the_singularity_ratios_equal_the_geometry():
    mech = preset("five_bar")
    chain = mech.chain()
    for a in np.radians([5.0, 30.0, 48.0, 48.58]):
        q = mech.assemble(chain, [-np.pi / 2 - a, -np.pi / 2 + 0.8 * a])
        passive, schur = mech.singularity_measures(chain, q)
        assert abs(passive - distal_ratio(q)) < 1e-12
        assert 0.1 < schur <= 1.0          # the constraint rows stay independent


def run_driven(tmp_path, **settings):
    path = tmp_path / "driven.yaml"
    path.write_text(DRIVEN)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = blocksim.simulate(blocksim.load(path, set=settings))
    return r, [str(w.message) for w in caught if issubclass(w.category, BlocksimWarning)]


def test_a_run_into_the_singular_configuration_stops_there_with_a_warning(tmp_path):
    r, said = run_driven(tmp_path)
    th1, th2 = symmetric_configuration_at(RATIO)
    q = r["plant.q"][-1]
    assert len(r.events) == 1 and r.t[-1] == r.events[0].t < 0.4     # stopped at the event
    assert abs(distal_ratio(q) - RATIO) < 1e-8
    assert abs(q[0] - th1) < 1e-8 and abs(q[2] - th2) < 1e-8
    assert abs(r["plant.tool"][-1, 0] - BASE / 2) < 1e-9                # on the mirror axis
    assert len(r.t) > 5 and np.all(distal_ratio(r["plant.q"][:-1]) > RATIO)
    message, = said
    assert message.startswith(f"block 'plant': chain 'five_bar' nears a singular configuration "
                              f"at t = {r.t[-1]:.9g} s (sigma_min/sigma_max 0.05 of the passive ")
    assert message.endswith("; the run stops here")


def test_warn_goes_on_and_warns_once_and_none_does_not_look(tmp_path):
    stopped, _ = run_driven(tmp_path)
    r, said = run_driven(tmp_path, **{"plant.singular": "warn",
                                      "simulation.stop_time": stopped.t[-1] + 0.02})
    assert r.t[-1] == pytest.approx(stopped.t[-1] + 0.02)
    assert len(r.events) == 1 and abs(r.events[0].t - stopped.events[0].t) < 1e-9
    assert len(said) == 1 and not said[0].endswith("stops here")
    quiet, said = run_driven(tmp_path, **{"plant.singular": "none",
                                          "simulation.stop_time": stopped.t[-1] + 0.02})
    assert quiet.events == [] and said == []


def test_singular_ratio_is_checked():
    with pytest.raises(ParameterError, match=r"'singular_ratio' must be a scalar in \(0, 1\)"):
        BlockCheck("ClosedChain", {"chain": "five_bar", "q0": [-1.66, -1.48],
                                   "singular_ratio": 1.5}, in_widths={"tau": 2})


def test_a_projection_within_the_solvers_scale_is_no_move():
    """atol + rtol max(|x|, |x'|) per state, as the adaptive solvers weigh their error; the
    block's projection_tol (>= 0) replaces it; rtol = atol = 0 (a fixed step) lets nothing by."""
    within = python_twin(_within_tolerance)
    saved = np.array([1.0, -2.0])
    for dx, ok in ((0.9, True), (1.1, False)):
        xc = (saved + dx * np.array([1e-8 + 1e-6 * 1.0, -(1e-8 + 1e-6 * 2.0)]))[None]
        assert within(xc, 0, saved, -1.0, 1e-6, 1e-8) is ok
        assert within(xc, 0, saved, 1e-5, 1e-6, 1e-8) is True
        assert within(xc, 0, saved, 1e-7, 0.0, 0.0) is False
    assert within(saved[None].copy(), 0, saved, -1.0, 0.0, 0.0) is True


def test_the_projection_takes_the_runs_tolerance(tmp_path):
    """dop853 at 1e-6, major steps every 0.1 s (a sampled block): the loop's drift stays inside
    the solver's tolerance, so every projection is left undone and the run equals the uncorrected
    one bit for bit (the drift, up to 5e-8 m, is within it); with the block's override of 0
    every projection applies; under rk4 each applies (|phi| < 1e-12 m, below the uncorrected run's)."""
    path = tmp_path / "sampled.yaml"
    path.write_text(EXAMPLE.read_text().replace(
        "connections:\n  - tau -> plant.tau",
        "  zoh:   {type: ZeroOrderHold, period: 0.1}\nconnections:\n  - tau -> plant.tau\n"
        "  - plant.q -> zoh"))
    base = {"simulation.rtol": 1e-6, "simulation.atol": 1e-6, "simulation.stop_time": 1.0,
            "plant.singular": "none"}

    def go(**extra):
        return blocksim.simulate(blocksim.load(path, set={**base, **extra}))

    default, none, every = go(), go(**{"plant.drift": "none"}), go(**{"plant.projection_tol": 0.0})
    assert_same(default, none, 0.0)
    assert 1e-9 < np.max(none["plant.phi_norm"]) < 1e-6
    assert np.max(np.abs(every["plant.q"] - none["plant.q"])) > 1e-10    # the override moves
    assert every["plant.phi_norm"][-1, 0] < 0.7 * none["plant.phi_norm"][-1, 0]
    rk4 = {"simulation.solver": "rk4", "simulation.step": 1e-3, "simulation.stop_time": 0.3}
    fixed, free = go(**rk4), go(**rk4, **{"plant.drift": "none"})
    assert np.max(fixed["plant.phi_norm"]) < 1e-12 < np.max(free["plant.phi_norm"])
