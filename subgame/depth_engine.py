"""The subgame solver's :class:`~subgame.engine.Engine` for a depth-limited tree: its walks value
the depth-limit leaves with the continuations of a :class:`~subgame.leaf_model.LeafModel`, and it
keeps the opponent's choice of continuation at each leaf (see :mod:`subgame.depth`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from abstraction.tree import BettingTree
from subgame import depth_kernels as DK
from subgame import kernels as K
from subgame.depth import DepthLimit
from subgame.engine import Engine
from subgame.leaf_model import LeafModel, LeafWork
from subgame.tree import SubgameError
from subgame.types import LeafState


def make_engine(tree: BettingTree, dtype, support, model: LeafModel, dl: Optional[DepthLimit] = None):
    """An :class:`~subgame.engine.Engine` whose walks value ``model``'s leaves (see
    :class:`DepthLimitedEngine`)."""
    return DepthLimitedEngine(
        tree,
        dtype,
        support,
        model,
        dl.samples if dl else None,
        dl.seed if dl else 0,
        dl.leaf_choice if dl else "regret",
    )


class DepthLimitedEngine(Engine):
    """:class:`~subgame.engine.Engine` for a depth-limited tree: the walks run
    :func:`~subgame.kernels.walk` with the model's leaves (:class:`~subgame.depth_kernels.Leaves`),
    and the engine keeps the opponent's leaf choices
    (regrets, average-strategy sums; :meth:`average` also refreshes the average choice that
    evaluation walks read)."""

    def __init__(
        self,
        tree: BettingTree,
        dtype,
        support,
        model: LeafModel,
        samples: Optional[int] = None,
        seed: int = 0,
        leaf_choice: str = "regret",
    ):
        super().__init__(tree, dtype, support)
        self.model = model
        self.samples = samples
        self.rng = np.random.default_rng(seed)
        self.full_mask = np.ones(model.num_cards, np.bool_)
        self.mask = self.full_mask
        self.deck_left = (  # the cards the next deals come from
            np.array([c for c in range(model.num_cards) if c not in set(tree.root_board)], np.int64)
            if model.sample is None
            else model.sample
        )
        game = tree.derived["real_game"]
        # the single-card deals after the leaves (the mask samples their cards): the turn and the
        # river from a hold'em flop
        self.masked_deals = sum(
            1 for r in range(int(tree.round[0]) + 1, game.num_rounds) if game.num_board_cards[r] == 1
        )
        if samples is not None and samples < len(self.deck_left):
            self.measure_factor = self._runouts(len(self.deck_left)) / self._runouts(samples)
        self.measure_mask = self.full_mask  # the cards evaluation walks (best responses) walk
        self.measure_cards: Optional[int] = None  # None: every card (exact)
        H = len(model.hands)
        L = max(model.num_leaves, 1)
        self.leaf_reg = np.zeros((L, model.k, H))
        self.leaf_sum = np.zeros((L, model.k, H))
        self.leaf_avg = np.full((L, model.k, H), 1.0 / model.k)
        # the best-response rule starts every hand on the blueprint's continuation (pick 0)
        self.leaf_pick = (
            np.zeros((L, H), np.int64) if leaf_choice == "best" else np.full((L, H), -1, np.int64)
        )
        self.leaf_work = LeafWork(model).arrays()

    def _runouts(self, cards: int) -> float:
        """Deals of the later cards from ``cards`` of them (the work of a walk grows with it)."""
        return float(np.prod([max(cards - j, 1) for j in range(self.masked_deals)]))

    def set_measure_sample(self, cards: Optional[int], seed: int = 0) -> Optional[int]:
        """Evaluation walks (best responses, exploitability checks) walk ``cards`` of the next
        deal's cards, a uniform sample drawn once here (its own generator, apart from the
        iterations' samples), scaled like the iterations' samples; ``None`` or at least every card:
        all of them (exact). A best response computed on a sample is an estimate that errs high on
        average (the best response of each sampled game is at least as good as the real one's on
        it). Returns the cards walked, or None when every card is."""
        n = len(self.deck_left)
        base = self.samples if self.samples is not None and self.samples < n else n
        if cards is None or cards >= n or self.model.leaf_deals is not None:  # sampled runouts: all
            self.measure_mask, self.measure_cards = self.full_mask, None
            self.measure_factor = self._runouts(n) / self._runouts(base)
            return None
        if cards < 2:
            raise SubgameError(f"an exploitability check on a sample needs at least 2 cards, got {cards}")
        mask = np.zeros(self.model.num_cards, np.bool_)
        mask[np.random.default_rng([seed, 1]).choice(self.deck_left, cards, replace=False)] = True
        self.measure_mask, self.measure_cards = mask, int(cards)
        self.measure_factor = self._runouts(cards) / self._runouts(base)
        return self.measure_cards

    def leaf_state(self) -> LeafState:
        """The leaf choices and the card-sampling generator, to continue or save the solve (the
        engine's own, updated in place by later iterations)."""
        return LeafState(self.leaf_reg, self.leaf_sum, self.leaf_pick, self.rng)

    def set_leaf_state(self, ls: LeafState) -> None:
        """Go on from ``ls`` (a :meth:`leaf_state` of the same subgame and depth limit): its arrays
        become the engine's (updated in place). :class:`SubgameError` for another shape or pick rule."""
        L, k, H = self.leaf_reg.shape
        best = self.leaf_pick[0, 0] >= 0
        if (
            ls.reg.shape != (L, k, H)
            or ls.sum.shape != (L, k, H)
            or ls.pick.shape != (L, H)
            or not ls.picks_follow(k, best)
        ):
            raise SubgameError(
                f"the leaf state to continue does not fit this depth-limited subgame ({L} leaves, {k} "
                f"continuations, {H} hands, the {'best-response' if best else 'regret'} choice rule)"
            )
        self.leaf_reg, self.leaf_sum, self.leaf_pick = ls.reg, ls.sum, ls.pick
        self.rng = ls.rng

    def memory_bytes(self) -> int:
        return (
            super().memory_bytes() + self.model.memory_bytes() + self.leaf_reg.nbytes + self.leaf_sum.nbytes
        )

    def average(self, acc: np.ndarray) -> np.ndarray:
        s = self.leaf_sum.sum(1, keepdims=True)
        self.leaf_avg = np.where(s > 0, self.leaf_sum / np.where(s > 0, s, 1.0), 1.0 / self.model.k)
        return super().average(acc)

    def walk_compact(
        self, sigma_c, root_reach, p, mode, regret=None, strat_sum=None, w=(1.0, 1.0, False, 1.0, 0.0)
    ) -> np.ndarray:
        rr = self._root_reach  # the base engine's root lists and reach buffer
        for s in (0, 1):
            r = np.asarray(root_reach[s])
            ri = self._root_idx[s]
            outside = np.ones(len(r), np.bool_)
            outside[ri] = False
            if (r[outside] != 0).any():
                raise SubgameError(f"seat {s}'s reach gives weight to hands outside the engine's support")
            rr[s, : len(ri)] = r[ri]
        sigma_c = np.zeros(1, self.dtype) if sigma_c is None else sigma_c
        dummy = np.zeros(1, np.float32)
        regret = dummy if regret is None else regret
        strat_sum = dummy if strat_sum is None else strat_sum
        m = self.model
        if mode == K.MODE_CFR and self.samples is not None and self.samples < len(self.deck_left):
            if p == 0 or self.mask is self.full_mask:  # a new sample of the next cards per iteration
                self.mask = np.zeros(m.num_cards, np.bool_)
                self.mask[self.rng.choice(self.deck_left, self.samples, replace=False)] = True
            mask = self.mask
        elif mode == K.MODE_CFR:
            mask = self.full_mask
        else:
            mask = self.measure_mask
        lv = DK.Leaves(
            int(m.me), int(m.k), m.leaf_of, self.leaf_reg, self.leaf_sum, self.leaf_avg, self.leaf_pick, mask
        )
        K.walk(
            self.tree_arrays,
            self.hand_arrays,
            K.WalkState(sigma_c, regret, strat_sum, self.fixed),
            rr,
            K.walk_options(p, mode, w),
            self.work,
            None,  # one thread
            0,
            lv,
            m.kernel_arrays(),
            self.leaf_work,
        )
        self._last_p = p
        v = np.zeros(len(m.hands))
        ri = self._root_idx[p]
        v[ri] = self.out[: len(ri)]
        return v
