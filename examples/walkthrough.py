"""Exact per-information-set action values on the flat tree, to show what one CFR iteration does.

The full-traversal kernel (:func:`blueprint.kernels.cfr_full_iteration`) adds to each regret the
*counterfactual* regret of an iteration but does not keep the action values it computed. This
module recomputes them exactly, for any game small enough to enumerate its deals (Kuhn, Leduc,
small-deck variants), so that examples and tests can print and check them.

For a strategy ``sigma`` (probabilities in the table layout of :mod:`blueprint.kernels`), an
information set ``I = (node n, bucket b)`` of seat ``p`` and an action ``a``:

* ``reach(I) = sum_{h in I} pi_c(h) * pi_{-p}(h)``: chance times the opponent's reach of the
  histories (deals) in ``I``;
* ``cfv(I, a) = sum_{h in I} pi_c(h) * pi_{-p}(h) * u_p(h . a)``: the counterfactual value of the
  action (Zinkevich et al. 2007), with ``u_p(h . a)`` seat ``p``'s expected payoff after ``a``
  when both play ``sigma``;
* ``cfv(I, a) / reach(I)``: the action value *conditioned on* ``I`` (the expected payoff given
  what ``p`` knows at ``I``);
* ``cfv(I) = sum_a sigma(I, a) cfv(I, a)`` and the counterfactual regret
  ``r(I, a) = cfv(I, a) - cfv(I)``, which is what vanilla CFR adds to ``R(I, a)``.

The deals are every ordered deal of the game (``[seat 0 hole | seat 1 hole | boards]``, all equally
likely), as the kernel enumerates them; the walk over the betting tree is vectorized over deals.

Alternating updates. The kernel updates seat 0's regrets first and then traverses for seat 1 with
seat 0's *updated* current strategy; :func:`first_iteration` reproduces exactly that, so its
regrets equal the kernel's regret increments.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Sequence
from math import perm

import numpy as np

from abstraction.cards import CardAbstraction
from abstraction.tree import KIND_DECISION, KIND_FOLD, BettingTree
from blueprint.blueprint import hand_bucket
from blueprint.tables import normalize_blocks
from holdem.betting import CALL, FOLD, RAISE
from holdem.cards import cards_str
from holdem.evaluator import rank_hand_py

MAX_DEALS = 50_000


@dataclasses.dataclass(frozen=True)
class InfoSetValues:
    """Exact values of one strategy, every array float64 ``[size]`` in the table layout.

    Attributes:
        probs: the strategy ``sigma(I, a)``.
        reach: chance x opponent reach of the entry's information set (repeated over its actions).
        action_cfv: counterfactual value ``cfv(I, a)`` for the information set's actor.
        cfv: the information set's counterfactual value ``sum_a sigma cfv(I, a)`` (repeated).
        value: seat 0's expected payoff (chips per hand) when both seats play ``probs``.
    """

    probs: np.ndarray
    reach: np.ndarray
    action_cfv: np.ndarray
    cfv: np.ndarray
    value: float

    @property
    def regret(self) -> np.ndarray:
        """Counterfactual regret ``cfv(I, a) - cfv(I)`` (what one vanilla CFR pass adds)."""
        return self.action_cfv - self.cfv

    def conditional(self) -> np.ndarray:
        """Action values conditioned on the information set, ``cfv(I, a) / reach(I)``; NaN where
        the opponent and chance never reach it."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                self.reach > 0, self.action_cfv / np.where(self.reach > 0, self.reach, 1.0), np.nan
            )

    def conditional_mixed(self) -> np.ndarray:
        """The information set's value under ``sigma``, conditioned on it (repeated over actions)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.reach > 0, self.cfv / np.where(self.reach > 0, self.reach, 1.0), np.nan)


class DealSet:
    """Every ordered deal of a small game with its card buckets and showdown winners.

    Arrays: ``deals`` int64 ``[D, cards]``; ``buckets`` int64 ``[D, 2, rounds]``; ``winner`` int64
    ``[D]`` (0, 1 or -1 for a split). Each deal has probability ``1 / D``.
    """

    def __init__(self, game, cards: CardAbstraction, max_deals: int = MAX_DEALS):
        n = game.cards_per_deal
        count = perm(game.deck_size, n)
        if count > max_deals:
            raise ValueError(
                f"{game.name or 'this game'} has {count:,} deals; exact values need <= {max_deals:,}"
            )
        self.game = game
        self.deals = np.array(list(itertools.permutations(range(game.deck_size), n)), np.int64).reshape(
            count, n
        )
        h = game.num_hole_cards
        self.buckets = np.zeros((count, 2, game.num_rounds), np.int64)
        self.winner = np.zeros(count, np.int64)
        # through the public per-hand helpers (memoized: few distinct hands in a small game)
        bucket = functools.lru_cache(maxsize=None)(
            lambda hole, board, r: hand_bucket(cards, game, hole, board, r)
        )
        strength = functools.lru_cache(maxsize=None)(
            lambda hand: rank_hand_py(list(hand), game.num_suits, game.num_ranks)
        )
        for d in range(count):
            deal = [int(c) for c in self.deals[d]]
            board = deal[2 * h :]
            s = []
            for seat in (0, 1):
                hole = tuple(sorted(deal[seat * h : (seat + 1) * h]))
                for r in range(game.num_rounds):
                    vis = tuple(board[: game.board_cards_through(r)])
                    self.buckets[d, seat, r] = bucket(hole, vis, r)
                s.append(strength(hole + tuple(sorted(board))))
            self.winner[d] = 0 if s[0] > s[1] else 1 if s[1] > s[0] else -1

    def bucket_cards(self, seat: int, round_: int, bucket: int) -> str:
        """The cards seat ``seat`` sees in ``round_`` in (the first) deal with that bucket."""
        hit = np.nonzero(self.buckets[:, seat, round_] == bucket)[0]
        if not len(hit):
            raise KeyError(f"no deal puts seat {seat} in bucket {bucket} of round {round_}")
        g = self.game
        d = self.deals[hit[0]]
        h = g.num_hole_cards
        hole = sorted(d[seat * h : (seat + 1) * h], reverse=True)
        board = d[2 * h : 2 * h + g.board_cards_through(round_)]
        text = cards_str(hole, g.num_suits)
        return text + ("|" + cards_str(board, g.num_suits) if len(board) else "")


def info_set_values(
    tree: BettingTree, deals: DealSet, row_offset: np.ndarray, probs: np.ndarray
) -> InfoSetValues:
    """Exact reaches and counterfactual values of every information set under ``probs``."""
    size = probs.shape[0]
    reach = np.zeros(size)
    action_cfv = np.zeros(size)
    cfv = np.zeros(size)
    D = deals.deals.shape[0]
    w = 1.0 / D
    kind, player, spent = tree.kind, tree.player, tree.spent
    sd_sign = np.where(deals.winner == 0, 1.0, np.where(deals.winner == 1, -1.0, 0.0))

    def walk(n: int, reach0: np.ndarray, reach1: np.ndarray) -> np.ndarray:
        """Seat 0's expected payoff from node ``n`` for every deal (float64 [D])."""
        k = kind[n]
        if k != KIND_DECISION:
            if k == KIND_FOLD:
                folder = int(player[n])
                u = -float(spent[n, 0]) if folder == 0 else float(spent[n, 1])
                return np.full(D, u)
            return float(min(spent[n, 0], spent[n, 1])) * sd_sign
        p = int(player[n])
        na = int(tree.num_actions[n])
        b = deals.buckets[:, p, tree.round[n]]
        idx = row_offset[n] + b[:, None] * na + np.arange(na)[None, :]  # [D, A] table entries
        sigma = probs[idx]
        opp = reach1 if p == 0 else reach0
        sign = 1.0 if p == 0 else -1.0
        s = int(tree.child_start[n])
        v = np.zeros(D)
        vals = np.empty((D, na))
        for a in range(na):
            c = int(tree.edge_child[s + a])
            if p == 0:
                vals[:, a] = walk(c, reach0 * sigma[:, a], reach1)
            else:
                vals[:, a] = walk(c, reach0, reach1 * sigma[:, a])
            v += sigma[:, a] * vals[:, a]
        wo = (w * opp)[:, None]
        np.add.at(reach, idx, np.broadcast_to(wo, idx.shape))
        np.add.at(action_cfv, idx, wo * sign * vals)
        np.add.at(cfv, idx, np.broadcast_to(wo * sign * v[:, None], idx.shape))
        return v

    root = walk(0, np.ones(D), np.ones(D))
    return InfoSetValues(probs, reach, action_cfv, cfv, float(root.mean()))


@dataclasses.dataclass(frozen=True)
class IterationStep:
    """One alternating-update CFR iteration seen from outside the kernel.

    ``before``: seat 0's values under the current strategy at the start; ``after_seat0``: seat 1's
    values under seat 0's updated strategy (what the kernel's seat-1 pass sees). ``regret_delta``:
    the kernel's actual regret increments, float64 ``[size]``.
    """

    before: InfoSetValues
    after_seat0: InfoSetValues
    regret_delta: np.ndarray

    def values_for(self, seat: int) -> InfoSetValues:
        return self.before if seat == 0 else self.after_seat0


def first_iteration(trainer, deals: DealSet) -> IterationStep:
    """Run one iteration of ``trainer`` (full-traversal CFR) and explain it exactly."""
    if not trainer.config.algo.full_traversal:
        raise ValueError(
            f"the walkthrough needs full-traversal CFR (cfr or cfr+), not {trainer.config.algo.name!r}"
        )
    tree, off = trainer.tree, trainer.row_offset
    before = info_set_values(tree, deals, off, trainer.current_strategy())
    r0 = trainer.regret.astype(np.float64)
    seat0 = _entries_of(tree, off, trainer.num_buckets, 0, trainer.size)
    mid = trainer.regret.astype(np.float64)
    mid[seat0] += before.regret[seat0]
    if trainer.config.algo.name == "cfr+":
        mid[seat0] = np.maximum(mid[seat0], 0.0)
    after = info_set_values(tree, deals, off, normalize_blocks(tree, off, trainer.num_buckets, mid))
    trainer.run(1)
    return IterationStep(before, after, trainer.regret.astype(np.float64) - r0)


def _entries_of(
    tree: BettingTree, row_offset: np.ndarray, num_buckets: np.ndarray, seat: int, size: int
) -> np.ndarray:
    """Boolean mask [size] of the table entries of ``seat``'s information sets."""
    mask = np.zeros(size, bool)
    for n in tree.decision_nodes():
        if int(tree.player[n]) == seat:
            s = int(row_offset[n])
            mask[s : s + int(num_buckets[tree.round[n]] * tree.num_actions[n])] = True
    return mask


def betting_words(tree: BettingTree, n: int) -> list[str]:
    """The actions on the path to node ``n`` in words (see :func:`action_words`)."""
    path = []
    while tree.parent[n] >= 0:
        path.append(int(tree.parent_edge[n]))
        n = int(tree.parent[n])
    out = []
    for e in reversed(path):
        out.append(action_words(tree, n)[e - int(tree.child_start[n])])
        n = int(tree.edge_child[e])
    return out


def action_words(tree: BettingTree, n: int) -> list[str]:
    """The actions of decision node ``n`` in words: fold; check, or call when facing a bet; bet, or
    raise when facing one (blinds count as bets, antes do not)."""
    s = int(tree.child_start[n])
    facing = int(tree.spent[n, 0]) != int(tree.spent[n, 1])
    names = {FOLD: "fold", CALL: "call" if facing else "check", RAISE: "raise" if facing else "bet"}
    return [names[int(tree.edge_kind[e])] for e in range(s, s + int(tree.num_actions[n]))]


def info_sets(tree: BettingTree, num_buckets: np.ndarray, seat: int) -> list[tuple[int, int]]:
    """``(node, bucket)`` of every information set of ``seat``, nodes in preorder, buckets from the
    highest down (the strongest hand first in lossless small games)."""
    out = []
    for n in tree.decision_nodes():
        if int(tree.player[n]) == seat:
            for b in range(int(num_buckets[tree.round[n]]) - 1, -1, -1):
                out.append((int(n), b))
    return out


def set_current_strategy(
    trainer, strategy: dict[tuple[int, int], Sequence[float]], scale: float = 1.0
) -> None:
    """Make regret matching yield ``strategy`` at the given information sets.

    ``strategy`` maps ``(node, bucket)`` to one probability per action of the node; the regrets of
    that information set become ``scale * probabilities`` (regret matching is scale-free; a scale
    that makes them integers keeps float32 regrets exact, e.g. 6 for thirds and halves).
    """
    tree = trainer.tree
    for (n, b), probs in strategy.items():
        na = int(tree.num_actions[n])
        p = np.asarray(probs, np.float64)
        if tree.kind[n] != KIND_DECISION or not 0 <= b < int(trainer.num_buckets[tree.round[n]]):
            raise ValueError(f"({n}, {b}) is not an information set of this tree")
        if p.shape != (na,) or (p < 0).any() or not np.isclose(p.sum(), 1.0) or not (p > 0).any():
            raise ValueError(
                f"information set ({n}, {b}) needs {na} probabilities summing to 1, got {list(p)}"
            )
        s = int(trainer.row_offset[n]) + b * na
        trainer.regret[s : s + na] = scale * p
