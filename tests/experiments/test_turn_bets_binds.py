"""scripts/experiments/turn_bets_binds.py: LBR's gain at a turn spot against the formula worked by
hand, and the report of a JSONL file (no blueprint, no solve)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from holdem.cards import parse_cards
from holdem.game import Game
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr.evaluation.players import AlwaysCall
from scripts.experiments.turn_bets_binds import (
    draw_boards,
    load_rows,
    opponent_floor,
    parse_config,
    report,
    spot_gains,
)


def test_gain_matches_the_formula_worked_by_hand():
    game = Game.load("hunl100")
    lbr = LocalBestResponse(game, AlwaysCall(), menu="fcpa", preflop="call", call_rounds=(1,))
    state = game.state("STATE:0:cc/cc/:AsKd|QhJh/Ks9c2d/5h")  # pot 200, LBR (seat 0) to act
    H = lbr.hands
    g = game.gamedef

    def hand(text):
        return H.of(parse_cards(text, g.num_suits, g.num_ranks))

    a, b = hand("3c3d"), hand("4h4s")  # the player's range: two hands
    rng = np.zeros(len(H))
    rng[a] = rng[b] = 1.0
    h1, h2 = hand("7c7d"), hand("8h8s")  # LBR's hands: blocking neither
    E = np.full((2, len(H)), 0.5)
    E[0, a], E[0, b] = 0.2, 0.7
    E[1, a], E[1, b] = 0.9, 0.1
    folds = {300: np.zeros(len(H)), 10000: np.zeros(len(H))}
    folds[300][a] = 1.0
    folds[10000][a], folds[10000][b] = 1.0, 0.5
    gains, best = spot_gains(lbr, state, rng, folds, np.array([h1, h2]), E)

    def gain(fp, eq, eq_call, pot, bet):  # u_bet - u_check, measured from the chips already in
        return max(0.0, fp * pot + (1 - fp) * (eq_call * (pot + 2 * bet) - bet) - eq * pot)

    # h1: fp 0.5, eq 0.45, eq_call 0.7 (pot: 120); all-in fp 0.75, eq_call 0.7 (1,085)
    # h2: eq 0.5, calling hands 0.1: both bets lose to checking (0)
    pot1, allin1 = gain(0.5, 0.45, 0.7, 200, 200), gain(0.75, 0.45, 0.7, 200, 9900)
    pot2, allin2 = gain(0.5, 0.5, 0.1, 200, 200), gain(0.75, 0.5, 0.1, 200, 9900)
    assert pot1 == pytest.approx(120.0) and allin1 == pytest.approx(1085.0)
    assert pot2 == 0.0 and allin2 == 0.0
    assert gains[300] == pytest.approx((pot1 + pot2) / 2)
    assert gains[10000] == pytest.approx((allin1 + allin2) / 2)
    assert best == pytest.approx((max(pot1, allin1) + max(pot2, allin2)) / 2)
    assert lbr.opp.name == "always-call"  # the stand-in is removed again


def test_configs_and_boards():
    assert parse_config("blueprint")["method"] is None
    c = parse_config("reach-maxmargin:200:k1:sall")
    assert (c["method"], c["iterations"], c["k"], c["samples"]) == ("reach-maxmargin", 200, 1, None)
    assert parse_config("unsafe:50:k4:s4")["samples"] == 4
    with pytest.raises(ValueError):
        parse_config("unsafe:50")
    assert parse_config("unsafe:50:k4:s4")["floor"] == 0.0
    assert parse_config("unsafe:50:k4:s4:f0.25")["floor"] == 0.25
    for bad in ("unsafe:50:k4:s4:x0.2", "unsafe:50:k4:s4:f1.5"):
        with pytest.raises(ValueError):
            parse_config(bad)
    boards = draw_boards(3, 7)
    assert boards == draw_boards(3, 7) and all(len(set(b)) == 4 for b in boards)
    assert draw_boards(2, 7) == boards[:2]  # board i depends on (seed, i) only


def _row(config, fold, gain, board=0):
    return {
        "seed": 1,
        "board": board,
        "cards": "Jh8dAd7s",
        "seat": "lbr-first",
        "bet": "allin",
        "to": 10000,
        "config": config,
        "fold": fold,
        "gain_mbb": gain,
        "best_gain_mbb": gain,
        "check": None,
        "solve_s": 1.5,
        "iterations": 50,
        "expl_pct_pot": 2.0,
    }


def test_report_on_two_lines(tmp_path, capsys):
    f = tmp_path / "rows.jsonl"
    rows = [_row("reach-maxmargin:50:k4:s4", 0.9, 40.0), _row("blueprint", 0.8, 65.0)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"cut sh')  # a damaged last line
    out = report(load_rows(f))
    t = out["lbr-first/allin"]
    assert t["blueprint"]["paired_gain"] == pytest.approx(25.0)
    assert t["blueprint"]["paired_fold"] == pytest.approx(-0.1)
    assert t["reach-maxmargin:50:k4:s4"]["paired_gain"] == 0.0
    assert t["blueprint"]["boards"] == 1
    text = capsys.readouterr().out
    assert "lbr-first, LBR's allin bet" in text and "(baseline)" in text
    # the baseline can be named: then it comes first
    out = report(load_rows(f), ["blueprint"])
    assert out["lbr-first/allin"]["reach-maxmargin:50:k4:s4"]["paired_gain"] == pytest.approx(-25.0)


def test_the_floor_mixes_lbrs_range_with_every_unblocked_hand(monkeypatch):
    """LBR's seat gets (1 - f) * blueprint + f * uniform over the hands the board does not block,
    with the blueprint's mass; the other seat and blocked hands are untouched; restored after."""
    import subgame.construct as construct

    hands = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    board = (0,)
    base = np.array([[0.0, 0.6, 0.2, 0.0], [0.0, 1.0, 1.0, 1.0]])

    def fake(bp, n, board_, hands_, cache=None, played=None):
        return base.copy()

    monkeypatch.setattr(construct, "blueprint_ranges", fake)
    with opponent_floor(0, 0.5):
        got = construct.blueprint_ranges(None, 0, board, hands)
    assert construct.blueprint_ranges is fake
    # hand 0 holds card 0 (on the board): blocked, stays 0; the mass 0.8 is kept
    want = 0.8 * (0.5 * np.array([0, 0.75, 0.25, 0]) + 0.5 * np.array([0, 1, 1, 1]) / 3)
    assert np.allclose(got[0], want) and np.allclose(got[1], base[1])
    with opponent_floor(0, 0.0):
        assert np.array_equal(construct.blueprint_ranges(None, 0, board, hands), base)
