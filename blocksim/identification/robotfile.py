"""Write identified parameters as a robot YAML file, which `RobotModel.from_yaml`, the Manipulator and
the InverseDynamics block (`include_friction: true`, `friction: model`) load like any other: a DH
table with its rows' values replaced, or a URDF source kept as it is with the identified values as
the file's `overrides`."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import yaml

from ..engine.result import atomic_write
from ..errors import ParameterError, SourceLoc, did_you_mean
from ..models.frames import inertial_from_params
from ..reading.located_yaml import to_plain
from ..models.robot import RobotModel
from ..models.robot_file import RobotFileError, read_robot_yaml
from .regressor import IdentificationModel


def robot_mapping(source: str, base_dir=None) -> tuple[dict, Path | None]:
    """The YAML mapping of a robot given as a preset name or a robot file path (relative to
    base_dir), and the file's folder (None for a preset); read as `RobotModel.from_yaml` reads it."""
    if source in RobotModel.preset_names():
        ref = resources.files("blocksim.models").joinpath("robots", source + ".yaml")
        with resources.as_file(ref) as preset:
            return to_plain(read_robot_yaml(preset)), None
    path = Path(base_dir or ".") / source
    return to_plain(read_robot_yaml(path)), path.parent


def load_robot(source: str, base_dir=None, where: SourceLoc | None = None,
               key: str = "robot", error: type[ParameterError] = ParameterError) -> RobotModel:
    """A RobotModel from a preset name or a robot file path relative to base_dir. A name that is
    neither is an `error` at `where` (the config line naming it, `key`); a robot file that
    cannot be read names the file and, after it, that line."""
    if source in RobotModel.preset_names():
        return RobotModel.preset(source)
    path = Path(base_dir or ".") / source
    if not path.exists() and Path(source).suffix.lower() not in (".yaml", ".yml", ".urdf"):
        names = RobotModel.preset_names()
        raise error(f"{key}: '{source}' is neither a preset{did_you_mean(source, names)} nor a robot "
                    f"file (looked for {path}); presets: {', '.join(names)}", where=where)
    try:
        if path.suffix.lower() == ".urdf":
            return RobotModel.from_urdf(path)
        return RobotModel.from_yaml(path)
    except RobotFileError as err:
        if where is not None and err.where is not None and err.where.line is None:
            err.message += f" ({key} at {where})"
            err.args = (str(err),)
        raise


def write_robot_file(path, model: IdentificationModel, theta, template: dict, *, name: str,
                     description: str = "", friction_smoothing: float | None = None,
                     header: str = "") -> Path:
    """Write the identified robot file at `path` (atomically; `header` lines become YAML comments).

    `template` is the CAD robot's mapping: a DH table (`links`) or a URDF `source` (with its
    `base_link`, `tip_link`; the source an absolute path or one relative to `path`'s folder).
    A DH table is written with each row's values replaced; a URDF source is kept as the source
    (the URDF file is never written) and the identified values go into `overrides`, one mapping
    per chain joint. Either way each link gets its mass (kg), com (m, link frame), inertia
    (kg m^2 about the com, link axes: Ixx Ixy Ixz Iyy Iyz Izz), joint-side viscous (N m s/rad)
    and Coulomb [Tc+, Tc-] (N m) friction and, when identified, the rotor inertia as
    Jm = Ia / G^2 (G kept: the DH row's, the URDF transmission's) with rotor_inertia: true.
    Motor-side B and Tc are dropped (the joint-side values replace them). The Stribeck excess,
    which robot files do not hold, is left out (set Fs, vs on a block's stribeck law).
    """
    if "links" not in template and "source" not in template:
        raise ParameterError("identified parameters are written over a DH table ('links') or a "
                             "URDF 'source'; the template has neither")
    theta = np.asarray(theta, float)
    data = {k: v for k, v in template.items() if k not in ("links", "overrides")}
    data["name"] = name
    if description:
        data["description"] = description
    data["rotor_inertia"] = bool(model.rotor_inertia)
    if friction_smoothing is not None:
        data["friction_smoothing"] = float(friction_smoothing)
    values = [_link_values(model, theta, i) for i in range(model.n)]
    if "links" in template:
        data["links"] = [{**{k: v for k, v in link.items() if k not in _IDENTIFIED},
                          **_rotor(values[i], link.get("G", link.get("gear", 1.0)))}
                         for i, link in enumerate(template["links"])]
    else:
        data["overrides"] = {joint: _rotor(values[i], model.robot.gear[i])
                             for i, joint in enumerate(model.robot.joint_names)}
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path = Path(path)
    atomic_write(path, lambda fh: fh.write(comment + text), text=True)
    return path


#: The keys of a DH row the identified values replace.
_IDENTIFIED = ("mass", "com", "inertia", "viscous", "coulomb", "B", "Tc", "Jm")


def _link_values(model: IdentificationModel, theta: np.ndarray, i: int) -> dict:
    """Link i's identified values as robot-file keys (plain floats); the rotor's as 'Ia'."""
    m, c, Ic = inertial_from_params(theta[model.link_slice(i)])
    out = {"mass": float(m), "com": [float(v) for v in c],
           "inertia": [float(Ic[0, 0]), float(Ic[0, 1]), float(Ic[0, 2]), float(Ic[1, 1]),
                       float(Ic[1, 2]), float(Ic[2, 2])]}
    if model.rotor_inertia:
        out["Ia"] = float(theta[model.rotor_slice().start + i])
    if model.friction != "none":
        k = model.friction_slice().start + 3 * i
        fv, fcp, fcn = theta[k:k + 3]
        out["viscous"] = float(fv)
        out["coulomb"] = [float(fcp), float(fcn)]
    return out


def _rotor(values: dict, gear) -> dict:
    """`values` with the reflected rotor inertia Ia written as the motor-side Jm = Ia / G^2."""
    out = {k: v for k, v in values.items() if k != "Ia"}
    if "Ia" in values:
        out["Jm"] = values["Ia"] / float(gear) ** 2
    return out
