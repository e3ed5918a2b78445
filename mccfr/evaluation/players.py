"""Players for head-to-head matches: baselines, the blueprint, and the player SPEC parser.

A player sees the hand as its seat's view: a :class:`holdem.state.State` whose ``viewer`` is the
seat (the opponent's hole cards hidden, exactly what the dealer's MATCHSTATE tells it), always at
a decision of that seat. It answers with an ACPC action string that is legal there.

* ``act(state, rng) -> str`` samples an action; every random choice comes from ``rng`` (a
  ``numpy.random.Generator`` the match derives from ``SeedSequence.spawn``).
* ``probs(state) -> {action: probability}`` (optional, :class:`ExactPlayer`): the whole
  distribution, which makes a pairing's expected value computable exactly from the game tree
  (:func:`mccfr.evaluation.match.exact_value`). Every player here has it.

Baselines (usable in any game unless said otherwise; the names are the ``SPEC`` of
``mccfr eval --player SPEC --vs SPEC``):

* ``random``: uniform over the legal kinds fold / call / raise; in no-limit a raise then picks its
  raise-to uniformly among the legal amounts ``[min, max]`` (docs/architecture.md, "5. Contracts"). In limit
  games that is uniform over the legal actions.
* ``always-call``: check or call.
* ``always-raise``: bet or raise whenever legal (no-limit: the minimum raise), else call.
* ``kuhn-fixed`` (Kuhn only): first to act: bet, or call, with the K; check then fold with the
  J; check then call with the Q. Second to act: call or bet with the K; fold or check otherwise.
* ``kuhn-greedy`` (Kuhn only): bet or call with probability 0.3 with the J, 0.6 with the Q,
  always with the K; otherwise check or fold.
* ``overbet:X`` (no-limit): an exploiter of action translation. Its first action of a hand, where
  it may raise, is a raise to ``X`` times the pot (``maxSpent + X * (pot + toCall)``, clamped to
  the legal range); afterwards it plays by hand strength (:class:`StrengthPlayer`).
* ``minraise``: an exploiter of the bet abstraction's raise cap: the minimum raise whenever legal
  with a hand of equity at least 0.5 against a random hand (so raise wars go far past two raises a
  round), a call with at least 0.3 (or when checking is free), else a fold.
* a run directory: :class:`BlueprintPlayer`, the run's average strategy.

* ``RUN_DIR+solve:METHOD``: :class:`mccfr.evaluation.solving.SolvingPlayer`, the blueprint with subgame
  solving (``subgame/``) later in the hand and at the abstraction's dead ends;
  ``RUN_DIR+solve:METHOD:off-tree`` also after an opponent's off-tree bet of the current round
  (nested) instead of translating it, where the bet lies far enough from the abstract sizes
  (``off-tree=SPLIT``: :class:`~mccfr.evaluation.solving.SolvingPlayer`'s ``off_tree``).

The :class:`~blueprint.player.Player` protocol and :func:`~blueprint.player.sample` live in
:mod:`blueprint.player`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from blueprint.blueprint import Blueprint
from blueprint.io.errors import CheckpointError
from blueprint.player import ExactPlayer, Player, sample
from holdem.evaluator import rank_many
from holdem.state import State
from mccfr.evaluation.solving import SearchPlayer, search_config, solving_player

if TYPE_CHECKING:
    from holdem.game import Game

SPEC_NAMES = ("always-call", "always-raise", "random", "minraise", "kuhn-fixed", "kuhn-greedy")
SPEC_FORMS = ("overbet:X",)  # names with an argument


class PlayerSpecError(ValueError):
    """A player SPEC that names no player, or a player that cannot play this game."""


class _DistPlayer:
    """A player defined by its distribution: ``act`` samples ``probs``."""

    name = "player"

    def probs(self, state: State) -> dict[str, float]:
        raise NotImplementedError

    def act(self, state: State, rng: np.random.Generator) -> str:
        return sample(self.probs(state), rng)

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        """:meth:`act`'s action and the distribution it was drawn from (:class:`KnownPlayer`)."""
        return self.act(state, rng), self.probs(state)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _raise_action(state: State, to: int) -> str:
    return "r" if state.gamedef.is_limit else f"r{to}"


class RandomPlayer(_DistPlayer):
    """Uniform over fold / call / raise, then (no-limit) a uniform raise-to in the legal range."""

    name = "random"

    def act(self, state: State, rng: np.random.Generator) -> str:
        kinds = self.action_kinds(state)
        k = kinds[int(rng.integers(len(kinds)))]
        if k != "r":
            return k
        rr = state.betting.raise_range()
        assert rr is not None  # "r" is among the kinds only when a raise is legal
        lo, hi = rr
        return _raise_action(state, int(rng.integers(lo, hi + 1)))

    @staticmethod
    def action_kinds(state: State) -> list[str]:
        out = ["f"] if state.betting.can_fold() else []
        out.append("c")
        if state.betting.raise_range() is not None:
            out.append("r")
        return out

    def probs(self, state: State) -> dict[str, float]:
        kinds = self.action_kinds(state)
        p = 1.0 / len(kinds)
        out = {k: p for k in kinds if k != "r"}
        if "r" in kinds:
            rr = state.betting.raise_range()
            assert rr is not None
            lo, hi = rr
            if state.gamedef.is_limit:
                out["r"] = p
            else:
                q = p / (hi - lo + 1)
                out.update({f"r{to}": q for to in range(lo, hi + 1)})
        return out


class AlwaysCall(_DistPlayer):
    name = "always-call"

    def probs(self, state: State) -> dict[str, float]:
        return {"c": 1.0}


class AlwaysRaise(_DistPlayer):
    """Bet or raise whenever legal (the minimum raise in no-limit), else check or call."""

    name = "always-raise"

    def probs(self, state: State) -> dict[str, float]:
        rr = state.betting.raise_range()
        return {"c": 1.0} if rr is None else {_raise_action(state, rr[0]): 1.0}


# -- exploiters of the abstraction ---------------------------------------------------------------
EQUITY_SAMPLES = 400  # Monte Carlo rollouts of hand_equity


def hand_equity(state: State, samples: int = EQUITY_SAMPLES) -> float:
    """The viewer's equity (win + tie / 2) against one uniformly random hand, the rest of the
    board dealt at random: ``samples`` rollouts seeded by the cards (the same state, the same
    value; memoised)."""
    g = state.gamedef
    seat = state.current_player() if state.viewer is None else state.viewer
    hole = tuple(int(c) for c in state.hole_cards[seat])
    board = tuple(int(c) for c in state.board_cards)
    key = (g.num_suits, g.num_ranks, g.num_hole_cards, g.total_board_cards, hole, board, samples)
    hit = _EQUITY.get(key)
    if hit is not None:
        return hit
    seen = set(hole) | set(board)
    rest = np.array([c for c in range(g.deck_size) if c not in seen], np.int64)
    need = g.num_hole_cards + g.total_board_cards - len(board)
    rng = np.random.default_rng(abs(hash(key)) % (2**32))
    draws = np.argsort(rng.random((samples, len(rest))), axis=1)[:, :need]
    cards = rest[draws]  # [samples, opponent's hole + the rest of the board]
    opp = cards[:, : g.num_hole_cards]
    fill = cards[:, g.num_hole_cards :]
    full_board = np.hstack([np.broadcast_to(np.array(board, np.int64), (samples, len(board))), fill])
    mine = np.hstack([np.broadcast_to(np.array(hole, np.int64), (samples, len(hole))), full_board])
    theirs = np.hstack([opp, full_board])
    a = rank_many(np.ascontiguousarray(mine), g.num_suits, g.num_ranks)
    b = rank_many(np.ascontiguousarray(theirs), g.num_suits, g.num_ranks)
    eq = float(((a > b).sum() + 0.5 * (a == b).sum()) / samples)
    if len(_EQUITY) > 100_000:
        _EQUITY.clear()
    _EQUITY[key] = eq
    return eq


_EQUITY: dict = {}


class StrengthPlayer(_DistPlayer):
    """Plays by :func:`hand_equity`: a pot-sized raise with equity >= ``strong`` (where legal),
    a check or call with >= ``weak`` (or when checking is free), else a fold."""

    name = "strength"
    strong, weak = 0.75, 0.45

    def probs(self, state: State) -> dict[str, float]:
        eq = hand_equity(state)
        b = state.betting
        rr = b.raise_range()
        if eq >= self.strong and rr is not None:
            return {_raise_action(state, _pot_raise(state, 1.0)): 1.0}
        if eq >= self.weak or not b.can_fold():
            return {"c": 1.0}
        return {"f": 1.0}


def _pot_raise(state: State, x: float) -> int:
    """The raise-to of a raise of ``x`` times the pot after the call, clamped to the legal range."""
    b = state.betting
    rr = b.raise_range()
    assert rr is not None
    return min(max(b.pot_raise_to(x), rr[0]), rr[1])


class OverbetPlayer(StrengthPlayer):
    """``overbet:X``: its first action of a hand, where it may raise, a raise of ``X`` pots; then
    :class:`StrengthPlayer`."""

    def __init__(self, x: float):
        self.x = x
        self.name = f"overbet:{x:g}"

    def probs(self, state: State) -> dict[str, float]:
        b = state.betting
        me = b.current_player()
        first = not any(who == me for acts in b.actors for who in acts)
        if first and b.raise_range() is not None:
            return {_raise_action(state, _pot_raise(state, self.x)): 1.0}
        return super().probs(state)


class MinRaisePlayer(_DistPlayer):
    """``minraise``: the minimum raise whenever legal with equity >= 0.5, a call with >= 0.3 (or
    a free check), else a fold."""

    name = "minraise"

    def probs(self, state: State) -> dict[str, float]:
        eq = hand_equity(state)
        b = state.betting
        rr = b.raise_range()
        if eq >= 0.5 and rr is not None:
            return {_raise_action(state, rr[0]): 1.0}
        if eq >= 0.3 or not b.can_fold():
            return {"c": 1.0}
        return {"f": 1.0}


# -- Kuhn --------------------------------------------------------------------------------------
def _check_kuhn(game: Game, who: str) -> None:
    g = game.gamedef
    if not (g.num_rounds == 1 and g.num_hole_cards == 1 and g.total_board_cards == 0 and g.deck_size == 3):
        raise PlayerSpecError(
            f"{who} plays Kuhn poker (3 cards J Q K, one hole card, one round), not {g.name or 'this game'}"
        )


def _kuhn_card(state: State) -> int:
    """0, 1, 2 for J, Q, K (Kuhn's cards ``2c 3c 4c``)."""
    seat = state.viewer
    assert seat is not None  # a player always sees the hand from its seat
    return state.hole_cards[seat][0] // state.gamedef.num_suits


def _aggressive(state: State) -> str:
    """Bet when nobody has, call when facing a bet."""
    rr = state.betting.raise_range()
    if state.betting.can_fold() or rr is None:
        return "c"
    return _raise_action(state, rr[0])


def _passive(state: State) -> str:
    """Fold when facing a bet, else check."""
    return "f" if state.betting.can_fold() else "c"


class KuhnFixed(_DistPlayer):
    """The textbook rule-based Kuhn player (see the module docstring)."""

    name = "kuhn-fixed"

    def __init__(self, game: Game):
        _check_kuhn(game, self.name)

    def probs(self, state: State) -> dict[str, float]:
        card = _kuhn_card(state)
        if card == 2:
            act = _aggressive(state)
        elif card == 0:
            act = _passive(state)
        else:
            first = state.viewer == state.gamedef.first_player[0]
            act = "c" if first else _passive(state)
        return {act: 1.0}


class KuhnGreedy(_DistPlayer):
    """Bet or call with probability 0.3 (J), 0.6 (Q), 1 (K); otherwise check or fold."""

    name = "kuhn-greedy"
    P_AGGRESSIVE = (0.3, 0.6, 1.0)

    def __init__(self, game: Game):
        _check_kuhn(game, self.name)

    def probs(self, state: State) -> dict[str, float]:
        p = self.P_AGGRESSIVE[_kuhn_card(state)]
        agg, pas = _aggressive(state), _passive(state)
        if p >= 1.0 or agg == pas:
            return {agg: 1.0}
        return {agg: p, pas: 1.0 - p}


# -- the blueprint -----------------------------------------------------------------------------
class BlueprintPlayer:
    """Plays a :class:`blueprint.blueprint.Blueprint`'s average strategy, translating the
    opponent's off-tree raises at random between their neighbours; where the abstract tree has no
    node for the history, the blueprint's fallback (:meth:`~blueprint.blueprint.Blueprint.answer`).
    ``sources`` counts the decisions by where their answer came from."""

    def __init__(self, bp: Blueprint, name: str = "blueprint"):
        self.bp = bp
        self.name = name
        self.sources: dict[str, int] = {}

    def probs(self, state: State) -> dict[str, float]:
        return self.bp.strategy(state)

    def act(self, state: State, rng: np.random.Generator) -> str:
        return self.decide(state, rng)[0]

    def decide(self, state: State, rng: np.random.Generator) -> tuple[str, dict[str, float]]:
        """The action and the strategy it was drawn from (after the random translation of an
        off-tree raise, which comes first)."""
        ans = self.bp.answer(state, rng)
        self.sources[ans.source] = self.sources.get(ans.source, 0) + 1
        return sample(ans.strategy, rng), ans.strategy

    def __repr__(self) -> str:
        return f"<BlueprintPlayer {self.name!r}>"


def player_from_spec(spec: str, game: Game, log=None) -> Player:
    """The player a ``SPEC`` names (RUN_DIR, RUN_DIR+solve:METHOD, always-call, always-raise,
    random, minraise, overbet:X, kuhn-fixed, kuhn-greedy; docs/architecture.md, "5. Contracts") for ``game``.

    Raises:
        PlayerSpecError: an unknown name, a missing run directory, a run of another game, a
            Kuhn player in another game, or an unknown ``+solve:`` method.
    """
    if not isinstance(spec, str) or not spec:
        raise PlayerSpecError(f"empty player spec; use a run directory or one of {', '.join(SPEC_NAMES)}")
    simple = {"random": RandomPlayer, "always-call": AlwaysCall, "always-raise": AlwaysRaise}
    if spec in simple:
        return simple[spec]()
    if spec == "minraise":
        return MinRaisePlayer()
    if spec.startswith("overbet:"):
        try:
            x = float(spec[len("overbet:") :])
        except ValueError:
            x = float("nan")
        if not (0 < x <= 1000):
            raise PlayerSpecError(
                f"player spec {spec!r}: expected overbet:X with X a pot multiple in (0, 1000]"
            )
        if game.gamedef.is_limit:
            raise PlayerSpecError(f"player spec {spec!r}: overbets need a no-limit game")
        return OverbetPlayer(x)
    if spec == "kuhn-fixed":
        return KuhnFixed(game)
    if spec == "kuhn-greedy":
        return KuhnGreedy(game)
    run_dir, sep, method = spec.partition("+")
    if sep:
        search = method == "search" or method.startswith("search:")
        if not search and (not method.startswith("solve:") or not method[len("solve:") :]):
            raise PlayerSpecError(
                f"player spec {spec!r}: expected RUN_DIR+solve:METHOD or RUN_DIR+search[:ITERATIONS[:K[:FROM_ROUND]]]"
            )
        try:  # the search's settings checked before the run is loaded
            config = search_config(method[len("search:") :]) if search else None
        except ValueError as exc:
            raise PlayerSpecError(f"player spec {spec!r}: {exc}") from None
        inner = player_from_spec(run_dir, game, log=log)
        if not isinstance(inner, BlueprintPlayer):
            raise PlayerSpecError(f"player spec {spec!r}: solving needs a run directory before '+'")
        try:
            if config is not None:
                return SearchPlayer(inner.bp, config, name=f"{inner.name}+{method}")
            return solving_player(inner.bp, method[len("solve:") :], f"{inner.name}+{method}")
        except ValueError as exc:  # a bad solving method or option; a round the game lacks
            raise PlayerSpecError(f"player spec {spec!r}: {exc}") from None
    path = Path(spec)
    if not path.is_dir():
        raise PlayerSpecError(
            f"unknown player {spec!r}: not a run directory and not one of {', '.join(SPEC_NAMES + SPEC_FORMS)}"
        )
    try:
        bp = Blueprint.load(path, log=log)
    except (ValueError, CheckpointError) as exc:  # no usable checkpoint, an unknown game, ...: name it
        raise PlayerSpecError(f"player {spec!r}: {exc}") from None
    if bp.gamedef.to_acpc() != game.gamedef.to_acpc():
        raise PlayerSpecError(
            f"player {spec!r} was trained on {bp.gamedef.name or 'another game'}, not {game.gamedef.name or 'this game'}"
        )
    return BlueprintPlayer(bp, name=path.name or spec)


__all__ = [
    "SPEC_FORMS",
    "SPEC_NAMES",
    "AlwaysCall",
    "AlwaysRaise",
    "BlueprintPlayer",
    "ExactPlayer",
    "KuhnFixed",
    "KuhnGreedy",
    "MinRaisePlayer",
    "OverbetPlayer",
    "Player",
    "PlayerSpecError",
    "RandomPlayer",
    "StrengthPlayer",
    "player_from_spec",
    "hand_equity",
    "sample",
]
