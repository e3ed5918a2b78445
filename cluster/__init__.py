"""Distribution on Ray: the job (driver), its config, per-node leaders, workers and regret shards.

This process's memory figures (``rss_bytes``, ``memory_bytes``) are in :mod:`blueprint.memory`."""

from __future__ import annotations

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "RayJob": "cluster.job",
    "RayJobConfig": "cluster.config",
    "JobError": "cluster.errors",
    "Storage": "cluster.storage",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
