"""Cards as ACPC writes them.

A card is the integer ``rank * num_suits + suit`` (dense over the game's deck), with ranks
``23456789TJQKA`` from the lowest up (a 3-rank deck is ``2 3 4``) and suits ``cdhs`` in that order
(a 2-suit deck has ``c`` and ``d``). Names are two characters, e.g. ``Ah``, ``2c``.
"""

from __future__ import annotations

RANK_CHARS = "23456789TJQKA"
SUIT_CHARS = "cdhs"


class CardError(ValueError):
    """A card string that is malformed or outside the game's deck."""


def card_name(card: int, num_suits: int) -> str:
    return RANK_CHARS[card // num_suits] + SUIT_CHARS[card % num_suits]


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def parse_card(text: str, num_suits: int, num_ranks: int) -> int:
    if not isinstance(text, str):
        raise CardError(f"a card is a str, got {type(text).__name__}")
    if len(text) != 2:
        raise CardError(f"card {_clip(text)!r} must be two characters, rank then suit")
    r = RANK_CHARS.find(text[0])
    s = SUIT_CHARS.find(text[1])
    if r < 0 or s < 0:
        raise CardError(f"card {text!r}: unknown rank or suit")
    if r >= num_ranks or s >= num_suits:
        raise CardError(f"card {text!r} is not in this game's deck ({num_ranks} ranks x {num_suits} suits)")
    return r * num_suits + s


def parse_cards(text: str, num_suits: int, num_ranks: int) -> list[int]:
    """Parse a run of concatenated card names such as ``"AhKd"``; never more than the deck holds."""
    if not isinstance(text, str):
        raise CardError(f"cards are a str, got {type(text).__name__}")
    if len(text) > 2 * num_suits * num_ranks:
        raise CardError(
            f"cards {_clip(text)!r}: {len(text)} characters, more cards than the deck holds"
            f" ({num_ranks} ranks x {num_suits} suits)"
        )
    if len(text) % 2:
        raise CardError(f"cards {_clip(text)!r}: odd length, expected concatenated two-character cards")
    return [parse_card(text[i : i + 2], num_suits, num_ranks) for i in range(0, len(text), 2)]


def cards_str(cards, num_suits: int) -> str:
    return "".join(card_name(int(c), num_suits) for c in cards)
