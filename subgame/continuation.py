"""The rest of the hand after each leaf of a depth-limited subgame, built from the blueprint.

:func:`continuation_template` is the blueprint's betting from a leaf's real state (no chance
nodes); :func:`build_leaf_model` spells every leaf's template out over the later deals (every card,
a fixed sample of them, or sampled runouts, per :class:`~subgame.depth.DepthLimit`), with the
refined seat's blueprint rows and the opponent's ``k`` continuation strategies per card bucket, into
one :class:`~subgame.leaf_model.LeafModel`; :func:`expanded_nodes` counts that size beforehand.
:func:`continuation_values` values one leaf for given reach (:func:`subgame.depth_kernels.cont_walk`).
See :mod:`subgame.depth` for the method and its costs.
"""

from __future__ import annotations

import itertools
import time
from math import comb
from typing import Optional

import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_SHOWDOWN, BettingTree, build_tree
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.evaluator import rank_many
from holdem.gamedef import GameDef
from subgame import depth_kernels as DK
from subgame.bets import bp_bets
from subgame.depth import MAX_CONTINUATION_NODES, DepthLimit, replay
from subgame.interrupt import checkpoint
from subgame.leaf_model import LeafModel, LeafWork
from subgame.tables import board_buckets, tables_of
from subgame.tree import SubgameError, all_hands

_CLASS = {"fold": FOLD, "call": CALL, "raise": RAISE}


def continuation_template(bp, leaf_betting: Betting, board) -> BettingTree:
    """The blueprint's betting from a leaf's real state to the end of the hand, without chance
    nodes (one tree for every board: the cards are dealt by :func:`_expand`)."""
    return build_tree(bp.gamedef, bp_bets(bp), root=leaf_betting, board=board, deal_boards=False)


def expanded_nodes(
    game: GameDef,
    tpl: BettingTree,
    num_cards: int,
    sample: Optional[int] = None,
    deals: Optional[tuple] = None,
) -> int:
    """Nodes of ``tpl`` (a betting tree without chance nodes, from a state with ``num_cards`` board
    cards) once every deal of the later rounds' cards is spelled out (dealt from ``sample`` cards
    when given, see :attr:`~subgame.depth.DepthLimit.leaf_cards`; or at most ``deals[i]`` deals at the i-th later
    deal, :attr:`~subgame.depth.DepthLimit.leaf_deals`): a cheap size check before building the public tree of the
    rest of the hand (or walking it)."""
    deck = game.deck_size if sample is None else num_cards + sample
    through = [game.board_cards_through(r) for r in range(game.num_rounds)]
    later = _later_deals(game, num_cards)
    cards = np.zeros(tpl.num_nodes, np.int64)
    mult = np.zeros(tpl.num_nodes, np.float64)
    total = 0.0
    for u in range(tpl.num_nodes):
        par = int(tpl.parent[u])
        c0, m0 = (num_cards, 1.0) if par < 0 else (int(cards[par]), float(mult[par]))
        k_u = int(tpl.kind[u])
        need = (
            through[int(tpl.round[u])]
            if k_u == KIND_DECISION
            else game.total_board_cards
            if k_u == KIND_SHOWDOWN
            else c0
        )
        c, m = c0, m0
        while c < need:  # a chance node, then one copy per deal of the next round's cards
            r = next(r for r in range(game.num_rounds) if through[r] > c)
            total += m
            n = comb(deck - c, through[r] - c)
            if deals is not None:
                n = min(n, _level_deals(deals, later, c))
            m *= n
            c = through[r]
        cards[u], mult[u] = c, m
        total += m
    return int(total)


def _later_deals(game: GameDef, num_cards: int) -> list:
    """The board sizes before each later deal from a board of ``num_cards`` cards."""
    through = sorted({game.board_cards_through(r) for r in range(game.num_rounds)})
    return [c for c in through if c >= num_cards][:-1]


def _level_deals(deals: tuple, later: list, cards: int) -> int:
    """:attr:`~subgame.depth.DepthLimit.leaf_deals`'s number for the deal after a board of ``cards`` cards."""
    i = later.index(cards)
    return int(deals[min(i, len(deals) - 1)])


def _draw_deals(rest: list, kk: int, want: int, rng: np.random.Generator) -> list:
    """``want`` distinct deals of ``kk`` of the cards ``rest``, uniformly, in sorted order."""
    picked: set = set()
    while len(picked) < want:
        picked.add(tuple(sorted(rng.choice(rest, kk, replace=False).tolist())))
    return sorted(picked)


def _bucket_rows(bp, b: Betting, player: int, kinds: list, tos: list) -> np.ndarray:
    """``[A, B]``: the blueprint's probability of each template edge per card bucket at real betting
    ``b`` (translated: the mixture of the abstract nodes it maps to)."""
    bt = bp.tree
    A = len(kinds)
    B = int(max(bp.num_buckets))
    rows = np.zeros((A, B))
    total = 0.0
    for v, q in bp.decision_nodes(b):  # off the tree: the blueprint's fallback node
        if int(bt.player[v]) != player or q <= 0:
            continue
        nb = int(bp.num_buckets[bt.round[v]])
        na = int(bt.num_actions[v])
        s = int(bp.row_offset[v])
        probs = bp.probs[s : s + nb * na].reshape(nb, na)
        for a, key in enumerate(bp.action_keys(v, b)):
            kind = FOLD if key == "f" else CALL if key == "c" else RAISE
            hit = [
                j
                for j in range(A)
                if kinds[j] == kind and (kind != RAISE or bp.gamedef.is_limit or tos[j] == int(key[1:]))
            ]
            if not hit and kind == RAISE:  # the nearest raise of the template, else a call
                rj = [j for j in range(A) if kinds[j] == RAISE]
                hit = [min(rj, key=lambda j: abs(tos[j] - int(key[1:])))] if rj else [kinds.index(CALL)]
            if not hit:
                hit = [kinds.index(CALL)]
            rows[hit[0], :nb] += q * probs[:, a]
        total += q
    if total <= 0:
        rows[kinds.index(CALL)] = 1.0
        return rows
    s = rows.sum(0)
    ok = s > 0
    rows[:, ok] /= s[ok]
    rows[kinds.index(CALL), ~ok] = 1.0
    return rows


def leaf_rows(bp, leaf_betting: Betting, board) -> tuple[BettingTree, list]:
    """(the leaf's :func:`continuation_template`, ``(node, edge kinds, player, [A, B] rows)`` of each
    of its decisions: :func:`_bucket_rows`), computed once per process and blueprint for each leaf
    betting (:mod:`subgame.tables`: the template has no cards, and the bettings of the leaves recur
    from one solve to the next; the arrays are shared, read only)."""

    def make() -> tuple[BettingTree, list]:
        tpl = continuation_template(bp, leaf_betting, board)
        out = []
        for u in np.nonzero(tpl.kind == KIND_DECISION)[0]:
            s, A = int(tpl.child_start[u]), int(tpl.num_actions[u])
            kinds = [int(x) for x in tpl.edge_kind[s : s + A]]
            tos = [int(x) for x in tpl.edge_to[s : s + A]]
            q = int(tpl.player[u])
            rows = _bucket_rows(bp, tpl.betting(int(u)), q, kinds, tos)
            rows.flags.writeable = False
            out.append((int(u), kinds, q, rows))
        return tpl, out

    return tables_of(bp).leaf_rows.get((leaf_betting.actions, leaf_betting.actors), make)


def _biased(rows: np.ndarray, kinds: list, which: str, bias: float) -> np.ndarray:
    if which == "blueprint":
        return rows
    f = np.array([bias if k == _CLASS[which] else 1.0 for k in kinds])[:, None]
    out = rows * f
    s = out.sum(0, keepdims=True)
    return np.where(s > 0, out / np.where(s > 0, s, 1.0), rows)


def build_leaf_model(
    tree: BettingTree,
    bp,
    me: int,
    dl: DepthLimit,
    max_nodes: int = MAX_CONTINUATION_NODES,
    sample=None,
) -> LeafModel:
    """The continuation data of every leaf of the depth-limited ``tree`` (refined seat ``me``).

    The later deals come from every card left, or with ``dl.leaf_cards`` from a fixed uniform sample
    of that many of them (drawn with ``dl.seed``; ``sample``: these cards instead). Each chance node
    then scales its deals' sum by the share of the deals it has, an unbiased estimate of the exact
    values: their mean over every sample of the same size."""
    t0 = time.perf_counter()
    game = bp.gamedef
    if tree.derived.get("real_game") != game:
        raise SubgameError("the depth-limited tree is not of the blueprint's game")
    o = 1 - me
    hands = all_hands(game).astype(np.int32)
    H = len(hands)
    leaves = np.nonzero(tree.kind == KIND_SHOWDOWN)[0]
    leaf_of = np.full(tree.num_nodes, -1, np.int64)
    leaf_of[leaves] = np.arange(len(leaves))
    board0 = tuple(int(c) for c in tree.root_board)
    deck, hole = game.deck_size, game.num_hole_cards
    kind: list[int] = []
    player: list[int] = []
    spent: list = []
    board: list[int] = []
    dealc: list[float] = []
    srow: list[int] = []
    dealt: list[int] = []
    child_start: list[int] = []
    num_actions: list[int] = []
    edge_child: list[int] = []
    boards: dict = {}
    rows_me: list = []
    rows_op: list = [[] for _ in range(dl.k)]
    nrows = 0
    leaf_root = np.zeros(len(leaves), np.int64)
    depth = 1

    def bid(cards):
        key = tuple(sorted(cards))
        if key not in boards:
            boards[key] = len(boards)
        return boards[key]

    if sample is not None:
        sample = np.unique(np.asarray(sample, np.int64))
        if len(sample) < 3 or np.isin(sample, board0).any() or sample.min() < 0 or sample.max() >= deck:
            raise SubgameError("a sample of the later cards needs at least 3 cards of the deck off the board")
    elif dl.leaf_cards is not None:
        left = [c for c in range(deck) if c not in board0]
        if dl.leaf_cards < len(left):
            pick = np.random.default_rng([dl.seed, 2]).choice(left, dl.leaf_cards, replace=False)
            sample = np.sort(pick).astype(np.int64)
    pool = list(range(deck)) if sample is None else sample.tolist()
    tpls, decs = [], []
    for n in leaves:
        tpl, dec = leaf_rows(bp, replay(tree.betting(int(n)), game), board0)
        tpls.append(tpl)
        decs.append(dec)
    deals = dl.leaf_deals if sample is None else None
    size = sum(
        expanded_nodes(game, tpl, len(board0), None if sample is None else len(sample), deals) for tpl in tpls
    )
    if size > max_nodes:
        raise SubgameError(
            f"the continuations after the depth limit have {size:,} nodes in all (more than "
            f"{max_nodes:,}): too many later deals for a depth-limited solve from round "
            f"{int(tree.round[0]) + 1}"
            + (
                ""
                if sample is not None
                else " (fewer sampled runouts: leaf_deals)"
                if deals is not None
                else " with every card (a fixed sample of them: leaf_cards)"
            )
        )
    later = _later_deals(game, len(board0))
    node_deals: dict = {}

    def deals_at(cards: tuple, kk: int) -> list:
        """The deals of the next ``kk`` cards at a chance node after ``cards``: every one (of the
        pool), or with ``leaf_deals`` that many distinct ones drawn uniformly, the same for every
        leaf (drawn from the seed and the cards)."""
        key = tuple(sorted(cards))
        got = node_deals.get(key)
        if got is None:
            rest = [c for c in pool if c not in cards]
            n_all = comb(len(rest), kk)
            want = n_all if deals is None else min(n_all, _level_deals(deals, later, len(cards)))
            if want == n_all:
                got = list(itertools.combinations(rest, kk))
            else:
                got = _draw_deals(rest, kk, want, np.random.default_rng([dl.seed, 3, *key]))
            node_deals[key] = got
        return got

    for li, n in enumerate(leaves):
        checkpoint()
        tpl = tpls[li]
        row_of = np.full(tpl.num_nodes, -1, np.int64)
        for u, kinds, q, rows in decs[li]:
            A = len(kinds)
            row_of[u] = nrows
            nrows += A
            rows_me.append(rows)
            for i, which in enumerate(dl.continuations):
                rows_op[i].append(_biased(rows, kinds, which, dl.bias) if q == o else rows)
        need_dec = [game.board_cards_through(int(r)) for r in tpl.round]

        def make(u, cards, d):
            nonlocal depth
            depth = max(depth, d + 1)
            k_u = int(tpl.kind[u])
            need = (
                need_dec[u] if k_u == KIND_DECISION else game.total_board_cards if k_u == KIND_SHOWDOWN else 0
            )
            i = len(kind)
            if i >= max_nodes:
                raise SubgameError(
                    f"the continuations after the depth limit exceed {max_nodes:,} nodes "
                    "(too many later rounds for an exact depth-limited solve)"
                )
            child_start.append(0)
            num_actions.append(0)
            dealt.append(-1)
            board.append(bid(cards))
            spent.append(tpl.spent[u])
            if len(cards) < need:
                kind.append(KIND_CHANCE)
                player.append(-1)
                r = next(r for r in range(game.num_rounds) if game.board_cards_through(r) > len(cards))
                kk = game.board_cards_through(r) - len(cards)
                # deals per hand pair, times the share of the deals this node has (a sample's)
                share = len(deals_at(cards, kk)) / comb(deck - len(cards), kk)
                dealc.append(comb(deck - len(cards) - 2 * hole, kk) * share)
                srow.append(-1)
                stack.append((i, u, cards, d, kk))
            else:
                kind.append(k_u)
                player.append(int(tpl.player[u]))
                dealc.append(0)
                srow.append(int(row_of[u]))
                if k_u == KIND_DECISION:
                    stack.append((i, u, cards, d, 0))
            return i

        def expand(floor: int) -> None:
            """Pop and expand the stack's entries above ``floor`` (depth first)."""
            while len(stack) > floor:
                i, u, cards, d, kk = stack.pop()
                if kk:  # chance: every deal of the next round's cards (of the sample's)
                    kids = []
                    for cc in deals_at(cards, kk):
                        c = make(u, cards + cc, d + 1)
                        dealt[c] = cc[0] if kk == 1 else -1
                        kids.append(c)
                    child_start[i] = len(edge_child)
                    num_actions[i] = len(kids)
                    edge_child.extend(kids)
                    if len(cards) + kk == game.total_board_cards and len(kids) > 1:
                        replicate(kids)
                    continue
                kids = [make(int(v), cards, d + 1) for v in tpl.children(int(u))]
                child_start[i] = len(edge_child)
                num_actions[i] = len(kids)
                edge_child.extend(kids)

        def replicate(kids: list) -> None:
            """The last deal's children ``kids`` (on top of the stack) have the same betting below
            them, on one board each and no chance node left: expand the last one's subtree (the
            first the walk would expand), then copy it to the others, in the order and with the
            node and edge numbers the walk would have given them."""
            K = len(kids)
            entries = stack[-K:]
            if [e[0] for e in entries] != kids or any(e[4] for e in entries):
                return  # not a decision below every deal (e.g. all-in: showdowns): nothing to copy
            del stack[-K:]
            n0, e0 = len(kind), len(edge_child)
            stack.append(entries[-1])
            expand(len(stack) - 1)
            n1, e1 = len(kind), len(edge_child)
            first = entries[-1][0]
            block = {
                name: np.array(arr[n0:n1], np.float64 if name == "dealc" else np.int64)
                for name, arr in (("kind", kind), ("player", player), ("dealc", dealc), ("srow", srow))
            }
            block_spent = spent[n0:n1]
            block_cs = np.array(child_start[n0:n1], np.int64)
            block_edges = np.array(edge_child[e0:e1], np.int64)
            own_na = num_actions[first]  # its own edges open the block's edges
            has_kids = block["kind"] == KIND_DECISION
            for e in reversed(entries[:-1]):
                kid = e[0]
                dn, de = len(kind) - n0, len(edge_child) - e0
                b = board[kid]
                kind.extend(block["kind"].tolist())
                player.extend(block["player"].tolist())
                dealc.extend(block["dealc"].tolist())
                srow.extend(block["srow"].tolist())
                spent.extend(block_spent)
                board.extend([b] * (n1 - n0))
                dealt.extend([-1] * (n1 - n0))
                child_start.extend(np.where(has_kids, block_cs + de, 0).tolist())
                num_actions.extend(num_actions[n0:n1])
                child_start[kid] = len(edge_child)
                num_actions[kid] = own_na
                edge_child.extend((block_edges + dn).tolist())

        stack: list = []
        leaf_root[li] = make(0, board0, 0)
        expand(0)
    # per board: buckets of every hand for the round the board belongs to, showdown order when complete
    blist = [()] * len(boards)
    for key, v in boards.items():
        blist[v] = key
    NB = len(blist)
    card_mask = np.zeros((NB, deck), np.bool_)
    for b, cards in enumerate(blist):
        card_mask[b, list(cards)] = True
    valid = (
        ~(card_mask[:, hands[:, 0]] | card_mask[:, hands[:, 1]]) if hole == 2 else ~card_mask[:, hands[:, 0]]
    )
    bucket = np.zeros((NB, H), np.int32)
    order = np.zeros((NB, H), np.int32)
    sstrength = np.zeros((NB, H), np.int64)
    nvalid = np.zeros(NB, np.int32)
    kind_a = np.array(kind, np.int8)
    board_a = np.array(board, np.int32)
    dec_boards = set(np.unique(board_a[kind_a == KIND_DECISION]).tolist())
    sd_boards = set(np.unique(board_a[kind_a == KIND_SHOWDOWN]).tolist())
    through = [game.board_cards_through(r) for r in range(game.num_rounds)]
    for b, cards in enumerate(blist):
        idx = np.nonzero(valid[b])[0]
        if b in dec_boards:
            ib, bk = board_buckets(bp, cards, through.index(len(cards)))  # shared with blueprint_values
            bucket[b, ib] = bk
        if b in sd_boards:
            mat = np.empty((len(idx), hole + len(cards)), np.int64)
            mat[:, :hole] = hands[idx]
            mat[:, hole:] = np.array(cards, np.int64)
            st = rank_many(mat, game.num_suits, game.num_ranks)
            o_ = np.argsort(st, kind="stable")
            order[b, : len(idx)] = idx[o_]
            sstrength[b, : len(idx)] = st[o_]
            nvalid[b] = len(idx)
    B = int(max(bp.num_buckets))
    s_me = np.concatenate(rows_me).astype(np.float32) if rows_me else np.zeros((1, B), np.float32)
    s_op = (
        np.stack([np.concatenate(r) for r in rows_op]).astype(np.float32)
        if rows_me
        else np.zeros((dl.k, 1, B), np.float32)
    )
    return LeafModel(
        me=me,
        k=dl.k,
        leaf_nodes=leaves,
        leaf_of=leaf_of,
        leaf_root=leaf_root,
        kind=kind_a,
        player=np.array(player, np.int8),
        spent=np.array(spent, np.int32).reshape(-1, 2),
        child_start=np.array(child_start, np.int64),
        num_actions=np.array(num_actions, np.int64),
        edge_child=np.array(edge_child, np.int64),
        board=board_a,
        deal_count=np.array(dealc, np.float64),
        srow=np.array(srow, np.int64),
        s_me=s_me,
        s_op=s_op,
        boards=blist,
        bucket=bucket,
        valid=valid,
        order=order,
        sstrength=sstrength,
        nvalid=nvalid,
        hands=hands,
        dealt=np.array(dealt, np.int64),
        depth=depth + 2,
        build_s=time.perf_counter() - t0,
        sample=sample,
        leaf_deals=deals,
    )


def continuation_values(
    m: LeafModel, leaf: int, trav: int, reach: np.ndarray, mask: Optional[np.ndarray] = None
) -> np.ndarray:
    """``[kv, H]``: the traverser's values at leaf ``leaf`` (full-width vectors). ``trav == me``:
    ``reach`` is ``[k, H]``, the opponent's reach per continuation, one row of values out; else
    ``reach`` is ``[H]`` (``me``'s reach) and row ``i`` is the opponent's values under continuation ``i``."""
    w = LeafWork(m)
    kr = m.k if trav == m.me else 1
    w.rin[:kr] = np.asarray(reach, np.float64).reshape(kr, -1)
    mask = np.ones(m.num_cards, np.bool_) if mask is None else np.asarray(mask, np.bool_)
    DK.cont_walk(int(m.leaf_root[leaf]), int(m.me), int(trav), int(m.k), m.kernel_arrays(), mask, w.arrays())
    kv = 1 if trav == m.me else m.k
    return w.cout[:kv].astype(np.float64)
