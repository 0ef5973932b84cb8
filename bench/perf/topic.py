"""Topic search p50/p95 against the raw engines (issue 12, "Done means").

For each Topic count (``--topic-sizes``, default 1k in the quick profile, 1k and 10k in
the full one) and each retrieval shape (``fts``: 2 channels; ``hybrid``: 4, with the
deterministic 384-dimension embedder; plus ``hybrid`` with the local all-MiniLM-L6-v2
model at the smallest size when it is installed and ``--no-local-model`` is not given),
a fresh database gets that many Topics of one Scope, built from the LoCoMo
conversations (:mod:`bench.perf.topic_data`) and published through the real path
(``backend.publish``, 100 Topics per TopicPublication, progress on stderr). A database
has one retrieval shape (fixed at its first publication), so each shape is its own
database.

Per LoCoMo question (limit 10): *ours* = the backend's ``search`` end to end (the query
embedding included in hybrid), *raw* = :func:`bench.perf.topic_engines.raw_search`: the
engine's own FTS5 / vec0 (SQLite) or MATCH / l2_distance (seekdb) queries on the same
projection tables, with the same admission, collapse, budget and RRF, written plainly.
Each figure is the median over passes of the pass p50 / p95 (ms); ours and raw alternate
query by query. Untimed, the first 20 queries check that ours and raw return the same
hits (refs and ``matched_by``, at limit 10 and at limit 20).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.perf.common import (
    CELL_BUDGET_S,
    CHECK_QUERIES,
    LIMIT,
    WARM_BUDGET_S,
    _maxrss_mb,
    fit_cell,
    log,
    percentile,
)
from bench.perf.topic_data import (
    TOPIC_BATCH,
    TOPIC_SCOPE,
    Session,
    make_topics,
    publish_topics,
    turn_sources,
)
from bench.perf.topic_engines import RawHit, TopicEngine, raw_search

#: The larger limit the hit check also compares (core.topic.search.MAX_LIMIT).
CHECK_LIMIT = 20


@dataclass
class TopicDataset:
    engine: str
    topics: int
    kind: str  # fts | hybrid
    embedder: str  # "-" (fts), deterministic, local
    batch: int = TOPIC_BATCH
    load_s: float = 0.0
    chunks: int = 0
    db_bytes: int = 0
    bytes_per_topic: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)
    maxrss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    backend: Any = None
    model: Any = None
    #: TopicMemoryService over ``backend`` (None on a tree without it: ours is then
    #: the backend's search with the query embedded here)
    svc: Any = None
    #: the Scope its Topics live in (``bench year`` measures a Scope of its own)
    scope_id: str = TOPIC_SCOPE

    @property
    def label(self) -> str:
        emb = "" if self.embedder in ("-", "deterministic") else f"-{self.embedder}"
        return f"{self.engine}-topics{self.topics}-{self.kind}{emb}"

    def public(self) -> dict[str, Any]:
        keys = ("engine", "topics", "kind", "embedder", "batch", "load_s", "chunks",
                "db_bytes", "bytes_per_topic", "tables", "maxrss_mb")
        d = {k: getattr(self, k) for k in keys}
        d["label"] = self.label
        return d


async def load_topic_dataset(
    engine: TopicEngine, sessions: Sequence[Session], n: int, kind: str, model: Any,
    embedder: str,
) -> TopicDataset:
    """A fresh database of ``n`` Topics in :data:`TOPIC_SCOPE` of retrieval shape
    ``kind`` (``model`` embeds for hybrid; None for fts)."""
    ds = TopicDataset(engine.name, n, kind, embedder if kind == "hybrid" else "-")
    ds.model = model if kind == "hybrid" else None
    ds.backend = engine.new_backend(
        ds.label.removeprefix(f"{engine.name}-"), ds.model.profile if ds.model else None)
    topics = make_topics(sessions, n)
    log(f"{engine.name}: publishing {n} Topics ({kind}, {ds.embedder}) in batches of "
        f"{ds.batch}")
    t0 = time.perf_counter()
    stats: dict[str, int] = {}
    try:
        await publish_topics(
            ds.backend, topics, turn_sources(sessions), scope_id=TOPIC_SCOPE,
            embed=ds.model.embed if ds.model else None,
            profile=ds.model.profile if ds.model else None, batch=ds.batch,
            label=f"{ds.label}: ", stats=stats)
        ds.load_s = time.perf_counter() - t0
        caps = await ds.backend.topic_capabilities()
        want = ("topic_fts", "topic_vector", "detail_fts", "detail_vector") if kind == "hybrid" \
            else ("topic_fts", "detail_fts")
        if tuple(caps.channels) != want:
            raise RuntimeError(f"{ds.label}: the backend searches {caps.channels}, not {want}")
    except BaseException:
        with contextlib.suppress(Exception):
            await ds.backend.close()
        engine.drop(ds.backend)
        raise
    ds.chunks = stats.get("chunks", 0)
    attach_service(ds)
    ds.db_bytes, ds.tables = engine.size(ds.backend)
    ds.bytes_per_topic = ds.db_bytes / n if n else 0.0
    ds.maxrss_mb = _maxrss_mb()
    log(f"  published in {ds.load_s:.1f} s, {ds.db_bytes / 1e6:.1f} MB")
    return ds


def _summary(passes: list[list[float]]) -> dict[str, float]:
    return {
        "p50_ms": statistics.median(percentile(p, 50) for p in passes),
        "p95_ms": statistics.median(percentile(p, 95) for p in passes),
    }


def _ours_key(res: Any) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(h.ref.artifact_id, h.ref.revision, tuple(h.matched_by)) for h in res.hits]


def _raw_key(hits: Sequence[RawHit]) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(h.artifact_id, h.revision, h.matched_by) for h in hits]


def attach_service(ds: TopicDataset) -> None:
    """``ds.svc`` = a TopicMemoryService over the dataset's backend and model, when the
    tree has one (``powercontext.topic_service``)."""
    try:
        from powercontext.topic_service import TopicMemoryService  # type: ignore
    except ImportError:
        return
    ds.svc = TopicMemoryService(ds.backend, ds.model)


async def _ours(ds: TopicDataset, q: str, limit: int) -> Any:
    """Ours: ``TopicMemoryService.search`` end to end (request checks, capabilities,
    query embedding in hybrid, the backend's search); the backend's search alone when
    the tree has no service."""
    from powercontext.core.topic.models import TopicSearchRequest

    if ds.svc is not None:
        return await ds.svc.search(ds.scope_id, q, limit)
    vec = None
    if ds.model is not None:
        (vec,) = (await ds.model.embed((q,))).vectors
    return await ds.backend.search(TopicSearchRequest(ds.scope_id, q, limit), vec)


async def topic_same_hits(
    engine: TopicEngine, ds: TopicDataset, sample: Sequence[tuple[str, Sequence[str], Any]],
    max_chunks: int,
) -> dict[str, Any]:
    """Untimed: for each ``(query, terms, blob)`` of ``sample`` and limits 10 and 20,
    ours and raw return the same hits (artifact_id, revision, matched_by, in order).
    Returns ``{"queries", "mismatches", "examples"}``; a mismatch is logged loudly."""
    bad: list[dict[str, Any]] = []
    for q, terms, blob in sample:
        for limit in (LIMIT, CHECK_LIMIT):
            want = _raw_key(raw_search(engine, ds.scope_id, terms, blob, ds.kind, limit,
                                       max_chunks))
            got = _ours_key(await _ours(ds, q, limit))
            if got != want:
                first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False))
                              if a != b), min(len(got), len(want)))
                bad.append({"query": q, "limit": limit, "ours": len(got), "raw": len(want),
                            "first_difference": first})
                log(f"  !!! MISMATCH {ds.label} limit {limit}: {q!r}: ours {len(got)} hits, "
                    f"raw {len(want)}, first difference at rank {first}")
                break
    return {"queries": len(sample), "mismatches": len(bad), "examples": bad[:5]}


async def bench_topic_search(
    engine: TopicEngine, ds: TopicDataset, queries: Sequence[str], runs: int,
    cell_budget_s: float = CELL_BUDGET_S,
) -> dict[str, Any]:
    """One search cell: ours and raw p50/p95 over ``queries`` x ``runs`` on ``ds``, the
    ratio ours/raw and the hit check (see the module docstring)."""
    from powercontext.core import query as query_bounds
    from powercontext.core.topic.chunks import MAX_CHUNKS

    analyzer = await ds.backend.analyzer()
    prepared = []
    for q in queries:
        blob = None
        if ds.model is not None:
            (vec,) = (await ds.model.embed((q,))).vectors
            blob = engine.vector_param(vec)
        prepared.append((q, query_bounds.search_terms(q, analyzer), blob))
    engine.open_raw(ds.backend)
    try:
        warm_t0 = time.perf_counter()
        warmed = 0
        for q, terms, blob in prepared[:10]:
            await _ours(ds, q, LIMIT)
            raw_search(engine, ds.scope_id, terms, blob, ds.kind, LIMIT, MAX_CHUNKS)
            warmed += 1
            if time.perf_counter() - warm_t0 > WARM_BUDGET_S:
                break
        per_query = (time.perf_counter() - warm_t0) / max(1, warmed)
        cell, cell_runs, cut = fit_cell(prepared, runs, per_query, cell_budget_s, ds.label,
                                        "ours+raw")
        if cut:
            log("  " + cut)
        ours_passes: list[list[float]] = []
        raw_passes: list[list[float]] = []
        hits = 0
        for _ in range(cell_runs):
            ours: list[float] = []
            raw: list[float] = []
            for q, terms, blob in cell:
                t0 = time.perf_counter()
                res = await _ours(ds, q, LIMIT)
                ours.append((time.perf_counter() - t0) * 1000.0)
                hits += len(res.hits)
                t0 = time.perf_counter()
                raw_search(engine, ds.scope_id, terms, blob, ds.kind, LIMIT, MAX_CHUNKS)
                raw.append((time.perf_counter() - t0) * 1000.0)
            ours_passes.append(ours)
            raw_passes.append(raw)
        check = await topic_same_hits(engine, ds, cell[:CHECK_QUERIES], MAX_CHUNKS)
    finally:
        engine.close_raw()
    o, r = _summary(ours_passes), _summary(raw_passes)
    row = {
        "engine": engine.name, "topics": ds.topics, "shape": ds.kind, "embedder": ds.embedder,
        "channels": 4 if ds.kind == "hybrid" else 2,
        "ours_path": "TopicMemoryService.search" if ds.svc is not None else "backend.search",
        "ours_p50_ms": o["p50_ms"], "ours_p95_ms": o["p95_ms"],
        "raw_p50_ms": r["p50_ms"], "raw_p95_ms": r["p95_ms"],
        "ratio_p50": o["p50_ms"] / r["p50_ms"] if r["p50_ms"] else None,
        "ratio_p95": o["p95_ms"] / r["p95_ms"] if r["p95_ms"] else None,
        "queries": len(cell), "runs": cell_runs,
        "mean_hits": hits / max(1, cell_runs * len(cell)), "cut": cut, "check": check,
    }
    log(f"  topic search {ds.label}: ours p50 {o['p50_ms']:.2f} p95 {o['p95_ms']:.2f} | raw "
        f"p50 {r['p50_ms']:.2f} p95 {r['p95_ms']:.2f} ms | same hits "
        f"{check['queries'] - check['mismatches']}/{check['queries']}")
    return row


def topic_shapes(sizes: Sequence[int], local: Any,
                 shapes: Sequence[str] = ("fts", "hybrid", "local")) -> list[tuple[int, str, str]]:
    """The cells to run: ``(topics, shape, embedder)`` for every size and each of
    ``fts`` / ``hybrid`` (deterministic embedder) in ``shapes``, plus hybrid with the
    local model at the smallest size when ``"local"`` is in ``shapes`` and ``local`` (a
    model) is given."""
    cells = [(n, kind, "deterministic") for n in sizes for kind in ("fts", "hybrid")
             if kind in shapes]
    if local is not None and sizes and "local" in shapes:
        cells.append((min(sizes), "hybrid", "local"))
    return cells


async def run_topics(
    engine: TopicEngine, sizes: Sequence[int], sessions: Sequence[Session],
    queries: Sequence[str], runs: int, model: Any, local: Any, result: dict[str, Any],
    cell_budget_s: float = CELL_BUDGET_S, checkpoint: Callable[[], None] = lambda: None,
    shapes: Sequence[str] = ("fts", "hybrid", "local"),
) -> None:
    """Every Topic cell on ``engine``, appended to ``result["topic_datasets"]`` and
    ``result["topic_search"]``; each database is dropped after its cell."""
    for n, kind, embedder in topic_shapes(sizes, local, shapes):
        ds = await load_topic_dataset(engine, sessions, n, kind,
                                      local if embedder == "local" else model, embedder)
        try:
            result["topic_datasets"].append(ds.public())
            row = await bench_topic_search(engine, ds, queries, runs, cell_budget_s)
            result["topic_search"].append(row)
            if row["cut"]:
                result["notes"].append(row["cut"])
            checkpoint()
        finally:
            with contextlib.suppress(Exception):
                await ds.backend.close()
            engine.drop(ds.backend)
