"""Identified parameters written back for a URDF-sourced robot: a robot file that keeps the URDF as
its source (never rewritten) and holds the identified values as `overrides`, loaded by
RobotModel and reproducing the identified model's torques; the overrides' checks at their lines;
and `blocksim identify` on a logged record of a URDF arm end to end."""
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from blocksim.cli import main
from blocksim.identification import IdentificationModel, random_excitation, write_robot_file
from blocksim.identification.excitation import limits_for
from blocksim.models.robot import RobotModel
from blocksim.models.robot_file import RobotFileError

DATA = Path(__file__).resolve().parent / "data" / "urdf"
GRIPPER_ARM = DATA / "arm6_mimic_gripper.urdf"

#: A two-link arm pitching about y (gravity -z loads both joints), with transmissions.
TWO_LINK_URDF = """<?xml version="1.0"?>
<robot name="two_link_urdf" xmlns:drake="http://drake.mit.edu">
  <link name="base"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="50" velocity="3"/>
    <dynamics damping="0.2" friction="0.3"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0.2 0 0.01"/><mass value="2.0"/>
      <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.03"/></inertial>
  </link>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="30" velocity="3"/>
    <dynamics damping="0.1" friction="0.2"/>
  </joint>
  <link name="fore">
    <inertial><origin xyz="0.15 0 -0.01"/><mass value="1.2"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.012"/></inertial>
  </link>
  <joint name="tool_joint" type="fixed">
    <parent link="fore"/><child link="tool0"/><origin xyz="0.3 0 0"/>
  </joint>
  <link name="tool0"/>
  <transmission name="t_shoulder">
    <joint name="shoulder"/>
    <actuator name="m_shoulder"><mechanicalReduction>50</mechanicalReduction>
      <drake:rotor_inertia value="2e-5"/></actuator>
  </transmission>
</robot>
"""


def _other_arm(model: IdentificationModel, robot: RobotModel) -> np.ndarray:
    """The parameters of a physical arm other than `robot`: each link heavier by its own factor
    (shape kept), the rotors and the friction changed."""
    heavier = robot.scaled(1.0 + 0.1 * np.arange(1, robot.n + 1))
    theta = model.parameters_of(heavier)
    if model.rotor_inertia:
        theta[model.rotor_slice()] = 1.5 * theta[model.rotor_slice()] + 0.01
    fr = model.friction_slice()
    theta[fr] = np.abs(theta[fr]) * 1.3 + 0.05
    theta[fr.start + 2:fr.stop:3] *= -1.0                     # Coulomb-: negative
    return theta


def test_the_identified_file_keeps_the_urdf_and_reproduces_the_torques(tmp_path):
    cad = RobotModel.from_urdf(GRIPPER_ARM, tip_link="tcp")
    model = IdentificationModel(cad, rotor_inertia=True, friction="coulomb_viscous")
    theta = _other_arm(model, cad)
    before = GRIPPER_ARM.read_bytes()
    template = {"source": str(GRIPPER_ARM), "base_link": "base_link", "tip_link": "tcp"}
    path = write_robot_file(tmp_path / "ident.yaml", model, theta, template, name="ident",
                            friction_smoothing=0.0)
    assert GRIPPER_ARM.read_bytes() == before
    written = yaml.safe_load(path.read_text())
    assert written["source"] == str(GRIPPER_ARM) and "links" not in written
    assert list(written["overrides"]) == list(cad.joint_names)
    back = RobotModel.from_yaml(path)
    assert back.joint_names == cad.joint_names and back.rotor_inertia
    np.testing.assert_array_equal(back.gear, cad.gear)         # the URDF's transmissions kept
    np.testing.assert_allclose(model.parameters_of(back), theta, rtol=1e-12, atol=1e-15)
    rng = np.random.default_rng(4)
    q, qd, qdd = (rng.uniform(-2, 2, (20, cad.n)) for _ in range(3))
    want = model.torque(theta, q, qd, qdd)
    got = back.rnea(q, qd, qdd) + back.friction_torque(qd)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-10)
    # the kinematics are the URDF's
    np.testing.assert_allclose(back.fk(q), cad.fk(q), rtol=0, atol=1e-15)


def test_an_override_replaces_only_what_it_names(tmp_path):
    (tmp_path / "arm.urdf").write_text(TWO_LINK_URDF)
    (tmp_path / "arm.yaml").write_text("source: arm.urdf\noverrides:\n  elbow: {mass: 2.4}\n"
                                       "  shoulder: {coulomb: [0.5, -0.4], Jm: 3.0e-5}\n")
    urdf = RobotModel.from_urdf(tmp_path / "arm.urdf")
    back = RobotModel.from_yaml(tmp_path / "arm.yaml")
    q = np.array([0.4, -0.9])
    # the elbow body's mass doubled at the same centre of mass: its gravity torque doubles
    light = urdf.with_link_params(0, mass=0.0)
    np.testing.assert_allclose(back.with_link_params(0, mass=0.0).gravity_torque(q),
                               2.0 * light.gravity_torque(q), rtol=1e-13)
    np.testing.assert_array_equal(back.coulomb_pos, [0.5, 0.2])
    np.testing.assert_array_equal(back.coulomb_neg, [-0.4, -0.2])
    np.testing.assert_array_equal(back.viscous, urdf.viscous)
    np.testing.assert_array_equal(back.Jm, [3.0e-5, 0.0])
    np.testing.assert_array_equal(back.gear, [50.0, 1.0])


@pytest.mark.parametrize("text, line, message", [
    ("source: arm.urdf\noverrides:\n  elbw: {mass: 1.0}\n", 3,
     "overrides: 'elbw' is not a joint of the chain (did you mean 'elbow'?); the chain's joints: "
     "shoulder, elbow"),
    ("source: arm.urdf\noverrides:\n  elbow:\n    mass: -1.0\n", 4,
     "overrides: joint 'elbow': mass must be >= 0"),
    ("source: arm.urdf\noverrides:\n  elbow: {inertia: [1, 2]}\n", 3,
     "overrides: joint 'elbow': inertia"),
    ("source: arm.urdf\noverrides:\n  elbow: {masss: 1.0}\n", 3, "masss"),
    ("links: [{a: 1.0}]\noverrides:\n  elbow: {mass: 1.0}\n", 2,
     "'overrides' replaces values of a URDF 'source'; a DH table holds them in its rows"),
])
def test_a_bad_override_is_an_error_at_its_line(tmp_path, text, line, message):
    (tmp_path / "arm.urdf").write_text(TWO_LINK_URDF)
    (tmp_path / "arm.yaml").write_text(text)
    with pytest.raises(RobotFileError) as err:
        RobotModel.from_yaml(tmp_path / "arm.yaml")
    assert err.value.where.line == line and err.value.where.file.endswith("arm.yaml")
    assert message in str(err.value)


def test_cli_identify_writes_a_urdf_arm_back_as_source_and_overrides(tmp_path):
    """A logged record of a URDF arm (no simulation): the identified file names the URDF (left
    as it was), loads, and its torques on the validation log are those the report scores."""
    urdf = tmp_path / "robots" / "arm.urdf"
    urdf.parent.mkdir()
    urdf.write_text(TWO_LINK_URDF)
    cad = RobotModel.from_urdf(urdf)
    model = IdentificationModel(cad, friction="coulomb_viscous")
    theta_true = _other_arm(model, cad)
    lim = limits_for(model, q_min=[-1.5, -2.0], q_max=[1.5, 2.0], qd_max=[2.0, 2.5],
                     qdd_max=[8.0, 10.0])
    rng = np.random.default_rng(0)
    logs = {}
    for name, seed in (("train", 1), ("check", 2)):
        ex = random_excitation(model, 0.5, 5, [0.0, 0.0], lim, seed=seed)
        t = np.arange(int(3 * ex.period / 2e-3)) * 2e-3
        q, qd, qdd = ex.evaluate(t)
        tau = model.torque(theta_true, q, qd, qdd) + 0.02 * rng.standard_normal(q.shape)
        np.savez(tmp_path / f"{name}.npz", t=t, q=q, tau=tau)
        logs[name] = (q, qd, qdd, tau)
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({
        "identify": 1, "name": "logged URDF two-link",
        "robot": {"cad": "robots/arm.urdf"},
        "data": {"log": "train.npz", "period": 2.0, "skip_periods": 0},
        "processing": {"cutoff": 10.0, "decimate": 5},
        "validation": {"log": "check.npz", "period": 2.0}}))
    out = tmp_path / "out"
    assert main(["identify", str(tmp_path / "cfg.yaml"), "--out", str(out)]) == 0
    assert urdf.read_text() == TWO_LINK_URDF
    written = yaml.safe_load((out / "identified_robot.yaml").read_text())
    assert Path(written["source"]) == urdf.resolve()
    assert sorted(written["overrides"]) == ["elbow", "shoulder"]
    ident = RobotModel.from_yaml(out / "identified_robot.yaml")
    q, qd, qdd, _ = logs["check"]
    exact = model.torque(theta_true, q, qd, qdd)
    got = ident.rnea(q, qd, qdd) + ident.friction_torque(qd)
    rel = np.sqrt(np.mean((got - exact) ** 2, axis=0) / np.mean(exact ** 2, axis=0))
    assert np.all(rel < 0.02), rel
    metrics = json.loads((out / "metrics.json").read_text())
    assert max(metrics["validation"]["consistent"]) < 0.05
