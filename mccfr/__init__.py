"""mccfr: the public API of the distributed MCCFR blueprint trainer.

A lazy facade: ``from mccfr import Blueprint`` imports only what that name needs, so
``import mccfr`` (and the ``mccfr`` command's start-up) stays fast. The names come from the
packages that own them:

=========================  ==================================================================
name                       where it lives
=========================  ==================================================================
``Game``, ``load_gamedef`` ``holdem`` (the rules, ACPC game definitions and states)
``Blueprint``              ``blueprint.blueprint`` (load a run, query, export)
``make_trainer``           ``blueprint.trainer`` (train in one process)
``RayJob``                 ``cluster.job`` (train on Ray)
``solve``                  ``subgame.solver`` (solve an explicit subgame)
``Subgame``, ``Solution``  ``subgame.types`` (the subgame to solve, the solved strategy)
``solve_state``,           ``subgame.nested`` (solve at a blueprint's match state)
``hand_strategy``
``read_libratus``          ``subgame.libratus`` (the public Libratus endgame format)
``local_best_response``    ``mccfr.evaluation.lbr``
``play_match``,            ``mccfr.evaluation.match`` / ``mccfr.evaluation.players``
``player_from_spec``
=========================  ==================================================================

The command line is :mod:`mccfr.cli` (``mccfr`` / ``python -m mccfr``), the query service
:mod:`mccfr.serving`, measurement :mod:`mccfr.evaluation`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mccfr_util.lazy import lazy_exports

__version__ = "0.1.0"

_LAZY = {
    "Game": "holdem.game",
    "load_gamedef": "holdem.gamedef",
    "Blueprint": "blueprint.blueprint",
    "make_trainer": "blueprint.trainer",
    "RayJob": "cluster.job",
    "solve": "subgame.solver",
    "Subgame": "subgame.types",
    "Solution": "subgame.types",
    "solve_state": "subgame.nested",
    "hand_strategy": "subgame.nested",
    "read_libratus": "subgame.libratus",
    "local_best_response": "mccfr.evaluation.lbr",
    "play_match": "mccfr.evaluation.match",
    "player_from_spec": "mccfr.evaluation.players",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from blueprint.blueprint import Blueprint as Blueprint
    from blueprint.trainer import make_trainer as make_trainer
    from cluster.job import RayJob as RayJob
    from holdem.game import Game as Game
    from holdem.gamedef import load_gamedef as load_gamedef
    from mccfr.evaluation.lbr import local_best_response as local_best_response
    from mccfr.evaluation.match import play_match as play_match
    from mccfr.evaluation.players import player_from_spec as player_from_spec
    from subgame.libratus import read_libratus as read_libratus
    from subgame.nested import hand_strategy as hand_strategy
    from subgame.nested import solve_state as solve_state
    from subgame.solver import solve as solve
    from subgame.types import Solution as Solution
    from subgame.types import Subgame as Subgame


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
