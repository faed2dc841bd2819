"""Reading and checking closed-chain files (YAML): the mechanism's branches (each a robot mapping
as in a robot file: a DH table, modified DH or a URDF `source`, placed by its `base`), its loops,
its actuated joints and its assembly branch. Every key is checked and a wrong one is reported at
its line, as robot files are (`robot_file`).

    name: five_bar
    gravity: [0.0, -9.81, 0.0]           # m/s^2, world frame (shared by every branch)
    branches:                            # in q order; each a robot mapping without gravity
      left:  {convention: standard, base: {xyz: [0, 0, 0]}, links: [...]}
      right: {convention: standard, base: {xyz: [0.2, 0, 0]}, links: [...]}
    loops:                               # the tool origin of branch a meets that of branch b
      - {name: tip, between: [left, right], rows: xy}      # rows: xy (planar) | xyz | pose
                                                           # (xyz and the orientation: welded);
                                                           # rows no joint can move are left out
    actuated: [th1, th2]                 # joint names; the others are passive
    assembly: {ph1: 0.6, ph2: -0.6}      # rad: the passive joints' starting values for Newton,
                                         # which choose the branch (here: the tool below the base)

Joint names are unique across the branches; q is the branches' joints, branch by branch.
"""
from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import ParameterError, SourceLoc, did_you_mean
from ..reading.located_yaml import loc_of, where_of
from .closed_chain import LOOP_ROWS, ClosedChain, Loop
from .input_values import describe, known_keys, mapping, real, reals, text
from .robot import RobotModel
from .robot_file import RobotFileError, read_robot_yaml

CHAIN_KEYS = {"name", "description", "gravity", "branches", "loops", "actuated", "assembly"}
LOOP_KEYS = {"name", "between", "rows"}


class ClosedChainFileError(RobotFileError):
    """A closed-chain file that cannot be read or holds a wrong key or value; names file and line."""


def read_closed_chain(path, display: str | None = None) -> ClosedChain:
    """The ClosedChain of a YAML closed-chain file (module docstring)."""
    display = str(path) if display is None else display
    return chain_from_mapping(read_robot_yaml(path, display), display)


def preset_names() -> tuple[str, ...]:
    """The shipped closed chains (YAML files in blocksim/models/closed_chains/)."""
    folder = resources.files("blocksim.models").joinpath("closed_chains")
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")))


@functools.lru_cache(maxsize=8)
def preset(name: str) -> ClosedChain:
    """A shipped closed chain by name (five_bar)."""
    names = preset_names()
    if name not in names:
        raise ParameterError(f"unknown closed-chain preset '{name}'{did_you_mean(name, names)}; "
                             f"known: {', '.join(names)}")
    ref = resources.files("blocksim.models").joinpath("closed_chains", name + ".yaml")
    with resources.as_file(ref) as p:
        return read_closed_chain(p, f"{name}.yaml")


def chain_from_mapping(data, file: str) -> ClosedChain:
    """The ClosedChain of a located (or plain) mapping read from `file`."""
    err = ClosedChainFileError
    loc = where_of(data, SourceLoc(file))
    mapping(data, loc, "closed chain", err)
    known_keys(data, CHAIN_KEYS, "closed chain", loc, err)

    def at(key):
        return loc_of(data, key, loc)

    for key in ("branches", "loops", "actuated"):
        if key not in data:
            raise err(f"a closed-chain file needs '{key}'", where=loc)
    gravity = reals(data["gravity"], at("gravity"), "gravity", err, sizes=(3,)) \
        if "gravity" in data else np.array([0.0, 0.0, -9.81])
    branches_map = data["branches"]
    mapping(branches_map, at("branches"), "branches", err)
    if len(branches_map) < 2:
        raise err(f"a closed chain needs two or more branches, got {len(branches_map)}",
                  where=at("branches"))
    branches = []
    for bname, spec in branches_map.items():
        bloc = loc_of(branches_map, bname, at("branches"))
        mapping(spec, bloc, f"branch '{bname}'", err)
        if "gravity" in spec:
            raise err(f"branch '{bname}': gravity is the mechanism's, given once at the top "
                      "level", where=loc_of(spec, "gravity", bloc))
        robot = RobotModel._from_mapping(spec, file)
        branches.append((str(bname), robot.with_options(gravity=gravity, name=str(bname))))
    names = [j for _, r in branches for j in r.joint_names]
    seen = set()
    for j in names:
        if j in seen:
            raise err(f"joint name '{j}' appears in two branches; q needs unique names",
                      where=at("branches"))
        seen.add(j)
    branch_names = [b for b, _ in branches]
    loops = _loops(data["loops"], at("loops"), branch_names, err)
    actuated = _joint_list(data["actuated"], at("actuated"), names, "actuated", err)
    guess = np.zeros(len(names))
    if "assembly" in data:
        amap = data["assembly"]
        mapping(amap, at("assembly"), "assembly", err)
        for joint, value in amap.items():
            jloc = loc_of(amap, joint, at("assembly"))
            if joint not in names:
                raise err(f"assembly: '{joint}' is not a joint{did_you_mean(str(joint), names)}; "
                          f"joints: {', '.join(names)}", where=jloc)
            if names.index(joint) in actuated:
                raise err(f"assembly: '{joint}' is actuated; the branch is chosen by the passive "
                          "joints' starting values", where=jloc)
            guess[names.index(joint)] = real(value, jloc, f"assembly: {joint}", err)
    name = text(data.get("name", Path(file).stem), at("name"), "name", err)
    chain = ClosedChain(name, branches, loops, actuated, guess, where=loc)
    return chain


def _loops(value, where, branch_names, err):
    if not isinstance(value, list) or not value:
        raise err(f"loops must be a list of at least one loop, got {describe(value)}", where=where)
    out = []
    for i, spec in enumerate(value):
        lloc = where_of(spec, loc_of(value, i, where))
        mapping(spec, lloc, f"loop {i + 1}", err)
        known_keys(spec, LOOP_KEYS, f"loop {i + 1}", lloc, err)
        name = text(spec.get("name", f"loop{i + 1}"), loc_of(spec, "name", lloc), "loop name", err)
        if "between" not in spec:
            raise err(f"loop '{name}' needs 'between: [branch, branch]'", where=lloc)
        between = spec["between"]
        bloc = loc_of(spec, "between", lloc)
        if not isinstance(between, list) or len(between) != 2:
            raise err(f"loop '{name}': between must name two branches, got {describe(between)}",
                      where=bloc)
        ends = []
        for b in between:
            if b not in branch_names:
                raise err(f"loop '{name}': '{b}' is not a branch{did_you_mean(str(b), branch_names)}"
                          f"; branches: {', '.join(branch_names)}", where=bloc)
            ends.append(branch_names.index(b))
        if ends[0] == ends[1]:
            raise err(f"loop '{name}' joins branch '{between[0]}' to itself", where=bloc)
        rows = text(spec.get("rows", "xyz"), loc_of(spec, "rows", lloc), f"loop '{name}': rows",
                    err, choices=tuple(LOOP_ROWS))
        out.append(Loop(name, ends[0], ends[1], LOOP_ROWS[rows], lloc))
    return out


def _joint_list(value, where, names, what, err):
    if not isinstance(value, list) or not value:
        raise err(f"{what} must be a list of joint names, got {describe(value)}", where=where)
    out = []
    for j in value:
        if j not in names:
            raise err(f"{what}: '{j}' is not a joint{did_you_mean(str(j), names)}; joints: "
                      f"{', '.join(names)}", where=where)
        out.append(names.index(j))
    return out
