"""What every command shares: the error type and its exit status, input-error mapping, the
common options, and small formatting helpers."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import click

from abstraction.bets import BetAbstractionError
from blueprint import rundir
from blueprint.algo import AlgoError
from blueprint.defaults import DEFAULT_TIME_BUDGET, DEFAULT_TIME_BUDGET_HOLDEM
from blueprint.io.errors import CheckpointError
from blueprint.rundir import one_line, recorded_storage
from blueprint.threads import available_cores
from cluster.storage import Storage, StorageError
from holdem.cards import cards_str
from holdem.gamedef import GameDefError
from mccfr.cli.errors import CLIError
from mccfr_util.reporting import big_blind_of, mbb_per_chip


@contextlib.contextmanager
def user_input():
    """Turn the project's input-error classes into :class:`CLIError` (imported lazily: they live
    in modules that pull in numpy and numba).

    ``ValueError`` is included because the card abstraction and the trainer's size checks raise it
    for a request that cannot be met (an unknown card abstraction, a deck too big for lossless
    buckets, full-traversal CFR on a big game); use this only around loading and building.
    """

    try:
        yield
    except (GameDefError, BetAbstractionError, AlgoError, CheckpointError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def run_dir_arg(run_dir: str, fetch: bool = True) -> Path:
    """A RUN_DIR argument as a local directory whose ``checkpoints/`` the loaders read.

    A run directory whose ``run.toml`` names a storage path (``--storage``) gets the newest complete
    checkpoint there fetched into its ``checkpoints/`` first when it is newer than the local ones
    (``fetch``; storage that cannot be read is a warning when a local checkpoint remains). A storage
    URI (``file:///abs/path``, ``s3://bucket/prefix``, ...) is fetched into a cache directory
    under ``$MCCFR_CACHE/storage/``, which is returned.
    """
    if is_storage_uri(run_dir):
        return _storage_cache(run_dir)
    path = Path(run_dir)
    if not path.exists():
        raise CLIError(f"run directory {run_dir!r} does not exist")
    if not path.is_dir():
        raise CLIError(f"{run_dir!r} is not a directory (expected a run directory made by 'mccfr train')")
    target = run_storage(path)
    if fetch and target is not None:
        sync_from_storage(path, target, required=False)
    return path


# -- checkpoints in a storage path (cluster.storage) -------------------------------------------
def is_storage_uri(value: str) -> bool:
    return "://" in str(value)


storage_opt = click.option(
    "--storage",
    "storage",
    default=None,
    metavar="TARGET",
    help="Write checkpoints to this storage path every node reaches: a directory (a shared mount) or a "
    "pyarrow filesystem URI (s3://bucket/prefix, gs://..., file:///abs/path) [default: RUN_DIR itself; "
    "resume: the run's, from run.toml]. The commands that read the run fetch the newest from there.",
)


def open_storage(target: str, writable: bool = False):
    """The :class:`cluster.storage.Storage` of a ``--storage`` value (or a run's), listed once (and
    with ``writable``, written to once) so that a bad one is one ``error:`` line here rather than a
    failure mid-run."""

    try:
        storage = Storage(target)
        storage.checkpoints()
        if writable:
            storage.check_writable()
    except StorageError as exc:
        raise CLIError(one_line(exc)) from None
    return storage


def run_storage(run_dir: Path) -> str | None:
    """The storage target recorded in the run's ``run.toml``, or None."""
    return recorded_storage(run_dir)


def sync_from_storage(run_dir: Path, target, required: bool = True) -> Path | None:
    """:func:`blueprint.rundir.sync_from_storage` from ``target`` (a target string or a Storage),
    its notes on stderr; storage that cannot be read is one ``error:`` line."""
    try:
        storage = target if isinstance(target, Storage) else Storage(target)
        return rundir.sync_from_storage(run_dir, storage, required=required, log=_note)
    except StorageError as exc:
        raise CLIError(one_line(exc)) from None


def storage_cache_dir(target: str) -> Path:
    """The local directory a storage URI's checkpoints are fetched into (one per target)."""

    base = Path(os.environ.get("MCCFR_CACHE", Path.home() / ".cache" / "mccfr"))
    digest = hashlib.blake2b(target.rstrip("/").encode(), digest_size=8).hexdigest()
    return base / "storage" / digest


def _storage_cache(target: str) -> Path:
    """A storage URI given where a run directory is expected: its newest complete checkpoint in
    the cache directory (with a ``run.toml`` from its manifest)."""
    storage = open_storage(target)  # a bad URI: one error line
    cache = storage_cache_dir(target)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create the storage cache {cache}: {exc}") from None
    try:
        return rundir.fill_storage_cache(cache, storage, target, log=_note)
    except StorageError as exc:
        raise CLIError(one_line(exc)) from None


def _note(msg: str) -> None:
    click.echo(msg, err=True)


def expl_unit(game) -> tuple[str, float]:
    """(unit, chips -> unit factor): mbb/game for games with a big blind, else chips."""

    bb = big_blind_of(game)
    return ("mbb/game", mbb_per_chip(bb)) if bb else ("chips", 1.0)


def example_matchstate(game) -> str:
    """A valid MATCHSTATE for the first seat to act in round 0, holding the deck's top cards."""

    seat = game.first_player[0]
    top = list(range(game.deck_size - 1, -1, -1))
    hole = cards_str(top[: game.num_hole_cards], game.num_suits)
    cards = "|".join(hole if p == seat else "" for p in range(game.num_players))
    nb = game.num_board_cards[0]
    if nb:
        start = game.num_hole_cards
        cards += "/" + cards_str(top[start : start + nb], game.num_suits)
    return f"MATCHSTATE:{seat}:0::{cards}"


iterations_opt = click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    help="Train this many iterations (one traversal per player each).",
)
time_opt = click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help=f"Train for about this many seconds (default when --iterations is not given: "
    f"{DEFAULT_TIME_BUDGET_HOLDEM:g} for 52-card games, {DEFAULT_TIME_BUDGET:g} for small ones), counted after "
    "the first iteration (which compiles the kernels).",
)
ckpt_opt = click.option(
    "--checkpoint-every",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds between checkpoints (one is also written at the end).",
)
keep_opt = click.option(
    "--keep",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Keep the newest N complete checkpoints.",
)
target_opt = click.option(
    "--target-exploitability",
    "target",
    type=float,
    default=None,
    help="Stop once the exact exploitability (chips) is <= X (small games).",
)
eval_opt = click.option(
    "--eval-every",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Seconds between exact exploitability evaluations (small games; 0 disables).",
)
report_opt = click.option(
    "--report-every",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between progress reports (the live line and a metrics row).",
)


def _threads_value(ctx, param, value):
    """``--threads``: a whole number from 1 to the cores this process may use (None: all of them)."""
    if value is None:
        return None

    cores = available_cores()
    try:
        n = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a whole number of threads (1 to {cores})") from None
    if not 1 <= n <= cores:
        raise click.BadParameter(f"{n} threads: give 1 to {cores}, the cores this process may use")
    return n


threads_opt = click.option(
    "--threads",
    callback=_threads_value,
    default=None,
    metavar="T",
    help="Threads training on the one table (each on a copy merged into it, or lock-free on it; 1 is "
    "bit-exact and deterministic, more are "
    "faster but not reproducible); with Ray, threads per worker [default: every core this process "
    "may use; with Ray, each node's cores shared among its workers].",
)
json_opt = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object as the last line of stdout."
)

ray_opts = [
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="Ray worker actors, with --address or --ray (without them, one machine trains in one "
        "process on its cores) [default: 1; resume: the run's].",
    ),
    click.option(
        "--shards",
        type=click.IntRange(min=1),
        default=None,
        help="Ray regret-shard actors (slices of the tables by betting node) [default: 1; resume: the run's].",
    ),
    click.option(
        "--address",
        default=None,
        help="Ray cluster to join ('auto': the one started with 'ray start'); runs the Ray job.",
    ),
    click.option(
        "--ray",
        "local_ray",
        is_flag=True,
        default=False,
        help="Run the Ray job on this machine (a local Ray) without --address: to try the cluster "
        "path or simulate nodes. Otherwise --workers/--shards without --address train in one "
        "process on this machine's cores, which is faster: Ray pays off between machines.",
    ),
    click.option(
        "--batch",
        type=click.IntRange(min=1),
        default=None,
        help="Iterations per worker per round of the Ray job (rounds may span discount boundaries). "
        "Short rounds spend the time in round trips, long ones in staleness (every worker starts a "
        "round from the same snapshot) [default: table entries / 10, 1,000 to 100,000, chosen by "
        "exploitability per second; resume: the run's].",
    ),
    click.option(
        "--group-size",
        type=click.IntRange(min=0),
        default=None,
        help="Ray job: nodes per group leader (a two-level fan-out: the driver calls one group leader "
        "per G nodes, which pre-sums their deltas per shard; for clusters of tens of nodes and more, "
        "e.g. 14 at 196 nodes) [default: 0, off: the driver calls every node; resume: the run's].",
    ),
    click.option(
        "--private-cards",
        is_flag=True,
        default=False,
        help="Ray job: each worker copies the card table into its own memory instead of reading the "
        "node's shared copy (one table's size more memory per worker; about 12% faster where the "
        "shared memory gets no huge pages, as on Linux by default) [default: on where each node runs "
        "one worker, the default layout; off where a node runs several].",
    ),
    click.option(
        "--verbose",
        is_flag=True,
        default=False,
        help="Ray job: show Ray's own messages (its warnings, its C++ core's errors) in the terminal; "
        "by default they go to RUN_DIR/ray.log.",
    ),
]


def with_ray_opts(f):
    for opt in reversed(ray_opts):
        f = opt(f)
    return f
