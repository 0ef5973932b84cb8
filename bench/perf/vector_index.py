"""Recall@10 and hybrid latency of the SQLite vector channel's IVF index against the exact
scan, on one Memory of LoCoMo-derived entries embedded by the local model
(adapters/sqlite/vector_index.py; docs/benchmarks.md, "Vector index (IVF)").

    .venv/bin/python -m bench.perf.vector_index --entries 100000
    .venv/bin/python -m bench.perf.vector_index --entries 100000 --real 50000   # see below

The entries are :func:`bench.perf.common.make_entries` (every LoCoMo turn, then the turns
again with a repetition tag) and the queries a seeded sample of the LoCoMo questions.
Vectors come from the local model (all-MiniLM-L6-v2) through the disk cache of
:mod:`bench.vector_cache` (``--cache``), so a second run embeds nothing. With ``--real
N`` only the first N entries are embedded and each later one is a synthetic extension:
the model's vector of an earlier entry of the same turn plus Gaussian noise whose norm is
the median distance between two embedded repetitions of one turn, normalised (said in
the output).

One SQLite file is loaded through the library (``remember`` in batches of 1,000, so the
commits grow the lists by splits as a user's would), then ``memory rebuild``'s training
is timed on its own (``--no-train``: the lists the writes grew are searched instead).
Two services open the file: ``vector_index="exact"`` and ``"auto"``; the
queries run interleaved (hybrid, vector and fts, limit 10), timed as wall clock and as
the process's CPU time (the search runs in the backend's worker thread; CPU time is the
steadier figure on a shared machine). recall@10: the share of the exact 10 nearest
(vec0 float KNN) that the channel's first query (k = 64) places in its first 10, counted
by distance so that equal distances count alike. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from bench.perf.common import DEFAULT_DATA, load_corpus, make_entries
from bench.vector_cache import DiskCachedModel
from powercontext.core.models import ArtifactRef, EmbeddingResult, MemoryEntryInput

K = 10


class _Vectors:
    """An EmbeddingModel answering from a dict of precomputed vectors."""

    def __init__(self, profile: Any, vectors: dict[str, Any]) -> None:
        self.profile = profile
        self.vectors = vectors

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        return EmbeddingResult(tuple(self.vectors[t] for t in texts))


async def _embed(model: Any, texts: list[str]) -> list[Any]:
    out: list[Any] = []
    for i in range(0, len(texts), 512):
        out.extend((await model.embed(tuple(texts[i:i + 512]))).vectors)
    return out


def _extend(texts: list[str], real: dict[str, Any], turns: list[str], seed: int) -> str:
    """Fill ``real`` for every text: a synthetic extension (module docstring). Returns
    how it was made."""
    import numpy as np

    missing = [t for t in texts if t not in real]
    if not missing:
        return "every vector from the model"
    base_of = {t: t.split(" xr", 1)[0] for t in texts}
    pairs = [(t, base_of[t]) for t in texts if t in real and base_of[t] != t
             and base_of[t] in real]
    gaps = [float(np.linalg.norm(np.asarray(real[a]) - np.asarray(real[b])))
            for a, b in pairs[:2000]]
    gap = statistics.median(gaps) if gaps else 0.05
    rng = np.random.default_rng(seed)
    by_turn: dict[str, list[str]] = {}
    for t in texts:
        if t in real:
            by_turn.setdefault(base_of[t], []).append(t)
    dim = len(next(iter(real.values())))
    for t in missing:
        pool = by_turn.get(base_of[t]) or [base_of[t]]
        v = np.asarray(real[pool[int(rng.integers(len(pool)))]])
        v = v + rng.standard_normal(dim) * (gap / np.sqrt(dim))
        real[t] = tuple(float(x) for x in v / np.linalg.norm(v))
    return (f"{len(texts) - len(missing)} vectors from the model, {len(missing)} synthetic "
            f"(a model vector of the same turn + Gaussian noise of norm {gap:.4f}, the "
            f"median distance between two embedded repetitions of a turn)")


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] * 1000


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from powercontext.adapters.embedding.local import LocalEmbedding
    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.service import MemoryService
    from powercontext.sql import sqlite as frag

    turns, questions = load_corpus(Path(args.data))
    texts = make_entries(turns, args.entries)
    qs = random.Random(3).sample(questions, min(args.queries, len(questions)))
    inner: Any = LocalEmbedding()
    if args.model == "deterministic":  # no model files (the smoke test)
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        inner = DeterministicEmbedding(384)
    cached = DiskCachedModel(inner, Path(args.cache))
    qvecs = await _embed(cached, qs)
    real_n = min(args.real or args.entries, args.entries)
    vectors = dict(zip(texts[:real_n], await _embed(cached, texts[:real_n]), strict=True))
    made = _extend(texts, vectors, turns, 7)
    model = _Vectors(cached.profile, vectors)

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"ivf-{args.entries}.db"
    reuse = args.reuse and path.exists()
    for suffix in ("", "-wal", "-shm"):
        if not reuse and os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")
    loader = MemoryService(SQLiteMemoryBackend(str(path), profile=model.profile),
                           embedding_model=model)
    t0 = time.perf_counter()
    ref = None
    if reuse:  # the file a previous run loaded: its one Memory at its head
        b0: Any = loader.backend
        (aid, rev), = await b0._run(b0._in_tx, False, lambda: b0.sqlite_engine.rows(
            "SELECT memory_artifact_id, max(head_revision) FROM memory_entry_heads"))
        ref = ArtifactRef(str(aid), int(rev))
    for i in range(0, 0 if reuse else len(texts), 1000):
        ref = await loader.remember(ref, mode="append", entries=[
            MemoryEntryInput("turn", t) for t in texts[i:i + 1000]])
    load_s = time.perf_counter() - t0
    assert ref is not None
    backend: Any = loader.backend
    scope = frag.scope_token(ref.artifact_id)
    t0 = time.perf_counter()
    index = backend.projection
    if args.no_train:  # search the lists the writes grew
        state = await backend._run(backend._in_tx, False, lambda: index.ivf_index().lists(scope))
    else:
        state = await backend._run(backend._in_tx, True,
                                   lambda: index.ivf_index().train(scope))
    train_s = time.perf_counter() - t0
    await loader.close()

    svcs = {ix: MemoryService(SQLiteMemoryBackend(str(path), profile=model.profile,
                                                  vector_index=ix), embedding_model=model)
            for ix in ("exact", "auto")}
    modes = ("hybrid", "vector", "fts")  # fts: the other channel's share of hybrid
    cells = [f"{mode}/{ix}" for mode in modes for ix in ("exact", "auto")]
    times: dict[str, list[float]] = {c: [] for c in cells}
    cpu: dict[str, list[float]] = {c: [] for c in cells}
    recalls: list[float] = []
    model.vectors.update(zip(qs, qvecs, strict=True))
    for q in qs[:5]:  # warm both (first-call costs are another benchmark's)
        for svc in svcs.values():
            await svc.search(q, (ref,), limit=10, mode="hybrid")
    for run_i in range(args.runs):
        for q, qv in zip(qs, qvecs, strict=True):
            order = ("exact", "auto") if run_i % 2 == 0 else ("auto", "exact")
            for mode in modes:
                for ix in order:
                    t, c = time.perf_counter(), time.process_time()
                    await svcs[ix].search(q, (ref,), limit=10, mode=mode)
                    times[f"{mode}/{ix}"].append(time.perf_counter() - t)
                    cpu[f"{mode}/{ix}"].append(time.process_time() - c)
            if run_i == 0:
                got = {}
                for ix, svc in svcs.items():
                    b: Any = svc.backend
                    got[ix] = await b._run(b._in_tx, False, b.projection.vector_candidates,
                                           [ref.artifact_id], qv, frag.ANN_FIRST_K)
                bound = got["exact"][K - 1].distance + 1e-6
                recalls.append(sum(1 for c in got["auto"][:K] if c.distance <= bound) / K)
    for svc in svcs.values():
        await svc.close()
    beyond = [h - f - v for h, f, v in zip(cpu["hybrid/auto"], cpu["fts/auto"],
                                           cpu["vector/auto"], strict=True)]
    return {
        "benchmark": "sqlite-vector-index", "date": time.strftime("%Y-%m-%d"),
        "entries": args.entries, "queries": len(qs), "runs": args.runs, "vectors": made,
        "load_s": round(load_s, 1), "train_s": round(train_s, 2),
        "lists": state.lists, "nprobe": state.nprobe, "calibrated_recall": state.recall,
        "recall_at_10_mean": round(statistics.mean(recalls), 4),
        "recall_at_10_min": min(recalls),
        "wall_ms": {ix: {"p50": round(_pct(ts, 50), 1), "p95": round(_pct(ts, 95), 1)}
                      for ix, ts in times.items()},
        "cpu_ms": {ix: {"p50": round(_pct(ts, 50), 1), "p95": round(_pct(ts, 95), 1)}
                          for ix, ts in cpu.items()},
        # per query, hybrid's CPU beyond its two channels run alone (fusion, version
        # reads, confirmation: ours), IVF side
        "hybrid_beyond_channels_cpu_ms": {
            "p50": round(_pct(beyond, 50), 1), "p95": round(_pct(beyond, 95), 1)},
        "loadavg": os.getloadavg()[0],
    }


async def grow(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--grow`` figure (module docstring)."""
    from powercontext.adapters.embedding.local import LocalEmbedding
    from powercontext.adapters.sqlite import SQLiteMemoryBackend
    from powercontext.service import MemoryService

    turns, _ = load_corpus(Path(args.data))
    texts = make_entries(turns, args.grow)
    inner: Any = LocalEmbedding()
    if args.model == "deterministic":
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        inner = DeterministicEmbedding(384)
    cached = DiskCachedModel(inner, Path(args.cache))
    real_n = min(args.real or args.grow, args.grow)
    vectors = dict(zip(texts[:real_n], await _embed(cached, texts[:real_n]), strict=True))
    made = _extend(texts, vectors, turns, 7)
    model = _Vectors(cached.profile, vectors)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"grow-{args.grow}.db"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")
    svc = MemoryService(SQLiteMemoryBackend(str(path), profile=model.profile),
                        embedding_model=model)
    wall: list[float] = []
    cpu: list[float] = []
    ref = None
    for text in texts:
        t, c = time.perf_counter(), time.process_time()
        ref = await svc.remember(ref, mode="append", entries=[MemoryEntryInput("turn", text)])
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    await svc.close()
    slowest = sorted(range(len(cpu)), key=lambda i: -cpu[i])[:5]
    return {
        "benchmark": "sqlite-vector-index-growth", "date": time.strftime("%Y-%m-%d %H:%M"),
        "entries": args.grow, "vectors": made,
        "wall_ms": {"p50": round(_pct(wall, 50), 1), "p99": round(_pct(wall, 99), 1),
                    "max": round(max(wall) * 1000, 1)},
        "cpu_ms": {"p50": round(_pct(cpu, 50), 1), "p99": round(_pct(cpu, 99), 1),
                   "max": round(max(cpu) * 1000, 1)},
        "slowest_cpu": [{"size": i + 1, "cpu_ms": round(cpu[i] * 1000, 1),
                         "wall_ms": round(wall[i] * 1000, 1)} for i in slowest],
        "loadavg": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.perf.vector_index",
                                description=(__doc__ or "").split("\n")[0])
    p.add_argument("--entries", type=int, default=100_000)
    p.add_argument("--real", type=int, help="embed only the first N entries (see above)")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--model", choices=("local", "deterministic"), default="local")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--cache", default=".benchcache", help="the vector cache directory")
    p.add_argument("--workdir", default=".benchcache/work")
    p.add_argument("--reuse", action="store_true",
                   help="search the file a previous run of this size loaded (no load)")
    p.add_argument("--no-train", action="store_true",
                   help="search the lists the writes grew (no memory rebuild's training)")
    p.add_argument("--grow", type=int, metavar="N",
                   help="time one-entry writes growing a Memory from 0 to N instead")
    p.add_argument("--out", help="also write the JSON report to this file")
    args = p.parse_args(argv)
    report = asyncio.run(grow(args) if args.grow else run(args))
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
