"""cProfile of remember-1 and fts search (main thread and the backend's worker thread)."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench.perf.common import LIMIT, fresh_entries
from bench.perf.measure import Dataset
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

_IDLE = ("method 'poll' of 'select.epoll'", "method 'get' of '_queue.SimpleQueue'")


def _top(prof: cProfile.Profile, ops: int, k: int = 10) -> list[dict[str, Any]]:
    """The ``k`` functions with the most own time, per operation (idle waits left out)."""
    stats: Any = pstats.Stats(prof)
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        label = func if file == "~" else f"{os.path.basename(file)}:{line}({func})"
        if any(x in label for x in _IDLE):
            continue
        rows.append((tt, ct, nc, label))
    rows.sort(reverse=True)
    return [
        {
            "function": label,
            "calls_per_op": nc / ops,
            "own_ms_per_op": tt * 1e3 / ops,
            "cum_ms_per_op": ct * 1e3 / ops,
        }
        for tt, ct, nc, label in rows[:k]
    ]


async def _profiled(
    svc: MemoryService, body: Callable[[], Awaitable[None]], ops: int, top: int = 25
) -> dict[str, Any]:
    """cProfile of ``body`` (``ops`` operations) on the main thread and on the backend's
    worker thread: pstats text (tottime, cumulative) and a short per-op summary."""
    backend: Any = svc.backend
    main_prof, worker_prof = cProfile.Profile(), cProfile.Profile()
    sql: dict[str, list[float]] = {}
    # Every statement of a backend goes through one method of its engine (SQLite
    # ``rows``, OceanBase ``_exec`` / ``_exec_many``): wrap it on the engine instance
    # while profiling.
    engine: Any = getattr(backend, "sqlite_engine", None)
    patched = ["rows"] if engine is not None else []
    if engine is None and hasattr(backend, "ob_engine"):
        engine, patched = backend.ob_engine, ["_exec", "_exec_many"]

    def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(statement: str, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(statement, *args, **kwargs)
            finally:
                entry = sql.setdefault(" ".join(statement.split())[:120], [0, 0.0])
                entry[0] += 1
                entry[1] += (time.perf_counter() - t) * 1e3

        return wrapper

    for name in patched:
        setattr(engine, name, timed(getattr(engine, name)))
    await backend._run(worker_prof.enable)
    t0 = time.perf_counter()
    main_prof.enable()
    try:
        await body()
    finally:
        main_prof.disable()
        wall = time.perf_counter() - t0
        await backend._run(worker_prof.disable)
        for name in patched:
            delattr(engine, name)  # back to the class's method
    out: dict[str, Any] = {"ops": ops, "wall_ms_per_op_profiled": wall * 1e3 / max(1, ops)}
    n = max(1, ops)
    out["sql_top"] = [
        {"statement": k, "calls_per_op": c / n, "ms_per_op": t / n}
        for k, (c, t) in sorted(sql.items(), key=lambda kv: -kv[1][1])[:10]
    ]
    for name, prof in (("main", main_prof), ("worker", worker_prof)):
        for key in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(top)
            out[f"{name}_{key}"] = buf.getvalue()
        out[f"{name}_top"] = _top(prof, max(1, ops))
    return out


async def profile_ops(
    ds: Dataset, turns: Sequence[str], queries: Sequence[str], runs: int
) -> dict[str, dict[str, Any]]:
    svc: MemoryService = ds.svc
    fresh = fresh_entries(turns, runs, "p")
    state = {"head": ds.heads[0]}

    async def remember() -> None:
        for t in fresh:
            state["head"] = await svc.remember(
                state["head"], entries=[MemoryEntryInput("turn", t)], mode="append"
            )

    async def fts() -> None:
        for q in queries:
            await svc.search(q, [state["head"]], limit=LIMIT, mode="fts")

    out = {
        "remember_1": await _profiled(svc, remember, len(fresh)),
        "fts_search": await _profiled(svc, fts, len(queries)),
    }
    ds.heads[0] = state["head"]
    return out


# ---------------------------------------------------------------------- local model
