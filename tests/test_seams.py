"""Narrow doors, checked by reading the source (``ast``; nothing is imported):

(a) no constructor of the installed packages takes more than :data:`MAX_PARAMETERS` parameters: a
    class's ``__init__`` (its named parameters, ``self`` left out; ``*args``/``**kwargs`` not
    counted), a dataclass's init fields, a NamedTuple's fields. Options that travel together go
    in one record (``SolvingOptions`` holds a ``SolverResources``, ``LeaderCore`` takes a
    ``WorkerSettings``). Exempt for good: the numba records of :data:`KERNEL_RECORDS` (NamedTuples
    and array records handed to kernels as one argument: their fields are the kernel's arrays,
    and grouping them would only add a level the kernel unpacks again; ``ESOptions``,
    ``Schedule``, ``Tables``, ``TreeArrays``, ``CardArrays`` and the like). The wide records of
    :data:`KNOWN_WIDE` predate the check; that list may only shrink;
(b) no command function of ``mccfr/cli`` has a body (after its docstring) over
    :data:`MAX_COMMAND_LINES` lines: a command parses its options into a record and calls the
    library;
(c) ``mccfr/cli`` has at most :data:`MAX_CLI_FUNCTION_IMPORTS` function-level imports, each with a
    comment on its line or the line above naming the heavy optional dependency it defers.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mccfr_util", "holdem", "abstraction", "blueprint", "cluster", "subgame", "mccfr")

MAX_PARAMETERS = 10
MAX_COMMAND_LINES = 60
MAX_CLI_FUNCTION_IMPORTS = 10

#: Records handed to numba kernels as one argument ("file::Class"): exempt from (a).
KERNEL_RECORDS = frozenset(
    {
        "blueprint/kernels.py::ESOptions",
        "blueprint/kernels.py::Schedule",
        "blueprint/kernels.py::_Stack",
        "blueprint/nplayer_kernels.py::FlatTree",
        "blueprint/vector_cfr.py::PublicBoards",
        "subgame/depth_kernels.py::ContModel",
        "subgame/depth_kernels.py::ContWork",
        "subgame/kernels.py::ParWork",
        "subgame/leaf_model.py::LeafModel",
        "subgame/multiway_kernels.py::Problem",
        "subgame/multiway_kernels.py::Scratch",
    }
)

#: Wide records from before the check ("file::Class" -> why it is wide). This list must shrink:
#: whoever narrows one removes its line (``test_wide_list_is_current`` fails on a stale line).
KNOWN_WIDE: dict[str, str] = {
    "holdem/gamedef.py::GameDef": "the ACPC game definition's fields, as the .game file has them",
    "abstraction/tree.py::BettingTree": "the flat betting tree's arrays, built by build_tree",
    "blueprint/algo.py::AlgoConfig": "an algorithm's settings, flat as run.toml stores and hashes them (old runs' hashes)",
    "cluster/config.py::RayJobConfig": "the Ray job's settings: placement, rounds, recovery, logs",
    "subgame/depth.py::DepthLimit": "a depth limit's settings: continuations, leaf sampling",
    "subgame/limits.py::SolveLimits": "a solve's stop rule and run settings",
    "subgame/tree.py::HandLists": "per-board hand data of a subgame tree",
    "subgame/types.py::Subgame": "an explicit subgame's arrays and ranges",
    "subgame/types.py::Solution": "a solve's result",
    "mccfr/evaluation/lbr.py::LBRResult": "an LBR run's result",
    "mccfr/evaluation/match.py::MatchResult": "a match's result",
    "mccfr/serving/acpc_client.py::ClientReport": "an ACPC client's report",
    "mccfr/serving/acpc_dealer.py::DealerResult": "an ACPC dealer's result",
}


def _decorated_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if (isinstance(f, ast.Name) and f.id == "dataclass") or (
            isinstance(f, ast.Attribute) and f.attr == "dataclass"
        ):
            return True
    return False


def _named_tuple(cls: ast.ClassDef) -> bool:
    return any(
        (isinstance(b, ast.Name) and b.id == "NamedTuple")
        or (isinstance(b, ast.Attribute) and b.attr == "NamedTuple")
        for b in cls.bases
    )


def _init_field(stmt: ast.stmt) -> bool:
    """Whether a class-body statement is a field its generated constructor takes."""
    if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
        return False
    if "ClassVar" in ast.unparse(stmt.annotation):
        return False
    v = stmt.value
    return not (
        isinstance(v, ast.Call)
        and ast.unparse(v.func).endswith("field")
        and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in v.keywords
        )
    )


def constructor_parameters(cls: ast.ClassDef) -> int | None:
    """The parameters of the class's constructor, as (a) counts them; None for a class without
    one of its own."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is not None:
        a = init.args
        return len(a.posonlyargs) + len(a.args) - 1 + len(a.kwonlyargs)
    if _decorated_dataclass(cls) or _named_tuple(cls):
        return sum(_init_field(s) for s in cls.body)
    return None


def wide_constructors() -> dict[str, int]:
    """``file::Class`` -> parameters, for every constructor over :data:`MAX_PARAMETERS`."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if isinstance(node, ast.ClassDef):
                    n = constructor_parameters(node)
                    if n is not None and n > MAX_PARAMETERS:
                        out[f"{rel}::{node.name}"] = n
    return out


def test_no_constructor_takes_more_than_ten_parameters():
    found = {k: n for k, n in wide_constructors().items() if k not in KERNEL_RECORDS and k not in KNOWN_WIDE}
    assert not found, (
        f"constructors over {MAX_PARAMETERS} parameters (group them in a record):\n"
        + "\n".join(f"{k}: {n}" for k, n in sorted(found.items()))
    )


def test_wide_list_is_current():
    wide = wide_constructors()
    stale = sorted(k for k in (*KNOWN_WIDE, *KERNEL_RECORDS) if k not in wide)
    assert not stale, "narrow now: remove from KNOWN_WIDE or KERNEL_RECORDS:\n" + "\n".join(stale)


def _cli_modules() -> list[tuple[Path, str, ast.Module]]:
    out = []
    for path in sorted((ROOT / "mccfr" / "cli").glob("*.py")):
        text = path.read_text()
        out.append((path, text, ast.parse(text, str(path))))
    return out


def _is_command(fn: ast.FunctionDef) -> bool:
    """A click command or group: decorated with ``<something>.command(...)`` or ``.group(...)``."""
    for d in fn.decorator_list:
        f = d.func if isinstance(d, ast.Call) else d
        if isinstance(f, ast.Attribute) and f.attr in ("command", "group"):
            return True
    return False


def test_cli_command_bodies_are_short():
    long = []
    for path, _, tree in _cli_modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or not _is_command(fn):
                continue
            body = fn.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring (the command's help)
            lines = body[-1].end_lineno - body[0].lineno + 1 if body else 0
            if lines > MAX_COMMAND_LINES:
                long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}: {lines} lines")
    assert not long, f"command bodies over {MAX_COMMAND_LINES} lines:\n" + "\n".join(long)


def test_function_level_imports_in_the_cli_name_their_dependency():
    """``mccfr/cli`` imports at function level only a heavy optional dependency (Ray, pyarrow,
    matplotlib, FastAPI), at most 10 times, each with a comment saying which."""
    found = set()
    lines_of = {}
    for path, text, tree in _cli_modules():
        lines_of[path.name] = text.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found |= {
                    (path.name, sub.lineno)
                    for sub in ast.walk(node)
                    if isinstance(sub, (ast.Import, ast.ImportFrom))
                }
    assert len(found) <= MAX_CLI_FUNCTION_IMPORTS, sorted(found)
    for name, line in sorted(found):
        here, above = lines_of[name][line - 1], lines_of[name][line - 2]
        assert "#" in here or above.strip().startswith("#"), f"mccfr/cli/{name}:{line} has no comment"


def test_the_counter_on_hand_written_classes():
    tree = ast.parse(
        "import dataclasses\n"
        "from typing import ClassVar, NamedTuple\n"
        "class A:\n"
        "    def __init__(self, a, /, b, *args, c=1, **kw): ...\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class B:\n"
        "    x: int\n"
        "    y: int = 0\n"
        "    z: list = dataclasses.field(default_factory=list)\n"
        "    hidden: int = dataclasses.field(init=False, default=0)\n"
        "    K: ClassVar[int] = 3\n"
        "class C(NamedTuple):\n"
        "    p: int\n"
        "    q: int\n"
        "class D:\n"
        "    x: int\n"
    )
    got = {c.name: constructor_parameters(c) for c in tree.body if isinstance(c, ast.ClassDef)}
    assert got == {"A": 3, "B": 3, "C": 2, "D": None}
