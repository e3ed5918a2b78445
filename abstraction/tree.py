"""The one game-tree type of the project, built once into flat numpy arrays, and its node kinds.

:class:`BettingTree` is both the blueprint's abstract betting tree (the whole game from the first
action, cards left to the card abstraction) and a subgame solver's public tree (rooted at a public
state, with chance nodes that deal the board between rounds, under a finer bet abstraction).
:func:`build_tree` builds either: the same depth-first construction, with a different root, root
board and options (``deal_boards`` inserts the chance nodes; ``action_filter`` lets nested solving
add an off-tree bet). This module owns the node kinds (:class:`NodeKind`, and the plain ``KIND_*``
ints the numba kernels compare against) and the edge kind of a deal (:data:`DEAL`).

Nodes are numbered as a depth-first expansion creates them: expanding a node gives all its children
consecutive indices in edge order, so a parent's index is below its children's and node 0 is the
root. Arrays (``N`` nodes, ``E`` edges):

=================  ==============  ============================================================
``kind``           int8  [N]       :class:`NodeKind`: 0 decision, 1 fold terminal, 2 showdown
                                   terminal, 3 chance (deals the next round's board cards)
``player``         int8  [N]       seat to act (decision) or the seat whose fold ended the hand
                                   (fold); else -1
``round``          int8  [N]       betting round (a showdown after an all-in sits on the last;
                                   a chance node is on the round whose cards it deals)
``spent``          int32 [N, P]    each seat's total commitment for the hand at the node (P seats)
``live``           uint16 [N]      the seats that have not folded at the node, as a bit mask (bit p
                                   for seat p): who shares a showdown of more than two seats
``num_actions``    int16 [N]       edges of the node: a decision's actions, a chance node's deals
``child_start``    int32 [N]       first edge of the node in the edge arrays
``parent``         int32 [N]       parent node (-1 at the root)
``parent_edge``    int32 [N]       edge from the parent to the node (-1 at the root)
``board``          int32 [N]       index of the node's public cards in :attr:`BettingTree.boards`
                                   (all 0, the root board, without ``deal_boards``)
``deal_count``     int64 [N]       chance node: deals compatible with any two hands (the divisor
                                   of the chance average); 0 elsewhere
``row``            int64 [N]       decision node: first of its rows in per-hand tables of
                                   ``num_rows`` rows (one per action of each decision, in node
                                   order); -1 elsewhere
``edge_child``     int32 [E]       node reached by the edge
``edge_kind``      int8  [E]       0 fold, 1 call/check, 2 raise (:mod:`holdem.betting`), 3 deal
``edge_to``        int32 [E]       raise-to of a raise (the raiser's total commitment), else 0
``edge_frac``      float32 [E]     pot fraction that produced a raise; -1 for all-in; 0 otherwise
                                   (and for a raise an ``action_filter`` added)
=================  ==============  ============================================================

The children of a decision node are its edges in ACPC order: fold, call, raises by increasing size.
A chance node's children are the deals of the next round's cards in lexicographic order, one round
at a time (after an all-in, a chain of chance nodes deals the rest of the board). ``boards`` lists
each distinct public board (sorted card ids) once.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import itertools
from math import comb
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np

from abstraction.bets import LIMIT, BetAbstraction, BetAbstractionError
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.gamedef import GameDef, require_two_players


class NodeKind(enum.IntEnum):
    """What a node is (the values of :attr:`BettingTree.kind`)."""

    DECISION = 0
    FOLD = 1
    SHOWDOWN = 2
    CHANCE = 3


# plain ints for the numba kernels (which compare them against the int8 ``kind`` array)
KIND_DECISION = int(NodeKind.DECISION)
KIND_FOLD = int(NodeKind.FOLD)
KIND_SHOWDOWN = int(NodeKind.SHOWDOWN)
KIND_CHANCE = int(NodeKind.CHANCE)
DEAL = 3  # edge kind of a chance node's edges (after holdem.betting's FOLD, CALL, RAISE)

MAX_NODES = 50_000_000

# ``action_filter(betting, moves) -> moves``: a decision's moves as ``(kind, raise_to)`` (raise-to 0
# for calls, folds and limit raises)
ActionFilter = Callable[[Betting, list], list]


class TreeArrays(NamedTuple):
    """The node and edge arrays of a :class:`BettingTree` that the numba kernels read, as one
    argument (:meth:`BettingTree.kernel_arrays`). Every field has a fixed dtype and is
    C-contiguous, so the kernels compile once for it."""

    kind: np.ndarray  # int8 [N]
    player: np.ndarray  # int8 [N]
    round: np.ndarray  # int8 [N]
    spent: np.ndarray  # int32 [N, P]
    num_actions: np.ndarray  # int16 [N]
    child_start: np.ndarray  # int32 [N]
    edge_child: np.ndarray  # int32 [E]


_KERNEL_DTYPES = {
    "kind": np.int8,
    "player": np.int8,
    "round": np.int8,
    "spent": np.int32,
    "num_actions": np.int16,
    "child_start": np.int32,
    "edge_child": np.int32,
}


@dataclasses.dataclass
class BettingTree:
    """A betting tree as flat arrays (see the module docstring for the layout)."""

    game: GameDef
    bets: BetAbstraction  # LIMIT in limit games
    root_betting: Betting  # the betting state at node 0 (the start of the hand for a blueprint)
    root_board: tuple[int, ...]  # the public cards at node 0, as given
    kind: np.ndarray
    player: np.ndarray
    round: np.ndarray
    spent: np.ndarray
    live: np.ndarray
    num_actions: np.ndarray
    child_start: np.ndarray
    parent: np.ndarray
    parent_edge: np.ndarray
    board: np.ndarray
    deal_count: np.ndarray
    row: np.ndarray
    edge_child: np.ndarray
    edge_kind: np.ndarray
    edge_to: np.ndarray
    edge_frac: np.ndarray
    boards: list[tuple[int, ...]]
    num_rows: int
    # derived data other layers compute from the tree once and keep with it (e.g. the subgame
    # solver's per-board hand data, see :mod:`subgame.tree`), by key
    derived: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    _bettings: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    def children(self, n: int) -> np.ndarray:
        s = int(self.child_start[n])
        return self.edge_child[s : s + int(self.num_actions[n])]

    def edge_label(self, e: int) -> str:
        """ACPC action string of a betting edge (``f``, ``c``, ``r<to>``; ``r`` in limit games)."""
        k = int(self.edge_kind[e])
        if k == RAISE:
            return "r" if self.game.is_limit else f"r{int(self.edge_to[e])}"
        if k == DEAL:
            raise ValueError(f"edge {e} deals cards: it has no action string")
        return "fc"[k]

    def action_labels(self, n: int) -> list[str]:
        """ACPC action strings of a decision node's edges."""
        s = int(self.child_start[n])
        return [self.edge_label(e) for e in range(s, s + int(self.num_actions[n]))]

    def betting(self, n: int) -> Betting:
        """The betting state at node ``n`` (the root's with the path's actions applied; memoised)."""
        b = self._bettings.get(n)
        if b is not None:
            return b
        path = []
        m = n
        while m > 0 and m not in self._bettings:
            path.append(int(self.parent_edge[m]))
            m = int(self.parent[m])
        b = self.root_betting if m == 0 else self._bettings[m]
        for e in reversed(path):
            k = int(self.edge_kind[e])
            if k != DEAL:
                b = b.apply(k, int(self.edge_to[e]))
        self._bettings[n] = b
        return b

    def betting_string(self, n: int) -> str:
        """ACPC betting string from the start of the hand to node ``n`` (rounds separated by '/')."""
        return self.betting(n).betting_string()

    def kernel_arrays(self) -> TreeArrays:
        """The arrays the numba kernels read (:class:`TreeArrays`): the tree's own, not copies
        (:func:`build_tree` makes them with these dtypes, C-contiguous)."""
        return TreeArrays(
            **{f: np.ascontiguousarray(getattr(self, f), _KERNEL_DTYPES[f]) for f in TreeArrays._fields}
        )

    def kernel_live(self) -> Optional[np.ndarray]:
        """The live-seat masks the sampling kernel takes beside :class:`TreeArrays`
        (:func:`blueprint.kernels.es_iterations`): None with two seats, so that the two-seat
        kernel compiles without the N-seat code."""
        return None if self.spent.shape[1] == 2 else np.ascontiguousarray(self.live, np.uint16)

    def decision_nodes(self) -> np.ndarray:
        return np.nonzero(self.kind == KIND_DECISION)[0]

    def content_hash(self) -> str:
        h = hashlib.blake2b(digest_size=8)
        # the arrays a blueprint run's config hash covers (kept as they are: runs keep their hashes)
        for a in (
            self.kind,
            self.player,
            self.round,
            self.spent,
            self.num_actions,
            self.edge_kind,
            self.edge_to,
        ):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def arrays(self) -> dict[str, np.ndarray]:
        fields = (f.name for f in dataclasses.fields(self))
        return {k: getattr(self, k) for k in fields if isinstance(getattr(self, k), np.ndarray)}

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values())


def build_tree(
    game: GameDef,
    bets: Optional[BetAbstraction] = None,
    *,
    root: Optional[Betting] = None,
    board: Sequence[int] = (),
    deal_boards: bool = False,
    action_filter: Optional[ActionFilter] = None,
    max_nodes: int = MAX_NODES,
) -> BettingTree:
    """The betting tree of ``game`` under ``bets`` (limit games: every legal action) from ``root``.

    ``root`` defaults to the start of the hand (the blueprint's tree) and ``board`` to no public
    cards. ``deal_boards`` puts a chance node wherever the next betting needs board cards that are
    not dealt yet (a subgame's public tree; ``board`` must then be the cards of ``root``'s round).
    ``action_filter(betting, moves) -> moves`` may restrict or extend a decision's moves, each
    ``(kind, raise_to)``. :class:`BetAbstractionError` when a no-limit game has no ``bets`` or the
    tree would exceed ``max_nodes``.

    A blueprint's tree takes 2 to 10 seats; a subgame's (``deal_boards``) two: its chance nodes
    count the deals left by two hands.
    """
    if deal_boards:
        require_two_players(game, "a subgame's public tree")
    if game.is_limit or bets is None:
        if not game.is_limit:
            raise BetAbstractionError("a no-limit game needs a bet abstraction (e.g. 'fcpa')")
        bets = LIMIT
    root = Betting.initial(game) if root is None else root
    root_board = tuple(int(c) for c in board)
    kind: list[int] = []
    player: list[int] = []
    rnd: list[int] = []
    spent: list[tuple[int, ...]] = []
    live: list[int] = []
    nact: list[int] = []
    cstart: list[int] = []
    parent: list[int] = []
    bid: list[int] = []
    dcount: list[int] = []
    e_child: list[int] = []
    e_kind: list[int] = []
    e_to: list[int] = []
    e_frac: list[float] = []
    boards: dict[tuple[int, ...], int] = {}
    deck = game.deck_size
    hole = game.num_hole_cards

    def board_id(cards: tuple[int, ...]) -> int:
        key = tuple(sorted(cards))
        if key not in boards:
            boards[key] = len(boards)
        return boards[key]

    def new_node(k: int, pl: int, b: Betting, cards: tuple[int, ...], par: int) -> int:
        n = len(kind)
        if n >= max_nodes:
            raise BetAbstractionError(f"the tree exceeds {max_nodes} nodes: use a coarser bet abstraction")
        kind.append(k)
        player.append(pl)
        rnd.append(b.round)
        spent.append(b.spent)
        live.append(sum(1 << p for p, f in enumerate(b.folded) if not f))
        nact.append(0)
        cstart.append(0)
        parent.append(par)
        bid.append(board_id(cards))
        dcount.append(0)
        return n

    def node_for(b: Betting, cards: tuple[int, ...], par: int) -> tuple[int, list]:
        """Create the node for betting ``b`` on ``cards`` (a chance node first when board cards are
        missing); returns it and its pending edges."""
        if deal_boards:
            need = (
                (game.total_board_cards if b.showdown() else len(cards))
                if b.finished
                else game.board_cards_through(b.round)
            )
            if len(cards) < need:
                n = new_node(KIND_CHANCE, -1, b, cards, par)
                # deal the next round's cards (one round at a time)
                r = next(r for r in range(game.num_rounds) if game.board_cards_through(r) > len(cards))
                k = game.board_cards_through(r) - len(cards)
                rest = [c for c in range(deck) if c not in cards]
                dcount[n] = comb(deck - len(cards) - 2 * hole, k)
                return n, [(DEAL, 0, 0.0, b, cards + d) for d in itertools.combinations(rest, k)]
        if b.finished:
            if not b.showdown():  # all seats but one folded: the last to fold acted at the parent
                folder = (0 if b.folded[0] else 1) if len(b.folded) == 2 else player[par] if par >= 0 else -1
                return new_node(KIND_FOLD, folder, b, cards, par), []
            return new_node(KIND_SHOWDOWN, -1, b, cards, par), []
        memo = decisions.get(id(b)) if deal_boards else None
        if memo is None:
            moves: list[tuple[int, int, float]] = []
            if b.can_fold():
                moves.append((FOLD, 0, 0.0))
            moves.append((CALL, 0, 0.0))
            moves += [(RAISE, to if not game.is_limit else 0, f) for to, f in bets.raise_targets(b)]
            if action_filter is not None:
                fracs = {(kd, to): f for kd, to, f in moves}
                kept = action_filter(b, [(kd, to) for kd, to, _ in moves])
                moves = [(kd, to, fracs.get((kd, to), 0.0)) for kd, to in kept]
            memo = (b.current_player(), moves)
            if deal_boards:
                decisions[id(b)] = memo
                alive.append(b)
        n = new_node(KIND_DECISION, memo[0], b, cards, par)
        return n, [(kd, to, f, b, cards) for kd, to, f in memo[1]]

    # with deal_boards the same betting recurs under every deal of the board cards (chance nodes):
    # its moves and the states after them are computed once per betting object (kept alive while
    # the tree is built; without deals each betting occurs once and nothing is kept)
    decisions: dict[int, tuple] = {}
    after: dict[tuple[int, int, int], Betting] = {}
    alive: list[Betting] = []  # the keys' objects stay alive, so their ids stay their own

    def applied(b: Betting, kd: int, to: int) -> Betting:
        if not deal_boards:
            return b.apply(kd, to)
        key = (id(b), kd, to)
        nb = after.get(key)
        if nb is None:
            nb = after[key] = b.apply(kd, to)
            alive.append(b)
        return nb

    # iterative DFS; a node's edges are reserved contiguously and its children created when it is expanded
    stack = [node_for(root, root_board, -1)]
    while stack:
        n, moves = stack.pop()
        if not moves:
            continue
        if len(moves) > np.iinfo(np.int16).max:
            raise BetAbstractionError(f"a node with {len(moves)} edges: more than the int16 counts hold")
        cstart[n] = len(e_child)
        nact[n] = len(moves)
        kids = []
        for kd, to, f, b, cards in moves:
            if kd == DEAL:
                c, sub = node_for(b, cards, n)
                e_to.append(0)
            else:
                nb = applied(b, kd, to)
                c, sub = node_for(nb, cards, n)
                e_to.append(nb.max_spent if kd == RAISE else 0)
            e_child.append(c)
            e_kind.append(kd)
            e_frac.append(f)
            kids.append((c, sub))
        stack.extend(reversed(kids))
    kind_a = np.array(kind, np.int8)
    nact_a = np.array(nact, np.int16)
    parent_edge = np.full(len(kind), -1, np.int32)
    parent_edge[np.array(e_child, np.int64)] = np.arange(len(e_child), dtype=np.int32)
    row = np.full(len(kind), -1, np.int64)
    dec = np.nonzero(kind_a == KIND_DECISION)[0]
    counts = nact_a[dec].astype(np.int64)
    row[dec] = np.concatenate([[0], np.cumsum(counts)[:-1]]) if len(dec) else []
    board_list: list[tuple[int, ...]] = [()] * len(boards)
    for key, v in boards.items():
        board_list[v] = key
    return BettingTree(
        game=game,
        bets=bets,
        root_betting=root,
        root_board=root_board,
        kind=kind_a,
        player=np.array(player, np.int8),
        round=np.array(rnd, np.int8),
        spent=np.array(spent, np.int32).reshape(-1, game.num_players),
        live=np.array(live, np.uint16),
        num_actions=nact_a,
        child_start=np.array(cstart, np.int32),
        parent=np.array(parent, np.int32),
        parent_edge=parent_edge,
        board=np.array(bid, np.int32),
        deal_count=np.array(dcount, np.int64),
        row=row,
        edge_child=np.array(e_child, np.int32),
        edge_kind=np.array(e_kind, np.int8),
        edge_to=np.array(e_to, np.int32),
        edge_frac=np.array(e_frac, np.float32),
        boards=board_list,
        num_rows=int(counts.sum()),
    )
