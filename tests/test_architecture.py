"""The architecture holds: each package imports only the layers below it (the table of
docs/architecture.md), no two modules import each other (counting imports inside functions), and
no module grows past 900 lines."""
import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "blocksim"

MAY_IMPORT = {
    "version": set(),
    "errors": set(),
    "solvers": {"errors"},
    "expressions": {"errors"},
    "models": {"errors"},
    "blocks": {"errors", "expressions", "models"},
    "diagram": {"errors", "blocks", "expressions", "solvers"},
    "engine": {"errors", "blocks", "diagram", "solvers", "version"},
    "blocksim": {"diagram", "engine", "version"},
    "identification": {"errors", "models", "engine", "blocksim"},
    "plotting": {"errors", "blocks", "engine"},
    "compare": {"errors", "plotting"},
    "animation": {"errors", "blocks", "plotting"},
    "drawing": {"errors", "plotting", "blocksim"},
    "cli": {"errors", "blocks", "diagram", "engine", "identification", "plotting", "compare",
            "animation", "drawing", "blocksim"},
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
