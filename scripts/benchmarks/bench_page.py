"""Timings of the web page of ``mccfr serve`` in headless Chromium (``/usr/bin/chromium``, driven by
Playwright): the explorer's first paint and first grid after navigation (the Performance API), and
the grid of a flop state from the blueprint and from a subgame solved there (request to rendered
grid, with the server's and the render's shares).

    python scripts/benchmarks/bench_page.py RUN_DIR [--reps 3] [--budget-ms 20000] [--method resolve] [--json]

The server solves from the flop (``SolvingResponder(from_round=1)``, warmed up first); a no-limit
hold'em run with two hole cards (e.g. ``mccfr train --game hunl20 --abstraction rank --bets small``).
"""

from __future__ import annotations

import argparse
import json
import statistics

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.blueprint import Blueprint
from mccfr.serving.service import ThreadedServer, create_app
from mccfr.serving.solving import SolvingResponder

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


def one(browser, url: str, method: str, budget_ms: int) -> dict:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=120_000)
    out = page.evaluate(
        """() => ({fcp_ms: performance.getEntriesByName('first-contentful-paint')[0].startTime,
                  first_grid_ms: performance.getEntriesByName('mccfr-first-grid')[0].startTime})"""
    )
    for act, betting, status in (("c", "c", "decision"), ("c", "cc/", "cards_due")):
        page.click(f"#actions button[data-action='{act}']")
        page.wait_for_selector(f"#grid[data-betting='{betting}'][data-status='{status}']", state="attached")
    for card in ("2c", "7h", "9s"):
        page.click(f"#card-buttons button[data-card='{card}']")
    page.wait_for_selector("#grid[data-betting='cc/'][data-status='decision']", state="attached")
    out["flop_blueprint"] = page.evaluate("window.mccfrTimings.last")
    page.fill("#budget", str(budget_ms))
    page.select_option("#method", method)
    page.wait_for_function(
        "window.mccfrTimings.last && window.mccfrTimings.last.source !== 'blueprint' "
        "|| document.querySelector('#source-detail').textContent.includes('fallback')",
        timeout=budget_ms + 120_000,
    )
    out["flop_solve"] = page.evaluate("window.mccfrTimings.last")
    out["flop_solve"]["label"] = page.inner_text("#source-detail")
    ctx.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget-ms", type=int, default=20000)
    ap.add_argument("--method", default="resolve")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright  # optional: the test extras

    bp = Blueprint.load(a.run_dir)
    r = SolvingResponder(bp, a.method, from_round=1, solver_threads=1, max_solve_ms=a.budget_ms / 2)
    r.warm_up()
    runs = []
    with ThreadedServer(create_app(r, describe={"run_dir": a.run_dir})) as srv, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for _ in range(a.reps):
            runs.append(one(browser, srv.url, a.method, a.budget_ms))
        browser.close()
    r.close()

    def med(f):
        return round(statistics.median(f(x) for x in runs), 1)

    summary = {
        "fcp_ms": med(lambda x: x["fcp_ms"]),
        "first_grid_ms": med(lambda x: x["first_grid_ms"]),
        "flop_blueprint_ms": med(lambda x: x["flop_blueprint"]["totalMs"]),
        "flop_blueprint_render_ms": med(lambda x: x["flop_blueprint"]["renderMs"]),
        "flop_solve_ms": med(lambda x: x["flop_solve"]["totalMs"]),
        "flop_solve_server_ms": med(lambda x: x["flop_solve"]["serverMs"]),
        "flop_solve_render_ms": med(lambda x: x["flop_solve"]["renderMs"]),
        "flop_solve_labels": [x["flop_solve"]["label"] for x in runs],
        "reps": a.reps,
    }
    if a.json:
        print(json.dumps({"summary": summary, "runs": runs}))
    else:
        for k, v in summary.items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
