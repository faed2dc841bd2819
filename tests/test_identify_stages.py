"""The staged identification (gravity from static poses, friction from constant-velocity sweeps,
inertia from the excitation with both known): the gravity stage recovers the KR6-like arm's base
gravity parameters from exact static poses to 1e-8, the friction stage recovers the friction law
the sweeps were made with, the two-link example reports its validation error after each stage,
the excitation keeps its distance from singular poses, and a bad `stages` key is an error at its
line."""
import json
from pathlib import Path

import numpy as np
import pytest

from blocksim.cli import main
from blocksim.errors import ParameterError
from blocksim.identification import IdentificationModel, base_parameters
from blocksim.identification.excitation import _fine_grid, limits_for, optimise_excitation
from blocksim.identification.config import IdentifyConfigError
from blocksim.identification.inputs import load_inputs
from blocksim.identification.static_poses import (fit_gravity, gravity_basis, pose_set,
                                                  static_measurement)
from blocksim.identification.sweeps import SweepData, fit_friction, sweep_measurement
from blocksim.models.friction import stribeck
from blocksim.models.robot import RobotModel

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "identification"
CAD = RobotModel.from_yaml(EXAMPLES / "kr6_cad.yaml")
TRUE = RobotModel.from_yaml(EXAMPLES / "kr6_true.yaml")
HOME = np.array([0.0, -1.2, 0.3, 0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def kr6():
    model = IdentificationModel(CAD, rotor_inertia=True)
    poses, outside = pose_set(model, HOME)
    basis = gravity_basis(model, 200)
    fit = fit_gravity(model, basis, static_measurement(TRUE, poses), model.parameters_of(CAD))
    return model, poses, outside, basis, fit


def test_the_pose_scheme_moves_one_joint_through_minus_90_to_90_degrees(kr6):
    model, poses, outside, basis, fit = kr6
    # 6 joints x 5 angles, less joint 2 at 90 degrees (beyond its 45 degree limit) and the home
    # pose's repeats (joints 1, 4, 5, 6 at 0 are the home pose, kept once)
    assert outside == 1 and len(poses) == 6 * 5 - 1 - 3
    moved = np.count_nonzero(~np.isclose(poses, HOME), axis=1)
    assert set(moved) == {0, 1}
    np.testing.assert_allclose(sorted(set(np.round(np.rad2deg(poses[:, 3]), 9))), [-90, -45, 0, 45, 90])


def test_the_gravity_stage_recovers_the_kr6_base_gravity_parameters_to_1e_8(kr6):
    model, poses, outside, basis, fit = kr6
    assert basis.rank == 10 and fit.rank == 10 and fit.full_rank
    assert basis.base_names == ["mcx2R", "mcy2", "mcx3R", "mcy3R", "mcx4", "mcy4R", "mcx5",
                                "mcy5R", "mcx6", "mcy6"]
    assert fit.cond == pytest.approx(8.918, rel=1e-3)
    beta_true = basis.base(model.parameters_of(TRUE))
    err = np.abs(fit.estimate.beta - beta_true)
    assert np.linalg.norm(err) / np.linalg.norm(beta_true) < 1e-8
    assert np.all(err < 1e-8 * np.linalg.norm(beta_true))
    # the prior with these combinations in holds the true arm's gravity torque everywhere
    q = np.random.default_rng(3).uniform(CAD.q_lower, CAD.q_upper, (50, 6))
    np.testing.assert_allclose(model.robot_from(fit.theta).gravity_torque(q), TRUE.gravity_torque(q),
                               atol=1e-9)


def test_a_pose_set_without_the_full_gravity_rank_is_refused(kr6):
    model, poses, outside, basis, fit = kr6
    few = poses[np.count_nonzero(~np.isclose(poses, HOME), axis=1) == 0]
    few = np.vstack([few, poses[~np.isclose(poses[:, 1], HOME[1])]])      # joint 2 alone
    with pytest.raises(ParameterError, match="static regressor rank 8, below the 10 base gravity"):
        fit_gravity(model, basis, static_measurement(TRUE, few), model.parameters_of(CAD))


def test_the_friction_sweeps_recover_the_kr6_friction_of_the_robot_file(kr6):
    model, poses, outside, basis, fit = kr6
    sweeps = sweep_measurement(TRUE, model, HOME, model.robot_from(fit.theta).gravity_torque,
                               speeds=(0.05, 0.2, 1.0), travel=0.3, rate=500.0)
    assert len(sweeps.speed) == 6 * 3 * 2
    np.testing.assert_allclose(np.abs(sweeps.speed), np.tile(np.repeat([0.05, 0.2, 1.0], 2), 6),
                               rtol=1e-12)
    fric = fit_friction(model, sweeps, fit.theta)
    values = np.array([e.beta for e in fric.estimates])
    np.testing.assert_allclose(values, np.column_stack([TRUE.viscous, TRUE.coulomb_pos,
                                                        TRUE.coulomb_neg]), rtol=1e-7, atol=1e-8)


def test_the_friction_stage_fits_coulomb_viscous_and_stribeck_from_torque_against_speed():
    """Sweep points made with the Stribeck law of models.friction (Fc 2, Fs 3 N m, vs 0.1 rad/s,
    delta 2, Fv 0.5 N m s/rad, sign width 1 mm/s): the fit gives them back, Fs - Fc as the
    Stribeck excess."""
    robot = RobotModel.preset("two_link")
    model = IdentificationModel(robot, friction="stribeck", stribeck_speed=0.1,
                                stribeck_exponent=2.0, friction_smoothing=1e-3)
    v = np.concatenate([s * np.array([0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]) for s in (1, -1)])
    joint = np.repeat([0, 1], v.size)
    speed = np.tile(v, 2)
    law = {0: (2.0, 3.0, 0.5), 1: (1.0, 1.6, 0.2)}
    tau = np.array([stribeck(np.array([s]), law[j][0], law[j][1], 0.1, law[j][2], 2.0, 1e-3)[0]
                    for j, s in zip(joint, speed)])
    data = SweepData(joint, speed, np.zeros((speed.size, 2)), tau, np.full(speed.size, 0.01))
    fric = fit_friction(model, data, model.parameters_of(robot))
    for j, (Fc, Fs, Fv) in law.items():
        assert fric.names[j] == [f"fv{j + 1}", f"fcp{j + 1}", f"fcn{j + 1}", f"fs{j + 1}"]
        np.testing.assert_allclose(fric.estimates[j].beta, [Fv, Fc, -Fc, Fs - Fc], rtol=1e-9)
    assert np.all(fric.rms < 1e-12)


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    out = tmp_path_factory.mktemp("stages") / "out"
    assert main(["identify", str(EXAMPLES / "stages_two_link.yaml"), "--out", str(out)]) == 0
    return out, json.loads((out / "metrics.json").read_text())


def test_the_staged_two_link_example_reports_the_validation_error_after_each_stage(staged):
    out, metrics = staged
    st = metrics["stages"]
    assert st["gravity"]["rank"] == st["gravity"]["rank_needed"] == 4
    assert st["gravity"]["rel_error"] < 2e-4
    v = {k: np.array(e) for k, e in st["validation"].items()}
    assert list(v) == ["CAD", "gravity", "gravity + friction", "gravity + friction + inertia",
                       "all at once (consistent)"]
    # relative RMS torque error per joint on the validation move, after each stage
    np.testing.assert_allclose(v["CAD"], [0.0679, 0.2112], rtol=0.05)
    np.testing.assert_allclose(v["gravity"], [0.0324, 0.1404], rtol=0.05)
    np.testing.assert_allclose(v["gravity + friction"], [0.0053, 0.0399], rtol=0.05)
    np.testing.assert_allclose(v["gravity + friction + inertia"], [0.0007, 0.0066], rtol=0.1)
    assert np.all(v["gravity + friction + inertia"] < 1.1 * v["all at once (consistent)"])
    values = np.array(st["friction"]["values"])
    np.testing.assert_allclose(values, [[0.5, 1.0, -1.0], [0.3, 0.5, -0.5]], rtol=0.02)
    report = (out / "report.md").read_text()
    assert "## Staged identification: gravity, friction, inertia" in report
    assert "static regressor rank **4** of 4 base gravity parameters" in report
    assert "| gravity + friction + inertia | 0.07 % |" in report


def two_link_excitation(**kw):
    cad = RobotModel.from_yaml(EXAMPLES / "two_link_cad.yaml")
    model = IdentificationModel(cad)
    limits = limits_for(model, [-1.5, -2.0], [1.5, 2.0], [2.0, 2.5], [8.0, 10.0])
    return cad, optimise_excitation(model, base_parameters(model, 200), frequency=0.2, harmonics=5,
                                    limits=limits, seed=1, **kw)


def test_the_excitation_keeps_its_distance_from_singular_poses(staged):
    """The example's excitation keeps the position Jacobian's smallest singular value >= 0.4 m/rad;
    the same optimisation without the constraint comes nearer the stretched-out arm (0.29 to
    0.33 m/rad: where SLSQP stops depends on the BLAS's rounding, so the test asks for < 0.36)."""
    out, metrics = staged
    ex = metrics["excitation"]
    assert ex["min_singular_value"] == 0.4 and ex["singular_min"] >= 0.4 * (1 - 1e-3)
    assert ex["cond"] < 0.5 * ex["cond_start"] and ex["limit_violation"] <= 0
    assert "kept >= 0.4 by a constraint of the optimisation" in (out / "report.md").read_text()
    cad, free = two_link_excitation(q0=[0.0, 1.2], max_iter=40)
    assert free.singular_min is None
    reached = cad.smallest_singular_value(free.excitation.evaluate(_fine_grid(free.excitation))[0],
                                          "position").min()
    assert reached < 0.36


def test_an_excitation_rest_pose_nearer_a_singular_pose_than_the_minimum_is_refused():
    with pytest.raises(ParameterError, match=r"excitation q0 is nearer a singular pose than "
                       r"min_singular_value allows: the Jacobian's smallest singular value \(position "
                       r"rows\) is 0.458 there, below 0.5"):
        two_link_excitation(q0=[0.0, 1.2], min_singular_value=0.5, singular_part="position")


BAD = [
    ("  travel: 0.4                     # rad per sweep\n", "  travel: -0.4\n", 37,
     "stages.travel must be > 0, got -0.4"),
    ("  speeds: [0.05, 0.1, 0.2, 0.5, 1.0]   # rad/s, both directions\n", "  speeds: [0.05, 0]\n", 36,
     "stages.speeds[1] must be > 0, got 0"),
    ("  angles: [-90, -45, 0, 45, 90]   # deg, each joint in turn\n", "  angles: 45\n", 34,
     "stages.angles must be a non-empty list of numbers, got the number 45"),
    ("  hold: 0.5                       # s per pose\n", "  hodl: 0.5\n", 35,
     "unknown stages key 'hodl'"),
    ("  singular_part: position\n", "  singular_part: postion\n", 20,
     "excitation.singular_part must be one of"),
    ("  min_singular_value: 0.4 ", "  min_singular_value: 0.5 ", 19,
     "excitation.min_singular_value 0.5 cannot be kept: at the rest pose q0 the Jacobian's "
     "smallest singular value (position rows) is 0.458"),
    ("model: {rotor_inertia: false, friction: coulomb_viscous}",
     "model: {rotor_inertia: false, friction: none}", 32, "stages needs friction columns"),
]


@pytest.mark.parametrize("old, new, line, message", BAD)
def test_a_bad_stages_key_is_an_error_at_its_line(tmp_path, old, new, line, message):
    text = (EXAMPLES / "stages_two_link.yaml").read_text()
    assert old in text
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text.replace(old, new, 1).replace(": two_link_", f": {EXAMPLES}/two_link_")
                   .replace(": excitation_two_link", f": {EXAMPLES}/excitation_two_link"))
    with pytest.raises(IdentifyConfigError) as info:
        load_inputs(cfg)
    assert str(info.value).startswith(f"{cfg}:{line}: ") and message in str(info.value), str(info.value)


def test_the_cli_prints_a_bad_stages_key_as_one_line(tmp_path, capsys):
    text = (EXAMPLES / "stages_two_link.yaml").read_text().replace("  travel: 0.4  ", "  travel: -1  ")
    (tmp_path / "cfg.yaml").write_text(text)
    assert main(["identify", str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{tmp_path / 'cfg.yaml'}:37: stages.travel must be > 0" in err
