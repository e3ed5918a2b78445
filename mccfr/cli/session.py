"""The printing side of a training session (``train`` and ``resume``): what the user reads
before and after :func:`blueprint.session.run_session`, which does the work."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click

from blueprint.blueprint import Blueprint
from blueprint.session import (
    Session,
    SessionConfig,
    SessionError,
    default_budget,
    exact_eval_problem,
    exact_measure,
    run_session,
    si,
)
from cluster.config import RayJobConfig
from holdem.cards import RANK_CHARS
from mccfr.cli.common import CLIError, example_matchstate, expl_unit

__all__ = ["budget", "finish", "opening_range", "ray_job", "train_session"]


def _note(msg: str) -> None:
    click.echo(msg, err=True)


def budget(
    iterations: int | None, seconds: float | None, big: bool = False
) -> tuple[int | None, float | None]:
    """``--iterations`` or ``--time`` (the default time when neither is given)."""
    if iterations is not None and seconds is not None:
        raise click.UsageError("give --iterations or --time, not both")
    return default_budget(iterations, seconds, big)


def train_session(tr, job, run_dir: Path, as_json: bool, config: SessionConfig, storage=None) -> None:
    """Run a training session (on the Ray job if there is one; a job that stops is one error line,
    exit 2), then print the result."""
    try:
        result, sess = run_session(tr, job, run_dir, config, storage=storage, log=_note)
    except SessionError as exc:
        raise CLIError(str(exc)) from None
    finish(tr, result, as_json, sess)


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
            f"{exact_measure(tr.game)}: {value:.6g} {unit}"
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
            cards = "|".join(hole if p == seat else "" for p in range(g.num_players))
            strat = bp.strategy(f"MATCHSTATE:{seat}:0::{cards}")
            raise_p = sum(p for a, p in strat.items() if a.startswith("r"))
            cells.append(f"{100 * raise_p:4.0f}")
        rows.append(f"  {RANK_CHARS[i]}  " + "".join(cells))
    return rows


def ray_job(tr, options: dict[str, Any]):
    """The Ray job around ``tr``: ``options`` (None values left out, but ``threads``: None is
    the node's cores shared among its workers) make its :class:`cluster.config.RayJobConfig`."""
    from cluster.job import RayJob  # Ray: only a Ray run imports it

    config = RayJobConfig.of(
        threads=options.get("threads"),
        **{k: v for k, v in options.items() if v is not None and k != "threads"},
    )
    job = RayJob(tr, config, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    click.echo(
        f"Ray job: {job.num_workers} workers of {job.threads} thread{'s' if job.threads > 1 else ''}, "
        f"{job.num_shards} shards, batch {job.batch}, "
        f"{job.num_nodes} node(s){'' if job.share_cards else ', a private card table per worker'}",
        err=True,
    )
    return job
