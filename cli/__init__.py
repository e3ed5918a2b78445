"""The ``mccfr`` command (:mod:`cli.main`); the only package that parses arguments."""

from cli.main import cli, main

__all__ = ["cli", "main"]
