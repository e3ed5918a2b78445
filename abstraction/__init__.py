"""Card abstraction (hand isomorphism, buckets) and bet abstraction (with action translation); the
betting tree that the trainer and the solver share. Names load on first use (:mod:`mccfr_util.lazy`)."""

from mccfr_util.lazy import lazy_exports

_LAZY = {
    "BetAbstraction": "abstraction.bets",
    "BetAbstractionError": "abstraction.bets",
    "load_bets": "abstraction.bets",
    "parse_bets": "abstraction.bets",
    "CardAbstraction": "abstraction.cards",
    "default_card_abstraction": "abstraction.cards",
    "BettingTree": "abstraction.tree",
    "build_tree": "abstraction.tree",
    "translate": "abstraction.translation",
}
__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
