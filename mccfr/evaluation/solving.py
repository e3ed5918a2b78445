"""A player that plays the blueprint early in the hand and re-solves subgames later (the
``RUN_DIR+solve:METHOD`` player spec).

When it solves and what it reuses is the one solve policy, :class:`subgame.policy.SolvePolicy`
(blueprint before ``from_round``, default the last round; then the subgame at the state,
:func:`subgame.nested.solve_state`, nested after an opponent's off-tree bet; then that subgame
reused within the hand; pre-flop subgames reused across hands within ``public_cache_bytes``).
With ``off_tree`` it also solves the nested subgame after an opponent's off-tree bet of the
state's round far enough from the abstract sizes (:func:`subgame.policy.off_tree_split`; default
:data:`~subgame.nested.OFF_TREE_SPLIT`, 0 solves every off-tree bet) instead of translating it.
Where no subgame fits it plays the blueprint's answer (its fallback at a dead end); every answer
is labelled (``sources`` counts them). Solves run ``iterations`` (default 200, so that a match
repeats) within ``time_budget`` seconds when given.

:class:`SearchPlayer` (the ``RUN_DIR+search[:ITERATIONS]`` spec) plays Pluribus-style search for
any number of seats (:class:`subgame.multiway.MultiwaySearch`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.player import sample
from holdem.betting import Betting, action_string
from holdem.state import State
from subgame.cache import SessionCache
from subgame.limits import SolveLimits
from subgame.multiway import MultiwaySearch, SearchConfig
from subgame.nested import hand_strategy, solve_state
from subgame.policy import SolvePolicy
from subgame.solver import METHODS
from subgame.tree import SubgameError

#: the player's session in its policy's store: it keeps one hand at a time
HAND = "hand"


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
        self.bp, self.method, self.name, self.bets = bp, method, name, bets
        # it plays the solved strategy: no exploitability check after the last iteration (on the
        # turn an exact one walks every river card, about a quarter of a 100-iteration solve)
        self.limits = SolveLimits(iterations=iterations, time_budget=time_budget, final_check=False)
        self.policy = SolvePolicy(bp, from_round, off_tree, public=SessionCache(public_cache_bytes))
        self.solves = 0
        self.reused = 0
        self.fallbacks = 0  # decisions it meant to solve but could not (answered by the blueprint)
        self.sources: dict[str, int] = {}

    @property
    def from_round(self) -> int:
        return self.policy.from_round

    @property
    def iterations(self) -> Optional[int]:
        return self.limits.iterations

    @property
    def time_budget(self) -> Optional[float]:
        return self.limits.time_budget

    @property
    def off_tree(self) -> Optional[float]:
        """None: it translates every off-tree bet; else it solves nested where
        :func:`~subgame.nested.opponent_off_tree_split` is at least this."""
        return self.policy.off_tree

    def _key(self, state: State):
        assert state.viewer is not None, "a viewer's decision"
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
        answer = None

        def source() -> str:  # the blueprint's answer, asked only when no subgame is reused
            nonlocal answer
            answer = self.bp.answer(state, rng)
            return answer.source

        d = self.policy.decide(state, HAND, self._key(state), self.method, source)
        if d.hit is not None:
            self.reused += 1
            return hand_strategy(d.hit[0], d.hit[1], state), "subgame", d.hit
        assert answer is not None  # asked by decide() when it reused nothing
        if not d.solve:
            return answer.strategy, answer.source, None
        try:
            sol, n = solve_state(
                self.bp, state, self.method, self.limits, bets=self.bets, played=d.played or None
            )
        except (SubgameError, BlueprintError):
            self.fallbacks += 1  # no subgame fits: the blueprint's answer (its fallback at a dead end)
            return answer.strategy, answer.source, None
        self.policy.keep(d, sol)
        self.solves += 1
        return hand_strategy(sol, n, state), "subgame", (sol, n)

    def act(self, state: State, rng: np.random.Generator) -> str:
        return self.decide(state, rng)[0]

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        """The action and the distribution over legal actions it was drawn from (the answer's
        strategy with each action made legal by :func:`legal_action`)."""
        strat, source, solved = self._answer(state, rng)
        self.sources[source] = self.sources.get(source, 0) + 1
        if solved is not None:
            self.policy.record(HAND, self._key(state), state, *solved)
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


class SearchPlayer:
    """Blueprint + Pluribus-style search (:mod:`subgame.multiway`) at every decision from the
    configuration's first round on; ``sources`` counts the answers by where they came from. A
    state's answer is computed once (the search is seeded by the state) and kept, with every
    hand's strategy there: a later search takes the seat's range after its own earlier searched
    decisions from those (as Pluribus tracked its range), searching an earlier decision first if
    it was never asked (exact values ask the information sets in any order)."""

    MEMO = 65536  # answers kept (a hand needs only its own; exact values ask every one once)

    def __init__(self, bp: Blueprint, config: SearchConfig = SearchConfig(), name: str = "blueprint+search"):
        self.search = MultiwaySearch(bp, config)
        self.bp, self.name = bp, name
        self.sources: dict[str, int] = {}
        self.seconds = 0.0
        self._memo: dict[str, tuple[dict[str, float], Optional[dict[str, np.ndarray]]]] = {}

    def _answer(self, state: State) -> tuple[dict[str, float], Optional[dict[str, np.ndarray]]]:
        key = state.matchstate(state.viewer) if state.viewer is not None else str(state)
        got = self._memo.get(key)
        if got is None:
            if len(self._memo) >= self.MEMO:
                self._memo.clear()
            ans = self.search.answer(state, played=self._played(state))
            self.sources[ans.source] = self.sources.get(ans.source, 0) + 1
            self.seconds += ans.seconds
            got = self._memo[key] = (ans.strategy, ans.hands)
        return got

    def _played(self, state: State) -> Optional[dict[int, np.ndarray]]:
        """{index of the action in the hand: float64 [H]}: the probability, per hand, of each of
        the viewer's own earlier actions in searched rounds before the state's, from the search
        that chose it."""
        g, me = state.gamedef, state.viewer
        first = self.search.config.from_round
        if me is None or state.round <= first:
            return None
        head, _, cards = state.matchstate(me).rpartition(":")
        prefix = head.split(":")[:3]  # MATCHSTATE, seat, hand number
        boards = cards.split("/")
        out: dict[int, np.ndarray] = {}
        b = Betting.initial(g)
        j = 0
        for acts in state.betting.actions[: state.round]:
            for kind, size in acts:
                if b.round >= first and b.current_player() == me:
                    ms = ":".join([*prefix, b.betting_string(), "/".join(boards[: b.round + 1])])
                    _, hands = self._answer(self.bp.game.state(ms))
                    real = action_string(kind, size, g)
                    if hands is not None and real in hands:
                        out[j] = hands[real]
                b = b.apply(kind, size)
                j += 1
        return out or None

    def probs(self, state: State) -> dict[str, float]:
        return self._answer(state)[0]

    def act(self, state: State, rng: np.random.Generator) -> str:
        return self.decide(state, rng)[0]

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        dist = self.probs(state)
        return sample(dist, rng), dist

    def __repr__(self) -> str:
        return f"<SearchPlayer {self.name!r}>"


def search_config(option: str) -> SearchConfig:
    """The settings of a ``RUN_DIR+search`` player spec (``option`` empty: :class:`SearchConfig`'s
    defaults) or ``RUN_DIR+search:ITERATIONS[:CONTINUATIONS[:FROM_ROUND]]``; ValueError naming the
    form or the setting otherwise."""
    if not option:
        return SearchConfig()
    parts = option.split(":")
    if len(parts) > 3 or not all(p.isdigit() for p in parts):
        raise ValueError(
            f"search:{option}: expected search:ITERATIONS[:CONTINUATIONS[:FROM_ROUND]], integers"
        )
    return SearchConfig(
        iterations=int(parts[0]),
        continuations=int(parts[1]) if len(parts) > 1 else SearchConfig.continuations,
        from_round=int(parts[2]) if len(parts) > 2 else SearchConfig.from_round,
    )


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


__all__ = ["SearchPlayer", "SolvingPlayer", "legal_action", "search_config", "solving_player"]
