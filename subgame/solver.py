"""Solving a subgame: CFR+ or DCFR over hand ranges, with the safe-solving gadgets.

A :class:`Subgame` is a public root (betting state and board), each seat's reach of every private
hand there (its *range*), a bet abstraction for the rest of the hand, and, for the safe methods,
the opponent's alternative values. The seat being refined is ``refine`` (the player whose strategy
we will play); the other seat is the *opponent*, whose hands the gadgets protect against.

Values are counterfactual: the opponent's value of hand ``h`` is ``sum_{h'} r(h') u(h, h')`` over the
refined seat's hands ``h'`` compatible with ``h``, with ``r`` the refined seat's range (chips, net
for the whole hand). ``alt[h]`` (the opponent's best-response value against the blueprint, in those
units) is what it could get by playing to this subgame differently, or by the blueprint itself.

Methods:

``unsafe``            both seats' ranges from the blueprint, solved as a game of its own.
``resolve``           (Burch et al. 2014) the opponent may, per hand, take ``alt[h]`` instead of
                      entering; its entering hands keep their blueprint weights.
``maxmargin``         (Moravcik et al. 2016) the opponent picks the hand it enters with, paid the
                      margin ``(value - alt) / w`` (``w[h]`` its compatible mass of refined-seat
                      hands): CFR on this gadget maximises the minimum margin.
``reach-maxmargin``   (Brown & Sandholm 2017) maxmargin with ``alt + gifts``: what the opponent gave
                      up by its earlier actions on the path, which the refined seat may give back.
``estimate``          maxmargin with the blueprint's own values of the opponent instead of its best
                      response values (not safe).
``reach-estimate``    estimate with gifts measured on those values (not safe).

Exploitability follows OpenSpiel: (best-response value of seat 0 + of seat 1) / 2, in chips per
subgame (each seat's hands weighted by the ranges), and as a percentage of the starting pot. For the
gadget methods the reported ``exploitability`` is half the saddle-point gap of the gadget game they
solve (its NashConv / 2); ``subgame_exploitability`` is the profile's in the plain subgame.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional, TypeVar, cast

import numpy as np

from abstraction.bets import BetAbstraction
from abstraction.tree import KIND_CHANCE, KIND_DECISION, BettingTree
from blueprint.algo import SUBGAME_DCFR_GAMMA, SUBGAME_DCFR_REGRET_LAG, dcfr_factors
from blueprint.vector_cfr import fold_values_all
from holdem.betting import Betting

if TYPE_CHECKING:
    from subgame.depth import DepthLimit
from holdem.gamedef import GameDef
from subgame import kernels as K
from subgame.tree import SubgameError, board_hands, build_subgame_tree, hand_lists

METHODS = ("unsafe", "resolve", "maxmargin", "reach-maxmargin", "estimate", "reach-estimate")
SAFE = ("resolve", "maxmargin", "reach-maxmargin")
_PAR_LOCK = threading.Lock()  # held by the one walk that uses several threads (Engine.walk_compact)
_RUNNING = [0]  # solves running in this process: walks use several threads only while at most one is
_RUNNING_LOCK = threading.Lock()
_F = TypeVar("_F", bound=Callable)


def _counted(f: _F) -> _F:
    """``f`` counted in :data:`_RUNNING` while it runs."""

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


ALGOS = ("dcfr", "cfr+")


@dataclasses.dataclass
class Subgame:
    game: GameDef
    root: Betting
    board: tuple[int, ...]
    ranges: np.ndarray  # float64 [2, H]
    bets: Optional[BetAbstraction]
    refine: Optional[int] = None  # seat being refined (default: the seat to act at the root)
    alt: Optional[np.ndarray] = None  # opponent's best-response values against the blueprint [H]
    estimate: Optional[np.ndarray] = None  # opponent's values under the blueprint itself [H]
    gifts: Optional[np.ndarray] = None  # [H], for reach-maxmargin (same units as alt)
    estimate_gifts: Optional[np.ndarray] = None  # [H], for reach-estimate
    tree: Optional[BettingTree] = None  # the public tree (built by public_tree())
    action_filter: Optional[Callable[[Betting, list], list]] = None
    depth_limit: Optional["DepthLimit"] = None  # the tree ends with the root's round (subgame.depth)

    def __post_init__(self) -> None:
        self.board = tuple(int(c) for c in self.board)
        if self.refine is None:
            self.refine = self.root.current_player()

    @property
    def seat(self) -> int:
        """The refined seat (``refine``, set from the root by the constructor when not given)."""
        assert self.refine is not None
        return self.refine

    @property
    def opponent(self) -> int:
        return 1 - self.seat

    @property
    def pot(self) -> int:
        return self.root.pot()

    def public_tree(self) -> BettingTree:
        if self.tree is None:
            if self.depth_limit is not None:
                from subgame.depth import build_depth_limited_tree

                self.tree = build_depth_limited_tree(
                    self.game, self.root, self.board, self.bets, action_filter=self.action_filter
                )
            else:
                self.tree = build_subgame_tree(
                    self.game, self.root, self.board, self.bets, action_filter=self.action_filter
                )
            self.validate()
        return self.tree

    def engine(
        self, dtype=np.float64, support: Optional[np.ndarray] = None, threads: Optional[int] = None
    ) -> "Engine":
        """The solver's :class:`Engine` for this subgame's tree (a depth-limited subgame's values
        its leaves, :mod:`subgame.depth`, whose walks use one thread). ``threads``: see :class:`Engine`."""
        t = self.public_tree()
        if self.depth_limit is None:
            return Engine(t, dtype, support, threads)
        from subgame.depth import build_leaf_model, make_engine

        dl = self.depth_limit
        if dl.model is None or dl.model.me != self.seat:
            dl.model = build_leaf_model(t, dl.blueprint, self.seat, dl, dl.max_nodes)
        return make_engine(t, dtype, support, dl.model, dl)

    def validate(self) -> None:
        t = self.public_tree() if self.tree is None else self.tree
        bh = board_hands(t)
        H = bh.num_hands
        r = np.asarray(self.ranges, np.float64)
        if r.shape != (2, H):
            raise SubgameError(f"ranges must be 2 x {H} weights (one per hand), got shape {r.shape}")
        if not np.all(np.isfinite(r)) or (r < 0).any():
            raise SubgameError("ranges must be finite and non-negative")
        blocked = ~bh.valid[t.board[0]]
        for s in (0, 1):
            bad = np.nonzero(blocked & (r[s] > 0))[0]
            if len(bad):
                from holdem.cards import cards_str

                h = bh.hands[bad[0]]
                raise SubgameError(
                    f"seat {s}'s range gives weight {r[s, bad[0]]:g} to {cards_str(h.tolist(), self.game.num_suits)}, "
                    f"which shares a card with the board ({len(bad)} such hands)"
                )
            if r[s].sum() <= 0:
                raise SubgameError(f"seat {s}'s range is empty (all weights zero)")
        self.ranges = r
        for name in ("alt", "estimate", "gifts", "estimate_gifts"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, np.float64)
                if v.shape != (H,) or not np.all(np.isfinite(v)):
                    raise SubgameError(f"{name} must be {H} finite values (one per opponent hand)")
                setattr(self, name, v)


@dataclasses.dataclass
class Solution:
    subgame: Subgame
    method: str
    strategy: np.ndarray  # float32 [rows, H]: average strategy of every decision node
    iterations: int
    elapsed_s: float
    # the exploitability fields and br_values are None when a deadline left no time to measure them
    exploitability: Optional[
        float
    ]  # chips: NashConv / 2 of the game solved (the subgame, or the method's gadget game)
    exploitability_pct_pot: Optional[float]
    subgame_exploitability: Optional[
        float
    ]  # chips: NashConv / 2 of the strategy profile in the subgame with the ranges
    gadget_gap: Optional[float]  # gadget methods: saddle-point gap (NashConv) of the gadget game (chips)
    min_margin: Optional[float]  # min over opponent hands of (alt - best-response value) / w (chips)
    br_values: Optional[
        tuple[np.ndarray, np.ndarray]
    ]  # each seat's best-response values per hand (cf; 0 outside its support)
    history: list  # (iteration, seconds, exploitability chips)
    state_bytes: int = 0  # the solver's memory: tree, hand lists, work arrays, regret and average tables
    timing: dict = dataclasses.field(default_factory=dict)  # tree_s, iter_s, measure_s (seconds)
    # depth-limited subgames checked on a sample of the next deal's cards (solve's measure_samples):
    # how many; None when the check walked every card (exact) or there was none
    measure_cards: Optional[int] = None

    @property
    def tree(self) -> BettingTree:
        t = self.subgame.tree
        assert t is not None  # solved subgames have their tree
        return t

    def node_strategy(self, n: int) -> dict[str, np.ndarray]:
        t = self.tree
        if t.kind[n] != KIND_DECISION:
            raise SubgameError(f"node {n} is not a decision")
        r0 = int(t.row[n])
        return {lab: self.strategy[r0 + a] for a, lab in enumerate(t.action_labels(n))}

    def root_strategy(self) -> dict[str, np.ndarray]:
        """Per action at the root, the probability for each hand of the seat to act."""
        return self.node_strategy(0)

    def hand_strategy(self, hand: tuple[int, ...], n: int = 0) -> dict[str, float]:
        from subgame.tree import hand_index

        i = hand_index(self.tree.game)[tuple(sorted(hand))]
        return {k: float(v[i]) for k, v in self.node_strategy(n).items()}

    def diagnostics(self) -> dict:
        t = self.tree
        return {
            "method": self.method,
            "iterations": self.iterations,
            "elapsed_ms": round(self.elapsed_s * 1000, 1),
            "exploitability": self.exploitability,
            "exploitability_pct_pot": self.exploitability_pct_pot,
            "subgame_exploitability": self.subgame_exploitability,
            "gadget_gap": self.gadget_gap,
            "min_margin": self.min_margin,
            "pot": self.subgame.pot,
            "nodes": t.num_nodes,
            "hands": board_hands(t).num_hands,
            "boards": len(t.boards),
            "memory_mb": round(self.state_bytes / 2**20, 1),
            **self.depth_diagnostics(),
        }

    @property
    def leaf_cards(self) -> Optional[int]:
        """A depth-limited solve whose later deals came from a fixed sample of the cards (a flop's,
        :attr:`subgame.depth.DepthLimit.leaf_cards`): that many cards; else None (every card)."""
        dl = self.subgame.depth_limit
        m = dl.model if dl is not None else None
        return None if m is None or m.sample is None else len(m.sample)

    def depth_diagnostics(self) -> dict:
        """A depth-limited solve's leaves (its exploitability fields are the depth-limited game's)."""
        dl = self.subgame.depth_limit
        if dl is None:
            return {"depth_limited": False}
        m = dl.model
        return {
            "depth_limited": True,
            "continuations": list(dl.continuations),
            "bias": dl.bias,
            "leaves": m.num_leaves if m is not None else None,
            "continuation_nodes": m.num_nodes if m is not None else None,
            "leaf_build_ms": round(m.build_s * 1000, 1) if m is not None else None,
            # the cards the later deals came from (None: every card)
            "leaf_cards": m.sample.tolist()  # sorted (build_leaf_model)
            if m is not None and m.sample is not None
            else None,
            # or the deals per later round of its sampled runouts (None: every deal)
            "leaf_deals": list(m.leaf_deals) if m is not None and m.leaf_deals is not None else None,
        }


class Engine:
    """Work arrays for one tree and one support (the hands each seat may hold, see
    :class:`subgame.tree.HandLists`), shared by solving and evaluation.

    :meth:`walk` takes and returns full-width vectors (``H`` hands, strategies ``(rows, H)``);
    :meth:`walk_compact` takes the compact strategy tables the solver keeps. Values of hands outside
    the traverser's support are 0 (the default support is every hand the root board does not block).

    ``threads``: how many threads walk a chance node's children (boards) at once; None: numba's
    thread count (``NUMBA_NUM_THREADS``, :func:`numba.get_num_threads`), 1: one thread. Values and
    tables are the same whatever the count (each board's values are summed in board order). One
    walk at a time in the process uses several threads, and only while at most one :func:`solve`
    runs: concurrent solves (e.g. the query service's) walk on one thread each. Walks also go
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
        import numba

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
            K.WalkState(sigma_c, regret, strat_sum),
            rr,
            K.walk_options(p, mode, w),
            self.work,
        )
        pw = self.par_work
        key = (p, mode)
        if pw is not None and self._parallel_now(key) and _PAR_LOCK.acquire(blocking=False):
            try:  # one multi-threaded walk at a time (numba's workqueue threads are not re-entrant)
                import numba

                t0 = time.perf_counter()
                K.chance_reach(*args, pw)
                prev = numba.get_num_threads()
                numba.set_num_threads(self.threads)
                try:
                    with numba.parallel_chunksize(1):  # boards to threads as they come free
                        K.chance_tasks(args[0], args[1], args[2], args[4], pw)
                finally:
                    numba.set_num_threads(prev)
                K.walk(*args, pw, 0)
                self._timed(key, 1, time.perf_counter() - t0)
                self.parallel_walks += 1
            finally:
                _PAR_LOCK.release()
        else:
            t0 = time.perf_counter()
            K.walk(*args, None, 0)
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
        fold_values_all(np.where(bh.valid[b], r, 0.0), bh.valid[b], bh.hands, 1.0, t.game.deck_size, out)
        return out


def exploitability(sub: Subgame, sigma: np.ndarray, engine: Optional[Engine] = None):
    """(exploitability in chips, [BR values of seat 0, seat 1] per hand) of the full-width ``sigma`` in ``sub``."""
    e = engine or Engine(sub.public_tree())
    return _exploitability(sub.ranges, e, e.compress(sigma))


def _exploitability(r: np.ndarray, e: Engine, sigma_c: np.ndarray):
    v0 = e.walk_compact(sigma_c, r, 0, K.MODE_BR)
    v1 = e.walk_compact(sigma_c, r, 1, K.MODE_BR)
    z = float(r[0] @ e.compat_mass(r[1]))
    return (float(r[0] @ v0) + float(r[1] @ v1)) / 2.0 / z, (v0, v1)


def iteration_weights(algo: str, t: int) -> tuple[float, float, bool, float, float]:
    """The kernel's weights of iteration ``t >= 1``: (positive regret factor, negative regret
    factor, CFR+ flooring, strategy-sum factor, weight of this iteration's strategy). ``dcfr``
    discounts with :func:`blueprint.algo.dcfr_factors`: the strategy sum at boundary ``t - 1``
    with exponent :data:`~blueprint.algo.SUBGAME_DCFR_GAMMA`, the regrets at boundary
    ``t - 1 - SUBGAME_DCFR_REGRET_LAG`` (at least 0); ``cfr+`` floors regrets and weights iteration
    ``t`` by ``t`` (linear averaging)."""
    if algo == "dcfr":
        _, _, strat = dcfr_factors(t - 1, gamma=SUBGAME_DCFR_GAMMA)
        pos, neg, _ = dcfr_factors(max(t - 1 - SUBGAME_DCFR_REGRET_LAG, 0))
        return (pos, neg, False, strat, 1.0)
    return (1.0, 1.0, True, 1.0, float(t))


def _rm(x: np.ndarray) -> np.ndarray:
    pos = np.maximum(x, 0.0)
    s = pos.sum(axis=-1, keepdims=True)
    n = x.shape[-1]
    return np.where(s > 0, pos / np.where(s > 0, s, 1.0), 1.0 / n)


class SolveInterrupted(Exception):
    """A solve given ``stop`` or ``deadline`` was stopped before it could do anything useful
    (raised between the steps of :func:`subgame.nested.solve_state`)."""


_scope = threading.local()


@contextlib.contextmanager
def interruptible(deadline: Optional[float], stop=None):
    """Within the block (in this thread), :func:`checkpoint` raises :class:`SolveInterrupted` once
    ``stop`` is set or ``deadline`` has passed: the subgame's construction (ranges, the blueprint's
    values, the depth-limited continuations: seconds of Python on a loaded machine) calls it
    between its steps, so a query's deadline ends it there instead of after it."""
    old = getattr(_scope, "bounds", None)
    _scope.bounds = (deadline, stop)
    try:
        yield
    finally:
        _scope.bounds = old


def checkpoint() -> None:
    """:func:`check_interrupt` with the bounds of the enclosing :func:`interruptible` block, if any."""
    bounds = getattr(_scope, "bounds", None)
    if bounds is not None:
        check_interrupt(*bounds)


def check_interrupt(deadline: Optional[float], stop=None) -> None:
    """:class:`SolveInterrupted` when ``stop`` (a :class:`threading.Event`) is set or the
    ``deadline`` (a :func:`time.perf_counter` instant) has passed."""
    if stop is not None and stop.is_set():
        raise SolveInterrupted("the solve was cancelled")
    if deadline is not None and time.perf_counter() >= deadline:
        raise SolveInterrupted("the solve's deadline passed before it started iterating")


@_counted
def solve(
    sub: Subgame,
    method: str = "unsafe",
    iterations: Optional[int] = None,
    time_budget: Optional[float] = None,
    target_pct_pot: Optional[float] = None,
    algo: str = "dcfr",
    check_every: int = 10,
    precision: str = "single",
    deadline: Optional[float] = None,
    stop=None,
    threads: Optional[int] = None,
    measure_samples: Optional[int] = None,
) -> Solution:
    """Solve ``sub`` with ``method`` until ``iterations``, ``time_budget`` seconds, or an
    exploitability (unsafe) / gadget gap (other methods) of ``target_pct_pot`` % of the pot.

    With a target, the exploitability is checked (two best-response walks) at iteration
    ``check_every``, then three quarters of the way to where the fall between the last two checks
    (fitted as ``t^-alpha``, ``alpha`` in [0.5, 2.5], 1 after the first check) would reach the
    target, at least ``check_every // 5`` and at most ``4 * check_every`` iterations on.

    ``deadline`` (a :func:`time.perf_counter` instant) is a hard limit on the whole call: before
    every iteration the loop checks that the iteration (as long as the slowest recent one) and the
    final exploitability check (two or, for the gadget methods, three best-response walks: one or
    one and a half mean iterations, times the engine's ``measure_factor``) still fit, and stops
    otherwise (possibly after zero iterations: the strategy is then uniform); once the check could
    no longer fit at all, the loop iterates up to the deadline instead. The final check is skipped
    when it no longer fits, and the exploitability fields are then None. ``stop`` (a :class:`threading.Event`) ends
    the loop at the next iteration, also skipping the final check. ``Solution.timing`` has the
    seconds spent building the tree, per iteration and in the final check.

    ``precision``: ``single`` keeps the walk's reach and value vectors in float32 (terminal sums in
    float64), ``double`` in float64; regrets and average strategies are float32 either way.

    ``threads``: threads that walk the boards of a chance node at once (:class:`Engine`; None:
    numba's thread count) while this is the only solve running in the process (concurrent solves
    walk on one thread each). The result does not depend on it.

    ``measure_samples``: a depth-limited subgame's exploitability checks walk this many of the next
    deal's cards, a fixed uniform sample, instead of all of them (:mod:`subgame.depth`: an estimate
    that errs high on average, for a check that must fit a time budget; ``Solution.measure_cards``
    records it): always without a deadline; with one, when an exact check (priced after the
    second iteration) would take more than a quarter of the time from the call to the deadline, or
    when at the end only a sampled check still fits.
    Ignored for full-depth subgames, whose checks are exact.
    """
    if method not in METHODS:
        raise SubgameError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
    if algo not in ALGOS:
        raise SubgameError(f"unknown algorithm {algo!r}: expected one of {', '.join(ALGOS)}")
    if iterations is None and time_budget is None and target_pct_pot is None:
        iterations = 1000
    t0 = time.perf_counter()
    t = sub.public_tree()
    sub.validate()
    tree_s = time.perf_counter() - t0
    o, me = sub.opponent, sub.seat
    alt = None
    if method != "unsafe":
        base = sub.estimate if method in ("estimate", "reach-estimate") else sub.alt
        if base is None:
            what = (
                "the blueprint's own values" if "estimate" in method else "alternative (best-response) values"
            )
            raise SubgameError(
                f"method {method!r} needs the opponent's {what}; this subgame has none "
                "(an explicit subgame without them supports 'unsafe' only)"
            )
        alt = base.copy()
        if method.startswith("reach-"):
            g = sub.estimate_gifts if method == "reach-estimate" else sub.gifts
            if g is not None:
                alt += np.maximum(g, 0.0)
    if precision not in ("single", "double"):
        raise SubgameError(f"unknown precision {precision!r}: expected 'single' or 'double'")
    bh = board_hands(t)
    H = bh.num_hands
    ranges = sub.ranges
    valid0 = bh.valid[t.board[0]]
    w_opp = Engine.compat_mass_of(t, ranges[me])  # opponent hand -> refined seat's compatible mass
    elig = (w_opp > 1e-300) & valid0
    # the hands each seat may hold: its range's, and for the margin gadgets every eligible opponent hand
    support = np.stack([ranges[0] > 0, ranges[1] > 0]) & valid0
    if method not in ("unsafe", "resolve"):
        support[o] = elig
    with interruptible(deadline, stop):  # a depth-limited engine builds its continuations
        e = sub.engine(np.float32 if precision == "single" else np.float64, support, threads)
    measure_cards = None  # the cards a sampled check walks (None: exact)

    def sample_check() -> None:
        """Check on ``measure_samples`` cards (a fixed sample per board) from now on."""
        nonlocal measure_cards
        board_seed = sum(int(c) << (6 * i) for i, c in enumerate(t.root_board))
        measure_cards = e.set_measure_sample(measure_samples, board_seed)

    if measure_samples and deadline is None:
        sample_check()
    regret = np.zeros(e.size, np.float32)
    strat_sum = np.zeros(e.size, np.float32)
    g_reg = np.zeros((H, 2)) if method == "resolve" else np.zeros(H)
    g_sum = np.zeros_like(g_reg)
    pot = sub.pot
    history = []
    it = 0
    gap = margin = None

    def opp_reach(gstrat) -> np.ndarray:
        rr = ranges.copy()
        if method == "resolve":
            rr[o] = ranges[o] * gstrat[:, 1]
        elif method != "unsafe":
            rr[o] = np.where(elig, gstrat / np.where(elig, w_opp, 1.0), 0.0)
        return rr

    def gadget_strategy(acc) -> np.ndarray:
        if method == "resolve":
            return _rm(acc)
        x = np.where(elig, acc, 0.0)
        pos = np.maximum(x, 0.0)
        s = pos.sum()
        return pos / s if s > 0 else elig / max(elig.sum(), 1)

    def measure():
        avg = e.average(strat_sum)
        expl, (v0, v1) = _exploitability(ranges, e, avg)
        g = m = None
        if method != "unsafe":
            gavg = (
                gadget_strategy(g_sum)
                if method != "resolve"
                else g_sum / np.maximum(g_sum.sum(1, keepdims=True), 1e-300)
            )
            if method == "resolve":
                gavg = np.where(g_sum.sum(1, keepdims=True) > 0, gavg, 0.5)
            rr = opp_reach(gavg)
            # the opponent's best response inside the subgame: a seat's own reach does not enter its
            # counterfactual values, so it is the one just walked with the ranges (a walk saved)
            vb_o = (v0, v1)[o]
            vb_me = e.walk_compact(
                avg, rr, me, K.MODE_BR
            )  # refined seat's best response to the gadget opponent
            if method == "resolve":
                z = float(ranges[o] @ w_opp)
                best_o = float(ranges[o] @ np.maximum(alt, vb_o))
                worst_o = -float(ranges[me] @ vb_me) + float(ranges[o] @ ((1 - gavg[:, 1]) * alt))
                g = (best_o - worst_o) / z
            else:
                marg = np.where(elig, (vb_o - alt) / np.where(elig, w_opp, 1.0), -np.inf)
                best_o = float(marg.max())
                worst_o = -float(ranges[me] @ vb_me) - float(
                    np.where(elig, gavg * alt / np.where(elig, w_opp, 1.0), 0).sum()
                )
                g = best_o - worst_o
            m = float(np.min(np.where(elig, (alt - vb_o) / np.where(elig, w_opp, 1.0), np.inf)))
        return avg, expl, g, m, (v0, v1)

    # an exploitability check, in iterations (two walks each): two best-response walks, and for the
    # gadget methods one more (the refined seat's against the gadget's reach)
    check_iters = 1.0 if method == "unsafe" else 1.5
    next_check = check_every  # iteration of the next exploitability check (with a target)
    last = None  # the last measure()
    prev = None  # (iteration, gap in % of the pot) of the last check
    iter_est = 0.0  # seconds per iteration: the slowest recent one (decays slowly)
    iter_total = 0.0  # seconds in iterations so far (their mean prices the final check)
    first_s = 0.0  # the first iteration's
    measure_s = None  # seconds of one exploitability check, once one has run

    def out_of_time(now: float) -> bool:
        if stop is not None and stop.is_set():
            return True
        if deadline is None:
            return False
        final = check_s()
        if now + iter_est + final <= deadline:
            return False  # another iteration and the final check fit
        if now + final <= deadline:
            return True  # stop: the final check still fits
        return now + iter_est > deadline  # the check no longer fits anyway: iterate to the deadline

    def check_s() -> float:
        """Seconds the final check will take: the last one's, else the mean iteration's (walks of
        the whole tree: a slow iteration of a loaded machine is not the rule) times its walks."""
        if measure_s is not None:
            return measure_s
        if it >= 2:  # the first iteration may have compiled kernels or warmed caches: left out
            mean = (iter_total - first_s) / (it - 1)
        else:
            mean = iter_total if it else iter_est
        return check_iters * mean * e.measure_factor

    done = out_of_time(time.perf_counter())
    while not done:
        t_it = time.perf_counter()
        it += 1
        wts = iteration_weights(algo, it)
        for p in (0, 1):
            gstrat = gadget_strategy(g_reg) if method != "unsafe" else None
            rr = opp_reach(gstrat)
            v = e.walk_compact(None, rr, p, K.MODE_CFR, regret, strat_sum, wts)
            if p == o and method != "unsafe":
                assert alt is not None and gstrat is not None  # the gadget's (set for every safe method)
                if method == "resolve":
                    vals = np.stack([alt, v], 1)
                    cur = (gstrat * vals).sum(1, keepdims=True)
                else:
                    vals = np.where(elig, (v - alt) / np.where(elig, w_opp, 1.0), 0.0)
                    cur = float(gstrat @ vals)
                inst = vals - cur
                if algo == "cfr+":
                    g_reg = np.maximum(g_reg + inst, 0.0)
                    g_sum += it * gstrat
                else:
                    g_reg = np.where(g_reg > 0, g_reg * wts[0], g_reg * wts[1]) + inst
                    g_sum = g_sum * wts[3] + gstrat
        now = time.perf_counter()
        iter_est = max(now - t_it, 0.9 * iter_est)
        iter_total += now - t_it
        if it == 1:
            first_s = now - t_it
        if it == 2 and measure_samples and deadline is not None and check_s() > 0.25 * (deadline - t0):
            sample_check()  # an exact check would take too much of the time: a sampled one
        el = now - t0
        if iterations is not None and it >= iterations:
            done = True
        if time_budget is not None and el >= time_budget:
            done = True
        if target_pct_pot is not None and (it >= next_check or done) and not out_of_time(now):
            tm = time.perf_counter()
            last = measure()
            measure_s = time.perf_counter() - tm
            history.append((it, time.perf_counter() - t0, last[1]))
            crit = (last[2] / 2 if last[2] is not None else last[1]) / pot * 100
            if crit <= target_pct_pot:
                done = True
            else:  # check where the gap's fall since the last check (as t^-alpha) would reach the target
                alpha = 1.0
                if prev is not None and prev[1] > crit:
                    alpha = min(2.5, max(0.5, np.log(prev[1] / crit) / np.log(it / prev[0])))
                # three quarters of the way there: fewer checks than every check_every iterations
                # (9 -> 5 on the Libratus turn endgame), rarely past the crossing (BENCHMARKS.md, "Subgame solver against postflop-solver")
                step = int(np.ceil(0.75 * (it * (crit / target_pct_pot) ** (1.0 / alpha) - it)))
                next_check = it + min(4 * check_every, max(1, check_every // 5, step))
                prev = (it, crit)
        if out_of_time(time.perf_counter()):
            done = True
    iter_s = (time.perf_counter() - t0 - tree_s) / it if it else 0.0
    state = t.memory_bytes() + bh.memory_bytes() + e.memory_bytes() + regret.nbytes + strat_sum.nbytes
    if last is None or history[-1][0] != it:
        now = time.perf_counter()
        final = check_s()
        stopped = stop is not None and stop.is_set()
        late = deadline is not None and now + final > deadline
        if late and not stopped and measure_samples and measure_cards is None and measure_s is None:
            sample_check()  # no time for an exact check: a sampled one, if that fits
            final = check_s()
        if stopped or (deadline is not None and now + final > deadline):
            # no time left for the final check: the average strategy alone
            avg = e.expand(e.average(strat_sum))
            el = time.perf_counter() - t0
            return Solution(
                sub,
                method,
                avg,
                it,
                el,
                None,
                None,
                None,
                None,
                None,
                None,
                history,
                state,
                {"tree_s": tree_s, "iter_s": iter_s, "measure_s": None},
            )
        tm = time.perf_counter()
        last = measure()
        measure_s = time.perf_counter() - tm
        history.append((it, time.perf_counter() - t0, last[1]))
    avg, expl, gap, margin, brv = last
    el = time.perf_counter() - t0
    solved = expl if gap is None else gap / 2
    return Solution(
        sub,
        method,
        e.expand(avg),
        it,
        el,
        solved,
        solved / pot * 100,
        expl,
        gap,
        margin,
        brv,
        history,
        state,
        {"tree_s": tree_s, "iter_s": iter_s, "measure_s": measure_s},
        measure_cards,
    )
