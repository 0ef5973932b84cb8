"""The peer benchmark's protocol, run the same way on both sides (standard library only).

This module is imported by our process (``bench.peer.protocol``) AND by the peer's driver
(``bench/peer/driver.py``, run by ``.venv-peer/bin/python``, which imports it as the
top-level module ``protocol``): it must never import ``powercontext`` or anything
outside the standard library, so the same timing loop drives our library and the
upstream package.

A *store* is one side's memory on one fresh SQLite database file (:class:`Store`). The
protocol, per size N (:func:`run_perf`):

1. load N entry texts in batches of ``batch`` (100) through the store's write path;
2. fts search: each query once untimed (warm), then ``search_runs`` passes over the
   queries, each search timed (ms); a pass that would exceed ``cell_budget_s`` stops
   early, and ``n`` says how many searches were timed;
3. remember +1: ``write_runs`` writes of one fresh entry, each timed;
4. remember +100: ``batch_runs`` writes of 100 fresh entries, each timed;
5. database size: the bytes of the database file and its WAL (after step 2, so the
   size is that of exactly N entries).

Every timed step is bounded by ``cell_budget_s``: a slow side reports fewer samples
(``n``), never a missing size. Times are ``time.perf_counter`` around one awaited call.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

#: Entries per load batch (the perf benchmark's one-Memory batch).
LOAD_BATCH = 100
#: Entries per timed batch write ("remember +100").
WRITE_BATCH = 100


class Store(Protocol):
    """One side's memory on a fresh SQLite file. ``add`` returns one key per text (in
    order; equal texts may share a key); ``search`` returns hit keys, best first."""

    async def add(self, texts: Sequence[str]) -> list[str]: ...

    async def search(self, query: str, limit: int) -> list[str]: ...

    def size_bytes(self) -> int: ...

    async def close(self) -> None: ...


def log(msg: str) -> None:
    print(f"[peer-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; ValueError when empty."""
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(samples: Sequence[float], wanted: int) -> dict[str, Any]:
    """``{"p50_ms", "p95_ms", "n", "wanted"}``; p50/p95 are None when ``n`` is 0."""
    if not samples:
        return {"p50_ms": None, "p95_ms": None, "n": 0, "wanted": wanted}
    return {
        "p50_ms": round(percentile(samples, 50), 3),
        "p95_ms": round(percentile(samples, 95), 3),
        "n": len(samples),
        "wanted": wanted,
    }


def file_bytes(path: str) -> int:
    """Bytes of a SQLite database file plus its ``-wal`` (0 for a missing file), after a
    ``wal_checkpoint(TRUNCATE)`` through a separate stdlib connection (what closing the
    last connection does; the content does not change). Both sides are measured so."""
    import sqlite3

    if os.path.exists(path):
        try:
            conn = sqlite3.connect(path, timeout=5.0)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # a reader pinned the WAL: it is counted as it is
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.path.getsize(path + suffix)
    return total


async def timed_calls(
    calls: Sequence[Callable[[], Awaitable[Any]]], budget_s: float
) -> list[float]:
    """Run ``calls`` in order, timing each (ms); stop (after at least one) once the
    elapsed time reaches ``budget_s``."""
    out: list[float] = []
    start = time.perf_counter()
    for call in calls:
        if out and time.perf_counter() - start >= budget_s:
            break
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


async def run_perf(
    open_store: Callable[[int], Awaitable[Store]],
    *,
    sizes: Sequence[int],
    texts: Sequence[str],
    fresh: Sequence[str],
    queries: Sequence[str],
    search_runs: int,
    write_runs: int,
    batch_runs: int,
    limit: int,
    cell_budget_s: float,
    label: str,
) -> list[dict[str, Any]]:
    """The protocol at each size in ``sizes``: one row per size with ``load``, ``search``,
    ``remember_1``, ``remember_100`` and ``db_bytes`` (see the module docstring).
    ``texts`` holds at least ``max(sizes)`` distinct entry texts, ``fresh`` at least
    ``write_runs + 100 * batch_runs`` texts distinct from them."""
    need = write_runs + WRITE_BATCH * batch_runs
    if len(texts) < max(sizes) or len(fresh) < need:
        raise ValueError(f"need {max(sizes)} texts and {need} fresh texts")
    rows = []
    for size in sizes:
        store = await open_store(size)
        try:
            rows.append(
                await _one_size(
                    store, size, texts[:size], fresh, queries, search_runs, write_runs,
                    batch_runs, limit, cell_budget_s, label,
                )
            )
        finally:
            await store.close()
    return rows


async def _one_size(
    store: Store, size: int, texts: Sequence[str], fresh: Sequence[str],
    queries: Sequence[str], search_runs: int, write_runs: int, batch_runs: int,
    limit: int, cell_budget_s: float, label: str,
) -> dict[str, Any]:
    log(f"{label}: loading {size} entries in batches of {LOAD_BATCH}")
    t0 = time.perf_counter()
    last = t0
    for i in range(0, size, LOAD_BATCH):
        await store.add(texts[i : i + LOAD_BATCH])
        if time.perf_counter() - last > 15:
            last = time.perf_counter()
            log(f"  {label}: {i + LOAD_BATCH}/{size} entries, {last - t0:.0f} s")
    load_s = time.perf_counter() - t0
    log(f"  {label}: loaded {size} in {load_s:.1f} s")
    hits = 0
    warm_start = time.perf_counter()
    for q in queries:  # warm: every query once, untimed (bounded too)
        hits += len(await store.search(q, limit))
        if time.perf_counter() - warm_start > cell_budget_s / 4:
            break
    samples: list[float] = []
    start = time.perf_counter()
    for _ in range(search_runs):
        left = cell_budget_s - (time.perf_counter() - start)
        if samples and left <= 0:
            break
        samples += await timed_calls(
            [lambda q=q: store.search(q, limit) for q in queries], max(left, 0.0)
        )
    search = summary(samples, search_runs * len(queries))
    search["mean_hits_warm"] = round(hits / max(1, len(queries)), 2)
    log(f"  {label}: fts p50 {search['p50_ms']} p95 {search['p95_ms']} ms (n={search['n']})")
    db_bytes = store.size_bytes()
    ones = await timed_calls(
        [lambda t=t: store.add([t]) for t in fresh[:write_runs]], cell_budget_s
    )
    rest = fresh[write_runs:]
    batches = [rest[b * WRITE_BATCH : (b + 1) * WRITE_BATCH] for b in range(batch_runs)]
    hundreds = await timed_calls([lambda b=b: store.add(b) for b in batches], cell_budget_s)
    r1, r100 = summary(ones, write_runs), summary(hundreds, batch_runs)
    log(f"  {label}: remember +1 p50 {r1['p50_ms']} ms (n={r1['n']}), +100 p50 "
        f"{r100['p50_ms']} ms (n={r100['n']}); {db_bytes / 1e6:.1f} MB at {size}")
    return {
        "entries": size,
        "load_s": round(load_s, 2),
        "load_entries_per_s": round(size / load_s, 1) if load_s else None,
        "search_fts": search,
        "remember_1": r1,
        "remember_100": r100,
        "db_bytes": db_bytes,
        "bytes_per_entry": round(db_bytes / size, 1),
    }


async def run_ranking(
    open_store: Callable[[int], Awaitable[Store]],
    conversations: Sequence[dict[str, Any]],
    limit: int,
    label: str,
) -> list[list[list[int]]]:
    """Per conversation (``{"texts": [...], "questions": [...]}``; texts distinct), a
    fresh store holding its texts (batches of :data:`LOAD_BATCH`), then per question the
    indexes into ``texts`` of the top ``limit`` fts hits, best first."""
    out: list[list[list[int]]] = []
    for n, conv in enumerate(conversations):
        store = await open_store(n)
        try:
            texts = list(conv["texts"])
            index: dict[str, int] = {}
            for i in range(0, len(texts), LOAD_BATCH):
                keys = await store.add(texts[i : i + LOAD_BATCH])
                for j, key in enumerate(keys):
                    index.setdefault(key, i + j)
            ranked = []
            for q in conv["questions"]:
                ranked.append([index[k] for k in await store.search(q, limit) if k in index])
            out.append(ranked)
            log(f"{label}: conversation {n + 1}/{len(conversations)} ranked "
                f"({len(texts)} entries, {len(ranked)} questions)")
        finally:
            await store.close()
    return out
