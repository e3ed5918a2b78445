"""The rules of two-player ACPC poker: game definitions, cards, betting, states.

Importing it changes nothing in the process; the numba cache is set by the entry points
(:func:`mccfr_util.numba_cache.configure`).
"""

from holdem.betting import Betting, IllegalActionError
from holdem.cards import CardError
from holdem.game import Game
from holdem.gamedef import GameDef, GameDefError
from holdem.state import State, StateError

__all__ = [
    "Betting",
    "CardError",
    "Game",
    "GameDef",
    "GameDefError",
    "IllegalActionError",
    "State",
    "StateError",
]
