"""The Revision cache keeps the heads of many Memories searched together (a regression:
caching whole delta chains evicted them and every search decoded every chain again)."""

from __future__ import annotations

import asyncio

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService


def test_searching_many_memories_decodes_each_head_once(tmp_path, monkeypatch):
    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(tmp_path / "m.db")))
        try:
            heads = []
            for m in range(10):
                ref = None
                for r in range(20):  # Revision 20: a delta chain of 19 below a checkpoint
                    ref = await svc.remember(ref, entries=(
                        MemoryEntryInput("fact", f"memory {m} note {r} alpha"),))
                heads.append(ref)
            await svc.close()
            cold = SQLiteMemoryBackend(str(tmp_path / "m.db"))
            svc2 = MemoryService(cold)
            decoded = []
            original = cold._revisions.decode_row

            def counting(row, base):
                decoded.append((row.artifact_id, row.revision))
                return original(row, base)

            monkeypatch.setattr(cold._revisions, "decode_row", counting)
            first = await svc2.search("alpha", heads, limit=50, mode="fts")
            assert len(first.hits) == 50
            assert len(decoded) == 10 * 20  # each chain decoded once, cold
            decoded.clear()
            for _ in range(3):
                await svc2.search("alpha note", heads, limit=50, mode="fts")
            assert decoded == []  # every head stays cached
            await svc2.close()
        finally:
            await svc.close()

    asyncio.run(body())


def _parsed(artifact_id: str, revision: int, items: int):
    """A real, validated Revision of ``items`` active entries (parsed from its row)."""
    from powercontext.adapters.revision_cache import MEMORY_FAMILY, RevisionCache
    from powercontext.adapters.storage import RevisionRow
    from powercontext.core import canonical
    from powercontext.core.models import (
        MemoryChange,
        MemoryContent,
        MemoryManifest,
        MemoryManifestEntry,
        RevisionLineage,
    )

    entries = tuple(MemoryManifestEntry(f"e{i:06d}", f"v{i:06d}", "0" * 64, "active")
                    for i in range(items))
    content = MemoryContent(MemoryManifest(entries),
                            (MemoryChange("add", "e000000", None, "v000000"),))
    body = canonical.content_bytes(content)
    row = RevisionRow(artifact_id, revision, MEMORY_FAMILY, body,
                      canonical.artifact_content_hash(body),
                      canonical.lineage_bytes(RevisionLineage()))
    return RevisionCache.parse_row(row)


def test_the_revision_cache_keeps_at_most_its_revisions_least_recent_out_first():
    from powercontext.adapters.revision_cache import RevisionCache

    cache = RevisionCache(max_revisions=3, max_items=1000)
    for r in range(1, 4):
        cache.put(("m", r), _parsed("m", r, 1))
    assert cache.get(("m", 1)) is not None  # now the most recent
    cache.put(("m", 4), _parsed("m", 4, 1))
    assert len(cache) == 3
    assert cache.get(("m", 2)) is None
    assert [cache.get(("m", r)) is not None for r in (1, 3, 4)] == [True, True, True]


def test_the_revision_cache_bounds_its_manifest_items_but_keeps_the_last_put():
    from powercontext.adapters.revision_cache import MAX_ITEMS, MAX_REVISIONS, RevisionCache

    assert (MAX_REVISIONS, MAX_ITEMS) == (64, 400_000)  # the bounds of the backends' cache
    cache = RevisionCache(max_revisions=64, max_items=10)
    cache.put(("a", 1), _parsed("a", 1, 4))
    cache.put(("b", 1), _parsed("b", 1, 4))
    cache.put(("c", 1), _parsed("c", 1, 4))  # 12 items: the least recent goes
    assert cache.get(("a", 1)) is None and len(cache) == 2
    cache.put(("big", 1), _parsed("big", 1, 50))  # over the bound alone: kept alone
    assert len(cache) == 1 and cache.get(("big", 1)) is not None
    cache.clear()
    assert len(cache) == 0


def test_every_backend_owns_its_own_revision_cache(tmp_path):
    from powercontext.adapters.revision_cache import RevisionCache

    a = SQLiteMemoryBackend(str(tmp_path / "a.db"))
    b = SQLiteMemoryBackend(str(tmp_path / "b.db"))
    assert isinstance(a._revisions, RevisionCache)
    assert a._revisions is not b._revisions
