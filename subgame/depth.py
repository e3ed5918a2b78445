"""Depth-limited solving (Brown, Sandholm & Amos 2018, "Depth-Limited Solving for
Imperfect-Information Games").

A depth-limited subgame ends with its root's betting round. Its tree is the subgame's public tree
for the game *truncated* after that round (:func:`truncated_game`): the same decisions and folds;
where the round ends in a call (or an all-in is called) the truncated game has a showdown node, and
each of those is a **depth-limit leaf**. At a leaf the opponent (the seat not refined) picks, per
hand, one of ``k`` continuation strategies for the rest of the hand, and the hand is played out over
every deal of the remaining cards with the refined seat on its blueprint and the opponent on its
pick. The continuations (:data:`DEFAULT_CONTINUATIONS`) are the blueprint and the blueprint biased
towards folding, calling and raising: at each of the opponent's decisions the probability of that
action class is multiplied by ``bias`` (5, as in the paper) and the row renormalised.

**The leaf values are exact.** A leaf's value for a pair of hands under continuation ``i`` is the
expectation over the remaining cards and both seats' continuation play; it is bilinear in the two
seats' reach at the leaf, which change every iteration, so no per-hand vector can stand for it. The
solver instead walks the rest of the hand at every leaf in every iteration, vectorized over hands
(:func:`subgame.depth_kernels.cont_walk`): the continuation trees are the blueprint's own betting
from the leaf's real state (:func:`continuation_template`), with a chance node before each later
round, and the strategies are per *card bucket* of the blueprint (one row per template decision,
read through each board's buckets), so every board of a leaf shares its rows. One walk per leaf and
traverser values all ``k`` continuations at once (``k`` reach vectors going down for the refined
seat's walk, ``k`` value vectors coming up for the opponent's), the terminals evaluated once with
card removal in O(hands).

Continuation betting off the blueprint's tree (a leaf reached by a finer size) is the blueprint's
action translation (:meth:`~blueprint.blueprint.Blueprint.node_distribution`: the pseudo-harmonic
mixture of its neighbours, per decision); a decision with no abstract counterpart checks or calls.

The opponent's choice at a leaf is a decision of the depth-limited game: regret matching in CFR
iterations (or, ``leaf_choice="best"``, the best continuation per hand against the current
strategy), its average strategy in evaluation, and a best response picks the best continuation per
hand.

**Cost.** A walk costs about (continuation nodes) x (hands) per iteration and traverser: on a
hold'em turn with the default subgame bets, 63 leaves and 32,559 continuation nodes, about 0.3 s of
CPU per walk. So CFR iterations may walk a uniform sample of the next round's cards
(``samples``; the same sample at every leaf and for both traversers of an iteration), scaled to an
unbiased estimate (public chance sampling): 4 of 46 river cards cut an iteration about 10x.
Exploitability checks walk every card, so the reported figures are exact, unless
``solve(..., measure_samples=N)`` asks for a check on a fixed sample of N cards (an estimate, high
on average; ``Solution.measure_cards`` says so), which a time budget may need.
``Solution.exploitability_pct_pot`` is then the exploitability of the depth-limited game (the
gadget game's for the safe methods); the safe gadgets sit at the root as for full-depth subgames,
with the alternative values of the real game.

**The flop.** From a hold'em flop the continuations over every turn and river are millions of nodes
(refused beyond ``max_nodes``). ``DepthLimit.leaf_cards`` deals the later cards from a fixed uniform
sample of the cards left instead (the default from a round with two deals after it: 12 cards, 12
turns x 11 rivers, some 155,000 continuation nodes for the default subgame bets after a called
pre-flop raise); each chance node scales its deals' sum by the share of the deals it has, so the
leaf values are unbiased estimates of the exact ones (their mean over every sample), and the
solve is exact for the game on that sample. The rest of the hand is too big there for the exact
blueprint values of the safe gadgets as well: they come from the depth-limited game itself
(:func:`subgame.construct.blueprint_values` with the depth limit, on the same sample), the
blueprint's continuation for the blueprint values and the best continuation per hand for the
best-response values, the choice the re-solve gives the opponent too.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from math import comb
from typing import Optional

import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_SHOWDOWN, BettingTree, build_tree
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.gamedef import GameDef
from subgame import depth_kernels as DK
from subgame import kernels as K
from subgame.solver import Engine, checkpoint
from subgame.tree import SubgameError, all_hands, build_subgame_tree

DEFAULT_CONTINUATIONS = ("blueprint", "fold", "call", "raise")
DEFAULT_BIAS = 5.0
MAX_CONTINUATION_NODES = 3_000_000  # all leaves together (the work per iteration grows with it)
_CLASS = {"fold": FOLD, "call": CALL, "raise": RAISE}


@dataclasses.dataclass
class DepthLimit:
    """How a subgame ends at its round: the blueprint whose continuation values the leaves, the
    opponent's continuation strategies (names from :data:`DEFAULT_CONTINUATIONS`) and the bias."""

    blueprint: object
    continuations: tuple = DEFAULT_CONTINUATIONS
    bias: float = DEFAULT_BIAS
    samples: Optional[int] = None  # CFR iterations walk this many cards per deal (None: every card)
    seed: int = 0
    auto: bool = False  # solve_state: only where a depth limit applies (else solve to the end of the hand)
    leaf_choice: str = (
        "regret"  # the opponent's choice at a leaf in CFR: "regret" matching, or its "best" pick
    )
    max_nodes: int = MAX_CONTINUATION_NODES  # refuse continuations (all leaves together) larger than this
    # the continuations are dealt from a fixed uniform sample of this many of the cards left (None:
    # every card; a flop's turn and river, see DEFAULT_LEAF_CARDS)
    leaf_cards: Optional[int] = None
    # or: the continuations are dealt along sampled runouts, ``leaf_deals[i]`` distinct deals of the
    # i-th later round's cards at each chance node (uniform, drawn per node from ``seed`` and the
    # cards dealt so far, so every leaf has the same runouts); a pre-flop root's default, see
    # DEFAULT_LEAF_DEALS. Each chance node scales by its share of the deals: unbiased values
    leaf_deals: Optional[tuple] = None
    model: Optional["LeafModel"] = None

    def __post_init__(self) -> None:
        self.continuations = tuple(self.continuations)
        bad = [c for c in self.continuations if c not in DEFAULT_CONTINUATIONS]
        if bad or not self.continuations:
            raise SubgameError(
                f"unknown continuation strategies {bad}: expected some of {DEFAULT_CONTINUATIONS}"
            )
        if not self.bias > 0:
            raise SubgameError(f"the continuation bias must be positive, got {self.bias}")
        if self.leaf_choice not in ("regret", "best"):
            raise SubgameError(f"leaf_choice must be 'regret' or 'best', got {self.leaf_choice!r}")
        if self.samples is not None and self.samples < 2:
            raise SubgameError(f"sampling needs at least 2 cards per deal, got {self.samples}")
        if self.leaf_cards is not None and self.leaf_cards < 3:
            raise SubgameError(
                f"a fixed sample of the later cards needs at least 3 cards, got {self.leaf_cards}"
            )
        if self.leaf_deals is not None:
            self.leaf_deals = tuple(self.leaf_deals)
            if not self.leaf_deals or any(not isinstance(d, int) or d < 1 for d in self.leaf_deals):
                raise SubgameError(
                    f"leaf_deals must be deals per later round, each at least 1, got {self.leaf_deals}"
                )
            if self.leaf_cards is not None or self.samples is not None:
                raise SubgameError(
                    "leaf_deals (sampled runouts) walks each of its deals: it goes with neither "
                    "leaf_cards nor samples"
                )

    @property
    def k(self) -> int:
        return len(self.continuations)


DEFAULT_SAMPLES = 4  # :func:`default_depth_limit`: CFR iterations walk 4 of the next cards (checks walk all)
# :func:`default_depth_limit` from a round with two deals after it (a hold'em flop): the
# continuations are dealt from a fixed sample of 12 of the cards left (12 turns x 11 rivers: 132
# runouts against 56 for 8 cards, leaf values of less variance for twice the construction and check;
# out of sample, on 8 flop states, 12 did a little better than 8, within the noise: BENCHMARKS.md,
# "Depth-limited solving"). Not from pre-flop: the flops of a few cards are too few for values per hand (on a
# pre-flop 4-bet, the solved strategies of 5-card samples disagree from sample to sample)
DEFAULT_LEAF_CARDS = 12
# :func:`default_depth_limit` from a round with three deals after it (hold'em pre-flop): sampled
# runouts, 32 flops with one turn and one river each (about 70 ms an iteration on a 4-bet, where
# the answers of different samples agree; BENCHMARKS.md, "Depth-limited solving")
DEFAULT_LEAF_DEALS = (32, 1, 1)


def default_depth_limit(
    bp, samples: Optional[int] = DEFAULT_SAMPLES, root_round: Optional[int] = None
) -> DepthLimit:
    """The depth limit :func:`subgame.nested.solve_state` uses by default: the four continuations of
    the paper (blueprint, fold, call, raise biased by 5), iterations walking ``samples`` of the next
    cards (:data:`DEFAULT_SAMPLES`); from a ``root_round`` with two deals after it, the
    continuations dealt from a fixed sample of :data:`DEFAULT_LEAF_CARDS` cards; with three or
    more, along sampled runouts (:data:`DEFAULT_LEAF_DEALS`, every deal walked)."""
    later = 0 if root_round is None else bp.gamedef.num_rounds - 1 - root_round
    if later >= 3:
        return DepthLimit(bp, samples=None, leaf_deals=DEFAULT_LEAF_DEALS)
    return DepthLimit(bp, samples=samples, leaf_cards=DEFAULT_LEAF_CARDS if later == 2 else None)


def resolve_depth_limit(bp, depth_limit, root_round: int, state_round: int) -> Optional[DepthLimit]:
    """``solve_state``'s ``depth_limit`` argument as a :class:`DepthLimit` or None (see there)."""
    last = bp.gamedef.num_rounds - 1
    if depth_limit is None or (isinstance(depth_limit, DepthLimit) and depth_limit.auto):
        if root_round >= last or state_round != root_round:
            return None
        return (
            default_depth_limit(bp, root_round=root_round)
            if depth_limit is None
            else dataclasses.replace(depth_limit, model=None)
        )
    if depth_limit is False:
        return None
    if root_round >= last:
        raise SubgameError("depth-limited solving needs a root before the last round")
    if state_round != root_round:
        raise SubgameError(
            "the state is past the end of the depth-limited subgame's round (its root is on round "
            f"{root_round + 1}, the state on round {state_round + 1})"
        )
    if depth_limit is True:
        return default_depth_limit(bp, root_round=root_round)
    if isinstance(depth_limit, DepthLimit):
        return dataclasses.replace(depth_limit, model=None)
    raise SubgameError(f"depth_limit must be None, a bool or a DepthLimit, got {depth_limit!r}")


def truncated_game(game: GameDef, last_round: int) -> GameDef:
    """``game`` ending after ``last_round`` (a showdown where the next round would start)."""
    r = last_round + 1
    return dataclasses.replace(
        game,
        num_rounds=r,
        raise_size=game.raise_size[:r],
        first_player=game.first_player[:r],
        max_raises=game.max_raises[:r],
        num_board_cards=game.num_board_cards[:r],
        name=f"{game.name}@{r}",
    )


def replay(b: Betting, game: GameDef) -> Betting:
    """``b``'s actions replayed in ``game``."""
    out = Betting.initial(game)
    for acts in b.actions:
        for kind, size in acts:
            if out.finished:
                return out
            out = out.apply(kind, size)
    return out


def build_depth_limited_tree(game: GameDef, root: Betting, board, bets, action_filter=None) -> BettingTree:
    """The public tree from ``root`` to the end of its round (see the module docstring)."""
    if root.round >= game.num_rounds - 1:
        raise SubgameError("the root is on the last round: nothing lies beyond a depth limit there")
    tg = truncated_game(game, root.round)
    t = build_subgame_tree(tg, replay(root, tg), board, bets, action_filter=action_filter)
    t.derived["real_game"] = game
    return t


def is_depth_limited(tree: BettingTree) -> bool:
    return "real_game" in tree.derived


# -- the continuation after the leaves --------------------------------------------------------------


def continuation_template(bp, leaf_betting: Betting, board) -> BettingTree:
    """The blueprint's betting from a leaf's real state to the end of the hand, without chance
    nodes (one tree for every board: the cards are dealt by :func:`_expand`)."""
    from subgame.construct import bp_bets

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
    when given, see :attr:`DepthLimit.leaf_cards`; or at most ``deals[i]`` deals at the i-th later
    deal, :attr:`DepthLimit.leaf_deals`): a cheap size check before building the public tree of the
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
    """:attr:`DepthLimit.leaf_deals`'s number for the deal after a board of ``cards`` cards."""
    i = later.index(cards)
    return int(deals[min(i, len(deals) - 1)])


def _draw_deals(rest: list, kk: int, want: int, rng: np.random.Generator) -> list:
    """``want`` distinct deals of ``kk`` of the cards ``rest``, uniformly, in sorted order."""
    picked: set = set()
    while len(picked) < want:
        picked.add(tuple(sorted(rng.choice(rest, kk, replace=False).tolist())))
    return sorted(picked)


@dataclasses.dataclass
class LeafModel:
    """Every leaf's continuation as flat arrays (the :func:`~subgame.depth_kernels.cont_walk`
    layout): leaf ``l``'s tree from node ``leaf_root[l]``; ``srow`` each decision's first row in
    the strategy tables ``s_me`` ``[rows, B]`` and ``s_op`` ``[k, rows, B]``; per board ``b`` of
    ``boards``: ``bucket[b, h]``, ``valid``, and on complete boards the showdown order."""

    me: int
    k: int
    leaf_nodes: np.ndarray
    leaf_of: np.ndarray
    leaf_root: np.ndarray
    kind: np.ndarray
    player: np.ndarray
    spent: np.ndarray
    child_start: np.ndarray
    num_actions: np.ndarray
    edge_child: np.ndarray
    board: np.ndarray
    deal_count: np.ndarray
    srow: np.ndarray
    s_me: np.ndarray
    s_op: np.ndarray
    boards: list
    bucket: np.ndarray
    valid: np.ndarray
    order: np.ndarray
    sstrength: np.ndarray
    nvalid: np.ndarray
    hands: np.ndarray
    dealt: np.ndarray
    depth: int
    build_s: float
    sample: Optional[np.ndarray] = None  # the cards the later deals come from (None: every card)
    leaf_deals: Optional[tuple] = None  # or the deals per later round of its sampled runouts

    def kernel_arrays(self) -> DK.ContModel:
        """The continuation trees as one kernel argument (fixed dtypes: one compilation)."""
        ka = self.__dict__.get("_kernel_arrays")
        if ka is None:
            ka = DK.ContModel(
                **{f: np.ascontiguousarray(getattr(self, f), dt) for f, (dt, _) in DK.CONT_DTYPES.items()}
            )
            self.__dict__["_kernel_arrays"] = ka
        return ka

    @property
    def num_leaves(self) -> int:
        return len(self.leaf_nodes)

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    @property
    def num_cards(self) -> int:
        return int(self.hands.max()) + 1 if len(self.hands) else 1

    def memory_bytes(self) -> int:
        return sum(a.nbytes for a in self.kernel_arrays())


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
    from blueprint.evaluate import hand_buckets
    from holdem.evaluator import rank_many

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
    kind, player, spent, board, dealc, srow, dealt = [], [], [], [], [], [], []
    child_start, num_actions, edge_child = [], [], []
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
    tpls = []
    for n in leaves:
        rb = replay(tree.betting(int(n)), game)
        tpls.append(continuation_template(bp, rb, board0))
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
        for u in np.nonzero(tpl.kind == KIND_DECISION)[0]:
            s, A = int(tpl.child_start[u]), int(tpl.num_actions[u])
            kinds = [int(x) for x in tpl.edge_kind[s : s + A]]
            tos = [int(x) for x in tpl.edge_to[s : s + A]]
            q = int(tpl.player[u])
            rows = _bucket_rows(bp, tpl.betting(int(u)), q, kinds, tos)
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
    kind_c, iso, table, offsets = bp.cards.kernel_args()
    through = [game.board_cards_through(r) for r in range(game.num_rounds)]
    for b, cards in enumerate(blist):
        idx = np.nonzero(valid[b])[0]
        if b in dec_boards:
            r = through.index(len(cards))
            bucket[b, idx] = hand_buckets(
                kind_c,
                hands[idx].astype(np.int64),
                np.array(cards, np.int64),
                r,
                hole,
                np.array(game.num_board_cards, np.int64),
                deck,
                game.num_suits,
                game.num_ranks,
                iso,
                table,
                offsets,
            )
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


class LeafWork:
    """Work arrays of :func:`~subgame.depth_kernels.cont_walk` for one model."""

    def __init__(self, m: LeafModel):
        H, k, D = len(m.hands), m.k, m.depth
        f = np.float32
        self.rin = np.zeros((k, H), f)
        self.rbuf = np.zeros((D, k, H), f)
        self.vbuf = np.zeros((D, k, H), f)
        self.rid = np.zeros(D, np.int64)
        self.fn = np.zeros(D, np.int64)
        self.fa = np.zeros(D, np.int64)
        self.nin = np.zeros(D, np.int64)
        self.tv = np.zeros(H, f)
        self.rho = np.zeros(H, f)
        self.card = np.zeros(m.num_cards)
        self.cout = np.zeros((k, H), f)
        self.sbuf = np.zeros(k)
        self.pick = np.full(H, -1, np.int64)

    def arrays(self) -> DK.ContWork:
        return DK.ContWork(
            self.pick,
            self.rin,
            self.rbuf,
            self.vbuf,
            self.rid,
            self.fn,
            self.fa,
            self.nin,
            self.tv,
            self.rho,
            self.card,
            self.cout,
            self.sbuf,
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


# -- the engine: the subgame solver's Engine with depth-limit leaves ---------------------------------


def make_engine(tree: BettingTree, dtype, support, model: LeafModel, dl: Optional[DepthLimit] = None):
    """An :class:`~subgame.solver.Engine` whose walks value ``model``'s leaves (see
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
    """:class:`~subgame.solver.Engine` for a depth-limited tree: the walks run
    :func:`~subgame.kernels.walk_dl` with the model's leaves (:class:`~subgame.depth_kernels.Leaves`),
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

    def memory_bytes(self) -> int:
        return (
            super().memory_bytes() + self.model.memory_bytes() + self.leaf_reg.nbytes + self.leaf_sum.nbytes
        )

    def average(self, acc: np.ndarray) -> np.ndarray:
        s = self.leaf_sum.sum(1, keepdims=True)
        self.leaf_avg = np.where(s > 0, self.leaf_sum / np.where(s > 0, s, 1.0), 1.0 / self.model.k)
        return super().average(acc)

    def leaf_strategy(self) -> np.ndarray:
        """``[leaves, k, H]``: the opponent's average choice of continuation per leaf and hand."""
        s = self.leaf_sum.sum(1, keepdims=True)
        return np.where(s > 0, self.leaf_sum / np.where(s > 0, s, 1.0), 1.0 / self.model.k)

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
        K.walk_dl(
            self.tree_arrays,
            self.hand_arrays,
            K.WalkState(sigma_c, regret, strat_sum),
            rr,
            K.walk_options(p, mode, w),
            self.work,
            lv,
            m.kernel_arrays(),
            self.leaf_work,
        )
        self._last_p = p
        v = np.zeros(len(m.hands))
        ri = self._root_idx[p]
        v[ri] = self.out[: len(ri)]
        return v
