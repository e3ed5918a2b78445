"""Solved subgames kept for reuse: the current hand's (:class:`SubgameCache`) and, for the query
service, one per session under a memory budget in bytes (:class:`SessionCache`), sized by
:func:`nbytes`.

Shared by the solving player (:mod:`mccfr.evaluation.solving`) and the query service's sessions
(:mod:`mccfr.serving.solving`).
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import threading
from typing import Any, Optional

import numpy as np

from abstraction.bets import BetAbstraction
from blueprint.blueprint import Blueprint
from holdem.betting import action_string
from holdem.gamedef import GameDef
from holdem.state import State
from subgame.nested import node_of_state
from subgame.tree import SubgameError
from subgame.types import Solution

#: lists and tuples longer than this whose items are not arrays are measured on a sample of
#: :data:`_SAMPLE` evenly spaced items, scaled to the length (a turn subgame's tree keeps one
#: ``Betting`` per node: tens of thousands of small objects; measuring each would hold the GIL
#: for a large part of a second)
_SAMPLE_ABOVE = 512
_SAMPLE = 128


def _shared_types() -> tuple[type, ...]:
    """Objects that a solution refers to but does not own (one per game, run or process)."""
    # a depth-limited subgame's DepthLimit refers to the process's blueprint
    return (GameDef, BetAbstraction, Blueprint, type, type(sys), type(_shared_types), type(len))


def nbytes(obj: Any, python: bool = True) -> int:
    """Bytes held by ``obj`` (a :class:`~subgame.types.Solution`, a public tree, a subgame, or
    containers of them): every numpy array reachable through dataclass fields, instance
    attributes, lists, tuples, sets and dicts, each memory buffer counted once (a view counts its
    base array's ``nbytes``, once however many views share it), plus with ``python`` the Python
    objects walked (``sys.getsizeof``: containers, dataclass instances and their attribute
    dicts, numbers, strings). Objects shared with the rest of the process (the game definition,
    the bet abstraction, the blueprint, functions, classes, modules) are not followed.

    With ``python=False`` the result is exactly the sum of ``a.nbytes`` over the distinct arrays
    that own their memory (tests check it against numpy). Long lists of small Python objects are
    measured on a sample, scaled up (:data:`_SAMPLE_ABOVE`)."""
    shared = _shared_types()
    seen: set[int] = set()
    buffers: set[int] = set()
    total = 0.0  # float: sampled lists count with a weight
    stack: list[tuple[Any, float]] = [(obj, 1.0)]
    while stack:
        o, w = stack.pop()
        if o is None or isinstance(o, (bool, shared)) or callable(o) and not dataclasses.is_dataclass(o):
            continue
        oid = id(o)
        if oid in seen:
            continue
        seen.add(oid)
        if isinstance(o, np.ndarray):
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in buffers:  # the array that owns the memory (or wraps a foreign buffer)
                buffers.add(id(base))
                total += w * base.nbytes
                if python:  # the array objects' headers
                    total += w * (sys.getsizeof(base) - (base.nbytes if base.flags.owndata else 0))
            continue
        if python:
            total += w * sys.getsizeof(o)
        if isinstance(o, (str, bytes, bytearray, int, float, complex, np.generic)):
            continue
        if isinstance(o, dict):
            for k, v in o.items():
                stack.append((k, w))
                stack.append((v, w))
            continue
        if isinstance(o, (list, tuple, set, frozenset, collections.deque)):
            items = list(o)
            if len(items) > _SAMPLE_ABOVE and not isinstance(items[0], np.ndarray):
                step = len(items) / _SAMPLE
                sample = [items[int(i * step)] for i in range(_SAMPLE)]
                scale = w * len(items) / _SAMPLE
                stack.extend((x, scale) for x in sample)
            else:
                stack.extend((x, w) for x in items)
            continue
        d = getattr(o, "__dict__", None)
        if d is not None:
            if python:
                total += w * sys.getsizeof(d)
            stack.extend((v, w) for v in d.values())
        for name in getattr(type(o), "__slots__", ()):
            if hasattr(o, name):
                stack.append((getattr(o, name), w))
    return int(total)


class SubgameCache:
    """The solved subgame of the current hand, reused while states stay inside it."""

    def __init__(self):
        self.sol: Optional[Solution] = None
        self.key = None

    def lookup(self, state: State, key) -> Optional[tuple[Solution, int]]:
        if self.sol is None or key != self.key:
            return None
        return node_in(self.sol, state)

    def store(self, sol: Solution, key) -> None:
        self.sol, self.key = sol, key


class PlayedStrategy:
    """What a seat played at its own decisions of the current hand that a solved subgame answered:
    the subgame's strategy there, for every hand. A later subgame of the hand then gives the seat
    the range it really has (:data:`subgame.construct.Played`), not the range the blueprint's
    strategy would give it: after a solved call of an off-tree raise, say, the blueprint's range
    would be the one that calls the translated raise, the solve's can be far wider.

    Kept for one hand (``key``: the hand's, as :class:`SubgameCache`'s)."""

    def __init__(self):
        self.key = None
        self._at: dict[int, dict[str, np.ndarray]] = {}  # flat history index -> {action: [H]}

    def record(self, key, state: State, sol: Solution, node: int) -> None:
        """The solved strategy at ``node`` (``state``'s decision in ``sol``) answered the seat."""
        if key != self.key:
            self.key, self._at = key, {}
        i = sum(len(a) for a in state.betting.actions)
        self._at[i] = {a: np.array(v, np.float32) for a, v in sol.node_strategy(node).items()}

    def played(self, key, state: State) -> dict[int, np.ndarray]:
        """:data:`~subgame.construct.Played` for ``state``'s history: each recorded decision's
        probabilities of the action really taken there (one the subgame lacks, a raise clamped to the
        legal range, is left to the blueprint's model)."""
        if key != self.key or not self._at:
            return {}
        g = state.gamedef
        flat = [action_string(k, s, g) for acts in state.betting.actions for k, s in acts]
        out = {}
        for i, strat in self._at.items():
            if i < len(flat) and flat[i] in strat:
                out[i] = strat[flat[i]]
        return out


def public_key(state: State, played: Optional[dict] = None) -> Optional[str]:
    """A key for the subgame of ``state`` that is the same for every deal, or None: before any board
    card a subgame's ranges come from the blueprint, the public history and the solutions that
    answered the seat's earlier decisions (``played``: :meth:`PlayedStrategy.played`, named in the
    key by their places in the history), not from the viewer's cards, so one solution answers the
    seat at that history whatever it holds (kept across hands by the solving player, across
    sessions by the service)."""
    if len(state.board_cards):
        return None
    key = f"{state.viewer}:{state.betting.betting_string()}"
    return f"{key}:played={','.join(map(str, sorted(played)))}" if played else key


def node_in(sol: Solution, state: State) -> Optional[tuple[Solution, int]]:
    """``(sol, node of state)`` when ``state`` lies in the solved subgame at a decision of its viewer."""
    try:
        n = node_of_state(sol.tree, state)
    except SubgameError:
        return None
    if int(sol.tree.player[n]) != state.viewer:
        return None
    return sol, n


#: bytes counted per entry beside its solution: the session string, the key, the entry's slot
ENTRY_OVERHEAD = 512


class SessionCache:
    """One solved subgame per session (the hand's latest), least recently used first out, within
    ``budget`` bytes (thread-safe).

    The budget covers the cached solutions, each sized by :func:`nbytes` when stored, and the
    memory that solves in flight reserve (:meth:`reserve`, :meth:`release`): what a solve holds
    while it runs. Room is made by evicting the least recently used sessions (a lookup or a store
    makes a session the most recent). A reservation larger than the budget less the other
    reservations is refused (nothing to evict would make room): the caller answers without
    solving. A solution larger than what the budget can hold next to the reservations is not
    cached (:attr:`rejected`). ``max_entries`` optionally bounds the sessions as well.
    """

    def __init__(self, budget: int, max_entries: Optional[int] = None):
        if budget < 0:
            raise ValueError(f"the memory budget must be >= 0 bytes, got {budget}")
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.budget = int(budget)
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[str, tuple[Any, Any, int]] = collections.OrderedDict()
        self.bytes = 0  # of the cached entries
        self.reserved = 0  # by solves in flight
        self.evictions = 0  # entries evicted to make room
        self.evicted_bytes = 0
        self.rejected = 0  # solutions too big to cache
        self.refused = 0  # reservations refused
        self.stored = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, session: str) -> bool:
        return session in self._entries

    def lookup(self, session: str, state: State, key) -> Optional[tuple[Solution, int]]:
        """``(solution, node of state)`` when the session's cached subgame (solved for ``key``)
        contains ``state`` at a decision of its viewer, else None."""
        with self._lock:
            e = self._entries.get(session)
            if e is not None:
                self._entries.move_to_end(session)
        hit = None
        if e is not None and e[1] == key:
            hit = node_in(e[0], state)
        with self._lock:
            if hit is None:
                self.misses += 1
            else:
                self.hits += 1
        return hit

    def _evict_until(self, free: int) -> None:
        """Evict least recently used entries until ``free`` bytes are free (lock held)."""
        while self._entries and self.bytes + self.reserved + free > self.budget:
            _, (_, _, size) = self._entries.popitem(last=False)
            self.bytes -= size
            self.evictions += 1
            self.evicted_bytes += size

    def reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes for a solve in flight, evicting as needed; False (nothing
        reserved, nothing evicted) when the budget less the other reservations is too small."""
        size = max(0, int(size))
        with self._lock:
            if self.reserved + size > self.budget:
                self.refused += 1
                return False
            self._evict_until(size)
            self.reserved += size
            return True

    def release(self, size: int) -> None:
        with self._lock:
            self.reserved = max(0, self.reserved - max(0, int(size)))

    def get(self, session: str, key) -> Any:
        """What :meth:`store` keeps for ``session`` when it was stored for ``key``, else None (a
        session's other records than its subgame: the service's :class:`PlayedStrategy`)."""
        with self._lock:
            e = self._entries.get(session)
            if e is None or e[1] != key:
                return None
            self._entries.move_to_end(session)
            return e[0]

    def size_of(self, session: str) -> Optional[int]:
        """The bytes ``session``'s entry was stored with (its :func:`nbytes`), None without one."""
        with self._lock:
            e = self._entries.get(session)
            return None if e is None else e[2] - ENTRY_OVERHEAD

    def store(self, session: str, sol: Any, key, size: Optional[int] = None) -> bool:
        """Cache ``sol`` (solved for ``key``; a :class:`~subgame.types.Solution`, or another record
        that :meth:`get` returns) as ``session``'s, replacing the session's previous one, evicting
        others as needed. ``size``: its :func:`nbytes` (measured here when None). False when it
        cannot fit next to the reservations (then nothing is cached for the session)."""
        size = (nbytes(sol) if size is None else int(size)) + ENTRY_OVERHEAD
        with self._lock:
            old = self._entries.pop(session, None)
            if old is not None:
                self.bytes -= old[2]
            if self.reserved + size > self.budget:
                self.rejected += 1
                return False
            self._evict_until(size)
            if self.max_entries is not None:
                while len(self._entries) >= self.max_entries:
                    _, (_, _, s) = self._entries.popitem(last=False)
                    self.bytes -= s
                    self.evictions += 1
                    self.evicted_bytes += s
            self._entries[session] = (sol, key, size)
            self.bytes += size
            self.stored += 1
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def snapshot(self) -> dict[str, int]:
        """The figures ``/metrics`` reports: bytes and entries cached, the budget, reservations,
        evictions, and the store / lookup counts."""
        with self._lock:
            return {
                "budget_bytes": self.budget,
                "cache_bytes": self.bytes,
                "cache_entries": len(self._entries),
                "reserved_bytes": self.reserved,
                "evictions": self.evictions,
                "evicted_bytes": self.evicted_bytes,
                "stored": self.stored,
                "rejected": self.rejected,
                "refused": self.refused,
                "hits": self.hits,
                "misses": self.misses,
            }


__all__ = ["ENTRY_OVERHEAD", "PlayedStrategy", "SessionCache", "SubgameCache", "nbytes", "public_key"]
