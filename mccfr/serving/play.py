"""Heads-up hands between a person (the web page's Play tab) and the server's bot.

:class:`Table` deals and referees hands; the bot's answers come from the service's responder
(the router in :mod:`mccfr.serving.explorer` asks it, through the same path as
``POST /v1/strategy``, and hands the answer back with :meth:`Table.bot_acts`). Every card of a
hand comes from one permutation of the deck drawn from the table's generator and is dealt in
:mod:`holdem.state`'s order, as :class:`mccfr.serving.acpc_dealer.AcpcDealer` deals. The person
sits at position ``hand_number % 2`` (the seats alternate, as an ACPC match rotates them). A
finished hand's record is the dealer's log line, ``STATE:<hand>:<betting>:<cards>:<v0>|<v1>:
<name0>|<name1>`` (values and names in position order).

What the person sees (:meth:`Table.view`): while the hand runs, only what the dealer would show
the person's seat, and of each bot answer its action, the betting it answered, whether it faced a
bet, its source, method, fallback reason, iterations and time (:data:`BOT_FIELDS`), never its
strategy: the probabilities the bot gave its actions with its own hole cards would tell the
person about those cards. The finished hand's view carries the bot's hole cards and every answer
with its strategy (``review``), as the log line carries every card. The bot queries the responder
in a session of its own (:meth:`Table.bot_session`), not named by the hand's token, so a request of
the person's (``/v1/range``'s ``session``) cannot read or reuse what the bot's session keeps; a
failed bot answer is reported without the responder's message (it quotes the bot's match state)
and voids the hand (:func:`bot_failed`).

Bounded, per client and in all: a client (the caller's identity, :func:`client_of`) has at most
``max_hands_per_client`` hands in play: dealing one more drops that client's own hand longest
without an action. The whole table holds at most ``max_hands``: when it is full, a client under
its own cap is refused (503 ``table_full``) rather than any other client's hand dropped. Each hand
is forgotten ``ttl_s`` seconds after its last action, and when it ends. A hand's state is a few
hundred bytes, with a few hundred more per bot answer.
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from typing import Any, Optional

import numpy as np

from holdem.game import Game
from holdem.state import CHANCE, TERMINAL, State
from mccfr_util.reporting import big_blind_of, mbb_per_chip

MAX_HANDS = 4096  # hands in play at once, over every client: the memory bound (full: 503)
MAX_HANDS_PER_CLIENT = 32  # hands one client may have in play (one more drops its own oldest)
HAND_TTL_S = 3600.0
#: what a view shows of each bot answer while the hand runs (none of it depends on the bot's cards)
BOT_FIELDS = (
    "action",
    "seat",
    "betting",
    "facing_bet",
    "source",
    "method",
    "fallback",
    "elapsed_ms",
    "iterations",
)
NAMES = ("you", "mccfr")  # the log's player names: the person, the bot
MAX_HAND_NUMBER = 2**31 - 1


class PlayError(ValueError):
    """A play request that cannot be carried out; ``kind`` and ``status`` as QueryError's."""

    def __init__(self, kind: str, message: str, status: int):
        super().__init__(message)
        self.kind = kind
        self.status = status


def _num(x: float) -> str:
    text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def client_of(scope: Any) -> str:
    """A caller's identity for the per-client cap: its address as the server sees it (an ASGI
    ``scope``'s ``client``), as :class:`mccfr.serving.service.Guard` counts requests in flight. The
    server's API key is one key for every caller, so it tells no two clients apart."""
    client = scope.get("client") if isinstance(scope, dict) else None
    return str(client[0]) if client else "unknown"


def bot_failed(exc: Exception) -> PlayError:
    """The error a person gets when the bot's responder fails: its kind, not its message (which
    may quote the bot's match state, hole cards included)."""
    kind = getattr(exc, "kind", None) or type(exc).__name__
    return PlayError(
        "bot_failed",
        f"the bot could not answer ({kind}; the responder's message is withheld: it names the bot's "
        "cards); the hand is void, deal another",
        500,
    )


class _Hand:
    def __init__(self, state: State, deck: np.ndarray, human: int, client: str):
        self.state = state
        self.deck = deck
        self.dealt = 0
        self.human = human
        self.client = client
        self.session = f"play:{secrets.token_urlsafe(12)}"  # the bot's responder session
        self.touched = time.monotonic()
        self.answers: list[dict[str, Any]] = []  # the bot's answers, in order (BOT_FIELDS)
        self.strategies: list[dict[str, float]] = []  # and their strategies, shown at the end


class Table:
    """Hands in play, keyed by an unguessable token, capped per client and in all (module
    docstring)."""

    def __init__(
        self,
        game: Game,
        seed: Optional[int] = None,
        max_hands: int = MAX_HANDS,
        ttl_s: float = HAND_TTL_S,
        max_hands_per_client: int = MAX_HANDS_PER_CLIENT,
    ):
        if game.gamedef.num_players != 2:
            raise PlayError(
                "two_players_only",
                f"the play page seats one person against the bot: {game.gamedef.name or 'this game'} has "
                f"numPlayers = {game.gamedef.num_players} (mccfr play seats the bot at an ACPC dealer)",
                409,
            )
        if max_hands < 1 or max_hands_per_client < 1:
            raise ValueError(
                f"max_hands and max_hands_per_client must be >= 1, got {max_hands}, {max_hands_per_client}"
            )
        self.game = game
        self.rng = np.random.default_rng(seed)
        self.max_hands = max_hands
        self.max_hands_per_client = max_hands_per_client
        self.ttl_s = ttl_s
        # every hand, least recently acted in first (expiry); and each client's, in the same order
        self._hands: collections.OrderedDict[str, _Hand] = collections.OrderedDict()
        self._clients: dict[str, collections.OrderedDict[str, None]] = {}
        self._lock = threading.Lock()
        bb = big_blind_of(game.gamedef)
        self.mbb_per_chip = mbb_per_chip(bb) if bb else None

    def __len__(self) -> int:
        return len(self._hands)

    def hands_of(self, client: str) -> int:
        """How many hands ``client`` has in play."""
        with self._lock:
            return len(self._clients.get(client, ()))

    def deal(self, hand_number: int, client: str = "local") -> str:
        """A new hand numbered ``hand_number`` for ``client``; returns its token. A client at its
        cap loses its own hand longest without an action; a full table refuses (503)."""
        if isinstance(hand_number, bool) or not isinstance(hand_number, int):
            raise PlayError("bad_request", "hand_number must be an integer", 422)
        if not 0 <= hand_number <= MAX_HAND_NUMBER:
            raise PlayError(
                "bad_request", f"hand_number must be in 0..{MAX_HAND_NUMBER}, got {hand_number}", 422
            )
        with self._lock:
            self._expire()
            mine = self._clients.get(client)
            if mine is not None and len(mine) >= self.max_hands_per_client:
                while len(mine) >= self.max_hands_per_client:  # the client's own oldest goes
                    self._drop(next(iter(mine)))
            elif len(self._hands) >= self.max_hands:
                raise PlayError(
                    "table_full",
                    f"the table is full: {len(self._hands)} hands in play over every client, the most "
                    f"this server keeps; a hand leaves when it ends or after {self.ttl_s:g} s without an "
                    "action: try again later (no other client's hand is dropped for a new one)",
                    503,
                )
            deck = self.rng.permutation(self.game.gamedef.deck_size)
            token = secrets.token_urlsafe(12)
            h = _Hand(self.game.initial_state(hand_id=hand_number), deck, hand_number % 2, client)
            self._hands[token] = h
            self._clients.setdefault(client, collections.OrderedDict())[token] = None
        self._deal_due(h)
        return token

    def _drop(self, token: str) -> None:
        """Forget hand ``token`` (under the lock)."""
        h = self._hands.pop(token, None)
        if h is None:
            return
        mine = self._clients.get(h.client)
        if mine is not None:
            mine.pop(token, None)
            if not mine:
                del self._clients[h.client]

    def drop(self, token: str) -> None:
        """Forget hand ``token`` (a void hand)."""
        with self._lock:
            self._drop(token)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._hands:
            token, h = next(iter(self._hands.items()))
            if now - h.touched <= self.ttl_s:
                break
            self._drop(token)

    def _get(self, token: Any) -> _Hand:
        if not isinstance(token, str):
            raise PlayError("bad_request", "hand must be the token that dealing the hand returned", 422)
        with self._lock:
            h = self._hands.get(token)
            if h is None:
                raise PlayError(
                    "unknown_hand",
                    "no hand in play with that token (finished, expired, dropped for a newer hand of "
                    f"its client's over its cap of {self.max_hands_per_client}, or never dealt)",
                    404,
                )
            self._hands.move_to_end(token)
            self._clients[h.client].move_to_end(token)
            h.touched = time.monotonic()
        return h

    def _deal_due(self, h: _Hand) -> None:
        g = self.game.gamedef
        while h.state.current_player() == CHANCE:
            k = (
                2 * g.num_hole_cards
                if h.dealt == 0
                else max(1, g.board_cards_through(h.state.round) - len(h.state.board_cards))
            )
            h.state = h.state.deal([int(c) for c in h.deck[h.dealt : h.dealt + k]])
            h.dealt += k

    def bot_query(self, token: str) -> Optional[str]:
        """The bot's MATCHSTATE when the bot is to act in hand ``token``, else None."""
        h = self._get(token)
        who = h.state.current_player()
        if who < 0 or who == h.human:
            return None
        return h.state.matchstate(who)

    def bot_session(self, token: str) -> str:
        """The responder session the bot answers hand ``token`` in (never sent to the person)."""
        return self._get(token).session

    def bot_acts(self, token: str, answer: dict[str, Any]) -> str:
        """The bot takes an action drawn from ``answer["strategy"]`` (a responder's answer);
        returns it."""
        h = self._get(token)
        strategy = answer["strategy"]
        keys = list(strategy)
        p = np.array([max(0.0, float(strategy[k])) for k in keys])
        with self._lock:
            action = keys[int(self.rng.choice(len(keys), p=p / p.sum()))]
        before = h.state
        h.state = before.apply(action)
        rec = {k: answer.get(k) for k in ("source", "method", "fallback", "elapsed_ms", "iterations")}
        rec.update(
            action=action,
            seat=1 - h.human,
            betting=before.betting.betting_string(),
            facing_bet=before.betting.can_fold(),
        )
        h.answers.append({k: rec[k] for k in BOT_FIELDS})
        h.strategies.append({k: float(v) for k, v in strategy.items()})
        self._deal_due(h)
        return action

    def act(self, token: str, action: Any) -> None:
        """The person takes ``action`` (an ACPC action string) in hand ``token``."""
        h = self._get(token)
        if not isinstance(action, str):
            raise PlayError("bad_action", "action must be an ACPC action string (f, c, r<to>)", 422)
        with self._lock:  # (two requests of one hand: the second finds it is not its turn)
            if h.state.current_player() != h.human:
                raise PlayError("not_your_turn", "it is not your turn in this hand", 409)
            try:
                h.state = h.state.apply(action)
            except ValueError as exc:  # IllegalActionError: names the action and the legal ones
                raise PlayError("bad_action", str(exc), 400) from None
        self._deal_due(h)

    def answers_seen(self, token: str) -> int:
        """How many answers the bot has given in hand ``token`` so far."""
        return len(self._get(token).answers)

    def view(self, token: str, answers_from: int = 0) -> dict[str, Any]:
        """What the person sees of hand ``token``: their match state, the legal actions, the pot,
        the bot's answers from the ``answers_from``-th on (:data:`BOT_FIELDS`, no strategy); at
        the end the log line, the result, the bot's hole cards and ``review``: every bot answer
        of the hand with its strategy (the hand is then forgotten)."""
        h = self._get(token)
        st = h.state
        g = self.game.gamedef
        who = st.current_player()
        rr = st.raise_range() if who == h.human else None
        out: dict[str, Any] = {
            "hand": token,
            "hand_number": st.hand_id,
            "position": h.human,
            "matchstate": st.matchstate(h.human),
            "betting": st.betting.betting_string(),
            "board": [int(c) for c in st.board_cards],
            "hole": [int(c) for c in st.hole_cards[h.human]],
            "spent": list(st.spent),
            "stack": [int(min(s, 2**31 - 1)) for s in g.stack],
            "to_act": "you" if who == h.human else None,
            "legal": st.legal_actions() if who == h.human else [],
            "raise_range": list(rr) if rr is not None else None,
            "bot": h.answers[answers_from:],
            "over": who == TERMINAL,
            "mbb_per_chip": self.mbb_per_chip,
        }
        if who == TERMINAL:
            pay = st.payoffs()
            names = [NAMES[0] if p == h.human else NAMES[1] for p in (0, 1)]
            out["net"] = float(pay[h.human])
            out["showdown"] = st.betting.showdown()
            out["bot_hole"] = [int(c) for c in st.hole_cards[1 - h.human]]  # (the log line has them)
            out["review"] = [dict(a, strategy=s) for a, s in zip(h.answers, h.strategies)]
            out["log_line"] = f"{st.dealer_string()}:{_num(pay[0])}|{_num(pay[1])}:{names[0]}|{names[1]}"
            with self._lock:
                self._drop(token)
        return out


__all__ = [
    "BOT_FIELDS",
    "HAND_TTL_S",
    "MAX_HANDS",
    "MAX_HANDS_PER_CLIENT",
    "NAMES",
    "PlayError",
    "Table",
    "bot_failed",
    "client_of",
]
