"""Brown & Sandholm 2017's experiment, rebuilt where the full game's exploitability is exact.

The *full game* is a small-deck no-limit game whose rules are a bet set (the blueprint's own
betting tree), so the only abstraction left in a blueprint is its card abstraction. The refined
strategy keeps the blueprint's strategy before the re-solved round and, from every root of that
round (every betting history that reaches it x every board), plays the strategy of a subgame
solved there without card abstraction: each seat's part comes from the solve where that seat is
the refined one (``unsafe`` is one solve for both). :class:`CombinedBestResponse` scores the
combination by an exact best response in the full game (the blueprint evaluator with the re-solved
round's strategies swapped in).

Only the last betting round can be re-solved here (a flop in a two-round "flop hold'em"): the
public tree of a root then has no chance node, so one tree shape serves every board and a board's
solution is its suit-isomorphism class representative's with the hands' suits permuted.

Gifts for the reach variants come from the opponent's decisions in *earlier* rounds too
(:func:`preflop_gift_rates`): at each of its decisions on the path, the value of each action against
the blueprint (best-response values; the blueprint's own values for ``reach-estimate``) by an exact
walk of the full game, per hand; the gap between the best action and the one taken, per unit of the
refined seat's compatible mass at that decision, summed along the path; times that mass at the
subgame root, it is the gift in the solver's counterfactual units.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from math import comb
from typing import Callable, Optional

import numba
import numpy as np

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from abstraction.bets import BetAbstraction
from abstraction.tree import KIND_CHANCE, KIND_DECISION, KIND_SHOWDOWN, BettingTree
from blueprint.best_response import TreeEvaluator
from blueprint.blueprint import Blueprint
from holdem.gamedef import GameDef
from mccfr_util.reporting import chips_to_mbb
from subgame import kernels as K
from subgame.bets import bp_bets
from subgame.construct import (
    BucketCache,
    abstract_path,
    blueprint_ranges,
    blueprint_sigma,
    map_to_blueprint,
)
from subgame.engine import Engine
from subgame.solver import METHODS, solve
from subgame.tree import SubgameError, all_hands, board_hands, build_subgame_tree
from subgame.types import Subgame

COLUMNS = ("blueprint",) + METHODS

FLOP_BETS_TOML = """name = "flop-fine"
[[round]]
sizes = [1.0]
allin = true
max_raises = 2
[[round]]
sizes = [0.5, 1.0]
allin = true
max_raises = 2
"""


def off_tree_bets_toml(frac: float = 0.75) -> str:
    """Table 2's full game: FLOP_BETS_TOML plus a ``frac``-pot bet as the first bet of the flop
    (either seat's), a size the blueprints (trained on FLOP_BETS_TOML) lack."""
    if frac <= 0 or frac in (0.5, 1.0):
        raise SubgameError(
            f"the off-tree size must be a positive pot fraction the blueprint lacks (not {frac})"
        )
    first = sorted([0.5, 1.0, float(frac)])
    return FLOP_BETS_TOML.replace('name = "flop-fine"', f'name = "flop-off-tree-{frac:g}"').replace(
        "sizes = [0.5, 1.0]", f"first_sizes = {first}\nsizes = [0.5, 1.0]"
    )


FLOP_OFF_TREE_TOML = off_tree_bets_toml(0.75)


def flop_game(ranks: int = 7, suits: int = 4, stack_bb: int = 10, name: Optional[str] = None) -> GameDef:
    """Heads-up no-limit "flop hold'em": two hole cards, a preflop round then a 3-card flop (the last
    round); blinds 100/50, ``stack_bb`` big blinds each; seat 1 (small blind) acts first preflop."""
    return GameDef(
        "nolimit",
        2,
        (100 * stack_bb, 100 * stack_bb),
        (100, 50),
        (0, 0),
        (1, 0),
        (255, 255),
        suits,
        ranks,
        2,
        (0, 3),
        name=name or f"flop{ranks}x{suits}-{stack_bb}bb",
    )


# -- suit isomorphism of boards ---------------------------------------------------------------------


@dataclasses.dataclass
class BoardClasses:
    """Boards of one round grouped by suit isomorphism.

    ``canon[board]`` = (representative, suit permutation ``p`` with ``p(board)`` = representative);
    ``hand_perm[p]`` [H]: index of ``p(h)`` for every hand ``h`` (so a strategy column of the
    representative, read at ``hand_perm[p]``, is the board's)."""

    game: GameDef
    representatives: list[tuple[int, ...]]
    count: dict[tuple[int, ...], int]  # boards per representative
    canon: dict[tuple[int, ...], tuple[tuple[int, ...], int]]
    perms: list[tuple[int, ...]]
    hand_perm: np.ndarray  # int64 [P, H]


def board_classes(game: GameDef, num_cards: int) -> BoardClasses:
    S = game.num_suits
    perms = list(itertools.permutations(range(S)))
    hands = all_hands(game)
    index = {tuple(int(c) for c in h): i for i, h in enumerate(hands)}

    def apply(p, cards):
        return tuple(sorted((c // S) * S + p[c % S] for c in cards))

    hand_perm = np.array([[index[apply(p, h)] for h in hands] for p in perms], np.int64)
    canon: dict = {}
    count: dict = {}
    reps: list = []
    for b in itertools.combinations(range(game.deck_size), num_cards):
        images = [apply(p, b) for p in perms]
        rep = min(images)
        canon[b] = (rep, images.index(rep))
        if rep not in count:
            count[rep] = 0
            reps.append(rep)
        count[rep] += 1
    return BoardClasses(game, reps, count, canon, perms, hand_perm)


# -- the roots of the re-solved round -------------------------------------------------------------


def round_roots(bp: Blueprint, r: Optional[int] = None) -> list[int]:
    """Abstract decision nodes where betting round ``r`` (default: the last) starts."""
    t = bp.tree
    r = bp.gamedef.num_rounds - 1 if r is None else r
    return [
        n
        for n in range(t.num_nodes)
        if t.kind[n] == KIND_DECISION and t.round[n] == r and t.parent[n] >= 0 and t.round[t.parent[n]] < r
    ]


# -- the full game: shared data, and the exact walker ------------------------------------------------


@numba.njit(cache=True)
def _allin_equity(hand_mask, board_mask, strength, out):
    """``out[h, h'] += sign(s(h) - s(h'))`` over every board blocking neither hand (compatible pairs)."""
    B, H = strength.shape
    for b in range(B):
        bm = board_mask[b]
        for i in range(H):
            if hand_mask[i] & bm:
                continue
            si = strength[b, i]
            for j in range(i + 1, H):
                if (hand_mask[j] & bm) or (hand_mask[j] & hand_mask[i]):
                    continue
                d = si - strength[b, j]
                if d > 0:
                    out[i, j] += 1.0
                    out[j, i] -= 1.0
                elif d < 0:
                    out[i, j] -= 1.0
                    out[j, i] += 1.0


class FullGame:
    """What every walk of one blueprint's full game shares: the roots of the last round (the flop),
    the suit-isomorphism classes of its boards, each (root, representative board)'s public tree and
    the blueprint's strategy on it, and the preflop all-in equities.

    Two-round games whose first round deals no board (flop hold'em): the re-solved round is the
    last, so a root's subtree has no chance node."""

    def __init__(self, bp: Blueprint, bets: Optional[BetAbstraction] = None):
        g = bp.gamedef
        if g.num_rounds != 2 or g.num_board_cards[0] != 0:
            raise SubgameError("the full-game experiment needs a two-round game with no board in round 1")
        self.bp, self.g = bp, g
        # the full game's bets in the last round: the blueprint's own, or (``bets``) a finer set with
        # sizes the blueprint lacks there (Table 2's off-tree bet), where the blueprint answers
        # off-tree actions by pseudo-harmonic translation
        self.extended = bets is not None
        self.bets = bets if bets is not None else bp_bets(bp)
        self.last = g.num_rounds - 1
        self.roots = round_roots(bp)
        self.classes = board_classes(g, g.board_cards_through(self.last))
        self.reps = self.classes.representatives
        self.hands = all_hands(g)
        self.cache = BucketCache(bp, self.hands)
        P = len(self.classes.perms)
        self.perm_counts = {rep: np.zeros(P, np.int64) for rep in self.reps}
        self.boards_of = {rep: [] for rep in self.reps}
        for b, (rep, p) in self.classes.canon.items():
            self.perm_counts[rep][p] += 1
            self.boards_of[rep].append((b, p))
        self.nposs = comb(g.deck_size - 2 * g.num_hole_cards, g.num_board_cards[self.last])
        self._trees: dict = {}
        self._bp_sigma: dict = {}
        self._equity = None
        self.templates = {
            n: root_template(bp, n, self.reps[0], self.bets if self.extended else None)[0] for n in self.roots
        }

    def tree(self, n: int, rep: tuple[int, ...]) -> BettingTree:
        key = (n, rep)
        if key not in self._trees:
            self._trees[key] = build_subgame_tree(self.g, self.bp.betting_at(n), rep, self.bets)
        return self._trees[key]

    def bp_sigma(self, n: int, rep: tuple[int, ...]) -> np.ndarray:
        key = (n, rep)
        if key not in self._bp_sigma:
            self._bp_sigma[key] = blueprint_sigma(
                self.bp, self.tree(n, rep), self.templates[n].node_map, self.cache, translate=self.extended
            )
        return self._bp_sigma[key]

    def equity(self) -> np.ndarray:
        """[H, H]: ``E_board[sign(s(h) - s(h'))]`` for compatible hands (0 otherwise), the board drawn
        uniformly from the cards neither hand holds."""
        if self._equity is None:
            from blueprint.best_response import hand_strengths

            g = self.g
            H = len(self.hands)
            hm = np.zeros(H, np.int64)
            for j in range(self.hands.shape[1]):
                hm |= np.left_shift(np.int64(1), self.hands[:, j].astype(np.int64))
            boards = list(self.classes.canon)
            bm = np.array([sum(1 << c for c in b) for b in boards], np.int64)
            st = np.zeros((len(boards), H), np.int64)
            h64 = self.hands.astype(np.int64)
            for k, b in enumerate(boards):
                st[k] = hand_strengths(h64, np.array(b, np.int64), g.num_suits, g.num_ranks)
            out = np.zeros((H, H))
            _allin_equity(hm, bm, st, out)
            self._equity = out / self.nposs
        return self._equity


class CombinedBestResponse(TreeEvaluator):
    """Exact walks of the full game (best response or expected value) against the blueprint with the
    last round's strategy replaced by ``tables[(root, representative board)]`` (float32 [rows, H] on
    the root's public tree; a missing entry keeps the blueprint).

    The base evaluator walks every board densely ([H, H] per terminal); here a root's value is one
    range-vectorized walk (:mod:`subgame.kernels`, O(H) terminals) per representative board, mapped
    to every board of its class by permuting suits, when the reach entering the root is invariant
    under suit permutations (a suit-isomorphic preflop strategy); otherwise one walk per board."""

    def __init__(self, fg: FullGame, tables: Optional[dict] = None):
        bp = fg.bp
        super().__init__(bp.tree, bp.cards, bp.row_offset, bp.probs)
        self.fg = fg
        self.tables = tables if tables is not None else {}
        self.walks = 0

    def _child(self, c, board, r, rc, reach, i, br):
        fg = self.fg
        t = self.tree
        if r < fg.last and rc == fg.last:
            if t.kind[c] == KIND_DECISION:
                return self._root_values(int(c), reach, i, br)
            if t.kind[c] == KIND_SHOWDOWN:
                m = float(min(t.spent[c, 0], t.spent[c, 1]))
                return m * (fg.equity() @ reach)
        return super()._child(c, board, r, rc, reach, i, br)

    def strategy(self, n: int, rep: tuple[int, ...]) -> np.ndarray:
        s = self.tables.get((n, rep))
        return self.fg.bp_sigma(n, rep) if s is None else s

    def _root_values(self, n: int, reach: np.ndarray, i: int, br: bool) -> np.ndarray:
        fg = self.fg
        hp = fg.classes.hand_perm
        mode = K.MODE_BR if br else K.MODE_EV
        H = len(fg.hands)
        total = np.zeros(H)
        invariant = all(np.array_equal(reach[hp[p]], reach) for p in range(len(hp)))
        for rep in fg.reps:
            tree = fg.tree(n, rep)
            e = Engine(tree)
            sig = self.strategy(n, rep)
            valid = board_hands(tree).valid[tree.board[0]].astype(np.float64)
            rr = np.empty((2, H))
            rr[i] = valid
            if invariant:
                rr[1 - i] = reach * valid
                v = e.walk(sig, rr, i, mode) * valid
                self.walks += 1
                for p in np.nonzero(fg.perm_counts[rep])[0]:
                    total += fg.perm_counts[rep][p] * v[hp[p]]
            else:
                for _, p in fg.boards_of[rep]:
                    rep_reach = np.empty(H)
                    rep_reach[hp[p]] = reach
                    rr[1 - i] = rep_reach * valid
                    v = e.walk(sig, rr, i, mode) * valid
                    self.walks += 1
                    total += v[hp[p]]
        return total / fg.nposs

    def exploitability(self) -> tuple[float, list[float]]:
        brv = [self.value(0, True), self.value(1, True)]
        return (brv[0] + brv[1]) / 2.0, brv

    # -- per-hand action values (gifts) ---------------------------------------------------------
    def reach_at(self, n: int, seat: int) -> np.ndarray:
        """``seat``'s reach of every hand at round-0 node ``n`` (no board dealt yet)."""
        t = self.tree
        reach = np.ones(len(self.hands))
        for m, a in abstract_path(self.fg.bp, n):
            if int(t.round[m]) != 0:
                raise SubgameError("reach_at: only the first round's nodes (no board yet)")
            if int(t.player[m]) == seat:
                reach = reach * self._sigma(m, (), 0)[:, a]
        return reach

    def action_values(self, m: int, br: bool) -> np.ndarray:
        """[A, H] counterfactual values of each action of round-0 node ``m``'s actor against the other
        seat's reach, the actor best-responding afterwards (``br``) or following the strategy."""
        t = self.tree
        p = int(t.player[m])
        reach = self.reach_at(m, 1 - p)
        r = int(t.round[m])
        s = int(t.child_start[m])
        out = []
        for a in range(int(t.num_actions[m])):
            c = int(t.edge_child[s + a])
            out.append(self._child(c, (), r, int(t.round[c]), reach, p, br))
        return np.array(out)


def preflop_gift_rates(
    walker: CombinedBestResponse, estimate: bool = False
) -> dict[tuple[int, int], np.ndarray]:
    """``{(root, seat): [H]}``: ``seat``'s gifts at its round-0 decisions on the path to each root, per
    unit of the other seat's compatible mass at each decision, summed (times the other seat's
    compatible mass at the subgame root, it is the gift in the solver's units). Values are against
    the walker's strategy (the blueprint when its tables are empty)."""
    fg = walker.fg
    t = fg.bp.tree
    vals: dict[int, np.ndarray] = {}
    mass: dict[int, np.ndarray] = {}
    out = {}
    for n in fg.roots:
        for seat in (0, 1):
            total = np.zeros(len(fg.hands))
            for m, a in abstract_path(fg.bp, n):
                if int(t.round[m]) != 0 or int(t.player[m]) != seat:
                    continue
                if m not in vals:
                    vals[m] = walker.action_values(m, not estimate)
                    mass[m] = walker.compat @ walker.reach_at(m, 1 - seat)
                v, wm = vals[m], mass[m]
                gap = v.max(axis=0) - v[a]
                total += np.where(wm > 0, gap / np.where(wm > 0, wm, 1.0), 0.0)
            out[(n, seat)] = total
    return out


# -- re-solving every root -------------------------------------------------------------------------


@dataclasses.dataclass
class RootTemplate:
    root: int  # abstract node
    node_map: np.ndarray  # public node -> abstract node
    rows: np.ndarray  # public row ranges: row of each public decision node
    player: np.ndarray  # actor of each public row (per row)
    num_rows: int


def root_template(
    bp: Blueprint, n: int, board: tuple[int, ...], bets: Optional[BetAbstraction] = None
) -> tuple[RootTemplate, BettingTree]:
    """The root's public tree on the blueprint's bets, or on a finer ``bets`` (nodes behind the
    actions the blueprint lacks map to -1)."""
    tree = build_subgame_tree(bp.gamedef, bp.betting_at(n), board, bets or bp_bets(bp))
    if (tree.kind == KIND_CHANCE).any():
        raise SubgameError("the re-solved round must be the last (no chance node inside the subgame)")
    nm = map_to_blueprint(tree, bp, n, strict=bets is None)
    player = np.full(tree.num_rows, -1, np.int8)
    for u in np.nonzero(tree.kind == KIND_DECISION)[0]:
        r0 = int(tree.row[u])
        player[r0 : r0 + int(tree.num_actions[u])] = tree.player[u]
    return RootTemplate(n, nm, tree.row.copy(), player, tree.num_rows), tree


@dataclasses.dataclass
class SolveSettings:
    iterations: int = 200
    target_pct_pot: Optional[float] = None
    algo: str = "dcfr"
    methods: tuple[str, ...] = METHODS


def solve_root_board(
    fg: FullGame,
    n: int,
    rep: tuple[int, ...],
    settings: SolveSettings,
    gift_rates: dict,
    est_gift_rates: dict,
):
    """Every method's combined strategy (float32 [rows, H]; each seat's rows from the solve where it is
    refined) at abstract root ``n`` on board ``rep``, and per-solve diagnostics. A root the blueprint
    never reaches on this board (an empty range) keeps the blueprint."""
    if fg.extended:
        raise SubgameError("re-solving every root (Table 1) needs the blueprint's own bets as the full game")
    bp, g = fg.bp, fg.g
    tmpl = fg.templates[n]
    tree = fg.tree(n, rep)
    bp_sig = fg.bp_sigma(n, rep)
    out = {}
    diags = []
    ranges = blueprint_ranges(bp, n, rep, fg.hands, fg.cache)
    if (ranges.sum(1) <= 0).any():
        for m in settings.methods:
            out[m] = bp_sig
        return out, diags
    betting = bp.betting_at(n)
    bets = bp_bets(bp)
    e = Engine(tree)
    vals = {}
    for o in (0, 1):
        br = e.walk(bp_sig, ranges, o, K.MODE_BR)
        ev = e.walk(bp_sig, ranges, o, K.MODE_EV)
        mass = e.compat_mass(ranges[1 - o])
        vals[o] = (br, ev, gift_rates[(n, o)] * mass, est_gift_rates[(n, o)] * mass)
    for m in settings.methods:
        comb_ = np.empty_like(bp_sig)
        seats = (None,) if m == "unsafe" else (0, 1)
        for me in seats:
            o = 1 - (me if me is not None else betting.current_player())
            alt, est, gifts, egifts = vals[o]
            sub = Subgame(
                g,
                betting,
                rep,
                ranges,
                bets,
                refine=me,
                alt=alt,
                estimate=est,
                gifts=gifts,
                estimate_gifts=egifts,
                tree=tree,
            )
            sol = solve(
                sub,
                m,
                iterations=settings.iterations,
                target_pct_pot=settings.target_pct_pot,
                algo=settings.algo,
            )
            d = sol.diagnostics()
            d.update(root=n, board=rep, refine=me)
            diags.append(d)
            if me is None:
                comb_[:] = sol.strategy
            else:
                sel = tmpl.player == me
                comb_[sel] = sol.strategy[sel]
        out[m] = comb_
    return out, diags


def _solve_summary(diags: list[dict], methods) -> dict:
    """Per method: the number of solves and the mean iterations, exploitability (% of the pot; also
    the max) and time of the solves' diagnostics."""
    summary = {}
    for m in methods:
        ds = [d for d in diags if d["method"] == m]
        if ds:
            summary[m] = {
                "solves": len(ds),
                "mean_iterations": float(np.mean([d["iterations"] for d in ds])),
                "mean_exploitability_pct_pot": float(np.mean([d["exploitability_pct_pot"] for d in ds])),
                "max_exploitability_pct_pot": float(np.max([d["exploitability_pct_pot"] for d in ds])),
                "mean_elapsed_ms": float(np.mean([d["elapsed_ms"] for d in ds])),
            }
    return summary


def run_experiment(
    bp: Blueprint,
    settings: SolveSettings,
    log: Callable[[str], None] = print,
    max_boards: Optional[int] = None,
    fg: Optional[FullGame] = None,
    time_budget: Optional[float] = None,
    seed: int = 0,
) -> dict:
    """Re-solve every root of the last round on every board class with every method and score each
    combined strategy exactly. Returns ``{"mbb": {column: mbb/game}, "chips": ..., "br_values": ...,
    "diagnostics": per-method summary, "coverage": ..., "seconds": ...}``.

    Board classes are solved in a random order (``seed``); ``max_boards`` or ``time_budget`` (seconds
    of solving) stop early, and the classes not reached keep the blueprint's flop strategy (``coverage``
    is the share of all boards re-solved)."""
    g = bp.gamedef
    t0 = time.perf_counter()
    fg = fg or FullGame(bp)
    walker = CombinedBestResponse(fg)
    rates = preflop_gift_rates(walker, False)
    erates = preflop_gift_rates(walker, True)
    t_gifts = time.perf_counter() - t0
    log(f"setup and gift rates for {len(fg.roots)} roots: {t_gifts:.1f} s")
    order = np.random.default_rng(seed).permutation(len(fg.reps))
    reps = [fg.reps[k] for k in order]
    if max_boards:
        reps = reps[:max_boards]
    cols = ("blueprint",) + tuple(settings.methods)
    tables = {c: {} for c in cols}
    diags = []
    t1 = time.perf_counter()
    done = []
    for i, rep in enumerate(reps):
        if time_budget is not None and time.perf_counter() - t1 >= time_budget:
            log(f"time budget reached after {i} board classes")
            break
        done.append(rep)
        for n in fg.roots:
            res, d = solve_root_board(fg, n, rep, settings, rates, erates)
            for c in settings.methods:
                tables[c][(n, rep)] = res[c]
            diags += d
        if (i + 1) % 10 == 0 or i + 1 == len(reps):
            el = time.perf_counter() - t1
            log(f"board classes {i + 1}/{len(reps)}: {el:.0f} s ({el / (i + 1):.2f} s each)")
    log(
        f"solved {len(done)} board classes ({sum(fg.classes.count[r] for r in done)} of {len(fg.classes.canon)} boards)"
    )
    t_solve = time.perf_counter() - t1
    scores, brvs = {}, {}
    for c in cols:
        x, brv = CombinedBestResponse(fg, tables[c]).exploitability()
        scores[c], brvs[c] = x, brv
        log(f"{c:>16}: {chips_to_mbb(x, g.big_blind):9.2f} mbb/game")
    summary = _solve_summary(diags, settings.methods)
    return {
        "mbb": {c: chips_to_mbb(v, g.big_blind) for c, v in scores.items()},
        "chips": scores,
        "br_values": brvs,
        "diagnostics": summary,
        "board_classes_solved": len(done),
        "board_classes": len(fg.reps),
        "coverage": sum(fg.classes.count[r] for r in done) / len(fg.classes.canon),
        "roots": len(fg.roots),
        "seconds": {"gifts": t_gifts, "solve": t_solve, "total": time.perf_counter() - t0},
    }


# -- Table 2: nested solving vs action translation for an off-tree bet ------------------------------


def off_tree_edges(fg: FullGame, n: int) -> list[tuple[int, int]]:
    """``(public node u, child c)`` of root ``n``'s full-game tree where ``u`` is on the blueprint's
    tree and the action to ``c`` is not (the same for every board: the tree's shape is)."""
    nm = fg.templates[n].node_map
    tree = fg.tree(n, fg.reps[0])
    out = []
    for u in np.nonzero(tree.kind == KIND_DECISION)[0]:
        if nm[u] < 0:
            continue
        for c in tree.children(int(u)):
            if nm[c] < 0:
                out.append((int(u), int(c)))
    return out


def copy_subtree_rows(
    dst: BettingTree, dst_sigma: np.ndarray, c: int, src: BettingTree, src_sigma: np.ndarray
) -> None:
    """``src``'s strategy (a tree rooted at the same state as ``dst``'s node ``c``, with the same
    bets) into the rows of ``c``'s subtree in ``dst_sigma``."""
    stack = [(c, 0)]
    while stack:
        u, v = stack.pop()
        if dst.kind[u] != src.kind[v] or dst.num_actions[u] != src.num_actions[v]:
            raise SubgameError(f"subtree mismatch at node {u} (source node {v})")
        if dst.kind[u] != KIND_DECISION:
            continue
        A = int(dst.num_actions[u])
        cu, cv = int(dst.child_start[u]), int(src.child_start[v])
        if any(dst.edge_to[cu + j] != src.edge_to[cv + j] for j in range(A)):
            raise SubgameError(f"subtree mismatch at node {u}: different raise sizes")
        dst_sigma[dst.row[u] : dst.row[u] + A] = src_sigma[src.row[v] : src.row[v] + A]
        stack += list(zip(dst.children(u).tolist(), src.children(v).tolist()))


def nested_root_board(
    fg: FullGame,
    n: int,
    rep: tuple[int, ...],
    settings: SolveSettings,
    gift_rates: dict,
    est_gift_rates: dict,
) -> tuple[dict, list, int]:
    """Each method's full-game strategy (float32 [rows, H]) at root ``n`` on board ``rep``: the
    blueprint (with pseudo-harmonic translation) everywhere, except behind each off-tree action,
    where the refined seat (the one facing it) plays the nested subgame's solution
    (:func:`subgame.nested.off_tree_subgame`: its blueprint range at the node before the action, the
    actor's best-response values there as alternatives, gifts from its preflop decisions as in
    Table 1). Returns ``(tables, diagnostics, fallbacks)``; a nested subgame the blueprint never
    reaches (an empty range) keeps the translation (``fallbacks`` counts them)."""
    from holdem.betting import RAISE
    from subgame.nested import off_tree_subgame

    bp = fg.bp
    tree = fg.tree(n, rep)
    nm = fg.templates[n].node_map
    base = fg.bp_sigma(n, rep)
    out = {m: base.copy() for m in settings.methods}
    diags = []
    fallbacks = 0
    e = Engine(tree)
    for u, c in off_tree_edges(fg, n):
        b = tree.betting(u)
        j = int(np.nonzero(tree.children(u) == c)[0][0])
        edge = int(tree.child_start[u]) + j
        if int(tree.edge_kind[edge]) != RAISE:
            raise SubgameError("only off-tree raises are answered by nested solving")
        o = int(tree.player[u])
        me = 1 - o
        try:
            sub = off_tree_subgame(
                bp, int(nm[u]), b, RAISE, int(tree.edge_to[edge]), rep, me, fg.bets, cache=fg.cache
            )
        except SubgameError:
            fallbacks += 1
            continue
        mass = e.compat_mass(sub.ranges[me])
        sub.gifts = sub.gifts + gift_rates[(n, o)] * mass
        sub.estimate_gifts = sub.estimate_gifts + est_gift_rates[(n, o)] * mass
        for m in settings.methods:
            sol = solve(
                sub,
                m,
                iterations=settings.iterations,
                target_pct_pot=settings.target_pct_pot,
                algo=settings.algo,
            )
            d = sol.diagnostics()
            d.update(root=n, board=rep, node=u)
            diags.append(d)
            copy_subtree_rows(tree, out[m], c, sub.tree, sol.strategy)
    return out, diags, fallbacks


def run_nested_experiment(
    bp: Blueprint,
    full_bets: BetAbstraction,
    settings: SolveSettings,
    log: Callable[[str], None] = print,
    max_boards: Optional[int] = None,
    time_budget: Optional[float] = None,
    seed: int = 0,
) -> dict:
    """Brown & Sandholm's Table 2 on the full game with ``full_bets`` (finer than the blueprint's in
    the last round): the exploitability (exact best response in that full game, where the responder
    may take the off-tree actions) of the blueprint answering them by translation
    (``translation``) and by nested solving with each method. Also the blueprint's exploitability in
    its own game (``no-off-tree``: the same strategy, the responder without the off-tree actions);
    each column minus it is what the off-tree actions win against that answer.

    ``max_boards`` or ``time_budget`` (seconds of solving) stop early: board classes are taken in a
    random order (``seed``), and those not reached keep the translation (``coverage``: the share of
    boards solved)."""
    g = bp.gamedef
    t0 = time.perf_counter()
    plain = FullGame(bp)
    fg = FullGame(bp, full_bets)
    # gifts as in Table 1: the opponent's preflop decisions valued in the blueprint's own game
    pw = CombinedBestResponse(plain)
    rates = preflop_gift_rates(pw, False)
    erates = preflop_gift_rates(pw, True)
    edges = {n: off_tree_edges(fg, n) for n in fg.roots}
    log(
        f"setup and gift rates: {time.perf_counter() - t0:.1f} s; off-tree actions per board: "
        f"{sum(len(v) for v in edges.values())} over {len(fg.roots)} roots"
    )
    order = np.random.default_rng(seed).permutation(len(fg.reps))
    reps = [fg.reps[k] for k in order][: max_boards or None]
    tables = {m: {} for m in settings.methods}
    diags: list = []
    fallbacks = 0
    t1 = time.perf_counter()
    done = []
    for i, rep in enumerate(reps):
        if time_budget is not None and time.perf_counter() - t1 >= time_budget:
            log(f"time budget reached after {i} board classes")
            break
        done.append(rep)
        for n in fg.roots:
            res, d, fb = nested_root_board(fg, n, rep, settings, rates, erates)
            for m in settings.methods:
                tables[m][(n, rep)] = res[m]
            diags += d
            fallbacks += fb
        if (i + 1) % 20 == 0 or i + 1 == len(reps):
            el = time.perf_counter() - t1
            log(f"board classes {i + 1}/{len(reps)}: {el:.0f} s ({el / (i + 1):.2f} s each)")
    t_solve = time.perf_counter() - t1
    scores, brvs = {}, {}
    x, brv = CombinedBestResponse(plain).exploitability()
    scores["no-off-tree"], brvs["no-off-tree"] = x, brv
    cols = ("translation",) + tuple(settings.methods)
    for c in cols:
        x, brv = CombinedBestResponse(fg, tables.get(c, {})).exploitability()
        scores[c], brvs[c] = x, brv
    for c, x in scores.items():
        log(
            f"{c:>16}: {chips_to_mbb(x, g.big_blind):9.2f} mbb/game (off-tree gain {chips_to_mbb(x - scores['no-off-tree'], g.big_blind):8.2f})"
        )
    summary = _solve_summary(diags, settings.methods)
    return {
        "mbb": {c: chips_to_mbb(v, g.big_blind) for c, v in scores.items()},
        "chips": scores,
        "br_values": brvs,
        "diagnostics": summary,
        "fallbacks": fallbacks,
        "board_classes_solved": len(done),
        "board_classes": len(fg.reps),
        "coverage": sum(fg.classes.count[r] for r in done) / len(fg.classes.canon),
        "off_tree_edges": {int(n): v for n, v in edges.items()},
        "seconds": {"solve": t_solve, "total": time.perf_counter() - t0},
    }
