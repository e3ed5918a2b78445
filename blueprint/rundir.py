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

import datetime
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from holdem.files import atomic_path, atomic_write_bytes

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
