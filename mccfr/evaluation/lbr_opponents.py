"""Local best response's models of its opponent (:class:`LBROpponent`): the strategy of every
private hand at once, so that LBR can keep the opponent's range (Bayes over the actions it sees;
:mod:`mccfr.evaluation.lbr`). :class:`Hands` lists the private hands (the rows of every range);
:class:`BlueprintOpponent` reads a blueprint's strategy per hand through its card buckets
(:func:`range_buckets`, the numba kernel :func:`hand_cardsets`); :class:`CardBlindOpponent` is a
baseline that ignores its cards. Blueprint + subgame solving is modelled in
:mod:`mccfr.evaluation.lbr_solving`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numba
import numpy as np

from blueprint.best_response import hand_buckets
from blueprint.blueprint import Blueprint
from blueprint.player import ExactPlayer, sample
from holdem.evaluator import card_bit
from holdem.game import Game
from holdem.state import State
from mccfr.evaluation.match import view_of
from mccfr.evaluation.players import RandomPlayer


class LBRError(ValueError):
    """Bad LBR input: an unknown action menu, an opponent LBR cannot model, a game too large."""


@numba.njit(cache=True)
def hand_cardsets(hands, num_suits):
    """Evaluator cardset (and a card-id bitmask) of each row of ``hands``."""
    n = hands.shape[0]
    cs = np.zeros(n, np.int64)
    mask = np.zeros(n, np.int64)
    for i in range(n):
        for j in range(hands.shape[1]):
            cs[i] |= card_bit(hands[i, j], num_suits)
            mask[i] |= np.int64(1) << hands[i, j]
    return cs, mask


def range_buckets(
    bp: Blueprint, hands: np.ndarray, hands_mask: np.ndarray, board: Sequence[int], round_: int
) -> np.ndarray:
    """int64 ``[H]``: the blueprint's card bucket in ``round_`` of every hand with ``board``
    (0 for hands that share a card with the board: the bucket tables must never see those)."""
    g = bp.gamedef
    if len(board) != g.board_cards_through(round_):
        raise LBRError(
            f"round {round_ + 1} needs {g.board_cards_through(round_)} board cards, got {len(board)}"
        )
    m = 0
    for c in board:
        m |= 1 << int(c)
    ok = (hands_mask & np.int64(m)) == 0
    kind, iso, table, offsets = bp.cards.kernel_args()
    out = np.zeros(len(hands), np.int64)
    out[ok] = hand_buckets(
        kind,
        hands[ok],
        np.array(board, np.int64),
        round_,
        g.num_hole_cards,
        np.array(g.num_board_cards, np.int64),
        g.deck_size,
        g.num_suits,
        g.num_ranks,
        iso,
        table,
        offsets,
    )
    return out


@runtime_checkable
class LBROpponent(Protocol):
    """What LBR asks of its opponent (:class:`mccfr.evaluation.lbr.LocalBestResponse`): the
    opponent's play at a state of the real deal, and for the range it keeps, the probabilities of
    an action for every private hand at once (rows of :attr:`Hands.hands`). States are the
    dealer's (both hands known); an opponent acts from its own view. Implemented by
    :class:`BlueprintOpponent`, :class:`CardBlindOpponent` and
    :class:`mccfr.evaluation.lbr_solving.SolvingOpponent`; the first and the last also give
    ``action_probs(state) -> (keys, P)``, the whole matrix ``P[hand, action]``."""

    name: str

    def act(self, state: State, hand: int, rng: np.random.Generator) -> tuple[str, np.ndarray | None]:
        """The action the seat to act takes holding hand ``hand``, and that action's probability
        for every hand (None: the same for every hand, no range update)."""
        ...

    def likelihood(self, state: State, action: str) -> np.ndarray | None:
        """``P[h]``: the probability of ``action`` at ``state`` for every hand ``h`` (None: the
        same for every hand)."""
        ...

    def fold_probs(self, state: State) -> np.ndarray | float:
        """The probability that the seat to act folds at ``state``, per hand (or one for all)."""
        ...


class Hands:
    """Every private hand of a game (colex order of ``itertools.combinations``)."""

    def __init__(self, game: Game):
        g = game.gamedef
        if g.deck_size > 63:
            raise LBRError(
                f"LBR handles decks of at most 63 cards, {g.name or 'this game'} has {g.deck_size}"
            )
        self.hands = np.array(list(itertools.combinations(range(g.deck_size), g.num_hole_cards)), np.int64)
        self.index = {tuple(int(c) for c in h): i for i, h in enumerate(self.hands)}
        self.cs, self.mask = hand_cardsets(self.hands, g.num_suits)

    def __len__(self) -> int:
        return len(self.hands)

    def of(self, hole: Sequence[int]) -> int:
        return self.index[tuple(sorted(int(c) for c in hole))]


class BlueprintOpponent:
    """The blueprint as LBR's opponent (:class:`LBROpponent`): its action probabilities for every
    private hand at once, what :class:`mccfr.evaluation.players.BlueprintPlayer` samples."""

    def __init__(self, bp: Blueprint, hands: Hands):
        self.bp = bp
        self.hands = hands
        self.name = "blueprint"
        self._buckets: dict = {}

    def _bucket_vector(self, board: tuple[int, ...], r: int) -> np.ndarray:
        key = (board, r)
        v = self._buckets.get(key)
        if v is None:
            if len(self._buckets) > 64:
                self._buckets.clear()
            v = self._buckets[key] = range_buckets(self.bp, self.hands.hands, self.hands.mask, board, r)
        return v

    def action_probs(self, state: State) -> tuple[list[str], np.ndarray]:
        """``(keys, P)``: ``P[h, j]`` the probability that the seat to act, holding hand ``h``,
        takes action ``keys[j]`` (what :class:`BlueprintPlayer` samples, translation included)."""
        bp, t = self.bp, self.bp.tree
        H = len(self.hands)
        cols: dict[str, np.ndarray] = {}
        for n, q in bp.decision_nodes(state.betting):  # off the tree: the blueprint's fallback node
            r = int(t.round[n])
            k = int(t.num_actions[n])
            nb = int(bp.num_buckets[r])
            off = int(bp.row_offset[n])
            block = bp.probs[off : off + nb * k].reshape(nb, k)[self._bucket_vector(state.board_cards, r)]
            for i, key in enumerate(bp.action_keys(n, state.betting)):
                cols[key] = cols.get(key, 0.0) + q * block[:, i]
        keys = list(cols)
        P = np.stack([np.broadcast_to(cols[a], (H,)) for a in keys], axis=1).astype(np.float64)
        P /= P.sum(axis=1, keepdims=True)
        return keys, P

    def act(self, state: State, hand: int, rng: np.random.Generator) -> tuple[str, np.ndarray | None]:
        keys, P = self.action_probs(state)
        a = sample(dict(zip(keys, P[hand])), rng)
        return a, P[:, keys.index(a)]

    def likelihood(self, state: State, action: str) -> np.ndarray:
        """``P[h]``: the probability of ``action`` at ``state`` for every hand ``h``."""
        keys, P = self.action_probs(state)
        return P[:, keys.index(action)] if action in keys else np.zeros(len(self.hands))

    def fold_probs(self, state: State) -> np.ndarray | float:
        keys, P = self.action_probs(state)
        return P[:, keys.index("f")] if "f" in keys else 0.0


class CardBlindOpponent:
    """A baseline that ignores its cards (always-call, always-raise, random) as LBR's opponent
    (:class:`LBROpponent`): no range update."""

    def __init__(self, player: ExactPlayer):
        self.player = player
        self.name = player.name

    def act(self, state: State, hand: int, rng: np.random.Generator) -> tuple[str, np.ndarray | None]:
        return self.player.act(view_of(state, state.current_player()), rng), None

    def likelihood(self, state: State, action: str) -> None:
        return None  # the same for every hand: no range update

    def fold_probs(self, state: State) -> float:
        b = state.betting
        if not b.can_fold():
            return 0.0
        if isinstance(self.player, RandomPlayer):
            return 1.0 / len(RandomPlayer.action_kinds(state))
        return float(self.player.probs(view_of(state, state.current_player())).get("f", 0.0))


__all__ = [
    "BlueprintOpponent",
    "CardBlindOpponent",
    "Hands",
    "LBRError",
    "LBROpponent",
    "hand_cardsets",
    "range_buckets",
]
