"""How the solving player answers LBR's turn bets in LBR setting (2), one solve configuration at a
time, at the spots where that setting wins: a cheap test of what binds.

    python scripts/experiments/turn_bets_binds.py RUN_DIR --boards 8 [--seed 1]
        [--configs blueprint,reach-maxmargin:50:k4:s4,reach-maxmargin:200:k1:s4,unsafe:200:k4:sall]
        [--seats lbr-first,player-first] --out FILE.jsonl
    python scripts/experiments/turn_bets_binds.py --report FILE.jsonl [--configs ...]

In LBR setting (2) LBR checks or calls pre-flop and on the flop and has the ``fcpa`` menu on the
turn and river. Against a blueprint that limps and checks, the hand reaches the turn after
pre-flop ``cc`` and flop ``cc`` (pot 200 chips in ``hunl100``), with LBR's range uniform (it
check/calls every hand). There LBR bets the pot (to 300) or moves all-in (to 10,000), and the player
answers. ``--boards`` random flop + turn boards (drawn from ``--seed``), two seats each:

* ``lbr-first``: LBR (seat 0) acts first on the turn and bets; the player's first decision of the
  round faces the bet. A solving player solves at that state (:func:`subgame.nested.solve_state`,
  rooted there: both bets are on a ``small``-bets blueprint's tree), one solve per bet;
* ``player-first``: the player (seat 0) checks, then LBR bets. The player solves at its check
  (rooted at the start of the turn) and answers LBR's bet from that subgame (both bets are on the
  subgame's bet tree), as :class:`subgame.policy.SolvePolicy` reuses the hand's subgame.

Configurations (``--configs``, the first is the baseline of the paired differences):
``blueprint`` (the blueprint's own answer, :class:`mccfr.evaluation.lbr_opponents.BlueprintOpponent`)
or ``METHOD:ITERATIONS:kK:sS``: a turn solve with ``METHOD`` (``reach-maxmargin``, ``unsafe``, ...),
``ITERATIONS`` iterations (no time budget), the depth limit's first ``K`` continuations of
:data:`subgame.depth.DEFAULT_CONTINUATIONS` (``k1``: the blueprint alone; ``k4``: the blueprint
and its fold-, call- and raise-biased versions) and ``S`` river cards walked an iteration (``sall``:
every card).

One JSON line per (board, seat, bet, configuration) goes to ``--out`` as it is computed; given the
same file again, rows already there are skipped. Each row has:

* ``fold``: the player's fold probability at the node, weighted by its range there: its blueprint
  reach at the start of the turn (:func:`subgame.construct.blueprint_ranges`; LBR's bet does not
  change it), times its own check probability (the configuration's) when it checked first;
* ``gain_mbb``: what LBR extracts with the bet there, ``E_h[max(0, u_bet(h) - u_check(h))]`` over
  LBR's hands ``h`` (every hand the board does not block), with LBR's own estimates
  (:meth:`mccfr.evaluation.lbr.LocalBestResponse.action_values`: ``u_bet = fp(h) * pot + (1 -
  fp(h)) * (eq_call(h) * (pot + 2b) - b)`` and ``u_check = eq(h) * pot``, measured from the chips
  already in; ``fp(h)`` the range-weighted fold probability over the player's hands that ``h`` does
  not block, ``eq`` LBR's exact turn equity, :func:`mccfr.evaluation.lbr.equity_vs_range`). Lower
  is better for the player. ``best_gain_mbb``: the same for LBR's better bet of the two, per hand
  (the seat's; the same in both bets' rows);
* ``raise``: its range-weighted probability of raising LBR's bet (LBR's estimate counts those hands
  as calling);
* ``check``: the player's range-weighted check probability (``player-first``);
* ``solve_s``, ``iterations``, ``expl_pct_pot``: the solve's seconds (construction and its final
  exploitability check included), iterations and its own exploitability in % of the pot (the
  gadget game's for the safe methods).

``--report FILE`` prints, per seat and bet, each configuration's means over boards with 95%
intervals and the paired differences against the baseline on the boards both have.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

if __package__ is None or __package__ == "":  # run as a script: the source tree's root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from holdem.cards import cards_str  # noqa: E402
from holdem.state import State  # noqa: E402
from mccfr.evaluation.lbr import LocalBestResponse, equity_vs_range  # noqa: E402
from mccfr_util.reporting import ci95, mbb_per_chip  # noqa: E402

SEATS = ("lbr-first", "player-first")
BETS = ("pot", "allin")
PREFIX = "cc/cc/"  # setting (2): LBR check/calls pre-flop and on the flop; the blueprint limps and checks
CONTINUATIONS = ("blueprint", "fold", "call", "raise")


# -- configurations ---------------------------------------------------------------------------------
def parse_config(text: str) -> dict[str, Any]:
    """``blueprint`` or ``METHOD:ITERATIONS:kK:sS[:fF]`` (``sall``: every river card; ``fF``: LBR's
    seat's range floor, see :func:`opponent_floor`) as a dict."""
    text = text.strip()
    if text == "blueprint":
        return {"name": text, "method": None}
    parts = text.split(":")
    ok = len(parts) in (4, 5) and parts[2].startswith("k") and parts[3].startswith("s")
    if not ok or (len(parts) == 5 and not parts[4].startswith("f")):
        raise ValueError(f"a configuration is 'blueprint' or METHOD:ITERATIONS:kK:sS[:fF], got {text!r}")
    method, iters, k, s = parts[:4]
    k = int(k[1:])
    if not 1 <= k <= len(CONTINUATIONS):
        raise ValueError(f"{text!r}: k must be 1..{len(CONTINUATIONS)}")
    samples = None if s[1:] in ("all", "None", "none") else int(s[1:])
    floor = float(parts[4][1:]) if len(parts) == 5 else 0.0
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"{text!r}: the floor must be in [0, 1]")
    return {
        "name": text,
        "method": method,
        "iterations": int(iters),
        "k": k,
        "samples": samples,
        "floor": floor,
    }


@contextlib.contextmanager
def opponent_floor(seat: int, floor: float):
    """While active, the subgames built from the blueprint give ``seat`` (LBR's) the range
    ``(1 - floor) * blueprint + floor * uniform`` (each part normalised, the blueprint's mass kept;
    hands the board blocks stay 0): the solve then also answers hands the blueprint's model of LBR
    would not hold there (LBR check/calls every hand). ``floor`` 0 changes nothing."""
    import subgame.construct as construct

    if floor <= 0:
        yield
        return
    orig = construct.blueprint_ranges

    def floored(*args, **kwargs):
        ranges = orig(*args, **kwargs)
        row = ranges[seat]
        mass = float(row.sum())
        board = args[2] if len(args) > 2 else kwargs["board"]
        hands = args[3] if len(args) > 3 else kwargs["hands"]
        free = ~construct.blocked_by(hands, board)
        if mass > 0 and free.any():
            u = free / free.sum()
            ranges[seat] = mass * ((1 - floor) * row / mass + floor * u)
        return ranges

    construct.blueprint_ranges = floored
    try:
        yield
    finally:
        construct.blueprint_ranges = orig


def draw_boards(n: int, seed: int, deck: int = 52, cards: int = 4) -> list[tuple[int, ...]]:
    """``n`` flop + turn boards (``cards`` distinct cards each), board ``i`` from ``(seed, i)``."""
    return [
        tuple(int(c) for c in np.random.default_rng([seed, i]).choice(deck, cards, replace=False))
        for i in range(n)
    ]


# -- LBR's gain at a spot --------------------------------------------------------------------------
class FoldTable:
    """Stands in for LBR's opponent model in :meth:`LocalBestResponse.action_values`: the player's
    fold probability per hand (LBR's hand order) after each LBR raise, keyed by LBR's raise-to."""

    name = "fold-table"

    def __init__(self, lbr_seat: int, folds: dict[int, np.ndarray]):
        self.lbr_seat = lbr_seat
        self.folds = folds

    def fold_probs(self, state: State) -> np.ndarray:
        return self.folds[int(state.betting.spent[self.lbr_seat])]


def equity_rows(lbr: LocalBestResponse, board: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, E)``: LBR's hands the board does not block (indices into ``lbr.hands``) and ``E[i, h]``,
    hand ``ids[i]``'s exact showdown equity against each opponent hand ``h`` it and the board do not
    block (0.5 elsewhere), over the cards still to come."""
    g, H = lbr.g, lbr.hands
    bmask = 0
    for c in board:
        bmask |= 1 << int(c)
    ids = np.nonzero((H.mask & np.int64(bmask)) == 0)[0]
    k = g.board_cards_through(g.num_rounds - 1) - len(board)
    barr = np.array(board, np.int64)
    E = np.full((len(ids), len(H)), 0.5)
    for i, h in enumerate(ids):
        hole = H.hands[h]
        used = set(board) | {int(c) for c in hole}
        rest = np.array([c for c in range(g.deck_size) if c not in used], np.int64)
        w = ((H.mask & np.int64(bmask | int(H.mask[h]))) == 0).astype(np.float64)
        E[i] = equity_vs_range(
            hole, barr, rest, k, H.cs, H.mask, w, g.num_suits, lbr.max_exact, lbr.samples, 0
        )
    return ids, E


def spot_gains(
    lbr: LocalBestResponse,
    state: State,
    opp_range: np.ndarray,
    folds: dict[int, np.ndarray],
    ids: np.ndarray,
    E: np.ndarray,
) -> tuple[dict[int, float], float]:
    """LBR's mean gain (chips) at ``state`` (LBR to act, no bet to face) from each raise-to of
    ``folds`` over checking, ``E_h[max(0, u_raise(h) - u_check(h))]`` over LBR's hands ``ids`` (rows
    of ``E``, :func:`equity_rows`), each valued by :meth:`LocalBestResponse.action_values` against
    ``opp_range`` (the player's range, LBR's hand order) with the hands ``h`` blocks removed and the
    player's fold probabilities ``folds`` (raise-to -> per hand); and the mean gain of the better
    raise per hand."""
    me = state.current_player()
    saved = lbr.opp
    lbr.opp = FoldTable(me, folds)
    rng = np.random.default_rng(0)  # unused: the equities are given
    board = {int(c) for c in state.board_cards}
    nb = len(board)
    sums = {to: 0.0 for to in folds}
    best = 0.0
    try:
        for i, h in enumerate(ids):
            hole = tuple(int(c) for c in lbr.hands.hands[h])
            other = tuple(c for c in range(lbr.g.deck_size) if c not in hole and c not in board)[:2]
            cards = (hole, other) if me == 0 else (other, hole)  # the other seat's: any (unread)
            s = State(state.game, state.betting, cards, state.board_cards, 0, None)
            w = np.where((lbr.hands.mask & lbr.hands.mask[h]) == 0, opp_range, 0.0)
            if w.sum() <= 0:
                continue
            lbr._eq_cache = {nb: E[i]}
            vals = lbr.action_values(s, w, rng)
            top = 0.0
            for to in folds:
                gain = max(0.0, vals[f"r{to}"] - vals["c"])
                sums[to] += gain
                top = max(top, gain)
            best += top
    finally:
        lbr.opp = saved
    n = max(1, len(ids))
    return {to: v / n for to, v in sums.items()}, best / n


# -- the player's answers --------------------------------------------------------------------------
class Spots:
    """One run's blueprint and the states of one board: builds the player's answers."""

    def __init__(self, bp, lbr: LocalBestResponse):
        from subgame.tree import all_hands, hand_index

        self.bp, self.lbr, self.g = bp, lbr, bp.gamedef
        sub_hands = all_hands(self.g)
        if sub_hands.shape == lbr.hands.hands.shape and np.array_equal(sub_hands, lbr.hands.hands):
            self.perm: Optional[np.ndarray] = None
        else:
            idx = hand_index(self.g)
            self.perm = np.array([idx[tuple(int(c) for c in h)] for h in lbr.hands.hands], np.int64)
        self.sub_hands = sub_hands

    def to_lbr(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, np.float64)
        return v if self.perm is None else v[self.perm]

    def state(self, board: tuple[int, ...], betting: str, viewer: Optional[int]) -> State:
        ns = self.g.num_suits
        spare = [c for c in range(self.g.deck_size) if c not in board][:4]
        holes = [cards_str(spare[:2], ns), cards_str(spare[2:4], ns)]
        b = f"/{cards_str(board[:3], ns)}/{cards_str(board[3:], ns)}"
        if viewer is None:
            return self.bp.game.state(f"STATE:0:{betting}:{holes[0]}|{holes[1]}{b}")
        cards = f"{holes[0]}|" if viewer == 0 else f"|{holes[1]}"
        return self.bp.game.state(f"MATCHSTATE:{viewer}:0:{betting}:{cards}{b}")

    def bet_sizes(self, board) -> dict[str, int]:
        """LBR's ``fcpa`` raise-to of each bet at the turn's first decision."""
        s = self.state(board, PREFIX, None)
        cands = self.lbr.candidates(s)
        raises = sorted(int(a[1:]) for a in cands if a.startswith("r"))
        return {"pot": raises[0], "allin": raises[-1]}

    def ranges(self, board) -> np.ndarray:
        """[2, H] each seat's blueprint reach at the start of the turn (LBR's hand order)."""
        from subgame.construct import blueprint_ranges

        s = self.state(board, PREFIX, None)
        n = self.bp.node_of(s)
        r = blueprint_ranges(self.bp, n, tuple(board), self.sub_hands)
        return np.stack([self.to_lbr(r[0]), self.to_lbr(r[1])])

    def answers(self, board, seat: str, config: dict, sizes: dict[str, int]) -> dict[str, Any]:
        """The player's answers for one seat: ``fold`` (bet -> per hand), ``check`` (per hand, or
        None), and per bet the solve's ``solve_s``, ``iterations``, ``expl``."""
        if config["method"] is None:
            return self._blueprint(board, seat, sizes)
        return self._solved(board, seat, config, sizes)

    def _blueprint(self, board, seat, sizes):
        from mccfr.evaluation.lbr_opponents import BlueprintOpponent

        opp = BlueprintOpponent(self.bp, self.lbr.hands)
        out: dict[str, Any] = {"fold": {}, "raise": {}, "check": None, "meta": {}}
        lead = PREFIX if seat == "lbr-first" else PREFIX + "c"
        if seat == "player-first":
            keys, P = opp.action_probs(self.state(board, PREFIX, None))
            out["check"] = P[:, keys.index("c")]
        for bet, to in sizes.items():
            keys, P = opp.action_probs(self.state(board, f"{lead}r{to}", None))
            out["fold"][bet] = P[:, keys.index("f")]
            out["raise"][bet] = sum(
                (P[:, j] for j, a in enumerate(keys) if a.startswith("r")), np.zeros(len(P))
            )
            out["meta"][bet] = {"solve_s": 0.0, "iterations": 0, "expl": None}
        return out

    def _solve(self, state: State, config: dict):
        from subgame.depth import DepthLimit
        from subgame.nested import solve_state

        dl = DepthLimit(self.bp, continuations=CONTINUATIONS[: config["k"]], samples=config["samples"])
        t0 = time.perf_counter()
        lbr_seat = 1 - state.current_player()
        with opponent_floor(lbr_seat, config.get("floor", 0.0)):
            sol, n = solve_state(
                self.bp,
                state,
                config["method"],
                iterations=config["iterations"],
                time_budget=None,
                depth_limit=dl,
            )
        meta = {
            "solve_s": time.perf_counter() - t0,
            "iterations": int(sol.iterations),
            "expl": None if sol.exploitability_pct_pot is None else float(sol.exploitability_pct_pot),
        }
        return sol, n, meta

    def _solved(self, board, seat, config, sizes):
        from subgame.nested import node_of_state

        out: dict[str, Any] = {"fold": {}, "raise": {}, "check": None, "meta": {}}
        if seat == "lbr-first":  # the player (seat 1) solves at its first decision, facing the bet
            for bet, to in sizes.items():
                sol, n, meta = self._solve(self.state(board, f"{PREFIX}r{to}", 1), config)
                out["fold"][bet] = self.to_lbr(sol.node_strategy(n)["f"])
                out["raise"][bet] = self.to_lbr(_raises(sol.node_strategy(n)))
                out["meta"][bet] = meta
            return out
        # the player (seat 0) solves at its check and answers LBR's bet from the same subgame
        sol, n, meta = self._solve(self.state(board, PREFIX, 0), config)
        out["check"] = self.to_lbr(sol.node_strategy(n)["c"])
        for bet, to in sizes.items():
            m = node_of_state(sol.tree, self.state(board, f"{PREFIX}cr{to}", 0))
            out["fold"][bet] = self.to_lbr(sol.node_strategy(m)["f"])
            out["raise"][bet] = self.to_lbr(_raises(sol.node_strategy(m)))
            out["meta"][bet] = meta
        return out


def _raises(strategy: dict[str, np.ndarray]) -> np.ndarray:
    """Per hand, the probability of any raise of a node's strategy (``{label: per hand}``)."""
    cols = [np.asarray(v, np.float64) for a, v in strategy.items() if a.startswith("r")]
    return sum(cols) if cols else np.zeros(len(next(iter(strategy.values()))))


def seat_rows(
    spots: Spots, board, bi: int, seat: str, config: dict, sizes, ranges, ids, E, seed
) -> list[dict]:
    """The two rows (pot, all-in) of one board, seat and configuration."""
    ans = spots.answers(board, seat, config, sizes)
    player = 1 if seat == "lbr-first" else 0
    rng = ranges[player].copy()
    check = None
    if ans["check"] is not None:
        W = float(rng.sum())
        check = float(rng @ ans["check"]) / W if W > 0 else None
        rng = rng * ans["check"]
    lead = PREFIX if seat == "lbr-first" else PREFIX + "c"
    folds = {sizes[b]: np.asarray(ans["fold"][b], np.float64) for b in BETS}
    state = spots.state(board, lead, None)
    gains, best = spot_gains(spots.lbr, state, rng, folds, ids, E)
    k = mbb_per_chip(max(spots.g.blind))
    W = float(rng.sum())
    rows = []
    for b in BETS:
        fv = folds[sizes[b]]
        meta = ans["meta"][b]
        rows.append(
            {
                "seed": seed,
                "board": bi,
                "cards": cards_str(board, spots.g.num_suits),
                "seat": seat,
                "bet": b,
                "to": sizes[b],
                "config": config["name"],
                "fold": float(rng @ fv) / W if W > 0 else None,
                "raise": float(rng @ np.asarray(ans["raise"][b], np.float64)) / W if W > 0 else None,
                "gain_mbb": gains[sizes[b]] * k,
                "best_gain_mbb": best * k,
                "check": check,
                "solve_s": meta["solve_s"],
                "iterations": meta["iterations"],
                "expl_pct_pot": meta["expl"],
            }
        )
    return rows


def row_key(r: dict) -> tuple:
    return (r["seed"], r["board"], r["seat"], r["bet"], r["config"])


def load_rows(path) -> list[dict]:
    """The rows of a JSONL file (a damaged last line, from a run cut short, is skipped)."""
    out = []
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def run(args) -> None:
    from blueprint.blueprint import Blueprint

    configs = [parse_config(c) for c in args.configs.split(",")]
    seats = [s.strip() for s in args.seats.split(",")]
    bad = [s for s in seats if s not in SEATS]
    if bad:
        raise SystemExit(f"unknown seats {bad}: expected some of {', '.join(SEATS)}")
    done = {row_key(r) for r in load_rows(args.out)}
    bp = Blueprint.load(args.run)
    lbr = LocalBestResponse(bp.game, bp, menu="fcpa", preflop="call", call_rounds=(1,))
    spots = Spots(bp, lbr)
    boards = draw_boards(args.boards, args.seed, bp.gamedef.deck_size)
    with open(args.out, "a") as f:
        for bi, board in enumerate(boards):
            todo = [
                (seat, c)
                for seat in seats
                for c in configs
                if any((args.seed, bi, seat, b, c["name"]) not in done for b in BETS)
            ]
            if not todo:
                continue
            t0 = time.perf_counter()
            sizes = spots.bet_sizes(board)
            ranges = spots.ranges(board)
            ids, E = equity_rows(lbr, board)
            print(
                f"board {bi} {cards_str(board, bp.gamedef.num_suits)}: equities {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            for seat, c in todo:
                t1 = time.perf_counter()
                rows = seat_rows(spots, board, bi, seat, c, sizes, ranges, ids, E, args.seed)
                for r in rows:
                    if row_key(r) not in done:
                        f.write(json.dumps(r) + "\n")
                        done.add(row_key(r))
                f.flush()
                print(
                    f"  {seat:12s} {c['name']:28s} fold "
                    + " / ".join(f"{r['fold']:.3f}" for r in rows)
                    + "  gain "
                    + " / ".join(f"{r['gain_mbb']:.0f}" for r in rows)
                    + f"  {time.perf_counter() - t1:.1f} s",
                    flush=True,
                )


# -- the report ------------------------------------------------------------------------------------
def _fmt(x: float, ci: float, d: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    c = "inf" if not math.isfinite(ci) else f"{ci:,.{d}f}"
    return f"{x:,.{d}f} +- {c}"


def report(rows: list[dict], order: Optional[list[str]] = None) -> dict:
    """Per seat and bet, each configuration's means over boards (95% intervals) and its paired
    differences against the first configuration (``order``'s first, else the file's first) on the
    boards both have. Prints the table and returns it as a dict."""
    names = list(order or [])
    for r in rows:
        if r["config"] not in names:
            names.append(r["config"])
    out: dict = {}
    for seat in SEATS:
        for bet in BETS:
            sel = [r for r in rows if r["seat"] == seat and r["bet"] == bet]
            if not sel:
                continue
            by = {c: {(r["seed"], r["board"]): r for r in sel if r["config"] == c} for c in names}
            base = next((c for c in names if by[c]), None)
            print(f"\n{seat}, LBR's {bet} bet (to {sel[0]['to']}):")
            print(
                f"{'config':30s} {'boards':>6s} {'fold':>16s} {'gain mbb':>18s} "
                f"{'paired gain':>18s} {'paired fold':>17s} {'solve s':>8s} {'expl %pot':>10s} {'raise':>6s}"
            )
            table = {}
            for c in names:
                rs = by[c]
                if not rs:
                    continue
                fold = np.array([r["fold"] for r in rs.values()], float)
                gain = np.array([r["gain_mbb"] for r in rs.values()], float)
                secs = float(np.mean([r["solve_s"] for r in rs.values()]))
                ex = [r["expl_pct_pot"] for r in rs.values() if r.get("expl_pct_pot") is not None]
                rz = [r["raise"] for r in rs.values() if r.get("raise") is not None]
                common = sorted(set(rs) & set(by[base]))
                dg = np.array([rs[k]["gain_mbb"] - by[base][k]["gain_mbb"] for k in common], float)
                df = np.array([rs[k]["fold"] - by[base][k]["fold"] for k in common], float)
                entry = {
                    "boards": len(rs),
                    "fold": float(fold.mean()),
                    "fold_ci95": ci95(fold),
                    "gain_mbb": float(gain.mean()),
                    "gain_ci95": ci95(gain),
                    "paired_gain": float(dg.mean()) if len(dg) else None,
                    "paired_gain_ci95": ci95(dg) if len(dg) else None,
                    "paired_fold": float(df.mean()) if len(df) else None,
                    "paired_fold_ci95": ci95(df) if len(df) else None,
                    "solve_s": secs,
                    "expl_pct_pot": float(np.mean(ex)) if ex else None,
                    "raise": float(np.mean(rz)) if rz else None,
                }
                table[c] = entry
                pg = "(baseline)" if c == base else _fmt(entry["paired_gain"], entry["paired_gain_ci95"])
                pf = "(baseline)" if c == base else _fmt(entry["paired_fold"], entry["paired_fold_ci95"], 3)
                exs = "-" if entry["expl_pct_pot"] is None else f"{entry['expl_pct_pot']:.2f}"
                print(
                    f"{c:30s} {len(rs):6d} {_fmt(entry['fold'], entry['fold_ci95'], 3):>16s} "
                    f"{_fmt(entry['gain_mbb'], entry['gain_ci95']):>18s} {pg:>18s} {pf:>17s} "
                    f"{secs:8.1f} {exs:>10s} "
                    + ("     -" if entry["raise"] is None else f"{entry['raise']:6.3f}")
                )
            out[f"{seat}/{bet}"] = table
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?", help="the blueprint's run directory")
    ap.add_argument("--boards", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--configs",
        default="reach-maxmargin:50:k4:s4,reach-maxmargin:200:k4:s4,blueprint",
        help="comma list: blueprint or METHOD:ITERATIONS:kK:sS (the first is the paired baseline)",
    )
    ap.add_argument("--seats", default=",".join(SEATS))
    ap.add_argument("--out", help="JSONL written as rows finish (rows already there are skipped)")
    ap.add_argument("--report", metavar="FILE", help="print the table of FILE's rows and exit")
    args = ap.parse_args(argv)
    if args.report:
        given = "--configs" in (sys.argv[1:] if argv is None else argv)
        order = [parse_config(c)["name"] for c in args.configs.split(",")] if given else None
        report(load_rows(args.report), order)
        return
    if not args.run or not args.out:
        ap.error("a run directory and --out are needed (or --report FILE)")
    run(args)


if __name__ == "__main__":
    main()
