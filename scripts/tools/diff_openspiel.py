"""Differential test of the rules against OpenSpiel's ``universal_poker`` (the ACPC reference code).

Plays random hands in lockstep on :class:`holdem.State` and on OpenSpiel: random deals (the same
cards on both sides) and random actions, in no-limit favouring min-raises, all-ins and pot-sized
raises, with some "raise wars" that reach the reference code's 64-actions-per-round cap. At every
step it compares chance/terminal flags, the player to act, the legal actions (fold, call, and the
raise range against OpenSpiel's legal action ids), the chips spent, the ACPC ``STATE`` string,
and at the end the payoffs; it also re-parses our own ``STATE`` and ``MATCHSTATE`` strings.

OpenSpiel facts this relies on (2.0.2, checked by ``card_map`` and by the comparison itself):

* No-limit games load with ``bettingAbstraction=fullgame``: action 0 folds, 1 calls, and an id
  ``>= 2`` raises to that many chips. Limit games need ``fcpa`` instead: in ``fullgame`` the
  reference ``raiseIsValid`` reports sizes ``0..0`` for a limit raise, so OpenSpiel lists the
  raise as id 0, the same id as fold (Kuhn at the root: ``[1, 0]``); with ``fcpa`` a limit raise
  is id 2 (``kBet``).
* A chance action id is the card's index in the full deck ordered by rank, then suit (``cdhs``),
  i.e. ``rank * numSuits + suit``: the same numbering as :mod:`holdem.cards`. Internally the
  reference code stores ``makeCard(rank, suit) = rank * MAX_SUITS + suit`` with ``MAX_SUITS = 4``
  whatever the deck, which never shows through the Python API (the names do).
* Hole cards are dealt to seat 0 first, then seat 1, then each round's board, then (after an
  all-in) every remaining board: the order of :meth:`holdem.State.deal`.
* ``state.to_dict()["acpc_state"]`` is ``STATE:<hand>:<betting>:<cards>`` plus a ``Spent:`` line;
  cards not yet dealt print as ``2c``, so only decision and terminal states are compared whole.

Usage::

    python scripts/tools/diff_openspiel.py --per-game 2500 --seed 0
    python scripts/tools/diff_openspiel.py --players 3 --per-game 2500 --seed 0

``--players N`` (3..10) plays N-seat games instead (:func:`n_seat_games`): Kuhn with N + 1 cards,
limit hold'em with the ACPC 3-player blinds, no-limit hold'em and a small-deck no-limit game
with unequal stacks (many all-ins, side pots and split pots). OpenSpiel 2.0.2 loads no limit
game of more than 4 seats (it writes no stack line for limit games and the reference reader then
counts 4 stacks), so from 5 seats on only the no-limit games are compared. It prints one line per game (sequences, decisions compared, mismatches) and a final JSON line.
The exit status is 1 when any mismatch is found.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import sys
import time
from collections import Counter

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from holdem import Game
from holdem.betting import MAX_NUM_ACTIONS, RAISE, parse_action_token
from holdem.cards import parse_card
from holdem.gamedef import INT32_MAX, MAX_PLAYERS, NO_RAISE_CAP, GameDef, parse_gamedef

# A deliberately odd no-limit game: unequal stacks, a board card in round 1, 3 suits x 6 ranks,
# 1-based firstPlayer that changes by round.
ODD_NOLIMIT = parse_gamedef(
    """GAMEDEF
nolimit
numPlayers = 2
numRounds = 3
stack = 600 450
blind = 10 5
firstPlayer = 2 1 2
numSuits = 3
numRanks = 6
numHoleCards = 1
numBoardCards = 1 1 1
END GAMEDEF
""",
    name="odd-nolimit",
)

DEFAULT_GAMES = ("kuhn", "leduc", "hulhe", "hunl", "hunl20", "odd-nolimit")


# OpenSpiel 2.0.2 writes no stack line for a limit game, and the reference reader then counts 4
# stacks: a limit game of 5 or more seats fails to load ("only read 4 stack sizes, need 5")
OPENSPIEL_MAX_LIMIT_SEATS = 4
N_SEAT_STACKS = (20000, 1000, 5000, 300, 20000, 2500, 800, 12000, 150, 6000)
ODD_STACKS = (600, 450, 300, 900, 150, 700, 250, 1200, 80, 500)


def n_seat_games(n: int) -> dict[str, GameDef]:
    """The N-seat games ``--players N`` compares, by name: ``kuhn<N>p`` (1 suit, N + 1 ranks),
    ``lhe<N>p`` (limit hold'em, blinds 5/10, the ACPC 3-player file's), ``nl<N>p`` (no-limit
    hold'em, blinds 50/100, unequal stacks) and ``odd<N>p`` (no-limit, 3 suits x 6 ranks, one hole
    card and a board card a round, small unequal stacks: side pots and split pots)."""
    rest = (0,) * (n - 2)
    first_pre = 2 % n  # seat 3 (1-based) after the blinds, as the ACPC 3-player games
    return {
        f"kuhn{n}p": GameDef("limit", 1, (INT32_MAX,) * n, (1,) * n, (1,), (0,), (1,), 1, n + 1, 1, (0,)),
        f"lhe{n}p": GameDef(
            "limit", 4, (INT32_MAX,) * n, (5, 10) + rest, (10, 10, 20, 20), (first_pre, 0, 0, 0),
            (3, 4, 4, 4), 4, 13, 2, (0, 3, 1, 1),
        ),
        f"nl{n}p": GameDef(
            "nolimit", 4, N_SEAT_STACKS[:n], (50, 100) + rest, (0,) * 4, (first_pre, 0, 0, 0),
            (NO_RAISE_CAP,) * 4, 4, 13, 2, (0, 3, 1, 1),
        ),
        f"odd{n}p": GameDef(
            "nolimit", 3, ODD_STACKS[:n], (10, 5) + rest, (0,) * 3, (1, 0, 1), (NO_RAISE_CAP,) * 3,
            3, 6, 1, (1, 1, 1),
        ),
    }  # fmt: skip


def load_game(name: str) -> Game:
    if name == "odd-nolimit":
        return Game(ODD_NOLIMIT)
    m = re.fullmatch(r"(kuhn|lhe|nl|odd)(\d+)p", name)
    if m and 3 <= int(m.group(2)) <= MAX_PLAYERS:
        gd = n_seat_games(int(m.group(2)))[name]
        return Game(dataclasses.replace(gd, name=name))
    return Game.load(name)


def load_openspiel(game: Game):
    import pyspiel

    gd = game.gamedef
    return pyspiel.load_game("universal_poker", gd.openspiel_params("fcpa" if gd.is_limit else "fullgame"))


def card_map(os_game, game: Game) -> list[int]:
    """Our card id for each OpenSpiel chance action id, matched by the card's name."""
    gd = game.gamedef
    s = os_game.new_initial_state()
    out = []
    for a in s.legal_actions():
        name = s.action_to_string(a).rsplit(" ", 1)[-1]  # "player=-1 move=Deal Ah"
        out.append(parse_card(name, gd.num_suits, gd.num_ranks))
    if len(out) != gd.deck_size or sorted(out) != list(range(gd.deck_size)):
        raise AssertionError(f"{gd.name}: OpenSpiel deals {out}, expected each of {gd.deck_size} cards once")
    return out


def random_style(rng: np.random.Generator) -> dict:
    """A hand's appetite: fold and raise probabilities; 5% are min-raise wars."""
    war = rng.random() < 0.05
    return {
        "fold": 0.002 if war else rng.uniform(0.0, 0.25),
        "raise": 0.995 if war else rng.uniform(0.15, 0.8),
        "war": war,
    }


def _choose(state, rng: np.random.Generator, style: dict) -> str:
    """A random legal action string; ``style`` holds this hand's raise appetite."""
    legal = state.legal_actions()
    if "f" in legal and rng.random() < style["fold"]:
        return "f"
    if state.raise_range() is None or rng.random() >= style["raise"]:
        return "c"
    if state.gamedef.is_limit:
        return "r"
    lo, hi = state.raise_range()
    v = rng.random()
    if style["war"] or v < 0.35:
        to = lo
    elif v < 0.55:
        to = hi
    elif v < 0.7:
        b = state.betting
        to = min(max(b.max_spent + (b.pot() + b.to_call()), lo), hi)  # a pot-sized raise
    else:
        to = int(rng.integers(lo, hi + 1))
    return f"r{to}"


def _acpc_line(os_state) -> str:
    return os_state.to_dict()["acpc_state"].split("\n", 1)[0]


def play_hand(
    game: Game,
    os_game,
    cmap: list[int],
    rng: np.random.Generator,
    reparse: float = 1.0,
    stats: Counter | None = None,
    style: dict | None = None,
) -> tuple[int, list[str]]:
    """Play one random hand in lockstep; returns (decisions compared, problems found).

    ``stats`` (if given) counts showdowns, hands with an all-in, and hands where a round reached
    the reference code's cap of 64 actions. ``style`` fixes the hand's appetite for folds and
    raises (see :func:`random_style`; drawn when None). ``reparse`` is the chance of
    round-tripping our STATE and both MATCHSTATE strings at a step (always done at the end; in
    raise wars only at the end, as their strings grow to hundreds of actions).
    """
    gd = game.gamedef
    style = random_style(rng) if style is None else style
    stats = Counter() if stats is None else stats
    ours = game.initial_state()
    theirs = os_game.new_initial_state()
    decisions = 0
    problems: list[str] = []

    def check(cond: bool, what: str) -> bool:
        if not cond:
            problems.append(f"{gd.name}: {what} at {ours} (OpenSpiel {_acpc_line(theirs)!r})")
        return cond

    while True:
        if not check(ours.is_chance() == theirs.is_chance_node(), "chance flag differs"):
            break
        if not check(ours.is_terminal() == theirs.is_terminal(), "terminal flag differs"):
            break
        d = theirs.to_dict()
        check(
            list(ours.spent) == list(d["player_contributions"]),
            f"spent {ours.spent} vs {d['player_contributions']}",
        )
        check(ours.pot() == d["pot_size"], f"pot {ours.pot()} vs {d['pot_size']}")
        line = d["acpc_state"].split("\n", 1)[0]
        check(line.split(":")[2] == ours.betting.betting_string(), f"betting string vs {line!r}")
        if not ours.is_chance():
            check(str(ours) == line, f"STATE string vs {line!r}")
        if theirs.is_terminal() or (not style["war"] and rng.random() < reparse):
            check(game.state(str(ours)) == ours, "STATE string does not round-trip")
            for v in range(gd.num_players):
                ms = ours.matchstate(v)
                check(str(game.state(ms)) == ms, f"MATCHSTATE {ms!r} does not round-trip")
        if problems:
            break
        if theirs.is_terminal():
            check(
                list(ours.payoffs()) == list(theirs.returns()),
                f"payoffs {ours.payoffs()} vs {theirs.returns()}",
            )
            break
        if theirs.is_chance_node():
            a = int(rng.choice(theirs.legal_actions()))
            ours = ours.deal([cmap[a]])
            theirs.apply_action(a)
            continue
        decisions += 1
        if not check(
            ours.current_player() == theirs.current_player(),
            f"player {ours.current_player()} vs {theirs.current_player()}",
        ):
            break
        # OpenSpiel lists fold (0), call (1), then the raise: id 2 (limit, fcpa) or every
        # raise-to amount from min to max (no-limit, fullgame)
        ids = theirs.legal_actions()
        legal = ours.legal_actions()
        expected = [0] if "f" in legal else []
        expected += [1] if "c" in legal else []
        rr = ours.raise_range()
        if rr is not None:
            expected += [2] if gd.is_limit else list(range(rr[0], rr[1] + 1))
        tail = f"...{ids[-1]}" if len(ids) > 4 else ""
        check(ids == expected, f"legal {legal} vs OpenSpiel ids {ids[:4]}{tail}")
        if problems:
            break
        action = _choose(ours, rng, style)
        kind, size, _ = parse_action_token(action, 0, gd)
        ours = ours.apply(action)
        theirs.apply_action(os_action(kind, size, gd.is_limit))
    if not problems:
        b = ours.betting
        at_showdown = b.finished and sum(b.folded) + 1 < len(b.folded)
        stats["showdowns"] += at_showdown
        all_in = {b.spent[p] for p in range(gd.num_players) if b.spent[p] == gd.stack[p] and not b.folded[p]}
        stats["side_pots"] += (
            at_showdown and len(all_in) >= 1 and len(set(b.spent)) > 1 and gd.num_players > 2
        )
        stats["split_pots"] += at_showdown and any(v != int(v) or v == 0 for v in ours.payoffs())  # (or even)
        stats["all_ins"] += any(ours.spent[p] == gd.stack[p] for p in range(gd.num_players))
        stats["action_cap"] += max(len(a) for a in b.actions) >= MAX_NUM_ACTIONS - gd.num_players
    return decisions, problems


def os_action(kind: int, size: int, limit: bool) -> int:
    """OpenSpiel's action id for ours (``fcpa`` ids in limit games, ``fullgame`` in no-limit)."""
    return kind if kind != RAISE else 2 if limit else size


def replay(state, os_game, cmap: list[int]):
    """Replay a dealer state's cards and actions on OpenSpiel; returns the OpenSpiel state."""
    to_id = {card: a for a, card in enumerate(cmap)}
    cards = [to_id[c] for c in sum(state.hole_cards, ()) + state.board_cards]
    limit = state.gamedef.is_limit
    actions = [os_action(k, size, limit) for acts in state.betting.actions for k, size in acts]
    theirs = os_game.new_initial_state()
    while not theirs.is_terminal():
        todo = cards if theirs.is_chance_node() else actions
        if not todo:
            break
        theirs.apply_action(todo.pop(0))
    return theirs


def run(games, per_game: int, seed: int, verbose: bool = True, reparse: float = 0.25) -> dict:
    seeds = np.random.SeedSequence(seed).spawn(len(games))
    summary = {"games": {}, "sequences": 0, "decisions": 0, "mismatches": 0, "examples": []}
    t0 = time.perf_counter()
    for name, ss in zip(games, seeds):
        game = load_game(name)
        os_game = load_openspiel(game)
        cmap = card_map(os_game, game)
        rng = np.random.default_rng(ss)
        n_dec = n_bad = 0
        stats: Counter = Counter()
        t = time.perf_counter()
        for _ in range(per_game):
            dec, problems = play_hand(game, os_game, cmap, rng, reparse, stats)
            n_dec += dec
            if problems:
                n_bad += 1
                if len(summary["examples"]) < 10:
                    summary["examples"].append(problems[0])
        summary["games"][name] = {"sequences": per_game, "decisions": n_dec, "mismatches": n_bad, **stats}
        summary["sequences"] += per_game
        summary["decisions"] += n_dec
        summary["mismatches"] += n_bad
        if verbose:
            print(
                f"{name:12s} sequences {per_game:6d}  decisions {n_dec:7d}  mismatches {n_bad}"
                f"  (showdowns {stats['showdowns']}, all-ins {stats['all_ins']},"
                f" 64-action cap {stats['action_cap']}, side pots {stats['side_pots']},"
                f" split pots {stats['split_pots']}; {time.perf_counter() - t:.1f} s)",
                flush=True,
            )
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--games", default=",".join(DEFAULT_GAMES), help="comma-separated presets (and 'odd-nolimit')"
    )
    ap.add_argument("--per-game", type=int, default=2500, help="random hands per game")
    ap.add_argument(
        "--players",
        type=int,
        default=2,
        help="seats: 2 plays --games; 3..10 play the N-seat games (kuhn<N>p, lhe<N>p, nl<N>p, odd<N>p)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--reparse",
        type=float,
        default=0.25,
        help="chance per step of re-parsing our strings (always at the end)",
    )
    args = ap.parse_args(argv)
    games = [g for g in args.games.split(",") if g]
    if args.players != 2:
        if not 3 <= args.players <= MAX_PLAYERS:
            ap.error(f"--players must be 2..{MAX_PLAYERS}, got {args.players}")
        games = list(n_seat_games(args.players))
        if args.players > OPENSPIEL_MAX_LIMIT_SEATS:
            games = [g for g in games if not n_seat_games(args.players)[g].is_limit]
            print(
                f"(limit games skipped: OpenSpiel's universal_poker loads no limit game of more than"
                f" {OPENSPIEL_MAX_LIMIT_SEATS} seats, 'only read 4 stack sizes')",
                flush=True,
            )
    summary = run(games, args.per_game, args.seed, reparse=args.reparse)
    for ex in summary["examples"]:
        print("MISMATCH", ex)
    import pyspiel

    summary.update(
        players=args.players,
        seed=args.seed,
        openspiel=pyspiel.__version__ if hasattr(pyspiel, "__version__") else None,
    )
    summary["python"] = platform.python_version()
    print(json.dumps(summary, sort_keys=True))
    return 1 if summary["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
