"""The solver's data: a :class:`Subgame` to solve and the :class:`Solution` it gets.

A :class:`Subgame` is a public root (betting state and board), each seat's reach of every private
hand there (its *range*, ``[2, H]``), a bet abstraction for the rest of the hand, and, for the safe
methods of :func:`subgame.solver.solve`, the opponent's alternative values. The seat being refined
is ``refine`` (the player whose strategy we will play); the other seat is the *opponent*, whose
hands the gadgets protect against. Its public tree is built on first use (:meth:`Subgame.public_tree`:
to the end of the hand, or with a ``depth_limit`` to the end of the root's round, :mod:`subgame.depth`).

A :class:`Solution` is the average strategy of every decision node, per hand, with the solve's
exploitability figures (see :mod:`subgame.solver` for their definitions) and timings.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np

from abstraction.bets import BetAbstraction
from abstraction.tree import KIND_DECISION, BettingTree
from holdem.betting import Betting
from holdem.cards import cards_str
from holdem.gamedef import GameDef
from subgame.depth import DepthLimit, build_depth_limited_tree
from subgame.locking import Locks
from subgame.tree import SubgameError, board_hands, build_subgame_tree, hand_index


@dataclasses.dataclass
class Subgame:
    """A subgame to solve (see the module docstring); :meth:`validate` checks the ranges and values
    against its tree, with a :class:`~subgame.tree.SubgameError` naming what is wrong."""

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
    depth_limit: Optional[DepthLimit] = None  # the tree ends with the root's round (subgame.depth)

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
                self.tree = build_depth_limited_tree(
                    self.game, self.root, self.board, self.bets, action_filter=self.action_filter
                )
            else:
                self.tree = build_subgame_tree(
                    self.game, self.root, self.board, self.bets, action_filter=self.action_filter
                )
            self.validate()
        return self.tree

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
class SolveState:
    """What :func:`subgame.solver.solve` needs to go on from where a solve stopped (``keep_state``,
    ``resume``; saved by :mod:`subgame.saved`): the compact tables (float32 ``[E]``, the engine's
    layout), the gadget's regrets and sums (float64 ``[H, 2]`` for ``resolve``, ``[H]`` otherwise,
    unused by ``unsafe``), the iterations done, the exploitability-check schedule (the next
    check's iteration and the last check's ``(iteration, gap in % of the pot)``), and the
    algorithm and precision it ran with (a continuation must use the same)."""

    regret: np.ndarray
    strat_sum: np.ndarray
    g_reg: np.ndarray
    g_sum: np.ndarray
    iterations: int
    next_check: int
    prev: Optional[tuple[int, float]]
    algo: str
    precision: str
    leaf: Optional["LeafState"] = None  # a depth-limited solve's leaf choices (None otherwise)


@dataclasses.dataclass
class LeafState:
    """A depth-limited solve's state at its leaves (:class:`~subgame.depth_engine.DepthLimitedEngine`):
    the opponent's continuation regrets and average-choice sums (float64 ``[leaves, k, H]``), its
    best-response picks (int64 ``[leaves, H]``: all -1 under ``leaf_choice="regret"``, else in
    ``[0, k)``) and the generator that samples the next cards (the engine's own: it goes on)."""

    reg: np.ndarray
    sum: np.ndarray
    pick: np.ndarray
    rng: np.random.Generator

    def picks_follow(self, k: int, best: bool) -> bool:
        """Whether the picks are those of the rule: in ``[0, k)`` under the best-response rule
        (``best``), all -1 under the regret rule (the depth-limited walk indexes with them)."""
        return bool(((self.pick >= 0) & (self.pick < k)).all() if best else (self.pick == -1).all())


@dataclasses.dataclass
class Solution:
    """What :func:`subgame.solver.solve` returns: the average strategy and the solve's figures."""

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
    timing: dict = dataclasses.field(default_factory=dict)  # tree_s, engine_s, iter_s, measure_s (seconds)
    # depth-limited subgames checked on a sample of the next deal's cards (solve's measure_samples):
    # how many; None when the check walked every card (exact) or there was none
    measure_cards: Optional[int] = None
    # the solver's tables and schedule, to continue or save the solve (solve's keep_state / resume)
    state: Optional["SolveState"] = None
    locks: Optional[Locks] = None  # the node locks it was solved under (subgame.locking)

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
