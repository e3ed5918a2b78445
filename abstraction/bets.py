"""Bet abstraction and the abstract betting tree, built once into flat numpy arrays.

A bet abstraction lists, per betting round, the raise sizes a player may choose as pot fractions.
A fraction ``f`` raises to ``maxSpent + f * (pot + toCall)``: ``f`` of the pot after calling (so
``f = 1`` is OpenSpiel's ``fcpa`` pot raise). Optional ``first_sizes`` apply to the first raise of a
round, ``allin`` adds an all-in, and ``max_raises`` caps the raises per round (on top of the game's
own ``maxRaises``). A size below the legal minimum is raised to the minimum; a size above the
actor's stack is dropped (all-in covers it); equal sizes are merged, and all-in is omitted when it
equals another size. Limit games are their own abstraction: every legal action is in the tree.

TOML format (``abstraction/bets/*.toml`` ships ``fcpa``, ``small`` and ``standard``)::

    name = "standard"
    [[round]]              # one table per round; the last one repeats for later rounds
    first_sizes = [0.5, 1.0, 2.0]   # optional: sizes for the first raise of the round
    sizes = [1.0]
    allin = true
    max_raises = 3         # optional: no cap when absent
    raise_mults = [2.5]    # optional: re-raises to m times the last bet of the round (postflop-solver's "2.5x")

The tree (:class:`BettingTree`) stores nodes in depth-first preorder. Arrays (``N`` nodes,
``E`` edges; node 0 is the root):

=================  ==============  ============================================================
``kind``           int8  [N]       0 decision, 1 fold terminal, 2 showdown terminal
``player``         int8  [N]       seat to act (decision) or seat that folded (fold); else -1
``round``          int8  [N]       betting round (a showdown after an all-in sits on the last)
``spent``          int32 [N, 2]    each seat's total commitment for the hand at the node
``num_actions``    int16 [N]       children of a decision node (0 for terminals)
``child_start``    int32 [N]       first edge of the node in the edge arrays
``parent``         int32 [N]       parent node (-1 at the root)
``parent_edge``    int32 [N]       edge from the parent to the node (-1 at the root)
``edge_child``     int32 [E]       node reached by the edge
``edge_kind``      int8  [E]       0 fold, 1 call/check, 2 raise
``edge_to``        int32 [E]       raise-to of a raise (the raiser's total commitment), else 0
``edge_frac``      float32 [E]     pot fraction that produced a raise; -1 for all-in; 0 otherwise
=================  ==============  ============================================================

The children of a decision node are its edges in ACPC order: fold, call, raises by increasing size.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tomllib
from pathlib import Path

import numpy as np

from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.gamedef import GameDef

BETS_DIR = Path(__file__).parent / "bets"
ALLIN = -1.0

KIND_DECISION, KIND_FOLD, KIND_SHOWDOWN = 0, 1, 2


class BetAbstractionError(ValueError):
    """A malformed bet-abstraction file or an unknown name; the message names the field."""


@dataclasses.dataclass(frozen=True)
class RoundBets:
    sizes: tuple[float, ...]
    first_sizes: tuple[float, ...]
    allin: bool
    max_raises: int  # -1: no cap
    raise_mults: tuple[float, ...] = ()  # re-raise to m x the round's current bet (after the first raise)


@dataclasses.dataclass(frozen=True)
class BetAbstraction:
    name: str
    rounds: tuple[RoundBets, ...]

    def for_round(self, r: int) -> RoundBets:
        return self.rounds[min(r, len(self.rounds) - 1)]

    def to_toml(self) -> str:
        out = [f'name = "{self.name}"']
        for rb in self.rounds:
            out += ["", "[[round]]", f"sizes = {list(rb.sizes)}", f"first_sizes = {list(rb.first_sizes)}"]
            out.append(f"allin = {'true' if rb.allin else 'false'}")
            if rb.max_raises >= 0:
                out.append(f"max_raises = {rb.max_raises}")
            if rb.raise_mults:
                out.append(f"raise_mults = {list(rb.raise_mults)}")
        return "\n".join(out) + "\n"

    def content_hash(self) -> str:
        body = tuple((rb.sizes, rb.first_sizes, rb.allin, rb.max_raises) + ((rb.raise_mults,) if rb.raise_mults else ())
                     for rb in self.rounds)
        return hashlib.blake2b(repr(body).encode(), digest_size=8).hexdigest()

    def raise_targets(self, b: Betting) -> list[tuple[int, float]]:
        """Abstract raise-to amounts at betting state ``b`` as ``(to, fraction)``, increasing.

        Applies this abstraction's sizes to ``b``'s real pot: below-minimum sizes become the
        minimum, above-stack sizes are dropped, duplicates merged, all-in last.
        """
        rr = b.raise_range()
        if rr is None:
            return []
        if b.game.is_limit:
            return [(rr[0], 0.0)]
        rb = self.for_round(b.round)
        n_raises = b.num_raises()
        if rb.max_raises >= 0 and n_raises >= rb.max_raises:
            return []
        lo, hi = rr
        p = b.current_player()
        to_call = min(b.max_spent, b.game.stack[p]) - b.spent[p]
        pot_after_call = b.pot() + to_call
        sizes = rb.first_sizes if n_raises == 0 else rb.sizes
        out: dict[int, float] = {}
        targets = [(b.max_spent + int(np.floor(f * pot_after_call + 0.5)), f) for f in sizes]
        if n_raises and rb.raise_mults:
            start = street_start(b)
            targets += [(start + int(np.floor(m * (b.max_spent - start) + 0.5)), 0.0) for m in rb.raise_mults]
        for to, f in sorted(targets, key=lambda t: t[0]):
            if to > hi:
                continue
            to = max(to, lo)
            out.setdefault(to, f)
        if rb.allin:
            out.setdefault(hi, ALLIN)
        return sorted(out.items())


def street_start(b: Betting) -> int:
    """Each seat's commitment when ``b``'s round began (the last earlier raise-to, else the big blind;
    0 in the first round, where the blinds are part of the round's bets)."""
    if b.round == 0:
        return 0
    start = max(b.game.blind)
    for acts in b.actions[: b.round]:
        for kind, size in acts:
            if kind == RAISE:
                start = size
    return start


def _round_bets(tbl: dict, where: str) -> RoundBets:
    known = {"sizes", "first_sizes", "allin", "max_raises", "raise_mults"}
    for k in tbl:
        if k not in known:
            raise BetAbstractionError(f"{where}: unknown key {k!r} (expected {sorted(known)})")

    def fracs(key: str, default):
        v = tbl.get(key, default)
        if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise BetAbstractionError(f"{where}: {key!r} must be a list of numbers, got {v!r}")
        if any(x <= 0 for x in v):
            raise BetAbstractionError(f"{where}: {key!r} must hold positive pot fractions, got {v!r}")
        return tuple(float(x) for x in v)

    sizes = fracs("sizes", [])
    first = fracs("first_sizes", list(sizes))
    allin = tbl.get("allin", False)
    if not isinstance(allin, bool):
        raise BetAbstractionError(f"{where}: 'allin' must be true or false, got {allin!r}")
    mr = tbl.get("max_raises", -1)
    if not isinstance(mr, int) or isinstance(mr, bool) or mr < -1:
        raise BetAbstractionError(f"{where}: 'max_raises' must be a non-negative integer, got {mr!r}")
    mults = fracs("raise_mults", [])
    if any(m <= 1 for m in mults):
        raise BetAbstractionError(f"{where}: 'raise_mults' must be multiples above 1 of the current bet, got {list(mults)!r}")
    return RoundBets(sizes, first, allin, mr, mults)


def parse_bets(text: str, source: str = "<string>") -> BetAbstraction:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BetAbstractionError(f"{source}: not valid TOML: {exc}") from None
    for k in data:
        if k not in ("name", "round"):
            raise BetAbstractionError(f"{source}: unknown key {k!r} (expected 'name' and [[round]] tables)")
    rounds = data.get("round")
    if not isinstance(rounds, list) or not rounds:
        raise BetAbstractionError(f"{source}: needs at least one [[round]] table")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise BetAbstractionError(f"{source}: 'name' must be a string")
    return BetAbstraction(name, tuple(_round_bets(t, f"{source}: round {i + 1}") for i, t in enumerate(rounds)))


def available_bets() -> list[str]:
    return sorted(p.stem for p in BETS_DIR.glob("*.toml"))


def load_bets(name_or_path: str) -> BetAbstraction:
    """A shipped abstraction by name (``fcpa``, ``small``, ``standard``) or a TOML file."""
    path = BETS_DIR / f"{name_or_path}.toml"
    if not path.exists():
        path = Path(name_or_path)
        if not path.exists():
            raise BetAbstractionError(
                f"unknown bet abstraction {name_or_path!r}: not one of {available_bets()} and no such file"
            )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BetAbstractionError(f"cannot read {path}: {exc}") from None
    return parse_bets(text, str(path))


LIMIT = BetAbstraction("limit", (RoundBets((), (), False, -1),))


@dataclasses.dataclass
class BettingTree:
    """The abstract betting tree as flat arrays (see the module docstring for the layout)."""

    game: GameDef
    bets: BetAbstraction
    kind: np.ndarray
    player: np.ndarray
    round: np.ndarray
    spent: np.ndarray
    num_actions: np.ndarray
    child_start: np.ndarray
    parent: np.ndarray
    parent_edge: np.ndarray
    edge_child: np.ndarray
    edge_kind: np.ndarray
    edge_to: np.ndarray
    edge_frac: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    def children(self, n: int) -> np.ndarray:
        s = self.child_start[n]
        return self.edge_child[s : s + self.num_actions[n]]

    def edge_label(self, e: int) -> str:
        k = int(self.edge_kind[e])
        if k == RAISE:
            return "r" if self.game.is_limit else f"r{int(self.edge_to[e])}"
        return "fc"[k]

    def action_labels(self, n: int) -> list[str]:
        s = int(self.child_start[n])
        return [self.edge_label(e) for e in range(s, s + int(self.num_actions[n]))]

    def betting_string(self, n: int) -> str:
        """ACPC betting string of the path to node ``n`` (rounds separated by '/')."""
        path = []
        while self.parent[n] >= 0:
            path.append(int(self.parent_edge[n]))
            n = int(self.parent[n])
        b = Betting.initial(self.game)
        for e in reversed(path):
            b = b.apply(int(self.edge_kind[e]), int(self.edge_to[e]))
        return b.betting_string()

    def decision_nodes(self) -> np.ndarray:
        return np.nonzero(self.kind == KIND_DECISION)[0]

    def content_hash(self) -> str:
        h = hashlib.blake2b(digest_size=8)
        for a in (self.kind, self.player, self.round, self.spent, self.num_actions, self.edge_kind, self.edge_to):
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if isinstance(getattr(self, f.name), np.ndarray)}


def build_tree(game: GameDef, bets: BetAbstraction | None = None, max_nodes: int = 50_000_000) -> BettingTree:
    """Build the abstract betting tree of ``game`` under ``bets`` (limit games: the full tree)."""
    if game.is_limit or bets is None:
        if not game.is_limit:
            raise BetAbstractionError("a no-limit game needs a bet abstraction (e.g. 'fcpa')")
        bets = LIMIT
    kind: list[int] = []
    player: list[int] = []
    rnd: list[int] = []
    spent: list[tuple[int, int]] = []
    nact: list[int] = []
    cstart: list[int] = []
    parent: list[int] = []
    e_child: list[int] = []
    e_kind: list[int] = []
    e_to: list[int] = []
    e_frac: list[float] = []

    def new_node(b: Betting, par: int) -> int:
        n = len(kind)
        if n >= max_nodes:
            raise BetAbstractionError(f"betting tree exceeds {max_nodes} nodes: use a coarser bet abstraction")
        if b.finished:
            k = KIND_FOLD if any(b.folded) else KIND_SHOWDOWN
            pl = (0 if b.folded[0] else 1) if k == KIND_FOLD else -1
        else:
            k, pl = KIND_DECISION, b.current_player()
        kind.append(k)
        player.append(pl)
        rnd.append(b.round)
        spent.append(b.spent)
        nact.append(0)
        cstart.append(0)
        parent.append(par)
        return n

    # iterative DFS in preorder; edges of a node are reserved contiguously when it is expanded
    root = new_node(Betting.initial(game), -1)
    stack = [(root, Betting.initial(game))]
    while stack:
        n, b = stack.pop()
        if b.finished:
            continue
        moves: list[tuple[int, int, float]] = []
        if b.can_fold():
            moves.append((FOLD, 0, 0.0))
        moves.append((CALL, 0, 0.0))
        moves += [(RAISE, to, f) for to, f in bets.raise_targets(b)]
        start = len(e_child)
        cstart[n] = start
        nact[n] = len(moves)
        kids = []
        for kd, to, f in moves:
            nb = b.apply(kd, to if not game.is_limit else 0)
            c = new_node(nb, n)
            e_child.append(c)
            e_kind.append(kd)
            e_to.append(nb.max_spent if kd == RAISE else 0)
            e_frac.append(f)
            kids.append((c, nb))
        stack.extend(reversed(kids))
    parent_edge = np.full(len(kind), -1, np.int32)
    parent_edge[np.array(e_child, np.int64)] = np.arange(len(e_child), dtype=np.int32)
    return BettingTree(
        game=game,
        bets=bets,
        kind=np.array(kind, np.int8),
        player=np.array(player, np.int8),
        round=np.array(rnd, np.int8),
        spent=np.array(spent, np.int32).reshape(-1, 2),
        num_actions=np.array(nact, np.int16),
        child_start=np.array(cstart, np.int32),
        parent=np.array(parent, np.int32),
        parent_edge=parent_edge,
        edge_child=np.array(e_child, np.int32),
        edge_kind=np.array(e_kind, np.int8),
        edge_to=np.array(e_to, np.int32),
        edge_frac=np.array(e_frac, np.float32),
    )
