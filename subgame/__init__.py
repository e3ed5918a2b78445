"""Play-time solving: subgames re-solved from blueprint values (docs/solving.md).

``subgame.solve(sub, method=..., time_budget=..., iterations=...) -> Solution`` solves an explicit
subgame; ``subgame.solve_state(bp, state, method)`` the subgame at a blueprint's match state. Names
load on first use (:mod:`mccfr_util.lazy`), so importing a light module of this package (the service,
the ACPC client) does not load the solver's numba kernels.

The modules, each importing only those above it:

==================  ===========================================================================
``interrupt``       a solve's deadline and stop event, checked between its steps
``bets``            the subgames' bet abstraction and the blueprint's
``depth_kernels``   numba: the depth-limited continuations' walk and the leaf values
``kernels``         numba: the range-vectorized walk (CFR, best response, values), strategy tables
``tree``            a subgame's public tree and the per-board hand data its walk reads
``tables``          per-blueprint tables kept across solves (buckets per board, leaf templates)
``limits``          :class:`~subgame.limits.SolveLimits`: a solve's stop rule, checked once
``leaf_model``      the continuations after the depth-limit leaves as flat arrays
``depth``           depth-limited solving: :class:`~subgame.depth.DepthLimit`, the truncated tree
``locking``         node locks: a seat's strategy fixed at chosen nodes (histories, checks, tables)
``types``           :class:`~subgame.types.Subgame` (what to solve), :class:`~subgame.types.Solution`
``engine``          :class:`~subgame.engine.Engine`: one tree's work arrays and walks
``continuation``    the continuations built from the blueprint (a leaf model)
``depth_engine``    the engine of a depth-limited tree (its walks value the leaves)
``solver``          :func:`~subgame.solver.solve`: the methods (safe gadgets) and the schedule
``libratus``        the public Libratus endgame format
``construct``       subgames from a blueprint and a hand history (ranges, values, gifts)
``nested``          nested solving of off-tree bets; :func:`~subgame.nested.solve_state`
``saved``           saved solves: a subgame and its solver state in one file
``cache``           solved subgames kept for reuse within a memory budget
``policy``          :class:`~subgame.policy.SolvePolicy`: blueprint, then solve, then reuse
``multiway_kernels`` numba: the N-seat search's sampled traversal, leaves and rollouts
``multiway``        :class:`~subgame.multiway.MultiwaySearch`: Pluribus-style search, any seats
==================  ===========================================================================

The fold and showdown terminals the walks share live below, in :mod:`blueprint.range_kernels`.
"""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "solve": "subgame.solver",
    "LockError": "subgame.locking",
    "SolveState": "subgame.types",
    "save_solve": "subgame.saved",
    "read_saved": "subgame.saved",
    "Subgame": "subgame.types",
    "Solution": "subgame.types",
    "METHODS": "subgame.solver",
    "solve_state": "subgame.nested",
    "SolveLimits": "subgame.limits",
    "SolvePolicy": "subgame.policy",
    "hand_strategy": "subgame.nested",
    "read_libratus": "subgame.libratus",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
