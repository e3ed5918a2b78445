"""``mccfr play``: the ACPC client against the in-repo ACPC dealer over local sockets (a full
short match with protocol checks, the dealer's legality and time limits, disconnects, silence)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from click.testing import CliRunner

from holdem.game import Game
from mccfr.cli import cli
from mccfr.evaluation.players import AlwaysCall, RandomPlayer
from mccfr.serving.acpc_client import AcpcClient, LineReader, TimeBank, parse_address, send_line
from mccfr.serving.acpc_dealer import AcpcDealer, DealerLimits
from mccfr.serving.responders import PlayerResponder

HANDS = 40


def _match(dealer: AcpcDealer, responders, seeds=(1, 2), client_kw=None):
    """Both seats' clients in threads; returns their reports (seat order) and the dealer's result."""
    reports: dict[int, object] = {}

    def seat(i: int) -> None:
        reports[i] = AcpcClient(responders[i], seed=seeds[i], **(client_kw or {}).get(i, {})).play(
            "127.0.0.1", dealer.ports[i]
        )

    threads = [threading.Thread(target=seat, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # seat 0 connects first, as the dealer accepts them
    for t in threads:
        t.join(120)
    return reports[0], reports[1], dealer.join(30)


def test_full_match_follows_the_protocol(responder, tmp_path):
    game = responder.game
    dealer = AcpcDealer(
        game, HANDS, seed=5, names=("bp", "random"), log_path=tmp_path / "match.log", transcript=True
    ).start()
    rep, opp, res = _match(dealer, [responder, PlayerResponder(RandomPlayer(), game)])
    assert res.ok, res.error
    assert res.hands == HANDS and res.invalid_actions == [0, 0] and res.ignored_responses == [0, 0]
    assert not res.warnings
    for r, seat in ((rep, 0), (opp, 1)):
        assert r.complete and r.hands == HANDS and r.fallbacks == 0, r.ended
        assert r.net == res.totals[seat]
    assert rep.net == -opp.net
    # every decision answered and labelled (a random opponent's raises are translated, or leave
    # the abstraction: the blueprint's fallback)
    assert set(rep.sources) <= {"blueprint", "translated", "fallback"} and rep.sources.get("blueprint")
    assert sum(rep.sources.values()) == rep.decisions > HANDS

    # the wire: versions first; every response repeats the last state sent to that seat and was
    # sent only when that seat was to act; positions rotate hand by hand
    tr = dealer.transcript
    assert [line for s, d, line in tr[:2]] == ["VERSION:2.0.0", "VERSION:2.0.0"]
    last_sent: dict[int, str] = {}
    for s, d, line in tr[2:]:
        if d == "to":
            last_sent[s] = line
            st = game.state(line)
            assert st.viewer == (s - st.hand_id) % 2
        else:
            head, _, action = line.rpartition(":")
            assert head == last_sent[s]
            st = game.state(head)
            assert st.current_player() == st.viewer
            st.apply(action)  # legal

    # the dealer's log: every hand's STATE line parses with its net checked against the rules
    lines = (tmp_path / "match.log").read_text().splitlines()
    hands = [line for line in lines if line.startswith("STATE:")]
    assert len(hands) == HANDS
    for line in hands:
        assert game.state(line).net is not None
    assert lines[-1].startswith("SCORE:") and lines[-1].endswith(":bp|random")


def test_client_log_and_timing(responder, tmp_path):
    game = responder.game
    dealer = AcpcDealer(game, 10, seed=9).start()
    log = tmp_path / "play.jsonl"
    rep, _, res = _match(
        dealer, [responder, PlayerResponder(AlwaysCall(), game)], client_kw={0: {"log": log}}
    )
    assert res.ok and rep.complete
    records = [json.loads(x) for x in log.read_text().splitlines()]
    assert records[0]["event"] == "start" and records[-1]["event"] == "end"
    hands = [r for r in records if r["event"] == "hand"]
    assert [h["hand"] for h in hands] == list(range(10))
    assert sum(h["net"] for h in hands) == rep.net == records[-1]["net"]
    for h in hands:
        assert h["position"] == h["hand"] % 2 and game.state(h["final"]).is_terminal()
        for d in h["decisions"]:
            assert d["action"] in d["strategy"] and d["source"] == "blueprint" and 1 <= d["budget_ms"] <= 2000
    assert rep.max_response_ms < 5_000 and res.max_response_ms[0] < 5_000


def test_histories_off_the_abstraction_get_the_blueprints_fallback(responder):
    # always-raise re-raises past the abstraction's two raises a round: the service answers from
    # the blueprint's fallback (labelled), so the client never has to check or call on its own
    from mccfr.evaluation.players import AlwaysRaise

    game = responder.game
    dealer = AcpcDealer(game, 6, seed=2).start()
    rep, _, res = _match(dealer, [responder, PlayerResponder(AlwaysRaise(), game, seed=3)])
    assert res.ok and rep.complete and rep.hands == 6
    assert rep.fallbacks == 0 and rep.sources.get("fallback", 0) > 0


def test_dealer_enforces_legality():
    game = Game.load("hunl20")

    def bad_client(port: int, action: str, out: list) -> None:
        s = socket.create_connection(("127.0.0.1", port))
        send_line(s, "VERSION:2.0.0")
        r = LineReader(s)
        while (line := r.readline(10)) is not None:
            st = game.state(line)
            if st.current_player() == st.viewer:
                send_line(s, f"{line}:{action}")
        out.append("closed")
        s.close()

    for max_invalid, action in ((0, "r5"), (0, "x"), (1000, "r5")):
        dealer = AcpcDealer(game, 4, seed=1, limits=DealerLimits(max_invalid_actions=max_invalid)).start()
        out: list = []
        threads = [
            threading.Thread(target=bad_client, args=(dealer.ports[0], action, out)),
            threading.Thread(target=bad_client, args=(dealer.ports[1], "c", out)),
        ]
        for t in threads:
            t.start()
            time.sleep(0.05)
        res = dealer.join(30)
        for t in threads:
            t.join(10)
        assert out == ["closed", "closed"]  # the dealer closed both connections
        if max_invalid == 0:
            assert not res.ok and f"invalid action {action!r}" in res.error and res.hands == 0
        else:
            assert res.ok and res.hands == 4 and res.invalid_actions[0] > 0
            assert "changed to call" in res.warnings[0]


def test_a_slow_player_loses_the_match_cleanly(responder):
    class Slow:
        methods = ()
        game = responder.game

        def answer(self, *a, **k):
            time.sleep(0.5)
            return {"strategy": {"c": 1.0}, "source": "blueprint", "method": None, "elapsed_ms": 500.0}

    dealer = AcpcDealer(responder.game, 5, seed=1, limits=DealerLimits(t_response_ms=200)).start()
    slow, other, res = _match(dealer, [Slow(), responder])
    assert not res.ok and "ran out of time" in res.error and "p1" in res.error
    for r in (slow, other):
        assert not r.complete and f"closed the connection during hand {res.hands}" in r.ended


def _fake_dealer(script):
    """A socket server that reads the version, then runs ``script(conn)``."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)

    def run():
        c, _ = ls.accept()
        LineReader(c).readline(5)
        script(c)
        c.close()
        ls.close()

    threading.Thread(target=run, daemon=True).start()
    return ls.getsockname()[1]


@pytest.mark.parametrize(
    "script, ended",
    [
        (lambda c: time.sleep(1.5), "no message from the dealer"),
        (lambda c: send_line(c, "MATCHSTATE:0:0:cc/:AhAd|/2c3d4h5s"), "protocol error: bad match state"),
        (
            lambda c: send_line(c, "MATCHSTATE:0:0:cc/:AhAd|/2c3d"),
            "protocol error: the dealer sent a state with cards missing",
        ),
        (
            lambda c: send_line(c, "MATCHSTATE:1:0::|AhAd") or time.sleep(0.3),
            "closed the connection during hand 0",
        ),
        (lambda c: c.sendall(b"MATCHSTATE:1:0::|Ah"), "protocol error: the stream ended inside a line"),
    ],
)
def test_silence_garbage_and_disconnects_end_the_match_cleanly(responder, script, ended):
    port = _fake_dealer(script)
    rep = AcpcClient(responder, idle_timeout_s=0.5).play("127.0.0.1", port)
    assert not rep.complete and ended in rep.ended


def test_time_bank():
    b = TimeBank(time_per_hand_ms=7000, response_limit_ms=600_000, budget_ms=2000)
    b.new_hand()
    assert b.next_budget() == 2000
    b.spend(6000)  # 1 s of the bank left: at most half of it
    assert b.next_budget() == 500
    b.spend(5000)
    assert b.next_budget() == 1  # overdrawn: the least budget, and the next hands refill the bank
    b.new_hand()  # 2 x 7 s allowed, 11 s used: half of the 3 s left
    assert b.next_budget() == 1500
    b.new_hand()
    assert b.next_budget() == 2000 and b.hand_used_ms == 0


@pytest.mark.parametrize("text", ["localhost", ":80", "host:http", "host:0", "host:70000"])
def test_bad_dealer_addresses(text):
    with pytest.raises(ValueError, match="dealer address"):
        parse_address(text)
    assert parse_address("[::1]:9000") == ("::1", 9000)


def test_play_command(tmp_path, responder):
    """The CLI end to end: train a tiny run, play it against the dealer, read the JSON report."""
    run = tmp_path / "run"
    r = CliRunner().invoke(
        cli,
        [
            "train",
            "--game",
            "hunl20",
            "--abstraction",
            "rank",
            "--iterations",
            "300",
            "--out",
            str(run),
            "--json",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stderr
    game = Game.load("hunl20")
    dealer = AcpcDealer(game, 8, seed=4).start()
    opp = threading.Thread(
        target=lambda: (
            time.sleep(0.3)
            or AcpcClient(PlayerResponder(AlwaysCall(), game)).play("127.0.0.1", dealer.ports[1])
        )
    )
    opp.start()
    log = tmp_path / "m.jsonl"
    r = CliRunner().invoke(
        cli,
        ["play", str(run), "--dealer", f"127.0.0.1:{dealer.ports[0]}", "--log", str(log), "--json"],
        catch_exceptions=False,
    )
    opp.join(30)
    res = dealer.join(30)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["hands"] == 8 and out["complete"] and out["net"] == res.totals[0] and out["unit"] == "mbb/hand"
    assert "played 8 hands" in r.stdout and log.exists()
    # the same through a running query service (--server) instead of a run directory
    from mccfr.serving.service import ThreadedServer, create_app

    with ThreadedServer(create_app(responder)) as srv:
        dealer = AcpcDealer(game, 4, seed=4).start()
        opp = threading.Thread(
            target=lambda: (
                time.sleep(0.3)
                or AcpcClient(PlayerResponder(AlwaysCall(), game)).play("127.0.0.1", dealer.ports[1])
            )
        )
        opp.start()
        r = CliRunner().invoke(
            cli, ["play", "--server", srv.url, "--dealer", f"127.0.0.1:{dealer.ports[0]}", "--json"]
        )
        opp.join(30)
        res = dealer.join(30)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["hands"] == 4 and out["complete"] and out["net"] == res.totals[0] and out["server"] == srv.url
    r = CliRunner().invoke(cli, ["play", str(run), "--server", srv.url, "--dealer", "127.0.0.1:1"])
    assert r.exit_code == 2 and "one of them" in r.stderr
    # bad input: an address without a port, a dealer nobody listens on
    r = CliRunner().invoke(cli, ["play", str(run), "--dealer", "localhost"])
    assert r.exit_code == 2 and "expected HOST:PORT" in r.stderr
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    r = CliRunner().invoke(cli, ["play", str(run), "--dealer", f"127.0.0.1:{port}"])
    assert r.exit_code == 2 and "cannot connect to the dealer" in r.stderr


def _three_seat_match(tmp_path, bot, hands: int = 30):
    """``bot`` against two always-call clients at the in-repo dealer (checked as below)."""
    game = bot.game
    dealer = AcpcDealer(
        game, hands, seed=4, names=("bp", "c1", "c2"), log_path=tmp_path / "m.log", transcript=True
    )
    dealer.start()
    responders = [bot, PlayerResponder(AlwaysCall(), game), PlayerResponder(AlwaysCall(), game)]
    reports: dict[int, object] = {}

    def seat(i: int) -> None:
        reports[i] = AcpcClient(responders[i], seed=i).play("127.0.0.1", dealer.ports[i])

    threads = [threading.Thread(target=seat, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(120)
    res = dealer.join(30)
    assert res.ok, res.error
    assert res.hands == hands and res.invalid_actions == [0, 0, 0] and not res.warnings
    for s in range(3):
        assert reports[s].complete and reports[s].hands == hands and reports[s].net == res.totals[s]
    assert abs(sum(res.totals)) < 1e-9 and reports[0].fallbacks == 0
    for s, d, line in dealer.transcript[3:]:
        if d == "to":
            st = game.state(line)
            assert st.viewer == (s - st.hand_id) % 3
    lines = (tmp_path / "m.log").read_text().splitlines()
    assert sum(line.startswith("STATE:") for line in lines) == hands
    assert lines[-1].startswith("SCORE:") and lines[-1].endswith(":bp|c1|c2")


@pytest.fixture(scope="module")
def nl3_run(tmp_path_factory):
    from blueprint.trainer import make_trainer

    tr = make_trainer("holdem.nolimit.3p", cards="rank", seed=0)
    tr.run(3_000)
    run = tmp_path_factory.mktemp("nl3") / "run"
    tr.save(run)
    return run


def test_three_seat_match_at_the_dealer(tmp_path, nl3_run):
    # a 3-seat blueprint (mccfr play's responder) against two always-call clients at the in-repo
    # dealer: every hand played, positions rotating as the reference dealer's (s - hand) mod 3,
    # the seats' nets summing to 0 with the dealer's totals, the log naming three players
    from mccfr.serving.solving import make_responder

    _three_seat_match(tmp_path, make_responder(nl3_run))


def test_three_seat_match_with_search_at_the_dealer(tmp_path, nl3_run):
    # the same with Pluribus-style search from the flop (mccfr play --method search's responder,
    # capped at 200 iterations a decision for the test's time): searched answers, no fallback
    from blueprint.blueprint import Blueprint
    from mccfr.serving.responders import SearchResponder
    from subgame.multiway import SearchConfig

    bot = SearchResponder(Blueprint.load(nl3_run), config=SearchConfig(iterations=200))
    _three_seat_match(tmp_path, bot, hands=12)
    assert bot.search.stats[0] > 0
