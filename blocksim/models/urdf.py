"""URDF reader for `RobotModel.from_urdf`: a fixed-base serial chain of revolute, continuous,
prismatic and fixed joints, parsed by expat into xml.etree elements that keep their line (no ROS
needed; `read_xml` holds the defences against hostile XML).

What is read: joint origin xyz/rpy (URDF: R = Rz(yaw) Ry(pitch) Rx(roll)), axis (normalised,
default x), limit lower/upper (continuous: none), dynamics damping (viscous, N m s/rad) and
friction (Coulomb, N m); link inertial origin xyz/rpy, mass and inertia (ixx ixy ixz iyy iyz izz
about the centre of mass in the inertial frame). Links attached by fixed joints are merged into
their parent (mass and inertia included); visual, collision, transmission, gazebo and any other
element are ignored. Not supported, with a `URDFError`: floating and planar joints, mimic joints,
closed loops (a link with two parents), and trees with more than one movable branch. Every
number is checked (finite, the right count) and a wrong one is reported at its element's line.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from xml.parsers import expat

import numpy as np

from ..errors import SourceLoc
from .frames import (JointSpec, axis_frame, homogeneous, params_from_inertial, rpy_to_matrix,
                     transform_params)
from ..reading.located_yaml import decode_utf8, read_input_bytes
from .robot_file import RobotFileError


class URDFError(RobotFileError):
    """A URDF file that cannot be read or describes what RobotModel does not support; the
    message names the file and the line of the element."""


@dataclass
class URDFDescription:
    """The chain read from a URDF: joints (JointSpec), tool pose in the last link frame, name."""

    name: str
    joints: list
    tool: np.ndarray
    link_names: list


class _Element(ET.Element):
    """An ElementTree element that remembers its 1-based line in the file (`line`)."""

    line: int | None = None


_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _refuse_entities(*_args):
    raise URDFError("the XML declares entities; a URDF is plain XML (entity declarations are "
                    "refused: they can expand without bound)")


def read_xml(source) -> tuple[_Element, str]:
    """The root element of a URDF file path (or an XML string starting with '<'), each element
    with its line, and the name of the file for messages.

    Parsed by expat into ElementTree elements. Defences: entity declarations are refused outright
    (no entity expansion, so no "billion laughs"), no external entity or DTD is ever fetched, and
    expat's own amplification limit stays on. A file without an encoding declaration must be
    UTF-8 (an invalid byte is reported at its line)."""
    text_given = isinstance(source, str) and source.lstrip().startswith("<")
    file = "<urdf string>" if text_given else str(source)
    if text_given:
        data = source
    else:
        data = read_input_bytes(source, "URDF file", URDFError)
        declared = _ENCODING.match(data)
        if declared is None or declared.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8"):
            decode_utf8(data, file, URDFError)
    builder = ET.TreeBuilder(element_factory=_Element)
    parser = expat.ParserCreate()

    def start(tag, attrs):
        builder.start(tag, attrs).line = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = _refuse_entities
    parser.UnparsedEntityDeclHandler = _refuse_entities
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        raise URDFError(f"cannot read the XML: {expat.ErrorString(err.code)} (column {err.offset + 1})",
                        where=SourceLoc(file, err.lineno)) from None
    except URDFError as err:
        raise err.located(where=SourceLoc(file, parser.CurrentLineNumber)) from None
    return builder.close(), file


class _Places:
    """Locations of elements in one file: `at(elem)` is the SourceLoc of its line."""

    def __init__(self, file):
        self.file = file

    def at(self, elem) -> SourceLoc:
        return SourceLoc(self.file, getattr(elem, "line", None))


def _floats(text, count, what, where):
    try:
        vals = [float(v) for v in (text or "").split()]
    except ValueError:
        raise URDFError(f"{what}: cannot read numbers from {text!r}", where=where) from None
    if len(vals) != count:
        raise URDFError(f"{what}: expected {count} numbers, got {text!r}", where=where)
    if not all(math.isfinite(v) for v in vals):
        raise URDFError(f"{what}: the numbers must be finite, got {text!r}", where=where)
    return vals


def _number(elem, attr, default, what, where, *, infinite=False, minimum=None):
    """The number in attribute `attr` of `elem` (`default` when absent), finite unless `infinite`."""
    raw = elem.get(attr)
    if raw is None:
        return default
    try:
        x = float(raw)
    except ValueError:
        raise URDFError(f"{what}: {attr}=\"{raw}\" is not a number", where=where) from None
    if math.isnan(x) or (math.isinf(x) and not infinite):
        raise URDFError(f"{what}: {attr}=\"{raw}\" must be a finite number", where=where)
    if minimum is not None and x < minimum:
        raise URDFError(f"{what}: {attr}=\"{raw}\" must be >= {minimum:g}", where=where)
    return x


def _origin(elem, what, places):
    """4x4 pose of an <origin xyz rpy> child (identity when absent)."""
    o = elem.find("origin")
    if o is None:
        return np.eye(4)
    where = places.at(o)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz", where)
    rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy", where)
    return homogeneous(rpy_to_matrix(rpy), xyz)


def _link_params(link, places):
    """Ten standard parameters of a <link>'s inertial, about the link frame origin (zeros if none)."""
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros(10)
    name = link.get("name")
    T = _origin(inertial, f"link '{name}' inertial", places)
    mass_el = inertial.find("mass")
    mass = 0.0
    if mass_el is not None:
        mass = _number(mass_el, "value", 0.0, f"link '{name}' <mass>", places.at(mass_el))
        if mass < 0:
            raise URDFError(f"link '{name}': negative mass {mass}", where=places.at(mass_el))
    I = np.zeros((3, 3))
    iel = inertial.find("inertia")
    if iel is not None:
        v = {k: _number(iel, k, 0.0, f"link '{name}' <inertia>", places.at(iel))
             for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                      [v["ixy"], v["iyy"], v["iyz"]],
                      [v["ixz"], v["iyz"], v["izz"]]])
    R = T[:3, :3]
    return params_from_inertial(mass, T[:3, 3], R @ I @ R.T)


def parse_urdf(source, base_link=None, tip_link=None) -> URDFDescription:
    """Read a URDF file path (or an XML string starting with '<') into a serial-chain description;
    every URDFError names the file and the line of the element at fault."""
    root, file = read_xml(source)
    places = _Places(file)
    where = places.at(root)
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>", where=where)
    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if name is None:
            raise URDFError("a <link> has no name", where=places.at(link))
        if name in links:
            raise URDFError(f"link '{name}' is defined twice (first at line {links[name].line})",
                            where=places.at(link))
        links[name] = link
    joints = {}
    children = {name: [] for name in links}
    parent_of = {}
    for joint in root.findall("joint"):
        at = places.at(joint)
        jname = joint.get("name")
        if jname is None:
            raise URDFError("a <joint> has no name", where=at)
        if jname in joints:
            raise URDFError(f"joint '{jname}' is defined twice (first at line {joints[jname].line})",
                            where=at)
        jtype = joint.get("type")
        if jtype in ("floating", "planar"):
            raise URDFError(f"joint '{jname}' is {jtype}: only fixed-base chains of revolute, "
                            f"continuous, prismatic and fixed joints are supported", where=at)
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise URDFError(f"joint '{jname}' has unknown type {jtype!r}; types: revolute, "
                            "continuous, prismatic, fixed", where=at)
        if joint.find("mimic") is not None:
            raise URDFError(f"joint '{jname}' is a mimic joint, which is not supported",
                            where=places.at(joint.find("mimic")))
        p_el, c_el = joint.find("parent"), joint.find("child")
        if p_el is None or c_el is None:
            raise URDFError(f"joint '{jname}' needs <parent link> and <child link>", where=at)
        parent, child = p_el.get("link"), c_el.get("link")
        for el, ln in ((p_el, parent), (c_el, child)):
            if ln is None:
                raise URDFError(f"joint '{jname}': <{el.tag}> has no link attribute", where=places.at(el))
            if ln not in links:
                raise URDFError(f"joint '{jname}' names unknown link '{ln}'", where=places.at(el))
        if child in parent_of:
            raise URDFError(f"link '{child}' has two parent joints ('{parent_of[child]}' and "
                            f"'{jname}'): closed kinematic loops are not supported", where=at)
        parent_of[child] = jname
        joints[jname] = joint
        children[parent].append(jname)
    roots = [ln for ln in links if ln not in parent_of]
    if base_link is None:
        if len(roots) != 1:
            raise URDFError(f"expected one root link, found {roots or 'none (a cycle)'}", where=where)
        base_link = roots[0]
    elif base_link not in links:
        raise URDFError(f"base link '{base_link}' is not in the file", where=where)

    def subtree_is_fixed(link_name):
        return all(joints[j].get("type") == "fixed" and subtree_is_fixed(joints[j].find("child").get("link"))
                   for j in children[link_name])

    def merge_fixed(link_name, T_in_owner, skip=None):
        """Parameters of link_name and its fixed-attached descendants, in the owner link's frame."""
        theta = transform_params(_link_params(links[link_name], places), T_in_owner)
        for j in children[link_name]:
            joint = joints[j]
            if joint.get("type") != "fixed" or j == skip:
                continue
            child = joint.find("child").get("link")
            theta = theta + merge_fixed(child, T_in_owner @ _origin(joint, f"joint '{j}'", places))
        return theta

    def path_joint(link_name):
        """The fixed child joint of link_name that leads on to movable joints, if any."""
        for j in children[link_name]:
            if joints[j].get("type") == "fixed" and not subtree_is_fixed(joints[j].find("child").get("link")):
                return j
        return None

    def contains(link_name, target):
        return link_name == target or any(contains(joints[j].find("child").get("link"), target)
                                          for j in children[link_name])

    specs = []
    link_names = []
    current = base_link           # the link whose frame we are in
    T_cur = np.eye(4)             # current link frame in the last movable link's (user) frame
    owner_theta = None            # parameters accumulated for the last movable link
    tool = np.eye(4)
    while True:
        movable = [j for j in children[current] if joints[j].get("type") != "fixed"]
        fixed = [j for j in children[current] if joints[j].get("type") == "fixed"]
        on_path = [j for j in fixed if not subtree_is_fixed(joints[j].find("child").get("link"))]
        if len(movable) + len(on_path) > 1:
            raise URDFError(f"link '{current}' starts more than one movable branch "
                            f"({', '.join(movable + on_path)}): only serial chains are supported",
                            where=places.at(links[current]))
        if current == tip_link:
            tool = T_cur
            break
        if movable:
            jname = movable[0]
            joint = joints[jname]
        elif on_path:
            # a fixed joint between movable ones: its link (and fixed-only subtrees) belong to
            # the previous movable link
            jname = on_path[0]
            joint = joints[jname]
            child = joint.find("child").get("link")
            T_cur = T_cur @ _origin(joint, f"joint '{jname}'", places)
            current = child
            if specs:
                owner_theta = owner_theta + merge_fixed(child, T_cur, skip=path_joint(child))
            continue
        else:
            # end of the movable chain: follow fixed children to the tool link
            if tip_link is not None:
                toward = [j for j in fixed if contains(joints[j].find("child").get("link"), tip_link)]
                if not toward:
                    raise URDFError(f"tip link '{tip_link}' is not on the chain from '{base_link}'",
                                    where=where)
                follow = toward[0]
            elif len(fixed) == 1:
                follow = fixed[0]
            else:
                tool = T_cur
                break
            joint = joints[follow]
            T_cur = T_cur @ _origin(joint, f"joint '{follow}'", places)
            current = joint.find("child").get("link")
            continue
        # a movable joint from `current` to `child`
        child = joint.find("child").get("link")
        kind = joint.get("type")
        axis_el = joint.find("axis")
        axis = _floats(axis_el.get("xyz", "1 0 0"), 3, f"joint '{jname}' axis", places.at(axis_el)) \
            if axis_el is not None else [1.0, 0.0, 0.0]
        if np.linalg.norm(axis) < 1e-12:
            raise URDFError(f"joint '{jname}' has a zero axis", where=places.at(axis_el))
        Ra = axis_frame(axis)
        lower, upper = -math.inf, math.inf
        lim = joint.find("limit")
        if kind in ("revolute", "prismatic") and lim is not None:
            what, at = f"joint '{jname}' <limit>", places.at(lim)
            lower = _number(lim, "lower", 0.0, what, at, infinite=True)
            upper = _number(lim, "upper", 0.0, what, at, infinite=True)
            if lower > upper:
                raise URDFError(f"{what}: lower {lower:g} is above upper {upper:g}", where=at)
        viscous = coulomb = 0.0
        dyn = joint.find("dynamics")
        if dyn is not None:
            what, at = f"joint '{jname}' <dynamics>", places.at(dyn)
            viscous = _number(dyn, "damping", 0.0, what, at)
            coulomb = _number(dyn, "friction", 0.0, what, at)
        if specs:
            # the owner of the fixed links passed so far is the previous movable link
            specs[-1] = _with_theta(specs[-1], owner_theta)
        placement = T_cur @ _origin(joint, f"joint '{jname}'", places) @ homogeneous(R=Ra)
        offset = homogeneous(R=Ra.T)
        specs.append(JointSpec(name=jname, jtype=1 if kind == "prismatic" else 0,
                               placement=placement, offset=offset, theta=np.zeros(10),
                               lower=lower, upper=upper, viscous=viscous,
                               coulomb_pos=coulomb, coulomb_neg=-coulomb))
        link_names.append(child)
        # the child link and every fixed-only subtree below it belong to this movable link;
        # a fixed joint that leads on to more movable joints is followed instead of merged
        owner_theta = merge_fixed(child, np.eye(4), skip=path_joint(child))
        current = child
        T_cur = np.eye(4)
        if current == tip_link:
            tool = T_cur
            break
    if not specs:
        raise URDFError(f"no movable joint between '{base_link}' and the tip", where=where)
    specs[-1] = _with_theta(specs[-1], owner_theta)
    return URDFDescription(name=root.get("name", "urdf_robot"), joints=specs, tool=tool,
                           link_names=link_names)


def _with_theta(spec, theta):
    return replace(spec, theta=np.asarray(theta, dtype=float))
