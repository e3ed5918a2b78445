"""The solve policy: the blueprint early in the hand, then a solved subgame, then that subgame
reused while the hand stays inside it (:class:`SolvePolicy`). The solving player
(:class:`mccfr.evaluation.solving.SolvingPlayer`) and the query service's solving responder
(:class:`mccfr.serving.solving.SolvingResponder`) both follow it; they differ only in how they
solve (at once, or queued under a time budget) and how they answer.

At a decision of the viewer (``state``), in order:

1. **Reuse the hand's subgame**: the subgame solved earlier in the hand (for ``session``, the hand's
   key ``key``) answers while ``state`` lies in it at a decision of its viewer.
2. **The blueprint** answers before ``from_round`` (default: the last round, where a subgame has
   no chance nodes), where its tree has a node for the history. At a dead end (no node:
   :meth:`blueprint.blueprint.Blueprint.walk`, or the blueprint's own answer is its fallback) the
   subgame is solved at any round; with ``off_tree``, so is the nested subgame after an opponent's
   off-tree bet of the state's round that the pseudo-harmonic translation splits between two sizes
   with at least ``off_tree`` on the less likely one (:func:`subgame.nested.opponent_off_tree_split`).
3. **Reuse a public subgame**: a subgame rooted before any board card is the same for every deal
   (:func:`subgame.cache.public_key`); one solved for another hand answers (and becomes this hand's).
4. **Solve**, then :meth:`SolvePolicy.keep` the solution as the hand's subgame and, before any
   board card, as the public one. The decisions a subgame answered are recorded
   (:meth:`SolvePolicy.record`): a later subgame of the hand gives the viewer the range those
   answers played (:class:`~subgame.cache.PlayedStrategy`), not the blueprint's.

The solved subgames live in :class:`~subgame.cache.SessionCache` stores: ``hands`` (each
session's subgame and played strategies) and ``public`` (the public subgames; the same store by
default, as the service has it, or one of its own, as the player has it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from blueprint.blueprint import Blueprint
from holdem.state import State
from subgame.cache import PlayedStrategy, SessionCache, public_key
from subgame.nested import OFF_TREE_SPLIT, opponent_off_tree_split
from subgame.tree import SubgameError
from subgame.types import Solution

#: a store's budget without a bound (a player's one hand)
UNBOUNDED = 1 << 62


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the policy says at a state: ``hit`` (a solved subgame and the state's node in it,
    reused) or ``solve`` (else the blueprint answers); for a solve, the hand's ``played``
    strategies (:data:`subgame.construct.Played`) and the ``public`` key to keep it under (None
    once a board card is out)."""

    session: Optional[str]
    key: Any
    hit: Optional[tuple[Solution, int]] = None
    solve: bool = False
    played: dict = dataclasses.field(default_factory=dict)
    public: Optional[str] = None


def off_tree_split(off_tree: bool | float) -> Optional[float]:
    """The ``off_tree`` option as a split (None: translate every off-tree bet; True: the default
    :data:`~subgame.nested.OFF_TREE_SPLIT`); a SubgameError outside [0, 0.5] (NaN too)."""
    if off_tree is False:
        return None
    if off_tree is True:
        return OFF_TREE_SPLIT
    try:
        split = float(off_tree)
    except (TypeError, ValueError):
        split = float("nan")
    if not 0.0 <= split <= 0.5:
        raise SubgameError(f"off_tree must be a translation split in [0, 0.5], got {off_tree!r}")
    return split


class SolvePolicy:
    """When to solve and what to reuse (the module's docstring): ``bp``'s blueprint before
    ``from_round`` (None: the last round), ``off_tree`` (:func:`off_tree_split`), the stores
    ``hands`` (None: an unbounded one) and ``public`` (None: ``hands``)."""

    def __init__(
        self,
        bp: Blueprint,
        from_round: Optional[int] = None,
        off_tree: bool | float = False,
        hands: Optional[SessionCache] = None,
        public: Optional[SessionCache] = None,
    ):
        last = bp.gamedef.num_rounds - 1
        self.bp = bp
        self.from_round: int = last if from_round is None else int(from_round)
        if not 0 <= self.from_round <= last:
            raise ValueError(f"from_round must be in 0..{last}, got {from_round}")
        self.off_tree = off_tree_split(off_tree)
        self.hands = hands if hands is not None else SessionCache(UNBOUNDED)
        self.public = public if public is not None else self.hands

    def solves(self, state: State, source: Optional[str] = None) -> bool:
        """Whether a subgame answers ``state`` rather than the blueprint (step 2): from
        ``from_round`` on, at a dead end, and with ``off_tree`` after a far off-tree bet.
        ``source``: the blueprint's answer's, when known (``fallback``: a dead end; anything but
        ``translated``: no off-tree bet); else the blueprint's walk tells."""
        if state.round >= self.from_round:
            return True
        if source is None:
            if self.bp.walk(state).dead_end is not None:
                return True
        elif source == "fallback":
            return True
        elif source != "translated":
            return False
        return self._solves_off_tree(state)

    def _solves_off_tree(self, state: State) -> bool:
        if self.off_tree is None:
            return False
        split = opponent_off_tree_split(self.bp, state)
        return split is not None and split >= self.off_tree

    def decide(
        self,
        state: State,
        session: Optional[str],
        key: Any,
        method: str,
        source: Optional[Callable[[], str]] = None,
        reuse: bool = True,
    ) -> Decision:
        """Steps 1 to 3 for the viewer's decision ``state`` of ``session``'s hand ``key`` (None: no
        hand kept), solved with ``method``. ``source``: called after step 1 (not at all on a reuse),
        the blueprint's answer's source (:meth:`solves`). ``reuse=False``: neither reuses nor keeps
        (a locked query's subgame answers it alone)."""
        hit = self.hands.lookup(session, state, key) if reuse and session is not None else None
        if hit is not None:
            return Decision(session, key, hit=hit)
        if not self.solves(state, None if source is None else source()):
            return Decision(session, key)
        played = self.played(session, key, state)
        public = self.public_key(state, method, played) if reuse else None
        if public is not None:  # a subgame rooted before any board card, solved for another deal
            hit = self.public.lookup(public, state, public)
            if hit is not None:
                if session is not None:
                    self.hands.store(session, hit[0], key, self.public.size_of(public))
                return Decision(session, key, hit=hit)
        return Decision(session, key, solve=True, played=played, public=public)

    @staticmethod
    def public_key(state: State, method: str, played: Optional[dict] = None) -> Optional[str]:
        """The store key of a subgame the same for every deal (:func:`subgame.cache.public_key`)
        solved with ``method``; None once board cards are out. It starts with a character no
        client's session has (sessions are printable), as the played strategies' keys do."""
        key = public_key(state, played)
        return None if key is None else f"\x00public:{method}:{key}"

    @staticmethod
    def played_key(session: str) -> str:
        return f"\x00played:{session}"

    def played(self, session: Optional[str], key: Any, state: State) -> dict:
        """:data:`subgame.construct.Played` of ``session``'s hand at ``state``: the decisions of the
        hand that a subgame answered, with the strategy it answered with."""
        if session is None:
            return {}
        rec = self.hands.get(self.played_key(session), key)
        return rec.played(key, state) if isinstance(rec, PlayedStrategy) else {}

    def record(self, session: Optional[str], key: Any, state: State, sol: Solution, node: int) -> None:
        """A subgame answered ``session``'s decision ``state`` (node ``node`` of ``sol``): kept for
        :meth:`played`, in the hands' store (one more entry a session)."""
        if session is None:
            return
        rec = self.hands.get(self.played_key(session), key)
        if not isinstance(rec, PlayedStrategy):
            rec = PlayedStrategy()
        rec.record(key, state, sol, node)
        self.hands.store(self.played_key(session), rec, key)

    def keep(self, decision: Decision, sol: Solution, size: Optional[int] = None) -> int:
        """Step 4: keep ``sol`` (solved for ``decision``; ``size``: its
        :func:`~subgame.cache.nbytes`, measured when None) as the hand's subgame and, before any
        board card, the public one. Returns the entries evicted to make room."""
        evicted = self.hands.evictions + (self.public.evictions if self.public is not self.hands else 0)
        if decision.session is not None:
            self.hands.store(decision.session, sol, decision.key, size)
        if decision.public is not None:  # counted twice when in both: the budget errs safe
            self.public.store(decision.public, sol, decision.public, size)
        now = self.hands.evictions + (self.public.evictions if self.public is not self.hands else 0)
        return now - evicted


__all__ = ["Decision", "SolvePolicy", "UNBOUNDED", "off_tree_split"]
