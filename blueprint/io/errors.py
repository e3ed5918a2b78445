"""The one error of checkpoint and blueprint files: :class:`CheckpointError`."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(Exception):
    """A checkpoint could not be written, or a file is missing, corrupt or from the wrong run.

    The message names the file (or directory) and what is wrong with it.
    """
