"""The production trainer (blueprint.trainer, blueprint.kernels) on games of more than two seats:
the betting tree, the N-seat payoffs and card buckets against the rules package, NashConv against
OpenSpiel, bit-exact resume, threads, and the two-player-only paths refusing clearly."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from abstraction.cards import card_buckets, card_buckets_n, default_card_abstraction
from abstraction.tree import KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN, build_tree
from blueprint.algo import AlgoError
from blueprint.nplayer import NPlayerGame, nash_conv, openspiel_policy, policy_from_tables
from blueprint.payoffs import nseat_utility
from blueprint.trainer import Trainer, make_trainer
from holdem import Game
from holdem.gamedef import load_gamedef, parse_gamedef


def test_tree_of_three_seats_is_the_games_whole_betting_tree():
    # a limit game's tree holds every betting sequence: the flattened game's walk is an oracle
    flat = NPlayerGame.from_gamedef("leduc.limit.3p")
    tree = build_tree(load_gamedef("leduc.limit.3p"))
    dec = tree.decision_nodes()
    assert sorted(tree.betting_string(int(n)) for n in dec) == sorted(
        flat.betting[n] for n in range(flat.num_nodes) if flat.actions[n]
    )
    assert tree.spent.shape == (tree.num_nodes, 3)
    # a fold ends the hand only when one seat is left: before that it leads to a decision
    for n in dec:
        for e, c in zip(
            range(tree.child_start[n], tree.child_start[n] + tree.num_actions[n]), tree.children(n)
        ):
            if tree.edge_kind[e] == 0:
                b = tree.betting(int(c))
                assert (tree.kind[c] == KIND_FOLD) == (sum(b.folded) == 2)
                assert tree.live[c] == sum(1 << p for p in range(3) if not b.folded[p])
    fold = np.nonzero(tree.kind == KIND_FOLD)[0]
    assert all(tree.player[f] == tree.player[tree.parent[f]] for f in fold)  # the last to fold


def _random_finished(gd, rng: random.Random):
    """The betting of a hand played at random to its end (all-ins and min-raises favoured)."""
    from holdem.betting import CALL, FOLD, RAISE, Betting

    b = Betting.initial(gd)
    while not b.finished:
        moves = [(CALL, 0)] + ([(FOLD, 0)] if b.can_fold() else [])
        rr = b.raise_range()
        if rr is not None:
            moves += [(RAISE, rr[0]), (RAISE, rr[1]), (RAISE, rng.randint(*rr))]
        b = b.apply(*rng.choice(moves))
    return b


NL_ODD = """GAMEDEF
nolimit
numPlayers = {n}
numRounds = 2
stack = {stacks}
blind = {blinds}
firstPlayer = 1 1
numSuits = 2
numRanks = 5
numHoleCards = 1
numBoardCards = 0 1
END GAMEDEF
"""


@pytest.mark.parametrize("seats", [3, 4, 6])
def test_nseat_utility_equals_the_rules_payoffs(seats):
    # unequal stacks: side pots with several all-ins; random ranks with ties; every seat's view
    rng = random.Random(seats)
    stacks = " ".join(str(rng.choice([3, 5, 8, 12])) for _ in range(seats))
    blinds = " ".join(["1", "2"] + ["0"] * (seats - 2))
    gd = parse_gamedef(NL_ODD.format(n=seats, stacks=stacks, blinds=blinds), name="odd")
    kind = np.zeros(1, np.int8)
    live = np.zeros(1, np.uint16)
    rem = np.zeros(seats, np.int64)
    side_pots = 0
    for _ in range(400):
        b = _random_finished(gd, rng)
        spent = np.array([b.spent], np.int32)
        kind[0] = KIND_SHOWDOWN if b.showdown() else KIND_FOLD
        live[0] = sum(1 << p for p in range(seats) if not b.folded[p])
        ranks = [rng.randrange(3) for _ in range(seats)]
        want = b.payoffs_given_ranks(ranks)
        side_pots += b.showdown() and len({x for x, f in zip(b.spent, b.folded) if not f}) > 1
        for p in range(seats):
            got = nseat_utility(0, p, kind, spent, live, np.array(ranks, np.int64), rem)
            assert got == pytest.approx(want[p], abs=1e-9), (b.betting_string(), b.spent, ranks, p)
    assert side_pots > 20


def test_card_buckets_n_equals_the_two_seat_buckets():
    # two seats through the N-seat function give deal_buckets' buckets and winner, in every kind
    from holdem.evaluator import rank_hand

    rng = np.random.default_rng(0)
    for game_name, cards_name in (("leduc", None), ("hunl100", "rank")):
        gd = load_gamedef(game_name)
        arrays = default_card_abstraction(gd, cards_name).kernel_arrays(gd)
        n = gd.cards_per_deal
        work = np.zeros(2 * n + 2, np.int64)
        a, b = np.zeros((2, gd.num_rounds), np.int64), np.zeros((2, gd.num_rounds), np.int64)
        strength = np.zeros(2, np.int64)
        for _ in range(300):
            deal = rng.permutation(gd.deck_size)[:n].astype(np.int64)
            winner = card_buckets(arrays, deal, a, work)
            card_buckets_n(arrays, deal, b, work, strength)
            assert np.array_equal(a, b)
            assert winner == (0 if strength[0] > strength[1] else 1 if strength[1] > strength[0] else -1)
        hand = np.array([deal[0], *deal[2 * gd.num_hole_cards :]], np.int64)
        if gd.num_hole_cards == 1:
            assert strength[0] == rank_hand(hand, len(hand), gd.num_suits, gd.num_ranks)


@pytest.fixture(scope="module")
def kuhn3_trained() -> Trainer:
    tr = make_trainer("kuhn.limit.3p", algo="linear", seed=0)
    tr.run(400_000)
    return tr


def test_three_player_kuhn_reaches_nash_conv_below_0_01(kuhn3_trained):
    # OpenSpiel's nash_conv is the oracle for the trainer's average strategy
    pyspiel = pytest.importorskip("pyspiel")
    tr = kuhn3_trained
    flat = NPlayerGame.from_gamedef("kuhn.limit.3p")
    pol = policy_from_tables(flat, tr.tree, tr.cards, tr.row_offset, tr.average_strategy())
    os_game = pyspiel.load_game("kuhn_poker(players=3)")
    theirs = pyspiel.nash_conv(os_game, openspiel_policy(os_game, flat, pol))
    ours, gains = tr.exploitability()
    assert ours == pytest.approx(theirs, abs=1e-9) and ours == pytest.approx(nash_conv(flat, pol))
    assert len(gains) == 3 and min(gains) >= -1e-12
    assert ours < 0.01  # 0.0042 at 1M iterations (BENCHMARKS.md); uniform: 2.06


def test_policy_from_tables_agrees_with_blueprint_queries(kuhn3_trained, tmp_path: Path):
    # the saved blueprint, queried by MATCHSTATE, plays the policy NashConv was measured on
    from blueprint.blueprint import Blueprint

    tr = kuhn3_trained
    tr.save(tmp_path / "run")
    bp = Blueprint.load(tmp_path / "run")
    flat = NPlayerGame.from_gamedef("kuhn.limit.3p")
    pol = policy_from_tables(flat, tr.tree, tr.cards, tr.row_offset, tr.average_strategy())
    for i in range(flat.num_infosets):
        got = bp.strategy(flat.matchstate(i))
        acts = flat.actions[int(flat.infoset_node[i])]
        for a, name in enumerate(acts):
            assert got[name] == pytest.approx(pol[flat.tree.ioff[i] + a], abs=1e-6)


@pytest.mark.parametrize("algo", ["dcfr", "pluribus"])
def test_three_seat_resume_is_bit_exact(tmp_path: Path, algo):
    # lazy discounting (dcfr) and pruning (pluribus: after its first iterations) on 3-player Leduc
    overrides = {"prune_start": 500} if algo == "pluribus" else {}
    whole = make_trainer("leduc.limit.3p", algo=algo, seed=3, **overrides)
    whole.run(6_000)
    half = make_trainer("leduc.limit.3p", algo=algo, seed=3, **overrides)
    half.run(2_500)
    half.save(tmp_path / "run")
    again = Trainer.load(tmp_path / "run")
    again.run(3_500)
    assert again.iteration == whole.iteration == 6_000
    assert np.array_equal(again.regret, whole.regret) and np.array_equal(again.strat, whole.strat)
    assert np.array_equal(again.rng, whole.rng)
    if algo == "pluribus":
        assert whole.pruned > 0


def test_three_seat_threads_share_the_table_and_converge():
    # 3-player Leduc's first round (8 buckets) would merge a copy every 20 iterations on 2
    # threads: its threads share the one table (blueprint.threads.COPY_MIN_HOT_SPAN)
    tr = make_trainer("leduc.limit.3p", algo="vanilla", seed=1, threads=2)
    assert not tr.copies_used(1_000_000)
    tr.run(200_000)
    expl, _ = tr.exploitability()
    assert expl < 1.0  # uniform 12.6; one thread's 300,000 iterations: 0.42


def test_two_player_only_paths_refuse_three_seats_by_name():
    with pytest.raises(AlgoError, match=r"two-player only.*numPlayers = 3"):
        make_trainer("kuhn.limit.3p", algo="cfr+")
    gd = load_gamedef("holdem.nolimit.3p")
    from holdem.betting import Betting

    with pytest.raises(ValueError, match="numPlayers"):
        build_tree(gd, root=Betting.initial(gd), deal_boards=True)
    assert KIND_DECISION == 0


def test_three_seat_job_of_workers_and_shards_converges():
    # the Ray job's worker and shard code, in process (cluster.simulate): two workers, stale by
    # half a batch, on 3-player Kuhn
    from cluster.simulate import simulate_job

    tr = make_trainer("kuhn.limit.3p", algo="linear", seed=2)
    assert simulate_job(tr, 2, 1_000, 100_000)["staleness"] == 500.0
    expl, _ = tr.exploitability()
    assert expl < 0.1  # uniform 2.06; one process 0.0091 at 100,000


@pytest.mark.slow
def test_three_seat_ray_job_trains_and_checkpoints(tmp_path: Path):
    ray = pytest.importorskip("ray")
    from blueprint.blueprint import Blueprint
    from cluster.job import RayJob

    ray.init(
        address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False
    )
    try:
        with RayJob(
            make_trainer("kuhn.limit.3p", algo="linear", seed=5), workers=2, shards=2, batch=1_000
        ) as job:
            job.run(100_000)
            job.save(tmp_path / "run")
            expl, gains = job.exploitability()
    finally:
        ray.shutdown()
    assert expl < 0.1 and len(gains) == 3
    s = Blueprint.load(tmp_path / "run").strategy("MATCHSTATE:2:0:cc:||5c")
    assert set(s) == {"c", "r"} and abs(sum(s.values()) - 1) < 1e-6


def test_multiway_games_default_to_multiway_bets_and_small_cards():
    from abstraction.cards import default_card_name
    from blueprint.defaults import run_config

    for game in ("nl6max", "holdem.nolimit.3p"):
        cfg = run_config(game, seconds=180.0)
        assert cfg.bets == "multiway" and cfg.gamedef.num_players == load_gamedef(game).num_players
        assert default_card_name(cfg.gamedef) == "small"
    assert run_config("hunl100", seconds=180.0).bets == "small"
    assert default_card_name(load_gamedef("hunl100")) == "fine"
    gd = load_gamedef("nl6max")
    assert gd.num_players == 6 and gd.stack == (10000,) * 6 and gd.blind == (50, 100, 0, 0, 0, 0)


def test_three_seat_holdem_trains_and_answers_from_the_cli(tmp_path: Path):
    # no-limit hold'em on three seats, rank buckets (no table to build): the main job's output,
    # with the opening range of the first seat to act (seat 2), and a blueprint that answers
    from click.testing import CliRunner

    from blueprint.blueprint import Blueprint
    from mccfr.cli import cli

    run = tmp_path / "run"
    args = [
        "train",
        "--game",
        "holdem.nolimit.3p",
        "--abstraction",
        "rank",
        "--iterations",
        "3000",
        "--out",
        str(run),
    ]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "opening range of seat 2" in r.output and 'strategy("MATCHSTATE:2:0::||AsAh")' in r.output
    s = Blueprint.load(run).strategy("MATCHSTATE:0:0:r300:AsAh||")
    assert set(s) == {"f", "c", "r1000", "r20000"} and abs(sum(s.values()) - 1) < 1e-6


def test_three_seat_blueprint_is_served(tmp_path: Path):
    # the query service's responder (mccfr serve, mccfr play) loads a 3-seat run, warms up on its
    # example states and answers each round's, and an off-tree raise through translation
    from mccfr.serving.query import example_matchstates
    from mccfr.serving.solving import make_responder

    tr = make_trainer("holdem.nolimit.3p", cards="rank", seed=0)
    tr.run(3_000)
    tr.save(tmp_path / "run")
    game = Game.load("holdem.nolimit.3p")
    states = example_matchstates(game)
    assert len(states) == 4 and states[0] == "MATCHSTATE:2:0::||KsKh"
    resp = make_responder(tmp_path / "run")
    for ms in states + ["MATCHSTATE:0:0:r250:AsKs||"]:
        out = resp.answer(ms)
        assert abs(sum(out["strategy"].values()) - 1) < 1e-6, (ms, out)
        assert out["source"] in ("blueprint", "translated"), out


def test_three_seat_explorer_ranges_and_play_page_refusal(tmp_path: Path):
    # the web page's range of the seat to act answers N-seat public states (every hand the
    # blueprint's own answer); its play page, one person against the bot, refuses by name
    import json
    import urllib.error
    import urllib.request

    from blueprint.blueprint import Blueprint
    from mccfr.serving.ranges import hand_names
    from mccfr.serving.responders import BlueprintResponder
    from mccfr.serving.service import ThreadedServer, create_app

    tr = make_trainer("holdem.nolimit.3p", cards="rank", seed=0)
    tr.run(3_000)
    tr.save(tmp_path / "run")
    bp = Blueprint.load(tmp_path / "run")

    def call(url, path, body):
        req = urllib.request.Request(
            url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as f:
                return f.status, json.loads(f.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    with ThreadedServer(create_app(BlueprintResponder(bp))) as srv:
        status, out = call(srv.url, "/v1/range", {"betting": "r300c"})
        assert status == 200 and out["seat"] == 1 and out["spent"] == [300, 100, 300], out
        want = bp.strategy("MATCHSTATE:1:0:r300c:|AsAh|")
        h = hand_names(bp.gamedef).index("AsAh")
        for i, a in enumerate(out["actions"]):
            assert out["strategy"][i][h] == pytest.approx(want[a], abs=1e-4)
        assert out["reach"][h] > 0
        status, err = call(srv.url, "/v1/play/deal", {})
        assert status == 409 and err["kind"] == "two_players_only" and "numPlayers = 3" in err["error"]


def test_eval_plays_n_seat_matches_against_copies_of_each_opponent(tmp_path: Path):
    # mccfr eval RUN --vs SPEC on a 3-seat game: the run against two copies of each opponent, every
    # deal in all 6 seatings; the trained Kuhn policy beats always-call with its interval above 0
    import json

    from click.testing import CliRunner

    from mccfr.cli import cli

    run = tmp_path / "run"
    r = CliRunner().invoke(
        cli, ["train", "--game", "kuhn.limit.3p", "--iterations", "100000", "--out", str(run)]
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["eval", str(run), "--vs", "always-call", "--hands", "12000", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["seatings"] == 6 and out["hands"] == 12000 and len(out["players"]) == 3
    mine = out["players"][0]
    assert mine["mean"] - mine["ci95"] > 0  # about +0.2 chips a hand (BENCHMARKS.md, "N-seat matches")
    assert abs(sum(p["chips"] for p in out["players"])) < 1e-9
    r = CliRunner().invoke(cli, ["eval", str(run), "--vs", "always-call", "--aivat"])
    assert r.exit_code == 2 and "two-seat matches" in r.output


def test_three_seat_sixteen_bit_tables_converge():
    tr = make_trainer("kuhn.limit.3p", algo="vanilla", seed=0, table_bits=16)
    tr.run(100_000)
    expl, _ = tr.exploitability()
    assert expl < 0.05  # 32-bit tables: 0.0077 at 100,000 (BENCHMARKS.md, "N-player MCCFR")
