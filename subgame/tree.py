"""The public tree of a subgame, and the per-board card data its solver needs, as flat arrays.

A subgame starts at a public state (a :class:`~holdem.betting.Betting` and the board dealt so far)
and runs to the end of the hand. Its nodes are *public* states: decisions, folds, showdowns and
chance nodes that deal the next round's board cards (or the rest of the board after an all-in).
Private hands are not in the tree: the solver carries, along the path it walks, a vector per seat over
the hands that seat may hold on the node's board (:class:`HandLists`, out of all ``H`` two-card or
one-card hands).

Nodes are stored in depth-first preorder (a parent's index is below its children's, each subtree
contiguous). Arrays (``N`` nodes, ``E`` edges):

================  ============  ===============================================================
``kind``          int8  [N]     0 decision, 1 fold, 2 showdown, 3 chance
``player``        int8  [N]     seat to act (decision) or seat that folded (fold); else -1
``spent``         int32 [N, 2]  each seat's total commitment for the hand
``child_start``   int32 [N]     first edge of the node
``num_children``  int32 [N]     its edges (actions, or board deals at a chance node)
``board``         int32 [N]     index of the node's board in :attr:`PublicTree.boards`
``row``           int64 [N]     first row of a decision node in the ``(rows, H)`` strategy arrays
``deal_count``    int64 [N]     chance node: deals compatible with any two hands (the divisor)
``edge_child``    int32 [E]     node reached by the edge
``edge_kind``     int8  [E]     0 fold, 1 call/check, 2 raise, 3 deal
``edge_to``       int32 [E]     raise-to of a raise, else 0
================  ============  ===============================================================

Per board (``B`` boards; a hand "is blocked" when it shares a card with the board):

================  ============  ===============================================================
``valid``         bool  [B, H]  the hand is not blocked
``order``         int32 [B, H]  unblocked hands by increasing showdown strength (complete boards),
                                the first ``num_valid[b]`` entries used
``strength``      int64 [B, H]  showdown rank of hand + board (complete boards; else 0)
``sorted_strength`` int64 [B, H]  the strength at each position of ``order``
================  ============  ===============================================================
"""

from __future__ import annotations

import dataclasses
import itertools
from math import comb
from typing import Optional, Sequence

import numpy as np

from abstraction.bets import BetAbstraction
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.evaluator import rank_hand_py
from holdem.gamedef import GameDef

KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN, KIND_CHANCE = 0, 1, 2, 3
DEAL = 3
MAX_NODES = 2_000_000


class SubgameError(ValueError):
    """A subgame that cannot be built or solved as asked; the message names the problem."""


def all_hands(game: GameDef) -> np.ndarray:
    """Every private hand of ``game`` as rows of increasing card ids, in lexicographic order."""
    return np.array(list(itertools.combinations(range(game.deck_size), game.num_hole_cards)), np.int32).reshape(
        -1, game.num_hole_cards
    )


def hand_index(game: GameDef) -> dict[tuple[int, ...], int]:
    return {tuple(int(c) for c in h): i for i, h in enumerate(all_hands(game))}


@dataclasses.dataclass
class PublicTree:
    game: GameDef
    root_betting: Betting
    root_board: tuple[int, ...]
    hands: np.ndarray
    kind: np.ndarray
    player: np.ndarray
    spent: np.ndarray
    child_start: np.ndarray
    num_children: np.ndarray
    board: np.ndarray
    row: np.ndarray
    deal_count: np.ndarray
    edge_child: np.ndarray
    edge_kind: np.ndarray
    edge_to: np.ndarray
    boards: list[tuple[int, ...]]
    valid: np.ndarray
    order: np.ndarray
    num_valid: np.ndarray
    strength: np.ndarray
    sorted_strength: np.ndarray  # int64 [B, H]: strength of the hand at each position of ``order``
    bettings: list[Optional[Betting]]  # the betting state of each node (None at chance nodes)
    num_rows: int
    _default_lists: Optional["HandLists"] = dataclasses.field(default=None, repr=False)

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    @property
    def num_hands(self) -> int:
        return len(self.hands)

    def children(self, n: int) -> np.ndarray:
        s = int(self.child_start[n])
        return self.edge_child[s : s + int(self.num_children[n])]

    def action_labels(self, n: int) -> list[str]:
        """ACPC action strings of a decision node's edges (``f``, ``c``, ``r<to>``; ``r`` in limit games)."""
        s = int(self.child_start[n])
        out = []
        for e in range(s, s + int(self.num_children[n])):
            k = int(self.edge_kind[e])
            out.append("fc"[k] if k != RAISE else ("r" if self.game.is_limit else f"r{int(self.edge_to[e])}"))
        return out

    def kernel_args(self) -> tuple:
        """The arrays the numba kernels take, in their order."""
        return (self.kind, self.player, self.spent, self.child_start, self.num_children, self.board, self.row,
                self.deal_count, self.edge_child, self.hands, self.valid, self.order, self.num_valid,
                self.sorted_strength)

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.kernel_args()) + self.edge_kind.nbytes + self.edge_to.nbytes


@dataclasses.dataclass
class HandLists:
    """Per board and seat, the hands the solver carries (see :mod:`subgame.kernels`): unblocked by
    the board and inside the seat's support. Arrays ``[B, 2, H]`` (the first ``nlive[b, s]`` entries
    used; ``int16``, small for the cache) and ``[B, 2, H, k]`` (``uint8``) for cards:

    ``nlive``  [B, 2]   list sizes
    ``idx``             list entry -> hand index (into :attr:`PublicTree.hands`)
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

    def kernel_args(self) -> tuple:
        return (self.coff, self.nlive, self.idx, self.pos, self.cards, self.same, self.up, self.up_cards, self.down,
                self.down_cards)

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.kernel_args())


def hand_lists(tree: "PublicTree", support: Optional[np.ndarray] = None) -> HandLists:
    """The compact hand lists of ``tree`` for ``support`` (bool ``[2, H]``; default every hand not
    blocked by the root board, for both seats). Cached on the tree for the default support."""
    if support is None and tree._default_lists is not None:
        return tree._default_lists
    H = tree.num_hands
    valid = tree.valid
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
    k = tree.hands.shape[1]
    cards = tree.hands[idx].astype(np.uint8)  # [B, 2, H, k]
    same = np.take_along_axis(pos[:, ::-1, :], idx.astype(np.int64), axis=2).astype(np.int16)
    up = np.zeros((B, 2, 2 * H), np.int16)
    down = np.zeros((B, 2, 2 * H), np.int16)
    up_cards = np.zeros((B, 2, 2 * H, k), np.uint8)
    down_cards = np.zeros((B, 2, 2 * H, k), np.uint8)
    total = tree.game.total_board_cards
    for b, bc in enumerate(tree.boards):
        if len(bc) != total:
            continue
        srt = tree.order[b, : tree.num_valid[b]]
        sel = [srt[sup[s, srt]] for s in (0, 1)]
        for p in (0, 1):
            hs = np.concatenate([sel[p], sel[1 - p]])
            code = np.concatenate([-pos[b, p, sel[p]].astype(np.int32) - 1, pos[b, 1 - p, sel[1 - p]]])
            add = np.concatenate([np.zeros(len(sel[p]), np.int8), np.ones(len(sel[1 - p]), np.int8)])
            st = tree.strength[b, hs]
            for arr, arr_c, key in ((up, up_cards, st), (down, down_cards, -st)):
                o = np.lexsort((add, key))  # by strength, a traverser read before the additions it ties with
                arr[b, p, : len(o)] = code[o]
                arr_c[b, p, : len(o)] = tree.hands[hs[o]]
    coff = np.full(tree.num_nodes, -1, np.int64)
    dec = np.nonzero(tree.kind == KIND_DECISION)[0]
    sizes = tree.num_children[dec].astype(np.int64) * nlive[tree.board[dec], tree.player[dec]]
    coff[dec] = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(dec) else []
    out = HandLists(support=np.array(sup), nlive=nlive, idx=idx, pos=pos, cards=cards, same=same, up=up,
                    up_cards=up_cards, down=down, down_cards=down_cards, coff=coff, size=int(sizes.sum()))
    if support is None:
        tree._default_lists = out
    return out


def _board_data(game: GameDef, hands: np.ndarray, boards: list[tuple[int, ...]]):
    H = len(hands)
    B = len(boards)
    valid = np.zeros((B, H), np.bool_)
    order = np.zeros((B, H), np.int32)
    num_valid = np.zeros(B, np.int32)
    strength = np.zeros((B, H), np.int64)
    sorted_strength = np.zeros((B, H), np.int64)
    total = game.total_board_cards
    from holdem.evaluator import rank_many

    for b, cards in enumerate(boards):
        cs = set(cards)
        ok = np.array([not (set(h.tolist()) & cs) for h in hands], np.bool_)
        valid[b] = ok
        idx = np.nonzero(ok)[0]
        if len(cards) == total:
            mat = np.empty((len(idx), hands.shape[1] + len(cards)), np.int64)
            mat[:, : hands.shape[1]] = hands[idx]
            mat[:, hands.shape[1]:] = np.array(cards, np.int64)
            st = rank_many(mat, game.num_suits, game.num_ranks)
            strength[b, idx] = st
            idx = idx[np.argsort(st, kind="stable")]
        order[b, : len(idx)] = idx
        num_valid[b] = len(idx)
        sorted_strength[b, : len(idx)] = strength[b, idx]
    return valid, order, num_valid, strength, sorted_strength


def build_public_tree(game: GameDef, root: Betting, board: Sequence[int], bets: Optional[BetAbstraction],
                      max_nodes: int = MAX_NODES, action_filter=None) -> PublicTree:
    """The public tree from ``root`` (with ``board`` dealt) to the end of the hand under ``bets``.

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
    hands = all_hands(game)
    kind: list[int] = []
    player: list[int] = []
    spent: list[tuple[int, int]] = []
    cstart: list[int] = []
    nchild: list[int] = []
    bid: list[int] = []
    dcount: list[int] = []
    e_child: list[int] = []
    e_kind: list[int] = []
    e_to: list[int] = []
    bettings: list[Optional[Betting]] = []
    boards: dict[tuple[int, ...], int] = {}
    deck = game.deck_size
    hole = game.num_hole_cards

    def board_id(cards: tuple[int, ...]) -> int:
        key = tuple(sorted(cards))
        if key not in boards:
            boards[key] = len(boards)
        return boards[key]

    def new_node(k: int, pl: int, sp, cards, b: Optional[Betting]) -> int:
        n = len(kind)
        if n >= max_nodes:
            raise SubgameError(f"subgame tree exceeds {max_nodes} nodes: use a coarser bet abstraction")
        kind.append(k)
        player.append(pl)
        spent.append(tuple(sp))
        cstart.append(0)
        nchild.append(0)
        bid.append(board_id(cards))
        dcount.append(0)
        bettings.append(b)
        return n

    def node_for(b: Betting, cards: tuple[int, ...]) -> tuple[int, list]:
        """Create the node for betting ``b`` on ``cards`` (inserting chance nodes for missing board cards)."""
        if b.finished:
            need = game.total_board_cards if b.showdown() else len(cards)
        else:
            need = game.board_cards_through(b.round)
        if len(cards) < need:
            n = new_node(KIND_CHANCE, -1, b.spent, cards, None)
            # deal the next round's cards (one round at a time)
            r = next(r for r in range(game.num_rounds) if game.board_cards_through(r) > len(cards))
            k = game.board_cards_through(r) - len(cards)
            rest = [c for c in range(deck) if c not in cards]
            dcount[n] = comb(deck - len(cards) - 2 * hole, k)
            return n, [("deal", b, cards + d) for d in itertools.combinations(rest, k)]
        if b.finished:
            if any(b.folded):
                return new_node(KIND_FOLD, 0 if b.folded[0] else 1, b.spent, cards, b), []
            return new_node(KIND_SHOWDOWN, -1, b.spent, cards, b), []
        n = new_node(KIND_DECISION, b.current_player(), b.spent, cards, b)
        moves: list[tuple[int, int]] = []
        if b.can_fold():
            moves.append((FOLD, 0))
        moves.append((CALL, 0))
        if game.is_limit:
            if b.raise_range() is not None:
                moves.append((RAISE, 0))
        else:
            moves += [(RAISE, to) for to, _ in bets.raise_targets(b)]
        if action_filter is not None:
            moves = action_filter(b, moves)
        return n, [("act", b, cards, kd, to) for kd, to in moves]

    root_node, pending = node_for(root, board)
    stack = [(root_node, pending)]
    while stack:
        n, moves = stack.pop()
        if not moves:
            continue
        cstart[n] = len(e_child)
        nchild[n] = len(moves)
        kids = []
        slots = list(range(len(e_child), len(e_child) + len(moves)))
        e_child.extend([0] * len(moves))
        e_kind.extend([0] * len(moves))
        e_to.extend([0] * len(moves))
        for slot, m in zip(slots, moves):
            if m[0] == "deal":
                _, b, cards = m
                c, sub = node_for(b, cards)
                e_kind[slot], e_to[slot] = DEAL, 0
            else:
                _, b, cards, kd, to = m
                nb = b.apply(kd, to)
                c, sub = node_for(nb, cards)
                e_kind[slot], e_to[slot] = kd, (nb.max_spent if kd == RAISE else 0)
            e_child[slot] = c
            kids.append((c, sub))
        stack.extend(reversed(kids))
    # preorder check: children are created after their parent, and each subtree is contiguous
    kind_a = np.array(kind, np.int8)
    nchild_a = np.array(nchild, np.int32)
    row = np.full(len(kind), -1, np.int64)
    dec = np.nonzero(kind_a == KIND_DECISION)[0]
    counts = nchild_a[dec].astype(np.int64)
    row[dec] = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(dec) else []
    board_list = [None] * len(boards)
    for k, v in boards.items():
        board_list[v] = k
    valid, order, num_valid, strength, sorted_strength = _board_data(game, hands, board_list)
    return PublicTree(
        game=game, root_betting=root, root_board=board, hands=hands, kind=kind_a,
        player=np.array(player, np.int8), spent=np.array(spent, np.int32).reshape(-1, 2),
        child_start=np.array(cstart, np.int32), num_children=nchild_a, board=np.array(bid, np.int32),
        row=row, deal_count=np.array(dcount, np.int64), edge_child=np.array(e_child, np.int32),
        edge_kind=np.array(e_kind, np.int8), edge_to=np.array(e_to, np.int32), boards=board_list,
        valid=valid, order=order, num_valid=num_valid, strength=strength, sorted_strength=sorted_strength,
        bettings=bettings,
        num_rows=int(counts.sum()),
    )


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


def hand_strengths_py(game: GameDef, hand: Sequence[int], board: Sequence[int]) -> int:
    return rank_hand_py(list(hand) + list(board), game.num_suits, game.num_ranks)
