"""N-player MCCFR on small games: any ACPC game of 2 to 10 seats whose whole tree is small
(3-player Kuhn, 3-player Leduc), flattened into numpy arrays once and trained by a numba
external-sampling MCCFR kernel (:mod:`blueprint.nplayer_kernels`); exact NashConv on the same
arrays.

This is not the production trainer: :mod:`abstraction.tree` and :mod:`blueprint.kernels` stay
two-player (:func:`holdem.gamedef.require_two_players`). Here there is no abstraction: every
information set of the game has its own regrets.

Flattening (:meth:`NPlayerGame.from_gamedef`) walks :class:`holdem.State` once over the betting
alone (what is legal never depends on the cards) and enumerates every deal: each seat's hole cards,
then each round's board, as sets of cards; all deals are equally likely. The game is the betting
tree times the deals: an information set is a betting node plus what its seat sees of the deal
(its hole cards, the boards of the rounds reached); a terminal's payoffs depend on the deal only
through the order of the seats' hand ranks, so they are stored per ranking pattern
(:meth:`holdem.betting.Betting.payoffs_given_ranks` computes each once). A game too big is refused
(:class:`FlattenError`, naming the size) before anything is allocated in proportion to it:
:data:`MAX_DEALS` deals, :data:`MAX_NODES` betting nodes, and :data:`MAX_CELLS` (nodes times
deals: the NashConv's per-(node, deal) arrays, 16 bytes a cell).

A policy is a flat ``float64`` array over every information set's actions
(``game.ioff[i] + a``); :meth:`NPlayerGame.policy_from` fills one from a function of a
:class:`holdem.State` as the seat to act sees it (a MATCHSTATE: the others' cards hidden).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from blueprint.nplayer_kernels import (
    DECISION,
    TERMINAL,
    FlatTree,
    best_response_value_kernel,
    es_iterations,
    policy_values_kernel,
)
from blueprint.numerics import seed_rng_state
from holdem.cards import cards_str
from holdem.game import Game
from holdem.gamedef import GameDef, load_gamedef
from holdem.state import State

__all__ = [
    "MAX_CELLS",
    "MAX_DEALS",
    "MAX_NODES",
    "WEIGHTINGS",
    "ESSolver",
    "FlattenError",
    "NPlayerGame",
    "best_response_values",
    "nash_conv",
    "openspiel_policy",
    "TablesNashConv",
    "policy_from_tables",
    "tables_index",
    "policy_values",
    "train_es",
    "uniform_policy",
]

MAX_NODES = 200_000  # betting nodes (walked in Python: about 10 s at the cap)
MAX_DEALS = 2_000_000  # deals (enumerated in Python)
MAX_CELLS = 1 << 24  # betting nodes x deals (NashConv: two float64 arrays of this many cells)


class FlattenError(ValueError):
    """A game too big to flatten (or one this module cannot flatten), with the size that is."""


def deal_count(gd: GameDef) -> int:
    """How many deals ``gd`` has (every seat's hole cards, then each round's board, as sets)."""
    n, left = 1, gd.deck_size
    for k in [gd.num_hole_cards] * gd.num_players + [b for b in gd.num_board_cards if b]:
        n *= math.comb(left, k)
        left -= k
    return n


def _slots(gd: GameDef) -> list[tuple[int, int]]:
    """(cards, round) of each slot of a deal: the seats' hole cards (round -1), then the boards."""
    out = [(gd.num_hole_cards, -1)] * gd.num_players
    return out + [(b, r) for r, b in enumerate(gd.num_board_cards) if b]


def _enumerate_deals(gd: GameDef) -> tuple[np.ndarray, np.ndarray]:
    """Every deal: (int64[deals, slots], each slot's cards as a bit mask; int8[deals, cards], the
    card ids slot after slot, each slot's in increasing order). Vectorised: each slot extends
    every partial deal by every set of cards disjoint from it."""
    from itertools import combinations

    masks = np.zeros((1, 0), np.int64)
    cards = np.zeros((1, 0), np.int8)
    used = np.zeros(1, np.int64)
    for k, _ in _slots(gd):
        combos = np.array(list(combinations(range(gd.deck_size), k)), np.int64).reshape(-1, k)
        cm = (np.int64(1) << combos).sum(axis=1)
        rows, pick = np.nonzero((used[:, None] & cm[None, :]) == 0)
        masks = np.concatenate([masks[rows], cm[pick][:, None]], axis=1)
        cards = np.concatenate([cards[rows], combos[pick].astype(np.int8)], axis=1)
        used = used[rows] | cm[pick]
    return masks, cards


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(first row of each distinct row, each row's distinct-row id, how many) of an int64 matrix;
    ids in the lexicographic order of the rows. One sort of a combined 1-D key (``np.unique``
    with ``axis=0`` sorts rows as bytes, seconds for a million)."""
    key = np.zeros(a.shape[0], np.int64)
    radix = 1
    for j in range(a.shape[1]):
        u, inv = np.unique(a[:, j], return_inverse=True)
        if radix * len(u) >= 1 << 62:
            _, first, inv = np.unique(a, axis=0, return_index=True, return_inverse=True)
            return first, inv.reshape(-1), len(first)
        key = key * len(u) + inv.reshape(-1)
        radix *= len(u)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return first, inv.reshape(-1), len(first)


def _cards_of(mask: int) -> list[int]:
    return [c for c in range(64) if mask >> c & 1]


class _TooManyNodes(Exception):
    pass


@dataclass
class _Walk:
    kind: list[int] = field(default_factory=list)
    player: list[int] = field(default_factory=list)
    round: list[int] = field(default_factory=list)
    nact: list[int] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    actions: list[tuple[str, ...]] = field(default_factory=list)
    betting: list[str] = field(default_factory=list)
    prow: list[int] = field(default_factory=list)


def _walk_betting(game: Game, max_nodes: int) -> tuple[_Walk, list]:
    """The betting tree, every child created right after its siblings (ids above the parent's),
    with a fixed deal (the betting never depends on the cards); and one finished
    :class:`holdem.betting.Betting` per payoff class (spent, folded)."""
    gd = game.gamedef
    w = _Walk()
    classes: dict[tuple, int] = {}
    bettings: list = []

    def settle(s: State) -> State:
        while s.is_chance():
            used = set(s.board_cards).union(*s.hole_cards)
            s = s.deal([next(c for c in range(gd.deck_size) if c not in used)])
        return s

    def add(s: State, parent: int) -> int:
        n = len(w.kind)
        if n >= max_nodes:
            raise _TooManyNodes
        term = s.is_terminal()
        w.kind.append(TERMINAL if term else DECISION)
        w.player.append(-1 if term else s.current_player())
        w.round.append(s.round)
        acts = () if term else tuple(s.legal_actions())
        w.nact.append(len(acts))
        w.first.append(-1)
        w.parent.append(parent)
        w.actions.append(acts)
        w.betting.append(s.betting.betting_string())
        row = -1
        if term:
            b = s.betting
            key = (b.spent, b.folded)
            if key not in classes:
                classes[key] = len(bettings)
                bettings.append(b)
            row = classes[key]
        w.prow.append(row)
        return n

    s0 = settle(game.initial_state())
    stack = [(s0, add(s0, -1))]
    while stack:
        s, n = stack.pop()
        if w.kind[n] == TERMINAL:
            continue
        kids = [settle(s.apply(a)) for a in w.actions[n]]
        w.first[n] = len(w.kind)
        ids = [add(k, n) for k in kids]
        stack.extend(zip(kids, ids))
    return w, bettings


@dataclass(frozen=True)
class NPlayerGame:
    """A small game of any number of seats, flattened (see the module docstring).

    Attributes:
        gamedef: the game.
        tree: the kernels' arrays (:class:`blueprint.nplayer_kernels.FlatTree`).
        deals: int64[deals, slots]: each slot's cards as a bit mask (the seats' hole cards, then
            each round's board).
        slot_round: per slot, -1 for hole cards, else the board's round.
        actions, betting, round: per betting node, its legal actions (ACPC strings), its ACPC
            betting string and its round.
        infoset_node, infoset_deal: per information set, its betting node and a deal in it.
    """

    gamedef: GameDef
    tree: FlatTree
    deals: np.ndarray
    slot_round: tuple[int, ...]
    actions: tuple[tuple[str, ...], ...]
    betting: tuple[str, ...]
    round: np.ndarray
    infoset_node: np.ndarray
    infoset_deal: np.ndarray
    max_depth: int

    @classmethod
    def from_gamedef(
        cls,
        gamedef: GameDef | str,
        max_nodes: int = MAX_NODES,
        max_deals: int = MAX_DEALS,
        max_cells: int = MAX_CELLS,
    ) -> NPlayerGame:
        """Flatten ``gamedef`` (a :class:`GameDef` or a preset name / ``.game`` path).

        Raises:
            FlattenError: over :data:`MAX_DEALS` deals, :data:`MAX_NODES` betting nodes or
                :data:`MAX_CELLS` nodes x deals, naming the size; checked before allocating.
        """
        gd = load_gamedef(gamedef) if isinstance(gamedef, str) else gamedef
        n_deals = deal_count(gd)
        if n_deals > max_deals:
            raise FlattenError(
                f"game {gd.name!r} is too big to flatten: {n_deals:,} deals (at most {max_deals:,})"
            )
        game = Game(gd)
        by_cells = max_cells // n_deals + 1  # one node more than the cells allow
        try:
            w, bettings = _walk_betting(game, min(max_nodes, by_cells))
        except _TooManyNodes:
            if max_nodes <= by_cells:
                raise FlattenError(
                    f"game {gd.name!r} is too big to flatten: more than {max_nodes:,} betting nodes"
                ) from None
            raise FlattenError(
                f"game {gd.name!r} is too big to flatten: more than {by_cells - 1:,} betting nodes x"
                f" {n_deals:,} deals = more than {max_cells:,} cells"
            ) from None
        nodes = len(w.kind)
        if nodes * n_deals > max_cells:
            raise FlattenError(
                f"game {gd.name!r} is too big to flatten: {nodes:,} betting nodes x {n_deals:,} deals"
                f" = {nodes * n_deals:,} cells (at most {max_cells:,})"
            )
        deals, deal_cards = _enumerate_deals(gd)
        slots = _slots(gd)
        # hand ranks per (deal, seat) -> the ranking pattern of each deal
        pat, payoff = _payoffs(gd, deal_cards, slots, bettings)
        del deal_cards
        # information sets: (seat, round) groups keyed by what the seat sees of the deal
        kind = np.array(w.kind, np.int8)
        player = np.array(w.player, np.int8)
        rnd = np.array(w.round, np.int8)
        groups: dict[tuple[int, int], int] = {}
        kids: list[np.ndarray] = []
        reps: list[np.ndarray] = []
        for n in range(nodes):
            if kind[n] == DECISION and (int(player[n]), int(rnd[n])) not in groups:
                p, r = int(player[n]), int(rnd[n])
                cols = [p] + [j for j, (_, sr) in enumerate(slots) if 0 <= sr <= r]
                first_deal, inv, _ = _unique_rows(deals[:, cols])
                groups[(p, r)] = len(kids)
                kids.append(inv.reshape(-1).astype(np.int32))
                reps.append(first_deal.astype(np.int64))
        kid = np.stack(kids) if kids else np.zeros((0, n_deals), np.int32)
        grp = np.full(nodes, -1, np.int32)
        base = np.zeros(nodes, np.int64)
        nact = np.array(w.nact, np.int32)
        i_node: list[np.ndarray] = []
        i_deal: list[np.ndarray] = []
        total = 0
        for n in range(nodes):
            if kind[n] != DECISION:
                continue
            g = groups[(int(player[n]), int(rnd[n]))]
            grp[n], base[n] = g, total
            k = len(reps[g])
            total += k
            i_node.append(np.full(k, n, np.int64))
            i_deal.append(reps[g])
        infoset_node = np.concatenate(i_node) if i_node else np.zeros(0, np.int64)
        ioff = np.zeros(total + 1, np.int64)
        np.cumsum(nact[infoset_node], out=ioff[1:])
        tree = FlatTree(
            kind=kind,
            player=player,
            nact=nact,
            first=np.array(w.first, np.int32),
            grp=grp,
            base=base,
            prow=np.array(w.prow, np.int32),
            kid=kid,
            pat=pat,
            payoff=payoff,
            ioff=ioff,
        )
        parent = np.array(w.parent, np.int64)
        depth = np.zeros(nodes, np.int64)
        for n in range(1, nodes):
            depth[n] = depth[parent[n]] + 1
        return cls(
            gamedef=gd,
            tree=tree,
            deals=deals,
            slot_round=tuple(r for _, r in slots),
            actions=tuple(w.actions),
            betting=tuple(w.betting),
            round=rnd,
            infoset_node=infoset_node,
            infoset_deal=np.concatenate(i_deal) if i_deal else np.zeros(0, np.int64),
            max_depth=int(depth.max()),
        )

    # -- sizes --------------------------------------------------------------------------------
    @property
    def num_players(self) -> int:
        return self.gamedef.num_players

    @property
    def num_nodes(self) -> int:
        return int(self.tree.kind.shape[0])

    @property
    def num_deals(self) -> int:
        return int(self.deals.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_node.shape[0])

    @property
    def num_actions_total(self) -> int:
        return int(self.tree.ioff[-1])

    # -- what a seat sees ---------------------------------------------------------------------
    def infoset_view(self, i: int) -> tuple[int, tuple[int, ...], tuple[int, ...], str]:
        """Information set ``i`` as its seat sees it: (seat, hole card ids, board card ids in
        deal order by round, ACPC betting)."""
        n = int(self.infoset_node[i])
        d = self.deals[self.infoset_deal[i]]
        seat, r = int(self.tree.player[n]), int(self.round[n])
        board: list[int] = []
        for j, sr in enumerate(self.slot_round):
            if 0 <= sr <= r:
                board += _cards_of(int(d[j]))
        return seat, tuple(_cards_of(int(d[seat]))), tuple(board), self.betting[n]

    def matchstate(self, i: int) -> str:
        """The ACPC ``MATCHSTATE`` of information set ``i`` (its seat's view)."""
        n = int(self.infoset_node[i])
        seat, hole, _, betting = self.infoset_view(i)
        gd = self.gamedef
        d = self.deals[self.infoset_deal[i]]
        r = int(self.round[n])
        cards = "|".join(cards_str(hole, gd.num_suits) if p == seat else "" for p in range(gd.num_players))
        for rr in range(r + 1):
            if rr:
                cards += "/"
            for j, sr in enumerate(self.slot_round):
                if sr == rr:
                    cards += cards_str(_cards_of(int(d[j])), gd.num_suits)
        return f"MATCHSTATE:{seat}:0:{betting}:{cards}"

    def policy_from(self, policy: Callable[[State], dict[str, float]]) -> np.ndarray:
        """A flat policy from ``policy(state) -> {action: probability}``, asked once per
        information set with the seat's MATCHSTATE (the others' hole cards hidden)."""
        game = Game(self.gamedef)
        out = np.zeros(self.num_actions_total)
        ioff = self.tree.ioff
        for i in range(self.num_infosets):
            s = game.state(self.matchstate(i))
            acts = self.actions[int(self.infoset_node[i])]
            probs = policy(s)
            if set(probs) - set(acts):
                raise ValueError(f"policy gives illegal actions {sorted(set(probs) - set(acts))} at {s}")
            total = sum(probs.values())
            if abs(total - 1.0) > 1e-9:
                raise ValueError(f"policy's probabilities sum to {total} at {s}")
            for a, name in enumerate(acts):
                out[ioff[i] + a] = probs.get(name, 0.0)
        return out


def _payoffs(
    gd: GameDef, deal_cards: np.ndarray, slots: list[tuple[int, int]], bettings: list
) -> tuple[np.ndarray, np.ndarray]:
    """(pattern of each deal, payoff[class, pattern, seat]): a deal's pattern is the order of its
    seats' hand ranks (ties kept), all that a showdown's payoffs depend on."""
    from holdem.evaluator import rank_many

    seats = gd.num_players
    n_deals = deal_cards.shape[0]
    starts = np.cumsum([0] + [k for k, _ in slots])
    board = [c for j, (_, r) in enumerate(slots) if r >= 0 for c in range(starts[j], starts[j + 1])]
    ranks = np.zeros((n_deals, seats), np.int64)
    for p in range(seats):
        cols = list(range(starts[p], starts[p + 1])) + board
        ranks[:, p] = rank_many(deal_cards[:, cols].astype(np.int64), gd.num_suits, gd.num_ranks)
    order = (ranks[:, None, :] < ranks[:, :, None]).sum(axis=2) + 1  # 1 + seats ranked below
    first, inv, _ = _unique_rows(order)
    payoff = np.zeros((len(bettings), len(first), seats))
    for c, b in enumerate(bettings):
        for k, row in enumerate(order[first]):
            payoff[c, k] = b.payoffs_given_ranks([int(x) for x in row])
    return inv.astype(np.int32), payoff


def uniform_policy(game: NPlayerGame) -> np.ndarray:
    """Every action of every information set equally likely."""
    nact = game.tree.nact[game.infoset_node]
    return np.repeat(1.0 / nact, nact)


def _checked(game: NPlayerGame, policy: np.ndarray) -> np.ndarray:
    pol = np.ascontiguousarray(policy, dtype=np.float64)
    if pol.shape != (game.num_actions_total,):
        raise ValueError(f"policy has shape {pol.shape}, expected ({game.num_actions_total},)")
    return pol


def policy_values(game: NPlayerGame, policy: np.ndarray) -> np.ndarray:
    """float64[seats]: each seat's expected payoff (chips) when every seat plays ``policy``."""
    return policy_values_kernel(game.tree, _checked(game, policy), game.num_players)


def best_response_values(game: NPlayerGame, policy: np.ndarray) -> np.ndarray:
    """float64[seats]: each seat's value when it alone best-responds to ``policy``."""
    pol = _checked(game, policy)
    out = np.zeros(game.num_players)
    for p in range(game.num_players):
        best = np.full(game.num_infosets, -1, np.int32)
        out[p] = best_response_value_kernel(game.tree, pol, p, best)
    return out


def nash_conv(game: NPlayerGame, policy: np.ndarray) -> float:
    """Sum over seats of what a best response gains over ``policy`` (chips); exact."""
    return float((best_response_values(game, policy) - policy_values(game, policy)).sum())


def tables_index(game: NPlayerGame, tree, cards, row_offset: np.ndarray) -> np.ndarray:
    """int64 ``[game.num_actions_total]``: for each action of each information set of ``game``, its
    entry in a production trainer's tables (:class:`blueprint.trainer.Trainer`: its ``tree``, card
    abstraction ``cards`` and ``row_offset``): the row of the set's betting node and of the bucket
    its seat's cards fall in (:func:`abstraction.cards.card_buckets_n` for that one seat)."""
    from abstraction.cards import card_buckets_n, scratch_size

    gd = game.gamedef
    node_of = {tree.betting_string(int(n)): int(n) for n in tree.decision_nodes()}
    arrays = cards.kernel_arrays(gd)
    out1 = np.zeros((1, gd.num_rounds), np.int64)
    strength = np.zeros(1, np.int64)
    work = np.zeros(scratch_size(gd.num_hole_cards, gd.total_board_cards), np.int64)
    index = np.zeros(game.num_actions_total, np.int64)
    ioff = game.tree.ioff
    memo: dict[tuple, int] = {}
    for i in range(game.num_infosets):
        seat, hole, board, betting = game.infoset_view(i)
        n = node_of.get(betting)
        if n is None:
            raise ValueError(f"betting {betting!r} is not in the trainer's tree (an abstracted game?)")
        r = int(tree.round[n])
        key = (hole, board, r)
        b = memo.get(key)
        if b is None:
            rest = [c for c in range(gd.deck_size) if c not in hole and c not in board]
            deal = np.array(list(hole) + list(board) + rest[: gd.total_board_cards - len(board)], np.int64)
            card_buckets_n(arrays, deal, out1, work, strength)
            b = memo[key] = int(out1[0, r])
        base = int(row_offset[n]) + b * int(tree.num_actions[n])
        labels = tree.action_labels(n)
        for a, name in enumerate(game.actions[int(game.infoset_node[i])]):
            index[ioff[i] + a] = base + labels.index(name)
    return index


def policy_from_tables(
    game: NPlayerGame, tree, cards, row_offset: np.ndarray, strategy: np.ndarray
) -> np.ndarray:
    """A flat policy of ``game`` from a production trainer's ``strategy`` in its table layout (e.g.
    ``average_strategy()``; the other arguments as :func:`tables_index`'s)."""
    return np.asarray(strategy, np.float64)[tables_index(game, tree, cards, row_offset)]


class TablesNashConv:
    """Exact NashConv of a production trainer's strategies (the N-seat counterpart of
    :class:`blueprint.best_response.BestResponse`): the game flattened (``flat``, or from
    ``tree.game``: :class:`FlattenError` when too big) and the map from its information sets to the
    trainer's table entries (:func:`tables_index`), both once."""

    def __init__(self, tree, cards, row_offset: np.ndarray, flat: NPlayerGame | None = None):
        self.game = flat if flat is not None else NPlayerGame.from_gamedef(tree.game)
        self.index = tables_index(self.game, tree, cards, row_offset)

    def exploitability(self, strategy: np.ndarray) -> tuple[float, list[float]]:
        """(NashConv, each seat's best-response gain), in chips, of ``strategy`` (table layout)."""
        pol = np.asarray(strategy, np.float64)[self.index]
        gains = best_response_values(self.game, pol) - policy_values(self.game, pol)
        return float(gains.sum()), [float(g) for g in gains]


WEIGHTINGS = ("linear", "uniform", "dcfr")


class ESSolver:
    """External-sampling MCCFR (Lanctot et al. 2009) on a flattened game: per iteration, each
    seat in turn traverses one uniformly drawn deal, exploring all its actions; the others sample
    theirs from regret matching and add their strategy to their strategy sums. Seeded: the same
    seed (and the same calls to :meth:`run`, however split) gives the same tables, bit for bit.

    ``weighting``: ``"linear"`` (default) weights iteration ``t``'s regrets and strategy by ``t``
    (linear CFR); ``"uniform"`` weights every iteration alike; ``"dcfr"`` discounts the tables at
    every ``discount_every`` iterations (boundary ``k``) by DCFR's factors
    (:func:`blueprint.algo.dcfr_factors` with ``dcfr`` = (alpha, beta, gamma)), as the
    production trainer does."""

    def __init__(
        self,
        game: NPlayerGame,
        seed: int = 0,
        weighting: str = "linear",
        discount_every: int = 1_000,
        dcfr: tuple[float, float, float] = (1.5, 0.0, 2.0),
    ) -> None:
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
        if discount_every < 1:
            raise ValueError(f"discount_every must be >= 1, got {discount_every}")
        self.game = game
        self.weighting = weighting
        self.discount_every = discount_every
        self.dcfr = dcfr
        self.regret = np.zeros(game.num_actions_total)
        self.strat = np.zeros(game.num_actions_total)
        self.rng = seed_rng_state(np.random.SeedSequence(seed))
        self.iterations = 0

    def _kernel(self, iterations: int) -> None:
        g = self.game
        es_iterations(
            g.tree,
            self.regret,
            self.strat,
            self.rng,
            self.iterations,
            iterations,
            self.weighting == "linear",
            g.num_players,
            g.max_depth,
            max(int(g.tree.nact.max()) if g.num_nodes else 1, 1),
        )
        self.iterations += iterations

    def run(self, iterations: int) -> ESSolver:
        if iterations < 0:
            raise ValueError(f"iterations must be >= 0, got {iterations}")
        if self.weighting != "dcfr":
            self._kernel(iterations)
            return self
        from blueprint.algo import dcfr_factors

        end = self.iterations + iterations
        while self.iterations < end:
            k = self.iterations // self.discount_every + 1  # the next boundary
            self._kernel(min(end, k * self.discount_every) - self.iterations)
            if self.iterations == k * self.discount_every:
                pos, neg, avg = dcfr_factors(k, *self.dcfr)
                self.regret *= np.where(self.regret > 0.0, pos, neg)
                self.strat *= avg
        return self

    def average_policy(self) -> np.ndarray:
        """The average strategy (uniform where a set's strategy sum is zero)."""
        return _normalise(self.game, self.strat)

    def current_policy(self) -> np.ndarray:
        """Regret matching on the current regrets."""
        return _normalise(self.game, np.maximum(self.regret, 0.0))


def _normalise(game: NPlayerGame, weights: np.ndarray) -> np.ndarray:
    ioff = game.tree.ioff
    nact = np.diff(ioff)
    sums = np.add.reduceat(weights, ioff[:-1]) if len(nact) else np.zeros(0)
    per = np.repeat(sums, nact)
    uni = np.repeat(1.0 / np.maximum(nact, 1), nact)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(per > 0.0, weights / np.where(per > 0.0, per, 1.0), uni)


def train_es(game: NPlayerGame, iterations: int, seed: int = 0, weighting: str = "linear") -> ESSolver:
    """Run ``iterations`` of :class:`ESSolver` from scratch; its ``average_policy()`` is the
    result."""
    return ESSolver(game, seed=seed, weighting=weighting).run(iterations)


def _openspiel_action(short_name: str, prefix: str, a: str) -> int:
    """OpenSpiel's action id of ACPC action ``a`` after ``prefix`` (the round's betting so far)."""
    if short_name == "leduc_poker":  # 0 fold, 1 call/check, 2 raise
        return "fcr".index(a)
    # kuhn_poker: 0 pass (check or fold), 1 bet (bet or call)
    return 1 if a == "r" or (a == "c" and "r" in prefix) else 0


def openspiel_policy(os_game, game: NPlayerGame, policy: np.ndarray) -> dict[str, list[tuple[int, float]]]:
    """``policy`` for OpenSpiel's ``kuhn_poker`` or ``leduc_poker`` (any number of players), as
    ``pyspiel.nash_conv`` and ``pyspiel.TabularPolicy`` take it: {information state string:
    [(action id, probability)]}.

    Matched by what the seat sees, not by position: for each of our information sets, an
    OpenSpiel state is dealt the seat's card (the other seats any other cards) and the public
    card, plays the betting, and is asked for the seat's information state string. Card ids
    agree (``rank * suits + suit``; Kuhn has one suit). Raises ``ValueError`` where the seat to
    act or the legal actions differ, or two of our sets land on one string."""
    kind = os_game.get_type().short_name
    if kind not in ("kuhn_poker", "leduc_poker"):
        raise ValueError(f"openspiel_policy knows kuhn_poker and leduc_poker, not {kind}")
    out: dict[str, list[tuple[int, float]]] = {}
    for i in range(game.num_infosets):
        seat, hole, board, betting = game.infoset_view(i)
        rest = [c for c in range(game.gamedef.deck_size) if c not in hole and c not in board]
        st = os_game.new_initial_state()
        for p in range(game.num_players):
            st.apply_action(hole[0] if p == seat else rest.pop(0))
        rounds = betting.split("/")
        for r, acts in enumerate(rounds):
            if r:
                st.apply_action(board[r - 1])
            for k, a in enumerate(acts):
                st.apply_action(_openspiel_action(kind, acts[:k], a))
        names = game.actions[int(game.infoset_node[i])]
        ids = [_openspiel_action(kind, rounds[-1], a) for a in names]
        if st.current_player() != seat or sorted(ids) != sorted(st.legal_actions()):
            raise ValueError(f"OpenSpiel's {kind} disagrees at {game.matchstate(i)}: {st}")
        key = st.information_state_string(seat)
        if key in out:
            raise ValueError(f"two information sets are OpenSpiel's {key!r}")
        off = int(game.tree.ioff[i])
        out[key] = [(ids[a], float(policy[off + a])) for a in range(len(names))]
    return out
