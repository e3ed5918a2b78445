"""A player that plays the blueprint early in the hand and re-solves subgames later (the
``RUN_DIR+solve:METHOD`` player spec), and the per-hand reuse of a solved subgame.

Where the blueprint's tree has no node for the history (a dead end:
:meth:`blueprint.blueprint.Blueprint.walk`) it solves at any round where a subgame fits (the
dead end's own subgame, :func:`subgame.nested.dead_end_subgame`), else plays the blueprint's
fallback; every answer is labelled (``sources`` counts them).

Before ``from_round`` (default: the last round, where a subgame has no chance nodes and solves in
well under a second; the turn in hold'em is a 15,000-node tree) it plays the blueprint, translating
off-tree bets. With ``off_tree`` it solves the nested subgame after an opponent's off-tree bet of
the state's round instead (Libratus did so at every off-tree bet), where the bet lies far enough
from the abstract sizes: where the pseudo-harmonic translation splits it between two sizes with
at least ``off_tree`` on the less likely one (:func:`subgame.nested.opponent_off_tree_split`; default
:data:`~subgame.nested.OFF_TREE_SPLIT`, 0 solves every off-tree bet). A bet below the smallest
abstract size or above the largest, or near one size, is translated. From ``from_round`` on it
solves the subgame at the state (:func:`subgame.nested.solve_state`; nested when the opponent's
bet is off the blueprint's tree) and samples the solved strategy for its hand.

Later decisions in the same hand that lie inside the solved subgame reuse it (Libratus re-solved
at every opponent off-tree action; an on-tree continuation is answered from the solved tree). Its
decisions answered by a solve are remembered for the hand (:class:`~subgame.cache.PlayedStrategy`):
a later subgame of the hand gives it the range that the solved strategy played, not the one the
blueprint would have. A subgame rooted before any board card is the same for every deal (its
ranges come from the blueprint, the public history and the solutions that answered it, not from
the player's cards): such solutions are kept across hands, least recently used out beyond
``public_cache_bytes`` (:class:`~subgame.cache.SessionCache`, keyed by the seat and the public
history).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.player import sample
from holdem.state import State
from subgame.cache import PlayedStrategy, SessionCache, SubgameCache, public_key
from subgame.nested import OFF_TREE_SPLIT, hand_strategy, opponent_off_tree_split, solve_state
from subgame.solver import METHODS
from subgame.tree import SubgameError


class SolvingPlayer:
    """Blueprint + safe subgame solving (``method``), within ``time_budget`` seconds or
    ``iterations`` per solve."""

    def __init__(
        self,
        bp: Blueprint,
        method: str = "reach-maxmargin",
        name: str = "blueprint+solve",
        time_budget: Optional[float] = None,
        iterations: Optional[int] = 200,
        from_round: Optional[int] = None,
        bets=None,
        off_tree: bool | float = False,
        public_cache_bytes: int = 256 << 20,
    ):
        if method not in METHODS:
            raise SubgameError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
        if off_tree is True:
            off_tree = OFF_TREE_SPLIT
        if off_tree is not False and not 0.0 <= float(off_tree) <= 0.5:  # NaN too
            raise SubgameError(f"off_tree must be a translation split in [0, 0.5], got {off_tree!r}")
        self.bp, self.method, self.name = bp, method, name
        if from_round is None:
            from_round = bp.gamedef.num_rounds - 1
        self.time_budget, self.iterations, self.from_round, self.bets = (
            time_budget,
            iterations,
            from_round,
            bets,
        )
        # None: translate every off-tree bet; else solve nested where opponent_off_tree_split >= it
        self.off_tree: Optional[float] = None if off_tree is False else float(off_tree)
        self.cache = SubgameCache()
        self.played = PlayedStrategy()  # the hand's decisions answered by a solve, for later subgames' ranges
        self.public = SessionCache(public_cache_bytes)  # pre-flop solutions, kept across hands
        self.solves = 0
        self.reused = 0
        self.fallbacks = 0  # decisions it meant to solve but could not (answered by the blueprint)
        self.sources: dict[str, int] = {}

    def _key(self, state: State):
        return (state.hand_id, tuple(state.hole_cards[state.viewer]))

    def probs(self, state: State) -> dict[str, float]:
        """``{action: probability}`` at ``state`` (deterministic for a fixed iteration count)."""
        return self.strategy(state)[0]

    def strategy(
        self, state: State, rng: Optional[np.random.Generator] = None
    ) -> tuple[dict[str, float], str]:
        """``({action: probability}, source)``, source one of
        :data:`blueprint.blueprint.SOURCES`. ``rng``: the blueprint's answers translate the
        opponent's off-tree raises at random (as :class:`~mccfr.evaluation.players.BlueprintPlayer`
        does), else deterministically."""
        strat, source, _ = self._answer(state, rng)
        return strat, source

    def _answer(self, state: State, rng: Optional[np.random.Generator]):
        """:meth:`strategy`'s answer and, for a subgame's, ``(solution, node)``."""
        key = self._key(state)
        hit = self.cache.lookup(state, key)
        if hit is not None:
            self.reused += 1
            return hand_strategy(hit[0], hit[1], state), "subgame", hit
        ans = self.bp.answer(state, rng)
        if (
            state.round < self.from_round
            and ans.source != "fallback"
            and not (ans.source == "translated" and self._solves_off_tree(state))
        ):
            return ans.strategy, ans.source, None
        played = self.played.played(key, state)
        public = public_key(state, played)
        if public is not None:  # no card dealt: the subgame is the same for every deal
            hit = self.public.lookup(public, state, public)
            if hit is not None:
                self.cache.store(hit[0], key)
                self.reused += 1
                return hand_strategy(hit[0], hit[1], state), "subgame", hit
        try:
            sol, n = solve_state(
                self.bp,
                state,
                self.method,
                time_budget=self.time_budget,
                iterations=self.iterations,
                bets=self.bets,
                played=played or None,
            )
        except (SubgameError, BlueprintError):
            self.fallbacks += 1  # no subgame fits: the blueprint's answer (its fallback at a dead end)
            return ans.strategy, ans.source, None
        self.cache.store(sol, key)
        if public is not None:
            self.public.store(public, sol, public)
        self.solves += 1
        return hand_strategy(sol, n, state), "subgame", (sol, n)

    def _solves_off_tree(self, state: State) -> bool:
        """Whether ``off_tree`` has the nested subgame after the opponent's off-tree bet of this
        round solved (the bet splits between two sizes by at least ``off_tree``)."""
        if self.off_tree is None:
            return False
        split = opponent_off_tree_split(self.bp, state)
        return split is not None and split >= self.off_tree

    def act(self, state: State, rng: np.random.Generator) -> str:
        return self.decide(state, rng)[0]

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        """The action and the distribution over legal actions it was drawn from (the answer's
        strategy with each action made legal by :func:`legal_action`)."""
        strat, source, solved = self._answer(state, rng)
        self.sources[source] = self.sources.get(source, 0) + 1
        if solved is not None:
            self.played.record(self._key(state), state, *solved)
        dist: dict[str, float] = {}
        for a, p in strat.items():
            la = legal_action(a, state)
            dist[la] = dist.get(la, 0.0) + p
        return legal_action(sample(strat, rng), state), dist

    def __repr__(self) -> str:
        return f"<SolvingPlayer {self.name!r} {self.method}>"


def legal_action(action: str, state: State) -> str:
    """The sampled action, or a call when the state does not allow it (a raise beyond the caps)."""
    if action[0] != "r":
        return action
    rr = state.betting.raise_range()
    if rr is None:
        return "c"
    if state.gamedef.is_limit:
        return "r"
    return f"r{min(max(int(action[1:]), rr[0]), rr[1])}"


def solving_player(bp: Blueprint, method: str, name: str) -> SolvingPlayer:
    """The factory the player-spec parser is handed (``RUN_DIR+solve:METHOD``,
    ``RUN_DIR+solve:METHOD:off-tree`` with ``off_tree`` at its default split, or
    ``RUN_DIR+solve:METHOD:off-tree=SPLIT``)."""
    method, _, option = method.partition(":")
    name_, eq, value = option.partition("=")
    if name_ not in ("", "off-tree") or (eq and name_ != "off-tree"):
        raise SubgameError(f"unknown solving option {option!r}: expected off-tree, off-tree=SPLIT or nothing")
    if not name_:
        return SolvingPlayer(bp, method, name=name)
    if not eq:
        return SolvingPlayer(bp, method, name=name, off_tree=True)
    try:
        split = float(value)
    except ValueError:
        raise SubgameError(f"off-tree={value!r}: expected a translation split in [0, 0.5]") from None
    return SolvingPlayer(bp, method, name=name, off_tree=split)  # which checks the range


__all__ = ["SolvingPlayer", "legal_action", "solving_player"]
