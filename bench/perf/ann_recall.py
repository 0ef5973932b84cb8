"""Recall@32 of the SQLite ANN vector channel against exact KNN on LoCoMo turns, with the
local model or the deterministic embedder (issue 14; docs/decisions.md, "SQLite: the
vector channel by ANN").

    .venv/bin/python -m bench.perf.ann_recall --model local            # all 2,760 turns
    .venv/bin/python -m bench.perf.ann_recall --model deterministic --entries 10000

The turns (:func:`bench.perf.common.make_entries`) and 100 sampled questions are embedded
once; the vectors go into an in-memory vec0 float table and its sign-bit sibling (one
partition, chunk 8, as the library makes them). For each candidate count the first pass
takes that many nearest sign-bit vectors by Hamming distance, rescores them by exact L2 and
keeps the 32 nearest; recall = the share of them no farther than the exact 32nd (vec0
float KNN). Prints one line per candidate count; no timing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import struct
from collections.abc import Sequence
from typing import Any

from bench.perf.common import DEFAULT_DATA, load_corpus, make_entries
from powercontext.sql import sqlite as frag

K = 32


def _pack(v: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(v)}f", *v)


async def _embed(model: Any, texts: list[str]) -> list[Sequence[float]]:
    out: list[Sequence[float]] = []
    for i in range(0, len(texts), 256):
        out.extend((await model.embed(tuple(texts[i:i + 256]))).vectors)
    return out


def recall(vectors: list[Sequence[float]], queries: list[Sequence[float]],
           pools: Sequence[int]) -> dict[int, tuple[float, float]]:
    """``{candidates: (mean recall@32, min)}`` over ``queries``."""
    import apsw
    import sqlite_vec

    dim = len(vectors[0])
    c = apsw.Connection(":memory:")
    c.enable_load_extension(True)
    c.load_extension(sqlite_vec.loadable_path())
    c.execute(f"CREATE VIRTUAL TABLE v USING vec0(scope text partition key, "
              f"embedding float[{dim}] distance_metric=l2, chunk_size={frag.VECTOR_CHUNK_SIZE})")
    c.execute(f"CREATE VIRTUAL TABLE b USING vec0(scope text partition key, bits bit[{dim}], "
              f"chunk_size={frag.VECTOR_CHUNK_SIZE})")
    with c:
        c.executemany("INSERT INTO v (rowid, scope, embedding) VALUES (?, 'm', ?)",
                      [(i, _pack(v)) for i, v in enumerate(vectors, 1)])
        c.execute("INSERT INTO b (rowid, scope, bits) "
                  "SELECT rowid, scope, vec_quantize_binary(embedding) FROM v")
    out: dict[int, tuple[float, float]] = {}
    for pool in pools:
        got = []
        for q in map(_pack, queries):
            exact = [d for _, d in c.execute(
                "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ? "
                "AND scope = 'm'", (q, K))]
            ann = [d for _, d in c.execute(
                "WITH cand AS MATERIALIZED (SELECT rowid AS pid FROM b WHERE bits MATCH "
                "vec_quantize_binary(?1) AND k = ?2 AND scope = 'm') SELECT cand.pid, "
                "vec_distance_l2(v.embedding, ?1) AS d FROM cand JOIN v ON v.rowid = cand.pid "
                "ORDER BY d, cand.pid LIMIT ?3", (q, min(pool, frag.MAX_KNN_K), K))]
            bound = max(exact) + 1e-6
            got.append(sum(1 for d in ann if d <= bound) / len(exact))
        out[pool] = (sum(got) / len(got), min(got))
    c.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.perf.ann_recall", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("local", "deterministic"), default="local")
    p.add_argument("--entries", type=int, help="entries (default: every LoCoMo turn once)")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    args = p.parse_args(argv)
    turns, questions = load_corpus(DEFAULT_DATA.__class__(args.data))
    texts = make_entries(turns, args.entries or len(turns))
    qs = random.Random(3).sample(questions, min(args.questions, len(questions)))
    model: Any
    if args.model == "local":
        from powercontext.adapters.embedding.local import LocalEmbedding

        model = LocalEmbedding()
    else:
        from powercontext.adapters.embedding.deterministic import DeterministicEmbedding

        model = DeterministicEmbedding(384)
    vectors = asyncio.run(_embed(model, texts))
    queries = asyncio.run(_embed(model, qs))
    default = frag.ANN_FIRST_K * frag.ANN_OVERFETCH
    for pool, (mean, low) in recall(vectors, queries, (256, default, 1024, 2048)).items():
        mark = " (the library's first query)" if pool == default else ""
        print(f"{args.model} {len(texts)} entries, {len(qs)} questions, {pool} candidates"
              f"{mark}: recall@{K} mean {mean:.4f} min {low:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
