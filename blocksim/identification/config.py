"""Reading and checking an identification config (`python cli.py identify CONFIG.yaml`) before any
slow step: the file is read as diagrams are (UTF-8, YAML 1.2 scalars, no duplicate keys), and
every section and key is checked for its name, kind and range, and for the keys that go together
(a data log or a simulated run, not both). A wrong one is an IdentifyConfigError at its line:
"cfg.yaml:14: data.period must be > 0, got -2". The per-joint values are checked against the
robot's joint count by `check_joint_values` once the robot is loaded.

Every key, its check, unit, default and meaning is in one table here (`SECTIONS`, `MEASUREMENT`),
which `reference_markdown` turns into docs/identify.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ParameterError, SourceLoc
from ..models.input_values import describe, flag, integer, known_keys, mapping, real, reals, text
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


def _numbers(*, positive=False) -> Check:
    """A non-empty list of numbers (any count)."""
    def check(v, where, what):
        if not isinstance(v, list) or not v:
            raise E(f"{what} must be a non-empty list of numbers, got {describe(v)}", where=where)
        return np.array([real(x, loc_of(v, i, where), f"{what}[{i}]", E, positive=positive)
                         for i, x in enumerate(v)])
    return check


def _vector(*sizes, minimum=None) -> Check:
    """A list of numbers with one of `sizes` entries."""
    def check(v, where, what):
        return reals(v, where, what, E, sizes=sizes, minimum=minimum)
    return check


def _singular_part(v, where, what):
    return text(v, where, what, E, choices=("all", "position", "orientation"))


def _payload_source(v, where, what):
    return text(v, where, what, E, choices=("excitation", "static"))


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


@dataclass(frozen=True)
class Key:
    """One config key: its check, its unit, its default (as text) and what it is for. The table
    of them below is the one place a key is defined: `load_config` checks with it and
    `reference_markdown` (docs/identify.md) documents it."""

    check: Check | None
    unit: str
    default: str
    doc: str


PER_JOINT = "one number, or a list with one per joint"

MEASUREMENT = {
    "encoder_counts": Key(_optional(_joint_values(positive=True)), "counts/rev", "null (exact)",
                          "Encoder counts per joint revolution after gearing and quadrature; q is "
                          f"rounded to whole counts ({PER_JOINT})."),
    "kt": Key(_joint_values(positive=True), "N m/A", "1.0",
              f"The true torque constant referred to the joint ({PER_JOINT})."),
    "kt_error": Key(_joint_values(minimum=-0.99), "-", "0.0",
                    "Relative error of the datasheet torque constant the drive converts the current "
                    f"with: tau_meas = (tau + kt noise)(1 + kt_error) ({PER_JOINT})."),
    "current_noise": Key(_joint_values(minimum=0.0), "A", "0.0",
                         f"Standard deviation of white noise on the measured current ({PER_JOINT})."),
    "seed": Key(_seed, "-", "0", "Seed of the noise generator."),
}
"""data.measurement: what the drive reports of a simulated run."""

SECTIONS: dict[str, dict[str, Key]] = {
    "robot": {
        "cad": Key(_text, "-", "required", "The robot file (DH YAML or one with a URDF source), "
                   "URDF file or preset to identify: its kinematics and motor data are kept, its "
                   "masses, inertias and friction are the prior; the identified robot file is "
                   "written on it (a URDF stays the source, the identified values its overrides)."),
        "plant": Key(_text, "-", "none", "The arm that produces simulated data (the 'true' arm); "
                     "needed by data.diagram and tracking. With a log it is optional: its "
                     "parameters are then scored as 'true' in the validation."),
    },
    "model": {
        "rotor_inertia": Key(_flag, "-", "false", "Identify the reflected rotor inertia Ia = G^2 Jm "
                             "per joint."),
        "friction": Key(_friction, "-", "coulomb_viscous", "The friction columns: none; "
                        "coulomb_viscous (viscous and a Coulomb level per direction); stribeck (and "
                        "a fixed-shape Stribeck excess)."),
        "stribeck_speed": Key(_joint_values(positive=True), "rad/s", "0.1",
                              f"Stribeck speed vs of the fixed-shape column ({PER_JOINT})."),
        "stribeck_exponent": Key(_positive, "-", "2.0", "Stribeck shape exponent delta."),
        "friction_smoothing": Key(_smoothing, "rad/s", "the CAD file's", "Width eps of the "
                                  "friction law's sign tanh(qd / eps) in the Coulomb columns (0: "
                                  "exact sign), or 'estimate': fitted to the data. Written to the "
                                  "identified robot file."),
    },
    "base": {
        "samples": Key(_count, "-", "200", "Random states the base parameters are found on."),
        "seed": Key(_seed, "-", "0", "Seed of the random states."),
    },
    "excitation": {
        "frequency": Key(_positive, "Hz", "0.1", "Fundamental frequency (1 / period)."),
        "harmonics": Key(_count, "-", "5", "Harmonics per joint (at least 3: rest to rest)."),
        "q0": Key(_joint_values(), "rad", "mid range", f"Mean and rest position ({PER_JOINT})."),
        "q_min": Key(_joint_values(infinite=True), "rad", "the robot file's limits",
                     f"Lower position limit ({PER_JOINT})."),
        "q_max": Key(_joint_values(infinite=True), "rad", "the robot file's limits",
                     f"Upper position limit ({PER_JOINT})."),
        "qd_max": Key(_joint_values(positive=True), "rad/s", "1.0", f"Speed limit ({PER_JOINT})."),
        "qdd_max": Key(_joint_values(positive=True), "rad/s^2", "5.0",
                       f"Acceleration limit ({PER_JOINT})."),
        "margin": Key(_non_negative, "rad", "0.0", "Kept inside the robot file's position limits."),
        "seed": Key(_seed, "-", "0", "Seed of the random start of the optimisation."),
        "max_iter": Key(_count, "-", "100", "SLSQP iterations at most."),
        "n_objective": Key(_count, "-", "60", "Samples per period of the cond(Y_base) objective."),
        "n_check": Key(_count, "-", "150", "Samples per period the limits are imposed on."),
        "min_singular_value": Key(_optional(_positive), "m/rad", "null (no constraint)",
                                  "Smallest singular value of the tool Jacobian's rows "
                                  "excitation.singular_part the excitation keeps on its check "
                                  "grid: a minimum distance from singular poses (a constraint of "
                                  "the optimisation)."),
        "singular_part": Key(_singular_part, "-", "all", "The Jacobian rows of "
                             "min_singular_value: all (6 rows, m/rad and 1 mixed), position "
                             "(3 rows, m/rad) or orientation (3 rows, 1)."),
    },
    "data": {
        "diagram": Key(_text, "-", "-", "A simulated run: the excitation diagram (blocks ref: "
                       "FourierSeries, plant: Manipulator, u: the torque logged)."),
        "periods": Key(_count, "-", "6", "Simulated run: periods averaged."),
        "skip_periods": Key(_skip, "-", "1 (simulated), 0 (log)", "Periods dropped at the start "
                            "(the tracking loop's transient)."),
        "measurement": Key(None, "-", "exact", "Simulated run: what the drive reports (the "
                           "data.measurement keys)."),
        "log": Key(_text, "-", "-", "A real arm's record: NPZ with t (N,), q, tau (N, n), or CSV "
                   "with columns t, q1..qn, tau1..taun. Needs no excitation section."),
        "period": Key(_optional(_positive), "s", "null (not periodic)", "Log: the period of the "
                      "excitation, a whole number of samples; periods are averaged."),
    },
    "processing": {
        "cutoff": Key(_optional(_positive), "Hz", "10.0", "Cutoff of the zero-phase Butterworth "
                      "low-pass the measured torque and the regressor go through before "
                      "decimation (parallel filtering); null: none."),
        "state_cutoff": Key(_optional(_positive), "Hz", "10 x cutoff, at most 0.8 x Nyquist",
                            "Cutoff of q's low-pass before the central differences for qd, qdd."),
        "order": Key(_count, "-", "4", "Order of both Butterworth filters."),
        "decimate": Key(_count, "-", "10", "Every decimate-th filtered sample is kept."),
        "trim": Key(_non_negative, "s", "0.0", "Log without a period: dropped at both ends."),
    },
    "estimation": {
        "prior_weight": Key(_non_negative, "-", "1e-3", "Weight of the CAD prior in the "
                            "physically consistent estimate, per unit of the weighted squared "
                            "torque residual."),
    },
    "validation": {
        "frequency": Key(_positive, "Hz", "1.25 x excitation.frequency", "Simulated: frequency "
                         "of the random validation trajectory."),
        "harmonics": Key(_count, "-", "4", "Simulated: its harmonics."),
        "seed": Key(_seed, "-", "11", "Simulated: its random seed."),
        "periods": Key(_count, "-", "3", "Simulated: periods averaged."),
        "skip_periods": Key(_skip, "-", "1 (simulated), 0 (log)", "Periods dropped at the start."),
        "measurement_seed": Key(_seed, "-", "data.measurement.seed + 1",
                                "Simulated: noise seed of the validation run."),
        "log": Key(_text, "-", "-", "A real arm's validation record (as data.log)."),
        "period": Key(_optional(_positive), "s", "null (not periodic)", "Log: its period."),
    },
    "stages": {
        "home": Key(_joint_values(infinite=False), "rad", "excitation.q0", "The home pose: the "
                    f"joints not moved stay at it, in the static poses and the sweeps ({PER_JOINT})."),
        "angles": Key(_numbers(), "deg", "[-90, -45, 0, 45, 90]", "Gravity stage: each joint in "
                      "turn is held at these angles, the others at home; poses outside the joint "
                      "limits are left out."),
        "hold": Key(_positive, "s", "0.5", "Gravity stage: how long each pose is held; its torque "
                    "samples are averaged."),
        "rate": Key(_positive, "Hz", "1000", "Sampling rate of the static poses and the sweeps."),
        "speeds": Key(_numbers(positive=True), "rad/s", "[0.05, 0.1, 0.2, 0.5, 1.0]",
                      "Friction stage: the constant speeds of each joint's sweeps, each run in "
                      "both directions."),
        "travel": Key(_positive, "rad", "0.4", "Friction stage: the angle each sweep covers, "
                      "about the home angle (moved inside the joint limits)."),
        "seed": Key(_seed, "-", "data.measurement.seed + 2", "Noise seed of the static poses "
                    "(the sweeps take seed + 1000 on)."),
    },
    "payload": {
        "mass": Key(_positive, "kg", "required", "The load of the simulated run (the truth the "
                    "estimate is scored against), set as the plant's payload_mass."),
        "com": Key(_vector(3), "m", "[0, 0, 0]", "Its centre of mass in the tool frame."),
        "inertia": Key(_vector(3, 6), "kg m^2", "[0, 0, 0]", "Its inertia about its centre of "
                       "mass, tool axes (3 diagonal or 6 values Ixx Ixy Ixz Iyy Iyz Izz)."),
        "source": Key(_payload_source, "-", "excitation", "excitation: a short random Fourier "
                      "excitation tracked by data.diagram; static: the static poses of "
                      "payload.home and payload.angles."),
        "estimate_inertia": Key(_flag, "-", "true (excitation), false (static)", "Fit the "
                                "load's inertia too (static poses cannot see it)."),
        "frequency": Key(_positive, "Hz", "0.4", "Excitation: its fundamental frequency."),
        "harmonics": Key(_count, "-", "4", "Excitation: its harmonics (at least 3)."),
        "periods": Key(_count, "-", "3", "Excitation: periods averaged."),
        "skip_periods": Key(_skip, "-", "1", "Excitation: periods dropped at the start."),
        "seed": Key(_seed, "-", "0", "Excitation: seed of its random coefficients."),
        "home": Key(_joint_values(), "rad", "excitation.q0", f"Static: the home pose ({PER_JOINT})."),
        "angles": Key(_numbers(), "deg", "[-90, -45, 0, 45, 90]", "Static: the angles each joint "
                      "is held at."),
        "hold": Key(_positive, "s", "0.5", "Static: how long each pose is held."),
    },
    "tracking": {
        "diagram": Key(_text, "-", "-", "Tracking study (needs robot.plant): a diagram with blocks "
                       "ref, ff (InverseDynamics) and plant, run with the CAD, identified and true "
                       "robot as ff.robot."),
    },
}
SECTION_DOCS = {
    "robot": "The robots.", "model": "What is identified.",
    "base": "The base parameters (identifiable combinations).",
    "excitation": "The optimised Fourier excitation of a simulated run (not with data.log: the "
                  "logged trajectory is the excitation).",
    "data": "Where the identification data come from: data.diagram (simulated) or data.log.",
    "processing": "Off-line processing of the data and validation records.",
    "estimation": "Least squares and the physically consistent estimate.",
    "validation": "A trajectory not used for identification: simulated (with data.diagram) or a "
                  "log.",
    "stages": "The staged identification, run besides the all-at-once one: gravity from static "
              "poses, friction from constant-velocity sweeps, inertia from the excitation with "
              "both known; each stage's feedforward scored on the validation move. Simulated "
              "(needs robot.plant, data.diagram and model.friction).",
    "payload": "A payload task instead of an identification: an unknown load at the tool "
               "estimated with the arm's parameters known (robot.cad), from a short excitation "
               "or static poses of robot.plant carrying it. Needs data.diagram; the excitation "
               "section's limits and q0 bound its motion.",
    "tracking": "Feedforward tracking study, CAD vs identified parameters.",
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


def _check_section(cfg: YamlMap, section: str, keys: dict[str, Key]) -> None:
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
                MEASUREMENT[mkey].check(mvalue, loc_of(meas, mkey, at), f"data.measurement.{mkey}")
        else:
            keys[key].check(value, at, f"{section}.{key}")


def _check_modes(cfg: YamlMap) -> None:
    """The keys that go together: data is a log or a simulated run of robot.plant (not both),
    validation a log or a simulated run (which needs the simulated data run), tracking needs the
    plant."""
    data = cfg.get("data", {})
    data_at = cfg.loc("data") if "data" in cfg else cfg.where
    has_plant = "plant" in cfg["robot"]
    if "log" in data:
        _only(data, LOG_KEYS, "data", "with data.log (a real arm's record)", data_at)
        if "excitation" in cfg:
            raise E("excitation does not go with data.log: the logged trajectory is the "
                    "excitation, and no excitation is optimised for a log", where=cfg.loc("excitation"))
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
    for task in ("stages", "payload"):
        if task in cfg and ("log" in data or not has_plant):
            raise E(f"{task} needs a simulated run: robot.plant and data.diagram (not data.log)",
                    where=cfg.loc(task))
    if "stages" in cfg and cfg.get("model", {}).get("friction") == "none":
        raise E("stages needs friction columns (model.friction coulomb_viscous or stribeck): the "
                "friction stage fits them", where=cfg.loc("stages"))
    if "payload" in cfg:
        if "mass" not in cfg["payload"]:
            raise E("payload needs 'mass' (kg, the load of the simulated run)",
                    where=cfg.loc("payload"))
        pay = cfg["payload"]
        if pay.get("source") == "static" and pay.get("estimate_inertia"):
            raise E("payload.estimate_inertia does not go with payload.source static: at rest the "
                    "load's inertia puts no torque on the joints", where=pay.loc("estimate_inertia"))
        for key in ("periods", "skip_periods"):
            if key in data:
                raise E(f"data.{key} does not go with payload: the payload run's length is "
                        f"payload.{key}", where=loc_of(data, key, data_at))
        for other in ("stages", "validation", "tracking"):
            if other in cfg:
                raise E(f"{other} does not go with payload (a payload task estimates the load "
                        "alone)", where=cfg.loc(other))
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
        for key, entry in keys.items():
            if not getattr(entry.check, "per_joint", False) or not isinstance(body.get(key), list):
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


def reference_markdown() -> str:
    """docs/identify.md: every config key, its unit, default and meaning, from the tables above
    (`python cli.py identify --markdown`)."""
    L = ["# Identification config reference", "",
         "The keys of an identification config (`python cli.py identify CONFIG.yaml --out DIR`), "
         "generated from the key table in `blocksim/identification/config.py` by `python cli.py "
         "identify --markdown --out docs/identify.md`. Units SI, angles rad; paths relative to the "
         "config file. A key not listed here is an error at its line; a per-joint value is "
         f"{PER_JOINT}. The workflow and its references are in the README (Parameter "
         "identification).", "",
         "| key | unit | default | meaning |", "| --- | --- | --- | --- |",
         f"| `identify` | - | required | The config format: {FORMAT}. |",
         "| `name` | - | the file's name | The report's title. |", ""]

    def table(prefix, keys):
        out = ["| key | unit | default | meaning |", "| --- | --- | --- | --- |"]
        for key, entry in keys.items():
            out.append(f"| `{prefix}.{key}` | {entry.unit} | {entry.default} | {entry.doc} |")
        return out + [""]

    for section, keys in SECTIONS.items():
        L += [f"## {section}", "", SECTION_DOCS[section], ""] + table(section, keys)
        if section == "data":
            L += ["### data.measurement", "", MEASUREMENT_DOC, ""] + table("data.measurement",
                                                                             MEASUREMENT)
    return "\n".join(L + STAGES_TEXT)


STAGES_TEXT = [
    "## The staged workflow and the payload task", "",
    "With a `stages` section the arm is also identified in the order it is commissioned, each "
    "stage in data where the parameters of the others vanish or are already known (Gautier and "
    "Khalil, \"Direct calculation of minimum set of inertial parameters of serial robots\", IEEE "
    "Trans. Robotics and Automation 6, 1990, and \"Exciting trajectories for the identification "
    "of base inertial parameters of robots\", Int. J. Robotics Research 11, 1992; Swevers, "
    "Verdonck and De Schutter, \"Dynamic model identification for industrial robots\", IEEE "
    "Control Systems Magazine 27, 2007):", "",
    "1. **Gravity first.** At rest (qd = qdd = 0) the torque is the gravity torque alone: no "
    "inertia, no friction to mix with. Each joint in turn is held at `stages.angles` (default "
    "-90, -45, 0, 45, 90 degrees), the others at `stages.home`; the base gravity parameters are "
    "the base parameters of the static regressor Y(q, 0, 0) (QR with column pivoting, as for the "
    "full model) and are fitted by weighted least squares. The report gives the static "
    "regressor's rank on the poses (it must equal the number of base gravity parameters: 10 for "
    "the KR6-like arm, 4 for the planar two-link arm) and its condition number (unit-norm "
    "columns: 8.9 for the KR6-like arm's 26 poses about [0, -1.2, 0.3, 0, 0, 0] rad).",
    "2. **Friction second.** At constant speed with the other joints still, a joint's torque is "
    "its gravity torque plus its friction: each sweep (every speed of `stages.speeds`, both "
    "directions, `stages.travel` rad) less the first stage's gravity torque is one point of the "
    "friction curve, and the curve (viscous, a Coulomb level per direction and, with "
    "`model.friction: stribeck`, the fixed-shape Stribeck excess) is fitted to torque against "
    "speed with the regressor's own friction columns.",
    "3. **Inertia last.** The dynamic excitation (the same data as the all-at-once "
    "identification) less the known gravity and friction torques leaves M qdd + C qd, whose base "
    "parameters are fitted alone.", "",
    "After each stage the feedforward (the CAD prior with what the stages so far identified) is "
    "scored on the validation move, the relative RMS torque error per joint, next to the "
    "all-at-once estimate (report section *Staged identification*; metrics.json `stages`). The "
    "static poses and sweeps are simulated from `robot.plant` (the holding torque g(q) and the "
    "constant-speed torque of its rnea and friction law, with `data.measurement`'s corruption). "
    "`excitation.min_singular_value` keeps the optimised excitation away from singular poses (a "
    "constraint on the smallest singular value of the tool Jacobian).", "",
    "With a `payload` section the run is a payload task: `robot.plant` carries the load "
    "(`payload.mass`, `com`, `inertia`) through a short random excitation or static poses, and "
    "the load's ten parameters at the tool (linear in the torque through the last link's "
    "regressor columns moved to the tool frame) are fitted to the measured torque less the "
    "arm's own (`robot.cad`, known). The 95 % intervals are +- 1.96 standard deviations of the "
    "least-squares covariance from the residual variance per joint, multiplied by the "
    "parallel filter's correlation factor (the filtered, decimated samples are not independent: "
    "the sum of the filtered noise's autocorrelation at the kept samples' spacing, about the kept "
    "rate over twice the cutoff) and carried to mass, centre of mass and inertia by the delta "
    "method. examples/identification/payload_kr6.yaml: a 3 kg load on the KR6-like arm from 10 s "
    "(20-bit encoders, 0.05 A current noise, no Kt error), mass within 0.05 % and centre of mass "
    "within 0.7 mm, every interval holding the truth.", ""]
"""The hand-written part of docs/identify.md: the staged workflow's order and why, the payload
estimate's method."""


MEASUREMENT_DOC = ("What the drive reports of a simulated run (applied to the logged exact "
                   "signals with a seeded generator, so the plant run stays deterministic).")
