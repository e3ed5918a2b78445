"""The :class:`Player` protocol that match play takes, :func:`sample`, one action of a strategy, and
:func:`self_play_states`, the match states of self-play hands (a pool of realistic queries).

A player sees the hand as its seat's view: a :class:`holdem.state.State` whose ``viewer`` is the
seat, always at a decision of that seat, and answers with an ACPC action string legal there.
The players themselves (baselines, the blueprint, blueprint + solving) live in
:mod:`mccfr.evaluation.players` and :mod:`mccfr.evaluation.solving`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from holdem.state import State

if TYPE_CHECKING:
    from holdem.game import Game


@runtime_checkable
class Player(Protocol):
    """Anything that can play a seat: a ``name`` and ``act(state, rng) -> ACPC action``."""

    name: str

    def act(self, state: State, rng: np.random.Generator) -> str: ...


@runtime_checkable
class ExactPlayer(Player, Protocol):
    """A player whose action distribution is known exactly at every decision."""

    def probs(self, state: State) -> dict[str, float]: ...


@runtime_checkable
class KnownPlayer(Player, Protocol):
    """A player that names, with each action, the distribution it drew the action from (at that
    decision, after any randomness of its own that came before the draw): what AIVAT needs to
    correct for the player's luck (:mod:`mccfr.evaluation.aivat`). ``act`` is ``decide``'s action."""

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]: ...


def sample(dist: dict[str, float], rng: np.random.Generator) -> str:
    """One action of ``dist`` (``{action: probability}``, summing to 1)."""
    acts = list(dist)
    if len(acts) == 1:
        return acts[0]
    u = rng.random()
    acc = 0.0
    for a in acts:
        acc += dist[a]
        if u < acc:
            return a
    return next(a for a in reversed(acts) if dist[a] > 0)


def deal_next(state: State, deck: np.ndarray, i: int) -> tuple[State, int]:
    """At a chance state, deal the next cards of the shuffled ``deck`` (card ids, one hand's
    order) from position ``i``: both hands at the start, else the round's board cards. Returns
    the new state and the position after the cards dealt."""
    g = state.gamedef
    k = (
        g.num_players * g.num_hole_cards
        if i == 0
        else g.board_cards_through(state.round) - len(state.board_cards)
    )
    return state.deal([int(c) for c in deck[i : i + k]]), i + k


def self_play_states(
    game: Game, size: int, seed: int, strategy_of: Callable[[str], dict[str, float] | None]
) -> list[str]:
    """The match states of self-play hands (the acting seat's view, every round), hand after hand
    until there are at least ``size``: each decision's ``strategy_of(matchstate)`` is sampled with
    :func:`sample`; None (no answer, e.g. off the abstract tree) ends the hand. The cards are a
    fresh permutation of the deck per hand from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    pool: list[str] = []
    while len(pool) < size:
        deck = rng.permutation(game.gamedef.deck_size)
        state, i = game.initial_state(hand_id=len(pool)), 0
        while not state.is_terminal():
            if state.is_chance():
                state, i = deal_next(state, deck, i)
                continue
            ms = state.matchstate(state.current_player())
            strategy = strategy_of(ms)
            if strategy is None:
                break
            pool.append(ms)
            state = state.apply(sample(strategy, rng))
    return pool
