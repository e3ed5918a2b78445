"""Measuring strategies: duplicate matches (:mod:`mccfr.evaluation.match`; N seats:
:mod:`mccfr.evaluation.match_n`), players and the player
SPEC parser (:mod:`mccfr.evaluation.players`), the blueprint + solving player
(:mod:`mccfr.evaluation.solving`), local best response (:mod:`mccfr.evaluation.lbr`; its models
of the opponent in :mod:`mccfr.evaluation.lbr_opponents` and, for the solving player,
:mod:`mccfr.evaluation.lbr_solving`) and OpenSpiel as an exploitability oracle (:mod:`mccfr.evaluation.oracle`). Exact best response lives with the
trainer that uses it (:mod:`blueprint.best_response`). Names load on first use (:mod:`mccfr_util.lazy`)."""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "play_match": "mccfr.evaluation.match",
    "exact_value": "mccfr.evaluation.match",
    "MatchResult": "mccfr.evaluation.match",
    "play_match_n": "mccfr.evaluation.match_n",
    "MatchNResult": "mccfr.evaluation.match_n",
    "player_from_spec": "mccfr.evaluation.players",
    "SolvingPlayer": "mccfr.evaluation.solving",
    "local_best_response": "mccfr.evaluation.lbr",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
