"""An ACPC dealer over TCP for 2 to 10 seats, built on :mod:`holdem.state`: for tests and benchmarks of
ACPC clients (``mccfr play``), without the C reference dealer.

It follows the reference dealer (``project_acpc_server/dealer.c``, protocol 2.0.0):

* it listens on one port per seat (``ports``; 0 picks a free one) and accepts seat 0, then
  seat 1, ...; each must first send ``VERSION:2.<minor>.<rev>`` (major 2, minor 0);
* hands are numbered from 0; the players rotate around the table (seat ``s`` views the hand as
  position ``(s - hand) mod seats``, as the reference's ``seatToPlayer``) unless ``fixed_seats``; every card of a hand comes from one
  permutation of the deck drawn from ``numpy.random.default_rng(seed)``, dealt in
  :mod:`holdem.state`'s deal order, so a match with the same seed and the players connected in
  the other order deals each player the other's cards (a duplicate match, with two seats);
* at every state of a hand (the first, after each action, the final one) it sends each seat its
  ``MATCHSTATE`` line (``\\r\\n``-terminated), then reads the acting seat's response: comments
  (``#``, ``;``) and responses whose state part differs from the state sent are ignored with a
  warning, like the reference; an action that is malformed or illegal is counted, replaced by a
  call while the count is within ``max_invalid_actions``, and ends the match beyond it (the
  default 0 ends it at once, as the protocol document recommends for competitions);
* time limits, as the reference's ``--t_response``, ``--t_hand`` and ``--t_per_hand``: one
  response, one player's total per hand, one player's total over the match (``hands x
  t_per_hand``), measured from sending the state to receiving the response; any excess, a
  disconnect or a missing version ends the match;
* the log (``log_path``) is the reference's: ``#`` header lines, one
  ``STATE:<hand>:<betting>:<cards>:<v0>|<v1>...:<name0>|<name1>...`` line per hand (values and
  names in position order), and ``SCORE:<total0>|<total1>...:<name0>|<name1>...`` (seat order).

``AcpcDealer(...).start()`` runs the match in a thread; ``join()`` returns the
:class:`DealerResult`.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import threading
import time
from pathlib import Path

import numpy as np

from holdem.game import Game
from holdem.state import CHANCE, TERMINAL, State, StateError
from mccfr.serving.acpc_client import LineReader, ProtocolError, send_line

_VERSION = re.compile(r"VERSION:(\d+)\.(\d+)\.(\d+)")


class DealerError(RuntimeError):
    """The match could not go on (a timeout, a disconnect, too many invalid actions)."""


@dataclasses.dataclass
class DealerResult:
    """The match as the dealer saw it; per-seat lists are in seat (connection) order."""

    hands: int = 0  # hands finished
    totals: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0])
    hand_values: list[tuple[float, ...]] = dataclasses.field(default_factory=list)  # per hand, by seat
    names: tuple[str, ...] = ("p1", "p2")
    invalid_actions: list[int] = dataclasses.field(default_factory=lambda: [0, 0])
    ignored_responses: list[int] = dataclasses.field(default_factory=lambda: [0, 0])
    used_ms: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0])
    max_response_ms: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0])
    responses: list[int] = dataclasses.field(default_factory=lambda: [0, 0])

    @classmethod
    def for_seats(cls, names: tuple[str, ...]) -> "DealerResult":
        n = len(names)
        return cls(
            totals=[0.0] * n,
            names=names,
            invalid_actions=[0] * n,
            ignored_responses=[0] * n,
            used_ms=[0.0] * n,
            max_response_ms=[0.0] * n,
            responses=[0] * n,
        )

    warnings: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None  # why the match ended early
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclasses.dataclass(frozen=True)
class DealerLimits:
    """What an :class:`AcpcDealer` allows a seat (module docstring): the time limits of the
    reference dealer's ``--t_response``, ``--t_hand`` and ``--t_per_hand``, how long it waits for
    both seats to connect (None: for ever) and the invalid actions it forgives."""

    t_response_ms: float = 600_000
    t_hand_ms: float = 600_000
    t_per_hand_ms: float = 7_000
    start_timeout_s: float | None = 60.0
    max_invalid_actions: int = 0


class AcpcDealer:
    """An ACPC dealer for the game's 2 to 10 seats (module docstring). ``names`` and ``ports``
    default to ``p1``, ``p2``, ... and free ports, one per seat; after construction ``ports`` are
    the bound ports, seat 0 first."""

    def __init__(
        self,
        game: Game,
        hands: int,
        seed: int = 0,
        names: tuple[str, ...] | None = None,
        host: str = "127.0.0.1",
        ports: tuple[int, ...] | None = None,
        limits: DealerLimits = DealerLimits(),
        fixed_seats: bool = False,
        log_path: str | Path | None = None,
        transcript: bool = False,
    ):
        if hands < 1:
            raise ValueError(f"hands must be >= 1, got {hands}")
        n = self.seats = game.gamedef.num_players
        names = tuple(f"p{s + 1}" for s in range(n)) if names is None else tuple(names)
        ports = (0,) * n if ports is None else tuple(ports)
        if len(names) != n or len(ports) != n:
            raise ValueError(f"{n} seats need {n} names and {n} ports, got {len(names)} and {len(ports)}")
        self.game = game
        self.hands = hands
        self.seed = seed
        self.names = names
        self.limits = limits
        self.t_response_ms = limits.t_response_ms
        self.t_hand_ms = limits.t_hand_ms
        self.t_match_ms = limits.t_per_hand_ms * hands
        self.t_per_hand_ms = limits.t_per_hand_ms
        self.start_timeout_s = limits.start_timeout_s
        self.fixed_seats = fixed_seats
        self.max_invalid_actions = limits.max_invalid_actions
        self.log_path = log_path
        self.transcript: list[tuple[int, str, str]] | None = (
            [] if transcript else None
        )  # (seat, "to"/"from", line)
        self.host = host
        self._listen = []
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, p))
            s.listen(1)
            self._listen.append(s)
        self.ports = tuple(s.getsockname()[1] for s in self._listen)
        self._thread: threading.Thread | None = None
        self.result = DealerResult.for_seats(self.names)

    # -- running ------------------------------------------------------------------------------
    def start(self) -> AcpcDealer:
        self._thread = threading.Thread(target=self.run, name="acpc-dealer", daemon=True)
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> DealerResult:
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"the dealer is still running after {timeout} s")
        return self.result

    def run(self) -> DealerResult:
        res = self.result
        t0 = time.perf_counter()
        conns: list[socket.socket] = []
        log = open(self.log_path, "w", encoding="utf-8") if self.log_path is not None else None  # noqa: SIM115 - closed in finally
        try:
            if log is not None:
                log.write(
                    f"# name/game/hands/seed mccfr-dealer {self.game.gamedef.name or 'game'} {self.hands} {self.seed}\n"
                    f"#--t_response {int(self.t_response_ms)}\n#--t_hand {int(self.t_hand_ms)}\n"
                    f"#--t_per_hand {int(self.t_per_hand_ms)}\n"
                )
            for seat, ls in enumerate(self._listen):
                ls.settimeout(self.start_timeout_s)
                try:
                    c, _ = ls.accept()
                except TimeoutError:
                    raise DealerError(f"timed out waiting for seat {seat + 1} to connect") from None
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns.append(c)
            readers = [LineReader(c) for c in conns]
            for seat in range(self.seats):
                self._check_version(seat, readers[seat])
            rng = np.random.default_rng(self.seed)
            for h in range(self.hands):
                deck = rng.permutation(self.game.gamedef.deck_size)
                self._play_hand(h, deck, conns, readers, log)
            if log is not None:
                totals = "|".join(_num(t) for t in res.totals)
                log.write(f"SCORE:{totals}:{'|'.join(self.names)}\n")
        except DealerError as exc:
            res.error = str(exc)
        except (OSError, ProtocolError) as exc:
            res.error = f"connection error: {exc}"
        finally:
            for c in conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            for ls in self._listen:
                ls.close()
            if log is not None:
                log.close()
            res.seconds = time.perf_counter() - t0
        return res

    def _check_version(self, seat: int, reader: LineReader) -> None:
        try:
            line = reader.readline(self.start_timeout_s)
        except TimeoutError:
            raise DealerError(f"seat {seat + 1} sent no version string") from None
        if line is None:
            raise DealerError(f"could not read the version string from seat {seat + 1}")
        self._note(seat, "from", line)
        m = _VERSION.match(line)
        if not m:
            raise DealerError(f"invalid version string from seat {seat + 1}: {line!r}")
        if int(m.group(1)) != 2 or int(m.group(2)) > 0:
            self.result.warnings.append(f"seat {seat + 1} speaks {line}; this dealer uses VERSION:2.0.0")

    def _position(self, seat: int, hand: int) -> int:
        # the reference dealer's rotation: seat s plays position (s - hand) mod the seats
        return seat if self.fixed_seats else (seat - hand) % self.seats

    def _play_hand(self, h: int, deck: np.ndarray, conns, readers, log) -> None:
        res = self.result
        g = self.game.gamedef
        state = self.game.initial_state(hand_id=h)
        used_hand = [0.0] * self.seats
        i = 0
        while True:
            who = state.current_player()
            if who == CHANCE:
                k = (
                    self.seats * g.num_hole_cards
                    if i == 0
                    else max(1, g.board_cards_through(state.round) - len(state.board_cards))
                )
                state = state.deal([int(c) for c in deck[i : i + k]])
                i += k
                continue
            sent = {}
            for seat in range(self.seats):
                pos = self._position(seat, h)
                sent[seat] = state.matchstate(pos)
                self._send(seat, conns[seat], sent[seat])
            t_sent = time.perf_counter()
            if who == TERMINAL:
                break
            seat = next(s for s in range(self.seats) if self._position(s, h) == who)
            action = self._read_action(seat, readers[seat], sent[seat], state, t_sent, used_hand)
            state = state.apply(action)
        pay = state.payoffs()  # by position
        by_seat = tuple(float(pay[self._position(s, h)]) for s in range(self.seats))
        res.hands += 1
        res.hand_values.append(by_seat)
        for s in range(self.seats):
            res.totals[s] += by_seat[s]
        if log is not None:
            names = [""] * self.seats
            for s in range(self.seats):
                names[self._position(s, h)] = self.names[s]
            log.write(f"{state.dealer_string()}:{'|'.join(_num(x) for x in pay)}:{'|'.join(names)}\n")

    def _read_action(
        self, seat: int, reader: LineReader, sent: str, state: State, t_sent: float, used_hand: list[float]
    ) -> str:
        res = self.result
        while True:
            left_ms = min(
                self.t_response_ms, self.t_hand_ms - used_hand[seat], self.t_match_ms - res.used_ms[seat]
            )
            try:
                line = reader.readline(max(left_ms, 0) / 1e3)
            except TimeoutError:
                raise DealerError(
                    f"seat {seat + 1} ({self.names[seat]}) ran out of time in hand {state.hand_id}"
                    f" (response limit {self.t_response_ms:g} ms, hand {self.t_hand_ms:g} ms,"
                    f" match {self.t_match_ms:g} ms)"
                ) from None
            if line is None:
                raise DealerError(
                    f"seat {seat + 1} ({self.names[seat]}) disconnected in hand {state.hand_id}"
                )
            ms = (time.perf_counter() - t_sent) * 1e3
            self._note(seat, "from", line)
            if line[:1] in ("#", ";"):
                continue
            res.used_ms[seat] += ms
            used_hand[seat] += ms
            res.responses[seat] += 1
            res.max_response_ms[seat] = max(res.max_response_ms[seat], ms)
            if (
                ms > self.t_response_ms
                or used_hand[seat] > self.t_hand_ms
                or res.used_ms[seat] > self.t_match_ms
            ):
                raise DealerError(
                    f"seat {seat + 1} ({self.names[seat]}) ran out of time in hand {state.hand_id}"
                )
            head, sep, action = line.rpartition(":")
            if not sep or head != sent:
                res.ignored_responses[seat] += 1
                res.warnings.append(f"seat {seat + 1}: ignoring un-requested response {line!r}")
                continue
            try:
                state.apply(action)
                return action
            except (StateError, ValueError) as exc:
                res.invalid_actions[seat] += 1
                msg = f"seat {seat + 1} ({self.names[seat]}): invalid action {action!r} in {sent!r}: {exc}"
                if res.invalid_actions[seat] > self.max_invalid_actions:
                    raise DealerError(msg) from None
                res.warnings.append(msg + "; changed to call")
                return "c"

    def _send(self, seat: int, conn: socket.socket, line: str) -> None:
        self._note(seat, "to", line)
        send_line(conn, line)

    def _note(self, seat: int, direction: str, line: str) -> None:
        if self.transcript is not None:
            self.transcript.append((seat, direction, line))


def _num(x: float) -> str:
    """A value as the reference log writes it (%.6f without trailing zeros)."""
    text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


__all__ = ["AcpcDealer", "DealerError", "DealerLimits", "DealerResult"]
