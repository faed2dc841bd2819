"""The interaction studies (examples/interaction): the wall under Cartesian impedance settles at
the series-spring force, stays pressed after its one contact event, located against an
independent integration (SciPy's DOP853 on RobotModel's dynamics, the impedance law in NumPy);
admittance control holds its set force on a stiff and a soft wall; compiled mode equals
interpreted mode for every interaction block."""
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.integrate import solve_ivp

import blocksim
from blocksim.models import RobotModel

from modecheck import assert_same, signal_changes

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "examples" / "interaction"
DATA = Path(__file__).parent / "data" / "contact"
TWO = RobotModel.preset("two_link")


def run(path, variant=None, **overrides):
    return blocksim.simulate(blocksim.load(path, variant=variant, set=overrides or None))


@lru_cache(maxsize=None)
def wall_study():
    return run(STUDIES / "wall_impedance.yaml")


def study_parameters():
    return yaml.safe_load((STUDIES / "wall_impedance.yaml").read_text())["parameters"]


def reference_onset() -> float:
    """The contact onset by an independent integration of the free approach: the two-link arm
    under tau = J^T (K (p_d - p) - D J qd) + G(q) (planar K, D; no orientation stiffness), by
    DOP853 at rtol 1e-13, its event located on the dense output where the tool reaches x_wall."""
    par = study_parameters()
    K = np.diag([par["k_imp"], par["k_imp"], 0, 0, 0, 0])
    D = np.diag([par["d_imp"], par["d_imp"], 0, 0, 0, 0])
    goal = np.array([par["x_wall"] + par["depth"], 0.8, 0.0])

    def rhs(t, x):
        q, qd = x[:2], x[2:]
        T, J = TWO.fk(q), TWO.jacobian(q)
        e = np.concatenate([goal - T[:3, 3], np.zeros(3)])
        tau = J.T @ (K @ e - D @ (J @ qd)) + TWO.gravity_torque(q)
        return np.concatenate([qd, TWO.aba(q, qd, tau)])

    def touch(t, x):
        return TWO.fk(x[:2])[0, 3] - par["x_wall"]
    touch.terminal, touch.direction = True, 1
    sol = solve_ivp(rhs, (0.0, 3.0), [0.0, np.pi / 2, 0.0, 0.0], method="DOP853", rtol=1e-13,
                    atol=1e-14, events=touch)
    return float(sol.t_events[0][0])


def test_the_wall_force_settles_at_the_series_spring_value():
    par = study_parameters()
    series = par["k_imp"] * par["k_wall"] / (par["k_imp"] + par["k_wall"]) * par["depth"]
    assert series == pytest.approx(9.090909090909, rel=1e-12)
    r = wall_study()
    force = r["wall.force"][:, 0]
    assert abs(force[-1] - series) <= 0.01 * series          # the claim: within 1 %
    assert force[-1] == pytest.approx(series, rel=1e-6)      # and in fact to the settling left
    # the penetration then is the series value over the wall's stiffness
    assert r["wall.penetration"][-1, 0] == pytest.approx(series / par["k_wall"], rel=1e-6)


def test_one_contact_event_per_approach_and_the_force_stays_positive_after_it():
    r = wall_study()
    assert [(e.block, e.index, e.member) for e in r.events] == [("wall", 0, 0)]
    onset = r.events[0].t
    force, t = r["wall.force"][:, 0], r.t
    assert np.all(force[t < onset] == 0.0)
    after = force[t > onset]
    assert after.size > 2000 and after.min() > 1.0           # pressed from the first sample on
    assert np.all(force >= 0.0)


def test_the_contact_onset_is_located_to_1e_9_s():
    onset = wall_study().events[0].t
    reference = reference_onset()
    assert abs(onset - reference) < 1e-9
    # the study's event_times metric names the same reference
    metric = yaml.safe_load((STUDIES / "wall_impedance.yaml").read_text())["metrics"][-1]
    assert metric["kind"] == "event_times" and abs(metric["reference"][0] - reference) < 1e-12


@pytest.mark.parametrize("variant", ["stiff_wall", "soft_wall"])
def test_admittance_control_holds_the_set_force(variant):
    r = run(STUDIES / "wall_admittance.yaml", variant=variant)
    force = r["wall.force"][:, 0]
    assert force[-1] == pytest.approx(5.0, rel=1e-6)
    assert np.max(np.abs(force[r.t >= 2.5] - 5.0)) < 1e-5
    assert [(e.block, e.index) for e in r.events] == [("wall", 0)]
    assert np.all(force >= 0.0)
    # at rest the offset is the approach (0.1 m) plus the lag over the series springs: the force
    # over k_imp and over the wall's stiffness
    k_wall = 1.0e4 if variant == "stiff_wall" else 2.0e3
    assert r["adm.offset"][-1, 0] == pytest.approx(0.1 + 5.0 / 3000 + 5.0 / k_wall, rel=1e-6)


def test_compiled_mode_equals_interpreted_mode_for_the_interaction_blocks():
    interpreted = run(DATA / "modes.yaml", **{"simulation.mode": "interpreted"})
    compiled = run(DATA / "modes.yaml", **{"simulation.mode": "compiled"})
    assert interpreted.stats.get("mode") != "compiled" and compiled.stats["mode"] == "compiled"
    assert_same(compiled, interpreted, 0.0)                  # the same kernels: the same bits
    assert compiled.events == interpreted.events
    # the wall: one onset; the ball, passed through at about 0.1 m/s: onset, clip, separation
    assert [e.block for e in interpreted.events] == ["ball"] * 3 + ["wall"]
    for name in interpreted.names:
        assert signal_changes(interpreted, name), name


@pytest.mark.parametrize("name", ["wall_impedance.yaml", "wall_admittance.yaml"])
def test_the_studies_run_through_the_cli_as_they_are(name):
    path = STUDIES / name
    assert path.read_text().startswith("# Purpose: ")
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "simulate", str(path),
                           "--set", "simulation.stop_time=2.6"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "settled_force" in proc.stdout


def test_a_hard_impact_is_clipped_where_a_pure_kelvin_voigt_wall_would_pull(tmp_path):
    """The wall study with a lightly damped impedance (20 N s/m) and a wall damping of 100 N s/m:
    the rebound makes k delta + d delta' negative while the tool is still inside, so the force is
    clipped to zero there (a located event), and turns positive again where the law does (a third
    event), the tool never leaving the wall; F equals the law wherever it is positive."""
    par = study_parameters()
    text = (STUDIES / "wall_impedance.yaml").read_text()      # its metrics' windows end at 3 s
    short = tmp_path / "wall_impedance.yaml"
    short.write_text(text[:text.index("metrics:\n")] + text[text.index("scopes:\n"):])
    r = run(short, **{"imp.D": [20, 20, 0, 0, 0, 0], "wall.damping": 100.0,
                      "simulation.stop_time": 0.5})
    onset, clip, press = (e.t for e in r.events)
    assert [(e.block, e.index) for e in r.events] == [("wall", 0)] * 3
    t, force = r.t, r["wall.force"][:, 0]
    delta = r["wall.penetration"][:, 0]
    rate = np.array([TWO.jacobian(q)[0] @ qd for q, qd in zip(r["plant.q"], r["plant.qd"])])
    law = par["k_wall"] * delta + 100.0 * rate               # delta' = -v . n = v_x here
    inside = t > onset
    assert np.all(delta[inside] > 0)                         # one contact: it never separates
    clipped = (t > clip) & (t < press)
    assert clipped.sum() > 10 and np.all(force[clipped] == 0.0) and np.all(law[clipped] < 0)
    pressing = inside & ~clipped & (t != clip) & (t != press)
    np.testing.assert_allclose(force[pressing], law[pressing], rtol=1e-9, atol=1e-9)
    assert np.all(force >= 0.0) and law.min() < -50.0        # pure Kelvin-Voigt would pull 50 N


def test_under_a_fixed_step_solver_the_contact_switches_at_the_end_of_its_step():
    """rk4 at 1 ms does not locate: the onset fires at the end of the step in which the
    penetration changed sign (0.956 < 0.9567694 s <= 0.957), the force settles the same."""
    par = study_parameters()
    series = par["k_imp"] * par["k_wall"] / (par["k_imp"] + par["k_wall"]) * par["depth"]
    r = run(STUDIES / "wall_impedance.yaml", **{"simulation.solver": "rk4",
                                                 "simulation.step": 1.0e-3})
    assert [(e.block, e.t) for e in r.events] == [("wall", pytest.approx(0.957, abs=1e-12))]
    force = r["wall.force"][:, 0]
    assert np.all(force >= 0.0) and np.all(force[r.t > 0.957] > 1.0)
    assert force[-1] == pytest.approx(series, rel=1e-6)


def test_a_batch_over_the_wall_stiffness_settles_each_member_at_its_series_force():
    par = study_parameters()
    stiffness = [5.0e3, 1.0e4, 4.0e4]
    d = blocksim.load(STUDIES / "wall_impedance.yaml")
    r = blocksim.simulate(d, batch={"wall.stiffness": stiffness})
    force = r["wall.force"]
    for b, k_wall in enumerate(stiffness):
        series = par["k_imp"] * k_wall / (par["k_imp"] + k_wall) * par["depth"]
        assert force[b, -1, 0] == pytest.approx(series, rel=1e-6)      # (member, time, element)
    assert sorted(e.member for e in r.events) == [0, 1, 2]
