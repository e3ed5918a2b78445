"""Node locking: either seat's strategy fixed at chosen nodes of a subgame while the rest is solved.

A lock set is a plain JSON-able mapping (what ``mccfr solve --lock FILE``, the ``locks`` field of a
``/v1/strategy`` request and :func:`subgame.solve`'s ``locks=`` take)::

    {"": {"c": 0.6, "r900": 0.4},                 # the root: one frequency for the whole range
     "r900": {"f": 0.3, "c": [0.7, ...]}}          # after a raise to 900: per hand

* A key names a decision node by its betting history from the subgame's root in ACPC action
  strings: ``""`` is the root, ``"r900"`` the node after a raise to 900, ``"r900c/"`` the first
  decision of the next round. ``/`` ends a round; a history past a deal of board cards names that
  decision on every card dealt (the per-hand values then apply on each board, hands blocked by
  the board being ignored). The locked seat is the one to act there.
* A value maps action strings (``f``, ``c``, ``r<to>``; ``r`` in limit games: the keys of
  :meth:`Solution.root_strategy <subgame.types.Solution.root_strategy>`) to a probability: one
  number for every hand, or a list with one number per hand of the game in the order of
  :func:`subgame.tree.all_hands` (1,326 in hold'em). Actions left out get 0. For every hand not
  blocked by the subgame's board the probabilities must sum to 1 (within :data:`SUM_TOLERANCE`).

Inline form (:func:`parse_lock_spec`): ``NODE=ACTION:P,ACTION:P;NODE=...``, e.g.
``=c:0.6,r900:0.4;r900=f:0.3,c:0.7`` (one frequency per action, for the whole range).

While solving, a locked node's current and average strategy are the lock: its seat's regrets and
strategy sums there are overwritten with the lock after every walk of that seat
(:meth:`LockTable.impose`), so regret matching of them plays the lock and its updates are never
used. Best responses (exploitability) are those of the *locked game*: at a locked node even the
best-responding seat plays the lock (:attr:`Locks.fixed`, read by the walk in best-response mode).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np

from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_FOLD, BettingTree
from holdem.cards import cards_str
from subgame.tree import SubgameError, board_hands

__all__ = [
    "LockError",
    "MAX_LOCK_FILE_BYTES",
    "MAX_LOCKS",
    "SUM_TOLERANCE",
    "LockSpec",
    "LockTable",
    "Locks",
    "NodeLock",
    "check_lock_spec",
    "load_locks",
    "lock_arg",
    "node_frequencies",
    "nodes_at",
    "parse_lock_spec",
    "resolve_locks",
]

#: |sum over a node's actions - 1| allowed for each hand (the lock is then normalised exactly)
SUM_TOLERANCE = 1e-6
#: nodes one lock set may name
MAX_LOCKS = 1000
#: a lock file's size limit (JSON: per-hand lists of a few nodes fit many times over)
MAX_LOCK_FILE_BYTES = 64 << 20

LockSpec = dict[str, dict[str, Union[float, list[float]]]]


class LockError(SubgameError):
    """A lock set that is malformed or does not fit the subgame; the message names the node and
    the action."""


_TOKEN = re.compile(r"[fc/]|r[0-9]*")
_KIND_NAMES = {KIND_FOLD: "a fold (the hand is over)", KIND_CHANCE: "a deal of cards"}


def _node_name(history: str) -> str:
    return f"node {history!r}" + (" (the root)" if history == "" else "")


def check_lock_spec(obj: Any, where: str = "locks") -> LockSpec:
    """``obj`` as a :data:`LockSpec` after checking its shape (a map of histories to maps of
    actions to a number or a list of numbers), with errors naming the bad entry; the tree-dependent
    checks are :func:`resolve_locks`'."""
    if not isinstance(obj, Mapping):
        raise LockError(
            f"{where} must be an object mapping node histories to strategies, got {type(obj).__name__}"
        )
    if len(obj) > MAX_LOCKS:
        raise LockError(f"{where} names {len(obj)} nodes, more than {MAX_LOCKS}")
    out: LockSpec = {}
    for node, strat in obj.items():
        if not isinstance(node, str):
            raise LockError(f"{where}: node names are betting histories (strings), got {node!r}")
        if not isinstance(strat, Mapping) or not strat:
            raise LockError(f"{where}: {_node_name(node)} must map actions to probabilities, got {strat!r}")
        acts: dict[str, Union[float, list[float]]] = {}
        for act, p in strat.items():
            if not isinstance(act, str):
                raise LockError(f"{where}: {_node_name(node)}: actions are strings, got {act!r}")
            if isinstance(p, bool) or not isinstance(p, (int, float, list, tuple, np.ndarray)):
                raise LockError(
                    f"{where}: {_node_name(node)}, action {act!r}: expected a probability or a list "
                    f"of one per hand, got {type(p).__name__}"
                )
            if isinstance(p, (list, tuple, np.ndarray)):
                if any(isinstance(x, bool) or not isinstance(x, (int, float, np.floating)) for x in p):
                    raise LockError(
                        f"{where}: {_node_name(node)}, action {act!r}: the list holds a non-number"
                    )
                acts[act] = [float(x) for x in p]
            else:
                acts[act] = float(p)
        out[node] = acts
    return out


def parse_lock_spec(text: str) -> LockSpec:
    """The inline form ``NODE=ACTION:P,ACTION:P;NODE=...`` (module docstring) as a :data:`LockSpec`."""
    out: LockSpec = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        node, eq, acts = part.partition("=")
        node = node.strip()
        if not eq:
            raise LockError(f"lock {part!r}: expected NODE=ACTION:P,ACTION:P (NODE empty for the root)")
        if node in out:
            raise LockError(f"lock: {_node_name(node)} is locked twice")
        strat: dict[str, Union[float, list[float]]] = {}
        for item in acts.split(","):
            act, colon, p = item.strip().partition(":")
            try:
                if not colon:
                    raise ValueError
                strat[act.strip()] = float(p)
            except ValueError:
                raise LockError(
                    f"lock at {_node_name(node)}: expected ACTION:PROBABILITY, got {item.strip()!r}"
                ) from None
        out[node] = strat
    if not out:
        raise LockError(f"lock {text!r} names no node")
    return check_lock_spec(out, "lock")


def load_locks(path: Union[str, Path]) -> LockSpec:
    """A JSON lock file (a regular file of at most :data:`MAX_LOCK_FILE_BYTES`)."""
    p = Path(path)
    if not p.is_file():
        raise LockError(f"lock file {p} does not exist or is not a regular file")
    size = p.stat().st_size
    if size > MAX_LOCK_FILE_BYTES:
        raise LockError(f"lock file {p} is {size:,} bytes, more than {MAX_LOCK_FILE_BYTES:,}")
    try:
        with open(p, "rb") as f:
            obj = json.loads(f.read(MAX_LOCK_FILE_BYTES + 1))
    except (OSError, ValueError) as exc:
        raise LockError(f"lock file {p} is not valid JSON: {exc}") from None
    return check_lock_spec(obj, f"lock file {p}")


def lock_arg(value: str) -> LockSpec:
    """``mccfr solve --lock``'s value: a JSON file when it ends in ``.json`` or names an existing
    file, else the inline form."""
    if value.endswith(".json") or Path(value).is_file():
        return load_locks(value)
    return parse_lock_spec(value)


def nodes_at(tree: BettingTree, history: str) -> np.ndarray:
    """The decision nodes of ``tree`` that ``history`` (ACPC actions from the root, ``/`` ending a
    round) names: one, or one per card dealt when it crosses a deal. :class:`SubgameError` naming
    the first action that is not in the tree."""
    tokens = _TOKEN.findall(history)
    if "".join(tokens) != history:
        raise LockError(f"{_node_name(history)}: not an ACPC betting history (actions f, c, r<to> and '/')")
    cur = np.zeros(1, np.int64)
    done = ""
    for tok in tokens:
        k = int(tree.kind[cur[0]])
        if tok == "/":
            if k != KIND_CHANCE:
                raise LockError(f"{_node_name(history)}: the betting round does not end after {done!r}")
            cur = np.concatenate([tree.children(int(n)) for n in cur]).astype(np.int64)
        else:
            if k == KIND_CHANCE:
                raise LockError(f"{_node_name(history)}: the round ends after {done!r}: write {done + '/'!r}")
            if k != KIND_DECISION:
                raise LockError(f"{_node_name(history)}: the hand is over after {done!r}")
            labels = tree.action_labels(int(cur[0]))
            if tok not in labels:
                raise LockError(
                    f"{_node_name(history)}: no action {tok!r} after {done!r} in the subgame's tree "
                    f"(its actions there: {', '.join(labels)})"
                )
            a = labels.index(tok)
            cur = np.array([int(tree.edge_child[int(tree.child_start[n]) + a]) for n in cur], np.int64)
        done += tok
    k = int(tree.kind[cur[0]])
    if k != KIND_DECISION:
        what = _KIND_NAMES.get(k, "the end of the hand (or of the depth-limited subgame)")
        raise LockError(f"{_node_name(history)} is {what}, not a decision")
    return cur


@dataclasses.dataclass(frozen=True)
class NodeLock:
    """One lock resolved on a tree: its ``nodes`` (int64, one per board), the ``seat`` to act
    there, and ``probs`` float64 ``[actions, H]`` in the node's action order (rows sum to 1;
    uniform for hands blocked by the root board)."""

    history: str
    nodes: np.ndarray
    seat: int
    probs: np.ndarray


@dataclasses.dataclass(frozen=True)
class Locks:
    """A lock set resolved on a subgame's tree (:func:`resolve_locks`)."""

    spec: LockSpec  # as given (checked), for saving and reports
    nodes: tuple[NodeLock, ...]
    fixed: np.ndarray  # uint8 [N]: 1 at every locked decision node (the walk reads it)

    @property
    def seats(self) -> tuple[int, ...]:
        """The seats with a locked node, in order."""
        return tuple(sorted({n.seat for n in self.nodes}))

    def overlay(self, tree: BettingTree, strategy: np.ndarray) -> np.ndarray:
        """``strategy`` (a solution's, ``(rows, H)``) with every locked node's rows set to the lock
        for every hand its board does not block: the solver's lists hold only the hands that reach
        the subgame, and a hand outside them would otherwise show the uniform strategy at a node
        the user locked (as a grid of every hand does)."""
        if not self.nodes:
            return strategy
        valid = board_hands(tree).valid
        for nl in self.nodes:
            for n in nl.nodes:
                r0, ok = int(tree.row[n]), valid[tree.board[n]]
                for a in range(nl.probs.shape[0]):
                    strategy[r0 + a, ok] = nl.probs[a, ok]
        return strategy

    def table(self, tree: BettingTree, lists) -> "LockTable":
        """The lock's entries in the compact layout of ``lists`` (:class:`subgame.tree.HandLists`
        of ``tree``, an engine's ``lists``; see :mod:`subgame.kernels`)."""
        pos: list[np.ndarray] = []
        val: list[np.ndarray] = []
        seat_of: list[np.ndarray] = []
        for nl in self.nodes:
            A = nl.probs.shape[0]
            for n in nl.nodes:
                b = int(tree.board[n])
                L = int(lists.nlive[b, nl.seat])
                if L == 0:
                    continue
                hands = lists.idx[b, nl.seat, :L].astype(np.int64)
                base = int(lists.coff[n])
                for a in range(A):
                    pos.append(np.arange(base + a * L, base + (a + 1) * L, dtype=np.int64))
                    val.append(nl.probs[a, hands])
                    seat_of.append(np.full(L, nl.seat, np.int8))
        if not pos:
            e = np.zeros(0, np.int64)
            return LockTable(e, np.zeros(0, np.float32), np.zeros(0, np.int8))
        return LockTable(np.concatenate(pos), np.concatenate(val).astype(np.float32), np.concatenate(seat_of))


@dataclasses.dataclass(frozen=True)
class LockTable:
    """The locks in a compact strategy table: entries ``pos`` (int64) hold ``val`` (float32), the
    locked seat's probability of the entry's action for the entry's hand; ``seat`` (int8) per entry."""

    pos: np.ndarray
    val: np.ndarray
    seat: np.ndarray

    def impose(self, regret: np.ndarray, strat_sum: np.ndarray, seat: Optional[int] = None) -> None:
        """Overwrite the locked entries of ``regret`` and ``strat_sum`` (the solver's tables) with
        the lock (only ``seat``'s with a seat): regret matching of them, and their average, is then
        the lock (each hand's row sums to 1, so both normalise to it)."""
        if seat is None:
            regret[self.pos] = self.val
            strat_sum[self.pos] = self.val
        else:
            m = self.seat == seat
            regret[self.pos[m]] = self.val[m]
            strat_sum[self.pos[m]] = self.val[m]


def resolve_locks(tree: BettingTree, spec: Mapping[str, Any]) -> Locks:
    """``spec`` (a :data:`LockSpec`, checked here) resolved on ``tree``: every node named, every
    action legal there, every per-hand list of the game's length, every probability in [0, 1],
    and each unblocked hand's probabilities summing to 1; :class:`SubgameError` naming the first
    problem."""
    spec = check_lock_spec(spec)
    bh = board_hands(tree)
    H = bh.num_hands
    live = bh.valid[tree.board[0]]
    fixed = np.zeros(tree.num_nodes, np.uint8)
    out = []
    for history, strat in spec.items():
        where = _node_name(history)
        nodes = nodes_at(tree, history)
        labels = tree.action_labels(int(nodes[0]))
        probs = np.zeros((len(labels), H))
        for act, p in strat.items():
            if act not in labels:
                raise LockError(
                    f"lock at {where}: no action {act!r} there (its actions: {', '.join(labels)})"
                )
            v = np.asarray(p, np.float64)
            if v.ndim == 1 and v.shape != (H,):
                raise LockError(
                    f"lock at {where}, action {act!r}: expected one probability or {H} (one per hand), got {v.size}"
                )
            if not np.all(np.isfinite(v)) or (v < 0).any() or (v > 1).any():
                raise LockError(f"lock at {where}, action {act!r}: probabilities must be in [0, 1]")
            probs[labels.index(act)] = v
        tot = probs.sum(0)
        bad = np.nonzero(live & ~(np.abs(tot - 1.0) <= SUM_TOLERANCE))[0]
        if len(bad):
            h = bad[0]
            hand = cards_str(bh.hands[h].tolist(), tree.game.num_suits)
            raise LockError(
                f"lock at {where}: the probabilities sum to {tot[h]:.6g}, not 1"
                + (
                    f" (hand {hand}, and {len(bad) - 1} more)"
                    if not math.isclose(tot.min(), tot.max())
                    else ""
                )
            )
        probs = np.where(live, probs / np.where(live, tot, 1.0), 1.0 / len(labels))
        fixed[nodes] = 1
        out.append(NodeLock(history, nodes, int(tree.player[nodes[0]]), probs))
    return Locks(spec, tuple(out), fixed)


def node_frequencies(sol, history: str) -> dict[str, Any]:
    """How the seat to act at ``history`` plays there in ``sol`` (a :class:`Solution
    <subgame.types.Solution>`): ``{"history", "seat", "boards", "strategy": {action: frequency}}``,
    each action's probability averaged over the seat's hands weighted by their reach at the node
    (its range times its own probabilities along the path), summed over the boards the history
    names; ``locked`` when a lock fixes it."""
    tree = sol.tree
    nodes = nodes_at(tree, history)
    bh = board_hands(tree)
    seat = int(tree.player[nodes[0]])
    labels = tree.action_labels(int(nodes[0]))
    tot = np.zeros(len(labels))
    for n in nodes:
        reach = np.where(bh.valid[tree.board[n]], sol.subgame.ranges[seat], 0.0)
        m = int(n)
        while m != 0:
            par = int(tree.parent[m])
            if tree.kind[par] == KIND_DECISION and int(tree.player[par]) == seat:
                a = int(tree.parent_edge[m]) - int(tree.child_start[par])
                reach = reach * sol.strategy[int(tree.row[par]) + a]
            m = par
        r0 = int(tree.row[n])
        tot += sol.strategy[r0 : r0 + len(labels)] @ reach
    s = tot.sum()
    freq = tot / s if s > 0 else np.full(len(labels), 1.0 / len(labels))
    locked = sol.locks is not None and history in sol.locks.spec
    return {
        "history": history,
        "seat": seat,
        "boards": len(nodes),
        "locked": bool(locked),
        "strategy": {a: float(p) for a, p in zip(labels, freq)},
    }
