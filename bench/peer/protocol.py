"""The peer benchmark's protocol, run the same way on both sides (standard library only).

This module is imported by our process (``bench.peer.protocol``) AND by the peer's driver
(``bench/peer/driver.py``, run by ``.venv-peer/bin/python``, which imports it as the
top-level module ``protocol``): it must never import ``powercontext`` or anything
outside the standard library, so the same timing loop drives our library and the
upstream package.

A *store* is one side's memory on one fresh SQLite database file (:class:`Store`). The
protocol, per size N (:func:`run_perf`), runs every side at once, call by call
interleaved (ours, peer, then peer, ours, ...), so both see the same machine load:

1. load N entry texts in batches of 100 through the store's write path;
2. fts search: each query once untimed (warm), then ``search_runs`` passes over the
   queries, each search timed (ms);
3. database size: the bytes of the database file and its WAL (so the size is that of
   exactly N entries);
4. remember +1: ``write_runs`` writes of one fresh entry, each timed;
5. remember +100: ``batch_runs`` writes of 100 fresh entries, each timed;
6. forget 1: ``write_runs`` forgets of one loaded entry each (the store picks them,
   untimed, spread over the load: :meth:`Store.pick_forget`), each timed. Only forget:
   the peer's public API has no revise of an entry (its Atomic Memory's content is
   fixed per Artifact; ``merge`` and ``restore`` are other operations).

Every timed step is bounded by ``cell_budget_s`` (the slower side's summed time): a cut
step reports fewer samples (``n``, the same on both sides), never a missing size. A time
is ``time.perf_counter`` around one awaited call, taken by the process that makes the
call (the peer's driver times its own calls, so the pipe between us is not counted).
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
    order; equal texts may share a key); ``search`` returns hit keys, best first. A
    store in another process also has ``timed_call(op, *args) -> (result, ms)``."""

    async def add(self, texts: Sequence[str]) -> list[str]: ...

    async def search(self, query: str, limit: int) -> list[str]: ...

    async def pick_forget(self, n: int) -> None:
        """Choose ``n`` distinct loaded entries, spread over the load, for the next
        ``forget_next`` calls (untimed: whatever a caller holds to name an entry)."""

    async def forget_next(self) -> None:
        """Forget the next chosen entry (one write)."""

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


async def timed(store: Store, op: str, *args: Any) -> tuple[Any, float]:
    """``(result, ms)`` of ``store.<op>(*args)``. A store in another process times the
    call itself (``timed_call(op, *args)``, so the pipe is not counted); otherwise the
    time is ``perf_counter`` around the awaited call."""
    remote = getattr(store, "timed_call", None)
    if remote is not None:
        result, ms = await remote(op, *args)
        return result, float(ms)
    t0 = time.perf_counter()
    result = await getattr(store, op)(*args)
    return result, (time.perf_counter() - t0) * 1000.0


async def interleaved(
    stores: Sequence[Store], op: str, calls: Sequence[tuple[Any, ...]], budget_s: float
) -> tuple[list[list[float]], list[list[Any]]]:
    """Each call of ``calls`` on every store in turn (the first store alternates, so
    neither side always goes first); per store its times (ms) and results. Stops (after
    the first call) once one store's summed time reaches ``budget_s``, so every store
    has the same number of samples."""
    times: list[list[float]] = [[] for _ in stores]
    results: list[list[Any]] = [[] for _ in stores]
    spent = [0.0 for _ in stores]
    for i, args in enumerate(calls):
        if i and max(spent) >= budget_s * 1000.0:
            break
        order = list(range(len(stores)))
        if i % 2:
            order.reverse()
        for j in order:
            result, ms = await timed(stores[j], op, *args)
            times[j].append(ms)
            results[j].append(result)
            spent[j] += ms
    return times, results


async def run_perf(
    opens: Sequence[Callable[[int], Awaitable[Store]]],
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
    labels: Sequence[str],
) -> list[list[dict[str, Any]]]:
    """The protocol at each size in ``sizes`` on every side at once (``opens[j]`` opens
    side ``j``'s fresh store of a size), call by call interleaved, so the sides see the
    same machine load: per side, one row per size with ``load``, ``search_fts``,
    ``remember_1``, ``remember_100``, ``forget_1`` and ``db_bytes`` (see the module docstring).
    ``texts`` holds at least ``max(sizes)`` distinct entry texts, ``fresh`` at least
    ``write_runs + 100 * batch_runs`` texts distinct from them."""
    need = write_runs + WRITE_BATCH * batch_runs
    if len(texts) < max(sizes) or len(fresh) < need:
        raise ValueError(f"need {max(sizes)} texts and {need} fresh texts")
    rows: list[list[dict[str, Any]]] = [[] for _ in opens]
    for size in sizes:
        stores: list[Store] = []
        try:
            for open_store in opens:
                stores.append(await open_store(size))
            got = await _one_size(
                stores, size, texts[:size], fresh, queries, search_runs, write_runs,
                batch_runs, limit, cell_budget_s, labels,
            )
            for j, row in enumerate(got):
                rows[j].append(row)
        finally:
            for store in stores:
                await store.close()
    return rows


async def _one_size(
    stores: Sequence[Store], size: int, texts: Sequence[str], fresh: Sequence[str],
    queries: Sequence[str], search_runs: int, write_runs: int, batch_runs: int,
    limit: int, cell_budget_s: float, labels: Sequence[str],
) -> list[dict[str, Any]]:
    names = "/".join(labels)
    log(f"{names}: loading {size} entries in batches of {LOAD_BATCH}, interleaved")
    batches = [(texts[i : i + LOAD_BATCH],) for i in range(0, size, LOAD_BATCH)]
    load_ms, _ = await interleaved(stores, "add", batches, float("inf"))
    log(f"  loaded {size}: " + ", ".join(
        f"{lb} {sum(t) / 1e3:.1f} s" for lb, t in zip(labels, load_ms, strict=True)))
    # warm: every query once on every side, untimed (bounded too)
    _, warm = await interleaved(stores, "search", [(q, limit) for q in queries],
                                cell_budget_s / 4)
    calls = [(q, limit) for _ in range(search_runs) for q in queries]
    search_ms, _ = await interleaved(stores, "search", calls, cell_budget_s)
    db_bytes = [store.size_bytes() for store in stores]
    ones_ms, _ = await interleaved(stores, "add", [([t],) for t in fresh[:write_runs]],
                                   cell_budget_s)
    rest = fresh[write_runs:]
    hundreds = [(rest[b * WRITE_BATCH : (b + 1) * WRITE_BATCH],) for b in range(batch_runs)]
    hundreds_ms, _ = await interleaved(stores, "add", hundreds, cell_budget_s)
    for store in stores:
        await store.pick_forget(write_runs)
    forgets_ms, _ = await interleaved(stores, "forget_next", [() for _ in range(write_runs)],
                                      cell_budget_s)
    rows = []
    for j, label in enumerate(labels):
        search = summary(search_ms[j], len(calls))
        search["mean_hits_warm"] = round(sum(map(len, warm[j])) / max(1, len(warm[j])), 2)
        r1, r100 = summary(ones_ms[j], write_runs), summary(hundreds_ms[j], batch_runs)
        f1 = summary(forgets_ms[j], write_runs)
        load_s = sum(load_ms[j]) / 1e3
        log(f"  {label} at {size}: fts p50 {search['p50_ms']} p95 {search['p95_ms']} ms "
            f"(n={search['n']}); remember +1 p50 {r1['p50_ms']} ms (n={r1['n']}), +100 p50 "
            f"{r100['p50_ms']} ms (n={r100['n']}); forget 1 p50 {f1['p50_ms']} ms "
            f"(n={f1['n']}); {db_bytes[j] / 1e6:.1f} MB")
        rows.append({
            "entries": size,
            "load_s": round(load_s, 3),
            "load_entries_per_s": round(size / load_s, 1) if load_s else None,
            "search_fts": search,
            "remember_1": r1,
            "remember_100": r100,
            "forget_1": f1,
            "db_bytes": db_bytes[j],
            "bytes_per_entry": round(db_bytes[j] / size, 1),
        })
    return rows


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
