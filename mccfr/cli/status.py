"""``mccfr status``: a run's progress, checkpoints and metrics (``--plot``: the exploitability curve).

A run whose checkpoints go to a storage path (``--storage``, recorded in run.toml) lists those too,
read in place (only the newest manifest; nothing is fetched); RUN_DIR may also be a storage URI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from blueprint.rundir import METRICS_PARQUET, read_metrics
from mccfr.cli.common import (
    CLIError,
    human_bytes,
    is_storage_uri,
    json_opt,
    open_storage,
    run_dir_arg,
    run_storage,
    si,
)


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
    from blueprint.checkpoints import list_checkpoints
    from blueprint.io.errors import CheckpointError
    from blueprint.io.manifest import read_manifest

    if is_storage_uri(run_dir):  # checkpoints in storage alone: no metrics, nothing local
        path, target = None, run_dir
        storage = open_storage(target)
    else:
        path = run_dir_arg(run_dir, fetch=False)
        target = run_storage(path)
        storage = None
    stored: list[tuple[int, bool]] = []
    stored_manifest: dict[str, Any] = {}
    if target is not None:
        from cluster.storage import Storage

        try:
            storage = storage or Storage(target)
            stored = storage.checkpoints()
            newest = next((it for it, ok in stored if ok), None)
            if newest is not None:
                stored_manifest = storage.read_manifest(newest)
        except CheckpointError as exc:  # StorageError included: the local record still says something
            click.echo(f"warning: {' '.join(str(exc).split())}", err=True)
    infos = list_checkpoints(path, verify=verify) if path is not None else []
    rows = read_metrics(path) if path is not None else []
    if not rows and path is not None and (path / METRICS_PARQUET).exists():
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
    if stored_manifest and (
        summary["iterations"] is None or stored_manifest.get("iteration", -1) > summary["iterations"]
    ):
        summary["iterations"] = stored_manifest.get("iteration")
        summary["seconds"] = stored_manifest.get("seconds")
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
    done = [i.iteration for i in complete] + [it for it, ok in stored if ok]
    summary["resume_from"] = max(done) if done else None
    summary["run_dir"] = str(path) if path is not None else target
    if target is not None:
        summary["storage"] = target
        summary["storage_checkpoints"] = [{"iteration": it, "complete": ok} for it, ok in stored]
    click.echo(f"run {path if path is not None else target}")
    if not infos and not stored:
        click.echo("  no checkpoints yet")
    for c in checkpoints:
        state = "complete" if c["complete"] else f"INCOMPLETE: {c['problem']}"
        click.echo(f"  checkpoint {c['iteration']:>12,}  {human_bytes(c['bytes']):>10}  {state}")
    if target is not None:
        click.echo(f"  storage {target}")
        for it, ok in stored:
            click.echo(
                f"  checkpoint {it:>12,}  {'in storage':>10}  {'complete' if ok else 'INCOMPLETE (no manifest)'}"
            )
    if rows:
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
    if plot is not None:
        summary["plot"] = _plot_exploitability(Path(path or target or run_dir), rows, Path(plot))
        click.echo(f"  exploitability curve: {summary['plot']}")
    if as_json:
        click.echo(json.dumps(summary))


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
