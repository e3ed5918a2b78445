"""``mccfr solve``: safe / nested subgame solving at a match state, or an explicit subgame file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from abstraction.bets import load_bets
from blueprint.blueprint import Blueprint
from holdem.cards import CardError, cards_str, parse_cards
from holdem.state import StateError
from mccfr.cli.common import CLIError, json_opt, run_dir_arg, user_input
from subgame.depth import DepthLimit, default_depth_limit
from subgame.libratus import read_libratus
from subgame.limits import SolveLimits
from subgame.locking import lock_arg, node_frequencies
from subgame.nested import first_off_tree, hand_strategy, solve_state
from subgame.saved import read_saved, save_solve
from subgame.solver import solve as run_solve
from subgame.tree import SubgameError


@click.command()
@click.argument("run_dir", required=False)
@click.option(
    "--matchstate",
    default=None,
    metavar="STR",
    help="Solve for the seat to act at this MATCHSTATE (needs RUN_DIR).",
)
@click.option(
    "--subgame",
    "subgame_file",
    default=None,
    metavar="FILE",
    help="An explicit subgame: a public Libratus endgame file (unsafe only: it has no alternative values).",
)
@click.option(
    "--method",
    default=None,
    metavar="M",
    help="unsafe, resolve, maxmargin, reach-maxmargin, estimate, reach-estimate "
    "[default: reach-maxmargin with RUN_DIR, unsafe with --subgame]",
)
@click.option(
    "--time-budget",
    type=click.FloatRange(min=0.001),
    default=None,
    metavar="S",
    help="Seconds to solve for [default: 2, unless --iterations or --target-pct-pot is given].",
)
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="CFR iterations to run.")
@click.option(
    "--target-pct-pot",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Stop at this exploitability, in percent of the starting pot.",
)
@click.option(
    "--bets",
    default=None,
    help="Bet abstraction inside the subgame [default: subgame: 0.5/1/2 pot, 2.5x, all-in].",
)
@click.option("--algo", type=click.Choice(["dcfr", "cfr+"]), default="dcfr", show_default=True)
@click.option(
    "--hand",
    default=None,
    metavar="CARDS",
    help="With --subgame or --load: print this hand's strategy at the subgame's root (e.g. AsKd).",
)
@click.option(
    "--depth-limit/--full-depth",
    "depth_limit",
    default=None,
    help="End the subgame with its betting round, the opponent choosing among continuation strategies "
    "of the blueprint there (depth-limited solving), or solve to the end of the hand "
    "[default: depth-limited before the last round].",
)
@click.option(
    "--continuations",
    default=None,
    metavar="LIST",
    help="Depth-limited: the opponent's continuation strategies, some of blueprint,fold,call,raise "
    "[default: all four].",
)
@click.option(
    "--bias",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Depth-limited: factor on the biased action class of the continuations [default: 5].",
)
@click.option(
    "--samples",
    type=click.IntRange(min=2),
    default=None,
    help="Depth-limited: cards of the next round walked per CFR iteration, sampled afresh each iteration "
    "[default: every card; the reported exploitability is always exact].",
)
@click.option(
    "--leaf-cards",
    type=click.IntRange(min=3),
    default=None,
    help="Depth-limited: deal the later rounds' cards from a fixed sample of this many of the cards left "
    "[default: 12 from a round with two deals after it (a flop), else every card].",
)
@click.option(
    "--leaf-deals",
    default=None,
    metavar="LIST",
    help="Depth-limited: deal the later rounds' cards along sampled runouts, this many deals of each "
    "later round at each chance node, e.g. 32,1,1 (every deal walked) "
    "[default: 32,1,1 from a round with three deals after it (pre-flop)].",
)
@click.option(
    "--lock",
    "locks",
    multiple=True,
    metavar="FILE_OR_SPEC",
    help="Fix a seat's strategy at nodes of the subgame: a JSON file, or NODE=ACTION:P,ACTION:P;... "
    "(NODE: the betting history from the subgame's root, empty for the root; docs/solving.md). Repeatable.",
)
@click.option(
    "--save",
    "save_path",
    default=None,
    metavar="FILE",
    help="Save the subgame and the solver's state to FILE (reopen with --load).",
)
@click.option(
    "--load",
    "load_path",
    default=None,
    metavar="FILE",
    help="Reopen a saved solve: show it (--node), or continue it (--iterations, --time-budget, "
    "--target-pct-pot) and --save it again. A depth-limited solve needs the blueprint it was solved "
    "with: RUN_DIR, else the blueprint file it names.",
)
@click.option(
    "--node",
    "node_history",
    default=None,
    metavar="HISTORY",
    help="Print the strategy at this node (betting history from the subgame's root, e.g. r900c/).",
)
@json_opt
def solve(
    run_dir,
    matchstate,
    subgame_file,
    method,
    time_budget,
    iterations,
    target_pct_pot,
    bets,
    algo,
    hand,
    depth_limit,
    continuations,
    bias,
    samples,
    leaf_cards,
    leaf_deals,
    locks,
    save_path,
    load_path,
    node_history,
    as_json,
):
    """Re-solve a subgame: the strategy for the seat to act, and how well it was solved.

    \b
    mccfr solve RUN_DIR --matchstate MATCHSTATE:0:12:cc/r250:Ah7d|/Ks9c2d --method reach-maxmargin
    mccfr solve --subgame subgame4.txt --target-pct-pot 0.5 --json

    With RUN_DIR the subgame starts at the match state (on the blueprint's tree), or right after the
    opponent's off-tree bet (nested solving); ranges come from the blueprint's reach, the opponent's
    alternative values from best responses to the blueprint. Before the last round the subgame is
    depth-limited (--full-depth: to the end of the hand): it ends with the round, where the opponent
    picks per hand one of the blueprint's continuation strategies (itself, and biased towards fold,
    call or raise) for the rest of the hand, played out over every later card (or --samples of them
    per iteration; from a flop over the turns and rivers of a fixed sample of 12 cards, --leaf-cards);
    the refined seat plays the blueprint there. Exploitability is (best-response gain
    of seat 0 + of seat 1) / 2 in the game solved (the gadget game for the safe methods), in chips
    and in percent of the subgame's starting pot.
    """
    _check_usage(run_dir, matchstate, subgame_file, load_path, locks, hand)

    with user_input():
        try:
            limits = _limits(time_budget, iterations, target_pct_pot, locks, save_path, load_path)
            sub_bets = load_bets(bets) if bets is not None else None
            if load_path is not None:
                result = _solve_saved(load_path, run_dir, limits, hand)
            elif subgame_file is not None:
                result = _solve_file(subgame_file, method or "unsafe", sub_bets, limits, algo, hand)
            else:
                dl_opts = _depth_options(continuations, bias, samples, leaf_cards, leaf_deals)
                how = (method or "reach-maxmargin", sub_bets, algo, depth_limit, dl_opts)
                result = _solve_matchstate(run_dir_arg(run_dir), matchstate, how, limits)
            sol = result.pop("_solution")
            if node_history is not None:
                result["node_strategy"] = _node_report(sol, node_history)
            result.update(_saved(sol, save_path))
        except SubgameError as exc:
            raise CLIError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result))


def _check_usage(run_dir, matchstate, subgame_file, load_path, locks, hand) -> None:
    """The combinations of sources and options that ``mccfr solve`` refuses (click.UsageError)."""
    if sum(x is not None for x in (matchstate, subgame_file, load_path)) != 1:
        raise click.UsageError(
            "give exactly one of --matchstate STR (with RUN_DIR), --subgame FILE or --load FILE"
        )
    if matchstate is not None and run_dir is None:
        raise click.UsageError("--matchstate needs RUN_DIR (the blueprint to solve from)")
    if matchstate is not None and hand is not None:
        raise click.UsageError("--hand with --matchstate: the match state names the hand already")
    if load_path is not None and locks:
        raise click.UsageError("--lock with --load: a saved solve keeps the locks it was solved with")


def _limits(time_budget, iterations, target, locks, save_path, load_path):
    """The solve's :class:`~subgame.limits.SolveLimits` from the options: a new solve runs 2 s
    unless told otherwise; a loaded one runs only what is asked (none: its strategy re-measured)."""

    none = time_budget is None and iterations is None and target is None
    if load_path is not None:
        return SolveLimits(0 if none else iterations, time_budget, target, keep_state=True)
    lock_spec: dict = {}
    for value in locks:
        for node, strat in lock_arg(value).items():
            if node in lock_spec:
                raise SubgameError(f"--lock: node {node!r} is locked twice")
            lock_spec[node] = strat
    return SolveLimits(
        iterations,
        2.0 if none else time_budget,
        target,
        locks=lock_spec or None,
        keep_state=save_path is not None,
    )


def _depth_options(continuations, bias, samples, leaf_cards, leaf_deals) -> dict[str, Any]:
    """The depth limit's options given (:class:`~subgame.depth.DepthLimit`'s fields), parsed."""
    given = (
        ("continuations", continuations),
        ("bias", bias),
        ("samples", samples),
        ("leaf_cards", leaf_cards),
        ("leaf_deals", leaf_deals),
    )
    out: dict[str, Any] = {k: v for k, v in given if v is not None}
    if leaf_deals is not None:
        try:
            out["leaf_deals"] = tuple(int(x) for x in leaf_deals.split(","))
        except ValueError:
            raise click.BadParameter(
                f"expected deals per later round, e.g. 32,1,1, got {leaf_deals!r}", param_hint="--leaf-deals"
            ) from None
    if continuations is not None:
        out["continuations"] = tuple(x.strip() for x in continuations.split(",") if x.strip())
    return out


def _solve_report(sol) -> dict[str, Any]:
    d = sol.diagnostics()
    click.echo(
        f"{d['method']}: {d['iterations']:,} iterations in {d['elapsed_ms'] / 1000:.2f} s; exploitability "
        f"{d['exploitability']:.4g} chips ({d['exploitability_pct_pot']:.3g}% of the pot {d['pot']:,}); "
        f"tree {d['nodes']:,} nodes x {d['hands']:,} hands, {d['memory_mb']:.0f} MB"
    )
    if d["min_margin"] is not None:
        click.echo(
            f"  opponent's minimum margin {d['min_margin']:.4g} chips (>= 0: no hand gains over its alternative)"
        )
    if d.get("depth_limited"):
        click.echo(
            f"  depth-limited at the end of the round: {d['leaves']:,} leaves, the opponent choosing among "
            f"{', '.join(d['continuations'])} (bias {d['bias']:g}); continuations {d['continuation_nodes']:,} "
            f"nodes built in {d['leaf_build_ms'] / 1000:.2f} s; the exploitability is the depth-limited game's"
        )
        if d.get("leaf_cards"):
            click.echo(
                f"  the later cards dealt from a fixed sample of {len(d['leaf_cards'])}: "
                f"{cards_str(d['leaf_cards'], sol.subgame.game.num_suits)} (an unbiased estimate of every card's values)"
            )
        if d.get("leaf_deals"):
            click.echo(
                "  the later cards dealt along sampled runouts, "
                + " x ".join(str(x) for x in d["leaf_deals"])
                + " deals a chance node (an unbiased estimate of every card's values)"
            )
    return d


def _saved(sol, save_path) -> dict[str, Any]:
    """Save ``sol`` when asked; the report's keys."""
    if save_path is None:
        return {}

    n = save_solve(save_path, sol)
    click.echo(f"saved to {save_path} ({n:,} bytes)")
    return {"saved": str(save_path), "saved_bytes": n}


def _node_report(sol, history: str) -> dict[str, Any]:

    freq = node_frequencies(sol, history)
    click.echo(f"node {history!r}: " + ", ".join(f"{a} {p:.1%}" for a, p in freq["strategy"].items()))
    return freq


def _solve_saved(path, run_dir, limits, hand=None) -> dict[str, Any]:

    def blueprint(rec: dict):
        """A depth-limited solve's blueprint: RUN_DIR's newest, else the file the solve names."""

        warn = lambda msg: click.echo(f"warning: {msg}", err=True)  # noqa: E731
        if run_dir is not None:
            return Blueprint.load(run_dir_arg(run_dir), log=warn)
        src = Path(str(rec.get("source")))
        if src.is_file():
            click.echo(f"the depth-limited solve's blueprint: {src}", err=True)
            return Blueprint.read_file(src)
        return None

    saved = read_saved(path, blueprint=blueprint)
    before = saved.state.iterations
    sol = run_solve(
        saved.subgame,
        saved.method,
        dataclasses.replace(limits, locks=saved.locks),
        algo=saved.algo,
        precision=saved.precision,
        resume=saved.state,
    )
    click.echo(f"{path}: {before:,} iterations saved, {sol.iterations - before:,} run now")
    d = _solve_report(sol)
    out = {**d, "loaded": str(path), "_solution": sol}
    if hand is not None:
        out["hand_strategy"] = _hand_report(sol, hand)
    return out


def _hand_report(sol, hand: str) -> dict[str, float]:
    """``hand``'s strategy at the root of the solved subgame, printed; a SubgameError for cards
    that are no hand of the game or that the subgame's board holds."""

    g = sol.subgame.game
    try:
        cards = [int(c) for c in parse_cards(hand, g.num_suits, g.num_ranks)]
    except CardError as exc:
        raise SubgameError(f"--hand {hand!r}: {exc}") from None
    if len(cards) != g.num_hole_cards or len(set(cards)) != len(cards):
        raise SubgameError(f"--hand {hand!r}: expected {g.num_hole_cards} different hole cards")
    if set(cards) & set(int(c) for c in sol.subgame.board):
        raise SubgameError(f"--hand {hand!r}: the subgame's board holds one of these cards")
    hs = sol.hand_strategy(tuple(cards))
    click.echo(f"{hand}: " + ", ".join(f"{a} {p:.3f}" for a, p in hs.items()))
    return hs


def _solve_file(path, method, bets, limits, algo, hand) -> dict[str, Any]:

    sub = read_libratus(path, bets)
    sol = run_solve(sub, method, limits, algo=algo)
    d = _solve_report(sol)
    t = sub.public_tree()
    actor = int(t.player[0])
    w = sub.ranges[actor]
    freq = {a: float((v * w).sum() / w.sum()) for a, v in sol.root_strategy().items()}
    click.echo(
        f"seat {actor} to act at the root; its range plays: "
        + ", ".join(f"{a} {p:.1%}" for a, p in freq.items())
    )
    out = {**d, "strategy": freq, "actor": actor}
    if hand is not None:
        out["hand_strategy"] = _hand_report(sol, hand)
    return {**out, "_solution": sol}


def _solve_matchstate(path, matchstate, how, limits) -> dict[str, Any]:
    """Solve at ``matchstate`` from RUN_DIR's blueprint; ``how``: (method, the subgame's bets,
    algorithm, the depth-limit option, the depth limit's options)."""
    method, bets, algo, depth_limit, dl_opts = how

    bp = Blueprint.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    try:
        state = bp.game.state(matchstate)
    except StateError as exc:
        raise SubgameError(f"bad match state: {exc}") from None
    off = first_off_tree(bp, state) if state.viewer is not None and not state.is_terminal() else None

    dl = depth_limit
    if dl_opts and depth_limit is not False:
        if "leaf_cards" not in dl_opts and "leaf_deals" not in dl_opts:
            # the default for the state's round (its depth limit's root)
            dft = default_depth_limit(bp, root_round=state.betting.round)
            dl_opts["leaf_cards"], dl_opts["leaf_deals"] = dft.leaf_cards, dft.leaf_deals
            dl_opts.setdefault("samples", dft.samples)
        dl = DepthLimit(bp, auto=depth_limit is None, **dl_opts)
    sol, node = solve_state(bp, state, method, limits, bets=bets, depth_limit=dl, algo=algo)
    d = _solve_report(sol)
    hs = hand_strategy(sol, node, state)
    click.echo(
        "strategy: "
        + ", ".join(f"{a} {p:.3f}" for a, p in hs.items())
        + (" (nested: off-tree bet)" if off is not None else "")
    )
    return {**d, "strategy": hs, "nested": off is not None, "node": node, "_solution": sol}
