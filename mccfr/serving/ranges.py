"""Whole ranges at a public state, for the web page's explorer (``POST /v1/range``).

A public state is a betting history (ACPC betting string) and a board. At a decision, every
private hand of the seat to act gets its strategy and its reach weight:

* **strategy** ``[A, H]``: per action (ACPC action strings of the real state, the blueprint's
  :meth:`~blueprint.blueprint.Blueprint.action_keys` merged) the probability for each of the
  ``H`` hands of :func:`subgame.tree.all_hands` (card ids increasing, lexicographic order): from
  the blueprint (:func:`blueprint_range`: the node :meth:`Blueprint.answer
  <blueprint.blueprint.Blueprint.answer>` plays, for every hand's card bucket at once, so a hand's
  row is exactly what ``Blueprint.strategy`` answers for it), or from a solved subgame
  (:func:`subgame_range`: the solution's strategy at the state's node);
* **reach** ``[H]``: the probability that the seat to act holds each hand and took the history's
  actions, up to a constant: the product of its own action probabilities along the history (the
  blueprint's, :func:`subgame.construct.history_ranges`; in a subgame, its root range times the
  solved strategy down to the node). Hands that share a card with the board have 0 in both.

:func:`public_state` parses and checks the request's history and board (errors are
:class:`~mccfr.serving.query.QueryError`, 400 ``bad_history`` / ``bad_board``, naming the
problem) and tells a decision from a state that waits for cards or has ended.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import numpy as np

from abstraction.tree import KIND_DECISION
from blueprint.blueprint import Blueprint
from holdem.betting import IllegalActionError, action_string, parse_action_token, parse_betting
from holdem.cards import CardError, card_name, parse_cards
from holdem.game import Game
from holdem.gamedef import GameDef
from holdem.state import State
from mccfr.serving.query import MAX_MATCHSTATE_LEN, QueryError
from subgame.construct import BucketCache, history_ranges, node_probs
from subgame.tree import all_hands, blocked_by
from subgame.types import Solution

#: probabilities and weights are sent with this many decimals (the page shows three)
DECIMALS = 5


@dataclasses.dataclass(frozen=True)
class PublicState:
    """A parsed public state. ``status``: ``"decision"`` (``seat`` to act; ``state`` is the
    seat's MATCHSTATE with the first hole cards not on the board, any hand would do: only the
    public part matters), ``"cards_due"`` (``cards_due`` more board cards before round
    ``round`` + 1 can start) or ``"hand_over"``."""

    betting: str  # the ACPC betting string (normalised: '/' where a round ended)
    board: tuple[int, ...]
    round: int
    status: str
    seat: Optional[int] = None
    cards_due: int = 0
    state: Optional[State] = None
    spent: tuple[int, ...] = (0, 0)  # each seat's chips in the pot


@functools.lru_cache(maxsize=8)
def hand_names(gamedef: GameDef) -> tuple[str, ...]:
    """The name of every hand of :func:`subgame.tree.all_hands` (``"AhKd"``: higher card first)."""
    return tuple(
        "".join(card_name(int(c), gamedef.num_suits) for c in sorted(h, reverse=True))
        for h in all_hands(gamedef)
    )


@functools.lru_cache(maxsize=8)
def _hands(gamedef: GameDef) -> np.ndarray:
    return all_hands(gamedef)


def public_state(game: Game, betting: str, board: str, action: Optional[str] = None) -> PublicState:
    """The public state of ``betting`` (an ACPC betting string; with ``action``, the state after
    the seat to act takes it) and ``board`` (card names, every round's cards in deal order)."""
    g = game.gamedef
    if not isinstance(betting, str) or len(betting) > MAX_MATCHSTATE_LEN:
        raise QueryError(
            "bad_history", f"betting must be a string of at most {MAX_MATCHSTATE_LEN} characters", 400
        )
    try:
        b = parse_betting(betting, g)
    except ValueError as exc:
        raise QueryError("bad_history", f"betting {betting[:80]!r}: {exc}", 400) from None
    try:
        ids = tuple(parse_cards(board.replace("/", "").replace(" ", ""), g.num_suits, g.num_ranks))
    except (CardError, AttributeError) as exc:
        raise QueryError("bad_board", f"board {str(board)[:80]!r}: {exc}", 400) from None
    if len(set(ids)) != len(ids):
        raise QueryError("bad_board", f"board {board!r} repeats a card", 400)
    if action is not None:
        if b.finished:
            raise QueryError("hand_over", f"action {action[:40]!r}: the hand is over at {betting!r}", 409)
        if len(ids) < g.board_cards_through(b.round):
            raise QueryError("cards_due", f"action {action[:40]!r}: the board's cards are due first", 409)
        try:
            if not action:
                raise ValueError("an action is f, c or r<to>")
            kind, size, end = parse_action_token(action, 0, g)
            if end != len(action) or action_string(kind, size, g) != action:
                raise ValueError("not ACPC's notation")
            b = b.apply(kind, size)
        except (ValueError, IllegalActionError) as exc:
            rr = b.raise_range()
            legal = (["f"] if b.can_fold() else []) + ["c"]
            if rr is not None:
                legal.append("r" if g.is_limit else f"r{rr[0]}..r{rr[1]}")
            text = ", ".join(legal)
            raise QueryError(
                "bad_action", f"action {action[:40]!r} at {betting!r}: {exc}; legal: {text}", 400
            ) from None
    if b.finished and not b.showdown():  # a fold: no more cards
        need = g.board_cards_through(b.round)
    else:  # an all-in called early runs out the whole board
        need = g.board_cards_through(g.num_rounds - 1 if b.finished else b.round)
    if len(ids) > need:
        raise QueryError(
            "bad_board",
            f"board {board!r} has {len(ids)} cards; at {b.betting_string()!r} (round {b.round + 1}) "
            f"at most {need} are dealt",
            400,
        )
    base = PublicState(b.betting_string(), ids, b.round, "hand_over", spent=tuple(b.spent))
    if b.finished and not b.showdown():
        return base
    if len(ids) < need:
        return dataclasses.replace(base, status="cards_due", cards_due=need - len(ids))
    if b.finished:
        return base
    seat = b.current_player()
    hole = tuple(c for c in range(g.deck_size) if c not in ids)[: g.num_hole_cards]
    holes = tuple(hole if p == seat else () for p in range(g.num_players))
    state = State(game, b, hole_cards=holes, board_cards=ids, viewer=seat)
    return dataclasses.replace(base, status="decision", seat=seat, state=state)


def _merge(keys: list[str], probs: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Columns of ``probs`` [H, k] with the same key summed, keys in first-seen order, rows
    normalised (a row of zeros stays zero)."""
    order: list[str] = []
    for k in keys:
        if k not in order:
            order.append(k)
    out = np.zeros((len(order), probs.shape[0]))
    for j, k in enumerate(keys):
        out[order.index(k)] += probs[:, j]
    total = out.sum(axis=0)
    out[:, total > 0] /= total[total > 0]
    return order, out


def blueprint_range(bp: Blueprint, state: State) -> dict[str, Any]:
    """The blueprint's strategy and reach for every hand at decision ``state`` (module docstring):
    ``{"actions", "strategy" [A][H], "reach" [H], "source", "reason"}``."""
    g = bp.gamedef
    hands = _hands(g)
    ans = bp.answer(state)  # the node every hand plays (the walk does not depend on the cards)
    n = ans.node
    cache = BucketCache(bp, hands)
    idx, buckets = cache(tuple(int(c) for c in state.board_cards), int(bp.tree.round[n]))
    probs = np.zeros((len(hands), int(bp.tree.num_actions[n])))
    probs[idx] = node_probs(bp, n, buckets)
    actions, strat = _merge(bp.action_keys(n, state.betting), probs)
    reach = history_ranges(bp, state, hands, cache)[state.viewer]
    return {
        "actions": actions,
        "strategy": strat,
        "reach": reach,
        "source": ans.source,
        "reason": ans.reason,
    }


def subgame_range(sol: Solution, node: int, seat: int, board: tuple[int, ...]) -> dict[str, Any]:
    """A solved subgame's strategy at its decision ``node`` and the reach of ``seat`` (the seat to
    act there) for every hand: its root range times its own solved actions down to the node
    (hands that hold a card of ``board`` get zeros)."""
    t = sol.tree
    if t.kind[node] != KIND_DECISION:
        raise ValueError(f"node {node} of the subgame is not a decision")
    strat = sol.node_strategy(node)
    actions = list(strat)
    reach = np.array(sol.subgame.ranges[seat], np.float64)
    n = node
    while t.parent[n] >= 0:
        par = int(t.parent[n])
        if t.kind[par] == KIND_DECISION and int(t.player[par]) == seat:
            a = int(t.parent_edge[n]) - int(t.child_start[par])
            reach = reach * sol.strategy[int(t.row[par]) + a]
        n = par
    out = np.array([strat[a] for a in actions], np.float64)
    dead = blocked_by(_hands(sol.tree.game), board)
    out[:, dead] = 0.0
    reach[dead] = 0.0
    return {"actions": actions, "strategy": out, "reach": reach}


def encode(rng: dict[str, Any]) -> dict[str, Any]:
    """``rng`` with its arrays as lists of rounded floats (JSON)."""
    out = dict(rng)
    out["strategy"] = np.round(np.asarray(rng["strategy"], np.float64), DECIMALS).tolist()
    out["reach"] = np.round(np.asarray(rng["reach"], np.float64), DECIMALS).tolist()
    return out


__all__ = ["PublicState", "blueprint_range", "encode", "hand_names", "public_state", "subgame_range"]
