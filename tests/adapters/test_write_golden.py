"""What a fixed sequence of writes stores on SQLite, held to a golden digest (issue 14):
the write path's speed-ups (analyzer fast path and memos, the splice memo, in-place
verification) must store byte-identical Revisions (encoding, stored bytes, content
hash, lineage), entry versions, head rows and vectors (the deterministic embedder's
memos too). The digest was computed with the
write path as it stood before those changes (commit 4bf800f)."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path

import apsw
import sqlite_vec

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

_WORDS = (
    "painting", "support", "group", "yesterday", "ADR-0005", "v1.2.3", "src/app/main.py",
    "naïve", "café-bar", "中文", "ไทย", "straße", "running", "ponies", "the", "of", "x" * 90,
    "Caroline:", "Melanie:", "LGBTQ", "hiking", "2023", "e\u0301", "’s", "don't", "a--b",
)  # fmt: skip


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


async def _write_sequence(path: Path) -> None:
    rng = random.Random(14)
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 7))
    model = DeterministicEmbedding(16)
    svc = MemoryService(
        # the analyzer the digest was taken with (head rows hold its tokens)
        SQLiteMemoryBackend(str(path), profile=model.profile, analyzer="v1-porter"),
        embedding_model=model,
        clock=lambda: next(clock), entropy=lambda n: rng.randbytes(n),
    )
    try:
        head = await svc.remember(
            entries=[MemoryEntryInput("turn", f"{i} {_text(rng, 12)}") for i in range(30)],
            mode="append")
        for i in range(36):  # past a checkpoint (every 32 Revisions)
            n = 1 if i % 3 else 5
            head = await svc.remember(head, entries=[
                MemoryEntryInput("turn", f"w{i}.{j} {_text(rng, 8)}") for j in range(n)],
                mode="append")
        long = (f"long {_text(rng, 2000)}").encode()[:8000].decode("utf-8", "ignore")
        head = await svc.remember(head, entries=[MemoryEntryInput("turn", long)],
                                  mode="append")
        rev = await svc.revision(head)
        ids = [e.entry_id for e in rev.content.manifest.entries][::7]
        head = await svc.forget(head, ids, reason="golden")
        head = await svc.reactivate(head, ids[:2], reason="golden")
    finally:
        await svc.close()


def _digest(path: Path) -> str:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    h = hashlib.sha256()
    queries = (
        "SELECT revision, family, content_encoding, content, content_hash, lineage "
        "FROM artifact_revisions ORDER BY revision",
        "SELECT entry_id, version, kind, text, source_refs, artifact_refs, "
        "entry_content_hash, created_in_revision FROM memory_entry_versions "
        "ORDER BY created_in_revision, entry_id",
        "SELECT entry_id, head_revision, entry_content_hash, searchable_text "
        "FROM memory_entry_heads ORDER BY entry_id",
        "SELECT h.entry_id, m.embedding_content_hash, v.embedding FROM memory_entry_heads h "
        "JOIN memory_entry_vector_metadata m ON m.projection_id = h.projection_id "
        "JOIN memory_entry_search_vector v ON v.rowid = h.projection_id ORDER BY h.entry_id",
    )
    for q in queries:
        for row in conn.execute(q):
            h.update(repr(row).encode())
    conn.close()
    return h.hexdigest()


GOLDEN = "9bacd7c17a216dac29b257878a0a4f3ffcad2e3f60ed6286c26b9ef64db550e8"


def test_a_fixed_write_sequence_stores_the_golden_bytes(tmp_path: Path) -> None:
    path = tmp_path / "golden.db"
    asyncio.run(_write_sequence(path))
    assert _digest(path) == GOLDEN
