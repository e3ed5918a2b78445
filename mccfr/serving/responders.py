"""The responders that answer without solving: :class:`BlueprintResponder` (the blueprint's
average strategy, the base of the solving responder :class:`mccfr.serving.solving.SolvingResponder`),
:class:`SearchResponder` (Pluribus-style search, any number of seats),
:class:`PlayerResponder` (a baseline player, for an ACPC dealer) and :class:`HttpResponder` (a
running ``mccfr serve``, asked over HTTP). What a query and its answer are:
:mod:`mccfr.serving.query`."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from blueprint.defaults import DEFAULT_TIME_BUDGET_MS
from holdem.game import Game
from holdem.gamedef import parse_gamedef, require_two_players
from mccfr.serving.query import (
    BLUEPRINT_METHOD,
    SEARCH_METHOD,
    QueryError,
    ValidatingResponder,
    example_matchstates,
)
from subgame.multiway import MultiwaySearch, SearchConfig

if TYPE_CHECKING:
    from blueprint.blueprint import Blueprint
    from holdem.state import State


class BlueprintResponder(ValidatingResponder):
    """Answers every query from a blueprint's average strategy (:meth:`Blueprint.answer
    <blueprint.blueprint.Blueprint.answer>`: source ``blueprint``, ``translated`` or ``fallback``).

    Off-tree raises earlier in the hand are mapped by pseudo-harmonic action translation
    (deterministically: the same query gets the same answer); where the tree has no node for the
    history, the blueprint's fallback answers (``reason`` says why).
    """

    methods: tuple[str, ...] = (BLUEPRINT_METHOD,)

    def __init__(self, bp: Blueprint, default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS):
        super().__init__(bp.game, default_time_budget_ms)
        self.bp = bp

    def blueprint_answer(self, state: State, t0: float, method: str | None = None) -> dict[str, Any]:
        """The blueprint's answer to ``state`` (labelled by its source; a fallback with its reason)."""
        ans = self.bp.answer(state)
        out: dict[str, Any] = {
            "strategy": ans.strategy,
            "source": ans.source,
            "method": method,
            "elapsed_ms": (time.perf_counter() - t0) * 1e3,
        }
        if ans.reason is not None:
            out["reason"] = ans.reason
        return out

    def answer(
        self,
        matchstate: str,
        session: str | None = None,
        time_budget_ms: int | None = None,
        method: str | None = None,
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        state, _, _, _ = self.validate(matchstate, session, time_budget_ms, method)
        return self.blueprint_answer(state, t0)

    def answer_fast(
        self,
        matchstate: str,
        session: str | None = None,
        time_budget_ms: int | None = None,
        method: str | None = None,
    ) -> dict[str, Any] | None:
        """:meth:`answer`: every blueprint answer is fast, so the service runs it on its event
        loop (a subclass returns None for the answers that are not)."""
        return self.answer(matchstate, session, time_budget_ms, method)

    def warm_up(self) -> None:
        """Answer one query per betting round so that numba's card-bucket kernels are compiled
        (or loaded from the cache) before the first real query: that first call can take
        seconds."""
        for ms in example_matchstates(self.game):
            try:
                self.answer(ms)
            except QueryError:
                pass

    def describe(self) -> dict[str, Any]:
        """What /healthz reports about the blueprint."""
        return {
            "game": self.game.gamedef.name or None,
            "gamedef": self.game.gamedef.to_acpc(),
            "iteration": int(self.bp.iteration),
            "config_hash": self.bp.config_hash,
            "abstraction_hash": self.bp.abstraction_hash,
        }


class SearchResponder(BlueprintResponder):
    """Answers with Pluribus-style search (:class:`subgame.multiway.MultiwaySearch`; method
    ``search``, the default) from ``config.from_round`` on, within 80% of the query's time budget
    (at most ``config.iterations`` iterations), and with the blueprint before it or when asked
    for ``blueprint``. Searches run one at a time (a lock: the kernel holds the GIL)."""

    methods: tuple[str, ...] = (BLUEPRINT_METHOD, SEARCH_METHOD)
    BUDGET_SHARE = 0.8  # of the query's time budget: the rest for the walk, ranges and the reply

    def __init__(
        self,
        bp: Blueprint,
        default_time_budget_ms: int = DEFAULT_TIME_BUDGET_MS,
        config: SearchConfig | None = None,
    ):
        super().__init__(bp, default_time_budget_ms)
        self.search = MultiwaySearch(bp, config or SearchConfig(iterations=None, seconds=1.0))
        self._lock = threading.Lock()

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None) -> dict[str, Any]:
        t0 = time.perf_counter()
        state, _, budget, method = self.validate(matchstate, session, time_budget_ms, method)
        if method == BLUEPRINT_METHOD:
            return self.blueprint_answer(state, t0, method)
        with self._lock:
            ans = self.search.answer(state, seconds=max(budget * self.BUDGET_SHARE / 1e3, 1e-3))
        out: dict[str, Any] = {
            "strategy": ans.strategy,
            "source": ans.source,
            "method": SEARCH_METHOD,
            "iterations": ans.iterations,
            "elapsed_ms": (time.perf_counter() - t0) * 1e3,
        }
        if ans.reason is not None:
            out["reason"] = ans.reason
        return out

    def answer_fast(
        self, matchstate, session=None, time_budget_ms=None, method=None
    ) -> dict[str, Any] | None:
        """The blueprint's answer where no search is due (method ``blueprint``, a round before the
        first searched), on the service's loop; else None (:meth:`answer` then runs in a thread)."""
        t0 = time.perf_counter()
        state, _, _, method = self.validate(matchstate, session, time_budget_ms, method)
        if method == BLUEPRINT_METHOD or state.round < self.search.config.from_round:
            return self.blueprint_answer(state, t0, method)
        return None


class PlayerResponder(ValidatingResponder):
    """A :class:`mccfr.evaluation.players.Player` (always-call, random, ...) as a responder, so baseline
    opponents can sit at an ACPC dealer through the same client.

    The answer is the player's distribution (``probs``), or with ``seed`` given, the action its
    ``act`` samples as a pure strategy: the same play when the client samples it, and much
    cheaper for ``random`` in no-limit, whose distribution has one entry per legal raise-to.
    """

    methods: tuple[str, ...] = ()

    def __init__(self, player, game: Game, seed: int | None = None):
        if seed is None and not hasattr(player, "probs"):
            raise TypeError(f"{player!r} has no probs(state): give a seed to answer with its act()")
        super().__init__(game)
        self.player = player
        self._rng = None
        self._lock = threading.Lock()
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None) -> dict[str, Any]:
        t0 = time.perf_counter()
        state, _, _, _ = self.validate(matchstate, session, time_budget_ms, method)
        if self._rng is not None:
            with self._lock:
                strategy = {self.player.act(state, self._rng): 1.0}
        else:
            strategy = self.player.probs(state)
        return {
            "strategy": strategy,
            "source": "blueprint",
            "method": None,
            "elapsed_ms": (time.perf_counter() - t0) * 1e3,
        }


class HttpResponder:
    """A responder that asks a running query service (``mccfr serve``) over HTTP: the same
    ``answer``, with the service's 4xx answers raised as :class:`QueryError` (its kind and
    message) and its game read from ``GET /healthz``. One keep-alive connection per thread.
    ``api_key``: sent as ``Authorization: Bearer <api_key>`` (a server started with ``--api-key``)."""

    def __init__(self, url: str, timeout_s: float = 660.0, api_key: str | None = None):
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"server URL {url!r}: expected http://HOST:PORT")
        self.url = f"http://{parts.netloc}"
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()
        health = self._request("GET", "/healthz")[1]
        text = health.get("gamedef")
        if not text:
            raise ValueError(f"{self.url}/healthz does not describe its game (is it 'mccfr serve'?)")
        self.game = Game(parse_gamedef(text, name=health.get("game") or ""))
        require_two_players(self.game.gamedef, f"a player of the query service at {self.url}")
        self.methods = tuple(health.get("methods", ()))
        self.default_time_budget_ms = health.get("default_time_budget_ms")

    def _request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        conn = getattr(self._local, "conn", None)
        for attempt in (0, 1):  # a keep-alive connection the server closed: reconnect once
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
                self._local.conn = conn
            try:
                data = None if body is None else json.dumps(body).encode()
                conn.request(method, path, body=data, headers=self._headers)
                r = conn.getresponse()
                return r.status, json.loads(r.read() or b"{}")
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                conn = self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def answer(self, matchstate, session=None, time_budget_ms=None, method=None) -> dict[str, Any]:
        body = {"matchstate": matchstate}
        for k, v in (("session", session), ("time_budget_ms", time_budget_ms), ("method", method)):
            if v is not None:
                body[k] = v
        status, out = self._request("POST", "/v1/strategy", body)
        if status == 200:
            return out
        raise QueryError(out.get("kind", "http_error"), f"{self.url}: {out.get('error', out)}", status)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()


__all__ = ["BlueprintResponder", "HttpResponder", "PlayerResponder", "SearchResponder"]
