"""AIVAT against the plain mean of a duplicate match: its bias and how many fewer hands it needs.

``bias``: on Leduc, a trained blueprint (CFR+, ``--iterations``) against ``--vs`` (default
``random``), over ``--hands`` hands (10^6 by default) split over ``--jobs`` processes (each its own
seed; the pairs are pooled). It prints the exact expected value (from the game tree), the plain
mean and the AIVAT mean with their 95% intervals, how many standard errors each lies from the
exact value, and the ratio of the variances (how many times more hands the plain mean needs for
AIVAT's interval).

``match``: any two players of a game (``--player SPEC --vs SPEC``: runs, ``RUN+solve:METHOD``,
baselines) over ``--hands`` hands, in ``--jobs`` processes: the plain and AIVAT means and
intervals, the ratio of their standard deviations and of the hands they need. ``--paired``
subtracts, pair by pair, B against itself on the same deals with the same per-hand player
streams (``common_random``): its expectation is 0, and where A plays as B (a solving player
before its first solve) the two hands are the same, so only the hands A plays differently vary.

    python scripts/benchmarks/bench_aivat.py bias --hands 1000000 --jobs 2
    python scripts/benchmarks/bench_aivat.py match --game hunl100 --player RUN_A --vs RUN_B --hands 20000 --jobs 2
    python scripts/benchmarks/bench_aivat.py match --player RUN+solve:reach-maxmargin --vs RUN --paired --hands 400
    python scripts/benchmarks/bench_aivat.py match --player RUN+solve:reach-maxmargin --vs RUN --paired \
        --solve-from turn --solve-iterations 200 --hands 400 --pairs-out pairs.npz

``--solve-from`` and ``--solve-iterations`` set a solving ``--player``'s first solved round and
iterations a solve (the spec's default: the river, 200). ``--pairs-out`` saves the per-pair plain
and AIVAT values (in the printed unit) to pool runs. The run prints one JSON line with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import time

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from mccfr_util.reporting import ci95


def _leduc_players(iterations: int, vs: str):
    from blueprint.blueprint import Blueprint
    from blueprint.trainer import make_trainer
    from holdem.game import Game
    from mccfr.evaluation.players import BlueprintPlayer, player_from_spec

    game = Game.load("leduc")
    tr = make_trainer("leduc", algo="cfr+")
    tr.run(iterations)
    return game, BlueprintPlayer(Blueprint(tr), name=f"leduc-cfr+{iterations}"), player_from_spec(vs, game)


def _spec_players(game_name: str, a: str, b: str):
    from holdem.game import Game
    from mccfr.evaluation.players import player_from_spec

    game = Game.load(game_name)
    return game, player_from_spec(a, game), player_from_spec(b, game)


def _solve_options(p, game, solve_from: str | None, iterations: int | None):
    """``p`` (a solving player) from ``solve_from`` (river, turn, flop) with ``iterations`` a
    solve, the spec's own settings where None."""
    from mccfr.evaluation.solving import SolvingPlayer

    if not isinstance(p, SolvingPlayer):
        raise SystemExit("--solve-from and --solve-iterations go with --player RUN+solve:METHOD")
    rounds = game.gamedef.num_rounds
    from_round = (
        p.from_round if solve_from is None else rounds - {"river": 1, "turn": 2, "flop": 3}[solve_from]
    )
    iterations = p.iterations if iterations is None else iterations
    return SolvingPlayer(
        p.bp,
        p.method,
        name=p.name + (f" from {solve_from}" if solve_from else "") + f", {iterations} it",
        iterations=iterations,
        from_round=from_round,
        bets=p.bets,
        off_tree=False if p.off_tree is None else p.off_tree,
    )


_JOB: dict = {}


def _play(args: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """One job's match: its per-pair plain and AIVAT means (chips) and its seconds; with
    ``--paired``, less those of B against itself on the same deals and player streams."""
    from mccfr.evaluation.aivat import AIVAT
    from mccfr.evaluation.match import play_match

    hands, seed = args
    game, a, b = _JOB["players"]
    paired = _JOB.get("paired", False)
    t0 = time.perf_counter()
    r = play_match(game, a, b, hands, seed=seed, aivat=AIVAT(game, a, b, seed=seed), common_random=paired)
    plain, aivat = np.asarray(r.pair_chips), np.asarray(r.aivat_pair_chips)
    if paired:
        r0 = play_match(game, b, b, hands, seed=seed, aivat=AIVAT(game, b, b, seed=seed), common_random=True)
        plain, aivat = plain - np.asarray(r0.pair_chips), aivat - np.asarray(r0.aivat_pair_chips)
    return plain, aivat, time.perf_counter() - t0


def _run(players, hands: int, jobs: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    _JOB["players"] = players
    per = [hands // jobs + (1 if k < hands % jobs else 0) for k in range(jobs)]
    work = [(n, seed + k) for k, n in enumerate(per) if n >= 2]
    t0 = time.perf_counter()
    if jobs == 1:
        parts = [_play(w) for w in work]
    else:
        with mp.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_play, work)
    plain = np.concatenate([p[0] for p in parts])
    aivat = np.concatenate([p[1] for p in parts])
    return plain, aivat, time.perf_counter() - t0


def _summary(plain: np.ndarray, aivat: np.ndarray, scale: float) -> dict:
    sd_p, sd_a = float(plain.std(ddof=1)), float(aivat.std(ddof=1))
    return {
        "pairs": int(len(plain)),
        "hands": 2 * int(len(plain)),
        "plain_mean": float(plain.mean()) * scale,
        "plain_ci95": ci95(plain) * scale,
        "aivat_mean": float(aivat.mean()) * scale,
        "aivat_ci95": ci95(aivat) * scale,
        "sd_ratio": sd_a / sd_p,
        "sd_cut": 1.0 - sd_a / sd_p,
        "hands_factor": (sd_p / sd_a) ** 2,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bias", help="Leduc: AIVAT and the plain mean against the exact value")
    b.add_argument("--iterations", type=int, default=60, help="CFR+ iterations of the Leduc blueprint")
    b.add_argument("--vs", default="random")
    m = sub.add_parser("match", help="any two players: the variance AIVAT takes out")
    m.add_argument("--game", default="hunl100")
    m.add_argument("--player", required=True)
    m.add_argument("--vs", required=True)
    m.add_argument(
        "--paired",
        action="store_true",
        help="less B against itself on the same deals and player streams (expectation 0): for a "
        "player that plays as B in most hands, e.g. RUN+solve:METHOD against RUN",
    )
    m.add_argument(
        "--solve-from", choices=("river", "turn", "flop"), help="a solving --player's first solved round"
    )
    m.add_argument(
        "--solve-iterations", type=int, help="a solving --player's iterations a solve [default: 200]"
    )
    m.add_argument("--pairs-out", help="save the per-pair plain and AIVAT values (.npz, in the printed unit)")
    for p in (b, m):
        p.add_argument("--hands", type=int, default=1_000_000 if p is b else 20_000)
        p.add_argument("--jobs", type=int, default=len(__import__("os").sched_getaffinity(0)))
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.hands < 2 * args.jobs or args.jobs < 1:
        ap.error("--hands must be at least 2 per job, and --jobs at least 1")
    if args.cmd == "bias":
        from mccfr.evaluation.match import exact_value

        players = _leduc_players(args.iterations, args.vs)
        game, a, vs = players
        exact = exact_value(game, a, vs).chips_per_hand
        plain, aivat, seconds = _run(players, args.hands, args.jobs, args.seed)
        out = _summary(plain, aivat, 1.0)
        se_p, se_a = out["plain_ci95"] / 1.96, out["aivat_ci95"] / 1.96
        out.update(
            game="leduc",
            player=a.name,
            opponent=vs.name,
            unit="chips/hand",
            exact=exact,
            plain_z=(out["plain_mean"] - exact) / se_p,
            aivat_z=(out["aivat_mean"] - exact) / se_a,
            aivat_minus_plain=out["aivat_mean"] - out["plain_mean"],
            seconds=seconds,
            jobs=args.jobs,
        )
    else:
        players = _spec_players(args.game, args.player, args.vs)
        game, a, vs = players
        if args.solve_from is not None or args.solve_iterations is not None:
            a = _solve_options(a, game, args.solve_from, args.solve_iterations)
            players = (game, a, vs)
        _JOB["paired"] = args.paired
        from mccfr_util.reporting import big_blind_of, mbb_per_chip

        plain, aivat, seconds = _run(players, args.hands, args.jobs, args.seed)
        bb = big_blind_of(game.gamedef)
        out = _summary(plain, aivat, mbb_per_chip(bb))
        if args.pairs_out:
            np.savez(args.pairs_out, plain=plain * mbb_per_chip(bb), aivat=aivat * mbb_per_chip(bb))
        out.update(
            game=args.game,
            player=a.name,
            opponent=vs.name,
            unit="mbb/game" if bb else "chips/hand",
            seconds=seconds,
            jobs=args.jobs,
        )
    if args.json:
        print(json.dumps(out))
        return
    u = out["unit"]
    print(
        f"{out['player']} vs {out['opponent']} on {out['game']}, {out['hands']:,} hands, {seconds:.0f} s, {args.jobs} jobs"
    )
    if "exact" in out:
        print(f"  exact       {out['exact']:+.5f} {u}")
    print(
        f"  plain       {out['plain_mean']:+.5g} +- {out['plain_ci95']:.3g} {u}"
        + (f"  ({out['plain_z']:+.2f} se)" if "exact" in out else "")
    )
    print(
        f"  AIVAT       {out['aivat_mean']:+.5g} +- {out['aivat_ci95']:.3g} {u}"
        + (f"  ({out['aivat_z']:+.2f} se)" if "exact" in out else "")
    )
    print(
        f"  AIVAT's standard deviation {out['sd_ratio']:.3f} of the plain one ({out['sd_cut']:.1%} cut): "
        f"the plain mean needs {out['hands_factor']:.2f}x the hands"
    )
    if not math.isfinite(out["hands_factor"]):
        raise SystemExit("no variance to compare")


if __name__ == "__main__":
    main()
