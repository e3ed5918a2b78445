"""The ``mccfr`` command line: train, resume, status, eval, export, matrix, serve, play.

Commands (``mccfr COMMAND --help`` for every flag)::

    mccfr train  [--game G] [--bets B] [--abstraction A] [--algo V]
                 [--iterations N | --time SECONDS] [--out RUN_DIR] [--checkpoint-every SECONDS]
                 [--keep N] [--seed S] [--target-exploitability X] [--eval-every SECONDS]
                 [--report-every SECONDS] [--regret-dtype float32|int32] [--table-bits 16|32]
                 [--workers N] [--shards S] [--address ADDR] [--batch B] [--verbose] [--storage DIR|URI] [--json]
    mccfr resume RUN_DIR [--iterations N | --time SECONDS] [same run-control and Ray flags]
                 [--table-bits 16|32 (a check)] [--storage DIR|URI] [--json]
    mccfr status RUN_DIR [--verify] [--plot FILE.png] [--json]
    mccfr eval   [RUN_DIR | --game G] [--exploitability] [--player SPEC] [--vs SPEC --hands N]
                 [--seed S] [--json]      (SPEC: RUN_DIR[+solve:METHOD], random, always-call,
                                           always-raise, minraise, overbet:X, kuhn-fixed, kuhn-greedy)
    mccfr export RUN_DIR --out FILE.parquet [--json]
    mccfr matrix FILE.csv [--iterations N] [--positive-only] [--fixed-row P,..] [--fixed-column P,..]
                 [--json]
    mccfr serve  RUN_DIR [--host H] [--port P] [--time-budget-ms D] [--threads N]
                 [--solve METHOD [--solve-from ROUND] [--solver-threads N] [--max-solve-ms M]]
                 [--ray [--replicas N] [--address ADDR]]
    mccfr play   (RUN_DIR | --server URL) --dealer HOST:PORT [--log FILE] [--seed S] [--method M] [--json]

One module per command group: :mod:`mccfr.cli.train` (train, resume), :mod:`mccfr.cli.status`,
:mod:`mccfr.cli.evaluate` (eval, export), :mod:`mccfr.cli.matrix`, :mod:`mccfr.cli.abstraction`, :mod:`mccfr.cli.serve`
(serve, play: :mod:`mccfr.serving.service` and :mod:`mccfr.serving.acpc_client`; FastAPI and uvicorn are
imported only by ``serve``), :mod:`mccfr.cli.solve`. The training session shared by train and resume
is :mod:`blueprint.session` (what it prints: :mod:`mccfr.cli.session`); the run directory's layout,
files and storage sync are :mod:`blueprint.rundir`; defaults
shared with the library are :mod:`blueprint.defaults`; what every command shares is
:mod:`mccfr.cli.common`. This is the only package that parses arguments.

Training runs in one process (:class:`blueprint.trainer.Trainer`), or as a Ray job
(:class:`cluster.job.RayJob`, its options a :class:`cluster.config.RayJobConfig`) with ``--workers``/``--shards``/``--address``; ``resume`` continues a
Ray run as a Ray run (same workers, shards, batch unless given). A run directory holds (:mod:`blueprint.rundir`)::

    RUN_DIR/run.toml            resolved config: game (+ its ACPC text), bets, card abstraction,
                                algorithm fields, seed, config and abstraction hashes
    RUN_DIR/checkpoints/<it>/   written every --checkpoint-every seconds, at the end and on
                                Ctrl-C / SIGTERM (the newest --keep are kept)
    RUN_DIR/metrics.jsonl       one JSON object per progress report, appended as it happens
    RUN_DIR/metrics.parquet     the same rows, rewritten atomically at every checkpoint and at exit

Metrics rows: ``iteration``, ``seconds`` (cumulative training-kernel seconds, across resumes),
``wall_seconds`` (since this command started training), ``iterations_per_second`` and
``node_visits_per_second`` (over the interval since the previous row, in kernel time),
``exploitability`` (chips; null when not computed at that row), ``pruned`` (cumulative actions
skipped by regret-based pruning), ``table_bytes``, ``rss_bytes`` (this process), ``time`` (Unix
time), ``checkpoint_seconds`` (the pause of a checkpoint written since the previous row, else
null); Ray runs add ``workers``, ``staleness`` (iterations, mean per batch), ``bytes_per_batch``
and ``worker_rss_bytes`` (the largest worker's resident memory). A failed periodic checkpoint (disk
full, ...) is reported and training goes on (the previous checkpoint is intact); a failed final one
is an error.

Exploitability is exact (OpenSpiel's NashConv / 2) and computed only on games small enough for
the exact best response (Kuhn, Leduc, small decks); elsewhere it is skipped.

``--json`` prints one JSON object as the last line of stdout. train / resume: ``iterations`` (the
run's total), ``iterations_run`` (this command), ``seconds`` (cumulative training seconds),
``wall_seconds``, ``iterations_per_second`` and ``node_visits_per_second`` (this command, leaving
out the first chunk, which compiles the kernels), ``exploitability`` (chips, when computed),
``stopped`` (``iterations``, ``time``, ``target`` or ``signal``), ``run_dir``, ``checkpoint``.
status: the same summary keys from the metrics plus ``checkpoints`` (``iteration``, ``complete``,
``bytes``, ``problem``, ``path``), ``checkpoint_pause_seconds``, ``rss_bytes``, for Ray runs
``workers``, ``staleness``, ``bytes_per_batch``, ``worker_rss_bytes``, and ``plot`` with ``--plot``. eval: ``exploitability``, ``unit``, ``br_values``; a match
(``--vs``): ``mean``, ``ci95``, ``hands``, ``unit`` (chips/hand, or mbb/game with a big blind),
``win_rate`` and, for small games, ``exact`` (see :mod:`mccfr.evaluation.match`). export: ``rows``,
``out``. matrix: ``row``, ``column``, ``value``, ``exploitability``, ``iterations``.

Budgets: ``--time`` counts from the end of the first iteration (numba compiles or loads its kernels
there); ``--iterations`` of resume are N *more* iterations. Ctrl-C or SIGTERM stops at the next
chunk boundary, writes a checkpoint and exits with status 0 (a second signal aborts at once, status
130, keeping the previous checkpoint). ``resume`` moves checkpoints newer than the one it could load
(corrupt or truncated) to ``RUN_DIR/corrupt-checkpoints/`` so that pruning never counts them, and
drops metrics rows past the resumed iteration (those iterations are trained again).

Errors in what the user gave (unknown game, bet abstraction or algorithm, a malformed file, a
missing run directory, no usable checkpoint) print one line ``error: ...`` on stderr and exit 2.

Import cost: this module imports only the standard library, click and
:mod:`mccfr_util.numba_cache`. The commands load lazily (:class:`_Group`, click's lazy-group
pattern): ``mccfr COMMAND`` sets the process's numba settings
(:func:`mccfr_util.numba_cache.configure`: the cache directory, the import hook), then imports that
command's module alone, which imports what it uses at its top; ``mccfr --help`` lists the commands from
:data:`COMMANDS` without importing any. Ray, pyarrow, matplotlib and the HTTP libraries
(FastAPI, uvicorn) are imported only inside the functions that need them, each import with a
comment naming it.
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

import click

from mccfr.cli.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, CLIError, fail
from mccfr_util import numba_cache

_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", type("_Never", (Exception,), {}))


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    try:
        v = version("mccfr")
    except PackageNotFoundError:
        v = "(not installed; running from a source tree)"
    click.echo(f"mccfr {v}")
    ctx.exit()


#: The commands: name -> (module, attribute, short help). The short help is the first sentence of
#: the command's docstring (tests/cli/test_cli.py checks that they agree), so ``mccfr --help``
#: lists them without importing a command's module.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("mccfr.cli.train", "train", "Train a blueprint into a new run directory."),
    "resume": (
        "mccfr.cli.train",
        "resume",
        "Continue a run from its newest complete checkpoint (N more iterations).",
    ),
    "status": (
        "mccfr.cli.status",
        "status",
        "List a run's checkpoints and summarise its metrics (and draw its exploitability curve).",
    ),
    "eval": (
        "mccfr.cli.evaluate",
        "eval_",
        "Evaluate a run's blueprint (exact exploitability, local best response) or play a duplicate match.",
    ),
    "export": ("mccfr.cli.evaluate", "export", "Write the blueprint's average strategy as Parquet."),
    "matrix": ("mccfr.cli.matrix", "matrix", "Regret matching for both players of a zero-sum matrix game."),
    "abstraction": (
        "mccfr.cli.abstraction",
        "abstraction",
        "Card abstractions: build hand-strength buckets (cached, reused by training).",
    ),
    "serve": ("mccfr.cli.serve", "serve", "Serve strategy queries over HTTP + JSON."),
    "play": (
        "mccfr.cli.serve",
        "play",
        "Play a match against an ACPC dealer (protocol 2.0.0) with the run's blueprint (or a service).",
    ),
    "solve": (
        "mccfr.cli.solve",
        "solve",
        "Re-solve a subgame: the strategy for the seat to act, and how well it was solved.",
    ),
}


class _Group(click.Group):
    """The ``mccfr`` group: its commands load on demand (click's lazy-group pattern, from
    :data:`COMMANDS`), and its usage errors and project errors print one ``error:`` line, exit 2."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        numba_cache.configure()  # before the command's module imports kernels (not for --help)
        command = getattr(importlib.import_module(module), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}.{attr} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``mccfr --help``, from :data:`COMMANDS` (no command is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        # a bare command of that help shortens it as the command itself would
        rows = [
            (name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)) for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _NoArgsIsHelp as exc:  # bare `mccfr`: the help, not an error
            click.echo(exc.ctx.get_help())
            rv = 0
        except click.ClickException as exc:
            hint = ""
            ctx = getattr(exc, "ctx", None)
            if isinstance(exc, click.UsageError) and ctx is not None:
                hint = f" (see '{ctx.command_path} --help')"
            fail(f"{exc.format_message()}{hint}")
            rv = EXIT_USER_ERROR
        except CLIError as exc:
            fail(str(exc))
            rv = EXIT_USER_ERROR
        except OSError as exc:  # a file that cannot be read or written: the message names it
            fail(str(exc))
            rv = EXIT_USER_ERROR
        except (click.exceptions.Abort, KeyboardInterrupt):
            fail("interrupted")
            rv = EXIT_INTERRUPTED
        except Exception as exc:
            # A checkpoint that cannot be written (disk full, ...) or read: the message names the
            # file and says which checkpoint is kept; a Ray job that stops (a shard died and could
            # not be restored) says why and where to resume: a traceback would add nothing. Their
            # modules are loaded by the commands that raise them.
            errors = sys.modules.get("blueprint.io.errors")
            job_errors = sys.modules.get("cluster.errors")
            if not (
                (errors is not None and isinstance(exc, errors.CheckpointError))
                or (job_errors is not None and isinstance(exc, job_errors.JobError))
            ):
                raise
            fail(str(exc))
            rv = EXIT_USER_ERROR
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """MCCFR blueprint training for two-player ACPC poker games."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``mccfr = "mccfr.cli.main:main"``)."""
    cli.main(args=argv, prog_name="mccfr")
