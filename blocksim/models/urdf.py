"""URDF reader for `RobotModel.from_urdf`: the fixed-base serial chain from `base_link` to
`tip_link` of a URDF tree of revolute, continuous, prismatic and fixed joints, parsed by expat
into xml.etree elements that keep their line (no ROS needed; `read_xml` holds the defences
against hostile XML).

What is read: joint origin xyz/rpy (URDF: R = Rz(yaw) Ry(pitch) Rx(roll)), axis (normalised,
default x), limit lower/upper (continuous: none), dynamics damping (viscous, N m s/rad) and
friction (Coulomb, N m), mimic (joint, multiplier, offset); link inertial origin xyz/rpy, mass and
inertia (ixx ixy ixz iyy iyz izz about the centre of mass in the inertial frame); and each chain
joint's <transmission>: the gear ratio (mechanicalReduction) and the rotor inertia
(drake:rotor_inertia, kg m^2 on the motor side), used by `rotor_inertia: true`.

The chain: links attached to a chain link by fixed joints are merged into it (mass, centre of
mass and inertia, by the parallel-axis theorem). Branches off the chain that move (a gripper's
fingers beyond the tip, a second arm on a turning torso) are held at rest -- q = 0, a mimic joint
at multiplier * its leader's rest + offset -- and lumped into the chain link they hang from, with a
note; moving branches that do not hang below the chain's first moving joint (another arm on the
fixed base) do not load the chain and are dropped, with a note. Mimic joints on the chain stay in
the chain's joints, each with its `Coupling` to the independent joint it follows (see
`models.coupled`). Visual, collision, gazebo and any other element are ignored. Not supported, with a `URDFError`: floating and planar joints, mimic
joints on the chain that follow a joint off it, off-chain followers of chain joints, closed loops (a link with two parents),
coupled transmissions on the chain. Every number is checked (finite, the right count) and a wrong
one is reported at its element's line.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from xml.parsers import expat

import numpy as np

from ..errors import SourceLoc, did_you_mean
from .frames import (JointSpec, axis_frame, homogeneous, params_from_inertial, rotz,
                     rpy_to_matrix, transform_params)
from ..reading.located_yaml import decode_utf8, read_input_bytes
from .robot_file import RobotFileError


class URDFError(RobotFileError):
    """A URDF file that cannot be read or describes what RobotModel does not support; the
    message names the file and the line of the element."""


@dataclass(frozen=True)
class Coupling:
    """A mimic joint of the chain: q_follower = multiplier * q_leader + offset (rad or m; the
    multiplier in the ratio of the two joints' units), `leader` an independent chain joint, `where`
    the <mimic> element."""

    follower: str
    leader: str
    multiplier: float
    offset: float
    where: SourceLoc


@dataclass
class URDFDescription:
    """The chain read from a URDF: joints (JointSpec, every moving chain joint, mimic ones
    included), tool pose in the last link frame, name, notes on what off the chain was lumped or
    dropped, and the couplings of the chain's mimic joints (`Coupling`)."""

    name: str
    joints: list
    tool: np.ndarray
    link_names: list
    notes: tuple = ()
    couplings: tuple = ()


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


@dataclass(frozen=True)
class _Joint:
    """One <joint>: its element, type, parent and child link, and its mimic (leader, m, o) or None."""

    name: str
    elem: _Element
    kind: str
    parent: str
    child: str
    mimic: tuple | None

    @property
    def moves(self) -> bool:
        return self.kind != "fixed"


def _read_links(root, places):
    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if name is None:
            raise URDFError("a <link> has no name", where=places.at(link))
        if name in links:
            raise URDFError(f"link '{name}' is defined twice (first at line {links[name].line})",
                            where=places.at(link))
        links[name] = link
    return links


def _read_joints(root, links, places):
    """{name: _Joint} of every <joint>, checked: type, parent and child links, one parent per link."""
    joints = {}
    parent_of = {}
    for joint in root.findall("joint"):
        at = places.at(joint)
        jname = joint.get("name")
        if jname is None:
            raise URDFError("a <joint> has no name", where=at)
        if jname in joints:
            raise URDFError(f"joint '{jname}' is defined twice (first at line {joints[jname].elem.line})",
                            where=at)
        jtype = joint.get("type")
        if jtype in ("floating", "planar"):
            raise URDFError(f"joint '{jname}' is {jtype}: only fixed-base chains of revolute, "
                            f"continuous, prismatic and fixed joints are supported", where=at)
        if jtype not in ("revolute", "continuous", "prismatic", "fixed"):
            raise URDFError(f"joint '{jname}' has unknown type {jtype!r}; types: revolute, "
                            "continuous, prismatic, fixed", where=at)
        p_el, c_el = joint.find("parent"), joint.find("child")
        if p_el is None or c_el is None:
            raise URDFError(f"joint '{jname}' needs <parent link> and <child link>", where=at)
        parent, child = p_el.get("link"), c_el.get("link")
        for el, ln in ((p_el, parent), (c_el, child)):
            if ln is None:
                raise URDFError(f"joint '{jname}': <{el.tag}> has no link attribute", where=places.at(el))
            if ln not in links:
                raise URDFError(f"joint '{jname}' names unknown link '{ln}'{did_you_mean(ln, links)}",
                                where=places.at(el))
        if child in parent_of:
            raise URDFError(f"link '{child}' has two parent joints ('{parent_of[child]}' and "
                            f"'{jname}'): closed kinematic loops are not supported", where=at)
        parent_of[child] = jname
        mimic = None
        m_el = joint.find("mimic")
        if m_el is not None and jtype != "fixed":
            what, m_at = f"joint '{jname}' <mimic>", places.at(m_el)
            mimic = (m_el.get("joint"), _number(m_el, "multiplier", 1.0, what, m_at),
                     _number(m_el, "offset", 0.0, what, m_at))
        joints[jname] = _Joint(jname, joint, jtype, parent, child, mimic)
    for j in joints.values():
        if j.mimic is not None and j.mimic[0] not in joints:
            leader = j.mimic[0]
            raise URDFError(f"joint '{j.name}' mimics joint '{leader}', which is not in the file"
                            f"{did_you_mean(str(leader), joints)}", where=places.at(j.elem.find("mimic")))
    return joints


def _axis(joint: _Joint, places):
    """The unit axis of a movable joint (URDF default x)."""
    axis_el = joint.elem.find("axis")
    if axis_el is None:
        return np.array([1.0, 0.0, 0.0])
    axis = np.array(_floats(axis_el.get("xyz", "1 0 0"), 3, f"joint '{joint.name}' axis",
                            places.at(axis_el)))
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise URDFError(f"joint '{joint.name}' has a zero axis", where=places.at(axis_el))
    return axis / norm


def _motion(joint: _Joint, q, places):
    """4x4 motion of a joint at position q (rad or m) in its joint frame (identity if fixed)."""
    if not joint.moves:
        return np.eye(4)
    a = _axis(joint, places)
    if joint.kind == "prismatic":
        return homogeneous(p=a * q)
    Ra = axis_frame(a)
    return homogeneous(R=Ra @ rotz(q) @ Ra.T)


def _ancestors(link, joints, parent_of, places):
    """The joints from the root down to `link` (a list, root first); a loop is an error."""
    out, seen = [], [link]
    while link in parent_of:
        j = joints[parent_of[link]]
        if j.parent in seen:
            loop = seen[seen.index(j.parent):] + [j.parent]
            raise URDFError(f"joints {', '.join(out[seen.index(j.parent):] + [j.name])} form a closed "
                            f"kinematic loop (links {' <- '.join(loop)}), which is not supported",
                            where=places.at(joints[out[0]].elem if out else j.elem))
        seen.append(j.parent)
        out.append(j.name)
        link = j.parent
    return out[::-1]


def _moving_below(joints, parent_of):
    """The links with a moving joint somewhere below them (one pass up from each moving joint)."""
    marked = set()
    for j in joints.values():
        if not j.moves:
            continue
        link = j.parent
        while link not in marked:
            marked.add(link)
            if link not in parent_of:
                break
            link = joints[parent_of[link]].parent
    return marked


def _default_tip(base, joints, children, parent_of, places, links):
    """The chain's end when no tip_link is given: down from `base` through the one branch with
    moving joints, to the last moving link and on through single fixed children (e.g. tool0)."""
    moving_below = _moving_below(joints, parent_of)
    link = base
    while True:
        branches = [j for j in children[link] if joints[j].moves or joints[j].child in moving_below]
        if len(branches) > 1:
            raise URDFError(f"link '{link}' starts more than one movable branch "
                            f"({', '.join(branches)}): name the chain's end with tip_link",
                            where=places.at(links[link]))
        if branches:
            link = joints[branches[0]].child
        elif len(children[link]) == 1:
            link = joints[children[link][0]].child
        else:
            return link


def _rest_position(joint: _Joint, joints, chain, places):
    """Where a moving joint off the chain is held: 0, or for a mimic joint its multiplier times its
    leader's rest position plus its offset (rad or m). A follower of a chain joint cannot be held."""
    steps, seen, j = [], [], joint
    while j.mimic is not None:
        leader, mult, off = j.mimic
        at = places.at(j.elem.find("mimic"))
        if leader in chain:
            raise URDFError(f"joint '{j.name}' (off the chain) mimics joint '{leader}' of the chain: "
                            "a follower of a chain joint cannot be lumped as a fixed body", where=at)
        if j.name in seen:
            raise URDFError(f"mimic joints follow each other in a loop ({' -> '.join(seen + [j.name])})",
                            where=at)
        seen.append(j.name)
        steps.append((mult, off))
        j = joints[leader]
    value = 0.0
    for mult, off in reversed(steps):
        value = mult * value + off
    return value


def _text_number(elem, what, places):
    """The finite number written as the text of `elem` (e.g. <mechanicalReduction>50</...>)."""
    return _floats(elem.text, 1, what, places.at(elem))[0]


def _transmissions(root, joints, chain, places):
    """{joint name: (gear, Jm)} from the <transmission> elements acting on chain joints.

    The gear ratio N is <mechanicalReduction> (in <actuator>, or in <transmission> in the older
    format) or <drake:gear_ratio value>; the rotor inertia Jm (kg m^2, motor side) is the
    actuator's <drake:rotor_inertia value>. A transmission coupling several joints or actuators
    is refused when it drives a chain joint; one on joints off the chain is not read."""
    out, first = {}, {}
    for tr in root.findall("transmission"):
        name = tr.get("name", "?")
        at = places.at(tr)
        names = [j.get("name") for j in tr.findall("joint")]
        for jn, j_el in zip(names, tr.findall("joint")):
            if jn is None:
                raise URDFError(f"transmission '{name}': a <joint> has no name", where=places.at(j_el))
            if jn not in joints:
                raise URDFError(f"transmission '{name}' names joint '{jn}', which is not in the file"
                                f"{did_you_mean(str(jn), joints)}", where=places.at(j_el))
        on_chain = [jn for jn in names if jn in chain]
        if not on_chain:
            continue
        actuators = tr.findall("actuator")
        if len(names) > 1 or len(actuators) > 1:
            raise URDFError(f"transmission '{name}' couples {len(names)} joints and {len(actuators)} "
                            f"actuators; only one actuator driving one joint is supported", where=at)
        jn = on_chain[0]
        if jn in first:
            raise URDFError(f"joint '{jn}' has a second transmission '{name}' (the first at line "
                            f"{first[jn]})", where=at)
        first[jn] = tr.line
        gears = [(el, _text_number(el, f"transmission '{name}' <mechanicalReduction>", places))
                 for el in tr.iter("mechanicalReduction")]
        gears += [(el, _number(el, "value", 1.0, f"transmission '{name}' <drake:gear_ratio>",
                               places.at(el))) for el in tr.iter("drake:gear_ratio")]
        if len(gears) > 1:
            raise URDFError(f"transmission '{name}' gives its gear ratio {len(gears)} times",
                            where=places.at(gears[1][0]))
        gear = gears[0][1] if gears else 1.0
        if gear == 0.0:
            raise URDFError(f"transmission '{name}': the gear ratio must not be 0",
                            where=places.at(gears[0][0]))
        rotors = list(tr.iter("drake:rotor_inertia"))
        Jm = _number(rotors[0], "value", 0.0, f"transmission '{name}' <drake:rotor_inertia>",
                     places.at(rotors[0]), minimum=0.0) if rotors else 0.0
        out[jn] = (gear, Jm)
    return out


def _joint_spec(joint: _Joint, placement_in_parent, transmission, places):
    """The JointSpec of a chain joint: placement with the axis along z, limits, dynamics, drive."""
    jname, kind = joint.name, joint.kind
    Ra = axis_frame(_axis(joint, places))
    lower, upper = -math.inf, math.inf
    lim = joint.elem.find("limit")
    if kind in ("revolute", "prismatic") and lim is not None:
        what, at = f"joint '{jname}' <limit>", places.at(lim)
        lower = _number(lim, "lower", 0.0, what, at, infinite=True)
        upper = _number(lim, "upper", 0.0, what, at, infinite=True)
        if lower > upper:
            raise URDFError(f"{what}: lower {lower:g} is above upper {upper:g}", where=at)
    viscous = coulomb = 0.0
    dyn = joint.elem.find("dynamics")
    if dyn is not None:
        what, at = f"joint '{jname}' <dynamics>", places.at(dyn)
        viscous = _number(dyn, "damping", 0.0, what, at)
        coulomb = _number(dyn, "friction", 0.0, what, at)
    gear, Jm = transmission.get(jname, (1.0, 0.0))
    return JointSpec(name=jname, jtype=1 if kind == "prismatic" else 0,
                     placement=placement_in_parent @ _origin(joint.elem, f"joint '{jname}'", places)
                     @ homogeneous(R=Ra),
                     offset=homogeneous(R=Ra.T), theta=np.zeros(10), lower=lower, upper=upper,
                     viscous=viscous, coulomb_pos=coulomb, coulomb_neg=-coulomb, Jm=Jm, gear=gear)


def _chosen_link(name, key, links, file, where):
    if name not in links:
        raise URDFError(f"{key} '{name}' is not a link of {file}{did_you_mean(str(name), links)}",
                        where=where)
    return name


def parse_urdf(source, base_link=None, tip_link=None, names_at=None) -> URDFDescription:
    """Read a URDF file path (or an XML string starting with '<') into the serial chain from
    `base_link` (default: the root link) to `tip_link` (default: see `_default_tip`); every
    URDFError names the file and the line of the element at fault. `names_at` ({'base_link':
    SourceLoc, 'tip_link': SourceLoc}) is where a wrong base or tip name is reported (the robot
    file's key), the <robot> element when not given."""
    root, file = read_xml(source)
    places = _Places(file)
    where = places.at(root)
    names_at = names_at or {}
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>", where=where)
    links = _read_links(root, places)
    joints = _read_joints(root, links, places)
    children = {name: [] for name in links}
    for j in joints.values():
        children[j.parent].append(j.name)
    parent_of = {j.child: j.name for j in joints.values()}
    if base_link is None:
        roots = [ln for ln in links if ln not in parent_of]
        if len(roots) != 1:
            raise URDFError(f"expected one root link, found {roots or 'none (a loop)'}; name the "
                            "chain's base with base_link", where=where)
        base_link = roots[0]
    else:
        base_link = _chosen_link(base_link, "base_link", links, file, names_at.get("base_link", where))
    _ancestors(base_link, joints, parent_of, places)          # a loop above the base is an error
    if tip_link is None:
        tip_link = _default_tip(base_link, joints, children, parent_of, places, links)
    else:
        tip_link = _chosen_link(tip_link, "tip_link", links, file, names_at.get("tip_link", where))
    above_tip = _ancestors(tip_link, joints, parent_of, places)
    up = [joints[j].parent for j in above_tip]
    if base_link not in up and base_link != tip_link:
        raise URDFError(f"tip_link '{tip_link}' is not below base_link '{base_link}' (the links "
                        f"above '{tip_link}': {', '.join(up[::-1]) or 'none'})",
                        where=names_at.get("tip_link", where))
    path = above_tip[up.index(base_link):] if base_link != tip_link else []
    chain = set(path)
    couplings = tuple(_coupling(joints[j], joints, chain, places) for j in path
                      if joints[j].mimic is not None)
    drives = _transmissions(root, joints, chain, places)

    def hanging(link, T, skip, held):
        """Ten parameters of `link` and every subtree below it except joint `skip`, in the frame
        where `link` sits at T; moving joints are held at their rest positions (appended to held
        as (name, q))."""
        theta = np.zeros(10)
        stack = [(link, T)]
        while stack:
            name, T_link = stack.pop()
            theta = theta + transform_params(_link_params(links[name], places), T_link)
            for jn in children[name]:
                if jn == skip:
                    continue
                j = joints[jn]
                q = _rest_position(j, joints, chain, places) if j.moves else 0.0
                if j.moves:
                    held.append((jn, q))
                stack.append((j.child, T_link @ _origin(j.elem, f"joint '{jn}'", places)
                              @ _motion(j, q, places)))
        return theta

    specs, link_names, notes, held_all = [], [], [], set()
    T = np.eye(4)            # the current chain link in the last moving link's frame (or the base's)
    theta = np.zeros(10)     # parameters gathered for the last moving link
    chain_links = [base_link] + [joints[j].child for j in path]
    for k, link in enumerate(chain_links):
        if k > 0:
            j = joints[path[k - 1]]
            if j.moves:
                if specs:
                    specs[-1] = _with_theta(specs[-1], theta)
                specs.append(_joint_spec(j, T, drives, places))
                link_names.append(link)
                T, theta = np.eye(4), np.zeros(10)
            else:
                T = T @ _origin(j.elem, f"joint '{j.name}'", places)
        if specs:
            held = []
            theta = theta + hanging(link, T, path[k] if k < len(path) else None, held)
            held_all.update(name for name, _ in held)
            if held:
                notes.append(f"the moving joints off the chain below link '{link}' are held at rest "
                             f"and their links lumped into link '{link_names[-1]}': "
                             + ", ".join(f"{name} (q = {q:g})" for name, q in held))
    if not specs:
        raise URDFError(f"no moving joint between base_link '{base_link}' and tip_link "
                        f"'{tip_link}'", where=where)
    specs[-1] = _with_theta(specs[-1], theta)
    dropped = [jn for jn, j in joints.items() if j.moves and jn not in chain and jn not in held_all]
    if dropped:
        notes.append(f"the moving joints not below the chain's first moving joint are dropped (they "
                     f"do not load the chain): {', '.join(dropped)}")
    return URDFDescription(name=root.get("name", "urdf_robot"), joints=specs, tool=T,
                           link_names=link_names, notes=tuple(notes), couplings=couplings)


def _coupling(joint: _Joint, joints, chain, places) -> Coupling:
    """The Coupling of a mimic joint on the chain, followed through mimic joints that follow
    mimic joints to the independent chain joint it moves with: q = multiplier q_leader + offset."""
    mult, off, seen, j = 1.0, 0.0, [], joint
    at = places.at(joint.elem.find("mimic"))
    while j.mimic is not None:
        leader, m, o = j.mimic
        if j.name in seen:
            raise URDFError(f"mimic joints follow each other in a loop ({' -> '.join(seen + [j.name])})",
                            where=at)
        if leader not in chain:
            raise URDFError(f"joint '{j.name}' on the chain mimics joint '{leader}', which is off the "
                            "chain: a chain joint can follow only another joint of the chain", where=at)
        seen.append(j.name)
        mult, off = mult * m, mult * o + off
        j = joints[leader]
    if not j.moves:
        raise URDFError(f"joint '{joint.name}' mimics the fixed joint '{j.name}'", where=at)
    return Coupling(joint.name, j.name, mult, off, at)


def _with_theta(spec, theta):
    return replace(spec, theta=np.asarray(theta, dtype=float))
