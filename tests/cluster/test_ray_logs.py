"""Ray's own messages stay out of the terminal while a job runs (:mod:`cluster.ray_logs`): its
Python logger's records and the lines its C++ core writes to descriptor 2 go to the run's
``ray.log``; what Python writes to ``sys.stderr`` still reaches the terminal, and closing puts
everything back. Checked in a fresh interpreter whose standard error is a pipe, as a terminal
would be (descriptor 2 and ``sys.stderr`` the same)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import logging, os, sys
from cluster.ray_logs import RayLogFile

before = list(logging.getLogger("ray").handlers)
log = RayLogFile(sys.argv[1])
logging.getLogger("ray").warning("Token authentication is enabled for this Ray cluster")
os.write(2, b"[E] core_worker.cc:2465: Actor with class name: 'LeaderCore' has constructor arguments\n")
print("progress line of ours", file=sys.stderr, flush=True)
log.write("Ray's own logs of this job: /tmp/ray/session/logs")
log.close()
os.write(2, b"descriptor 2 is back\n")
print("sys.stderr is back", file=sys.stderr, flush=True)
assert logging.getLogger("ray").handlers == before
"""


def test_ray_messages_go_to_the_file_and_ours_to_the_terminal(tmp_path: Path) -> None:
    log = tmp_path / "ray.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == ["progress line of ours", "descriptor 2 is back", "sys.stderr is back"]
    text = log.read_text()
    assert "WARNING ray: Token authentication is enabled" in text
    assert "core_worker.cc:2465" in text and "Ray's own logs of this job" in text
