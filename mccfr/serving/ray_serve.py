"""The strategy query service as a Ray Serve application: ``mccfr serve RUN_DIR --ray``.

Each replica loads the run's responder (:func:`mccfr.serving.solving.make_responder`) and serves the
very FastAPI application of ``mccfr serve`` (:func:`mccfr.serving.service.create_app`) through
``serve.ingress``: the same endpoints, request handling, errors, metrics (per replica) and time
budgets. Ray Serve's HTTP proxy spreads the requests over ``replicas`` replicas; on a cluster they
may sit on other machines, so ``RUN_DIR`` must be readable at the same path there (a shared file
system), as must the project's code.

Ray Serve is an optional dependency: ``pip install "mccfr[serve]"`` (``ray[serve]``).
"""

from __future__ import annotations

import gc
from typing import Any

from mccfr.serving.service import create_app
from mccfr.serving.solving import make_responder
from mccfr_util.numba_cache import ray_runtime_env

SERVE_EXTRA = (
    'the Ray Serve deployment needs ray[serve]: pip install "mccfr[serve]" (or pip install "ray[serve]")'
)
APP_NAME = "mccfr"


class RayServeMissing(ImportError):
    """``ray.serve`` cannot be imported (the ``serve`` extra is not installed)."""


def import_serve():
    """``ray.serve``, or :class:`RayServeMissing` naming the extra to install."""
    try:
        from ray import serve  # the optional ``serve`` extra (and Ray is heavy): imported when used
    except ImportError as exc:
        raise RayServeMissing(f"{SERVE_EXTRA} ({exc})") from None
    return serve


def build_app(
    run_dir: str,
    replicas: int = 1,
    *,
    threads: int = 8,
    responder_options: dict[str, Any] | None = None,
    num_cpus: float = 1.0,
    app_options: dict[str, Any] | None = None,
):
    """The Ray Serve application (``serve.run`` it): ``replicas`` copies of the query service of
    ``run_dir``. ``responder_options``: keyword arguments of :func:`~mccfr.serving.solving.make_responder`
    (``solve_method``, ``default_time_budget_ms``, ``from_round``, ``solver_threads``,
    ``memory_budget`` (per replica), ...). ``app_options``: keyword arguments of
    :func:`~mccfr.serving.service.create_app` (``api_key``, ``max_body_bytes``,
    ``max_inflight_per_client``; the in-flight cap counts per replica)."""
    serve = import_serve()
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    opts = dict(responder_options or {})
    app_opts = dict(app_options or {})

    @serve.ingress()
    class StrategyService:
        """One replica: the run's responder behind the service's FastAPI app."""

        def __init__(self, run_dir: str, threads: int, opts: dict[str, Any], app_opts: dict[str, Any]):
            self.run_dir = run_dir
            self.threads = threads
            self.app_opts = app_opts
            self.responder = make_responder(run_dir, **opts)
            warm_up = getattr(self.responder, "warm_up", None)
            if warm_up is not None:
                warm_up()
            gc.collect()
            gc.freeze()  # the loaded blueprint out of the collector's full passes (see mccfr/cli/serve.py)

        def __serve_build_asgi_app__(self):
            return create_app(
                self.responder,
                threads=self.threads,
                describe={"run_dir": self.run_dir, "ray_serve": True},
                **self.app_opts,
            )

    dep = serve.deployment(
        StrategyService,
        name="StrategyService",
        num_replicas=replicas,
        ray_actor_options={"num_cpus": num_cpus},
    )
    return dep.bind(str(run_dir), threads, opts, app_opts)


def run(app, host: str = "127.0.0.1", port: int = 8000, address: str | None = None, blocking: bool = False):
    """Start Ray (join ``address``, or a local cluster when None) and Ray Serve's HTTP proxy on
    ``host:port``, and deploy ``app`` at ``/``. Returns the base URL."""
    import ray  # heavy: imported only when serving on Ray

    serve = import_serve()
    if not ray.is_initialized():
        ray.init(
            address=address,
            include_dashboard=False,
            logging_level="warning",
            log_to_driver=False,
            runtime_env=ray_runtime_env(),  # replicas set the numba cache before loading kernels
        )
    serve.start(http_options={"host": host, "port": port})
    serve.run(app, name=APP_NAME, route_prefix="/", blocking=blocking)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def shutdown() -> None:
    """Remove the application, stop Ray Serve, and disconnect from Ray."""
    import ray  # heavy: imported only when serving on Ray

    serve = import_serve()
    serve.shutdown()
    if ray.is_initialized():
        ray.shutdown()


__all__ = ["APP_NAME", "RayServeMissing", "SERVE_EXTRA", "build_app", "import_serve", "run", "shutdown"]
