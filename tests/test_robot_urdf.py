"""URDF reading: the same arm from a URDF and from DH gives the same model; unsupported input fails clearly."""
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from blocksim.errors import ParameterError
from blocksim.models.robot import RobotModel
from blocksim.models.urdf import URDFError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "robots" / "kr6_like.urdf"
PUMA = RobotModel.preset("puma560")


def _rpy(R):
    return Rotation.from_matrix(R).as_euler("xyz")      # URDF rpy: R = Rz(y) Ry(p) Rx(r)


def _f(v):
    return " ".join(repr(float(x)) for x in v)


def puma_as_urdf(tool_mass=0.0):
    """Corke's Puma 560 written as a URDF by hand from its standard DH table.

    URDF link i is the frame after joint i's rotation, before Tx(a_i) Rx(alpha_i); the DH link
    frame i is that fixed transform further on, so each inertial is moved by it, and the next
    joint's origin starts with it. A fixed `tool0` link (with `tool_mass` kg at its origin) closes
    the chain at DH frame 6, reached through a fixed `flange` link.
    """
    dh = [(0, np.pi / 2, 0), (0.4318, 0, 0), (0.0203, -np.pi / 2, 0.15005),
          (0, np.pi / 2, 0.4318), (0, -np.pi / 2, 0), (0, 0, 0)]
    mass = [0, 17.4, 4.8, 0.82, 0.34, 0.09]
    com = [(0, 0, 0), (-0.3638, 0.006, 0.2275), (-0.0203, -0.0141, 0.070), (0, 0.019, 0), (0, 0, 0), (0, 0, 0.032)]
    inertia = [(0, 0.35, 0), (0.13, 0.524, 0.539), (0.066, 0.086, 0.0125), (1.8e-3, 1.3e-3, 1.8e-3),
               (0.3e-3, 0.4e-3, 0.3e-3), (0.15e-3, 0.15e-3, 0.04e-3)]

    def after(a, alpha):          # Tx(a) Rx(alpha)
        R = Rotation.from_euler("x", alpha).as_matrix()
        return R, np.array([a, 0.0, 0.0])

    parts = ['<robot name="puma_urdf">', '<link name="base"><visual/></link>']
    prev_R, prev_p = np.eye(3), np.zeros(3)
    parent = "base"
    for i, ((a, alpha, d), m, c, I) in enumerate(zip(dh, mass, com, inertia)):
        # joint origin: previous fixed part, then Tz(d)
        p = prev_p + prev_R @ np.array([0, 0, d])
        parts.append(f'<joint name="j{i + 1}" type="{"continuous" if i == 5 else "revolute"}">'
                     f'<parent link="{parent}"/><child link="l{i + 1}"/>'
                     f'<origin xyz="{_f(p)}" rpy="{_f(_rpy(prev_R))}"/><axis xyz="0 0 1"/>'
                     f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
        R, t = after(a, alpha)
        c_l = t + R @ np.array(c)
        parts.append(f'<link name="l{i + 1}"><inertial><origin xyz="{_f(c_l)}" rpy="{_f(_rpy(R))}"/>'
                     f'<mass value="{m!r}"/><inertia ixx="{I[0]!r}" ixy="0" ixz="0" iyy="{I[1]!r}" iyz="0" '
                     f'izz="{I[2]!r}"/></inertial><collision/></link>')
        prev_R, prev_p = R, t
        parent = f"l{i + 1}"
    parts.append(f'<joint name="to_flange" type="fixed"><parent link="l6"/><child link="flange"/>'
                 f'<origin xyz="{_f(prev_p)}" rpy="{_f(_rpy(prev_R))}"/></joint><link name="flange"/>')
    parts.append('<joint name="to_tool" type="fixed"><parent link="flange"/><child link="tool0"/></joint>')
    parts.append(f'<link name="tool0"><inertial><mass value="{tool_mass!r}"/>'
                 f'<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
    parts.append('<transmission name="t1"><type>x</type></transmission><gazebo/></robot>')
    return "\n".join(parts)


def random_state(n, B=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, (B, n)) for _ in range(3))


def assert_same_model(a, b, tol=1e-10):
    q, qd, qdd = random_state(a.n)
    for fa, fb in [(a.rnea(q, qd, qdd), b.rnea(q, qd, qdd)), (a.mass_matrix(q), b.mass_matrix(q)),
                   (a.fk(q), b.fk(q)), (a.jacobian(q), b.jacobian(q)),
                   (a.coriolis_matrix(q, qd), b.coriolis_matrix(q, qd))]:
        np.testing.assert_allclose(fa, fb, rtol=0, atol=tol * max(1.0, np.max(np.abs(fb))))


def test_urdf_and_dh_puma_agree():
    urdf = RobotModel.from_urdf(puma_as_urdf())
    assert urdf.n == 6 and urdf.joint_names == ("j1", "j2", "j3", "j4", "j5", "j6")
    assert_same_model(urdf, PUMA)
    assert np.isinf(urdf.q_upper[5]) and urdf.q_upper[0] == 3.0


def test_fixed_tool_link_mass_is_merged():
    urdf = RobotModel.from_urdf(puma_as_urdf(tool_mass=2.5))
    assert_same_model(urdf, PUMA.with_payload(2.5))


def test_example_urdf_equals_kr6_preset():
    urdf = RobotModel.from_urdf(EXAMPLE)
    kr6 = RobotModel.preset("kr6_like")
    assert_same_model(urdf, kr6)
    np.testing.assert_allclose(urdf.fk(np.zeros(6))[:3, 3], [0.9, 0.0, 1.12], atol=1e-12)
    np.testing.assert_allclose(urdf.viscous, kr6.viscous)
    np.testing.assert_allclose(urdf.coulomb_pos, kr6.coulomb_pos)
    np.testing.assert_allclose(urdf.coulomb_neg, kr6.coulomb_neg)
    np.testing.assert_allclose(urdf.q_lower, kr6.q_lower)


def test_tip_link_and_yaml_source(tmp_path):
    flange = RobotModel.from_urdf(EXAMPLE, tip_link="link_6")
    np.testing.assert_allclose(flange.fk(np.zeros(6))[:3, 3], [0.8, 0.0, 1.12], atol=1e-12)
    spec = tmp_path / "kr6_urdf.yaml"
    spec.write_text(f"name: kr6_urdf\nsource: {EXAMPLE}\nrotor_inertia: true\n")
    model = RobotModel.from_yaml(spec)
    assert model.rotor_inertia and model.n == 6 and model.name == "kr6_urdf"
    np.testing.assert_allclose(model.fk(np.zeros(6))[:3, 3], [0.9, 0.0, 1.12], atol=1e-12)


ARM = """<robot name="arm">
  <link name="base"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="{axis1}"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="a"><inertial><origin xyz="0.1 0 0.05" rpy="0.2 0.1 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.01"/></inertial></link>
  <joint name="mid" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0.4 0 0" rpy="0 0.3 0"/></joint>
  <link name="b"><inertial><mass value="{mid_mass}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="j2" type="prismatic"><parent link="b"/><child link="c"/>
    <origin xyz="0 0.1 0" rpy="0 0 0.4"/><axis xyz="{axis2}"/>
    <limit lower="0" upper="0.5" effort="1" velocity="1"/><dynamics damping="3.0" friction="0.7"/></joint>
  <link name="c"><inertial><origin xyz="0 0 0.1"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.002"/></inertial></link>
  {extra}
</robot>"""


def arm(axis1="0 0 1", axis2="1 0 0", mid_mass="0.5", extra=""):
    return ARM.format(axis1=axis1, axis2=axis2, mid_mass=mid_mass, extra=extra)


def rot_h(R=np.eye(3), p=(0, 0, 0)):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def test_arbitrary_axes_and_fixed_link_between_joints():
    model = RobotModel.from_urdf(arm(axis1="0.3 -0.5 0.8", axis2="0 1 1"))
    q = np.array([0.7, 0.25])
    a1 = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    a2 = np.array([0, 1, 1]) / np.sqrt(2)
    T = (rot_h(Rotation.from_euler("xyz", [0.3, -0.2, 0.5]).as_matrix(), (0.1, 0.2, 0.3))
         @ rot_h(Rotation.from_rotvec(a1 * q[0]).as_matrix())
         @ rot_h(Rotation.from_euler("xyz", [0, 0.3, 0]).as_matrix(), (0.4, 0, 0))
         @ rot_h(Rotation.from_euler("xyz", [0, 0, 0.4]).as_matrix(), (0, 0.1, 0))
         @ rot_h(p=a2 * q[1]))
    np.testing.assert_allclose(model.fk(q), T, atol=1e-13)
    assert model.joint_types == ("revolute", "prismatic")
    assert model.viscous[1] == 3.0 and model.coulomb_pos[1] == 0.7 and model.coulomb_neg[1] == -0.7
    # the fixed link 'b' belongs to the first moving link: its mass shows in the gravity load
    lighter = RobotModel.from_urdf(arm(axis1="0.3 -0.5 0.8", axis2="0 1 1", mid_mass="0"))
    assert not np.allclose(model.gravity_torque(q)[0], lighter.gravity_torque(q)[0])
    np.testing.assert_allclose(model.gravity_torque(q)[1], lighter.gravity_torque(q)[1], atol=1e-14)
    # and the dynamics stay consistent
    qd, qdd = np.array([0.3, -0.8]), np.array([1.0, 2.0])
    np.testing.assert_allclose(model.aba(q, qd, model.rnea(q, qd, qdd)), qdd, atol=1e-12)


def test_reversed_axis_is_a_negated_joint():
    plus = RobotModel.from_urdf(arm(axis1="0 0 1"))
    minus = RobotModel.from_urdf(arm(axis1="0 0 -1"))
    q = np.array([0.6, 0.2])
    np.testing.assert_allclose(minus.fk(q * [-1, 1]), plus.fk(q), atol=1e-14)


@pytest.mark.parametrize("extra, message", [
    ('<joint name="f" type="floating"><parent link="c"/><child link="d"/></joint><link name="d"/>',
     "floating"),
    ('<joint name="loop" type="fixed"><parent link="c"/><child link="a"/></joint>', "closed kinematic loops"),
    ('<joint name="m" type="revolute"><parent link="c"/><child link="d"/><mimic joint="j1"/></joint>'
     '<link name="d"/>', "mimic"),
    ('<joint name="k" type="revolute"><parent link="a"/><child link="d"/></joint><link name="d"/>',
     "more than one movable branch"),
    ('<joint name="k" type="revolute"><parent link="c"/><child link="nowhere"/></joint>', "unknown link"),
])
def test_unsupported_urdf_fails_clearly(extra, message):
    with pytest.raises(URDFError, match=message):
        RobotModel.from_urdf(arm(extra=extra))


def test_bad_files():
    with pytest.raises(URDFError, match="cannot read"):
        RobotModel.from_urdf("/nonexistent/robot.urdf")
    with pytest.raises(URDFError, match="cannot read"):
        RobotModel.from_urdf("<robot><link name='a'></robot>")
    assert issubclass(URDFError, ParameterError)


def test_presets_and_yaml_errors(tmp_path):
    assert set(RobotModel.preset_names()) >= {"two_link", "two_link_point_mass", "puma560", "kr6_like"}
    with pytest.raises(ParameterError, match="did you mean 'puma560'"):
        RobotModel.preset("puma650")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nlinks:\n  - {a: 1.0, mas: 2.0}\n")
    with pytest.raises(ParameterError, match="did you mean 'mass'") as info:
        RobotModel.from_yaml(bad)
    assert "bad.yaml" in str(info.value)


def _import_graph(package: str):
    """{module: modules it imports} among the modules of a blocksim subpackage, counting imports
    inside functions (a `from . import x` names module x, not the package)."""
    import ast
    import blocksim
    root = Path(blocksim.__file__).parent / package
    names = {f"blocksim.{package}.{p.stem}": p for p in root.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name, path in names.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = (f"blocksim.{package}" + (f".{node.module}" if node.module else "")
                          if node.level == 1 else node.module or "")
                edges |= {t for t in [target] + [f"{target}.{a.name}" for a in node.names]
                          if t in names and t != name}
        graph[name] = edges
    return graph


def test_no_import_cycle_among_the_model_modules():
    """models.robot and models.urdf share models.frames and import not each other."""
    import networkx as nx
    graph = nx.DiGraph([(a, b) for a, bs in _import_graph("models").items() for b in bs])
    assert list(nx.simple_cycles(graph)) == []
    assert "blocksim.models.robot" not in _import_graph("models")["blocksim.models.urdf"]
