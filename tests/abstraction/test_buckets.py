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
    from blueprint.trainer import make_trainer

    d, _ = built
    ab = from_file(SMALL, d)
    assert ab.kind == TABLE and ab.num_buckets == (10, 8, 8)
    tr = make_trainer(SMALL, bets="small", cards=str(d), algo="pluribus", seed=0)
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
    for extra in (["--abstraction", "small"], ["--buckets", "3,3", "--method", "potential"]):
        r = CliRunner().invoke(cli, ["abstraction", "build", "--game", "leduc", "--fill", *extra])
        assert r.exit_code == 2 and "--fill applies to --buckets with --method ehs or ehs2" in r.output
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


def test_the_fine_recipe_builds_on_a_small_deck_deterministic_and_filled_uses_every_bucket(tmp_path):
    """``fine`` (the main job's default): its method with as many buckets a round as the 24-card
    deck allows (a quarter of its classes: the recipe's 1,000 after the flop exceed them), built
    twice: identical tables. Tied strengths leave percentile buckets empty (equal values share a
    bucket: on 52 cards ``fine`` fills its flop and turn but uses 787 of 1,000 river buckets); with
    ``fill`` every bucket is used, up to one per distinct strength, and ordered by strength."""
    from abstraction.bucket_common import HS_SCALE
    from abstraction.buckets import RECIPES

    rec = RECIPES["fine"]
    ix = HandIndexer.for_game(SMALL)
    counts = tuple(min(b, ix.size(r) // 4) for r, b in enumerate(rec.buckets[: SMALL.num_rounds]))
    assert counts[1] > 8  # finer than the module's (10, 8, 8) build
    quiet = dict(progress=False, log=lambda m: None, keep_stats=True)
    for d, fill in (("a", False), ("b", False), ("f", True)):
        build_buckets(SMALL, counts, rec.method, tmp_path / d, fill=fill, **quiet)
    (h1, t1), (_, t2), (hf, tf) = (read_abstraction(tmp_path / d) for d in "abf")
    assert h1["buckets"] == hf["buckets"] == list(counts) and h1["method"] == rec.method == "ehs2"
    for r, b in enumerate(counts):
        assert np.array_equal(t1[r], t2[r])
        st = np.load(tmp_path / "a" / "stats" / f"round{r}.npz")
        v = st["hs"] if "hs" in st else st["m2"]
        distinct = len(np.unique(np.floor(v * (1 if "hs" in st else HS_SCALE) + 0.5)))
        used, used_f = len(np.unique(t1[r])), len(np.unique(tf[r]))
        assert used_f == min(b, distinct) >= used, f"round {r}: {used_f} / {used} of {b} ({distinct} values)"
        order = np.argsort(v, kind="stable")
        assert np.all(np.diff(tf[r][order].astype(int)) >= 0)  # higher strength, never a lower bucket
    assert len(np.unique(t1[-1])) < counts[-1]  # the ties that fill is for


def test_filled_percentiles_equal_the_plain_ones_without_ties_and_use_every_bucket_with_them():
    from abstraction.bucket_common import HIST_BINS, percentile_thresholds

    rng = np.random.default_rng(3)
    hist = np.zeros(HIST_BINS)
    hist[rng.choice(HIST_BINS, 5000, replace=False)] = rng.random(5000) + 0.5
    assert np.array_equal(percentile_thresholds(hist, 50), percentile_thresholds(hist, 50, fill=True))
    hist[100] = hist.sum()  # one value with half the weight: about 25 of 50 buckets would stay empty
    plain, filled = percentile_thresholds(hist, 50), percentile_thresholds(hist, 50, fill=True)
    assert len(np.unique(plain)) < 30
    assert np.all(np.diff(filled) > 0) and hist[: filled[0]].sum() > 0
    few = np.zeros(HIST_BINS)
    few[[5, 9, 700]] = 1.0  # three values, ten buckets: one bucket each, the rest unused
    th = percentile_thresholds(few, 10, fill=True)
    assert list(th[:2]) == [9, 700] and np.all(th[2:] >= HIST_BINS)


def test_kernel_arrays_have_one_type_whatever_the_tables_source(built):
    """The kernels compile once for a card abstraction: tables read from a file, built in memory
    or handed over read-only (Ray's object store) reach them as the same numba type, and the
    caller's arrays stay writable."""
    import dataclasses

    import numba

    d, _ = built
    ab = from_file(SMALL, d)
    frozen = dataclasses.replace(ab, **{k: getattr(ab, k).copy() for k in ("iso", "table", "offsets")})
    for k in ("iso", "table", "offsets"):
        getattr(frozen, k).setflags(write=False)
    types = {str(numba.typeof(a.kernel_arrays(SMALL))) for a in (ab, frozen)}
    assert len(types) == 1, types
    assert {str(numba.typeof(x)) for x in (ab.kernel_args()[1:], frozen.kernel_args()[1:])} == {
        str(numba.typeof(ab.kernel_args()[1:]))
    }
    assert ab.table.flags.writeable and not ab.kernel_args()[2].flags.writeable
