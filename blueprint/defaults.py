"""Defaults shared by the library and the ``mccfr`` command, in one place.

``make_trainer()`` and ``mccfr train`` with no options train the same game: heads-up no-limit
hold'em with 100 big blinds (``hunl100``), the ``small`` bet abstraction (pot and all-in, at most
two raises a round), the ``fine`` card abstraction on 52-card decks (lossless buckets on small
decks, see :func:`abstraction.cards.default_card_name`), Pluribus-style MCCFR, seed 0. ``mccfr
train`` alone, knowing its time budget, picks ``standard`` bets instead for 52-card games given at
least :data:`STANDARD_BETS_FROM_CORE_SECONDS` (:func:`default_nolimit_bets`), and below that DCFR
with :data:`SHORT_BUDGET_DCFR_PARAMS` instead of Pluribus-style MCCFR (:func:`default_algo`).
"""

from __future__ import annotations

from blueprint.algo import dcfr_overrides

DEFAULT_GAME = "hunl100"  # the main job: heads-up no-limit hold'em, 100 big blinds
DEFAULT_NOLIMIT_BETS = "small"  # pot and all-in, at most two raises a round (limit games: their own)
# ``mccfr train`` on 52-card no-limit games with at least this many core-seconds of training (time x
# threads) and no --bets: ``standard`` bets. The abstraction ladder (BENCHMARKS.md), head-to-head
# with ``fine`` cards on 2 cores, the kernel's row prefetch on: standard loses to small at 3 minutes
# (-87 +- 47 mbb/game) and beats it at 10 (+58 +- 44; at 20, before the prefetch: +74 +- 44)
STANDARD_BETS_FROM_CORE_SECONDS = 2 * 600.0
DEFAULT_ALGO = "pluribus"
# ``mccfr train`` without --algo on a 52-card no-limit game with a time budget and ``small`` bets
# (the main job): DCFR with these (alpha, beta, gamma), negative regrets forgotten faster than
# linear CFR's. The abstraction ladder (BENCHMARKS.md), 3 minutes on 2 cores, `fine` cards: LBR
# 574 +- 127 against pluribus's 823 +- 135 (paired -249 +- 161), head-to-head +1 +- 39 against it
SHORT_BUDGET_DCFR_PARAMS = (1.5, 0.75, 2.0)
DEFAULT_SEED = 0
DEFAULT_TIME_BUDGET = 30.0  # seconds of training when neither iterations nor time is given (small games)
DEFAULT_TIME_BUDGET_HOLDEM = 180.0  # the same for 52-card games
DEFAULT_TIME_BUDGET_MS = 2_000  # wall-time budget of one query answer (mccfr serve, mccfr play)


def default_nolimit_bets(deck_size: int, seconds: float | None, cores: int) -> str:
    """The bet abstraction ``mccfr train`` picks without ``--bets`` for a no-limit game: ``standard``
    for a 52-card game trained ``seconds`` on ``cores`` threads when that is at least
    :data:`STANDARD_BETS_FROM_CORE_SECONDS`, else :data:`DEFAULT_NOLIMIT_BETS` (also for a budget
    in iterations, whose time is unknown)."""
    if deck_size == 52 and seconds is not None and seconds * max(cores, 1) >= STANDARD_BETS_FROM_CORE_SECONDS:
        return "standard"
    return DEFAULT_NOLIMIT_BETS


def default_algo(deck_size: int, is_limit: bool, bets: str | None, seconds: float | None) -> tuple[str, dict]:
    """The algorithm ``mccfr train`` picks without ``--algo``, and its parameter overrides: ``dcfr``
    with :data:`SHORT_BUDGET_DCFR_PARAMS` for a 52-card no-limit game trained for a time (not a
    count of iterations) with ``small`` bets, where the ladder measured it; else
    :data:`DEFAULT_ALGO`."""
    if deck_size == 52 and not is_limit and bets == DEFAULT_NOLIMIT_BETS and seconds is not None:
        return "dcfr", dcfr_overrides(SHORT_BUDGET_DCFR_PARAMS)
    return DEFAULT_ALGO, {}
