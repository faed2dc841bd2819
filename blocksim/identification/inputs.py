"""Everything `python cli.py identify CONFIG` reads, read and checked before the slow steps (the
base parameters take up to a second, the excitation optimisation tens of seconds): the config,
the robots, the joint limits, the diagrams it names and the data logs, processed. A wrong input
fails here in milliseconds, its message naming the file and line (or key) at fault and, for a
file named by the config, the config line that names it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BlocksimError, ParameterError, SourceLoc
from ..reading.located_yaml import YamlMap
from ..models.robot import RobotModel
from .config import IdentifyConfigError, check_joint_values, config_file, config_loc, load_config
from .datalog import DataLogError
from .excitation import Limits, limits_for
from .processing import Measurement, ProcessedData, ProcessingError, process
from .regressor import IdentificationModel
from .robotfile import load_robot, robot_mapping

DIAGRAM_BLOCKS = {"data.diagram": ("ref", "plant", "u"), "tracking.diagram": ("ref", "ff", "plant")}
"""The blocks the pipeline sets or reads in each diagram: the excitation run (ref: FourierSeries,
plant: Manipulator, u: the torque it logs) and the tracking study (ff: InverseDynamics)."""
DATA_SIGNALS = ("plant.q", "u.out")
"""The signals the data run must log: the joint angles and the torque."""


@dataclass
class Inputs:
    """The checked inputs of one identification: the config (located mapping) and its folder, the
    CAD robot (prior and kinematics) and its robot-file mapping, the plant (None for a logged
    arm), the identification model, the excitation limits (None for a log), the processing
    options, and the processed data of `data.log` and `validation.log` (None when simulated)
    with a line saying what each log is (file, samples, rate, periods), for the report."""

    cfg: YamlMap
    path: Path
    base_dir: Path
    cad: RobotModel
    template: dict
    plant: RobotModel | None
    model: IdentificationModel
    limits: Limits | None
    processing: dict
    data: ProcessedData | None
    validation: ProcessedData | None
    data_source: str | None = None
    validation_source: str | None = None


def named_by(err: BlocksimError, cfg: YamlMap, key: str) -> BlocksimError:
    """`err` about a whole file (no line) with the config key and line that name the file added."""
    if err.where is not None and err.where.line is None:
        err.message += f" ({key} at {config_loc(cfg, key)})"
        err.args = (str(err),)
    return err


def load_inputs(config_path: Path | str) -> Inputs:
    """Read and check every input of the config at `config_path` (see the module docstring)."""
    path = Path(config_path)
    cfg = load_config(path)
    base_dir = path.parent
    rob = cfg["robot"]
    cad = load_robot(rob["cad"], base_dir, config_loc(cfg, "robot.cad"), "robot.cad",
                     IdentifyConfigError)
    plant = load_robot(rob["plant"], base_dir, config_loc(cfg, "robot.plant"), "robot.plant",
                       IdentifyConfigError) if "plant" in rob else None
    template = _template(cfg, base_dir)
    mc = cfg.get("model", {})
    try:
        model = IdentificationModel(cad, rotor_inertia=mc.get("rotor_inertia", False),
                                    friction=mc.get("friction", "coulomb_viscous"),
                                    stribeck_speed=mc.get("stribeck_speed", 0.1),
                                    stribeck_exponent=mc.get("stribeck_exponent", 2.0),
                                    friction_smoothing=_fixed_width(mc.get("friction_smoothing")))
    except ParameterError as err:
        raise err.located(where=config_loc(cfg, "model"))
    check_joint_values(cfg, model.n, cad.name)
    if plant is not None and plant.n != model.n:
        raise IdentifyConfigError(f"robot.plant '{plant.name}' has {plant.n} joints, robot.cad "
                                  f"'{cad.name}' {model.n}", where=config_loc(cfg, "robot.plant"))
    limits = None if "log" in cfg.get("data", {}) else _limits(cfg, model)
    pc = cfg.get("processing", {})

    popts = {"cutoff": pc.get("cutoff", 10.0), "order": pc.get("order", 4),
             "decimate": pc.get("decimate", 10), "trim": float(pc.get("trim", 0.0)),
             "state_cutoff": pc.get("state_cutoff")}
    for key, blocks in DIAGRAM_BLOCKS.items():
        section, name = key.split(".")
        if name in cfg.get(section, {}):
            _check_diagram(cfg, base_dir, key, blocks, popts["cutoff"])
    data, data_source = _processed_log(cfg, base_dir, "data", model, popts)
    validation, validation_source = _processed_log(cfg, base_dir, "validation", model, popts)
    return Inputs(cfg, path, base_dir, cad, template, plant, model, limits, popts, data, validation,
                  data_source, validation_source)


def _limits(cfg: YamlMap, model: IdentificationModel) -> Limits:
    """The excitation's joint limits: the config's, within the robot file's and its margin."""
    ec = cfg.get("excitation", {})
    try:
        limits = limits_for(model, ec.get("q_min"), ec.get("q_max"), ec.get("qd_max", 1.0),
                            ec.get("qdd_max", 5.0), float(ec.get("margin", 0.0)))
    except ParameterError as err:
        raise err.located(where=config_loc(cfg, "excitation"))
    if (limits.q_min >= limits.q_max).any():
        raise IdentifyConfigError("excitation: the joint range is empty after the robot's limits "
                                  f"and margin: q_min {limits.q_min.tolist()}, q_max "
                                  f"{limits.q_max.tolist()} rad", where=config_loc(cfg, "excitation"))
    if ec.get("min_singular_value") is not None:
        q0 = np.broadcast_to(np.asarray(ec.get("q0", 0.5 * (limits.q_min + limits.q_max)), float),
                             (model.n,))
        part = ec.get("singular_part", "all")
        at_rest = float(model.robot.smallest_singular_value(q0, part))
        if at_rest < ec["min_singular_value"]:
            raise IdentifyConfigError(
                f"excitation.min_singular_value {ec['min_singular_value']:g} cannot be kept: at the "
                f"rest pose q0 the Jacobian's smallest singular value ({part} rows) is "
                f"{at_rest:.4g}", where=config_loc(cfg, "excitation.min_singular_value"))
    return limits


def _fixed_width(value):
    """model.friction_smoothing as the model's width: a number as given; None (not given) and
    'estimate' start from the CAD robot file's width."""
    return None if value in (None, "estimate") else value


def _template(cfg: YamlMap, base_dir: Path) -> dict:
    """The CAD robot's file mapping, the template of the identified robot file: a DH table, or a
    URDF source (a URDF file itself, or a robot file naming one) with the source as an absolute
    path, so the identified file written elsewhere still finds it."""
    source = cfg["robot"]["cad"]
    if Path(source).suffix.lower() == ".urdf":
        return {"source": str((base_dir / source).resolve())}
    template, folder = robot_mapping(source, base_dir)
    if "source" in template:
        template = {**template, "source": str((folder / template["source"]).resolve())}
    return template


def _check_diagram(cfg: YamlMap, base_dir: Path, key: str, blocks: tuple[str, ...],
                   cutoff: float | None) -> None:
    """The diagram named by config `key` loads and has the blocks the pipeline uses; the data
    run's diagram logs plant.q and u.out, at a rate whose Nyquist frequency lies above `cutoff`."""
    import blocksim
    try:
        diagram = blocksim.load(config_file(cfg, base_dir, key))
        log = diagram.log_settings if key == "data.diagram" else None
    except BlocksimError as err:
        raise named_by(err, cfg, key)
    present = set(diagram.spec.blocks) | {name.split("/")[0] for name in diagram.spec.blocks}
    missing = [b for b in blocks if b not in present]      # a block, or a subsystem of that name
    if missing:
        raise IdentifyConfigError(f"{key}: the diagram has no block {', '.join(repr(b) for b in missing)} "
                                  f"(identify uses blocks {', '.join(blocks)})", where=config_loc(cfg, key))
    if log is None:
        return
    unlogged = [s for s in DATA_SIGNALS if log.signals is not None and s not in log.signals]
    if unlogged:
        raise IdentifyConfigError(f"{key}: the diagram does not log {', '.join(unlogged)} (identify "
                                  f"reads {', '.join(DATA_SIGNALS)})", where=config_loc(cfg, key))
    if cutoff is not None and log.every is not None and cutoff >= 0.5 / float(log.every):
        raise IdentifyConfigError(f"processing.cutoff {cutoff} Hz must lie below the Nyquist frequency "
                                  f"{0.5 / float(log.every):g} Hz of the data run's log ({key})",
                                  where=config_loc(cfg, "processing.cutoff"))


def _processed_log(cfg: YamlMap, base_dir: Path, section: str, model: IdentificationModel,
                   popts: dict) -> tuple[ProcessedData | None, str | None]:
    """The log of config section `section` (data or validation), checked and processed, and a
    line saying what it is; (None, None) when the section simulates. Enough samples for the
    `model.p` parameters."""
    sc = cfg.get(section, {})
    if "log" not in sc:
        return None, None
    key = f"{section}.log"
    path = config_file(cfg, base_dir, key)
    try:
        raw = Measurement.load(path, joints=model.n)
    except DataLogError as err:
        raise named_by(err, cfg, key)
    try:
        data = process(raw, period=sc.get("period"), skip_periods=sc.get("skip_periods", 0), **popts)
    except ProcessingError as err:
        option = f"{section}.{err.key}" if err.key in ("period", "skip_periods") else f"processing.{err.key}"
        err.message = f"{option}: {err.message} ({path})"
        raise err.located(where=config_loc(cfg, option))
    equations = data.q.shape[0] * model.n
    if equations <= model.p:
        raise DataLogError(f"after processing (decimate {popts['decimate']}) the log gives "
                           f"{data.q.shape[0]} samples x {model.n} joints = {equations} torque "
                           f"equations, not more than the {model.p} parameters to identify: give a "
                           f"longer log or a smaller processing.decimate ({key} at "
                           f"{config_loc(cfg, key)})", where=SourceLoc(str(path)))
    skip = sc.get("skip_periods", 0)
    shape = (f"periodic, {data.periods} period{'s' if data.periods != 1 else ''} of "
             f"{sc['period']:g} s averaged after {skip} skipped" if sc.get("period") is not None
             else "one record, not periodic")
    source = (f"log {sc['log']} ({raw.t.shape[0]} samples at {1.0 / raw.dt:g} Hz, "
              f"{raw.t[-1] - raw.t[0] + raw.dt:g} s, {model.n} joints; {shape})")
    return data, source
