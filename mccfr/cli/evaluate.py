"""``mccfr eval`` (exact exploitability, LBR, duplicate matches) and ``mccfr export``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from blueprint.blueprint import Blueprint
from blueprint.player import KnownPlayer
from blueprint.session import exact_eval_problem, exact_measure
from blueprint.trainer import Trainer
from holdem.game import Game
from mccfr.cli.common import CLIError, expl_unit, is_storage_uri, json_opt, run_dir_arg, user_input
from mccfr.evaluation.aivat import AIVAT
from mccfr.evaluation.lbr import LBRError, LocalBestResponse, default_jobs, parse_menu
from mccfr.evaluation.lbr_opponents import Hands
from mccfr.evaluation.lbr_solving import SolvingOpponent
from mccfr.evaluation.match import exact_value, play_match
from mccfr.evaluation.match_n import play_match_n, seatings_of
from mccfr.evaluation.players import BlueprintPlayer, player_from_spec
from mccfr.evaluation.solving import SolvingPlayer

if TYPE_CHECKING:
    from blueprint.player import Player
    from holdem.game import Game
    from mccfr.evaluation.match import MatchResult


@click.command(name="eval")
@click.argument("run_dir", required=False)
@click.option("--exploitability", "exploitability", is_flag=True, help="Exact exploitability (small games).")
@click.option(
    "--game",
    "game_name",
    default=None,
    help="Game of a match without RUN_DIR: a preset (kuhn, leduc, hulhe, hunl, ...) or a .game file.",
)
@click.option(
    "--player",
    "player_spec",
    default=None,
    metavar="SPEC",
    help="Player A: RUN_DIR, always-call, always-raise, random, kuhn-fixed, kuhn-greedy "
    "(default: the RUN_DIR argument).",
)
@click.option(
    "--vs",
    "vs_specs",
    multiple=True,
    metavar="SPEC",
    help="Player B: play a duplicate match against it. Repeat for several opponents (--vs A --vs B): "
    "one match each, on the same deals, and a table with a row per opponent.",
)
@click.option(
    "--hands",
    type=click.IntRange(min=2),
    default=10_000,
    show_default=True,
    help="Hands of the match (whole duplicate pairs: each deal twice, seats swapped).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the deals and the players.")
@click.option(
    "--aivat",
    "aivat",
    is_flag=True,
    help="Match: also score each hand by AIVAT (the luck of the cards and of both players' mixed "
    "choices taken out, unbiased): the same mean from several times fewer hands. Both players' "
    "strategies must be known (runs, +solve players, baselines).",
)
@click.option(
    "--allin-ev",
    "allin_ev",
    is_flag=True,
    help="Match: score each duplicate pair by its expectation over the board cards dealt after both "
    "hands were decided (all-in before the river): the same mean, a narrower interval.",
)
@click.option(
    "--lbr",
    "lbr",
    is_flag=True,
    help="Local best response (Lisy & Bowling 2017): a lower bound on exploitability, for big games.",
)
@click.option(
    "--lbr-actions",
    "lbr_actions",
    default="fcpa",
    show_default=True,
    metavar="MENU",
    help="LBR's raises: fc (none), fcpa (pot, all-in), pot-fractions (0.5, 0.75, 1, 1.5, 2 pots, "
    "all-in), or a list such as 0.5,1,allin.",
)
@click.option(
    "--lbr-preflop",
    "lbr_preflop",
    type=click.Choice(["menu", "call"]),
    default="menu",
    show_default=True,
    help="LBR in the first round: use the menu, or just check/call (cheaper, "
    "the 2017 study's setting; weak against pre-flop all-ins).",
)
@click.option(
    "--lbr-flop",
    "lbr_flop",
    type=click.Choice(["menu", "call"]),
    default="menu",
    show_default=True,
    help="LBR in the second round (the flop): use the menu, or just check/call (the 2017 study's "
    "four settings are --lbr-preflop x --lbr-flop).",
)
@click.option(
    "--lbr-reraise",
    "lbr_reraise",
    is_flag=True,
    help="LBR values each raise seeing the opponent's re-raises (folding or calling them), not only "
    "its folds and calls: a stronger lower bound than the 2017 study's estimate.",
)
@click.option(
    "--lbr-jobs",
    "lbr_jobs",
    type=click.IntRange(min=1, max=1024),
    default=None,
    help="LBR: processes that play deals at once (default: every core this process may use).",
)
@click.option(
    "--lbr-log",
    "lbr_log",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    metavar="FILE",
    help="LBR: write each finished deal's values to FILE (JSON lines) as the run goes; given "
    "again with the same settings, the run plays only the deals FILE does not have.",
)
@click.option(
    "--solve-from",
    "solve_from",
    type=click.Choice(["river", "turn", "flop"]),
    default=None,
    help="With --lbr --player RUN_DIR+solve:METHOD: the first round the opponent solves "
    "(default river; turn and flop solve depth-limited subgames, the flop's on a fixed sample of "
    "the later cards).",
)
@click.option(
    "--solve-iterations",
    "solve_iterations",
    type=click.IntRange(min=1, max=100_000),
    default=None,
    help="With --lbr --player RUN_DIR+solve:METHOD: iterations per solve (default 200; a fixed "
    "count, so runs repeat).",
)
@json_opt
def eval_(
    run_dir,
    exploitability,
    game_name,
    player_spec,
    vs_specs,
    hands,
    seed,
    aivat,
    allin_ev,
    lbr,
    lbr_actions,
    lbr_preflop,
    lbr_flop,
    lbr_reraise,
    lbr_jobs,
    lbr_log,
    solve_from,
    solve_iterations,
    as_json,
):
    """Evaluate a run's blueprint (exact exploitability, local best response) or play a duplicate match.

    \b
    mccfr eval RUN_DIR --exploitability
    mccfr eval RUN_DIR --lbr --lbr-actions fcpa --hands 4000
    mccfr eval RUN_DIR --lbr --player RUN_DIR+solve:reach-maxmargin --solve-from river --hands 400
    mccfr eval RUN_DIR --lbr --hands 20000 --lbr-jobs 2 --lbr-log lbr.jsonl   (again: continues)
    mccfr eval --game kuhn --player kuhn-fixed --vs random --hands 20000
    mccfr eval RUN_DIR --vs always-call --hands 20000     (the run's blueprint as player A)
    mccfr eval RUN_DIR --vs overbet:9.5 --vs minraise --vs random --hands 20000
    mccfr eval --player RUN_DIR --vs random --hands 20000
    mccfr eval --player RUN_DIR+solve:reach-maxmargin --vs RUN_DIR --hands 2000 --aivat

    A match reports player A's mean result (chips/hand; mbb/game in games with a big blind) with
    a 95% interval over the duplicate pairs, its win rate (hands won), and for small games the
    exact expected value computed from the game tree. With several --vs, one match per opponent
    (the same seed, so the same deals) and a table of the results; --json then gives them as a
    list under "matches" (one --vs: the match's keys at the top level). LBR reports its mean winnings against the
    blueprint (or --player SPEC: a run or a baseline) over --hands hands, each deal played from
    both seats, with a 95% interval: a lower bound on the exploitability.
    """
    if (solve_from is not None or solve_iterations is not None) and not (
        lbr and player_spec is not None and "+solve:" in player_spec
    ):
        raise click.UsageError(
            "--solve-from and --solve-iterations go with --lbr --player RUN_DIR+solve:METHOD"
        )
    if (lbr_jobs is not None or lbr_log is not None) and not lbr:
        raise click.UsageError("--lbr-jobs and --lbr-log go with --lbr")
    if lbr and vs_specs:
        raise click.UsageError("--lbr plays against one strategy (RUN_DIR or --player SPEC); drop --vs")
    if aivat and not vs_specs:
        raise click.UsageError("--aivat scores a match: give --vs SPEC (the opponent)")
    if not exploitability and not vs_specs and not lbr:
        if player_spec is not None or game_name is not None:
            raise click.UsageError("a match needs --vs SPEC (the opponent)")
        raise click.UsageError("nothing to evaluate: give --exploitability, --lbr or --vs SPEC")
    if exploitability and run_dir is None:
        raise click.UsageError("--exploitability needs RUN_DIR")
    path = run_dir_arg(run_dir) if run_dir is not None else None
    result: dict[str, Any] = {}
    if exploitability:
        result.update(_eval_exploitability(path))
    if lbr:
        out = _eval_lbr(
            path,
            game_name,
            player_spec,
            hands,
            seed,
            lbr_actions,
            lbr_preflop,
            lbr_flop,
            solve_from,
            solve_iterations,
            lbr_reraise,
            lbr_jobs,
            lbr_log,
            player_spec,
        )
        if result:  # both: keep exploitability's unit beside LBR's
            result["exploitability_unit"] = result["unit"]
        result.update(out)
    if vs_specs:
        if result:  # both: the match's unit takes "unit"; keep exploitability's beside it
            result["exploitability_unit"] = result["unit"]
        matches = _eval_matches(path, game_name, player_spec, vs_specs, hands, seed, allin_ev, aivat)
        if len(matches) == 1:
            result.update(matches[0])
        else:
            result.update(unit=matches[0]["unit"], matches=matches)
    if as_json:
        click.echo(json.dumps(result))


def _eval_exploitability(path: Path) -> dict[str, Any]:

    with user_input():
        tr = Trainer.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    problem = exact_eval_problem(tr)
    if problem:
        raise CLIError(
            f"cannot compute exact exploitability: {problem}; use --lbr (local best response) for big games"
        )
    t0 = time.perf_counter()
    chips, br = tr.exploitability()
    unit, factor = expl_unit(tr.game)
    result: dict[str, Any] = {
        "exploitability": chips * factor,
        "unit": unit,
        "br_values": [v * factor for v in br],
        "exploitability_chips": chips,
        "iteration": tr.iteration,
        "seconds": time.perf_counter() - t0,
    }
    measure = exact_measure(tr.game)
    result["measure"] = measure
    click.echo(
        f"{path} at iteration {tr.iteration:,}: {measure} {result['exploitability']:.6g} {unit}"
        + ("" if unit == "chips" else f" ({chips:.6g} chips)")
    )
    seats = ", ".join(f"seat {p} {v:.6g}" for p, v in enumerate(result["br_values"]))
    click.echo(f"  best-response {'values' if measure == 'exploitability' else 'gains'}: {seats} {unit}")
    return result


def _eval_lbr(
    path: Path | None,
    game_name: str | None,
    player_spec: str | None,
    hands: int,
    seed: int,
    menu: str,
    preflop: str,
    flop: str = "menu",
    solve_from: str | None = None,
    solve_iterations: int | None = None,
    reraise: bool = False,
    jobs: int | None = None,
    log_path: Path | None = None,
    spec: str | None = None,
) -> dict[str, Any]:
    """Local best response against RUN_DIR's blueprint or --player SPEC (a run, a run with
    subgame solving, a baseline) on ``jobs`` processes, logged to ``log_path`` (continued when it
    holds some of the run's deals); keys lbr, lbr_ci95, unit, hands_per_cpu_hour."""

    if path is None and player_spec is None:
        raise click.UsageError("--lbr needs RUN_DIR (the blueprint to evaluate) or --player SPEC")

    def log(msg: str) -> None:
        click.echo(f"warning: {msg}", err=True)

    named = _spec_for_log(spec if spec is not None else str(path))  # the opponent, for the log
    opponent: Any
    game: Game
    with user_input():
        parse_menu(menu)  # a bad menu fails before anything loads
        if path is None and game_name is None:
            assert player_spec is not None  # checked above
            run_part = player_spec.partition("+")[0]
            if not Path(run_part).is_dir():
                raise click.UsageError("--lbr against a baseline needs --game G")
            if "+" in player_spec:  # RUN_DIR+solve:METHOD: the game is the run's
                path = Path(run_part)
            else:
                path, player_spec = Path(player_spec), None
        if path is not None and player_spec is None:
            bp = Blueprint.load(path, log=log)
            game = Game.load(game_name) if game_name is not None else bp.game
            if bp.gamedef.to_acpc() != game.gamedef.to_acpc():
                raise CLIError(
                    f"{path} was trained on {bp.gamedef.name or 'another game'}, "
                    f"not {game.gamedef.name or game_name}"
                )
            opponent, name = bp, path.name or str(path)
        else:
            assert player_spec is not None  # RUN_DIR alone took the branch above
            if game_name is not None:
                game = Game.load(game_name)
            else:
                assert path is not None  # no --game: a run gives the game
                game = Blueprint.load(path, log=log).game
            opponent = player_from_spec(_local_spec(player_spec), game, log=log)
            name = opponent.name
            if isinstance(opponent, BlueprintPlayer):
                opponent = opponent.bp
            if isinstance(opponent, SolvingPlayer):  # LBR's model of it, with the options' settings
                g = opponent.bp.gamedef
                opponent = SolvingOpponent(
                    opponent.bp,
                    Hands(game),
                    opponent.method,
                    from_round=opponent.from_round
                    if solve_from is None
                    else g.num_rounds - {"river": 1, "turn": 2, "flop": 3}[solve_from],
                    iterations=opponent.iterations if solve_iterations is None else solve_iterations,
                    bets=opponent.bets,
                    name=opponent.name,
                    off_tree=opponent.off_tree,
                )
        lbr = LocalBestResponse(
            game,
            opponent,
            menu=menu,
            preflop=preflop,
            call_rounds=(1,) if flop == "call" else (),
            reraise=reraise,
        )
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\r  LBR {done:,}/{total:,} hands", err=True, nl=False)

    cores = default_jobs()
    if jobs is not None and jobs > cores:
        log(
            f"--lbr-jobs {jobs} is more than the {cores} cores this process may use: the processes share them"
        )
    try:
        res = lbr.run(
            hands, seed=seed, progress=progress, jobs=jobs, log=log_path, opponent_spec=named, warn=log
        )
    except LBRError as exc:
        raise CLIError(str(exc)) from None
    except KeyboardInterrupt:
        if show:
            click.echo("", err=True)
        if log_path is not None:
            click.echo(
                f"stopped: the deals finished so far are in {log_path}; the same command continues", err=True
            )
        raise
    if show:
        click.echo("", err=True)
    out = res.to_json()
    out["opponent"] = name
    out["lbr_preflop"], out["lbr_flop"] = preflop, flop
    out["lbr_reraise"] = reraise
    if log_path is not None:
        out["lbr_log"] = str(log_path)
    solving = "solves" in res.opponent_counters
    if solving:
        sopp = cast(SolvingOpponent, lbr.opp)
        out["solving"] = {
            "method": sopp.method,
            "from_round": sopp.from_round,
            "iterations": sopp.iterations,
            "solves": res.opponent_counters["solves"],
            "reused": res.opponent_counters["reused"],
            "blueprint_fallbacks": res.opponent_counters["fallbacks"],
        }
    click.echo(
        f"LBR ({menu}, pre-flop {preflop}, flop {flop}) against {name} on {game.gamedef.name or game_name}: "
        f"{res.lbr:+.6g} +- {res.lbr_ci95:.3g} {res.unit} over {res.hands:,} hands "
        f"({res.pairs:,} deals from both seats, seed {seed}, {res.seconds:.0f} s): a lower bound on exploitability"
    )
    for seat in (0, 1):
        click.echo(
            f"  LBR in seat {seat}: {out['lbr_seats'][seat]:+.6g} +- {out['lbr_seats_ci95'][seat]:.3g} {res.unit}"
        )
    played = out["hands_played"]
    if played < res.hands:
        click.echo(f"  {res.hands - played:,} hands read from {log_path}, {played:,} played now")
    if res.hands_per_cpu_hour is not None:
        click.echo(
            f"  {res.hands_per_cpu_hour:,.0f} hands per CPU-hour ({played:,} hands in {res.seconds:.0f} s "
            f"on {res.jobs} process{'es' if res.jobs > 1 else ''}, {res.cpu_seconds or 0:.0f} s of CPU)"
        )
    if solving:
        sv = out["solving"]
        click.echo(
            f"  opponent solved {sv['solves']:,} subgames from round {sv['from_round'] + 1} "
            f"({sv['method']}, {sv['iterations']} iterations each), reused one {sv['reused']:,} times, "
            f"answered from the blueprint where none fits {sv['blueprint_fallbacks']:,} times"
        )
    return out


def _eval_matches(
    path: Path | None,
    game_name: str | None,
    player_spec: str | None,
    vs_specs: tuple[str, ...],
    hands: int,
    seed: int,
    allin_ev: bool = False,
    aivat: bool = False,
) -> list[dict[str, Any]]:
    """Duplicate matches of --player (or RUN_DIR) against each --vs, in order; the JSON keys of
    docs/architecture.md, "5. Contracts", one dict per opponent (with ``vs``, its SPEC, when
    there are several)."""
    if player_spec is None and path is None:
        raise click.UsageError("a match needs player A: give --player SPEC or RUN_DIR")
    if game_name is None and path is None:
        # the game of a run directory among the players, if any
        for spec in (player_spec, *vs_specs):
            run = spec.partition("+")[0] if spec else ""  # RUN_DIR or RUN_DIR+solve:METHOD
            if run and Path(run).is_dir():
                path = Path(run)
                break
        else:
            raise click.UsageError(
                "a match needs a game: give --game G or RUN_DIR (or a run directory as a player)"
            )

    def log(msg: str) -> None:
        click.echo(f"warning: {msg}", err=True)

    with user_input():
        run_player: BlueprintPlayer | None = None
        if path is not None and (game_name is None or player_spec is None):
            run_player = BlueprintPlayer(Blueprint.load(path, log=log), name=path.name or str(path))
        # without --game, RUN_DIR was given or found above, and run_player holds its blueprint
        game = Game.load(game_name) if game_name is not None else cast(BlueprintPlayer, run_player).bp.game
        if run_player is not None and run_player.bp.gamedef.to_acpc() != game.gamedef.to_acpc():
            raise CLIError(
                f"{path} was trained on {run_player.bp.gamedef.name or 'another game'}, "
                f"not {game.gamedef.name or game_name}"
            )
        a: Player = (
            cast(BlueprintPlayer, run_player)  # without --player, RUN_DIR is player A
            if player_spec is None or (run_player and Path(player_spec) == path)
            else player_from_spec(_local_spec(player_spec), game, log=log)
        )
        opponents = [
            run_player
            if (run_player and game_name is None and Path(vs) == path and a is not run_player)
            else player_from_spec(_local_spec(vs), game, log=log)
            for vs in vs_specs
        ]
    if game.gamedef.num_players > 2:
        return _n_seat_matches(game, a, opponents, vs_specs, hands, seed, aivat or allin_ev)
    if aivat:
        for p in (a, *opponents):
            if not isinstance(p, KnownPlayer):
                raise CLIError(
                    f"--aivat needs each player's action probabilities, and {p.name!r} does not tell them"
                )
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\r  {done:,}/{total:,} hands", err=True, nl=False)

    outs = []
    for b in opponents:
        out, res = play_one_match(game, a, b, hands, seed, allin_ev=allin_ev, progress=progress, aivat=aivat)
        if show:
            click.echo("", err=True)
        _echo_match(game, game_name, a, b, seed, out, res)
        outs.append(out)
    if len(outs) > 1:
        for out, vs in zip(outs, vs_specs):
            out["vs"] = vs
        _echo_match_table(a.name, outs)
    return outs


def _n_seat_matches(
    game: Game, a: Player, opponents, vs_specs, hands: int, seed: int, two_seat_option
) -> list:
    """Matches of more than two seats: ``a`` against N-1 copies of each opponent
    (:func:`mccfr.evaluation.match_n.play_match_n`: each deal in every seating up to 4 seats,
    the N rotations above), about ``hands`` hands each."""
    n = game.gamedef.num_players
    if two_seat_option:
        raise CLIError(f"--aivat and --allin-ev score two-seat matches: {game.gamedef.name} has {n} seats")
    deals = max(2, hands // len(seatings_of(n)))
    outs = []
    for b, vs in zip(opponents, vs_specs):
        t0 = time.perf_counter()
        res = play_match_n(game, [a] + [b] * (n - 1), deals, seed)
        out = {**res.to_json(), "vs": vs, "seconds": time.perf_counter() - t0}
        mine = out["players"][0]
        click.echo(
            f"{a.name} vs {n - 1} x {b.name} on {game.gamedef.name}: {mine['mean']:+.6g} +- {mine['ci95']:.3g} "
            f"{res.unit} for {a.name} over {res.hands:,} hands ({res.deals:,} deals x {len(res.seatings)} "
            f"seatings, seed {seed})"
        )
        outs.append(out)
    return outs


def play_one_match(
    game: Game,
    a: Player,
    b: Player,
    hands: int,
    seed: int,
    allin_ev: bool = False,
    common_random: bool = False,
    progress: Callable[[int, int], None] | None = None,
    aivat: bool = False,
) -> tuple[dict[str, Any], MatchResult]:
    """One duplicate match of ``a`` against ``b`` (:func:`mccfr.evaluation.match.play_match`):
    its JSON dict (``MatchResult.to_json`` with ``seconds``, and ``exact`` / ``exact_seats`` where
    the game tree is small enough to value the pair exactly) and the result itself."""

    scorer = None
    if aivat:
        scorer = AIVAT(game, a, b, seed=seed)
    t0 = time.perf_counter()
    res = play_match(
        game,
        a,
        b,
        hands,
        seed=seed,
        progress=progress,
        common_random=common_random,
        allin_ev=allin_ev,
        aivat=scorer,
    )
    seconds = time.perf_counter() - t0
    out = res.to_json()
    scale = res.scale()  # chips -> the result's unit
    try:
        ex = exact_value(game, a, b, max_states=500_000)
    except (ValueError, TypeError):
        ex = None
    if ex is not None:
        out["exact"] = ex.chips_per_hand * scale
        out["exact_seats"] = [v * scale for v in ex.seat_chips]
    out["seconds"] = seconds
    return out, res


def _echo_match(
    game: Game, game_name: str | None, a: Player, b: Player, seed: int, out: dict, res: MatchResult
) -> None:
    """The lines of one match: the result with its interval, per seat, the win rate, the sources."""
    scale, unit, exact = res.scale(), res.unit, "exact" in out
    click.echo(
        f"{a.name} vs {b.name} on {game.gamedef.name or game_name}: {res.mean:+.6g} +- {res.ci95:.3g} {unit} "
        f"for {a.name} over {res.hands:,} hands ({res.pairs:,} duplicate pairs, seed {seed})"
        + (f"; exact {out['exact']:+.6g}" if exact else "")
        + (f"; {res.allin_hands:,} hands scored by their all-in expectation" if res.allin_ev else "")
    )
    if res.aivat:
        click.echo(
            f"  AIVAT: {res.aivat_mean:+.6g} +- {res.aivat_ci95:.3g} {unit} "
            f"(the plain interval needs {res.aivat_hands_factor:.3g}x the hands)"
        )
    for seat in (0, 1):
        click.echo(
            f"  {a.name} in seat {seat}: {res.seat_chips[seat] * scale:+.6g} +- {res.seat_ci95[seat] * scale:.3g} {unit}"
            + (f" (exact {out['exact_seats'][seat]:+.6g})" if exact else "")
        )
    click.echo(
        f"  {a.name} won {res.win_rate:.1%} of the hands"
        + (f", tied {res.tie_rate:.1%}" if res.tie_rate else "")
    )
    for who, counts in zip((a.name, b.name), res.sources):
        if counts:
            parts = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
            click.echo(f"  {who}'s answers: {parts}")


def _echo_match_table(player: str, outs: list[dict[str, Any]]) -> None:
    """A row per opponent: player A's mean and 95% interval, hands, win rate (and the exact value)."""
    exact = any("exact" in o for o in outs)
    rows = [
        [o["vs"], f"{o['mean']:+.6g}", f"{o['ci95']:.3g}", f"{o['hands']:,}", f"{o['win_rate']:.1%}"]
        + ([f"{o['exact']:+.6g}" if "exact" in o else "-"] if exact else [])
        for o in outs
    ]
    head = ["vs", f"{player} ({outs[0]['unit']})", "+-95%", "hands", "won"] + (["exact"] if exact else [])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    click.echo("")
    for r in [head, *rows]:
        click.echo("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


@click.command()
@click.argument("run_dir")
@click.option("--out", "out", required=True, help="Parquet file to write.")
@json_opt
def export(run_dir, out, as_json):
    """Write the blueprint's average strategy as Parquet."""
    path = run_dir_arg(run_dir)
    parent = Path(out).resolve().parent
    if not parent.is_dir():
        raise CLIError(f"cannot write --out {out!r}: directory {str(parent)!r} does not exist")
    with user_input():
        bp = Blueprint.load(path, log=lambda msg: click.echo(f"warning: {msg}", err=True))
    written = bp.export(out)
    rows = written if isinstance(written, int) and not isinstance(written, bool) else None
    if rows is None:
        import pyarrow.parquet as pq  # pyarrow: only a writer that does not count its rows needs it

        rows = pq.ParquetFile(out).metadata.num_rows
    click.echo(f"wrote {rows:,} rows to {out}")
    if as_json:
        click.echo(json.dumps({"rows": rows, "out": str(out), "run_dir": str(path)}))


def _spec_for_log(spec: str) -> str:
    """The opponent's spec as an LBR log's header keeps it: a run directory's absolute path (the
    same run however the command names it), the rest as given."""
    run_part, plus, rest = spec.partition("+")
    if run_part and Path(run_part).is_dir():
        return str(Path(run_part).resolve()) + plus + rest
    return spec


def _local_spec(spec: str) -> str:
    """A player SPEC whose run directory part (``RUN_DIR`` or ``RUN_DIR+solve:METHOD``) is a run
    with checkpoints in a storage path, or a storage URI, with that part made local first
    (:func:`mccfr.cli.common.run_dir_arg`); other specs unchanged."""

    run, sep, rest = spec.partition("+")
    if is_storage_uri(run) or Path(run).is_dir():
        return f"{run_dir_arg(run)}{sep}{rest}"
    return spec
