"""The web page of ``mccfr serve`` in a real browser: headless Chromium from the system
(``/usr/bin/chromium``; ``.ci/run`` installs it) driven by Playwright's Python API, against servers
on runs trained here. The explorer walks a line and its grid is compared with
``Blueprint.strategy``; a river state is solved and its grid compared with the solution the
server keeps; a node is locked there for the whole range, and for hand classes picked on the
grid (per hand: the other hands keep their strategy); a hand is played to its end and the
downloaded history replayed; the runs tab draws the curve of the run's metrics. Screenshots go to each test's ``tmp_path``.

Skipped only where Chromium is absent and the environment variable ``CI`` is unset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "page-test-token"

if not os.environ.get("CI"):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (CI installs it)", allow_module_level=True)
    pytest.importorskip("playwright.sync_api")

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from blueprint.blueprint import Blueprint  # noqa: E402
from blueprint.rundir import read_metrics  # noqa: E402
from holdem.state import State  # noqa: E402
from mccfr.serving.responders import BlueprintResponder  # noqa: E402
from mccfr.serving.service import ThreadedServer, create_app  # noqa: E402
from mccfr.serving.solving import SolvingResponder  # noqa: E402
from subgame.nested import hand_strategy  # noqa: E402


def _train(out: Path, *args: str) -> Path:
    from click.testing import CliRunner

    from mccfr.cli import cli

    r = CliRunner().invoke(cli, ["train", *args, "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def hunl_run(tmp_path_factory) -> Path:
    # hunl20 (20 big blinds) with the table-free `rank` buckets: real hold'em, a small tree
    out = tmp_path_factory.mktemp("runs") / "hunl20"
    # one thread: the same blueprint every run (on several threads the reach of a hand at a state
    # the tests walk to would change from run to run)
    args = ("--game", "hunl20", "--abstraction", "rank", "--bets", "small", "--iterations", "2000")
    return _train(out, *args, "--threads", "1")


@pytest.fixture(scope="module")
def bp(hunl_run) -> Blueprint:
    return Blueprint.load(hunl_run)


@pytest.fixture(scope="module")
def solver(bp):
    # solves the river (the default), the rest from the blueprint; short solves for a shared machine
    r = SolvingResponder(bp, solver_threads=1, max_solve_ms=1000)
    r.warm_up()
    yield r
    r.close()


@pytest.fixture(scope="module")
def server(solver, hunl_run):
    app = create_app(solver, api_key=TOKEN, describe={"run_dir": str(hunl_run)})
    with ThreadedServer(app) as srv:
        yield srv


@pytest.fixture(scope="module")
def leduc_server(tmp_path_factory):
    run = _train(
        tmp_path_factory.mktemp("runs") / "leduc",
        *("--game", "leduc", "--time", "3", "--eval-every", "0.2", "--report-every", "0.2"),
    )
    r = BlueprintResponder(Blueprint.load(run))
    with ThreadedServer(create_app(r, api_key=TOKEN, describe={"run_dir": str(run)})) as srv:
        srv.run_dir = run
        yield srv


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh tab (its own sessionStorage) holding the token; fails the test on any script error."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    ctx.add_init_script(f"sessionStorage.setItem('mccfr.token', {json.dumps(TOKEN)})")
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: m.type == "error" and errors.append(m.text))
    yield pg
    ctx.close()
    assert not errors, errors


def _open(page: Page, url: str) -> None:
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)


def _wait_state(page: Page, betting: str, status: str = "decision") -> None:
    page.wait_for_selector(
        f"#grid[data-betting='{betting}'][data-status='{status}']", state="attached", timeout=120_000
    )


def _click_action(page: Page, action: str) -> None:
    page.click(f"#actions button[data-action='{action}']")


def _deal(page: Page, cards: str) -> None:
    for i in range(0, len(cards), 2):
        page.click(f"#card-buttons button[data-card='{cards[i : i + 2]}']")


def _tooltip(page: Page, cls: str) -> dict[str, dict[str, float]]:
    """Hover the grid's cell ``cls``: its combos' strategies as the tooltip shows them."""
    page.hover(f"#grid .cell[data-class='{cls}']")
    page.wait_for_selector("#tooltip:not([hidden])")
    rows = page.eval_on_selector_all(
        "#tooltip tr[data-combo]",
        """rows => rows.map(r => [r.dataset.combo,
            Object.fromEntries([...r.querySelectorAll('td[data-action]')].map(
                td => [td.dataset.action, parseFloat(td.textContent)]))])""",
    )
    return dict(rows)


def _ms(seat: int, betting: str, hand: str, board: str = "") -> str:
    cards = f"{hand}|" if seat == 0 else f"|{hand}"
    if board:
        cards += "/" + "/".join([board[:6]] + [board[i : i + 2] for i in range(6, len(board), 2)])
    return f"MATCHSTATE:{seat}:0:{betting}:{cards}"


def test_the_page_asks_for_the_token(browser, server, tmp_path):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server.url + "/")
    expect(page.locator("#message")).to_contain_text("token", timeout=30_000)
    page.fill("#token", TOKEN)
    page.press("#token", "Enter")
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    assert page.locator("#grid .cell").count() == 169
    assert page.evaluate("sessionStorage.getItem('mccfr.token')") == TOKEN
    page.screenshot(path=str(tmp_path / "token.png"))
    ctx.close()


def test_the_explorer_walks_a_line_and_shows_the_blueprint(page, server, bp, tmp_path):
    _open(page, server.url)
    _wait_state(page, "")
    paint = page.evaluate(
        """() => ({fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
                  grid: performance.getEntriesByName('mccfr-first-grid')[0].startTime})"""
    )
    assert page.locator("#grid .cell").count() == 169
    assert page.get_attribute("#grid", "data-seat") == "1"
    expect(page.locator("#source")).to_have_text("blueprint")
    page.screenshot(path=str(tmp_path / "explorer-preflop.png"))

    _click_action(page, "c")  # the small blind calls
    _wait_state(page, "c")
    _click_action(page, "c")  # the big blind checks: the flop is due
    _wait_state(page, "cc/", "cards_due")
    expect(page.locator("#state-info")).to_contain_text("deal 3 board cards")
    _deal(page, "2c7h9s")
    _wait_state(page, "cc/")
    flop = page.evaluate("window.mccfrTimings.last")
    assert page.get_attribute("#grid", "data-board") == "2c7h9s"
    assert [b.inner_text() for b in page.locator("#line button").all()] == ["start", "c", "c", "2c7h9s"]
    # the grid's combos are the blueprint's answers, hand by hand
    for cls, combos in (("AKs", 4), ("QQ", 6), ("72o", 7)):
        shown = _tooltip(page, cls)
        assert len(shown) == combos, (cls, shown)  # 72o: 7h and 2c are on the board
        for combo, strategy in shown.items():
            want = bp.strategy(_ms(0, "cc/", combo, "2c7h9s"))
            assert strategy == pytest.approx(want, abs=6e-4), combo
    page.hover("#grid .cell[data-class='AKs']")
    page.screenshot(path=str(tmp_path / "explorer-flop.png"))

    # an off-tree raise typed in: the answer is labelled translated
    page.fill("#raise-to", "700")
    page.click("#raise-go")
    _wait_state(page, "cc/r700")
    expect(page.locator("#source")).to_have_text("translated")
    for combo, strategy in _tooltip(page, "AKo").items():
        assert strategy == pytest.approx(bp.strategy(_ms(1, "cc/r700", combo, "2c7h9s")), abs=6e-4)
    # back to the start through the line
    page.click("#line button >> text=start")
    _wait_state(page, "")
    assert page.get_attribute("#grid", "data-seat") == "1"
    print(
        f"\nfirst contentful paint {paint['fcp']:.0f} ms, first grid {paint['grid']:.0f} ms after navigation; "
        f"flop grid with the blueprint: {flop['totalMs']:.0f} ms (request {flop['fetchMs']:.0f}, "
        f"server {flop['serverMs']:.1f}, render {flop['renderMs']:.1f})"
    )


def _walk_to_the_river(page: Page) -> None:
    """From the start, check / call down to the river of board 2c7h9sTd3c."""
    _wait_state(page, "")
    for betting, due, cards in (
        ("c", "cc/", "2c7h9s"),
        ("cc/c", "cc/cc/", "Td"),
        ("cc/cc/c", "cc/cc/cc/", "3c"),
    ):
        _click_action(page, "c")
        _wait_state(page, betting)
        _click_action(page, "c")
        _wait_state(page, due, "cards_due")
        _deal(page, cards)
        _wait_state(page, due)


def test_the_explorer_solves_the_river(page, server, solver, tmp_path):
    _open(page, server.url)
    _walk_to_the_river(page)
    page.fill("#budget", "20000")
    page.select_option("#method", "resolve")
    expect(page.locator("#source")).to_have_text("subgame", timeout=120_000)
    river = page.evaluate("window.mccfrTimings.last")
    expect(page.locator("#source-detail")).to_contain_text("resolve")
    session = page.get_attribute("#grid", "data-session")
    query = solver.game.state(_ms(0, "cc/cc/cc/", "2d2h", "2c7h9sTd3c"))  # the page's query: first free cards
    sol, node = solver.sessions.lookup(session, query, (0, (1, 2), "resolve"))
    for cls in ("AKs", "T9o", "33"):
        for combo, strategy in _tooltip(page, cls).items():
            held = solver.game.state(_ms(0, "cc/cc/cc/", combo, "2c7h9sTd3c"))
            assert strategy == pytest.approx(hand_strategy(sol, node, held), abs=6e-4), combo
    page.hover("#grid .cell[data-class='T9o']")
    page.screenshot(path=str(tmp_path / "explorer-river-subgame.png"))
    print(f"\nriver grid with a resolve solve: {river['totalMs']:.0f} ms (server {river['serverMs']:.0f})")


RIVER_BOARD = "2c7h9sTd3c"


def test_the_explorer_locks_a_node_and_solves_again(page, server, solver, bp, tmp_path):
    import re

    from subgame.cache import node_in
    from subgame.nested import solve_state

    _open(page, server.url)
    _walk_to_the_river(page)
    page.fill("#budget", "20000")
    page.press("#budget", "Tab")  # (its change event now, not when the lock button is clicked)
    page.select_option("#method", "resolve")
    expect(page.locator("#source")).to_have_text("subgame", timeout=120_000)
    free = _tooltip(page, "AKs")
    page.click("#lock-open")
    inputs = page.locator("#lock-form input[data-action]")
    actions = [inputs.nth(i).get_attribute("data-action") for i in range(inputs.count())]
    bet = next(a for a in actions if a.startswith("r"))
    for a in actions:  # typed in percent: check 25, bet 75, the rest never
        page.fill(f"#lock-form input[data-action='{a}']", {"c": "25", bet: "75"}.get(a, "0"))
    page.screenshot(path=str(tmp_path / "explorer-lock-form.png"))
    page.click("#lock-go")
    page.wait_for_selector(
        "#grid[data-locked='1'][data-betting='cc/cc/cc/']", state="attached", timeout=120_000
    )
    expect(page.locator("#source")).to_have_text("subgame (locked)")
    assert page.get_attribute("#locks", "data-count") == "1"
    expect(page.locator("#locks")).to_contain_text(f"c 25%, {bet} 75%")
    locked = _tooltip(page, "AKs")
    for combo, strategy in locked.items():  # the locked node plays the lock
        want = {a: {"c": 0.25, bet: 0.75}.get(a, 0.0) for a in strategy}
        assert strategy == pytest.approx(want, abs=6e-4), combo
    assert locked != free
    page.screenshot(path=str(tmp_path / "explorer-locked.png"))
    # the other seat facing the locked bet: its strategy from the locked solve of the river
    _click_action(page, bet)
    page.wait_for_selector(
        f"#grid[data-locked='1'][data-betting='cc/cc/cc/{bet}']", state="attached", timeout=120_000
    )
    its = int(re.search(r"(\d+) iterations", page.inner_text("#source-detail")).group(1))
    locks = {"": {"c": 0.25, bet: 0.75}}
    sol, _ = solve_state(
        bp,
        solver.game.state(_ms(0, "cc/cc/cc/", "2d2h", RIVER_BOARD)),
        "resolve",
        iterations=its,
        locks=locks,
    )
    _, node = node_in(sol, solver.game.state(_ms(1, f"cc/cc/cc/{bet}", "2d2h", RIVER_BOARD)))
    for cls in ("AKo", "99", "T9s"):
        for combo, strategy in _tooltip(page, cls).items():
            held = solver.game.state(_ms(1, f"cc/cc/cc/{bet}", combo, RIVER_BOARD))
            assert strategy == pytest.approx(hand_strategy(sol, node, held), abs=3e-3), combo
    page.screenshot(path=str(tmp_path / "explorer-locked-response.png"))
    # clear: the unlocked solve again
    page.click("#lock-clear")
    page.wait_for_selector(
        f"#grid[data-locked=''][data-betting='cc/cc/cc/{bet}'][data-source='subgame']",
        state="attached",
        timeout=120_000,
    )
    assert page.get_attribute("#locks", "data-count") == "0"


def _class_of(name: str) -> str:
    """The grid's class of a two-card hand name (``"AhKd"``: higher card first), as grid.js."""
    if name[0] == name[2]:
        return name[0] + name[2]
    return name[0] + name[2] + ("s" if name[1] == name[3] else "o")


def test_the_explorer_locks_picked_classes_per_hand(page, server, bp, tmp_path):
    from mccfr.serving.ranges import hand_names

    names = hand_names(bp.gamedef)
    board = {RIVER_BOARD[i : i + 2] for i in range(0, len(RIVER_BOARD), 2)}
    live = [h for h, n in enumerate(names) if not {n[:2], n[2:]} & board]

    def is_range(r) -> bool:
        return r.url.endswith("/v1/range") and r.request.method == "POST"

    _open(page, server.url)
    _walk_to_the_river(page)
    page.fill("#budget", "20000")
    page.press("#budget", "Tab")
    with page.expect_response(is_range, timeout=120_000) as got:
        page.select_option("#method", "resolve")
    before = got.value.json()
    expect(page.locator("#source")).to_have_text("subgame", timeout=120_000)
    assert before["source"] == "subgame" and before["betting"] == "cc/cc/cc/"
    actions = before["actions"]
    assert "c" in actions and len(before["strategy"][0]) == len(names)
    check = actions.index("c")
    # two classes with weight in the range that do not already check: they are locked to check
    weights = dict(
        page.eval_on_selector_all(
            "#grid .cell:not(.blocked)", "cs => cs.map(c => [c.dataset.class, parseFloat(c.dataset.weight)])"
        )
    )
    checks: dict[str, list[float]] = {}
    for h in live:
        checks.setdefault(_class_of(names[h]), []).append(before["strategy"][check][h])
    order = sorted(weights, key=lambda k: -weights[k])
    picks = [k for k in order if weights[k] > 0 and min(checks[k]) < 0.9][:2]
    picks = (picks + [k for k in order if k not in picks])[:2]
    assert all(weights[k] > 0 for k in picks), (picks, weights)
    page.click("#lock-open")
    other = next(k for k in order if k not in picks)
    page.click(f"#grid .cell[data-class='{other}']")  # picked, then dropped again
    page.click(f"#grid .cell[data-class='{other}']")
    for k in picks:
        page.click(f"#grid .cell[data-class='{k}']")
    assert sorted(
        page.eval_on_selector_all("#grid .cell.picked", "cs => cs.map(c => c.dataset.class)")
    ) == sorted(picks)
    shown = page.get_attribute("#lock-classes", "data-classes").split(",")
    assert sorted(shown) == sorted(picks)
    for a in actions:  # the picked classes: check always
        page.fill(f"#lock-form input[data-action='{a}']", "100" if a == "c" else "0")
    page.screenshot(path=str(tmp_path / "explorer-lock-picked.png"))
    with page.expect_response(is_range, timeout=120_000) as got:
        page.click("#lock-go")
    sent = got.value.request.post_data_json
    after = got.value.json()
    size = len(got.value.request.post_data_buffer)
    page.wait_for_selector(
        "#grid[data-locked='1'][data-betting='cc/cc/cc/']", state="attached", timeout=120_000
    )
    expect(page.locator("#source")).to_have_text("subgame (locked)")
    assert page.locator("#grid .cell.picked").count() == 0  # (the form closed)
    # the request: one lock at the root, per hand over the game's hands, each unblocked hand's sum 1
    assert sent["lock_root"] == "cc/cc/cc/" and list(sent["locks"]) == [""]
    lock = sent["locks"][""]
    assert all(isinstance(v, list) and len(v) == len(names) for v in lock.values())
    assert size < 64 * 1024
    picked = {h for h in live if _class_of(names[h]) in picks}
    for h in live:
        assert sum(v[h] for v in lock.values()) == pytest.approx(1.0, abs=1e-9), names[h]
        if h in picked:
            assert lock["c"][h] == 1.0, names[h]
    # the picked classes' combos check; every other hand plays as before the lock
    assert after["locked"] and after["actions"] == actions
    moved = 0.0
    for h in live:
        now = [after["strategy"][i][h] for i in range(len(actions))]
        if h in picked:
            want = [1.0 if a == "c" else 0.0 for a in actions]
            assert now == pytest.approx(want, abs=1e-4), names[h]
        else:
            was = [before["strategy"][i][h] for i in range(len(actions))]
            moved = max(moved, max(abs(x - y) for x, y in zip(now, was)))
    assert moved <= 1e-3
    for k in picks:  # and the grid shows it
        for combo, strategy in _tooltip(page, k).items():
            assert strategy == pytest.approx({a: float(a == "c") for a in strategy}, abs=6e-4), combo
    kept = next(k for k in order if k not in picks and k != other)
    for combo, strategy in _tooltip(page, kept).items():
        h = names.index(combo)
        was = {a: before["strategy"][i][h] for i, a in enumerate(actions)}
        assert strategy == pytest.approx(was, abs=1.5e-3), combo  # (the tooltip's 3 decimals)
    assert page.get_attribute("#locks", "data-count") == "1"
    item = page.locator("#locks .lock-item")
    assert item.get_attribute("data-per-hand") == "1"
    grid_order = [
        k
        for k in page.eval_on_selector_all("#grid .cell", "cs => cs.map(c => c.dataset.class)")
        if k in picks
    ]
    expect(item).to_have_text(f"cc/cc/cc/: {','.join(grid_order)} → c 100%")
    page.hover(f"#grid .cell[data-class='{picks[0]}']")
    page.screenshot(path=str(tmp_path / "explorer-locked-picked.png"))
    print(
        f"\nper-hand lock of {','.join(picks)}: request {size:,} bytes; other hands moved by at most {moved:.1e}"
    )


def test_the_explorer_opens_a_saved_solve(page, solver, bp, hunl_run, tmp_path):
    from mccfr.serving.explorer import open_saved
    from subgame.nested import solve_state
    from subgame.saved import save_solve

    sol, node = solve_state(
        bp,
        solver.game.state(_ms(0, "cc/cc/cc/", "2d2h", RIVER_BOARD)),
        "resolve",
        iterations=50,
        keep_state=True,
    )
    (tmp_path / "saved").mkdir()
    save_solve(tmp_path / "saved" / "river.solve", sol)
    saved = open_saved([tmp_path / "saved"], bp.gamedef)
    # (a responder of its own: closing this server closes its responder; browsing needs no solver)
    app = create_app(BlueprintResponder(bp), api_key=TOKEN, describe={"run_dir": str(hunl_run)}, saved=saved)
    with ThreadedServer(app) as srv:
        _open(page, srv.url)
        _wait_state(page, "")
        assert page.is_visible("#saved-box")
        page.select_option("#saved", "river")
        page.wait_for_selector(
            "#grid[data-betting='cc/cc/cc/'][data-source='saved']", state="attached", timeout=60_000
        )
        assert page.get_attribute("#grid", "data-board") == RIVER_BOARD
        expect(page.locator("#source")).to_have_text("saved")
        for combo, strategy in _tooltip(page, "KQs").items():
            held = solver.game.state(_ms(0, "cc/cc/cc/", combo, RIVER_BOARD))
            assert strategy == pytest.approx(hand_strategy(sol, node, held), abs=6e-4), combo
        page.screenshot(path=str(tmp_path / "explorer-saved.png"))
        # walk the saved tree: the other seat after a check
        _click_action(page, "c")
        page.wait_for_selector(
            "#grid[data-betting='cc/cc/cc/c'][data-source='saved']", state="attached", timeout=60_000
        )
        from subgame.cache import node_in

        _, child = node_in(sol, solver.game.state(_ms(1, "cc/cc/cc/c", "2d2h", RIVER_BOARD)))
        for combo, strategy in _tooltip(page, "JJ").items():
            held = solver.game.state(_ms(1, "cc/cc/cc/c", combo, RIVER_BOARD))
            assert strategy == pytest.approx(hand_strategy(sol, child, held), abs=6e-4), combo
        # back to the live strategy
        page.select_option("#saved", "")
        _wait_state(page, "")
        assert page.get_attribute("#grid", "data-source") == "blueprint"


def test_a_hand_against_the_bot_to_its_end(page, server, bp, tmp_path):
    _open(page, server.url)
    page.click("#tabs button[data-tab='play']")
    for hand in (1, 2):
        page.click("#deal")
        while True:
            page.wait_for_selector("#play-actions button, #play-log li.result", timeout=60_000)
            if page.locator("#play-log li.result").count():
                break
            page.locator("#play-actions button[data-action='c']").first.click()
        expect(page.locator("#play-result")).to_have_attribute("data-hands", str(hand))
    bot = page.locator("#play-log li.bot")
    page.screenshot(path=str(tmp_path / "play.png"))
    with page.expect_download() as info:
        page.click("#download")
    text = Path(info.value.path()).read_text()
    lines = [x for x in text.splitlines() if x.startswith("STATE:")]
    assert len(lines) == 2 and text.splitlines()[-1].startswith("SCORE:")
    nets = []
    for h, line in enumerate(lines):
        st = State.from_string(bp.game, line)
        assert st.is_terminal() and st.hand_id == h
        you = st.names.index("you")
        assert st.net[you] == st.payoffs()[you]
        nets.append(st.net[you])
    mean = float(page.get_attribute("#play-result", "data-mean"))
    assert mean == pytest.approx(sum(nets) / 2 * 10, abs=1e-3)  # mbb/hand: 100 chips a big blind
    assert "95%" in page.inner_text("#play-result")
    # the last hand's bot answers (if it acted) carry their source and time, and after the hand
    # the review shows the strategy each was drawn from, with the bot's cards face up
    review = page.locator("#play-log li.review")
    assert review.count() == bot.count()
    for i in range(bot.count()):
        assert bot.nth(i).get_attribute("data-source") in ("blueprint", "translated", "subgame", "fallback")
        assert float(bot.nth(i).get_attribute("data-ms")) >= 0
        strategy = json.loads(review.nth(i).get_attribute("data-strategy"))
        assert strategy[review.nth(i).get_attribute("data-action")] > 0
    assert page.locator("#bot-cards .card:not(.back)").count() == 2


def test_the_runs_tab_draws_the_training_curve(page, leduc_server, server, hunl_run, tmp_path):
    rows = [r for r in read_metrics(leduc_server.run_dir) if r["exploitability"] is not None]
    assert len(rows) >= 2  # (a curve)
    _open(page, leduc_server.url)
    assert page.locator("#grid .cell").count() == 3  # Leduc: one card, three ranks in a row
    page.screenshot(path=str(tmp_path / "explorer-leduc.png"))
    page.click("#tabs button[data-tab='runs']")
    page.wait_for_selector("#curve svg path.curve", state="attached")
    assert page.get_attribute("#curve", "data-kind") == "exploitability"
    assert page.get_attribute("#curve", "data-points") == str(len(rows))
    assert page.locator("#curve circle.point").count() == len(rows)
    page.screenshot(path=str(tmp_path / "runs-leduc.png"))
    page.select_option("#runs-x", "iteration")
    expect(page.locator("#curve text.axis").first).to_have_text("iterations")
    # a hold'em run has no exploitability: its progress is drawn instead
    _open(page, server.url)
    page.click("#tabs button[data-tab='runs']")
    page.wait_for_selector("#curve svg path.curve", state="attached")
    assert page.get_attribute("#curve", "data-kind") == "progress"
    assert page.get_attribute("#curve", "data-points") == str(len(read_metrics(hunl_run)))
    page.screenshot(path=str(tmp_path / "runs-hunl.png"))
