"""The ``mccfr`` command (:mod:`mccfr.cli.main`); the only package that parses arguments."""

from mccfr.cli.main import cli, main

__all__ = ["cli", "main"]
