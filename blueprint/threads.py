"""Threads on one table: T threads run the external-sampling kernel on the same tables.

Pluribus trained its blueprint on one shared-memory server, every core updating one regret
table. Here :func:`blueprint.kernels.es_iterations` releases the GIL (numba ``nogil``), so T
Python threads run it at once, each on its own share of a span of iterations and its own RNG
stream, all of them reading and writing the SAME ``regret`` and ``strat`` arrays without locks
("hogwild", Recht et al. 2011). Two threads that update one entry at the same instant can lose
one of the two updates; that is rare (a table has far more entries than threads) and accepted,
as in Pluribus. Each thread's scratch (traversal stack, deal and bucket buffers) is private:
the kernel allocates it per call.

Copies. On a table of a few megabytes, as the main job's (116,463 entries), every cache line is
written by every thread within a millisecond or so, and each write to a line the other core wrote
last waits for it to move: two threads on one such table ran 1.19x one thread on 2 cores, where two
trainers on two tables in two threads of one process ran 1.90x (most of that was numba's reference
counts on the tables' arrays, written by both cores at every call, since gone: two threads now
share the table, :data:`COPY_MIN_THREADS`). So with more threads, on a table of
:data:`COPY_MIN_ENTRIES` entries or more whose copies fit in :data:`COPY_MAX_BYTES` per thread,
each thread trains on a copy of its own and merges it into the shared tables: the shared tables
gain the thread's updates since the last merge (copy minus base), and the thread takes the merged
tables (every thread's updates so far) as its new copy and base. The first round's entries, which
every iteration updates, merge every :func:`hot_sync_every` iterations (a few updates of each of
their information sets); the whole table, a sweep of it, every :func:`copy_sync_every` iterations
and at the end of the thread's share of a span. Merges run one at a time (no update is
lost); between them a thread does not see the others' updates, as a Ray worker does not within a
round. Smaller tables (Leduc) and bigger ones are shared by the threads directly (hogwild, above),
and so are tables whose first round would merge too often (:data:`COPY_MIN_HOT_SPAN`: few
first-round buckets, as 3-player Leduc's) and any table in a span too short for copies to pay
(:func:`copies_pay`).

Barriers. The trainer splits a span of N iterations between the threads (:func:`split_span`)
and joins them all before anything else touches the tables: checkpoints, progress reports and
stopping checks happen between spans, so a checkpoint holds exactly the tables at its barrier
(settled: every discount boundary applied). Discount boundaries are no barriers: discounting is
lazy (:mod:`blueprint.kernels`), each row discounted when a thread touches it, and in a merge the
shared row, the copy and its base alike; the threads interleave their iteration numbers (thread
``k`` of ``T`` runs the span's iterations ``k, k + T, ...``), so that they cross each boundary and
the pruning warm-up together. The trainer's ``iteration`` advances by N.

Randomness. Thread 0 continues the trainer's own xoshiro stream (``Trainer.rng``, saved in every
checkpoint), so one thread is exactly the single-threaded trainer: bit-exact and deterministic.
Threads ``k >= 1`` draw from streams derived from the seed, the thread number and the iteration
at which the trainer first ran them (:func:`thread_rng_state`); they are not saved: a resumed run
derives them afresh from the seed and the checkpoint's iteration. With T > 1 a run is not
bit-reproducible anyway (the interleaving of the threads' updates depends on timing).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Sequence, TypeVar

import numpy as np

from blueprint.numerics import seed_rng_state

R = TypeVar("R")

# Leading word of a thread stream's spawn key: apart from the Ray job's worker streams, whose spawn
# keys are (worker, iteration) (cluster.job.worker_seed_state).
THREAD_STREAM_KEY = 0x74687264  # "thrd"


def available_cores() -> int:
    """The number of cores this process may run on (its CPU affinity), the default thread count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1


def check_threads(threads: object) -> int:
    """``threads`` as an int in ``[1, available_cores()]``; ValueError naming it otherwise."""
    cores = available_cores()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ValueError(f"threads must be a whole number from 1 to {cores}, got {threads!r}")
    if not 1 <= int(threads) <= cores:
        raise ValueError(
            f"threads must be from 1 to {cores} (the cores this process may use), got {int(threads)}"
        )
    return int(threads)


def thread_rng_state(seed: int, thread: int, iteration: int, worker: int | None = None) -> np.ndarray:
    """The xoshiro state of thread ``thread >= 1`` first run at ``iteration`` of a run seeded
    ``seed``: a stream spawned from the seed, distinct for every (thread, iteration), and for every
    Ray worker (``worker``: a worker's threads draw apart from every other worker's)."""
    if thread < 1:
        raise ValueError(f"thread 0 runs the trainer's own stream, got thread {thread}")
    key = (THREAD_STREAM_KEY, thread, iteration) + (() if worker is None else (int(worker),))
    return seed_rng_state(np.random.SeedSequence(seed, spawn_key=key))


COPY_MIN_ENTRIES = 16_384
"""Tables this big or bigger are copied per thread (module docstring, "Copies")."""

COPY_MAX_BYTES = 512 << 20
"""...as long as a thread's copy and base take at most this much memory."""

COPY_SYNC_ENTRIES = 16
"""A thread merges its copy every ``table entries / COPY_SYNC_ENTRIES`` iterations (within
[256, 65,536]): a merge sweeps the whole table, so merges come as often as keep their cost near 2%
of the training between them (about 0.3 ms a merge of the main job's table against 7,000
iterations of 3.6 us)."""


COPY_MIN_HOT_SPAN = 32
"""...and as long as the first round's entries merge every this many iterations or more
(:func:`hot_sync_every`): each of those merges is a return to Python between two kernel calls (the
lock, the dispatch, the kernel's scratch arrays), tens of microseconds that a few iterations of a
small game do not pay for. 3-player Leduc (67,416 entries, 8 first-round buckets: a merge every 20
iterations) on 2 threads ran 119-160k it/s on copies, and reached NashConv 0.219 in 900,000
iterations, against 230-274k it/s and 0.136 on the shared table (one thread: 166k, 0.140)."""


COPY_MIN_THREADS = 3
"""...and as long as there are this many threads or more. Two threads share the one table: once
the kernels stopped counting references to the tables' arrays (the counters were the cache lines
both cores wrote at every call, blueprint/kernels.py), two threads on the main job's shared table
ran 1.8-2.0x one thread, and on copies 1.19x (`pluribus` past its discounting, 2-core VM; the
1.19x the shared table ran before was the counters'). More threads keep copies until the curve
past 2 cores is measured again (docs/training.md, "Threads on one table")."""


def use_copies(
    entries: int, bytes_per_entry: int, hot_span: int | None = None, threads: int | None = None
) -> bool:
    """Whether ``threads`` threads (None: not limited by their number) train on copies of a table
    of ``entries`` whose first round merges every ``hot_span`` iterations (module docstring,
    "Copies"; None: not limited by it)."""
    if threads is not None and threads < COPY_MIN_THREADS:
        return False
    if hot_span is not None and hot_span < COPY_MIN_HOT_SPAN:
        return False
    return COPY_MIN_ENTRIES <= entries and 2 * entries * bytes_per_entry <= COPY_MAX_BYTES


COPY_SPAN_DIVISOR = 64
"""...and as long as each thread's share of a span is at least ``table entries /
COPY_SPAN_DIVISOR`` iterations (:func:`copies_pay`): a span on copies costs the thread four copies
of the tables at its start and a merge sweep at its end, about 10 ns per entry on the 2-core VM,
which this keeps under about 10% of the span's iterations. Shorter spans (a run's first chunks, a
big table's report-sized chunks) train on the shared table: on a 24M-entry table copies in such
spans ran 15 iterations a second (BENCHMARKS.md, "Training speed")."""


def copies_pay(entries: int, share: int) -> bool:
    """Whether a thread's share of a span, ``share`` iterations, is long enough for copies of a
    table of ``entries`` (:data:`COPY_SPAN_DIVISOR`)."""
    return share * COPY_SPAN_DIVISOR >= entries


def copy_span(entries: int, threads: int) -> int:
    """The shortest span whose shares :func:`copies_pay` for ``threads`` threads on a table of
    ``entries`` (the trainer stretches its spans to it when that fits in a report interval)."""
    return threads * -(-entries // COPY_SPAN_DIVISOR)


HOT_SYNC_VISITS = 5
"""A thread merges its copy's first-round entries every ``HOT_SYNC_VISITS x first-round buckets /
threads`` iterations (at least 16): each thread then updates a first-round information set about
``HOT_SYNC_VISITS`` times between merges (on Leduc, Ray rounds that short measured level with one
process per iteration: BENCHMARKS.md, "Staleness with 2, 8 and 28 workers")."""


def hot_sync_every(first_round_buckets: int, threads: int) -> int:
    """Iterations between merges of a thread's first-round entries (:data:`HOT_SYNC_VISITS`)."""
    return max(16, HOT_SYNC_VISITS * first_round_buckets // max(1, threads))


def copy_sync_every(entries: int) -> int:
    """Iterations a thread runs on its copy between merges (:data:`COPY_SYNC_ENTRIES`)."""
    return int(min(max(entries // COPY_SYNC_ENTRIES, 256), 65_536))


def split_span(n: int, threads: int) -> list[int]:
    """Iterations per thread for a span of ``n``: as equal as can be, the larger shares first,
    no empty share (fewer threads than ``threads`` when ``n < threads``)."""
    t = max(1, min(threads, n))
    q, r = divmod(n, t)
    return [q + (k < r) for k in range(t)]


class ThreadTeam:
    """``size`` threads: the caller and ``size - 1`` pooled helpers, started once and reused."""

    def __init__(self, size: int):
        self.size = size
        self._pool = (
            ThreadPoolExecutor(max_workers=size - 1, thread_name_prefix="mccfr") if size > 1 else None
        )

    def map(self, fn: Callable[..., R], args: Sequence[tuple]) -> list[R]:
        """``[fn(*a) for a in args]`` with ``args[0]`` on the calling thread and the others on the
        helpers (at most ``size`` in all); returns when every call has, re-raising the first error."""
        if len(args) > self.size:
            raise ValueError(f"{len(args)} tasks for a team of {self.size} threads")
        futures = [self._pool.submit(fn, *a) for a in args[1:]] if self._pool is not None else []
        try:
            first = fn(*args[0])
        finally:
            wait(futures)  # a barrier: no helper outlives the call, even when the caller's share fails
        return [first, *(f.result() for f in futures)]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
