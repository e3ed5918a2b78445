"""What determines a run's result, parsed once: :class:`RunConfig`.

A new run's config is built with the defaults filled in by :func:`blueprint.defaults.run_config`
(``mccfr train`` and :func:`blueprint.trainer.make_trainer` alike); a checkpoint's by
:meth:`RunConfig.from_manifest`, from the resolved config its manifest records
(:meth:`RunConfig.to_dict`, hashed by :func:`config_hash`). Either way the game is parsed, the bet
abstraction loaded, the algorithm resolved and full traversal's deal count checked here, once, and
the :class:`blueprint.trainer.Trainer` takes the parsed objects. The card abstraction is not part
of it: only its name is; building or loading it is a step of its own
(:func:`blueprint.session.card_abstraction`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from math import perm
from pathlib import Path
from typing import Optional

from abstraction.bets import BetAbstraction, load_bets, parse_bets
from blueprint.algo import AlgoConfig, AlgoError, algo_dict
from holdem.gamedef import GameDef, parse_gamedef

__all__ = ["MAX_FULL_DEALS", "RunConfig", "config_hash"]

#: The most deals full-traversal CFR / CFR+ enumerates an iteration.
MAX_FULL_DEALS = 2_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that determines a run's result: the game, the bet abstraction, the card
    abstraction's name, the algorithm and the seed, the names as given and the objects parsed.

    Refuses full-traversal CFR on a game with more than :data:`MAX_FULL_DEALS` deals or more than
    two seats (before any card abstraction is built)."""

    game: str  # preset name or .game path as given
    gamedef: GameDef  # the game, parsed
    bets: Optional[str]  # bet abstraction name/path as given (None for limit games)
    bet_abstraction: Optional[BetAbstraction]  # the bet abstraction, loaded (None for limit games)
    cards: Optional[str]  # card abstraction name or built directory (None: the game's default)
    algo: AlgoConfig
    seed: int = 0

    def __post_init__(self) -> None:
        if self.algo.full_traversal and self.gamedef.num_players > 2:
            raise AlgoError(
                f"--algo {self.algo.name} is two-player only: {self.gamedef.name or self.game} has "
                f"numPlayers = {self.gamedef.num_players}; use a sampled algorithm (pluribus, dcfr, linear, vanilla)"
            )
        if self.algo.full_traversal:
            g = self.gamedef
            deals = perm(g.deck_size, g.cards_per_deal)
            if deals > MAX_FULL_DEALS:
                raise AlgoError(
                    f"--algo {self.algo.name} enumerates every deal: {deals:,} for {g.name or self.game} "
                    f"(at most {MAX_FULL_DEALS:,}); use a sampled algorithm (pluribus, dcfr, linear, vanilla)"
                )

    def to_dict(self) -> dict:
        """The resolved config a checkpoint's manifest and ``run.toml`` record."""
        ba = self.bet_abstraction
        return {
            "game": self.game,
            "gamedef": self.gamedef.to_acpc(),
            "bets": self.bets,
            "bets_toml": ba.to_toml() if ba is not None else None,
            "cards": self.cards,
            "algo": algo_dict(self.algo),
            "seed": self.seed,
        }

    @classmethod
    def from_manifest(cls, cfg: dict) -> "RunConfig":
        """The config a checkpoint records (:meth:`to_dict`): the game from its ACPC text, the
        bets from their TOML text."""
        gamedef = parse_gamedef(cfg["gamedef"], name=Path(str(cfg["game"])).stem)
        bets_toml = cfg.get("bets_toml")
        if gamedef.is_limit:
            bet_abstraction = None
        elif bets_toml is not None:
            bet_abstraction = parse_bets(bets_toml, cfg["bets"] or "bets")
        elif cfg["bets"] is not None:  # a config that names its bets without their text
            bet_abstraction = load_bets(cfg["bets"])
        else:
            raise ValueError("a no-limit game without a bet abstraction (neither bets nor bets_toml)")
        return cls(
            game=cfg["game"],
            gamedef=gamedef,
            bets=cfg["bets"],
            bet_abstraction=bet_abstraction,
            cards=cfg["cards"],
            algo=AlgoConfig(**cfg["algo"]),
            seed=cfg["seed"],
        )


def config_hash(d: dict) -> str:
    return hashlib.blake2b(json.dumps(d, sort_keys=True).encode(), digest_size=8).hexdigest()
