"""A training session: drives ``Trainer.run`` (or a Ray job, which has the trainer's interface)
with progress, metrics, exact evaluation, checkpoints and signals, and returns the result.

The command line (``mccfr train`` / ``resume``) parses its options into a :class:`SessionConfig`
and, for a new run, the run's config (:func:`blueprint.defaults.run_config`); runs the step that
may take minutes, :func:`card_abstraction` (a card abstraction recipe not in the cache is built
there, explicitly, never by a constructor); builds the trainer over them (and, for a Ray run, the
job), calls :func:`run_session` and prints what it returns; notes for the user go through the
``log`` callback it passes (default: standard error).
This module imports neither the command line nor Ray: a Ray job is handed in, built by the caller.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import IO, Any

from abstraction import buckets
from abstraction.cards import CardAbstraction, default_card_abstraction, default_card_name
from blueprint.best_response import MAX_HANDS
from blueprint.defaults import DEFAULT_TIME_BUDGET, DEFAULT_TIME_BUDGET_HOLDEM
from blueprint.io.errors import CheckpointError
from blueprint.memory import rss_bytes
from blueprint.rundir import METRICS_JSONL, read_metrics, write_metrics_parquet
from holdem.gamedef import GameDef
from mccfr_util.progress import PLAIN_PROGRESS_SECONDS, progress_bar

__all__ = [
    "EXACT_EVAL_MAX_COST",
    "JOB_RESULT_KEYS",
    "Session",
    "SessionConfig",
    "SessionError",
    "card_abstraction",
    "default_budget",
    "exact_eval_cost",
    "exact_eval_problem",
    "exact_measure",
    "human_bytes",
    "run_session",
    "si",
]

# Exact best response walks every public state with [H, H] matrix products; above this many
# H^2 * public-board operations the evaluation would take minutes (hold'em never qualifies).
EXACT_EVAL_MAX_COST = 1e9

#: The Ray job's figures that a session's result adds (:meth:`cluster.job.RayJob.stats`).
JOB_RESULT_KEYS = (
    "staleness",
    "bytes_per_batch",
    "workers",
    "shards",
    "batch",
    "lost_batches",
    "lost_iterations",
    "worker_restarts",
    "shard_restores",
    "checkpoint_pause_seconds",
    "storage_checkpoint_seconds",
    "nodes",
    "driver_calls_per_round",
    "driver_bytes_per_round",
)


class SessionError(ValueError):
    """What was asked of a session cannot be done (both budgets, a target without exact
    exploitability); the message says which option."""


@dataclass(frozen=True)
class SessionConfig:
    """How long a session trains and how often it reports, evaluates and checkpoints.

    ``iterations`` (more iterations) or ``seconds`` (of training, counted after the kernels'
    compile), not both; :func:`default_budget` fills in the default time. ``target``: stop once the
    exact exploitability (chips) is at most this (small games only)."""

    iterations: int | None = None
    seconds: float | None = None
    checkpoint_every: float = 600.0
    keep: int = 3
    eval_every: float = 1.0
    report_every: float = 1.0
    target: float | None = None

    def __post_init__(self) -> None:
        if self.iterations is not None and self.seconds is not None:
            raise SessionError("give --iterations or --time, not both")


def default_budget(
    iterations: int | None, seconds: float | None, big: bool = False
) -> tuple[int | None, float | None]:
    """``(iterations, seconds)`` with the default time budget when neither is given (``big``: a
    52-card game's)."""
    if iterations is not None and seconds is not None:
        raise SessionError("give --iterations or --time, not both")
    if iterations is None and seconds is None:
        seconds = DEFAULT_TIME_BUDGET_HOLDEM if big else DEFAULT_TIME_BUDGET
    return iterations, seconds


def card_abstraction(game: GameDef, name: str | None, log: Callable[[str], Any] = print) -> CardAbstraction:
    """A run's card abstraction, the step before its trainer: ``name`` (None: the game's default,
    :func:`abstraction.cards.default_card_name`) loaded, a recipe that is not in the cache built
    first, explicitly and once (minutes; a note and its progress through ``log``). Queries never
    come here: ``Blueprint.load`` only loads."""
    name = default_card_name(game, name)
    if name in buckets.RECIPES and not (buckets.recipe_dir(game, name) / "abstraction.bin").is_file():
        log(f"the {name!r} card abstraction is not in the cache yet: building it first (once)")
        buckets.ensure_recipe(game, name, log=log)  # looked up at call time: a test replaces it
    return default_card_abstraction(game, name, log=log, build=False)


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


def exact_measure(game) -> str:
    """What the exact evaluation of ``game`` reports: ``exploitability`` (two seats: the mean of
    the best responses' values) or ``NashConv`` (more: the sum of the best responses' gains)."""
    return "exploitability" if game.num_players == 2 else "NashConv"


def exact_eval_problem(tr) -> str | None:
    """Why exact exploitability (NashConv with more than two seats) is out of reach for this
    trainer's game, or None."""
    g = tr.game
    if g.num_players > 2:
        from blueprint import nplayer

        if not g.is_limit:
            return f"exact NashConv needs every betting in the tree: {g.name or 'this game'} is no-limit"
        deals = nplayer.deal_count(g)  # (a tree too big is a FlattenError when evaluated)
        if deals > nplayer.MAX_DEALS:
            return f"{g.name or 'this game'} has too many deals for exact NashConv ({deals:,})"
        return None
    hands = comb(g.deck_size, g.num_hole_cards)
    if hands > MAX_HANDS:
        return f"exact best response needs <= {MAX_HANDS} private hands, {g.name or 'this game'} has {hands}"
    if exact_eval_cost(g) > EXACT_EVAL_MAX_COST:
        return f"{g.name or 'this game'} has too many public boards for an exact best response"
    return None


def human_bytes(n: float) -> str:
    """``n`` bytes in B, KiB, MiB, GiB or TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def si(x: float) -> str:
    """``x`` with a k, M or G suffix."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}"
    return f"{x:.1f}"


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Session:
    """Drives ``Trainer.run`` with progress, metrics, evaluation, checkpoints and signals."""

    def __init__(
        self,
        tr,
        run_dir: Path,
        config: SessionConfig,
        *,
        storage=None,
        log: Callable[[str], Any] | None = None,
    ):
        self.tr = tr
        self.run_dir = run_dir
        self.config = config
        self.storage = storage  # a cluster.storage.Storage: checkpoints go there (--storage)
        self.log = log if log is not None else _stderr
        self.iterations = config.iterations
        self.budget_seconds = config.seconds
        self.checkpoint_every = config.checkpoint_every
        self.keep = config.keep
        self.eval_every = config.eval_every
        self.report_every = config.report_every
        self.target = target = config.target
        self.eval_problem = (
            exact_eval_problem(tr) if (self.eval_every > 0 or target is not None) else "disabled"
        )
        if target is not None and self.eval_problem:
            raise SessionError(f"--target-exploitability needs exact exploitability: {self.eval_problem}")
        self.rows = read_metrics(run_dir)
        self.metrics_file: IO[str] | None = None
        self.bar: Any = None  # a progress bar while the session runs (mccfr_util.progress)
        self.signal_name: str | None = None
        self.stop_reason = "iterations" if config.iterations is not None else "time"
        self.last_expl: float | None = None
        self.last_expl_iter = -1
        self.last_ckpt_iter = tr.iteration
        self.last_ckpt_path: Path | str | None = None
        self.ckpt_pause: float | None = None
        self.compile_seconds: float | None = None  # the kernels' compile before the clock starts
        # the clocks and counters of a run, set when it starts (:meth:`run`)
        self.t0 = self.last_report = self.last_eval = self.last_ckpt = 0.0
        self.deadline: float | None = None
        self.start_iter = self.prev_iter = self.session_rows = 0
        self.start_seconds = self.prev_seconds = 0.0
        self.start_visits = self.prev_visits = self.prev_pruned = 0
        self.first_chunk_done: tuple[int, float, int] | None = None

    # -- output ---------------------------------------------------------------------------------
    def note(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=sys.stderr)
        else:
            self.log(msg)

    def _status_text(self, row: dict[str, Any]) -> str:
        parts = [f"visits/s {si(row['node_visits_per_second'])}"]
        if self.last_expl is not None:
            measure = exact_measure(self.tr.game)
            parts.append(f"{'expl' if measure == 'exploitability' else measure} {self.last_expl:.4g}")
        if row["pruned_share"] is not None:
            parts.append(f"pruned {100 * row['pruned_share']:.1f}%")
        parts.append(f"mem {human_bytes(row['rss_bytes'])}")
        if row.get("saturated") is not None:  # 16-bit tables
            parts.append(f"16-bit saturated {row['saturated']:,} underflowed {row['underflowed']:,}")
        if row.get("threads") is not None:  # one process
            parts.append("1 thread" if row["threads"] == 1 else f"{row['threads']} threads")
        if row.get("workers") is not None:  # the Ray job
            parts.append(
                f"{row['workers']} workers, stale {row['staleness']:.0f} it, "
                f"worker mem {human_bytes(row['worker_rss_bytes'] or 0)}"
            )
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

    def checkpoint(self, final: bool = False) -> None:
        """Write a checkpoint: into the run directory; with ``storage``, from the Ray job's
        published snapshot into storage while the rounds go on (``final``: waited for), or on one
        process into the run directory and then uploaded."""
        t = time.perf_counter()
        if self.storage is None:
            self.last_ckpt_path = self.tr.save(self.run_dir, keep=self.keep)
        elif hasattr(self.tr, "save_to_storage"):  # the Ray job: the driver only submits the writes
            it = self.tr.save_to_storage(self.storage, keep=self.keep)
            self.last_ckpt_path = self.storage.describe(it)
            if final:
                self.ckpt_pause = time.perf_counter() - t
                self.tr.wait_saves()  # complete before the command says it is written
        else:
            path = self.tr.save(self.run_dir, keep=self.keep)
            self.storage.upload_checkpoint(path, self.tr.iteration)
            self.storage.prune(self.keep)
            self.last_ckpt_path = self.storage.describe(self.tr.iteration)
        if not (final and self.storage is not None and hasattr(self.tr, "save_to_storage")):
            self.ckpt_pause = time.perf_counter() - t  # training waits this long; the next row says so
        self.last_ckpt_iter = self.tr.iteration
        self._flush_metrics_parquet()

    def _flush_metrics_parquet(self) -> None:
        if self.rows:
            write_metrics_parquet(self.run_dir, self.rows)

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
            "table_bytes": int(getattr(tr, "table_bytes", tr.regret.nbytes + tr.strat.nbytes)),
            "rss_bytes": rss_bytes(),
            "time": time.time(),
            "checkpoint_seconds": self.ckpt_pause,
            "threads": getattr(tr, "threads", None),  # one process: its threads (the Ray job: None)
            "saturated": getattr(tr, "saturated", None) if getattr(tr, "table_bits", 32) == 16 else None,
            "underflowed": getattr(tr, "underflowed", None) if getattr(tr, "table_bits", 32) == 16 else None,
        }
        self.ckpt_pause = None
        if hasattr(tr, "stats"):  # the Ray job
            st = tr.stats()
            row.update({k: st[k] for k in ("workers", "staleness", "bytes_per_batch", "worker_rss_bytes")})
        self.rows.append(row)
        self.session_rows += 1
        assert self.metrics_file is not None  # open while the session runs
        self.metrics_file.write(json.dumps(row) + "\n")
        self.metrics_file.flush()
        self.prev_seconds, self.prev_iter = tr.seconds, tr.iteration
        self.prev_visits, self.prev_pruned = tr.node_visits, tr.pruned
        shown = dict(row, pruned_share=(d_pr / d_vis if d_vis > 0 else None))
        if self.bar is not None:
            self.bar.set_postfix_str(self._status_text(shown), refresh=False)
            self.bar.update(tr.iteration - self.bar.n - self.start_iter)
            self.bar.refresh()
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
            # The Ray job compiles on its workers: its first chunk (one iteration) includes
            # compiling or loading the numba kernels, and counts neither in the session's rates
            # nor against --time.
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
            try:
                self.checkpoint()
                writing = (
                    " (being written)" if self.storage is not None and hasattr(tr, "save_to_storage") else ""
                )
                self.note(f"checkpoint at iteration {tr.iteration:,}: {self.last_ckpt_path}{writing}")
            except CheckpointError as exc:  # disk full, ...: the previous one is intact; go on
                self.note(f"warning: {exc}; training goes on and tries again in {self.checkpoint_every:g} s")
            self.last_ckpt = time.perf_counter()
        return stop

    def run(self) -> dict[str, Any]:
        tr = self.tr
        warm_up = getattr(tr, "warm_up", None)  # one process: its kernels compile before the clock
        if warm_up is not None:
            start = time.perf_counter()
            warm_up()
            self.compile_seconds = time.perf_counter() - start
            self.note(f"kernels compiled or loaded in {self.compile_seconds:.1f} s (not counted in --time)")
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + self.budget_seconds if self.budget_seconds is not None else None
        self.last_report = self.last_eval = self.last_ckpt = self.t0
        self.start_iter, self.start_seconds, self.start_visits = tr.iteration, tr.seconds, tr.node_visits
        self.prev_seconds, self.prev_iter = tr.seconds, tr.iteration
        self.prev_visits, self.prev_pruned = tr.node_visits, tr.pruned
        self.first_chunk_done = None
        if self.compile_seconds is not None:  # nothing to leave out of the rates and --time
            self.first_chunk_done = (self.start_iter, self.start_seconds, self.start_visits)
        self.session_rows = 0
        # a live bar on a terminal; otherwise a plain line per interval (at least 20 s, at least
        # --report-every) and one at the end
        self.bar = progress_bar(
            self.iterations,
            tr.game.name or "train",
            "it",
            interval=max(PLAIN_PROGRESS_SECONDS, self.report_every),
            unit_scale=True,
            dynamic_ncols=True,
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
                    self.checkpoint(final=True)
                elif self.storage is not None and hasattr(tr, "save_to_storage"):
                    tr.wait_saves()  # the last periodic one, still being written
                    self._flush_metrics_parquet()
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
        # Rates over this session, leaving out the Ray job's first chunk (its workers' compile).
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
        if self.compile_seconds is not None:
            out["compile_seconds"] = self.compile_seconds
        if getattr(tr, "threads", None) is not None:
            out["threads"] = tr.threads
        if self.last_expl is not None and self.last_expl_iter == tr.iteration:
            out["exploitability"] = self.last_expl
        out["stopped"] = self.stop_reason
        out["run_dir"] = str(self.run_dir)
        out["checkpoint"] = str(self.last_ckpt_path)
        if self.storage is not None:
            out["storage"] = self.storage.target
        return out


def run_session(
    tr,
    job,
    run_dir: Path,
    config: SessionConfig,
    *,
    storage=None,
    log: Callable[[str], Any] | None = None,
) -> tuple[dict[str, Any], Session]:
    """Run a training session on ``job`` (a Ray job around ``tr``, closed at the end) or on ``tr``;
    returns the result (with the job's figures, :data:`JOB_RESULT_KEYS`) and the session."""
    try:
        sess = Session(job if job is not None else tr, run_dir, config, storage=storage, log=log)
        result = sess.run()
        if job is not None:
            job.sync()
            st = job.stats()
            result.update({k: st[k] for k in JOB_RESULT_KEYS})
    finally:
        if job is not None:
            job.close()
    return result, sess
