"""The admission models of a solving responder (:class:`mccfr.serving.solving.SolvingResponder`):
before a solve starts, how long it takes to become useful (:class:`CostModel`, per betting round,
learned from earlier solves) and how much memory it will hold at its peak (:class:`SizeModel`,
from the blueprint's tree and the hand counts, corrected by the real sizes measured). A query whose
solve would not be useful before its deadline, or would not fit the memory budget, is answered
from the blueprint at once."""

from __future__ import annotations

import threading
from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np

from abstraction.tree import KIND_DECISION

if TYPE_CHECKING:
    from blueprint.blueprint import Blueprint


class CostModel:
    """Per betting round, the seconds a solve takes to become useful (construction, tree, engine
    and the minimum iterations; not the final exploitability check, which a solve skips when its
    deadline leaves no time for it): a moving average of the solves that were useful; one that was
    not (too few iterations) raises it to at least the time it ran, one that never iterated (its
    construction outlasted the budget) to at least twice that time and twice the estimate
    (exponential back-off); each query it turns away lowers it by 1%.

    Solves of one round differ in size (a turn subgame first to act has several times the
    continuations of one facing a bet): given ``units`` (a measure of the solve's size, the
    :class:`SizeModel`'s uncorrected estimate), the model learns, by the same rules, the seconds
    per unit as well, and :meth:`get` with ``units`` scales that rate to the solve at hand (the
    round's plain figure where no rate has been learned yet)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._est: dict[int, float] = {}
        self._rate: dict[int, float] = {}  # seconds per unit of size

    def get(self, rnd: int, units: float | None = None) -> float:
        with self._lock:
            if units and rnd in self._rate:
                return self._rate[rnd] * units
            return self._est.get(rnd, 0.0)

    def finished(self, rnd: int, seconds: float, units: float | None = None) -> None:
        with self._lock:
            old = self._est.get(rnd)
            self._est[rnd] = seconds if old is None else 0.7 * old + 0.3 * seconds
            if units:
                r = seconds / units
                old = self._rate.get(rnd)
                self._rate[rnd] = r if old is None else 0.7 * old + 0.3 * r

    def failed(self, rnd: int, seconds: float, backoff: bool, units: float | None = None) -> None:
        """A solve that was not useful after ``seconds``: a useful one takes longer than that;
        with ``backoff`` (it never reached an iteration in its whole budget) twice the time it ran
        and twice the estimate that let it start: a round too slow to solve at all is tried again
        ever more rarely."""
        with self._lock:
            old = self._est.get(rnd, 0.0)
            # a solve that never iterated in its whole budget was cut off in its construction (the
            # construction's checkpoints): a useful one takes longer than the time it had, so back off
            self._est[rnd] = max(2.0 * seconds, 2.0 * old) if backoff else max(seconds, old)
            if units:
                r, old = seconds / units, self._rate.get(rnd, 0.0)
                self._rate[rnd] = max(2.0 * r, 2.0 * old) if backoff else max(r, old)

    def decay(self, rnd: int, factor: float = 0.99) -> None:
        """A query refused on the estimate: lower it a little (after enough refusals the round is
        tried again, in case the machine got faster or quieter)."""
        with self._lock:
            if rnd in self._est:
                self._est[rnd] *= factor
            if rnd in self._rate:
                self._rate[rnd] *= factor

    def clear(self) -> None:
        with self._lock:
            self._est.clear()
            self._rate.clear()

    def snapshot(self) -> dict[int, float]:
        with self._lock:
            return dict(self._est)


class SizeModel:
    """What a solve of a state will hold in memory, in bytes, before it runs.

    From the tree and hand counts: the blueprint's subtree below the state's abstract node gives
    the decision rows and nodes per later round, multiplied by the boards each round deals (a
    turn subgame has 1 + 48 boards in hold'em); with ``H`` private hands a solve holds about
    ``12 H`` bytes per row (its regret and average tables and the expanded strategy, float32),
    ``~120 H`` per board (card data, hand lists) and some per node. A state before the last round
    is solved depth-limited (:mod:`subgame.depth`): its subgame ends with the round, so only that
    round's rows count (with ``~96 H`` bytes per row for the leaves' continuation choices), plus
    ``~40 KB`` per blueprint row of the next round for the continuation strategies the leaves walk
    (stored per card bucket, not per hand). After each solve the real figure (the solver's
    ``state_bytes`` plus the :func:`~subgame.cache.nbytes` of the solution) is compared with the
    estimate and the round's correction factor learns the ratio (the largest recent one, decaying
    by 5% a solve and by 1% a solve refused for memory), so later estimates track the real size
    (``/metrics`` shows both). Before a round's first solve the factor is :attr:`PRIOR`: subgames
    are solved with finer bets than the blueprint's (4.5 times its rows on a hunl20 river), so the
    first estimate errs high rather than low."""

    ROW_BYTES = 12  # per row and hand
    BOARD_BYTES = 120  # per board and hand
    NODE_BYTES = 64  # per node
    HAND_BYTES = 96  # per hand (ranges, values, gifts)
    LEAF_BYTES = 96  # depth-limited: per row and hand (leaf choices' regrets, sums, average: 3 x 4 x 8)
    CONT_ROW_BYTES = 40_000  # depth-limited: per blueprint row of the next round (the continuations)
    PRIOR = 5.0  # the correction factor before a round's first solve

    def __init__(self, bp: Blueprint):
        self.bp = bp
        g = bp.gamedef
        self.hands = comb(g.deck_size, g.num_hole_cards)
        self._lock = threading.Lock()
        self._per_node: tuple | None = None
        self.factor: dict[int, float] = {}
        self.last: dict[int, dict[str, int]] = {}  # per round: the last estimate and real size

    def _subtrees(self):
        """Per abstract node and round, the decision rows and nodes of its subtree (numpy, once)."""
        if self._per_node is None:
            t = self.bp.tree
            N, R = int(t.num_nodes), self.bp.gamedef.num_rounds
            parent = np.asarray(t.parent, np.int64)
            rnd = np.clip(np.asarray(t.round, np.int64), 0, R - 1)
            dec = np.asarray(t.kind) == KIND_DECISION
            rows = np.zeros((N, R), np.int64)
            nodes = np.zeros((N, R), np.int64)
            rows[np.arange(N), rnd] = np.where(dec, np.asarray(t.num_actions, np.int64), 0)
            nodes[np.arange(N), rnd] = 1
            depth = np.zeros(N, np.int64)
            has = parent >= 0
            for _ in range(N):  # depth by relaxation: as many passes as the tree is deep
                new = np.where(has, depth[np.maximum(parent, 0)] + 1, 0)
                if np.array_equal(new, depth):
                    break
                depth = new
            for d in range(int(depth.max(initial=0)), 0, -1):
                lvl = np.nonzero(depth == d)[0]
                np.add.at(rows, parent[lvl], rows[lvl])
                np.add.at(nodes, parent[lvl], nodes[lvl])
            self._per_node = (rows, nodes)
        return self._per_node

    def _node(self, state) -> int | None:
        """The blueprint's abstract node of ``state`` (its subtree counts computed once); None
        when the tree has no node for it."""
        try:
            with self._lock:
                self._subtrees()
            w = self.bp.walk(state)
            return None if w.dead_end is not None else int(w.node)
        except Exception:  # noqa: BLE001 - no estimate from the tree: the caller uses the round's last
            return None

    def shape(self, state) -> tuple[int, int, int] | None:
        """(rows, nodes, boards) of the subgame at ``state``, estimated; None when the blueprint
        has no node for it."""
        n = self._node(state)
        if n is None:
            return None
        rows_n, nodes_n = self._subtrees()
        g = self.bp.gamedef
        left = g.deck_size - g.board_cards_through(state.round)
        boards, mult = 0, 1
        rows = nodes = 0
        for r in range(state.round, g.num_rounds):
            if r > state.round:
                new = g.board_cards_through(r) - g.board_cards_through(r - 1)
                mult *= comb(left, new)
                left -= new
                nodes += mult  # the chance nodes dealing it (about one per board)
            boards += mult
            rows += int(rows_n[n, r]) * mult
            nodes += int(nodes_n[n, r]) * mult
        return rows, nodes, boards

    def raw(self, state) -> int | None:
        H = self.hands
        r = state.round
        if r < self.bp.gamedef.num_rounds - 1:  # depth-limited: this round's tree, the next's continuations
            n = self._node(state)
            if n is None:
                return None
            rows_n, nodes_n = self._subtrees()
            return (
                (self.ROW_BYTES + self.LEAF_BYTES) * H * int(rows_n[n, r])
                + self.NODE_BYTES * int(nodes_n[n, r])
                + self.HAND_BYTES * H
                + self.CONT_ROW_BYTES * int(rows_n[n, r + 1])
            )
        s = self.shape(state)
        if s is None:
            return None
        rows, nodes, boards = s
        return (
            self.ROW_BYTES * H * rows
            + self.BOARD_BYTES * H * boards
            + self.NODE_BYTES * nodes
            + self.HAND_BYTES * H
        )

    def estimate(self, state) -> tuple[int, int | None]:
        """(bytes a solve of ``state`` will hold at its peak, the uncorrected estimate)."""
        raw = self.raw(state)
        with self._lock:
            if raw is None:  # no shape: the largest the round has held
                last = self.last.get(state.round)
                return (last["actual"] if last else 0), None
            return int(raw * self.factor.get(state.round, self.PRIOR)), raw

    def refused(self, rnd: int, factor: float = 0.99) -> None:
        """A solve of round ``rnd`` refused on its estimate: lower the round's correction a little,
        so that one outsized solve (a nested subgame far bigger than the blueprint's subtree
        suggests) does not keep every later solve of the round out of the budget for good."""
        with self._lock:
            if rnd in self.factor:
                self.factor[rnd] *= factor

    def observe(self, rnd: int, raw: int | None, estimate: int, actual: int) -> None:
        with self._lock:
            self.last[rnd] = {"estimate": int(estimate), "actual": int(actual)}
            if raw:
                ratio = actual / raw
                self.factor[rnd] = max(ratio, 0.95 * self.factor.get(rnd, ratio))

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "correction": {str(r): round(f, 3) for r, f in sorted(self.factor.items())},
                "last_solve": {str(r): dict(v) for r, v in sorted(self.last.items())},
            }


__all__ = ["CostModel", "SizeModel"]
