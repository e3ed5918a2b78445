"""The error that stops a Ray training job: :class:`JobError`."""

from __future__ import annotations

__all__ = ["JobError"]


class JobError(RuntimeError):
    """The job cannot go on (a shard died and could not be restored, no node left, ...); the
    message says why and which checkpoint to resume from."""
