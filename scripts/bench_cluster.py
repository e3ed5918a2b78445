"""Benchmark the Ray job: Leduc convergence (2 workers / 2 shards vs one process at equal
iterations) and throughput (1 vs 2 workers) on hunl100 with the small bet and rank card
abstractions, with bytes per batch and the compute share of worker time.

    python scripts/bench_cluster.py [--leduc-iters 20000] [--seconds 30] [--batch 2000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import ray

from blueprint.trainer import make_trainer
from cluster.job import RayJob


def leduc(iters: int, batches: list[int]) -> list[dict]:
    out = []
    single = make_trainer("leduc", seed=1)
    t = time.perf_counter()
    single.run(iters)
    out.append(
        {
            "mode": "single",
            "iterations": iters,
            "seconds": time.perf_counter() - t,
            "exploitability": single.exploitability()[0],
        }
    )
    for b in batches:
        with RayJob(make_trainer("leduc", seed=1), workers=2, shards=2, batch=b) as job:
            job.run(2 * b)  # warm up: actors start, kernels load
            start_it, t = job.iteration, time.perf_counter()
            job.run(iters - job.iteration)
            dt = time.perf_counter() - t
            st = job.stats()
            out.append(
                {
                    "mode": "ray 2w/2s",
                    "batch": b,
                    "iterations": job.iteration,
                    "seconds": dt,
                    "iterations_per_second": (job.iteration - start_it) / dt,
                    "exploitability": job.exploitability()[0],
                    "staleness": st["staleness"],
                    "bytes_per_batch": st["bytes_per_batch"],
                }
            )
    return out


def throughput(seconds: float, batch: int) -> list[dict]:
    out = []
    tr = make_trainer("hunl100", bets="small", cards="rank", seed=1)
    tr.run(200)
    t, it0 = time.perf_counter(), tr.iteration
    while time.perf_counter() - t < seconds:
        tr.run(batch)
    dt = time.perf_counter() - t
    out.append(
        {"mode": "single", "iterations_per_second": (tr.iteration - it0) / dt, "table_entries": tr.size}
    )
    for w in (1, 2):
        tr = make_trainer("hunl100", bets="small", cards="rank", seed=1)
        with RayJob(tr, workers=w, shards=2, batch=batch) as job:
            job.run(w * batch)  # warm up
            it0, t = job.iteration, time.perf_counter()
            b0, s0 = job.batches, job.bytes_sent
            while time.perf_counter() - t < seconds:
                job.run(w * batch)
            dt = time.perf_counter() - t
            st = job.stats()
            out.append(
                {
                    "mode": f"ray {w}w/2s",
                    "batch": batch,
                    "iterations_per_second": (job.iteration - it0) / dt,
                    "bytes_per_batch": (job.bytes_sent - s0) / max(job.batches - b0, 1),
                    "compute_share": st["compute_share"],
                    "staleness": st["staleness"],
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--leduc-iters", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=2000)
    a = ap.parse_args()
    ray.init(include_dashboard=False, logging_level="warning", log_to_driver=False)
    print(
        json.dumps(
            {
                "machine": platform.processor() or platform.machine(),
                "cpus": ray.cluster_resources().get("CPU"),
            }
        )
    )
    for row in leduc(a.leduc_iters, [100, 500]):
        print(json.dumps(row))
    for row in throughput(a.seconds, a.batch):
        print(json.dumps(row))
    ray.shutdown()


if __name__ == "__main__":
    main()
