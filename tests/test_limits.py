"""Every limit of blocksim.reading.limits, and the parser's edge cases, refuse a bad input in
milliseconds with a located message that names the number found, the limit and the variable that
raises it; a limit raised with its variable lets the input through; a bad value of a variable is
a clean error; `python cli.py check` prints that one line and exits 1."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import blocksim
from blocksim.errors import DiagramFileError, ExpressionError
from blocksim.reading.limits import LIMITS, RUN_MEMORY_VARIABLE, LimitError, count, shown
from blocksim.reading.located_yaml import parse_yaml_text

ROOT = Path(__file__).resolve().parents[1]

HEAD = "blocksim: 1\n"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def refused(path: Path, error=LimitError, compile_it=False):
    """The error loading (and, with compile_it, compiling) the diagram at `path` raises."""
    with pytest.raises(error) as info:
        diagram = blocksim.load(str(path))
        if compile_it:
            diagram.compile()
    return info.value


def raise_hint(name: str) -> str:
    return f"; if you mean it, raise the limit with the environment variable {LIMITS[name].variable}"


def constant(expr: str) -> str:
    """A diagram whose one Constant's value is `expr` (a ${...} expression, quoted)."""
    return (HEAD + f"blocks:\n  c: {{type: Constant, value: \"{expr}\"}}\n  t: {{type: Terminator}}\n"
            "connections: [c -> t]\n")


def function(expr: str, value: str = "1.0") -> str:
    """A diagram with a Function block of expression `expr` fed by a Constant of `value`."""
    return (HEAD + f"blocks:\n  c: {{type: Constant, value: \"{value}\"}}\n"
            f"  f: {{type: Function, expr: \"{expr}\"}}\n  t: {{type: Terminator}}\n"
            "connections: [c -> f, f -> t]\n")


# ------------------------------------------------------------------- subsystems

def nested_tens(folder: Path, levels: int) -> None:
    """s0.yaml (one Gain) and s1..s<levels>.yaml, each a chain of ten of the level below: s<k>
    flattens to 10**k blocks."""
    write(folder, "s0.yaml", HEAD + "inports: [u]\noutports: [y]\nblocks:\n  g: {type: Gain, gain: 1.0}\n"
                                    "connections: [inports.u -> g, g -> outports.y]\n")
    for k in range(1, levels + 1):
        blocks = "".join(f"  b{j}: {{type: s{k - 1}.yaml}}\n" for j in range(10))
        wires = ", ".join(["inports.u -> b0", *(f"b{j} -> b{j + 1}" for j in range(9)), "b9 -> outports.y"])
        write(folder, f"s{k}.yaml", HEAD + f"inports: [u]\noutports: [y]\nblocks:\n{blocks}"
                                           f"connections: [{wires}]\n")


def two_subsystems(folder: Path, big: int) -> Path:
    return write(folder, "top.yaml", HEAD + "blocks:\n  c: {type: Constant, value: 1.0}\n"
                 f"  big: {{type: s{big}.yaml}}\n  small: {{type: s1.yaml}}\n  t: {{type: Terminator}}\n"
                 "connections: [c -> big, big -> small, small -> t]\n")


def test_subsystems_that_include_each_other_repeatedly_are_refused_before_expanding(tmp_path):
    nested_tens(tmp_path, 6)
    err = refused(two_subsystems(tmp_path, 6))
    assert err.limit == "blocks"
    assert str(err) == (f"{tmp_path / 'top.yaml'}:4: block 'big': the diagram flattens to 1,000,012 "
                        "blocks, more than the limit of 100,000 (block 'big', s6.yaml, brings "
                        "1,000,000 of them)" + raise_hint("blocks"))


def test_the_blocks_limit_raised_lets_a_large_diagram_through(tmp_path, monkeypatch):
    nested_tens(tmp_path, 3)
    top = two_subsystems(tmp_path, 3)
    monkeypatch.setenv("BLOCKSIM_MAX_BLOCKS", "1000")
    assert "flattens to 1,012 blocks, more than the limit of 1,000" in str(refused(top))
    monkeypatch.setenv("BLOCKSIM_MAX_BLOCKS", "1_100")
    assert len(blocksim.load(str(top)).spec.blocks) == 1012


def subsystem_chain(folder: Path, levels: int) -> Path:
    """top.yaml using c0.yaml, each c<i>.yaml using c<i+1>.yaml, the last a Gain."""
    for i in range(levels):
        inner = f"{{type: c{i + 1}.yaml}}" if i < levels - 1 else "{type: Gain, gain: 2.0}"
        write(folder, f"c{i}.yaml", HEAD + f"inports: [u]\noutports: [y]\nblocks:\n  x: {inner}\n"
                                           "connections: [inports.u -> x, x -> outports.y]\n")
    return write(folder, "top.yaml", HEAD + "blocks:\n  c: {type: Constant, value: 1.0}\n"
                 "  s: {type: c0.yaml}\n  t: {type: Terminator}\nconnections: [c -> s, s -> t]\n")


def test_subsystems_nested_past_the_depth_limit_are_refused_in_one_readable_line(tmp_path, monkeypatch):
    top = subsystem_chain(tmp_path, 60)
    err = refused(top)
    inner = "s" + "/x" * 50
    assert err.limit == "subsystem_depth" and err.block == inner
    assert err.message == ("subsystem c50.yaml is nested 51 levels, more than the limit of 50"
                           + raise_hint("subsystem_depth"))
    assert str(err.where) == (
        f"{top}:4 (subsystem 's', c0.yaml) > {tmp_path / 'c0.yaml'}:5 (subsystem 's/x', c1.yaml) > "
        f"{tmp_path / 'c1.yaml'}:5 (subsystem 's/x/x', c2.yaml) > ... (44 more levels) > "
        f"{tmp_path / 'c46.yaml'}:5 (subsystem '{inner[:-6]}', c47.yaml) > "
        f"{tmp_path / 'c47.yaml'}:5 (subsystem '{inner[:-4]}', c48.yaml) > "
        f"{tmp_path / 'c48.yaml'}:5 (subsystem '{inner[:-2]}', c49.yaml) > {tmp_path / 'c49.yaml'}:5")
    monkeypatch.setenv("BLOCKSIM_MAX_SUBSYSTEM_DEPTH", "100")
    assert len(blocksim.load(str(top)).spec.blocks) == 3


def test_a_directory_or_a_symlink_loop_as_a_subsystem_file_is_a_located_error(tmp_path):
    (tmp_path / "part.yaml").mkdir()
    os.symlink(tmp_path / "b.yaml", tmp_path / "a.yaml")
    os.symlink(tmp_path / "a.yaml", tmp_path / "b.yaml")
    err = refused(write(tmp_path, "dir.yaml", HEAD + "blocks:\n  s: {type: part.yaml}\n"), DiagramFileError)
    assert str(err) == (f"{tmp_path / 'dir.yaml'}:3: block 's': subsystem file part.yaml is a directory, "
                        f"not a subsystem file ({tmp_path / 'part.yaml'})")
    err = refused(write(tmp_path, "loop.yaml", HEAD + "blocks:\n  s: {type: a.yaml}\n"), DiagramFileError)
    assert str(err) == (f"{tmp_path / 'loop.yaml'}:3: block 's': subsystem file a.yaml is a loop of "
                        f"symbolic links ({tmp_path / 'a.yaml'})")


# ------------------------------------------------------------------- expressions

def expression_error(tmp_path, text: str, error=LimitError, compile_it=False):
    return refused(write(tmp_path, "d.yaml", text), error, compile_it)


def test_an_expression_over_expression_chars_is_refused_with_its_start_and_length(tmp_path):
    err = expression_error(tmp_path, constant("${" + "+".join(["1"] * 6000) + "}"))
    assert err.limit == "expression_chars"
    assert str(err) == (f"{tmp_path / 'd.yaml'}:3: block 'c': parameter 'value': the expression '"
                        + "1+" * 30 + "... (11,999 characters)' has 11,999 characters, more than the "
                        "limit of 10,000" + raise_hint("expression_chars"))


@pytest.mark.parametrize("body, shown, levels", [
    ("-" * 5000 + "1", "-" * 60 + "... (5,001 characters)", "5,001"),            # a unary chain
    ("**".join(["2"] * 1000), "2**" * 20 + "... (2,998 characters)", "1,000"),   # a power chain
])
def test_a_deeply_nested_expression_is_refused_before_it_is_evaluated(tmp_path, body, shown, levels):
    err = expression_error(tmp_path, constant("${" + body + "}"))
    assert err.limit == "expression_depth"
    assert err.message == (f"parameter 'value': the expression '{shown}' is nested {levels} levels, "
                           "more than the limit of 200" + raise_hint("expression_depth"))


def test_a_unary_chain_of_100000_characters_is_refused_by_its_length(tmp_path):
    err = expression_error(tmp_path, constant("${" + "-" * 100000 + "1}"))
    assert err.limit == "expression_chars" and "has 100,001 characters" in err.message


def test_the_depth_limit_raised_lets_a_deep_expression_through(tmp_path, monkeypatch):
    path = write(tmp_path, "d.yaml", constant("${" + "-" * 300 + "1}"))
    assert refused(path).limit == "expression_depth"
    monkeypatch.setenv("BLOCKSIM_MAX_EXPRESSION_DEPTH", "400")
    assert blocksim.load(str(path)).spec.blocks["c"].params["value"] == 1.0
    monkeypatch.delenv("BLOCKSIM_MAX_EXPRESSION_DEPTH")
    assert refused(path).limit == "expression_depth"            # checked again, not cached


def test_brackets_deeper_than_the_parser_takes_say_it_is_a_fixed_bound(tmp_path):
    err = expression_error(tmp_path, constant("${" + "(" * 300 + "1" + ")" * 300 + "}"), ExpressionError)
    assert err.message.endswith("': brackets nested 300 deep, more than the 200 the parser takes (a "
                                "fixed bound: give parts of the expression names as workspace "
                                "parameters)")


@pytest.mark.parametrize("expr, message", [
    ("9**9**9", "overflow (the result is too large) in '9**9**9'"),
    ("2**10**10", "overflow (the result is too large) in '2**10**10'"),
    ("10**400", "cannot evaluate '10**400': the integer is too large for a number (beyond 1.8e308)"),
    ("(10**200)*(10**200)", "cannot evaluate '(10**200)*(10**200)': the integer is too large for a "
                            "number (beyond 1.8e308)"),
    ("1" + "0" * 400, "cannot evaluate '1" + "0" * 199 + "... (401 characters)': the integer is too "
                      "large for a number (beyond 1.8e308)"),
])
def test_huge_integers_and_powers_in_expressions_are_refused_at_once(tmp_path, expr, message):
    err = expression_error(tmp_path, constant("${" + expr + "}"), ExpressionError)
    assert str(err) == f"{tmp_path / 'd.yaml'}:3: block 'c': parameter 'value': {message}"


@pytest.mark.parametrize("expr, shown, elements", [
    ("zeros(10**9)", "zeros(10 ** 9)", "1,000,000,000"),
    ("ones(10**4, 10**4)", "ones(10 ** 4, 10 ** 4)", "100,000,000"),
    ("eye(10**5)", "eye(10 ** 5)", "10,000,000,000"),
    ("linspace(0, 1, 10**9)", "linspace(0, 1, 10 ** 9)", "1,000,000,000"),
    ("ones(10**4) + ones(10**4, 1)", "ones(10 ** 4) + ones(10 ** 4, 1)", "100,000,000"),
    ("ones(10**4, 1) @ ones(1, 10**4)", "ones(10 ** 4, 1) @ ones(1, 10 ** 4)", "100,000,000"),
    ("concat(ones(6*10**6), ones(6*10**6))", "concat(ones(6 * 10 ** 6), ones(6 * 10 ** 6))", "12,000,000"),
])
def test_an_array_over_array_elements_is_refused_before_it_is_allocated(tmp_path, expr, shown, elements):
    err = expression_error(tmp_path, constant("${" + expr + "}"))
    assert err.limit == "array_elements"
    assert str(err) == (f"{tmp_path / 'd.yaml'}:3: block 'c': parameter 'value': {shown} would make an "
                        f"array of {elements} elements, more than the limit of 10,000,000"
                        + raise_hint("array_elements"))


def test_the_array_limit_raised_lets_a_large_array_through(tmp_path, monkeypatch):
    path = write(tmp_path, "d.yaml", constant("${zeros(2000)}"))
    monkeypatch.setenv("BLOCKSIM_MAX_ARRAY_ELEMENTS", "1e3")
    assert "zeros(2000) would make an array of 2,000 elements" in str(refused(path))
    monkeypatch.setenv("BLOCKSIM_MAX_ARRAY_ELEMENTS", "1e4")
    assert blocksim.load(str(path)).spec.blocks["c"].params["value"].shape == (2000,)


def test_a_function_expression_over_expression_chars_is_refused(tmp_path):
    err = expression_error(tmp_path, function("+".join(["u"] * 6000)))
    assert err.limit == "expression_chars"
    assert str(err) == (f"{tmp_path / 'd.yaml'}:4: block 'f': the expression '" + "u+" * 30
                        + "... (11,999 characters)' has 11,999 characters, more than the limit of "
                        "10,000" + raise_hint("expression_chars"))


@pytest.mark.parametrize("expr, width, instructions", [
    ("u+u+u+u+u+u+u+u+u+u", 200_000, "3,800,000"),          # wide input: size times width
    ("sum(u*sum(u*sum(u)))", 2000, "16,008,003,999"),      # reductions of reductions
])
def test_a_function_program_over_program_size_is_refused_before_it_is_built(tmp_path, expr, width,
                                                                             instructions):
    err = expression_error(tmp_path, function(expr, f"${{zeros({width})}}"), compile_it=True)
    assert err.limit == "program_size"
    assert str(err) == (f"{tmp_path / 'd.yaml'}:4: block 'f': the expression '{expr}' compiles to "
                        f"{instructions} instructions, more than the limit of 1,000,000"
                        + raise_hint("program_size"))


# ------------------------------------------------------------------- YAML text

def test_a_huge_integer_in_yaml_is_refused_at_its_line(tmp_path):
    err = expression_error(tmp_path, HEAD + "blocks:\n  c: {type: Constant, value: 1" + "0" * 400 + "}\n",
                           DiagramFileError)
    assert (err.where.line, err.where.column) == (3, 30)
    assert err.message == ("the integer 1" + "0" * 39 + "... (401 characters) is too large for a "
                           "number (beyond 1.8e308)")


@pytest.mark.parametrize("char, name, line, column", [
    ("\x00", "NUL", 3, 22), ("\x07", "BEL", 2, 8), ("\x1b", "ESC", 3, 34),
])
def test_a_control_character_in_yaml_is_refused_at_its_line_and_column(tmp_path, char, name, line, column):
    text = HEAD + "blocks:\n  c: {type: Constant, value: 1}  \n"
    lines = text.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1][:column - 1] + char + lines[line - 1][column - 1:]
    err = expression_error(tmp_path, "".join(lines), DiagramFileError)
    assert (err.where.line, err.where.column) == (line, column)
    assert str(err) == (f"{tmp_path / 'd.yaml'}:{line}: the character U+{ord(char):04X} ({name}) (column "
                        f"{column}) is not allowed in a diagram file; remove it (in a double-quoted "
                        "string, write it as an escape such as \\x07)")


def test_a_file_over_file_bytes_is_refused_unread_and_the_limit_raised_lets_it_through(tmp_path, monkeypatch):
    path = write(tmp_path, "d.yaml", constant("${1.5}"))
    size = path.stat().st_size
    monkeypatch.setenv("BLOCKSIM_MAX_FILE_BYTES", "50")
    assert str(refused(path)) == (f"{path}: the diagram file has {size} bytes, more than the limit of "
                                  "50" + raise_hint("file_bytes"))
    monkeypatch.setenv("BLOCKSIM_MAX_FILE_BYTES", str(size))
    assert blocksim.load(str(path)).spec.blocks["c"].params["value"] == 1.5


def alias_bomb(levels: int) -> str:
    """Anchors of ten copies of the previous one, `levels` deep: 1 + 10 + ... + 10**levels lists."""
    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_by_the_yaml_nodes_limit_before_it_is_built(tmp_path):
    path = write(tmp_path, "d.yaml", alias_bomb(8))
    err = refused(path)
    assert err.limit == "yaml_nodes"
    assert str(err) == (f"{path}:1: the file expands to 123,456,790 mappings and lists, more than the "
                        "limit of 500,000 (each use of an alias is a copy)" + raise_hint("yaml_nodes"))


def test_the_yaml_nodes_limit_raised_lets_aliases_through(monkeypatch):
    monkeypatch.setenv("BLOCKSIM_MAX_YAML_NODES", "1000")
    with pytest.raises(LimitError, match="expands to 1,235 mappings and lists, more than the limit of 1,000"):
        parse_yaml_text(alias_bomb(3), "x.yaml")
    monkeypatch.setenv("BLOCKSIM_MAX_YAML_NODES", "1235")
    assert len(parse_yaml_text(alias_bomb(3), "x.yaml")["a3"][9][9]) == 10


def deep_block_mapping(levels: int) -> str:
    """A mapping `levels` deep in block style, one key per line, each indented two more."""
    return "".join(f"{'  ' * k}k{k}:\n" for k in range(levels - 1)) + f"{'  ' * (levels - 1)}k: 1\n"


@pytest.mark.parametrize("kind", ["block", "flow list", "flow mapping"])
def test_yaml_nested_past_yaml_depth_is_refused_at_its_line_and_200_levels_read(kind):
    def text(levels):
        if kind == "block":
            return deep_block_mapping(levels)
        if kind == "flow list":
            return "a: " + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "\n"
        return "a: " + "{a: " * (levels - 1) + "1" + "}" * (levels - 1) + "\n"

    tree = parse_yaml_text(text(200), "x.yaml")
    for _ in range(199):                # down the one branch, 199 levels
        tree = next(iter(tree.values())) if isinstance(tree, dict) else tree[0]
    assert tree in ({"k": 1}, [1], {"a": 1})
    with pytest.raises(LimitError) as info:
        parse_yaml_text(text(201), "x.yaml")
    assert info.value.limit == "yaml_depth"
    assert str(info.value) == (f"x.yaml:{201 if kind == 'block' else 1}: mappings and lists here nest "
                               "201 levels, more than the limit of 200" + raise_hint("yaml_depth"))


@pytest.mark.parametrize("text", ["a: " + "[" * 100_000 + "1" + "]" * 100_000 + "\n",
                                  "a: " + "{a: " * 100_000 + "1" + "}" * 100_000 + "\n",
                                  "a: " + "[" * 100_000 + "\n",
                                  deep_block_mapping(5000)],
                         ids=["flow list", "flow mapping", "unclosed brackets", "block mapping"])
def test_yaml_nested_a_hundred_thousand_deep_is_an_error_not_a_crash(tmp_path, text):
    """libyaml's composer recurses in C: past some ten thousand levels it overflows the stack and
    the process dies. Run in a child process, so that a crash fails this test, not the suite."""
    path = write(tmp_path, "deep.yaml", text)
    done = subprocess.run([sys.executable, "-c", "import sys; from blocksim.cli import main; "
                           "sys.exit(main(['check', sys.argv[1]]))", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.startswith(f"error: {path}:"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_the_yaml_depth_limit_raised_lets_a_deeper_file_through(monkeypatch):
    monkeypatch.setenv("BLOCKSIM_MAX_YAML_DEPTH", "300")
    assert parse_yaml_text(deep_block_mapping(250), "x.yaml")["k0"]["k1"]["k2"] is not None


def test_an_alias_inside_what_it_names_is_refused():
    with pytest.raises(DiagramFileError) as info:
        blocksim.load("blocksim: 1\nblocks: &b {c: {type: Constant, value: 1.0}, d: *b}\n")
    assert info.value.message == ("an alias is used inside the mapping or list it names (which would "
                                  "expand without end)")


# ------------------------------------------------------------------- the variables

@pytest.mark.parametrize("value", ["lots", "0", "-5", "1.5", "inf", "1e400"])
def test_a_bad_value_of_a_limit_variable_is_a_clean_error(tmp_path, monkeypatch, value):
    path = write(tmp_path, "d.yaml", constant("${1.5}"))
    monkeypatch.setenv("BLOCKSIM_MAX_FILE_BYTES", value)
    assert str(refused(path)) == ("environment BLOCKSIM_MAX_FILE_BYTES: BLOCKSIM_MAX_FILE_BYTES must be a "
                                  f"whole number >= 1 (such as 500_000 or 1e9), got '{value}'")


def test_cli_check_prints_a_limit_in_one_line_and_exits_1(tmp_path):
    nested_tens(tmp_path, 6)
    top = two_subsystems(tmp_path, 6)
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(top)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert proc.stderr == (f"error: {top}:4: block 'big': the diagram flattens to 1,000,012 blocks, more "
                           "than the limit of 100,000 (block 'big', s6.yaml, brings 1,000,000 of them)"
                           + raise_hint("blocks") + "\n")


# ------------------------------------------------------------------- the table of docs/semantics.md

def limits_table() -> list[list[str]]:
    """The rows of the table under "### Limits" in docs/semantics.md, as lists of cells."""
    text = (ROOT / "docs" / "semantics.md").read_text()
    section = text.split("\n### Limits\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0] == "| limit | default | unit | variable | why |"
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_docs_table_lists_every_limit_with_its_default_unit_and_variable():
    rows = limits_table()
    assert [row[0] for row in rows] == [f"`{name}`" for name in LIMITS] + ["run memory"]
    for row, entry in zip(rows, LIMITS.values()):
        assert row[1:4] == [count(entry.default), entry.unit, f"`{entry.variable}`"], row
        assert len(row[4]) > 40, row                  # each says why
    assert rows[-1][1:4] == ["the memory available now", "bytes", f"`{RUN_MEMORY_VARIABLE}`"]


# ------------------------------------------------------------------- linear time

def test_a_subsystem_file_parsed_once_gives_each_use_its_own_chain():
    text = "inports: [u]\nblocks:\n  g: {type: Gain, gain: 1.0}\n"
    trees = [parse_yaml_text(text, "part.yaml", via) for via in
             [("top.yaml:3 (subsystem 'a', part.yaml)",), ("top.yaml:4 (subsystem 'b', part.yaml)",), (),
              ("top.yaml:5 (subsystem 'c', part.yaml)",)]]
    assert [str(tree["blocks"]["g"].loc("gain")) for tree in trees] == [
        "top.yaml:3 (subsystem 'a', part.yaml) > part.yaml:3", "top.yaml:4 (subsystem 'b', part.yaml) > part.yaml:3",
        "part.yaml:3", "top.yaml:5 (subsystem 'c', part.yaml) > part.yaml:3"]
    assert [str(tree["inports"].loc(0)) for tree in trees][2:] == [
        "part.yaml:1", "top.yaml:5 (subsystem 'c', part.yaml) > part.yaml:1"]
    assert type(trees[2].where) is blocksim.errors.SourceLoc and trees[2].where.column == 1


def big_diagram(blocks: int, parameters: int) -> str:
    """A chain of `blocks` Gains whose gain is the last of `parameters` chained parameters."""
    lines = ["blocksim: 1", "parameters:", "  p0: 1.0"]
    lines += [f"  p{k}: ${{p{k - 1} + 1}}" for k in range(1, parameters)]
    lines += ["blocks:", "  c: {type: Constant, value: 1.0}"]
    lines += [f"  g{k}: {{type: Gain, gain: \"${{p{parameters - 1} / {parameters}}}\"}}" for k in range(blocks)]
    lines += ["  t: {type: Terminator}", "connections:", "  - c -> g0"]
    lines += [f"  - g{k} -> g{k + 1}" for k in range(blocks - 1)] + [f"  - g{blocks - 1} -> t"]
    return "\n".join(lines) + "\n"


def test_a_diagram_of_5000_blocks_and_5000_chained_parameters_is_checked_without_hanging(tmp_path):
    path = write(tmp_path, "big.yaml", big_diagram(5_000, 5_000))
    assert path.stat().st_size > 400_000
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{path}: 'big' is valid\n")
    assert "\n  5002. t " in proc.stdout and "\nrates: constant\n" in proc.stdout


# ------------------------------------------------------------------- libyaml and PyYAML's own parser

SAME_TEXTS = [
    "a: 1e-3\nb: yes\nc: 012\nd: 1:30\ne: 2024-01-02\nf: 0x1F\ng: .inf\nh: -.5\ni: ~\nj: on\n",
    "base: &b {x: [1, 2], y: {z: 3}}\none: *b\ntwo: {<<: *b, w: [4]}\n",
    "list:\n  - {a: 1}\n  - [2, 3]\n  - 'text'\n  - true\n",
]
SAME_ERRORS = ["a: 1\nb: 2\na: 3\n", "a: !!python/object/apply:os.system [ls]\n", "? [1, 2]\n: 3\n",
               "base: &b {x: 1}\ntwo: {<<: *b, x: 2}\n", "a: &a [1, *a]\n", alias_bomb(7)]


def with_each_parser(monkeypatch, parse):
    """parse(file) with libyaml's parser, then with PyYAML's own (the fallback)."""
    from blocksim.reading import located_yaml
    results = [parse("fast.yaml")]
    monkeypatch.setattr(located_yaml, "LOADER", located_yaml.LocatedLoader)
    results.append(parse("pure.yaml"))
    return results


@pytest.mark.parametrize("text", SAME_TEXTS)
def test_both_parsers_read_the_same_tree_and_locations(monkeypatch, text):
    from blocksim.reading.located_yaml import to_plain
    fast, pure = with_each_parser(monkeypatch, lambda file: parse_yaml_text(text, file))
    assert repr(to_plain(fast)) == repr(to_plain(pure))
    for key in fast:
        assert (fast.loc(key).line, fast.loc(key).column) == (pure.loc(key).line, pure.loc(key).column)


@pytest.mark.parametrize("text", SAME_ERRORS)
def test_both_parsers_refuse_the_same_text_with_the_same_message(monkeypatch, text):
    def message(file):
        with pytest.raises(blocksim.errors.BlocksimError) as info:
            parse_yaml_text(text, file, error=DiagramFileError, what="diagram file")
        return type(info.value), info.value.where.line, info.value.message

    fast, pure = with_each_parser(monkeypatch, message)
    assert fast == pure


@pytest.mark.parametrize("value, text", [
    ("rk4", "'rk4'"),
    (["rk4", 2], "['rk4', 2]"),
    (np.eye(2), "[[1., 0.], [0., 1.]]"),
    ({"a": np.eye(2)}, "{'a': array([[1., 0.], [0., 1.]])}"),
    (np.arange(100.0), "[ 0., 1., 2., ..., 97., 98., 99.]"),
    ("v" * 100, f"'{'v' * 59}... (102 characters)"),
])
def test_a_value_is_shown_on_one_short_line(value, text):
    """shown(): a value for a message, on one line, its start and its length when long."""
    assert shown(value) == text
