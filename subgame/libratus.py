"""Reader of the public Libratus endgame files (Sandholm-Lab/LibratusEndgames).

A file has the lines ``-round R`` (1-based: 3 = turn, 4 = river), ``-board CARDS``, ``-pot P`` (each
seat has put in ``P / 2``) and ``-reach`` followed by 2 x 1,326 reach probabilities: the
out-of-position seat's (first to act on the round) then the button's. Hands are in the file's own
order: cards ranked 2..A and, within a rank, suits ``s h d c``; a hand is a pair of cards in that
order, listed lexicographically. The game is heads-up no-limit hold'em with 100/50 blinds and
20,000 stacks (ACPC's ``holdem.nolimit.2p.reverse_blinds``): the big blind is seat 0 and acts first
after the flop, so the out-of-position range is seat 0's.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Optional

import numpy as np

from abstraction.bets import BetAbstraction
from holdem.cards import SUIT_CHARS, CardError, parse_cards
from holdem.gamedef import load_gamedef
from subgame.bets import default_subgame_bets
from subgame.tree import SubgameError, all_hands, betting_at
from subgame.types import Subgame

FILE_SUITS = "shdc"  # suit order within a rank in the file's hand order


def _file_order_to_ours(num_suits: int = 4, num_ranks: int = 13) -> np.ndarray:
    """``perm[i]`` = our hand index of the file's ``i``-th hand."""
    file_cards = [r * num_suits + SUIT_CHARS.index(s) for r in range(num_ranks) for s in FILE_SUITS]
    ours = {tuple(int(c) for c in h): i for i, h in enumerate(all_hands(load_gamedef("hunl")))}
    return np.array([ours[tuple(sorted(p))] for p in itertools.combinations(file_cards, 2)], np.int64)


def read_libratus(path, bets: Optional[BetAbstraction] = None) -> Subgame:
    """The endgame in ``path`` as an explicit :class:`Subgame` (no alternative values: unsafe only)."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SubgameError(f"cannot read {path}: {exc}") from None
    fields: dict[str, list[str]] = {}
    key = None
    for tok in text.split():
        if tok.startswith("-") and not _is_number(tok):
            key = tok[1:]
            if key in fields:
                raise SubgameError(f"{path}: field -{key} appears twice")
            fields[key] = []
        elif key is None:
            raise SubgameError(f"{path}: expected a -field before {tok!r}")
        else:
            fields[key].append(tok)
    for k in ("round", "board", "pot", "reach"):
        if k not in fields:
            raise SubgameError(f"{path}: missing field -{k}")
    unknown = set(fields) - {"round", "board", "pot", "reach"}
    if unknown:
        raise SubgameError(f"{path}: unknown field(s) {', '.join('-' + u for u in sorted(unknown))}")
    game = load_gamedef("hunl")
    try:
        rnd = int(_one(fields, "round", path))
        pot = int(_one(fields, "pot", path))
    except ValueError:
        raise SubgameError(f"{path}: -round and -pot must be integers") from None
    if rnd not in (2, 3, 4):
        raise SubgameError(f"{path}: -round {rnd} must be 2 (flop), 3 (turn) or 4 (river)")
    try:
        board = parse_cards(_one(fields, "board", path), game.num_suits, game.num_ranks)
    except CardError as exc:
        raise SubgameError(f"{path}: -board: {exc}") from None
    if len(board) != game.board_cards_through(rnd - 1):
        raise SubgameError(
            f"{path}: round {rnd} needs {game.board_cards_through(rnd - 1)} board cards, got {len(board)}"
        )
    vals = fields["reach"]
    if len(vals) != 2 * 1326:
        raise SubgameError(f"{path}: -reach needs 2 x 1326 probabilities, got {len(vals)}")
    try:
        reach = np.array([float(v) for v in vals], np.float64).reshape(2, 1326)
    except ValueError as exc:
        raise SubgameError(f"{path}: -reach: {exc}") from None
    if not np.all(np.isfinite(reach)) or (reach < 0).any() or (reach > 1 + 1e-6).any():
        raise SubgameError(f"{path}: -reach values must be probabilities in [0, 1]")
    perm = _file_order_to_ours()
    ranges = np.zeros((2, 1326))
    ranges[:, perm] = reach
    root = betting_at(game, rnd - 1, pot)
    if bets is None:
        bets = default_subgame_bets()
    sub = Subgame(game, root, tuple(board), ranges, bets)
    sub.public_tree()  # validates ranges against the board
    return sub


def _one(fields, k, path) -> str:
    if len(fields[k]) != 1:
        raise SubgameError(f"{path}: -{k} takes one value, got {len(fields[k])}")
    return fields[k][0]


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False
