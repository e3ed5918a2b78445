"""A subgame's public tree, and the per-board card data its solver needs.

A subgame starts at a public state (a :class:`~holdem.betting.Betting` and the board dealt so far)
and runs to the end of the hand. Its tree is the project's one tree type,
:class:`~abstraction.tree.BettingTree`, built by :func:`build_subgame_tree` with the same
construction as the blueprint's (:func:`abstraction.tree.build_tree`) from that root, with chance
nodes that deal the next round's board cards (or the rest of the board after an all-in) and the
subgame's (finer) bet abstraction. Its nodes are *public* states; ``board``/``boards`` say which
cards are public at each. Private hands are not in the tree: the solver carries, along the path it
walks, a vector per seat over the hands that seat may hold on the node's board (:class:`HandLists`,
out of all ``H`` two-card or one-card hands, :func:`all_hands`).

This module owns that card data. Per board of the tree (:class:`BoardHands`, ``B`` boards; a hand
"is blocked" when it shares a card with the board):

===================  ============  =============================================================
``hands``            int32 [H, k]  every private hand (:func:`all_hands`)
``valid``            bool  [B, H]  the hand is not blocked
``order``            int32 [B, H]  unblocked hands by increasing showdown strength (complete
                                   boards), the first ``num_valid[b]`` entries used
``num_valid``        int32 [B]     unblocked hands per board
``strength``         int64 [B, H]  showdown rank of hand + board (complete boards; else 0)
``sorted_strength``  int64 [B, H]  the strength at each position of ``order``
===================  ============  =============================================================

:func:`board_hands` and :func:`hand_lists` (default support) compute them once per tree and keep
them in the tree's ``derived`` store.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional, Sequence

import numpy as np

from abstraction.bets import BetAbstraction, BetAbstractionError
from abstraction.tree import KIND_DECISION, ActionFilter, BettingTree, build_tree
from holdem.betting import CALL, RAISE, Betting
from holdem.evaluator import rank_many
from holdem.gamedef import GameDef
from subgame.kernels import HandArrays

MAX_NODES = 2_000_000


class SubgameError(ValueError):
    """A subgame that cannot be built or solved as asked; the message names the problem."""


def all_hands(game: GameDef) -> np.ndarray:
    """Every private hand of ``game`` as rows of increasing card ids, in lexicographic order."""
    return np.array(
        list(itertools.combinations(range(game.deck_size), game.num_hole_cards)), np.int32
    ).reshape(-1, game.num_hole_cards)


def blocked_by(hands: np.ndarray, cards) -> np.ndarray:
    """bool per row of ``hands`` (card ids): whether it holds any of ``cards``."""
    cs = np.asarray(list(cards), np.int64)
    if cs.size == 0:
        return np.zeros(len(hands), np.bool_)
    return np.isin(hands, cs).any(axis=1)


def hand_index(game: GameDef) -> dict[tuple[int, ...], int]:
    return {tuple(int(c) for c in h): i for i, h in enumerate(all_hands(game))}


@dataclasses.dataclass
class HandLists:
    """Per board and seat, the hands the solver carries (see :mod:`subgame.kernels`): unblocked by
    the board and inside the seat's support. Arrays ``[B, 2, H]`` (the first ``nlive[b, s]`` entries
    used; ``int16``, small for the cache) and ``[B, 2, H, k]`` (``uint8``) for cards:

    ``nlive``  [B, 2]   list sizes
    ``idx``             list entry -> hand index (into :attr:`BoardHands.hands`)
    ``pos``             hand index -> list entry, or -1 (indexed by hand, all ``H`` used)
    ``cards``           cards of each list entry
    ``same``            entry of the same hand in the other seat's list, or -1
    ``up``, ``down``    complete boards, for traverser seat ``p`` (second index): the showdown
                        sweeps' events, both seats' lists merged by increasing (``up``) or decreasing
                        (``down``) strength, a traverser hand before the opponent hands it ties with;
                        ``e >= 0`` adds opponent entry ``e``, ``e < 0`` reads traverser entry
                        ``-e - 1`` (``nlive[b, 0] + nlive[b, 1]`` events, ``[B, 2, 2H]``)
    ``up_cards``, ``down_cards``  the cards of each event's hand (``[B, 2, 2H, k]``)
    ``coff``   [N]      first entry of each decision node's rows in the flat strategy tables
    ``size``            the tables' length
    """

    support: np.ndarray
    nlive: np.ndarray
    idx: np.ndarray
    pos: np.ndarray
    cards: np.ndarray
    same: np.ndarray
    up: np.ndarray
    up_cards: np.ndarray
    down: np.ndarray
    down_cards: np.ndarray
    coff: np.ndarray
    size: int

    def kernel_arrays(self):
        """The lists as one kernel argument (:class:`subgame.kernels.HandArrays`)."""
        return HandArrays(
            self.coff,
            self.nlive,
            self.idx,
            self.pos,
            self.cards,
            self.same,
            self.up,
            self.up_cards,
            self.down,
            self.down_cards,
        )

    def memory_bytes(self) -> int:
        return sum(
            a.nbytes
            for a in (
                self.coff,
                self.nlive,
                self.idx,
                self.pos,
                self.cards,
                self.same,
                self.up,
                self.up_cards,
                self.down,
                self.down_cards,
            )
        )


def hand_lists(tree: BettingTree, support: Optional[np.ndarray] = None) -> HandLists:
    """The compact hand lists of ``tree`` for ``support`` (bool ``[2, H]``; default every hand not
    blocked by the root board, for both seats). Kept with the tree for the default support."""
    if support is None and "hand_lists" in tree.derived:
        return tree.derived["hand_lists"]
    bh = board_hands(tree)
    H = bh.num_hands
    valid = bh.valid
    sup = np.broadcast_to(valid[tree.board[0]], (2, H)) if support is None else np.asarray(support, np.bool_)
    if sup.shape != (2, H):
        raise SubgameError(f"support must be 2 x {H} booleans, got shape {sup.shape}")
    if H >= 2**15 or tree.game.deck_size > 255:
        raise SubgameError(f"{H} hands or {tree.game.deck_size} cards: too many for the compact hand lists")
    B = len(tree.boards)
    live = valid[:, None, :] & sup[None, :, :]  # [B, 2, H]
    nlive = live.sum(2).astype(np.int32)
    idx = np.argsort(~live, axis=2, kind="stable").astype(np.int16)  # live hands first, in order
    pos = np.where(live, np.cumsum(live, axis=2) - 1, -1).astype(np.int16)
    k = bh.hands.shape[1]
    cards = bh.hands[idx].astype(np.uint8)  # [B, 2, H, k]
    same = np.take_along_axis(pos[:, ::-1, :], idx.astype(np.int64), axis=2).astype(np.int16)
    up = np.zeros((B, 2, 2 * H), np.int16)
    down = np.zeros((B, 2, 2 * H), np.int16)
    up_cards = np.zeros((B, 2, 2 * H, k), np.uint8)
    down_cards = np.zeros((B, 2, 2 * H, k), np.uint8)
    total = tree.game.total_board_cards
    for b, bc in enumerate(tree.boards):
        if len(bc) != total:
            continue
        srt = bh.order[b, : bh.num_valid[b]]
        sel = [srt[sup[s, srt]] for s in (0, 1)]
        for p in (0, 1):
            hs = np.concatenate([sel[p], sel[1 - p]])
            code = np.concatenate([-pos[b, p, sel[p]].astype(np.int32) - 1, pos[b, 1 - p, sel[1 - p]]])
            add = np.concatenate([np.zeros(len(sel[p]), np.int8), np.ones(len(sel[1 - p]), np.int8)])
            st = bh.strength[b, hs]
            for arr, arr_c, key in ((up, up_cards, st), (down, down_cards, -st)):
                o = np.lexsort((add, key))  # by strength, a traverser read before the additions it ties with
                arr[b, p, : len(o)] = code[o]
                arr_c[b, p, : len(o)] = bh.hands[hs[o]]
    coff = np.full(tree.num_nodes, -1, np.int64)
    dec = np.nonzero(tree.kind == KIND_DECISION)[0]
    sizes = tree.num_actions[dec].astype(np.int64) * nlive[tree.board[dec], tree.player[dec]]
    coff[dec] = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(dec) else []
    out = HandLists(
        support=np.array(sup),
        nlive=nlive,
        idx=idx,
        pos=pos,
        cards=cards,
        same=same,
        up=up,
        up_cards=up_cards,
        down=down,
        down_cards=down_cards,
        coff=coff,
        size=int(sizes.sum()),
    )
    if support is None:
        tree.derived["hand_lists"] = out
    return out


@dataclasses.dataclass
class BoardHands:
    """Every private hand's standing on each board of a tree (see the module docstring)."""

    hands: np.ndarray
    valid: np.ndarray
    order: np.ndarray
    num_valid: np.ndarray
    strength: np.ndarray
    sorted_strength: np.ndarray

    @property
    def num_hands(self) -> int:
        return len(self.hands)

    def memory_bytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in dataclasses.fields(self))


def board_hands(tree: BettingTree) -> BoardHands:
    """The card data of ``tree``'s boards, computed once and kept with the tree."""
    bh = tree.derived.get("board_hands")
    if bh is None:
        bh = tree.derived["board_hands"] = _board_hands(tree.game, tree.boards)
    return bh


def _board_hands(game: GameDef, boards: list[tuple[int, ...]]) -> BoardHands:
    hands = all_hands(game)
    H = len(hands)
    B = len(boards)
    valid = np.zeros((B, H), np.bool_)
    order = np.zeros((B, H), np.int32)
    num_valid = np.zeros(B, np.int32)
    strength = np.zeros((B, H), np.int64)
    sorted_strength = np.zeros((B, H), np.int64)
    total = game.total_board_cards
    for b, cards in enumerate(boards):
        ok = ~blocked_by(hands, cards)
        valid[b] = ok
        idx = np.nonzero(ok)[0]
        if len(cards) == total:
            mat = np.empty((len(idx), hands.shape[1] + len(cards)), np.int64)
            mat[:, : hands.shape[1]] = hands[idx]
            mat[:, hands.shape[1] :] = np.array(cards, np.int64)
            st = rank_many(mat, game.num_suits, game.num_ranks)
            strength[b, idx] = st
            idx = idx[np.argsort(st, kind="stable")]
        order[b, : len(idx)] = idx
        num_valid[b] = len(idx)
        sorted_strength[b, : len(idx)] = strength[b, idx]
    return BoardHands(hands, valid, order, num_valid, strength, sorted_strength)


def build_subgame_tree(
    game: GameDef,
    root: Betting,
    board: Sequence[int],
    bets: Optional[BetAbstraction],
    max_nodes: int = MAX_NODES,
    action_filter: Optional[ActionFilter] = None,
) -> BettingTree:
    """The public tree from ``root`` (with ``board`` dealt) to the end of the hand under ``bets``
    (ignored in limit games), chance nodes included, with its :func:`board_hands`.

    ``action_filter(betting, moves) -> moves`` may restrict or extend a decision's moves (each
    ``(kind, raise_to)``); nested solving uses it to put an off-tree bet into the tree.
    """
    board = tuple(int(c) for c in board)
    if root.finished:
        raise SubgameError("the subgame's root is a finished hand: nothing to solve")
    need = game.board_cards_through(root.round)
    if len(board) != need:
        raise SubgameError(f"round {root.round + 1} needs {need} board cards, got {len(board)}")
    if len(set(board)) != len(board) or any(not 0 <= c < game.deck_size for c in board):
        raise SubgameError(f"board {board} has repeated or out-of-range cards")
    if not game.is_limit and bets is None:
        raise SubgameError("a no-limit subgame needs a bet abstraction")
    try:
        tree = build_tree(
            game,
            bets,
            root=root,
            board=board,
            deal_boards=True,
            action_filter=action_filter,
            max_nodes=max_nodes,
        )
    except BetAbstractionError as exc:
        raise SubgameError(str(exc)) from None
    board_hands(tree)
    return tree


def betting_at(game: GameDef, round_: int, pot: int) -> Betting:
    """A betting state at the start of ``round_`` with ``pot / 2`` committed by each seat (explicit
    subgames such as the Libratus endgames): a preflop raise to ``pot / 2`` and a call, then checks."""
    if pot % 2 or pot // 2 < max(game.blind):
        raise SubgameError(f"pot {pot} must be even and at least two big blinds ({2 * max(game.blind)})")
    half = pot // 2
    if half > min(game.stack):
        raise SubgameError(f"pot {pot} exceeds the stacks {game.stack}")
    b = Betting.initial(game)
    if half > max(game.blind):
        b = b.apply(RAISE, half if not game.is_limit else 0)
        if b.spent[b.current_player() ^ 1] != half:
            raise SubgameError(f"pot {pot} is not reachable in {game.name}")
    b = b.apply(CALL)
    while b.round < round_ and not b.finished:
        b = b.apply(CALL)
    if b.round != round_ or b.finished or b.spent != (half, half):
        raise SubgameError(f"cannot start round {round_ + 1} with pot {pot} in this game")
    return b
