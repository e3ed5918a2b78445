"""The rules of two-player ACPC poker: game definitions, cards, betting, states."""

from mccfr_util import numba_cache

numba_cache.configure()

from holdem.betting import Betting, IllegalActionError  # noqa: E402
from holdem.cards import CardError  # noqa: E402
from holdem.game import Game  # noqa: E402
from holdem.gamedef import GameDef, GameDefError  # noqa: E402
from holdem.state import State, StateError  # noqa: E402

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
