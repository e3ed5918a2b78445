"""Benchmark the Ray job (cluster/job.py) against the single-process trainer.

    python scripts/bench_cluster.py leduc      [--iterations 4000000] [--batch 100,1000] [--seeds 0]
                                               [--algo pluribus] [--workers 2]
    python scripts/bench_cluster.py throughput [--seconds 30] [--batch 20000] [--cards small]
    python scripts/bench_cluster.py checkpoint [--cards small] [--iterations 200000]
    python scripts/bench_cluster.py calls      [--nodes 4] [--workers 4] [--shards 4] [--batch 100] [--rounds 20]
    python scripts/bench_cluster.py memory     [--cards small|synthetic] [--workers 2] [--batch 2000]

leduc: exact exploitability at equal total iterations, single process vs a 2-worker 2-shard job,
per seed and on average. throughput: hunl100 (``--bets small``, the default no-limit game of
``mccfr train``), single process (the peer measured in the same run), then Ray jobs with 1 and 2
workers (2 shards each): iterations/s after a warm-up round, bytes per batch and per second, the
share of the workers' time spent outside the kernel (snapshot copy, deltas, waiting), memory.
checkpoint: write and load times and sizes of the default game's checkpoint, one shard (single
process) and two (the Ray job). calls: on a simulated cluster (``ray.cluster_utils.Cluster``, a head
without CPUs plus ``--nodes`` one-CPU nodes), a Leduc job's driver calls and result bytes per round
(``RayJob.stats()``), against the old design's ``N + N S + 2 S``. memory: per-worker memory (rss, pss:
shared pages split among the processes mapping them, uss: private pages) of a hunl100 job with the
card table shared through the object store and with a private copy per worker (the old design);
``--cards synthetic`` uses a random table of the ``small`` recipe's exact sizes (277 MB) when the
built one is not in the cache. One JSON object per line; the first one describes the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import ray

from blueprint import checkpoint as ckpt
from blueprint.trainer import Trainer, make_trainer
from cluster import rss_bytes
from cluster.job import RayJob


def emit(row: dict) -> None:
    print(json.dumps(row), flush=True)


def leduc(iters: int, batches: list[int], seeds: list[int], algo: str = "pluribus", workers: int = 2) -> None:
    single_e, ray_e = [], {b: [] for b in batches}
    for seed in seeds:
        tr = make_trainer("leduc", seed=seed, algo=algo)
        t = time.perf_counter()
        tr.run(iters)
        dt = time.perf_counter() - t
        e1 = tr.exploitability()[0]
        single_e.append(e1)
        emit({"bench": "leduc", "mode": "single", "algo": algo, "seed": seed, "iterations": iters, "seconds": dt,
              "exploitability": e1, "table_entries": tr.size})
        for batch in batches:
            with RayJob(make_trainer("leduc", seed=seed, algo=algo), workers=workers, shards=2, batch=batch) as job:
                t = time.perf_counter()
                job.run(iters)
                dt = time.perf_counter() - t
                e2 = job.exploitability()[0]
                st = job.stats()
            ray_e[batch].append(e2)
            emit({"bench": "leduc", "mode": f"ray {workers}w/2s", "algo": algo, "seed": seed, "batch": batch, "iterations": iters,
                  "seconds": dt, "exploitability": e2, "vs_single": e2 / e1, "staleness": st["staleness"],
                  "bytes_per_batch": st["bytes_per_batch"]})
    for batch in batches:
        emit({"bench": "leduc", "mode": "mean", "batch": batch, "single": float(np.mean(single_e)),
              "ray": float(np.mean(ray_e[batch])), "ratio": float(np.mean(ray_e[batch]) / np.mean(single_e))})


def _single_rate(args: tuple) -> tuple[float, int, int]:
    """Iterations/s of one single-process trainer over ``seconds`` after a warm-up ``batch``, started
    at the wall-clock instant ``start`` (so concurrent ones overlap)."""
    cards, seed, batch, seconds, start = args
    tr = make_trainer("hunl100", bets="small", cards=cards, seed=seed)
    tr.run(batch)  # compiles / loads the kernels
    time.sleep(max(0.0, start - time.time()))
    t, it0 = time.perf_counter(), tr.iteration
    while time.perf_counter() - t < seconds:
        tr.run(batch)
    return (tr.iteration - it0) / (time.perf_counter() - t), tr.size, rss_bytes()


def throughput(seconds: float, batch: int, cards: str, workers: list[int]) -> None:
    import multiprocessing

    emit({"bench": "throughput", "load_average": os.getloadavg()})
    single, size, rss = _single_rate((cards, 1, batch, seconds, 0.0))
    emit({"bench": "throughput", "mode": "single", "cards": cards, "iterations_per_second": single,
          "table_entries": size, "rss_bytes": rss})
    # the ceiling the machine gives two processes now: two independent trainers at once
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        start = time.time() + 30  # both load their card tables first
        pair = pool.map(_single_rate, [(cards, s, batch, seconds, start) for s in (1, 2)])
    two = sum(r for r, _, _ in pair)
    emit({"bench": "throughput", "mode": "2 independent single processes at once",
          "iterations_per_second": two, "vs_single": two / single})
    rates = {}
    for w in workers:
        tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
        with RayJob(tr, workers=w, shards=2, batch=batch) as job:
            job.run(w * batch)  # warm up: actors start, kernels and card tables load
            it0, t = job.iteration, time.perf_counter()
            b0, s0, c0, r0 = job.batches, job.bytes_sent, job.compute_seconds, job.round_seconds
            ws0 = job.worker_seconds
            while time.perf_counter() - t < seconds:
                job.run(w * batch)
            dt = time.perf_counter() - t
            st = job.stats()
            batches = job.batches - b0
            sent = job.bytes_sent - s0
            rates[w] = (job.iteration - it0) / dt
            emit({
                "bench": "throughput", "mode": f"ray {w}w/2s", "batch": batch,
                "iterations_per_second": rates[w], "vs_single": rates[w] / single,
                "rounds_seconds": job.round_seconds - r0, "wall_seconds": dt,
                "bytes_per_batch": sent / max(batches, 1), "bytes_per_second": sent / dt,
                # share of the worker slots' wall time not spent in the kernel, split into the
                # worker's own snapshot copy / delta packing and the rest (Ray calls, waiting for
                # the other worker, the shards' apply and publish)
                "overhead_share": 1 - (job.compute_seconds - c0) / (w * (job.round_seconds - r0)),
                "worker_copy_pack_share": ((job.worker_seconds - ws0) - (job.compute_seconds - c0))
                / (w * (job.round_seconds - r0)),
                "staleness": st["staleness"], "worker_rss_bytes": st["worker_rss_bytes"],
                "driver_rss_bytes": rss_bytes(),
            })
    if 1 in rates and 2 in rates:
        emit({"bench": "throughput", "mode": "ratio 2w/1w", "ratio": rates[2] / rates[1],
              "load_average": os.getloadavg()})


def checkpoint(cards: str, iters: int) -> None:
    tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
    tr.run(iters)
    with tempfile.TemporaryDirectory(dir=".") as d:
        t = time.perf_counter()
        path = tr.save(Path(d) / "single")
        w = time.perf_counter() - t
        size = sum(f.stat().st_size for f in path.iterdir())
        t = time.perf_counter()
        manifest, shards = ckpt.load_latest(Path(d) / "single")
        rd = time.perf_counter() - t
        emit({"bench": "checkpoint", "mode": "single (1 shard)", "iterations": iters, "table_entries": tr.size,
              "table_bytes": int(tr.regret.nbytes + tr.strat.nbytes), "bytes": size, "write_seconds": w,
              "read_verify_seconds": rd})
        t = time.perf_counter()
        Trainer.load(Path(d) / "single")
        emit({"bench": "checkpoint", "mode": "Trainer.load (read + rebuild tree and card tables)",
              "seconds": time.perf_counter() - t})
        with RayJob(tr, workers=1, shards=2, batch=10_000) as job:
            job.run(10_000)  # the actors are up
            t = time.perf_counter()
            path = job.save(Path(d) / "ray")
            w = time.perf_counter() - t
            size = sum(f.stat().st_size for f in path.iterdir())
            t = time.perf_counter()
            ckpt.load_latest(Path(d) / "ray")
            rd = time.perf_counter() - t
        emit({"bench": "checkpoint", "mode": "ray (2 shards, pause of the job)", "bytes": size,
              "write_seconds": w, "read_verify_seconds": rd})


def calls(nodes: int, workers: int, shards: int, batch: int, rounds: int) -> None:
    """Driver calls and bytes per round on a simulated ``nodes``-node cluster (Leduc)."""
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 80 << 20})
    for _ in range(nodes):
        c.add_node(num_cpus=1, object_store_memory=80 << 20)
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, logging_level="warning", log_to_driver=False)
    try:
        with RayJob(make_trainer("leduc", seed=1), workers=workers, shards=shards, batch=batch) as job:
            job.run(workers * batch)  # warm up
            d0, b0, r0, t0 = job.driver_calls, job.driver_bytes, job.rounds, time.perf_counter()
            job.run(rounds * workers * batch)
            dt = time.perf_counter() - t0
            st = job.stats()
            n = job.rounds - r0
            emit({"bench": "calls", "nodes": job.num_nodes, "workers": workers, "shards": shards, "batch": batch,
                  "rounds": n, "driver_calls_per_round": (job.driver_calls - d0) / n,
                  "driver_calls_max_round": st["driver_calls_max_round"],
                  "old_design_calls_per_round": workers + workers * shards + 2 * shards,
                  "bound_nodes_plus_2_shards": job.num_nodes + 2 * shards,
                  "driver_bytes_per_round": (job.driver_bytes - b0) / n,
                  "driver_bytes_per_node_per_round": (job.driver_bytes - b0) / n / job.num_nodes,
                  "driver_bytes_max_round": st["driver_bytes_max_round"],
                  "worker_delta_bytes_per_batch": st["bytes_per_batch"],
                  "leader_delta_bytes_per_round": st["leader_bytes_per_round"],
                  "seconds_per_round": dt / n, "load_average": os.getloadavg()})
    finally:
        ray.shutdown()
        c.shutdown()


def synthetic_small_cards(game):
    """A TABLE abstraction with the ``small`` recipe's bucket counts and table sizes (random
    buckets): what a worker holds for ``--abstraction small``, for memory measurements only."""
    from abstraction.cards import TABLE, CardAbstraction
    from abstraction.isomorphism import HandIndexer

    ix = HandIndexer.for_game(game)
    buckets = (169, 50, 50, 50)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, b, ix.size(r), dtype=np.uint16) for r, b in enumerate(buckets)]
    parts.append(rng.integers(0, 169, game.deck_size ** 2, dtype=np.uint16))
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(np.int64)  # rounds, then the preflop lookup
    return CardAbstraction("synthetic-small", TABLE, buckets, iso=ix.tables, table=np.concatenate(parts),
                           offsets=offsets, source_hash="synthetic")


def memory(cards: str, workers: int, batch: int) -> None:
    """Per-worker memory with the card table shared (one copy per node) and private (per worker)."""
    from abstraction.buckets import recipe_dir
    from cluster.worker import trainer_with_cards
    from holdem.gamedef import load_gamedef

    game = load_gamedef("hunl100")
    if cards == "small" and not (recipe_dir(game, "small") / "abstraction.bin").exists() \
            and not recipe_dir(game, "small").exists():
        emit({"bench": "memory", "note": f"no built 'small' abstraction in {recipe_dir(game, 'small')}; "
                                         "use --cards synthetic (same sizes) or build it first"})
        return
    if cards == "synthetic":
        ab = synthetic_small_cards(game)
        base = make_trainer("hunl100", bets="small", cards="rank", seed=1)
        tr = trainer_with_cards(base.config_dict, ab)
    else:
        tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
    emit({"bench": "memory", "cards": cards, "table_bytes": int(tr.cards.table.nbytes), "iso_bytes": int(tr.cards.iso.nbytes),
          "table_entries": tr.size, "driver_rss_bytes": rss_bytes()})
    for share in (False, True):
        with RayJob(tr, workers=workers, shards=2, batch=batch, share_cards=share) as job:
            job.run(2 * workers * batch)
            mem = job.worker_memory()
            st = job.stats()
        emit({"bench": "memory", "cards": cards, "shared_table": share, "workers": workers,
              "worker_rss_bytes": [m["rss"] for m in mem], "worker_pss_bytes": [m["pss"] for m in mem],
              "worker_uss_bytes": [m["uss"] for m in mem], "node_workers_pss_bytes": sum(m["pss"] for m in mem),
              "stats_worker_rss_bytes": st["worker_rss_bytes"], "load_average": os.getloadavg()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["leduc", "throughput", "checkpoint", "calls", "memory"])
    ap.add_argument("--nodes", type=int, default=4, help="calls: simulated nodes")
    ap.add_argument("--shards", type=int, default=4, help="calls: shards")
    ap.add_argument("--rounds", type=int, default=20, help="calls: rounds measured")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--batch", default=None, help="iterations per worker per round (leduc: a list, 100,1000)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cards", default="small")
    ap.add_argument("--workers", default="1,2", help="throughput: the job sizes; leduc: the last one")
    ap.add_argument("--algo", default="pluribus", help="leduc: the MCCFR variant")
    a = ap.parse_args()
    if a.what == "calls":
        emit({"machine": platform.processor() or platform.machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
        calls(a.nodes, int(a.workers.split(",")[-1]) if a.workers != "1,2" else 4, a.shards,
              int(a.batch or 100), a.rounds)
        return
    ray.init(include_dashboard=False, logging_level="warning", log_to_driver=False)
    emit({"machine": platform.processor() or platform.machine(), "cpus": ray.cluster_resources().get("CPU"),
          "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
    if a.what == "leduc":
        leduc(a.iterations or 4_000_000, [int(b) for b in (a.batch or "100,1000").split(",")],
              [int(s) for s in a.seeds.split(",")], a.algo, int(a.workers.split(",")[-1]))
    elif a.what == "throughput":
        throughput(a.seconds, int(a.batch or 20_000), a.cards, [int(w) for w in a.workers.split(",")])
    elif a.what == "memory":
        memory(a.cards, int(a.workers.split(",")[-1]), int(a.batch or 2000))
    else:
        checkpoint(a.cards, a.iterations or 200_000)
    ray.shutdown()


if __name__ == "__main__":
    main()
