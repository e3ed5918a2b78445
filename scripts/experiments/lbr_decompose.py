"""Where LBR's winnings against a blueprint come from (by LBR's last raise, the source of the
opponent's answers and what it answered).

    python scripts/experiments/lbr_decompose.py RUN_DIR [RUN_DIR ...] [--hands 1200] [--seed 7] [--out DIR]

Plays LBR (``fcpa``, the menu in every round, as ``mccfr eval --lbr``) against each blueprint on
the same deals (one seed deals the same cards to every run, as in ``scripts/benchmarks/bench_lbr.py``; each
hand's opponent and LBR samples come from generators seeded by the seed and the hand, so a hand
that two runs, or two versions of the code, answer alike scores alike) and records, per hand, LBR's actions and the opponent's answers, then splits LBR's winnings (mbb per
hand of the whole sample, so the rows of a table add up to LBR's value):

* by LBR's last raise of the hand (its round and size: pot or all-in; ``none`` when LBR only
  checked, called or folded);
* by where the opponent's answers came from (:data:`blueprint.blueprint.SOURCES`): the worst label
  of the hand, ``fallback`` (the abstract tree has no node for the history: LBR's raise was the
  third of a round), ``translated`` or ``blueprint``;
* by what the opponent did after LBR's last raise (fold, call, re-raise; all-ins that end the hand
  are Rao-Blackwellised by LBR, so their fold share is the posterior's fold probability).

It also prints the opponent's answers to LBR's raises by round, size and source: the
range-weighted probability of fold / call / raise at the states LBR's raises create (the
posterior of the opponent's hand given the history, as LBR tracks it). With two runs, the paired
change on the same deals (95% interval).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import types
from pathlib import Path

import numpy as np

from abstraction.tree import KIND_DECISION
from blueprint.blueprint import Blueprint
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr_util.reporting import ci95, mbb_per_chip

ROUNDS = ("pre", "flop", "turn", "river")


def source_of(bp: Blueprint, betting) -> tuple[str, float]:
    """The label :meth:`Blueprint.answer` gives at real ``betting`` (the opponent to act) and the
    probability that its translated history has no decision node there (the fallback's share)."""
    t = bp.tree
    actor = betting.current_player()
    fb = 0.0
    for n, q in bp.node_distribution(betting):
        if (
            n < 0
            or t.kind[n] != KIND_DECISION
            or int(t.player[n]) != actor
            or int(t.round[n]) != betting.round
        ):
            fb += q
    if fb > 0.5:
        return "fallback", fb
    w = bp._walk(types.SimpleNamespace(viewer=actor, betting=betting), None)
    return ("translated" if w.translated else "blueprint"), fb


def raise_size(state, action: str) -> str:
    """``pot`` or ``allin`` for an LBR raise ``r<to>``."""
    to = int(action[1:])
    me = state.current_player()
    return "allin" if to >= state.game.gamedef.stack[me] else "pot"


class Recorder:
    """Wraps one LocalBestResponse's decide / opponent act / all-in response / play_hand."""

    def __init__(self, lbr: LocalBestResponse, bp: Blueprint, seed: int, solver=None, solve_max: int = 0):
        self.lbr, self.bp = lbr, bp
        self.solver, self.solve_max = solver, solve_max
        self.seed = seed
        self.solved: list[tuple] = []  # (lbr size, source, blueprint f/c/r, solved f/c/r)
        self.hands: list[dict] = []
        self.answers: list[tuple] = []  # (round, lbr size, source, p_fold, p_call, p_raise, fallback share)
        self.cur: dict = {}
        decide, act, resp, play = lbr.decide, lbr.opp.act, lbr._expected_response, lbr.play_hand
        opp = lbr.opp

        def my_decide(state, weights, rng):
            a = decide(state, weights, rng)
            self.cur["weights"] = weights
            if a.startswith("r"):
                size = raise_size(state, a)
                self.cur["last_raise"] = (state.round, size, state.betting.num_raises())
                self.cur["after"] = None
                self._record_answer(state.apply(a), weights, state.round, size)
            return a

        def my_act(state, hand, rng):
            a, lik = act(state, hand, rng)
            src, _ = source_of(bp, state.betting)
            self.cur["worst"] = max(self.cur["worst"], ("blueprint", "translated", "fallback").index(src))
            if self.cur.get("last_raise") is not None and self.cur.get("after") is None:
                self.cur["after"] = {"f": "fold", "c": "call"}.get(a[0], "reraise")
            return a, lik

        def my_resp(state, seat, weights, seed):
            src, _ = source_of(bp, state.betting)
            self.cur["worst"] = max(self.cur["worst"], ("blueprint", "translated", "fallback").index(src))
            if self.cur.get("after") is None:
                self.cur["after"] = "allin-answer (RB)"
            return resp(state, seat, weights, seed)

        def my_play(deal, seat, rng_opp, rng_lbr, hand_id=0):
            self.cur = {"worst": 0, "last_raise": None, "after": None}
            # common random numbers: each hand's samples from its own generators, so a hand that
            # two blueprints (or two versions of the code) answer alike scores alike
            seeds = np.random.SeedSequence([self.seed, hand_id]).spawn(2)
            rng_opp, rng_lbr = (np.random.default_rng(s) for s in seeds)
            v = play(deal, seat, rng_opp, rng_lbr, hand_id)
            self.cur["value"] = v
            self.cur["seat"] = seat
            self.cur.pop("weights", None)
            self.hands.append(self.cur)
            return v

        lbr.decide, opp.act, lbr._expected_response, lbr.play_hand = my_decide, my_act, my_resp, my_play

    def _record_answer(self, after, weights, rnd: int, size: str) -> None:
        """The opponent's range-weighted answer to LBR's raise at state ``after``."""
        if after.current_player() not in (0, 1):
            return
        keys, P = self.lbr.opp.action_probs(after)
        w = weights / weights.sum()
        pf = float(w @ P[:, keys.index("f")]) if "f" in keys else 0.0
        pc = float(w @ P[:, keys.index("c")]) if "c" in keys else 0.0
        src, fb = source_of(self.bp, after.betting)
        nr = after.betting.num_raises()
        self.answers.append((rnd, size, src, pf, pc, 1.0 - pf - pc, fb, nr))
        if self.solver is not None and rnd == 3 and len(self.solved) < self.solve_max:
            keys2, P2 = self.solver.action_probs(after)
            sf = float(w @ P2[:, keys2.index("f")]) if "f" in keys2 else 0.0
            sc = float(w @ P2[:, keys2.index("c")]) if "c" in keys2 else 0.0
            self.solved.append((size, src, (pf, pc, 1.0 - pf - pc), (sf, sc, 1.0 - sf - sc)))


def table(rows: list[tuple[str, np.ndarray]], n: int, scale: float, title: str) -> None:
    print(f"\n{title}\n")
    print(
        "| group | hands | share | LBR from the group (mbb per hand of the sample) | mean per hand in group |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, v in rows:
        if len(v):
            print(
                f"| {name} | {len(v):,} | {len(v) / n:.1%} | {v.sum() * scale / n:+,.0f} | {v.mean() * scale:+,.0f} |"
            )


def report(rec: Recorder, scale: float, name: str) -> dict:
    H = rec.hands
    n = len(H)
    vals = np.array([h["value"] for h in H])
    print(f"\n## {name}: LBR {vals.mean() * scale:+,.0f} mbb/game over {n:,} hands")
    groups: dict = collections.defaultdict(list)
    for h in H:
        lr = h["last_raise"]
        key = "none" if lr is None else f"{ROUNDS[lr[0]]} {lr[1]} (raise #{lr[2] + 1} of the round)"
        groups[key].append(h["value"])
    table(sorted((k, np.array(v)) for k, v in groups.items()), n, scale, "By LBR's last raise of the hand")
    src: dict = collections.defaultdict(list)
    for h in H:
        src[("blueprint", "translated", "fallback")[h["worst"]]].append(h["value"])
    table(
        sorted((k, np.array(v)) for k, v in src.items()),
        n,
        scale,
        "By the worst source of the opponent's answers",
    )
    aft: dict = collections.defaultdict(list)
    for h in H:
        lr = h["last_raise"]
        if lr is not None:
            aft[f"{ROUNDS[lr[0]]} {lr[1]} -> {h['after']}"].append(h["value"])
    table(
        sorted((k, np.array(v)) for k, v in aft.items()),
        n,
        scale,
        "By the opponent's answer to LBR's last raise",
    )
    print("\nOpponent's answers at the states LBR's raises create (range-weighted over LBR's posterior)\n")
    print("| LBR raise | source | count | fold | call | raise | fallback share |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ans: dict = collections.defaultdict(list)
    for rnd, size, s, pf, pc, pr, fb, _ in rec.answers:
        ans[(rnd, size, s)].append((pf, pc, pr, fb))
    for (rnd, size, s), v in sorted(ans.items()):
        a = np.array(v)
        print(
            f"| {ROUNDS[rnd]} {size} | {s} | {len(a):,} | {a[:, 0].mean():.2f} | {a[:, 1].mean():.2f} | "
            f"{a[:, 2].mean():.2f} | {a[:, 3].mean():.2f} |"
        )
    if rec.solved:
        print("\nRiver: the blueprint's answer to LBR's raise against a safe re-solve at the same state")
        print("(`reach-maxmargin`, the blueprint's ranges; both weighted by LBR's posterior)\n")
        print("| LBR raise | source | states | blueprint fold / call / raise | solved fold / call / raise |")
        print("|---|---|---:|---:|---:|")
        by: dict = collections.defaultdict(list)
        for size, s, b, r in rec.solved:
            by[(size, s)].append(b + r)
        for (size, s), v in sorted(by.items()):
            a = np.array(v).mean(axis=0)
            print(
                f"| river {size} | {s} | {len(v)} | {a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f} | {a[3]:.2f} / {a[4]:.2f} / {a[5]:.2f} |"
            )
    return {"vals": vals}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--hands", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--solve-river", type=int, default=0, metavar="K", help="re-solve the first K river answer states"
    )
    ap.add_argument("--solve-iterations", type=int, default=150)
    ap.add_argument(
        "--out", default=None, help="save per-deal values (mbb, both seats) as DIR/<run><tag>.npy"
    )
    ap.add_argument("--tag", default="", help="suffix of the saved file names")
    args = ap.parse_args()
    per_pair = {}
    for run in args.runs:
        bp = Blueprint.load(run)
        lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="menu")
        solver = None
        if args.solve_river:
            from mccfr.evaluation.lbr_solving import SolvingOpponent

            solver = SolvingOpponent(bp, lbr.hands, iterations=args.solve_iterations)
        rec = Recorder(lbr, bp, args.seed, solver, args.solve_river)
        res = lbr.run(args.hands, seed=args.seed)
        scale = mbb_per_chip(bp.gamedef.big_blind)
        print(f"\n{run}: {bp.iteration:,} iterations; LBR {res.lbr:+,.0f} +- {res.lbr_ci95:,.0f} mbb/game")
        report(rec, scale, Path(run).name)
        per_pair[run] = res.per_pair * scale
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.out) / f"{Path(run).name}{args.tag}.npy", per_pair[run])
        sys.stdout.flush()
    runs = list(per_pair)
    for a, b in zip(runs, runs[1:]):
        d = per_pair[b] - per_pair[a]
        print(
            f"\npaired change {Path(a).name} -> {Path(b).name}: {d.mean():+,.0f} +- {ci95(d):,.0f} mbb/game"
        )
    print(json.dumps({Path(r).name: float(v.mean()) for r, v in per_pair.items()}))


if __name__ == "__main__":
    main()
