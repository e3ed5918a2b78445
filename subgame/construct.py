"""Subgames built from a blueprint and an actual hand history.

* **Ranges**: each seat's reach of every private hand at the subgame's root, the product of the
  blueprint's probabilities of the actions taken along the (abstract) path, each looked up in the
  hand's card bucket for the board visible when the action was taken.
* **Alternative values** (``alt``): the opponent's counterfactual best-response values against the
  blueprint from the root's abstract node to the end of the hand, per hand, on the blueprint's own
  betting tree; **estimates**: its values when both seats follow the blueprint.
* **Gifts** (reach variants): at each earlier decision of the opponent on the path, what the action
  it took is worth less than its best action, per unit of the refined seat's compatible mass, added
  up and carried to the root. They are computed for the decisions of the root's betting round
  (whose continuation trees are cheap); earlier rounds contribute nothing, which only makes the reach
  variants more conservative.

:func:`blueprint_sigma` lifts the blueprint's strategy onto a subgame's public tree (a
:class:`~abstraction.tree.BettingTree` with chance nodes) built from the same betting abstraction
(the solver's ``sigma`` layout), so the subgame kernels can evaluate the blueprint itself;
:func:`map_to_blueprint` matches the two trees node by node.
"""

from __future__ import annotations

import dataclasses
from math import comb
from typing import Optional

import numpy as np

from abstraction.bets import BetAbstraction
from abstraction.tree import KIND_CHANCE, KIND_DECISION, BettingTree, build_tree
from blueprint.blueprint import Blueprint, BlueprintError, NotADecisionError, viewer_decision
from holdem.betting import CALL, FOLD, RAISE, Betting, action_string
from holdem.state import State
from subgame import kernels as K
from subgame.bets import bp_bets, default_subgame_bets
from subgame.continuation import build_leaf_model, expanded_nodes
from subgame.depth import build_depth_limited_tree
from subgame.depth_engine import DepthLimitedEngine, make_engine
from subgame.engine import Engine
from subgame.interrupt import checkpoint
from subgame.tables import board_buckets, hand_buckets_for
from subgame.tree import MAX_NODES, SubgameError, all_hands, blocked_by, board_hands, build_subgame_tree
from subgame.types import Subgame


class BucketCache:
    """Card buckets of every hand for (board, round), computed once (for every hand of the game:
    once per process, :func:`board_buckets`)."""

    def __init__(self, bp: Blueprint, hands: np.ndarray):
        self.bp, self.hands = bp, hands
        every = all_hands(bp.gamedef)
        self._shared = hands.shape == every.shape and bool(np.array_equal(hands, every))
        self._c: dict = {}

    def __call__(self, board: tuple[int, ...], r: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices of hands not blocked by ``board``, their buckets)."""
        if self._shared:
            return board_buckets(self.bp, board, r)
        key = (tuple(sorted(board)), r)
        if key not in self._c:
            idx = np.nonzero(~blocked_by(self.hands, board))[0]
            self._c[key] = (idx, hand_buckets_for(self.bp, self.hands[idx], tuple(board), r))
        return self._c[key]


def node_probs(bp: Blueprint, n: int, buckets: np.ndarray) -> np.ndarray:
    """[len(buckets), A] blueprint strategy at abstract node ``n`` for hands in those buckets."""
    t = bp.tree
    na = int(t.num_actions[n])
    nb = int(bp.num_buckets[t.round[n]])
    s = int(bp.row_offset[n])
    return bp.probs[s : s + nb * na].reshape(nb, na)[buckets]


def map_to_blueprint(tree: BettingTree, bp: Blueprint, node: int, strict: bool = True) -> np.ndarray:
    """Abstract node of every public node of ``tree`` (built from abstract node ``node``'s state
    with the blueprint's own bets); chance nodes map to the node after the round ends.

    ``strict=False``: ``tree`` may have actions the blueprint lacks (a finer game's bets): children
    are matched by kind and raise-to, and a public node behind an action the blueprint lacks (and
    everything below it) maps to -1."""
    bt = bp.tree
    out = np.full(tree.num_nodes, -1, np.int64)
    out[0] = node
    for u in range(tree.num_nodes):
        v = out[u]
        if v < 0:
            continue
        k = tree.kind[u]
        kids = tree.children(u)
        if k == KIND_CHANCE:
            out[kids] = v
        elif k == KIND_DECISION:
            if bt.kind[v] != KIND_DECISION or (strict and int(bt.num_actions[v]) != len(kids)):
                raise SubgameError(
                    f"public node {u} does not match abstract node {bt.betting_string(int(v))!r}"
                )
            if strict:
                out[kids] = bt.children(int(v))
                continue
            s, na = int(bt.child_start[v]), int(bt.num_actions[v])
            abstract = {
                (int(bt.edge_kind[e]), int(bt.edge_to[e])): int(bt.edge_child[e]) for e in range(s, s + na)
            }
            cs = int(tree.child_start[u])
            for j, c in enumerate(kids):
                out[c] = abstract.get((int(tree.edge_kind[cs + j]), int(tree.edge_to[cs + j])), -1)
            if (out[kids] >= 0).sum() != na:
                raise SubgameError(
                    f"public node {u} lacks actions of abstract node {bt.betting_string(int(v))!r}"
                )
    return out


def blueprint_sigma(
    bp: Blueprint,
    tree: BettingTree,
    node_map: np.ndarray,
    cache: Optional[BucketCache] = None,
    translate: bool = False,
) -> np.ndarray:
    """float32 [rows, H]: the blueprint's strategy on ``tree`` (blocked hands get uniform rows).

    With a ``node_map`` from ``map_to_blueprint(strict=False)``: actions the blueprint lacks get
    probability 0 where it has the node; nodes behind them (off its tree) get uniform rows, or with
    ``translate`` the blueprint's answer by pseudo-harmonic action translation, as
    :meth:`~blueprint.blueprint.Blueprint.strategy` plays it with an rng (each of the history's
    off-tree raises mapped to its neighbours with their translation probabilities, afresh at every
    decision, so a node's strategy is the mixture of the neighbours' strategies)."""
    hands = board_hands(tree).hands
    cache = cache or BucketCache(bp, hands)
    bt = bp.tree
    sigma = np.zeros((tree.num_rows, len(hands)), np.float32)
    dec = np.nonzero(tree.kind == KIND_DECISION)[0]
    fast = _fill_mapped(bp, tree, node_map, dec, sigma, cache)
    for u in dec[~fast]:
        checkpoint()
        v = int(node_map[u])
        A = int(tree.num_actions[u])
        r0 = int(tree.row[u])
        sigma[r0 : r0 + A] = 1.0 / A
        board = tree.boards[tree.board[u]]
        if v < 0:
            if translate:
                _translated_rows(bp, tree, int(u), sigma, cache)
            continue
        idx, bk = cache(board, int(bt.round[v]))
        probs = node_probs(bp, v, bk)
        if int(bt.num_actions[v]) == A and (node_map[tree.children(u)] >= 0).all():
            sigma[r0 : r0 + A, idx] = probs.T
            continue
        s = int(bt.child_start[v])
        for j, c in enumerate(tree.children(u)):
            w = int(node_map[c])
            sigma[r0 + j, idx] = probs[:, int(bt.parent_edge[w]) - s] if w >= 0 else 0.0
    return sigma


FILL_CHUNK = 256  # decision nodes per kernel call of _fill_mapped (a few ms), a deadline check between


def _fill_mapped(
    bp: Blueprint,
    tree: BettingTree,
    node_map: np.ndarray,
    dec: np.ndarray,
    sigma: np.ndarray,
    cache: BucketCache,
) -> np.ndarray:
    """:func:`blueprint_sigma`'s common case in one kernel: the decisions ``dec`` whose abstract
    node has the same actions, every child mapped. Returns which of ``dec`` it filled."""
    bt = bp.tree
    if len(dec) == 0:
        return np.zeros(0, np.bool_)
    v = node_map[dec]
    A = tree.num_actions[dec].astype(np.int64)
    ok = v >= 0
    ok[ok] = bt.num_actions[v[ok]].astype(np.int64) == A[ok]
    starts = tree.child_start[dec].astype(np.int64)
    unmapped = np.concatenate([[0], np.cumsum(node_map[tree.edge_child.astype(np.int64)] < 0)])
    ok &= (unmapped[starts + A] == unmapped[starts]) & (A > 0)  # no child of the node unmapped
    if not ok.any():
        return ok
    vv = v[ok]
    rnd = bt.round[vv].astype(np.int64)
    brd = tree.board[dec[ok]].astype(np.int64)
    keys, slots = np.unique(np.stack([brd, rnd], 1), axis=0, return_inverse=True)
    bucket_of = np.full((len(keys), sigma.shape[1]), -1, np.int32)
    for k, (b, r) in enumerate(keys):
        checkpoint()
        idx, bk = cache(tree.boards[int(b)], int(r))
        bucket_of[k, idx] = bk
    rows = tree.row[dec[ok]].astype(np.int64)
    nacts = A[ok]
    offsets = bp.row_offset[vv].astype(np.int64)
    slots = slots.reshape(-1).astype(np.int64)
    for c in range(0, len(rows), FILL_CHUNK):  # the deadline is checked between chunks
        checkpoint()
        part = slice(c, c + FILL_CHUNK)
        K.fill_blueprint_rows(sigma, rows[part], nacts[part], offsets[part], slots[part], bucket_of, bp.probs)
    return ok


def _translated_rows(bp: Blueprint, tree: BettingTree, u: int, sigma: np.ndarray, cache: BucketCache) -> None:
    """The blueprint's translated strategy at public node ``u`` (off its tree) into ``sigma``'s rows."""
    bt = bp.tree
    b = tree.betting(u)
    A = int(tree.num_actions[u])
    r0, cs = int(tree.row[u]), int(tree.child_start[u])
    kinds = [int(tree.edge_kind[cs + j]) for j in range(A)]
    tos = [int(tree.edge_to[cs + j]) for j in range(A)]
    board = tree.boards[tree.board[u]]
    acc = np.zeros((A, board_hands(tree).num_hands))
    for v, q in bp.node_distribution(b):
        if v < 0 or bt.kind[v] != KIND_DECISION or int(bt.player[v]) != int(tree.player[u]):
            raise SubgameError(f"translation of {b.betting_string()!r} leaves the blueprint's tree")
        idx, bk = cache(board, int(bt.round[v]))
        probs = node_probs(bp, v, bk)
        for a, key in enumerate(bp.action_keys(v, b)):
            kind = FOLD if key == "f" else CALL if key == "c" else RAISE
            hit = [j for j in range(A) if kinds[j] == kind and (kind != RAISE or tos[j] == int(key[1:]))]
            if not hit:
                raise SubgameError(
                    f"the translated action {key!r} at {b.betting_string()!r} is not in the tree"
                )
            acc[hit[0], idx] += q * probs[:, a]
    cols = np.nonzero(acc.sum(0) > 0)[0]
    sigma[r0 : r0 + A, cols] = acc[:, cols] / acc[:, cols].sum(0)


def abstract_path(bp: Blueprint, n: int) -> list[tuple[int, int]]:
    """``(node, action index)`` of every decision from the root to abstract node ``n``."""
    bt = bp.tree
    path = []
    while bt.parent[n] >= 0:
        par = int(bt.parent[n])
        path.append((par, int(bt.parent_edge[n]) - int(bt.child_start[par])))
        n = par
    return path[::-1]


def _board_at_round(game, board: tuple[int, ...], r: int) -> tuple[int, ...]:
    return tuple(board[: game.board_cards_through(r)])


#: ``played`` (:func:`blueprint_ranges`, :func:`history_ranges` and the subgames built on them):
#: ``{index into the hand's flat history: [H] probability of that real action for each hand}`` for
#: the actions whose player took them from another strategy than the blueprint's (a solved
#: subgame's: :class:`subgame.cache.PlayedStrategy`); each replaces the blueprint's probabilities
#: of that action, so a later subgame gives the player the range it really has
Played = Optional[dict[int, np.ndarray]]


def blueprint_ranges(
    bp: Blueprint,
    n: int,
    board: tuple[int, ...],
    hands: np.ndarray,
    cache: Optional[BucketCache] = None,
    played: Played = None,
) -> np.ndarray:
    """[2, H] each seat's blueprint reach of every hand at abstract node ``n`` with ``board`` dealt
    (``played``: :data:`Played`; the abstract path's decisions are the real history's actions)."""
    cache = cache or BucketCache(bp, hands)
    g = bp.gamedef
    bt = bp.tree
    ranges = np.ones((2, len(hands)))
    for j, (m, a) in enumerate(abstract_path(bp, n)):
        r = int(bt.round[m])
        q = int(bt.player[m])
        if played and j in played:
            ranges[q] *= played[j]
            continue
        idx, bk = cache(_board_at_round(g, board, r), r)
        probs = node_probs(bp, m, bk)[:, a]
        mult = np.zeros(len(hands))
        mult[idx] = probs
        ranges[q] *= mult
    ranges[:, blocked_by(hands, board)] = 0.0
    return ranges


def history_ranges(
    bp: Blueprint,
    state: State,
    hands: np.ndarray,
    cache: Optional[BucketCache] = None,
    played: Played = None,
    upto_round: Optional[int] = None,
) -> np.ndarray:
    """[P, H] each of the ``P`` seats' range given ``state``'s real history, whether or not the blueprint's tree
    follows it: at every real action, the probability that a player of this blueprint takes it
    holding each hand, mixed over the abstract nodes it would play there
    (:meth:`~blueprint.blueprint.Blueprint.decision_nodes`: translation mixtures, and the fallback
    node where the tree has none), the abstract actions that become that real action summed. An
    action no abstract action becomes (an off-tree raise) leaves the range as it was: nested
    solving's rule that an off-tree action does not change the range of the one who took it. An
    action in ``played`` (:data:`Played`) is weighed by the strategy its player really played.
    ``upto_round``: only the actions of the rounds before it (the ranges at its start; the hands
    the state's whole board blocks still get 0)."""
    cache = cache or BucketCache(bp, hands)
    g = bp.gamedef
    H = len(hands)
    ranges = np.ones((g.num_players, H))
    board = tuple(int(c) for c in state.board_cards)
    b = Betting.initial(g)
    flat = [a for acts in state.betting.actions for a in acts]
    for j, (kind, size) in enumerate(flat):
        if upto_round is not None and b.round >= upto_round:
            break
        p = b.current_player()
        if played and j in played:
            ranges[p] *= played[j]
        else:
            real = action_string(kind, size, g)
            seen = _board_at_round(g, board, b.round)
            like = np.zeros(H)
            total = 0.0
            for v, q in bp.decision_nodes(b):
                keys = bp.action_keys(v, b)
                cols = [i for i, k in enumerate(keys) if k == real]
                if not cols:
                    continue
                idx, bk = cache(seen, int(bp.tree.round[v]))
                like[idx] += q * node_probs(bp, v, bk)[:, cols].sum(axis=1)
                total += q
            if total > 0 and like.any():
                ranges[p] *= like
        b = b.apply(kind, size)
    ranges[:, blocked_by(hands, board)] = 0.0
    return ranges


def _values_engine(bp: Blueprint, n: int, board: tuple[int, ...], seat: int, cache, depth_limit=None):
    """(tree, engine, sigma): the blueprint's public tree from abstract node ``n`` under its own
    bets, its engine and the blueprint's strategy there; to the end of the hand, or with
    ``depth_limit`` to the end of ``n``'s round, its leaves valued for ``seat`` (the opponent of the
    refined seat) as :func:`blueprint_values` says."""
    if depth_limit is None:
        tree = build_subgame_tree(bp.gamedef, bp.betting_at(n), board, bp_bets(bp))
    else:
        tree = build_depth_limited_tree(bp.gamedef, bp.betting_at(n), board, bp_bets(bp))
    checkpoint()
    nm = map_to_blueprint(tree, bp, n)
    sigma = blueprint_sigma(bp, tree, nm, cache)
    checkpoint()
    if depth_limit is None:
        return tree, Engine(tree), sigma
    conts = depth_limit.continuations
    # the blueprint's continuation first (the blueprint values' pick), walks exact over its cards
    dl = dataclasses.replace(
        depth_limit,
        continuations=("blueprint",) + tuple(c for c in conts if c != "blueprint"),
        samples=None,
        model=None,
    )
    e = make_engine(tree, np.float64, None, build_leaf_model(tree, bp, 1 - seat, dl, dl.max_nodes), dl)
    return tree, e, sigma


def _walk_values(e: Engine, sigma, ranges, seat: int, mode: int) -> np.ndarray:
    """``seat``'s values in ``e`` (from :func:`_values_engine`) against ``ranges``: best responses
    (``MODE_BR``; at depth-limit leaves the best continuation per hand) or the blueprint's own
    (``MODE_EV``; at depth-limit leaves the blueprint's continuation)."""
    if isinstance(e, DepthLimitedEngine):
        e.leaf_avg[:] = 0.0
        e.leaf_avg[:, 0] = 1.0  # continuation 0: the blueprint's (_values_engine)
    return e.walk(sigma, ranges, seat, mode)


def blueprint_values(
    bp: Blueprint,
    n: int,
    board: tuple[int, ...],
    ranges: np.ndarray,
    seat: int,
    cache: Optional[BucketCache] = None,
    depth_limit=None,
):
    """(best-response values, blueprint values) of ``seat``'s hands from abstract node ``n`` to the
    end of the hand, against the other seat's ``ranges`` (counterfactual, per hand).

    With ``depth_limit`` (a :class:`subgame.depth.DepthLimit`, for a rest of the hand too big to
    walk: a hold'em flop's) the values of the depth-limited game from ``n`` instead: the blueprint's
    bets to the end of ``n``'s round, then the depth-limit leaves (:mod:`subgame.depth`, over the
    same cards as a solve with that limit) valued by the blueprint's own continuation for the
    blueprint values and by the best continuation per hand for the best-response values, the
    choice a depth-limited re-solve gives the opponent."""
    tree, e, sigma = _values_engine(bp, n, board, seat, cache, depth_limit)
    br = _walk_values(e, sigma, ranges, seat, K.MODE_BR)
    checkpoint()  # a depth-limited walk from a flop takes a good part of a second
    ev = _walk_values(e, sigma, ranges, seat, K.MODE_EV)
    return br, ev, (tree, e, sigma)


MAX_REST_ENTRIES = 300_000_000  # nodes x hands of blueprint_values' walk (its strategy tables: 8 bytes each)


def check_rest_size(bp: Blueprint, n: int, board: tuple[int, ...]) -> None:
    """:class:`SubgameError` when the blueprint's public tree from abstract node ``n`` to the end of
    the hand (what :func:`blueprint_values` walks) would exceed the subgame trees' node limit,
    counted on its betting alone before anything big is built (e.g. a hold'em flop)."""
    tpl = build_tree(bp.gamedef, bp_bets(bp), root=bp.betting_at(n), board=board)
    size = expanded_nodes(bp.gamedef, tpl, len(board))
    hands = comb(bp.gamedef.deck_size - len(board), bp.gamedef.num_hole_cards)
    if size > MAX_NODES or size * hands > MAX_REST_ENTRIES:
        raise SubgameError(
            f"the rest of the hand from {bp.tree.betting_string(n)!r} is {size:,} public nodes x {hands:,} "
            f"hands under the blueprint's bets (limits {MAX_NODES:,} nodes, {MAX_REST_ENTRIES:,} "
            "entries): too big for exact values from the blueprint"
        )


def values_depth_limit(bp: Blueprint, n: int, board: tuple[int, ...], depth_limit=None):
    """The ``depth_limit`` argument of :func:`blueprint_values` at abstract node ``n``: None where
    the rest of the hand fits :func:`check_rest_size` (exact values), else the subgame's
    ``depth_limit`` (the depth-limited game's own values); without one, the size's error."""
    try:
        check_rest_size(bp, n, board)
    except SubgameError:
        if depth_limit is None:
            raise
        return depth_limit
    return None


def gifts(
    bp: Blueprint,
    n: int,
    board: tuple[int, ...],
    hands: np.ndarray,
    seat: int,
    root_mass: np.ndarray,
    cache: Optional[BucketCache] = None,
    depth_limit=None,
    per_decision=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gifts of ``seat`` (the opponent) carried to abstract node ``n``, in counterfactual units
    there: ``(gifts, estimate gifts)``.

    For each decision of ``seat`` in ``n``'s betting round on the path, the gap between its best
    action's value and the taken one's (best-response values against the blueprint; for the
    estimate gifts the blueprint's own values), per unit of the other seat's compatible mass, summed
    and multiplied by ``root_mass`` (that mass at the root). With ``depth_limit``: the values of the
    depth-limited game from each decision (see :func:`blueprint_values`). With ``per_decision``
    (the subgame's depth limit) in a round with two or more card rounds after it (a hold'em flop),
    that choice is made per decision (:func:`values_depth_limit`): an earlier decision has more of
    the hand left than ``n``. A flop bet faced in a pre-flop re-raised pot fits exact values, the
    flop's first decision does not: walked exactly, its gifts took 20 s of a 24.5 s construction.
    A turn's earlier decisions stay as ``depth_limit`` says (exact where ``n`` fits, within a solve's
    budget there; the turn solving that LBR measured)."""
    cache = cache or BucketCache(bp, hands)
    bt = bp.tree
    g = bp.gamedef
    rnd = int(bt.round[n])
    total = np.zeros((2, len(hands)))
    for m, a in abstract_path(bp, n):
        if int(bt.round[m]) != rnd or int(bt.player[m]) != seat:
            continue
        checkpoint()
        r_m = blueprint_ranges(bp, m, board, hands, cache)
        b_m = _board_at_round(g, board, rnd)
        dl = depth_limit
        if per_decision is not None and rnd < g.num_rounds - 2:
            dl = values_depth_limit(bp, m, b_m, per_decision)
        _, e, sigma = _values_engine(bp, m, b_m, seat, cache, dl)
        w = e.compat_mass(r_m[1 - seat])
        for i, mode in enumerate((K.MODE_BR, K.MODE_EV)):
            checkpoint()
            _walk_values(e, sigma, r_m, seat, mode)
            vals = e.root_child_values()  # [A, H] counterfactual values of each action
            gap = vals.max(axis=0) - vals[a]
            total[i] += np.where(w > 0, gap / np.where(w > 0, w, 1.0), 0.0)
    return total[0] * root_mass, total[1] * root_mass


def decision_state(bp: Blueprint, matchstate: str | State) -> State:
    """``matchstate`` parsed, checked to be a decision of its viewer (the seat solving) by
    :func:`blueprint.blueprint.viewer_decision`, whose error comes as a :class:`SubgameError` with
    the same message."""
    state = matchstate if isinstance(matchstate, State) else bp.game.state(matchstate)
    try:
        return viewer_decision(state)
    except NotADecisionError as exc:
        raise SubgameError(str(exc)) from None


def from_matchstate(
    bp: Blueprint,
    matchstate: str | State,
    bets: Optional[BetAbstraction] = None,
    with_gifts: bool = True,
    depth_limit=None,
    played: Played = None,
) -> tuple[Subgame, int]:
    """The subgame at ``matchstate``'s public state for the seat to act (which must be the viewer),
    from the blueprint's reach and values; returns ``(subgame, abstract node)``.

    The real betting must be on the blueprint's tree (off-tree bets are nested solving's job, see
    :mod:`subgame.nested`)."""
    state = decision_state(bp, matchstate)
    try:
        n = bp.node_of(state)
    except BlueprintError as exc:
        raise SubgameError(f"match state not reachable in the blueprint: {exc}") from None
    if not bp.same_spent(n, state.betting) or bp.tree.kind[n] != KIND_DECISION:
        raise SubgameError(
            f"the betting {state.betting.betting_string()!r} is not on the blueprint's tree "
            f"(nearest abstract node {bp.tree.betting_string(n)!r}): use nested solving"
        )
    board = tuple(int(c) for c in state.board_cards)
    sub = blueprint_subgame(
        bp,
        n,
        state.betting,
        board,
        state.current_player(),
        bets,
        with_gifts=with_gifts,
        depth_limit=depth_limit,
        played=played,
    )
    return sub, n


def blueprint_subgame(
    bp: Blueprint,
    n: int,
    root,
    board: tuple[int, ...],
    refine: int,
    bets: Optional[BetAbstraction] = None,
    action_filter=None,
    with_gifts: bool = True,
    depth_limit=None,
    played: Played = None,
) -> Subgame:
    """The subgame rooted at betting ``root`` (the real state of abstract node ``n``) on ``board``,
    refining ``refine``'s strategy, with ranges, alternative values and gifts from the blueprint
    (``depth_limit``: a :class:`subgame.depth.DepthLimit`, the subgame then ends with its round;
    ``played``: :data:`Played`)."""
    hands = all_hands(bp.gamedef)
    cache = BucketCache(bp, hands)
    ranges = blueprint_ranges(bp, n, board, hands, cache, played)
    me = refine
    o = 1 - me
    if ranges[o].sum() <= 0 or ranges[me].sum() <= 0:
        raise SubgameError("the blueprint never reaches this state (a range is empty)")
    dl_values = values_depth_limit(bp, n, board, depth_limit)
    alt, est, (t_bp, e_bp, _) = blueprint_values(bp, n, board, ranges, o, cache, depth_limit=dl_values)
    sub = Subgame(
        bp.gamedef,
        root,
        board,
        ranges,
        bets or default_subgame_bets(),
        refine=me,
        alt=alt,
        estimate=est,
        action_filter=action_filter,
        depth_limit=depth_limit,
    )
    if with_gifts:
        mass = e_bp.compat_mass(ranges[me])
        sub.gifts, sub.estimate_gifts = gifts(bp, n, board, hands, o, mass, cache, dl_values, depth_limit)
    return sub
