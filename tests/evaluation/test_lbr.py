"""Local best response: a lower bound on exact exploitability, range tracking, equity, the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from abstraction.translation import pseudo_harmonic
from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from holdem.evaluator import rank_hand_py
from holdem.game import Game
from mccfr.evaluation.lbr import (
    MENUS,
    LBRError,
    LBRPlayer,
    LocalBestResponse,
    equity_vs_range,
    parse_menu,
)
from mccfr.evaluation.lbr_opponents import (
    BlueprintOpponent,
    CardBlindOpponent,
    Hands,
    LBROpponent,
    hand_cardsets,
)
from mccfr.evaluation.match import exact_value, view_of
from mccfr.evaluation.players import AlwaysCall, BlueprintPlayer

NL_LEDUC = str(Path(__file__).resolve().parents[1] / "data" / "leduc_nolimit.game")


@pytest.fixture(scope="module")
def nl_leduc():
    """No-limit Leduc (6 cards, blinds 100/50, stacks 1200) under fcpa: uniform and after 30 CFR+
    iterations, with exact best-response values per seat."""
    out = {}
    for iters in (0, 30):
        tr = make_trainer(NL_LEDUC, algo="cfr+", bets="fcpa")
        tr.run(iters)
        expl, brv = tr.exploitability()
        out[iters] = (Blueprint(tr), expl, brv)
    return out


# -- the bound ---------------------------------------------------------------------------------
@pytest.mark.parametrize("reraise", [False, True])
@pytest.mark.parametrize("iters", [0, 30])
def test_exact_lbr_value_is_below_exact_best_response(nl_leduc, iters, reraise):
    """On a small deck every equity is exact, so LBR is a deterministic strategy: its exact value
    against the blueprint, seat by seat, can never exceed the best response's (seeing re-raises
    or not)."""
    bp, expl, brv = nl_leduc[iters]
    lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="menu", reraise=reraise)
    v = exact_value(bp.game, LBRPlayer(lbr), BlueprintPlayer(bp), max_states=5_000_000)
    for seat in (0, 1):
        assert v.seat_chips[seat] <= brv[seat] + 1e-9
    assert v.chips_per_hand <= expl + 1e-9
    if iters == 0:  # uniform play is very exploitable, and LBR finds a good part of it
        assert v.chips_per_hand > 0.4 * expl > 0


@pytest.mark.parametrize("rao_blackwell", [True, False])
def test_sampled_lbr_agrees_with_its_exact_value(nl_leduc, rao_blackwell):
    """Sampled LBR estimates the same expectation with or without averaging showdowns over the
    range (Rao-Blackwellisation)."""
    bp, expl, _ = nl_leduc[30]
    lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="menu", rao_blackwell=rao_blackwell)
    exact = exact_value(bp.game, LBRPlayer(lbr), BlueprintPlayer(bp), max_states=5_000_000).chips_per_hand
    res = lbr.run(600, seed=4)
    assert res.hands == 600 and res.pairs == 300 and res.unit == "mbb/game"
    assert abs(res.chips_per_hand - exact) <= 2 * res.ci95_chips
    assert res.chips_per_hand - res.ci95_chips <= expl  # the interval never claims more than the bound
    assert res.lbr == pytest.approx(res.chips_per_hand * 1000 / 100)


def test_lbr_against_always_call_in_hold_em_is_large():
    """Always-call never folds: LBR value-bets its strong hands for the pot every street. No card
    abstraction is needed (the opponent ignores its cards)."""
    game = Game.load("hunl100")
    res = LocalBestResponse(game, AlwaysCall(), menu="fcpa").run(80, seed=1)
    assert res.unit == "mbb/game"
    assert res.lbr - res.lbr_ci95 > 1000  # the 2017 study: always-fold loses 750
    fc = LocalBestResponse(game, AlwaysCall(), menu="fc").run(80, seed=1)
    assert fc.lbr < res.lbr  # without raises LBR only checks down or folds


# -- the opponent model ----------------------------------------------------------------------------
def test_range_probabilities_are_the_players_strategy(nl_leduc):
    bp, _, _ = nl_leduc[30]
    game = bp.game
    opp = BlueprintOpponent(bp, Hands(game))
    for betting, cards in [("", "2c|3d"), ("r300", "3c|4d"), ("cc/", "4c|2d/3c"), ("r300c/r900", "2d|3c/4c")]:
        dealer = game.state(f"STATE:0:{betting}:{cards}")
        actor = dealer.current_player()
        keys, P = opp.action_probs(dealer)
        assert np.allclose(P.sum(axis=1), 1.0)
        want = bp.strategy(view_of(dealer, actor))
        got = dict(zip(keys, P[opp.hands.of(dealer.hole_cards[actor])]))
        for a in set(want) | set(got):
            assert got.get(a, 0.0) == pytest.approx(want.get(a, 0.0), abs=1e-6), (betting, a)


def test_off_tree_raise_mixes_both_translations():
    """An off-tree bet maps to its two neighbouring sizes with the pseudo-harmonic probabilities,
    and the range model's action probabilities average both nodes' strategies accordingly."""
    tr = make_trainer(NL_LEDUC, algo="cfr+", bets="standard")
    tr.run(10)
    bp = Blueprint(tr)
    game = bp.game
    state = game.state("STATE:0:r400:2c|3d")  # pot fraction (400 - 100) / 200 = 1.5: between 1 and 2 pots
    dist = bp.node_distribution(state)
    assert len(dist) == 2 and sum(p for _, p in dist) == pytest.approx(1.0)
    assert sorted(p for _, p in dist) == pytest.approx(
        sorted([pseudo_harmonic(1.5, 1.0, 2.0), 1 - pseudo_harmonic(1.5, 1.0, 2.0)])
    )
    view = view_of(state, 0)
    rng = np.random.default_rng(0)
    emp: dict[str, float] = {}
    n = 2000
    for _ in range(n):
        for a, p in bp.strategy(view, rng).items():
            emp[a] = emp.get(a, 0.0) + p / n
    opp = BlueprintOpponent(bp, Hands(game))
    keys, P = opp.action_probs(state)
    row = dict(zip(keys, P[opp.hands.of(state.hole_cards[0])]))
    assert len(emp) > 1
    for a in set(emp) | set(row):
        assert row.get(a, 0.0) == pytest.approx(emp.get(a, 0.0), abs=0.04)


# -- equity and menus ------------------------------------------------------------------------------
def test_equity_kernel_matches_brute_force_on_a_small_deck():
    num_suits, num_ranks = 2, 6  # 12 cards, 2 hole cards, 3 board cards to come from 2 known
    deck = num_suits * num_ranks
    hands = np.array(list(itertools.combinations(range(deck), 2)), np.int64)
    cs, mask = hand_cardsets(hands, num_suits)
    mine, board = [0, 7], [3]
    rest = np.array([c for c in range(deck) if c not in mine + board], np.int64)
    w = np.array([0.0 if set(h) & set(mine + board) else 1.0 for h in hands.tolist()])
    eq = equity_vs_range(
        np.array(mine, np.int64), np.array(board, np.int64), rest, 2, cs, mask, w, num_suits, 10_000, 1, 0
    )
    for i, h in enumerate(hands.tolist()):
        if not w[i]:
            continue
        left = [c for c in rest.tolist() if c not in h]
        score = []
        for extra in itertools.combinations(left, 2):
            b = board + list(extra)
            a = rank_hand_py(mine + b, num_suits, num_ranks)
            o = rank_hand_py(h + b, num_suits, num_ranks)
            score.append(1.0 if a > o else 0.5 if a == o else 0.0)
        assert eq[i] == pytest.approx(np.mean(score), abs=1e-12)
    # sampled boards: close to the exact values
    approx = equity_vs_range(
        np.array(mine, np.int64), np.array(board, np.int64), rest, 2, cs, mask, w, num_suits, 1, 4000, 7
    )
    assert abs(float(w @ approx) - float(w @ eq)) / w.sum() < 0.02


def test_preflop_equity_of_aces_in_hold_em():
    hands = np.array(list(itertools.combinations(range(52), 2)), np.int64)
    cs, mask = hand_cardsets(hands, 4)
    aces = [48, 49]
    w = ((mask & ((1 << 48) | (1 << 49))) == 0).astype(float)
    rest = np.array([c for c in range(52) if c not in aces], np.int64)
    eq = equity_vs_range(
        np.array(aces, np.int64), np.zeros(0, np.int64), rest, 5, cs, mask, w, 4, 50, 2000, 3
    )
    assert float(w @ eq) / w.sum() == pytest.approx(0.852, abs=0.02)  # AA vs a random hand: 85.2%


def test_menus_and_their_actions(nl_leduc):
    assert parse_menu("fc") == () and parse_menu("fcpa") == MENUS["fcpa"]
    assert parse_menu("1, 0.5,allin") == (0.5, 1.0, -1.0)
    for bad in ("bogus", "0.5,-1", "0,1", "nan"):
        with pytest.raises(LBRError):
            parse_menu(bad)
    bp, _, _ = nl_leduc[0]
    game = bp.game
    lbr = LocalBestResponse(game, bp, menu="pot-fractions", preflop="menu")
    state = game.state("STATE:0:r200:2c|3d")
    acts = lbr.candidates(state)
    assert acts[:2] == ["f", "c"] and acts[-1] == "r1200" and len(acts) == len(set(acts))
    for a in acts:
        state.apply(a)  # every candidate is legal
    assert LocalBestResponse(game, bp, menu="fcpa", preflop="call").candidates(state) == ["c"]
    assert LocalBestResponse(game, bp, menu="fcpa").candidates(state) == ["f", "c", "r600", "r1200"]


class _Rigged(BlueprintOpponent):
    """A blueprint opponent whose answer to every raise is rigged: ``answer`` maps each action key
    of the blueprint's strategy to a probability, the same for every hand (absent keys: 0)."""

    def __init__(self, bp, hands, answer):
        super().__init__(bp, hands)
        self.answer = answer

    def action_probs(self, state):
        keys, P = super().action_probs(state)
        Q = np.zeros_like(P)
        for j, k in enumerate(keys):
            Q[:, j] = self.answer(k)
        return keys, Q


def test_lbr_seeing_reraises_values_a_raise_at_its_answer_to_the_reraise(nl_leduc):
    """Without re-raises in the opponent's answer, the look-ahead estimate of a raise is the
    2017 study's; when every hand re-raises all-in, the plain estimate counts a showdown at the
    raise's size while the look-ahead values LBR's better answer: fold (lose what it put in) or
    call the all-in against the whole range."""
    bp, _, _ = nl_leduc[30]
    game = bp.game
    state = game.state("STATE:0:r200:2c|3d")  # LBR (seat 0) may re-raise to 600 or all-in (1200)
    me, rng = state.current_player(), np.random.default_rng(0)
    weights = np.ones(len(Hands(game)))
    plain = LocalBestResponse(game, bp, menu="fcpa")
    look = LocalBestResponse(game, bp, menu="fcpa", reraise=True)
    for lbr in (plain, look):
        lbr._eq_cache = {}
        lbr.opp = _Rigged(bp, lbr.hands, lambda k: {"f": 0.25, "c": 0.75}.get(k, 0.0))
    weights[[h for h, hand in enumerate(plain.hands.hands) if state.hole_cards[me][0] in hand]] = 0.0
    a = plain.action_values(state, weights, rng)
    b = look.action_values(state, weights, rng)
    assert a == pytest.approx(b)  # no re-raises: the same estimate
    allin = lambda k: 1.0 if k == "r1200" else 0.0  # noqa: E731
    for lbr in (plain, look):
        lbr._eq_cache = {}
        lbr.opp = _Rigged(bp, lbr.hands, allin)
    a = plain.action_values(state, weights, rng)
    b = look.action_values(state, weights, rng)
    edge = a["c"] / 200.0  # LBR's 2 E - 1 against the whole range (calling contests 200)
    assert a["r600"] == pytest.approx(edge * 600.0)  # plain: a showdown at 600
    assert b["r600"] == pytest.approx(max(-600.0, edge * 1200.0))  # fold, or call the all-in
    assert b["r600"] != pytest.approx(a["r600"])
    assert b["f"] == a["f"] and b["c"] == a["c"]


def test_each_opponent_gets_its_model(nl_leduc):
    """LBR reads a blueprint (or a player of one) per hand and a card-blind baseline without range
    updates; every model follows the LBROpponent protocol."""
    bp, _, _ = nl_leduc[0]
    models = {
        "blueprint": LocalBestResponse(bp.game, bp).opp,
        "player": LocalBestResponse(bp.game, BlueprintPlayer(bp)).opp,
        "always-call": LocalBestResponse(bp.game, AlwaysCall()).opp,
    }
    assert isinstance(models["blueprint"], BlueprintOpponent) and isinstance(
        models["player"], BlueprintOpponent
    )
    assert isinstance(models["always-call"], CardBlindOpponent)
    assert all(isinstance(m, LBROpponent) for m in models.values())
    assert models["always-call"].likelihood(bp.game.state("STATE:0::2c|3d"), "c") is None


def test_bad_opponents_and_games(nl_leduc):
    bp, _, _ = nl_leduc[0]
    from mccfr.evaluation.players import KuhnFixed

    with pytest.raises(LBRError, match="opponent"):
        LocalBestResponse(Game.load("kuhn"), KuhnFixed(Game.load("kuhn")))
    with pytest.raises(LBRError, match="not leduc"):
        LocalBestResponse(Game.load("leduc"), bp)
    with pytest.raises(LBRError, match="at least 2"):
        LocalBestResponse(bp.game, bp).run(1)


# -- the CLI ---------------------------------------------------------------------------------------
def _cli(*args):
    from mccfr.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def nl_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("lbr") / "nl"
    r = _cli(
        "train",
        "--game",
        NL_LEDUC,
        "--bets",
        "fcpa",
        "--algo",
        "cfr+",
        "--iterations",
        "20",
        "--out",
        run,
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    return run


def test_cli_lbr_json(nl_run):
    r = _cli("eval", nl_run, "--lbr", "--hands", "200", "--lbr-preflop", "menu", "--exploitability", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"lbr", "lbr_ci95", "unit", "hands", "exploitability"} <= out.keys()
    assert out["unit"] == "mbb/game" and out["hands"] == 200 and out["lbr_ci95"] > 0
    assert out["lbr"] - out["lbr_ci95"] <= out["exploitability"]
    assert "lower bound" in r.stdout
    rr = _cli("eval", nl_run, "--lbr", "--hands", "200", "--lbr-reraise", "--exploitability", "--json")
    assert rr.exit_code == 0, rr.stderr
    rro = json.loads(rr.stdout.strip().splitlines()[-1])
    assert rro["lbr_reraise"] is True and out["lbr_reraise"] is False
    assert rro["lbr"] - rro["lbr_ci95"] <= rro["exploitability"]
    base = _cli("eval", "--game", NL_LEDUC, "--player", "always-call", "--lbr", "--hands", "100", "--json")
    assert base.exit_code == 0, base.stderr
    assert json.loads(base.stdout.strip().splitlines()[-1])["opponent"] == "always-call"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lbr", "--lbr-actions", "bogus"], "unknown LBR action menu"),
        (["--lbr", "--vs", "random"], "drop --vs"),
        (["--lbr", "--game", "leduc"], "trained on"),
        (["--lbr", "--lbr-jobs", "0"], "--lbr-jobs"),
        (["--lbr", "--lbr-jobs", "-3"], "--lbr-jobs"),
        (["--lbr", "--lbr-jobs", "100000"], "--lbr-jobs"),
        (["--lbr", "--hands", "-5"], "--hands"),
        (["--lbr", "--hands", "0"], "--hands"),
        (["--lbr", "--hands", "100000000000"], "at most 10,000,000 hands"),
        (["--lbr", "--seed", "-1"], "seed must be"),
        (["--lbr-jobs", "2", "--exploitability"], "go with --lbr"),
        (["--lbr-log", "x.jsonl", "--exploitability"], "go with --lbr"),
        (
            ["--lbr", "--player", "{run}+solve:reach-maxmargin", "--solve-iterations", "0"],
            "--solve-iterations",
        ),
        (
            ["--lbr", "--player", "{run}+solve:reach-maxmargin", "--solve-iterations", "10000000"],
            "--solve-iterations",
        ),
    ],
)
def test_cli_lbr_errors(nl_run, args, message):
    r = _cli("eval", nl_run, *[a.format(run=nl_run) for a in args])
    assert r.exit_code == 2 and message in r.output
    assert "Traceback" not in r.output


def test_cli_lbr_jobs_and_log(nl_run, tmp_path):
    """--lbr-jobs plays deals in processes, --lbr-log writes them as they finish; the same
    command with the log continues (here: has nothing left to play), a changed one is refused."""
    log = tmp_path / "lbr.jsonl"
    args = ["eval", nl_run, "--lbr", "--hands", "40", "--seed", "2", "--lbr-log", log, "--json"]
    r = _cli(*args, "--lbr-jobs", "2")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["jobs"] == 2 and out["hands_played"] == 40 and out["hands_per_cpu_hour"] > 0
    assert out["cpu_seconds"] > 0
    assert out["lbr_log"] == str(log) and "hands per CPU-hour" in r.stdout
    lines = log.read_text().splitlines()
    assert len(lines) == 21 and json.loads(lines[0])["opponent"]["spec"] == str(Path(nl_run).resolve())
    ref = _cli("eval", nl_run, "--lbr", "--hands", "40", "--seed", "2", "--lbr-jobs", "1", "--json")
    assert json.loads(ref.stdout.strip().splitlines()[-1])["lbr"] == out["lbr"]
    again = _cli(*args, "--lbr-jobs", "1")
    assert again.exit_code == 0, again.output
    a = json.loads(again.stdout.strip().splitlines()[-1])
    assert a["lbr"] == out["lbr"] and a["hands_played"] == 0 and a["hands_per_cpu_hour"] is None
    assert "40 hands read from" in again.stdout
    other = _cli("eval", nl_run, "--lbr", "--hands", "40", "--seed", "3", "--lbr-log", log)
    assert other.exit_code == 2 and "its seed is 2, this run's is 3" in other.output
    assert "Traceback" not in other.output
    log.write_text(lines[0] + "\n" + lines[1][:-3] + "\n" + "\n".join(lines[2:]) + "\n")  # line 2 broken
    broken = _cli(*args)
    assert broken.exit_code == 2 and "line 2" in broken.output


def test_cli_lbr_baseline_errors():
    r = _cli("eval", "--player", "random", "--lbr")
    assert r.exit_code == 2 and "needs --game" in r.output
    r = _cli("eval", "--game", "hunl100", "--player", "nobody", "--lbr")
    assert r.exit_code == 2 and "unknown player 'nobody'" in r.output


def test_lbr_on_a_trained_rung_equals_lbr_on_its_blueprint_file(tmp_path):
    """A hold'em rung (hunl100, rank cards, small bets): LBR against the trainer's blueprint in
    memory and against the blueprint file its checkpoint wrote, same seed, same deals: the same
    value hand for hand (the file holds the average strategy as float32)."""
    tr = make_trainer("hunl100", cards="rank", seed=3)
    tr.run(20_000)
    tr.save(tmp_path / "run")
    live, loaded = Blueprint(tr), Blueprint.load(tmp_path / "run")
    assert loaded.iteration == live.iteration == 20_000
    a = LocalBestResponse(live.game, live, menu="fcpa").run(60, seed=5)
    b = LocalBestResponse(loaded.game, loaded, menu="fcpa").run(60, seed=5)
    assert a.hands == b.hands == 60
    np.testing.assert_allclose(b.per_pair, a.per_pair, rtol=1e-6, atol=1e-6)
    assert np.any(a.per_pair != 0)
