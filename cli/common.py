"""What every command shares: the error type and its exit status, input-error mapping, the
common options, and small formatting helpers."""

from __future__ import annotations

import contextlib
from math import comb
from pathlib import Path

import click

from blueprint.defaults import DEFAULT_TIME_BUDGET, DEFAULT_TIME_BUDGET_HOLDEM

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


# Exact best response walks every public state with [H, H] matrix products; above this many
# H^2 * public-board operations the evaluation would take minutes (hold'em never qualifies).
EXACT_EVAL_MAX_COST = 1e9


class CLIError(Exception):
    """A problem with what the user asked for: printed as ``error: <message>``, exit status 2."""


@contextlib.contextmanager
def user_input():
    """Turn the project's input-error classes into :class:`CLIError` (imported lazily: they live
    in modules that pull in numpy and numba).

    ``ValueError`` is included because the card abstraction and the trainer's size checks raise it
    for a request that cannot be met (an unknown card abstraction, a deck too big for lossless
    buckets, full-traversal CFR on a big game); use this only around loading and building.
    """
    from abstraction.bets import BetAbstractionError
    from blueprint.algo import AlgoError
    from blueprint.checkpoint import CheckpointError
    from holdem.gamedef import GameDefError

    try:
        yield
    except (GameDefError, BetAbstractionError, AlgoError, CheckpointError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def si(x: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}"
    return f"{x:.1f}"


def run_dir_arg(run_dir: str) -> Path:
    path = Path(run_dir)
    if not path.exists():
        raise CLIError(f"run directory {run_dir!r} does not exist")
    if not path.is_dir():
        raise CLIError(f"{run_dir!r} is not a directory (expected a run directory made by 'mccfr train')")
    return path


def exact_eval_cost(game) -> float:
    """Rough work of one exact best response: private hands^2 x public boards (all rounds)."""
    hands = comb(game.deck_size, game.num_hole_cards)
    remaining = game.deck_size - 2 * game.num_hole_cards
    boards, total = 1, 0
    for k in game.num_board_cards:
        boards *= comb(remaining, k)
        remaining -= k
        total += boards
    return float(hands) ** 2 * total


def exact_eval_problem(tr) -> str | None:
    """Why exact exploitability is out of reach for this trainer's game, or None."""
    from blueprint.evaluate import MAX_HANDS

    g = tr.game
    hands = comb(g.deck_size, g.num_hole_cards)
    if hands > MAX_HANDS:
        return f"exact best response needs <= {MAX_HANDS} private hands, {g.name or 'this game'} has {hands}"
    if exact_eval_cost(g) > EXACT_EVAL_MAX_COST:
        return f"{g.name or 'this game'} has too many public boards for an exact best response"
    return None


def expl_unit(game) -> tuple[str, float]:
    """(unit, chips -> unit factor): mbb/game for games with a big blind, else chips."""
    from holdem.reporting import big_blind_of, mbb_per_chip

    bb = big_blind_of(game)
    return ("mbb/game", mbb_per_chip(bb)) if bb else ("chips", 1.0)


def example_matchstate(game) -> str:
    """A valid MATCHSTATE for the first seat to act in round 0, holding the deck's top cards."""
    from holdem.cards import cards_str

    seat = game.first_player[0]
    top = list(range(game.deck_size - 1, -1, -1))
    hole = cards_str(top[: game.num_hole_cards], game.num_suits)
    cards = f"{hole}|" if seat == 0 else f"|{hole}"
    nb = game.num_board_cards[0]
    if nb:
        start = game.num_hole_cards
        cards += "/" + cards_str(top[start : start + nb], game.num_suits)
    return f"MATCHSTATE:{seat}:0::{cards}"


iterations_opt = click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    help="Train this many iterations (one traversal per player each).",
)
time_opt = click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help=f"Train for about this many seconds (default when --iterations is not given: "
    f"{DEFAULT_TIME_BUDGET_HOLDEM:g} for 52-card games, {DEFAULT_TIME_BUDGET:g} for small ones), counted after "
    "the first iteration (which compiles the kernels).",
)
ckpt_opt = click.option(
    "--checkpoint-every",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds between checkpoints (one is also written at the end).",
)
keep_opt = click.option(
    "--keep",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Keep the newest N complete checkpoints.",
)
target_opt = click.option(
    "--target-exploitability",
    "target",
    type=float,
    default=None,
    help="Stop once the exact exploitability (chips) is <= X (small games).",
)
eval_opt = click.option(
    "--eval-every",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Seconds between exact exploitability evaluations (small games; 0 disables).",
)
report_opt = click.option(
    "--report-every",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between progress reports (the live line and a metrics row).",
)
json_opt = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object as the last line of stdout."
)

ray_opts = [
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="Ray worker actors (more than 1, or --shards/--address, runs the Ray job) [default: 1; "
        "resume: the run's].",
    ),
    click.option(
        "--shards",
        type=click.IntRange(min=1),
        default=None,
        help="Ray regret-shard actors (slices of the tables by betting node) [default: 1; resume: the run's].",
    ),
    click.option(
        "--address",
        default=None,
        help="Ray cluster to join ('auto': the one started with 'ray start'); default: a local one.",
    ),
    click.option(
        "--batch",
        type=click.IntRange(min=1),
        default=None,
        help="Iterations per worker per round of the Ray job (rounds may span discount boundaries; "
        "staleness is at most (workers - 1) x batch and costs exploitability in proportion to "
        "batch / iterations) [default: table entries / 25, 100 to 100,000; resume: the "
        "run's].",
    ),
]


def with_ray_opts(f):
    for opt in reversed(ray_opts):
        f = opt(f)
    return f
