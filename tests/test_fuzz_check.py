"""`blocksim check` on mangled example diagrams: every mutation ends in exit 0 or one located
error line with exit 1, never a traceback, a crash or a hang.

The mutator is seeded: case `(diagram, seed)` always makes the same text, and a failure prints the
mutation (its kind and what it changed) and the reproducer `mutate(diagram, seed)`. The default run
makes CASES_PER_DIAGRAM mutations of each example diagram, each mutation kind in turn; set
BLOCKSIM_FUZZ_CASES=N for an extended run (N per diagram, seeds from 0; its failures beyond the
default seeds are not marked, they are what it is run to find).

Failures in modules of other owners are strict xfails (KNOWN, and a minimal reproducer of each at
the end of this file): each turns red once fixed, so that its mark is taken off.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import traceback
from fractions import Fraction
from pathlib import Path

import pytest

from blocksim.cli import main
from blocksim.engine.recorder import log_times

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: the example files that are diagrams (the others are robot files and identification configs)
DIAGRAMS = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.yaml")
                  if re.search(r"^blocks:", p.read_text(), re.M))
EXTENDED = "BLOCKSIM_FUZZ_CASES" in os.environ
CASES_PER_DIAGRAM = int(os.environ.get("BLOCKSIM_FUZZ_CASES", "26"))
TIME_LIMIT = 10            # s per mutation: a check takes well under 1 s, a hang never ends
LONG = [1000, 100_000] + ([2_000_000] if EXTENDED else [])
"""Lengths of the very long strings (the YAML reader takes 5 to 10 s over a 2 MB list of numbers:
the extended run only)."""

NUMBER = re.compile(r"(?<![\w.$])-?\d+(\.\d*)?([eE][-+]?\d+)?(?![\w.])")
KEY_LINE = re.compile(r"^(\s*)([A-Za-z_][\w]*):\s*(\S.*)?$")
TYPE = re.compile(r"(type:\s*)([A-Za-z_]\w*)")
WIRE = re.compile(r"([\w/]+(?:\.\w+)?)\s*->\s*([\w/]+(?:\.\w+)?)")
EXPRESSION = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z_]\w*)")
INLINE_VALUE = re.compile(r"(\b[A-Za-z_]\w*:\s*)([^,{}\[\]\s#][^,{}\[\]#]*?|\[[^\[\]]*\])(?=\s*[,}]|\s*$|\s+#)")

NUMBERS = [".nan", "1e308", "-1e308", "0", "-0.0", ".inf", "-.inf", "1e-320", "text", "'3'",
           "12345678901234567890123456789012345678901234567890", "-99999999999999999999", "true",
           "null", "[]", "0x10", "1_000"]
VALUES = ["[]", "{}", "null", "~", "true", "'text'", "[1, 2, 3]", "[[1, 2], [3, 4]]", "-1", "0",
          ".nan", "1e308", "{a: 1}", "[.nan]", "[1e308, -1e308]", "''", "[[]]", "[a, b]",
          "${1/0}", "$nosuch", "!!binary aGVsbG8=", "!!python/object:os.system 1", "*alias",
          "&anchor 1", "!!set {a, b}", "2001-12-14", "[1, [2, [3]]]", "-5e-324"]
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b[31m", "\x7f", "\x85", "\u2028",
           "\u202e", "\ufeff", "\udcff", "\r", "\r\n", "\t"]
EXPRESSIONS = ["1/0", "", "(", "1 +", "a" * 5000, "9**9**9", "[1]*10**9", "__import__('os')",
               "x.__class__", "1e308*10", "sqrt(-1)", "pi pi", "${x}", "'s' + 1", "lambda: 0",
               "[" * 500 + "]" * 500, "(" * 2000 + ")" * 2000, "-" * 10000 + "1", "nosuch(1)",
               "zeros(10**12)", "eye(100000)", "a if", "1 < 2 < 3", "not", "\x00", "1e999"]


# ----------------------------------------------------------------------------- the mutations
# Each takes the diagram's text and a random.Random, and returns (new text, what it did).

class NoTarget(Exception):
    """The text has nothing this mutation changes (no wire left to swap, say)."""


def _choose(rng, matches):
    if not matches:
        raise NoTarget
    return rng.choice(matches)


def _lines(text):
    return text.splitlines(keepends=True)


def _pick_line(rng, lines, pattern=None):
    choices = [i for i, line in enumerate(lines) if (pattern is None and line.strip())
               or (pattern is not None and re.search(pattern, line))]
    return _choose(rng, choices)


def delete_line(text, rng):
    lines = _lines(text)
    i = _pick_line(rng, lines)
    return "".join(lines[:i] + lines[i + 1:]), f"deleted line {i + 1}: {lines[i].rstrip()!r}"


def replace_number(text, rng):
    found = list(NUMBER.finditer(text))
    m = _choose(rng, found)
    new = rng.choice(NUMBERS)
    return (text[:m.start()] + new + text[m.end():],
            f"number {m.group()!r} at offset {m.start()} -> {new!r}")


def replace_value(text, rng):
    found = list(INLINE_VALUE.finditer(text))
    m = _choose(rng, found)
    new = rng.choice(VALUES)
    return (text[:m.start(2)] + new + text[m.end(2):],
            f"value of {m.group(1).strip()} {m.group(2)!r} at offset {m.start(2)} -> {new!r}")


def truncate(text, rng):
    data = text.encode(errors="surrogateescape")
    n = rng.randrange(len(data) + 1)
    return data[:n].decode(errors="surrogateescape"), f"truncated at byte {n}"


def duplicate_key(text, rng):
    lines = _lines(text)
    i = _pick_line(rng, lines, KEY_LINE.pattern)
    m = KEY_LINE.match(lines[i].rstrip("\n"))
    copy = f"{m.group(1)}{m.group(2)}: {rng.choice(VALUES)}\n"
    where = i + 1 if rng.random() < 0.5 else i
    return ("".join(lines[:where] + [copy] + lines[where:]),
            f"key {m.group(2)!r} of line {i + 1} repeated as {copy.strip()!r}")


def broken_syntax(text, rng):
    lines = _lines(text)
    i = _pick_line(rng, lines)
    line = lines[i]
    how = rng.choice(["open [", "open {", "close ]", "close }", "indent +1", "indent -1",
                      "tab indent", "quote", "colon", "dash"])
    if how.startswith("open") or how.startswith("close"):
        k = rng.randrange(len(line.rstrip("\n")) + 1)
        line = line[:k] + how[-1] + line[k:]
    elif how == "indent +1":
        line = " " + line
    elif how == "indent -1":
        line = line[1:] if line.startswith(" ") else line.lstrip()
    elif how == "tab indent":
        line = "\t" + line.lstrip(" ")
    elif how == "quote":
        k = rng.randrange(len(line.rstrip("\n")) + 1)
        line = line[:k] + rng.choice("'\"") + line[k:]
    elif how == "colon":
        k = rng.randrange(len(line.rstrip("\n")) + 1)
        line = line[:k] + ": " + line[k:]
    else:
        line = "- " + line
    lines[i] = line
    return "".join(lines), f"{how} on line {i + 1}: {line.rstrip()!r}"


def control_character(text, rng):
    k = rng.randrange(len(text) + 1)
    c = rng.choice(CONTROL)
    return text[:k] + c + text[k:], f"{c!r} inserted at offset {k}"


def unknown_type(text, rng):
    found = list(TYPE.finditer(text))
    m = _choose(rng, found)
    types = sorted({t.group(2) for t in found} - {m.group(2)}) or ["Gain"]
    new = rng.choice([m.group(2) + "x", m.group(2).lower(), "NoSuchBlock", "__init__", "base",
                      "../../etc/passwd", "nosuch.yaml", "examples", rng.choice(types),
                      rng.choice(types), "Integrator", "Manipulator", "Mux", "Demux",
                      "JointActuator", "Scope"])
    return (text[:m.start(2)] + new + text[m.end(2):],
            f"type {m.group(2)!r} at offset {m.start(2)} -> {new!r}")


def unknown_port(text, rng):
    found = list(WIRE.finditer(text))
    m = _choose(rng, found)
    end = rng.choice([1, 2])
    name = m.group(end)
    block = name.split(".")[0]
    new = block + rng.choice([".nosuch", ".in99", ".out2", ".", ".q.q", "", ".__dict__",
                              ".in" + "1" * 30, "/nosuch.out", ".q", ".tau", ".out"])
    return (text[:m.start(end)] + new + text[m.end(end):],
            f"wire end {name!r} at offset {m.start(end)} -> {new!r}")


def swap_wire(text, rng):
    found = list(WIRE.finditer(text))
    m = _choose(rng, found)
    return (text[:m.start()] + f"{m.group(2)} -> {m.group(1)}" + text[m.end():],
            f"wire {m.group()!r} at offset {m.start()} reversed")


def long_string(text, rng):
    n = rng.choice(LONG)
    kind = rng.choice(["name", "value", "type", "key"])
    if kind == "name":
        found = list(WIRE.finditer(text))
        m = _choose(rng, found)
        block = m.group(1).split(".")[0]
        return text.replace(block, "b" * n), f"block name {block!r} -> 'b' * {n}"
    if kind == "type":
        m = _choose(rng, list(TYPE.finditer(text)))
        return text[:m.start(2)] + "T" * n + text[m.end(2):], f"type {m.group(2)!r} -> 'T' * {n}"
    if kind == "key":
        lines = _lines(text)
        i = _pick_line(rng, lines, KEY_LINE.pattern)
        m = KEY_LINE.match(lines[i])
        lines[i] = lines[i].replace(m.group(2), "k" * n, 1)
        return "".join(lines), f"key {m.group(2)!r} of line {i + 1} -> 'k' * {n}"
    m = _choose(rng, list(INLINE_VALUE.finditer(text)))
    new = rng.choice(["'" + "v" * n + "'", "[" + ", ".join(["1"] * (n // 3)) + "]"])
    return text[:m.start(2)] + new + text[m.end(2):], f"value {m.group(2)!r} -> {len(new)} chars"


def deep_nesting(text, rng):
    n = rng.choice([50, 200, 1000, 10_000, 100_000])
    new = rng.choice(["[" * n + "1" + "]" * n, "{a: " * n + "1" + "}" * n,
                      "".join(f"\n{'  ' * (k + 2)}k{k}:" for k in range(min(n, 3000))) + " 1",
                      "[" * n, "${" + "(" * n + "1" + ")" * n + "}"])
    m = _choose(rng, list(INLINE_VALUE.finditer(text)))
    return (text[:m.start(2)] + new + text[m.end(2):],
            f"value {m.group(2)!r} at offset {m.start(2)} -> nested {n} deep ({new[:12]!r}...)")


def mutate_expression(text, rng):
    found = list(EXPRESSION.finditer(text))
    if not found:                       # no expression: put one in a value
        m = _choose(rng, list(INLINE_VALUE.finditer(text)))
        new = "${" + rng.choice(EXPRESSIONS) + "}"
        return (text[:m.start(2)] + new + text[m.end(2):],
                f"value {m.group(2)!r} at offset {m.start(2)} -> {new[:60]!r}")
    m = _choose(rng, found)
    body = m.group(1) if m.group(1) is not None else m.group(2)
    how = rng.choice(["replace", "replace", "delete char", "insert char", "unclosed", "unknown"])
    if how == "replace":
        new = "${" + rng.choice(EXPRESSIONS) + "}"
    elif how == "delete char" and body:
        k = rng.randrange(len(body))
        new = "${" + body[:k] + body[k + 1:] + "}"
    elif how == "insert char":
        k = rng.randrange(len(body) + 1)
        new = "${" + body[:k] + rng.choice("+-*/()[],.'\"$ {}%^&|~!<>=") + body[k:] + "}"
    elif how == "unclosed":
        new = "${" + body
    else:
        new = "$" + body + "_nosuch"
    return (text[:m.start()] + new + text[m.end():],
            f"expression {m.group()!r} at offset {m.start()} -> {new[:60]!r}")


MUTATIONS = [delete_line, replace_number, replace_value, truncate, duplicate_key, broken_syntax,
             control_character, unknown_type, unknown_port, swap_wire, mutate_expression,
             long_string, deep_nesting]


def mutate(diagram: str, seed: int) -> tuple[str, str]:
    """Case `seed` of `diagram` (a path under examples/): the mutated text and what was done.
    Seed k applies mutation kind k mod 13, with a chance of 1 in 4 after another one."""
    rng = random.Random(f"{diagram}:{seed}")
    text = (EXAMPLES / diagram).read_text()
    kinds = [MUTATIONS[seed % len(MUTATIONS)]]
    if rng.random() < 0.25:          # a second one before it (the huge texts last: the regular
        kinds.insert(0, rng.choice(MUTATIONS[:-3] + [mutate_expression]))  # expressions stay fast)
    done = []
    for kind in kinds:
        try:
            text, what = kind(text, rng)
        except NoTarget:            # an earlier mutation took away what this one changes
            kind = control_character
            text, what = kind(text, rng)
        done.append(f"{kind.__name__}: {what}")
    return text, "; ".join(done)


# ----------------------------------------------------------------------------- running `check`

class Hang(BaseException):
    """A check that ran past TIME_LIMIT (a BaseException: no `except Exception` swallows it)."""


def _alarm(signum, frame):
    raise Hang


def run_check(path: Path, seconds: float = TIME_LIMIT) -> tuple[int, str, str]:
    """`blocksim check PATH` in this process: exit code, stdout, stderr; Hang past `seconds`."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["check", str(path)])
            except SystemExit as stop:
                code = stop.code
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def verdict(code, out, err, folder: Path) -> str | None:
    """What is wrong with one check's outcome, or None: exit 0 or 1; no traceback; on stderr only
    `warning:` lines and, with exit 1, exactly one `error:` line naming a file of the case."""
    if code not in (0, 1):
        return f"exit code {code!r}"
    if "Traceback" in out + err:
        return "a traceback"
    lines = [line for line in err.split("\n") if line]      # a terminal breaks lines at \n only
    errors = [line for line in lines if line.startswith("error: ")]
    strays = [line for line in lines if not line.startswith(("error: ", "warning: "))]
    if strays:
        return f"stderr lines that are neither error nor warning: {strays[:3]!r}"
    if code == 0 and errors:
        return "error lines with exit 0"
    if code == 1:
        if len(errors) != 1:
            return f"{len(errors)} error lines with exit 1"
        message = errors[0][len("error: "):]
        if not (message.startswith(str(folder)) or message.startswith(str(ROOT / "blocksim"))):
            return f"the error does not start with the file it is about: {message[:300]!r}"
        if len(message) > 5000:         # a value is echoed shortened, not whole
            return f"an error line of {len(message)} characters: {message[:200]!r}..."
    return None


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A copy of examples/ (robot files, subsystems) beside which each mutation is written."""
    copy = tmp_path_factory.mktemp("fuzz") / "examples"
    shutil.copytree(EXAMPLES, copy)
    return copy


def check_case(folder: Path, diagram: str, seed: int) -> None:
    text, what = mutate(diagram, seed)
    path = folder / Path(diagram).with_name(f"{Path(diagram).stem}_fuzz.yaml")
    path.write_bytes(text.encode(errors="surrogateescape"))
    try:
        code, out, err = run_check(path)
    except Hang:
        pytest.fail(f"check did not end in {TIME_LIMIT} s; mutate({diagram!r}, {seed}): {what}")
    except Exception:                   # escaped main(): a user would see this traceback
        pytest.fail(f"a traceback; mutate({diagram!r}, {seed}): {what}\n{traceback.format_exc()}")
    problem = verdict(code, out, err, folder)
    assert problem is None, (f"{problem}; mutate({diagram!r}, {seed}): {what}\n"
                             f"stderr: {err[-3000:]}")


# Cases that fail today in modules of other owners, {(diagram, seed): reason}; each has its
# minimal reproducer below. None today.
KNOWN: dict[tuple[str, int], str] = {}
CASES = [pytest.param(d, seed, marks=pytest.mark.xfail(strict=True, reason=KNOWN[d, seed]))
         if (d, seed) in KNOWN else (d, seed)
         for d in DIAGRAMS for seed in range(CASES_PER_DIAGRAM)]


@pytest.mark.parametrize("diagram, seed", CASES)
def test_check_survives_a_mutation(folder, diagram, seed):
    check_case(folder, diagram, seed)


def test_the_mutations_are_reproducible():
    """The same case makes the same text, other seeds make others, and every kind is used."""
    assert mutate("mass_spring_damper.yaml", 7) == mutate("mass_spring_damper.yaml", 7)
    texts = {mutate("mass_spring_damper.yaml", seed)[0] for seed in range(26)}
    assert len(texts) == 26
    done = " ".join(mutate("two_link_foc.yaml", seed)[1] for seed in range(26))
    assert [kind.__name__ for kind in MUTATIONS if f"{kind.__name__}: " not in done] == []


# ----------------------------------------------------------------------------- through a process

SUBPROCESS_CASES = [("mass_spring_damper.yaml", 6), ("two_link_foc.yaml", 5),
                    ("bouncing_ball.yaml", 1), ("kr6_gravity_comp.yaml", 7)]


@pytest.mark.parametrize("diagram, seed", SUBPROCESS_CASES)
def test_a_mutation_through_the_command_line(folder, diagram, seed):
    """`python cli.py check` as a user runs it: exit 1 and one error line (each of these cases is
    an error), nothing else on stderr, no traceback."""
    text, what = mutate(diagram, seed)
    path = folder / Path(diagram).with_name(f"{Path(diagram).stem}_cli.yaml")
    path.write_bytes(text.encode(errors="surrogateescape"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", str(path)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1, f"mutate({diagram!r}, {seed}): {what}\n{done.stderr}"
    assert verdict(done.returncode, done.stdout, done.stderr, folder) is None, (what, done.stderr)
    assert done.stderr.startswith(f"error: {path}:"), done.stderr


# ----------------------------------------------------------------------------- what it found
# Minimal reproducers of what the mutations found, each with the message it gets now (a new one
# that fails in a module owned elsewhere is a strict xfail until that module is fixed).

BASE = """blocksim: 1
blocks:
  src: {type: Constant, value: 1.0}
  g: {type: Gain, gain: 2.0}
connections: [src -> g]
"""


def check_text(tmp_path, text, seconds=5) -> tuple[int, str]:
    """`check` of a diagram of a few blocks (well under 1 s when it works): exit code, stderr."""
    path = tmp_path / "d.yaml"
    path.write_text(text)
    try:
        code, out, err = run_check(path, seconds)
    except Hang:
        pytest.fail(f"check did not end in {seconds} s")
    problem = verdict(code, out, err, tmp_path)
    assert problem is None, f"{problem}: {err[:500]}"
    return code, err


KINDS = ("max_abs_error, rms_error, iae, ise, phase_lag, amplitude_ratio, overshoot, settling_time, "
         "peak, rms, energy_drift, final_value, detection_delay, false_alarms, event_times")
SOLVERS = "euler, heun, midpoint, rk3, rk4, rk23, dopri5, dop853, radau, bdf, lsoda"
LONG_V = f"'{'v' * 59}... (100,002 characters)"
"""How a value of 100,000 v's is quoted: its start and its length (with the quotes)."""


def test_a_block_type_longer_than_a_file_name(tmp_path):
    """A type longer than the system allows a file name (255) is an unknown type at its line."""
    code, err = check_text(tmp_path, BASE.replace("type: Gain", "type: " + "T" * 300))
    assert code == 1 and err.startswith(f"error: {tmp_path / 'd.yaml'}:4: block 'g': unknown "
                                        f"block type '{'T' * 59}... (302 characters); ")


@pytest.mark.parametrize("kind, quoted", [("[[1, 2]]", "[[1., 2.]]"), ("v" * 100_000, LONG_V)])
def test_a_metric_kind_that_is_a_list_or_very_long(tmp_path, kind, quoted):
    code, err = check_text(tmp_path, BASE + f"metrics: [{{name: m, kind: {kind}, signal: g.out}}]\n")
    assert (code, err) == (1, f"error: {tmp_path / 'd.yaml'}:6: metric kind {quoted} unknown; "
                              f"kinds: {KINDS} (docs/metrics.md)\n")


@pytest.mark.parametrize("solver, quoted", [("[rk4]", "['rk4']"), ("v" * 100_000, LONG_V)])
def test_a_solver_that_is_a_list_or_very_long(tmp_path, solver, quoted):
    code, err = check_text(tmp_path, BASE + f"simulation: {{solver: {solver}}}\n")
    assert (code, err) == (1, f"error: {tmp_path / 'd.yaml'}:6: unknown solver {quoted}; "
                              f"choose one of {SOLVERS}\n")


@pytest.mark.parametrize("key, value, message", [
    ("rtol", "v" * 100_000, f"simulation.rtol must be a positive number, got {LONG_V}"),
    ("atol", "[[1, 2], [3, 4]]", "simulation.atol must be a number >= 0, got [[1., 2.], [3., 4.]]"),
])
def test_a_tolerance_is_quoted_short_on_one_line(tmp_path, key, value, message):
    code, err = check_text(tmp_path, BASE + f"simulation: {{{key}: {value}}}\n")
    assert (code, err) == (1, f"error: {tmp_path / 'd.yaml'}:6: {message}\n")


def test_an_expression_over_a_long_string(tmp_path):
    code, err = check_text(tmp_path, BASE.replace("gain: 2.0", "gain: '${k * ones(2)}'")
                           .replace("blocks:", f"parameters:\n  k: {'v' * 100_000}\nblocks:"))
    assert (code, err) == (1, f"error: {tmp_path / 'd.yaml'}:6: block 'g': parameter 'gain': "
                              f"cannot evaluate 'k * ones(2)': * needs numbers, not the string "
                              f"{LONG_V}\n")


def test_an_unknown_long_name_in_an_expression(tmp_path):
    code, err = check_text(tmp_path, BASE.replace("gain: 2.0", "gain: '${" + "x" * 5000 + " + 1}'"))
    assert code == 1 and err.startswith(f"error: {tmp_path / 'd.yaml'}:4: block 'g': parameter "
                                        f"'gain': unknown name '{'x' * 59}... (5,002 characters) "
                                        f"in '{'x' * 200}... (5,004 characters)'")


def test_a_stop_time_of_1e308(tmp_path):
    code, err = check_text(tmp_path, BASE + "simulation: {stop_time: 1e308, solver: dopri5}\n"
                                            "log: {signals: [g.out], every: 0.01}\n")
    assert code == 1 and "BLOCKSIM_MAX_LOG_SAMPLES" in err


def test_a_log_interval_of_1e308(tmp_path):
    """An interval longer than the run logs its start and its stop (the grid ends at stop)."""
    code, err = check_text(tmp_path, BASE + "log: {signals: [g.out], every: 1e308}\n")
    assert (code, err) == (0, "")
    assert log_times(Fraction(0), Fraction(10), Fraction(1e308)).tolist() == [0.0, 10.0]


def test_a_log_interval_of_1e_320(tmp_path):
    code, err = check_text(tmp_path, BASE + "log: {signals: [g.out], every: 1e-320}\n")
    assert code == 1 and "BLOCKSIM_MAX_LOG_SAMPLES" in err


@pytest.mark.parametrize("key", ["reference", "signal"])
def test_a_metric_signal_that_is_a_matrix(tmp_path, key):
    item = {"signal": "g.out", "reference": "src.out", key: "[[1, 2], [3, 4]]"}
    code, err = check_text(tmp_path, BASE + "log: {signals: [g.out, src.out]}\nmetrics: [{name: m, "
                                            "kind: max_abs_error, signal: %(signal)s, reference: "
                                            "%(reference)s}]\n" % item)
    assert (code, err) == (1, f"error: {tmp_path / 'd.yaml'}:7: metric 'm': {key} must name a "
                              f"logged signal as 'block.port', got [[1., 2.], [3., 4.]]\n")


@pytest.mark.parametrize("gain, message", [
    ("$" + "v" * 100_000, f"unknown parameter {LONG_V} in '${'v' * 58}... (100,003 characters)"),
    ("'$(" + "v" * 100_000 + "'", f"'$({'v' * 57}... (100,004 characters) is neither a parameter "
                                  "$name nor an expression ${...}; write ${...}"),
    ("'${" + "f" * 5000 + "(1)}'", f"unknown function '{'f' * 59}... (5,002 characters) in "
                                   f"'{'f' * 200}... (5,003 characters)' (functions: "),
    ("'${__" + "f" * 5000 + "(1)}'", f"calling '__{'f' * 57}... (5,004 characters) is not allowed "
                                     "(names starting with '__' are forbidden) in "),
])
def test_a_long_name_in_a_parameter_value_is_quoted_short(tmp_path, gain, message):
    code, err = check_text(tmp_path, BASE.replace("gain: 2.0", f"gain: {gain}"))
    assert code == 1 and err.startswith(f"error: {tmp_path / 'd.yaml'}:4: block 'g': parameter "
                                        f"'gain': {message}"), err[:500]
