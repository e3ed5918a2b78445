"""``mccfr serve RUN --ray``: the query service as a Ray Serve application (the serve extra)."""

from __future__ import annotations

import http.client
import json
import socket
import time

import pytest

PREFLOP = "MATCHSTATE:1:0::|AhAd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(
        method,
        path,
        body=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    r = c.getresponse()
    out = r.status, json.loads(r.read())
    c.close()
    return out


def test_missing_serve_extra_is_named(monkeypatch, tmp_path):
    import builtins

    from click.testing import CliRunner

    from mccfr.cli import cli

    real = builtins.__import__

    def no_serve(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "ray" and fromlist and "serve" in fromlist:
            raise ImportError("No module named 'grpc_reflection'")
        return real(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_serve)
    r = CliRunner().invoke(cli, ["serve", str(tmp_path), "--ray"])
    assert r.exit_code == 2 and "mccfr[serve]" in r.stderr and "grpc_reflection" in r.stderr
    r = CliRunner().invoke(cli, ["serve", str(tmp_path), "--replicas", "2"])
    assert r.exit_code == 2 and "--ray" in r.stderr


@pytest.mark.timing  # asserts wall-clock bounds: run alone, after the default run
def test_ray_serve_deployment_answers_queries(tmp_path):
    pytest.importorskip("ray.serve", reason='Ray Serve is not installed (pip install "mccfr[serve]")')
    from click.testing import CliRunner

    from mccfr.cli import cli
    from mccfr.serving.ray_serve import build_app, run, shutdown

    run_dir = tmp_path / "run"
    r = CliRunner().invoke(
        cli,
        ["train", "--game", "hunl20", "--abstraction", "rank", "--iterations", "200", "--out", str(run_dir)],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stderr
    port = _free_port()
    app = build_app(
        str(run_dir),
        replicas=1,
        threads=2,
        num_cpus=0,
        responder_options={"solve_method": "reach-maxmargin", "solver_threads": 1},
    )
    try:
        url = run(app, port=port)
        assert url.endswith(f":{port}")
        status, health = _request(port, "GET", "/healthz")
        assert status == 200 and health["status"] == "ok" and health["ray_serve"] is True
        assert health["responder"] == "SolvingResponder" and health["run_dir"] == str(run_dir)
        status, out = _request(port, "POST", "/v1/strategy", {"matchstate": PREFLOP})
        assert status == 200 and out["source"] == "blueprint"
        assert sum(out["strategy"].values()) == pytest.approx(1.0)
        t = time.perf_counter()
        status, out = _request(
            port,
            "POST",
            "/v1/strategy",
            {"matchstate": "MATCHSTATE:0:3:cc/cc/cc/:AsKd|/2c7h9s/Td/3c", "time_budget_ms": 1000},
        )
        assert status == 200 and (out["source"] == "subgame" or out["fallback"]) and out["elapsed_ms"] < 1000
        assert time.perf_counter() - t < 5
        status, err = _request(port, "POST", "/v1/strategy", {"matchstate": "hello"})
        assert status == 400 and err["kind"] == "bad_matchstate"
    finally:
        shutdown()
