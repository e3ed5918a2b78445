"""Start ``mccfr serve`` in a child process and wait until it answers: what benchmarks, soak runs
and drills need to measure a real server (a socket, its own process)::

    from mccfr.serving.launch import start_server

    proc, port = start_server("runs/bp", ["--solve", "reach-maxmargin"])
    ...  # requests to http://127.0.0.1:{port}
    proc.terminate()

The server listens on 127.0.0.1 at a free port (``--port 0``; the port is read from its start-up
line) and is ready when ``GET /healthz`` answers 200: the socket queues connections before the
event loop runs, so a caller that did not wait would time the start-up in its first requests.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["mccfr_command", "start_server", "wait_ready"]

_LISTENING = re.compile(r"on http://127\.0\.0\.1:(\d+)")


def mccfr_command() -> list[str]:
    """The ``mccfr`` command of this interpreter (``python -m mccfr``), for child processes."""
    return [sys.executable, "-m", "mccfr"]


def start_server(
    run_dir: str | Path,
    extra: Sequence[str] = (),
    root: str | Path | None = None,
    start_timeout: float = 600.0,
    ready_timeout: float = 120.0,
    log: Callable[[str], object] | None = None,
) -> tuple[subprocess.Popen, int]:
    """``mccfr serve run_dir`` with the flags ``extra`` on 127.0.0.1, any free port; returns the
    process and the port once ``GET /healthz`` answers. Each line of the server's log (its
    stderr) goes to ``log``, default this process's stderr, until the server exits.

    ``root``: run the code of another source tree (its folder first on ``PYTHONPATH``, e.g. a
    ``git worktree`` of an older commit for a before / after comparison); default the installed
    package. Raises RuntimeError (with the last lines of its log) when the server exits or does
    not print its address within ``start_timeout`` seconds.
    """
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
    cmd = mccfr_command() + ["serve", str(Path(run_dir).resolve()), "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(
        cmd + list(extra),
        env=env,
        cwd=str(root) if root is not None else None,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    # the start-up line is read on a thread, so that a server that hangs before printing it
    # cannot hang the caller past start_timeout
    found: list[int] = []
    lines: list[str] = []
    seen = threading.Event()

    def pump() -> None:
        for line in proc.stderr:
            if not found:
                lines.append(line)
                m = _LISTENING.search(line)
                if m:
                    found.append(int(m.group(1)))
                    seen.set()
            (log or sys.stderr.write)(line)
        seen.set()  # the server exited

    threading.Thread(target=pump, daemon=True).start()
    if not seen.wait(start_timeout) or not found:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"mccfr serve {run_dir} did not start:\n" + "".join(lines[-30:]))
    port = found[0]
    try:
        wait_ready(port, ready_timeout)
    except RuntimeError:
        proc.kill()
        proc.wait()
        raise
    return proc, port


def wait_ready(port: int, timeout: float = 120.0) -> None:
    """Return once ``GET /healthz`` on 127.0.0.1:``port`` answers 200; RuntimeError after
    ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/healthz")
            status = c.getresponse().status
            c.close()
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > end:
            raise RuntimeError(f"the server on port {port} did not answer /healthz in {timeout:.0f} s")
        time.sleep(0.1)
