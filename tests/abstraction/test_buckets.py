"""Hand-strength buckets: exact statistics against brute force, percentile cuts, files, errors."""

import itertools

import numpy as np
import pytest

from abstraction.buckets import AbstractionError, build_buckets
from abstraction.cards import TABLE, default_card_abstraction, from_file
from abstraction.isomorphism import HandIndexer
from abstraction.storage import read_abstraction, write_abstraction
from holdem.evaluator import rank_hand_py
from holdem.gamedef import PRESETS, GameDef

# a 24-card, three-round hold'em: preflop, a 3-card flop, a 1-card turn
SMALL = GameDef(
    "nolimit", 3, (2000, 2000), (100, 50), (0, 0, 0), (1, 0, 0), (255, 255, 255), 4, 6, 2, (0, 3, 1), "tiny"
)


def brute_hs(game, hole, board):
    deck = [c for c in range(game.deck_size) if c not in hole and c not in board]
    me = rank_hand_py(list(hole) + list(board), game.num_suits, game.num_ranks)
    score = n = 0
    for opp in itertools.combinations(deck, game.num_hole_cards):
        them = rank_hand_py(list(opp) + list(board), game.num_suits, game.num_ranks)
        score += 1.0 if me > them else 0.5 if me == them else 0.0
        n += 1
    return score / n


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d1 = tmp_path_factory.mktemp("direct")
    d2 = tmp_path_factory.mktemp("lookup")
    build_buckets(SMALL, (10, 8, 8), "ehs2", d1, progress=False, log=lambda m: None, keep_stats=True)
    build_buckets(
        SMALL,
        (10, 8, 8),
        "ehs2",
        d2,
        progress=False,
        log=lambda m: None,
        direct_penultimate=False,
        keep_stats=True,
    )
    return d1, d2


def test_last_round_hand_strength_is_exact(built):
    d, _ = built
    hs = np.load(d / "stats" / "round2.npz")["hs"]
    ix = HandIndexer.for_game(SMALL)
    rng = np.random.default_rng(0)
    for _ in range(40):
        cards = rng.choice(SMALL.deck_size, 6, replace=False)
        exact = brute_hs(SMALL, cards[:2], cards[2:])
        assert hs[ix.index(cards, 2)] / 65535 == pytest.approx(exact, abs=1 / 65535)


def test_earlier_round_moments_are_exact_and_both_methods_agree(built):
    d1, d2 = built
    a = np.load(d1 / "stats" / "round1.npz")
    b = np.load(d2 / "stats" / "round1.npz")
    assert np.allclose(a["m1"], b["m1"], atol=2e-5) and np.allclose(a["m2"], b["m2"], atol=2e-5)
    ix = HandIndexer.for_game(SMALL)
    rng = np.random.default_rng(1)
    for _ in range(8):
        cards = rng.choice(SMALL.deck_size, 5, replace=False)
        turns = [c for c in range(SMALL.deck_size) if c not in cards]
        vals = [brute_hs(SMALL, cards[:2], list(cards[2:]) + [t]) for t in turns]
        cls = ix.index(cards, 1)
        assert a["m1"][cls] == pytest.approx(np.mean(vals), abs=1e-6)
        assert a["m2"][cls] == pytest.approx(np.mean(np.square(vals)), abs=1e-6)


def test_percentile_buckets_are_balanced_and_ordered(built):
    d, _ = built
    header, tables = read_abstraction(d)
    assert header["buckets"] == [10, 8, 8]
    hs = np.load(d / "stats" / "round2.npz")["hs"]
    river = tables[2]
    # higher strength never gets a lower bucket
    order = np.argsort(hs, kind="stable")
    assert np.all(np.diff(river[order].astype(int)) >= 0)
    # buckets are roughly equally likely: weight each class by its raw hands
    ix = HandIndexer.for_game(SMALL)
    counts = np.zeros(8)
    for cards in itertools.islice(itertools.permutations(range(SMALL.deck_size), 6), 0, None, 997):
        counts[river[ix.index(np.array(cards), 2)]] += 1
    share = counts / counts.sum()
    assert share.min() > 0.05 and share.max() < 0.25


def test_table_abstraction_in_the_kernels(built):
    from blueprint.algo import get_algo
    from blueprint.trainer import RunConfig, Trainer

    d, _ = built
    ab = from_file(SMALL, d)
    assert ab.kind == TABLE and ab.num_buckets == (10, 8, 8)
    tr = Trainer(RunConfig("tiny", "small", str(d), get_algo("pluribus"), 0), gamedef=SMALL)
    tr.run(2000)
    assert tr.node_visits > 0 and np.any(tr.strat != 0)
    # the kernel's bucket of a dealt hand is the table's
    from blueprint.blueprint import hand_bucket

    ix = HandIndexer.for_game(SMALL)
    cards = np.array([0, 7, 12, 18, 23])
    assert hand_bucket(ab, SMALL, (0, 7), (12, 18, 23), 1) == ab.table[ab.offsets[1] + ix.index(cards, 1)]


def test_bad_requests_and_files(tmp_path, built):
    with pytest.raises(AbstractionError, match="only 3 hand classes"):
        build_buckets(PRESETS["leduc"], (6, 3), "ehs", tmp_path, progress=False)
    with pytest.raises(AbstractionError, match="unknown bucketing method 'emd'"):
        build_buckets(PRESETS["leduc"], (3, 3), "emd", tmp_path, progress=False)
    with pytest.raises(AbstractionError, match="need 2 bucket counts"):
        build_buckets(PRESETS["leduc"], (3,), "ehs", tmp_path, progress=False)
    with pytest.raises(AbstractionError, match="no board cards"):
        build_buckets(PRESETS["kuhn"], (3,), "ehs", tmp_path, progress=False)
    with pytest.raises(AbstractionError, match="unknown card abstraction 'nope'"):
        default_card_abstraction(PRESETS["hunl"], "nope")
    d, _ = built
    # another game's table is refused
    with pytest.raises(AbstractionError, match="built for another deal"):
        from_file(PRESETS["hunl"], d)
    # a corrupt or partial file is never used
    bad = tmp_path / "bad"
    bad.mkdir()
    data = bytearray((d / "abstraction.bin").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / "abstraction.bin").write_bytes(bytes(data))
    with pytest.raises(AbstractionError, match="corrupt"):
        read_abstraction(bad)
    (bad / "abstraction.bin").write_bytes(b"NOTMCCFR" + bytes(20))
    with pytest.raises(AbstractionError, match="bad magic"):
        read_abstraction(bad)
    (bad / "abstraction.bin").unlink()
    with pytest.raises(AbstractionError, match="no abstraction file"):
        read_abstraction(bad)
    # a table whose buckets exceed the header's count is refused
    sizes = [HandIndexer.for_game(SMALL).size(r) for r in range(3)]
    write_abstraction(
        bad,
        SMALL,
        "ehs",
        (1, 1, 1),
        sizes,
        [np.zeros(sizes[0], np.uint16), np.ones(sizes[1], np.uint16), np.zeros(sizes[2], np.uint16)],
    )
    with pytest.raises(AbstractionError, match="round 2 has bucket 1"):
        read_abstraction(bad)


def test_truncated_future_and_partial_files_are_refused(tmp_path, built):
    import struct

    from abstraction.storage import MAGIC, VERSION

    d, _ = built
    data = (d / "abstraction.bin").read_bytes()
    bad = tmp_path / "t"
    bad.mkdir()
    (bad / "abstraction.bin").write_bytes(data[: len(data) - 40])  # an interrupted copy
    with pytest.raises(AbstractionError, match="truncated"):
        read_abstraction(bad)
    (bad / "abstraction.bin").write_bytes(MAGIC + struct.pack("<I", VERSION + 1) + data[12:])
    with pytest.raises(AbstractionError, match=f"format version {VERSION + 1}"):
        read_abstraction(bad)
    # a build interrupted before writing its file leaves only partial/ statistics: never loaded
    (bad / "abstraction.bin").unlink()
    (bad / "partial").mkdir()
    (bad / "partial" / "round2.npz").write_bytes(b"x")
    with pytest.raises(AbstractionError, match="no abstraction file"):
        from_file(SMALL, bad)
    for counts, msg in (((10, 0, 8), "positive integer"), ((10, 8, 70000), "hand classes|at most 65,535")):
        with pytest.raises(AbstractionError, match=msg):
            build_buckets(SMALL, counts, "ehs", tmp_path / "b", progress=False)


def test_cli_build_errors(tmp_path):
    from click.testing import CliRunner

    from mccfr.cli import cli

    r = CliRunner().invoke(cli, ["abstraction", "build", "--game", "leduc", "--abstraction", "huge"])
    assert r.exit_code != 0 and "unknown abstraction recipe 'huge'" in r.output
    r = CliRunner().invoke(
        cli, ["abstraction", "build", "--game", "leduc", "--buckets", "6,3", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code != 0 and "only 3 hand classes" in r.output
    r = CliRunner().invoke(
        cli,
        [
            "abstraction",
            "build",
            "--game",
            "leduc",
            "--buckets",
            "3,3",
            "--method",
            "kmeans",
            "--out",
            str(tmp_path / "y"),
        ],
    )
    assert r.exit_code != 0 and "unknown bucketing method 'kmeans'" in r.output
    assert not (tmp_path / "y" / "abstraction.bin").exists()


def test_kernel_lookup_matches_the_indexer_on_random_deals(built, tmp_path):
    """deal_buckets (positions first, prefetched, read after the showdown evaluation) gives each
    seat's bucket of the table for every round, for a two-card game (preflop by the hole-card
    lookup) and a one-card game (every round by the index)."""
    from abstraction.cards import deal_buckets

    d, _ = built
    leduc = PRESETS["leduc"]
    build_buckets(leduc, (3, 4), "ehs", tmp_path, progress=False, log=lambda m: None)
    rng = np.random.default_rng(7)
    for game, path in ((SMALL, d), (leduc, tmp_path)):
        ab = from_file(game, path)
        ix = HandIndexer.for_game(game)
        kind, iso, table, offsets = ab.kernel_args()
        h, R = game.num_hole_cards, game.num_rounds
        bpr = np.array(game.num_board_cards, np.int64)
        out = np.zeros((2, R), np.int64)
        work = np.empty(2 * (h + game.total_board_cards) + 2, np.int64)
        _, ref_tables = read_abstraction(path)
        for _ in range(300):
            deal = rng.permutation(game.deck_size)[: 2 * h + game.total_board_cards].astype(np.int64)
            winner = deal_buckets(
                kind,
                deal,
                h,
                bpr,
                game.deck_size,
                game.num_suits,
                game.num_ranks,
                out,
                work,
                iso,
                table,
                offsets,
            )
            board = deal[2 * h :]
            for p in range(2):
                for r in range(R):
                    hand = np.concatenate([deal[p * h : (p + 1) * h], board[: game.board_cards_through(r)]])
                    assert out[p, r] == ref_tables[r][ix.index(hand, r)]
            s = [
                rank_hand_py(list(deal[p * h : (p + 1) * h]) + list(board), game.num_suits, game.num_ranks)
                for p in range(2)
            ]
            assert winner == (0 if s[0] > s[1] else 1 if s[1] > s[0] else -1)
