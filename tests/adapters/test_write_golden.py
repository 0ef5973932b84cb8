"""What a fixed sequence of writes stores on SQLite, held to golden digests (issue 14):
the write path's speed-ups (analyzer fast path and memos, the splice memo, in-place
verification, the chunked manifest and the manifest log) must give byte-identical
verified Revisions (canonical content bytes, content hash, lineage), entry versions,
head rows and vectors (the deterministic embedder's memos too).

Three digests: what is verified (every Revision's canonical bytes as ``load_revision``
returns them, with hash and lineage, and the other rows), computed with the write path
as it stood before the manifest log (main 69043ac) and the same still; the stored form
an earlier release writes (Revision rows as deltas and checkpoints: the backend without
the manifest log), computed before the speed-ups of issue 14 (commit 4bf800f); and the
stored form of this release (Revision rows holding their changes, the manifest log's
rows), pinned when the manifest log came, so that any change to it is deliberate."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path

import apsw
import sqlite_vec

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import canonical
from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.service import MemoryService

_WORDS = (
    "painting", "support", "group", "yesterday", "ADR-0005", "v1.2.3", "src/app/main.py",
    "naïve", "café-bar", "中文", "ไทย", "straße", "running", "ponies", "the", "of", "x" * 90,
    "Caroline:", "Melanie:", "LGBTQ", "hiking", "2023", "e\u0301", "’s", "don't", "a--b",
)  # fmt: skip


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


async def _write_sequence(path: Path, *, earlier_release: bool = False) -> None:
    rng = random.Random(14)
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 7))
    model = DeterministicEmbedding(16)
    # the analyzer the digest was taken with (head rows hold its tokens)
    backend = SQLiteMemoryBackend(str(path), profile=model.profile, analyzer="v1-porter")
    if earlier_release:
        backend._manifest_log = None  # Revision rows hold their manifests
    svc = MemoryService(
        backend, embedding_model=model,
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


_REVISION_ROWS = ("SELECT revision, family, content_encoding, content, content_hash, lineage "
                  "FROM artifact_revisions ORDER BY revision")
_OTHER_ROWS = (
    "SELECT entry_id, version, kind, text, source_refs, artifact_refs, "
    "entry_content_hash, created_in_revision FROM memory_entry_versions "
    "ORDER BY created_in_revision, entry_id",
    "SELECT entry_id, head_revision, entry_content_hash, searchable_text "
    "FROM memory_entry_heads ORDER BY entry_id",
    "SELECT h.entry_id, m.embedding_content_hash, v.embedding FROM memory_entry_heads h "
    "JOIN memory_entry_vector_metadata m ON m.projection_id = h.projection_id "
    "JOIN memory_entry_search_vector v ON v.rowid = h.projection_id ORDER BY h.entry_id",
)
_LOG_ROWS = (
    "SELECT entry_id, revision, entry_version_id, entry_content_hash, state "
    "FROM memory_manifest_items ORDER BY revision, entry_id",
    "SELECT revision FROM memory_manifest_baselines ORDER BY revision",
)


def _digest(path: Path, queries: tuple[str, ...]) -> str:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    h = hashlib.sha256()
    for q in queries:
        for row in conn.execute(q):
            h.update(repr(row).encode())
    conn.close()
    return h.hexdigest()


async def _verified(path: Path) -> str:
    """Every Revision as a reader gets it: canonical bytes, content hash, lineage."""
    backend = SQLiteMemoryBackend(str(path))
    h = hashlib.sha256()
    try:
        ((artifact_id, head),) = await backend._run(backend._in_tx, False,
                                                    backend._memory_tables.rows.all_heads)
        for r in range(1, head + 1):
            rev = await backend.load_revision(ArtifactRef(artifact_id, r))
            body = canonical.content_bytes(rev.content)
            assert canonical.artifact_content_hash(body) == rev.content_hash
            h.update(repr((r, body, rev.content_hash,
                           canonical.lineage_bytes(rev.lineage))).encode())
    finally:
        await backend.close()
    return h.hexdigest()


#: main 69043ac, before the manifest log: the verified Revisions and the other rows
VERIFIED = "2cadb27bd9d805413a6ea26733246ad1ad9b989e0917a2088f14eb1d828da52b"
OTHER_ROWS = "0eec1f0bd4401ba8fd5fa7fd156ff3841405460794b58e4d80db4c8716179ed6"
#: commit 4bf800f: every row as an earlier release stores it
GOLDEN = "9bacd7c17a216dac29b257878a0a4f3ffcad2e3f60ed6286c26b9ef64db550e8"
#: this release's stored form: Revision rows and the manifest log
STORED = "0924ef2a0893139afd6e85d4047a43306f3c40059117b06dca3d3a9ca7fa410f"


def test_a_fixed_write_sequence_gives_the_golden_verified_bytes(tmp_path: Path) -> None:
    path = tmp_path / "golden.db"
    asyncio.run(_write_sequence(path))
    assert asyncio.run(_verified(path)) == VERIFIED
    assert _digest(path, _OTHER_ROWS) == OTHER_ROWS
    assert _digest(path, (_REVISION_ROWS, *_LOG_ROWS)) == STORED


def test_an_earlier_release_stores_the_golden_bytes_and_they_read_the_same(
        tmp_path: Path) -> None:
    path = tmp_path / "golden.db"
    asyncio.run(_write_sequence(path, earlier_release=True))
    assert _digest(path, (_REVISION_ROWS, *_OTHER_ROWS)) == GOLDEN
    assert asyncio.run(_verified(path)) == VERIFIED
