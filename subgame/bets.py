"""Bet abstractions inside subgames (finer than a blueprint's; any TOML of :mod:`abstraction.bets`),
and the blueprint's own (:func:`bp_bets`), which its values and continuations are computed under."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from abstraction.bets import BetAbstraction, load_bets

if TYPE_CHECKING:  # for the annotation only: the blueprint package is not needed to read bets
    from blueprint.blueprint import Blueprint

DEFAULT = "subgame"


def default_subgame_bets() -> BetAbstraction:
    """Bets of 0.5, 1, 2 pots and all-in; raises to 2.5x and all-in (``abstraction/bets/subgame.toml``)."""
    return load_bets(DEFAULT)


def bp_bets(bp: Blueprint) -> Optional[BetAbstraction]:
    """The blueprint's bet abstraction (it lives on its tree; None for limit games)."""
    return bp.tree.bets if not bp.gamedef.is_limit else None
