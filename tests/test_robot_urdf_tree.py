"""One serial chain out of a URDF tree (base_link, tip_link), moving branches off it held at rest
and lumped (a mimic-joint gripper) or dropped, and the <transmission> drive data: checked against
Pinocchio's values stored by tests/data/urdf/make_urdf_references.py."""
from pathlib import Path

import numpy as np
import pytest

from blocksim.models.robot import RobotModel
from blocksim.models.robot_file import RobotFileError
from blocksim.models.urdf import URDFError

DATA = Path(__file__).resolve().parent / "data" / "urdf"
GRIPPER_ARM = DATA / "arm6_mimic_gripper.urdf"
DUAL_ARM = Path(__file__).resolve().parents[1] / "examples" / "robots" / "dual_arm.urdf"
CASES = {"arm6_mimic_gripper": (GRIPPER_ARM, "base_link", "tcp"),
         "dual_arm_left": (DUAL_ARM, "world", "left_tool0"),
         "dual_arm_right": (DUAL_ARM, "torso", "right_tool0")}


def _close(value, ref):
    """Agreement to 1e-10 in the stored units (N m, kg m^2, m; they agree to about 3e-14)."""
    np.testing.assert_allclose(value, ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_chain_matches_pinocchio(case):
    file, base, tip = CASES[case]
    ref = np.load(DATA / f"{case}_reference.npz")
    model = RobotModel.from_urdf(file, base_link=base, tip_link=tip, gravity=ref["gravity"],
                                 rotor_inertia=True)
    assert model.joint_names == tuple(ref["joints"])
    _close(model.rnea(ref["q"], ref["qd"], ref["qdd"]), ref["tau"])
    _close(model.mass_matrix(ref["q"]), ref["M"])
    _close(model.fk(ref["q"]), ref["tool"])


def test_transmissions_give_gear_and_rotor_inertia():
    model = RobotModel.from_urdf(GRIPPER_ARM, tip_link="tcp")
    np.testing.assert_array_equal(model.gear, [120, 120, 100, 80, 80, 50])
    np.testing.assert_array_equal(model.Jm, [2.5e-4, 2.5e-4, 1.2e-4, 4e-5, 4e-5, 0.0])
    on = model.with_options(rotor_inertia=True)
    q = np.array([0.3, -0.7, 1.1, 0.2, -0.4, 0.9])
    np.testing.assert_allclose(on.mass_matrix(q) - model.mass_matrix(q),
                               np.diag([3.6, 3.6, 1.2, 0.256, 0.256, 0.0]), rtol=0, atol=1e-14)


def test_notes_say_what_was_lumped_and_dropped():
    gripper = RobotModel.from_urdf(GRIPPER_ARM, tip_link="tcp")
    assert gripper.notes == (
        "the moving joints off the chain below link 'palm' are held at rest and their links lumped "
        "into link 'link_6': finger_left_joint (q = 0), finger_right_joint (q = 0.005), "
        "finger_right_tip_joint (q = 0.3)",)
    left = RobotModel.from_urdf(DUAL_ARM, tip_link="left_tool0")
    assert left.n == 7 and left.notes[1] == (
        "the moving joints not below the chain's first moving joint are dropped (they do not load "
        "the chain): head_pan")
    assert left.notes[0].startswith("the moving joints off the chain below link 'torso' are held "
                                    "at rest and their links lumped into link 'torso': right_joint_1")


def test_gripper_is_lumped_into_the_last_link():
    """The gripper (palm 0.8 kg, fingers 0.12 + 0.12 kg, finger tip 0.05 kg) adds its mass to the
    last link: the same file cut at the gripper's mount has 1.09 kg less there."""
    with_gripper = RobotModel.from_urdf(GRIPPER_ARM, tip_link="tcp")
    text = GRIPPER_ARM.read_text()
    bare = RobotModel.from_urdf(text[:text.index('  <joint name="gripper_mount"')] + "</robot>\n")
    assert bare.notes == ()
    extra = with_gripper.standard_parameters()[50] - bare.standard_parameters()[50]
    assert extra == pytest.approx(1.09, abs=1e-12)


def test_default_tip_in_a_tree_asks_for_tip_link():
    with pytest.raises(URDFError, match=r"dual_arm.urdf:14: link 'pedestal' starts more than one "
                                        r"movable branch \(torso_yaw, head_pan\): name the "
                                        r"chain's end with tip_link"):
        RobotModel.from_urdf(DUAL_ARM)


def _robot_file(tmp_path, body):
    spec = tmp_path / "arm.yaml"
    spec.write_text(f"name: left\nsource: {DUAL_ARM}\n{body}")
    return spec


def test_robot_file_selects_the_chain(tmp_path):
    model = RobotModel.from_yaml(_robot_file(tmp_path, "base_link: torso\ntip_link: right_tool0\n"
                                                       "rotor_inertia: true\n"))
    assert model.n == 6 and model.name == "left" and model.rotor_inertia
    assert model.joint_names[0] == "right_joint_1"


@pytest.mark.parametrize("body, line, message", [
    ("base_link: world\ntip_link: left_tol0\n", 4,
     "tip_link 'left_tol0' is not a link of {urdf} (did you mean 'left_tool0'?)"),
    ("base_link: torsoo\ntip_link: left_tool0\n", 3,
     "base_link 'torsoo' is not a link of {urdf} (did you mean 'torso'?)"),
    ("base_link: left_link_3\ntip_link: right_tool0\n", 4,
     "tip_link 'right_tool0' is not below base_link 'left_link_3' (the links above 'right_tool0': "
     "right_link_6, right_link_5, right_link_4, right_link_3, right_link_2, right_link_1, "
     "right_base, torso, pedestal, world)"),
])
def test_wrong_chain_names_are_reported_at_the_robot_file_line(tmp_path, body, line, message):
    spec = _robot_file(tmp_path, body)
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(spec)
    assert str(info.value) == f"{spec}:{line}: " + message.format(urdf=DUAL_ARM)


def test_chain_keys_need_a_urdf_source(tmp_path):
    spec = tmp_path / "dh.yaml"
    spec.write_text("name: x\nlinks:\n  - {a: 1.0}\ntip_link: tool0\n")
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(spec)
    assert str(info.value) == (f"{spec}:4: 'tip_link' names a link of a URDF 'source'; a DH table "
                               "runs from its first row to its last")


TREE = """<robot name="t">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.5 0 0"/><axis xyz="0 1 0"/>{mimic2}</joint>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="f" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 0 0"/>{mimic_f}</joint>
  <link name="c"/>
  {extra}
</robot>"""


def tree(mimic2="", mimic_f="", extra=""):
    return TREE.format(mimic2=mimic2, mimic_f=mimic_f, extra=extra)


@pytest.mark.parametrize("kw, tip, message", [
    ({"mimic2": '<mimic joint="j1" multiplier="2"/>'}, "b",
     "<urdf string>:5: joint 'j2' on the chain mimics joint 'j1': a chain with mimic joints has "
     "fewer independent coordinates than joints, which a RobotModel does not hold: load it with "
     "blocksim.models.coupled.CoupledRobot.from_urdf (dynamics in the independent joints); the "
     "robot blocks take it as it is (the .urdf, or a robot YAML with it as source)"),
    ({"mimic_f": '<mimic joint="j2"/>'}, "b",
     "<urdf string>:7: joint 'f' (off the chain) mimics joint 'j2' of the chain: a follower of a "
     "chain joint cannot be lumped as a fixed body"),
    ({"mimic_f": '<mimic joint="j3"/>'}, "b",
     "<urdf string>:7: joint 'f' mimics joint 'j3', which is not in the file (did you mean 'j2'?)"),
    ({"extra": '<joint name="back" type="fixed"><parent link="c"/><child link="base"/></joint>'}, "c",
     "<urdf string>:9: joints back, f, j2, j1 form a closed kinematic loop (links base <- c <- b <- a "
     "<- base), which is not supported"),
    ({"extra": '<transmission name="t"><joint name="j22"/><actuator name="m"/></transmission>'}, "b",
     "<urdf string>:9: transmission 't' names joint 'j22', which is not in the file (did you mean "
     "'j2'?)"),
    ({"extra": '<transmission name="t"><joint name="j1"/><joint name="j2"/><actuator name="m"/>'
               '</transmission>'}, "b",
     "<urdf string>:9: transmission 't' couples 2 joints and 1 actuators; only one actuator "
     "driving one joint is supported"),
    ({"extra": '<transmission name="t"><joint name="j1"/><actuator name="m">'
               '<mechanicalReduction>0</mechanicalReduction></actuator></transmission>'}, "b",
     "<urdf string>:9: transmission 't': the gear ratio must not be 0"),
    ({"extra": '<transmission name="t"><joint name="j1"/><actuator name="m">'
               '<drake:rotor_inertia value="-1"/></actuator></transmission>'}, "b",
     "<urdf string>:9: transmission 't' <drake:rotor_inertia>: value=\"-1\" must be >= 0"),
])
def test_tree_errors_are_located(kw, tip, message):
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(tree(**kw), base_link="base", tip_link=tip)
    assert str(info.value) == message


def test_mimic_off_the_chain_is_held_at_its_offset():
    """Joint g follows f (3 q_f + 0.2 m) off the chain: held at 0.2 m, it carries link d's 2 kg
    0.2 m out along x of link b (first moment 0.4 kg m)."""
    extra = ('<joint name="g" type="prismatic"><parent link="b"/><child link="d"/><axis xyz="1 0 0"/>'
             '<mimic joint="f" multiplier="3" offset="0.2"/></joint>'
             '<link name="d"><inertial><mass value="2"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" '
             'iyz="0" izz="0"/></inertial></link>')
    model = RobotModel.from_urdf(tree(extra=extra), tip_link="b")
    theta = model.standard_parameters()
    np.testing.assert_allclose(theta[10:14], [3.0, 0.4, 0.0, 0.0], atol=1e-14)
    assert model.notes == ("the moving joints off the chain below link 'b' are held at rest and "
                           "their links lumped into link 'b': f (q = 0), g (q = 0.2)",)


def test_example_robot_file_is_the_left_arm():
    model = RobotModel.from_yaml(DUAL_ARM.parent / "dual_arm_left.yaml")
    assert model.name == "dual_arm_left" and model.n == 7
    assert model.joint_names[:2] == ("torso_yaw", "left_joint_1")
    assert model.armature[0] == pytest.approx(160 ** 2 * 4e-4, rel=1e-15)


def test_check_prints_what_the_urdf_left_out(capsys):
    from blocksim.cli import main
    diagram = DUAL_ARM.parents[1] / "commissioning" / "dual_arm_left_move.yaml"
    assert main(["check", str(diagram)]) == 0
    out = capsys.readouterr().out
    assert ("robot 'dual_arm_left' (blocks ct, arm, fk): the moving joints not below the chain's "
            "first moving joint are dropped (they do not load the chain): head_pan\n") in out
    assert out.count("robot 'dual_arm_left' (blocks ct, arm, fk): ") == 2
