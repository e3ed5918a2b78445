"""Fault drills of the Ray job through the command line, on a simulated multi-node cluster.

    python scripts/tools/cluster_drills.py [--nodes 3] [--workers 2] [--iterations 20000]
                                     [--batch 100] [--drills shard,worker,both-shards,no-spare]

Starts ``ray.cluster_utils.Cluster`` (a head without CPUs plus ``--nodes`` one-CPU nodes; fast
health checks so a removed node is declared dead within about two seconds), then per drill runs
``mccfr train --game leduc --workers N --shards S --address ADDR --json`` as a subprocess, waits
until its first rounds are done (a checkpoint exists), removes the node that holds what the drill
names (found in the GCS actor table), and waits for the command to end (a deadline:
a hang is a failure). One JSON line per drill: the exit status, the job's own counters
(restores, node failures, lost deltas), the exploitability reached and an uninterrupted run's.

Drills (shards per drill in ``DRILL_SHARDS``): ``worker``: a node with workers and no shard (1
shard); ``shard``: a node holding one shard and a worker (2 shards); ``both-shards``: the node
holding two shards (3 shards on 2 nodes); ``no-spare``: as ``worker`` but with as many nodes as
bundles (no CPU to spare: the dead node's group runs on the other node).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from mccfr_util.numba_cache import configure

REPO = Path(__file__).resolve().parents[2]
FAST_HEALTH = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
    "health_check_initial_delay_ms": 0,
    "health_check_timeout_ms": 500,
}


# shards per drill (shard k starts on node k mod nodes): one shard leaves a node without any; with
# 2 nodes and 3 shards node 0 holds two (the CLI has no option to put every shard on one node; the
# Python API's shard_nodes does, see tests/cluster/test_ray_nodes.py)
DRILL_SHARDS = {"worker": 1, "no-spare": 1, "shard": 2, "both-shards": 3}


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def actors_by_node(cls: str) -> dict[str, int]:
    """Alive actors of class ``cls`` per node id (from the GCS actor table: the state API needs
    the dashboard, which these clusters do not run)."""
    import ray._private.state as state

    out: dict[str, int] = {}
    for a in state.actors().values():
        if a.get("ActorClassName") == cls and a.get("State") == "ALIVE":
            node = a["Address"]["NodeID"]
            out[node] = out.get(node, 0) + 1
    return out


def top_up(c: Cluster, nodes: int) -> None:
    alive = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
    for _ in range(nodes - len(alive)):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()


def drill(c: Cluster, name: str, a, reference: float | None) -> dict:
    run = Path(tempfile.mkdtemp()) / "run"
    shards = DRILL_SHARDS.get(name, a.shards)
    cmd = [
        sys.executable,
        "-m",
        "mccfr",
        "train",
        "--game",
        "leduc",
        "--workers",
        str(a.workers),
        "--shards",
        str(shards),
        "--batch",
        str(a.batch),
        "--iterations",
        str(a.iterations),
        "--checkpoint-every",
        "1",
        "--eval-every",
        "1000",
        "--address",
        c.address,
        "--out",
        str(run),
        "--json",
    ]
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    removed = None
    try:
        while removed is None and proc.poll() is None and time.time() - t0 < 300:
            time.sleep(0.5)
            if not (run / "checkpoints").exists() or not any((run / "checkpoints").iterdir()):
                continue
            workers = actors_by_node("WorkerCore")
            held = actors_by_node("ShardCore")
            head = c.head_node.node_id
            cands = {
                "worker": [n for n in workers if n not in held],
                "no-spare": [n for n in workers if n not in held],
                "shard": [n for n in held if held[n] == 1],
                "both-shards": sorted(held, key=lambda n: -held[n])[:1],
            }[name]
            cands = [n for n in cands if n != head]
            if not cands:
                continue
            (node,) = [n for n in c.worker_nodes if n.node_id == cands[0]]
            c.remove_node(node, allow_graceful=False)
            removed = {
                "node": cands[0][:12],
                "workers_there": workers.get(cands[0], 0),
                "shards_there": held.get(cands[0], 0),
                "after_seconds": round(time.time() - t0, 1),
            }
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return {"drill": name, "rc": "hung (killed after the deadline)", "removed": removed}
    row = {
        "drill": name,
        "shards": shards,
        "rc": proc.returncode,
        "removed": removed,
        "seconds": round(time.time() - t0, 1),
    }
    try:
        res = json.loads(out.strip().splitlines()[-1])
        row.update(
            {
                k: res.get(k)
                for k in (
                    "iterations",
                    "exploitability",
                    "shard_restores",
                    "worker_restarts",
                    "lost_batches",
                    "nodes",
                    "driver_calls_per_round",
                )
            }
        )
    except (ValueError, IndexError):
        row["stdout_tail"] = out[-500:]
    row["warnings"] = [line for line in err.splitlines() if line.startswith("warning:")][:12]
    if proc.returncode != 0:
        row["stderr_tail"] = err[-1500:]
    if reference is not None and row.get("exploitability"):
        row["uninterrupted_exploitability"] = reference
        row["ratio"] = row["exploitability"] / reference
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--drills", default="worker,shard,both-shards,no-spare")
    ap.add_argument("--shards-default", dest="shards", type=int, default=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    configure()  # numba's cache, before the project's kernels load (docs/training.md; Ray's nodes inherit it)
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": 80 << 20, "_system_config": FAST_HEALTH},
    )
    top_up_to = a.nodes
    for _ in range(top_up_to):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, logging_level="warning", log_to_driver=False)
    emit(
        {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "load_average": os.getloadavg(),
            "nodes": a.nodes,
            "workers": a.workers,
            "shards": a.shards,
            "iterations": a.iterations,
            "batch": a.batch,
        }
    )
    try:
        from blueprint.trainer import make_trainer
        from cluster.job import RayJob

        with RayJob(make_trainer("leduc", seed=0), workers=a.workers, shards=a.shards, batch=a.batch) as job:
            job.run(a.iterations)
            reference = job.exploitability()[0]
        emit({"drill": "none (uninterrupted, same cluster)", "exploitability": reference})
        for name in a.drills.split(","):
            top_up(c, a.workers if name == "no-spare" else a.nodes)
            alive = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
            if name == "no-spare":  # exactly one node per worker: remove the spare ones
                for node in [n for n in c.worker_nodes if any(x["NodeID"] == n.node_id for x in alive)][
                    a.workers :
                ]:
                    c.remove_node(node, allow_graceful=False)
            emit(drill(c, name, a, reference))
    finally:
        ray.shutdown()
        c.shutdown()
    emit({"done": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_average": os.getloadavg()})


if __name__ == "__main__":
    main()
