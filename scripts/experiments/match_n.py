"""N-seat duplicate matches (:mod:`mccfr.evaluation.match_n`) from the command line: one player
against N-1 copies of each opponent, or one explicit seating of N players.

    python scripts/experiments/match_n.py --game leduc.limit.3p --player es:1000000 \\
        --vs always-call --vs random --vs es:10000 --deals 20000 [--seed 0] [--seatings rotations]
        [--no-exact] [--json]
    python scripts/experiments/match_n.py --game kuhn.limit.3p --players es:100000,random,always-call

Player SPECs: ``es:ITERATIONS[:SEED]``, the average strategy of
:func:`blueprint.nplayer.train_es` (linear weighting; seed 0 by default) on the flattened game
(small games only: 3-player Kuhn and Leduc), trained once per SPEC and played by
:class:`~mccfr.evaluation.match_n.PolicyPlayer`; or a baseline of
:func:`mccfr.evaluation.players.player_from_spec` that reads only the betting (``always-call``,
``random``, ``always-raise``). With ``--vs``, each opponent gives one match, the player in the
first position and the opponent's copies (one object) in the others, on the same deals (same
seed). Each match reports every player's mean per hand with its 95% interval over deals, the
deals, hands and seconds, and, where the game flattens, each player's exact expected value over
the same seatings (:func:`~mccfr.evaluation.match_n.exact_values`; ``--no-exact`` skips it) and
the NashConv of each player's policy played by every seat (``nash_conv``). A player with no
flat policy (a blueprint, a searching player, a baseline) is asked once per information set.
Player SPECs also take run directories (``RUN_DIR``, ``RUN_DIR+search[:ITERATIONS[:K[:FROM_ROUND]]]``).

``mccfr eval`` plays two-player matches only (``--vs`` there means one match per opponent) and
refuses an N-seat game by name; LBR is a best response to one opponent and two-player only.
Prints one JSON row per match (``--json``: only those), then a table.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.nplayer import FlattenError, NPlayerGame, nash_conv, train_es  # noqa: E402
from blueprint.player import Player  # noqa: E402
from holdem.game import Game  # noqa: E402
from mccfr.evaluation.match_n import PolicyPlayer, exact_values, play_match_n  # noqa: E402
from mccfr.evaluation.players import player_from_spec  # noqa: E402


class Players:
    """SPEC -> player, each SPEC built once (an ``es:`` policy trained once)."""

    def __init__(self, game: Game):
        self.game = game
        self._flat: NPlayerGame | None = None
        self._made: dict[str, Player] = {}
        self.train_s: dict[str, float] = {}
        self._policies: dict[int, PolicyPlayer] = {}
        self._nash_conv: dict[str, float] = {}

    def flat(self) -> NPlayerGame:
        if self._flat is None:
            self._flat = NPlayerGame.from_gamedef(self.game.gamedef)
        return self._flat

    def get(self, spec: str) -> Player:
        if spec not in self._made:
            if spec.startswith("es:"):
                parts = spec.split(":")
                if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[1:]):
                    raise SystemExit(f"player {spec!r}: expected es:ITERATIONS[:SEED]")
                it, seed = int(parts[1]), int(parts[2]) if len(parts) == 3 else 0
                t = time.perf_counter()
                pol = train_es(self.flat(), it, seed=seed).average_policy()
                self.train_s[spec] = round(time.perf_counter() - t, 2)
                self._made[spec] = PolicyPlayer(self.flat(), pol, name=spec)
            else:
                self._made[spec] = player_from_spec(spec, self.game)
        return self._made[spec]

    def as_policy(self, player: Player) -> PolicyPlayer:
        """``player`` as a flat policy (asked once per information set), made once per player."""
        if isinstance(player, PolicyPlayer):
            return player
        if id(player) not in self._policies:
            self._policies[id(player)] = PolicyPlayer(
                self.flat(), self.flat().policy_from(player.probs), player.name
            )
        return self._policies[id(player)]

    def nash_conv(self, player: PolicyPlayer) -> float:
        """The NashConv of ``player``'s policy played by every seat (chips), computed once."""
        if player.name not in self._nash_conv:
            self._nash_conv[player.name] = float(nash_conv(self.flat(), player.policy))
        return self._nash_conv[player.name]


def one_match(
    game: Game, made: Players, players: list[Player], deals: int, seed: int, seatings, exact: bool
) -> dict:
    t = time.perf_counter()
    res = play_match_n(game, players, deals, seed=seed, seatings=seatings)
    row = {"what": "match_n", **res.to_json(), "seconds": round(time.perf_counter() - t, 1)}
    if exact:
        try:
            flat = [made.as_policy(p) for p in players]
        except FlattenError:
            flat = None
        if flat is not None:
            ex = exact_values(made.flat(), flat, seatings)
            for p, v, f in zip(row["players"], ex, flat):
                p["exact"] = float(v) * res.scale()
                p["nash_conv"] = made.nash_conv(f)
    row["load"] = round(os.getloadavg()[0], 2)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--game", required=True, help="an N-seat preset (kuhn.limit.3p, leduc.limit.3p, ...) or .game"
    )
    ap.add_argument("--player", help="the player of every --vs match")
    ap.add_argument("--vs", action="append", default=[], help="an opponent: N-1 copies of it (repeat)")
    ap.add_argument("--players", help="one match of these N players, comma-separated, in this order")
    ap.add_argument("--deals", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seatings", choices=["permutations", "rotations"], default=None)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact values (small games)")
    ap.add_argument("--json", action="store_true", help="only the JSON rows")
    args = ap.parse_args()
    game = Game.load(args.game)
    n = game.gamedef.num_players
    made = Players(game)
    lineups: list[list[str]] = []
    if args.players:
        lineups.append(args.players.split(","))
    if args.vs:
        if not args.player:
            raise SystemExit("--vs needs --player")
        lineups += [[args.player] + [vs] * (n - 1) for vs in args.vs]
    if not lineups:
        raise SystemExit("nothing to play: give --player P --vs Q (repeatable) or --players A,B,C")
    rows = []
    for specs in lineups:
        if len(specs) != n:
            raise SystemExit(f"game {game.gamedef.name!r} has {n} seats, but {len(specs)} players: {specs}")
        players = [made.get(s) for s in specs]
        row = one_match(game, made, players, args.deals, args.seed, args.seatings, not args.no_exact)
        row["train_s"] = {s: made.train_s[s] for s in dict.fromkeys(specs) if s in made.train_s}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        return
    print()
    for r in rows:
        head = r["players"][0]
        others = ", ".join(p["name"] for p in r["players"][1:])
        ex = f"  exact {head['exact']:+.4f}" if "exact" in head else ""
        if "nash_conv" in head:
            ex += "  NashConv " + " / ".join(f"{p['name']} {p['nash_conv']:.4f}" for p in r["players"][:2])
        print(
            f"{head['name']} vs {others}: {head['mean']:+.4f} +- {head['ci95']:.4f} {r['unit']}{ex}"
            f"  ({r['deals']:,} deals, {r['hands']:,} hands, {r['seconds']} s)"
        )


if __name__ == "__main__":
    main()
