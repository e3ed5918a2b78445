"""The training session shared by ``train`` and ``resume``: drives ``Trainer.run`` (or the Ray
job) with progress, metrics, evaluation, checkpoints and signals, then prints the result."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from blueprint.defaults import DEFAULT_TIME_BUDGET, DEFAULT_TIME_BUDGET_HOLDEM
from blueprint.rundir import METRICS_JSONL, read_metrics, write_metrics_parquet
from cluster import rss_bytes
from holdem.progress import PLAIN_PROGRESS_SECONDS, progress_bar
from mccfr.cli.common import CLIError, exact_eval_problem, example_matchstate, expl_unit, human_bytes, si


class Session:
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
        storage=None,
    ):
        self.tr = tr
        self.run_dir = run_dir
        self.storage = storage  # a cluster.storage.Storage: checkpoints go there (--storage)
        self.iterations = iterations
        self.budget_seconds = seconds
        self.checkpoint_every = checkpoint_every
        self.keep = keep
        self.eval_every = eval_every
        self.report_every = report_every
        self.target = target
        self.eval_problem = exact_eval_problem(tr) if (eval_every > 0 or target is not None) else "disabled"
        if target is not None and self.eval_problem:
            raise CLIError(f"--target-exploitability needs exact exploitability: {self.eval_problem}")
        self.rows = read_metrics(run_dir)
        self.metrics_file = None
        self.bar = None
        self.signal_name: str | None = None
        self.stop_reason = "iterations" if iterations is not None else "time"
        self.last_expl: float | None = None
        self.last_expl_iter = -1
        self.last_ckpt_iter = tr.iteration
        self.last_ckpt_path: Path | str | None = None
        self.ckpt_pause: float | None = None
        self.compile_seconds: float | None = None  # the kernels' compile before the clock starts

    # -- output ---------------------------------------------------------------------------------
    def note(self, msg: str) -> None:
        if self.bar is not None:
            self.bar.write(msg, file=sys.stderr)
        else:
            click.echo(msg, err=True)

    def _status_text(self, row: dict[str, Any]) -> str:
        parts = [f"visits/s {si(row['node_visits_per_second'])}"]
        if self.last_expl is not None:
            parts.append(f"expl {self.last_expl:.4g}")
        if row["pruned_share"] is not None:
            parts.append(f"pruned {100 * row['pruned_share']:.1f}%")
        parts.append(f"mem {human_bytes(row['rss_bytes'])}")
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
            "table_bytes": int(tr.regret.nbytes + tr.strat.nbytes),
            "rss_bytes": rss_bytes(),
            "time": time.time(),
            "checkpoint_seconds": self.ckpt_pause,
            "threads": getattr(tr, "threads", None),  # one process: its threads (the Ray job: None)
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
            from blueprint.io.errors import CheckpointError

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


def budget(
    iterations: int | None, seconds: float | None, big: bool = False
) -> tuple[int | None, float | None]:
    if iterations is not None and seconds is not None:
        raise click.UsageError("give --iterations or --time, not both")
    if iterations is None and seconds is None:
        seconds = DEFAULT_TIME_BUDGET_HOLDEM if big else DEFAULT_TIME_BUDGET
    return iterations, seconds


def finish(tr, result: dict[str, Any], as_json: bool, sess: Session) -> None:
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
            f"{result['wall_seconds']:.1f} s"
            + (
                f" (+ {result['compile_seconds']:.1f} s compiling the kernels)"
                if "compile_seconds" in result
                else ""
            )
            + f": {si(result['iterations_per_second'])} it/s, "
            f"{si(result['node_visits_per_second'])} node visits/s"
        ),
    ]
    if "exploitability" in result:
        unit, factor = expl_unit(tr.game)
        value = result["exploitability"] * factor
        lines.append(
            f"exploitability: {value:.6g} {unit}"
            + ("" if unit == "chips" else f" ({result['exploitability']:.6g} chips)")
        )
    ms = example_matchstate(tr.game)
    lines += [
        f"blueprint: {result['checkpoint']}",
        "use it:"
        + (
            f" (checkpoints in {sess.storage.target}: these commands fetch the newest into "
            f"{sess.run_dir / 'checkpoints'} first)"
            if sess.storage is not None
            else ""
        ),
        f"  mccfr status {run}",
        f"  mccfr eval {run} --exploitability"
        if exact_eval_problem(tr) is None
        else f"  mccfr eval {run}   (exact exploitability is out of reach for this game)",
        f"  mccfr export {run} --out {shlex.quote(str(sess.run_dir / 'strategy.parquet'))}",
        f"  mccfr resume {run} --iterations N",
        "  python -c "
        + shlex.quote(
            f"from mccfr import Blueprint; "
            f"print(Blueprint.load({json.dumps(str(sess.run_dir))})"
            f".strategy({json.dumps(ms)}))"
        ),
    ]
    table = opening_range(tr)
    for line in table + lines:
        click.echo(line)
    if as_json:
        click.echo(json.dumps(result))


def opening_range(tr) -> list[str]:
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


def ray_job(tr, kwargs: dict[str, Any]):
    """The Ray job around ``tr`` (imports Ray: only here)."""
    from cluster.job import RayJob

    job = RayJob(
        tr,
        log=lambda msg: click.echo(f"warning: {msg}", err=True),
        threads=kwargs.get("threads"),  # None: the node's cores shared among its workers
        **{k: v for k, v in kwargs.items() if v is not None and k != "threads"},
    )
    click.echo(
        f"Ray job: {job.num_workers} workers of {job.threads} thread{'s' if job.threads > 1 else ''}, "
        f"{job.num_shards} shards, batch {job.batch}, "
        f"{job.num_nodes} node(s){'' if job.share_cards else ', a private card table per worker'}",
        err=True,
    )
    return job


def run_session(tr, job, run_dir: Path, as_json: bool, **session) -> None:
    """Run a training session (on the Ray job if there is one), then print the result."""
    try:
        sess = Session(job if job is not None else tr, run_dir, **session)
        try:
            result = sess.run()
        except Exception as exc:
            if job is not None:
                from cluster.errors import JobError

                if isinstance(exc, JobError):  # a shard died and could not be restored: say so, exit 2
                    raise CLIError(str(exc)) from None
            raise
        if job is not None:
            job.sync()
            st = job.stats()
            result.update(
                {
                    k: st[k]
                    for k in (
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
                }
            )
    finally:
        if job is not None:
            job.close()
    finish(tr, result, as_json, sess)
