"""The trained blueprint: load a run, query its average strategy by ACPC match state, export it.

``Blueprint.load(run_dir)`` reads only the blueprint file of the newest complete checkpoint
(``CKPT/blueprint.msgpack.lz4``, format in :mod:`blueprint.io.container`; written with every
checkpoint by ``Trainer.save``, see :func:`blueprint.io.blueprint_file.write_blueprint_file`), falling back to older complete
ones when a file is refused. It rebuilds the betting tree from the stored game and bet abstraction
and checks the tree's hash, loads the card abstraction without ever building it (a recipe missing
from the cache is a :class:`BlueprintError` naming the ``mccfr abstraction build`` command) and
checks its hash: no trainer, no regret tables, no build. Checkpoints from before blueprint files
are read through the trainer checkpoint, as before, with a one-line note. ``Blueprint(trainer)``
is the in-process blueprint of a live trainer (float64 probabilities; from a file they are
float32, within 6e-8 of them).

``bp.answer(matchstate)`` (``bp.strategy`` is its strategy) walks the abstract betting tree along
the real history. On-tree actions follow their edge: a raise is on-tree when its size is what an
abstract raise of the node becomes in the real betting (below), so the player's own raises, which
are the blueprint's abstract choices, never leave the tree. An opponent's off-tree no-limit raise is
mapped by pseudo-harmonic action translation (:mod:`abstraction.translation`) to a neighbouring
abstract raise, the all-in counted as a size (its pot fraction is the stack behind it), so a huge
overbet maps to all-in (the player's own off-tree raise, which only a subgame's finer sizes make,
maps to its likeliest neighbour, deterministically). At the viewer's node
the abstract actions become ACPC action strings for the *real* state: fold and call as they are
(a fold that is not legal in the real state is merged into the call), a raise of pot fraction
``f`` becomes ``r<to>`` with ``to = maxSpent + f * (pot + toCall)`` of the real pot, all-in the real
stack, each clamped into the real legal range; keys that coincide are merged.

Every legal decision gets an answer, labelled by where it came from (:class:`Answer`, ``source`` in
:data:`SOURCES`): ``blueprint`` (the history is on the tree), ``translated`` (an opponent's raise
was translated on the way) or ``fallback`` when the abstract tree has no node for the real history:
more raises than the bet abstraction allows (a 4-bet where it has two raises a round), or a
translated all-in that was called while the real stacks still have chips behind (the abstract hand
is over, the real one goes on). The fallback plays the strategy of the abstract node *most like the
real state* (:meth:`Blueprint.fallback_node`): the same round and seat to act, facing a bet exactly
when the real state does, with the nearest amount to call and stack-to-pot ratio; its actions become
real ones as above, so the player keeps every option it really has (fold, call, the raises of that
node scaled to the real pot, all-in) and plays its hand: never a fixed check/call. Subgame solving
(``subgame.nested.solve_state``) answers those states instead where it can (source ``subgame``).

Export (``bp.export(path)``) writes one Parquet row per (node, bucket, action) with columns
``round: int8``, ``betting: string`` (ACPC betting of the abstract node), ``bucket: int32``,
``action: string``, ``probability: float32``; the key-value metadata holds the schema version, the
game definition, the bet and abstraction hashes and the config hash.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import stat
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from abstraction.bets import ALLIN, BetAbstractionError, parse_bets
from abstraction.buckets import RECIPES, AbstractionError, MissingAbstractionError, recipe_dir
from abstraction.cards import deal_buckets, default_card_abstraction, default_card_name, from_file
from abstraction.translation import translate, translate_probs
from abstraction.tree import KIND_DECISION, KIND_SHOWDOWN, build_tree
from blueprint.checkpoints import CHECKPOINTS_DIRNAME, list_checkpoints
from blueprint.io.blueprint_file import BLUEPRINT_NAME, abstraction_hash, read_blueprint
from blueprint.io.errors import CheckpointError
from blueprint.io.manifest import read_manifest
from blueprint.tables import layout as table_layout
from holdem.betting import CALL, FOLD, RAISE, Betting
from holdem.game import Game
from holdem.gamedef import GameDefError, parse_gamedef
from holdem.state import CHANCE, TERMINAL, State, StateError
from mccfr_util.files import atomic_path

_log = logging.getLogger(__name__)

_ALLIN_CALLED = (
    "a translated all-in was called: the abstract hand is over while the real one has chips behind"
)

EXPORT_SCHEMA_VERSION = 1
NODE_CACHE_SIZE = 100_000  # betting histories remembered by Blueprint.node_of (cleared when full)


#: Where an answer comes from (:class:`Answer`): the blueprint at the real history's node, the
#: blueprint after an opponent's off-tree raise was translated, a solved subgame (``subgame``,
#: ``mccfr.evaluation.solving``, ``mccfr.serving.solving``), the blueprint's node most like the real state
#: where the abstract tree has none (module docstring).
SOURCES = ("blueprint", "translated", "subgame", "fallback")


class Answer(NamedTuple):
    """A decision's strategy and where it came from."""

    strategy: dict[str, float]  # ACPC action -> probability, summing to 1
    source: str  # one of SOURCES
    reason: Optional[str] = None  # fallback: why the tree has no node for the history
    node: int = -1  # the abstract node whose strategy is played (-1: not the blueprint's)


class Walk(NamedTuple):
    node: int  # the abstract node reached (where the walk stopped, for a dead end)
    translated: bool  # an off-tree raise was translated on the way
    dead_end: Optional[str]  # why the abstract tree has no node for the rest of the history


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
    deal_buckets(
        kind,
        deal,
        h,
        np.array(game.num_board_cards, np.int64),
        game.deck_size,
        game.num_suits,
        game.num_ranks,
        out,
        work,
        iso,
        table,
        offsets,
    )
    return int(out[0, round_])


def _rebuild_tree(meta: dict, bad):
    """``(gamedef, bets, tree)`` from a blueprint file's header; the tree must have its hash."""

    try:
        gamedef = parse_gamedef(meta["game"]["acpc"], name=Path(meta["game"]["name"]).stem)
    except (GameDefError, ValueError, OSError) as exc:
        raise bad(f"its game cannot be parsed: {exc}") from None
    b = meta["bets"]
    bets = None
    try:
        if not gamedef.is_limit:
            if b["toml"] is None:
                raise BetAbstractionError("a no-limit game without a bet abstraction")
            bets = parse_bets(b["toml"], b["name"] or "bets")
        tree = build_tree(gamedef, bets, max_nodes=meta["tree"]["num_nodes"])
    except Exception as exc:  # noqa: BLE001 - whatever a forged header makes the builder do: refused
        raise bad(f"its betting tree cannot be rebuilt: {type(exc).__name__}: {exc}") from None
    bets_hash = bets.content_hash() if bets is not None else "limit"
    if bets_hash != b["hash"]:
        raise bad(f"bet abstraction hash {b['hash']} does not match its TOML ({bets_hash})")
    if tree.num_nodes != meta["tree"]["num_nodes"] or tree.content_hash() != meta["tree"]["hash"]:
        raise bad(
            f"tree hash {meta['tree']['hash']} ({meta['tree']['num_nodes']:,} nodes) does not match the tree "
            f"rebuilt from its game and bet abstraction ({tree.content_hash()}, {tree.num_nodes:,} nodes)"
        )
    return gamedef, bets, tree


def _build_command(game: str, recipe: Optional[str] = None, cards=None, out: str = "DIR") -> str:
    env = f"MCCFR_CACHE={shlex.quote(os.environ['MCCFR_CACHE'])} " if "MCCFR_CACHE" in os.environ else ""
    if recipe is not None:
        return f"{env}mccfr abstraction build --game {shlex.quote(game)} --abstraction {recipe}"
    buckets = ",".join(str(int(b)) for b in cards["num_buckets"])
    method = f" --method {cards['method']}" if cards.get("method") else ""
    return f"mccfr abstraction build --game {shlex.quote(game)} --buckets {buckets}{method} --out {shlex.quote(out)}"


def _missing_cards(game: str, name: str, where, command: str) -> BlueprintError:
    return BlueprintError(
        f"the blueprint {where} needs the card abstraction {name!r}, which is not on this machine; "
        f"queries only load card abstractions, they never build one (that takes minutes). Build it "
        f"first with: {command}"
    )


def _query_cards(gamedef, meta: dict, where):
    """The card abstraction a blueprint file names, loaded without building anything."""

    game, c = meta["game"]["name"], meta["cards"]
    name = c["name"]
    try:
        if name in ("lossless", "rank"):
            return default_card_abstraction(gamedef, name, build=False)
        if name in RECIPES:
            try:
                return default_card_abstraction(gamedef, name, progress=False, build=False)
            except MissingAbstractionError:
                raise _missing_cards(game, name, where, _build_command(game, recipe=name)) from None
        path = Path(name)
        # only what 'mccfr abstraction build' writes is ever read: DIR/abstraction.bin
        f = path if path.name == "abstraction.bin" else path / "abstraction.bin"
        try:
            st = os.stat(f)
        except OSError:
            out = str(path.parent) if path.name == "abstraction.bin" else name
            raise _missing_cards(game, name, where, _build_command(game, cards=c, out=out)) from None
        if not stat.S_ISREG(st.st_mode):
            raise BlueprintError(
                f"the card abstraction {name!r} of the blueprint {where}: {f} is not a regular file"
            )
        return from_file(gamedef, name)
    except AbstractionError as exc:
        raise BlueprintError(
            f"the card abstraction {name!r} of the blueprint {where} cannot be loaded: {exc}"
        ) from None


def _check_cards_available(cfg, run_dir: Path) -> None:
    """For a run read through its trainer checkpoint: BlueprintError (with the build command) when
    its card abstraction is a recipe that is not built here, instead of building it."""

    try:
        gamedef = parse_gamedef(cfg["gamedef"], name=Path(str(cfg["game"])).stem)
        name = default_card_name(gamedef, cfg.get("cards"))
        missing = name in RECIPES and not (recipe_dir(gamedef, name) / "abstraction.bin").is_file()
    except (KeyError, TypeError, ValueError, AttributeError):
        return  # the trainer's loader reports a malformed config
    if missing:
        raise _missing_cards(
            str(cfg["game"]), name, f"of {run_dir}", _build_command(str(cfg["game"]), recipe=name)
        )


def _pot_fraction(b: Betting, to: int) -> float:
    p = b.current_player()
    to_call = min(b.max_spent, b.game.stack[p]) - b.spent[p]
    return (to - b.max_spent) / (b.pot() + to_call)


class Blueprint:
    """Average strategy of a run over its abstract tree, queried with ACPC match states."""

    def __init__(self, trainer):
        """The blueprint of a trainer in this process (its current average strategy, float64)."""
        self._setup(
            trainer.game,
            trainer.tree,
            trainer.cards,
            trainer.row_offset,
            trainer.num_buckets,
            trainer.average_strategy(),
            trainer.iteration,
            trainer.config_hash,
            trainer.abstraction_hash,
            trainer.bets.content_hash() if trainer.bets is not None else "limit",
            "trainer",
        )

    def _setup(
        self,
        gamedef,
        tree,
        cards,
        row_offset,
        num_buckets,
        probs,
        iteration,
        config_hash,
        abstraction_hash,
        bets_hash,
        source,
    ) -> None:
        self.game = Game(gamedef)
        self.gamedef = gamedef
        self.tree = tree
        self.cards = cards
        self.row_offset = row_offset
        self.num_buckets = num_buckets
        self.probs = probs  # P(action) per table entry: float64 from a trainer, float32 from a blueprint file
        self.iteration = int(iteration)
        self.config_hash = config_hash
        self.abstraction_hash = abstraction_hash
        self.bets_hash = bets_hash
        self.source = source  # "trainer", or the blueprint file it was read from
        # betting actions -> (abstract node, translated?): every deterministic walk (no rng; play-time
        # queries repeat the same histories) and every walk that translated no raise; a translated
        # entry is not used by a walk with an rng (which translates afresh). Bounded; a plain dict
        # is safe to share between threads
        self._node_cache: dict = {}

    def strategy_hash(self) -> str:
        """A hex digest of this blueprint's abstraction hash, iteration and strategy (its
        probabilities as float32, whether read from a file or taken from a trainer): what a saved
        depth-limited solve (:mod:`subgame.saved`) names the blueprint its leaves were valued
        with. Computed once (about 1 s per GB of table)."""
        h = self.__dict__.get("_strategy_hash")
        if h is None:
            d = hashlib.blake2b(digest_size=16)
            d.update(f"{self.abstraction_hash}:{self.iteration}:{self.probs.size}".encode())
            flat = self.probs.reshape(-1)
            for i in range(0, flat.size, 1 << 22):
                d.update(np.ascontiguousarray(flat[i : i + (1 << 22)], np.float32).tobytes())
            h = self.__dict__["_strategy_hash"] = d.hexdigest()
        return h

    @classmethod
    def load(cls, run_dir, log=None) -> "Blueprint":
        """The blueprint of the newest complete checkpoint of ``run_dir``, read from its blueprint
        file alone (module docstring): no trainer, no regret tables, no card-abstraction build.

        Checkpoints that are incomplete or whose blueprint file is refused are reported through
        ``log`` (default: this module's logger) and skipped for the next older one, as
        ``blueprint.checkpoints.load_latest`` does. A checkpoint from before blueprint files is read the old
        way (the trainer checkpoint, average strategy computed here), with a one-line note.

        Raises:
            BlueprintError: the card abstraction the run was trained with is not on this machine
                (naming it and the ``mccfr abstraction build`` command that makes it).
            CheckpointError: no checkpoint could be read (naming each problem).
        """

        run_dir = Path(run_dir)
        report = log if log is not None else _log.warning
        problems: list[str] = []

        def skip(path, why) -> None:
            problems.append(f"skipping checkpoint {path}: {why}")
            report(problems[-1])

        for info in list_checkpoints(run_dir):
            if not info.complete:
                skip(info.path, info.problem)
                continue
            try:
                manifest = read_manifest(info.path)
                if manifest.get("iteration") != info.iteration:  # changed since it was listed
                    raise CheckpointError(
                        f"manifest in {info.path} is for iteration {manifest.get('iteration')!r}"
                    )
            except CheckpointError as exc:
                skip(info.path, exc)
                continue
            entry = next((e for e in manifest["files"] if e["file"] == BLUEPRINT_NAME), None)
            if entry is None:
                report(
                    f"{info.path} has no {BLUEPRINT_NAME} (written before blueprint files): "
                    "rebuilding the blueprint from the trainer checkpoint"
                )
                return cls._from_trainer_checkpoint(run_dir, manifest, problems, report)
            try:
                return cls.read_file(info.path / BLUEPRINT_NAME, entry, manifest)
            except CheckpointError as exc:
                skip(info.path, exc)
        detail = "; ".join(problems) if problems else "no checkpoints found"
        raise CheckpointError(f"no complete checkpoint in {run_dir / CHECKPOINTS_DIRNAME}: {detail}")

    @classmethod
    def read_file(cls, path, entry: Optional[dict] = None, manifest: Optional[dict] = None) -> "Blueprint":
        """A blueprint from one blueprint file (``CKPT_DIR/blueprint.msgpack.lz4``).

        ``entry``: its manifest entry (size and digest checked while it is read); ``manifest``:
        the checkpoint's manifest (its iteration and hashes must match the file's). Before any
        array is allocated the betting tree is rebuilt from the stored game and bet abstraction
        and must have the stored content hash, and the card abstraction is loaded, never built,
        and must have the stored hash; then the arrays must be that layout.

        Raises:
            CheckpointError: the file is refused (named, with the reason).
            BlueprintError: the card abstraction is not on this machine.
        """

        path = Path(path)
        built: dict = {}

        def bad(what: str) -> CheckpointError:
            return CheckpointError(f"blueprint file {path}: {what}")

        def check(meta: dict) -> None:
            if manifest is not None:
                if meta["iteration"] != manifest.get("iteration"):
                    raise bad(
                        f"iteration {meta['iteration']} differs from its manifest's {manifest.get('iteration')}"
                    )
                for key in ("config_hash", "abstraction_hash"):
                    if key in manifest and meta[key] != manifest[key]:
                        raise bad(f"{key} {meta[key]} differs from its manifest's {manifest[key]}")
            gamedef, bets, tree = _rebuild_tree(meta, bad)
            cards = _query_cards(gamedef, meta, path)  # BlueprintError when it is not on this machine
            if cards.content_hash() != meta["cards"]["hash"]:
                raise bad(
                    f"the card abstraction {cards.name!r} on this machine has hash {cards.content_hash()}, the "
                    f"blueprint was trained with {meta['cards']['hash']} (another build of it)"
                )
            row_offset, size = table_layout(tree, cards.buckets_array())
            if size != meta["table_entries"]:
                raise bad(f"{meta['table_entries']:,} table entries, the rebuilt layout has {size:,}")
            if abstraction_hash(tree.content_hash(), cards.content_hash()) != meta["abstraction_hash"]:
                raise bad(
                    f"abstraction hash {meta['abstraction_hash']} does not match the tree and card abstraction"
                )
            built.update(gamedef=gamedef, bets=bets, tree=tree, cards=cards, row_offset=row_offset)

        meta, arrays = read_blueprint(path, entry, layout=check)
        tree, row_offset = built["tree"], built["row_offset"]
        if not (
            np.array_equal(arrays["row_offset"], row_offset)
            and np.array_equal(arrays["node_round"], tree.round)
            and np.array_equal(arrays["num_actions"], tree.num_actions)
        ):
            raise bad("its layout arrays differ from the rebuilt tree's")
        bp = cls.__new__(cls)
        bets = built["bets"]
        bp._setup(
            built["gamedef"],
            tree,
            built["cards"],
            row_offset,
            built["cards"].buckets_array(),
            arrays["probs"],
            meta["iteration"],
            meta["config_hash"],
            meta["abstraction_hash"],
            bets.content_hash() if bets is not None else "limit",
            str(path),
        )
        return bp

    @classmethod
    def _from_trainer_checkpoint(cls, run_dir: Path, manifest: dict, problems: list, report) -> "Blueprint":
        """Today's path for checkpoints without a blueprint file: the trainer checkpoint. The card
        abstraction must already be on this machine (no build for queries)."""
        # lazily: the trainer brings the numba training kernels, which queries never need (a query
        # server loading a blueprint file never imports them); only these old checkpoints do
        from blueprint.trainer import Trainer

        _check_cards_available(manifest.get("config"), run_dir)
        seen = set(problems)
        return cls(Trainer.load(run_dir, log=lambda msg: None if msg in seen else report(msg)))

    # -- walking the tree ---------------------------------------------------------------------
    def _abstract_edges(self, n: int) -> tuple[int, int]:
        return int(self.tree.child_start[n]), int(self.tree.num_actions[n])

    def node_of(self, state: State, rng: Optional[np.random.Generator] = None) -> int:
        """Abstract node reached by the betting of ``state`` (translating off-tree raises; a
        showdown node when a translated all-in was called and the real hand goes on).

        Raises :class:`BlueprintError` when the tree has no node for the history (more raises than
        the bet abstraction allows): :meth:`answer` answers those states with its fallback."""
        w = self.walk(state, rng)
        if w.dead_end is not None and self.tree.kind[w.node] != KIND_SHOWDOWN:
            raise BlueprintError(w.dead_end)
        return w.node

    def walk(self, state: State, rng: Optional[np.random.Generator] = None) -> "Walk":
        """``(node, translated, dead_end)``: where ``state``'s real history leads in the abstract
        tree (see the module docstring), whether an off-tree raise was translated on the way, and
        why the tree has no node for the rest of the history (None when it has). Memoised by viewer and betting for deterministic walks (no ``rng``) and
        walks that translate nothing (queries and matches ask the same histories again and again)."""
        key = (state.viewer, state.betting.actions)
        hit = self._node_cache.get(key)
        if hit is not None and (rng is None or not hit.translated):
            return hit
        w = self._walk(state, rng)
        if rng is None or not w.translated:
            if len(self._node_cache) >= NODE_CACHE_SIZE:
                self._node_cache.clear()
            self._node_cache[key] = w
        return w

    def path(self, state: State) -> Optional[list[int]]:
        """The abstract nodes of :meth:`walk`'s deterministic walk (no ``rng``): the root, then
        the node after each real action of ``state``; None where the tree has no node for the
        history (or a translated all-in was called and the real hand goes on)."""
        nodes = [0]
        w = self._walk(state, None, nodes)
        if w.dead_end is not None:
            return None
        return nodes

    def _walk(self, state: State, rng: Optional[np.random.Generator], path: Optional[list] = None) -> Walk:
        """Follow ``state``'s real history down the abstract tree (see the module docstring);
        ``path`` gets the node after each action."""
        translated = False
        t = self.tree
        g = self.gamedef
        b = Betting.initial(g)
        n = 0
        for acts in state.betting.actions:
            for kind, size in acts:
                if t.kind[n] == KIND_SHOWDOWN:
                    return Walk(n, translated, _ALLIN_CALLED)
                if t.kind[n] != KIND_DECISION:
                    return Walk(n, translated, f"the abstract hand is over at {t.betting_string(n)!r}")
                s, k = self._abstract_edges(n)
                kinds = t.edge_kind[s : s + k]
                if kind in (FOLD, CALL):
                    hit = np.nonzero(kinds == kind)[0]
                    if not len(hit):
                        return Walk(
                            n,
                            translated,
                            f"abstract node {t.betting_string(n)!r} has no {'fc'[kind]!r} action",
                        )
                    e = s + int(hit[0])
                else:
                    raises = np.nonzero(kinds == RAISE)[0]
                    if not len(raises):
                        return Walk(
                            n,
                            translated,
                            f"a raise at {b.betting_string()!r} where the abstraction has none "
                            f"(abstract node {t.betting_string(n)!r})",
                        )
                    on = self._raise_edge(n, b, size, raises)
                    if on is not None:
                        e = on
                    elif b.current_player() == state.viewer:
                        # the player's own raise, off the tree only when a subgame chose it: its
                        # likeliest neighbour, the same every time
                        probs = self.translation_probs(n, b, size, raises)
                        e = max(probs, key=lambda eq: eq[1])[0]
                        translated = True
                    else:
                        e = self.translate_raise(n, b, size, raises, rng)
                        translated = True
                n = int(t.edge_child[e])
                b = b.apply(kind, size)
                if path is not None:
                    path.append(n)
        if t.kind[n] == KIND_SHOWDOWN:
            return Walk(n, translated, _ALLIN_CALLED)
        return Walk(n, translated, None)

    def _raise_edge(self, n: int, b: Betting, size: int, raises: np.ndarray) -> Optional[int]:
        """The abstract raise edge of node ``n`` that a real raise to ``size`` at betting ``b`` is,
        or None (off the tree): limit games' only raise; the edge raising to ``size`` where the real
        and abstract bets are the same; else the edge whose action becomes ``r<size>`` in the real
        betting (:meth:`action_keys`; the player's own raises are such)."""
        t = self.tree
        s = int(t.child_start[n])
        if self.gamedef.is_limit:
            return s + int(raises[0])
        if self.same_spent(n, b):
            exact = np.nonzero(t.edge_to[s + raises] == size)[0]
            if len(exact):
                return s + int(raises[exact[0]])
        keys = self.action_keys(n, b)
        want = f"r{size}"
        for i in raises:
            if keys[int(i)] == want:
                return s + int(i)
        return None

    def _translation_pool(
        self, n: int, b: Betting, size: int, raises: np.ndarray
    ) -> tuple[np.ndarray, list[float], float]:
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
                on = self._raise_edge(n, b, size, raises) if len(raises) else None
                if not len(raises):
                    edges = []
                elif on is not None:
                    edges = [(on, 1.0)]
                else:
                    edges = self.translation_probs(n, b, size, raises)
            if not edges:
                out[-1] = out.get(-1, 0.0) + p
                return
            nb = b.apply(kind, size)
            for e, q in edges:
                if q > 0.0:
                    go(i + 1, int(t.edge_child[e]), nb, p * q)

        go(0, 0, Betting.initial(g), 1.0)
        return sorted(out.items())

    def translation_probs(self, n: int, b: Betting, size: int, raises: np.ndarray) -> list[tuple[int, float]]:
        """:meth:`translate_raise`'s distribution: ``[(edge, probability)]``."""
        edges, fracs, x = self._translation_pool(n, b, size, raises)
        return [(int(edges[i]), q) for i, q in translate_probs(x, fracs)]

    def same_spent(self, n: int, b: Betting) -> bool:
        return tuple(int(x) for x in self.tree.spent[n]) == tuple(b.spent)

    def betting_at(self, n: int) -> Betting:
        """The betting state at abstract node ``n`` (memoised by the tree)."""
        return self.tree.betting(n)

    # -- queries ------------------------------------------------------------------------------
    def strategy(
        self, matchstate: str | State, rng: Optional[np.random.Generator] = None
    ) -> dict[str, float]:
        """``{ACPC action: probability}`` of the seat to act, who must be the MATCHSTATE's viewer:
        :meth:`answer`'s strategy (see there)."""
        return self.answer(matchstate, rng).strategy

    def answer(self, matchstate: str | State, rng: Optional[np.random.Generator] = None) -> Answer:
        """The average strategy of the seat to act, who must be the MATCHSTATE's viewer
        (``matchstate``: the string, or a parsed :class:`~holdem.state.State` with a viewer), and
        where it came from (:data:`SOURCES`; see the module docstring). Every legal decision has
        an answer; only a state that is not the viewer's decision raises
        (:class:`NotADecisionError`). ``rng``: translate off-tree raises at random between their
        neighbours (as a player does); without, deterministically (the likelier neighbour)."""
        state = viewer_decision(matchstate if isinstance(matchstate, State) else self.game.state(matchstate))
        actor = state.viewer
        w = self.walk(state, rng)
        n = w.node
        t = self.tree
        if w.dead_end is None and t.kind[n] == KIND_DECISION and int(t.player[n]) == actor:
            return Answer(
                self._node_strategy(n, state), "translated" if w.translated else "blueprint", None, n
            )
        reason = (
            w.dead_end or f"the abstract history {t.betting_string(n)!r} is not a decision of seat {actor}"
        )
        m = self.fallback_node(state.betting)
        return Answer(self._node_strategy(m, state), "fallback", reason, m)

    def _node_strategy(self, n: int, state: State) -> dict[str, float]:
        """The strategy at decision node ``n`` for the viewer's hand, as real ACPC actions."""
        t = self.tree
        r = int(t.round[n])
        assert state.viewer is not None  # a decision of its viewer (viewer_decision)
        bucket = hand_bucket(self.cards, self.gamedef, state.hole_cards[state.viewer], state.board_cards, r)
        _, k = self._abstract_edges(n)
        off = int(self.row_offset[n]) + bucket * k
        probs = self.probs[off : off + k]
        out: dict[str, float] = {}
        for key, p in zip(self.action_keys(n, state.betting), probs):
            out[key] = out.get(key, 0.0) + float(p)
        total = sum(out.values())
        return {a: p / total for a, p in out.items()}

    # -- the fallback where the tree has no node ------------------------------------------------
    def fallback_node(self, b: Betting) -> int:
        """The abstract decision node most like the real betting ``b`` (a decision): of the same
        round and seat to act, facing a bet exactly when ``b`` does, then the nearest in the
        fraction of the pot to call and in log(1 + stack-to-pot ratio) after the call, a node that
        can raise preferred where the real state can; ties to the lowest node (deterministic).
        Facing a bet it can only call or fold (an all-in: the call ends the betting, nothing is
        left behind to play for), only the price counts: the nearest fraction of the pot to call,
        whatever the node's stack behind. Otherwise a player that has put most of its stack in
        (the fourth and fifth raises of a raise war past the cap) would answer the last few chips
        with a node facing an all-in at about even money, and fold hands that must call.
        Its strategy is what :meth:`answer` plays where the tree has no node for the history."""
        rnd, player, frac, lspr, can_raise = self._node_features()
        p = b.current_player()
        f, ls = self._spr(np.asarray(b.spent, np.int64)[None, :], np.array([p]))
        facing = f[0] > 0
        real_raise = b.raise_range() is not None
        cand = np.nonzero((rnd == b.round) & (player == p))[0]
        if not len(cand):
            cand = np.nonzero(player == p)[0]
        if not len(cand):
            cand = np.arange(len(rnd))
        score = (
            np.abs(frac[cand] - f[0])
            + (np.abs(lspr[cand] - ls[0]) if real_raise or not facing else 0.0)
            + 10.0 * ((frac[cand] > 0) != facing)
            + 2.0 * (real_raise & ~can_raise[cand])
        )
        nodes = self._decision_index()
        return int(nodes[cand[int(np.argmin(score))]])

    def _decision_index(self) -> np.ndarray:
        got = getattr(self, "_decisions", None)
        if got is None:
            got = self._decisions = np.nonzero(self.tree.kind == KIND_DECISION)[0]
        return got

    def _spr(self, spent: np.ndarray, player: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (amount to call / pot, log(1 + effective stack behind / pot after the call))."""
        stack = np.asarray(self.gamedef.stack, np.int64)
        rows = np.arange(len(player))
        top = np.minimum(spent.max(axis=1), stack[player])
        pot = spent.sum(axis=1).astype(np.float64)
        call = (top - spent[rows, player]).astype(np.float64)
        behind = np.maximum(stack.min() - spent.max(axis=1), 0).astype(np.float64)
        return call / np.maximum(pot, 1.0), np.log1p(behind / np.maximum(pot + call, 1.0))

    def _node_features(self):
        got = getattr(self, "_features", None)
        if got is None:
            t = self.tree
            nodes = self._decision_index()
            player = t.player[nodes].astype(np.int64)
            frac, lspr = self._spr(t.spent[nodes].astype(np.int64), player)
            can_raise = np.array(
                [bool((t.edge_kind[s : s + k] == RAISE).any()) for s, k in map(self._abstract_edges, nodes)],
                dtype=bool,
            )
            got = self._features = (t.round[nodes].astype(np.int64), player, frac, lspr, can_raise)
        return got

    def decision_nodes(self, b: Betting) -> list[tuple[int, float]]:
        """``[(node, probability)]``: the abstract decision nodes whose strategies a player of this
        blueprint mixes at real betting ``b`` (a decision): :meth:`node_distribution`, with every
        branch that has no decision node of the seat to act (a dead end, a called translated
        all-in) replaced by :meth:`fallback_node`. What LBR and the depth-limited leaves model."""
        t = self.tree
        actor = b.current_player()
        out: dict[int, float] = {}
        fallback = None
        for n, q in self.node_distribution(b):
            if n < 0 or t.kind[n] != KIND_DECISION or int(t.player[n]) != actor or int(t.round[n]) != b.round:
                if fallback is None:
                    fallback = self.fallback_node(b)
                n = fallback
            out[n] = out.get(n, 0.0) + q
        return sorted(out.items())

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
                        to = b.pot_raise_to(frac)
                    key = f"r{min(max(to, rr[0]), rr[1])}"
            else:
                key = "c"
            keys.append(key)
        return keys

    # -- export -------------------------------------------------------------------------------
    def export(self, path) -> int:
        """Write the average strategy as Parquet (schema in the module docstring); returns rows."""
        import pyarrow as pa  # lazily: a slow import that only export needs
        import pyarrow.parquet as pq

        t = self.tree
        schema = pa.schema(
            [
                ("round", pa.int8()),
                ("betting", pa.string()),
                ("bucket", pa.int32()),
                ("action", pa.string()),
                ("probability", pa.float32()),
            ],
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
    import pyarrow as pa  # lazily, as in Blueprint.export

    return pa.Table.from_arrays(
        [pa.array(np.concatenate(batch[c]), type=schema.field(c).type) for c in schema.names], schema=schema
    )


__all__ = [
    "Blueprint",
    "BlueprintError",
    "NotADecisionError",
    "StateError",
    "hand_bucket",
    "viewer_decision",
]
