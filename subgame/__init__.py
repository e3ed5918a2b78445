"""Play-time solving: subgames re-solved from blueprint values (docs/architecture.md, sections 1 and 3).

``subgame.solve(sub, method=..., time_budget=..., iterations=...) -> Solution`` is
:func:`subgame.solver.solve`; ``subgame.Subgame`` and ``subgame.Solution`` its types. They load
lazily, so importing a light module of this package (the service, the ACPC client) does not load
the solver's numba kernels.
"""

_LAZY = {
    "solve": "subgame.solver",
    "Subgame": "subgame.solver",
    "Solution": "subgame.solver",
    "METHODS": "subgame.solver",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'subgame' has no attribute {name!r}")
