"""Tests of the diagram-file layer: YAML with lines, DiagramSpec loading, overrides and subsystems."""
import textwrap
from pathlib import Path

import numpy as np
import pytest

from blocksim.diagram import subsystems
from blocksim.diagram.spec import Endpoint, load_spec, parse_set_option
from blocksim.errors import DiagramFileError, ExpressionError, ParameterError, WiringError

DATA = Path(__file__).parent / "data" / "spec"
ARM = str(DATA / "arm.yaml")
SUB = str(DATA / "sub_top.yaml")


def write(tmp_path, text, name="d.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(path)


def wires(spec):
    return {(str(c.src), str(c.dst)) for c in spec.connections}


def line_of(path, needle):
    """1-based line of the first line of `path` containing `needle`."""
    for number, text in enumerate(Path(path).read_text().splitlines(), start=1):
        if needle in text:
            return number
    raise AssertionError(needle)


MINIMAL = """
blocks:
  src: {type: Constant, value: 1.0}
  g:   {type: Gain, gain: 2.0}
connections:
  - src -> g
"""


# -- the whole file -----------------------------------------------------------------------------

def test_arm_diagram_loads_with_evaluated_parameters():
    spec = load_spec(ARM)
    assert spec.name == "two-link arm, PID + feedforward" and spec.version == 1 and spec.variant is None
    np.testing.assert_array_equal(spec.parameters["Ki"], [100.0, 50.0])
    assert spec.parameters["wn"] == pytest.approx(2 * np.pi * 5)
    pid = spec.blocks["pid"]
    assert pid.type == "PID"
    np.testing.assert_array_equal(pid.params["Kp"], [400.0, 200.0])
    np.testing.assert_array_equal(pid.params["Ki"], [100.0, 50.0])
    assert pid.params["Kd"].dtype == float
    assert spec.blocks["u"].params["signs"] == "++"
    assert spec.blocks["plant"].params["q0"].shape == (2, 2)
    assert spec.simulation == {"stop_time": 2.0, "solver": "rk4", "step": 1.0e-3, "start_time": 0.0}
    assert spec.log == {"signals": ["ref.q", "plant.q", "pid.out"], "every": 1e-3}
    assert spec.scopes == [{"title": "Joint tracking", "signals": ["ref.q", "plant.q"]}]
    assert spec.metrics[0]["kind"] == "rms_error"
    assert spec.variants["pid"] == {"ff.enabled": False}


def test_blocks_parameters_and_items_remember_their_lines():
    spec = load_spec(ARM)
    pid_line = line_of(ARM, "pid:   {type: PID")
    assert spec.blocks["pid"].where.line == pid_line
    assert spec.blocks["pid"].where.file == ARM
    assert spec.blocks["pid"].param_where["Ki"].line == pid_line
    assert spec.where["simulation.step"].line == line_of(ARM, "simulation:")
    assert spec.where["log.signals"].line == line_of(ARM, "log:")
    assert spec.where["scopes[0]"].line == line_of(ARM, "Joint tracking")
    assert spec.where["metrics[0]"].line == line_of(ARM, "rms_error")
    assert spec.where["parameters.wn"].line == line_of(ARM, "wn:")


def test_parameters_on_their_own_lines_are_located_there(tmp_path):
    path = write(tmp_path, """
        blocks:
          pid:
            type: PID
            Kp: [1, 2]
            Kd:
              - 3
              - 4
        """)
    pid = load_spec(path).blocks["pid"]
    assert (pid.where.line, pid.param_where["Kp"].line, pid.param_where["Kd"].line) == (2, 4, 5)


def test_both_connection_syntaxes_and_fan_out():
    spec = load_spec(ARM)
    assert wires(spec) == {
        ("ref.q", "pid.ref"), ("ref.q", "ff.q"), ("plant.q", "pid.meas"), ("ref.qd", "ff.qd"),
        ("ref.qdd", "ff.qdd"), ("pid", "u.in1"), ("ff", "u.in2"), ("u", "plant.tau")}
    assert len(spec.connections) == 8
    by_dst = {str(c.dst): c for c in spec.connections}
    assert by_dst["ff.q"].where.line == by_dst["pid.ref"].where.line == line_of(ARM, "ref.q -> pid.ref, ff.q")
    assert by_dst["pid.meas"].where.line == line_of(ARM, "from: plant.q")
    assert by_dst["u.in1"].src == Endpoint("pid", None)


def test_mapping_fan_out_to_a_list(tmp_path):
    path = write(tmp_path, """
        blocks:
          a: {type: Constant, value: 1.0}
          b: {type: Gain, gain: 1.0}
          c: {type: Gain, gain: 1.0}
        connections:
          - from: a.out
            to:
              - b.in
              - c.in
        """)
    spec = load_spec(path)
    assert wires(spec) == {("a.out", "b.in"), ("a.out", "c.in")}
    assert [c.where.line for c in spec.connections] == [8, 9]


def test_yaml_reads_numbers_as_yaml_1_2(tmp_path):
    path = write(tmp_path, """
        blocks:
          g: {type: Gain, gain: 1e-3, label: on, other: 012, flag: true}
        """)
    params = load_spec(path).blocks["g"].params
    assert params == {"gain": 0.001, "label": "on", "other": 12, "flag": True}


def test_defaults_are_not_filled_except_start_time(tmp_path):
    spec = load_spec(write(tmp_path, MINIMAL))
    assert spec.simulation == {"start_time": 0.0}
    assert spec.log == {} and spec.scopes == [] and spec.metrics == [] and spec.variants == {}
    assert spec.name == "d"


# -- overrides and variants ---------------------------------------------------------------------

def test_override_precedence_file_then_variant_then_set():
    assert load_spec(ARM).simulation["solver"] == "rk4"
    assert load_spec(ARM, variant="fast").simulation["solver"] == "dopri5"
    spec = load_spec(ARM, variant="fast", overrides={"simulation.solver": "rk23"})
    assert spec.simulation["solver"] == "rk23"
    assert spec.variant == "fast"


def test_a_workspace_override_propagates_into_expressions():
    spec = load_spec(ARM, overrides={"parameters.Kp": [800, 400]})
    np.testing.assert_array_equal(spec.blocks["pid"].params["Kp"], [800.0, 400.0])
    np.testing.assert_array_equal(spec.blocks["pid"].params["Ki"], [200.0, 100.0])
    variant = load_spec(ARM, variant="fast")
    np.testing.assert_array_equal(variant.parameters["Ki"], [200.0, 100.0])


def test_override_values_may_be_expressions():
    spec = load_spec(ARM, overrides={"pid.Kd": "${Kp / 10}", "simulation.stop_time": "${2 * f}"})
    np.testing.assert_array_equal(spec.blocks["pid"].params["Kd"], [40.0, 20.0])
    assert spec.simulation["stop_time"] == 10


def test_a_variant_adds_enabled_with_the_variant_line():
    spec = load_spec(ARM, variant="pid")
    assert spec.blocks["ff"].params["enabled"] is False
    assert spec.blocks["ff"].param_where["enabled"].line == line_of(ARM, "pid:    {ff.enabled: false}")
    assert "enabled" not in load_spec(ARM, variant="pid_ff").blocks["ff"].params


def test_unknown_variant_lists_the_valid_ones():
    with pytest.raises(DiagramFileError) as err:
        load_spec(ARM, variant="pidd")
    message = str(err.value)
    assert f"arm.yaml:{line_of(ARM, 'variants:')}:" in message
    assert "unknown variant 'pidd'; did you mean 'pid'?" in message and "pid, pid_ff, fast" in message


@pytest.mark.parametrize("key, says", [
    ("pd.Kp", "unknown block 'pd'; did you mean 'pid'?"),
    ("parameters.Kpp", "no workspace parameter 'Kpp'; did you mean 'Kp'?"),
    ("simulation.solvr", "no simulation key 'solvr'; did you mean 'solver'?"),
    ("log.evry", "no log key 'evry'; did you mean 'every'?"),
    ("pid.type", "a block's type cannot be overridden"),
    ("scopes.title", "'scopes' cannot be overridden"),
    ("Kp", "an override key is block.param"),
])
def test_bad_override_keys_are_named(key, says):
    with pytest.raises(ParameterError) as err:
        load_spec(ARM, overrides={key: 1})
    assert str(err.value).startswith(f"set {key}: ")
    assert says in str(err.value)


def test_a_bad_variant_key_is_reported_at_its_line_even_when_not_applied(tmp_path):
    path = write(tmp_path, MINIMAL + "variants:\n  a: {}\n  b: {gg.gain: 3}\n")
    with pytest.raises(ParameterError, match=r"d.yaml:8: variant 'b', override 'gg.gain': unknown block 'gg'; "
                                             r"did you mean 'g'\?"):
        load_spec(path)


def test_parse_set_option_reads_yaml_flow_values():
    assert parse_set_option("pid.Kp=[500, 250]") == ("pid.Kp", [500, 250])
    assert parse_set_option("simulation.solver=dopri5") == ("simulation.solver", "dopri5")
    assert parse_set_option("simulation.rtol = 1e-6") == ("simulation.rtol", 1e-6)
    assert parse_set_option("ff.enabled=false") == ("ff.enabled", False)
    assert parse_set_option("pid.Ki=${Kp / 4}") == ("pid.Ki", "${Kp / 4}")
    with pytest.raises(DiagramFileError, match="key=value"):
        parse_set_option("pid.Kp")
    with pytest.raises(DiagramFileError, match="no value"):
        parse_set_option("pid.Kp=")
    with pytest.raises(DiagramFileError, match="not allowed"):
        parse_set_option("pid.Kp=!!python/object/apply:os.system [ls]")


# -- bad files ----------------------------------------------------------------------------------

def test_unknown_top_level_key_suggests_the_closest(tmp_path):
    path = write(tmp_path, MINIMAL + "simulaton: {stop_time: 1}\n")
    with pytest.raises(DiagramFileError, match=r"d.yaml:6: unknown key 'simulaton' in the diagram; "
                                               r"did you mean 'simulation'\?"):
        load_spec(path)


def test_unknown_simulation_key_suggests_the_closest(tmp_path):
    path = write(tmp_path, MINIMAL + "simulation:\n  stop_time: 1\n  solvr: rk4\n")
    with pytest.raises(DiagramFileError, match=r"d.yaml:8: unknown key 'solvr' in simulation; did you mean 'solver'\?"):
        load_spec(path)


def test_unknown_scope_key_is_named(tmp_path):
    path = write(tmp_path, MINIMAL + "scopes:\n  - {title: T, signals: [g], ylable: rad}\n")
    with pytest.raises(DiagramFileError, match=r"d.yaml:7: unknown key 'ylable' in scopes\[0\]; did you mean 'ylabel'"):
        load_spec(path)


def test_a_metric_needs_a_kind(tmp_path):
    path = write(tmp_path, MINIMAL + "metrics:\n  - {name: rms}\n")
    with pytest.raises(DiagramFileError, match=r"d.yaml:7: metrics\[0\] needs 'kind'"):
        load_spec(path)


def test_a_newer_format_version_is_refused(tmp_path):
    path = write(tmp_path, "blocksim: 2\n" + textwrap.dedent(MINIMAL))
    with pytest.raises(DiagramFileError, match=r"d.yaml:1: this file needs blocksim format 2, this program reads 1"):
        load_spec(path)


def test_a_version_that_is_not_a_number_is_refused(tmp_path):
    path = write(tmp_path, "blocksim: one\n" + textwrap.dedent(MINIMAL))
    with pytest.raises(DiagramFileError, match=r"d.yaml:1: blocksim: the format version is a whole number"):
        load_spec(path)


@pytest.mark.parametrize("text, line, says", [
    ("blocks:\n  a: {type: Gain, gain: [1, 2}\n", 2, "malformed YAML"),
    ("blocks:\n  a: {type: Gain, gain: ${k / 2}}\n", 2, "quote ${...} expressions"),
    ("blocks:\n\ta: {type: Gain}\n", 2, "indent with spaces, not tabs"),
    ("blocks:\n  a: {type: Gain}\n  a: {type: Sum}\n", 3, "duplicate key 'a' (first written at line 2)"),
    ("blocks:\n  a: !!python/object/apply:os.system [ls]\n", 2, "the YAML tag !!python/object/apply:os.system is not allowed"),
])
def test_malformed_yaml_is_a_file_error_at_its_line(tmp_path, text, line, says):
    with pytest.raises(DiagramFileError) as err:
        load_spec(write(tmp_path, text))
    assert str(err.value).startswith(f"{tmp_path / 'd.yaml'}:{line}: ")
    assert says in str(err.value)


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(DiagramFileError, match="cannot read the diagram file: no such file$"):
        load_spec(tmp_path / "nope.yaml")
    with pytest.raises(DiagramFileError, match="the file is empty"):
        load_spec(write(tmp_path, "# nothing\n"))


@pytest.mark.parametrize("block, says", [
    ("g: {gain: 2}", "block 'g': the block has no type"),
    ("g: Gain", "block 'g': a block is a mapping"),
    ("g-1: {type: Gain}", "block name 'g-1' must be text made of letters, digits and _"),
    ("log: {type: Gain}", "'log' cannot name a block"),
])
def test_malformed_blocks(tmp_path, block, says):
    path = write(tmp_path, f"name: x\nblocks:\n  src: {{type: Constant}}\n  {block}\n")
    with pytest.raises(DiagramFileError) as err:
        load_spec(path)
    assert str(err.value).startswith(f"{path}:4: ") and says in str(err.value)


def test_parameter_expression_errors_name_file_line_block_and_parameter(tmp_path):
    path = write(tmp_path, """
        parameters:
          Kp: 4
        blocks:
          pid:
            type: PID
            Kp: $Kp
            Ki: ${Kq / 4}
        """)
    with pytest.raises(ExpressionError) as err:
        load_spec(path)
    assert str(err.value) == (f"{path}:7: block 'pid': parameter 'Ki': unknown name 'Kq' in 'Kq / 4'; "
                              "did you mean 'Kp'?")


@pytest.mark.parametrize("wire, error, says", [
    ("src -> gg.in", WiringError, "unknown block 'gg'; did you mean 'g'?"),
    ("srcc.out -> g", WiringError, "unknown block 'srcc'; did you mean 'src'?"),
    ("src -> g -> g", DiagramFileError, "must have one '->'"),
    ("src.out.x -> g", DiagramFileError, "'src.out.x' is not an endpoint"),
    ("src -> g.in,", DiagramFileError, "'' is not an endpoint"),
    ("{from: src, too: g}", DiagramFileError, "unknown key 'too' in a connection; did you mean 'to'?"),
    ("{from: src}", DiagramFileError, "a connection mapping needs to"),
    ("[src, g]", DiagramFileError, "a connection is a string"),
    ("inports.x -> g", WiringError, "inports.NAME only exists inside a subsystem file"),
])
def test_bad_connections_name_the_line(tmp_path, wire, error, says):
    path = write(tmp_path, MINIMAL.replace("- src -> g", f"- src -> g\n  - {wire}"))
    with pytest.raises(error) as err:
        load_spec(path)
    assert str(err.value).startswith(f"{path}:6: ") and says in str(err.value)


# -- subsystems ---------------------------------------------------------------------------------

def test_nested_subsystems_are_flattened_with_paths():
    spec = load_spec(SUB)
    assert set(spec.blocks) == {"src", "sink", "echo", "raw", "act/pi", "act/motor", "act/inner/lp",
                                "act2/pi", "act2/motor", "act2/inner/lp"}
    assert spec.blocks["act/inner/lp"].type == "TransferFunction"
    assert wires(spec) == {
        ("src", "act/pi.ref"), ("src", "act/inner/lp.in"), ("act/pi", "act/motor.in"),
        ("act/motor", "sink.in"),
        ("src", "echo.in"),           # act.cmd_echo passes act.cmd through
        ("src", "raw.in"),            # act.raw passes through act/inner.raw, itself inports.in
        ("src", "act2/pi.ref"), ("src", "act2/inner/lp.in"), ("act2/pi", "act2/motor.in")}
    assert len(spec.connections) == 9


def test_subsystem_ports_are_aliases_of_the_signals_that_carry_them():
    aliases = load_spec(SUB).aliases
    assert aliases["act.tau"] == "act/motor"
    assert aliases["act.filtered"] == "act/inner/lp"
    assert aliases["act.cmd"] == aliases["act.cmd_echo"] == aliases["act.raw"] == "src"
    assert aliases["act/inner.out"] == "act/inner/lp"
    assert aliases["act/inner.in"] == aliases["act/inner.raw"] == "src"
    assert aliases["act2.tau"] == "act2/motor"


def test_mask_parameters_default_and_are_overridden_by_the_parent():
    spec = load_spec(SUB)
    assert spec.blocks["act2/pi"].params == {"Kp": 10, "Ki": 2.5}      # the mask defaults
    assert spec.blocks["act/pi"].params == {"Kp": 20, "Ki": 5.0}       # Kp: $K, and Ki follows
    np.testing.assert_array_equal(spec.blocks["act/inner/lp"].params["den"], [0.05, 1.0])


def test_inner_blocks_locate_in_their_file_with_the_chain():
    lp = load_spec(SUB).blocks["act/inner/lp"]
    assert lp.where.file.endswith("filter.yaml") and lp.where.line == 6
    text = str(lp.where)
    assert text.startswith(f"{SUB}:7 (subsystem 'act', actuator.yaml) > ")
    assert "actuator.yaml:10 (subsystem 'act/inner', filter.yaml) > " in text
    assert text.endswith("filter.yaml:6")


def test_overrides_reach_inside_subsystems():
    spec = load_spec(SUB, overrides={"act.Kp": 40, "act/pi.Kd": "${K / 10}", "act/inner/lp.num": [2]})
    assert spec.blocks["act/pi"].params == {"Kp": 40, "Ki": 10.0, "Kd": 2.0}
    np.testing.assert_array_equal(spec.blocks["act/inner/lp"].params["num"], [2.0])
    assert spec.blocks["act2/pi"].params == {"Kp": 10, "Ki": 2.5}


def test_disabling_a_subsystem_disables_every_block_inside():
    spec = load_spec(SUB, overrides={"act2.enabled": False})
    assert all(spec.blocks[name].params["enabled"] is False for name in spec.blocks if name.startswith("act2/"))
    assert all("enabled" not in spec.blocks[name].params for name in spec.blocks if name.startswith("act/"))


def test_a_parent_parameter_that_is_not_a_mask_parameter(tmp_path):
    (tmp_path / "actuator.yaml").write_text((DATA / "actuator.yaml").read_text())
    (tmp_path / "filter.yaml").write_text((DATA / "filter.yaml").read_text())
    path = write(tmp_path, "blocks:\n  act: {type: actuator.yaml, Kq: 3}\n")
    with pytest.raises(ParameterError) as err:
        load_spec(path)
    assert str(err.value).startswith(f"{path}:2: block 'act': 'Kq' is not a parameter of subsystem actuator.yaml; "
                                     "did you mean 'Kp'?")
    with pytest.raises(ParameterError, match=r"unknown block 'act/pj'; did you mean 'act/pi'\?"):
        load_spec(write(tmp_path, "blocks:\n  act: {type: actuator.yaml}\n"), overrides={"act/pj.Kd": 1})


def test_a_subsystem_including_itself_is_an_error():
    with pytest.raises(DiagramFileError) as err:
        load_spec(DATA / "loop_top.yaml")
    message = str(err.value)
    assert "subsystem loop_a.yaml contains itself" in message
    assert "loop_a.yaml > " in message and "loop_b.yaml > " in message
    assert message.startswith(f"{DATA / 'loop_top.yaml'}:3 (subsystem 'outer', loop_a.yaml) > ")


def test_errors_inside_a_subsystem_name_the_path_through_the_hierarchy(tmp_path):
    (tmp_path / "inner.yaml").write_text("inports: [in]\noutports: [out]\nparameters:\n  gain: 2.0\n"
                                         "blocks:\n  g: {type: Gain, gain: \"${gian * 2}\"}\n"
                                         "connections:\n  - inports.in -> g\n  - g -> outports.out\n")
    path = write(tmp_path, "blocks:\n  src: {type: Constant}\n  f: {type: inner.yaml}\nconnections:\n  - src -> f\n")
    with pytest.raises(ExpressionError) as err:
        load_spec(path)
    assert str(err.value) == (f"{path}:3 (subsystem 'f', inner.yaml) > {tmp_path / 'inner.yaml'}:6: block 'f/g': "
                              "parameter 'gain': unknown name 'gian' in 'gian * 2'; did you mean 'gain'?")


def test_a_subsystem_file_cannot_set_up_a_run(tmp_path):
    (tmp_path / "inner.yaml").write_text("inports: [in]\nblocks: {}\nsimulation: {stop_time: 1}\n")
    path = write(tmp_path, "blocks:\n  f: {type: inner.yaml}\n")
    with pytest.raises(DiagramFileError, match=r"d.yaml:2 \(subsystem 'f', inner.yaml\) > .*inner.yaml:3: "
                                               r"a subsystem file cannot have 'simulation'"):
        load_spec(path)


@pytest.mark.parametrize("wire, says", [
    ("src -> act.cmdd", "subsystem 'act' (actuator.yaml) has no inport 'cmdd'; did you mean 'cmd'?"),
    ("act -> g", "subsystem 'act' has 4 outports (tau, cmd_echo, filtered, raw); name one"),
    ("act.cmd -> g", "has no outport 'cmd'"),
])
def test_wiring_to_subsystem_ports_is_checked(tmp_path, wire, says):
    for name in ("actuator.yaml", "filter.yaml"):
        (tmp_path / name).write_text((DATA / name).read_text())
    path = write(tmp_path, f"blocks:\n  src: {{type: Constant}}\n  g: {{type: Gain}}\n  act: {{type: actuator.yaml}}\n"
                           f"connections:\n  - {wire}\n")
    with pytest.raises(WiringError) as err:
        load_spec(path)
    assert str(err.value).startswith(f"{path}:6: ") and says in str(err.value)


def test_an_undriven_subsystem_outport_is_a_wiring_error(tmp_path):
    (tmp_path / "inner.yaml").write_text("outports: [out, spare]\nblocks:\n  c: {type: Constant}\n"
                                         "connections:\n  - c -> outports.out\n")
    path = write(tmp_path, "blocks:\n  f: {type: inner.yaml}\n  g: {type: Gain}\nconnections:\n  - f.spare -> g\n")
    with pytest.raises(WiringError, match=r"d.yaml:5: 'f.spare' is not driven inside subsystem inner.yaml"):
        load_spec(path)


def test_shipped_library_subsystems_are_found_by_type_name(tmp_path, monkeypatch):
    library = tmp_path / "library"
    library.mkdir()
    (library / "Doubler.yaml").write_text("inports: [in]\noutports: [out]\nparameters: {k: 2.0}\n"
                                          "blocks:\n  g: {type: Gain, gain: $k}\n"
                                          "connections:\n  - inports.in -> g\n  - g -> outports.out\n")
    monkeypatch.setattr(subsystems, "LIBRARY_DIR", library)
    path = write(tmp_path, "blocks:\n  c: {type: Constant}\n  d: {type: Doubler, k: 3.0}\n"
                           "  s: {type: Gain}\nconnections:\n  - c -> d\n  - d -> s\n")
    spec = load_spec(path)
    assert spec.blocks["d/g"].params == {"gain": 3.0}
    assert wires(spec) == {("c", "d/g"), ("d/g", "s")}
    assert spec.aliases["d"] == spec.aliases["d.out"] == "d/g"


def test_an_inner_blocks_relative_files_are_read_from_its_subsystems_folder(tmp_path):
    """A subsystem in another folder, naming a data table beside it: the diagram that includes
    it from elsewhere runs it with that table (values 3 then 5 at t = 0 and 1 s)."""
    import blocksim
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "table.csv").write_text("t,v\n0,3\n1,5\n")
    (lib / "player.yaml").write_text("outports: [out]\nblocks:\n  f: {type: FromFile, path: table.csv}\n"
                                     "connections:\n  - f -> outports.out\n")
    top = tmp_path / "studies"
    top.mkdir()
    path = write(top, "blocksim: 1\nblocks:\n  p: {type: ../lib/player.yaml}\n"
                      "simulation: {stop_time: 1.0, solver: rk4, step: 0.5}\nlog: {signals: [p.out]}\n")
    r = blocksim.simulate(blocksim.load(path))
    np.testing.assert_allclose(r["p.out"][:, 0], [3.0, 4.0, 5.0])


# -- a load of the same content reuses the spec --------------------------------------------------

def test_a_second_load_of_the_same_bytes_reuses_the_spec_and_an_edit_is_read(tmp_path):
    import os
    path = write(tmp_path, MINIMAL)
    first = load_spec(path)
    assert load_spec(path) is first
    assert load_spec(path, overrides={"g.gain": 3.0}) is not first     # other overrides
    # the same size and modification time, other bytes: read anew
    stamp = os.stat(path)
    Path(path).write_text(Path(path).read_text().replace("gain: 2.0", "gain: 5.0"))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    edited = load_spec(path)
    assert edited is not first
    assert edited.blocks["g"].params["gain"] == 5.0 and first.blocks["g"].params["gain"] == 2.0


def test_a_changed_subsystem_file_is_read_anew(tmp_path):
    import shutil
    for name in ("sub_top.yaml", "actuator.yaml", "filter.yaml"):
        shutil.copy(DATA / name, tmp_path / name)
    top = str(tmp_path / "sub_top.yaml")
    first = load_spec(top)
    assert first.blocks["act2/motor"].params["gain"] == 2.0
    inner = tmp_path / "actuator.yaml"
    inner.write_text(inner.read_text().replace("gain: 2.0", "gain: 7.0"))
    assert load_spec(top).blocks["act2/motor"].params["gain"] == 7.0


def test_a_reading_limit_set_after_a_load_holds_for_the_next(tmp_path, monkeypatch):
    from blocksim.reading.limits import LimitError
    path = write(tmp_path, MINIMAL)
    load_spec(path)
    monkeypatch.setenv("BLOCKSIM_MAX_FILE_BYTES", "10")
    with pytest.raises(LimitError, match="BLOCKSIM_MAX_FILE_BYTES"):
        load_spec(path)


def test_a_spec_read_from_more_than_the_kept_size_is_read_anew(tmp_path, monkeypatch):
    from blocksim.diagram import spec as spec_module
    path = write(tmp_path, MINIMAL)
    monkeypatch.setattr(spec_module, "SPEC_KEPT_BYTES", len(Path(path).read_bytes()) - 1)
    assert load_spec(path) is not load_spec(path)
    monkeypatch.setattr(spec_module, "SPEC_KEPT_BYTES", len(Path(path).read_bytes()))
    assert load_spec(path) is load_spec(path)
