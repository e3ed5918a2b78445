"""What every command shares: the error type and its exit status, input-error mapping, the
common options, and small formatting helpers."""

from __future__ import annotations

import contextlib
from math import comb
from pathlib import Path

import click

from blueprint.defaults import DEFAULT_TIME_BUDGET, DEFAULT_TIME_BUDGET_HOLDEM

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


# Exact best response walks every public state with [H, H] matrix products; above this many
# H^2 * public-board operations the evaluation would take minutes (hold'em never qualifies).
EXACT_EVAL_MAX_COST = 1e9


class CLIError(Exception):
    """A problem with what the user asked for: printed as ``error: <message>``, exit status 2."""


@contextlib.contextmanager
def user_input():
    """Turn the project's input-error classes into :class:`CLIError` (imported lazily: they live
    in modules that pull in numpy and numba).

    ``ValueError`` is included because the card abstraction and the trainer's size checks raise it
    for a request that cannot be met (an unknown card abstraction, a deck too big for lossless
    buckets, full-traversal CFR on a big game); use this only around loading and building.
    """
    from abstraction.bets import BetAbstractionError
    from blueprint.algo import AlgoError
    from blueprint.io.errors import CheckpointError
    from holdem.gamedef import GameDefError

    try:
        yield
    except (GameDefError, BetAbstractionError, AlgoError, CheckpointError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def si(x: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}"
    return f"{x:.1f}"


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


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


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
    from cluster.storage import Storage, StorageError

    try:
        storage = Storage(target)
        storage.checkpoints()
        if writable:
            storage.check_writable()
    except StorageError as exc:
        raise CLIError(_one_line(exc)) from None
    return storage


def run_storage(run_dir: Path) -> str | None:
    """The storage target recorded in the run's ``run.toml``, or None."""
    from blueprint.rundir import read_run_toml

    target = read_run_toml(run_dir).get("storage")
    return target if isinstance(target, str) and target else None


def sync_from_storage(run_dir: Path, target, required: bool = True) -> Path | None:
    """Fetch the newest complete checkpoint of ``target`` (a target string or a Storage) into
    ``run_dir/checkpoints`` when it is newer than the local ones (which are then pruned to the
    newest that verifies); returns its local directory, or None when the local one is as new.
    Storage that cannot be read raises :class:`CLIError`, or (``required`` False and a complete
    local checkpoint there) is a warning."""
    from blueprint.checkpoints import list_checkpoints
    from cluster.storage import Storage, StorageError

    try:
        storage = target if isinstance(target, Storage) else Storage(target)
        fetched = storage.sync(run_dir)
    except StorageError as exc:
        if required or not any(i.complete for i in list_checkpoints(run_dir)):
            raise CLIError(_one_line(exc)) from None
        click.echo(f"warning: {_one_line(exc)}; using the newest checkpoint in {run_dir}", err=True)
        return None
    if fetched is not None:
        click.echo(f"fetched {storage.describe(int(fetched.name))} into {fetched}", err=True)
        # the local copies older than it are stale (storage keeps the run's own --keep); one that
        # fails to verify is not counted, so the newest good one stays
        from blueprint.checkpoints import prune_checkpoints
        from blueprint.io.errors import CheckpointError

        with contextlib.suppress(CheckpointError, OSError, ValueError):
            prune_checkpoints(run_dir, 1)
    return fetched


def storage_cache_dir(target: str) -> Path:
    """The local directory a storage URI's checkpoints are fetched into (one per target)."""
    import hashlib
    import os

    base = Path(os.environ.get("MCCFR_CACHE", Path.home() / ".cache" / "mccfr"))
    digest = hashlib.blake2b(target.rstrip("/").encode(), digest_size=8).hexdigest()
    return base / "storage" / digest


def _storage_cache(target: str) -> Path:
    """A storage URI given where a run directory is expected: its newest complete checkpoint in
    the cache directory (with a ``run.toml`` from its manifest)."""
    from blueprint.checkpoints import list_checkpoints
    from blueprint.io.errors import CheckpointError
    from blueprint.io.manifest import read_manifest
    from blueprint.rundir import RUN_TOML, write_run_toml_from_manifest

    open_storage(target)  # a bad URI: one error line
    cache = storage_cache_dir(target)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create the storage cache {cache}: {exc}") from None
    fetched = sync_from_storage(cache, target, required=False)
    if fetched is not None or not (cache / RUN_TOML).exists():
        newest = next((i for i in list_checkpoints(cache) if i.complete), None)
        if newest is not None:
            with contextlib.suppress(CheckpointError, OSError):
                manifest = read_manifest(newest.path)
                write_run_toml_from_manifest(cache, manifest, {"storage": target})
    return cache


def exact_eval_cost(game) -> float:
    """Rough work of one exact best response: private hands^2 x public boards (all rounds)."""
    hands = comb(game.deck_size, game.num_hole_cards)
    remaining = game.deck_size - 2 * game.num_hole_cards
    boards, total = 1, 0
    for k in game.num_board_cards:
        boards *= comb(remaining, k)
        remaining -= k
        total += boards
    return float(hands) ** 2 * total


def exact_eval_problem(tr) -> str | None:
    """Why exact exploitability is out of reach for this trainer's game, or None."""
    from blueprint.best_response import MAX_HANDS

    g = tr.game
    hands = comb(g.deck_size, g.num_hole_cards)
    if hands > MAX_HANDS:
        return f"exact best response needs <= {MAX_HANDS} private hands, {g.name or 'this game'} has {hands}"
    if exact_eval_cost(g) > EXACT_EVAL_MAX_COST:
        return f"{g.name or 'this game'} has too many public boards for an exact best response"
    return None


def expl_unit(game) -> tuple[str, float]:
    """(unit, chips -> unit factor): mbb/game for games with a big blind, else chips."""
    from holdem.reporting import big_blind_of, mbb_per_chip

    bb = big_blind_of(game)
    return ("mbb/game", mbb_per_chip(bb)) if bb else ("chips", 1.0)


def example_matchstate(game) -> str:
    """A valid MATCHSTATE for the first seat to act in round 0, holding the deck's top cards."""
    from holdem.cards import cards_str

    seat = game.first_player[0]
    top = list(range(game.deck_size - 1, -1, -1))
    hole = cards_str(top[: game.num_hole_cards], game.num_suits)
    cards = f"{hole}|" if seat == 0 else f"|{hole}"
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
    from blueprint.threads import available_cores  # numpy and numba: not at the CLI's import

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
