"""OpenSpiel as an independent oracle for exploitability (test and benchmark use; needs the
``open-spiel`` package from the test extra).

:func:`openspiel_exploitability` reads a trainer's average strategy back through
:meth:`Blueprint.strategy` for every ACPC state of OpenSpiel's ``universal_poker`` version of the
same game (limit games load with ``bettingAbstraction=fcpa``, where a raise is action 2) and hands
it to ``pyspiel.exploitability``.
"""

from __future__ import annotations

from blueprint.blueprint import Blueprint
from holdem.game import Game


def openspiel_exploitability(trainer) -> float:
    # open_spiel: optional (the test extra) and heavy, imported only when the oracle runs
    import pyspiel
    from open_spiel.python import policy as ospolicy

    if not trainer.game.is_limit:
        raise ValueError("the OpenSpiel oracle maps limit games only (fold, call, raise = 0, 1, 2)")
    bp = Blueprint(trainer)
    game = pyspiel.load_game("universal_poker", trainer.game.openspiel_params("fcpa"))
    g = Game(trainer.game)
    ids = {"f": 0, "c": 1, "r": 2}

    def probs(state):
        s = g.state(state.to_dict()["acpc_state"].splitlines()[0])
        return {ids[k]: v for k, v in bp.strategy(s.matchstate(state.current_player())).items()}

    tab = ospolicy.tabular_policy_from_callable(game, probs)
    return float(pyspiel.exploitability(game, ospolicy.python_policy_to_pyspiel_policy(tab)))
