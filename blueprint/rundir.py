"""The run directory, owned in one place: its layout, ``run.toml`` and the metrics files.

::

    RUN_DIR/run.toml            resolved config: game (+ its ACPC text), bets, card abstraction,
                                algorithm fields, seed, config and abstraction hashes; ``storage``:
                                where the checkpoints go when not here (``--storage``)
    RUN_DIR/checkpoints/<it>/   shard files, the blueprint file and the manifest (:mod:`blueprint.checkpoints`);
                                with ``storage``, copies fetched from there by the commands that read them
    RUN_DIR/metrics.jsonl       one JSON object per progress report, appended as it happens
    RUN_DIR/metrics.parquet     the same rows, rewritten atomically at every checkpoint and at exit
    RUN_DIR/corrupt-checkpoints/  checkpoints a resume could not load, moved out of the way
    RUN_DIR/ray.log             a Ray run's own messages (Ray's warnings, its C++ core's errors) and
                                where Ray's session logs are; on the terminal instead with --verbose

Metrics rows: ``iteration``, ``seconds`` (cumulative training-kernel seconds, across resumes),
``wall_seconds`` (since this command started training), ``iterations_per_second`` and
``node_visits_per_second`` (over the interval since the previous row, in kernel time),
``exploitability`` (chips; null when not computed at that row), ``pruned`` (cumulative actions
skipped by regret-based pruning), ``table_bytes``, ``rss_bytes`` (this process), ``time`` (Unix
time), ``checkpoint_seconds`` (the pause of a checkpoint written since the previous row, else
null); Ray runs add ``workers``, ``staleness`` (iterations, mean per batch), ``bytes_per_batch``
and ``worker_rss_bytes`` (the largest worker's resident memory).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tomli_w

from mccfr_util.files import atomic_path, atomic_write_bytes

RUN_TOML = "run.toml"
METRICS_JSONL = "metrics.jsonl"
METRICS_PARQUET = "metrics.parquet"
RAY_LOG = "ray.log"
CORRUPT_CHECKPOINTS = "corrupt-checkpoints"
RUN_TOML_FORMAT = 1


def write_run_toml(run_dir: Path, tr, extra: dict[str, Any]) -> None:
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
    atomic_write_bytes(run_dir / RUN_TOML, tomli_w.dumps(doc, multiline_strings=True).encode())


def read_run_toml(run_dir: Path) -> dict[str, Any]:
    """``run.toml`` as a dict; empty when it is missing or cannot be parsed (it is a record of the
    run, never needed to load a checkpoint)."""
    try:
        return tomllib.loads((Path(run_dir) / RUN_TOML).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def update_run_toml(run_dir: Path, **fields: Any) -> None:
    """Set (or, with None, remove) top-level keys of an existing ``run.toml``, atomically."""
    doc = read_run_toml(run_dir)
    for key, value in fields.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    atomic_write_bytes(Path(run_dir) / RUN_TOML, tomli_w.dumps(doc, multiline_strings=True).encode())


def write_run_toml_from_manifest(run_dir: Path, manifest: dict[str, Any], extra: dict[str, Any]) -> None:
    """A ``run.toml`` from a checkpoint's manifest alone (its config and hashes), for a local
    directory that holds a run's checkpoints fetched from storage without the run's own files."""
    cfg = dict(manifest.get("config") or {})
    algo = cfg.pop("algo", None)
    doc: dict[str, Any] = {
        "format": RUN_TOML_FORMAT,
        **extra,
        "config_hash": manifest.get("config_hash"),
        "abstraction_hash": manifest.get("abstraction_hash"),
        **{k: v for k, v in cfg.items() if v is not None},
    }
    if algo is not None:
        doc["algo"] = algo
    doc = {k: v for k, v in doc.items() if v is not None}
    atomic_write_bytes(Path(run_dir) / RUN_TOML, tomli_w.dumps(doc, multiline_strings=True).encode())


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
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


METRIC_FIELDS = (
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
    ("threads", "int64"),  # one process: the threads it trained on (the Ray job: null)
    # 16-bit tables: updates saturated at the largest bfloat16 and nonzero ones rounded to zero,
    # since the run began (32-bit tables: null)
    ("saturated", "int64"),
    ("underflowed", "int64"),
)


def write_metrics_parquet(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa  # lazily: pyarrow takes a while to import, and only this needs it
    import pyarrow.parquet as pq

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in METRIC_FIELDS])
    table = pa.Table.from_pylist([{k: r.get(k) for k, _ in METRIC_FIELDS} for r in rows], schema=schema)
    with atomic_path(run_dir / METRICS_PARQUET) as tmp:
        pq.write_table(table, tmp)


def quarantine_newer(run_dir: Path, iteration: int, log=None) -> None:
    """Move checkpoints newer than the one resumed from (it skipped them: unreadable or corrupt)
    to ``RUN_DIR/corrupt-checkpoints/`` (each move is reported to ``log``).

    Left in place, a corrupt checkpoint whose file sizes still match would count as complete when
    old checkpoints are pruned (``--keep``), and could push the good ones out.
    """
    # lazily: blueprint.checkpoints brings numpy, and the command line imports this module at
    # start-up, which stays free of numpy (tests/cli/test_cli.py::test_import_is_light)
    from blueprint.checkpoints import list_checkpoints

    newer = [info for info in list_checkpoints(run_dir) if info.iteration > iteration]
    if not newer:
        return
    dest_root = run_dir / CORRUPT_CHECKPOINTS
    dest_root.mkdir(exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for info in newer:
        dest = dest_root / f"{info.path.name}-{stamp}"
        os.replace(info.path, dest)
        if log is not None:
            log(f"moved the unusable checkpoint {info.path} to {dest}")


# -- the run's checkpoints in a storage path (``--storage``: :class:`cluster.storage.Storage`) ----
def recorded_storage(run_dir: Path) -> str | None:
    """The storage target recorded in the run's ``run.toml``, or None."""
    target = read_run_toml(run_dir).get("storage")
    return target if isinstance(target, str) and target else None


def one_line(exc: BaseException) -> str:
    """An error's message on one line."""
    return " ".join(str(exc).split())


def sync_from_storage(
    run_dir: Path, storage, required: bool = True, log: Callable[[str], Any] | None = None
) -> Path | None:
    """Fetch the newest complete checkpoint of ``storage`` (a :class:`cluster.storage.Storage`)
    into ``run_dir/checkpoints`` when it is newer than the local ones (which are then pruned to the
    newest that verifies); returns its local directory, or None when the local one is as new.

    Storage that cannot be read raises its :class:`blueprint.io.errors.CheckpointError`
    (``StorageError``), or, with ``required`` False and a complete local checkpoint there, is a
    warning to ``log``; what was fetched is reported to ``log`` too."""
    from blueprint.checkpoints import list_checkpoints, prune_checkpoints  # numpy: see quarantine_newer
    from blueprint.io.errors import CheckpointError

    log = log or (lambda msg: None)
    try:
        fetched = storage.sync(run_dir)
    except CheckpointError as exc:
        if required or not any(i.complete for i in list_checkpoints(run_dir)):
            raise
        log(f"warning: {one_line(exc)}; using the newest checkpoint in {run_dir}")
        return None
    if fetched is not None:
        log(f"fetched {storage.describe(int(fetched.name))} into {fetched}")
        # the local copies older than it are stale (storage keeps the run's own --keep); one that
        # fails to verify is not counted, so the newest good one stays
        with contextlib.suppress(CheckpointError, OSError, ValueError):
            prune_checkpoints(run_dir, 1)
    return fetched


def fill_storage_cache(cache: Path, storage, target: str, log: Callable[[str], Any] | None = None) -> Path:
    """A local directory (``cache``) holding the newest complete checkpoint of ``storage`` (whose
    target is ``target``), fetched when newer, with a ``run.toml`` written from its manifest;
    storage that cannot be read is a warning while a complete checkpoint is in the cache."""
    from blueprint.checkpoints import list_checkpoints
    from blueprint.io.errors import CheckpointError
    from blueprint.io.manifest import read_manifest

    fetched = sync_from_storage(cache, storage, required=False, log=log)
    if fetched is not None or not (cache / RUN_TOML).exists():
        newest = next((i for i in list_checkpoints(cache) if i.complete), None)
        if newest is not None:
            with contextlib.suppress(CheckpointError, OSError):
                manifest = read_manifest(newest.path)
                write_run_toml_from_manifest(cache, manifest, {"storage": target})
    return cache


def summarize_run(
    rows: list[dict[str, Any]],
    infos: list,
    stored: Sequence[tuple[int, bool]] = (),
    stored_manifest: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``mccfr status`` says of a run: from its metrics ``rows``, its local checkpoints
    (``infos``: :class:`blueprint.checkpoints.CheckpointInfo`, newest first) and those in its
    storage (``stored``: (iteration, complete); ``stored_manifest``: the newest complete one's).

    Keys: ``iterations``, ``seconds``, ``iterations_per_second``, ``node_visits_per_second``,
    ``exploitability`` (and ``exploitability_iteration``), with metrics ``checkpoint_pause_seconds``,
    ``rss_bytes`` and for Ray runs ``workers``, ``staleness``, ``bytes_per_batch``,
    ``worker_rss_bytes``; ``checkpoints`` and ``resume_from`` (the newest complete iteration)."""
    from blueprint.io.errors import CheckpointError
    from blueprint.io.manifest import read_manifest  # numpy: see quarantine_newer

    stored_manifest = stored_manifest or {}
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
    return summary
