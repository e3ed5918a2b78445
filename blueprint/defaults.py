"""Defaults shared by the library and the ``mccfr`` command, in one place.

``make_trainer()`` and ``mccfr train`` with no options train the same game: heads-up no-limit
hold'em with 100 big blinds (``hunl100``), the ``small`` bet abstraction (pot and all-in, at most
two raises a round), the ``fine`` card abstraction on 52-card decks (lossless buckets on small
decks, see :func:`abstraction.cards.default_card_name`), Pluribus-style MCCFR, seed 0. ``mccfr
train`` alone, knowing its time budget, picks ``standard`` bets instead for 52-card games given at
least :data:`STANDARD_BETS_FROM_CORE_SECONDS` (:func:`default_nolimit_bets`), and below that DCFR
with :data:`SHORT_BUDGET_DCFR_PARAMS` instead of Pluribus-style MCCFR (:func:`default_algo`).

:func:`run_config` fills them in: both build a run's :class:`blueprint.runconfig.RunConfig` there,
the one place a run's game is parsed, its bets loaded and its algorithm resolved.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from abstraction.bets import load_bets
from blueprint.algo import dcfr_overrides, get_algo
from blueprint.runconfig import RunConfig
from holdem.gamedef import GameDef, load_gamedef

DEFAULT_GAME = "hunl100"  # the main job: heads-up no-limit hold'em, 100 big blinds
DEFAULT_NOLIMIT_BETS = "small"  # pot and all-in, at most two raises a round (limit games: their own)
MULTIWAY_BETS = "multiway"  # games of more than two seats: pot bets, one raise a round after the flop
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
# ``mccfr serve --solve`` and ``mccfr play --method`` without --solve-from, in four-round games
# (hold'em), at a default budget of at least this: solve from the turn, else the river only.
# docs/solving.md, "Defaults": at 2 s a turn decision of the main job's blueprint is answered from
# a subgame (20 / 20), and LBR setting (2) loses more to turn and river solving than to the
# blueprint alone, paired on the same deals; river solving alone is not separated from it
TURN_SOLVING_FROM_BUDGET_MS = 2_000


def default_solve_from(num_rounds: int, budget_ms: int) -> int:
    """The first round a solving server or player solves when not told (:data:`TURN_SOLVING_FROM_BUDGET_MS`):
    the turn (round 2) of a four-round game at a default budget of at least that, else the last."""
    if num_rounds == 4 and budget_ms >= TURN_SOLVING_FROM_BUDGET_MS:
        return 2
    return num_rounds - 1


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


def run_config(
    game: str,
    gamedef: GameDef | None = None,
    *,
    bets: str | None = None,
    cards: str | None = None,
    algo: str | None = None,
    seed: int = DEFAULT_SEED,
    seconds: float | None = None,
    cores: int = 1,
    log: Callable[[str], Any] | None = None,
    **algo_options,
) -> RunConfig:
    """A new run's config, the defaults filled in, everything parsed and checked once.

    ``game``: a preset or ``.game`` path as given (recorded); ``gamedef``: that game, if already
    parsed. ``bets`` (ignored for a limit game, with a note), ``cards`` and ``algo``: None for the
    default, which for bets and the algorithm follows the training budget: ``seconds`` of training
    (None: counted in iterations) on ``cores`` threads (:func:`default_nolimit_bets`,
    :func:`default_algo`). ``algo_options``: fields of :class:`blueprint.algo.AlgoConfig` (None:
    the algorithm's own); the DCFR discounts of the default algorithm apply unless they are among
    them. ``log`` gets a note for each default chosen by the budget (None: no notes). Raises
    :class:`holdem.gamedef.GameDefError`, :class:`abstraction.bets.BetAbstractionError` or
    :class:`blueprint.algo.AlgoError` for what cannot be trained."""
    note = log if log is not None else (lambda _msg: None)
    gd = gamedef if gamedef is not None else load_gamedef(game)
    if gd.is_limit:
        if bets is not None:
            note(f"warning: --bets is ignored: {gd.name or game} is a limit game (its own bet abstraction)")
        bets = None
    elif bets is None and gd.num_players > 2:
        bets = MULTIWAY_BETS
    elif bets is None:
        bets = default_nolimit_bets(gd.deck_size, seconds, cores)
        if bets != DEFAULT_NOLIMIT_BETS:
            note(
                f"bets: {bets} (the default for {(seconds or 0) * cores / 60:,.0f} core-minutes of training; "
                f"--bets {DEFAULT_NOLIMIT_BETS} for the short-budget default)"
            )
    if cards is not None and Path(cards).exists():  # a built directory: resume must find it from anywhere
        cards = str(Path(cards).resolve())
    options = {k: v for k, v in algo_options.items() if v is not None}
    if algo is None:
        algo, discounts = default_algo(gd.deck_size, gd.is_limit, bets, seconds)
        if discounts and not discounts.keys() & options.keys():
            note(
                f"algo: dcfr --dcfr-params {' '.join(f'{x:g}' for x in discounts.values())} (the default for a "
                f"timed run with {bets} bets; --algo {DEFAULT_ALGO} for Pluribus-style MCCFR)"
            )
            options.update(discounts)
    return RunConfig(
        game=game,
        gamedef=gd,
        bets=bets,
        bet_abstraction=load_bets(bets) if bets is not None else None,
        cards=cards,
        algo=get_algo(algo, **options),
        seed=seed,
    )
