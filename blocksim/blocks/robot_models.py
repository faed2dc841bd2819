"""The robots of the robot blocks (`robot`): a block's `robot` parameter loaded (a preset, a robot
YAML or URDF file relative to the diagram), its `links` overrides applied, and each batch member's
model built from its per-member values (mass_scale, param_error, payload, gravity, rotor inertia),
each once (kept by value). A URDF chain with mimic joints on it loads as a
`models.coupled.CoupledRobot` (its independent joints); `chain_of` gives the chain behind it,
whose links the overrides address. Units as the robot blocks': kg, m, kg m^2, m/s^2.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..errors import ParameterError
from ..models.coupled import CoupledRobot
from ..models.robot import RobotModel
from ..reading.dependencies import stamped
from ..reading.limits import shorten, shown
from ..reading.located_yaml import os_reason


@functools.lru_cache(maxsize=32)
def _load_robot(source: str, stamp) -> RobotModel:
    path = Path(source)
    if path.suffix.lower() == ".urdf":
        return CoupledRobot.chain_of_urdf(path)      # a CoupledRobot when mimic joints are on it
    return CoupledRobot.chain_of_yaml(path)


def load_robot(robot: str, diagram_dir: str | None) -> RobotModel:
    """The RobotModel named by a block's `robot` parameter: a preset, or a YAML/URDF file path
    relative to the diagram's folder (absolute paths are used as they are). A URDF chain with
    mimic joints on it gives a `CoupledRobot` (its independent joints; `chain_of`)."""
    if robot in RobotModel.preset_names():
        return _preset(robot)
    path = Path(robot)
    if not path.is_absolute():
        path = Path(diagram_dir or ".") / path
    try:
        found = path.suffix.lower() in (".yaml", ".yml", ".urdf") and path.is_file()
    except OSError as err:            # a name longer than the system allows, a symlink loop
        raise ParameterError(f"robot file {shorten(str(path), 200)}: {os_reason(err, path)}") from None
    if not found:
        raise ParameterError(
            f"robot {shown(robot)} is neither a preset ({', '.join(RobotModel.preset_names())}) "
            f"nor a robot file (.yaml, .urdf); looked for {shorten(str(path), 200)}")
    return _load_robot(*stamped(path))    # kept by modification time, a dependency


@functools.lru_cache(maxsize=16)
def _preset(name: str) -> RobotModel:
    return RobotModel.preset(name)


def chain_of(model):
    """The serial chain behind a block's robot: the full chain of a CoupledRobot (every joint,
    mimic joints included), else the RobotModel itself. Its links are the ones `links`,
    `mass_scale` and `param_error` address."""
    return model.full if isinstance(model, CoupledRobot) else model


def _link_index(key, model: RobotModel) -> int:
    """0-based link index of a `links` key: a 1-based number or a joint name (of the chain's
    links, mimic joints' included)."""
    model = chain_of(model)
    if isinstance(key, str) and key in model.joint_names:
        return model.joint_names.index(key)
    try:
        index = int(key)
    except (TypeError, ValueError):
        raise ParameterError(f"links: '{key}' is neither a link number (1..{model.n}) nor a joint "
                             f"name ({', '.join(model.joint_names)})") from None
    if not 1 <= index <= model.n:
        raise ParameterError(f"links: link {index} does not exist; '{model.name}' has links 1..{model.n}")
    return index - 1


def _per_link(value: np.ndarray, n: int, key: str) -> np.ndarray:
    v = np.asarray(value, dtype=float).reshape(-1)
    if v.size == 1:
        return np.full(n, v[0])
    if v.size != n:
        raise ParameterError(f"'{key}' needs 1 or {n} values (one per link), got {v.size}")
    return v


def _key(value) -> tuple:
    """A float array as a hashable key of its very bits (shape, bytes): -0.0 is not 0.0."""
    value = np.asarray(value, dtype=float)
    return value.shape, value.tobytes()


def _unkey(key) -> np.ndarray:
    """The (read-only) float array of a _key."""
    shape, raw = key
    return np.frombuffer(raw).reshape(shape)


def frozen_links(links):
    """The `links` overrides checked and made hashable, in their order: ((key, ((field, value),
    ...)), ...) with numeric values as _keys; None for no overrides."""
    if links is None:
        return None
    if not isinstance(links, dict):
        raise ParameterError("links must be a mapping {link: {mass, com, inertia}}")
    out = []
    for key, spec in links.items():
        if not isinstance(spec, dict) or set(spec) - {"mass", "com", "inertia"}:
            raise ParameterError(f"links: link {key} takes a mapping with mass (kg), com (m) and "
                                 f"inertia (kg m^2, about the com), got {shown(spec)}")
        fields = []
        for field, value in spec.items():
            try:
                value = _key(float(value) if field == "mass" else value)
            except (TypeError, ValueError):
                raise ParameterError(f"links: link {key}: {field} must be numeric, got "
                                     f"{value!r}") from None
            fields.append((field, value))
        out.append((key, tuple(fields)))
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _with_links(model: RobotModel, links) -> RobotModel:
    """model with the (frozen) link overrides applied, in their order."""
    for key, spec in links:
        model = model.with_link_params(_link_index(key, model),
                                       **{k: float(_unkey(v)) if k == "mass" else _unkey(v)
                                          for k, v in spec})
    return model


#: The array parameters that make one batch member's robot differ from the file's, in the order
#: they are applied (`_member_model`).
MEMBER_KEYS = ("mass_scale", "param_error", "payload_mass", "payload_com", "payload_inertia",
               "gravity")


@functools.lru_cache(maxsize=2048)
def _member_model(model: RobotModel, values: tuple, rotor_inertia) -> RobotModel:
    """One batch member's model from the robot with its links (`model`) and that member's values
    of MEMBER_KEYS (_keys, None when not given): mass_scale, then param_error, then payload,
    gravity, rotor inertia. Kept (a block's values are checked, give its structure and its record:
    one model each), so a member's model is built once."""
    mass_scale, param_error, payload_mass, payload_com, payload_inertia, gravity = (
        None if k is None else _unkey(k) for k in values)
    n = chain_of(model).n
    scale = _per_link(mass_scale, n, "mass_scale")
    for i in np.nonzero(scale != 1.0)[0]:
        mass = model.standard_parameters()[10 * i]
        model = model.with_link_params(int(i), mass=mass * scale[i])
    error = _per_link(param_error, n, "param_error")
    if np.any(1.0 + error <= 0.0):
        raise ParameterError("param_error must be > -1 (masses stay positive)")
    if np.any(error != 0.0):
        model = model.scaled(1.0 + error)
    if float(payload_mass) != 0.0:
        model = model.with_payload(float(payload_mass), payload_com, payload_inertia)
    options = {}
    if gravity is not None:
        options["gravity"] = np.asarray(gravity, dtype=float).reshape(3)
    if rotor_inertia is not None:
        options["rotor_inertia"] = rotor_inertia
    return model.with_options(**options) if options else model
