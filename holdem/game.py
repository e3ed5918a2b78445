"""The public entry point to the rules: a game definition plus state construction.

>>> game = Game.load("hunl")
>>> s = game.initial_state().deal("AhKdQsJc")   # seat 0's hand, then seat 1's
>>> s.legal_actions()
['f', 'c', 'r200', 'r20000']
>>> str(s.apply("r300").apply("c"))
'STATE:0:r300c/:AhKd|QsJc/'
>>> game.state("MATCHSTATE:1:30:r300c/cr900:|Ah9s/8c6h2d").legal_actions()
['f', 'c', 'r1500', 'r20000']
"""

from __future__ import annotations

import dataclasses
import os

from holdem.gamedef import GameDef, load_gamedef
from holdem.state import State


@dataclasses.dataclass(frozen=True)
class Game:
    """A two-player ACPC game: ``gamedef`` (the rules) and the states of its hands."""

    gamedef: GameDef

    @classmethod
    def load(cls, name_or_path: str | os.PathLike) -> Game:
        """A preset (``kuhn``, ``leduc``, ``hulhe``, ``hunl``, ...) or an ACPC ``.game`` file."""
        return cls(load_gamedef(name_or_path))

    @property
    def name(self) -> str:
        return self.gamedef.name

    def initial_state(self, hand_id: int = 0, viewer: int | None = None) -> State:
        """Blinds posted, no card dealt yet; ``viewer`` makes it that seat's MATCHSTATE."""
        return State.initial(self, hand_id, viewer)

    def state(self, acpc: str) -> State:
        """Parse ``STATE:<hand>:<betting>:<cards>`` (optionally ``:<net>:<names>``) or
        ``MATCHSTATE:<position>:<hand>:<betting>:<cards>``; raises :class:`StateError` naming the
        position of the problem."""
        return State.from_string(self, acpc)

    def __repr__(self) -> str:
        return f"Game({self.gamedef.name or self.gamedef.content_hash()!r})"
