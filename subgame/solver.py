"""Solving a subgame: CFR+ or DCFR over hand ranges, with the safe-solving gadgets.

:func:`solve` takes a :class:`~subgame.types.Subgame` (a public root, each seat's *range* over its
private hands, a bet abstraction, and for the safe methods the opponent's alternative values; the
seat being refined is ``refine``, the other seat the *opponent*, whose hands the gadgets protect
against), runs CFR iterations on an :class:`~subgame.engine.Engine` of its tree on a schedule of
iterations, seconds, a target exploitability or a deadline, and returns a
:class:`~subgame.types.Solution`.

Values are counterfactual: the opponent's value of hand ``h`` is ``sum_{h'} r(h') u(h, h')`` over the
refined seat's hands ``h'`` compatible with ``h``, with ``r`` the refined seat's range (chips, net
for the whole hand). ``alt[h]`` (the opponent's best-response value against the blueprint, in those
units) is what it could get by playing to this subgame differently, or by the blueprint itself.

Methods:

``unsafe``            both seats' ranges from the blueprint, solved as a game of its own.
``resolve``           (Burch et al. 2014) the opponent may, per hand, take ``alt[h]`` instead of
                      entering; its entering hands keep their blueprint weights.
``maxmargin``         (Moravcik et al. 2016) the opponent picks the hand it enters with, paid the
                      margin ``(value - alt) / w`` (``w[h]`` its compatible mass of refined-seat
                      hands): CFR on this gadget maximises the minimum margin.
``reach-maxmargin``   (Brown & Sandholm 2017) maxmargin with ``alt + gifts``: what the opponent gave
                      up by its earlier actions on the path, which the refined seat may give back.
``estimate``          maxmargin with the blueprint's own values of the opponent instead of its best
                      response values (not safe).
``reach-estimate``    estimate with gifts measured on those values (not safe).

Exploitability follows OpenSpiel: (best-response value of seat 0 + of seat 1) / 2, in chips per
subgame (each seat's hands weighted by the ranges), and as a percentage of the starting pot. For the
gadget methods the reported ``exploitability`` is half the saddle-point gap of the gadget game they
solve (its NashConv / 2); ``subgame_exploitability`` is the profile's in the plain subgame.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import numpy as np

from blueprint.algo import SUBGAME_DCFR_GAMMA, SUBGAME_DCFR_REGRET_LAG, dcfr_factors
from subgame import kernels as K
from subgame.continuation import build_leaf_model
from subgame.depth_engine import DepthLimitedEngine, make_engine
from subgame.engine import Engine, counted_solve
from subgame.interrupt import interruptible
from subgame.limits import DEFAULT_ITERATIONS, SolveLimits
from subgame.locking import resolve_locks
from subgame.tree import SubgameError, board_hands
from subgame.types import Solution, SolveState, Subgame

METHODS = ("unsafe", "resolve", "maxmargin", "reach-maxmargin", "estimate", "reach-estimate")
SAFE = ("resolve", "maxmargin", "reach-maxmargin")
ALGOS = ("dcfr", "cfr+")


def subgame_engine(
    sub: Subgame, dtype=np.float64, support: Optional[np.ndarray] = None, threads: Optional[int] = None
) -> Engine:
    """The solver's :class:`~subgame.engine.Engine` for ``sub``'s tree (a depth-limited subgame's
    values its leaves, :mod:`subgame.depth`, whose walks use one thread; its leaf model is built
    once and kept on ``sub.depth_limit``). ``threads``: see :class:`~subgame.engine.Engine`."""
    t = sub.public_tree()
    if sub.depth_limit is None:
        return Engine(t, dtype, support, threads)
    dl = sub.depth_limit
    if dl.model is None or dl.model.me != sub.seat:
        dl.model = build_leaf_model(t, dl.blueprint, sub.seat, dl, dl.max_nodes)
    return make_engine(t, dtype, support, dl.model, dl)


def exploitability(sub: Subgame, sigma: np.ndarray, engine: Optional[Engine] = None):
    """(exploitability in chips, [BR values of seat 0, seat 1] per hand) of the full-width ``sigma`` in ``sub``."""
    e = engine or Engine(sub.public_tree())
    return e.exploitability(sub.ranges, e.compress(sigma))


def iteration_weights(algo: str, t: int) -> tuple[float, float, bool, float, float]:
    """The kernel's weights of iteration ``t >= 1``: (positive regret factor, negative regret
    factor, CFR+ flooring, strategy-sum factor, weight of this iteration's strategy). ``dcfr``
    discounts with :func:`blueprint.algo.dcfr_factors`: the strategy sum at boundary ``t - 1``
    with exponent :data:`~blueprint.algo.SUBGAME_DCFR_GAMMA`, the regrets at boundary
    ``t - 1 - SUBGAME_DCFR_REGRET_LAG`` (at least 0); ``cfr+`` floors regrets and weights iteration
    ``t`` by ``t`` (linear averaging)."""
    if algo == "dcfr":
        _, _, strat = dcfr_factors(t - 1, gamma=SUBGAME_DCFR_GAMMA)
        pos, neg, _ = dcfr_factors(max(t - 1 - SUBGAME_DCFR_REGRET_LAG, 0))
        return (pos, neg, False, strat, 1.0)
    return (1.0, 1.0, True, 1.0, float(t))


def _rm(x: np.ndarray) -> np.ndarray:
    pos = np.maximum(x, 0.0)
    s = pos.sum(axis=-1, keepdims=True)
    n = x.shape[-1]
    return np.where(s > 0, pos / np.where(s > 0, s, 1.0), 1.0 / n)


@counted_solve
def solve(
    sub: Subgame,
    method: str = "unsafe",
    limits: Optional[SolveLimits] = None,
    *,
    algo: str = "dcfr",
    precision: str = "single",
    resume: Optional[SolveState] = None,
    **keywords: Any,
) -> Solution:
    """Solve ``sub`` with ``method`` within ``limits`` (a :class:`~subgame.limits.SolveLimits`;
    ``keywords``, its fields by name, e.g. ``iterations=200``, build one or replace some of its
    fields): until ``iterations``, ``time_budget`` seconds, or an exploitability (unsafe) / gadget
    gap (other methods) of ``target_pct_pot`` % of the pot; with none of the three,
    :data:`~subgame.limits.DEFAULT_ITERATIONS` iterations.

    With a target, the exploitability is checked (two best-response walks) at iteration
    ``check_every``, then three quarters of the way to where the fall between the last two checks
    (fitted as ``t^-alpha``, ``alpha`` in [0.5, 2.5], 1 after the first check) would reach the
    target, at least ``check_every // 5`` and at most ``4 * check_every`` iterations on.

    ``deadline`` (a :func:`time.perf_counter` instant) is a hard limit on the whole call: before
    every iteration the loop checks that the iteration (as long as the slowest recent one) and the
    final exploitability check (two or, for the gadget methods, three best-response walks: one or
    one and a half mean iterations, times the engine's ``measure_factor``) still fit, and stops
    otherwise (possibly after zero iterations: the strategy is then uniform); once the check could
    no longer fit at all, and before ``min_iterations`` iterations, the loop iterates up to the
    deadline instead. The final check is skipped when it no longer fits, and the exploitability
    fields are then None. ``stop`` (a :class:`threading.Event`) ends the loop at the next
    iteration, also skipping the final check. ``Solution.timing`` has the seconds spent building
    the tree (``tree_s``) and the solver's engine (``engine_s``: a depth-limited subgame's leaf
    model), per iteration (``iter_s``) and in the final check (``measure_s``).

    ``precision``: ``single`` keeps the walk's reach and value vectors in float32 (terminal sums in
    float64), ``double`` in float64; regrets and average strategies are float32 either way.

    ``threads``: threads that walk the boards of a chance node at once (:class:`Engine`; None:
    numba's thread count) while this is the only solve running in the process (concurrent solves
    walk on one thread each). The result does not depend on it.

    ``measure_samples``: a depth-limited subgame's exploitability checks walk this many of the next
    deal's cards, a fixed uniform sample, instead of all of them (:mod:`subgame.depth`: an estimate
    that errs high on average, for a check that must fit a time budget; ``Solution.measure_cards``
    records it): always without a deadline; with one, when an exact check (priced after the
    second iteration) would take more than a quarter of the time from the call to the deadline, or
    when at the end only a sampled check still fits.
    Ignored for full-depth subgames, whose checks are exact.

    ``locks``: node locks (:mod:`subgame.locking`: ``{history: {action: probability or one per
    hand}}``, checked against the tree, :class:`~subgame.locking.LockError` naming a bad one).
    At a locked node the seat to act plays the lock (its current and average strategy are the
    lock; its regrets there are never used), and the rest is solved against it.
    ``exploitability`` (and ``subgame_exploitability``, the gadget's gap, ``min_margin`` and
    ``br_values``) are then the *locked game's*: each seat's best response keeps the lock at every
    locked node and best-responds everywhere else, so a seat locked at every node gains nothing
    and the figure is half the other seat's gain by best-responding.

    ``resume``: a :class:`SolveState` (``Solution.state``, or a saved solve's) to go on from, with
    the same subgame, method, algorithm, precision and locks: ``iterations`` then counts the
    iterations of this call (0: none, the saved strategy re-measured), and ``n`` then ``m``
    iterations give exactly the tables of ``n + m`` in one call (a depth-limited solve's state also
    has its leaf choices and card-sampling generator, :class:`~subgame.types.LeafState`).
    ``keep_state``: keep the tables in ``Solution.state`` (always with ``resume``; the tables are
    then the caller's, updated in place).
    """
    lim = SolveLimits.build(limits, **keywords)
    if method not in METHODS:
        raise SubgameError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
    if algo not in ALGOS:
        raise SubgameError(f"unknown algorithm {algo!r}: expected one of {', '.join(ALGOS)}")
    iterations = lim.iterations if lim.bounded else DEFAULT_ITERATIONS
    time_budget, target_pct_pot, check_every = lim.time_budget, lim.target_pct_pot, lim.check_every
    deadline, stop, threads, locks = lim.deadline, lim.stop, lim.threads, lim.locks
    min_iterations = lim.min_iterations
    measure_samples, keep_state = lim.measure_samples, lim.keep_state
    if resume is not None and (resume.algo, resume.precision) != (algo, precision):
        raise SubgameError(
            f"this solve ran with {resume.algo} / {resume.precision} precision: continue it with the same, "
            f"not {algo} / {precision}"
        )
    t0 = time.perf_counter()
    t = sub.public_tree()
    sub.validate()
    tree_s = time.perf_counter() - t0
    o, me = sub.opponent, sub.seat
    alt = None
    if method != "unsafe":
        base = sub.estimate if method in ("estimate", "reach-estimate") else sub.alt
        if base is None:
            what = (
                "the blueprint's own values" if "estimate" in method else "alternative (best-response) values"
            )
            raise SubgameError(
                f"method {method!r} needs the opponent's {what}; this subgame has none "
                "(an explicit subgame without them supports 'unsafe' only)"
            )
        alt = base.copy()
        if method.startswith("reach-"):
            g = sub.estimate_gifts if method == "reach-estimate" else sub.gifts
            if g is not None:
                alt += np.maximum(g, 0.0)
    if precision not in ("single", "double"):
        raise SubgameError(f"unknown precision {precision!r}: expected 'single' or 'double'")
    bh = board_hands(t)
    H = bh.num_hands
    ranges = sub.ranges
    valid0 = bh.valid[t.board[0]]
    w_opp = Engine.compat_mass_of(t, ranges[me])  # opponent hand -> refined seat's compatible mass
    elig = (w_opp > 1e-300) & valid0
    # the hands each seat may hold: its range's, and for the margin gadgets every eligible opponent hand
    support = np.stack([ranges[0] > 0, ranges[1] > 0]) & valid0
    if method not in ("unsafe", "resolve"):
        support[o] = elig
    t_engine = time.perf_counter()
    with interruptible(deadline, stop):  # a depth-limited engine builds its continuations
        e = subgame_engine(sub, np.float32 if precision == "single" else np.float64, support, threads)
    engine_s = time.perf_counter() - t_engine
    measure_cards = None  # the cards a sampled check walks (None: exact)

    def sample_check() -> None:
        """Check on ``measure_samples`` cards (a fixed sample per board) from now on."""
        nonlocal measure_cards
        board_seed = sum(int(c) << (6 * i) for i, c in enumerate(t.root_board))
        measure_cards = e.set_measure_sample(measure_samples, board_seed)

    if measure_samples and deadline is None:
        sample_check()
    lk = resolve_locks(t, locks) if locks else None
    lock_table = lk.table(t, e.lists) if lk is not None else None
    if lk is not None:
        e.fixed[:] = lk.fixed
    g_shape = (H, 2) if method == "resolve" else (H,)
    if resume is not None:
        regret, strat_sum, g_reg, g_sum = resume.regret, resume.strat_sum, resume.g_reg, resume.g_sum
        if regret.shape != (e.size,) or strat_sum.shape != (e.size,) or g_reg.shape != g_shape:
            raise SubgameError(
                f"the solver state to continue has {regret.size:,} table entries and a gadget of shape "
                f"{g_reg.shape}; this subgame's solver has {e.size:,} and {g_shape} (another subgame or method?)"
            )
        if isinstance(e, DepthLimitedEngine):
            if resume.leaf is None:
                raise SubgameError(
                    "the solver state to continue has no leaf state: it is not of a depth-limited solve"
                )
            e.set_leaf_state(resume.leaf)
        elif resume.leaf is not None:
            raise SubgameError(
                "the solver state to continue is of a depth-limited solve; this subgame is not depth-limited"
            )
    else:
        regret = np.zeros(e.size, np.float32)
        strat_sum = np.zeros(e.size, np.float32)
        g_reg = np.zeros(g_shape)
        g_sum = np.zeros_like(g_reg)
    if lock_table is not None:
        lock_table.impose(regret, strat_sum)
    pot = sub.pot
    history = []
    it = it0 = resume.iterations if resume is not None else 0
    gap = margin = None

    def opp_reach(gstrat) -> np.ndarray:
        rr = ranges.copy()
        if method == "resolve":
            rr[o] = ranges[o] * gstrat[:, 1]
        elif method != "unsafe":
            rr[o] = np.where(elig, gstrat / np.where(elig, w_opp, 1.0), 0.0)
        return rr

    def gadget_strategy(acc) -> np.ndarray:
        if method == "resolve":
            return _rm(acc)
        x = np.where(elig, acc, 0.0)
        pos = np.maximum(x, 0.0)
        s = pos.sum()
        return pos / s if s > 0 else elig / max(elig.sum(), 1)

    def measure():
        avg = e.average(strat_sum)
        expl, (v0, v1) = e.exploitability(ranges, avg)
        g = m = None
        if method != "unsafe":
            gavg = (
                gadget_strategy(g_sum)
                if method != "resolve"
                else g_sum / np.maximum(g_sum.sum(1, keepdims=True), 1e-300)
            )
            if method == "resolve":
                gavg = np.where(g_sum.sum(1, keepdims=True) > 0, gavg, 0.5)
            rr = opp_reach(gavg)
            # the opponent's best response inside the subgame: a seat's own reach does not enter its
            # counterfactual values, so it is the one just walked with the ranges (a walk saved)
            vb_o = (v0, v1)[o]
            vb_me = e.walk_compact(
                avg, rr, me, K.MODE_BR
            )  # refined seat's best response to the gadget opponent
            if method == "resolve":
                z = float(ranges[o] @ w_opp)
                best_o = float(ranges[o] @ np.maximum(alt, vb_o))
                worst_o = -float(ranges[me] @ vb_me) + float(ranges[o] @ ((1 - gavg[:, 1]) * alt))
                g = (best_o - worst_o) / z
            else:
                marg = np.where(elig, (vb_o - alt) / np.where(elig, w_opp, 1.0), -np.inf)
                best_o = float(marg.max())
                worst_o = -float(ranges[me] @ vb_me) - float(
                    np.where(elig, gavg * alt / np.where(elig, w_opp, 1.0), 0).sum()
                )
                g = best_o - worst_o
            m = float(np.min(np.where(elig, (alt - vb_o) / np.where(elig, w_opp, 1.0), np.inf)))
        return avg, expl, g, m, (v0, v1)

    # an exploitability check, in iterations (two walks each): two best-response walks, and for the
    # gadget methods one more (the refined seat's against the gadget's reach)
    check_iters = 1.0 if method == "unsafe" else 1.5
    next_check = check_every  # iteration of the next exploitability check (with a target)
    last = None  # the last measure()
    prev: Optional[tuple[int, float]] = None  # (iteration, gap in % of the pot) of the last check
    if resume is not None:
        next_check, prev = resume.next_check, resume.prev
    iter_est = 0.0  # seconds per iteration: the slowest recent one (decays slowly)
    iter_total = 0.0  # seconds in iterations so far (their mean prices the final check)
    first_s = 0.0  # the first iteration's
    measure_s = None  # seconds of one exploitability check, once one has run

    def out_of_time(now: float) -> bool:
        if stop is not None and stop.is_set():
            return True
        if deadline is None:
            return False
        final = check_s()
        if now + iter_est + final <= deadline:
            return False  # another iteration and the final check fit
        if it < min_iterations:  # too few to be of use: iterate while one fits, the check or not
            return now + iter_est > deadline
        if now + final <= deadline:
            return True  # stop: the final check still fits
        return now + iter_est > deadline  # the check no longer fits anyway: iterate to the deadline

    def check_s() -> float:
        """Seconds the final check will take: the last one's, else the mean iteration's (walks of
        the whole tree: a slow iteration of a loaded machine is not the rule) times its walks;
        none without one (``final_check=False``)."""
        if not lim.final_check:
            return 0.0
        if measure_s is not None:
            return measure_s
        if it >= 2:  # the first iteration may have compiled kernels or warmed caches: left out
            mean = (iter_total - first_s) / (it - 1)
        else:
            mean = iter_total if it else iter_est
        return check_iters * mean * e.measure_factor

    done = out_of_time(time.perf_counter()) or (iterations is not None and iterations <= 0)
    while not done:
        t_it = time.perf_counter()
        it += 1
        wts = iteration_weights(algo, it)
        for p in (0, 1):
            gstrat = gadget_strategy(g_reg) if method != "unsafe" else None
            rr = opp_reach(gstrat)
            v = e.walk_compact(None, rr, p, K.MODE_CFR, regret, strat_sum, wts)
            if lock_table is not None:  # the walk updated p's locked entries: the lock again
                lock_table.impose(regret, strat_sum, p)
            if p == o and method != "unsafe":
                assert alt is not None and gstrat is not None  # the gadget's (set for every safe method)
                if method == "resolve":
                    vals = np.stack([alt, v], 1)
                    cur = (gstrat * vals).sum(1, keepdims=True)
                else:
                    vals = np.where(elig, (v - alt) / np.where(elig, w_opp, 1.0), 0.0)
                    cur = float(gstrat @ vals)
                inst = vals - cur
                if algo == "cfr+":
                    g_reg = np.maximum(g_reg + inst, 0.0)
                    g_sum += it * gstrat
                else:
                    g_reg = np.where(g_reg > 0, g_reg * wts[0], g_reg * wts[1]) + inst
                    g_sum = g_sum * wts[3] + gstrat
        now = time.perf_counter()
        iter_est = max(now - t_it, 0.9 * iter_est)
        iter_total += now - t_it
        if it == 1:
            first_s = now - t_it
        if it == 2 and measure_samples and deadline is not None and check_s() > 0.25 * (deadline - t0):
            sample_check()  # an exact check would take too much of the time: a sampled one
        el = now - t0
        if iterations is not None and it - it0 >= iterations:
            done = True
        if time_budget is not None and el >= time_budget:
            done = True
        if target_pct_pot is not None and (it >= next_check or done) and not out_of_time(now):
            tm = time.perf_counter()
            last = measure()
            measure_s = time.perf_counter() - tm
            history.append((it, time.perf_counter() - t0, last[1]))
            crit = (last[2] / 2 if last[2] is not None else last[1]) / pot * 100
            if crit <= target_pct_pot:
                done = True
            else:  # check where the gap's fall since the last check (as t^-alpha) would reach the target
                alpha = 1.0
                if prev is not None and prev[1] > crit:
                    alpha = min(2.5, max(0.5, np.log(prev[1] / crit) / np.log(it / prev[0])))
                # three quarters of the way there: fewer checks than every check_every iterations
                # (9 -> 5 on the Libratus turn endgame), rarely past the crossing (BENCHMARKS.md, "Subgame solver against postflop-solver")
                step = int(np.ceil(0.75 * (it * (crit / target_pct_pot) ** (1.0 / alpha) - it)))
                next_check = it + min(4 * check_every, max(1, check_every // 5, step))
                prev = (it, crit)
        if out_of_time(time.perf_counter()):
            done = True
    iter_s = (time.perf_counter() - t0 - tree_s - engine_s) / (it - it0) if it > it0 else 0.0
    timing = {"tree_s": tree_s, "engine_s": engine_s, "iter_s": iter_s}

    def full_strategy(compact: np.ndarray) -> np.ndarray:
        """The solution's strategy for every hand: expanded, the locks over it (hands outside the
        lists play the lock at a locked node)."""
        full = e.expand(compact)
        return lk.overlay(t, full) if lk is not None else full

    def kept() -> Optional[SolveState]:
        if not keep_state and resume is None:
            return None
        leaf = e.leaf_state() if isinstance(e, DepthLimitedEngine) else None
        return SolveState(regret, strat_sum, g_reg, g_sum, it, next_check, prev, algo, precision, leaf)

    state = t.memory_bytes() + bh.memory_bytes() + e.memory_bytes() + regret.nbytes + strat_sum.nbytes
    if last is None or history[-1][0] != it:
        now = time.perf_counter()
        final = check_s()
        stopped = stop is not None and stop.is_set()
        late = deadline is not None and now + final > deadline
        if (
            late
            and lim.final_check
            and not stopped
            and measure_samples
            and measure_cards is None
            and measure_s is None
        ):
            sample_check()  # no time for an exact check: a sampled one, if that fits
            final = check_s()
        if stopped or not lim.final_check or (deadline is not None and now + final > deadline):
            # no time left for the final check: the average strategy alone
            avg = full_strategy(e.average(strat_sum))
            el = time.perf_counter() - t0
            return Solution(
                sub,
                method,
                avg,
                it,
                el,
                None,
                None,
                None,
                None,
                None,
                None,
                history,
                state,
                {**timing, "measure_s": None},
                None,
                kept(),
                lk,
            )
        tm = time.perf_counter()
        last = measure()
        measure_s = time.perf_counter() - tm
        history.append((it, time.perf_counter() - t0, last[1]))
    avg, expl, gap, margin, brv = last
    el = time.perf_counter() - t0
    solved = expl if gap is None else gap / 2
    return Solution(
        sub,
        method,
        full_strategy(avg),
        it,
        el,
        solved,
        solved / pot * 100,
        expl,
        gap,
        margin,
        brv,
        history,
        state,
        {**timing, "measure_s": measure_s},
        measure_cards,
        kept(),
        lk,
    )
