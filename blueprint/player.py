"""The :class:`Player` protocol that match play takes, and :func:`sample`, one action of a strategy.

A player sees the hand as its seat's view: a :class:`holdem.state.State` whose ``viewer`` is the
seat, always at a decision of that seat, and answers with an ACPC action string legal there.
The players themselves (baselines, the blueprint, blueprint + solving) live in
:mod:`mccfr.evaluation.players` and :mod:`mccfr.evaluation.solving`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from holdem.state import State


@runtime_checkable
class Player(Protocol):
    """Anything that can play a seat: a ``name`` and ``act(state, rng) -> ACPC action``."""

    name: str

    def act(self, state: State, rng: np.random.Generator) -> str: ...


@runtime_checkable
class ExactPlayer(Player, Protocol):
    """A player whose action distribution is known exactly at every decision."""

    def probs(self, state: State) -> dict[str, float]: ...


def sample(dist: dict[str, float], rng: np.random.Generator) -> str:
    """One action of ``dist`` (``{action: probability}``, summing to 1)."""
    acts = list(dist)
    if len(acts) == 1:
        return acts[0]
    u = rng.random()
    acc = 0.0
    for a in acts:
        acc += dist[a]
        if u < acc:
            return a
    return next(a for a in reversed(acts) if dist[a] > 0)
