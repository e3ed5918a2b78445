"""The subgame solver's engine: the work arrays of one public tree and the walks over them.

An :class:`Engine` holds, for one tree and one support (the hands each seat may hold), the compact
hand lists (:class:`subgame.tree.HandLists`), the walk's work arrays and, for walks whose chance
nodes run on several threads, one set per thread. Its walks (:func:`subgame.kernels.walk`) give a
traverser's counterfactual values per hand for a strategy profile, run a CFR iteration, or a best
response; :meth:`Engine.exploitability` is two best-response walks. :func:`subgame.solver.solve`
drives an engine; a depth-limited tree has its own (:class:`subgame.depth_engine.DepthLimitedEngine`).

Several threads walk at once only while at most one solve runs in the process: the solves count
themselves in with :func:`counted_solve`.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Callable, Optional, TypeVar, cast

import numba
import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, BettingTree
from blueprint.range_kernels import fold_values_all
from subgame import kernels as K
from subgame.tree import SubgameError, board_hands, hand_lists

_PAR_LOCK = threading.Lock()  # held by the one walk that uses several threads (Engine.walk_compact)
_RUNNING = [0]  # solves running in this process: walks use several threads only while at most one is
_RUNNING_LOCK = threading.Lock()
_F = TypeVar("_F", bound=Callable)


def counted_solve(f: _F) -> _F:
    """``f`` (a solve) counted among the solves running in this process while it runs: an
    :class:`Engine` walks on several threads only while at most one runs."""

    @functools.wraps(f)
    def g(*args, **kwargs):
        with _RUNNING_LOCK:
            _RUNNING[0] += 1
        try:
            return f(*args, **kwargs)
        finally:
            with _RUNNING_LOCK:
                _RUNNING[0] -= 1

    return cast(_F, g)


class Engine:
    """Work arrays for one tree and one support (the hands each seat may hold, see
    :class:`subgame.tree.HandLists`), shared by solving and evaluation.

    :meth:`walk` takes and returns full-width vectors (``H`` hands, strategies ``(rows, H)``);
    :meth:`walk_compact` takes the compact strategy tables the solver keeps. Values of hands outside
    the traverser's support are 0 (the default support is every hand the root board does not block).

    ``threads``: how many threads walk a chance node's children (boards) at once; None: numba's
    thread count (``NUMBA_NUM_THREADS``, :func:`numba.get_num_threads`), 1: one thread. Values and
    tables are the same whatever the count (each board's values are summed in board order). One
    walk at a time in the process uses several threads, and only while at most one
    :func:`~subgame.solver.solve` runs: concurrent solves (e.g. the query service's) walk on one thread each. Walks also go
    back to one thread while that measures faster (a machine whose cores are all busy: see
    :meth:`_parallel_now`); ``threads=1`` (or ``NUMBA_NUM_THREADS=1``) never uses more.
    """

    def __init__(
        self,
        tree: BettingTree,
        dtype=np.float64,
        support: Optional[np.ndarray] = None,
        threads: Optional[int] = None,
    ):
        self.t = tree
        self.bh = bh = board_hands(tree)
        self.dtype = dtype
        self.lists = hl = hand_lists(tree, support)
        H = bh.num_hands
        D = int(K.max_depth(tree.kind, tree.child_start, tree.num_actions, tree.edge_child)) + 2
        A = max(1, int(tree.num_actions.max()))
        self.rbuf = np.zeros((D, 2, H), dtype)
        self.cv = np.zeros((D, A, H), dtype)
        self.sg = np.zeros((D, A, H), dtype)
        self.tmp = np.zeros((D, H), dtype)
        self.out = np.zeros(H, dtype)
        self.cacc = np.zeros(tree.game.deck_size, np.float64)
        self.tot = np.zeros(H, np.float64)
        self.rid = np.zeros((D, 2), np.int64)
        self.fn = np.zeros(D, np.int64)
        self.fa = np.zeros(D, np.int64)
        self.tree_arrays = K.walk_tree(tree)
        self.hand_arrays = hl.kernel_arrays()
        self.work = K.WalkWork(
            self.rbuf, self.cv, self.sg, self.tmp, self.cacc, self.tot, self.rid, self.fn, self.fa, self.out
        )
        self._dummy = np.zeros(1, np.float32)
        #: uint8 [N]: 1 at locked decision nodes, where best responses play sigma (set_locks)
        self.fixed = np.zeros(tree.num_nodes, np.uint8)
        self._root_reach = np.zeros((2, H), np.float64)
        b0 = tree.board[0]
        self._root_idx = [hl.idx[b0, s, : hl.nlive[b0, s]] for s in (0, 1)]
        self._outside = [bh.valid[b0] & ~hl.support[s] for s in (0, 1)]
        self._last_p = 0
        self._dims = (D, A, H)
        self.par_work: Optional[K.ParWork] = None
        self._wall: dict = {}  # (traverser, mode) -> smoothed wall seconds of a walk on (one, several) threads
        self._nwalks = 0
        self.parallel_walks = 0  # walks that used several threads
        self.set_threads(threads)

    #: walks between two tries of the slower of one and several threads (see :meth:`_parallel_now`)
    probe_every = 16

    def _parallel_now(self, key) -> bool:
        """Whether this walk uses several threads: only while at most one solve runs, and only
        while that has been faster in wall time for walks of this kind (traverser, mode). A walk
        of each kind runs first on one thread, the next on several; after that the faster one,
        the slower one again every :attr:`probe_every` walks (the machine's load changes: on a
        machine whose cores are busy, threads wait for each other and cost more than they give).
        Either way the results are the same."""
        if _RUNNING[0] > 1:
            return False
        one, par = self._wall.get(key, (None, None))
        if one is None:
            return False
        if par is None:
            return True
        self._nwalks += 1
        faster = par < 0.9 * one  # a clear gain only: timings on a loaded machine are noisy
        return (not faster) if self._nwalks % self.probe_every == 0 else faster

    def _timed(self, key, which: int, seconds: float) -> None:
        w = list(self._wall.get(key, (None, None)))
        w[which] = seconds if w[which] is None else 0.5 * (w[which] + seconds)
        self._wall[key] = (w[0], w[1])

    def set_threads(self, threads: Optional[int] = None) -> None:
        """Walk chance nodes' children on ``threads`` threads (None: numba's count; see the class)."""
        n = numba.get_num_threads() if threads is None else int(threads)
        if n < 1:
            raise SubgameError(f"threads must be at least 1, got {n}")
        t = self.t
        n = min(n, int(getattr(numba.config, "NUMBA_NUM_THREADS"))) if (t.kind == KIND_CHANCE).any() else 1
        self.threads = n
        if n <= 1:
            self.par_work = None
        elif self.par_work is None or self.par_work.rbuf.shape[0] != n:
            D, A, H = self._dims
            self.par_work = K.par_work(t, n, D, A, H, self.dtype)

    #: an exploitability check's cost in iterations, over 2 (a depth-limited engine that samples deals
    #: in iterations checks with every deal)
    measure_factor = 1.0

    def set_measure_sample(self, cards: Optional[int], seed: int = 0) -> Optional[int]:
        """A full-depth subgame has no next deal to sample: its checks are always exact (None)."""
        return None

    @property
    def size(self) -> int:
        """Length of the compact strategy tables."""
        return self.lists.size

    def memory_bytes(self) -> int:
        par = sum(a.nbytes for a in self.par_work) if self.par_work is not None else 0
        return (
            self.lists.memory_bytes()
            + sum(a.nbytes for a in (self.rbuf, self.cv, self.sg, self.tmp, self.out, self.tot))
            + par
        )

    def compress(self, sigma: np.ndarray) -> np.ndarray:
        """A full ``(rows, H)`` strategy in the compact layout (the engine's dtype)."""
        t, hl = self.t, self.lists
        H = self.bh.num_hands
        if sigma.shape != (t.num_rows, H):
            raise SubgameError(f"strategy must be {t.num_rows} x {H}, got shape {sigma.shape}")
        out = np.empty(hl.size, self.dtype)
        K.compress_strategy(
            sigma, out, t.kind, t.num_actions, t.board, t.player, t.row, hl.coff, hl.nlive, hl.idx
        )
        return out

    def expand(self, comp: np.ndarray) -> np.ndarray:
        """A compact strategy as float32 ``(rows, H)`` (uniform for hands outside the lists)."""
        t, hl = self.t, self.lists
        out = np.empty((t.num_rows, self.bh.num_hands), np.float32)
        K.expand_strategy(
            comp, out, t.kind, t.num_actions, t.board, t.player, t.row, hl.coff, hl.nlive, hl.idx
        )
        return out

    def average(self, acc: np.ndarray) -> np.ndarray:
        """Compact normalised strategy from compact accumulators (regret matching; uniform where none)."""
        t, hl = self.t, self.lists
        out = np.empty(hl.size, self.dtype)
        K.strategy_from_compact(acc, out, t.kind, t.num_actions, t.board, t.player, hl.coff, hl.nlive)
        return out

    def walk_compact(
        self, sigma_c, root_reach, p, mode, regret=None, strat_sum=None, w=(1.0, 1.0, False, 1.0, 0.0)
    ) -> np.ndarray:
        """Traverser ``p``'s root values (float64, ``H``) for compact ``sigma_c`` (unused in
        :data:`MODE_CFR <subgame.kernels.MODE_CFR>`, which plays regret matching of ``regret``)."""
        rr = self._root_reach
        for s in (0, 1):
            r = root_reach[s]
            if (r[self._outside[s]] != 0).any():
                raise SubgameError(f"seat {s}'s reach gives weight to hands outside the engine's support")
            rr[s, : len(self._root_idx[s])] = r[self._root_idx[s]]
        sigma_c = np.zeros(1, self.dtype) if sigma_c is None else sigma_c
        regret = self._dummy if regret is None else regret
        strat_sum = self._dummy if strat_sum is None else strat_sum
        args = (
            self.tree_arrays,
            self.hand_arrays,
            K.WalkState(sigma_c, regret, strat_sum, self.fixed),
            rr,
            K.walk_options(p, mode, w),
            self.work,
        )
        pw = self.par_work
        key = (p, mode)
        if pw is not None and self._parallel_now(key) and _PAR_LOCK.acquire(blocking=False):
            try:  # one multi-threaded walk at a time (numba's workqueue threads are not re-entrant)
                t0 = time.perf_counter()
                K.chance_reach(*args, pw)
                prev = numba.get_num_threads()
                numba.set_num_threads(self.threads)
                try:
                    with numba.parallel_chunksize(1):  # boards to threads as they come free
                        K.chance_tasks(args[0], args[1], args[2], args[4], pw)
                finally:
                    numba.set_num_threads(prev)
                K.walk(*args, pw, 0, None, None, None)
                self._timed(key, 1, time.perf_counter() - t0)
                self.parallel_walks += 1
            finally:
                _PAR_LOCK.release()
        else:
            t0 = time.perf_counter()
            K.walk(*args, None, 0, None, None, None)
            if pw is not None:
                self._timed(key, 0, time.perf_counter() - t0)
        self._last_p = p
        v = np.zeros(self.bh.num_hands)
        ri = self._root_idx[p]
        v[ri] = self.out[: len(ri)]
        return v

    def walk(self, sigma, root_reach, p, mode) -> np.ndarray:
        """Traverser ``p``'s root values (float64, ``H``) when the seats play the full-width ``sigma``
        (mode 1: ``p`` best-responds)."""
        if mode == K.MODE_CFR:
            raise SubgameError("a CFR walk keeps compact tables: use walk_compact")
        return self.walk_compact(self.compress(sigma), root_reach, p, mode)

    def root_child_values(self) -> np.ndarray:
        """``[A, H]``: the last walk's traverser values of each child of the root (a decision)."""
        t = self.t
        if t.kind[0] != KIND_DECISION:
            raise SubgameError("the root is not a decision")
        ri = self._root_idx[self._last_p]
        out = np.zeros((int(t.num_actions[0]), self.bh.num_hands))
        out[:, ri] = self.cv[0, : out.shape[0], : len(ri)]
        return out

    def compat_mass(self, r: np.ndarray) -> np.ndarray:
        """Per hand, the total of ``r`` over hands compatible with it (and with the root board)."""
        return self.compat_mass_of(self.t, r)

    @staticmethod
    def compat_mass_of(t: BettingTree, r: np.ndarray) -> np.ndarray:
        b = t.board[0]
        bh = board_hands(t)
        out = np.zeros(bh.num_hands)
        fold_values_all(
            np.where(bh.valid[b], r, 0.0), bh.valid[b], bh.hands, 1.0, np.zeros(t.game.deck_size), out
        )
        return out

    def exploitability(
        self, ranges: np.ndarray, sigma_c: np.ndarray
    ) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
        """(exploitability in chips, (best-response values of seat 0, of seat 1) per hand) of the
        compact strategy ``sigma_c`` against ``ranges`` ``[2, H]``: two best-response walks."""
        r = ranges
        v0 = self.walk_compact(sigma_c, r, 0, K.MODE_BR)
        v1 = self.walk_compact(sigma_c, r, 1, K.MODE_BR)
        z = float(r[0] @ self.compat_mass(r[1]))
        return (float(r[0] @ v0) + float(r[1] @ v1)) / 2.0 / z, (v0, v1)
