"""Exact NashConv of N-seat games (mccfr.evaluation.nashconv_n) equals OpenSpiel's nash_conv."""

import hashlib

import pytest

from holdem import Game
from holdem.cards import cards_str
from mccfr.evaluation.nashconv_n import nash_conv, policy_values

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import exploitability  # noqa: E402

ACTIONS = "fcr"


def _probs(seat: int, cards: str, betting: str, legal: list[str], salt: str) -> dict[str, float]:
    """A fixed, uneven policy: weights from a hash of what the seat sees."""
    digest = hashlib.blake2b(f"{salt}:{seat}:{cards}:{betting}".encode(), digest_size=8).digest()
    w = {a: 1.0 + digest[ACTIONS.index(a)] for a in legal}
    total = sum(w.values())
    return {a: v / total for a, v in w.items()}


def ours(game: Game, salt: str):
    def policy(state):
        p = state.current_player()
        cards = cards_str(state.hole_cards[p], game.gamedef.num_suits)
        return _probs(p, cards, state.betting.betting_string(), state.legal_actions(), salt)

    return policy


class TheirPolicy(os_policy.Policy):
    """The same policy on OpenSpiel's universal_poker (limit: fcpa ids 0 fold, 1 call, 2 raise)."""

    def __init__(self, os_game, salt: str):
        super().__init__(os_game, list(range(os_game.num_players())))
        self.salt = salt

    def action_probabilities(self, state, player_id=None):
        line = state.to_dict()["acpc_state"].split("\n", 1)[0]  # STATE:0:<betting>:<cards>
        _, _, betting, cards = line.split(":", 3)
        p = state.current_player()
        hole = cards.split("/", 1)[0].split("|")[p]
        legal = [ACTIONS[a] for a in state.legal_actions()]
        probs = _probs(p, hole, betting, legal, self.salt)
        return {ACTIONS.index(a): v for a, v in probs.items()}


@pytest.mark.parametrize("salt", ["a", "b", "uniform"])
def test_kuhn3_nash_conv_equals_openspiel(salt):
    game = Game.load("kuhn.limit.3p")
    os_game = pyspiel.load_game("universal_poker", game.gamedef.openspiel_params("fcpa"))
    if salt == "uniform":
        mine = lambda s: {a: 1 / len(s.legal_actions()) for a in s.legal_actions()}  # noqa: E731
        theirs = os_policy.UniformRandomPolicy(os_game)
    else:
        mine, theirs = ours(game, salt), TheirPolicy(os_game, salt)
    expected = exploitability.nash_conv(os_game, theirs, use_cpp_br=False)
    got = nash_conv(game, mine)
    assert got == pytest.approx(expected, abs=1e-9)
    assert got > 0.01  # none of these is an equilibrium
    values = policy_values(game, mine)
    assert abs(sum(values)) < 1e-12  # Kuhn's payoffs are zero-sum


def test_kuhn3_uniform_matches_openspiel_kuhn_poker():
    # the ACPC file's 3-player Kuhn is OpenSpiel's kuhn_poker(players=3): the same uniform NashConv
    kuhn3 = pyspiel.load_game("kuhn_poker(players=3)")
    expected = exploitability.nash_conv(kuhn3, os_policy.UniformRandomPolicy(kuhn3))
    got = nash_conv(
        Game.load("kuhn.limit.3p"), lambda s: {a: 1 / len(s.legal_actions()) for a in s.legal_actions()}
    )
    assert got == pytest.approx(expected, abs=1e-9) and got == pytest.approx(2.0625, abs=1e-9)
