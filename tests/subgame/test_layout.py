"""The subgame package's modules import each other in one direction: no circle, no import hidden
inside a function (where a circle would hide), and each only the modules above it in the package
docstring's index."""

import ast
import re
from pathlib import Path

import subgame

PKG = Path(__file__).resolve().parents[2] / "subgame"


def _imports(path: Path) -> tuple[set[str], list[str]]:
    """(subgame modules ``path`` imports anywhere, the imports made inside a function)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    inner: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = (
                [f"{node.module}.{a.name}" for a in node.names] if node.module == "subgame" else [node.module]
            )
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.startswith("subgame.")}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner += [
                f"{path.name}:{n.lineno} {ast.unparse(n)}"
                for n in ast.walk(fn)
                if isinstance(n, (ast.Import, ast.ImportFrom))
            ]
    return found, inner


def test_subgame_modules_import_each_other_without_circles():
    graph, inner = {}, []
    for path in sorted(PKG.glob("*.py")):
        if path.name == "__init__.py":
            continue
        deps, fn_level = _imports(path)
        graph[f"subgame.{path.stem}"] = deps
        inner += fn_level
    assert len(graph) >= 10 and graph["subgame.solver"]  # the package was read
    assert not inner, f"imports inside functions: {inner}"
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join(path[path.index(d) :] + [d]))
            if d in graph and d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_the_package_index_lists_every_module_in_import_order():
    order = re.findall(r"^``(\w+)``", subgame.__doc__ or "", re.M)
    on_disk = sorted(p.stem for p in PKG.glob("*.py") if p.name != "__init__.py")
    assert sorted(order) == on_disk
    for i, name in enumerate(order):
        deps = {d.split(".")[1] for d in _imports(PKG / f"{name}.py")[0]}
        below = deps - set(order[:i])
        assert not below, f"subgame.{name} imports {sorted(below)}, listed after it"
