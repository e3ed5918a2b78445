"""The blueprint + subgame solving player (:class:`mccfr.evaluation.solving.SolvingPlayer`) as LBR's
opponent: its action probabilities for every private hand at once.

Before ``from_round`` (and wherever the blueprint's tree has a node for the history) it is the
blueprint (:class:`mccfr.evaluation.lbr_opponents.BlueprintOpponent`). From ``from_round`` on, and at the
blueprint's dead ends, it solves the subgame at the state as the opponent sees it
(:func:`subgame.nested.solve_state`, depth-limited before the last round) and reads the solved
strategy of *every* hand at the state's node: one solve gives the whole matrix ``P[h, a]``
because the subgame does not depend on the solving seat's own cards. Its construction
(:func:`subgame.nested.state_subgame`: :meth:`Blueprint.walk`, ``first_off_tree``,
``from_matchstate``, ``nested_subgame``, ``dead_end_subgame``) reads only the public betting, the
board and which seat is the viewer; both ranges are blueprint reaches over all hands (the
solving seat's weighed, where its own earlier subgames of the hand answered, by what they played); the
viewer's hole cards are used only by :func:`subgame.nested.hand_strategy` to pick its row
(``tests/evaluation/test_lbr_solving.py`` checks two different hands get the same solution).

Reuse follows the player, through the player's own policy (:class:`subgame.policy.SolvePolicy`,
the same ``from_round`` and ``off_tree``): the real hand's solved subgame (the opponent's last
solve at a state it actually acted at) answers later states inside it; a later solve of the hand
gives the opponent the range its own earlier subgame answers played
(:class:`subgame.cache.PlayedStrategy`, recorded at each real decision a subgame answered), not the
blueprint's, as the player's does. LBR's hypothetical states (the opponent's fold probability
after each raise LBR considers) consult that subgame too, else are solved fresh as the player would
solve them if LBR took that raise, memoised for the hand by public state and played decisions (so
a raise LBR then takes is not solved twice) but neither made the hand's subgame nor recorded.
Where no subgame fits (:class:`~subgame.tree.SubgameError`) the blueprint answers, as for the
player. Solves run a fixed number of iterations (no time budget), so a run repeats; the player's
pre-flop subgames kept across hands are therefore the ones solved afresh here.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from blueprint.blueprint import Blueprint, BlueprintError
from blueprint.player import sample
from holdem.state import State
from mccfr.evaluation.lbr_opponents import BlueprintOpponent, Hands, LBRError
from mccfr.evaluation.match import view_of
from mccfr.evaluation.solving import SolvingPlayer, legal_action
from subgame.cache import SessionCache
from subgame.nested import solve_state
from subgame.policy import UNBOUNDED, SolvePolicy
from subgame.solver import METHODS
from subgame.tree import SubgameError, all_hands, hand_index
from subgame.types import Solution

#: the opponent's session in its policy's stores (one hand at a time)
SESSION = "lbr-opponent"


class SolvingOpponent:
    """Blueprint + safe subgame solving (``method``, ``iterations`` per solve, from ``from_round``
    on) as LBR's opponent (:class:`mccfr.evaluation.lbr_opponents.LBROpponent`, with
    ``action_probs`` as :class:`~mccfr.evaluation.lbr_opponents.BlueprintOpponent` has it)."""

    def __init__(
        self,
        bp: Blueprint,
        hands: Hands,
        method: str = "reach-maxmargin",
        from_round: Optional[int] = None,
        iterations: Optional[int] = 200,
        bets=None,
        name: Optional[str] = None,
        off_tree: bool | float | None = False,
    ):
        if method not in METHODS:
            raise LBRError(f"unknown solving method {method!r}: expected one of {', '.join(METHODS)}")
        if iterations is None or int(iterations) < 1:
            raise LBRError(
                f"LBR against a solving player needs a fixed iteration count (runs repeat), got {iterations!r}"
            )
        self.bp = bp
        self.hands = hands
        self.blueprint = BlueprintOpponent(bp, hands)
        self.method = method
        self._from_round, self._off_tree = from_round, False if off_tree is None else off_tree
        self.policy = self._new_policy()  # when it solves, what it reuses: the player's policy
        self.from_round = self.policy.from_round
        self.off_tree = self.policy.off_tree
        self.iterations = int(iterations)
        self.bets = bets
        self.name = name or f"blueprint+solve:{method}"
        sub_hands = all_hands(bp.gamedef)
        if sub_hands.shape == hands.hands.shape and np.array_equal(sub_hands, hands.hands):
            self._perm: Optional[np.ndarray] = None  # the same order (both itertools.combinations)
        else:
            idx = hand_index(bp.gamedef)
            self._perm = np.array([idx[tuple(int(c) for c in h)] for h in hands.hands], np.int64)
        # this hand's solves by public state and the played strategies they were given:
        # (Solution, node), or None (no subgame fits)
        self._memo: dict = {}
        self._memo_hand: Optional[tuple] = None
        self.solves = 0
        self.reused = 0
        self.fallbacks = 0

    def _new_policy(self) -> SolvePolicy:
        """The player's policy with stores for one hand: ``hands`` keeps the hand's subgame and
        its played strategies (:meth:`SolvePolicy.record`); ``public`` keeps nothing (a budget of
        0 bytes), since a public subgame reused across hands is the one a fresh solve gives (solves
        of a fixed iteration count repeat), and within the hand the memo answers."""
        return SolvePolicy(
            self.bp, self._from_round, self._off_tree, hands=SessionCache(UNBOUNDED), public=SessionCache(0)
        )

    def new_hand(self) -> None:
        """Forget the last hand's subgames (its subgame, played strategies and memo): a hand's
        strategy depends on that hand alone, whatever was played before it (LBR plays pairs in any
        order, in any process)."""
        self.policy = self._new_policy()
        self._memo, self._memo_hand = {}, None

    def subgame(self, hand: tuple) -> Optional[Solution]:
        """The hand's solved subgame (``hand``: ``(hand_id, seat)``; the opponent's last solve at a
        state it actually acted at), None before any."""
        sol = self.policy.hands.get(SESSION, hand)
        return sol if isinstance(sol, Solution) else None

    # -- the strategy -----------------------------------------------------------------------------
    def _solution(self, view: State, real: bool) -> Optional[tuple[Solution, int]]:
        """The solved subgame answering ``view`` (the seat to act's view) and its node there; None
        where the blueprint answers (before ``from_round`` on its tree, or no subgame fits).

        It follows :meth:`SolvingPlayer._answer <mccfr.evaluation.solving.SolvingPlayer>` through
        the one :class:`~subgame.policy.SolvePolicy`: the hand's subgame reused while ``view``
        lies in it, else a solve given the strategies the hand's earlier subgames played
        (``played``). ``real``: a decision the opponent takes in the hand (as the player's
        ``decide``): the solve becomes the hand's subgame and the answer is recorded as played;
        else a state LBR considers, which changes neither."""
        hand = (view.hand_id, view.viewer)
        d = self.policy.decide(view, SESSION, hand, self.method)
        hit: Optional[tuple[Solution, int]] = d.hit
        if hit is not None:
            self.reused += 1
        elif not d.solve:
            return None
        else:
            if self._memo_hand != hand:
                self._memo, self._memo_hand = {}, hand
            key = (view.betting.actions, tuple(view.board_cards), tuple(sorted(d.played)))
            if key in self._memo:
                hit = self._memo[key]
            else:
                try:
                    hit = solve_state(
                        self.bp,
                        view,
                        self.method,
                        time_budget=None,
                        iterations=self.iterations,
                        final_check=False,  # the strategy alone, as the player solves (evaluation/solving.py)
                        bets=self.bets,
                        played=d.played or None,
                    )
                    self.solves += 1
                except (SubgameError, BlueprintError):
                    self.fallbacks += 1
                self._memo[key] = hit
            if hit is not None and real:
                self.policy.keep(d, hit[0], 0)  # size 0: the hand's store has no bound
        if hit is not None and real:
            self.policy.record(SESSION, hand, view, hit[0], hit[1])
        return hit

    def _probs(self, state: State, real: bool) -> tuple[list[str], np.ndarray]:
        view = view_of(state, state.current_player())
        hit = self._solution(view, real)
        if hit is None:
            return self.blueprint.action_probs(state)
        sol, n = hit
        cols: dict[str, np.ndarray] = {}
        for lab, v in sol.node_strategy(n).items():
            key = legal_action(lab, view)
            col = np.asarray(v, np.float64)
            if self._perm is not None:
                col = col[self._perm]
            cols[key] = cols[key] + col if key in cols else col
        keys = list(cols)
        P = np.stack([cols[a] for a in keys], axis=1)
        s = P.sum(axis=1, keepdims=True)
        # hands outside the subgame's ranges (blocked by the board, or never reaching it in the
        # blueprint) have no strategy: uniform, as LBR's weights give them no mass anyway
        P = np.where(s > 0, P / np.where(s > 0, s, 1.0), 1.0 / len(keys))
        return keys, P

    def action_probs(self, state: State) -> tuple[list[str], np.ndarray]:
        """``(keys, P)``: ``P[h, j]`` the probability that the seat to act, holding hand ``h``,
        takes ``keys[j]`` (what :class:`SolvingPlayer` plays there with that hand)."""
        return self._probs(state, real=False)

    def act(self, state: State, hand: int, rng: np.random.Generator) -> tuple[str, np.ndarray | None]:
        keys, P = self._probs(state, real=True)
        a = sample(dict(zip(keys, P[hand])), rng)
        return a, P[:, keys.index(a)]

    def likelihood(self, state: State, action: str) -> np.ndarray:
        keys, P = self._probs(state, real=True)
        return P[:, keys.index(action)] if action in keys else np.zeros(len(self.hands))

    def fold_probs(self, state: State) -> np.ndarray | float:
        keys, P = self.action_probs(state)
        return P[:, keys.index("f")] if "f" in keys else 0.0


def solving_opponent(player: SolvingPlayer, hands: Hands) -> SolvingOpponent:
    """LBR's model of a :class:`mccfr.evaluation.solving.SolvingPlayer` (its blueprint, method, first
    solving round, off-tree split, iterations and bets)."""
    if player.iterations is None:
        raise LBRError(
            f"{player.name}: LBR needs solves of a fixed iteration count (not a time budget) so runs repeat"
        )
    return SolvingOpponent(
        player.bp,
        hands,
        player.method,
        from_round=player.from_round,
        iterations=player.iterations,
        bets=player.bets,
        name=player.name,
        off_tree=player.off_tree,
    )


__all__ = ["SolvingOpponent", "solving_opponent"]
