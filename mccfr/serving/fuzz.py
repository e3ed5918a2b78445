"""Request-body fuzzing of the query service: send raw bytes to ``POST /v1/strategy`` and check
what comes back.

:func:`check_body` is the one call a fuzzer needs (the property tests in
``tests/serving/test_fuzz.py`` and long-run scripts use it)::

    from mccfr.serving.fuzz import check_body
    status, payload = check_body(app_or_url, b'{"matchstate": 7}')

It posts ``body`` and raises :class:`FuzzFailure` unless the service answered like it should:

* a status below 500 (never an internal error);
* a JSON object as the body;
* 2xx: a ``strategy`` (action -> probability, summing to 1) and a ``source``;
* 4xx: ``{"error": <non-empty message>, "kind": <tag>}``.

``target`` is either the ASGI application (:func:`mccfr.serving.service.create_app`; the request runs
in this process through :func:`asgi_request`, without sockets: fast, and any exception shows
with its traceback) or the base URL of a running ``mccfr serve`` (``http://127.0.0.1:8000``; one
connection per call, so a refusal that closes the connection does not affect the next).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
from typing import Any
from urllib.parse import urlsplit

STRATEGY_PATH = "/v1/strategy"


class FuzzFailure(AssertionError):
    """The service answered a body in a way it must not (a 5xx, a body that is not the JSON it
    promises); ``status`` and ``body`` say what came back, ``sent`` what was sent."""

    def __init__(self, message: str, status: int, body: bytes, sent: bytes):
        super().__init__(f"{message} (status {status}; sent {sent[:200]!r}; got {body[:500]!r})")
        self.status, self.body, self.sent = status, body, sent


def asgi_request(
    app,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    client: tuple[str, int] = ("127.0.0.1", 40000),
    chunk: int | None = None,
) -> tuple[int, dict, bytes]:
    """One HTTP request to the ASGI ``app`` in this process: ``(status, headers, body)``.
    ``chunk``: send the body in pieces of this size (as a chunked upload arrives)."""

    async def run() -> tuple[int, dict, bytes]:
        hdrs = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": hdrs,
            "client": client,
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        pieces = [body] if not chunk else [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
        sent = 0
        out: dict[str, Any] = {"status": None, "headers": {}, "body": []}
        finished = asyncio.Event()

        async def receive():
            nonlocal sent
            if sent < len(pieces):
                sent += 1
                return {"type": "http.request", "body": pieces[sent - 1], "more_body": sent < len(pieces)}
            await finished.wait()  # nothing more: the client "disconnects" once the response is complete
            return {"type": "http.disconnect"}

        async def send(msg):
            if msg["type"] == "http.response.start":
                out["status"] = msg["status"]
                out["headers"] = {k.decode("latin-1"): v.decode("latin-1") for k, v in msg.get("headers", [])}
            elif msg["type"] == "http.response.body":
                out["body"].append(msg.get("body", b""))
                if not msg.get("more_body", False):
                    finished.set()

        await app(scope, receive, send)
        return out["status"], out["headers"], b"".join(out["body"])

    return asyncio.run(run())


def http_request(
    url: str,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[int, dict, bytes]:
    """One HTTP request to a running server at ``url`` (a fresh connection): ``(status, headers, body)``."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def post_body(
    target,
    body: bytes,
    content_type: str | None = "application/json",
    headers: dict[str, str] | None = None,
    path: str = STRATEGY_PATH,
) -> tuple[int, dict, bytes]:
    """POST raw ``body`` to ``target`` (an ASGI app or a base URL): ``(status, headers, body)``."""
    hdrs = dict(headers or {})
    if content_type is not None:
        hdrs.setdefault("Content-Type", content_type)
    if isinstance(target, str):
        return http_request(target, "POST", path, body, hdrs)
    hdrs.setdefault("Content-Length", str(len(body)))
    return asgi_request(target, "POST", path, body, hdrs)


def check_response(status: int, raw: bytes, sent: bytes = b"") -> dict:
    """The response's JSON object, or :class:`FuzzFailure` when it breaks the service's promises."""
    if status is None or status >= 500:
        raise FuzzFailure("a server error", status or 0, raw, sent)
    if not 200 <= status < 500:
        raise FuzzFailure("an unexpected status", status, raw, sent)
    try:
        payload = json.loads(raw)
    except ValueError:
        raise FuzzFailure("a response body that is not JSON", status, raw, sent) from None
    if not isinstance(payload, dict):
        raise FuzzFailure("a response body that is not a JSON object", status, raw, sent)
    if status >= 400:
        if not (
            isinstance(payload.get("error"), str)
            and payload["error"]
            and isinstance(payload.get("kind"), str)
        ):
            raise FuzzFailure("an error without {'error': message, 'kind': tag}", status, raw, sent)
        return payload
    strat = payload.get("strategy")
    if not isinstance(strat, dict) or not strat or payload.get("source") not in ("blueprint", "subgame"):
        raise FuzzFailure("an answer without a strategy and a source", status, raw, sent)
    probs = list(strat.values())
    if not all(isinstance(p, (int, float)) and 0 <= p <= 1 + 1e-6 for p in probs) or not math.isclose(
        sum(probs), 1.0, abs_tol=1e-4
    ):
        raise FuzzFailure("a strategy that is not a probability distribution", status, raw, sent)
    return payload


def check_body(
    target, body: bytes, content_type: str | None = "application/json", headers: dict[str, str] | None = None
) -> tuple[int, dict]:
    """POST raw ``body`` to ``POST /v1/strategy`` of ``target`` (an ASGI app or a base URL) and check
    the answer (module docstring): ``(status, response JSON)``; :class:`FuzzFailure` otherwise."""
    status, _, raw = post_body(target, body, content_type, headers)
    return status, check_response(status, raw, body)


__all__ = ["FuzzFailure", "asgi_request", "check_body", "check_response", "http_request", "post_body"]
