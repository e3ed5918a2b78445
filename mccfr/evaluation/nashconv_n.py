"""Exact NashConv of a policy in a small game of any number of seats (3-player Kuhn, Leduc).

A plain Python walk of :class:`holdem.State`'s whole game tree, for games whose tree is small
(3-player Kuhn: 24 deals; 3-player Leduc: a few hundred thousand states): no abstraction, no
numba. NashConv is the sum over seats of what a best response to the others' policy gains over
the policy's own value, ``sum_i (max_{s_i} u_i(s_i, sigma_-i) - u_i(sigma))``; 0 exactly at a Nash
equilibrium. It equals OpenSpiel's ``exploitability.nash_conv`` on the same policy
(tests/evaluation/test_nashconv_n.py, to 1e-9 on 3-player Kuhn).

Games whose tree :class:`blueprint.nplayer.NPlayerGame` can flatten (3-player Kuhn and Leduc:
all the small ones) take its numba path (``method="auto"``, the default): the policy is asked
once per information set, with the seat's MATCHSTATE, and NashConv takes well under a second on
3-player Leduc, against minutes a walk. ``method="walk"`` forces the Python walk (the reference
the fast path is tested against), ``"flat"`` the fast path.

A policy is a function ``policy(state) -> {action: probability}`` over ``state.legal_actions()``
(ACPC action strings) at a decision state; it may only look at what the seat to act sees, i.e.
:func:`infoset_key`. Chance deals every card uniformly, one at a time.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from holdem.game import Game
from holdem.gamedef import GameDef
from holdem.state import State

if TYPE_CHECKING:
    from blueprint.nplayer import NPlayerGame

Policy = Callable[[State], dict[str, float]]
InfosetKey = tuple[int, tuple[int, ...], tuple[int, ...], str]


def infoset_key(state: State) -> InfosetKey:
    """What the seat to act knows: its seat, its hole cards, the board and the betting."""
    p = state.current_player()
    return (p, state.hole_cards[p], state.board_cards, state.betting.betting_string())


def _chance_children(state: State) -> list[tuple[float, State]]:
    used = set(state.board_cards).union(*state.hole_cards)
    rest = [c for c in range(state.gamedef.deck_size) if c not in used]
    return [(1.0 / len(rest), state.deal([c])) for c in rest]


def _checked(policy: Policy, state: State) -> dict[str, float]:
    probs = policy(state)
    legal = state.legal_actions()
    if set(probs) - set(legal):
        raise ValueError(f"policy gives illegal actions {sorted(set(probs) - set(legal))} at {state}")
    total = sum(probs.values())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"policy's probabilities sum to {total} at {state}")
    return probs


METHODS = ("auto", "flat", "walk")


@lru_cache(maxsize=4)
def _flattened(gamedef: GameDef) -> NPlayerGame:
    from blueprint.nplayer import NPlayerGame

    return NPlayerGame.from_gamedef(gamedef)


def _flat(game: Game, method: str) -> NPlayerGame | None:
    """The flattened game for the fast path, or None for the walk."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "walk":
        return None
    from blueprint.nplayer import FlattenError

    try:
        return _flattened(game.gamedef)
    except FlattenError:
        if method == "flat":
            raise
        return None


def policy_values(game: Game, policy: Policy, method: str = "auto") -> tuple[float, ...]:
    """Every seat's expected payoff (chips) when all seats play ``policy``."""
    flat = _flat(game, method)
    if flat is not None:
        from blueprint import nplayer

        return tuple(float(v) for v in nplayer.policy_values(flat, flat.policy_from(policy)))

    def walk(s: State) -> list[float]:
        if s.is_terminal():
            return list(s.payoffs())
        if s.is_chance():
            out = [0.0] * game.gamedef.num_players
            for p, child in _chance_children(s):
                for i, v in enumerate(walk(child)):
                    out[i] += p * v
            return out
        out = [0.0] * game.gamedef.num_players
        for a, p in _checked(policy, s).items():
            if p:
                for i, v in enumerate(walk(s.apply(a))):
                    out[i] += p * v
        return out

    return tuple(walk(game.initial_state()))


def best_response_value(game: Game, policy: Policy, seat: int) -> float:
    """``seat``'s value when it best-responds to the others playing ``policy``."""
    # the histories of each of seat's infosets, with the others' and chance's reach
    histories: dict[InfosetKey, list[tuple[State, float]]] = defaultdict(list)

    def collect(s: State, reach: float) -> None:
        if s.is_terminal():
            return
        if s.is_chance():
            for p, child in _chance_children(s):
                collect(child, reach * p)
            return
        if s.current_player() == seat:
            histories[infoset_key(s)].append((s, reach))
            for a in s.legal_actions():
                collect(s.apply(a), reach)
            return
        for a, p in _checked(policy, s).items():
            if p:
                collect(s.apply(a), reach * p)

    collect(game.initial_state(), 1.0)
    best: dict[InfosetKey, str] = {}

    def value(s: State) -> float:
        if s.is_terminal():
            return s.payoffs()[seat]
        if s.is_chance():
            return sum(p * value(child) for p, child in _chance_children(s))
        if s.current_player() == seat:
            return value(s.apply(best_action(infoset_key(s))))
        return sum(p * value(s.apply(a)) for a, p in _checked(policy, s).items() if p)

    def best_action(key: InfosetKey) -> str:
        if key not in best:
            hs = histories[key]
            actions = hs[0][0].legal_actions()
            totals = [sum(r * value(h.apply(a)) for h, r in hs) for a in actions]
            best[key] = actions[max(range(len(actions)), key=totals.__getitem__)]
        return best[key]

    return value(game.initial_state())


def nash_conv(game: Game, policy: Policy, method: str = "auto") -> float:
    """Sum over seats of the best response's gain over ``policy`` (chips)."""
    flat = _flat(game, method)
    if flat is not None:
        from blueprint import nplayer

        return nplayer.nash_conv(flat, flat.policy_from(policy))
    on_policy = policy_values(game, policy, method="walk")
    return sum(best_response_value(game, policy, i) - on_policy[i] for i in range(game.gamedef.num_players))
