"""Terminal values of range-vectorized CFR: a fold's and a showdown's value for every hand of the
traverser against the opponent's reach over its hands, with exact card removal, in O(hands).

One home for the terminals of every walk over hand ranges: the full-width public-tree CFR of
:mod:`blueprint.vector_cfr`, the subgame solver's walk (:mod:`subgame.kernels`, compact lists per
seat) and the depth-limited continuations (:mod:`subgame.depth_kernels`, full width).

* fold: ``sum_{h' ~ h} r[h'] = T - C[c1] - C[c2] + r[h]`` (``T`` the opponent's total reach,
  ``C[c]`` the reach of opponent hands holding card ``c``, ``h ~ h'`` for hands sharing no card;
  the hand itself shares both cards, subtracted twice, added back once), times the folder's loss
  or gain ``u``;
* showdown: the hands swept in order of strength, keeping per-card sums of the weaker (ascending)
  and then the stronger (descending) hands; a hand's value is ``m`` times the compatible reach it
  beats minus the compatible reach that beats it (ties count zero).

Two layouts. Full width (:func:`fold_values_all`, :func:`showdown_values_all`): vectors over all
``H`` hands, 0 for hands the board blocks (``live``), the showdown order given per board.
Lists (:func:`fold_values`, :func:`showdown_values`): each seat's vector over its own list of
hands (:class:`subgame.tree.HandLists`), the showdown's sweep order of both lists merged ahead of
time per board, so ties need no grouping; hold'em's two-card hands take an unrolled path.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def fold_values(ro, no, cards_o, cards_p, same_p, npl, u, cacc, out):
    """``out[i] = u * sum of ro over the opponent hands sharing no card with traverser hand i``
    (lists of hands per seat, as the subgame solver's :class:`subgame.tree.HandLists`: ``cards_*[i]``
    the cards of list entry ``i``, ``same_p[i]`` the traverser hand's entry in the opponent's list or
    -1; an empty ``same_p`` when both lists are the same)."""
    k = cards_o.shape[1]
    if k == 2 and same_p.shape[0] > 0:  # hold'em's lists: the card loops unrolled (about 1.5x faster)
        _fold_values2(ro, no, cards_o, cards_p, same_p, npl, u, cacc, out)
        return
    cacc[:] = 0.0
    tot = 0.0
    for j in range(no):
        r = ro[j]
        if r != 0:  # (deep in a tree many opponent hands have no reach)
            tot += r
            for c in range(k):
                cacc[cards_o[j, c]] += r
    for i in range(npl):
        s = tot
        for c in range(k):
            s -= cacc[cards_p[i, c]]
        if k == 2:  # the same hand shares both cards: subtracted twice, added back once
            q = same_p[i] if same_p.shape[0] > 0 else i  # no same_p: both lists are every hand
            if q >= 0:
                s += ro[q]
        out[i] = u * s


@numba.njit(cache=True, nogil=True, _nrt=False)
def _fold_values2(ro, no, cards_o, cards_p, same_p, npl, u, cacc, out):
    """:func:`fold_values` for two-card hands (the same sums; the same hand's reach added before
    the two cards' sums are subtracted, which keeps exact zeros where the old loop did)."""
    cacc[:] = 0.0
    tot = 0.0
    for j in range(no):
        r = ro[j]
        if r != 0:
            tot += r
            cacc[cards_o[j, 0]] += r
            cacc[cards_o[j, 1]] += r
    for i in range(npl):
        q = same_p[i]
        s = tot + ro[q] if q >= 0 else tot
        out[i] = u * (s - cacc[cards_p[i, 0]] - cacc[cards_p[i, 1]])


@numba.njit(cache=True, nogil=True, _nrt=False)
def _showdown_values2(ro, n_ev, up, up_cards, down, down_cards, m, cacc, out):
    """:func:`showdown_values` for two-card hands (the same sums; the cards are read ahead of the
    event's branch)."""
    cacc[:] = 0.0
    tot = 0.0
    for e in range(n_ev):
        q = up[e]
        c1 = up_cards[e, 0]
        c2 = up_cards[e, 1]
        if q >= 0:
            r = ro[q]
            if r != 0:
                tot += r
                cacc[c1] += r
                cacc[c2] += r
        else:
            out[-q - 1] = tot - cacc[c1] - cacc[c2]
    cacc[:] = 0.0
    tot = 0.0
    for e in range(n_ev):
        q = down[e]
        c1 = down_cards[e, 0]
        c2 = down_cards[e, 1]
        if q >= 0:
            r = ro[q]
            if r != 0:
                tot += r
                cacc[c1] += r
                cacc[c2] += r
        else:
            i = -q - 1
            out[i] = m * (out[i] - (tot - cacc[c1] - cacc[c2]))


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def showdown_values(ro, n_ev, up, up_cards, down, down_cards, m, cacc, out):
    """``out[i] = m * sum_{h' compatible} sign(s(i) - s(h')) ro[h']`` for each traverser entry ``i``,
    by the two sweeps of events of :class:`subgame.tree.HandLists` (``up``: additions of weaker
    opponent hands and reads; ``down``: the same from the strong end). The sweep of
    :func:`showdown_values_all` with the tie groups and the two seats' lists merged ahead of time.
    Opponent hands of zero reach are skipped (deep in a tree many are)."""
    k = up_cards.shape[1]
    if k == 2:  # hold'em: the card loops unrolled (about 1.7x faster)
        _showdown_values2(ro, n_ev, up, up_cards, down, down_cards, m, cacc, out)
        return
    cacc[:] = 0.0
    tot = 0.0
    for e in range(n_ev):
        q = up[e]
        if q >= 0:
            r = ro[q]
            if r != 0:
                tot += r
                for c in range(k):
                    cacc[up_cards[e, c]] += r
        else:
            s = tot
            for c in range(k):
                s -= cacc[up_cards[e, c]]
            out[-q - 1] = s
    cacc[:] = 0.0
    tot = 0.0
    for e in range(n_ev):
        q = down[e]
        if q >= 0:
            r = ro[q]
            if r != 0:
                tot += r
                for c in range(k):
                    cacc[down_cards[e, c]] += r
        else:
            s = tot
            for c in range(k):
                s -= cacc[down_cards[e, c]]
            i = -q - 1
            out[i] = m * (out[i] - s)


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def fold_values_all(rho, live, hands, u, card, out):
    """``out[h] = u * sum of rho over hands sharing no card with h`` for the ``live`` hands, 0
    elsewhere: :func:`fold_values` over every hand (full-width vectors, ``H`` hands). ``card``:
    float64 work array, one entry per card of the deck."""
    H = rho.shape[0]
    k = hands.shape[1]
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    for h in range(H):
        r = rho[h]
        if r != 0.0:
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
    for h in range(H):
        if live[h]:
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            if k == 2:
                s += rho[h]
            out[h] = u * s
        else:
            out[h] = 0.0


@numba.njit(cache=True, nogil=True, fastmath=True, _nrt=False)
def showdown_values_all(rho, order, strength, nlive, hands, m, card, out):
    """``out[h] = m * sum_{h' compatible} sign(s(h) - s(h')) rho[h']`` for the live hands
    (``order[:nlive]`` by increasing ``strength[:nlive]``), 0 elsewhere: :func:`showdown_values`
    over every hand (full-width vectors), the tie groups found on the way. ``card``: float64 work
    array, one entry per card of the deck."""
    H = rho.shape[0]
    k = hands.shape[1]
    for h in range(H):
        out[h] = 0.0
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    i = 0
    while i < nlive:
        j = i
        while j < nlive and strength[j] == strength[i]:
            j += 1
        for q in range(i, j):
            h = order[q]
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            out[h] = s
        for q in range(i, j):
            h = order[q]
            r = rho[h]
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
        i = j
    for c in range(card.shape[0]):
        card[c] = 0.0
    tot = 0.0
    i = nlive - 1
    while i >= 0:
        j = i
        while j >= 0 and strength[j] == strength[i]:
            j -= 1
        for q in range(i, j, -1):
            h = order[q]
            s = tot
            for c in range(k):
                s -= card[hands[h, c]]
            out[h] = m * (out[h] - s)
        for q in range(i, j, -1):
            h = order[q]
            r = rho[h]
            tot += r
            for c in range(k):
                card[hands[h, c]] += r
        i = j
