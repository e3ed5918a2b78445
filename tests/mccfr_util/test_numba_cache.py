"""No process-wide side effect on import: importing the packages leaves ``NUMBA_CACHE_DIR`` and
``sys.meta_path`` alone; the entry points (the ``mccfr`` command, the tests' conftest, Ray's
workers through the job's ``runtime_env``) call :func:`mccfr_util.numba_cache.configure`."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from mccfr_util.numba_cache import RAY_SETUP_HOOK, ray_runtime_env

REPO = Path(__file__).resolve().parents[2]

#: What the child prints: the cache variable, whether the import hook is installed, numba loaded.
REPORT = (
    "import json, os, sys\n"
    "print(json.dumps({'dir': os.environ.get('NUMBA_CACHE_DIR'),"
    " 'hook': any(type(f).__name__ == '_SkipScipyProbes' for f in sys.meta_path),"
    " 'numba': 'numba' in sys.modules}))\n"
)


def _run(code: str, cache: Path) -> dict:
    """``code`` then :data:`REPORT` in a fresh interpreter whose environment has no
    ``NUMBA_CACHE_DIR`` and ``MCCFR_CACHE=cache``."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["MCCFR_CACHE"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    out = subprocess.run(
        [sys.executable, "-c", code + REPORT], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_packages_changes_nothing_in_the_process(tmp_path):
    got = _run(
        "import holdem, mccfr, blueprint, abstraction, subgame, cluster, mccfr_util\n"
        "import blueprint.trainer, subgame.solver, mccfr.cli.main, mccfr.evaluation, mccfr.serving\n",
        tmp_path,
    )
    assert got["dir"] is None and not got["hook"], got
    assert got["numba"]  # the kernels were imported, and still nothing was set
    assert not (tmp_path / "numba").exists()


def test_configure_is_one_call_and_the_command_makes_it(tmp_path):
    """A library user's one call; the ``mccfr`` command makes it before a command loads (not for
    ``mccfr --help``, which loads none)."""
    got = _run("from mccfr_util.numba_cache import configure\nconfigure()\n", tmp_path)
    assert Path(got["dir"]).parent == tmp_path / "numba" and got["hook"] and not got["numba"], got
    helped = _run(
        "from mccfr.cli.main import cli\ncli.main(['--help'], standalone_mode=False)\n", tmp_path / "help"
    )
    assert helped["dir"] is None, helped
    command = _run(
        "from mccfr.cli.main import cli\ncli.main(['status', '--help'], standalone_mode=False)\n", tmp_path
    )
    assert command["dir"] == got["dir"] and command["hook"], command


def test_a_user_set_cache_dir_wins(tmp_path):
    mine = str(tmp_path / "mine")
    got = _run(
        f"import os\nos.environ['NUMBA_CACHE_DIR'] = {mine!r}\n"
        "from mccfr_util.numba_cache import configure\nconfigure()\n",
        tmp_path,
    )
    assert got["dir"] == mine and got["hook"], got
    assert not (tmp_path / "numba").exists()


def test_ray_workers_get_the_setup_hook():
    assert ray_runtime_env() == {"worker_process_setup_hook": RAY_SETUP_HOOK}
    mine = {"env_vars": {"A": "1"}, "worker_process_setup_hook": "my.hook"}
    assert ray_runtime_env(mine) == mine and ray_runtime_env(mine) is not mine
    assert ray_runtime_env({"env_vars": {"A": "1"}}) == {
        "env_vars": {"A": "1"},
        "worker_process_setup_hook": RAY_SETUP_HOOK,
    }
    module, name = RAY_SETUP_HOOK.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), name))


def test_the_cache_key_covers_every_package_with_kernels():
    """The cache directory is keyed by the source of every installed package whose modules compile
    numba kernels: an edit to a kernel (or to what it calls) anywhere starts a clean cache, never
    old machine code against a new layout."""
    from mccfr_util import numba_cache

    pkgs = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests", "scripts"}
    with_kernels = {
        pkg
        for pkg in pkgs
        for f in (REPO / pkg).glob("**/*.py")
        if "numba.njit" in f.read_text() or "@njit" in f.read_text()
    }
    assert with_kernels >= {"blueprint", "subgame", "mccfr"}, with_kernels
    assert with_kernels <= set(numba_cache._PACKAGES), with_kernels - set(numba_cache._PACKAGES)
    assert set(numba_cache._PACKAGES) <= pkgs


def test_another_clone_of_the_same_source_loads_the_compiled_kernels(tmp_path):
    """A kernel is found by its path inside the project and its source's content: a second copy of
    the same source at another path (a CI run's fresh clone, with new modification times) loads
    what the first compiled; an edit anywhere starts a clean cache."""
    import shutil

    from mccfr_util import numba_cache

    copies = [tmp_path / "a", tmp_path / "b"]
    for copy in copies:
        for pkg in numba_cache._PACKAGES:
            shutil.copytree(REPO / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "from mccfr_util.numba_cache import configure\nconfigure()\n"
        "import numpy as np\nfrom holdem.evaluator import rank_many\n"
        "rank_many(np.array([[0, 5, 9, 13, 30]]), 4, 13)\n"
        "print(sum(rank_many.stats.cache_hits.values()))\n"
    )

    def hits(copy: Path) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
        env.update(MCCFR_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(copy))
        out = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.strip().splitlines()[-1])

    assert hits(copies[0]) == 0  # compiled
    assert hits(copies[1]) == 1  # loaded from the first copy's cache
    with open(copies[1] / "holdem" / "evaluator.py", "a") as f:
        f.write("\n# an edit\n")
    assert hits(copies[1]) == 0  # another source: another cache directory
    assert len(list((tmp_path / "cache" / "numba").iterdir())) == 2
