"""Where LBR's winnings come from: against a blueprint, and against blueprint + subgame solving on
the same deals (by round, LBR's action, LBR's last raise, the source of the opponent's answers and
what it answered), with the paired change per row.

    python scripts/experiments/lbr_decompose.py RUN_DIR [RUN_DIR ...] [--hands 1200] [--seed 7]
        [--opponents blueprint,solve] [--lbr-setting call/call] [--solve-from turn]
        [--method reach-maxmargin] [--solve-iterations 100] [--out DIR] [--tag T] [--jobs N]
    python scripts/experiments/lbr_decompose.py --report DIR/A.jsonl DIR/B.jsonl [...]

Plays LBR (``fcpa``; ``--lbr-setting`` as in ``scripts/experiments/lbr_solving.py``: the menu in
every round by default, ``call/call`` for Lisy & Bowling's setting (2)) against each opponent of
each run on the same deals (one seat deals the same cards to every run, as in
``scripts/benchmarks/bench_lbr.py``; each hand's opponent and LBR samples come from generators
seeded by the seed and the hand, so a hand that two opponents, or two versions of the code,
answer alike scores alike). ``--opponents``: ``blueprint`` (the run's blueprint) and ``solve``
(blueprint + subgame solving, :class:`mccfr.evaluation.solving.SolvingPlayer` with ``--method``,
``--solve-iterations`` a solve, from ``--solve-from``; LBR models it by
:class:`mccfr.evaluation.lbr_solving.SolvingOpponent`), and ``solve:METHOD:ITERATIONS`` for more
solving players on the same deals (``solve:unsafe:100``, ``solve:reach-maxmargin:50``). Pairs are
played in this process, one at a time, or with ``--jobs N`` (and ``--out``) in N forked processes
(:meth:`mccfr.evaluation.lbr.LocalBestResponse.run`'s), each appending its hands' records to the
same file as they finish (one ``write`` a line, in append mode), with the values of one process.

Each hand is recorded (LBR's actions, the opponent's answers and their sources, how the hand
ended, its value) and, with ``--out``, written as it finishes to ``DIR/<run>-<opponent><tag>.jsonl``
(the run's pairs also go to an LBR log beside it, so a stopped run continues where it stopped:
give the same command again). ``--report FILE ...`` reads such files (the first is the
baseline) and prints the tables without playing: a partial run reports the pairs every file has.

The tables split LBR's winnings (mbb per hand of the whole sample, so a table's rows add up to
LBR's value) into groups of hands; each opponent's hands fall into its own groups (the same deal
can end differently against two opponents), so each row's paired change is the per-deal
difference of the group's contributions (each deal's two seats averaged; a row's changes add up
to the total change) with its 95% interval over the deals:

* by the round the hand ended in and how (LBR folded, the opponent folded, a showdown, or LBR's
  all-in answered: Rao-Blackwellised over the opponent's fold and call);
* by LBR's last action of the hand (its round and kind: fold, check/call, pot, all-in);
* by LBR's last raise of the hand (its round and size; ``none`` when LBR only checked, called or
  folded);
* by the source of the opponent's answer to LBR's last raise, and by the sources of all its
  answers on the rounds it solves: ``blueprint``, ``translated`` or ``fallback`` (the blueprint's
  labels, :data:`blueprint.blueprint.SOURCES`: before the solving round, or for the blueprint
  alone), ``subgame reused`` (the state lies in the hand's solved subgame: LBR's action is on the
  solver's bet tree), ``subgame new`` (the round's first solve), ``subgame re-solved`` (a subgame of
  the round was solved before but LBR's action is off its bet tree: solved again), each with how
  the subgame was rooted (:func:`root_kind`: ``nested`` after the opponent's off-tree action,
  ``own off-tree``, or ``dead end`` / ``unsafe: off-tree earlier``: rooted at the state and solved
  unsafe), and ``no subgame: <label>`` (no subgame fits: the blueprint's answer);
* by what the opponent did after LBR's last raise (fold, call, re-raise; all-ins that end the hand
  are Rao-Blackwellised by LBR, so their fold share is the posterior's fold probability).

It also prints the opponent's answers to LBR's raises by round, size and source: the
range-weighted probability of fold / call / raise at the states LBR's raises create (the
posterior of the opponent's hand given the history, as LBR tracks it). With ``--solve-river K``
the blueprint's answers at the first K river raise states are compared with a fresh re-solve.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import types
from pathlib import Path
from typing import Optional

import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.tree import KIND_DECISION
from blueprint.blueprint import Blueprint
from mccfr.evaluation.lbr import LocalBestResponse
from mccfr_util.reporting import Z95, ci95, mbb_per_chip
from subgame.cache import node_in

if __package__:  # imported as scripts.experiments.lbr_decompose
    from .lbr_solving import LB
else:  # run as a script: this folder is sys.path[0]
    from lbr_solving import LB

ROUNDS = ("pre", "flop", "turn", "river")
SOLVE_FROM = {"pre": 0, "flop": 1, "turn": 2, "river": 3}


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


def action_kind(state, action: str) -> str:
    if action == "f":
        return "fold"
    if action[0] == "c":
        return "check/call"
    return raise_size(state, action)


def root_kind(bp: Blueprint, view) -> str:
    """How :func:`subgame.nested.state_subgame` roots the subgame of ``view``: on the blueprint's
    tree (``""``), ``(nested)`` after the opponent's off-tree action of the round, ``(own
    off-tree)`` re-solved from the viewer's own off-tree action of the round (a subgame's finer
    size), or ``(dead end)`` / ``(unsafe: off-tree earlier)``: rooted at the state itself, solved
    unsafe (no blueprint values), when the tree has no node for the history or its first off-tree
    action was in an earlier round."""
    from subgame.nested import _flat, first_off_tree

    if bp.walk(view).dead_end is not None:
        return " (dead end)"
    try:
        off = first_off_tree(bp, view)
    except Exception:
        return " (dead end)"
    if off is None:
        return ""
    if _flat(view.betting)[off[1]][0] < view.betting.round:
        return " (unsafe: off-tree earlier)"
    return " (nested)" if int(bp.tree.player[off[0]]) != view.viewer else " (own off-tree)"


class SourceLabels:
    """Labels where each of a :class:`~mccfr.evaluation.lbr_solving.SolvingOpponent`'s answers came
    from (see the module docstring): wraps its ``_solution`` and keeps the last call's label."""

    def __init__(self, opp, bp: Blueprint):
        self.opp, self.bp, self.last = opp, bp, "?"
        orig = opp._solution

        def labelled(view, real: bool):
            prior = opp.subgame((view.hand_id, view.viewer))  # the hand's subgame, if any
            if prior is not None and node_in(prior, view) is not None:
                self.last = "subgame reused"
                return orig(view, real)
            if not opp.policy.solves(view):
                self.last = source_of(bp, view.betting)[0]
                return orig(view, real)
            res = orig(view, real)
            if res is None:
                self.last = "no subgame: " + source_of(bp, view.betting)[0]
                return res
            same_round = (
                prior is not None
                and prior.tree.root_betting.round == view.round
                and len(view.board_cards) == bp.gamedef.board_cards_through(view.round)
            )
            label = "subgame re-solved" if same_round else "subgame new"
            self.last = label + root_kind(bp, view)
            return res

        opp._solution = labelled


class Recorder:
    """Wraps one LocalBestResponse's decide / opponent act / all-in response / play_hand and records
    each hand (appended as a JSON line to the file ``sink`` when given: by whichever process plays
    it, LBR's forked workers included, each line one ``write`` to a file opened for appending, so
    the lines of several processes never mix)."""

    def __init__(
        self,
        lbr: LocalBestResponse,
        bp: Blueprint,
        seed: int,
        solver=None,
        solve_max: int = 0,
        sink: str | Path | None = None,
    ):
        self.lbr, self.bp = lbr, bp
        self.solver, self.solve_max = solver, solve_max
        self.seed = seed
        self.sink = sink
        self._fd: Optional[tuple[int, int]] = None  # (pid, fd) of this process's open sink
        self.solved: list[tuple] = []  # (lbr size, source, blueprint f/c/r, solved f/c/r)
        self.hands: list[dict] = []
        self.cur: dict = {}
        opp = lbr.opp
        self.labels = SourceLabels(opp, bp) if hasattr(opp, "_solution") else None
        decide, act, resp, play = lbr.decide, opp.act, lbr._expected_response, lbr.play_hand

        def label(state) -> str:
            if self.labels is not None:
                return self.labels.last
            return source_of(bp, state.betting)[0]

        def my_decide(state, weights, rng):
            a = decide(state, weights, rng)
            kind = action_kind(state, a)
            self.cur["last_action"] = [state.round, kind]
            self.cur["end"] = [state.round, "LBR folded" if a == "f" else "showdown"]
            if a.startswith("r"):
                self.cur["last_raise"] = [state.round, kind, state.betting.num_raises()]
                self.cur["after"] = None
                self._record_answer(state.apply(a), weights, state.round, kind, label)
            return a

        def my_act(state, hand, rng):
            a, lik = act(state, hand, rng)
            self.cur["sources"].append([state.round, label(state)])
            if self.cur.get("last_raise") is not None and self.cur.get("after") is None:
                self.cur["after"] = {"f": "fold", "c": "call"}.get(a[0], "reraise")
            self.cur["end"] = [state.round, "opponent folded" if a == "f" else "showdown"]
            return a, lik

        def my_resp(state, seat, weights, seed):
            v = resp(state, seat, weights, seed)
            self.cur["sources"].append([state.round, label(state)])
            if self.cur.get("after") is None:
                self.cur["after"] = "allin-answer (RB)"
            self.cur["end"] = [state.round, "all-in answered (RB)"]
            return v

        def my_play(deal, seat, rng_opp, rng_lbr, hand_id=0):
            self.cur = {
                "hand": int(hand_id),
                "pair": int(hand_id) // 2,
                "seat": int(seat),
                "last_raise": None,
                "last_action": None,
                "after": None,
                "src_last_raise": None,
                "sources": [],
                "answers": [],
                "end": None,
            }
            # common random numbers: each hand's samples from its own generators, so a hand that
            # two opponents (or two versions of the code) answer alike scores alike
            seeds = np.random.SeedSequence([self.seed, hand_id]).spawn(2)
            rng_opp, rng_lbr = (np.random.default_rng(s) for s in seeds)
            v = play(deal, seat, rng_opp, rng_lbr, hand_id)
            self.cur["value"] = float(v)
            self.hands.append(self.cur)
            if self.sink is not None:
                self.write(self.cur)
            return v

        lbr.decide, opp.act, lbr._expected_response, lbr.play_hand = my_decide, my_act, my_resp, my_play

    def write(self, record: dict) -> None:
        """``record`` as one line of the sink, in one ``write`` (a forked worker opens its own)."""
        assert self.sink is not None
        if self._fd is None or self._fd[0] != os.getpid():
            self._fd = (os.getpid(), os.open(self.sink, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        line = (json.dumps(record) + "\n").encode()
        if os.write(self._fd[1], line) != len(line):
            raise OSError(f"a record was cut short writing {self.sink}")

    def close(self) -> None:
        if self._fd is not None and self._fd[0] == os.getpid():
            os.close(self._fd[1])
        self._fd = None

    def _record_answer(self, after, weights, rnd: int, size: str, label) -> None:
        """The opponent's range-weighted answer to LBR's raise at state ``after``."""
        if after.current_player() not in (0, 1):
            return
        keys, P = self.lbr.opp.action_probs(after)
        src = label(after)
        self.cur["src_last_raise"] = src
        w = weights / weights.sum()
        pf = float(w @ P[:, keys.index("f")]) if "f" in keys else 0.0
        pc = float(w @ P[:, keys.index("c")]) if "c" in keys else 0.0
        _, fb = source_of(self.bp, after.betting)
        nr = after.betting.num_raises()
        self.cur["answers"].append([rnd, size, src, pf, pc, 1.0 - pf - pc, fb, nr])
        if self.solver is not None and rnd == 3 and len(self.solved) < self.solve_max:
            keys2, P2 = self.solver.action_probs(after)
            sf = float(w @ P2[:, keys2.index("f")]) if "f" in keys2 else 0.0
            sc = float(w @ P2[:, keys2.index("c")]) if "c" in keys2 else 0.0
            self.solved.append((size, src, (pf, pc, 1.0 - pf - pc), (sf, sc, 1.0 - sf - sc)))


# -- the groups ----------------------------------------------------------------------------------


def g_end(h: dict) -> str:
    e = h["end"]
    return "?" if e is None else f"{ROUNDS[e[0]]}: {e[1]}"


def g_round(h: dict) -> str:
    e = h["end"]
    return "?" if e is None else ROUNDS[e[0]]


def g_action(h: dict) -> str:
    a = h["last_action"]
    return "LBR never acted" if a is None else f"{ROUNDS[a[0]]} {a[1]}"


def g_raise(h: dict) -> str:
    lr = h["last_raise"]
    return "none" if lr is None else f"{ROUNDS[lr[0]]} {lr[1]} (raise #{lr[2] + 1} of the round)"


def g_raise_coarse(h: dict) -> str:
    lr = h["last_raise"]
    return "none" if lr is None else f"{ROUNDS[lr[0]]} {lr[1]}"


def g_src_raise(h: dict) -> str:
    lr = h["last_raise"]
    return "no LBR raise" if lr is None else f"{ROUNDS[lr[0]]} {lr[1]}: {h['src_last_raise']}"


def g_src_coarse(h: dict) -> str:
    """:func:`g_src_raise` without the round, size and the subgame's rooting."""
    lr = h["last_raise"]
    return "no LBR raise" if lr is None else str(h["src_last_raise"]).split(" (")[0]


def make_g_unsafe(from_round: int):
    def g_unsafe(h: dict) -> str:
        labs = [s for r, s in h["sources"] if r >= from_round]
        if any("dead end" in s or "unsafe" in s for s in labs):
            return "some answer from a subgame rooted at the state (solved unsafe)"
        if any(s.startswith("no subgame") for s in labs):
            return "some answer from the blueprint (no subgame fits)"
        return "every answer safe (or the blueprint's, before the solving round)"

    return g_unsafe


def make_g_sources(from_round: int):
    def g_sources(h: dict) -> str:
        labs = sorted({s for r, s in h["sources"] if r >= from_round})
        return "no answer" if not labs else " + ".join(labs)

    return g_sources


def g_after(h: dict) -> str:
    lr = h["last_raise"]
    return "no LBR raise" if lr is None else f"{ROUNDS[lr[0]]} {lr[1]} -> {h['after']}"


# -- the report ----------------------------------------------------------------------------------


def load_jsonl(path: str | Path) -> list[dict]:
    """A file's hands, the last record of each hand kept (a pair played again after a stop)."""
    by: dict[int, dict] = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                h = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a stop
            by[int(h["hand"])] = h
    return [by[k] for k in sorted(by)]


def complete_pairs(hands: list[dict]) -> dict[int, list[dict]]:
    by: dict[int, list[dict]] = collections.defaultdict(list)
    for h in hands:
        by[h["pair"]].append(h)
    return {j: sorted(v, key=lambda h: h["seat"]) for j, v in by.items() if len(v) == 2}


def deals_needed(d: np.ndarray) -> float:
    m, sd = abs(float(d.mean())), float(d.std(ddof=1))
    return math.inf if m == 0 else (Z95 * sd / m) ** 2


def fmt(x: float) -> str:
    return f"{x:+,.0f}"


def group_matrix(pairs: dict[int, list[dict]], order: list[int], key, scale: float) -> dict[str, np.ndarray]:
    """``{group: per-deal contribution (mbb, the deal's two seats averaged)}``."""
    out: dict[str, np.ndarray] = {}
    for i, j in enumerate(order):
        for h in pairs[j]:
            k = key(h)
            if k not in out:
                out[k] = np.zeros(len(order))
            out[k][i] += h["value"] * scale / 2.0
    return out


def compare_table(
    names: list[str], pairs: dict[str, dict], order: list[int], key, scale: float, title: str
) -> None:
    """One table: a row per group, per opponent its hands and contribution, and each opponent's
    paired change against the first."""
    mats = {n: group_matrix(pairs[n], order, key, scale) for n in names}
    counts = {n: collections.Counter(key(h) for j in order for h in pairs[n][j]) for n in names}
    groups = sorted(set().union(*(m.keys() for m in mats.values())))
    n = len(order)
    base = names[0]
    head = "| group | " + " | ".join(f"{x}: hands | {x}: LBR from group" for x in names)
    head += "".join(f" | {x} - {base} (paired)" for x in names[1:]) + " |"
    print(f"\n{title}\n")
    print(head)
    print("|---|" + "---:|---:|" * len(names) + "---:|" * (len(names) - 1))
    zero = np.zeros(n)
    for gname in groups:
        cells = []
        for x in names:
            v = mats[x].get(gname, zero)
            cells.append(f"{counts[x].get(gname, 0):,} | {fmt(v.mean())}")
        for x in names[1:]:
            d = mats[x].get(gname, zero) - mats[base].get(gname, zero)
            cells.append(f"{fmt(d.mean())} +- {ci95(d):,.0f}" if n > 1 else fmt(d.mean()))
        print(f"| {gname} | " + " | ".join(cells) + " |")


def report(named: dict[str, list[dict]], scale: float, from_round: int = 2) -> dict:
    """The tables for opponents ``named`` (``{name: hands}``, the first the baseline) over the deals
    every one of them has both seats of."""
    names = list(named)
    pairs = {n: complete_pairs(h) for n, h in named.items()}
    common = sorted(set.intersection(*(set(p) for p in pairs.values())))
    n = len(common)
    if n == 0:
        print("no deal is complete for every opponent")
        return {}
    per_deal = {
        x: np.array([np.mean([h["value"] for h in pairs[x][j]]) * scale for j in common]) for x in names
    }
    print(f"\n## LBR over {n:,} deals ({2 * n:,} hands), mbb/game, 95% intervals over the deals\n")
    out: dict = {"deals": n}
    for x in names:
        v = per_deal[x]
        print(f"- {x}: {fmt(v.mean())} +- {ci95(v):,.0f}")
        out[x] = {"lbr": float(v.mean()), "ci95": ci95(v)}
    for x in names[1:]:
        d = per_deal[x] - per_deal[names[0]]
        need = deals_needed(d)
        print(
            f"- paired {x} - {names[0]}: {fmt(d.mean())} +- {ci95(d):,.0f} "
            f"(per-deal sd {d.std(ddof=1):,.0f}; deals to separate this difference from 0: {need:,.0f})"
        )
        out[x].update(paired=float(d.mean()), paired_ci95=ci95(d), deals_to_separate=need)
    compare_table(names, pairs, common, g_round, scale, "By the round the hand ended in")
    compare_table(names, pairs, common, g_end, scale, "By the round the hand ended in and how")
    compare_table(names, pairs, common, g_action, scale, "By LBR's last action of the hand")
    compare_table(
        names, pairs, common, g_raise_coarse, scale, "By LBR's last raise of the hand (round and size)"
    )
    compare_table(names, pairs, common, g_raise, scale, "By LBR's last raise of the hand")
    compare_table(
        names, pairs, common, g_src_raise, scale, "By the source of the opponent's answer to LBR's last raise"
    )
    compare_table(
        names, pairs, common, g_src_coarse, scale, "The same, by source alone (every round and size)"
    )
    compare_table(
        names,
        pairs,
        common,
        make_g_unsafe(from_round),
        scale,
        f"By whether a subgame solved unsafe answered from the {ROUNDS[from_round]} on",
    )
    compare_table(
        names,
        pairs,
        common,
        make_g_sources(from_round),
        scale,
        f"By the sources of the opponent's answers from the {ROUNDS[from_round]} on (each hand: every label it met)",
    )
    compare_table(names, pairs, common, g_after, scale, "By the opponent's answer to LBR's last raise")
    print("\nOpponent's answers at the states LBR's raises create (range-weighted over LBR's posterior)\n")
    print("| opponent | LBR raise | source | count | fold | call | raise | blueprint fallback share |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for x in names:
        ans: dict = collections.defaultdict(list)
        for j in common:
            for h in pairs[x][j]:
                for rnd, size, s, pf, pc, pr, fb, _ in h["answers"]:
                    ans[(rnd, size, s)].append((pf, pc, pr, fb))
        for (rnd, size, s), v in sorted(ans.items()):
            a = np.array(v)
            print(
                f"| {x} | {ROUNDS[rnd]} {size} | {s} | {len(a):,} | {a[:, 0].mean():.2f} | {a[:, 1].mean():.2f} | "
                f"{a[:, 2].mean():.2f} | {a[:, 3].mean():.2f} |"
            )
    sys.stdout.flush()
    return out


def river_table(rec: Recorder) -> None:
    if not rec.solved:
        return
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


def parse_opponents(text: str, method: str, iterations: int) -> list[tuple[str, Optional[tuple[str, int]]]]:
    """``[(name, None | (method, iterations))]`` of ``--opponents``."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if part == "blueprint":
            out.append(("blueprint", None))
        elif part == "solve":
            out.append((f"solve-{method}-{iterations}", (method, iterations)))
        elif part.startswith("solve:"):
            bits = part.split(":")
            if len(bits) != 3 or not bits[2].isdigit():
                raise SystemExit(f"--opponents {part!r}: expected solve:METHOD:ITERATIONS")
            out.append((f"solve-{bits[1]}-{bits[2]}", (bits[1], int(bits[2]))))
        else:
            raise SystemExit(f"--opponents {part!r}: expected blueprint, solve or solve:METHOD:ITERATIONS")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--hands", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--opponents",
        default="blueprint",
        help="comma list: blueprint, solve (--method, --solve-iterations), solve:METHOD:ITERATIONS",
    )
    ap.add_argument("--lbr-setting", default="menu/menu", choices=list(LB))
    ap.add_argument("--solve-from", default="turn", choices=list(SOLVE_FROM))
    ap.add_argument("--method", default="reach-maxmargin")
    ap.add_argument(
        "--solve-river", type=int, default=0, metavar="K", help="re-solve the first K river answer states"
    )
    ap.add_argument("--solve-iterations", type=int, default=150)
    ap.add_argument(
        "--out",
        default=None,
        help="DIR: per-hand records DIR/<run>-<opponent><tag>.jsonl (as they finish), an LBR log to "
        "continue from, and per-deal values DIR/<run><tag>.npy (the blueprint's)",
    )
    ap.add_argument("--tag", default="", help="suffix of the saved file names")
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="forked processes that play pairs at once (more than 1 needs --out: the records are read back "
        "from its files)",
    )
    ap.add_argument("--report", nargs="+", default=None, metavar="JSONL", help="report from these files only")
    ap.add_argument("--big-blind", type=int, default=100, help="--report: the game's big blind (chips)")
    args = ap.parse_args(argv)
    if args.report:
        named = {Path(p).stem: load_jsonl(p) for p in args.report}
        report(named, mbb_per_chip(args.big_blind), SOLVE_FROM[args.solve_from])
        return
    if not args.runs:
        ap.error("give run directories, or --report files")
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.jobs > 1 and not args.out:
        ap.error("--jobs N > 1 needs --out DIR: the workers' records are read back from its files")
    if args.jobs > 1 and args.solve_river:
        ap.error("--solve-river K keeps its comparisons in the process that plays: give --jobs 1")
    opponents = parse_opponents(args.opponents, args.method, args.solve_iterations)
    pre, call_rounds = LB[args.lbr_setting]
    from_round = SOLVE_FROM[args.solve_from]
    per_pair = {}
    for run in args.runs:
        bp = Blueprint.load(run)
        scale = mbb_per_chip(bp.gamedef.big_blind)
        named: dict[str, list[dict]] = {}
        for name, solving in opponents:
            if solving is None:
                opponent = bp
            else:
                from mccfr.evaluation.solving import SolvingPlayer

                opponent = SolvingPlayer(
                    bp,
                    solving[0],
                    name=f"blueprint+solve:{solving[0]}",
                    iterations=solving[1],
                    from_round=from_round,
                )
            lbr = LocalBestResponse(bp.game, opponent, menu="fcpa", preflop=pre, call_rounds=call_rounds)
            solver = None
            if args.solve_river and solving is None:
                from mccfr.evaluation.lbr_solving import SolvingOpponent

                solver = SolvingOpponent(bp, lbr.hands, iterations=args.solve_iterations)
            sink, log = None, None
            if args.out:
                Path(args.out).mkdir(parents=True, exist_ok=True)
                stem = Path(args.out) / f"{Path(run).name}-{name}{args.tag}"
                sink, log = f"{stem}.jsonl", f"{stem}.lbrlog"
            rec = Recorder(lbr, bp, args.seed, solver, args.solve_river, sink)
            try:
                res = lbr.run(args.hands, seed=args.seed, jobs=args.jobs, log=log, opponent_spec=name)
            finally:
                rec.close()
            if sink is not None:
                named[name] = load_jsonl(sink)  # the workers' and earlier, stopped runs' pairs too
            else:
                named[name] = rec.hands
            counters = {  # this process's (the workers' own are not sent back)
                k: getattr(lbr.opp, k)
                for k in ("solves", "reused", "fallbacks")
                if hasattr(lbr.opp, k) and args.jobs == 1
            }
            print(
                f"\n{run} / {name}: {bp.iteration:,} iterations; LBR {res.lbr:+,.0f} +- {res.lbr_ci95:,.0f} mbb/game"
                f" ({res.hands:,} hands, {res.seconds:,.0f} s{', ' if counters else ''}"
                f"{', '.join(f'{k} {v:,}' for k, v in counters.items())})",
                flush=True,
            )
            river_table(rec)
            if solving is None:
                per_pair[run] = res.per_pair * scale
                if args.out:
                    np.save(Path(args.out) / f"{Path(run).name}{args.tag}.npy", per_pair[run])
        print(f"\n# {Path(run).name}: LBR {args.lbr_setting}, seed {args.seed}")
        report(named, scale, from_round)
    runs = list(per_pair)
    for a, b in zip(runs, runs[1:]):
        d = per_pair[b] - per_pair[a]
        print(
            f"\npaired change {Path(a).name} -> {Path(b).name}: {d.mean():+,.0f} +- {ci95(d):,.0f} mbb/game"
        )
    if per_pair:
        print(json.dumps({Path(r).name: float(v.mean()) for r, v in per_pair.items()}))


if __name__ == "__main__":
    main()
