"""Terminal payoffs of the sampling kernel (:mod:`blueprint.kernels`), for two seats and for more.

Two seats: :func:`terminal_utility` from the deal's showdown winner. More: :func:`nseat_utility`
from the node's live-seat mask and each seat's hand strength, the side pots of the reference
``valueOfState``. The kernel passes its ``winner`` argument to :func:`utility` and :func:`pot_at`
and gets it from :func:`deal_winner`; these pick the code by the argument's type when numba
compiles (an int with two seats, a :class:`Showdown` with more), so the two-seat kernel carries
none of the N-seat code.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba.extending import overload

from abstraction.cards import card_buckets, card_buckets_n
from abstraction.tree import KIND_FOLD


@numba.njit(cache=True, inline="always", error_model="numpy")
def terminal_utility(n, trav, kind, player, spent, winner):
    """Net chips for seat ``trav`` at terminal node ``n``."""
    if kind[n] == KIND_FOLD:
        folder = player[n]
        if folder == trav:
            return -float(spent[n, trav])
        return float(spent[n, folder])
    if winner < 0:
        return 0.0
    v = float(min(spent[n, 0], spent[n, 1]))
    return v if winner == trav else -v


@numba.njit(cache=True, error_model="numpy", _nrt=False)
def nseat_utility(n, trav, kind, spent, live, strength, rem):
    """:func:`terminal_utility` for any number of seats ``P = spent.shape[1]``: net chips for seat
    ``trav`` at terminal ``n``, given each seat's hand ``strength`` (higher wins; ``rem`` is int64
    ``[P]`` scratch). As :meth:`holdem.betting.Betting.payoffs_given_ranks` (the reference
    ``valueOfState``): a folded seat loses its chips; the last seat left wins the others'; at a
    showdown each side pot, from the smallest remaining commitment up, is shared equally by the
    best hands among the seats in it that have not folded (folded seats' chips count, their hands
    do not; chips only folded seats have left go to no one)."""
    seats = spent.shape[1]
    mask = live[n]
    if (mask >> trav) & 1 == 0:
        return -float(spent[n, trav])
    if kind[n] == KIND_FOLD:
        total = 0
        for p in range(seats):
            total += spent[n, p]
        return float(total - spent[n, trav])
    for p in range(seats):
        rem[p] = spent[n, p]
    out = 0.0
    while True:
        size = 0
        for p in range(seats):
            if rem[p] > 0 and (size == 0 or rem[p] < size):
                size = rem[p]
        if size == 0:
            break
        win = 0
        for p in range(seats):
            if rem[p] > 0 and (mask >> p) & 1 and strength[p] > win:
                win = strength[p]
        winners = 0
        entries = 0
        for p in range(seats):
            if rem[p] > 0:
                entries += 1
                if (mask >> p) & 1 and strength[p] == win:
                    winners += 1
        if winners == 0:
            break
        if rem[trav] > 0:
            if strength[trav] == win:
                out += float(size * (entries - winners)) / float(winners)
            else:
                out -= float(size)
        for p in range(seats):
            if rem[p] > 0:
                rem[p] -= size
    return out


class Showdown(NamedTuple):
    """With more than two seats, the ``winner`` argument of :func:`_es_traverse`: what a terminal's
    payoffs need beyond the tree (:func:`nseat_utility`). With two seats ``winner`` is the deal's
    showdown winner, an int, and the kernels compile to the two-seat code alone."""

    live: np.ndarray  # uint16 [nodes]: the seats that have not folded, a bit mask per node
    strength: np.ndarray  # int64 [P]: each seat's hand strength this deal (card_buckets_n)
    rem: np.ndarray  # int64 [P]: scratch for a showdown's side pots


def utility(n, trav, kind, player, spent, winner):
    """Net chips for seat ``trav`` at terminal ``n``: :func:`terminal_utility` when ``winner`` is
    the two-seat winner (an int), :func:`nseat_utility` when it is a :class:`Showdown`."""


def pot_at(spent, n, winner):
    """The chips in the pot at node ``n`` (``winner`` as :func:`utility`'s picks the seat count)."""


def deal_winner(cards, deal, buckets, work, showdown):
    """The deal's buckets into ``buckets``, and the ``winner`` argument of :func:`_es_traverse`:
    with ``showdown`` None (two seats) the showdown winner (:func:`card_buckets`); else
    ``showdown`` with each seat's strength filled in (:func:`card_buckets_n`)."""


@overload(deal_winner)
def _deal_winner(cards, deal, buckets, work, showdown):
    if isinstance(showdown, numba.types.NoneType):
        return lambda cards, deal, buckets, work, showdown: card_buckets(cards, deal, buckets, work)

    def impl(cards, deal, buckets, work, showdown):
        card_buckets_n(cards, deal, buckets, work, showdown.strength)
        return showdown

    return impl


@overload(utility)
def _utility(n, trav, kind, player, spent, winner):
    if isinstance(winner, numba.types.Integer):
        return lambda n, trav, kind, player, spent, winner: terminal_utility(
            n, trav, kind, player, spent, winner
        )

    def impl(n, trav, kind, player, spent, winner):
        return nseat_utility(n, trav, kind, spent, winner.live, winner.strength, winner.rem)

    return impl


@overload(pot_at)
def _pot_at(spent, n, winner):
    if isinstance(winner, numba.types.Integer):
        return lambda spent, n, winner: float(spent[n, 0] + spent[n, 1])

    def impl(spent, n, winner):
        total = 0
        for p in range(spent.shape[1]):
            total += spent[n, p]
        return float(total)

    return impl
