"""The import arrows of the installed packages, checked by reading the source (``ast``; nothing
is imported), as /work/shared/DESIGN.md "Layout" and docs/architecture.md state them:

    mccfr_util <- holdem <- abstraction <- blueprint <- subgame <- mccfr.evaluation / mccfr.serving
    <- mccfr.cli; cluster drives blueprint (it may import blueprint and below); ``mccfr`` (the facade)
    and ``mccfr.cli`` sit on top and may import everything. ``mccfr_util`` (files, lazy exports,
    reporting, progress, the numba cache) is under every layer: all may import it, it imports
    nothing of the project.

Checked over every module of ``mccfr_util holdem abstraction blueprint cluster subgame mccfr``:

(a) no import points up or sideways off an arrow, nor into a folder that is not installed
    (``scripts``, ``examples``, ``tests``); function-level and ``if TYPE_CHECKING:``
    imports count: they are dependencies all the same;
(b) no module imports another module's private (leading underscore) name;
(c) no import cycle between files: imports at module level and inside functions (a function-level
    import that closes a circle is the circle deferred, not broken); those under
    ``if TYPE_CHECKING:`` never run and are left out;
(d) no module over :data:`MAX_LINES` lines, except the numba kernel files of :data:`KERNEL_FILES`;
(e) no ``sys.path`` manipulation inside the packages.

Every failure names the file, the line and the offending import.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Known violations in areas being split right now on other branches. This list must shrink to
#: empty: whoever fixes one removes its line, and the integrator empties it after merging
#: (``test_allow_list_is_current`` fails on a line that no longer matches anything).
KNOWN_VIOLATIONS: frozenset[str] = frozenset()

#: The layers, lowest first: a module may import its own layer and the ones ``ALLOWED`` names.
LAYERS = (
    "mccfr_util",
    "holdem",
    "abstraction",
    "blueprint",
    "cluster",
    "subgame",
    "mccfr.evaluation",
    "mccfr.serving",
    "mccfr.cli",
    "mccfr",
)
ALLOWED: dict[str, frozenset[str]] = {
    "mccfr_util": frozenset(),
    "holdem": frozenset({"mccfr_util"}),
    "abstraction": frozenset({"mccfr_util", "holdem"}),
    "blueprint": frozenset({"mccfr_util", "holdem", "abstraction"}),
    "cluster": frozenset({"mccfr_util", "holdem", "abstraction", "blueprint"}),
    "subgame": frozenset({"mccfr_util", "holdem", "abstraction", "blueprint"}),
    "mccfr.evaluation": frozenset({"mccfr_util", "holdem", "abstraction", "blueprint", "subgame"}),
    "mccfr.serving": frozenset({"mccfr_util", "holdem", "abstraction", "blueprint", "subgame"}),
    "mccfr.cli": frozenset(LAYERS) - {"mccfr.cli"},
    "mccfr": frozenset(LAYERS) - {"mccfr"},  # the lazy facade (mccfr/__init__.py, mccfr/__main__.py)
}
PACKAGES = ("mccfr_util", "holdem", "abstraction", "blueprint", "cluster", "subgame", "mccfr")
#: Folders of the repository that are not installed: no package may import them.
NOT_INSTALLED = frozenset({"examples", "scripts", "tests"})

MAX_LINES = 900
#: Files of numba kernels, which stay whole: a kernel calls its helpers in the same compilation
#: unit, and splitting them buys nothing for a reader.
KERNEL_FILES = frozenset({"subgame/kernels.py"})


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name; None for modules outside the packages."""
    for layer in sorted(LAYERS, key=len, reverse=True):  # mccfr.cli before mccfr
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


@dataclass(frozen=True)
class Import:
    """One imported name: ``from module import name`` (``name`` None for ``import module``)."""

    module: str
    name: str | None
    line: int
    context: str  # "module", "function" (runs when called) or "type_checking" (never runs)


@dataclass
class Module:
    name: str
    path: Path  # relative to the repository root
    lines: int
    imports: list[Import]
    private_attrs: list[tuple[str, str, int]]  # (module, attribute, line): ``mod._name`` use
    sys_path: list[int]  # lines that touch sys.path


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module_name: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module of a (possibly relative) ``from`` import."""
    if not level:
        return target or ""
    parts = module_name.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _parse(path: Path) -> Module:
    rel = path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    name = ".".join(parts)
    text = path.read_text()
    tree = ast.parse(text, str(rel))
    imports: list[Import] = []
    aliases: dict[str, str] = {}  # local name -> first-party module it is bound to
    sys_path: list[int] = []

    def visit(node: ast.AST, context: str) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                imports.append(Import(a.name, None, node.lineno, context))
                if layer_of(a.name) is not None:  # ``import a.b as m`` binds m to a.b, ``import a.b`` a to a
                    local = a.asname or a.name.split(".")[0]
                    aliases[local] = a.name if a.asname else local
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, is_package, node.level, node.module)
            for a in node.names:
                imports.append(Import(mod, a.name, node.lineno, context))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            sys_path.append(node.lineno)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "type_checking")
            for child in node.orelse:
                visit(child, context)
            return
        if context == "module" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            context = "function"
        for child in ast.iter_child_nodes(node):
            visit(child, context)

    visit(tree, "module")
    private_attrs = []
    for node in ast.walk(tree):  # ``import blueprint.best_response as ev; ev._x``
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            private_attrs.append((aliases[node.value.id], node.attr, node.lineno))
    return Module(name, rel, len(text.splitlines()), imports, private_attrs, sys_path)


@cache
def modules() -> dict[str, Module]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            m = _parse(path)
            out[m.name] = m
    return out


def _target(imp: Import, mods: dict[str, Module]) -> str | None:
    """The project module a ``from m import n`` loads: ``m.n`` when that is a module, else ``m``."""
    if imp.name is not None and f"{imp.module}.{imp.name}" in mods:
        return f"{imp.module}.{imp.name}"
    return imp.module if imp.module in mods else None


def _where(m: Module, line: int) -> str:
    return f"{m.path}:{line}"


def _spell(imp: Import) -> str:
    return f"import {imp.module}" if imp.name is None else f"from {imp.module} import {imp.name}"


# -- the checks: each returns its violations as "<kind>: <file>: <what>" lines ----------------------
def layer_violations() -> list[str]:
    out = []
    for m in modules().values():
        src = layer_of(m.name)
        assert src is not None, m.name
        for imp in m.imports:
            top = imp.module.split(".")[0]
            if top in NOT_INSTALLED:
                out.append(f"layer: {_where(m, imp.line)}: {top}/ is not installed: {_spell(imp)}")
                continue
            dst = layer_of(imp.module)
            if dst is None or dst == src or dst in ALLOWED[src]:
                continue
            out.append(
                f"layer: {_where(m, imp.line)}: {src} must not import {dst}: {_spell(imp)}"
                + ("" if imp.context == "module" else f" ({imp.context} imports count too)")
            )
    return out


def private_violations() -> list[str]:
    mods = modules()
    out = []
    for m in mods.values():
        for imp in m.imports:
            if layer_of(imp.module) is None or imp.module == m.name:
                continue
            if imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__"):
                out.append(f"private: {_where(m, imp.line)}: imports private {imp.name}: {_spell(imp)}")
        for mod, attr, line in m.private_attrs:
            out.append(f"private: {_where(m, line)}: uses private {mod}.{attr}")
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules its imports load (at module level or in a function; not
    those under TYPE_CHECKING)."""
    mods = modules()
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for m in mods.values():
        for imp in m.imports:
            t = _target(imp, mods) if imp.context != "type_checking" else None
            if t is not None and t != m.name:
                graph[m.name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """The strongly connected components of more than one module (Tarjan): for each, one cycle
    through its first module (sorted), in import order, and the component's modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # recursion depth = longest import chain: a few dozen
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    out = []
    for comp in sorted(comps):
        members = set(comp)
        start = comp[0]
        # the shortest path back to start, inside the component (breadth first)
        prev: dict[str, str] = {}
        frontier, seen, end = [start], {start}, None
        while frontier and end is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & members):
                    if w == start:
                        end = v
                        break
                    if w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            frontier = nxt
        path = [end]
        while path[-1] != start:
            path.append(prev[path[-1]])
        out.append((list(reversed(path)) + [start], comp))
    return out


def cycle_violations() -> list[str]:
    mods = modules()
    out = []
    for cyc, comp in cycles(import_graph()):
        files = " -> ".join(str(mods[n].path) for n in cyc)
        how: dict[str, list[str]] = {}  # "file:line from m import" -> names, in order
        for a, b in zip(cyc, cyc[1:]):
            for imp in mods[a].imports:
                if imp.context != "type_checking" and _target(imp, mods) == b:
                    stmt = f"{_where(mods[a], imp.line)} {_spell(imp).rsplit(' ', 1)[0]}"
                    how.setdefault(stmt, []).append(imp.name or imp.module)
        more = "" if len(comp) == len(cyc) - 1 else f"; a knot of {len(comp)} files: {', '.join(comp)}"
        imports = "; ".join(f"{stmt} {', '.join(names)}" for stmt, names in how.items())
        out.append(f"cycle: {files} | {imports}{more}")
    return out


def size_violations() -> list[str]:
    return [
        f"size: {m.path} | {m.lines} lines (> {MAX_LINES}): split it along its seams"
        for m in modules().values()
        if m.lines > MAX_LINES and str(m.path) not in KERNEL_FILES
    ]


def sys_path_violations() -> list[str]:
    return [
        f"sys.path: {_where(m, line)}: the packages must not change sys.path"
        for m in modules().values()
        for line in m.sys_path
    ]


CHECKS = {
    "layer": layer_violations,
    "private": private_violations,
    "cycle": cycle_violations,
    "size": size_violations,
    "sys.path": sys_path_violations,
}


def _key(violation: str) -> str:
    """A violation as :data:`KNOWN_VIOLATIONS` names it: without line numbers and the details
    after `` | ``, so that the allow-list survives edits elsewhere in the file
    (``layer: a/b.py:12: ...`` -> ``layer: a/b.py: ...``)."""
    return re.sub(r"(\.py):\d+", r"\1", violation.split(" | ")[0])


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_layering(check):
    found = [v for v in CHECKS[check]() if _key(v) not in KNOWN_VIOLATIONS]
    assert not found, f"{len(found)} {check} violation(s):\n" + "\n".join(found)


def test_allow_list_is_current():
    now = {_key(v) for check in CHECKS.values() for v in check()}
    stale = sorted(KNOWN_VIOLATIONS - now)
    assert not stale, "fixed: remove from KNOWN_VIOLATIONS:\n" + "\n".join(stale)


# -- the checker itself, on hand-written modules ------------------------------------------------------
def test_checker_sees_function_level_type_checking_and_relative_imports(tmp_path, monkeypatch):
    """The parser finds the imports the checks rely on: function-level ones, those under
    ``if TYPE_CHECKING:`` (not counted as run on import), relative ones, and ``sys.path``."""
    pkg = tmp_path / "blueprint"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import sys\n"
        "from . import b\n"
        "from .b import _hidden\n"
        "if TYPE_CHECKING:\n"
        "    from subgame.tree import Subgame\n"
        "def f():\n"
        "    from mccfr.serving.query import QueryError\n"
        "    sys.path.insert(0, '.')\n"
        "    import scripts.experiments.kuhn_tables\n"
    )
    (pkg / "b.py").write_text("import blueprint.a\n_hidden = 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    m = _parse(pkg / "a.py")
    assert m.name == "blueprint.a"
    got = {(i.module, i.name, i.context) for i in m.imports}
    assert ("blueprint", "b", "module") in got
    assert ("blueprint.b", "_hidden", "module") in got
    assert ("subgame.tree", "Subgame", "type_checking") in got
    assert ("mccfr.serving.query", "QueryError", "function") in got
    assert m.sys_path == [9]
    monkeypatch.setattr(
        sys.modules[__name__], "modules", lambda: {"blueprint.a": m, "blueprint.b": _parse(pkg / "b.py")}
    )
    assert cycle_violations() == [
        "cycle: blueprint/a.py -> blueprint/b.py -> blueprint/a.py | blueprint/a.py:3 from blueprint "
        "import b; blueprint/a.py:4 from blueprint.b import _hidden; blueprint/b.py:1 import blueprint.a"
    ]
    layer = layer_violations()
    assert any("blueprint/a.py:6: blueprint must not import subgame" in v for v in layer), layer
    assert any("blueprint/a.py:8: blueprint must not import mccfr.serving" in v for v in layer), layer
    assert any("blueprint/a.py:10: scripts/ is not installed" in v for v in layer), layer
    assert private_violations() == [
        "private: blueprint/a.py:4: imports private _hidden: from blueprint.b import _hidden"
    ]
    assert sys_path_violations() == ["sys.path: blueprint/a.py:9: the packages must not change sys.path"]
