"""Robot files (YAML and URDF) get the diagrams' located errors: a malformed file, a duplicate key,
a value of the wrong kind or count, a non-finite number, a file that is not UTF-8 or cannot be read
is a RobotFileError naming file:line, and `python cli.py check` on a diagram using such a robot
prints that one line and exits 1."""
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from blocksim.cli import main
from blocksim.errors import ParameterError
from blocksim.models.coupled import CoupledRobot
from blocksim.models.robot import RobotModel
from blocksim.models.robot_file import RobotFileError
from blocksim.models.urdf import URDFError
from blocksim.reading import located_yaml
from blocksim.reading.limits import LimitError

ROOT = Path(__file__).resolve().parents[1]

GOOD_YAML = """\
name: arm
convention: standard
gravity: [0.0, -9.81, 0.0]
links:
  - name: shoulder
    a: 1.0
    mass: 3.0
    com: [-0.5, 0.0, 0.0]
    inertia: [0.0, 0.25, 0.25]
    qlim: [-3.0, 3.0]
  - {name: elbow, a: 0.8, mass: 2.0, com: [-0.4, 0.0, 0.0], inertia: [0.0, 0.1, 0.1]}
"""

DIAGRAM = """\
blocksim: 1
blocks:
  tau: {type: Constant, value: [0.0, 0.0]}
  plant: {type: Manipulator, robot: ROBOT}
connections: [tau -> plant.tau]
simulation: {stop_time: 0.01, solver: rk4, step: 0.001}
"""


def robot_yaml(tmp_path, text, name="arm.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def edit(old, new, text=GOOD_YAML):
    assert old in text
    return text.replace(old, new, 1)


def test_the_good_file_loads():
    model = RobotModel._from_mapping(located_yaml.parse_yaml_text(GOOD_YAML, "arm.yaml"), "arm.yaml")
    assert model.n == 2 and model.joint_names == ("shoulder", "elbow")
    np.testing.assert_array_equal(model.q_lower, [-3.0, -np.inf])


@pytest.mark.parametrize("text, line, message", [
    (edit("name: arm\n", "name: arm\nname: other\n"), 2, "duplicate key 'name' (first written at line 1)"),
    (edit("    mass: 3.0", "    mass: heavy"), 7, "link 1 ('shoulder'): mass must be a number, got the text 'heavy'"),
    (edit("    mass: 3.0", "    mass: .nan"), 7, "link 1 ('shoulder'): mass must be a finite number, got nan"),
    (edit("    mass: 3.0", "    mass: -1.0"), 7, "link 1 ('shoulder'): mass must be >= 0, got -1"),
    (edit("    mass: 3.0", "    mass: true"), 7, "mass must be a number, got true"),
    (edit("    com: [-0.5, 0.0, 0.0]", "    com: [-0.5, 0.0]"), 8,
     "link 1 ('shoulder'): com must be a list of 3 numbers, got 2 values"),
    (edit("    com: [-0.5, 0.0, 0.0]", "    com:\n      - -0.5\n      - zero\n      - 0.0"), 10,
     "com[1] must be a number, got the text 'zero'"),
    (edit("    qlim: [-3.0, 3.0]", "    qlim: 3"), 10, "qlim must be a list of 2 numbers, got the number 3"),
    (edit("    qlim: [-3.0, 3.0]", "    qlim: [3.0, -3.0]"), 10, "has its lower limit above the upper"),
    (edit("    inertia: [0.0, 0.25, 0.25]", "    inertia: [[1, 2, 3], [2, 1, 0], [4, 0, 1]]"), 9,
     "inertia: the 3x3 tensor is not symmetric"),
    (edit("    inertia: [0.0, 0.25, 0.25]", "    inertia: [1, 2, 3, 4]"), 9, "must be a list of 3 or 6 numbers"),
    (edit("    a: 1.0", "    a: 1.0\n    coulomb: [1, 2, 3]"), 7,
     "coulomb must be one number or a list of 2 numbers, got 3 values"),
    (edit("    a: 1.0", "    type: revolut"), 6, "type must be one of revolute, prismatic, got 'revolut' (did you mean 'revolute'?)"),
    (edit("    a: 1.0", "    mas: 1.0"), 6, "unknown link 1 ('shoulder') key 'mas' (did you mean 'mass'?)"),
    (edit("    a: 1.0", "    G: 0"), 6, "G (the gear ratio) must not be 0"),
    (edit("gravity: [0.0, -9.81, 0.0]", "gravity: [0.0, -9.81]"), 3, "gravity must be a list of 3 numbers, got 2 values"),
    (edit("gravity: [0.0, -9.81, 0.0]", "rotor_inertia: yes"), 3, "rotor_inertia must be true or false, got the text 'yes'"),
    (edit("convention: standard", "convention: modifed"), 2, "did you mean 'modified'?"),
    (edit("gravity: [0.0, -9.81, 0.0]", "tool: {xyz: [0, 0, a]}"), 3, "tool: xyz[2] must be a number, got the text 'a'"),
    (edit("gravity: [0.0, -9.81, 0.0]", "friction_smoothing: -1e-3"), 3, "friction_smoothing must be >= 0"),
    (edit("gravity: [0.0, -9.81, 0.0]", "gravty: [0, 0, -9.81]"), 3, "unknown robot key 'gravty' (did you mean 'gravity'?)"),
    (edit("gravity: [0.0, -9.81, 0.0]", "source: arm.urdf"), 3, "give either 'links' (a DH table) or 'source'"),
    ("name: arm\nlinks: {a: 1.0}\n", 2, "links must be a list of at least one joint, got a mapping"),
    ("name: arm\nlinks: []\n", 2, "links must be a list of at least one joint, got a list of 0"),
    ("name: arm\nlinks:\n  - 1.5\n", 3, "link 1 must be a mapping (key: value), got the number 1.5"),
    ("- 1\n- 2\n", 1, "a robot file must be a mapping"),
    ("name: arm\nlinks:\n  - !!python/object:os.system {a: 1.0}\n", 3,
     "the YAML tag !!python/object:os.system is not allowed"),
    ("name: arm\nlinks:\n  - {a: 1.0, mass: [1\n", 4, "malformed YAML"),
    ("name: arm\nlinks:\n\t- {a: 1.0}\n", 3, "indent with spaces, not tabs"),
])
def test_a_bad_robot_yaml_is_a_located_robot_file_error(tmp_path, text, line, message):
    path = robot_yaml(tmp_path, text)
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(path)
    assert info.value.where.file == str(path) and info.value.where.line == line, str(info.value)
    assert message in str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert isinstance(info.value, ParameterError)        # what callers caught before


def test_a_robot_file_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "arm.yaml"
    path.write_bytes(GOOD_YAML.replace("name: shoulder", "name: sch\xf6n").encode("latin-1"))
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(path)
    assert str(info.value).startswith(f"{path}:5: not UTF-8 text (invalid")


def test_an_alias_bomb_is_refused_before_it_is_built(tmp_path):
    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    path = robot_yaml(tmp_path, "\n".join(lines) + "\n")
    start = time.perf_counter()
    with pytest.raises(LimitError) as info:
        RobotModel.from_yaml(path)
    assert str(info.value) == (
        f"{path}:1: the file expands to 123,456,790 mappings and lists, more than the limit of "
        "500,000 (each use of an alias is a copy); if you mean it, raise the limit with the "
        "environment variable BLOCKSIM_MAX_YAML_NODES")
    assert time.perf_counter() - start < 0.5       # counted on the node graph, before building


# ------------------------------------------------------------------- operating-system refusals

def test_os_errors_on_reading_a_robot_file_are_path_and_reason(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "folder.yaml").mkdir()
    cases = {
        tmp_path / "nowhere" / "deeper" / "arm.yaml": f"no such folder {tmp_path / 'nowhere'}",
        tmp_path / "missing.yaml": "no such file",
        tmp_path / "afile" / "arm.yaml": f"{tmp_path / 'afile'} is a file, not a folder",
        tmp_path / "folder.yaml": "is a folder, not a file",
    }
    for path, reason in cases.items():
        with pytest.raises(RobotFileError) as info:
            RobotModel.from_yaml(path)
        assert str(info.value) == f"{path}: cannot read the robot file: {reason}"
    # permission: simulated, since the suite may run as root (which reads every file)
    locked = robot_yaml(tmp_path, GOOD_YAML, "locked.yaml")
    real = Path.open

    def refuse(self, *args, **kwargs):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(locked)
    assert str(info.value) == f"{locked}: cannot read the robot file: permission denied"


def test_a_missing_urdf_source_names_the_robot_file_line_that_asks_for_it(tmp_path):
    path = robot_yaml(tmp_path, "name: arm\nsource: parts/arm.urdf\n")
    with pytest.raises(URDFError) as info:
        RobotModel.from_yaml(path)
    assert str(info.value) == (f"{tmp_path / 'parts' / 'arm.urdf'}: cannot read the URDF file: no such "
                               f"folder {tmp_path / 'parts'} (the 'source' of {path}:2)")


# ------------------------------------------------------------------- URDF

GOOD_URDF = """\
<robot name="r">
  <link name="a"/>
  <joint name="j1" type="revolute">
    <parent link="a"/><child link="b"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1"/>
  </joint>
  <link name="b">
    <inertial><mass value="1.0"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
  </link>
  <joint name="j2" type="revolute">
    <parent link="b"/><child link="c"/>
    <origin xyz="1 0 0"/>
    <axis xyz="0 0 1"/>
    <dynamics damping="0.5" friction="0.1"/>
  </joint>
  <link name="c">
    <inertial>
      <mass value="1.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>
    </inertial>
  </link>
</robot>
"""


def uedit(old, new):
    assert old in GOOD_URDF
    return GOOD_URDF.replace(old, new, 1)


def test_the_good_urdf_loads(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(GOOD_URDF)
    model = RobotModel.from_urdf(path)
    assert model.joint_names == ("j1", "j2") and model.viscous[1] == 0.5


@pytest.mark.parametrize("text, line, message", [
    (uedit('<mass value="1.0"/>\n', '<mass value="one"/>\n'), 19, "link 'c' <mass>: value=\"one\" is not a number"),
    (uedit('ixx="0.1"', 'ixx="big"'), 9, "link 'b' <inertia>: ixx=\"big\" is not a number"),
    (uedit('upper="1"', 'upper="x"'), 6, "joint 'j1' <limit>: upper=\"x\" is not a number"),
    (uedit('upper="1"', 'upper="-2"'), 6, "joint 'j1' <limit>: lower -1 is above upper -2"),
    (uedit('damping="0.5"', 'damping="nan"'), 15, "damping=\"nan\" must be a finite number"),
    (uedit('<origin xyz="1 0 0"/>', '<origin xyz="inf 0 0"/>'), 13, "origin xyz: the numbers must be finite"),
    (uedit('<origin xyz="1 0 0"/>', '<origin xyz="1 0"/>'), 13, "origin xyz: expected 3 numbers"),
    (uedit('<axis xyz="0 0 1"/>\n    <dynamics', '<axis xyz="0 0 0"/>\n    <dynamics'), 14, "joint 'j2' has a zero axis"),
    (uedit('name="j2"', 'name="j1"'), 11, "joint 'j1' is defined twice (first at line 3)"),
    (uedit('<link name="c">', '<link name="b">'), 17, "link 'b' is defined twice (first at line 8)"),
    (uedit('type="revolute">\n    <parent link="b"/>', 'type="revolve">\n    <parent link="b"/>'), 11,
     "joint 'j2' has unknown type 'revolve'"),
    (uedit('<child link="c"/>', '<child link="z"/>'), 12, "joint 'j2' names unknown link 'z'"),
    (uedit('<link name="c">', '<link name="c"'), 18, "cannot read the XML: not well-formed"),
    (uedit('</joint>\n  <link name="c">', '</joint>\n  <link name="c">\n  </robot>'), 18,
     "cannot read the XML: mismatched tag"),
])
def test_a_bad_urdf_is_a_urdf_error_at_the_element_line(tmp_path, text, line, message):
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(path)
    assert info.value.where.line == line, str(info.value)
    assert message in str(info.value) and str(info.value).startswith(f"{path}:{line}: ")
    assert isinstance(info.value, RobotFileError)


def test_a_urdf_that_is_not_utf8_names_the_line_unless_it_declares_its_encoding(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_bytes(uedit('<robot name="r">', '<robot name="r\xe9">').encode("latin-1"))
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(path)
    assert str(info.value).startswith(f"{path}:1: not UTF-8 text")
    declared = '<?xml version="1.0" encoding="ISO-8859-1"?>\n' + uedit('<robot name="r">', '<robot name="r\xe9">')
    path.write_bytes(declared.encode("latin-1"))
    assert RobotModel.from_urdf(path).name == "r\xe9"


@pytest.mark.parametrize("doctype", [
    # "billion laughs": nine levels of ten references each
    '<!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9)) + "]>",
    '<!DOCTYPE robot [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE robot [<!ENTITY x SYSTEM "http://example.invalid/x.dtd">]>',
])
def test_xml_entity_declarations_are_refused_before_any_expansion(tmp_path, doctype):
    path = tmp_path / "bomb.urdf"
    path.write_text(f'<?xml version="1.0"?>\n{doctype}\n<robot name="&j;"><link name="a"/></robot>\n')
    start = time.perf_counter()
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(path)
    assert time.perf_counter() - start < 1.0
    assert str(info.value).startswith(f"{path}:2: the XML declares entities")


def test_os_errors_on_reading_a_urdf_are_path_and_reason(tmp_path):
    for path, reason in {tmp_path / "none" / "arm.urdf": f"no such folder {tmp_path / 'none'}",
                         tmp_path: "is a folder, not a file"}.items():
        with pytest.raises(URDFError) as info:
            RobotModel.from_urdf(path)
        assert str(info.value) == f"{path}: cannot read the URDF file: {reason}"


# ------------------------------------------------------------------- through a diagram and the CLI

def check(tmp_path, robot_name, capsys):
    diagram = tmp_path / "diagram.yaml"
    diagram.write_text(DIAGRAM.replace("ROBOT", robot_name))
    code = main(["check", str(diagram)])
    return code, capsys.readouterr().err


def test_check_on_a_diagram_with_a_bad_robot_file_prints_its_line_and_exits_1(tmp_path, capsys):
    robot_yaml(tmp_path, edit("    mass: 3.0", "    mass: heavy"))
    code, err = check(tmp_path, "arm.yaml", capsys)
    assert code == 1
    assert err == (f"error: {tmp_path / 'arm.yaml'}:7: block 'plant': link 1 ('shoulder'): mass must be "
                   "a number, got the text 'heavy'\n")
    (tmp_path / "arm.urdf").write_text(uedit('upper="1"', 'upper="x"'))
    code, err = check(tmp_path, "arm.urdf", capsys)
    assert code == 1
    assert err == (f"error: {tmp_path / 'arm.urdf'}:6: block 'plant': joint 'j1' <limit>: upper=\"x\" "
                   "is not a number\n")


def test_cli_check_with_a_duplicate_key_in_the_robot_file_has_no_traceback(tmp_path):
    robot_yaml(tmp_path, edit("name: arm\n", "name: arm\nname: other\n"))
    diagram = tmp_path / "diagram.yaml"
    diagram.write_text(DIAGRAM.replace("ROBOT", "arm.yaml"))
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(diagram)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr == (f"error: {tmp_path / 'arm.yaml'}:2: block 'plant': duplicate key 'name' "
                           "(first written at line 1)\n")


# ------------------------------------------------------------------- the one YAML reader, for robot files

@pytest.mark.parametrize("text, where, message", [
    ("name: arm\nlinks: []\nname: b\n", (3, 1), "duplicate key 'name' (first written at line 1)"),
    ("name: !!python/object/apply:os.system [ls]\n", (1, None),
     "the YAML tag !!python/object/apply:os.system is not allowed; a robot file is plain data"),
    ("links: [1, 2\n", (2, None), "malformed YAML: did not find expected ',' or ']' (while parsing a "
                                   "flow sequence)"),
    ("links:\n\tmass: 1\n", (2, None), "malformed YAML: found character that cannot start any "
                                      "token (while scanning for the next token); indent with spaces, "
                                      "not tabs"),
    ("? [1, 2]\n: 3\n", (1, 3), "a mapping key must be a name or number, not a list"),
    ("base: &b {x: 1}\ntwo: {<<: *b, x: 2}\n", (2, 15), "duplicate key 'x' (first written at line 1)"),
    ("name: arm\x07\n", (1, 10), "the character U+0007 (BEL) (column 10) is not allowed in a robot "
                                  "file; remove it (in a double-quoted string, write it as an escape "
                                  "such as \\x07)"),
    ("mass: 1" + "0" * 400 + "\n", (1, 7), "the integer 1000000000000000000000000000000000000000... "
                                        "(401 characters) is too large for a number (beyond 1.8e308)"),
    ("a: &a [1, *a]\n", (1, 4), "an alias is used inside the mapping or list it names (which would "
                                "expand without end)"),
])
def test_the_reader_refuses_a_bad_robot_file_at_its_line_as_a_robot_file_error(tmp_path, text, where,
                                                                                 message):
    path = robot_yaml(tmp_path, text)
    with pytest.raises(RobotFileError) as info:
        RobotModel.from_yaml(path)
    assert (info.value.where.line, info.value.where.column) == where
    assert info.value.message == message


def test_the_reader_reads_yaml_1_2_scalars_with_the_line_and_column_of_every_key_and_item():
    text = "a: 1e-3\nb: yes\nc: 012\nd: 1:30\ne: 2024-01-02\nf: 0x1F\ng: .inf\nh: -.5\ni: ~\nj: on\n" \
           "k: [1, {z: 2}]\nbase: &b {x: [1, 2]}\none: *b\n"
    data = located_yaml.parse_yaml_text(text, "x.yaml", error=RobotFileError, what="robot file")
    assert located_yaml.to_plain(data) == {
        "a": 1e-3, "b": "yes", "c": 12, "d": "1:30", "e": "2024-01-02", "f": 31, "g": float("inf"),
        "h": -0.5, "i": None, "j": "on", "k": [1, {"z": 2}], "base": {"x": [1, 2]}, "one": {"x": [1, 2]}}
    assert [type(data[key]) for key in "acf"] == [float, int, int]
    assert data.loc("h") == located_yaml.SourceLoc("x.yaml", 8, 1)
    assert data["k"].item_where == [located_yaml.SourceLoc("x.yaml", 11, 5),
                                    located_yaml.SourceLoc("x.yaml", 11, 8)]
    data["one"]["x"].append(3)                     # an alias is a copy: the anchor is unchanged
    assert data["base"]["x"] == [1, 2]


def test_a_robot_file_over_the_file_bytes_limit_is_refused_unread(tmp_path, monkeypatch):
    path = robot_yaml(tmp_path, GOOD_YAML)
    monkeypatch.setenv("BLOCKSIM_MAX_FILE_BYTES", "100")
    with pytest.raises(LimitError) as info:
        RobotModel.from_yaml(path)
    assert str(info.value) == (f"{path}: the robot file has {len(GOOD_YAML)} bytes, more than the limit "
                               "of 100; if you mean it, raise the limit with the environment variable "
                               "BLOCKSIM_MAX_FILE_BYTES")


def shipped_robot_files():
    return sorted([*(ROOT / "blocksim" / "models" / "robots").glob("*.yaml"),
                   *(ROOT / "examples" / "robots").glob("*.yaml"),
                   *(ROOT / "examples" / "identification").glob("*_cad.yaml"),
                   *(ROOT / "examples" / "identification").glob("*_true.yaml")])


def test_every_shipped_robot_file_reads_as_it_did_with_yaml_safe_load():
    files = shipped_robot_files()
    assert len(files) >= 8
    for path in files:
        located = located_yaml.to_plain(located_yaml.read_yaml(path, "robot file"))
        assert located == yaml.safe_load(path.read_text()), path
        CoupledRobot.chain_of_yaml(path)      # as the blocks load it (mimic chains included)
