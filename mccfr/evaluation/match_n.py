"""Duplicate matches for N seats (2 to 10), with 95% intervals, and their exact values on small
games.

Duplicate play for N seats. A match is ``deals`` deals. Each deal (every seat's hole cards and
every board, drawn from a seeded generator: cards ``[0, N * hole)`` are the seats' hole cards in
seat order, then the boards in deal order) is played once per *seating*: a seating puts player
``order[s]`` in seat ``s``, and the seat keeps its cards whoever sits there. ``seatings=
"permutations"`` plays all ``N!`` seatings (6 for 3 seats, 24 for 4), so every player holds every
seat's cards behind every arrangement of the others; ``"rotations"`` plays only the ``N`` cyclic
rotations (player ``(s + k) % N`` in seat ``s``): every player sits in every seat once, but not
behind every order of the others, so less of the luck cancels. The default is the permutations up
to 4 seats and the rotations above (5 seats: 120 permutations, 6 seats: 720). A list of seatings
may be given instead.

A player's result on a deal is its net chips averaged over the deal's seatings; the deals are the
independent unit, so a player's mean chips per hand has the 95% interval ``1.96 * s /
sqrt(deals)`` (:func:`mccfr_util.reporting.ci95`) with ``s`` the standard deviation of its
per-deal results. The players' results on a deal sum to 0 (the game is zero-sum). Games with a big
blind report milli-big-blinds per hand beside the chips, ante games (Kuhn, Leduc) chips per hand
(:class:`mccfr.evaluation.match.InBigBlinds`).

Players are :class:`~blueprint.player.Player` objects (``act(state, rng) -> ACPC action``), the
same as in two-player matches (:mod:`mccfr.evaluation.players`: ``AlwaysCall``,
``RandomPlayer`` and the others that read only the betting play any number of seats). A player
sees only its seat's view (:func:`~mccfr.evaluation.match.view_of`: a :class:`holdem.State` with ``viewer`` set and the
other seats' hole cards hidden, what the dealer's MATCHSTATE tells it). :class:`PolicyPlayer`
plays a flat policy of :class:`blueprint.nplayer.NPlayerGame` (e.g. the average strategy of
:func:`blueprint.nplayer.train_es`).

Randomness. The players' random choices come from streams keyed by the seed, the deal and the
*seat*, not the player: in every seating of a deal, whoever sits in seat ``s`` draws from the same
stream. Identical players therefore play every seating of a deal identically, and each player's
mean is exactly 0 (a check of the duplicate); players that differ share the luck of their seat's
draws wherever they decide alike. The same seed replays the same match.

Exact values (:func:`exact_values`): for games that :class:`blueprint.nplayer.NPlayerGame`
flattens (3-player Kuhn and Leduc), each player's exact expected chips per hand over the same
seatings, from the players' full distributions (``probs(state)``); the sampled means estimate
them.

LBR (:mod:`mccfr.evaluation.lbr`) is a best response to one opponent and two-player only: it
refuses N-seat games (:func:`holdem.gamedef.require_two_players`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from blueprint.nplayer import NPlayerGame, policy_values
from blueprint.player import ExactPlayer, Player, sample
from holdem.game import Game
from holdem.state import State
from mccfr.evaluation.match import InBigBlinds, play_hand
from mccfr_util.reporting import big_blind_of, ci95

__all__ = [
    "MAX_PERMUTATION_SEATS",
    "MatchNResult",
    "PolicyPlayer",
    "exact_values",
    "play_match_n",
    "seatings_of",
]

MAX_PERMUTATION_SEATS = 4  # all N! seatings by default up to this many seats, rotations above


def seatings_of(n: int, seatings: str | Sequence[Sequence[int]] | None = None) -> list[tuple[int, ...]]:
    """The seatings of a match of ``n`` players (module docstring): ``"permutations"``,
    ``"rotations"``, None (the permutations up to :data:`MAX_PERMUTATION_SEATS` seats, else the
    rotations) or an explicit list, each ``order`` a permutation of ``range(n)`` (``order[s]``: the
    player in seat ``s``).

    Raises:
        ValueError: an unknown name, or a seating that is not a permutation of the players.
    """
    if seatings is None:
        seatings = "permutations" if n <= MAX_PERMUTATION_SEATS else "rotations"
    if seatings == "permutations":
        return list(itertools.permutations(range(n)))
    if seatings == "rotations":
        return [tuple((s + k) % n for s in range(n)) for k in range(n)]
    if isinstance(seatings, str):
        raise ValueError(
            f"seatings must be 'permutations', 'rotations' or a list of seatings, got {seatings!r}"
        )
    out = [tuple(int(p) for p in order) for order in seatings]
    if not out:
        raise ValueError("seatings: an empty list")
    for order in out:
        if sorted(order) != list(range(n)):
            raise ValueError(f"seating {order} is not a permutation of the {n} players 0..{n - 1}")
    return out


@dataclasses.dataclass(frozen=True)
class MatchNResult(InBigBlinds):
    """An N-seat duplicate match (module docstring).

    ``players``: the players' names, in the order given (a name may repeat); ``per_deal``: each
    player's net chips per hand on each deal, averaged over the seatings (float64[deals, players];
    rows sum to 0); ``seatings``: the seatings played on every deal.
    """

    game: str
    players: tuple[str, ...]
    seatings: tuple[tuple[int, ...], ...]
    per_deal: np.ndarray = dataclasses.field(repr=False, compare=False)
    big_blind: int | None
    seed: int

    @property
    def deals(self) -> int:
        return int(self.per_deal.shape[0])

    @property
    def hands(self) -> int:
        """Hands played: deals times seatings."""
        return self.deals * len(self.seatings)

    @property
    def chips(self) -> tuple[float, ...]:
        """Each player's mean net chips per hand."""
        return tuple(float(x) for x in self.per_deal.mean(axis=0))

    @property
    def ci95_chips(self) -> tuple[float, ...]:
        """Half-widths of the 95% intervals of :attr:`chips` (over the deals)."""
        return tuple(ci95(self.per_deal[:, p]) for p in range(self.per_deal.shape[1]))

    @property
    def means(self) -> tuple[float, ...]:
        """Each player's mean in :attr:`unit`."""
        return tuple(c * self.scale() for c in self.chips)

    @property
    def ci95s(self) -> tuple[float, ...]:
        """Half-widths of the 95% intervals of :attr:`means`."""
        return tuple(c * self.scale() for c in self.ci95_chips)

    def to_json(self) -> dict:
        """JSON-ready figures: per player its name, ``mean`` and ``ci95`` in :attr:`unit`, and
        ``chips`` / ``ci95_chips`` per hand."""
        return {
            "game": self.game,
            "unit": self.unit,
            "deals": self.deals,
            "seatings": len(self.seatings),
            "hands": self.hands,
            "seed": self.seed,
            "players": [
                {"name": name, "mean": m, "ci95": c, "chips": ch, "ci95_chips": cc}
                for name, m, c, ch, cc in zip(
                    self.players, self.means, self.ci95s, self.chips, self.ci95_chips
                )
            ],
        }


def _seat_streams(seed: int, deal: int, n: int) -> list[Any]:
    """The PCG64 states of the seats' streams on deal ``deal`` (module docstring, Randomness):
    drawn from ``SeedSequence([seed, deal])``, set afresh for each seating."""
    words = np.random.SeedSequence([seed, deal]).generate_state(2 * n, np.uint64)
    return [
        {
            "bit_generator": "PCG64",
            "state": {"state": int(words[2 * s]), "inc": int(words[2 * s + 1]) | 1},
            "has_uint32": 0,
            "uinteger": 0,
        }
        for s in range(n)
    ]


def play_match_n(
    game: Game,
    players: Sequence[Player],
    deals: int,
    seed: int = 0,
    seatings: str | Sequence[Sequence[int]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MatchNResult:
    """Play ``deals`` duplicate deals of ``players`` (one per seat of ``game``; the same object may
    appear more than once), each deal once per seating (:func:`seatings_of`).

    ``progress(deals_done, deals)`` is called now and then.

    Raises:
        ValueError: the number of players is not the game's number of seats, ``deals < 2``, or bad
            ``seatings``.
        MatchError: a player returned an illegal action (:func:`~mccfr.evaluation.match.play_hand`).
    """
    g = game.gamedef
    n = g.num_players
    if len(players) != n:
        raise ValueError(
            f"game {g.name or 'this game'!r} has {n} seats, but {len(players)} players were given"
            f" ({', '.join(p.name for p in players)}): give one player per seat"
        )
    if deals < 2:
        raise ValueError(f"a match needs at least 2 deals (for an interval), got {deals}")
    orders = seatings_of(n, seatings)
    deal_rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5EA75]))
    bits = [np.random.PCG64(0) for _ in range(n)]
    rngs = [np.random.Generator(b) for b in bits]
    net = np.zeros((deals, n))
    every = max(1, deals // 100)
    for d in range(deals):
        cards = deal_rng.choice(g.deck_size, g.cards_per_deal, replace=False)
        streams = _seat_streams(seed, d, n)
        for k, order in enumerate(orders):
            for b, st in zip(bits, streams):
                b.state = st
            end = play_hand(game, [players[p] for p in order], rngs, cards, d * len(orders) + k)
            pay = end.payoffs()
            for s, p in enumerate(order):
                net[d, p] += pay[s]
        if progress is not None and (d + 1) % every == 0:
            progress(d + 1, deals)
    return MatchNResult(
        game=g.name,
        players=tuple(p.name for p in players),
        seatings=tuple(orders),
        per_deal=net / len(orders),
        big_blind=big_blind_of(g),
        seed=seed,
    )


# -- players of flat policies, and exact values -----------------------------------------------
def _board_key(state: State) -> tuple[int, ...]:
    """The board in deal order with each round's cards sorted (as NPlayerGame's deals hold them)."""
    g = state.gamedef
    board = state.board_cards
    out: list[int] = []
    for r in range(g.num_rounds):
        lo, hi = g.board_cards_through(r - 1) if r else 0, g.board_cards_through(r)
        out += sorted(board[lo:hi])
    return tuple(out)


class PolicyPlayer:
    """Plays a flat policy of an :class:`~blueprint.nplayer.NPlayerGame` (one probability per
    action of each information set, ``game.ioff[i] + a``), in any seat: its information set is
    found from what the seat sees (its hole cards, the board, the betting)."""

    def __init__(self, game: NPlayerGame, policy: np.ndarray, name: str = "policy"):
        pol = np.asarray(policy, dtype=np.float64)
        if pol.shape != (game.num_actions_total,):
            raise ValueError(f"policy has shape {pol.shape}, expected ({game.num_actions_total},)")
        self.game = game
        self.policy = pol
        self.name = name
        self._acpc = game.gamedef.to_acpc()
        self._accepted = game.gamedef  # the last game definition found to be this one
        self._index: dict[tuple, int] = {}
        for i in range(game.num_infosets):
            _, hole, board, betting = game.infoset_view(i)
            self._index[(betting, hole, board)] = i

    def infoset(self, state: State) -> int:
        """The information set of the seat to act in ``state`` (its view).

        Raises:
            ValueError: ``state`` is not a decision of this policy's game.
        """
        gd = state.gamedef
        if gd is not self._accepted:
            if gd.to_acpc() != self._acpc:
                raise ValueError(f"player {self.name!r} plays {self.game.gamedef.name!r}, not {gd.name!r}")
            self._accepted = gd
        seat = state.current_player()
        if seat < 0:
            raise ValueError(f"player {self.name!r}: {state} is not a decision")
        key = (state.betting.betting_string(), tuple(sorted(state.hole_cards[seat])), _board_key(state))
        i = self._index.get(key)
        if i is None:
            raise ValueError(f"player {self.name!r}: no information set for {state}")
        return i

    def probs(self, state: State) -> dict[str, float]:
        i = self.infoset(state)
        acts = self.game.actions[int(self.game.infoset_node[i])]
        off = int(self.game.tree.ioff[i])
        return {a: float(self.policy[off + k]) for k, a in enumerate(acts)}

    def act(self, state: State, rng: np.random.Generator) -> str:
        return sample(self.probs(state), rng)

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        dist = self.probs(state)
        return sample(dist, rng), dist

    def __repr__(self) -> str:
        return f"<PolicyPlayer {self.name!r}>"


def exact_values(
    game: NPlayerGame, players: Sequence[Player], seatings: str | Sequence[Sequence[int]] | None = None
) -> np.ndarray:
    """float64[players]: each player's exact expected chips per hand over the seatings of a match
    (:func:`seatings_of`), from the players' distributions: a :class:`PolicyPlayer` of ``game``
    by its policy, any other player by ``probs(state)`` asked once per information set.

    Raises:
        ValueError: the number of players is not the game's number of seats.
        TypeError: a player has no ``probs(state)``.
    """
    n = game.num_players
    if len(players) != n:
        raise ValueError(f"game {game.gamedef.name!r} has {n} seats, but {len(players)} players were given")
    flat: dict[int, np.ndarray] = {}
    for pl in players:
        if id(pl) in flat:
            continue
        if isinstance(pl, PolicyPlayer) and pl.game is game:
            flat[id(pl)] = pl.policy
        elif isinstance(pl, ExactPlayer):
            flat[id(pl)] = game.policy_from(pl.probs)
        else:
            raise TypeError(f"player {pl.name!r} has no probs(state): its exact value is unknown")
    nact = np.diff(game.tree.ioff)
    seat_of = np.repeat(game.tree.player[game.infoset_node].astype(np.int64), nact)
    orders = seatings_of(n, seatings)
    out = np.zeros(n)
    for order in orders:
        profile = np.empty(game.num_actions_total)
        for s, p in enumerate(order):
            mask = seat_of == s
            profile[mask] = flat[id(players[p])][mask]
        v = policy_values(game, profile)
        for s, p in enumerate(order):
            out[p] += v[s]
    return out / len(orders)
