"""Bet abstractions inside subgames (finer than a blueprint's; any TOML of :mod:`abstraction.bets`)."""

from __future__ import annotations

from abstraction.bets import BetAbstraction, load_bets

DEFAULT = "subgame"


def default_subgame_bets() -> BetAbstraction:
    """Bets of 0.5, 1, 2 pots and all-in; raises to 2.5x and all-in (``abstraction/bets/subgame.toml``)."""
    return load_bets(DEFAULT)
