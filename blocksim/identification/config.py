"""Reading and checking an identification config (`python cli.py identify CONFIG.yaml`) before any
slow step: the file is read as diagrams are (UTF-8, YAML 1.2 scalars, no duplicate keys), and
every section and key is checked for its name, kind and range, and for the keys that go together
(a data log or a simulated run, not both). A wrong one is an IdentifyConfigError at its line:
"cfg.yaml:14: data.period must be > 0, got -2". The per-joint values are checked against the
robot's joint count by `check_joint_values` once the robot is loaded.

The keys and their units are listed in the docstring of `blocksim.identification.pipeline`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ParameterError, SourceLoc
from ..models.input_values import describe, flag, integer, known_keys, mapping, real, text
from ..reading.located_yaml import YamlMap, loc_of, read_yaml, where_of
from .regressor import FRICTION_KINDS


class IdentifyConfigError(ParameterError):
    """An identification config that cannot be read, is malformed, or holds a key or value of the
    wrong kind; the message names the file, line and key."""


E = IdentifyConfigError
Check = Callable[[Any, SourceLoc, str], Any]


def _positive(v, where, what):
    return real(v, where, what, E, positive=True)


def _non_negative(v, where, what):
    return real(v, where, what, E, minimum=0.0)


def _count(v, where, what):
    return integer(v, where, what, E, minimum=1)


def _skip(v, where, what):
    return integer(v, where, what, E, minimum=0)


def _seed(v, where, what):
    return integer(v, where, what, E, minimum=0)


def _flag(v, where, what):
    return flag(v, where, what, E)


def _text(v, where, what):
    return text(v, where, what, E)


def _friction(v, where, what):
    return text(v, where, what, E, choices=FRICTION_KINDS)


def _smoothing(v, where, what):
    """A width >= 0 rad/s of the friction law's smooth sign, or the text 'estimate'."""
    if v == "estimate":
        return v
    if isinstance(v, str):
        raise E(f"{what} must be a number >= 0 (rad/s) or 'estimate', got the text {v!r}",
                where=where)
    return real(v, where, what, E, minimum=0.0)


def _optional(check: Check) -> Check:
    """`check`, or None (null in the file: the quantity is switched off)."""
    def optional(v, where, what):
        return None if v is None else check(v, where, what)
    optional.per_joint = getattr(check, "per_joint", False)
    return optional


def _joint_values(*, positive=False, minimum=None, infinite=False) -> Check:
    """One number for every joint or a list of numbers, one per joint (the count is checked by
    `check_joint_values` once the robot is known)."""
    def check(v, where, what):
        if isinstance(v, list):
            if not v:
                raise E(f"{what} must be a number or a list with one number per joint, got an "
                        "empty list", where=where)
            return np.array([real(x, loc_of(v, i, where), f"{what}[{i}]", E, positive=positive,
                                  minimum=minimum, infinite=infinite) for i, x in enumerate(v)])
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise E(f"{what} must be a number or a list with one number per joint, got "
                    f"{describe(v)}", where=where)
        return np.array([real(v, where, what, E, positive=positive, minimum=minimum,
                              infinite=infinite)])
    check.per_joint = True
    return check


MEASUREMENT = {"encoder_counts": _optional(_joint_values(positive=True)),
               "kt": _joint_values(positive=True), "kt_error": _joint_values(minimum=-0.99),
               "current_noise": _joint_values(minimum=0.0), "seed": _seed}

SECTIONS: dict[str, dict[str, Check]] = {
    "robot": {"cad": _text, "plant": _text},
    "model": {"rotor_inertia": _flag, "friction": _friction,
              "stribeck_speed": _joint_values(positive=True), "stribeck_exponent": _positive,
              "friction_smoothing": _smoothing},
    "base": {"samples": _count, "seed": _seed},
    "excitation": {"frequency": _positive, "harmonics": _count, "q0": _joint_values(),
                   "q_min": _joint_values(infinite=True), "q_max": _joint_values(infinite=True),
                   "qd_max": _joint_values(positive=True), "qdd_max": _joint_values(positive=True),
                   "margin": _non_negative, "seed": _seed, "max_iter": _count,
                   "n_objective": _count, "n_check": _count},
    "data": {"diagram": _text, "periods": _count, "skip_periods": _skip, "measurement": None,
             "log": _text, "period": _optional(_positive)},
    "processing": {"cutoff": _optional(_positive), "order": _count, "decimate": _count,
                   "trim": _non_negative},
    "estimation": {"prior_weight": _non_negative},
    "validation": {"frequency": _positive, "harmonics": _count, "seed": _seed, "periods": _count,
                   "skip_periods": _skip, "measurement_seed": _seed, "log": _text,
                   "period": _optional(_positive)},
    "tracking": {"diagram": _text},
}
TOP_KEYS = {"identify", "name", *SECTIONS}
LOG_KEYS = {"log", "period", "skip_periods"}
"""The keys of `data` and `validation` that go with a log of a real arm; the others are for a
simulated run."""
FORMAT = 1


def load_config(path) -> YamlMap:
    """The config mapping of file `path`, every key and value checked (see the module docstring);
    values are left as read (ints, floats, lists), so the pipeline reads them with `get`."""
    file = str(path)
    cfg = read_yaml(path, "identification config", E)
    loc = where_of(cfg, SourceLoc(file))
    if not isinstance(cfg, dict):
        raise E(f"an identification config is a mapping (identify: 1, robot: ...), got {describe(cfg)}",
                where=loc)
    known_keys(cfg, TOP_KEYS, "identification config", loc, E)
    if "identify" in cfg and cfg["identify"] != FORMAT:
        raise E(f"identify: {cfg['identify']!r} is not a config format this version reads "
                f"(identify: {FORMAT})", where=cfg.loc("identify"))
    if "name" in cfg:
        _text(cfg["name"], cfg.loc("name"), "name")
    if "robot" not in cfg:
        raise E("an identification config needs 'robot' (with at least 'cad')", where=loc)
    for section, keys in SECTIONS.items():
        if section in cfg:
            _check_section(cfg, section, keys)
    if "cad" not in cfg["robot"]:
        raise E("robot needs 'cad' (the robot file or preset of the model to identify)",
                where=cfg.loc("robot"))
    _check_modes(cfg)
    return cfg


MOVED = {"estimation.friction_smoothing": "model.friction_smoothing"}
"""Keys of earlier versions and where they went."""


def _check_section(cfg: YamlMap, section: str, keys: dict[str, Check]) -> None:
    body = mapping(cfg[section], cfg.loc(section), section, E)
    for key in body:
        if f"{section}.{key}" in MOVED:
            raise E(f"{section}.{key} is now {MOVED[f'{section}.{key}']} (the width of the friction "
                    "law's sign the model fits, written to the identified robot file)",
                    where=loc_of(body, key, cfg.loc(section)))
    known_keys(body, keys, section, where_of(body, cfg.loc(section)), E)
    for key, value in body.items():
        at = loc_of(body, key, cfg.loc(section))
        if section == "data" and key == "measurement":
            meas = mapping(value, at, "data.measurement", E)
            known_keys(meas, MEASUREMENT, "data.measurement", where_of(meas, at), E)
            for mkey, mvalue in meas.items():
                MEASUREMENT[mkey](mvalue, loc_of(meas, mkey, at), f"data.measurement.{mkey}")
        else:
            keys[key](value, at, f"{section}.{key}")


def _check_modes(cfg: YamlMap) -> None:
    """The keys that go together: data is a log or a simulated run of robot.plant (not both),
    validation a log or a simulated run (which needs the simulated data run), tracking needs the
    plant."""
    data = cfg.get("data", {})
    data_at = cfg.loc("data") if "data" in cfg else cfg.where
    has_plant = "plant" in cfg["robot"]
    if "log" in data:
        _only(data, LOG_KEYS, "data", "with data.log (a real arm's record)", data_at)
    else:
        if "diagram" not in data:
            raise E("data needs 'log' (a real arm's record: npz or csv) or 'diagram' (the "
                    "excitation diagram of a simulated run)", where=data_at)
        if not has_plant:
            raise E("data.diagram (a simulated run) needs robot.plant, the arm that produces the "
                    "data", where=loc_of(data, "diagram", data_at))
        _only(data, {"diagram", "periods", "skip_periods", "measurement"}, "data",
              "with data.diagram (a simulated run)", data_at)
    if "validation" in cfg:
        val = cfg["validation"]
        val_at = cfg.loc("validation")
        if "log" in val:
            _only(val, LOG_KEYS, "validation", "with validation.log", val_at)
        else:
            if "log" in data:
                raise E("validation needs 'log' when the data come from a log (a simulated "
                        "validation run needs data.diagram and robot.plant)", where=val_at)
            _only(val, set(SECTIONS["validation"]) - {"log", "period"}, "validation",
                  "for a simulated validation run", val_at)
    if "tracking" in cfg:
        if not has_plant:
            raise E("tracking needs robot.plant (the arm the feedforward drives)",
                    where=cfg.loc("tracking"))
        if "diagram" not in cfg["tracking"]:
            raise E("tracking needs 'diagram' (blocks ref, ff: InverseDynamics, plant)",
                    where=cfg.loc("tracking"))


def _only(section: dict, allowed: set, name: str, context: str, where: SourceLoc) -> None:
    for key in section:
        if key not in allowed:
            raise E(f"{name}.{key} does not go {context}; keys there: {', '.join(sorted(allowed))}",
                    where=loc_of(section, key, where))


def check_joint_values(cfg: YamlMap, n: int, robot_name: str) -> None:
    """Every per-joint value has one number or one per joint of the robot (n joints), and the
    excitation range q_min < q_max where both are given."""
    for section, keys in (*SECTIONS.items(), ("data.measurement", MEASUREMENT)):
        body = cfg.get("data", {}).get("measurement", {}) if section == "data.measurement" \
            else cfg.get(section, {})
        for key, check in keys.items():
            if not getattr(check, "per_joint", False) or not isinstance(body.get(key), list):
                continue
            if len(body[key]) not in (1, n):
                raise E(f"{section}.{key} has {len(body[key])} values; robot '{robot_name}' has "
                        f"{n} joints (give one number, or one per joint)", where=body.loc(key))
    ec = cfg.get("excitation", {})
    if "q_min" in ec and "q_max" in ec:
        lo = np.broadcast_to(np.asarray(ec["q_min"], float), (n,))
        hi = np.broadcast_to(np.asarray(ec["q_max"], float), (n,))
        bad = np.nonzero(lo >= hi)[0]
        if bad.size:
            j = int(bad[0])
            raise E(f"excitation.q_min must lie below q_max for every joint; joint {j + 1}: "
                    f"{lo[j]:g} >= {hi[j]:g}", where=ec.loc("q_min"))


def config_loc(cfg: YamlMap, dotted: str) -> SourceLoc:
    """The place of a dotted key ("data.log") in the config, or of the nearest enclosing one."""
    node, where = cfg, cfg.where
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            break
        where = loc_of(node, part, where)
        node = node[part]
    return where


def config_file(cfg: YamlMap, base_dir: Path, dotted: str) -> Path:
    """The file named by a dotted key, relative to the config's folder."""
    node = cfg
    for part in dotted.split("."):
        node = node[part]
    return Path(base_dir) / node
