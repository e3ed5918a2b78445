"""``mccfr status``: a run's progress, checkpoints and metrics (``--plot``: the exploitability curve).

A run whose checkpoints go to a storage path (``--storage``, recorded in run.toml) lists those too,
read in place (only the newest manifest; nothing is fetched); RUN_DIR may also be a storage URI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from blueprint.checkpoints import list_checkpoints
from blueprint.io.errors import CheckpointError
from blueprint.rundir import METRICS_PARQUET, read_metrics, summarize_run
from blueprint.session import human_bytes, si
from cluster.storage import Storage
from mccfr.cli.common import CLIError, is_storage_uri, json_opt, open_storage, run_dir_arg, run_storage


@click.command()
@click.argument("run_dir")
@click.option("--verify", is_flag=True, help="Also check every checkpoint file's digest (reads every byte).")
@click.option(
    "--plot",
    "plot",
    default=None,
    metavar="FILE.png",
    help="Draw the exploitability curve (exploitability against iterations, log scale) to a PNG.",
)
@json_opt
def status(run_dir, verify, plot, as_json):
    """List a run's checkpoints and summarise its metrics (and draw its exploitability curve)."""
    if is_storage_uri(run_dir):  # checkpoints in storage alone: no metrics, nothing local
        path, target = None, run_dir
        storage = open_storage(target)
    else:
        path = run_dir_arg(run_dir, fetch=False)
        target = run_storage(path)
        storage = None
    stored, stored_manifest = _stored_checkpoints(target, storage)
    infos = list_checkpoints(path, verify=verify) if path is not None else []
    rows = _metrics_rows(path) if path is not None else []
    summary = summarize_run(rows, infos, stored, stored_manifest)
    summary["run_dir"] = str(path) if path is not None else target
    if target is not None:
        summary["storage"] = target
        summary["storage_checkpoints"] = [{"iteration": it, "complete": ok} for it, ok in stored]
    _print_status(summary, path if path is not None else target, target, stored, bool(rows))
    if plot is not None:
        summary["plot"] = _plot_exploitability(Path(path or target or run_dir), rows, Path(plot))
        click.echo(f"  exploitability curve: {summary['plot']}")
    if as_json:
        click.echo(json.dumps(summary))


def _stored_checkpoints(target: str | None, storage) -> tuple[list[tuple[int, bool]], dict[str, Any]]:
    """The checkpoints in the run's storage (iteration, complete) and the newest complete one's
    manifest, read in place; storage that cannot be read is a warning."""
    stored: list[tuple[int, bool]] = []
    stored_manifest: dict[str, Any] = {}
    if target is not None:
        try:
            storage = storage or Storage(target)
            stored = storage.checkpoints()
            newest = next((it for it, ok in stored if ok), None)
            if newest is not None:
                stored_manifest = storage.read_manifest(newest)
        except CheckpointError as exc:  # StorageError included: the local record still says something
            click.echo(f"warning: {' '.join(str(exc).split())}", err=True)
    return stored, stored_manifest


def _metrics_rows(path: Path) -> list[dict[str, Any]]:
    """The run's metrics rows: ``metrics.jsonl``, else ``metrics.parquet``."""
    rows = read_metrics(path)
    if not rows and (path / METRICS_PARQUET).exists():
        import pyarrow.parquet as pq  # pyarrow: only a run whose metrics.jsonl is gone needs it

        rows = pq.read_table(path / METRICS_PARQUET).to_pylist()
    return rows


def _print_status(summary: dict[str, Any], where, target: str | None, stored, has_rows: bool) -> None:
    click.echo(f"run {where}")
    if not summary["checkpoints"] and not stored:
        click.echo("  no checkpoints yet")
    for c in summary["checkpoints"]:
        state = "complete" if c["complete"] else f"INCOMPLETE: {c['problem']}"
        click.echo(f"  checkpoint {c['iteration']:>12,}  {human_bytes(c['bytes']):>10}  {state}")
    if target is not None:
        click.echo(f"  storage {target}")
        for it, ok in stored:
            click.echo(
                f"  checkpoint {it:>12,}  {'in storage':>10}  {'complete' if ok else 'INCOMPLETE (no manifest)'}"
            )
    if has_rows:
        click.echo(
            f"  iterations {summary['iterations']:,} in {summary['seconds'] or 0:.1f} s of training; last "
            f"{si(summary['iterations_per_second'] or 0)} it/s, "
            f"{si(summary['node_visits_per_second'] or 0)} node visits/s"
        )
        if summary["exploitability"] is not None:
            click.echo(
                f"  exploitability {summary['exploitability']:.6g} chips at iteration "
                f"{summary['exploitability_iteration']:,}"
            )
        if summary.get("workers") is not None:
            click.echo(
                f"  Ray job: {summary['workers']} workers, staleness {summary['staleness']:.0f} iterations, "
                f"{human_bytes(summary['bytes_per_batch'] or 0)} per batch, worker memory "
                f"{human_bytes(summary['worker_rss_bytes'])}"
            )
        if summary["checkpoint_pause_seconds"] is not None:
            click.echo(
                f"  longest checkpoint pause {summary['checkpoint_pause_seconds']:.2f} s; "
                f"driver memory {human_bytes(summary['rss_bytes'])}"
            )
    elif summary["iterations"] is not None:
        click.echo(f"  iterations {summary['iterations']:,} (no metrics)")


def _plot_exploitability(run_dir: Path, rows: list[dict[str, Any]], out: Path) -> str:
    """Draw exploitability against iterations (both log scale) from the metrics rows to ``out``."""
    points = [
        (r["iteration"], r["exploitability"])
        for r in rows
        if r.get("exploitability") is not None and r["iteration"] > 0 and r["exploitability"] > 0
    ]
    if not points:
        raise CLIError(
            f"{run_dir} has no exploitability in its metrics (it is computed exactly only on small games, "
            "and not with --eval-every 0): nothing to plot"
        )
    if out.suffix.lower() != ".png":
        raise CLIError(f"--plot {out}: the file must end in .png")
    from matplotlib.figure import Figure  # matplotlib: only --plot needs it (the Agg canvas, no pyplot)

    fig = Figure(figsize=(6, 4), dpi=100)
    ax = fig.subplots()
    ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations")
    ax.set_ylabel("exploitability (chips, NashConv / 2)")
    ax.set_title(run_dir.name)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    return str(out)
