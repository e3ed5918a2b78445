"""Hands against the bot through ``/v1/play/*`` as a person plays them: while a hand runs no
response carries the bot's strategy or anything that names its hole cards (every field of every
response checked against what the person may see); the finished hand brings the bot's cards and
every answer's strategy, which is the responder's for those cards. Hands in play are capped per
client address, so one client dealing hundreds of hands drops only its own oldest, and a full
table refuses a new hand (503) instead of dropping another client's."""

from __future__ import annotations

import http.client
import json
import random

import pytest

from holdem.cards import card_name
from holdem.state import State
from mccfr.serving.play import BOT_FIELDS, PlayError, Table
from mccfr.serving.query import QueryError
from mccfr.serving.service import ThreadedServer, create_app

#: every field of a view while the hand runs, and those the finished hand adds
RUNNING = {
    "hand",
    "hand_number",
    "position",
    "matchstate",
    "betting",
    "board",
    "hole",
    "spent",
    "stack",
    "to_act",
    "legal",
    "raise_range",
    "bot",
    "over",
    "mbb_per_chip",
    "elapsed_ms",
}
FINISHED = RUNNING | {"net", "showdown", "bot_hole", "review", "log_line"}


class Client:
    """An HTTP client from one loopback address (the server tells clients apart by address)."""

    def __init__(self, url: str, address: str):
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120, source_address=(address, 0))

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        return r.status, json.loads(r.read())

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def serve(responder):
    """A server on ``table`` (or the default one): ``(url, app)``."""
    servers = []

    def start(table: Table | None = None):
        app = create_app(responder)
        if table is not None:
            app.state.table = table
        srv = ThreadedServer(app)
        servers.append(srv)
        return srv.url

    yield start
    for srv in servers:
        srv.stop()


def _keys(x) -> set[str]:
    """Every key of every object inside ``x``."""
    if isinstance(x, dict):
        return set(x) | {k for v in x.values() for k in _keys(v)}
    if isinstance(x, list):
        return {k for v in x for k in _keys(v)}
    return set()


def _person(v: dict, rng: random.Random) -> str:
    """A person's action: mostly calls and checks, some folds and raises."""
    choices = list(v["legal"])
    if v["raise_range"]:
        lo, hi = v["raise_range"]
        choices += [f"r{lo}", f"r{hi}", f"r{rng.randint(lo, hi)}"]
    weights = [1 if a == "f" else 4 if a == "c" else 1 for a in choices]
    return rng.choices(choices, weights)[0]


def test_no_strategy_nor_bot_cards_before_the_hand_ends(serve, responder, hunl_bp):
    url = serve()
    game = responder.game
    g = game.gamedef
    c = Client(url, "127.0.0.1")
    rng = random.Random(7)
    decisions = showdowns = folds = preflop_checked = 0
    for n in range(150):
        status, v = c.post("/v1/play/deal", {"hand_number": n})
        running = []
        while True:
            assert status == 200, v
            if v["over"]:
                break
            running.append(v)
            status, v = c.post("/v1/play/act", {"hand": v["hand"], "action": _person(v, rng)})
        assert set(v) == FINISHED, set(v) ^ FINISHED
        human, bot = v["position"], 1 - v["position"]
        final = State.from_string(game, v["log_line"])
        held = tuple(final.hole_cards[bot])
        assert tuple(v["bot_hole"]) == held and len(held) == 2
        names = [card_name(x, g.num_suits) for x in held]
        for r in running:
            # only the fields the person may see, and of the bot's answers only the public ones
            assert set(r) == RUNNING, set(r) ^ RUNNING
            assert "strategy" not in _keys(r) and "review" not in _keys(r)
            for b in r["bot"]:
                assert set(b) == set(BOT_FIELDS) and b["seat"] == bot
            # the person's match state is the dealer's to the person: no card of the bot's
            seen = State.from_string(game, r["matchstate"])
            assert seen.hole_cards[bot] == () and tuple(seen.hole_cards[human]) == tuple(r["hole"])
            assert not set(held) & set(r["hole"] + r["board"])
            # (the match state is checked above: its betting can hold a card's name, as r1215c)
            text = json.dumps(
                {k: x for k, x in r.items() if k not in ("hand", "betting", "bot", "matchstate")}
            )
            assert not any(name in text for name in names), (names, r)
        # the finished hand: every answer of the bot with the strategy it drew its action from,
        # the responder's strategy for the bot's own cards
        answers = [b for r in running for b in r["bot"]] + v["bot"]
        assert [{k: a[k] for k in BOT_FIELDS} for a in v["review"]] == answers
        assert "strategy" not in _keys(v["bot"])
        for a in v["review"]:
            assert a["strategy"][a["action"]] > 0 and sum(a["strategy"].values()) == pytest.approx(
                1, abs=1e-4
            )
            assert a["facing_bet"] == ("f" in a["strategy"])
            if "/" not in a["betting"]:  # before the flop: the blueprint's answer for the cards held
                cards = "".join(names)
                ms = f"MATCHSTATE:{bot}:{n}:{a['betting']}:" + (f"{cards}|" if bot == 0 else f"|{cards}")
                assert a["strategy"] == pytest.approx(hunl_bp.strategy(ms), abs=1e-5)
                preflop_checked += 1
        decisions += len(v["review"])
        showdowns += v["showdown"]
        folds += not v["showdown"]
    c.close()
    # the check saw hands of every kind, and many bot decisions
    assert decisions > 150 and showdowns > 10 and folds > 10 and preflop_checked > 50


def test_a_client_dealing_600_hands_drops_only_its_own(serve):
    url = serve()
    a, b = Client(url, "127.0.0.1"), Client(url, "127.0.0.2")
    status, theirs = b.post("/v1/play/deal", {"hand_number": 1})  # B sits at position 1: B acts
    assert status == 200 and theirs["to_act"] == "you"
    mine = []
    for n in range(600):
        status, v = a.post("/v1/play/deal", {"hand_number": n})
        assert status == 200, v
        mine.append(v["hand"])
    # A's oldest hands went for its newer ones; its newest are still in play
    status, out = a.post("/v1/play/act", {"hand": mine[0], "action": "c"})
    assert status == 404 and out["kind"] == "unknown_hand" and "its cap of 32" in out["error"]
    status, out = a.post("/v1/play/act", {"hand": mine[-1], "action": "c"})  # (599: A acts first)
    assert status == 200, out
    # B's hand, dealt before all of them, plays to its end
    v = theirs
    while not v["over"]:
        status, v = b.post("/v1/play/act", {"hand": v["hand"], "action": "c"})
        assert status == 200, v
    a.close()
    b.close()


def test_a_full_table_refuses_a_new_hand_and_drops_none(serve, responder):
    table = Table(responder.game, seed=3, max_hands=3, max_hands_per_client=2)
    url = serve(table)
    a, b, c = (Client(url, f"127.0.0.{i}") for i in (1, 2, 3))
    a0 = a.post("/v1/play/deal", {"hand_number": 1})[1]["hand"]
    a1 = a.post("/v1/play/deal", {"hand_number": 3})[1]["hand"]
    b0 = b.post("/v1/play/deal", {"hand_number": 1})[1]["hand"]
    assert len(table) == 3 and table.hands_of("127.0.0.1") == 2
    status, out = c.post("/v1/play/deal", {"hand_number": 1})
    assert status == 503 and out["kind"] == "table_full" and "no other client's hand" in out["error"]
    assert len(table) == 3 and table.hands_of("127.0.0.3") == 0
    # A at its cap deals again: its own hand longest without an action goes (a0 acted: a1)
    assert a.post("/v1/play/act", {"hand": a0, "action": "c"})[0] == 200
    status, v = a.post("/v1/play/deal", {"hand_number": 5})
    assert status == 200 and len(table) == 3
    assert a.post("/v1/play/act", {"hand": a1, "action": "c"})[1]["kind"] == "unknown_hand"
    for token, who in ((a0, a), (v["hand"], a)):  # A's two hands are in play
        status, out = who.post("/v1/play/act", {"hand": token, "action": "c"})
        assert status == 200 or out["kind"] == "not_your_turn", out
    # and B's, which plays to its end: a hand that ends leaves the table, and C gets a seat
    out = {"over": False, "legal": ["c"]}
    while not out["over"]:
        status, out = b.post("/v1/play/act", {"hand": b0, "action": out["legal"][0]})
        assert status == 200, out
    assert c.post("/v1/play/deal", {"hand_number": 1})[0] == 200
    for x in (a, b, c):
        x.close()


def test_the_per_client_cap_drops_the_clients_oldest_hand(responder):
    t = Table(responder.game, seed=1, max_hands=10, max_hands_per_client=3)
    x = [t.deal(n, "x") for n in (1, 3, 5)]
    y = t.deal(1, "y")
    t.act(x[0], "c")  # x[0] acted last: x[1] is x's hand longest without an action
    t.deal(7, "x")
    with pytest.raises(PlayError) as info:
        t.view(x[1])
    assert info.value.kind == "unknown_hand" and info.value.status == 404
    assert t.hands_of("x") == 3 and t.hands_of("y") == 1 and len(t) == 4
    assert t.view(y)["to_act"] == "you" and t.view(x[0])["hand"] == x[0]
    with pytest.raises(ValueError, match="max_hands_per_client"):
        Table(responder.game, max_hands_per_client=0)


class Broken:
    """A responder that refuses every query, quoting the match state as QueryError's do."""

    def __init__(self, game):
        self.game = game

    def answer(self, matchstate, session, time_budget_ms, method):
        raise QueryError("bad_matchstate", f"matchstate {matchstate!r}: refused", 400)

    def close(self) -> None:
        pass


def test_a_failed_bot_answer_names_no_card_and_voids_the_hand(responder):
    app = create_app(Broken(responder.game))
    with ThreadedServer(app) as srv:
        c = Client(srv.url, "127.0.0.1")
        status, out = c.post("/v1/play/deal", {"hand_number": 0})  # position 0: the bot acts first
        assert status == 500 and out["kind"] == "bot_failed", out
        assert "MATCHSTATE" not in json.dumps(out) and "bad_matchstate" in out["error"]
        assert len(app.state.table) == 0  # the hand is void
        # a hand where the person acts first is dealt; the bot's failure comes at its turn
        status, v = c.post("/v1/play/deal", {"hand_number": 1})
        assert status == 200 and v["to_act"] == "you"
        status, out = c.post("/v1/play/act", {"hand": v["hand"], "action": "c"})
        assert status == 500 and out["kind"] == "bot_failed" and "MATCHSTATE" not in json.dumps(out)
        c.close()
