"""URDF reader for `RobotModel.from_urdf`: a fixed-base serial chain of revolute, continuous,
prismatic and fixed joints, read with xml.etree (no ROS needed).

What is read: joint origin xyz/rpy (URDF: R = Rz(yaw) Ry(pitch) Rx(roll)), axis (normalised,
default x), limit lower/upper (continuous: none), dynamics damping (viscous, N m s/rad) and
friction (Coulomb, N m); link inertial origin xyz/rpy, mass and inertia (ixx ixy ixz iyy iyz izz
about the centre of mass in the inertial frame). Links attached by fixed joints are merged into
their parent (mass and inertia included); visual, collision, transmission, gazebo and any other
element are ignored. Not supported, with a `URDFError`: floating and planar joints, mimic joints,
closed loops (a link with two parents), and trees with more than one movable branch.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import ParameterError, SourceLoc
from .frames import (JointSpec, axis_frame, homogeneous, params_from_inertial, rpy_to_matrix,
                     transform_params)


class URDFError(ParameterError):
    """A URDF file that cannot be read or describes what RobotModel does not support."""


@dataclass
class URDFDescription:
    """The chain read from a URDF: joints (JointSpec), tool pose in the last link frame, name."""

    name: str
    joints: list
    tool: np.ndarray
    link_names: list


def _floats(text, count, what, where):
    try:
        vals = [float(v) for v in text.split()]
    except ValueError:
        raise URDFError(f"{what}: cannot read numbers from {text!r}", where=where) from None
    if len(vals) != count:
        raise URDFError(f"{what}: expected {count} numbers, got {text!r}", where=where)
    return vals


def _origin(elem, what, where):
    """4x4 pose of an <origin xyz rpy> child (identity when absent)."""
    o = elem.find("origin")
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{what} origin xyz", where)
    rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{what} origin rpy", where)
    return homogeneous(rpy_to_matrix(rpy), xyz)


def _link_params(link, where):
    """Ten standard parameters of a <link>'s inertial, about the link frame origin (zeros if none)."""
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros(10)
    name = link.get("name")
    T = _origin(inertial, f"link '{name}' inertial", where)
    mass_el = inertial.find("mass")
    mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
    if mass < 0:
        raise URDFError(f"link '{name}': negative mass {mass}", where=where)
    I = np.zeros((3, 3))
    iel = inertial.find("inertia")
    if iel is not None:
        v = {k: float(iel.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]],
                      [v["ixy"], v["iyy"], v["iyz"]],
                      [v["ixz"], v["iyz"], v["izz"]]])
    R = T[:3, :3]
    return params_from_inertial(mass, T[:3, 3], R @ I @ R.T)


def parse_urdf(source, base_link=None, tip_link=None) -> URDFDescription:
    """Read a URDF file path (or an XML string starting with '<') into a serial-chain description."""
    text_given = isinstance(source, str) and source.lstrip().startswith("<")
    where = SourceLoc("<urdf string>" if text_given else str(source))
    try:
        root = ET.fromstring(source) if text_given else ET.parse(Path(source)).getroot()
    except (OSError, ET.ParseError) as exc:
        raise URDFError(f"cannot read URDF: {exc}", where=where) from None
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>", where=where)
    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if name is None:
            raise URDFError("a <link> has no name", where=where)
        if name in links:
            raise URDFError(f"link '{name}' is defined twice", where=where)
        links[name] = link
    joints = {}
    children = {name: [] for name in links}
    parent_of = {}
    for joint in root.findall("joint"):
        jname = joint.get("name", "?")
        jtype = joint.get("type")
        if jtype in ("floating", "planar"):
            raise URDFError(f"joint '{jname}' is {jtype}: only fixed-base chains of revolute, "
                            f"continuous, prismatic and fixed joints are supported", where=where)
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise URDFError(f"joint '{jname}' has unknown type {jtype!r}", where=where)
        if joint.find("mimic") is not None:
            raise URDFError(f"joint '{jname}' is a mimic joint, which is not supported", where=where)
        p_el, c_el = joint.find("parent"), joint.find("child")
        if p_el is None or c_el is None:
            raise URDFError(f"joint '{jname}' needs <parent link> and <child link>", where=where)
        parent, child = p_el.get("link"), c_el.get("link")
        for ln in (parent, child):
            if ln not in links:
                raise URDFError(f"joint '{jname}' names unknown link '{ln}'", where=where)
        if child in parent_of:
            raise URDFError(f"link '{child}' has two parent joints ('{parent_of[child]}' and "
                            f"'{jname}'): closed kinematic loops are not supported", where=where)
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
        theta = transform_params(_link_params(links[link_name], where), T_in_owner)
        for j in children[link_name]:
            joint = joints[j]
            if joint.get("type") != "fixed" or j == skip:
                continue
            child = joint.find("child").get("link")
            theta = theta + merge_fixed(child, T_in_owner @ _origin(joint, f"joint '{j}'", where))
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
                            where=where)
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
            T_cur = T_cur @ _origin(joint, f"joint '{jname}'", where)
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
            T_cur = T_cur @ _origin(joint, f"joint '{follow}'", where)
            current = joint.find("child").get("link")
            continue
        # a movable joint from `current` to `child`
        child = joint.find("child").get("link")
        kind = joint.get("type")
        axis_el = joint.find("axis")
        axis = _floats(axis_el.get("xyz", "1 0 0"), 3, f"joint '{jname}' axis", where) \
            if axis_el is not None else [1.0, 0.0, 0.0]
        if np.linalg.norm(axis) < 1e-12:
            raise URDFError(f"joint '{jname}' has a zero axis", where=where)
        Ra = axis_frame(axis)
        lower, upper = -math.inf, math.inf
        lim = joint.find("limit")
        if kind in ("revolute", "prismatic") and lim is not None:
            lower = float(lim.get("lower", "0"))
            upper = float(lim.get("upper", "0"))
        viscous = coulomb = 0.0
        dyn = joint.find("dynamics")
        if dyn is not None:
            viscous = float(dyn.get("damping", "0"))
            coulomb = float(dyn.get("friction", "0"))
        if specs:
            # the owner of the fixed links passed so far is the previous movable link
            specs[-1] = _with_theta(specs[-1], owner_theta)
        placement = T_cur @ _origin(joint, f"joint '{jname}'", where) @ homogeneous(R=Ra)
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
