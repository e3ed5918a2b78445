"""``mccfr train`` and ``mccfr resume``."""

from __future__ import annotations

import datetime
import json
import os
import shlex
from dataclasses import dataclass, fields, replace
from pathlib import Path

import click

from blueprint.algo import dcfr_overrides
from blueprint.checkpoints import list_checkpoints
from blueprint.defaults import DEFAULT_ALGO, DEFAULT_GAME, DEFAULT_NOLIMIT_BETS, run_config
from blueprint.runconfig import RunConfig
from blueprint.rundir import (
    METRICS_JSONL,
    METRICS_PARQUET,
    RAY_LOG,
    RUN_TOML,
    quarantine_newer,
    read_metrics,
    update_run_toml,
    write_run_toml,
)
from blueprint.session import SessionConfig, SessionError, card_abstraction, exact_eval_problem, human_bytes
from blueprint.threads import available_cores
from blueprint.trainer import Trainer
from cluster.config import RayJobConfig
from cluster.storage import is_uri, normalize_target
from holdem.gamedef import load_gamedef
from mccfr.cli.common import (
    CLIError,
    ckpt_opt,
    eval_opt,
    iterations_opt,
    json_opt,
    keep_opt,
    open_storage,
    report_opt,
    run_dir_arg,
    run_storage,
    storage_opt,
    sync_from_storage,
    target_opt,
    threads_opt,
    time_opt,
    user_input,
    with_ray_opts,
)
from mccfr.cli.session import budget, ray_job, train_session
from mccfr_util.files import atomic_write_bytes


@click.command()
@click.option(
    "--game",
    default=DEFAULT_GAME,
    show_default=True,
    help="A preset (kuhn, leduc, hulhe, hunl, hunl100, ...; more seats: kuhn.limit.3p, leduc.limit.3p, nl6max, ...) or an ACPC .game file.",
)
@click.option(
    "--bets",
    default=None,
    help=f"Bet abstraction for no-limit games: a name (fcpa, small, standard, rich, multiway) or a TOML file "
    f"[default: {DEFAULT_NOLIMIT_BETS}; standard for 52-card games given at least 20 core-minutes of --time].",
)
@click.option(
    "--abstraction",
    default=None,
    help="Card abstraction: lossless, rank, a recipe (small, medium, large, fine: built on first use and cached) or a "
    "built directory [default: lossless for small decks, else fine].",
)
@click.option(
    "--algo",
    default=None,
    help="MCCFR variant: pluribus, dcfr, linear, vanilla; or full-traversal cfr, cfr+ (small games) "
    "[default: pluribus; for a timed 52-card no-limit run with small bets, dcfr with "
    "--dcfr-params 1.5 0.75 2].",
)
@iterations_opt
@time_opt
@click.option(
    "--out", "out", default=None, help="Run directory [default: runs/<game>-<algo>-<YYYYmmdd-HHMMSS>]."
)
@ckpt_opt
@keep_opt
@storage_opt
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every sampler.")
@threads_opt
@target_opt
@eval_opt
@report_opt
@click.option(
    "--regret-dtype",
    type=click.Choice(["float32", "int32"]),
    default=None,
    help="Regret storage [default: the algorithm's, float32].",
)
@click.option(
    "--table-bits",
    "table_bits",
    type=click.Choice(["16", "32"]),
    default=None,
    help="Table width: 32 (float32 regrets and strategy sums, 8 bytes per entry) or 16 (bfloat16 "
    "with stochastic rounding, 4 bytes per entry: half the memory; threads share one table; not on "
    "Ray) [default: 32].",
)
@click.option(
    "--explore",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=None,
    metavar="EPS",
    help="Sample the opponent's actions from (1-EPS) x its strategy + EPS x uniform (a trembling "
    "opponent, no importance weights) [default: 0].",
)
@click.option(
    "--dcfr-params",
    "dcfr_params",
    type=(float, float, float),
    default=None,
    metavar="ALPHA BETA GAMMA",
    help="With --algo dcfr: its discounts, positive regrets by k^ALPHA/(k^ALPHA+1), negative ones by "
    "k^BETA/(k^BETA+1), the average by (k/(k+1))^GAMMA at each boundary k [default: 1.5 0 2]. "
    "BETA 0.5 halves the main job's LBR at 3 minutes (BENCHMARKS.md, abstraction ladder).",
)
@click.option(
    "--prune/--no-prune",
    "prune",
    default=None,
    help="Regret-based pruning as in Pluribus: after a warm-up (20,000 iterations for dcfr and "
    "pluribus, none for linear and vanilla), 95% of traversals skip the actions whose regret is below "
    "-64 times the pot at the node (never on the last round, never an action that ends the "
    "hand, never all of a node's), with a regret floor [default: on for dcfr and pluribus].",
)
@with_ray_opts
@json_opt
def train(**options):
    """Train a blueprint into a new run directory."""
    _train(TrainOptions.of(options))


def _take(cls, options: dict):
    """A record of ``cls`` from the command's options its fields name (taken out of ``options``)."""
    return cls(**{f.name: options.pop(f.name) for f in fields(cls)})


@dataclass(frozen=True, kw_only=True)
class RayOptions:
    """The Ray job's shape as given (None: the job's own, or a resumed job's)."""

    workers: int | None
    shards: int | None
    address: str | None
    batch: int | None
    group_size: int | None
    local_ray: bool
    private_cards: bool
    verbose: bool

    def runs_ray(self, was_ray: bool = False) -> bool:
        """Whether this run trains on Ray: with ``--address``, ``--ray``, ``--group-size``, or a
        Ray run resumed. ``--workers``/``--shards`` alone on one machine train in one process on
        its cores instead, with a note: threads on one table beat Ray workers there (rounds,
        snapshots and staleness cost exploitability per second; BENCHMARKS.md, "Ray job")."""
        ray = self.address is not None or self.local_ray or bool(self.group_size) or was_ray
        if not ray and ((self.workers or 1) > 1 or (self.shards or 1) > 1):
            click.echo(
                "note: --workers/--shards without --address: training in one process on this machine's "
                "cores (threads on one table are faster than Ray workers on one machine); pass --address "
                "to train on a cluster, or --ray to run the Ray job here anyway",
                err=True,
            )
        return ray


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The options ``train`` and ``resume`` share: the session's (the budget as given, checkpoints,
    evaluation, reports), threads, storage, the Ray job's shape, ``--json``."""

    session: SessionConfig
    threads: int | None
    storage: str | None
    ray: RayOptions
    as_json: bool

    @classmethod
    def of(cls, options: dict) -> RunOptions:
        """The shared options, taken out of the command's ``options``."""
        try:
            session = _take(SessionConfig, options)
        except SessionError as exc:  # both budgets
            raise click.UsageError(str(exc)) from None
        ray = _take(RayOptions, options)
        return cls(session=session, ray=ray, **{k: options.pop(k) for k in ("threads", "storage", "as_json")})

    def session_for(self, iterations: int | None, seconds: float | None) -> SessionConfig:
        """The session's config with the budget resolved (:func:`mccfr.cli.session.budget`)."""
        return replace(self.session, iterations=iterations, seconds=seconds)


@dataclass(frozen=True, kw_only=True)
class AlgoOptions:
    """The algorithm's flags as given (None: the algorithm's own)."""

    regret_dtype: str | None
    table_bits: str | None
    explore: float | None
    dcfr_params: tuple[float, float, float] | None
    prune: bool | None


@dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """``mccfr train``'s options: the run's game, abstractions, algorithm and seed, where it goes,
    and how it runs."""

    game: str
    bets: str | None
    abstraction: str | None
    algo: str | None
    algo_options: AlgoOptions
    seed: int
    out: str | None
    run: RunOptions

    @classmethod
    def of(cls, options: dict) -> TrainOptions:
        options = dict(options)
        run, algo_options = RunOptions.of(options), _take(AlgoOptions, options)
        return cls(run=run, algo_options=algo_options, **options)


def _train(o: TrainOptions) -> None:
    if o.seed < 0:
        raise click.BadParameter("must be >= 0", param_hint="--seed")
    label = Path(o.game).stem if Path(o.game).suffix else o.game
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = o.out if o.out is not None else os.path.join("runs", f"{label}-{o.algo or DEFAULT_ALGO}-{stamp}")
    run_dir = Path(out)
    if run_dir.exists() and not run_dir.is_dir():
        raise CLIError(f"--out {out!r} exists and is not a directory")
    with user_input():
        if list_checkpoints(run_dir):
            raise CLIError(
                f"{out} already has checkpoints; continue it with 'mccfr resume {shlex.quote(out)}' "
                f"or choose another --out"
            )
        store = _new_storage(o.run.storage, run_dir, out)
        gd = load_gamedef(o.game)  # the game, parsed once: the config and the budget take it
        iterations, seconds = budget(o.run.session.iterations, o.run.session.seconds, big=gd.deck_size > 16)
        # everything the user gave is checked before the card abstraction's step (minutes)
        config = _run_config(o, gd, seconds)
        if o.out is None:  # named again once the algorithm is known
            out = os.path.join("runs", f"{label}-{config.algo.name}-{stamp}")
            run_dir = Path(out)
        tr = Trainer(config, card_abstraction(gd, config.cards, log=_note))
    if o.run.session.target is not None and exact_eval_problem(tr):
        raise CLIError(f"--target-exploitability needs exact exploitability: {exact_eval_problem(tr)}")
    _new_run_dir(run_dir, out, tr, store)
    ray = o.run.ray.runs_ray()
    _set_threads(tr, o.run.threads, ray)
    click.echo(
        f"training {gd.name or o.game} with {config.algo.name} (seed {o.seed}, {_threads_text(tr)}) into "
        f"{run_dir}: {tr.size:,} table entries, {human_bytes(tr.table_bytes)}"
        + (f"; checkpoints to {store.target}" if store is not None else ""),
        err=True,
    )
    job = None
    if ray:
        if config.algo.table_bits == 16:
            raise CLIError("--table-bits 16 trains in one process; the Ray job's shards keep 32-bit tables")
        if config.algo.full_traversal:
            raise CLIError(
                f"--algo {config.algo.name} enumerates every deal and runs in one process; drop --workers/--shards"
            )
        job = ray_job(tr, _job_options(o.run, run_dir, group_size=o.run.ray.group_size or None))
    train_session(tr, job, run_dir, o.run.as_json, o.run.session_for(iterations, seconds), storage=store)


def _note(msg: str) -> None:
    click.echo(msg, err=True)


def _run_config(o: TrainOptions, gd, seconds: float | None) -> RunConfig:
    """The run's config, built once by :func:`blueprint.defaults.run_config` (the bets loaded,
    the algorithm resolved and checked; the defaults the budget chose said on stderr), and the
    flags that apply to some algorithms only checked (``--prune`` first, as the default algorithm
    is never full traversal)."""
    a = o.algo_options
    if a.prune and o.algo in ("cfr", "cfr+"):
        raise click.BadParameter(f"applies to sampled algorithms, not {o.algo}", param_hint="--prune")
    config = run_config(
        o.game,
        gd,
        bets=o.bets,
        cards=o.abstraction,
        algo=o.algo,
        seed=o.seed,
        seconds=seconds,
        cores=o.run.threads if o.run.threads is not None else available_cores(),
        log=_note,
        regret_dtype=a.regret_dtype,
        table_bits=int(a.table_bits) if a.table_bits is not None else None,
        explore=a.explore,
        prune=a.prune,
        **(dcfr_overrides(a.dcfr_params) if a.dcfr_params is not None else {}),
    )
    if a.dcfr_params is not None and config.algo.name != "dcfr":
        raise click.BadParameter(
            f"applies to --algo dcfr, not {config.algo.name}", param_hint="--dcfr-params"
        )
    return config


def _new_run_dir(run_dir: Path, out: str, tr, store) -> None:
    """Create the run directory (clearing metrics left by a run that never checkpointed) and write
    its ``run.toml``."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create run directory {out!r}: {exc}") from None
    for stale in (METRICS_JSONL, METRICS_PARQUET):  # leftovers of a run that never checkpointed
        (run_dir / stale).unlink(missing_ok=True)
    created = {"created": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    write_run_toml(run_dir, tr, {**created, **({"storage": store.target} if store is not None else {})})


def _job_options(o: RunOptions, run_dir: Path, **shape) -> dict:
    """The Ray job's options from the command's (``shape``: workers, shards, ... when not the
    command's own, as a resumed job's)."""
    options = {
        "workers": o.ray.workers,
        "threads": o.threads,
        "shards": o.ray.shards,
        "batch": o.ray.batch,
        "address": o.ray.address,
        "group_size": o.ray.group_size,
        "share_cards": False if o.ray.private_cards else None,
        "ray_log": None if o.ray.verbose else run_dir / RAY_LOG,
    }
    options.update(shape)
    return options


def _set_threads(tr, threads: int | None, ray: bool) -> None:
    """The threads a single-process run trains on: ``--threads``, else every core. Full-traversal
    CFR trains on one; so does the Ray job's driver (its workers take ``--threads``, by default
    their node's cores shared among its workers: :class:`cluster.job.RayJob`)."""

    if tr.config.algo.full_traversal:
        if threads is not None and threads > 1:
            why = f"--algo {tr.config.algo.name} enumerates every deal on one thread"
            click.echo(f"warning: --threads {threads} is ignored: {why}", err=True)
        tr.set_threads(1)
    elif ray:
        tr.set_threads(1)
    else:
        tr.set_threads(threads if threads is not None else available_cores())


def _threads_text(tr) -> str:
    return "1 thread" if tr.threads == 1 else f"{tr.threads} threads"


def _new_storage(target: str | None, run_dir: Path, out: str):
    """The ``--storage`` of a new run (None without one): opened and listed (a bad target is one
    error line before anything is built), holding no checkpoint yet, and not the run directory."""
    if target is None:
        return None

    if not is_uri(target) and Path(target).expanduser().resolve() == run_dir.resolve():
        raise CLIError(f"--storage {target!r} is the run directory itself; leave --storage out")
    store = open_storage(normalize_target(target), writable=True)
    if store.newest() is not None:
        raise CLIError(
            f"storage {target} already has checkpoints (of another run?); choose another --storage, "
            f"or continue that run with 'mccfr resume {shlex.quote(out)} --storage {shlex.quote(target)}'"
        )
    return store


@click.command()
@click.argument("run_dir")
@iterations_opt
@time_opt
@ckpt_opt
@keep_opt
@storage_opt
@threads_opt
@target_opt
@eval_opt
@report_opt
@click.option(
    "--table-bits",
    "table_bits",
    type=click.Choice(["16", "32"]),
    default=None,
    help="The table width the run must have (a check: a run keeps its width) [default: the run's].",
)
@with_ray_opts
@json_opt
def resume(run_dir, table_bits, **options):
    """Continue a run from its newest complete checkpoint (N more iterations). A Ray run goes on as a
    Ray run with the same workers, shards and batch (unless given). A run with checkpoints in
    storage (``--storage``, or the one its run.toml records) resumes from the newest there when it
    is newer than the run directory's, and goes on writing there."""
    _resume(run_dir, RunOptions.of(dict(options)), table_bits)


def _resume(run_dir: str, o: RunOptions, table_bits: str | None = None) -> None:
    path, store = _resume_storage(run_dir, o.storage)
    with user_input():
        # the run's layout (from each manifest's config) is checked before any table is read;
        # damaged newer checkpoints are reported and skipped, then quarantined below
        tr, manifest = Trainer.load_checkpoint(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    if table_bits is not None and int(table_bits) != tr.table_bits:
        raise CLIError(
            f"{path} holds {tr.table_bits}-bit tables; --table-bits {table_bits} cannot resume it "
            f"(a run keeps its table width; nothing converts {tr.table_bits}-bit tables to {table_bits}-bit)"
        )
    iterations, seconds = budget(o.session.iterations, o.session.seconds, big=tr.game.deck_size > 16)
    ray = o.ray.runs_ray(bool(manifest.get("job")))
    _set_threads(tr, o.threads, ray)
    click.echo(
        f"resuming {path} from the checkpoint at iteration {tr.iteration:,} ({_threads_text(tr)})", err=True
    )
    quarantine_newer(path, tr.iteration)
    _drop_metrics_past(path, tr.iteration)
    if not (path / RUN_TOML).exists():
        write_run_toml(
            path,
            tr,
            {"created": "unknown (rewritten by resume)", **({"storage": store.target} if store else {})},
        )
    elif store is not None and store.target != run_storage(path):
        update_run_toml(path, storage=store.target)
    if store is not None:
        click.echo(f"checkpoints to {store.target}", err=True)
    job = None
    if ray:
        shape = RayJobConfig.resume_options(
            manifest,
            workers=o.ray.workers,
            shards=o.ray.shards,
            batch=o.ray.batch,
            address=o.ray.address,
            group_size=o.ray.group_size,
        )
        job = ray_job(tr, _job_options(o, path, **shape))
    train_session(tr, job, path, o.as_json, o.session_for(iterations, seconds), storage=store)


def _resume_storage(run_dir: str, storage: str | None):
    """The local run directory of a resume and its storage (``--storage``, else the one its
    run.toml records; None without one), with the newest checkpoint there fetched."""
    if "://" in run_dir:
        raise CLIError(
            f"resume needs a local run directory (its run.toml and metrics), not {run_dir!r}; "
            f"name the storage with --storage: mccfr resume RUN_DIR --storage {shlex.quote(run_dir)}"
        )
    store = None
    if storage is not None:
        store = open_storage(normalize_target(storage), writable=True)
        if not os.path.exists(run_dir):  # a fresh directory on this machine for a run kept in storage
            try:
                Path(run_dir).mkdir(parents=True)
            except OSError as exc:
                raise CLIError(f"cannot create run directory {run_dir!r}: {exc}") from None
    path = run_dir_arg(run_dir, fetch=False)
    recorded = run_storage(path)
    if store is None and recorded is not None:
        store = open_storage(recorded, writable=True)
    if store is not None:
        sync_from_storage(path, store)
    return path, store


def _drop_metrics_past(path: Path, iteration: int) -> None:
    """Drop the metrics rows past the resumed checkpoint (the run died after it: those iterations
    are trained again)."""
    rows = read_metrics(path)
    kept = [r for r in rows if r["iteration"] <= iteration]
    if len(kept) != len(rows):
        click.echo(
            f"dropping {len(rows) - len(kept)} metrics rows past iteration {iteration:,} (after the checkpoint)",
            err=True,
        )
        atomic_write_bytes(path / METRICS_JSONL, "".join(json.dumps(r) + "\n" for r in kept).encode())
