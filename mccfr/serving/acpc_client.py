"""``mccfr play``: an ACPC client that plays a match against a dealer with a :class:`Responder`.

The ACPC protocol, version 2.0.0 (``project_acpc_server/protocol.md`` of the reference dealer):

* the client connects over TCP to the port the dealer printed and sends ``VERSION:2.0.0\\r\\n``;
* the dealer sends the client's view of every state of every hand, one
  ``MATCHSTATE:<position>:<hand>:<betting>:<cards>\\r\\n`` line each: the initial state, states
  where the client does not act, and the final state of the hand; lines starting with ``#`` or
  ``;`` are comments;
* when the seat to act is the client's (``<position>``), it answers with the same match state
  and its action appended: ``MATCHSTATE:...:<action>\\r\\n``, ``<action>`` one of ``f``, ``c``,
  ``r`` (limit) or ``r<to>`` (no-limit, ``<to>`` the raiser's total commitment for the hand);
* the match ends when the dealer closes the connection. Seats rotate: ``<position>`` changes
  from hand to hand.

The reference dealer's time limits (defaults): 600 s per response, 600 s per hand, and on
average 7 s per hand over the match (the match's total response time must stay within
``hands x t_per_hand``). The client keeps a time bank (``time_per_hand_ms`` for every hand
started, less the time spent answering) and gives each query at most half of what is left of
the bank, of the hand allowance and of the response limit (and never more than the
``time_budget_ms`` it was given). A blueprint answers in about a millisecond; the bank is what
keeps a solving responder within the dealer's limits.

Each decision asks the responder for the strategy at the match state (``session`` =
``"<match>:<hand>"``, so a solving responder reuses its subgame within the hand) and samples one
action from it with the client's seeded ``numpy`` generator. When the responder has no answer
(:class:`~mccfr.serving.query.QueryError`: a responder bug or a server that refuses; a legal state
always has an answer, labelled by its ``source``) or answers with an action that is not legal,
the client checks or calls and counts a fallback.

The match log (``log``) is JSON lines: a ``start`` record, one ``hand`` record per finished hand
(hand number, position, final match state, net chips, and each decision: match state, action,
strategy, source (``blueprint``, ``translated``, ``subgame``, ``fallback`` with its ``reason``),
milliseconds) and an ``end`` record with the report (``sources``: the decisions by source).
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from blueprint.player import sample
from holdem.state import CHANCE, TERMINAL, State, StateError
from mccfr.serving.query import DEFAULT_TIME_BUDGET_MS, MAX_TIME_BUDGET_MS, QueryError, Responder
from mccfr_util.reporting import ci95, mbb_per_chip

VERSION = "VERSION:2.0.0"
MAX_LINE = 4096  # the reference code's MAX_LINE_LEN is 3000 (with the action); be generous
LOG_MAX_ACTIONS = 64  # a longer strategy (a uniform raise-to) is logged as its size only


class ProtocolError(RuntimeError):
    """The peer broke the ACPC protocol (a malformed line, an impossible state)."""


class LineReader:
    """``\\r\\n``-terminated lines from a socket, with a timeout per line."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def readline(self, timeout: float | None) -> str | None:
        """The next line without its ending; None at end of stream. Raises :class:`TimeoutError`
        when no full line arrives within ``timeout`` seconds (None: wait forever), and
        :class:`ProtocolError` for a line longer than :data:`MAX_LINE` or not ASCII."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            if len(self.buf) > MAX_LINE:
                raise ProtocolError(f"a line longer than {MAX_LINE} bytes: {self.buf[:60]!r}...")
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no complete line within {timeout:g} s")
                self.sock.settimeout(left)
            else:
                self.sock.settimeout(None)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                raise TimeoutError(f"no complete line within {timeout:g} s") from None
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            if not chunk:
                if self.buf:
                    raise ProtocolError(f"the stream ended inside a line: {self.buf[:60]!r}")
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError:
            raise ProtocolError(f"a line that is not ASCII: {line[:60]!r}") from None
        return text.removesuffix("\r")


def send_line(sock: socket.socket, text: str) -> None:
    sock.sendall(text.encode("ascii") + b"\r\n")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) -> (host, port); ValueError naming the problem."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"dealer address {text!r}: expected HOST:PORT, e.g. 127.0.0.1:18791")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"dealer address {text!r}: port {port!r} is not a number in 1..65535")
    return host.strip("[]"), int(port)


@dataclasses.dataclass
class TimeBank:
    """How long the next answer may take, from the dealer's limits (module docstring)."""

    time_per_hand_ms: float = 7_000.0
    response_limit_ms: float = 600_000.0
    hand_limit_ms: float = 600_000.0
    budget_ms: int = DEFAULT_TIME_BUDGET_MS
    hands: int = 0
    used_ms: float = 0.0
    hand_used_ms: float = 0.0

    def new_hand(self) -> None:
        self.hands += 1
        self.hand_used_ms = 0.0

    def next_budget(self) -> int:
        bank = self.hands * self.time_per_hand_ms - self.used_ms
        caps = (
            self.budget_ms,
            bank / 2,
            self.response_limit_ms / 2,
            (self.hand_limit_ms - self.hand_used_ms) / 2,
        )
        return int(max(1, min(MAX_TIME_BUDGET_MS, *caps)))

    def spend(self, ms: float) -> None:
        self.used_ms += ms
        self.hand_used_ms += ms


@dataclasses.dataclass
class ClientReport:
    """What a match came to, from the client's side."""

    hands: int = 0  # hands finished (final state seen)
    net: float = 0.0  # chips won over those hands
    hand_nets: list[float] = dataclasses.field(default_factory=list)
    decisions: int = 0
    fallbacks: int = 0  # decisions where the responder had no (legal) answer: check/call
    fallback_reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    max_response_ms: float = 0.0
    total_response_ms: float = 0.0
    sources: dict[str, int] = dataclasses.field(default_factory=dict)
    big_blind: int = 0
    complete: bool = False  # the dealer closed the connection between hands
    ended: str = ""  # how the match ended
    seconds: float = 0.0

    def mean_ci(self) -> tuple[float, float]:
        """Mean chips per hand and its 95% interval half-width (hands independent)."""
        n = len(self.hand_nets)
        if n == 0:
            return 0.0, math.inf
        x = np.asarray(self.hand_nets, float)
        return float(x.mean()), ci95(x)

    def to_json(self) -> dict[str, Any]:
        mean, ci = self.mean_ci()
        out = {
            "hands": self.hands,
            "net": self.net,
            "mean": mean,
            "ci95": ci,
            "unit": "chips/hand",
            "decisions": self.decisions,
            "fallbacks": self.fallbacks,
            "fallback_reasons": self.fallback_reasons,
            "sources": self.sources,
            "max_response_ms": self.max_response_ms,
            "mean_response_ms": self.total_response_ms / self.decisions if self.decisions else 0.0,
            "complete": self.complete,
            "ended": self.ended,
            "seconds": self.seconds,
        }
        if self.big_blind:
            scale = mbb_per_chip(self.big_blind)
            out.update(mean=mean * scale, ci95=ci * scale, unit="mbb/hand", mean_chips=mean, ci95_chips=ci)
        if not math.isfinite(out["ci95"]):
            out["ci95"] = None
        return out


class AcpcClient:
    """Plays one seat of an ACPC match with a responder (module docstring). ``bank``: the
    dealer's time limits and the answers' own budget (:class:`TimeBank`; its defaults: the
    reference dealer's)."""

    def __init__(
        self,
        responder: Responder,
        *,
        seed: int = 0,
        log: str | Path | TextIO | None = None,
        method: str | None = None,
        bank: TimeBank | None = None,
        idle_timeout_s: float | None = 900.0,
        name: str = "mccfr",
        progress: Callable[[ClientReport], None] | None = None,
    ):
        self.responder = responder
        self.game = responder.game
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.method = method
        # the dealer's time limits and the answers' budget (a copy: the client spends from it)
        self.bank = dataclasses.replace(bank) if bank is not None else TimeBank()
        self.idle_timeout_s = idle_timeout_s
        self.name = name
        self.progress = progress
        self.match_id = uuid.uuid4().hex[:12]
        self._log_arg = log
        g = self.game.gamedef
        self.report = ClientReport(big_blind=g.big_blind if g.blind[0] != g.blind[1] else 0)

    # -- connection ---------------------------------------------------------------------------
    def play(self, host: str, port: int, connect_timeout: float = 10.0) -> ClientReport:
        """Connect to the dealer at ``host:port`` and play until it closes the connection.

        Raises:
            OSError: the dealer cannot be reached.
        """
        sock = socket.create_connection((host, port), timeout=connect_timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            return self.play_socket(sock, peer=f"{host}:{port}")
        finally:
            sock.close()

    def play_socket(self, sock: socket.socket, peer: str = "") -> ClientReport:
        """Play the match on a connected socket; never raises for what the dealer does (the
        report's ``ended`` says how it ended)."""
        log, own = _open_log(self._log_arg)
        t0 = time.perf_counter()
        try:
            self._write(
                log,
                {
                    "event": "start",
                    "dealer": peer,
                    "game": self.game.gamedef.name or None,
                    "name": self.name,
                    "seed": self.seed,
                    "match": self.match_id,
                    "time": time.time(),
                },
            )
            try:
                send_line(sock, VERSION)
                self._loop(LineReader(sock), sock, log)
            except TimeoutError as exc:
                self.report.ended = f"no message from the dealer: {exc}"
            except ProtocolError as exc:
                self.report.ended = f"protocol error: {exc}"
            except OSError as exc:
                self.report.ended = f"connection error: {exc}"
            self.report.seconds = time.perf_counter() - t0
            self._write(log, {"event": "end", **self.report.to_json()})
        finally:
            if own and log is not None:
                log.close()
        return self.report

    # -- the match ----------------------------------------------------------------------------
    def _loop(self, reader: LineReader, sock: socket.socket, log) -> None:
        rep = self.report
        hand: int | None = None  # hand number in progress
        finished = True
        decisions: list[dict[str, Any]] = []
        while True:
            line = reader.readline(self.idle_timeout_s)
            t_recv = time.perf_counter()
            if line is None:
                rep.complete = finished
                rep.ended = rep.ended or (
                    "the dealer closed the connection after the last hand"
                    if finished
                    else f"the dealer closed the connection during hand {hand}"
                )
                return
            if not line or line[0] in "#;":
                continue
            try:
                state = self.game.state(line)
            except StateError as exc:
                raise ProtocolError(f"bad match state from the dealer {line!r}: {exc}") from None
            if state.viewer is None:
                raise ProtocolError(f"expected a MATCHSTATE from the dealer, got {line!r}")
            if state.hand_id != hand:
                if not finished:
                    raise ProtocolError(f"hand {state.hand_id} started before hand {hand} was over")
                hand, finished, decisions = state.hand_id, False, []
                self.bank.new_hand()
            elif finished:
                raise ProtocolError(f"a state of hand {hand} after its final state: {line!r}")
            who = state.current_player()
            if who == TERMINAL:
                try:
                    net = float(state.payoffs()[state.viewer])
                except StateError as exc:
                    raise ProtocolError(f"cannot score the final state {line!r}: {exc}") from None
                finished = True
                rep.hands += 1
                rep.net += net
                rep.hand_nets.append(net)
                self._write(
                    log,
                    {
                        "event": "hand",
                        "hand": hand,
                        "position": state.viewer,
                        "final": line,
                        "net": net,
                        "decisions": decisions,
                    },
                )
                if self.progress is not None:
                    self.progress(rep)
            elif who == CHANCE:
                raise ProtocolError(f"the dealer sent a state with cards missing: {line!r}")
            elif who == state.viewer:
                decisions.append(self._decide(sock, line, state, t_recv))

    def _decide(self, sock: socket.socket, line: str, state: State, t_recv: float) -> dict[str, Any]:
        rep = self.report
        budget = self.bank.next_budget()
        record: dict[str, Any] = {"matchstate": line, "budget_ms": budget}
        try:
            ans = self.responder.answer(line, f"{self.match_id}:{state.hand_id}", budget, self.method)
        except QueryError as exc:
            action = self._fallback(record, exc.kind, str(exc))
        except Exception as exc:  # noqa: BLE001 - a responder bug must not cost the match: log it, check/call
            action = self._fallback(record, "responder_error", f"{type(exc).__name__}: {exc}")
        else:
            strategy = ans["strategy"]
            logged = strategy if len(strategy) <= LOG_MAX_ACTIONS else {"actions": len(strategy)}
            record.update(strategy=logged, source=ans["source"], method=ans.get("method"))
            if ans.get("reason"):
                record["reason"] = ans["reason"]  # a fallback answer: why the tree had no node
            action = sample(strategy, self.rng)
            try:
                state.apply(action)
            except ValueError as exc:  # IllegalActionError / StateError: not legal here
                action = self._fallback(record, "illegal_action", f"the responder chose {action!r}: {exc}")
            else:
                rep.sources[ans["source"]] = rep.sources.get(ans["source"], 0) + 1
        send_line(sock, f"{line}:{action}")
        ms = (time.perf_counter() - t_recv) * 1e3
        self.bank.spend(ms)
        rep.decisions += 1
        rep.total_response_ms += ms
        rep.max_response_ms = max(rep.max_response_ms, ms)
        record.update(action=action, ms=round(ms, 3))
        return record

    def _fallback(self, record: dict[str, Any], kind: str, message: str) -> str:
        rep = self.report
        rep.fallbacks += 1
        rep.fallback_reasons[kind] = rep.fallback_reasons.get(kind, 0) + 1
        record.update(fallback=kind, error=message)
        return "c"

    @staticmethod
    def _write(log, obj: dict[str, Any]) -> None:
        if log is not None:
            log.write(json.dumps(obj) + "\n")
            log.flush()


def _open_log(arg) -> tuple[TextIO | None, bool]:
    if arg is None:
        return None, False
    if hasattr(arg, "write"):
        return arg, False
    return open(arg, "w", encoding="utf-8"), True


__all__ = [
    "VERSION",
    "AcpcClient",
    "ClientReport",
    "LineReader",
    "ProtocolError",
    "TimeBank",
    "parse_address",
    "send_line",
]
