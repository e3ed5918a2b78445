"""Material for hostile-input tests of the rules' parsers: two odd but legal game definitions, the
games a fuzzer covers, and the state strings of random legal hands.

The property tests (``tests/holdem``) and the long-run fuzzer (``scripts/tools/fuzz_parsers.py``) share
them, so a game or a kind of state string added here reaches both. It is test material, not part of
the installed package; the tests import it as ``scripts.tools.fuzz_games``, the fuzzer as a sibling::

    import random
    from scripts.tools.fuzz_games import fuzz_games, random_play, state_strings

    rng = random.Random(0)
    for name, game in fuzz_games().items():
        texts = [t for s in random_play(game, rng) for t in state_strings(s)]

Randomness is a :class:`random.Random` (the fuzzers mutate text with it too), passed in.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from holdem.game import Game
from holdem.gamedef import parse_gamedef
from holdem.state import State

__all__ = ["FUZZ_PRESETS", "ODD_LIMIT", "ODD_NOLIMIT", "fuzz_games", "random_play", "state_strings"]

# A board card in round 1 (written straight after seat 1's hand), a round without board cards,
# unequal blinds and stacks, a 3-suit deck; limit and no-limit.
ODD_LIMIT = """GAMEDEF
limit
numPlayers = 2
numRounds = 3
blind = 2 1
raiseSize = 2 2 4
firstPlayer = 2 1 2
maxRaises = 2 3 1
numSuits = 3
numRanks = 5
numHoleCards = 1
numBoardCards = 1 0 2
END GAMEDEF
"""
ODD_NOLIMIT = ODD_LIMIT.replace("limit\n", "nolimit\nstack = 60 45\n", 1).replace("raiseSize = 2 2 4\n", "")

FUZZ_PRESETS = ("kuhn", "leduc", "hulhe", "hunl", "hunl20")


def fuzz_games(files: Iterable[str | Path] = ()) -> dict[str, Game]:
    """The games a fuzzer covers, by name: the presets :data:`FUZZ_PRESETS`, the two odd games
    (``odd-limit``, ``odd-nolimit``) and each existing ``.game`` file of ``files`` (by its stem)."""
    games = {name: Game.load(name) for name in FUZZ_PRESETS}
    games["odd-limit"] = Game(parse_gamedef(ODD_LIMIT, name="odd-limit"))
    games["odd-nolimit"] = Game(parse_gamedef(ODD_NOLIMIT, name="odd-nolimit"))
    for f in map(Path, files):
        if f.is_file():
            games[f.stem] = Game.load(f)
    return games


def random_play(game: Game, rng: random.Random) -> Iterator[State]:
    """Every state along one random legal hand, chance states included: a random hand number,
    cards dealt one at a time from those left, actions uniform over the legal ones, and a no-limit
    raise to the minimum, the maximum or a uniform size between."""
    gd = game.gamedef
    s = game.initial_state(hand_id=rng.choice((0, 1, 7, 2**32 - 1, rng.randrange(2**32))))
    yield s
    while not s.is_terminal():
        if s.is_chance():
            used = set(s.hole_cards[0] + s.hole_cards[1] + s.board_cards)
            s = s.deal([rng.choice([c for c in range(gd.deck_size) if c not in used])])
        else:
            a = rng.choice(s.legal_actions())
            if a.startswith("r") and not gd.is_limit:
                lo, hi = s.raise_range()
                a = f"r{rng.choice((lo, hi, rng.randint(lo, hi)))}"
            s = s.apply(a)
        yield s


def state_strings(s: State) -> list[str]:
    """The dealer's ``STATE`` string of ``s``, both seats' ``MATCHSTATE`` strings and, at a
    terminal state, the dealer log's line (``STATE...:<net>|<net>:alice|bob``)."""
    out = [str(s), s.matchstate(0), s.matchstate(1)]
    if s.is_terminal():
        p = s.payoffs()
        out.append(f"{s}:{int(p[0])}|{int(p[1])}:alice|bob")
    return out
