"""Play-time solving: subgames re-solved from blueprint values (docs/solving.md).

``subgame.solve(sub, method=..., time_budget=..., iterations=...) -> Solution`` solves an explicit
subgame; ``subgame.solve_state(bp, state, method)`` the subgame at a blueprint's match state. Names
load on first use (:mod:`holdem.lazy`), so importing a light module of this package (the service,
the ACPC client) does not load the solver's numba kernels.
"""

from holdem.lazy import lazy_exports

_LAZY = {
    "solve": "subgame.solver",
    "Subgame": "subgame.types",
    "Solution": "subgame.types",
    "METHODS": "subgame.solver",
    "solve_state": "subgame.nested",
    "hand_strategy": "subgame.nested",
    "read_libratus": "subgame.libratus",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
