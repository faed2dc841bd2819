"""Every user mistake gets one clear message naming file, line, block and port, and a non-zero exit."""
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

import blocksim
from blocksim.errors import (AlgebraicLoopError, BlocksimError, DiagramFileError, ExpressionError,
                             NonFiniteStateError, ParameterError, SampleTimeError,
                             UnknownBlockTypeError, WidthError, WiringError)

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path, text, name="bad.yaml"):
    path = tmp_path / name
    path.write_text(dedent(text).lstrip())
    return path


def error_of(path, **kw):
    with pytest.raises(BlocksimError) as info:
        blocksim.simulate(blocksim.load(path, **kw))
    return info.value


def test_unknown_block_type_suggests_closest(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      g: {type: Gian, gain: 2}
    connections: []
    """)
    err = error_of(path)
    assert isinstance(err, UnknownBlockTypeError)
    assert f"{path}:3" in str(err) and "block 'g'" in str(err) and "did you mean 'Gain'" in str(err)


def test_unknown_parameter_suggests_closest_and_names_its_line(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      src: {type: Constant, value: 1.0}
      g:
        type: Gain
        gian: 2
    connections: [src -> g]
    """)
    err = error_of(path)
    assert isinstance(err, ParameterError)
    assert f"{path}:6" in str(err) and "block 'g'" in str(err)
    assert "'gian'" in str(err) and "did you mean 'gain'" in str(err)


def test_unconnected_input_names_block_and_port(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: 1.0}
      s: {type: Sum, signs: "+-"}
    connections: [a -> s.in1]
    """)
    err = error_of(path)
    assert isinstance(err, WiringError)
    assert f"{path}:4" in str(err) and "block 's'" in str(err) and "port 'in2'" in str(err)
    assert "not connected" in str(err)


def test_second_driver_on_an_input_is_an_error(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: 1.0}
      b: {type: Constant, value: 2.0}
      g: {type: Gain, gain: 1}
    connections:
      - a -> g
      - b -> g
    """)
    err = error_of(path)
    assert isinstance(err, WiringError)
    assert f"{path}:8" in str(err) and "already driven by a.out" in str(err)


def test_unknown_port_suggests_closest(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: 1.0}
      s: {type: Sum, signs: "++"}
    connections:
      - a -> s.in1
      - a -> s.inn2
    """)
    err = error_of(path)
    assert isinstance(err, WiringError)
    assert f"{path}:7" in str(err) and "port 'inn2'" in str(err) and "did you mean 'in2'" in str(err)


def test_width_mismatch_names_the_wire(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: [1.0, 2.0]}
      b: {type: Constant, value: [1.0, 2.0, 3.0]}
      s: {type: Sum, signs: "++"}
    connections:
      - a -> s.in1
      - b -> s.in2
    """)
    err = error_of(path)
    assert isinstance(err, WidthError)
    assert "block 's'" in str(err) and "width" in str(err) and f"{path}:" in str(err)


def test_algebraic_loop_names_every_block_on_it(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      ref: {type: Constant, value: 1.0}
      e:   {type: Sum, signs: "+-"}
      k:   {type: Gain, gain: 2.0}
      h:   {type: Gain, gain: 0.5}
    connections:
      - ref -> e.in1
      - e -> k
      - k -> h
      - h -> e.in2
    """)
    err = error_of(path)
    assert isinstance(err, AlgebraicLoopError)
    for name in ("e", "k", "h"):
        assert f"{name}." in str(err)
    assert "blocks on it: e, k, h" in str(err)


def test_fixed_step_that_does_not_divide_a_period(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: 1.0}
      z: {type: UnitDelay, period: 0.001}
      x: {type: Integrator}
    connections: [a -> z, z -> x]
    simulation: {solver: rk4, step: 0.0003, stop_time: 0.01}
    """)
    err = error_of(path)
    assert isinstance(err, SampleTimeError)
    assert "does not divide" in str(err) and "block 'z'" in str(err)


def test_non_finite_state_names_block_and_time(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      sq: {type: Function, expr: "u * u"}
      x:  {type: Integrator, x0: 1.0}
    connections: [x -> sq, sq -> x]
    simulation: {solver: rk4, step: 0.01, stop_time: 2.0}
    """)
    err = error_of(path)                  # x' = x^2 from 1 blows up at t = 1
    assert isinstance(err, NonFiniteStateError)
    assert "block 'x'" in str(err) and f"{path}:4" in str(err)
    t = float(str(err).split("at t = ")[1].split(" s")[0])
    assert 0.9 < t <= 1.1


def test_adaptive_solver_that_cannot_meet_its_tolerance(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      sq: {type: Function, expr: "u * u"}
      x:  {type: Integrator, x0: 1.0}
    connections: [x -> sq, sq -> x]
    simulation: {solver: dopri5, stop_time: 2.0}
    """)
    err = error_of(path)
    assert "dopri5" in str(err) and "t = " in str(err)
    t = float(str(err).split("t = ")[1].split(" s")[0])
    assert 0.99 < t <= 1.0 + 1e-6


def test_malformed_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      a: {type: Constant, value: [1.0, 2.0}
    """)
    with pytest.raises(DiagramFileError) as info:
        blocksim.load(path)
    assert str(path) in str(info.value) and ":3" in str(info.value)


def test_expression_beyond_arithmetic_is_refused(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    parameters:
      evil: "${__import__('os').system('echo hi')}"
    blocks:
      a: {type: Constant, value: $evil}
    connections: []
    """)
    with pytest.raises(ExpressionError) as info:
        blocksim.load(path)
    assert f"{path}:3" in str(info.value)


def cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(ROOT / "cli.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_reports_errors_on_stderr_with_nonzero_exit(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      g: {type: Gian}
    connections: []
    """)
    for command in ("simulate", "check"):
        proc = cli(command, path)
        assert proc.returncode == 1
        assert f"{path}:3" in proc.stderr and "did you mean 'Gain'" in proc.stderr


def test_cli_never_overwrites_a_non_empty_output_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    keep = out / "notes.txt"
    keep.write_text("mine")
    proc = cli("simulate", ROOT / "examples" / "mass_spring_damper.yaml", "--out", out)
    assert proc.returncode != 0 and "not empty" in proc.stderr
    assert keep.read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # --force replaces a run folder whole: one holding files of the user's own is refused too
    proc = cli("simulate", ROOT / "examples" / "mass_spring_damper.yaml", "--out", out, "--force")
    assert proc.returncode == 1 and "holds files blocksim did not write (notes.txt)" in proc.stderr
    assert keep.read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_width_clash_names_the_parameter_that_made_the_width(tmp_path):
    """The error is at the wire into the plant, and says the 3 comes from ref's amplitude (line
    4), two blocks upstream through a Gain that keeps the width."""
    path = write(tmp_path, """
    blocksim: 1
    blocks:
      ref:   {type: CosineRamp, amplitude: [0.5, 0.3, 0.1], period: 2}
      k:     {type: Gain, gain: 2.0}
      plant: {type: Manipulator, robot: two_link}
    connections:
      - ref.q -> k
      - k -> plant.tau
    """)
    err = error_of(path)
    assert isinstance(err, WidthError)
    assert str(err) == (f"{path}:8: block 'plant', port 'tau': input has width 3, robot 'two_link' "
                        f"needs 2; the width 3 of k.out comes from block 'ref', parameter "
                        f"'amplitude' ({path}:3)")


def test_a_bad_workspace_value_names_where_it_is_defined(tmp_path):
    path = write(tmp_path, """
    blocksim: 1
    parameters:
      coulomb: -1.0
    blocks:
      qd: {type: Constant, value: 0.5}
      fr: {type: JointFriction, Fc: $coulomb}
    connections: [qd -> fr]
    """)
    text = str(error_of(path))
    assert text.startswith(f"{path}:6: block 'fr': Fc must be >= 0")
    assert text.endswith(f"(computed from workspace parameter 'coulomb' at {path}:3)")


LONG_TYPE = "[" + ", ".join(["1"] * 30_000) + "]"


@pytest.mark.parametrize("block, says", [
    ("g: {type: Gain, gain: [[1, 2], [3, .nan]]}",
     "4: block 'g': parameter 'gain' must be finite, got nan at [1, 1]"),
    (f"g: {{type: {LONG_TYPE}}}",
     "4: block 'g': type must be a block type name or a subsystem file, not "
     f"{LONG_TYPE[:60]}... (90,000 characters)"),
    (f"g: {{type: UnitDelay, period: {'v' * 100_000}}}",
     f"4: block 'g': parameter 'period': a time must be a number, got '{'v' * 59}... (100,002 "
     "characters)"),
])
def test_a_bad_value_is_shown_on_one_short_line(tmp_path, block, says, capsys):
    """The value a message quotes is one line (an array as a list, not numpy's rows) and, when
    long, its start and length: a mistaken 100 kB string is not echoed whole."""
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nblocks:\n  src: {{type: Constant, value: [1.0, 2.0]}}\n  {block}\n"
                    "connections: [src -> g]\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == f"error: {path}:{says}\n"


def test_a_logged_signal_of_an_unknown_long_name_is_shown_short(tmp_path, capsys):
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nblocks:\n  src: {{type: Constant, value: 1.0}}\n"
                    f"log: {{signals: [{'x' * 100_000}.out]}}\nconnections: []\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == (f"error: {path}:4: no block '{'x' * 59}... (100,002 "
                                       "characters) to log\n")


@pytest.mark.parametrize("blocks, says", [
    ("  g: {type: Gain, gain: [1.0, 2.0]}\n  z: {type: UnitDelay, period: -0.0}\n"
     "connections: [src -> g, g -> z]\n",
     "5: block 'z': a sample period must be positive, got 0.0 s"),
    ("  g: {type: Gain, gain: [1.0, 2.0]}\n  pid: {type: PID, Kp: [1.0, 2.0], Ki: []}\n"
     "connections: [src -> g, src -> pid.ref, g -> pid.meas]\n",
     "5: block 'pid': parameter 'Ki' is an empty list; give one value, or one per element of "
     "the signal"),
])
def test_a_block_mistake_found_late_is_located_too(tmp_path, blocks, says, capsys):
    """A period of 0 s (found when the rates are resolved) and an empty per-channel list (found
    when the PID's kernels were built) had no file or line."""
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nblocks:\n  src: {{type: Constant, value: [1.0, 2.0]}}\n{blocks}")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == f"error: {path}:{says}\n"


def test_a_robot_file_name_longer_than_the_system_allows(tmp_path, capsys):
    """The system's refusal (ENAMETOOLONG) at the block's line, the name shortened."""
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text(f"blocksim: 1\nblocks:\n  src: {{type: Constant, value: [0.0, 0.0]}}\n"
                    f"  arm: {{type: Manipulator, robot: {'r' * 300}.yaml}}\nconnections: [src -> arm]\n")
    robot = f"{tmp_path}/{'r' * 300}.yaml"
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == (f"error: {path}:4: block 'arm': robot file {robot[:200]}... "
                                       f"({len(robot)} characters): file name too long\n")


def test_a_q0_of_the_wrong_length_is_an_error_not_a_crash(tmp_path, capsys):
    """Its joint-limit warning looked at q0 before its length was checked (a numpy ValueError)."""
    from blocksim.cli import main
    path = tmp_path / "d.yaml"
    path.write_text("blocksim: 1\nblocks:\n  tau: {type: Constant, value: [0.0, 0.0]}\n"
                    "  arm: {type: Manipulator, robot: two_link, q0: [1, 2, 3]}\n"
                    "connections: [tau -> arm.tau]\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == (f"error: {path}:4: block 'arm': 'q0' needs 1 or 2 values "
                                       "(one per joint), got 3\n")
