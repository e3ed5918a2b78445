"""Play-time serving: answering strategy queries (blueprint lookups, subgame solves within a
deadline) and the programs around them.

===================================  =============================================================
module                               what it holds
===================================  =============================================================
:mod:`mccfr.serving.query`           the query contract: answers, :class:`QueryError` kinds, the
                                     :class:`Responder` protocol, validation
:mod:`mccfr.serving.responders`      responders that do not solve: blueprint, player, HTTP client
:mod:`mccfr.serving.solving`         :class:`SolvingResponder` and its :class:`SolvingOptions`;
                                     :func:`make_responder`, the responder for a run
:mod:`mccfr.serving.admission`       the time and memory estimates that admit a solve
:mod:`mccfr.serving.resources`       cores, CPU priority, memory budget, ``malloc_trim``
:mod:`mccfr.serving.solver_processes` solves in forked worker processes
:mod:`mccfr.serving.service`         the HTTP query service (FastAPI)
:mod:`mccfr.serving.ray_serve`       the service as a Ray Serve application
:mod:`mccfr.serving.acpc_client`     the ACPC client; :mod:`mccfr.serving.acpc_dealer` a
                                     two-player ACPC dealer for tests
:mod:`mccfr.serving.fuzz`            request-body fuzzing of the service
===================================  =============================================================

Names load on first use (:mod:`mccfr_util.lazy`): ``from mccfr.serving import make_responder``.
"""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "QueryError": "mccfr.serving.query",
    "Responder": "mccfr.serving.query",
    "SOLVE_METHODS": "mccfr.serving.query",
    "BlueprintResponder": "mccfr.serving.responders",
    "HttpResponder": "mccfr.serving.responders",
    "PlayerResponder": "mccfr.serving.responders",
    "SolverResources": "mccfr.serving.solving",
    "SolvingOptions": "mccfr.serving.solving",
    "SolvingResponder": "mccfr.serving.solving",
    "make_responder": "mccfr.serving.solving",
    "create_app": "mccfr.serving.service",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
