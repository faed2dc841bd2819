"""Fast restart across Diagram objects: simulate() of a newly loaded Diagram of the same content
runs the Simulator remembered for an earlier one, and builds a new one whenever anything the first
was built from differs (the file's bytes, a robot file, the working directory, blocksim's
environment, values set on it since)."""
import os
import shutil
from pathlib import Path

import numpy as np

import blocksim
from blocksim.engine.simulate import remembered
from blocksim.reading.dependencies import recording, unchanged
from test_engine import MSD, msd_exact, write

ROBOT = Path(__file__).resolve().parents[1] / "examples" / "robots" / "two_link_geared.yaml"

ARM = """
blocksim: 1
blocks:
  tau:   {type: Constant, value: [0.0, 0.0]}
  plant: {type: Manipulator, robot: arm.yaml, q0: [0.3, 0.2], qd0: [0.0, 0.0]}
connections:
  - tau -> plant.tau
simulation: {stop_time: 0.05, solver: rk4, step: 1.0e-3}
log: {signals: [plant.q], every: 1.0e-2}
"""


def test_a_newly_loaded_diagram_of_the_same_content_runs_the_remembered_simulator(tmp_path):
    path = write(tmp_path, MSD)
    first = blocksim.simulate(blocksim.load(path))
    d = blocksim.load(path)
    again = blocksim.simulate(d)
    reused = remembered(d)
    assert reused.diagram is not d                   # built for the first Diagram
    assert again["x.out"] is not first["x.out"]
    np.testing.assert_array_equal(again["x.out"], first["x.out"])
    assert np.max(np.abs(again["x.out"][:, 0] - msd_exact(again.t))) < 1e-9
    assert again.metadata["diagram"] == str(path)
    # other overrides, settings or variant are another diagram: built anew, with its numbers
    stiffer = blocksim.load(path, set={"parameters.k": 9.0})
    r = blocksim.simulate(stiffer)
    assert remembered(stiffer) is not reused
    assert np.max(np.abs(r["x.out"][:, 0] - msd_exact(r.t, k=9.0))) < 1e-9
    d3 = blocksim.load(path)
    blocksim.simulate(d3, stop_time=2)
    assert remembered(d3) is not reused and remembered(d3).settings.stop == 2
    d4 = blocksim.load(path)
    blocksim.simulate(d4)
    assert remembered(d4) is reused


def test_an_edited_file_is_read_anew_though_its_size_and_time_are_the_same(tmp_path):
    """Reuse compares the bytes of the diagram file, not its size and modification time: a
    script that rewrites a parameter within one tick of the file system's clock is seen."""
    path = write(tmp_path, MSD)
    first = blocksim.simulate(blocksim.load(path))
    stamp = path.stat()
    text = path.read_text()
    path.write_text(text.replace("k: 4.0", "k: 9.0"))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert path.stat().st_size == stamp.st_size and path.stat().st_mtime_ns == stamp.st_mtime_ns
    d = blocksim.load(path)
    edited = blocksim.simulate(d)
    assert np.max(np.abs(edited["x.out"][:, 0] - msd_exact(edited.t, k=9.0))) < 1e-9
    assert np.max(np.abs(edited["x.out"] - first["x.out"])) > 0.1


def test_a_robot_file_changed_since_is_compiled_anew(tmp_path):
    """The robot file is read when the diagram compiles (kept by its modification time, as the
    robot loader keeps its models): an edited one gives a new Simulator with its numbers."""
    shutil.copy(ROBOT, tmp_path / "arm.yaml")
    path = write(tmp_path, ARM)
    d1 = blocksim.load(path)
    first = blocksim.simulate(d1)
    d2 = blocksim.load(path)
    blocksim.simulate(d2)
    assert remembered(d2) is remembered(d1)
    robot = tmp_path / "arm.yaml"
    robot.write_text(robot.read_text().replace("mass: 2.0", "mass: 2.5"))
    later = robot.stat().st_mtime_ns + 10 ** 9           # past a coarse clock's tick
    os.utime(robot, ns=(later, later))
    d3 = blocksim.load(path)
    heavier = blocksim.simulate(d3)
    assert remembered(d3) is not remembered(d1)
    # from rest the arm falls under gravity; a heavier forearm moves it otherwise
    assert np.max(np.abs(heavier["plant.q"] - first["plant.q"])) > 1e-4
    np.testing.assert_array_equal(blocksim.simulate(blocksim.load(path))["plant.q"],
                                  heavier["plant.q"])


def test_values_set_on_a_remembered_simulator_keep_it_from_other_calls(tmp_path):
    path = write(tmp_path, MSD)
    d = blocksim.load(path)
    first = blocksim.simulate(d)
    remembered(d).set_parameters({"spring.gain": -9.0})
    again = blocksim.simulate(blocksim.load(path))
    np.testing.assert_array_equal(again["x.out"], first["x.out"])
    np.testing.assert_array_equal(blocksim.simulate(d)["x.out"], first["x.out"])


def test_the_working_directory_and_the_environment_are_part_of_the_content(tmp_path, monkeypatch):
    """A diagram given as text names its robot file relative to the working directory: in
    another folder it is another robot. blocksim's environment variables (mode, limits) decide
    how a Simulator is built."""
    for folder, mass in (("a", "2.0"), ("b", "2.5")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "arm.yaml").write_text(
            ROBOT.read_text().replace("mass: 2.0", f"mass: {mass}"))
    monkeypatch.chdir(tmp_path / "a")
    d = blocksim.load(ARM)
    in_a = blocksim.simulate(d)
    monkeypatch.chdir(tmp_path / "b")
    d_b = blocksim.load(ARM)
    in_b = blocksim.simulate(d_b)
    assert remembered(d_b) is not remembered(d)
    assert np.max(np.abs(in_b["plant.q"] - in_a["plant.q"])) > 1e-4
    monkeypatch.setenv("BLOCKSIM_MAX_STEPS", "1000000")
    d_env = blocksim.load(ARM)
    blocksim.simulate(d_env)
    assert remembered(d_env) is not remembered(d_b)


def test_recorded_dependencies_hold_until_a_file_changes(tmp_path):
    path = write(tmp_path, MSD)
    with recording() as outer:
        with recording() as inner:
            blocksim.load(path)
    assert inner == outer and [kind for kind, *_ in inner] == ["content"]
    assert inner[0][1] == os.path.abspath(path)
    assert unchanged(inner)
    path.write_text(path.read_text() + "\n# a comment\n")
    assert not unchanged(inner)
    path.unlink()
    assert not unchanged(inner)


def test_a_batch_whose_arrays_are_large_is_not_kept(tmp_path, monkeypatch):
    from blocksim.engine import restart as engine
    path = write(tmp_path, MSD)
    batch = {"spring.gain": [-4.0, -9.0]}
    monkeypatch.setattr(engine, "CONTENT_KEPT_BYTES", 64)     # two members' states: 64 bytes
    blocksim.simulate(blocksim.load(path), batch=batch)
    d = blocksim.load(path)
    r = blocksim.simulate(d, batch=batch)
    first = remembered(d)
    assert np.max(np.abs(r["x.out"][1, :, 0] - msd_exact(r.t, k=9.0))) < 1e-9
    monkeypatch.setattr(engine, "CONTENT_KEPT_BYTES", 16 * 2 ** 20)
    d2 = blocksim.load(path)
    blocksim.simulate(d2, batch=batch)
    d3 = blocksim.load(path)
    blocksim.simulate(d3, batch=batch)
    assert remembered(d2) is not first and remembered(d3) is remembered(d2)
