"""The architecture holds: each package imports only the layers below it (the table of
docs/architecture.md), no two modules import each other (counting imports inside functions), and
no module grows past 900 lines."""
import ast
import functools
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "blocksim"

MAY_IMPORT = {
    "version": set(),
    "errors": set(),
    "twins": set(),
    "memo": set(),
    "reading": {"errors"},
    "solvers": {"errors", "twins"},
    "expressions": {"errors", "reading", "twins"},
    "models": {"errors", "reading", "twins"},
    "blocks": {"errors", "expressions", "models", "reading", "twins"},
    "diagram": {"errors", "blocks", "expressions", "memo", "reading", "solvers"},
    "engine": {"errors", "blocks", "diagram", "memo", "reading", "solvers", "version"},
    "analysis": {"errors", "reading", "diagram", "engine", "blocks", "models", "solvers"},
    "blocksim": {"analysis", "diagram", "engine", "study", "version"},
    "study": {"errors", "models", "diagram", "engine", "reading", "plotting", "version"},
    "identification": {"errors", "models", "engine", "reading", "blocksim"},
    "plotting": {"errors", "blocks", "engine"},
    "compare": {"errors", "plotting"},
    "animation": {"errors", "blocks", "plotting"},
    "drawing": {"errors", "plotting", "blocksim"},
    "web": {"errors", "engine", "plotting", "drawing", "study", "blocksim"},
    "cli": {"errors", "reading", "blocks", "diagram", "engine", "identification", "plotting", "compare",
            "animation", "drawing", "web", "analysis", "study", "blocksim"},
}
"""Which layer may import which: a layer is a subpackage of blocksim or a top-level module
("blocksim" is the package's face, blocksim/__init__.py). The same table is drawn in
docs/architecture.md."""

MAX_LINES = 900


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports() -> dict[str, set[str]]:
    """module -> the blocksim modules it imports, anywhere in its text (functions included)."""
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    targets.add(full if full in mods else module)
        resolved = set()
        for target in targets:
            if not target.startswith("blocksim"):
                continue
            while target not in mods and "." in target:
                target = target.rpartition(".")[0]
            if target != name:
                resolved.add(target)
        graph[name] = resolved
    return graph


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "blocksim"


def test_every_layer_is_in_the_table():
    assert {layer(m) for m in modules()} == set(MAY_IMPORT)


def test_each_layer_imports_only_the_layers_below_it():
    wrong = sorted(f"{a} imports {b}" for a, targets in imports().items() for b in targets
                   if layer(b) != layer(a) and layer(b) not in MAY_IMPORT[layer(a)])
    assert wrong == []


def test_no_import_cycles_between_modules():
    try:
        list(graphlib.TopologicalSorter(imports()).static_order())
    except graphlib.CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None


def test_no_module_above_900_lines():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_table_is_acyclic():
    order = list(graphlib.TopologicalSorter(MAY_IMPORT).static_order())
    assert order.index("errors") < order.index("expressions") < order.index("blocks") \
        and order.index("models") < order.index("blocks") \
        < order.index("diagram") < order.index("engine") < order.index("cli")


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

CUBIC_DIAGRAM = """
blocksim: 1
blocks:
  x:      {type: Sine, amplitude: [0.5, 2.0], frequency: 0.5}
  spring: {type: CubicSpring, a: [3.0, -1.5]}
connections: [x -> spring]
simulation: {stop_time: 2, solver: rk4, step: 0.01, mode: MODE}
log: {signals: [x.out, spring.out]}
"""


def test_the_worked_example_block_of_the_architecture_page_runs_in_both_modes(
        tmp_path, compiled_cache, monkeypatch):
    """docs/architecture.md's example block, as written there, in interpreted and compiled mode:
    y = a u^3 for a sine u, element by element."""
    import importlib
    import sys

    import numpy as np

    import blocksim

    text = ARCHITECTURE.read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "doc_cubic_spring.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    if "doc_cubic_spring" not in sys.modules:      # registers CubicSpring once per session
        importlib.import_module("doc_cubic_spring")
    runs = {}
    for mode in ("interpreted", "compiled"):
        path = tmp_path / f"{mode}.yaml"
        path.write_text(CUBIC_DIAGRAM.replace("MODE", mode))
        runs[mode] = blocksim.simulate(blocksim.load(path))
    u, t = runs["interpreted"]["x.out"], runs["interpreted"].t
    np.testing.assert_allclose(u, np.array([0.5, 2.0]) * np.sin(np.pi * t)[:, None], rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(runs["interpreted"]["spring.out"], np.array([3.0, -1.5]) * u ** 3,
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(runs["compiled"]["spring.out"], runs["interpreted"]["spring.out"])


RETURNS_A_NUMBER_ARGUMENT = {
    ("engine/loops.py", "next_major_time", "next_break"), ("engine/loops.py", "stash", "at"),
    ("engine/loops.py", "unchanged", "at"), ("engine/loops.py", "unstash", "at"),
    ("models/foc.py", "voltage_circle_limit", "x"),
    ("models/foc.py", "voltage_circle_limit", "y"), ("models/foc.py", "current_pi_axis", "v_max"),
    ("models/foc.py", "current_pi_axis", "z"), ("models/foc.py", "current_pi_dq", "z_d"),
    ("models/foc.py", "current_pi_dq", "z_q"), ("models/friction.py", "stribeck_level", "Fc"),
    ("models/friction.py", "karnopp_torque_in", "tau_applied"),
    ("models/friction.py", "karnopp_torque_in", "Fs"),
    ("solvers/events.py", "note_events", "count"),
    ("blocks/control.py", "_integrand", "e"),
    ("blocks/control.py", "clamp_decide", "m"),
    ("blocks/control.py", "clamp_decide", "o"),
    ("blocks/control.py", "clamp_output", "v"),
    ("blocks/control.py", "parabola_vertex", "t3"),
    ("blocks/control.py", "parabola_vertex", "y3"),
    ("models/contact.py", "wall_witness", "delta"),
    ("models/joint_law.py", "clipped", "t"),
}
"""The numba functions compiled on their own that return one of their arguments as it came: each
argument here is a number (an index, a voltage, a torque), none an array."""


@functools.lru_cache(maxsize=1)
def _parsed() -> tuple:
    """(path relative to the package, syntax tree) of every module of the package, parsed once."""
    return tuple((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text()))
                 for path in sorted(PACKAGE.rglob("*.py")))


def _numba_functions():
    """(path, function node, decorator text) of every numba-compiled function of the package."""
    for path, tree in _parsed():
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                jit = [ast.unparse(d) for d in fn.decorator_list if "jit" in ast.unparse(d)]
                if jit:
                    yield path, fn, jit[0]


def test_no_function_compiled_on_its_own_returns_an_array_it_was_given():
    """A numba function not inlined by numba (forceinline=True is inlined by LLVM, into code
    compiled on its own first), first compiled for a generated module's function (which
    counts no references: engine/numba_backend.NO_REFERENCE_COUNTS), is compiled without counts
    too; returning an array it was given, it would free that array under a caller that counts.
    So such functions return only numbers they were given: any new `return <argument>` is to be
    checked to be a number and added above."""
    found = set()
    for path, fn, decorator in _numba_functions():
        if "inline='always'" in decorator:
            continue
        arguments = {a.arg for a in fn.args.args}
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                found.update((path, fn.name, item.id) for item in items
                             if isinstance(item, ast.Name) and item.id in arguments)
    assert found == RETURNS_A_NUMBER_ARGUMENT


def test_every_kernel_that_llvm_inlines_is_compiled_without_reference_counts():
    """A function compiled on its own takes the reference-count setting of the code that first
    compiles it (interpreted mode's call, or a generated loop without counts) unless its decorator
    fixes one; a kernel compiled with counts in one process and linked into a loop without them
    in another (or the reverse) is the same function with other code. So every forceinline=True
    function declares _nrt=False, and a helper that allocates declares _nrt=True: then a kernel
    is the same code whoever compiles it first, and a generated module of blocksim's kernels
    never needs the counted fallback."""
    # every numba function by (path, name), and by name the functions a call of that name may
    # be (two modules may each have a `clipped`: a call reaches both, an over-approximation)
    functions, named = {}, {}
    for path, fn, decorator in _numba_functions():
        calls = {ast.unparse(n.func).split(".")[-1] for n in ast.walk(fn) if isinstance(n, ast.Call)}
        allocates = any(f"np.{a}" in ast.unparse(fn)
                        for a in ("empty", "zeros", "ones", "linalg", "ascontiguousarray"))
        functions[path, fn.name] = (decorator, calls, allocates)
        named.setdefault(fn.name, []).append((path, fn.name))
    loose = sorted(f"{path}:{name}" for (path, name), (decorator, _, _) in functions.items()
                   if "forceinline=True" in decorator and "_nrt=False" not in decorator)
    assert loose == []
    kernels = {name.id for _, tree in _parsed() for n in ast.walk(tree)
               if isinstance(n, ast.Call) and ast.unparse(n.func) == "Kernels"
               for k in n.keywords for name in ast.walk(k.value) if isinstance(name, ast.Name)}
    reached = set()
    todo = [key for key, (d, _, _) in functions.items()
            if "forceinline=True" in d or key[1] in kernels]
    while todo:
        key = todo.pop()
        if key not in reached:
            reached.add(key)
            todo += [callee for c in functions[key][1] for callee in named.get(c, ())]
    allocating = sorted(f"{path}:{name}" for path, name in reached
                        if functions[path, name][2] and "_nrt=True" not in functions[path, name][0])
    assert allocating == []
    assert {"singularity_ratios", "coriolis_matrix_into"} <= {name for _, name in reached}
