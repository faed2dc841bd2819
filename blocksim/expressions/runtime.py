"""The Function block's run-time expressions: a checked expression of the inputs and t compiled
to a small stack program per output element, and the numba kernel that runs it for every batch
member. Names, constants and which functions exist come from expressions.functions, the table the
`${...}` language uses too; the text is parsed with `ast` and never evaluated by Python."""
from __future__ import annotations

import ast
import math

import numpy as np
from numba import njit

from blocksim.errors import ExpressionError, WidthError, did_you_mean
from blocksim.expressions.functions import CONSTANTS, FUNCTIONS
from blocksim.reading.limits import check, limit, shorten, shown
from blocksim.expressions.parsing import parse_expression, recursion_for

OP_CONST, OP_INPUT, OP_TIME, OP_UNARY, OP_BINARY, OP_STORE, OP_PARAM = range(7)
"""Stack-program instructions: push a constant / an input element / t, apply a unary or binary
operation to the top of the stack, store the top into an output element, push an element of the
workspace values (a run's values: they may differ per batch member and between runs)."""

UNARY_OPS = ("neg", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
             "exp", "log", "log10", "sqrt", "abs", "floor", "ceil", "sign")
"""The unary operations in the order of `unary`'s codes."""

BINARY_OPS = ("add", "sub", "mul", "div", "pow", "mod", "atan2", "hypot", "min", "max")
"""The binary operations in the order of `binary`'s codes."""

BINARY_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
                    ast.Pow: "pow", ast.Mod: "mod"}

RUNTIME_FUNCTIONS = tuple(name for name, f in FUNCTIONS.items() if f.scalar)
"""The functions a Function block's expression may call (the table's `scalar` ones)."""


@njit(cache=True)
def unary(code, a):
    if code == 0:
        return -a
    if code == 1:
        return math.sin(a)
    if code == 2:
        return math.cos(a)
    if code == 3:
        return math.tan(a)
    if code == 4:
        return math.asin(a) if -1.0 <= a <= 1.0 else math.nan
    if code == 5:
        return math.acos(a) if -1.0 <= a <= 1.0 else math.nan
    if code == 6:
        return math.atan(a)
    if code == 7:
        return math.sinh(a)
    if code == 8:
        return math.cosh(a)
    if code == 9:
        return math.tanh(a)
    if code == 10:
        return math.exp(a)
    if code == 11:
        return math.log(a) if a > 0.0 else (-math.inf if a == 0.0 else math.nan)
    if code == 12:
        return math.log10(a) if a > 0.0 else (-math.inf if a == 0.0 else math.nan)
    if code == 13:
        return math.sqrt(a) if a >= 0.0 else math.nan
    if code == 14:
        return abs(a)
    if code == 15:
        return math.floor(a)
    if code == 16:
        return math.ceil(a)
    return 1.0 if a > 0.0 else (-1.0 if a < 0.0 else 0.0)


@njit(cache=True)
def binary(code, a, b):
    if code == 0:
        return a + b
    if code == 1:
        return a - b
    if code == 2:
        return a * b
    if code == 3:
        return a / b if b != 0.0 else (math.copysign(math.inf, a) if a != 0.0 else math.nan)
    if code == 4:
        return a ** b
    if code == 5:
        return a - b * math.floor(a / b) if b != 0.0 else math.nan
    if code == 6:
        return math.atan2(a, b)
    if code == 7:
        return math.hypot(a, b)
    if code == 8:
        return a if a <= b else b
    return a if a >= b else b


@njit(cache=True)
def run_program(t, inputs, code, consts, values, stack, y):
    """Evaluate a compiled expression for every batch member: `code` rows are (op, a, b) of a stack
    machine: push consts[a] / inputs[a][member, b] / t / values[member, a], apply unary a or
    binary a, store to y[:, a]."""
    for m in range(y.shape[0]):
        sp = 0
        for pc in range(code.shape[0]):
            op, a, c = code[pc, 0], code[pc, 1], code[pc, 2]
            if op == 0:
                stack[sp] = consts[a]
                sp += 1
            elif op == 6:
                stack[sp] = values[m, a]
                sp += 1
            elif op == 1:
                stack[sp] = inputs[a][m, c]
                sp += 1
            elif op == 2:
                stack[sp] = t
                sp += 1
            elif op == 3:
                stack[sp - 1] = unary(a, stack[sp - 1])
            elif op == 4:
                stack[sp - 2] = binary(a, stack[sp - 2], stack[sp - 1])
                sp -= 1
            else:
                sp -= 1
                y[m, a] = stack[sp]



def workspace_names(text: str, inputs: int, workspace) -> list[str]:
    """The workspace parameters an expression of `inputs` inputs reads, in the order they
    first appear (names that are not its inputs, t, constants or functions); [] when the text
    does not parse (check_expression says why). A workspace parameter named as an input, t or a
    constant that the expression uses is an ExpressionError: which one it means is unclear.
    Text beyond the length or depth limit is a LimitError."""
    try:
        tree = parse_expression(str(text))
    except SyntaxError:
        return []
    text = shorten(text, _SHOWN)
    own = {"t", *CONSTANTS, *(f"u{k + 1}" for k in range(inputs)), *(["u"] if inputs == 1 else [])}
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in workspace and node.id not in own \
                and node.id not in RUNTIME_FUNCTIONS:
            known = sorted(own - {"u"} if inputs > 1 else own) + list(workspace)
            raise ExpressionError(f"expression '{text}': unknown name {shown(node.id)}"
                                  f"{did_you_mean(node.id, known)}; known: the inputs, t, pi, e "
                                  f"and the workspace parameters ({', '.join(workspace) or 'none'})")
        if not isinstance(node, ast.Name) or node.id not in workspace or node.id in names:
            continue
        if node.id in own:
            what = "the time" if node.id == "t" else (
                "a constant" if node.id in CONSTANTS else "an input")
            raise ExpressionError(f"expression '{text}': '{node.id}' is {what} of the Function "
                                  f"and also a workspace parameter; rename the parameter")
        if node.id not in RUNTIME_FUNCTIONS:
            names.append(node.id)
    return names


def check_expression(text: str, variables, block: str) -> ast.Expression:
    """Parse `text` and accept only numbers, the given variables, arithmetic, constant subscripts,
    list literals and the whitelisted math functions; anything else is an ExpressionError (a
    LimitError beyond the length or depth limit)."""
    try:
        tree = parse_expression(text)
    except SyntaxError as err:
        raise ExpressionError(f"expression '{shorten(text, _SHOWN)}' is not valid: {err.msg}",
                              block=block) from None
    text = shorten(text, _SHOWN)
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load, ast.Constant,
               ast.Subscript, ast.Slice, ast.List, ast.Tuple, ast.USub, ast.UAdd,
               *BINARY_OPERATORS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            raise ExpressionError(f"expression '{text}': attributes ({shown('.' + node.attr)}) are not allowed",
                                  block=block)
        if not isinstance(node, allowed):
            raise ExpressionError(f"expression '{text}': {type(node).__name__} is not allowed; "
                                  f"only arithmetic, subscripts and math functions", block=block)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                               or not isinstance(node.value, (int, float))):
            raise ExpressionError(f"expression '{text}': only numbers are allowed as constants, "
                                  f"got {shown(node.value)}", block=block)
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name not in RUNTIME_FUNCTIONS or node.keywords:
                called = name or ast.unparse(node.func)
                raise ExpressionError(f"expression '{text}': unknown function {shown(called)}"
                                      f"{did_you_mean(called, RUNTIME_FUNCTIONS)}; allowed: "
                                      f"{', '.join(RUNTIME_FUNCTIONS)}", block=block)
        if isinstance(node, ast.Name) and node.id not in variables and node.id != "t" \
                and node.id not in CONSTANTS and node.id not in RUNTIME_FUNCTIONS:
            raise ExpressionError(f"expression '{text}': unknown name {shown(node.id)}"
                                  f"{did_you_mean(node.id, list(variables) + list(CONSTANTS))}; "
                                  f"known: {', '.join(list(variables) + ['t'] + list(CONSTANTS))}",
                                  block=block)
    return tree


_SHOWN = 200
"""Characters of an expression that a message quotes (a longer one is cut, with its length)."""


class ExpressionCompiler:
    """Turns a checked expression into scalar stack code, one fragment per output element, once the
    input widths are known (elementwise arithmetic; a width-1 operand broadcasts). The code's
    size is worked out first (`size`, nothing built) and held to the program_size limit: an
    expression of wide inputs, or reductions of reductions, can ask for billions of
    instructions from a few characters."""

    def __init__(self, text, tree, variables, widths, ports, block, values=None):
        """values: {workspace name: (offset, width)} into the run's values (OP_PARAM)."""
        self.text, self.variables, self.widths, self.block = shorten(text, _SHOWN), variables, \
            widths, block
        self.ports = ports
        self.values = values or {}
        self.consts: list[float] = []
        with recursion_for(limit("expression_depth")):
            self.width, self.size_of_elements = self.size(tree.body)
            self.check_size(self.size_of_elements)
            self.elements = self.vector(tree.body)

    def check_size(self, instructions: int) -> None:
        check("program_size", instructions, f"the expression '{shorten(self.text, 60)}' compiles to",
              block=self.block)

    # -- the size of the code, without building it --------------------------------------------

    def size(self, node) -> tuple[int, int]:
        """(width, instructions) of vector(node): the same checks, nothing built."""
        if isinstance(node, ast.Constant):
            return 1, 1
        if isinstance(node, ast.Name):
            if node.id == "t" or node.id in CONSTANTS:
                return 1, 1
            if node.id in RUNTIME_FUNCTIONS:
                self.fail(f"function '{node.id}' used as a value")
            width = self.values[node.id][1] if node.id in self.values \
                else self.widths[self.variables[node.id]]
            return width, width
        if isinstance(node, (ast.List, ast.Tuple)):
            parts = [self.size(item) for item in node.elts]
            return sum(w for w, _ in parts), sum(n for _, n in parts)
        if isinstance(node, ast.Subscript):
            picked = len(self.subscript(node))
            return picked, picked
        if isinstance(node, ast.UnaryOp):
            width, n = self.size(node.operand)
            return (width, n) if isinstance(node.op, ast.UAdd) else (width, n + width)
        if isinstance(node, ast.BinOp):
            return self.elementwise_size(BINARY_OPERATORS[type(node.op)], [node.left, node.right])
        name, args = node.func.id, node.args
        form = FUNCTIONS[name]
        if form.scalar == "reduction":
            self.reduction_arguments(name, args)
            if name == "dot":
                width, n = self.elementwise_size("mul", args)
                return 1, n + width - 1
            width, n = self.size(args[0])
            return (1, n + width - 1) if name == "sum" else (1, 2 * n + 2 * width)
        if form.scalar == "unary":
            self.call_arguments(name, args)
            width, n = self.size(args[0])
            return width, n + width
        self.call_arguments(name, args)
        return self.elementwise_size(name, args)

    def elementwise_size(self, name, args) -> tuple[int, int]:
        parts = [self.size(a) for a in args]
        width = self.common_width(name, [w for w, _ in parts])
        return width, sum(n if w > 1 else width * n for w, n in parts) + (len(args) - 1) * width

    def common_width(self, name, widths) -> int:
        """The width of an elementwise operation on operands of `widths` (1 broadcasts)."""
        wide = set(widths) - {1}
        if len(wide) > 1:
            self.fail(f"operands of {name} have widths {list(widths)}")
        return wide.pop() if wide else 1

    # -- the code ------------------------------------------------------------------------------

    def fail(self, message, port=None):
        raise WidthError(f"expression '{self.text}': {message}", block=self.block, port=port)

    def const(self, value):
        self.consts.append(float(value))
        return [(OP_CONST, len(self.consts) - 1, 0)]

    def vector(self, node) -> list[list[tuple[int, int, int]]]:
        if isinstance(node, ast.Constant):
            return [self.const(node.value)]
        if isinstance(node, ast.Name):
            if node.id == "t":
                return [[(OP_TIME, 0, 0)]]
            if node.id in CONSTANTS:
                return [self.const(CONSTANTS[node.id])]
            if node.id in RUNTIME_FUNCTIONS:
                self.fail(f"function '{node.id}' used as a value")
            if node.id in self.values:
                offset, width = self.values[node.id]
                return [[(OP_PARAM, offset + j, 0)] for j in range(width)]
            k = self.variables[node.id]
            return [[(OP_INPUT, k, j)] for j in range(self.widths[k])]
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for item in node.elts:
                out += self.vector(item)
            return out
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.vector(node.operand)
            if isinstance(node.op, ast.UAdd):
                return operand
            return [e + [(OP_UNARY, 0, 0)] for e in operand]
        if isinstance(node, ast.BinOp):
            return self.elementwise(BINARY_OPERATORS[type(node.op)], [node.left, node.right])
        return self.call(node)

    def subscript(self, node):
        if not (isinstance(node.value, ast.Name) and (node.value.id in self.variables
                                                      or node.value.id in self.values)):
            self.fail("only inputs and workspace parameters can be indexed")
        if node.value.id in self.values:
            offset, width = self.values[node.value.id]
            return [[(OP_PARAM, offset + j, 0)] for j in self.indices(node, width, None)]
        k = self.variables[node.value.id]
        return [[(OP_INPUT, k, j)] for j in self.indices(node, self.widths[k], self.ports[k])]

    def indices(self, node, width, port) -> list[int]:
        """The elements a subscript of a vector of `width` picks (a slice, or one index)."""
        index = node.slice
        if isinstance(index, ast.Slice):
            if index.step is not None:
                bounds = [self.integer(index.lower), self.integer(index.upper), self.integer(index.step)]
            else:
                bounds = [self.integer(index.lower), self.integer(index.upper)]
            picked = list(range(width))[slice(*bounds)]
            if not picked:
                self.fail(f"slice of '{node.value.id}' (width {width}) is empty", port)
            return picked
        j = self.integer(index)
        if not -width <= j < width:
            self.fail(f"index {j} is out of range for '{node.value.id}' of width {width}", port)
        return [j % width]

    def integer(self, node):
        if node is None:
            return None
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1, node.operand
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return sign * node.value
        raise ExpressionError(f"expression '{self.text}': indices must be integer numbers",
                              block=self.block)

    def elementwise(self, name, args):
        operands = [self.vector(a) for a in args]
        width = self.common_width(name, [len(o) for o in operands])
        code = BINARY_OPS.index(name)
        out = []
        for i in range(width):
            acc = list(operands[0][i if len(operands[0]) > 1 else 0])
            for o in operands[1:]:
                acc.extend(o[i if len(o) > 1 else 0])
                acc.append((OP_BINARY, code, 0))
            out.append(acc)
        return out

    def call_arguments(self, name, args):
        """Check the number of arguments of a unary or elementwise function."""
        form = FUNCTIONS[name]
        if form.scalar == "unary":
            if len(args) != 1:
                self.fail(f"{name}() takes one argument")
            return
        needed = form.max_args
        if (needed and len(args) != needed) or len(args) < 2:
            self.fail(f"{name}() takes {needed or 'two or more'} arguments")

    def reduction_arguments(self, name, args):
        """Check the number of arguments of a reduction."""
        if name == "dot" and len(args) != 2:
            self.fail("dot() takes two arguments")
        if name != "dot" and len(args) != 1:
            self.fail(f"{name}() takes one argument")

    def call(self, node):
        name, args = node.func.id, node.args
        form = FUNCTIONS[name]
        if form.scalar == "reduction":
            return [self.reduction(name, args)]
        self.call_arguments(name, args)
        if form.scalar == "unary":
            code = UNARY_OPS.index(name)
            return [e + [(OP_UNARY, code, 0)] for e in self.vector(args[0])]
        return self.elementwise(name, args)

    def reduction(self, name, args):
        mul, add = BINARY_OPS.index("mul"), BINARY_OPS.index("add")
        self.reduction_arguments(name, args)
        if name == "dot":
            terms = self.elementwise("mul", args)
        elif name == "sum":
            terms = self.vector(args[0])
        else:
            terms = [e + e + [(OP_BINARY, mul, 0)] for e in self.vector(args[0])]
        acc = list(terms[0])
        for e in terms[1:]:
            acc.extend(e)
            acc.append((OP_BINARY, add, 0))
        if name == "norm":
            acc.append((OP_UNARY, UNARY_OPS.index("sqrt"), 0))
        return acc

    def program(self, width):
        """(code (n, 3) int64, consts, stack depth) storing the expression into y[:, 0..width-1]."""
        each = len(self.elements) > 1
        self.check_size(self.size_of_elements + width if each else (self.size_of_elements + 1) * width)
        rows = []
        for i in range(width):
            rows.extend(self.elements[i if each else 0])
            rows.append((OP_STORE, i, 0))
        depth = max_depth = 0
        for op, _, _ in rows:
            depth += {OP_CONST: 1, OP_INPUT: 1, OP_TIME: 1, OP_UNARY: 0, OP_BINARY: -1,
                      OP_STORE: -1, OP_PARAM: 1}[op]
            max_depth = max(max_depth, depth)
        code = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return code, np.array(self.consts + [0.0]), max(max_depth, 1)
