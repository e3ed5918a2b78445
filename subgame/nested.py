"""Nested subgame solving for off-tree bets, and the one entry point that answers a match state.

When the opponent makes a bet the blueprint does not have (``a*``, at abstract node ``m``), action
translation answers as if a nearby abstract size had been bet. Nested solving instead opens a
subgame rooted right after ``a*`` (Brown & Sandholm 2017, section 6): the refined seat's range is
its blueprint reach at ``m`` (the opponent's action does not change it); the opponent's alternative
value for each hand is its best-response value at ``m`` against the blueprint, the best it could get
with an in-abstraction action, so the gadget makes ``a*`` worth no more to it than those. ``unsafe``
takes the opponent's range at ``m`` times the blueprint's probability of the translated action.

Later real actions in the same hand are put into the subgame's tree (whatever their size), so a
state further down the hand is answered from the same solved subgame.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from abstraction.bets import BetAbstraction
from abstraction.tree import KIND_CHANCE, KIND_DECISION, BettingTree
from blueprint.blueprint import Blueprint, BlueprintError
from holdem.betting import RAISE, Betting
from holdem.state import State
from subgame.bets import default_subgame_bets
from subgame.construct import (
    BucketCache,
    Played,
    blueprint_ranges,
    blueprint_subgame,
    blueprint_values,
    decision_state,
    from_matchstate,
    gifts,
    history_ranges,
    node_probs,
    values_depth_limit,
)
from subgame.depth import resolve_depth_limit
from subgame.interrupt import check_interrupt, interruptible
from subgame.limits import SolveLimits
from subgame.solver import METHODS, solve
from subgame.tree import SubgameError, all_hands
from subgame.types import Solution, Subgame


def _flat(b: Betting) -> list[tuple[int, int, int]]:
    return [(r, k, s) for r, acts in enumerate(b.actions) for k, s in acts]


class real_path_filter:
    """An ``action_filter`` for :func:`~subgame.tree.build_subgame_tree` that adds the real hand's
    next action wherever a node lies on the real path and the bet abstraction lacks it (``real``:
    the real hand's betting, which a saved solve records to rebuild the tree)."""

    def __init__(self, real: Betting):
        self.real = real
        self._path = _flat(real)

    def __call__(self, b: Betting, moves):
        path, mine = self._path, _flat(b)
        if len(mine) >= len(path) or path[: len(mine)] != mine:
            return moves
        _, kind, size = path[len(mine)]
        if kind == RAISE:
            if not any(k == RAISE and to == size for k, to in moves):
                moves = sorted(moves + [(RAISE, size)], key=lambda m: (m[0], m[1]))
        return moves


def first_off_tree(bp: Blueprint, state: State) -> Optional[tuple[int, int, Betting]]:
    """``(abstract node m, index into the flat history, betting before it)`` of the first real
    action the blueprint's tree does not have exactly, or None when the whole history is on-tree."""
    t = bp.tree
    b = Betting.initial(bp.gamedef)
    n = 0
    for i, (r, kind, size) in enumerate(_flat(state.betting)):
        if t.kind[n] != KIND_DECISION:
            raise SubgameError(f"the history leaves the blueprint's tree at {t.betting_string(n)!r}")
        s, k = int(t.child_start[n]), int(t.num_actions[n])
        e_hit = None
        for e in range(s, s + k):
            if int(t.edge_kind[e]) == kind and (
                kind != RAISE or bp.gamedef.is_limit or int(t.edge_to[e]) == size
            ):
                e_hit = e
                break
        if e_hit is None:
            return n, i, b
        n = int(t.edge_child[e_hit])
        b = b.apply(kind, size)
    return None


#: the smallest :func:`opponent_off_tree_split` at which the solving player with ``off_tree`` solves
#: an off-tree bet nested instead of translating it: a bet mapped to one abstract size at least 90%
#: of the time is close to that size, and the blueprint's answer there serves it
OFF_TREE_SPLIT = 0.1


def _raise_edges(bp: Blueprint, m: int) -> np.ndarray:
    """Indices (from the node's first edge) of abstract node ``m``'s raise edges."""
    t = bp.tree
    s, k = int(t.child_start[m]), int(t.num_actions[m])
    return np.nonzero(t.edge_kind[s : s + k] == RAISE)[0]


def opponent_off_tree_split(bp: Blueprint, state: State) -> Optional[float]:
    """None unless the history's first off-tree action is the opponent's and in the state's round
    (the state then has a nested subgame rooted right after it, :func:`nested_subgame`); else how
    far that action lies from the abstract sizes: the smaller of the two probabilities the
    pseudo-harmonic translation gives the raise's neighbours (at most 0.5, midway between them; 0
    where it maps to one size, a raise below the smallest size or above the largest, or where the
    action is not a raise)."""
    try:
        off = first_off_tree(bp, state)
    except SubgameError:
        return None
    if off is None:
        return None
    m, i, before = off
    rnd, kind, size = _flat(state.betting)[i]
    if rnd != state.betting.round or int(bp.tree.player[m]) == state.viewer:
        return None
    raises = _raise_edges(bp, m)
    if kind != RAISE or not len(raises):
        return 0.0
    probs = bp.translation_probs(m, before, size, raises)
    return min(q for _, q in probs) if len(probs) > 1 else 0.0


def node_of_state(tree: BettingTree, state: State) -> int:
    """The node of ``tree`` reached by ``state``'s real history (from the tree's root)."""
    root = _flat(tree.root_betting)
    path = _flat(state.betting)
    if path[: len(root)] != root:
        raise SubgameError("the state does not continue the subgame's root")
    board = tuple(sorted(int(c) for c in state.board_cards))
    n = 0
    i = len(root)
    while True:
        if tree.kind[n] == KIND_CHANCE:
            hit = [c for c in tree.children(n) if set(tree.boards[tree.board[c]]) <= set(board)]
            if not hit:
                raise SubgameError("the state's board is not in the subgame")
            n = int(hit[0])
            continue
        if i == len(path):
            if tree.kind[n] != KIND_DECISION:
                raise SubgameError("the hand is over at this state")
            return n
        _, kind, size = path[i]
        s = int(tree.child_start[n])
        for e in range(s, s + int(tree.num_actions[n])):
            if int(tree.edge_kind[e]) == kind and (
                kind != RAISE or tree.game.is_limit or int(tree.edge_to[e]) == size
            ):
                n = int(tree.edge_child[e])
                break
        else:
            raise SubgameError(
                f"action {'fcr'[kind]}{size if kind == RAISE else ''} is not in the subgame's tree"
            )
        i += 1


def nested_subgame(
    bp: Blueprint,
    state: State,
    bets: Optional[BetAbstraction] = None,
    with_gifts: bool = True,
    depth_limit=None,
    played: Played = None,
) -> Subgame:
    """The nested subgame for ``state`` whose history has an off-tree action of the opponent
    (``played``: :data:`~subgame.construct.Played`)."""
    off = first_off_tree(bp, state)
    if off is None:
        raise SubgameError("the history is on the blueprint's tree: no nested subgame needed")
    m, i, before = off
    me = state.viewer
    if me is None:
        raise SubgameError("the state has no viewer: nested solving answers a seat's decision")
    if int(bp.tree.player[m]) != 1 - me:
        raise SubgameError(
            "the first off-tree action is the viewer's own; nested solving answers the opponent's"
        )
    r_m, kind, size = _flat(state.betting)[i]
    board_m = tuple(int(c) for c in state.board_cards[: bp.gamedef.board_cards_through(r_m)])
    return off_tree_subgame(
        bp,
        m,
        before,
        kind,
        size,
        board_m,
        me,
        bets,
        action_filter=real_path_filter(state.betting),
        with_gifts=with_gifts,
        depth_limit=depth_limit,
        played=played,
    )


def off_tree_subgame(
    bp: Blueprint,
    m: int,
    before: Betting,
    kind: int,
    size: int,
    board: tuple[int, ...],
    me: int,
    bets: Optional[BetAbstraction] = None,
    action_filter=None,
    with_gifts: bool = True,
    cache: Optional[BucketCache] = None,
    depth_limit=None,
    played: Played = None,
) -> Subgame:
    """The nested subgame rooted after the opponent's off-tree action ``(kind, size)`` taken at
    betting ``before`` (abstract node ``m``, ``board`` dealt), refining seat ``me`` (``played``:
    :data:`~subgame.construct.Played`, of the history before the action)."""
    o = 1 - me
    after = before.apply(kind, size)
    if after.finished:
        raise SubgameError("the off-tree action ends the hand")
    g = bp.gamedef
    hands = all_hands(g)
    cache = cache or BucketCache(bp, hands)
    ranges = blueprint_ranges(bp, m, board, hands, cache, played)
    if ranges[me].sum() <= 0 or ranges[o].sum() <= 0:
        raise SubgameError(
            "the blueprint never reaches the state before the off-tree action (a range is empty)"
        )
    dl_values = values_depth_limit(bp, m, board, depth_limit)
    alt, est, (t_bp, e_bp, _) = blueprint_values(bp, m, board, ranges, o, cache, depth_limit=dl_values)
    # unsafe's opponent range: as if the translated action had been taken
    idx, bk = cache(board, int(bp.tree.round[m]))
    probs = node_probs(bp, m, bk)
    a = _translated_edge(bp, m, before, kind, size) - int(bp.tree.child_start[m])
    opp = np.zeros(len(hands))
    opp[idx] = ranges[o, idx] * probs[:, a]
    if opp.sum() <= 0:
        opp = ranges[o].copy()
    rr = ranges.copy()
    rr[o] = opp
    sub = Subgame(
        g,
        after,
        board,
        rr,
        bets or default_subgame_bets(),
        refine=me,
        alt=alt,
        estimate=est,
        action_filter=action_filter,
        depth_limit=depth_limit,
    )
    # the gadgets weigh the refined seat's hands by its range, unchanged by the opponent's bet
    if with_gifts:
        mass = e_bp.compat_mass(ranges[me])
        sub.gifts, sub.estimate_gifts = gifts(bp, m, board, hands, o, mass, cache, dl_values, depth_limit)
    return sub


def _translated_edge(bp: Blueprint, m: int, before: Betting, kind: int, size: int) -> int:
    t = bp.tree
    s, k = int(t.child_start[m]), int(t.num_actions[m])
    if kind != RAISE:
        return s + next(i for i in range(k) if int(t.edge_kind[s + i]) == kind)
    raises = _raise_edges(bp, m)
    if not len(raises):
        raise SubgameError(f"a raise where the blueprint has none ({t.betting_string(m)!r})")
    return bp.translate_raise(m, before, size, raises, None)


def state_subgame(
    bp: Blueprint,
    state: State,
    bets: Optional[BetAbstraction] = None,
    nested: bool = True,
    depth_limit=None,
    played: Played = None,
) -> Subgame:
    """The subgame :func:`solve_state` solves for the viewer's decision ``state`` (see there):
    rooted at the state when its history is on the blueprint's tree; nested, rooted after the
    opponent's first off-tree action when that was in the state's round; re-solved from the
    viewer's own off-tree action of the state's round; or, where the tree has no node for the
    history at all or the first off-tree action (either seat's) was in an earlier round,
    :func:`dead_end_subgame` rooted at the state (no alternative values: solved unsafe).
    ``played`` (:data:`~subgame.construct.Played`): the actions of the hand so far that their player
    took from a solved subgame's strategy, with that strategy (the ranges follow it)."""
    rnd = state.betting.round
    if bp.walk(state).dead_end is not None:
        if not nested:
            raise SubgameError("the blueprint's tree has no node for the history and nested solving is off")
        return dead_end_subgame(
            bp, state, bets, depth_limit=resolve_depth_limit(bp, depth_limit, rnd, rnd), played=played
        )
    try:
        off = first_off_tree(bp, state)
    except BlueprintError as exc:
        raise SubgameError(str(exc)) from None
    if off is None:
        dl = resolve_depth_limit(bp, depth_limit, rnd, rnd)
        return from_matchstate(bp, state, bets=bets, depth_limit=dl, played=played)[0]
    if not nested:
        raise SubgameError("the history is off the blueprint's tree and nested solving is off")
    if _flat(state.betting)[off[1]][0] < rnd:
        # the first off-tree action (the opponent's, or the viewer's own from an earlier subgame's
        # finer sizes: a turn answer of a server solving from the turn) was in an earlier round: a
        # subgame rooted there would run to the end of the hand (on a hold'em turn 100,000+ nodes,
        # seconds to build, gigabytes); solve from the state itself with the ranges of the
        # translated history instead
        return dead_end_subgame(
            bp, state, bets, depth_limit=resolve_depth_limit(bp, depth_limit, rnd, rnd), played=played
        )
    dl = resolve_depth_limit(bp, depth_limit, _flat(state.betting)[off[1]][0], rnd)
    if int(bp.tree.player[off[0]]) != state.viewer:
        return nested_subgame(bp, state, bets, depth_limit=dl, played=played)
    # the viewer's own earlier bet is off the blueprint's tree (it came from a subgame's finer
    # sizes): re-solve from the decision where it was made, with the real actions in the tree
    m, i, before = off
    board = tuple(int(c) for c in state.board_cards[: bp.gamedef.board_cards_through(before.round)])
    return blueprint_subgame(
        bp,
        m,
        before,
        board,
        state.viewer,
        bets,
        action_filter=real_path_filter(state.betting),
        depth_limit=dl,
        played=played,
    )


def dead_end_subgame(
    bp: Blueprint,
    state: State,
    bets: Optional[BetAbstraction] = None,
    depth_limit=None,
    played: Played = None,
) -> Subgame:
    """The subgame rooted at ``state`` itself, for a history whose blueprint values cannot be
    used there: it has no node in the blueprint's tree (more raises than its bet abstraction
    allows, or a translated all-in called with chips left behind:
    :meth:`~blueprint.blueprint.Blueprint.walk`), or an opponent's off-tree raise of an earlier
    round was translated. Each seat's range follows the real history
    (:func:`~subgame.construct.history_ranges`: every action it took, as a player of this
    blueprint takes it, translation and the fallback included; an off-tree raise leaves the range
    as it was, nested solving's rule, Brown & Sandholm 2017). There are no blueprint values at the
    root, so only ``unsafe`` solves it."""
    g = bp.gamedef
    hands = all_hands(g)
    board = tuple(int(c) for c in state.board_cards)
    rnd = state.betting.round
    if rnd < g.num_rounds - 1 and depth_limit is None:
        raise SubgameError("a dead end before the last round is solved depth-limited only")
    two = rnd < g.num_rounds - 2 and g.num_board_cards[rnd + 1] and g.num_board_cards[rnd + 2]
    if two and depth_limit.leaf_cards is None and depth_limit.leaf_deals is None:
        # its depth-limited leaves would be valued over every deal of two more rounds (a hold'em
        # flop: every turn and river): seconds per iteration, never an answer within a time budget
        raise SubgameError(
            f"a dead end on round {rnd + 1} is too big to solve in time with every card of the two "
            "deals after it (a depth limit with leaf_cards samples them): the blueprint's fallback answers it"
        )
    ranges = history_ranges(bp, state, hands, played=played)
    if ranges[0].sum() <= 0 or ranges[1].sum() <= 0:
        raise SubgameError("the blueprint never reaches the history's last abstract node (a range is empty)")
    return Subgame(
        g,
        state.betting,
        board,
        ranges,
        bets or default_subgame_bets(),
        refine=state.viewer,
        depth_limit=depth_limit,
    )


def solve_state(
    bp: Blueprint,
    state: State | str,
    method: str = "reach-maxmargin",
    limits: Optional[SolveLimits] = None,
    *,
    bets: Optional[BetAbstraction] = None,
    nested: bool = True,
    depth_limit=None,
    algo: str = "dcfr",
    played: Played = None,
    **keywords: Any,
) -> tuple[Solution, int]:
    """Solve the subgame for the seat to act at ``state`` (on-tree: rooted at the state; off-tree
    opponent bet: nested, rooted after it). Returns the solution and the node of ``state`` in it.

    ``limits`` (a :class:`~subgame.limits.SolveLimits`): when the solve stops and what it may use
    (:func:`~subgame.solver.solve`'s); ``keywords``, its fields by name (``iterations=200``,
    ``time_budget=None``, ...), build one or replace some of its fields. Without ``limits`` the
    solve has :data:`STATE_LIMITS`, a 2-second budget (``time_budget=None`` drops it).

    The limits' ``deadline`` (a :func:`time.perf_counter` instant) and ``stop`` (a
    :class:`threading.Event`) bound the whole call, the subgame's construction from the blueprint
    included: they are checked between the construction's steps
    (:class:`~subgame.interrupt.SolveInterrupted` when they have passed) and before every iteration
    of :func:`~subgame.solver.solve`. Their ``locks``' histories start at the subgame's root (the
    start of the state's round on the blueprint's tree, right after the opponent's off-tree bet for
    a nested subgame, the state itself at a dead end).

    ``depth_limit``: ``None`` (default) ends the subgame with its round (:mod:`subgame.depth`, with
    :func:`~subgame.depth.default_depth_limit`) when that round is not the last and the state is in
    it, else solves to the end of the hand; ``False`` always to the end of the hand; ``True`` or a
    :class:`~subgame.depth.DepthLimit` always depth-limited (a :class:`SubgameError` on the last round).
    ``played``: :func:`state_subgame`'s."""
    lim = SolveLimits.build(limits, base=STATE_LIMITS, **keywords)
    if method not in METHODS:
        raise SubgameError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
    state = decision_state(bp, state)
    deadline, stop = lim.deadline, lim.stop
    check_interrupt(deadline, stop)
    with interruptible(deadline, stop):  # the construction's steps check the bounds too
        sub = state_subgame(bp, state, bets, nested, depth_limit, played)
        if sub.alt is None:
            method = "unsafe"  # a dead end (state_subgame): no blueprint values to be safe against
        check_interrupt(deadline, stop)
        sub.public_tree()
    check_interrupt(deadline, stop)
    sol = solve(sub, method, lim, algo=algo)
    return sol, node_of_state(sub.public_tree(), state)


#: :func:`solve_state`'s limits when none are given: a 2-second budget
STATE_LIMITS = SolveLimits(time_budget=2.0)


def hand_strategy(sol: Solution, node: int, state: State) -> dict[str, float]:
    """``{ACPC action: probability}`` of the viewer's hand at ``node`` of the solved subgame."""
    assert state.viewer is not None, "a viewer's decision"
    hole = tuple(sorted(int(c) for c in state.hole_cards[state.viewer]))
    return sol.hand_strategy(hole, node)
