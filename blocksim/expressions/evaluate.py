"""Parameter values of a diagram: `$name` references and `${...}` arithmetic, parsed with `ast` and
evaluated by walking the tree over numbers, numpy arrays and the functions of
expressions.functions (the one table, shared with the Function block's run-time expressions)."""
from __future__ import annotations

import ast
import functools
import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from blocksim.errors import ExpressionError, ParameterError, SourceLoc, did_you_mean
from blocksim.expressions.functions import CONSTANTS, FUNCTIONS, as_int, describe, plain
from blocksim.reading.limits import LimitError, check, limit, shorten, shown
from blocksim.expressions.parsing import parse_expression, recursion_for, too_deep


_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_EXPRESSION = re.compile(r"^\$\{(.*)\}$", re.S)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Resolved:
    """A value that is already evaluated (a mask value from the parent diagram, an evaluated override):
    resolve_value returns it as it is instead of reading `$` strings in it again."""

    value: Any


# ---------------------------------------------------------------------------------------------
# values and functions
# ---------------------------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def _is_numeric(value: Any) -> bool:
    """A number, a bool or a numeric/bool array: something arithmetic accepts."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biuf"
    return isinstance(value, (int, float, bool, np.number, np.bool_))


def as_array(items: list[Any]) -> np.ndarray:
    """Numbers -> 1-D float array; equal-shaped arrays -> one array with a new leading axis."""
    if not items:
        return np.zeros(0)
    if all(_is_number(item) for item in items):
        return np.array(items, dtype=float)
    if all(isinstance(item, np.ndarray) for item in items):
        shapes = {item.shape for item in items}
        if len(shapes) != 1:
            lengths = ", ".join(str(item.shape[0]) if item.ndim == 1 else str(item.shape) for item in items)
            raise ValueError(f"rows of different lengths ({lengths}) do not make a matrix")
        return np.array(items, dtype=float)
    raise ValueError("a list must hold only numbers, or only rows of numbers")



_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.MatMult: operator.matmul}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.MatMult: "@"}
_FORBIDDEN = {
    ast.Attribute: "attribute access (x.y) is not allowed", ast.Lambda: "lambda is not allowed",
    ast.ListComp: "comprehensions are not allowed", ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed", ast.GeneratorExp: "comprehensions are not allowed",
    ast.Dict: "mappings ({...}) are not allowed", ast.Set: "sets ({...}) are not allowed",
    ast.JoinedStr: "strings are not allowed", ast.NamedExpr: "assignment (:=) is not allowed",
    ast.Starred: "* unpacking is not allowed", ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed", ast.YieldFrom: "yield is not allowed",
}
_FLOATING_POINT = {"divide": "division by zero", "overflow": "overflow (the result is too large)",
                   "invalid": "invalid value (such as sqrt or log of a negative number, or inf - inf)"}
_LARGEST_INT_POWER = 4096
"""int ** int with a larger result (in bits) is done in floating point, so it cannot hang."""

_FLOAT_BITS = 1024
"""An integer of more bits than this is beyond the largest float (1.8e308): an overflow."""

_SHOWN = 200
"""Characters of an expression that a message quotes (a longer one is cut, with its length)."""


def _whole(value: int) -> int:
    """An exact integer result, refused beyond the float range (every value becomes a float)."""
    if abs(value).bit_length() > _FLOAT_BITS:
        raise OverflowError("the integer is too large for a number (beyond 1.8e308)")
    return value


def _broadcast_elements(*values: Any) -> int | None:
    """Elements of the array that elementwise arithmetic on `values` makes (None: the shapes do
    not broadcast, and the operation says so itself)."""
    try:
        return math.prod(np.broadcast_shapes(*(np.shape(v) for v in values)))
    except ValueError:
        return None


def _matmul_elements(a: Any, b: Any) -> int | None:
    """Elements of a @ b (numpy's rules: 1-D operands promoted, leading axes broadcast)."""
    sa, sb = np.shape(a), np.shape(b)
    if not sa or not sb:
        return None
    try:
        lead = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        return None
    return math.prod(lead) * (sa[-2] if len(sa) > 1 else 1) * (sb[-1] if len(sb) > 1 else 1)


# ---------------------------------------------------------------------------------------------
# expressions
# ---------------------------------------------------------------------------------------------

def _parse(text: str) -> ast.Expression:
    """The syntax tree of an expression (cached: the same text is often evaluated many times),
    within the length and depth limits (parsing.parse_expression) as they are now."""
    return _parse_within(text, limit("expression_chars"), limit("expression_depth"))


@functools.lru_cache(maxsize=65536)
def _parse_within(text: str, chars: int, depth: int) -> ast.Expression:
    """parse_expression(text), cached per limits (a text read under raised limits is checked
    again when they are lowered)."""
    return parse_expression(text)


def _syntax_message(text: str, err: SyntaxError) -> str:
    message = f"malformed expression '{shorten(text, _SHOWN)}': {err.msg}"
    if "$" in text:
        message += "; inside ${...} write parameter names without $ (and use one ${...} around all of it)"
    elif re.match(r"\s*(import|from)\b", text) or re.search(r"(?<![=!<>])=(?!=)", text):
        message += "; only an expression is allowed, no statements such as import or ="
    return message


def names_in(text: str) -> frozenset[str]:
    """The parameter names an expression reads (not the functions it calls); empty if it does
    not parse or is beyond a limit (evaluating it says why)."""
    try:
        tree = _parse(text)
    except (SyntaxError, LimitError):
        return frozenset()
    return _names_in_tree(tree)


@functools.lru_cache(maxsize=65536)
def _names_in_tree(tree: ast.Expression) -> frozenset[str]:
    """names_in of a parsed tree (cached with the tree: a text written on many blocks, or
    evaluated many times, is walked once)."""
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return frozenset(node.id for node in ast.walk(tree)
                     if isinstance(node, ast.Name) and id(node) not in called)


class _Evaluator:
    """Walks one expression's tree; every node kind not handled here is refused."""

    def __init__(self, text: str, names: Mapping[str, Any], known: Iterable[str]):
        self.text = shorten(text, _SHOWN)
        self.names = names
        self.known = known            # only an unknown name reads it (for the hint)
        self.max_elements = limit("array_elements")

    def refuse(self, what: str, hint: str = "") -> ExpressionError:
        return ExpressionError(f"{what} in '{self.text}'{hint}")

    def check_elements(self, elements: int | None, node: ast.AST) -> None:
        """Refuse an array of more elements than the limit, before it is made."""
        if elements is not None and elements > self.max_elements:
            check("array_elements", elements,
                  f"{shorten(ast.unparse(node), 60)} would make an array of")

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise self.refuse(_FORBIDDEN.get(type(node), f"'{type(node).__name__}' syntax is not allowed"))
        return method(node)

    def visit_Expression(self, node: ast.Expression) -> Any:
        return self.visit(node.body)

    def visit_Constant(self, node: ast.Constant) -> Any:
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool):
            return _whole(value)
        if isinstance(value, (bool, float)):
            return value
        if isinstance(value, (str, bytes)):
            raise self.refuse("strings are not allowed")
        raise self.refuse(f"{shown(value)} is not allowed")

    def visit_Name(self, node: ast.Name) -> Any:
        name = node.id
        if name.startswith("__"):
            raise self.refuse(f"{shown(name)} is not allowed (names starting with '__' are forbidden)")
        if name in self.names:
            value = self.names[name]
            return value.copy() if isinstance(value, np.ndarray) else value
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            raise self.refuse(f"'{name}' is a function; call it as {name}(...)")
        known = set(self.known) | set(self.names) | set(CONSTANTS)
        raise self.refuse(f"unknown name {shown(name)}", did_you_mean(name, known, clause=True))

    def visit_List(self, node: ast.List | ast.Tuple) -> np.ndarray:
        return as_array([self.visit(item) for item in node.elts])

    visit_Tuple = visit_List

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return not self.truth(operand)
        if type(node.op) not in _UNARY:
            raise self.refuse("the operator ~ is not allowed")
        self.require_numeric(operand, "-" if isinstance(node.op, ast.USub) else "+")
        return plain(_UNARY[type(node.op)](operand))

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        if type(node.op) not in _BINARY:
            raise self.refuse("bitwise operators are not allowed")
        left, right = self.visit(node.left), self.visit(node.right)
        symbol = _SYMBOL[type(node.op)]
        self.require_numeric(left, symbol)
        self.require_numeric(right, symbol)
        func = _BINARY[type(node.op)]
        if isinstance(node.op, ast.MatMult) and (np.ndim(left) == 0 or np.ndim(right) == 0):
            raise ValueError("@ multiplies matrices and vectors; use * with a single number")
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            self.check_elements(_matmul_elements(left, right) if isinstance(node.op, ast.MatMult)
                                else _broadcast_elements(left, right), node)
        if type(left) is int and type(right) is int:
            if not (isinstance(node.op, ast.Pow) and right > 0
                    and right * max(abs(left), 1).bit_length() > _LARGEST_INT_POWER):
                result = func(left, right)
                if isinstance(result, complex):
                    raise ValueError("the result is a complex number")
                return _whole(result) if isinstance(result, int) else result
        return plain(func(np.float64(left) if np.ndim(left) == 0 else left,
                          np.float64(right) if np.ndim(right) == 0 else right))

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                raise self.refuse("'in', 'is' and their negations are not allowed")
            right = self.visit(right_node)
            self.require_numeric(left, "comparison")
            self.require_numeric(right, "comparison")
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
                self.check_elements(_broadcast_elements(left, right), node)
            outcome = _COMPARE[type(op)](left, right)
            result = outcome if result is True else np.logical_and(result, outcome)
            left = right
        return plain(result)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        for item in node.values:
            value = self.visit(item)
            if self.truth(value) != is_and:
                return value
        return value

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if self.truth(self.visit(node.test)) else self.visit(node.orelse)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        value = self.visit(node.value)
        if not isinstance(value, np.ndarray):
            raise ValueError(f"only lists and arrays can be indexed, not {describe(value)}")
        index = self.index(node.slice)
        try:
            return plain(value[index])
        except IndexError:
            raise ValueError(f"index {ast.unparse(node.slice)} is out of range for shape {value.shape}") from None

    def index(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Slice):
            return slice(*(None if part is None else as_int(self.visit(part), "a slice bound")
                           for part in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(self.index(item) for item in node.elts)
        return as_int(self.visit(node), "an index")

    def visit_Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            raise self.refuse(_FORBIDDEN.get(type(node.func), "only calls to named functions such as sin(x) are allowed"))
        name = node.func.id
        if name.startswith("__"):
            raise self.refuse(f"calling {shown(name)} is not allowed (names starting with '__' are forbidden)")
        function = FUNCTIONS.get(name)
        if function is None:
            hint = did_you_mean(name, FUNCTIONS, clause=True)
            raise self.refuse(f"unknown function {shown(name)}", f"{hint} "
                              f"(functions: {', '.join(sorted(FUNCTIONS))})")
        count = len(node.args)
        if count < function.min_args or (function.max_args is not None and count > function.max_args):
            expected = (str(function.min_args) if function.min_args == function.max_args else
                        f"{function.min_args} or more" if function.max_args is None else
                        f"{function.min_args} to {function.max_args}")
            raise self.refuse(f"{name}() takes {expected} argument{'s' * (expected != '1')}, got {count}")
        keywords = {}
        for keyword in node.keywords:
            if keyword.arg not in function.keywords:
                allowed = f" (it takes {', '.join(k + '=' for k in function.keywords)})" if function.keywords else ""
                given = "**" if keyword.arg is None else shorten(keyword.arg) + "="
                raise self.refuse(f"{name}() does not take {given}{allowed}")
            keywords[keyword.arg] = self.visit(keyword.value)
        args = [self.visit(arg) for arg in node.args]
        for arg in args:
            self.require_numeric(arg, f"{name}()")
        if function.elements is not None:
            self.check_elements(function.elements(*args, **keywords), node)
        result = plain(function.apply(*args, **keywords))
        if isinstance(result, np.ndarray) and result.dtype.kind in "iu":
            return result.astype(float)
        return result

    def require_numeric(self, value: Any, operation: str) -> None:
        if not _is_numeric(value):
            raise ValueError(f"{operation} needs numbers, not {describe(value)}")

    def truth(self, value: Any) -> bool:
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise ValueError("a condition must be one true/false value, not an array "
                                 "(use where(cond, a, b) elementwise)")
            value = value.reshape(())[()]
        self.require_numeric(value, "a condition")
        return bool(value)


def evaluate_expression(text: str, names: Mapping[str, Any], known: Iterable[str] = ()) -> Any:
    """Evaluate the inside of ${...} over `names` (evaluated parameters) and CONSTANTS.

    Returns a Python number/bool or a numpy array. Raises ExpressionError (without a location:
    callers add it) for bad syntax, anything beyond arithmetic, unknown names (suggesting the
    closest of `names`, `known` and the constants) and failed arithmetic.
    """
    try:
        tree = _parse(text)
    except SyntaxError as err:
        raise ExpressionError(_syntax_message(text, err)) from None
    try:
        with np.errstate(divide="raise", over="raise", invalid="raise"), \
                recursion_for(limit("expression_depth")):
            return _Evaluator(text, names, known).visit(tree)
    except (ExpressionError, LimitError):
        raise
    except ZeroDivisionError:
        raise ExpressionError(f"division by zero in '{shorten(text, _SHOWN)}'") from None
    except FloatingPointError as err:
        kind = next((meaning for word, meaning in _FLOATING_POINT.items() if word in str(err)),
                    "invalid arithmetic")
        raise ExpressionError(f"{kind} in '{shorten(text, _SHOWN)}'") from None
    except RecursionError:
        raise too_deep(text) from None
    except (ValueError, TypeError, ArithmeticError, IndexError, np.linalg.LinAlgError) as err:
        raise ExpressionError(f"cannot evaluate '{shorten(text, _SHOWN)}': {err}") from None


# ---------------------------------------------------------------------------------------------
# parameter values ($name, ${...}, lists, mappings)
# ---------------------------------------------------------------------------------------------

def _item_loc(container: Any, key: Any, default: SourceLoc | None) -> SourceLoc | None:
    loc = getattr(container, "loc", None)
    return loc(key) if loc is not None else default


def resolve_value(value: Any, names: Mapping[str, Any], where: SourceLoc | None, what: str,
                  known: Iterable[str] = ()) -> Any:
    """A parameter value as the simulation uses it.

    `$name` (the whole string) is a workspace parameter (or constant); `${expr}` an expression;
    `$$text` the literal string `$text`; other strings stay strings. Lists are resolved item by
    item and, when they hold only numbers (or equal rows of numbers), become float arrays (1-D, 2-D);
    mappings are resolved value by value into plain dicts. `what` names the item in messages
    ("parameter 'Ki'"); errors carry `where`, refined to the item's own line inside YAML lists/maps.
    """
    if isinstance(value, Resolved):
        return value.value
    if isinstance(value, str):
        return _resolve_string(value, names, where, what, known)
    if isinstance(value, np.ndarray):
        return value.astype(float) if value.dtype.kind in "iu" else value.copy()
    if isinstance(value, (list, tuple)):
        items = [resolve_value(item, names, _item_loc(value, index, where), f"{what}[{index}]", known)
                 for index, item in enumerate(value)]
        if items and not all(_is_number(item) or isinstance(item, np.ndarray) for item in items):
            return items
        try:
            return as_array(items)
        except ValueError as err:
            raise ParameterError(f"{what}: {err}", where=where) from None
    if isinstance(value, dict):
        return {key: resolve_value(item, names, _item_loc(value, key, where), f"{what}.{key}", known)
                for key, item in value.items()}
    return plain(value)


def _resolve_string(text: str, names: Mapping[str, Any], where: SourceLoc | None, what: str,
                    known: Iterable[str]) -> Any:
    if not text.startswith("$"):
        return text
    if text.startswith("$$"):
        return text[1:]
    reference = _REFERENCE.match(text)
    if reference:
        name = reference.group(1)
        if name in names:
            value = names[name]
            return value.copy() if isinstance(value, np.ndarray) else value
        if name in CONSTANTS:
            return CONSTANTS[name]
        candidates = set(known) | set(names) | set(CONSTANTS)
        hint = did_you_mean(name, candidates, clause=True)
        raise ExpressionError(f"{what}: unknown parameter {shown(name)} in {shown(text)}{hint}", where=where)
    expression = _EXPRESSION.match(text)
    if expression is None:
        hint = ("; close it with }" if text.startswith("${") else
                f"; write ${{{text[1:]}}}" if len(text) <= _SHOWN else "; write ${...}")
        raise ExpressionError(f"{what}: {shown(text)} is neither a parameter $name nor an expression ${{...}}{hint}",
                              where=where)
    try:
        return evaluate_expression(expression.group(1), names, known)
    except ExpressionError as err:
        raise ExpressionError(f"{what}: {err.message}", where=where) from None
    except LimitError as err:
        raise LimitError(f"{what}: {err.message}", limit=err.limit, where=where) from None


def references(value: Any) -> set[str]:
    """The names a raw parameter value reads through `$name` and `${...}` (for dependency order)."""
    if isinstance(value, str):
        reference = _REFERENCE.match(value)
        if reference:
            return {reference.group(1)}
        expression = _EXPRESSION.match(value)
        return names_in(expression.group(1)) if expression and not value.startswith("$$") else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(references(item) for item in value))
    if isinstance(value, dict):
        return set().union(*(references(item) for item in value.values()))
    return set()


def evaluate_workspace(raw: Mapping[str, Any], where_of: Callable[[str], SourceLoc | None],
                       label: str = "parameter") -> dict[str, Any]:
    """Evaluate a `parameters:` table whose entries may use each other in any order.

    Entries are evaluated in dependency order; a cycle is an ExpressionError naming it
    ("a -> b -> a"). `where_of(name)` locates an entry. The result keeps the file's order.
    """
    for name in raw:
        if not isinstance(name, str) or not _NAME.match(name) or name.startswith("__"):
            raise ParameterError(f"{label} name {shown(name)} must be letters, digits and _ "
                                 "(not starting with a digit or __)", where=where_of(name))
    defined = set(raw)
    depends = {name: sorted(references(value) & defined) for name, value in raw.items()}
    order: list[str] = []
    state: dict[str, str] = {}
    for root in raw:                  # depth first, without recursion: chains of any length
        if root in state:
            continue
        state[root] = "active"
        path, pending = [root], [iter(depends[root])]
        while path:
            for dependency in pending[-1]:
                if state.get(dependency) == "done":
                    continue
                if state.get(dependency) == "active":
                    cycle = path[path.index(dependency):] + [dependency]
                    raise ExpressionError(f"{label}s {', '.join(repr(n) for n in cycle[:-1])} depend "
                                          f"on each other in a cycle: {' -> '.join(cycle)}",
                                          where=where_of(cycle[0]))
                state[dependency] = "active"
                path.append(dependency)
                pending.append(iter(depends[dependency]))
                break
            else:
                name = path.pop()
                pending.pop()
                state[name] = "done"
                order.append(name)
    values: dict[str, Any] = {}
    for name in order:
        values[name] = resolve_value(raw[name], values, where_of(name), f"{label} '{name}'", known=raw)
    return {name: values[name] for name in raw}
