"""The figures of a built year (see :mod:`bench.year`): each beside the raw engine where
one applies, times in milliseconds.

* **Memory search** on the largest repository's Memory: :func:`bench.perf.measure.
  bench_search` (fts, vector, hybrid; ours = ``MemoryService.search``, raw = the
  engine's own statements over the same tables; 20 queries' hits compared).
* **Topic search** in the largest Scope: :func:`bench.perf.topic.bench_topic_search`
  (ours = ``TopicMemoryService.search``, raw = the engine's own queries, RRF in Python).
* **context/prepare**: :func:`powercontext.context_prepare.prepare_context` (the HTTP
  route's body) on that Scope, in process; no raw counterpart.
* **Prompt hook**: ``powercontext hook claude-code`` as a process per prompt, the
  ``UserPromptSubmit`` of a LoCoMo question from the largest repository's folder, in
  process (``POWERCONTEXT_HOOK_DAEMON=0``) and with ``hook daemon`` running; wall and CPU.
* **Flush to first searchable Topic**: 10 new turns of a made-up subject in the largest
  Scope, ``flush``, then the processor's ``process`` (``topic process --once``) and a
  search that finds them; wall and CPU from the flush to the hit. The 10 turns stay in
  the database (the manifest counts them).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.hooks import _Daemon, percentile
from bench.perf.common import log
from bench.year import build as building
from bench.year import corpus

#: Probe turns per flush measurement.
PROBE_TURNS = 10


def _largest(built: building.Built) -> int:
    return max(range(len(built.entries)), key=lambda r: built.entries[r])


def _summ(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2),
            "n": len(values)}


async def memory_search(built: building.Built, engine: Any, queries: list[str], runs: int
                        ) -> list[dict[str, Any]]:
    from bench.perf.measure import Dataset, bench_search
    from powercontext import open_service

    r = _largest(built)
    svc = open_service(built.db, embedding="deterministic")
    try:
        aid = await svc.memory_key(built.repos[r])
        assert aid is not None, built.repos[r]
        head = await svc.head(aid)
        if hasattr(engine, "_urls"):
            engine._urls[id(svc)] = built.db
        ds = Dataset(built.backend, built.entries[r], 1, building.ENTRY_BATCH, svc=svc,
                     heads=[head])
        rows = await bench_search(engine, ds, queries, runs, engine.model)
    finally:
        await svc.close()
    return rows


async def topic_search(built: building.Built, engine: Any, queries: list[str], runs: int
                       ) -> dict[str, Any]:
    from bench.perf.topic import TopicDataset, bench_topic_search
    from powercontext import open_topic_service

    r = _largest(built)
    tsvc = open_topic_service(built.db, embedding="deterministic")
    try:
        caps = await tsvc.backend.topic_capabilities()
        kind = "hybrid" if "topic_vector" in caps.channels else "fts"
        ds = TopicDataset(built.backend, built.topics, kind, "deterministic",
                          backend=tsvc.backend, model=tsvc.embedding_model, svc=tsvc,
                          scope_id=built.repos[r])
        if hasattr(engine, "_urls"):
            engine._urls[id(tsvc.backend)] = built.db
        row = await bench_topic_search(engine, ds, queries, runs)
        row["scope_topics"] = built.processing[r][2] if built.processing else None
    finally:
        await tsvc.close()
    return row


async def prepare(built: building.Built, queries: list[str], runs: int) -> dict[str, Any]:
    from powercontext import open_service, open_topic_service
    from powercontext.context_prepare import prepare_context

    scope = built.repos[_largest(built)]
    walls: list[float] = []
    cpus: list[float] = []
    items = 0
    async with open_service(built.db, embedding="deterministic") as msvc, \
            open_topic_service(built.db, embedding="deterministic") as tsvc:
        await prepare_context(msvc, tsvc, scope, queries[0])  # warm
        for _ in range(runs):
            for q in queries:
                c, w = time.process_time(), time.perf_counter()
                got = await prepare_context(msvc, tsvc, scope, q)
                walls.append((time.perf_counter() - w) * 1000)
                cpus.append((time.process_time() - c) * 1000)
                items += len(got.items)
    out = _summ(walls)
    out["cpu_p50_ms"] = round(percentile(cpus, 50), 2)
    out["cpu_p95_ms"] = round(percentile(cpus, 95), 2)
    out["mean_items"] = round(items / max(1, len(walls)), 1)
    return out


async def flush_to_searchable(built: building.Built, run_id: str) -> dict[str, Any]:
    from powercontext import open_service, open_topic_processor
    from powercontext.entrypoints.cli.hook_turn import conversation_source

    scope = built.repos[_largest(built)]
    word = f"quorvex{run_id}"
    async with open_service(built.db, embedding="deterministic") as msvc:
        scanner = msvc.secret_scanner
    processor = open_topic_processor(built.db, embedding="deterministic")
    try:
        tsvc = processor.service
        sources = [conversation_source(
            scope_id=scope, agent="claude-code", session=f"probe-{run_id}", turn=f"p{i}",
            prompt=f"How does the {word} cache expire, step {i}?",
            reply=f"The {word} cache expires after the {word} lease ends (step {i}).",
            metadata={}, scanner=scanner) for i in range(PROBE_TURNS)]
        await tsvc.backend.put_scoped_sources(scope, sources)
        c, w = time.process_time(), time.perf_counter()
        await tsvc.flush(scope)
        found = 0
        for _ in range(50):
            await processor.process(scope)
            found = len((await tsvc.search(scope, f"{word} cache", 10)).hits)
            if found:
                break
        wall = (time.perf_counter() - w) * 1000
        cpu = (time.process_time() - c) * 1000
    finally:
        await processor.service.close()
    return {"wall_ms": round(wall, 1), "cpu_ms": round(cpu, 1), "found": found,
            "turns": PROBE_TURNS}


def _hook_once(env: dict[str, str], db: str, repo: Path, prompt: str) -> tuple[float, float,
                                                                               bool]:
    payload = json.dumps({"session_id": "bench-year", "cwd": str(repo),
                          "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "powercontext.entrypoints.cli.entry", "--db",
                           db, "hook", "claude-code"], input=payload, capture_output=True,
                          text=True, env=env, timeout=600)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, "additionalContext" in proc.stdout


def hooks(built: building.Built, data: Path, queries: list[str], runs: int,
          daemon: bool = True) -> tuple[dict[str, Any], list[str]]:
    """The prompt hook, in process and (``daemon``) with ``hook daemon`` running, the
    cases taking turns prompt by prompt."""
    repo = building.repo_dirs(data)[_largest(built)]
    env = building.environment(data)
    env["PYTHONPYCACHEPREFIX"] = str(data / "pycache")
    alone = {**env, "POWERCONTEXT_HOOK_DAEMON": "0"}
    cases = {"in-process": alone}
    served = None
    notes: list[str] = []
    if daemon and built.backend != "sqlite":
        notes.append("hook daemon: not run (it serves a SQLite database file only)")
    elif daemon:
        try:
            served = _Daemon(env, Path(built.db))
            cases["hook daemon"] = env
        except RuntimeError as exc:  # e.g. a socket path over 100 bytes: said, not fatal
            notes.append(f"hook daemon: not run ({exc})")
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    injected = dict.fromkeys(cases, 0)
    try:
        for e in cases.values():  # untimed: the bytecode cache, the daemon's first read
            _hook_once(e, built.db, repo, queries[0])
        for i in range(runs):
            q = queries[i % len(queries)]
            for label, e in cases.items():
                w, c, ok = _hook_once(e, built.db, repo, q)
                times[label].append(w)
                cpus[label].append(c)
                injected[label] += ok
    finally:
        answered = served.stop() if served is not None else 0
    out: dict[str, Any] = {}
    for label in cases:
        out[label] = {**_summ(times[label]), "cpu_p50_ms": round(percentile(cpus[label], 50), 1),
                      "cpu_p95_ms": round(percentile(cpus[label], 95), 1),
                      "injected": injected[label]}
    if served is not None:
        out["hook daemon"]["answered_by_daemon"] = answered
    return out, notes


def db_size(built: building.Built, engine: Any) -> dict[str, Any]:
    if built.backend == "sqlite":
        size = sum(os.path.getsize(p) for p in (built.db, built.db + "-wal")
                   if os.path.exists(p))
        return {"bytes": size}
    try:
        from powercontext import open_service

        svc = open_service(built.db)
        engine._urls[id(svc)] = built.db
        total, _tables = engine.size(svc)
        note = "" if total else ("seekdb keeps fresh rows in memtables until a compaction: "
                                 "no table size yet")
        return {"bytes": total, "note": note}
    except Exception as exc:
        return {"bytes": 0, "note": f"not measured: {exc}"}


def summary_line(rows: list[dict[str, Any]]) -> str:
    return "; ".join(f"{r.get('mode', r.get('shape'))} ours p95 {r['ours_p95_ms']:.1f} raw "
                     f"{r['raw_p95_ms']:.1f}" for r in rows)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


__all__ = ["corpus", "db_size", "flush_to_searchable", "hooks", "log", "memory_search",
           "prepare", "topic_search"]
