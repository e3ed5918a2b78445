"""The trained blueprint: load a run, query its average strategy by ACPC match state, export it.

``bp.strategy(matchstate)`` walks the abstract betting tree along the real history. On-tree
actions follow their edge; an off-tree no-limit raise is mapped by pseudo-harmonic action
translation (:mod:`abstraction.translation`) to a neighbouring abstract raise, the all-in counted
as a size (its pot fraction is the stack behind it), so a huge overbet maps to all-in. At the viewer's node
the abstract actions become ACPC action strings for the *real* state: fold and call as they are
(a fold that is not legal in the real state is merged into the call), a raise of pot fraction
``f`` becomes ``r<to>`` with ``to = maxSpent + f * (pot + toCall)`` of the real pot, all-in the real
stack, each clamped into the real legal range; keys that coincide are merged.

Export (``bp.export(path)``) writes one Parquet row per (node, bucket, action) with columns
``round: int8``, ``betting: string`` (ACPC betting of the abstract node), ``bucket: int32``,
``action: string``, ``probability: float32``; the key-value metadata holds the schema version, the
game definition, the bet and abstraction hashes and the config hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from abstraction.bets import ALLIN
from abstraction.tree import KIND_DECISION, KIND_SHOWDOWN
from abstraction.cards import deal_buckets
from abstraction.translation import translate, translate_probs
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.files import atomic_path
from holdem.game import Game
from holdem.state import CHANCE, TERMINAL, State, StateError

EXPORT_SCHEMA_VERSION = 1
NODE_CACHE_SIZE = 100_000  # betting histories remembered by Blueprint.node_of (cleared when full)


class BlueprintError(ValueError):
    """A query the blueprint cannot answer (wrong seat, terminal state, history off the tree)."""


class NotADecisionError(BlueprintError):
    """A state that is not a decision of its viewer; ``kind`` says what it is instead:
    ``"no_viewer"`` (a dealer STATE), ``"hand_over"``, ``"cards_due"`` (cards are still to be
    dealt) or ``"not_your_turn"`` (the other seat is to act)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def viewer_decision(state: State) -> State:
    """``state`` itself when it is a decision of its viewer (a MATCHSTATE whose seat is to act),
    else :class:`NotADecisionError` (one message per ``kind``). The one check of blueprint queries
    and subgame solving (which raises it as a ``SubgameError``); the query service maps its
    ``kind`` to a status (409: hand over, not your turn; 400 otherwise)."""
    if state.viewer is None:
        raise NotADecisionError(
            "no_viewer", "a dealer STATE has no viewer: this needs a MATCHSTATE (the viewer's cards)"
        )
    actor = state.current_player()
    if actor == TERMINAL:
        raise NotADecisionError("hand_over", "the hand is over: there is nothing to decide")
    if actor == CHANCE:
        raise NotADecisionError("cards_due", "missing cards: cards are still to be dealt before anyone acts")
    if actor != state.viewer:
        raise NotADecisionError(
            "not_your_turn",
            f"seat {actor} is to act, not the viewer (seat {state.viewer}): "
            "ask with the acting seat's match state",
        )
    return state


def hand_bucket(cards, game, hole: tuple[int, ...], board: tuple[int, ...], round_: int) -> int:
    """Bucket of ``hole`` with the visible ``board`` in ``round_`` under card abstraction ``cards``."""
    h = game.num_hole_cards
    total = game.total_board_cards
    deal = np.zeros(2 * h + total, np.int64)
    deal[:h] = hole
    deal[h : 2 * h] = hole
    deal[2 * h : 2 * h + len(board)] = board
    out = np.zeros((2, game.num_rounds), np.int64)
    work = np.empty(2 * len(deal) + 2, np.int64)
    kind, iso, table, offsets = cards.kernel_args()
    deal_buckets(kind, deal, h, np.array(game.num_board_cards, np.int64), game.deck_size,
                 game.num_suits, game.num_ranks, out, work, iso, table, offsets)
    return int(out[0, round_])


def _pot_fraction(b: Betting, to: int) -> float:
    p = b.current_player()
    to_call = min(b.max_spent, b.game.stack[p]) - b.spent[p]
    return (to - b.max_spent) / (b.pot() + to_call)


class Blueprint:
    """Average strategy of a run over its abstract tree, queried with ACPC match states."""

    def __init__(self, trainer):
        self.game = Game(trainer.game)
        self.gamedef = trainer.game
        self.tree = trainer.tree
        self.cards = trainer.cards
        self.row_offset = trainer.row_offset
        self.num_buckets = trainer.num_buckets
        self.probs = trainer.average_strategy()
        self.iteration = trainer.iteration
        self.config_hash = trainer.config_hash
        self.abstraction_hash = trainer.abstraction_hash
        self.bets_hash = trainer.bets.content_hash() if trainer.bets is not None else "limit"
        # betting actions -> (abstract node, translated?): every deterministic walk (no rng; play-time
        # queries repeat the same histories) and every walk that translated no raise; a translated
        # entry is not used by a walk with an rng (which translates afresh). Bounded; a plain dict
        # is safe to share between threads
        self._node_cache: dict = {}

    @classmethod
    def load(cls, run_dir, log=None) -> "Blueprint":
        from blueprint.trainer import Trainer

        return cls(Trainer.load(Path(run_dir), log=log))

    # -- walking the tree ---------------------------------------------------------------------
    def _abstract_edges(self, n: int) -> tuple[int, int]:
        return int(self.tree.child_start[n]), int(self.tree.num_actions[n])

    def node_of(self, state: State, rng: Optional[np.random.Generator] = None) -> int:
        """Abstract node reached by the betting of ``state`` (translating off-tree raises).

        Deterministic walks (no ``rng``) and walks that translate nothing are memoised by their
        betting (queries and matches ask the same histories again and again)."""
        key = state.betting.actions
        hit = self._node_cache.get(key)
        if hit is not None and (rng is None or not hit[1]):
            return hit[0]
        n, translated = self._walk(state, rng)
        if rng is None or not translated:
            if len(self._node_cache) >= NODE_CACHE_SIZE:
                self._node_cache.clear()
            self._node_cache[key] = (n, translated)
        return n

    def _walk(self, state: State, rng: Optional[np.random.Generator]) -> tuple[int, bool]:
        """``(node, whether an off-tree raise was translated)`` for :meth:`node_of`."""
        translated = False
        t = self.tree
        g = self.gamedef
        b = Betting.initial(g)
        n = 0
        for r, acts in enumerate(state.betting.actions):
            for kind, size in acts:
                if t.kind[n] == KIND_SHOWDOWN:
                    return n, translated  # the abstract hand went all-in; the real one goes on
                if t.kind[n] != KIND_DECISION:
                    raise BlueprintError(
                        f"the history {state.betting.betting_string()!r} leaves the abstract tree "
                        f"(the abstract hand is over at {t.betting_string(n)!r})"
                    )
                s, k = self._abstract_edges(n)
                kinds = t.edge_kind[s : s + k]
                if kind in (FOLD, CALL):
                    hit = np.nonzero(kinds == kind)[0]
                    if not len(hit):
                        raise BlueprintError(f"abstract node {t.betting_string(n)!r} has no {'fc'[kind]!r} action")
                    e = s + int(hit[0])
                else:
                    raises = np.nonzero(kinds == RAISE)[0]
                    if not len(raises):
                        raise BlueprintError(
                            f"a raise at {b.betting_string()!r} where the abstraction has none "
                            f"(abstract node {t.betting_string(n)!r})"
                        )
                    if g.is_limit:
                        e = s + int(raises[0])
                    else:
                        tos = t.edge_to[s + raises]
                        exact = np.nonzero(tos == size)[0]
                        if len(exact) and self.same_spent(n, b):
                            e = s + int(raises[exact[0]])
                        else:
                            e = self.translate_raise(n, b, size, raises, rng)
                            translated = True
                n = int(t.edge_child[e])
                b = b.apply(kind, size)
        return n, translated

    def _translation_pool(self, n: int, b: Betting, size: int, raises: np.ndarray) -> tuple[np.ndarray, list[float], float]:
        """``(edges, sizes, x)`` for translating an off-tree raise to ``size`` at node ``n``: the
        abstract raise edges the raise may map to, their pot fractions (increasing) and the real
        raise's pot fraction ``x``.

        A real all-in maps to the abstract all-in. Any other raise maps among every abstract size
        *including* the all-in, whose pot fraction is the abstract stack behind it: with 100 bb
        stacks a bet of 30 pots is far closer to all-in (about 33 pots pre-flop) than to the pot
        raise, and the pseudo-harmonic mapping between the largest size and all-in says so. When
        such a bet maps to the abstract all-in and is called, the abstract hand is over (a
        showdown node) while the real one goes on with the little that is left behind: the walk
        stops there and :meth:`strategy` checks or calls, which is what a committed stack does."""
        t = self.tree
        s = int(t.child_start[n])
        allin = t.edge_frac[s + raises] == ALLIN
        if size >= self.gamedef.stack[b.current_player()] and allin.any():
            return np.array([s + int(raises[np.nonzero(allin)[0][-1]])]), [0.0], 0.0
        ab = self.betting_at(n)
        edges = s + raises
        fracs = [_pot_fraction(ab, int(x)) for x in t.edge_to[edges]]
        order = np.argsort(fracs, kind="stable")
        return edges[order], [fracs[i] for i in order], _pot_fraction(b, size)

    def translate_raise(self, n: int, b: Betting, size: int, raises: np.ndarray, rng) -> int:
        """Edge an off-tree raise to ``size`` maps to (pseudo-harmonic, :meth:`_translation_pool`)."""
        edges, fracs, x = self._translation_pool(n, b, size, raises)
        return int(edges[translate(x, fracs, rng)])

    def node_distribution(self, state: State | Betting) -> list[tuple[int, float]]:
        """Where :meth:`node_of` with an ``rng`` lands, as ``[(node, probability)]``: every
        off-tree raise of the history (a state's, or a betting's) branches into its pseudo-harmonic
        neighbours. A branch whose history leaves the abstract tree (where :meth:`strategy` raises)
        is node ``-1``; one whose abstract hand went all-in while the real one goes on stops at that
        showdown node. The nodes need not be decisions of the seat to act (the caller checks, as
        strategy does)."""
        t = self.tree
        g = self.gamedef
        out: dict[int, float] = {}
        rounds = (state if isinstance(state, Betting) else state.betting).actions
        flat = [a for acts in rounds for a in acts]

        def go(i: int, n: int, b: Betting, p: float) -> None:
            if i == len(flat):
                out[n] = out.get(n, 0.0) + p
                return
            kind, size = flat[i]
            if t.kind[n] == KIND_SHOWDOWN:  # all-in in the abstract hand (see _walk)
                out[n] = out.get(n, 0.0) + p
                return
            if t.kind[n] != KIND_DECISION:
                out[-1] = out.get(-1, 0.0) + p
                return
            s, k = self._abstract_edges(n)
            kinds = t.edge_kind[s : s + k]
            if kind in (FOLD, CALL):
                hit = np.nonzero(kinds == kind)[0]
                edges = [(s + int(hit[0]), 1.0)] if len(hit) else []
            else:
                raises = np.nonzero(kinds == RAISE)[0]
                if not len(raises):
                    edges = []
                elif g.is_limit:
                    edges = [(s + int(raises[0]), 1.0)]
                else:
                    exact = np.nonzero(t.edge_to[s + raises] == size)[0]
                    if len(exact) and self.same_spent(n, b):
                        edges = [(s + int(raises[exact[0]]), 1.0)]
                    else:
                        edges = self._translate_probs(n, b, size, raises)
            if not edges:
                out[-1] = out.get(-1, 0.0) + p
                return
            nb = b.apply(kind, size)
            for e, q in edges:
                if q > 0.0:
                    go(i + 1, int(t.edge_child[e]), nb, p * q)

        go(0, 0, Betting.initial(g), 1.0)
        return sorted(out.items())

    def _translate_probs(self, n: int, b: Betting, size: int, raises: np.ndarray) -> list[tuple[int, float]]:
        """:meth:`translate_raise`'s distribution: ``[(edge, probability)]``."""
        edges, fracs, x = self._translation_pool(n, b, size, raises)
        return [(int(edges[i]), q) for i, q in translate_probs(x, fracs)]

    def same_spent(self, n: int, b: Betting) -> bool:
        return tuple(int(x) for x in self.tree.spent[n]) == tuple(b.spent)

    def betting_at(self, n: int) -> Betting:
        """The betting state at abstract node ``n`` (memoised by the tree)."""
        return self.tree.betting(n)

    # -- queries ------------------------------------------------------------------------------
    def strategy(self, matchstate: str, rng: Optional[np.random.Generator] = None) -> dict[str, float]:
        """The average strategy of the seat to act, who must be the MATCHSTATE's viewer.

        Returns ``{ACPC action: probability}`` summing to 1 (see the module docstring).
        """
        state = viewer_decision(matchstate if isinstance(matchstate, State) else self.game.state(matchstate))
        actor = state.viewer
        n = self.node_of(state, rng)
        t = self.tree
        if t.kind[n] == KIND_SHOWDOWN:
            # an overbet was translated to the abstract all-in and called: the abstract betting is
            # over, the real stacks are not; a committed stack checks and calls
            return {"c": 1.0}
        if t.kind[n] != KIND_DECISION or int(t.player[n]) != actor:
            raise BlueprintError(f"the history leaves the abstract tree at {t.betting_string(n)!r}")
        r = int(t.round[n])
        bucket = hand_bucket(self.cards, self.gamedef, state.hole_cards[actor], state.board_cards, r)
        _, k = self._abstract_edges(n)
        off = int(self.row_offset[n]) + bucket * k
        probs = self.probs[off : off + k]
        out: dict[str, float] = {}
        for key, p in zip(self.action_keys(n, state.betting), probs):
            out[key] = out.get(key, 0.0) + float(p)
        total = sum(out.values())
        return {a: p / total for a, p in out.items()}

    def action_keys(self, n: int, b: Betting) -> list[str]:
        """The ACPC action string each abstract action of node ``n`` becomes in the real betting
        ``b`` (see the module docstring); keys may repeat (the caller merges them)."""
        t = self.tree
        s, k = self._abstract_edges(n)
        rr = b.raise_range()
        can_fold = b.can_fold()
        keys = []
        for i in range(k):
            e = s + i
            kind = int(t.edge_kind[e])
            if kind == FOLD and can_fold:
                key = "f"
            elif kind == RAISE and rr is not None:
                if self.gamedef.is_limit:
                    key = "r"
                else:
                    frac = float(t.edge_frac[e])
                    if frac == ALLIN:
                        to = rr[1]
                    else:
                        p = b.current_player()
                        to_call = min(b.max_spent, self.gamedef.stack[p]) - b.spent[p]
                        to = b.max_spent + int(np.floor(frac * (b.pot() + to_call) + 0.5))
                    key = f"r{min(max(to, rr[0]), rr[1])}"
            else:
                key = "c"
            keys.append(key)
        return keys

    # -- export -------------------------------------------------------------------------------
    def export(self, path) -> int:
        """Write the average strategy as Parquet (schema in the module docstring); returns rows."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        t = self.tree
        schema = pa.schema(
            [("round", pa.int8()), ("betting", pa.string()), ("bucket", pa.int32()),
             ("action", pa.string()), ("probability", pa.float32())],
            metadata={
                "mccfr.schema_version": str(EXPORT_SCHEMA_VERSION),
                "mccfr.game": self.gamedef.to_acpc(),
                "mccfr.bets_hash": self.bets_hash,
                "mccfr.abstraction_hash": self.abstraction_hash,
                "mccfr.config_hash": self.config_hash,
                "mccfr.iteration": str(self.iteration),
            },
        )
        rows = 0
        with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema) as w:
            batch: dict[str, list] = {c: [] for c in schema.names}
            for n in t.decision_nodes():
                n = int(n)
                k = int(t.num_actions[n])
                nb = int(self.num_buckets[t.round[n]])
                off = int(self.row_offset[n])
                labels = t.action_labels(n)
                bet = t.betting_string(n)
                batch["round"].append(np.full(nb * k, t.round[n], np.int8))
                batch["betting"].append(np.full(nb * k, bet, object))
                batch["bucket"].append(np.repeat(np.arange(nb, dtype=np.int32), k))
                batch["action"].append(np.tile(np.array(labels, object), nb))
                batch["probability"].append(self.probs[off : off + nb * k].astype(np.float32))
                rows += nb * k
                if sum(len(x) for x in batch["round"]) >= 1_000_000:
                    w.write_table(_table(batch, schema))
                    batch = {c: [] for c in schema.names}
            if batch["round"]:
                w.write_table(_table(batch, schema))
        return rows


def _table(batch, schema):
    import pyarrow as pa

    return pa.Table.from_arrays([pa.array(np.concatenate(batch[c]), type=schema.field(c).type) for c in schema.names],
                                schema=schema)


__all__ = ["Blueprint", "BlueprintError", "NotADecisionError", "StateError", "hand_bucket", "viewer_decision"]
