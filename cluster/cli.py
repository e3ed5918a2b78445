"""The ``mccfr`` command line: train, resume, status, eval, export, matrix, serve, play.

Commands (``mccfr COMMAND --help`` for every flag)::

    mccfr train  [--game G] [--bets B] [--abstraction A] [--algo V]
                 [--iterations N | --time SECONDS] [--out RUN_DIR] [--checkpoint-every SECONDS]
                 [--keep N] [--seed S] [--target-exploitability X] [--eval-every SECONDS]
                 [--report-every SECONDS] [--regret-dtype float32|int32]
                 [--workers N] [--shards S] [--address ADDR] [--batch B] [--json]
    mccfr resume RUN_DIR [--iterations N | --time SECONDS] [same run-control and Ray flags] [--json]
    mccfr status RUN_DIR [--verify] [--plot FILE.png] [--json]
    mccfr eval   [RUN_DIR | --game G] [--exploitability] [--player SPEC] [--vs SPEC --hands N]
                 [--seed S] [--json]
    mccfr export RUN_DIR --out FILE.parquet [--json]
    mccfr matrix FILE.csv [--iterations N] [--positive-only] [--fixed-row P,..] [--fixed-column P,..]
                 [--json]
    mccfr serve  RUN_DIR [--host H] [--port P] [--time-budget-ms D] [--threads N]
                 [--solve METHOD [--solve-from ROUND] [--solver-threads N] [--max-solve-ms M]]
                 [--ray [--replicas N] [--address ADDR]]
    mccfr play   (RUN_DIR | --server URL) --dealer HOST:PORT [--log FILE] [--seed S] [--method M] [--json]

``serve`` and ``play`` are :mod:`subgame.service` and :mod:`subgame.acpc_client`; FastAPI and
uvicorn are imported only by ``serve``.

Training runs in one process (:class:`blueprint.trainer.Trainer`), or as a Ray job
(:class:`cluster.job.RayJob`) with ``--workers``/``--shards``/``--address``; ``resume`` continues a
Ray run as a Ray run (same workers, shards, batch unless given). A run directory holds (see
DESIGN.md, "Files")::

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
``win_rate`` and, for small games, ``exact`` (see :mod:`blueprint.match`). export: ``rows``,
``out``. matrix: ``row``, ``column``, ``value``, ``exploitability``, ``iterations``.

Budgets: ``--time`` counts from the end of the first iteration (numba compiles or loads its kernels
there); ``--iterations`` of resume are N *more* iterations. Ctrl-C or SIGTERM stops at the next
chunk boundary, writes a checkpoint and exits with status 0 (a second signal aborts at once, status
130, keeping the previous checkpoint). ``resume`` moves checkpoints newer than the one it could load
(corrupt or truncated) to ``RUN_DIR/corrupt-checkpoints/`` so that pruning never counts them, and
drops metrics rows past the resumed iteration (those iterations are trained again).

Errors in what the user gave (unknown game, bet abstraction or algorithm, a malformed file, a
missing run directory, no usable checkpoint) print one line ``error: ...`` on stderr and exit 2.

Import cost: this module imports only the standard library and click at the top; numpy, numba,
the trainer and pyarrow are imported inside the commands that need them, so ``mccfr --help`` and
argument errors are instant.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shlex
import signal
import sys
import threading
import time
from math import comb
from pathlib import Path
from typing import Any

import click

from cluster import rss_bytes

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

DEFAULT_TIME_BUDGET = 30.0  # seconds, when neither --iterations nor --time is given (small games)
DEFAULT_TIME_BUDGET_HOLDEM = 180.0  # the same for 52-card games
DEFAULT_GAME = "hunl100"  # the main job: heads-up no-limit hold'em, 100 big blinds
DEFAULT_NOLIMIT_BETS = "small"  # pot and all-in, at most two raises a round
RUN_TOML = "run.toml"
METRICS_JSONL = "metrics.jsonl"
METRICS_PARQUET = "metrics.parquet"
RUN_TOML_FORMAT = 1

# Exact best response walks every public state with [H, H] matrix products; above this many
# H^2 * public-board operations the evaluation would take minutes (hold'em never qualifies).
EXACT_EVAL_MAX_COST = 1e9


class CLIError(Exception):
    """A problem with what the user asked for: printed as ``error: <message>``, exit status 2."""


@contextlib.contextmanager
def _user_input():
    """Turn the project's input-error classes into :class:`CLIError` (imported lazily: they live
    in modules that pull in numpy and numba).

    ``ValueError`` is included because the card abstraction and the trainer's size checks raise it
    for a request that cannot be met (an unknown card abstraction, a deck too big for lossless
    buckets, full-traversal CFR on a big game); use this only around loading and building.
    """
    from abstraction.bets import BetAbstractionError
    from blueprint.algo import AlgoError
    from blueprint.checkpoint import CheckpointError
    from holdem.gamedef import GameDefError

    try:
        yield
    except (GameDefError, BetAbstractionError, AlgoError, CheckpointError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)


# -------------------------------------------------------------------------------------------------
# the command group: every error becomes one "error: ..." line


_NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", type("_Never", (Exception,), {}))


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("mccfr")
    except PackageNotFoundError:
        v = "(not installed; running from a source tree)"
    click.echo(f"mccfr {v}")
    ctx.exit()


class _Group(click.Group):
    """A click group whose usage errors and project errors print one ``error:`` line, exit 2."""

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
            _fail(f"{exc.format_message()}{hint}")
            rv = EXIT_USER_ERROR
        except CLIError as exc:
            _fail(str(exc))
            rv = EXIT_USER_ERROR
        except OSError as exc:  # a file that cannot be read or written: the message names it
            _fail(str(exc))
            rv = EXIT_USER_ERROR
        except (click.exceptions.Abort, KeyboardInterrupt):
            _fail("interrupted")
            rv = EXIT_INTERRUPTED
        except Exception as exc:
            # A checkpoint that cannot be written (disk full, ...) or read: the message names the
            # file and says which checkpoint is kept; a traceback would add nothing.
            checkpoint = sys.modules.get("blueprint.checkpoint")
            if checkpoint is None or not isinstance(exc, checkpoint.CheckpointError):
                raise
            _fail(str(exc))
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
    """Console-script entry point (``mccfr = "cluster.cli:main"``)."""
    cli.main(args=argv, prog_name="mccfr")


# -------------------------------------------------------------------------------------------------
# small helpers


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary name in the same directory, fsync, rename."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _si(x: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}"
    return f"{x:.1f}"


def _run_dir_arg(run_dir: str) -> Path:
    path = Path(run_dir)
    if not path.exists():
        raise CLIError(f"run directory {run_dir!r} does not exist")
    if not path.is_dir():
        raise CLIError(f"{run_dir!r} is not a directory (expected a run directory made by 'mccfr train')")
    return path


def _exact_eval_cost(game) -> float:
    """Rough work of one exact best response: private hands^2 x public boards (all rounds)."""
    hands = comb(game.deck_size, game.num_hole_cards)
    remaining = game.deck_size - 2 * game.num_hole_cards
    boards, total = 1, 0
    for k in game.num_board_cards:
        boards *= comb(remaining, k)
        remaining -= k
        total += boards
    return float(hands) ** 2 * total


def _exact_eval_problem(tr) -> str | None:
    """Why exact exploitability is out of reach for this trainer's game, or None."""
    from blueprint.evaluate import MAX_HANDS

    g = tr.game
    hands = comb(g.deck_size, g.num_hole_cards)
    if hands > MAX_HANDS:
        return f"exact best response needs <= {MAX_HANDS} private hands, {g.name or 'this game'} has {hands}"
    if _exact_eval_cost(g) > EXACT_EVAL_MAX_COST:
        return f"{g.name or 'this game'} has too many public boards for an exact best response"
    return None


def _expl_unit(game) -> tuple[str, float]:
    """(unit, chips -> unit factor): mbb/game for games with a big blind, else chips."""
    if game.blind[0] != game.blind[1] and game.big_blind > 0:
        return "mbb/game", 1000.0 / game.big_blind
    return "chips", 1.0


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


# -------------------------------------------------------------------------------------------------
# run.toml and metrics


def _write_run_toml(run_dir: Path, tr, extra: dict[str, Any]) -> None:
    import tomli_w

    cfg = {k: v for k, v in tr.config_dict.items() if v is not None and k != "algo"}
    doc: dict[str, Any] = {
        "format": RUN_TOML_FORMAT,
        **extra,
        "config_hash": tr.config_hash,
        "abstraction_hash": tr.abstraction_hash,
        **cfg,
        "card_abstraction": tr.cards.name,
        "card_buckets": list(tr.cards.num_buckets),
        "table_entries": int(tr.size),
        "algo": tr.config_dict["algo"],
    }
    _atomic_write_bytes(run_dir / RUN_TOML, tomli_w.dumps(doc, multiline_strings=True).encode())


def _read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Rows of ``metrics.jsonl`` (a torn last line from a crash is skipped)."""
    path = run_dir / METRICS_JSONL
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(row, dict) and "iteration" in row:
                    rows.append(row)
    except FileNotFoundError:
        pass
    return rows


_METRIC_FIELDS = (
    ("iteration", "int64"),
    ("seconds", "float64"),
    ("wall_seconds", "float64"),
    ("iterations_per_second", "float64"),
    ("node_visits_per_second", "float64"),
    ("exploitability", "float64"),
    ("pruned", "int64"),
    ("table_bytes", "int64"),
    ("rss_bytes", "int64"),
    ("time", "float64"),
    ("checkpoint_seconds", "float64"),
    ("workers", "int64"),
    ("staleness", "float64"),
    ("bytes_per_batch", "float64"),
    ("worker_rss_bytes", "int64"),
)


def _write_metrics_parquet(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in _METRIC_FIELDS])
    table = pa.Table.from_pylist([{k: r.get(k) for k, _ in _METRIC_FIELDS} for r in rows], schema=schema)
    path = run_dir / METRICS_PARQUET
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -------------------------------------------------------------------------------------------------
# the training loop shared by train and resume


class _Session:
    """Drives ``Trainer.run`` with progress, metrics, evaluation, checkpoints and signals."""

    def __init__(
        self,
        tr,
        run_dir: Path,
        *,
        iterations: int | None,
        seconds: float | None,
        checkpoint_every: float,
        keep: int,
        eval_every: float,
        report_every: float,
        target: float | None,
    ):
        self.tr = tr
        self.run_dir = run_dir
        self.iterations = iterations
        self.budget_seconds = seconds
        self.checkpoint_every = checkpoint_every
        self.keep = keep
        self.eval_every = eval_every
        self.report_every = report_every
        self.target = target
        self.eval_problem = _exact_eval_problem(tr) if (eval_every > 0 or target is not None) else "disabled"
        if target is not None and self.eval_problem:
            raise CLIError(f"--target-exploitability needs exact exploitability: {self.eval_problem}")
        self.rows = _read_metrics(run_dir)
        self.metrics_file = None
        self.bar = None
        self.tty = sys.stderr.isatty()
        self.signal_name: str | None = None
        self.stop_reason = "iterations" if iterations is not None else "time"
        self.last_expl: float | None = None
        self.last_expl_iter = -1
        self.last_ckpt_iter = tr.iteration
        self.last_ckpt_path: Path | None = None
        self.ckpt_pause: float | None = None

    # -- output ---------------------------------------------------------------------------------
    def note(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=sys.stderr)
        else:
            click.echo(msg, err=True)

    def _status_text(self, row: dict[str, Any]) -> str:
        parts = [f"visits/s {_si(row['node_visits_per_second'])}"]
        if self.last_expl is not None:
            parts.append(f"expl {self.last_expl:.4g}")
        if row["pruned_share"] is not None:
            parts.append(f"pruned {100 * row['pruned_share']:.1f}%")
        parts.append(f"mem {_human_bytes(row['rss_bytes'])}")
        if row.get("workers") is not None:  # the Ray job
            parts.append(f"{row['workers']} workers, stale {row['staleness']:.0f} it, "
                         f"worker mem {_human_bytes(row['worker_rss_bytes'] or 0)}")
        return ", ".join(parts)

    # -- pieces ---------------------------------------------------------------------------------
    def evaluate(self) -> float | None:
        if self.eval_problem is not None:
            return None
        if self.last_expl_iter == self.tr.iteration:
            return self.last_expl
        try:
            expl, _ = self.tr.exploitability()
        except ValueError as exc:  # too many private hands: skip silently from now on
            self.eval_problem = str(exc)
            return None
        self.last_expl, self.last_expl_iter = float(expl), self.tr.iteration
        return self.last_expl

    def checkpoint(self) -> None:
        t = time.perf_counter()
        self.last_ckpt_path = self.tr.save(self.run_dir, keep=self.keep)
        self.ckpt_pause = time.perf_counter() - t  # training waits this long; the next row says so
        self.last_ckpt_iter = self.tr.iteration
        self._flush_metrics_parquet()

    def _flush_metrics_parquet(self) -> None:
        if self.rows:
            _write_metrics_parquet(self.run_dir, self.rows)

    def report(self, now: float, with_eval: bool) -> dict[str, Any]:
        tr = self.tr
        d_sec = tr.seconds - self.prev_seconds
        d_it = tr.iteration - self.prev_iter
        d_vis = tr.node_visits - self.prev_visits
        d_pr = tr.pruned - self.prev_pruned
        expl = self.evaluate() if with_eval else None
        last = self.rows[-1] if self.session_rows else None
        if last is not None and d_it == 0:
            # Nothing trained since the previous row (the final report right after a periodic one):
            # add a row only to record an exploitability that row lacks.
            if expl is None or last["exploitability"] is not None:
                return last
            ips, vps = last["iterations_per_second"], last["node_visits_per_second"]
        else:
            ips = d_it / d_sec if d_sec > 0 else 0.0
            vps = d_vis / d_sec if d_sec > 0 else 0.0
        row = {
            "iteration": tr.iteration,
            "seconds": tr.seconds,
            "wall_seconds": now - self.t0,
            "iterations_per_second": ips,
            "node_visits_per_second": vps,
            "exploitability": expl,
            "pruned": tr.pruned,
            "table_bytes": int(tr.regret.nbytes + tr.strat.nbytes),
            "rss_bytes": rss_bytes(),
            "time": time.time(),
            "checkpoint_seconds": self.ckpt_pause,
        }
        self.ckpt_pause = None
        if hasattr(tr, "stats"):  # the Ray job
            st = tr.stats()
            row.update({k: st[k] for k in ("workers", "staleness", "bytes_per_batch", "worker_rss_bytes")})
        self.rows.append(row)
        self.session_rows += 1
        self.metrics_file.write(json.dumps(row) + "\n")
        self.metrics_file.flush()
        self.prev_seconds, self.prev_iter = tr.seconds, tr.iteration
        self.prev_visits, self.prev_pruned = tr.node_visits, tr.pruned
        shown = dict(row, pruned_share=(d_pr / d_vis if d_vis > 0 else None))
        if self.bar is not None:
            self.bar.update(tr.iteration - self.bar.n - self.start_iter)
            self.bar.set_postfix_str(self._status_text(shown), refresh=True)
        elif now - self.last_plain >= 60.0:
            self.last_plain = now
            click.echo(
                f"iteration {tr.iteration:,}: {_si(row['iterations_per_second'])} it/s, "
                + self._status_text(shown),
                err=True,
            )
        return row

    # -- signals --------------------------------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        if self.signal_name is not None:  # a second signal: give up on the clean stop
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        self.note(
            f"{self.signal_name}: stopping at the next chunk boundary and writing a checkpoint "
            f"(send it again to abort without one)"
        )

    # -- the loop -------------------------------------------------------------------------------
    def callback(self, tr) -> bool:
        now = time.perf_counter()
        if self.first_chunk_done is None:
            # The first chunk (one iteration) includes compiling or loading the numba kernels: it
            # counts neither in the session's rates nor against --time.
            self.first_chunk_done = (tr.iteration, tr.seconds, tr.node_visits)
            if self.budget_seconds is not None:
                self.deadline = now + self.budget_seconds
        stop = False
        if self.signal_name is not None:
            self.stop_reason, stop = "signal", True
        elif self.deadline is not None and now >= self.deadline:
            self.stop_reason, stop = "time", True
        if not stop and now - self.last_report >= self.report_every:
            with_eval = self.eval_problem is None and now - self.last_eval >= self.eval_every
            self.report(now, with_eval)
            self.last_report = time.perf_counter()
            if with_eval:
                self.last_eval = self.last_report
            if (
                self.target is not None
                and self.last_expl is not None
                and self.last_expl_iter == tr.iteration
                and self.last_expl <= self.target
            ):
                self.stop_reason, stop = "target", True
        if not stop and now - self.last_ckpt >= self.checkpoint_every:
            from blueprint.checkpoint import CheckpointError

            try:
                self.checkpoint()
                self.note(f"checkpoint at iteration {tr.iteration:,}: {self.last_ckpt_path}")
            except CheckpointError as exc:  # disk full, ...: the previous one is intact; go on
                self.note(f"warning: {exc}; training goes on and tries again in {self.checkpoint_every:g} s")
            self.last_ckpt = time.perf_counter()
        return stop

    def run(self) -> dict[str, Any]:
        tr = self.tr
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + self.budget_seconds if self.budget_seconds is not None else None
        self.last_report = self.last_eval = self.last_ckpt = self.t0
        self.last_plain = self.t0
        self.start_iter, self.start_seconds, self.start_visits = tr.iteration, tr.seconds, tr.node_visits
        self.prev_seconds, self.prev_iter = tr.seconds, tr.iteration
        self.prev_visits, self.prev_pruned = tr.node_visits, tr.pruned
        self.first_chunk_done = None
        self.session_rows = 0
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.iterations,
                unit="it",
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
                desc=tr.game.name or "train",
                mininterval=0.5,
            )
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            with open(self.run_dir / METRICS_JSONL, "a") as self.metrics_file:
                remaining = self.iterations if self.iterations is not None else 2**62
                tr.run(remaining, self.callback, report_seconds=min(0.5, self.report_every))
                if self.target is not None and self.stop_reason != "signal":
                    expl = self.evaluate()
                    if expl is not None and expl <= self.target:
                        self.stop_reason = "target"
                self.report(time.perf_counter(), with_eval=True)
                if tr.iteration != self.last_ckpt_iter or self.last_ckpt_path is None:
                    self.checkpoint()
                else:
                    self._flush_metrics_parquet()
        finally:
            for sig, old in handlers.items():
                signal.signal(sig, old)
            if self.bar is not None:
                self.bar.close()
                self.bar = None
        return self.summary(time.perf_counter() - self.t0)

    def summary(self, wall: float) -> dict[str, Any]:
        tr = self.tr
        # Rates over this session, leaving out the first chunk (it includes the numba compile).
        base_it, base_sec, base_vis = self.first_chunk_done or (
            self.start_iter,
            self.start_seconds,
            self.start_visits,
        )
        if tr.iteration - base_it <= 0 or tr.seconds - base_sec <= 0:
            base_it, base_sec, base_vis = self.start_iter, self.start_seconds, self.start_visits
        d_sec = tr.seconds - base_sec
        out = {
            "iterations": tr.iteration,
            "iterations_run": tr.iteration - self.start_iter,
            "seconds": tr.seconds,
            "wall_seconds": wall,
            "iterations_per_second": (tr.iteration - base_it) / d_sec if d_sec > 0 else 0.0,
            "node_visits_per_second": (tr.node_visits - base_vis) / d_sec if d_sec > 0 else 0.0,
        }
        if self.last_expl is not None and self.last_expl_iter == tr.iteration:
            out["exploitability"] = self.last_expl
        out["stopped"] = self.stop_reason
        out["run_dir"] = str(self.run_dir)
        out["checkpoint"] = str(self.last_ckpt_path)
        return out


def _quarantine_newer(run_dir: Path, iteration: int) -> None:
    """Move checkpoints newer than the one resumed from (it skipped them: unreadable or corrupt)
    to ``RUN_DIR/corrupt-checkpoints/``.

    Left in place, a corrupt checkpoint whose file sizes still match would count as complete when
    old checkpoints are pruned (``--keep``), and could push the good ones out.
    """
    from blueprint.checkpoint import list_checkpoints

    newer = [info for info in list_checkpoints(run_dir) if info.iteration > iteration]
    if not newer:
        return
    dest_root = run_dir / "corrupt-checkpoints"
    dest_root.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for info in newer:
        dest = dest_root / f"{info.path.name}-{stamp}"
        os.replace(info.path, dest)
        click.echo(f"moved the unusable checkpoint {info.path} to {dest}", err=True)


def _budget(iterations: int | None, seconds: float | None, big: bool = False) -> tuple[int | None, float | None]:
    if iterations is not None and seconds is not None:
        raise click.UsageError("give --iterations or --time, not both")
    if iterations is None and seconds is None:
        seconds = DEFAULT_TIME_BUDGET_HOLDEM if big else DEFAULT_TIME_BUDGET
    return iterations, seconds


def _finish(tr, result: dict[str, Any], as_json: bool, sess: _Session) -> None:
    run = shlex.quote(str(sess.run_dir))
    if result["stopped"] == "signal":
        click.echo(
            f"stopped by {sess.signal_name} at iteration {tr.iteration:,}; checkpoint written: "
            f"{result['checkpoint']}; continue with: mccfr resume {run}",
            err=True,
        )
    elif result["stopped"] == "target":
        click.echo(
            f"exploitability {sess.last_expl:.6g} <= target {sess.target:g} at iteration {tr.iteration:,}",
            err=True,
        )
    lines = [
        (
            f"trained {result['iterations_run']:,} iterations (total {tr.iteration:,}) in "
            f"{result['wall_seconds']:.1f} s: {_si(result['iterations_per_second'])} it/s, "
            f"{_si(result['node_visits_per_second'])} node visits/s"
        ),
    ]
    if "exploitability" in result:
        unit, factor = _expl_unit(tr.game)
        value = result["exploitability"] * factor
        lines.append(
            f"exploitability: {value:.6g} {unit}"
            + ("" if unit == "chips" else f" ({result['exploitability']:.6g} chips)")
        )
    ms = example_matchstate(tr.game)
    lines += [
        f"blueprint: {result['checkpoint']}",
        "use it:",
        f"  mccfr status {run}",
        f"  mccfr eval {run} --exploitability"
        if _exact_eval_problem(tr) is None
        else f"  mccfr eval {run}   (exact exploitability is out of reach for this game)",
        f"  mccfr export {run} --out {shlex.quote(str(sess.run_dir / 'strategy.parquet'))}",
        f"  mccfr resume {run} --iterations N",
        "  python -c "
        + shlex.quote(
            f"from blueprint.blueprint import Blueprint; "
            f"print(Blueprint.load({json.dumps(str(sess.run_dir))})"
            f".strategy({json.dumps(ms)}))"
        ),
    ]
    table = _opening_range(tr)
    for line in table + lines:
        click.echo(line)
    if as_json:
        click.echo(json.dumps(result))


def _opening_range(tr) -> list[str]:
    """For two-card 13-rank games: the first actor's raise frequency by starting hand (13 x 13,
    suited above the diagonal), read back through ``Blueprint.strategy``."""
    g = tr.game
    if g.num_hole_cards != 2 or g.num_ranks != 13 or g.num_suits != 4:
        return []
    from blueprint.blueprint import Blueprint
    from holdem.cards import RANK_CHARS

    bp = Blueprint(tr)
    seat = g.first_player[0]
    rows = [f"opening range of seat {seat} (first to act): % of raises by hand; suited above the diagonal"]
    rows.append("     " + "".join(f"{RANK_CHARS[r]:>4s}" for r in range(12, -1, -1)))
    for i in range(12, -1, -1):
        cells = []
        for j in range(12, -1, -1):
            if i == j:
                hole = f"{RANK_CHARS[i]}c{RANK_CHARS[j]}d"
            elif j < i:  # row rank higher: suited
                hole = f"{RANK_CHARS[i]}c{RANK_CHARS[j]}c"
            else:
                hole = f"{RANK_CHARS[j]}c{RANK_CHARS[i]}d"
            cards = hole + "|" if seat == 0 else "|" + hole
            strat = bp.strategy(f"MATCHSTATE:{seat}:0::{cards}")
            raise_p = sum(p for a, p in strat.items() if a.startswith("r"))
            cells.append(f"{100 * raise_p:4.0f}")
        rows.append(f"  {RANK_CHARS[i]}  " + "".join(cells))
    return rows


# -------------------------------------------------------------------------------------------------
# commands


_iterations_opt = click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    help="Train this many iterations (one traversal per player each).",
)
_time_opt = click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help=f"Train for about this many seconds (default when --iterations is not given: "
    f"{DEFAULT_TIME_BUDGET_HOLDEM:g} for 52-card games, {DEFAULT_TIME_BUDGET:g} for small ones), counted after "
    "the first iteration (which compiles the kernels).",
)
_ckpt_opt = click.option(
    "--checkpoint-every",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds between checkpoints (one is also written at the end).",
)
_keep_opt = click.option(
    "--keep",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Keep the newest N complete checkpoints.",
)
_target_opt = click.option(
    "--target-exploitability",
    "target",
    type=float,
    default=None,
    help="Stop once the exact exploitability (chips) is <= X (small games).",
)
_eval_opt = click.option(
    "--eval-every",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Seconds between exact exploitability evaluations (small games; 0 disables).",
)
_report_opt = click.option(
    "--report-every",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between progress reports (the live line and a metrics row).",
)
_json_opt = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object as the last line of stdout."
)

_ray_opts = [
    click.option("--workers", type=click.IntRange(min=1), default=None,
                 help="Ray worker actors (more than 1, or --shards/--address, runs the Ray job) [default: 1; "
                      "resume: the run's].",),
    click.option("--shards", type=click.IntRange(min=1), default=None,
                 help="Ray regret-shard actors (slices of the tables by betting node) [default: 1; resume: the run's]."),
    click.option("--address", default=None,
                 help="Ray cluster to join ('auto': the one started with 'ray start'); default: a local one."),
    click.option("--batch", type=click.IntRange(min=1), default=None,
                 help="Iterations per worker per round of the Ray job (rounds may span discount boundaries; "
                      "staleness is at most (workers - 1) x batch and costs exploitability in proportion to "
                      "batch / iterations) [default: table entries / 25, 100 to 100,000; resume: the "
                      "run's]."),
]


def _with_ray_opts(f):
    for opt in reversed(_ray_opts):
        f = opt(f)
    return f



@cli.command()
@click.option(
    "--game",
    default=DEFAULT_GAME,
    show_default=True,
    help="A preset (kuhn, leduc, hulhe, hunl, hunl100, ...) or an ACPC .game file.",
)
@click.option(
    "--bets",
    default=None,
    help=f"Bet abstraction for no-limit games: a name (fcpa, small, standard) or a TOML file "
    f"[default: {DEFAULT_NOLIMIT_BETS}].",
)
@click.option(
    "--abstraction",
    default=None,
    help="Card abstraction: lossless, rank, a recipe (small, medium, large: built on first use and cached) or a "
    "built directory [default: lossless for small decks, else small].",
)
@click.option(
    "--algo",
    default="pluribus",
    show_default=True,
    help="MCCFR variant: pluribus, dcfr, linear, vanilla; or full-traversal cfr, cfr+ (small games).",
)
@_iterations_opt
@_time_opt
@click.option(
    "--out", "out", default=None, help="Run directory [default: runs/<game>-<algo>-<YYYYmmdd-HHMMSS>]."
)
@_ckpt_opt
@_keep_opt
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every sampler.")
@_target_opt
@_eval_opt
@_report_opt
@click.option(
    "--regret-dtype",
    type=click.Choice(["float32", "int32"]),
    default=None,
    help="Regret storage [default: the algorithm's, float32].",
)
@_with_ray_opts
@_json_opt
def train(
    game,
    bets,
    abstraction,
    algo,
    iterations,
    seconds,
    out,
    checkpoint_every,
    keep,
    seed,
    target,
    eval_every,
    report_every,
    regret_dtype,
    workers,
    shards,
    address,
    batch,
    as_json,
):
    """Train a blueprint into a new run directory."""
    if seed < 0:
        raise click.BadParameter("must be >= 0", param_hint="--seed")
    if out is None:
        label = Path(game).stem if Path(game).suffix else game
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = os.path.join("runs", f"{label}-{algo}-{stamp}")
    run_dir = Path(out)
    if run_dir.exists() and not run_dir.is_dir():
        raise CLIError(f"--out {out!r} exists and is not a directory")
    with _user_input():
        from blueprint.checkpoint import list_checkpoints
        from blueprint.trainer import make_trainer
        from holdem.gamedef import load_gamedef

        if list_checkpoints(run_dir):
            raise CLIError(
                f"{out} already has checkpoints; continue it with 'mccfr resume {shlex.quote(out)}' "
                f"or choose another --out"
            )
        gd = load_gamedef(game)
        iterations, seconds = _budget(iterations, seconds, big=gd.deck_size > 16)
        if gd.is_limit and bets is not None:
            click.echo(
                f"warning: --bets is ignored: {gd.name or game} is a limit game (its own bet abstraction)",
                err=True,
            )
        if not gd.is_limit and bets is None:
            bets = DEFAULT_NOLIMIT_BETS
        tr = make_trainer(game, bets=bets, cards=abstraction, algo=algo, seed=seed, regret_dtype=regret_dtype)
    if tr.config.algo.full_traversal:
        from math import perm

        from blueprint.trainer import MAX_FULL_DEALS

        deals = perm(tr.game.deck_size, tr.game.cards_per_deal)
        if deals > MAX_FULL_DEALS:
            raise CLIError(
                f"--algo {algo} enumerates every deal: {deals:,} for {gd.name or game} (at most "
                f"{MAX_FULL_DEALS:,}); use a sampled algorithm (pluribus, dcfr, linear, vanilla)"
            )
    if target is not None and _exact_eval_problem(tr):
        raise CLIError(f"--target-exploitability needs exact exploitability: {_exact_eval_problem(tr)}")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create run directory {out!r}: {exc}") from None
    for stale in (METRICS_JSONL, METRICS_PARQUET):  # leftovers of a run that never checkpointed
        (run_dir / stale).unlink(missing_ok=True)
    _write_run_toml(
        run_dir, tr, {"created": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    )
    click.echo(
        f"training {gd.name or game} with {algo} (seed {seed}) into {run_dir}: {tr.size:,} table entries, "
        f"{_human_bytes(tr.regret.nbytes + tr.strat.nbytes)}",
        err=True,
    )
    job = None
    if (workers or 1) > 1 or (shards or 1) > 1 or address is not None:
        if tr.config.algo.full_traversal:
            raise CLIError(f"--algo {algo} enumerates every deal and runs in one process; drop --workers/--shards")
        job = _ray_job(tr, {"workers": workers, "shards": shards, "batch": batch, "address": address})
    _run(tr, job, run_dir, as_json, iterations=iterations, seconds=seconds, checkpoint_every=checkpoint_every,
         keep=keep, eval_every=eval_every, report_every=report_every, target=target)


def _ray_job(tr, kwargs: dict[str, Any]):
    """The Ray job around ``tr`` (imports Ray: only here)."""
    from cluster.job import RayJob

    job = RayJob(tr, log=lambda msg: click.echo(f"warning: {msg}", err=True),
                 **{k: v for k, v in kwargs.items() if v is not None})
    click.echo(f"Ray job: {job.num_workers} workers, {job.num_shards} shards, batch {job.batch}", err=True)
    return job


def _run(tr, job, run_dir: Path, as_json: bool, **session) -> None:
    """Run a training session (on the Ray job if there is one), then print the result."""
    try:
        sess = _Session(job if job is not None else tr, run_dir, **session)
        try:
            result = sess.run()
        except Exception as exc:
            if job is not None:
                from cluster.job import JobError

                if isinstance(exc, JobError):  # a shard died and could not be restored: say so, exit 2
                    raise CLIError(str(exc)) from None
            raise
        if job is not None:
            job.sync()
            st = job.stats()
            result.update({k: st[k] for k in ("staleness", "bytes_per_batch", "workers", "shards", "batch",
                                               "lost_batches", "lost_iterations", "worker_restarts",
                                               "shard_restores", "checkpoint_pause_seconds")})
    finally:
        if job is not None:
            job.close()
    _finish(tr, result, as_json, sess)


@cli.command()
@click.argument("run_dir")
@_iterations_opt
@_time_opt
@_ckpt_opt
@_keep_opt
@_target_opt
@_eval_opt
@_report_opt
@_with_ray_opts
@_json_opt
def resume(run_dir, iterations, seconds, checkpoint_every, keep, target, eval_every, report_every,
           workers, shards, address, batch, as_json):
    """Continue a run from its newest complete checkpoint (N more iterations). A Ray run goes on as a
    Ray run with the same workers, shards and batch (unless given)."""
    if iterations is not None and seconds is not None:
        raise click.UsageError("give --iterations or --time, not both")
    path = _run_dir_arg(run_dir)
    from blueprint.checkpoint import load_latest
    from blueprint.trainer import Trainer

    with _user_input():
        manifest, shard_data = load_latest(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
        tr = Trainer.from_checkpoint(path, manifest, shard_data)
        del shard_data
    iterations, seconds = _budget(iterations, seconds, big=tr.game.deck_size > 16)
    click.echo(f"resuming {path} from the checkpoint at iteration {tr.iteration:,}", err=True)
    _quarantine_newer(path, tr.iteration)
    rows = _read_metrics(path)
    kept = [r for r in rows if r["iteration"] <= tr.iteration]
    if len(kept) != len(rows):  # the run died after its last checkpoint: those iterations are redone
        click.echo(
            f"dropping {len(rows) - len(kept)} metrics rows past iteration {tr.iteration:,} "
            f"(after the checkpoint)",
            err=True,
        )
        _atomic_write_bytes(path / METRICS_JSONL, "".join(json.dumps(r) + "\n" for r in kept).encode())
    if not (path / RUN_TOML).exists():
        _write_run_toml(path, tr, {"created": "unknown (rewritten by resume)"})
    job = None
    if manifest.get("job") or any(x is not None for x in (workers, shards, address)):
        from cluster.job import RayJob

        job = _ray_job(tr, RayJob.resume_kwargs(manifest, workers=workers, shards=shards, batch=batch,
                                                address=address))
    _run(tr, job, path, as_json, iterations=iterations, seconds=seconds, checkpoint_every=checkpoint_every,
         keep=keep, eval_every=eval_every, report_every=report_every, target=target)


@cli.command()
@click.argument("run_dir")
@click.option("--verify", is_flag=True, help="Also check every checkpoint file's digest (reads every byte).")
@click.option("--plot", "plot", default=None, metavar="FILE.png",
              help="Draw the exploitability curve (exploitability against iterations, log scale) to a PNG.")
@_json_opt
def status(run_dir, verify, plot, as_json):
    """List a run's checkpoints and summarise its metrics (and draw its exploitability curve)."""
    path = _run_dir_arg(run_dir)
    from blueprint.checkpoint import CheckpointError, list_checkpoints, read_manifest

    infos = list_checkpoints(path, verify=verify)
    rows = _read_metrics(path)
    if not rows and (path / METRICS_PARQUET).exists():
        import pyarrow.parquet as pq

        rows = pq.read_table(path / METRICS_PARQUET).to_pylist()
    complete = [i for i in infos if i.complete]
    summary: dict[str, Any] = {
        "iterations": None,
        "seconds": None,
        "iterations_per_second": None,
        "node_visits_per_second": None,
        "exploitability": None,
    }
    if rows:
        last = rows[-1]
        summary.update({k: last.get(k) for k in ("iterations_per_second", "node_visits_per_second")})
        summary["iterations"], summary["seconds"] = last["iteration"], last.get("seconds")
        expl = [r for r in rows if r.get("exploitability") is not None]
        if expl:
            summary["exploitability"] = expl[-1]["exploitability"]
            summary["exploitability_iteration"] = expl[-1]["iteration"]
    if complete:
        try:
            manifest = read_manifest(complete[0].path)
        except CheckpointError:
            manifest = {}
        if summary["iterations"] is None or manifest.get("iteration", -1) > summary["iterations"]:
            summary["iterations"] = manifest.get("iteration")
            summary["seconds"] = manifest.get("seconds")
    checkpoints = [
        {
            "iteration": i.iteration,
            "complete": i.complete,
            "bytes": i.bytes,
            "problem": i.problem,
            "path": str(i.path),
        }
        for i in infos
    ]
    if rows:
        pauses = [r["checkpoint_seconds"] for r in rows if r.get("checkpoint_seconds") is not None]
        summary["checkpoint_pause_seconds"] = max(pauses) if pauses else None
        summary["rss_bytes"] = max((r.get("rss_bytes") or 0) for r in rows)
        job_rows = [r for r in rows if r.get("workers") is not None]
        if job_rows:
            summary.update({k: job_rows[-1].get(k) for k in ("workers", "staleness", "bytes_per_batch")})
            summary["worker_rss_bytes"] = max((r.get("worker_rss_bytes") or 0) for r in job_rows)
    summary["checkpoints"] = checkpoints
    summary["resume_from"] = complete[0].iteration if complete else None
    summary["run_dir"] = str(path)
    click.echo(f"run {path}")
    if not infos:
        click.echo("  no checkpoints yet")
    for c in checkpoints:
        state = "complete" if c["complete"] else f"INCOMPLETE: {c['problem']}"
        click.echo(f"  checkpoint {c['iteration']:>12,}  {_human_bytes(c['bytes']):>10}  {state}")
    if rows:
        click.echo(
            f"  iterations {summary['iterations']:,} in {summary['seconds'] or 0:.1f} s of training; last "
            f"{_si(summary['iterations_per_second'] or 0)} it/s, "
            f"{_si(summary['node_visits_per_second'] or 0)} node visits/s"
        )
        if summary["exploitability"] is not None:
            click.echo(
                f"  exploitability {summary['exploitability']:.6g} chips at iteration "
                f"{summary['exploitability_iteration']:,}"
            )
        if summary.get("workers") is not None:
            click.echo(
                f"  Ray job: {summary['workers']} workers, staleness {summary['staleness']:.0f} iterations, "
                f"{_human_bytes(summary['bytes_per_batch'] or 0)} per batch, worker memory "
                f"{_human_bytes(summary['worker_rss_bytes'])}"
            )
        if summary["checkpoint_pause_seconds"] is not None:
            click.echo(f"  longest checkpoint pause {summary['checkpoint_pause_seconds']:.2f} s; "
                       f"driver memory {_human_bytes(summary['rss_bytes'])}")
    elif summary["iterations"] is not None:
        click.echo(f"  iterations {summary['iterations']:,} (no metrics)")
    if plot is not None:
        summary["plot"] = _plot_exploitability(path, rows, Path(plot))
        click.echo(f"  exploitability curve: {summary['plot']}")
    if as_json:
        click.echo(json.dumps(summary))


def _plot_exploitability(run_dir: Path, rows: list[dict[str, Any]], out: Path) -> str:
    """Draw exploitability against iterations (both log scale) from the metrics rows to ``out``."""
    points = [(r["iteration"], r["exploitability"]) for r in rows
              if r.get("exploitability") is not None and r["iteration"] > 0 and r["exploitability"] > 0]
    if not points:
        raise CLIError(
            f"{run_dir} has no exploitability in its metrics (it is computed exactly only on small games, "
            "and not with --eval-every 0): nothing to plot"
        )
    if out.suffix.lower() != ".png":
        raise CLIError(f"--plot {out}: the file must end in .png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations")
    ax.set_ylabel("exploitability (chips, NashConv / 2)")
    ax.set_title(run_dir.name)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(out)
    finally:
        plt.close(fig)
    return str(out)


@cli.command(name="eval")
@click.argument("run_dir", required=False)
@click.option("--exploitability", "exploitability", is_flag=True, help="Exact exploitability (small games).")
@click.option("--game", "game_name", default=None,
              help="Game of a match without RUN_DIR: a preset (kuhn, leduc, hulhe, hunl, ...) or a .game file.")
@click.option("--player", "player_spec", default=None, metavar="SPEC",
              help="Player A: RUN_DIR, always-call, always-raise, random, kuhn-fixed, kuhn-greedy "
                   "(default: the RUN_DIR argument).")
@click.option("--vs", "vs_spec", default=None, metavar="SPEC", help="Player B: play a duplicate match against it.")
@click.option("--hands", type=click.IntRange(min=2), default=10_000, show_default=True,
              help="Hands of the match (whole duplicate pairs: each deal twice, seats swapped).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the deals and the players.")
@click.option("--lbr", "lbr", is_flag=True,
              help="Local best response (Lisy & Bowling 2017): a lower bound on exploitability, for big games.")
@click.option("--lbr-actions", "lbr_actions", default="fcpa", show_default=True, metavar="MENU",
              help="LBR's raises: fc (none), fcpa (pot, all-in), pot-fractions (0.5, 0.75, 1, 1.5, 2 pots, "
                   "all-in), or a list such as 0.5,1,allin.")
@click.option("--lbr-preflop", "lbr_preflop", type=click.Choice(["menu", "call"]), default="menu",
              show_default=True, help="LBR in the first round: use the menu, or just check/call (cheaper, "
                                      "the 2017 study's setting; weak against pre-flop all-ins).")
@_json_opt
def eval_(run_dir, exploitability, game_name, player_spec, vs_spec, hands, seed, lbr, lbr_actions, lbr_preflop,
          as_json):
    """Evaluate a run's blueprint (exact exploitability, local best response) or play a duplicate match.

    \b
    mccfr eval RUN_DIR --exploitability
    mccfr eval RUN_DIR --lbr --lbr-actions fcpa --hands 4000
    mccfr eval --game kuhn --player kuhn-fixed --vs random --hands 20000
    mccfr eval RUN_DIR --vs always-call --hands 20000     (the run's blueprint as player A)
    mccfr eval --player RUN_DIR --vs random --hands 20000

    A match reports player A's mean result (chips/hand; mbb/game in games with a big blind) with
    a 95% interval over the duplicate pairs, its win rate (hands won), and for small games the
    exact expected value computed from the game tree. LBR reports its mean winnings against the
    blueprint (or --player SPEC: a run or a baseline) over --hands hands, each deal played from
    both seats, with a 95% interval: a lower bound on the exploitability.
    """
    if lbr and vs_spec is not None:
        raise click.UsageError("--lbr plays against one strategy (RUN_DIR or --player SPEC); drop --vs")
    if not exploitability and vs_spec is None and not lbr:
        if player_spec is not None or game_name is not None:
            raise click.UsageError("a match needs --vs SPEC (the opponent)")
        raise click.UsageError("nothing to evaluate: give --exploitability, --lbr or --vs SPEC")
    if exploitability and run_dir is None:
        raise click.UsageError("--exploitability needs RUN_DIR")
    path = _run_dir_arg(run_dir) if run_dir is not None else None
    result: dict[str, Any] = {}
    if exploitability:
        result.update(_eval_exploitability(path))
    if lbr:
        out = _eval_lbr(path, game_name, player_spec, hands, seed, lbr_actions, lbr_preflop)
        if result:  # both: keep exploitability's unit beside LBR's
            result["exploitability_unit"] = result["unit"]
        result.update(out)
    if vs_spec is not None:
        if result:  # both: the match's unit takes "unit"; keep exploitability's beside it
            result["exploitability_unit"] = result["unit"]
        result.update(_eval_match(path, game_name, player_spec, vs_spec, hands, seed))
    if as_json:
        click.echo(json.dumps(result))


def _eval_exploitability(path: Path) -> dict[str, Any]:
    from blueprint.trainer import Trainer

    with _user_input():
        tr = Trainer.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    problem = _exact_eval_problem(tr)
    if problem:
        raise CLIError(f"cannot compute exact exploitability: {problem}; use --lbr (local best response) for big games")
    t0 = time.perf_counter()
    chips, br = tr.exploitability()
    unit, factor = _expl_unit(tr.game)
    result = {
        "exploitability": chips * factor,
        "unit": unit,
        "br_values": [v * factor for v in br],
        "exploitability_chips": chips,
        "iteration": tr.iteration,
        "seconds": time.perf_counter() - t0,
    }
    click.echo(
        f"{path} at iteration {tr.iteration:,}: exploitability {result['exploitability']:.6g} {unit}"
        + ("" if unit == "chips" else f" ({chips:.6g} chips)")
    )
    click.echo(
        f"  best-response values: seat 0 {result['br_values'][0]:.6g}, seat 1 {result['br_values'][1]:.6g} "
        f"{unit}"
    )
    return result


def _eval_lbr(path: Path | None, game_name: str | None, player_spec: str | None, hands: int, seed: int,
              menu: str, preflop: str) -> dict[str, Any]:
    """Local best response against RUN_DIR's blueprint or --player SPEC; keys lbr, lbr_ci95, unit."""
    from blueprint.lbr import LocalBestResponse, parse_menu
    from blueprint.players import BlueprintPlayer, player_from_spec
    from holdem.game import Game

    if path is None and player_spec is None:
        raise click.UsageError("--lbr needs RUN_DIR (the blueprint to evaluate) or --player SPEC")

    def log(msg: str) -> None:
        click.echo(f"warning: {msg}", err=True)

    with _user_input():
        parse_menu(menu)  # a bad menu fails before anything loads
        if path is None and game_name is None:
            if "+" in player_spec or not Path(player_spec).is_dir():
                raise click.UsageError("--lbr against a baseline needs --game G")
            path, player_spec = Path(player_spec), None
        if path is not None and player_spec is None:
            from blueprint.blueprint import Blueprint

            bp = Blueprint.load(path, log=log)
            game = Game.load(game_name) if game_name is not None else bp.game
            if bp.gamedef.to_acpc() != game.gamedef.to_acpc():
                raise CLIError(f"{path} was trained on {bp.gamedef.name or 'another game'}, "
                               f"not {game.gamedef.name or game_name}")
            opponent, name = bp, path.name or str(path)
        else:
            game = Game.load(game_name) if game_name is not None else None
            if game is None:
                from blueprint.blueprint import Blueprint

                game = Blueprint.load(path, log=log).game
            opponent = player_from_spec(player_spec, game, log=log)
            name = opponent.name
            if isinstance(opponent, BlueprintPlayer):
                opponent = opponent.bp
        lbr = LocalBestResponse(game, opponent, menu=menu, preflop=preflop)
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\r  LBR {done:,}/{total:,} hands", err=True, nl=False)

    res = lbr.run(hands, seed=seed, progress=progress)
    if show:
        click.echo("", err=True)
    out = res.to_json()
    out["opponent"] = name
    click.echo(
        f"LBR ({menu}, pre-flop {preflop}) against {name} on {game.gamedef.name or game_name}: "
        f"{res.lbr:+.6g} +- {res.lbr_ci95:.3g} {res.unit} over {res.hands:,} hands "
        f"({res.pairs:,} deals from both seats, seed {seed}, {res.seconds:.0f} s): a lower bound on exploitability"
    )
    for seat in (0, 1):
        click.echo(f"  LBR in seat {seat}: {out['lbr_seats'][seat]:+.6g} +- {out['lbr_seats_ci95'][seat]:.3g} {res.unit}")
    return out


def _eval_match(path: Path | None, game_name: str | None, player_spec: str | None, vs_spec: str,
                hands: int, seed: int) -> dict[str, Any]:
    """A duplicate match of --player (or RUN_DIR) against --vs; the JSON keys of DESIGN.md."""
    if player_spec is None and path is None:
        raise click.UsageError("a match needs player A: give --player SPEC or RUN_DIR")
    if game_name is None and path is None:
        # the game of a run directory among the players, if any
        for spec in (player_spec, vs_spec):
            if spec and "+" not in spec and Path(spec).is_dir():
                path = Path(spec)
                break
        else:
            raise click.UsageError("a match needs a game: give --game G or RUN_DIR (or a run directory as a player)")
    from blueprint.match import exact_value, play_match
    from blueprint.players import BlueprintPlayer, player_from_spec
    from holdem.game import Game

    def log(msg: str) -> None:
        click.echo(f"warning: {msg}", err=True)

    with _user_input():
        run_player = None
        if path is not None and (game_name is None or player_spec is None):
            from blueprint.blueprint import Blueprint

            run_player = BlueprintPlayer(Blueprint.load(path, log=log), name=path.name or str(path))
        game = Game.load(game_name) if game_name is not None else run_player.bp.game
        if run_player is not None and run_player.bp.gamedef.to_acpc() != game.gamedef.to_acpc():
            raise CLIError(f"{path} was trained on {run_player.bp.gamedef.name or 'another game'}, "
                           f"not {game.gamedef.name or game_name}")
        from subgame.player import solving_player

        a = run_player if player_spec is None or (run_player and Path(player_spec) == path) else \
            player_from_spec(player_spec, game, log=log, solver=solving_player)
        b = run_player if (run_player and game_name is None and Path(vs_spec) == path and a is not run_player) \
            else player_from_spec(vs_spec, game, log=log, solver=solving_player)
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\r  {done:,}/{total:,} hands", err=True, nl=False)

    t0 = time.perf_counter()
    res = play_match(game, a, b, hands, seed=seed, progress=progress)
    if show:
        click.echo("", err=True)
    seconds = time.perf_counter() - t0
    out = res.to_json()
    scale = 1000.0 / res.big_blind if res.big_blind else 1.0  # chips -> the result's unit
    try:
        ex = exact_value(game, a, b, max_states=500_000)
    except (ValueError, TypeError):
        ex = None
    if ex is not None:
        out["exact"] = ex.chips_per_hand * scale
        out["exact_seats"] = [v * scale for v in ex.seat_chips]
    out["seconds"] = seconds
    unit = res.unit
    click.echo(
        f"{a.name} vs {b.name} on {game.gamedef.name or game_name}: {res.mean:+.6g} +- {res.ci95:.3g} {unit} "
        f"for {a.name} over {res.hands:,} hands ({res.pairs:,} duplicate pairs, seed {seed})"
        + (f"; exact {out['exact']:+.6g}" if ex is not None else "")
    )
    for seat in (0, 1):
        click.echo(
            f"  {a.name} in seat {seat}: {res.seat_chips[seat] * scale:+.6g} +- {res.seat_ci95[seat] * scale:.3g} {unit}"
            + (f" (exact {out['exact_seats'][seat]:+.6g})" if ex is not None else "")
        )
    click.echo(f"  {a.name} won {res.win_rate:.1%} of the hands" + (f", tied {res.tie_rate:.1%}" if res.tie_rate else ""))
    return out


@cli.command()
@click.argument("run_dir")
@click.option("--out", "out", required=True, help="Parquet file to write.")
@_json_opt
def export(run_dir, out, as_json):
    """Write the blueprint's average strategy as Parquet."""
    path = _run_dir_arg(run_dir)
    parent = Path(out).resolve().parent
    if not parent.is_dir():
        raise CLIError(f"cannot write --out {out!r}: directory {str(parent)!r} does not exist")
    try:
        from blueprint.blueprint import Blueprint
    except ImportError as exc:
        raise CLIError(f"export is not available in this build: {exc}") from None
    with _user_input():
        bp = Blueprint.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    written = bp.export(out)
    rows = written if isinstance(written, int) and not isinstance(written, bool) else None
    if rows is None:
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(out).metadata.num_rows
    click.echo(f"wrote {rows:,} rows to {out}")
    if as_json:
        click.echo(json.dumps({"rows": rows, "out": str(out), "run_dir": str(path)}))


def _probabilities(text: str | None, option: str) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise CLIError(f"{option} {text!r}: expected comma-separated probabilities, e.g. 0.4,0.3,0.3") from None


@cli.command()
@click.argument("csv_file", metavar="FILE.csv")
@click.option("--iterations", type=click.IntRange(min=1), default=100_000, show_default=True)
@click.option("--positive-only", is_flag=True,
              help="Add only the positive part of each instantaneous regret (a variant of some course notes).")
@click.option("--fixed-row", default=None, metavar="P1,P2,...", help="Fix the row player's strategy (it does not learn).")
@click.option("--fixed-column", default=None, metavar="P1,P2,...",
              help="Fix the column player's strategy (it does not learn).")
@_json_opt
def matrix(csv_file, iterations, positive_only, fixed_row, fixed_column, as_json):
    """Regret matching for both players of a zero-sum matrix game.

    FILE.csv: no header, one line per row-player action, one number per column-player action,
    the row player's payoff. Prints the average strategies, the value (row player's payoff) and
    the exploitability (NashConv / 2) as they converge.
    """
    from blueprint.matrix import MatrixGameError, RegretMatching, load_csv, report_points

    try:
        game = load_csv(csv_file)
        rm = RegretMatching(game, positive_only=positive_only, fixed_row=_probabilities(fixed_row, "--fixed-row"),
                            fixed_column=_probabilities(fixed_column, "--fixed-column"))
    except MatrixGameError as exc:
        raise CLIError(str(exc)) from None
    m, n = game.shape
    click.echo(f"{csv_file}: {m} x {n} zero-sum game, regret matching"
               + (" (positive-only regret updates)" if positive_only else ""))
    def vec(p) -> str:
        return "(" + ", ".join(f"{v:.4f}" for v in p) + ")"

    click.echo(f"{'iteration':>12}  {'row':<{9 * m}}  {'column':<{9 * n}}  {'value':>10}  {'exploitability':>14}")

    def report(r) -> None:
        s = r.summary()
        click.echo(f"{s['iterations']:>12,}  {vec(s['row']):<{9 * m}}  {vec(s['column']):<{9 * n}}  "
                   f"{s['value']:>+10.6f}  {s['exploitability']:>14.6g}")

    rm.run(iterations, callback=report, report_at=report_points(iterations))
    if as_json:
        out = rm.summary()
        out["positive_only"] = positive_only
        click.echo(json.dumps(out))


@cli.group()
def abstraction() -> None:
    """Card abstractions: build hand-strength buckets (cached, reused by training)."""


@abstraction.command(name="build")
@click.option("--game", default=DEFAULT_GAME, show_default=True, help="A preset or an ACPC .game file.")
@click.option("--abstraction", "recipe", default=None,
              help="A recipe name: small (E[HS^2] percentiles, 169/50/50/50), medium (potential-aware, "
                   "169/100/100/100), large (potential-aware, 169/200/200/200).")
@click.option("--buckets", default=None, help="Bucket counts per round, e.g. 169,50,50,50 (preflop 169 = lossless).")
@click.option("--method", default="ehs2", show_default=True,
              help="ehs, ehs2 (percentile buckets of E[HS] / E[HS^2]), distribution (k-medians of final-strength "
                   "histograms under EMD, OCHS last round) or potential (EMD over next-round bucket histograms; "
                   "exact on small decks, k-means on samples then every class assigned on 52 cards); "
                   "distribution is for small decks only.")
@click.option("--seed", type=int, default=0, show_default=True, help="k-means seed (distribution, potential).")
@click.option("--out", "out", default=None, help="Directory to build into [default: the cache, for a recipe].")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads [default: all cores].")
@_json_opt
def abstraction_build(game, recipe, buckets, method, out, threads, seed, as_json):
    """Build a card abstraction (resumes a partial build in the same directory)."""
    if (recipe is None) == (buckets is None):
        raise click.UsageError("give --abstraction NAME or --buckets B1,B2,... (one of them)")
    t0 = time.perf_counter()
    with _user_input():
        from abstraction.buckets import RECIPES, AbstractionError, build_buckets, ensure_recipe, read_abstraction
        from holdem.gamedef import load_gamedef

        gd = load_gamedef(game)
        if recipe is not None:
            if recipe not in RECIPES:
                raise AbstractionError(f"unknown abstraction recipe {recipe!r}: choose one of {', '.join(RECIPES)}")
            if out is None:
                path = ensure_recipe(gd, recipe, log=lambda m: click.echo(m, err=True), threads=threads)
            else:
                rec = RECIPES[recipe]
                path = build_buckets(gd, rec.buckets, rec.method, out, threads=threads, spec=rec.spec,
                                     log=lambda m: click.echo(m, err=True))
        else:
            try:
                counts = tuple(int(x) for x in buckets.split(","))
            except ValueError:
                raise AbstractionError(f"--buckets {buckets!r}: expected comma-separated integers") from None
            if out is None:
                raise click.UsageError("--buckets needs --out DIR")
            path = build_buckets(gd, counts, method, out, threads=threads, seed=seed,
                                 log=lambda m: click.echo(m, err=True))
        header, _ = read_abstraction(path)
    res = {"path": str(path), "buckets": header["buckets"], "method": header["method"], "hash": header["hash"],
           "seconds": time.perf_counter() - t0}
    click.echo(f"abstraction: {path} ({header['method']} buckets {header['buckets']}, hash {header['hash']})")
    click.echo(f"train with it: mccfr train --game {shlex.quote(game)} --abstraction {shlex.quote(str(Path(path).parent))}")
    if as_json:
        click.echo(json.dumps(res))



# -------------------------------------------------------------------------------------------------
# serve and play: the query service and the ACPC client (FastAPI / uvicorn imported only here)


def _load_responder(run_dir: str, time_budget_ms: int, solve_method: str | None = None, **solving):
    from subgame.responder import QueryError, make_responder

    path = _run_dir_arg(run_dir)
    with _user_input():
        try:
            responder = make_responder(path, solve_method=solve_method, default_time_budget_ms=time_budget_ms,
                                       log=lambda msg: click.echo(f"warning: {msg}", err=True), **solving)
        except QueryError as exc:
            raise click.BadParameter(str(exc), param_hint="--solve") from None
    warm_up = getattr(responder, "warm_up", None)
    if warm_up is not None:  # compile / load the numba kernels before the first real query
        warm_up()
    return path, responder


_budget_opt = click.option(
    "--time-budget-ms", "time_budget_ms", type=click.IntRange(1, 600_000), default=2_000, show_default=True,
    help="Default wall-time budget of one answer (subgame solving; a request's time_budget_ms overrides it).",
)


ROUND_NAMES = ("preflop", "flop", "turn", "river")


def _solving_options(run_dir, solve_method, solve_from, solver_threads, max_solve_ms) -> dict:
    """make_responder's subgame-solving keyword arguments from serve's flags (checked)."""
    if solve_method is None:
        for flag, v in (("--solve-from", solve_from), ("--solver-threads", solver_threads),
                        ("--max-solve-ms", max_solve_ms)):
            if v is not None:
                raise click.UsageError(f"{flag} applies to subgame solving: give --solve METHOD too")
        return {}
    out = {}
    if max_solve_ms is not None:
        out["max_solve_ms"] = max_solve_ms
    if solver_threads is not None:
        out["solver_threads"] = solver_threads
    if solve_from is not None:
        import tomllib

        from holdem.gamedef import parse_gamedef

        path = _run_dir_arg(run_dir)
        with _user_input():
            g = parse_gamedef(tomllib.loads((path / "run.toml").read_text())["gamedef"])
        names = ROUND_NAMES[: g.num_rounds] if g.num_rounds == 4 else ()
        r = names.index(solve_from) if solve_from in names else None
        if r is None and solve_from.isdigit():
            r = int(solve_from)
        if r is None or not 0 <= r < g.num_rounds:
            choices = ", ".join([*names, f"0..{g.num_rounds - 1}"])
            raise click.BadParameter(f"{solve_from!r} is no betting round of this game (expected {choices})",
                                     param_hint="--solve-from")
        out["from_round"] = r
    return out


@cli.command()
@click.argument("run_dir")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port (0: any free port; --ray needs a fixed one).")
@_budget_opt
@click.option("--threads", type=click.IntRange(min=1), default=8, show_default=True,
              help="Worker threads answering queries (the event loop never runs one).")
@click.option("--access-log", is_flag=True, help="Log every request (costs latency).")
@click.option("--solve", "solve_method", default=None, metavar="METHOD",
              help="Re-solve the last round (and off-tree bets there) with this method (e.g. reach-maxmargin); "
                   "default: blueprint answers only.")
@click.option("--solve-from", "solve_from", default=None, metavar="ROUND",
              help="With --solve: the first betting round solved (preflop, flop, turn, river or its index) "
                   "[default: the last round]. A solve that cannot fit the time budget is answered from the "
                   "blueprint, with 'fallback' saying so.")
@click.option("--solver-threads", "solver_threads", type=click.IntRange(min=1), default=None,
              help="With --solve: solves running at once [default: one per core; with --ray, cores / replicas].")
@click.option("--max-solve-ms", "max_solve_ms", type=click.IntRange(min=1), default=None,
              help="With --solve: iterate at most this long beyond what a useful solve needs [default: until the "
                   "budget's end]; shorter solves free the solver threads sooner, so more queries get one.")
@click.option("--ray", "use_ray", is_flag=True,
              help="Deploy as a Ray Serve application (needs the serve extra: pip install \"mccfr[serve]\").")
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="With --ray: service replicas [default: 1].")
@click.option("--address", default=None, metavar="ADDR",
              help="With --ray: the Ray cluster to join ('auto', or ray://HOST:PORT) [default: start a local one].")
def serve(run_dir, host, port, time_budget_ms, threads, access_log, solve_method, solve_from, solver_threads,
          max_solve_ms, use_ray, replicas, address):
    """Serve strategy queries over HTTP + JSON.

    \b
    POST /v1/strategy {"matchstate": "MATCHSTATE:...", "session"?, "time_budget_ms"?, "method"?}
         -> {"strategy": {action: p}, "source": "blueprint"|"subgame", "method", "elapsed_ms",
             "fallback"? (why a query for a solve got the blueprint's answer: busy, budget, deadline)}
    GET  /healthz, /metrics, /openapi.json (docs at /docs)

    Bad input gets a 4xx with {"error": "...", "kind": "..."}; the server keeps serving. Stop with Ctrl-C.
    """
    if not use_ray:
        for flag, v in (("--replicas", replicas), ("--address", address)):
            if v is not None:
                raise click.UsageError(f"{flag} applies to the Ray Serve deployment: give --ray too")
    solving = _solving_options(run_dir, solve_method, solve_from, solver_threads, max_solve_ms)
    if use_ray:
        return _serve_ray(run_dir, host, port, time_budget_ms, threads, solve_method, solving, replicas or 1, address)
    try:
        from subgame.service import bind, create_app, make_server
    except ImportError as exc:
        raise CLIError(f"serve needs fastapi and uvicorn ({exc}); pip install fastapi uvicorn") from None
    path, responder = _load_responder(run_dir, time_budget_ms, solve_method, **solving)
    app = create_app(responder, threads=threads, describe={"run_dir": str(path)})
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    bp = getattr(responder, "bp", None)
    what = f"{responder.game.gamedef.name or 'game'}" + (f", iteration {bp.iteration:,}" if bp is not None else "")
    click.echo(f"serving {path} ({what}) on http://{shown}:{bound}  "
               "(POST /v1/strategy, GET /healthz /metrics /openapi.json); Ctrl-C stops", err=True)
    make_server(app, sock, access_log=access_log).run(sockets=[sock])  # returns on Ctrl-C / SIGTERM
    click.echo("stopped", err=True)


def _serve_ray(run_dir, host, port, time_budget_ms, threads, solve_method, solving, replicas, address):
    import signal
    import threading

    from cluster.serve import RayServeMissing, build_app, import_serve, run, shutdown

    if port == 0:
        raise click.BadParameter("the Ray Serve proxy needs a fixed port, not 0", param_hint="--port")
    try:
        import_serve()
    except RayServeMissing as exc:
        raise CLIError(str(exc)) from None
    path = _run_dir_arg(run_dir)
    opts = {"solve_method": solve_method, "default_time_budget_ms": time_budget_ms, **solving}
    if solve_method is not None and "solver_threads" not in solving:
        from subgame.responder import default_solver_threads

        opts["solver_threads"] = max(1, default_solver_threads() // replicas)
    with _user_input():
        from subgame.responder import make_responder

        make_responder(path, **opts).close()  # fail here, with a clear message, not inside a replica
    app = build_app(str(path), replicas, threads=threads, responder_options=opts)
    url = run(app, host=host, port=port, address=address)
    click.echo(f"serving {path} on Ray Serve ({replicas} replica{'s' if replicas > 1 else ''}) at {url}  "
               "(POST /v1/strategy, GET /healthz /metrics /openapi.json); Ctrl-C stops", err=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(1.0):
        pass
    shutdown()
    click.echo("stopped", err=True)


@cli.command()
@click.argument("run_dir", required=False)
@click.option("--dealer", "dealer", required=True, metavar="HOST:PORT", help="The dealer's address and this seat's port.")
@click.option("--server", "server", default=None, metavar="URL",
              help="Ask a running 'mccfr serve' at URL (http://HOST:PORT) instead of loading RUN_DIR.")
@click.option("--log", "log_file", default=None, metavar="FILE", help="Write the match log (JSON lines) here.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the action sampling.")
@click.option("--method", default=None, help="Method passed with every query (blueprint, or a solving method).")
@_budget_opt
@click.option("--time-per-hand-ms", type=click.FloatRange(min=1), default=7_000, show_default=True,
              help="The dealer's average time per hand (its --t_per_hand): the client's time bank.")
@click.option("--response-limit-ms", type=click.FloatRange(min=1), default=600_000, show_default=True,
              help="The dealer's time per response (its --t_response).")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=900, show_default=True,
              help="Give up when the dealer sends nothing for this many seconds.")
@click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10, show_default=True)
@_json_opt
def play(run_dir, dealer, server, log_file, seed, method, time_budget_ms, time_per_hand_ms, response_limit_ms,
         idle_timeout, connect_timeout, as_json):
    """Play a match against an ACPC dealer (protocol 2.0.0) with the run's blueprint (or a service).

    \b
    mccfr play RUN_DIR --dealer 127.0.0.1:18791 --log match.jsonl
    mccfr play --server http://127.0.0.1:8000 --dealer 127.0.0.1:18791

    Connects to HOST:PORT, plays every hand the dealer deals within its time limits, writes the
    match log, and reports the hands played and the net result (mbb/hand with a 95% interval in
    games with a big blind). Exit status 1 when the match ended early (a disconnect, a protocol
    error, a timeout).
    """
    from subgame.acpc_client import AcpcClient, parse_address

    try:
        host, port = parse_address(dealer)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--dealer") from None
    if log_file is not None and not Path(log_file).resolve().parent.is_dir():
        raise CLIError(f"cannot write --log {log_file!r}: its directory does not exist")
    if (run_dir is None) == (server is None):
        raise click.UsageError("give RUN_DIR (play its blueprint) or --server URL (ask a running service), one of them")
    if server is not None:
        from subgame.responder import HttpResponder

        try:
            responder = HttpResponder(server)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--server") from None
        except OSError as exc:
            raise CLIError(f"cannot reach the query service at {server}: {exc.strerror or exc}") from None
        path = server
    else:
        from subgame.responder import SOLVE_METHODS

        path, responder = _load_responder(run_dir, time_budget_ms, method if method in SOLVE_METHODS else None)
    if method is not None:
        from subgame.responder import QueryError, check_method

        try:
            check_method(method, tuple(responder.methods))
        except QueryError as exc:
            raise click.BadParameter(str(exc), param_hint="--method") from None
    show = sys.stderr.isatty()

    def progress(rep) -> None:
        if show:
            click.echo(f"\r  {rep.hands:,} hands, net {rep.net:+,.0f} chips", err=True, nl=False)

    client = AcpcClient(responder, seed=seed, log=log_file, method=method, time_budget_ms=time_budget_ms,
                        time_per_hand_ms=time_per_hand_ms, response_limit_ms=response_limit_ms,
                        idle_timeout_s=idle_timeout, progress=progress)
    try:
        rep = client.play(host, port, connect_timeout=connect_timeout)
    except OSError as exc:
        raise CLIError(f"cannot connect to the dealer at {dealer}: {exc.strerror or exc}") from None
    if show:
        click.echo("", err=True)
    out = rep.to_json()
    out.update(dealer=dealer, log=log_file, **({"server": server} if server else {"run_dir": str(path)}))
    ci = f" +- {out['ci95']:.4g}" if out["ci95"] is not None else ""
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(rep.fallback_reasons.items()))
    click.echo(
        f"played {rep.hands:,} hands at {dealer}: {out['mean']:+.6g}{ci} {out['unit']} (net {rep.net:+,.0f} chips); "
        f"{rep.decisions:,} decisions, {rep.fallbacks} fallbacks{f' ({reasons})' if reasons else ''}, "
        f"max response {rep.max_response_ms:.1f} ms; {rep.ended}"
    )
    if as_json:
        click.echo(json.dumps(out))
    if not rep.complete:
        sys.exit(1)


# -------------------------------------------------------------------------------------------------
# solve: safe / nested subgame solving at a match state, or an explicit subgame file


@cli.command()
@click.argument("run_dir", required=False)
@click.option("--matchstate", default=None, metavar="STR", help="Solve for the seat to act at this MATCHSTATE (needs RUN_DIR).")
@click.option("--subgame", "subgame_file", default=None, metavar="FILE",
              help="An explicit subgame: a public Libratus endgame file (unsafe only: it has no alternative values).")
@click.option("--method", default=None, metavar="M",
              help="unsafe, resolve, maxmargin, reach-maxmargin, estimate, reach-estimate "
                   "[default: reach-maxmargin with RUN_DIR, unsafe with --subgame]")
@click.option("--time-budget", type=click.FloatRange(min=0.001), default=None, metavar="S",
              help="Seconds to solve for [default: 2, unless --iterations or --target-pct-pot is given].")
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="CFR iterations to run.")
@click.option("--target-pct-pot", type=click.FloatRange(min=0.0), default=None,
              help="Stop at this exploitability, in percent of the starting pot.")
@click.option("--bets", default=None, help="Bet abstraction inside the subgame [default: subgame: 0.5/1/2 pot, 2.5x, all-in].")
@click.option("--algo", type=click.Choice(["dcfr", "cfr+"]), default="dcfr", show_default=True)
@click.option("--hand", default=None, metavar="CARDS", help="With --subgame: print this hand's root strategy (e.g. AsKd).")
@_json_opt
def solve(run_dir, matchstate, subgame_file, method, time_budget, iterations, target_pct_pot, bets, algo, hand, as_json):
    """Re-solve a subgame: the strategy for the seat to act, and how well it was solved.

    \b
    mccfr solve RUN_DIR --matchstate MATCHSTATE:0:12:cc/r250:Ah7d|/Ks9c2d --method reach-maxmargin
    mccfr solve --subgame subgame4.txt --target-pct-pot 0.5 --json

    With RUN_DIR the subgame starts at the match state (on the blueprint's tree), or right after the
    opponent's off-tree bet (nested solving); ranges come from the blueprint's reach, the opponent's
    alternative values from best responses to the blueprint. Exploitability is (best-response gain
    of seat 0 + of seat 1) / 2 in the game solved (the gadget game for the safe methods), in chips
    and in percent of the subgame's starting pot.
    """
    if (matchstate is None) == (subgame_file is None):
        raise click.UsageError("give exactly one of --matchstate STR (with RUN_DIR) or --subgame FILE")
    if matchstate is not None and run_dir is None:
        raise click.UsageError("--matchstate needs RUN_DIR (the blueprint to solve from)")
    if time_budget is None and iterations is None and target_pct_pot is None:
        time_budget = 2.0
    from abstraction.bets import load_bets
    from subgame.tree import SubgameError

    with _user_input():
        try:
            sub_bets = load_bets(bets) if bets is not None else None
            if subgame_file is not None:
                result = _solve_file(subgame_file, method or "unsafe", sub_bets, time_budget, iterations,
                                     target_pct_pot, algo, hand)
            else:
                result = _solve_matchstate(_run_dir_arg(run_dir), matchstate, method or "reach-maxmargin", sub_bets,
                                           time_budget, iterations, target_pct_pot, algo)
        except SubgameError as exc:
            raise CLIError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result))


def _solve_report(sol) -> dict[str, Any]:
    d = sol.diagnostics()
    click.echo(
        f"{d['method']}: {d['iterations']:,} iterations in {d['elapsed_ms'] / 1000:.2f} s; exploitability "
        f"{d['exploitability']:.4g} chips ({d['exploitability_pct_pot']:.3g}% of the pot {d['pot']:,}); "
        f"tree {d['nodes']:,} nodes x {d['hands']:,} hands, {d['memory_mb']:.0f} MB"
    )
    if d["min_margin"] is not None:
        click.echo(f"  opponent's minimum margin {d['min_margin']:.4g} chips (>= 0: no hand gains over its alternative)")
    return d


def _solve_file(path, method, bets, time_budget, iterations, target, algo, hand) -> dict[str, Any]:
    from holdem.cards import parse_cards
    from subgame.libratus import read_libratus
    from subgame.solver import solve as run_solve

    sub = read_libratus(path, bets)
    sol = run_solve(sub, method, iterations=iterations, time_budget=time_budget, target_pct_pot=target, algo=algo)
    d = _solve_report(sol)
    t = sub.tree
    actor = int(t.player[0])
    w = sub.ranges[actor]
    freq = {a: float((v * w).sum() / w.sum()) for a, v in sol.root_strategy().items()}
    click.echo(f"seat {actor} to act at the root; its range plays: "
               + ", ".join(f"{a} {p:.1%}" for a, p in freq.items()))
    out = {**d, "strategy": freq, "actor": actor}
    if hand is not None:
        cards = parse_cards(hand, t.game.num_suits, t.game.num_ranks)
        hs = sol.hand_strategy(tuple(cards))
        click.echo(f"{hand}: " + ", ".join(f"{a} {p:.3f}" for a, p in hs.items()))
        out["hand_strategy"] = hs
    return out


def _solve_matchstate(path, matchstate, method, bets, time_budget, iterations, target, algo) -> dict[str, Any]:
    from blueprint.blueprint import Blueprint
    from holdem.state import StateError
    from subgame.nested import first_off_tree, hand_strategy, solve_state
    from subgame.tree import SubgameError

    bp = Blueprint.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    try:
        state = bp.game.state(matchstate)
    except StateError as exc:
        raise SubgameError(f"bad match state: {exc}") from None
    off = first_off_tree(bp, state) if state.viewer is not None and not state.is_terminal() else None
    sol, node = solve_state(bp, state, method, time_budget=time_budget, iterations=iterations,
                            target_pct_pot=target, bets=bets)
    d = _solve_report(sol)
    hs = hand_strategy(sol, node, state)
    click.echo("strategy: " + ", ".join(f"{a} {p:.3f}" for a, p in hs.items())
               + (" (nested: off-tree bet)" if off is not None else ""))
    return {**d, "strategy": hs, "nested": off is not None, "node": node}


if __name__ == "__main__":
    main()
