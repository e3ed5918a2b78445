"""Solves in forked worker processes (serving/solver_processes.py): the same solution as in the
server's own process, the query's stop relayed, errors carried across, a dead process replaced,
and the responder answering turn and river queries through them."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from mccfr.serving.solver_processes import SolverProcessError, SolverProcesses, available
from mccfr.serving.solving import SolvingResponder
from subgame.interrupt import SolveInterrupted
from subgame.nested import solve_state
from subgame.tree import SubgameError

pytestmark = pytest.mark.skipif(not available(), reason="solver processes need fork (Linux)")

RIVER = "MATCHSTATE:0:5:cc/cc/cc/:AsKd|/2c7h9s/Td/3h"
TURN = "MATCHSTATE:0:5:cc/cc/:AsKd|/2c7h9s/Td"


@pytest.fixture(scope="module")
def procs(hunl_bp):
    sp = SolverProcesses(hunl_bp, 1, nice=0)
    yield sp
    sp.close()


def test_a_solve_in_a_process_is_the_solve_in_this_one(hunl_bp, procs):
    """Bit for bit: the strategy, the exploitability and the state's node; the solution's shared
    objects (the game definition behind its tree) are this process's, not copies."""
    for ms in (RIVER, TURN):
        want, n_want = solve_state(hunl_bp, ms, "reach-maxmargin", time_budget=None, iterations=6, threads=1)
        got, n_got = procs.solve(ms, "reach-maxmargin", time_budget=None, iterations=6)
        assert n_got == n_want
        assert np.array_equal(got.strategy, want.strategy)
        assert got.exploitability == want.exploitability
        assert got.iterations == want.iterations == 6
    river, _ = procs.solve(RIVER, "reach-maxmargin", time_budget=None, iterations=2)
    assert river.subgame.tree.game is hunl_bp.gamedef


def test_errors_cross_as_their_own_type(procs):
    with pytest.raises(SubgameError, match="unknown method"):
        procs.solve(RIVER, "no-such-method", time_budget=None, iterations=2)
    # a deadline already past: the construction stops at its first check, as in this process
    with pytest.raises(SolveInterrupted):
        procs.solve(TURN, "reach-maxmargin", time_budget=None, deadline=time.perf_counter() - 1.0)
    with pytest.raises(RuntimeError, match="in the solver process"):  # anything else: the traceback
        procs.solve("MATCHSTATE:0:0:cc/:|", "reach-maxmargin", time_budget=None, iterations=2)
    sol, _ = procs.solve(RIVER, "reach-maxmargin", time_budget=None, iterations=2)  # still serving
    assert sol.iterations == 2


def test_the_stop_event_reaches_the_process(procs):
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    t = time.perf_counter()
    sol, _ = procs.solve(RIVER, "reach-maxmargin", stop=stop, time_budget=None, iterations=10**7)
    assert time.perf_counter() - t < 5.0
    assert 0 < sol.iterations < 10**7


def test_a_dead_process_is_replaced(hunl_bp):
    sp = SolverProcesses(hunl_bp, 1, nice=0)
    try:
        sp.solve(RIVER, "reach-maxmargin", time_budget=None, iterations=2)
        pid = sp.pids[0]
        threading.Timer(0.3, os.kill, args=(pid, signal.SIGKILL)).start()
        with pytest.raises(SolverProcessError, match="died"):
            sp.solve(RIVER, "reach-maxmargin", time_budget=None, iterations=10**7)
        assert sp.restarts == 1 and sp.pids[0] != pid
        sol, _ = sp.solve(RIVER, "reach-maxmargin", time_budget=None, iterations=3)
        assert sol.iterations == 3
    finally:
        sp.close()


@pytest.mark.timing  # solves against a deadline: run alone, after the default run, with the kernel cache warm
def test_the_responder_solves_in_processes(hunl_bp):
    r = SolvingResponder(
        hunl_bp,
        "reach-maxmargin",
        from_round=2,
        solver_threads=2,
        min_iterations=3,
        solver_nice=0,
        solver_processes=True,
        max_solve_ms=3000,  # the plumbing is under test, not a 20-second turn solve
    )
    try:
        r.warm_up()
        for ms in (TURN, RIVER):
            a = r.answer(ms, session=ms, time_budget_ms=20_000)
            info = {k: v for k, v in a.items() if k != "strategy"}
            assert a["source"] == "subgame", info
            assert abs(sum(a["strategy"].values()) - 1) < 1e-5
        again = r.answer(RIVER, session=RIVER, time_budget_ms=20_000)  # the session's solution, reused
        assert again["reused"] is True
        m = r.metrics()["solver"]
        assert m["processes"] == {"restarts": 0}
        assert r.describe()["solver_processes"] is True
    finally:
        r.close()
    assert all(not w.proc.is_alive() for w in r._procs._workers)


def test_solver_processes_end_with_their_server(tmp_path):
    """A server killed outright (SIGKILL: no clean-up runs) leaves no solver process behind: each
    one's pipe read ends, because no other process holds the server's end of it."""
    import subprocess
    import sys

    from blueprint.trainer import make_trainer

    tr = make_trainer("leduc", seed=0)
    tr.run(10)
    tr.save(tmp_path / "run")  # the server loads it: no training, so no kernel to compile there
    code = (
        "import sys, time\n"
        "from blueprint.blueprint import Blueprint\n"
        "from mccfr.serving.solver_processes import SolverProcesses\n"
        f"sp = SolverProcesses(Blueprint.load({str(tmp_path / 'run')!r}), 2, nice=0)\n"
        "print(*sp.pids, flush=True)\n"
        "time.sleep(60)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in proc.stdout.readline().split()]
        assert len(pids) == 2
        proc.kill()
        proc.wait(10)
        deadline = time.time() + 10
        alive = pids
        while alive and time.time() < deadline:
            time.sleep(0.1)
            alive = [p for p in pids if _running(p)]
        assert not alive, f"solver processes {alive} outlived their server"
    finally:
        proc.kill()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie (exited, not yet reaped by init) is gone
    except FileNotFoundError:
        return False
