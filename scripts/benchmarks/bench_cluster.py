"""Benchmark the Ray job (cluster/job.py) against the single-process trainer.

    python scripts/benchmarks/bench_cluster.py leduc      [--iterations 4000000] [--batch 100,1000] [--seeds 0]
                                               [--algo pluribus] [--workers 2]
    python scripts/benchmarks/bench_cluster.py staleness  [--iterations 4000000] [--runs 2:100,8:14,28:4] [--seeds 0-5]
                                               [--algo pluribus] [--procs 2] [--check-ray ROUNDS]
    python scripts/benchmarks/bench_cluster.py bytime     [--game leduc] [--seconds 20] [--checks 1,2,5,10,20]
                                               [--batch 100,1000,10000,100000] [--seeds 0,1,2] [--workers 2]
    python scripts/benchmarks/bench_cluster.py throughput [--seconds 30] [--batch 20000] [--cards small]
    python scripts/benchmarks/bench_cluster.py checkpoint [--cards small] [--iterations 200000]
    python scripts/benchmarks/bench_cluster.py calls      [--nodes 4] [--workers 4] [--shards 4] [--batch 100] [--rounds 20]
    python scripts/benchmarks/bench_cluster.py nodes      [--nodes 2] [--seconds 30] [--cards small] [--batch N]
    python scripts/benchmarks/bench_cluster.py memory     [--cards small|synthetic] [--workers 2] [--batch 2000]
    python scripts/benchmarks/bench_cluster.py model      [--sizes 2,3,4,5] [--held-out 5] [--rounds 30] [--targets 8,64,196]
                                               [--cores 28] [--rtt-ms 0.5] [--round-trips 3] [--gbps 10] [--target 1]
                                               [--group-size 2 [--target-groups 3,8,14] [--no-relay] [--from OUT1,OUT2]]

leduc: exact exploitability at equal total iterations, single process vs a 2-worker 2-shard job,
per seed and on average. bytime: exploitability against training time (wall clock, the Ray job's
start-up reported apart) on the same cores: one process on 1 thread and on every core, and
``--workers`` Ray workers of one thread each at each ``--batch`` (one shard), per seed at each
``--checks`` second; then per configuration the mean over seeds at each check and the time each
first reaches the one-process-on-every-core run's final mean. A game without exact
exploitability (hunl100) is measured by the distance of the average strategy to a long one-thread
reference run's (``--reference-seconds``; :class:`harness.ReferenceDistance`), weighted by where
the reference plays. staleness: the same comparison for many workers without Ray
(:func:`cluster.simulate.simulate_job`, the job's arithmetic in one process, which the cluster
tests check against the Ray job bit for bit): per ``workers:batch`` run and seed the exact
exploitability beside the single process's on the same seed, then per run the ratio of the means
over the seeds with a 95% interval (bootstrap over seeds) and the mean staleness. throughput: hunl100 (``--bets small``, the default no-limit game of
``mccfr train``), single process (the peer measured in the same run), then Ray jobs with 1 and 2
workers (2 shards each): iterations/s after a warm-up round, bytes per batch and per second, the
share of the workers' time spent outside the kernel (snapshot copy, deltas, waiting), memory.
checkpoint: write and load times and sizes of the default game's checkpoint, one shard (single
process) and two (the Ray job). calls: on a simulated cluster (``ray.cluster_utils.Cluster``, a head
without CPUs plus ``--nodes`` one-CPU nodes), a Leduc job's driver calls and result bytes per round
(``RayJob.stats()``), against the old design's ``N + N S + 2 S``. nodes: hunl100 on ``--nodes``
simulated one-CPU nodes (one worker per node, 2 shards, the default batch) against one process on
one thread, iterations/s. memory: per-worker memory (rss, pss:
shared pages split among the processes mapping them, uss: private pages) of a hunl100 job with the
card table shared through the object store and with a private copy per worker (the old design);
``--cards synthetic`` uses a random table of the ``small`` recipe's exact sizes (277 MB) when the
built one is not in the cache. model: the scale model of the control overhead per round: calls,
bytes and CPU per round of the driver, the leaders and the shards measured on
simulated clusters of each size (three ways of passing a round's arguments), fitted without the
held-out size, checked against it, and extrapolated to ``--targets`` nodes (see :func:`model`; a
table, then JSON); with ``--group-size G`` the flat job and the two-level fan-out with group size G
instead, fitted jointly and extrapolated with groups of about sqrt(nodes) (the model lives in
``cluster_scale_model.py`` beside this script: :func:`cluster_scale_model.model`,
:func:`cluster_scale_model.model_grouped`). One JSON object per line; the first one describes the machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import ray
from cluster_scale_model import model, model_grouped
from harness import ReferenceDistance, emit, machine_row, simulated_cluster

from mccfr_util.numba_cache import configure

configure()  # numba's cache, before the project's kernels load (docs/training.md)

from blueprint.checkpoints import load_latest
from blueprint.memory import rss_bytes
from blueprint.trainer import Trainer, make_trainer
from cluster.job import RayJob


def leduc(iters: int, batches: list[int], seeds: list[int], algo: str = "pluribus", workers: int = 2) -> None:
    single_e, ray_e = [], {b: [] for b in batches}
    for seed in seeds:
        tr = make_trainer("leduc", seed=seed, algo=algo)
        t = time.perf_counter()
        tr.run(iters)
        dt = time.perf_counter() - t
        e1 = tr.exploitability()[0]
        single_e.append(e1)
        emit(
            {
                "bench": "leduc",
                "mode": "single",
                "algo": algo,
                "seed": seed,
                "iterations": iters,
                "seconds": dt,
                "exploitability": e1,
                "table_entries": tr.size,
            }
        )
        for batch in batches:
            with RayJob(
                make_trainer("leduc", seed=seed, algo=algo), workers=workers, shards=2, batch=batch
            ) as job:
                t = time.perf_counter()
                job.run(iters)
                dt = time.perf_counter() - t
                e2 = job.exploitability()[0]
                st = job.stats()
            ray_e[batch].append(e2)
            emit(
                {
                    "bench": "leduc",
                    "mode": f"ray {workers}w/2s",
                    "algo": algo,
                    "seed": seed,
                    "batch": batch,
                    "iterations": iters,
                    "seconds": dt,
                    "exploitability": e2,
                    "vs_single": e2 / e1,
                    "staleness": st["staleness"],
                    "bytes_per_batch": st["bytes_per_batch"],
                }
            )
    for batch in batches:
        emit(
            {
                "bench": "leduc",
                "mode": "mean",
                "batch": batch,
                "single": float(np.mean(single_e)),
                "ray": float(np.mean(ray_e[batch])),
                "ratio": float(np.mean(ray_e[batch]) / np.mean(single_e)),
            }
        )


def bytime(
    game: str,
    checks: list[float],
    batches: list[int],
    seeds: list[int],
    workers: int,
    reference_seconds: float,
) -> None:
    from blueprint.session import exact_eval_problem
    from blueprint.threads import available_cores

    cores = available_cores()
    exact = exact_eval_problem(make_trainer(game, seed=0)) is None
    distance = None
    if not exact:  # a proxy: the distance to a long one-thread run (harness.ReferenceDistance)
        ref = make_trainer(game, seed=1_000_000, threads=1)
        ref.run_for(reference_seconds)
        distance = ReferenceDistance(ref)
    configs: list[tuple[str, dict]] = [("1 process, 1 thread", {"threads": 1})]
    if cores > 1:
        configs.append((f"1 process, {cores} threads", {"threads": cores}))
    configs += [(f"Ray {workers}x1 thread, batch {b}", {"workers": workers, "batch": b}) for b in batches]
    curves: dict[str, list[list[float]]] = {name: [] for name, _ in configs}
    for seed in seeds:
        for name, cfg in configs:
            t_start = time.perf_counter()
            tr = make_trainer(game, seed=seed, threads=cfg.get("threads", 1))
            job = None
            if "workers" in cfg:
                job = RayJob(tr, workers=cfg["workers"], shards=1, batch=cfg["batch"], threads=1)
            runner = job if job is not None else tr
            startup = time.perf_counter() - t_start
            trained, row_curve = 0.0, []
            for c in checks:
                t = time.perf_counter()
                runner.run_for(c - trained)
                trained += time.perf_counter() - t
                if exact:
                    e = runner.exploitability()[0]
                else:
                    assert distance is not None
                    e = distance(job.sync() if job is not None else tr)[1]
                row_curve.append(e)
                it = runner.iteration
                emit(
                    {
                        "bench": "bytime",
                        "game": game,
                        "config": name,
                        "seed": seed,
                        "seconds": round(trained, 3),
                        "iterations": it,
                        "iterations_per_second": it / trained,
                        "exploitability" if exact else "distance": e,
                        "startup_seconds": round(startup, 2),
                    }
                )
            if job is not None:
                job.close()
            curves[name].append(row_curve)
    best = f"1 process, {cores} threads" if cores > 1 else "1 process, 1 thread"
    goal = float(np.mean([c[-1] for c in curves[best]]))
    for name, _ in configs:
        mean = np.mean(np.array(curves[name]), axis=0)
        reach = next((checks[i] for i, v in enumerate(mean) if v <= goal), None)
        emit(
            {
                "bench": "bytime",
                "mode": "mean",
                "game": game,
                "config": name,
                "checks": checks,
                "exploitability" if exact else "distance": [float(x) for x in mean],
                "goal": goal,
                "first_check_at_goal": reach,
            }
        )


def _staleness_one(args: tuple) -> dict:
    iters, seed, algo, workers, batch = args
    from cluster.simulate import simulate_job

    tr = make_trainer("leduc", seed=seed, algo=algo)
    t = time.perf_counter()
    st = {"staleness": 0.0}
    if workers == 0:
        tr.run(iters)
    else:
        st = simulate_job(tr, workers, batch, iters)
    return {
        "bench": "staleness",
        "algo": algo,
        "seed": seed,
        "workers": workers,
        "batch": batch,
        "iterations": iters,
        "exploitability": tr.exploitability()[0],
        "staleness": st["staleness"],
        "stale_fraction": workers * batch / iters,
        "seconds": time.perf_counter() - t,
    }


def check_ray(runs: list[tuple[int, int]], rounds: int, algo: str) -> None:
    """Each ``(workers, batch)`` run for ``rounds`` rounds as a Ray job on the local Ray (a CPU per
    worker) and with :func:`cluster.simulate.simulate_job`: are the tables the same, bit for bit?"""
    from cluster.simulate import simulate_job

    ray.init(
        num_cpus=max(w for w, _ in runs),
        include_dashboard=False,
        logging_level="warning",
        log_to_driver=False,
    )
    for w, b in runs:
        it = w * b * rounds
        t = time.perf_counter()
        with RayJob(make_trainer("leduc", seed=5, algo=algo), workers=w, shards=2, batch=b) as job:
            job.run(it)
            got = job.sync()
            tables = got.regret.tobytes(), got.strat.tobytes()
        dt = time.perf_counter() - t
        ref = make_trainer("leduc", seed=5, algo=algo)
        simulate_job(ref, w, b, it, shards=2)
        same = tables == (ref.regret.tobytes(), ref.strat.tobytes())
        emit(
            {
                "bench": "staleness",
                "mode": "ray check",
                "workers": w,
                "batch": b,
                "iterations": it,
                "identical": same,
                "ray_seconds": dt,
            }
        )
    ray.shutdown()


def staleness(iters: int, runs: list[tuple[int, int]], seeds: list[int], algo: str, procs: int) -> None:
    """Leduc exploitability after ``iters`` iterations: one process (workers 0) and each simulated
    ``(workers, batch)`` job, on every seed; then per run the ratio of means with a bootstrap
    interval over seeds (the same seeds' single-process runs resampled with them)."""
    import multiprocessing

    jobs = [(iters, s, algo, 0, 0) for s in seeds] + [(iters, s, algo, w, b) for w, b in runs for s in seeds]
    rows: list[dict] = []
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        for row in pool.imap_unordered(_staleness_one, jobs):
            emit(row)
            rows.append(row)
    single = {r["seed"]: r["exploitability"] for r in rows if r["workers"] == 0}
    rs = np.random.default_rng(0)
    for w, b in runs:
        got = {r["seed"]: r for r in rows if (r["workers"], r["batch"]) == (w, b)}
        e1 = np.array([single[s] for s in seeds])
        e2 = np.array([got[s]["exploitability"] for s in seeds])
        idx = rs.integers(0, len(seeds), (10_000, len(seeds)))
        boot = e2[idx].mean(axis=1) / e1[idx].mean(axis=1)
        emit(
            {
                "bench": "staleness",
                "mode": "mean",
                "workers": w,
                "batch": b,
                "seeds": len(seeds),
                "single": float(e1.mean()),
                "job": float(e2.mean()),
                "ratio": float(e2.mean() / e1.mean()),
                "ratio_95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
                "paired_ratios": [float(x) for x in e2 / e1],
                "staleness": got[seeds[0]]["staleness"],
                "stale_fraction": w * b / iters,
            }
        )


def _seeds(text: str) -> list[int]:
    """``0-5`` or ``0,1,2``."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


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


_RAY_DAEMONS = ("raylet", "gcs_server", "dashboard", "log_monitor", "monitor.py")


def _cpu_by_process() -> dict[int, tuple[str, float]]:
    """Every process's CPU seconds so far (user + system, from /proc) and its role: ``driver``
    (this process), a Ray actor's class (Ray titles its processes ``ray::Class.method``), a Ray
    daemon's name, or ``other``."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        pid = int(d.name)
        if pid == os.getpid():
            role = "driver"
        elif cmd.startswith("ray::"):
            role = cmd.split()[0][5:].split(".")[0] or "ray::idle"
        elif daemon := next((k for k in _RAY_DAEMONS if k in cmd), None):
            role = daemon
        elif "default_worker.py" in cmd:
            role = "ray worker (idle)"
        else:
            role = "other"
        out[pid] = (role, cpu)
    return out


def _cpu_share(before: dict, after: dict, wall: float) -> dict[str, float]:
    """Cores used per role between two :func:`_cpu_by_process` readings over ``wall`` seconds."""
    used: dict[str, float] = {}
    for pid, (role, cpu) in after.items():
        used[role] = used.get(role, 0.0) + cpu - before.get(pid, (role, 0.0))[1]
    return {k: round(v / wall, 3) for k, v in sorted(used.items(), key=lambda kv: -kv[1]) if v > 0}


def throughput(seconds: float, batch: int, cards: str, workers: list[int]) -> None:
    import multiprocessing

    emit({"bench": "throughput", "load_average": os.getloadavg()})
    single, size, rss = _single_rate((cards, 1, batch, seconds, 0.0))
    emit(
        {
            "bench": "throughput",
            "mode": "single",
            "cards": cards,
            "iterations_per_second": single,
            "table_entries": size,
            "rss_bytes": rss,
        }
    )
    # the ceiling the machine gives two processes now: two independent trainers at once
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        start = time.time() + 30  # both load their card tables first
        pair = pool.map(_single_rate, [(cards, s, batch, seconds, start) for s in (1, 2)])
    two = sum(r for r, _, _ in pair)
    emit(
        {
            "bench": "throughput",
            "mode": "2 independent single processes at once",
            "iterations_per_second": two,
            "vs_single": two / single,
        }
    )
    rates = {}
    for w in workers:
        tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
        with RayJob(tr, workers=w, shards=2, batch=batch) as job:
            job.run(w * batch)  # warm up: actors start, kernels and card tables load
            it0, t = job.iteration, time.perf_counter()
            b0, s0, c0, r0 = job.batches, job.bytes_sent, job.compute_seconds, job.round_seconds
            ws0 = job.worker_seconds
            cpu0 = _cpu_by_process()
            while time.perf_counter() - t < seconds:
                job.run(w * batch)
            dt = time.perf_counter() - t
            cores = _cpu_share(cpu0, _cpu_by_process(), dt)
            st = job.stats()
            batches = job.batches - b0
            sent = job.bytes_sent - s0
            rates[w] = (job.iteration - it0) / dt
            emit(
                {
                    "bench": "throughput",
                    "mode": f"ray {w}w/2s",
                    "batch": batch,
                    "iterations_per_second": rates[w],
                    "vs_single": rates[w] / single,
                    "rounds_seconds": job.round_seconds - r0,
                    "wall_seconds": dt,
                    "bytes_per_batch": sent / max(batches, 1),
                    "bytes_per_second": sent / dt,
                    # share of the worker slots' wall time not spent in the kernel, split into the
                    # worker's own snapshot copy / delta packing and the rest (Ray calls, waiting for
                    # the other worker, the shards' apply and publish)
                    "overhead_share": 1 - (job.compute_seconds - c0) / (w * (job.round_seconds - r0)),
                    "worker_copy_pack_share": ((job.worker_seconds - ws0) - (job.compute_seconds - c0))
                    / (w * (job.round_seconds - r0)),
                    "staleness": st["staleness"],
                    # cores each kind of process used meanwhile (the machine's other users: other)
                    "cores_by_role": cores,
                    "worker_rss_bytes": st["worker_rss_bytes"],
                    "driver_rss_bytes": rss_bytes(),
                }
            )
    if 1 in rates and 2 in rates:
        emit(
            {
                "bench": "throughput",
                "mode": "ratio 2w/1w",
                "ratio": rates[2] / rates[1],
                "load_average": os.getloadavg(),
            }
        )


def checkpoint(cards: str, iters: int) -> None:
    tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
    tr.run(iters)
    with tempfile.TemporaryDirectory(dir=".") as d:
        t = time.perf_counter()
        path = tr.save(Path(d) / "single")
        w = time.perf_counter() - t
        size = sum(f.stat().st_size for f in path.iterdir())
        t = time.perf_counter()
        manifest, shards = load_latest(Path(d) / "single")
        rd = time.perf_counter() - t
        emit(
            {
                "bench": "checkpoint",
                "mode": "single (1 shard)",
                "iterations": iters,
                "table_entries": tr.size,
                "table_bytes": int(tr.regret.nbytes + tr.strat.nbytes),
                "bytes": size,
                "write_seconds": w,
                "read_verify_seconds": rd,
            }
        )
        t = time.perf_counter()
        Trainer.load(Path(d) / "single")
        emit(
            {
                "bench": "checkpoint",
                "mode": "Trainer.load (read + rebuild tree and card tables)",
                "seconds": time.perf_counter() - t,
            }
        )
        with RayJob(tr, workers=1, shards=2, batch=10_000) as job:
            job.run(10_000)  # the actors are up
            t = time.perf_counter()
            path = job.save(Path(d) / "ray")
            w = time.perf_counter() - t
            size = sum(f.stat().st_size for f in path.iterdir())
            t = time.perf_counter()
            load_latest(Path(d) / "ray")
            rd = time.perf_counter() - t
        emit(
            {
                "bench": "checkpoint",
                "mode": "ray (2 shards, pause of the job)",
                "bytes": size,
                "write_seconds": w,
                "read_verify_seconds": rd,
            }
        )


def calls(nodes: int, workers: int, shards: int, batch: int, rounds: int) -> None:
    """Driver calls and bytes per round on a simulated ``nodes``-node cluster (Leduc)."""
    with simulated_cluster(nodes):
        with RayJob(make_trainer("leduc", seed=1), workers=workers, shards=shards, batch=batch) as job:
            job.run(workers * batch)  # warm up
            d0, b0, r0, t0 = job.driver_calls, job.driver_bytes, job.rounds, time.perf_counter()
            job.run(rounds * workers * batch)
            dt = time.perf_counter() - t0
            st = job.stats()
            n = job.rounds - r0
            emit(
                {
                    "bench": "calls",
                    "nodes": job.num_nodes,
                    "workers": workers,
                    "shards": shards,
                    "batch": batch,
                    "rounds": n,
                    "driver_calls_per_round": (job.driver_calls - d0) / n,
                    "driver_calls_max_round": st["driver_calls_max_round"],
                    "old_design_calls_per_round": workers + workers * shards + 2 * shards,
                    "bound_nodes_plus_2_shards": job.num_nodes + 2 * shards,
                    "driver_bytes_per_round": (job.driver_bytes - b0) / n,
                    "driver_bytes_per_node_per_round": (job.driver_bytes - b0) / n / job.num_nodes,
                    "driver_bytes_max_round": st["driver_bytes_max_round"],
                    "worker_delta_bytes_per_batch": st["bytes_per_batch"],
                    "leader_delta_bytes_per_round": st["leader_bytes_per_round"],
                    "seconds_per_round": dt / n,
                    "load_average": os.getloadavg(),
                }
            )


def nodes(seconds: float, cards: str, n_nodes: int, batch: int | None) -> None:
    """``n_nodes`` simulated one-CPU nodes (a head without CPU) against one process on one thread:
    hunl100 at the job's default settings (one worker per node on the node's cores, 2 shards, the
    default batch unless ``batch``), iterations/s after a warm-up round."""
    single, size, _ = _single_rate((cards, 1, 20_000, seconds, 0.0))
    emit(
        {"bench": "nodes", "mode": "single, 1 thread", "iterations_per_second": single, "table_entries": size}
    )
    # each node's object store holds the card table (277 MB for small) once
    with simulated_cluster(n_nodes, node_store=700 << 20, head_store=100 << 20):
        tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
        with RayJob(tr, workers=n_nodes, shards=2, batch=batch, threads=None) as job:
            job.run(n_nodes * job.batch)  # warm up: actors start, kernels and card tables load
            it0, t = job.iteration, time.perf_counter()
            cpu0 = _cpu_by_process()
            while time.perf_counter() - t < seconds:
                job.run(n_nodes * job.batch)
            dt = time.perf_counter() - t
            rate = (job.iteration - it0) / dt
            emit(
                {
                    "bench": "nodes",
                    "mode": f"ray, {job.num_nodes} one-CPU nodes, {n_nodes} workers, 2 shards",
                    "batch": job.batch,
                    "iterations_per_second": rate,
                    "vs_single": rate / single,
                    "cores_by_role": _cpu_share(cpu0, _cpu_by_process(), dt),
                    "load_average": os.getloadavg(),
                }
            )


def synthetic_small_cards(game):
    """A TABLE abstraction with the ``small`` recipe's bucket counts and table sizes (random
    buckets): what a worker holds for ``--abstraction small``, for memory measurements only."""
    from abstraction.cards import TABLE, CardAbstraction
    from abstraction.isomorphism import HandIndexer

    ix = HandIndexer.for_game(game)
    buckets = (169, 50, 50, 50)
    rng = np.random.default_rng(0)
    parts = [rng.integers(0, b, ix.size(r), dtype=np.uint16) for r, b in enumerate(buckets)]
    parts.append(rng.integers(0, 169, game.deck_size**2, dtype=np.uint16))
    offsets = np.cumsum([0] + [len(p) for p in parts[:-1]]).astype(
        np.int64
    )  # rounds, then the preflop lookup
    return CardAbstraction(
        "synthetic-small",
        TABLE,
        buckets,
        iso=ix.tables,
        table=np.concatenate(parts),
        offsets=offsets,
        source_hash="synthetic",
    )


def memory(cards: str, workers: int, batch: int) -> None:
    """Per-worker memory with the card table shared (one copy per node) and private (per worker)."""
    from abstraction.buckets import recipe_dir
    from holdem.gamedef import load_gamedef

    game = load_gamedef("hunl100")
    if (
        cards == "small"
        and not (recipe_dir(game, "small") / "abstraction.bin").exists()
        and not recipe_dir(game, "small").exists()
    ):
        emit(
            {
                "bench": "memory",
                "note": f"no built 'small' abstraction in {recipe_dir(game, 'small')}; "
                "use --cards synthetic (same sizes) or build it first",
            }
        )
        return
    if cards == "synthetic":
        ab = synthetic_small_cards(game)
        base = make_trainer("hunl100", bets="small", cards="rank", seed=1)
        tr = Trainer.from_manifest_config(base.config_dict, cards=ab)
    else:
        tr = make_trainer("hunl100", bets="small", cards=cards, seed=1)
    emit(
        {
            "bench": "memory",
            "cards": cards,
            "table_bytes": int(tr.cards.table.nbytes),
            "iso_bytes": int(tr.cards.iso.nbytes),
            "table_entries": tr.size,
            "driver_rss_bytes": rss_bytes(),
        }
    )
    for share in (False, True):
        with RayJob(tr, workers=workers, shards=2, batch=batch, share_cards=share) as job:
            job.run(2 * workers * batch)
            mem = job.worker_memory()
            st = job.stats()
        emit(
            {
                "bench": "memory",
                "cards": cards,
                "shared_table": share,
                "workers": workers,
                "worker_rss_bytes": [m["rss"] for m in mem],
                "worker_pss_bytes": [m["pss"] for m in mem],
                "worker_uss_bytes": [m["uss"] for m in mem],
                "node_workers_pss_bytes": sum(m["pss"] for m in mem),
                "stats_worker_rss_bytes": st["worker_rss_bytes"],
                "load_average": os.getloadavg(),
            }
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "what",
        choices=[
            "leduc",
            "bytime",
            "staleness",
            "throughput",
            "checkpoint",
            "calls",
            "nodes",
            "memory",
            "model",
        ],
    )
    ap.add_argument("--game", default="leduc", help="bytime: the game")
    ap.add_argument("--checks", default="1,2,5,10,20", help="bytime: training seconds to measure at")
    ap.add_argument(
        "--reference-seconds", type=float, default=60.0, help="bytime, a game without exact exploitability"
    )
    ap.add_argument("--sizes", default="2,3,4", help="model: simulated cluster sizes (nodes; shards = nodes)")
    ap.add_argument(
        "--held-out", type=int, default=4, help="model: the size left out of the fit and predicted"
    )
    ap.add_argument("--targets", default="8,64,196", help="model: node counts to extrapolate to")
    ap.add_argument("--cores", type=int, default=28, help="model: cores (workers) per real node")
    ap.add_argument("--rtt-ms", type=float, default=0.5, help="model: assumed network round trip")
    ap.add_argument(
        "--round-trips", type=int, default=3, help="model: network round trips on a round's critical path"
    )
    ap.add_argument(
        "--gbps", type=float, default=10.0, help="model: assumed network bandwidth into the driver"
    )
    ap.add_argument(
        "--target",
        type=float,
        default=1.0,
        help="model: control seconds per round allowed at the largest target",
    )
    ap.add_argument(
        "--group-size",
        type=int,
        default=0,
        help="model: measure the two-level fan-out with this group size beside the flat job and "
        "extrapolate both (model_grouped)",
    )
    ap.add_argument(
        "--target-groups",
        default=None,
        help="model --group-size: group size per target (default about sqrt(nodes): 3,8,14)",
    )
    ap.add_argument(
        "--no-relay",
        action="store_true",
        help="model --group-size: every node leader fetches every shard's snapshot object "
        "(RayJob(relay_snapshot=False))",
    )
    ap.add_argument(
        "--from",
        dest="from_files",
        default=None,
        help="model --group-size: refit the measured rows of earlier runs' output files (comma-separated)",
    )
    ap.add_argument("--nodes", type=int, default=None, help="calls, nodes: simulated nodes [4; nodes: 2]")
    ap.add_argument("--shards", type=int, default=4, help="calls: shards")
    ap.add_argument("--rounds", type=int, default=20, help="calls: rounds measured")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--batch", default=None, help="iterations per worker per round (leduc: a list, 100,1000)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cards", default="small")
    ap.add_argument("--workers", default="1,2", help="throughput: the job sizes; leduc: the last one")
    ap.add_argument("--algo", default="pluribus", help="leduc, staleness: the MCCFR variant")
    ap.add_argument(
        "--runs", default="2:100,8:14,28:4", help="staleness: workers:batch of each simulated job"
    )
    ap.add_argument("--procs", type=int, default=2, help="staleness: processes side by side")
    ap.add_argument(
        "--check-ray",
        type=int,
        default=0,
        help="staleness: first compare each run with Ray for this many rounds",
    )
    a = ap.parse_args()
    if a.what == "bytime":
        emit(machine_row())
        bytime(
            a.game,
            [float(x) for x in a.checks.split(",")],
            [int(x) for x in (a.batch or "100,1000,10000,100000").split(",")],
            _seeds(a.seeds if a.seeds != "0" else "0-2"),
            int(a.workers.split(",")[-1]),
            a.reference_seconds,
        )
        return
    if a.what == "staleness":
        emit(machine_row())
        runs = [(int(w), int(b)) for w, b in (r.split(":") for r in a.runs.split(","))]
        if a.check_ray:
            check_ray(runs, a.check_ray, a.algo)
        staleness(
            a.iterations or 4_000_000,
            runs,
            _seeds(a.seeds if a.seeds != "0" else "0-5"),
            a.algo,
            a.procs,
        )
        return
    if a.what == "model":
        emit(machine_row())
        if a.group_size:
            model_grouped(
                [int(x) for x in a.sizes.split(",")],
                a.held_out,
                int(a.batch or 10),
                a.rounds,
                [int(x) for x in a.targets.split(",")],
                a.cores,
                a.rtt_ms,
                a.gbps,
                a.round_trips,
                a.target,
                a.group_size,
                [int(x) for x in a.target_groups.split(",")] if a.target_groups else None,
                not a.no_relay,
                a.from_files.split(",") if a.from_files else None,
            )
            return
        model(
            [int(x) for x in a.sizes.split(",")],
            a.held_out,
            int(a.batch or 10),
            a.rounds,
            [int(x) for x in a.targets.split(",")],
            a.cores,
            a.rtt_ms,
            a.gbps,
            a.round_trips,
            a.target,
        )
        return
    if a.what == "nodes":
        emit(machine_row())
        nodes(a.seconds, a.cards, a.nodes or 2, int(a.batch) if a.batch else None)
        return
    if a.what == "calls":
        emit(machine_row())
        calls(
            a.nodes or 4,
            int(a.workers.split(",")[-1]) if a.workers != "1,2" else 4,
            a.shards,
            int(a.batch or 100),
            a.rounds,
        )
        return
    # leduc with more workers than cores (simulated workers): the local Ray gets a CPU per worker
    w = int(a.workers.split(",")[-1])
    more = {"num_cpus": w} if a.what == "leduc" and w > (os.cpu_count() or 1) else {}
    ray.init(include_dashboard=False, logging_level="warning", log_to_driver=False, **more)
    emit({**machine_row(), "ray_cpus": ray.cluster_resources().get("CPU")})
    if a.what == "leduc":
        leduc(
            a.iterations or 4_000_000,
            [int(b) for b in (a.batch or "100,1000").split(",")],
            [int(s) for s in a.seeds.split(",")],
            a.algo,
            int(a.workers.split(",")[-1]),
        )
    elif a.what == "throughput":
        throughput(a.seconds, int(a.batch or 20_000), a.cards, [int(w) for w in a.workers.split(",")])
    elif a.what == "memory":
        memory(a.cards, int(a.workers.split(",")[-1]), int(a.batch or 2000))
    else:
        checkpoint(a.cards, a.iterations or 200_000)
    ray.shutdown()


if __name__ == "__main__":
    main()
