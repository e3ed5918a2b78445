"""Depth-limited solving (Brown, Sandholm & Amos 2018, "Depth-Limited Solving for
Imperfect-Information Games"): the :class:`DepthLimit` and the truncated tree.

The parts: this module (what a depth limit is, its defaults, the truncated public tree);
:mod:`subgame.continuation` (the rest of the hand after each leaf, built into a
:class:`~subgame.leaf_model.LeafModel`); :mod:`subgame.depth_engine` (the solver's engine with the
leaves); :mod:`subgame.depth_kernels` (their numba walks).

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
from the leaf's real state (:func:`subgame.continuation.continuation_template`), with a chance node before each later
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
from typing import TYPE_CHECKING, Optional

from abstraction.tree import BettingTree
from holdem.betting import Betting
from holdem.gamedef import GameDef
from subgame.tree import SubgameError, build_subgame_tree

if TYPE_CHECKING:  # the model's type only (subgame.leaf_model loads the numba kernels)
    from subgame.leaf_model import LeafModel

DEFAULT_CONTINUATIONS = ("blueprint", "fold", "call", "raise")
DEFAULT_BIAS = 5.0
MAX_CONTINUATION_NODES = 3_000_000  # all leaves together (the work per iteration grows with it)


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
    model: Optional[LeafModel] = None

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


# :func:`default_depth_limit`: CFR iterations walk this many of the next cards (checks walk all).
# From a turn, 2 river cards: at equal solving time, twice the iterations of 4 cards leave a less
# exploitable strategy (6 self-play turn states of a 60 s main job, exact check: BENCHMARKS.md,
# "Depth-limited solving"). From a flop, 4 of the leaf cards (not measured against 2).
DEFAULT_SAMPLES = 2
FLOP_SAMPLES = 4
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


def default_depth_limit(bp, samples: Optional[int] = None, root_round: Optional[int] = None) -> DepthLimit:
    """The depth limit :func:`subgame.nested.solve_state` uses by default: the four continuations of
    the paper (blueprint, fold, call, raise biased by 5), iterations walking ``samples`` of the next
    cards (default :data:`DEFAULT_SAMPLES`); from a ``root_round`` with two deals after it, the
    continuations dealt from a fixed sample of :data:`DEFAULT_LEAF_CARDS` cards, iterations walking
    :data:`FLOP_SAMPLES` of them by default; with three or more, along sampled runouts
    (:data:`DEFAULT_LEAF_DEALS`, every deal walked)."""
    later = 0 if root_round is None else bp.gamedef.num_rounds - 1 - root_round
    if later >= 3:
        return DepthLimit(bp, samples=None, leaf_deals=DEFAULT_LEAF_DEALS)
    if later == 2:
        return DepthLimit(bp, samples=samples or FLOP_SAMPLES, leaf_cards=DEFAULT_LEAF_CARDS)
    return DepthLimit(bp, samples=samples or DEFAULT_SAMPLES)


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
