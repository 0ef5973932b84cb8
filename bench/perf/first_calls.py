"""The first calls, as figures of their own: the first search of a new process (a new
service on the same database, nothing cached), a second one (warm), the first search
after this process's own write and the first after another process's write; and the
same four for a remember of one short entry (mode ``remember``: the first write of a
new process reads the head's manifest, from its packs).

A new process is a new service in this process: the imports a real new process pays
once (the secret scanner's detectors, numpy for the IVF index) are not in these
figures, which measure what scales with the Memory.

Each call is timed by CPU time (``time.process_time``: this process only, so on seekdb
the server's share is not in it) and by wall time; the machine may be shared, so CPU
time is the figure to compare."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench.perf.common import LIMIT, fresh_entries, log
from bench.perf.engines import Engine
from bench.perf.measure import Dataset
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

__all__ = ["bench_first_calls"]


async def _timed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(CPU ms, wall ms) of one call."""
    c0, w0 = time.process_time(), time.perf_counter()
    await fn()
    return (time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3


async def bench_first_calls(engine: Engine, ds: Dataset, turns: Sequence[str],
                            queries: Sequence[str], salt: int) -> list[dict[str, Any]]:
    """One row per search mode (fts, hybrid) on a one-Memory dataset: the first search of
    a new service, a warm one, the first after its own write and the first after a write
    by another service (changes the dataset's head)."""
    rows: list[dict[str, Any]] = []
    svc: MemoryService = ds.svc
    texts = iter(fresh_entries(turns, 4, f"first{salt}"))
    q = queries[0]
    for mode in ("fts", "hybrid"):
        fresh = engine.reopen(svc)
        try:
            row: dict[str, Any] = {"engine": engine.name, "entries": ds.entries, "mode": mode}

            async def search(s: MemoryService = fresh, mode: str = mode) -> None:
                await s.search(q, ds.heads, limit=LIMIT, mode=mode)

            row["new_process"] = await _timed(search)
            row["warm"] = await _timed(search)
            ds.heads[0] = await fresh.remember(
                ds.heads[0], entries=[MemoryEntryInput("turn", next(texts))], mode="append")
            row["after_own_write"] = await _timed(search)
            ds.heads[0] = await svc.remember(
                ds.heads[0], entries=[MemoryEntryInput("turn", next(texts))], mode="append")
            row["after_other_write"] = await _timed(search)
            rows.append(row)
            log(f"  {engine.name} {mode} first calls at {ds.entries} (CPU ms): " + ", ".join(
                f"{k} {row[k][0]:.1f}" for k in
                ("new_process", "warm", "after_own_write", "after_other_write")))
        finally:
            await fresh.close()
    rows.append(await _first_writes(engine, ds, iter(fresh_entries(turns, 5, f"fw{salt}"))))
    return rows


async def _first_writes(engine: Engine, ds: Dataset, texts: Any) -> dict[str, Any]:
    """The ``remember`` row: a new service's first remember of one short entry, its
    second (warm), a third, and its first after another service's write."""
    svc: MemoryService = ds.svc
    fresh = engine.reopen(svc)
    row: dict[str, Any] = {"engine": engine.name, "entries": ds.entries, "mode": "remember"}
    try:
        async def write(s: MemoryService = fresh) -> None:
            ds.heads[0] = await s.remember(
                ds.heads[0], entries=[MemoryEntryInput("turn", next(texts))], mode="append")

        row["new_process"] = await _timed(write)
        row["warm"] = await _timed(write)
        row["after_own_write"] = await _timed(write)
        await write(svc)
        row["after_other_write"] = await _timed(write)
        log(f"  {engine.name} remember first calls at {ds.entries} (CPU ms): " + ", ".join(
            f"{k} {row[k][0]:.1f}" for k in
            ("new_process", "warm", "after_own_write", "after_other_write")))
    finally:
        await fresh.close()
    return row
