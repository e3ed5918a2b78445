"""Lazy package exports: a package's ``__init__`` names its public API without importing it.

``__getattr__, __dir__ = lazy_exports(__name__, {"Name": "package.module", ...})`` in a package's
``__init__.py`` makes ``from package import Name`` import ``package.module`` on first use, so
importing a light module of the package (or the command line's start-up) loads no numba kernels,
Ray or FastAPI. ``__all__`` is then ``sorted(mapping)``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
