"""Reading and checking YAML robot files (and the DH tables given to `RobotModel.from_dh`): every
key and value is checked for its kind, count and range before a model is built, and a wrong one
is reported at its line ("arm.yaml:12: link 1 ('shoulder'): mass must be a number, got the text
'heavy'"). The values come back as plain floats and arrays in SI units (m, rad, kg, kg m^2,
N m s/rad, N m); what they mean is in `RobotModel.from_dh`'s docstring.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BlocksimError, ParameterError, SourceLoc
from .frames import homogeneous, rpy_to_matrix, sym3
from .input_values import describe, flag, known_keys, mapping, matrix, real, reals, text
from ..reading.located_yaml import YamlMap, loc_of, read_yaml, where_of

LINK_KEYS = {"name", "type", "a", "alpha", "d", "theta", "mass", "com", "inertia", "Jm", "G",
             "gear", "viscous", "coulomb", "B", "Tc", "qlim"}
MODEL_KEYS = {"name", "description", "convention", "gravity", "rotor_inertia", "friction_smoothing",
              "tool", "base", "links", "source", "base_link", "tip_link", "overrides"}
#: What a URDF source's `overrides` may set per joint (the body it moves, its friction, its rotor).
OVERRIDE_KEYS = {"mass", "com", "inertia", "viscous", "coulomb", "Jm"}
CONVENTIONS = ("standard", "modified")
JOINT_TYPES = ("revolute", "prismatic")


class RobotFileError(ParameterError):
    """A robot file (YAML or URDF) that cannot be read, is malformed, or holds a key or value of
    the wrong kind; the message names the file and line."""


def read_robot_yaml(path, display: str | None = None) -> YamlMap:
    """The located mapping of a YAML robot file (UTF-8, read by blocksim.reading.located_yaml)."""
    display = str(path) if display is None else display
    data = read_yaml(path, "robot file", RobotFileError, display)
    if not isinstance(data, dict):
        raise RobotFileError(f"a robot file must be a mapping (name:, links: ...), got {describe(data)}",
                             where=where_of(data, SourceLoc(display)))
    return data


def model_values(data: dict, file: str) -> dict:
    """The checked top-level values of a robot mapping: name and description (text or None),
    convention, gravity (3,) m/s^2 or None, rotor_inertia, friction_smoothing (rad/s, >= 0),
    tool and base (4x4 or None), source (a URDF path, or None), base_link and tip_link (link names
    of the URDF that bound the chain, or None), overrides (`override_values` of a URDF source, {}
    without) and links (the list itself, each link checked by `link_values`). Exactly one of
    `links` and `source` must be given."""
    err = RobotFileError
    loc = where_of(data, SourceLoc(file))
    known_keys(data, MODEL_KEYS, "robot", loc, err)

    def at(key):
        return loc_of(data, key, loc)

    out = {"name": None, "description": None, "convention": "standard", "gravity": None,
           "rotor_inertia": False, "friction_smoothing": 0.0, "tool": None, "base": None,
           "source": None, "links": None, "base_link": None, "tip_link": None, "overrides": {}}
    for key in ("name", "description", "source", "base_link", "tip_link"):
        if key in data:
            out[key] = text(data[key], at(key), key, err)
    if "convention" in data:
        out["convention"] = text(data["convention"], at("convention"), "convention", err,
                                 choices=CONVENTIONS)
    if "gravity" in data:
        out["gravity"] = reals(data["gravity"], at("gravity"), "gravity", err)
    if "rotor_inertia" in data:
        out["rotor_inertia"] = flag(data["rotor_inertia"], at("rotor_inertia"), "rotor_inertia", err)
    if "friction_smoothing" in data:
        out["friction_smoothing"] = real(data["friction_smoothing"], at("friction_smoothing"),
                                         "friction_smoothing", err, minimum=0.0)
    for key in ("tool", "base"):
        if data.get(key) is not None:
            out[key] = pose_matrix(data[key], at(key), key, err)
    if "links" in data and "source" in data:
        raise err("give either 'links' (a DH table) or 'source' (a URDF file), not both", where=at("source"))
    if "source" not in data:
        if "links" not in data:
            raise err("a robot file needs 'links' (a DH table) or 'source' (a URDF file)", where=loc)
        for key in ("base_link", "tip_link"):
            if key in data:
                raise err(f"'{key}' names a link of a URDF 'source'; a DH table runs from its first "
                          "row to its last", where=at(key))
        if "overrides" in data:
            raise err("'overrides' replaces values of a URDF 'source'; a DH table holds them in its "
                      "rows", where=at("overrides"))
        links = data["links"]
        if not isinstance(links, list) or not links:
            raise err(f"links must be a list of at least one joint, got {describe(links)}", where=at("links"))
        out["links"] = links
    elif any(k in data for k in ("convention", "tool", "base")):
        key = next(k for k in ("convention", "tool", "base") if k in data)
        raise err(f"'{key}' is for DH tables; a URDF source brings its own", where=at(key))
    elif "overrides" in data:
        out["overrides"] = override_values(data["overrides"], at("overrides"))
    return out


def override_values(overrides: Any, where: SourceLoc | None) -> dict:
    """The checked `overrides` of a URDF source: {joint name: ({key: value}, SourceLoc)}, where
    the keys are those given of mass (kg, >= 0), com ((3,) m) and inertia (3x3 kg m^2 about the
    com) of the body the joint moves, in its link frame (the URDF child link, with what was
    merged or lumped into it), viscous (N m s/rad) and coulomb_pos / coulomb_neg (N m, from a
    scalar Fc or [Tc+, Tc-]) at the joint, and Jm (kg m^2, motor side, >= 0). The joint names are
    checked against the chain by `RobotModel`."""
    err = RobotFileError
    mapping(overrides, where, "overrides", err)
    out = {}
    for joint, values in overrides.items():
        at_joint = loc_of(overrides, joint, where)
        name = text(joint, at_joint, "overrides: a joint name", err)
        label = f"overrides: joint '{name}'"
        mapping(values, at_joint, label, err)
        known_keys(values, OVERRIDE_KEYS, label, at_joint, err)

        def at(key):
            return loc_of(values, key, at_joint)

        got = {}
        if "mass" in values:
            got["mass"] = real(values["mass"], at("mass"), f"{label}: mass", err, minimum=0.0)
        if "com" in values:
            got["com"] = reals(values["com"], at("com"), f"{label}: com", err, sizes=(3,))
        if "inertia" in values:
            got["inertia"] = inertia_tensor(values["inertia"], at("inertia"), f"{label}: inertia", err)
        if "viscous" in values:
            got["viscous"] = real(values["viscous"], at("viscous"), f"{label}: viscous", err)
        if "coulomb" in values:
            got["coulomb_pos"], got["coulomb_neg"] = _coulomb(values, "coulomb", at, label, err)
        if "Jm" in values:
            got["Jm"] = real(values["Jm"], at("Jm"), f"{label}: Jm", err, minimum=0.0)
        out[name] = (got, at_joint)
    return out


def link_values(link: Any, index: int, where: SourceLoc | None,
                error: type[BlocksimError] = ParameterError) -> dict:
    """The checked values of DH row `index` (0-based): name, jtype (0 revolute, 1 prismatic), a, d
    (m), alpha, theta (rad), mass (kg, >= 0), com (3,) m, inertia 3x3 about the com (kg m^2,
    symmetric), Jm (kg m^2, >= 0), gear (non-zero), viscous and coulomb_pos/neg at the joint with
    the motor-side B and Tc folded in (scaled by G^2 and |G|), lower and upper (q limits)."""
    where = where_of(link, where)
    mapping(link, where, f"link {index + 1}", error)
    name = link.get("name", f"joint{index + 1}")
    label = f"link {index + 1}" + (f" ('{name}')" if isinstance(link.get("name"), str) else "")
    known_keys(link, LINK_KEYS, label, where, error)

    def at(key):
        return loc_of(link, key, where)

    def num(key, default=0.0, **kw):
        return real(link[key], at(key), f"{label}: {key}", error, **kw) if key in link else default

    name = text(name, at("name"), f"{label}: name", error)
    kind = text(link.get("type", "revolute"), at("type"), f"{label}: type", error, choices=JOINT_TYPES)
    if "G" in link and "gear" in link:
        raise error(f"{label}: give G or gear (the same gear ratio), not both", where=at("gear"))
    gear_key = "G" if "G" in link else "gear"
    gear = num(gear_key, 1.0)
    if gear == 0.0:
        raise error(f"{label}: {gear_key} (the gear ratio) must not be 0", where=at(gear_key))
    com = reals(link["com"], at("com"), f"{label}: com", error) if "com" in link else np.zeros(3)
    inertia = inertia_tensor(link["inertia"], at("inertia"), f"{label}: inertia", error) \
        if "inertia" in link else np.zeros((3, 3))
    cpos, cneg = _coulomb(link, "coulomb", at, label, error)
    tpos, tneg = _coulomb(link, "Tc", at, label, error)
    lower, upper = -math.inf, math.inf
    if "qlim" in link:
        lower, upper = reals(link["qlim"], at("qlim"), f"{label}: qlim", error, sizes=(2,), infinite=True)
        if lower > upper:
            raise error(f"{label}: qlim [{lower:g}, {upper:g}] has its lower limit above the upper",
                        where=at("qlim"))
    return {"name": name, "jtype": JOINT_TYPES.index(kind), "a": num("a"), "alpha": num("alpha"),
            "d": num("d"), "theta": num("theta"), "mass": num("mass", minimum=0.0), "com": com,
            "inertia": inertia, "Jm": num("Jm", minimum=0.0), "gear": gear,
            "viscous": num("viscous") + num("B") * gear ** 2,
            "coulomb_pos": cpos + abs(gear) * tpos, "coulomb_neg": cneg + abs(gear) * tneg,
            "lower": float(lower), "upper": float(upper)}


def _coulomb(link, key, at, label, error):
    """Coulomb friction: a scalar Fc (symmetric: +Fc, -Fc) or [Tc+, Tc-] signed as Corke's Tc."""
    if key not in link:
        return 0.0, 0.0
    v = reals(link[key], at(key), f"{label}: {key}", error, sizes=(2,), scalar=True)
    return (float(v[0]), -float(v[0])) if v.size == 1 else (float(v[0]), float(v[1]))


def inertia_tensor(value: Any, where: SourceLoc | None, what: str = "inertia",
                   error: type[BlocksimError] = ParameterError) -> np.ndarray:
    """3 values: diagonal; 6 values: Ixx, Ixy, Ixz, Iyy, Iyz, Izz; or 3 rows of 3 (kg m^2)."""
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) == 3 \
            and all(isinstance(row, (list, tuple, np.ndarray)) for row in value):
        I = matrix(value, where, what, 3, 3, error)
        if not np.allclose(I, I.T):
            raise error(f"{what}: the 3x3 tensor is not symmetric", where=where)
        return I
    v = reals(value, where, what, error, sizes=(3, 6))
    return np.diag(v) if v.size == 3 else sym3(v)


def pose_matrix(spec: Any, where: SourceLoc | None, what: str = "pose",
         error: type[BlocksimError] = ParameterError) -> np.ndarray:
    """A 4x4 pose from a 4x4 nested list or {xyz: [m], rpy: [rad], URDF roll-pitch-yaw}."""
    where = where_of(spec, where)
    if isinstance(spec, dict):
        known_keys(spec, {"xyz", "rpy"}, what, where, error)
        xyz = reals(spec["xyz"], loc_of(spec, "xyz", where), f"{what}: xyz", error) \
            if "xyz" in spec else np.zeros(3)
        rpy = reals(spec["rpy"], loc_of(spec, "rpy", where), f"{what}: rpy", error) \
            if "rpy" in spec else np.zeros(3)
        return homogeneous(rpy_to_matrix(rpy), xyz)
    if isinstance(spec, (list, tuple, np.ndarray)) and len(spec) == 4:
        return matrix(spec, where, what, 4, 4, error)
    raise error(f"{what} must be 4 rows of 4 numbers or {{xyz: [...], rpy: [...]}}, got "
                f"{describe(spec)}", where=where)


def source_path(file: str, source: str) -> Path:
    """The URDF file named by `source`, relative to the robot file's folder."""
    return Path(file).parent / source
