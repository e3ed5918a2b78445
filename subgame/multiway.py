"""Depth-limited search for games of any number of seats, as Pluribus played (Brown and Sandholm,
2019): at a decision of round ``r`` (from :attr:`SearchConfig.from_round` on; before it, the
blueprint's answer), solve the round from its start with every seat's real hand (no card
abstraction in the round) to its end, where every seat still in the hand chooses one of ``k``
continuation strategies for the rest of the hand (the blueprint, and the blueprint with its
fold, call or raise probabilities multiplied by ``bias``), and answer with the searching seat's
strategy for its hand at its decision.

- **The subgame** is the blueprint's own betting tree (its bet abstraction) from the first node of
  the round that the real history reaches (off-tree raises translated deterministically, as
  :meth:`~blueprint.blueprint.Blueprint.path` walks them) to the round's end: its decisions, the
  terminals reached in the round (folds; showdowns after all-ins, over the rest of the board), and
  its *leaves*, the first decisions of the next round.
- **Ranges at the round's start**: each seat's range given the betting of the earlier rounds, as a
  player of the blueprint would have played it (:func:`subgame.construct.history_ranges`); the
  searching seat's too (Pluribus tracked the strategy it really played: not done here).
- **Frozen**: the searching seat's own earlier actions in the round are fixed for the hand it
  holds (it took them); its other hands and every other seat are solved.
- **The solver** is external-sampling MCCFR with linear weighting (:mod:`subgame.multiway_kernels`),
  each information set playing the blueprint until one of its regrets is positive:
  a leaf's value is one rollout of the rest of the hand per continuation the traverser tries,
  the board's later cards drawn per iteration, the later rounds' buckets from the blueprint's
  card abstraction. The answer is the linear-weighted average of the searching seat's strategies
  at its decision for its hand (its reach there is 1: the round's start is the root and its
  earlier actions for that hand are frozen).

:class:`MultiwaySearch` answers a state (:meth:`~MultiwaySearch.answer`, a
:class:`SearchAnswer`); its randomness is seeded by :attr:`SearchConfig.seed` and the state, so
one state always gets the same answer from the same blueprint and configuration.
"""

from __future__ import annotations

import dataclasses
import math
import time
import zlib
from collections import OrderedDict
from typing import NamedTuple, Optional

import numpy as np

from abstraction.cards import scratch_size
from abstraction.tree import KIND_CHANCE, KIND_DECISION
from blueprint.blueprint import Blueprint, viewer_decision
from blueprint.numerics import seed_rng_state
from holdem.state import State
from subgame import multiway_kernels as MK
from subgame.construct import BucketCache, Played, history_ranges
from subgame.tree import SubgameError, all_hands

MAX_CONTINUATIONS = 4  # the blueprint, then fold-, call- and raise-biased (Pluribus's four)
MAX_ITERATIONS = 100_000_000
MAX_SECONDS = 3600.0
MAX_TABLE_ENTRIES = 200_000_000  # regrets of one search (float64): 1.6 GB
CHUNK = 16  # iterations between looks at the clock
ROUND_CACHE = 16  # round subgames kept (two int64 arrays over the blueprint's nodes each: 13 MB for nl6max)


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """How a :class:`MultiwaySearch` searches. ``iterations`` and ``seconds`` bound each search
    (whichever comes first; ``iterations`` None: the time alone)."""

    iterations: Optional[int] = 2000
    seconds: Optional[float] = None
    continuations: int = MAX_CONTINUATIONS
    bias: float = 5.0
    from_round: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        it, sec = self.iterations, self.seconds
        if it is None and sec is None:
            raise ValueError("search: give iterations, seconds or both (each bounds a search)")
        if it is not None and (
            isinstance(it, bool) or not isinstance(it, int) or not 1 <= it <= MAX_ITERATIONS
        ):
            raise ValueError(f"search iterations: expected an integer in [1, {MAX_ITERATIONS:,}], got {it!r}")
        if sec is not None and not (
            isinstance(sec, (int, float)) and math.isfinite(sec) and 0 < sec <= MAX_SECONDS
        ):
            raise ValueError(f"search seconds: expected a number in (0, {MAX_SECONDS:g}], got {sec!r}")
        k = self.continuations
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CONTINUATIONS:
            raise ValueError(f"search continuations: expected 1 to {MAX_CONTINUATIONS}, got {k!r}")
        b = self.bias
        if not (isinstance(b, (int, float)) and math.isfinite(b) and 1 < b <= 1000):
            raise ValueError(f"search bias: expected a multiplier in (1, 1000], got {b!r}")
        r = self.from_round
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < 4:
            raise ValueError(f"search from_round: expected a round 0 to 3, got {r!r}")


class SearchAnswer(NamedTuple):
    """A decision's strategy (``{ACPC action: probability}``) and where it came from: ``search``;
    ``blueprint`` (a round before the configuration's first); ``fallback`` (the blueprint's
    answer where its tree has no node for the history, ``reason`` says why)."""

    strategy: dict[str, float]
    source: str
    iterations: int
    seconds: float
    reason: Optional[str] = None
    #: ``search``: every hand's strategy at the decision, {ACPC action: float64 [H] over
    #: :attr:`MultiwaySearch.hands`} (0 for hands the board blocks): the seat's range after its
    #: action, what :func:`subgame.construct.history_ranges` takes as ``played``
    hands: Optional[dict[str, np.ndarray]] = None


class _Round(NamedTuple):
    """The subgame of one round from one of its first nodes: the kernel's offsets."""

    sub_off: np.ndarray
    leaf_off: np.ndarray
    regrets: int
    leaves: int
    depth: int


class MultiwaySearch:
    """Pluribus-style search of a blueprint (module docstring), for any number of seats."""

    def __init__(self, bp: Blueprint, config: SearchConfig = SearchConfig()):
        if bp.gamedef.num_rounds <= config.from_round:
            raise ValueError(
                f"search from_round {config.from_round}: game {bp.gamedef.name!r} has only "
                f"{bp.gamedef.num_rounds} round(s)"
            )
        t = bp.tree
        if (t.kind == KIND_CHANCE).any():
            raise ValueError(
                "search: the blueprint's tree has chance nodes (a subgame tree, not a blueprint)"
            )
        self.bp, self.config = bp, config
        self.hands = all_hands(bp.gamedef)
        self._hands64 = self.hands.astype(np.int64)
        self.cache = BucketCache(bp, self.hands)
        self._index = {tuple(int(c) for c in h): i for i, h in enumerate(self.hands)}
        self._cards = bp.cards.kernel_arrays(bp.gamedef)
        self._rounds: OrderedDict[int, _Round] = OrderedDict()  # the latest ROUND_CACHE
        # the kernel's stride per depth: a decision's actions or a leaf's continuations
        self.maxa = max(int(t.num_actions.max()), config.continuations)
        self.stats = np.zeros(3, np.int64)  # traversals, leaves rolled out, seat-by-seat draws

    # -- the subgame ----------------------------------------------------------------------------
    def _round(self, n0: int) -> _Round:
        """The offsets of the subgame from node ``n0`` to the end of its round (memoised)."""
        got = self._rounds.get(n0)
        if got is not None:
            self._rounds.move_to_end(n0)
            return got
        t = self.bp.tree
        r = int(t.round[n0])
        N, H, P = t.num_nodes, len(self.hands), self.bp.gamedef.num_players
        k = self.config.continuations
        sub_off = np.full(N, -1, np.int64)
        leaf_off = np.full(N, -1, np.int64)
        regrets = leaves = 0
        depth = 0
        stack = [(n0, 0)]
        while stack:
            n, d = stack.pop()
            depth = max(depth, d)
            if t.kind[n] != KIND_DECISION:
                continue
            if int(t.round[n]) != r:
                if leaf_off[n] < 0:
                    leaf_off[n] = leaves * P * H * k
                    leaves += 1
                continue
            na = int(t.num_actions[n])
            sub_off[n] = regrets
            regrets += H * na
            s = int(t.child_start[n])
            stack.extend((int(t.edge_child[s + a]), d + 1) for a in range(na))
        if regrets + leaves * P * H * k > MAX_TABLE_ENTRIES:
            raise SubgameError(
                f"search: the round from node {t.betting_string(n0)!r} needs "
                f"{regrets + leaves * P * H * k:,} table entries (at most {MAX_TABLE_ENTRIES:,})"
            )
        got = self._rounds[n0] = _Round(sub_off, leaf_off, regrets, leaves, depth + 2)
        if len(self._rounds) > ROUND_CACHE:
            self._rounds.popitem(last=False)
        return got

    def _ranges(self, state: State, r: int, played: Played = None) -> np.ndarray:
        """[P, H] cumulative distributions of every seat's range at round ``r``'s start
        (``played``: the strategies some of the real actions were drawn from, by hand)."""
        ranges = history_ranges(self.bp, state, self.hands, self.cache, played=played, upto_round=r)
        out = np.empty_like(ranges)
        for p in range(len(ranges)):
            row = ranges[p]
            if not row.sum() > 0:  # the blueprint reaches here with no hand: every unblocked one
                row = (ranges.sum(axis=0) > 0).astype(np.float64) if ranges.any() else np.ones(len(row))
            c = np.cumsum(row)
            out[p] = c / c[-1]
            out[p, -1] = 1.0
        return out

    def _round_buckets(self, state: State, r: int) -> np.ndarray:
        """int64 [H]: every hand's bucket in round ``r`` on the state's board (-1 where blocked)."""
        idx, bk = self.cache(tuple(int(c) for c in state.board_cards), r)
        out = np.full(len(self.hands), -1, np.int64)
        out[idx] = bk
        return out

    # -- answers --------------------------------------------------------------------------------
    def answer(
        self, matchstate: str | State, seconds: Optional[float] = None, played: Played = None
    ) -> SearchAnswer:
        """The strategy of the seat to act, who must be the state's viewer (module docstring);
        ``seconds`` bounds this search in place of the configuration's ``seconds``; ``played``
        (:data:`subgame.construct.Played`) the strategies, by hand, of earlier actions that
        were not the blueprint's (the searching seat's own earlier searched decisions: its
        :attr:`SearchAnswer.hands`)."""
        bp = self.bp
        state = viewer_decision(matchstate if isinstance(matchstate, State) else bp.game.state(matchstate))
        r = state.round
        if r < self.config.from_round:
            ans = bp.answer(state)
            return SearchAnswer(ans.strategy, "blueprint", 0, 0.0)
        path = bp.path(state)
        t = bp.tree
        m = sum(len(acts) for acts in state.betting.actions[:r])
        me = int(state.viewer)
        why = None
        if path is None:
            why = "the blueprint's tree has no node for the history"
        elif t.kind[path[-1]] != KIND_DECISION or int(t.player[path[-1]]) != me:
            why = f"the abstract history {t.betting_string(path[-1])!r} is not a decision of seat {me}"
        elif int(t.round[path[m]]) != r:
            why = f"the abstract history reaches round {int(t.round[path[m]])}, not round {r}"
        if why is not None:
            ans = bp.answer(state)
            return SearchAnswer(ans.strategy, "fallback", 0, 0.0, why)
        start = time.perf_counter()
        pb, rd = self.problem(state, path, played)
        cur = pb.cur
        sc = self._scratch(rd, int(t.num_actions[cur]))
        key = zlib.crc32(state.matchstate(me).encode())
        rng = seed_rng_state(np.random.SeedSequence([self.config.seed, key]))
        done = 0
        cap = self.config.iterations or MAX_ITERATIONS
        budget = self.config.seconds if seconds is None else seconds
        deadline = start + budget if budget is not None else math.inf
        while done < cap and (done == 0 or time.perf_counter() < deadline):
            step = min(CHUNK if done else 1, cap - done)
            MK.search_iterations(pb, sc, self._cards, done, step, self.maxa, rng)
            done += step
        self.stats += sc.stats
        acc = sc.acc / sc.acc.sum()
        na = len(acc)
        every = sc.acc_all.reshape(-1, na)
        total = every.sum(axis=1, keepdims=True)
        every = np.divide(every, total, out=np.zeros_like(every), where=total > 0)
        out: dict[str, float] = {}
        hands: dict[str, np.ndarray] = {}
        for a, (key_, p) in enumerate(zip(bp.action_keys(cur, state.betting), acc)):
            out[key_] = out.get(key_, 0.0) + float(p)
            hands[key_] = hands[key_] + every[:, a] if key_ in hands else every[:, a].copy()
        return SearchAnswer(out, "search", done, time.perf_counter() - start, None, hands)

    def problem(self, state: State, path: list[int], played: Played = None) -> tuple[MK.Problem, _Round]:
        """The kernel's problem for the decision ``state`` of its viewer, whose betting
        :meth:`~blueprint.blueprint.Blueprint.path` walked to ``path`` (a decision of the viewer,
        in the round the path's first node of the state's round is on)."""
        bp, t = self.bp, self.bp.tree
        r, me = state.round, int(state.viewer)
        flat = [a for acts in state.betting.actions for a in acts]
        m = sum(len(acts) for acts in state.betting.actions[:r])
        n0, cur = path[m], path[-1]
        rd = self._round(n0)
        frozen = np.full(t.num_nodes, -1, np.int64)
        for j in range(m, len(flat)):
            n = path[j]
            if int(t.player[n]) == me:
                s, na = int(t.child_start[n]), int(t.num_actions[n])
                frozen[n] = s + int(np.nonzero(t.edge_child[s : s + na] == path[j + 1])[0][0])
        my_hand = self._index[tuple(sorted(int(c) for c in state.hole_cards[me]))]
        board = np.asarray([int(c) for c in state.board_cards], np.int64)
        pb = MK.Problem(
            t.kind,
            t.player,
            t.round,
            t.spent,
            t.live,
            t.num_actions,
            t.child_start,
            t.edge_child,
            t.edge_kind,
            bp.probs,
            np.asarray(bp.row_offset, np.int64),
            rd.sub_off,
            rd.leaf_off,
            frozen,
            self._hands64,
            self._round_buckets(state, r),
            self._ranges(state, r, played),
            board,
            int(n0),
            me,
            my_hand,
            int(cur),
            self.config.continuations,
            float(self.config.bias),
        )
        return pb, rd

    def _scratch(self, rd: _Round, na_cur: int) -> MK.Scratch:
        g = self.bp.gamedef
        P = g.num_players
        ncards = P * g.num_hole_cards + g.total_board_cards
        H, k = len(self.hands), self.config.continuations
        return MK.Scratch(
            np.zeros(max(rd.regrets, 1)),
            np.zeros(max(rd.leaves * P * H * k, 1)),
            np.zeros(na_cur),
            np.zeros(H * na_cur),
            np.zeros(P, np.int64),
            np.zeros(ncards, np.int64),
            np.zeros(g.deck_size, np.bool_),
            np.zeros((P, g.num_rounds), np.int64),
            np.zeros(P, np.int64),
            np.zeros(P, np.int64),
            np.zeros(scratch_size(g.num_hole_cards, g.total_board_cards), np.int64),  # one seat at a time
            np.zeros(P, np.int64),
            np.zeros((rd.depth + 1) * self.maxa),
            np.zeros((rd.depth + 1) * self.maxa),
            np.zeros(rd.depth, np.int64),
            np.zeros(rd.depth, np.int64),
            np.zeros(rd.depth, np.int64),
            np.zeros(rd.depth),
            np.zeros(self.maxa),
            np.zeros(3, np.int64),
        )
