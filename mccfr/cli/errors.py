"""The command line's error type, its exit statuses and the one line an error prints; standard
library and click only, so the ``mccfr`` group (:mod:`mccfr.cli.main`) loads without a command."""

from __future__ import annotations

import click

__all__ = ["EXIT_INTERRUPTED", "EXIT_USER_ERROR", "CLIError", "fail"]

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """A problem with what the user asked for: printed as ``error: <message>``, exit status 2."""


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
