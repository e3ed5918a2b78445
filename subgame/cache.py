"""The solved subgame of the current hand, reused while later states of the hand stay inside it.

Shared by the solving player (:mod:`evaluation.solving`) and the query service's sessions
(:mod:`serving.responder`).
"""

from __future__ import annotations

from typing import Optional

from holdem.state import State
from subgame.nested import node_of_state
from subgame.solver import Solution
from subgame.tree import SubgameError


class SubgameCache:
    """The solved subgame of the current hand, reused while states stay inside it."""

    def __init__(self):
        self.sol: Optional[Solution] = None
        self.key = None

    def lookup(self, state: State, key) -> Optional[tuple[Solution, int]]:
        if self.sol is None or key != self.key:
            return None
        try:
            n = node_of_state(self.sol.tree, state)
        except SubgameError:
            return None
        if int(self.sol.tree.player[n]) != state.viewer:
            return None
        return self.sol, n

    def store(self, sol: Solution, key) -> None:
        self.sol, self.key = sol, key
