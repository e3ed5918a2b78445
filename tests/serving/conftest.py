"""A small no-limit hold'em blueprint shared by the service and ACPC client tests."""

from __future__ import annotations

import pytest

from blueprint.blueprint import Blueprint
from blueprint.trainer import make_trainer
from mccfr.serving.responders import BlueprintResponder


@pytest.fixture(scope="session")
def hunl_bp() -> Blueprint:
    # hunl20 (20 big blinds, 52 cards) with the table-free `rank` buckets: real hold'em, small tree
    tr = make_trainer("hunl20", bets="small", cards="rank", algo="pluribus", seed=1)
    tr.run(1000)
    return Blueprint(tr)


@pytest.fixture(scope="session")
def responder(hunl_bp) -> BlueprintResponder:
    r = BlueprintResponder(hunl_bp)
    r.warm_up()
    return r
