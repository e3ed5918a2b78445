"""N-player MCCFR on small games: NashConv curves and speed against OpenSpiel, of the small-game
solver (blueprint.nplayer, ``--trainer flat``) or the production trainer (blueprint.trainer,
``--trainer production``: ``--weightings`` are then ``--algo`` names, e.g. ``linear,dcfr,pluribus``).

    python scripts/benchmarks/bench_nplayer.py [--seed 0] [--kuhn 1000,10000,100000,1000000]
        [--leduc 10000,100000,1000000] [--weightings linear] [--speed-iterations 200000] [--rounds 2]
        [--trainer flat|production] [--threads-check N] [--openspiel-nashconv] [--json]

* Flattening: betting nodes, deals, information sets and seconds for 3-player Kuhn
  (``kuhn.limit.3p``) and 3-player Leduc (``leduc.limit.3p``, OpenSpiel's
  ``leduc_poker(players=3)``).
* Curves: our external-sampling MCCFR (``--weightings``, comma-separated: ``linear``, ``dcfr``
  at every 1,000 iterations, ``uniform``; seed ``--seed``), exact NashConv of the average strategy
  at each iteration count (kernel seconds so far, NashConv seconds).
* Speed on 3-player Leduc: our iterations/s against OpenSpiel's C++
  ``pyspiel.ExternalSamplingMCCFRSolver`` (one traversal per player per iteration, like ours) in
  the same process, ``--rounds`` alternating rounds; ours runs ``--speed-iterations`` a round,
  OpenSpiel for as many seconds as ours took (at least 5 s).
* ``--openspiel-nashconv`` (3-4 minutes): ``pyspiel.nash_conv`` of a fixed random policy on
  3-player Leduc against ours (the issue's 1e-9 check), each with its seconds.

Prints one JSON row per measurement (``--json``: only those), then a short table.
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness import emit, load, machine_row

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load

import numpy as np  # noqa: E402

from blueprint.nplayer import (  # noqa: E402
    ESSolver,
    NPlayerGame,
    TablesNashConv,
    nash_conv,
    openspiel_policy,
)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def flatten(name: str) -> tuple[NPlayerGame, dict]:
    t = time.perf_counter()
    game = NPlayerGame.from_gamedef(name)
    s = time.perf_counter() - t
    return game, {
        "what": "flatten",
        "game": name,
        "betting_nodes": game.num_nodes,
        "deals": game.num_deals,
        "infosets": game.num_infosets,
        "actions": game.num_actions_total,
        "seconds": round(s, 3),
    }


class Flat:
    """The small-game solver (:class:`blueprint.nplayer.ESSolver`) behind one interface with
    :class:`Production`: ``run(n)``, ``nash_conv()``."""

    def __init__(self, game: NPlayerGame, name: str, seed: int, weighting: str):
        self.game, self.solver = game, ESSolver(game, seed=seed, weighting=weighting)

    def run(self, n: int) -> None:
        self.solver.run(n)

    def nash_conv(self) -> float:
        return nash_conv(self.game, self.solver.average_policy())


class Production:
    """The production trainer (``blueprint.trainer.make_trainer``, one thread) with ``weighting``
    the ``--algo`` name; NashConv by ``Trainer.exploitability`` (the flattened game's)."""

    def __init__(self, game: NPlayerGame, name: str, seed: int, weighting: str):
        from blueprint.trainer import make_trainer

        self.tr = make_trainer(name, algo=weighting, seed=seed)
        self.tr._best_response = TablesNashConv(self.tr.tree, self.tr.cards, self.tr.row_offset, game)

    def run(self, n: int) -> None:
        self.tr.run(n)

    def nash_conv(self) -> float:
        return self.tr.exploitability()[0]


def curve(game: NPlayerGame, name: str, steps: list[int], seed: int, weighting: str, kind=Flat) -> list[dict]:
    kind(game, name, seed, weighting).run(10)  # compile (or load from numba's cache) outside the timing
    solver = kind(game, name, seed, weighting)
    rows, done, kernel = [], 0, 0.0
    for it in steps:
        t = time.perf_counter()
        solver.run(it - done)
        kernel += time.perf_counter() - t
        done = it
        t = time.perf_counter()
        nc = solver.nash_conv()
        rows.append(
            {
                "what": "curve",
                "trainer": kind.__name__.lower(),
                "game": name,
                "weighting": weighting,
                "iterations": it,
                "kernel_s": round(kernel, 3),
                "nash_conv": nc,
                "nash_conv_s": round(time.perf_counter() - t, 3),
            }
        )
    return rows


def speed(game: NPlayerGame, iterations: int, rounds: int, seed: int, kind=Flat, weighting="linear") -> dict:
    import pyspiel

    os_game = pyspiel.load_game("leduc_poker(players=3)")
    peer = pyspiel.ExternalSamplingMCCFRSolver(os_game, seed)
    solver = kind(game, "leduc.limit.3p", seed, weighting)
    solver.run(10)  # compile (or load) outside the timing
    ours, theirs = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        solver.run(iterations)
        ours_s = time.perf_counter() - t
        ours.append(iterations / ours_s)
        n, t = 0, time.perf_counter()
        while (el := time.perf_counter() - t) < max(ours_s, 5.0):
            for _ in range(200):
                peer.run_iteration()
            n += 200
        theirs.append(n / el)
    o, p = statistics.median(ours), statistics.median(theirs)
    return {
        "what": "speed",
        "trainer": kind.__name__.lower(),
        "weighting": weighting,
        "game": "leduc.limit.3p",
        "ours_it_s": [round(x) for x in ours],
        "openspiel_it_s": [round(x) for x in theirs],
        "ratio_of_medians": round(o / p, 1),
    }


def threads_check(game: NPlayerGame, iterations: int, seed: int) -> list[dict]:
    """The production trainer on 3-player Leduc (``vanilla``): one thread, two threads as the
    trainer runs them (the shared table: ``blueprint.threads.COPY_MIN_HOT_SPAN``), and two threads
    forced onto copies; wall iterations/s over ``iterations`` after as many to warm up, and the
    NashConv reached."""
    import blueprint.trainer as trainer_mod
    from blueprint.trainer import make_trainer

    rows = []
    for label, threads, forced in (
        ("one thread", 1, False),
        ("two threads", 2, False),
        ("two, copies", 2, True),
    ):
        saved = trainer_mod.use_copies
        if forced:
            trainer_mod.use_copies = lambda entries, nbytes, hot_span=None, threads=None: True
        try:
            tr = make_trainer("leduc.limit.3p", algo="vanilla", seed=seed, threads=threads)
            tr._best_response = TablesNashConv(tr.tree, tr.cards, tr.row_offset, game)
            tr.run(iterations)
            t = time.perf_counter()
            tr.run(iterations)
            el = time.perf_counter() - t
            on_copies = tr.copies_used(iterations)
        finally:
            trainer_mod.use_copies = saved
        row = {"what": "threads", "mode": label, "on_copies": on_copies, "it_s": round(iterations / el)}
        rows.append({**row, "iterations": 2 * iterations, "nash_conv": tr.exploitability()[0]})
    return rows


def openspiel_check(game: NPlayerGame) -> dict:
    import pyspiel

    os_game = pyspiel.load_game("leduc_poker(players=3)")
    rng = np.random.default_rng(0)
    nact = np.diff(game.tree.ioff)
    w = rng.random(game.num_actions_total) + 0.01
    pol = w / np.repeat(np.add.reduceat(w, game.tree.ioff[:-1]), nact)
    t = time.perf_counter()
    ours = nash_conv(game, pol)
    ours_s = time.perf_counter() - t
    theirs_pol = openspiel_policy(os_game, game, pol)
    t = time.perf_counter()
    theirs = pyspiel.nash_conv(os_game, theirs_pol)
    return {
        "what": "nash_conv_vs_openspiel",
        "game": "leduc.limit.3p",
        "ours": ours,
        "ours_s": round(ours_s, 3),
        "openspiel": theirs,
        "openspiel_s": round(time.perf_counter() - t, 1),
        "abs_diff": abs(ours - theirs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kuhn", default="1000,10000,100000,1000000", help="iteration counts of the curve")
    ap.add_argument("--leduc", default="10000,100000,1000000", help="iteration counts of the curve")
    ap.add_argument("--weightings", default="linear", help="linear, dcfr, uniform (comma-separated)")
    ap.add_argument("--speed-iterations", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--openspiel-nashconv", action="store_true", help="pyspiel.nash_conv check (minutes)")
    ap.add_argument(
        "--trainer",
        choices=("flat", "production"),
        default="flat",
        help="the small-game solver (blueprint.nplayer) or the production trainer (--weightings: --algo names)",
    )
    ap.add_argument(
        "--threads-check",
        type=int,
        default=0,
        metavar="N",
        help="also 3p Leduc's production trainer on 1 and 2 threads (shared, copies): N iterations timed",
    )
    ap.add_argument("--json", action="store_true", help="only the JSON rows")
    args = ap.parse_args()
    kind = Flat if args.trainer == "flat" else Production
    rows = [{"what": "machine", **machine_row()}]
    emit(rows[0])
    games = {}
    for name in ("kuhn.limit.3p", "leduc.limit.3p"):
        games[name], row = flatten(name)
        rows.append(row)
        emit(row)
    for name, steps in (("kuhn.limit.3p", _ints(args.kuhn)), ("leduc.limit.3p", _ints(args.leduc))):
        for weighting in args.weightings.split(","):
            for row in curve(games[name], name, steps, args.seed, weighting, kind):
                rows.append(row)
                emit(row)
    w0 = args.weightings.split(",")[0]
    rows.append(speed(games["leduc.limit.3p"], args.speed_iterations, args.rounds, args.seed, kind, w0))
    emit(rows[-1])
    if args.threads_check:
        for row in threads_check(games["leduc.limit.3p"], args.threads_check, args.seed):
            rows.append(row)
            emit(row)
    if args.openspiel_nashconv:
        rows.append(openspiel_check(games["leduc.limit.3p"]))
        emit(rows[-1])
    rows.append({"what": "load_after", "load": load()})
    emit(rows[-1])
    if args.json:
        return
    print()
    for r in rows:
        if r["what"] == "curve":
            print(
                f"{r['trainer']:10s} {r['game']:15s} {r['weighting']:8s} {r['iterations']:>10,d} it {r['kernel_s']:7.2f} s  NashConv {r['nash_conv']:.6f}"
            )
        elif r["what"] == "speed":
            print(
                f"3p Leduc it/s: ours {r['ours_it_s']}, OpenSpiel C++ ES {r['openspiel_it_s']},"
                f" ratio {r['ratio_of_medians']}x"
            )
        elif r["what"] == "threads":
            print(
                f"3p Leduc {r['mode']:12s} {r['it_s']:>9,d} it/s, NashConv {r['nash_conv']:.4f} at {r['iterations']:,}"
            )
        elif r["what"] == "nash_conv_vs_openspiel":
            print(
                f"3p Leduc NashConv: ours {r['ours']!r}, OpenSpiel {r['openspiel']!r}, diff {r['abs_diff']:.1e}"
            )


if __name__ == "__main__":
    main()
