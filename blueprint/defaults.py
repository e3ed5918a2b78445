"""Defaults shared by the library and the ``mccfr`` command, in one place.

``make_trainer()`` and ``mccfr train`` with no options train the same game: heads-up no-limit
hold'em with 100 big blinds (``hunl100``), the ``small`` bet abstraction (pot and all-in, at most
two raises a round), the ``small`` card abstraction on 52-card decks (lossless buckets on small
decks, see :func:`abstraction.cards.default_card_abstraction`), Pluribus-style MCCFR, seed 0.
"""

from __future__ import annotations

DEFAULT_GAME = "hunl100"  # the main job: heads-up no-limit hold'em, 100 big blinds
DEFAULT_NOLIMIT_BETS = "small"  # pot and all-in, at most two raises a round (limit games: their own)
DEFAULT_ALGO = "pluribus"
DEFAULT_SEED = 0
DEFAULT_TIME_BUDGET = 30.0  # seconds of training when neither iterations nor time is given (small games)
DEFAULT_TIME_BUDGET_HOLDEM = 180.0  # the same for 52-card games
DEFAULT_TIME_BUDGET_MS = 2_000  # wall-time budget of one query answer (mccfr serve, mccfr play)
