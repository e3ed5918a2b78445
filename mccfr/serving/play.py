"""Heads-up hands between a person (the web page's Play tab) and the server's bot.

:class:`Table` deals and referees hands; the bot's answers come from the service's responder
(the router in :mod:`mccfr.serving.explorer` asks it, through the same path as
``POST /v1/strategy``, and hands the answer back with :meth:`Table.bot_acts`). Every card of a
hand comes from one permutation of the deck drawn from the table's generator and is dealt in
:mod:`holdem.state`'s order, as :class:`mccfr.serving.acpc_dealer.AcpcDealer` deals. The person
sits at position ``hand_number % 2`` (the seats alternate, as an ACPC match rotates them). A
finished hand's record is the dealer's log line, ``STATE:<hand>:<betting>:<cards>:<v0>|<v1>:
<name0>|<name1>`` (values and names in position order).

Bounded: at most ``max_hands`` hands in play (the oldest is dropped), each forgotten
``ttl_s`` seconds after its last action; a hand's state is a few hundred bytes.
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from typing import Any, Optional

import numpy as np

from holdem.game import Game
from holdem.reporting import big_blind_of, mbb_per_chip
from holdem.state import CHANCE, TERMINAL, State

MAX_HANDS = 256  # hands in play at once, over every client
HAND_TTL_S = 3600.0
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


class _Hand:
    def __init__(self, state: State, deck: np.ndarray, human: int):
        self.state = state
        self.deck = deck
        self.dealt = 0
        self.human = human
        self.touched = time.monotonic()
        self.answers: list[dict[str, Any]] = []  # the bot's answers, in order


class Table:
    """Hands in play, keyed by an unguessable token (module docstring)."""

    def __init__(
        self,
        game: Game,
        seed: Optional[int] = None,
        max_hands: int = MAX_HANDS,
        ttl_s: float = HAND_TTL_S,
    ):
        self.game = game
        self.rng = np.random.default_rng(seed)
        self.max_hands = max_hands
        self.ttl_s = ttl_s
        self._hands: collections.OrderedDict[str, _Hand] = collections.OrderedDict()
        self._lock = threading.Lock()
        bb = big_blind_of(game.gamedef)
        self.mbb_per_chip = mbb_per_chip(bb) if bb else None

    def __len__(self) -> int:
        return len(self._hands)

    def deal(self, hand_number: int) -> str:
        """A new hand numbered ``hand_number``; returns its token."""
        if isinstance(hand_number, bool) or not isinstance(hand_number, int):
            raise PlayError("bad_request", "hand_number must be an integer", 422)
        if not 0 <= hand_number <= MAX_HAND_NUMBER:
            raise PlayError(
                "bad_request", f"hand_number must be in 0..{MAX_HAND_NUMBER}, got {hand_number}", 422
            )
        with self._lock:
            deck = self.rng.permutation(self.game.gamedef.deck_size)
            token = secrets.token_urlsafe(12)
            self._expire()
            while len(self._hands) >= self.max_hands:
                self._hands.popitem(last=False)
            h = _Hand(self.game.initial_state(hand_id=hand_number), deck, hand_number % 2)
            self._hands[token] = h
        self._deal_due(h)
        return token

    def _expire(self) -> None:
        now = time.monotonic()
        while self._hands:
            token, h = next(iter(self._hands.items()))
            if now - h.touched <= self.ttl_s:
                break
            del self._hands[token]

    def _get(self, token: Any) -> _Hand:
        if not isinstance(token, str):
            raise PlayError("bad_request", "hand must be the token that dealing the hand returned", 422)
        with self._lock:
            h = self._hands.get(token)
            if h is None:
                raise PlayError(
                    "unknown_hand", "no hand in play with that token (finished, expired or never dealt)", 404
                )
            self._hands.move_to_end(token)
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

    def bot_acts(self, token: str, answer: dict[str, Any]) -> str:
        """The bot takes an action drawn from ``answer["strategy"]`` (a responder's answer);
        returns it."""
        h = self._get(token)
        strategy = answer["strategy"]
        keys = list(strategy)
        p = np.array([max(0.0, float(strategy[k])) for k in keys])
        with self._lock:
            action = keys[int(self.rng.choice(len(keys), p=p / p.sum()))]
        h.state = h.state.apply(action)
        rec = {k: answer.get(k) for k in ("source", "method", "fallback", "elapsed_ms", "iterations")}
        rec.update(action=action, seat=1 - h.human, strategy=strategy)
        h.answers.append(rec)
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
        the bot's answers from the ``answers_from``-th on; at the end the log line and the result
        (the hand is then forgotten)."""
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
            out["bot_hole"] = [int(c) for c in st.hole_cards[1 - h.human]] if st.betting.showdown() else []
            out["log_line"] = f"{st.dealer_string()}:{_num(pay[0])}|{_num(pay[1])}:{names[0]}|{names[1]}"
            with self._lock:
                self._hands.pop(token, None)
        return out


__all__ = ["HAND_TTL_S", "MAX_HANDS", "NAMES", "PlayError", "Table"]
