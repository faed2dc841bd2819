"""Tests of ${...} expressions, $name references and workspace evaluation (blocksim/expressions/evaluate.py)."""
import math
import time

import numpy as np
import pytest

from blocksim.expressions.evaluate import (Resolved, evaluate_expression, evaluate_workspace, names_in,
                                          references, resolve_value)
from blocksim.diagram.yaml_loader import parse_yaml_text
from blocksim.errors import ExpressionError, ParameterError, SourceLoc

NAMES = {"Kp": np.array([400.0, 200.0]), "n": 2, "A": np.array([[1.0, 2.0], [3.0, 4.0]]), "robot": "two_link"}


def ev(text, names=NAMES):
    return evaluate_expression(text, names)


# -- arithmetic ---------------------------------------------------------------------------------

def test_scalar_arithmetic_and_constants():
    assert ev("2*pi*5") == pytest.approx(10 * math.pi)
    assert ev("1 + 2 * 3 ** 2") == 19
    assert ev("-(3 - 5) / 4") == 0.5
    assert ev("e") == pytest.approx(math.e)
    assert ev("-inf") == -math.inf


def test_integer_results_stay_integers():
    assert ev("7 // 2") == 3 and isinstance(ev("7 // 2"), int)
    assert ev("2 ** 10") == 1024 and isinstance(ev("2 ** 10"), int)
    assert ev("7 % 3") == 1
    assert ev("7 / 2") == 3.5


def test_lists_are_float_arrays_and_arithmetic_is_elementwise():
    np.testing.assert_array_equal(ev("[1, 2] * 3"), [3.0, 6.0])
    assert ev("[1, 2]").dtype == float
    np.testing.assert_array_equal(ev("Kp / 4"), [100.0, 50.0])
    np.testing.assert_array_equal(ev("Kp + [1, 2]"), [401.0, 202.0])
    np.testing.assert_allclose(ev("sin([0, pi / 2])"), [0.0, 1.0], atol=1e-15)
    np.testing.assert_array_equal(ev("abs([-1, 2])"), [1.0, 2.0])


def test_matrices_products_and_indexing():
    np.testing.assert_array_equal(ev("[[1, 2], [3, 4]] @ [1, 1]"), [3.0, 7.0])
    np.testing.assert_array_equal(ev("A @ A"), NAMES["A"] @ NAMES["A"])
    np.testing.assert_allclose(ev("inv(A) @ A"), np.eye(2), atol=1e-12)
    np.testing.assert_array_equal(ev("transpose(A)"), NAMES["A"].T)
    np.testing.assert_array_equal(ev("diag(Kp)"), np.diag([400.0, 200.0]))
    assert ev("A[1, 0]") == 3.0
    np.testing.assert_array_equal(ev("A[:, 1]"), [2.0, 4.0])
    assert ev("Kp[-1]") == 200.0
    np.testing.assert_array_equal(ev("eye(n) * 2"), 2 * np.eye(2))
    np.testing.assert_array_equal(ev("zeros(n + 1)"), np.zeros(3))
    assert ev("[[1, 2], [3, 4]]").shape == (2, 2)


def test_comparisons_conditionals_and_functions():
    assert ev("1 if n > 1 else 2") == 1
    assert ev("1 < n <= 2") is True
    np.testing.assert_array_equal(ev("Kp > 300"), [True, False])
    np.testing.assert_array_equal(ev("where(Kp > 300, 1, 0)"), [1.0, 0.0])
    assert ev("max(Kp)") == 400.0
    np.testing.assert_array_equal(ev("min(Kp, 300)"), [300.0, 200.0])
    assert ev("floor(2.7)") == 2 and isinstance(ev("floor(2.7)"), int)
    assert ev("round(2.567, 2)") == pytest.approx(2.57)
    assert ev("norm([3, 4])") == 5.0
    assert ev("atan2(1, 1)") == pytest.approx(math.pi / 4)
    assert ev("hypot(3, 4)") == 5.0
    assert ev("degrees(pi)") == pytest.approx(180.0)
    np.testing.assert_array_equal(ev("sum(A, axis=0)"), [4.0, 6.0])
    assert ev("mean(Kp)") == 300.0
    assert ev("len(Kp)") == 2


def test_only_the_taken_branch_is_evaluated():
    assert ev("1 if n > 0 else 1 / 0") == 1


# -- refused constructs -------------------------------------------------------------------------

@pytest.mark.parametrize("text, says", [
    ("__import__('os')", "'__import__' is not allowed"),
    ("__builtins__", "'__builtins__' is not allowed"),
    ("().__class__", "attribute access"),
    ("Kp.sum()", "attribute access"),
    ("(lambda: 1)()", "lambda is not allowed"),
    ("lambda x: x", "lambda is not allowed"),
    ("[k for k in Kp]", "comprehensions are not allowed"),
    ("sum(k for k in Kp)", "comprehensions are not allowed"),
    ("'abc'", "strings are not allowed"),
    ("{1: 2}", "mappings"),
    ("(x := 3)", "assignment"),
    ("exec('1')", "unknown function 'exec'"),
    ("open('f')", "unknown function 'open'"),
    ("Kp[0](1)", "only calls to named functions"),
    ("sum(Kp, dtype=int)", "does not take dtype="),
    ("sin(1, 2)", "sin() takes 1 argument, got 2"),
    ("1 << 2", "bitwise operators are not allowed"),
    ("n in Kp", "'in', 'is'"),
])
def test_forbidden_constructs_are_refused_with_a_reason(text, says):
    with pytest.raises(ExpressionError) as err:
        ev(text)
    assert says in str(err.value)
    assert f"in '{text}'" in str(err.value)


def test_import_statement_is_not_an_expression():
    with pytest.raises(ExpressionError, match="no statements such as import"):
        ev("import os")


def test_unknown_function_suggests_the_closest_allowed_one():
    with pytest.raises(ExpressionError, match=r"unknown function 'sn' in 'sn\(1\)'; did you mean 'sin'\?"):
        ev("sn(1)")


def test_unknown_name_suggests_the_closest_parameter():
    with pytest.raises(ExpressionError, match=r"unknown name 'Kq' in 'Kq / 4'; did you mean 'Kp'\?"):
        ev("Kq / 4")


@pytest.mark.parametrize("text, says", [
    ("1 / 0", "division by zero"),
    ("log(0)", "division by zero"),
    ("sqrt(-1)", "invalid value"),
    ("exp(1000)", "overflow"),
    ("[[1, 2], [3]]", "rows of different lengths"),
    ("Kp[5]", "out of range"),
    ("Kp[0.5]", "must be an integer"),
    ("robot + 1", "needs numbers, not the string 'two_link'"),
    ("1 if Kp else 0", "a condition must be one true/false value"),
    ("2 @ 3", "@ multiplies matrices"),
    ("2 +", "malformed expression"),
])
def test_bad_arithmetic_is_an_expression_error(text, says):
    with pytest.raises(ExpressionError, match=None) as err:
        ev(text)
    assert says in str(err.value)


def test_huge_integer_powers_do_not_hang():
    started = time.perf_counter()
    with pytest.raises(ExpressionError, match="overflow"):
        ev("2 ** 10 ** 10")
    assert time.perf_counter() - started < 1.0


def test_names_in_lists_parameters_but_not_functions():
    assert names_in("sin(wn * t) + Kp[0]") == {"wn", "t", "Kp"}
    assert names_in("2 +") == set()


# -- values: $name, ${...}, lists, mappings -----------------------------------------------------

WHERE = SourceLoc("d.yaml", 3)


def resolve(value, names=NAMES):
    return resolve_value(value, names, WHERE, "parameter 'x'")


def test_reference_and_expression_strings():
    np.testing.assert_array_equal(resolve("$Kp"), [400.0, 200.0])
    np.testing.assert_array_equal(resolve("${Kp / 4}"), [100.0, 50.0])
    assert resolve("$pi") == math.pi
    assert resolve("two_link") == "two_link"
    assert resolve("$$5") == "$5"
    assert resolve(True) is True and resolve(3) == 3 and resolve(None) is None


def test_a_reference_is_a_copy():
    value = resolve("$Kp")
    value[0] = 0.0
    assert NAMES["Kp"][0] == 400.0


def test_lists_of_numbers_become_arrays_elementwise():
    value = resolve([1, "$n", "${n * 2}"])
    assert isinstance(value, np.ndarray) and value.dtype == float
    np.testing.assert_array_equal(value, [1.0, 2.0, 4.0])
    np.testing.assert_array_equal(resolve([[1, 2], "${[3, n + 2]}"]), [[1.0, 2.0], [3.0, 4.0]])
    assert resolve(["a.q", "b.q"]) == ["a.q", "b.q"]
    assert resolve({"m": "$n", "inner": {"k": "${n + 1}"}}) == {"m": 2, "inner": {"k": 3}}
    assert resolve(Resolved("$n")) == "$n"


def test_ragged_rows_are_a_parameter_error_at_the_line():
    with pytest.raises(ParameterError, match=r"d.yaml:3: parameter 'x': rows of different lengths"):
        resolve([[1, 2], [3]])


def test_a_slash_after_a_reference_suggests_an_expression():
    with pytest.raises(ExpressionError, match=r"d.yaml:3: parameter 'x': '\$Kp/4' is neither .* write \$\{Kp/4\}"):
        resolve("$Kp/4")


def test_unknown_reference_suggests_and_locates():
    with pytest.raises(ExpressionError, match=r"d.yaml:3: parameter 'x': unknown parameter 'Kpp' .*did you mean 'Kp'"):
        resolve("$Kpp")


def test_errors_inside_a_yaml_list_point_at_the_item_line():
    value = parse_yaml_text("x:\n  - 1\n  - ${Kq}\n", "d.yaml")["x"]
    with pytest.raises(ExpressionError, match=r"^d.yaml:3: parameter 'x'\[1\]: unknown name 'Kq'"):
        resolve_value(value, NAMES, SourceLoc("d.yaml", 1), "parameter 'x'")


def test_references_finds_names_in_nested_values():
    assert references(["$a", {"k": "${b + sin(c)}"}, "$$d", 3]) == {"a", "b", "c"}


# -- workspaces ---------------------------------------------------------------------------------

def workspace(text):
    raw = parse_yaml_text(text, "w.yaml")
    return evaluate_workspace(raw, raw.loc)


def test_workspace_parameters_evaluate_in_dependency_order():
    values = workspace("wn: ${2 * pi * f}\nKd: ${2 * zeta * wn}\nzeta: 0.7\nf: 5\n")
    assert list(values) == ["wn", "Kd", "zeta", "f"]
    assert values["Kd"] == pytest.approx(2 * 0.7 * 2 * math.pi * 5)


def test_a_workspace_cycle_names_it_and_its_line():
    with pytest.raises(ExpressionError) as err:
        workspace("c: 1\na: ${b + 1}\nb: ${2 * a}\n")
    assert str(err.value).startswith("w.yaml:2: ")
    assert "a -> b -> a" in str(err.value)


def test_a_parameter_using_itself_is_a_cycle():
    with pytest.raises(ExpressionError, match=r"w.yaml:1: .*a -> a"):
        workspace("a: ${a + 1}\n")


def test_an_unknown_name_in_the_workspace_suggests_a_parameter_not_yet_evaluated():
    with pytest.raises(ExpressionError, match=r"w.yaml:1: parameter 'b': unknown name 'zetta' .*did you mean 'zeta'"):
        workspace("b: ${zetta * 2}\nzeta: 0.7\n")


def test_one_table_serves_parameters_and_function_blocks_with_the_same_numbers():
    """Every function the table marks `scalar` compiles in a Function block's expression, and
    its run-time stack program gives the numbers of its ${...} (numpy) form."""
    import ast

    from blocksim.expressions.functions import FUNCTIONS
    from blocksim.expressions.runtime import (BINARY_OPS, RUNTIME_FUNCTIONS, UNARY_OPS,
                                              ExpressionCompiler, check_expression, run_program)

    rng = np.random.default_rng(7)
    u1, u2 = rng.uniform(0.1, 0.9, (1, 3)), rng.uniform(0.1, 0.9, (1, 3))
    calls = {"unary": "{f}(u1)", "elementwise": "{f}(u1, u2)", "reduction": "{f}(u1)"}
    assert set(RUNTIME_FUNCTIONS) == {n for n, f in FUNCTIONS.items() if f.scalar}
    for name in RUNTIME_FUNCTIONS:
        form = FUNCTIONS[name].scalar
        text = "dot(u1, u2)" if name == "dot" else calls[form].format(f=name)
        assert name in (UNARY_OPS if form == "unary" else
                        BINARY_OPS if form == "elementwise" else ("sum", "norm", "dot"))
        variables = {"u1": 0, "u2": 1}
        tree = check_expression(text, variables, "f")
        compiler = ExpressionCompiler(text, tree, variables, [3, 3], ["in1", "in2"], "f")
        width = len(compiler.elements)
        code, consts, depth = compiler.program(width)
        y = np.zeros((1, width))
        run_program(0.0, (u1, u2), code, consts, np.zeros((1, 0)), np.zeros(depth), y)
        args = [u1[0], u2[0]] if text.count("u2") else [u1[0]]
        expected = np.atleast_1d(np.asarray(FUNCTIONS[name].apply(*args), dtype=float))
        np.testing.assert_allclose(y[0], expected, rtol=1e-15, atol=0, err_msg=text)
        assert isinstance(ast.parse(text, mode="eval"), ast.Expression)


# -- workspace parameters in a Function block ---------------------------------------------------

DECAY = """\
blocksim: 1
name: decay x' = -k x through a Function of a workspace parameter
parameters: {k: 2.0, gains: [1.0, 3.0]}
blocks:
  x: {type: Integrator, x0: [1.0, 1.0]}
  f: {type: Function, expr: "-k * gains * u"}
connections: [x -> f, f -> x]
simulation: {stop_time: 1.0, solver: dopri5, rtol: 1.0e-11, atol: 1.0e-13}
log: {every: 0.1}
"""


def test_a_function_reads_workspace_parameters_as_values_of_the_run():
    """x' = -k g_i x: x_i = exp(-k g_i t), for the file's k, a --set k, every batch member's k
    and new values between runs of one Simulator (nothing compiled again)."""
    import blocksim
    from modecheck import assert_same
    d = blocksim.load(DECAY)
    t = np.arange(11) * 0.1

    def exact(k):
        return np.exp(-k * np.array([1.0, 3.0]) * t[:, None])
    np.testing.assert_allclose(blocksim.simulate(d)["x.out"], exact(2.0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(blocksim.simulate(blocksim.load(DECAY, set={"parameters.k": 0.5}))
                               ["x.out"], exact(0.5), rtol=1e-9, atol=1e-12)
    batch = blocksim.simulate(d, batch={"parameters.k": [0.5, 1.0, 4.0]})["x.out"]
    for m, k in enumerate([0.5, 1.0, 4.0]):
        np.testing.assert_allclose(batch[m], exact(k), rtol=1e-9, atol=1e-12)
    sim = blocksim.Simulator(d)
    sim.set_parameters({"parameters.k": 3.0})
    np.testing.assert_allclose(sim.run()["x.out"], exact(3.0), rtol=1e-9, atol=1e-12)
    compiled = blocksim.simulate(blocksim.load(DECAY, set={"simulation.mode": "compiled"}),
                                 batch={"parameters.k": [0.5, 4.0]})
    assert_same(compiled, blocksim.simulate(d, batch={"parameters.k": [0.5, 4.0]}), 1e-12)


@pytest.mark.parametrize("parameters, expr, message", [
    ("{t: 1.0}", "-t * u", r"'t' is the time of the Function and also a workspace parameter"),
    ("{u: 1.0}", "-u", r"'u' is an input of the Function and also a workspace parameter"),
    ("{k: two}", "-k * u", r"reads workspace parameter 'k', which is not a number"),
    ("{k: 2.0}", "-kk * u", r"unknown name 'kk' \(did you mean 'k'\?\)"),
])
def test_a_workspace_name_a_function_cannot_read_is_refused_at_its_line(parameters, expr, message):
    import blocksim
    text = DECAY.replace("{k: 2.0, gains: [1.0, 3.0]}", parameters).replace(
        '"-k * gains * u"', f'"{expr}"')
    line = text.splitlines().index(f'  f: {{type: Function, expr: "{expr}"}}') + 1
    with pytest.raises(Exception, match=message) as err:
        blocksim.simulate(blocksim.load(text))
    assert f"<text>:{line}" in str(err.value) and "block 'f'" in str(err.value)
