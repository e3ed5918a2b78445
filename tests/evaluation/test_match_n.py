"""N-seat duplicate matches (mccfr.evaluation.match_n): agreement with the exact values of
blueprint.nplayer on 3-player Kuhn, zero sum, the duplicate's exact 0 for identical players,
what a player sees, and clear errors for bad input."""

import itertools

import numpy as np
import pytest

from blueprint.nplayer import NPlayerGame, train_es, uniform_policy
from holdem.game import Game
from holdem.gamedef import GameDefError, load_gamedef
from mccfr.evaluation.match import MatchError, play_match, view_of
from mccfr.evaluation.match_n import (
    MatchNResult,
    PolicyPlayer,
    exact_values,
    play_match_n,
    seatings_of,
)
from mccfr.evaluation.players import AlwaysCall, AlwaysRaise, RandomPlayer


@pytest.fixture(scope="module")
def kuhn3():
    ng = NPlayerGame.from_gamedef("kuhn.limit.3p")
    return ng, Game(ng.gamedef)


@pytest.fixture(scope="module")
def trained(kuhn3):
    ng, _ = kuhn3
    return PolicyPlayer(ng, train_es(ng, 20_000, seed=0).average_policy(), name="es20k")


@pytest.fixture(scope="module")
def vs_callers(kuhn3, trained):
    """The trained policy against two always-call players, 1,500 deals (9,000 hands)."""
    _, game = kuhn3
    ac = AlwaysCall()
    return play_match_n(game, [trained, ac, ac], 1_500, seed=3)


def test_match_agrees_with_exact_values(kuhn3, trained, vs_callers):
    ng, _ = kuhn3
    ac = AlwaysCall()
    exact = exact_values(ng, [trained, ac, ac])
    res = vs_callers
    assert res.deals == 1_500 and res.hands == 9_000 and len(res.seatings) == 6
    assert res.unit == "chips/hand" and res.big_blind is None
    for p in range(3):
        assert abs(res.chips[p] - exact[p]) <= res.ci95_chips[p], (p, res.chips, exact, res.ci95_chips)
    assert exact[0] > 0.1  # the trained policy beats the callers, and the match says so
    assert res.chips[0] - res.ci95_chips[0] > 0
    assert exact.sum() == pytest.approx(0.0, abs=1e-12)


def test_exact_values_average_the_seat_permutations(kuhn3, trained):
    """exact_values is the mean over the seatings of blueprint.nplayer.policy_values on the
    profile each seating makes."""
    from blueprint.nplayer import policy_values

    ng, _ = kuhn3
    uni = uniform_policy(ng)
    seat_of = np.repeat(ng.tree.player[ng.infoset_node], np.diff(ng.tree.ioff))
    total = np.zeros(3)
    for order in itertools.permutations(range(3)):
        pols = [trained.policy if p == 0 else uni for p in order]
        prof = np.select([seat_of == s for s in range(3)], pols)
        total[list(order)] += policy_values(ng, prof)
    rnd = RandomPlayer()  # uniform over the legal actions in a limit game
    assert exact_values(ng, [trained, rnd, rnd]) == pytest.approx(total / 6, abs=1e-12)


def test_zero_sum_per_deal(vs_callers):
    assert np.abs(vs_callers.per_deal.sum(axis=1)).max() <= 1e-12
    assert sum(vs_callers.chips) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("who", ["random", "policy"])
def test_identical_players_score_exactly_zero(kuhn3, trained, who):
    _, game = kuhn3
    p = RandomPlayer() if who == "random" else trained
    res = play_match_n(game, [p, p, p], 200, seed=1)
    assert np.abs(res.per_deal).max() <= 1e-12
    assert res.chips == (0.0, 0.0, 0.0) or max(map(abs, res.chips)) <= 1e-12


def test_reproducible(kuhn3):
    _, game = kuhn3
    ps = [RandomPlayer(), AlwaysCall(), AlwaysRaise()]
    a, b = (play_match_n(game, ps, 50, seed=7) for _ in range(2))
    c = play_match_n(game, ps, 50, seed=8)
    assert np.array_equal(a.per_deal, b.per_deal)
    assert not np.array_equal(a.per_deal, c.per_deal)
    js = a.to_json()
    assert [p["name"] for p in js["players"]] == ["random", "always-call", "always-raise"]
    assert js["hands"] == 300 and js["seatings"] == 6


class _Spy:
    name = "spy"

    def __init__(self):
        self.seen = []

    def act(self, state, rng):
        self.seen.append(state)
        return "c"


def test_players_see_only_their_seat(kuhn3):
    _, game = kuhn3
    spy = _Spy()
    play_match_n(game, [spy, AlwaysRaise(), RandomPlayer()], 20, seed=0)
    assert spy.seen
    for s in spy.seen:
        assert s.viewer == s.current_player()
        for seat, hole in enumerate(s.hole_cards):
            assert bool(hole) == (seat == s.viewer)
        assert str(s).startswith(f"MATCHSTATE:{s.viewer}:")


def test_seat_view_n():
    game = Game.load("leduc.limit.3p")
    st = game.state("STATE:0:cc:5c|4d|3c")
    v = view_of(st, 1)
    assert v.hole_cards[1] and not v.hole_cards[0] and not v.hole_cards[2]
    assert str(v) == "MATCHSTATE:1:0:cc:|4d|"


def test_seatings():
    assert len(seatings_of(3)) == 6 and len(seatings_of(4)) == 24
    rot = seatings_of(6)  # above 4 seats: the cyclic rotations
    assert len(rot) == 6
    for seat in range(6):
        assert sorted(order[seat] for order in rot) == list(range(6))
    assert seatings_of(3, "rotations") == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    with pytest.raises(ValueError, match="not a permutation"):
        seatings_of(3, [(0, 0, 1)])
    with pytest.raises(ValueError, match="seatings must be"):
        seatings_of(3, "all")


def test_holdem_three_seats_rotations():
    game = Game.load("holdem.limit.3p")
    res = play_match_n(game, [RandomPlayer(), AlwaysCall(), AlwaysRaise()], 4, seed=0, seatings="rotations")
    assert isinstance(res, MatchNResult) and res.hands == 12
    assert res.unit == "mbb/game" and res.big_blind
    assert np.abs(res.per_deal.sum(axis=1)).max() <= 1e-9


def test_wrong_player_count(kuhn3):
    _, game = kuhn3
    with pytest.raises(ValueError, match=r"'kuhn.limit.3p' has 3 seats, but 2 players"):
        play_match_n(game, [AlwaysCall(), RandomPlayer()], 10)
    ng, _ = kuhn3
    with pytest.raises(ValueError, match="3 seats, but 4 players"):
        exact_values(ng, [AlwaysCall()] * 4)


class _Cheat:
    name = "cheat"

    def act(self, state, rng):
        return "f" if not state.betting.can_fold() else "r9"


def test_illegal_action_is_named(kuhn3):
    _, game = kuhn3
    with pytest.raises(MatchError, match=r"player 'cheat' in seat \d at MATCHSTATE.*illegal action"):
        play_match_n(game, [_Cheat(), AlwaysCall(), AlwaysCall()], 5)


def test_exact_values_need_probs(kuhn3):
    ng, _ = kuhn3
    with pytest.raises(TypeError, match="'spy' has no probs"):
        exact_values(ng, [_Spy(), AlwaysCall(), AlwaysCall()])


def test_policy_player_checks(kuhn3):
    ng, _ = kuhn3
    with pytest.raises(ValueError, match="shape"):
        PolicyPlayer(ng, np.zeros(3))
    pp = PolicyPlayer(ng, uniform_policy(ng), name="u")
    assert np.array_equal(ng.policy_from(pp.probs), pp.policy)
    leduc = Game.load("leduc.limit.3p")
    with pytest.raises(ValueError, match="plays 'kuhn.limit.3p', not 'leduc.limit.3p'"):
        pp.probs(leduc.state("MATCHSTATE:0:0::5c||"))


@pytest.mark.slow
def test_policy_player_round_trip_leduc():
    """Every information set of 3-player Leduc found from the seat's view (boards included)."""
    ng = NPlayerGame.from_gamedef("leduc.limit.3p")
    rng = np.random.default_rng(0)
    w = rng.random(ng.num_actions_total)
    pol = w / np.repeat(np.add.reduceat(w, ng.tree.ioff[:-1]), np.diff(ng.tree.ioff))
    pp = PolicyPlayer(ng, pol)
    assert np.array_equal(ng.policy_from(pp.probs), pol)


def test_two_player_code_refuses_n_seats(kuhn3):
    _, game = kuhn3
    with pytest.raises(GameDefError, match="play_match.*supports only 2-player games"):
        play_match(game, AlwaysCall(), AlwaysCall(), 10)
    from mccfr.evaluation.lbr import LocalBestResponse

    with pytest.raises(GameDefError, match="LBR.*supports only 2-player games.*numPlayers = 3"):
        LocalBestResponse(game, None)
    assert load_gamedef("kuhn.limit.3p").num_players == 3


def test_script_one_match(kuhn3):
    """scripts/experiments/match_n.py: an es: SPEC trained once, a match row with exact values."""
    from scripts.experiments.match_n import Players, one_match

    _, game = kuhn3
    made = Players(game)
    es = made.get("es:2000")
    assert made.get("es:2000") is es
    row = one_match(game, made, [es, made.get("random"), made.get("random")], 20, 0, None, True)
    assert row["deals"] == 20 and row["hands"] == 120 and row["unit"] == "chips/hand"
    assert sum(p["exact"] for p in row["players"]) == pytest.approx(0.0, abs=1e-12)
    assert row["players"][0]["name"] == "es:2000"
    # each policy's NashConv, the same as the small-game oracle's; random's flattened from probs
    from blueprint.nplayer import nash_conv

    flat = made.flat()
    assert row["players"][0]["nash_conv"] == pytest.approx(nash_conv(flat, es.policy), abs=1e-12)
    assert row["players"][1]["nash_conv"] == pytest.approx(2.0625, abs=1e-9)  # uniform play's
