"""The Revision cache keeps the heads of many Memories searched together (a regression:
caching whole delta chains evicted them and every search decoded every chain again), and
a Memory in the manifest log is searched without decoding any whole Revision."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService


def _earlier_release(backend: SQLiteMemoryBackend) -> SQLiteMemoryBackend:
    """A writer as an earlier release wrote: Revision rows hold their manifests (deltas
    and checkpoints), no manifest log."""
    backend._manifest_log = None
    return backend


def test_searching_many_memories_decodes_each_head_once(tmp_path, monkeypatch):
    """Memories an earlier release wrote (delta chains): a cold search decodes each
    head's chain once, later searches none."""
    async def body():
        svc = MemoryService(_earlier_release(SQLiteMemoryBackend(str(tmp_path / "m.db"))))
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

            def counting(row, base, **kw):
                decoded.append((row.artifact_id, row.revision))
                return original(row, base, **kw)

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


def test_a_cold_search_of_logged_memories_decodes_no_revision(tmp_path, monkeypatch):
    """Memories in the manifest log: a search in a new process reads the candidates'
    manifest items from the log (the same hits as a process holding every head), and
    decodes and caches no whole Revision."""
    from powercontext.adapters import manifest_log

    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(tmp_path / "m.db")))
        try:
            heads = []
            for m in range(10):
                ref = None
                for r in range(20):
                    ref = await svc.remember(ref, entries=(
                        MemoryEntryInput("fact", f"memory {m} note {r} alpha"),))
                heads.append(ref)
            rev = await svc.revision(heads[3])
            heads[3] = await svc.forget(heads[3], [rev.content.manifest.entries[4].entry_id])
            warm = await svc.search("alpha note", heads, limit=50, mode="fts")
            cold = SQLiteMemoryBackend(str(tmp_path / "m.db"))
            svc2 = MemoryService(cold)
            decoded = []
            monkeypatch.setattr(manifest_log, "decode",
                                lambda *a: decoded.append(a) or (_ for _ in ()).throw(
                                    AssertionError("a whole Revision was decoded")))
            monkeypatch.setattr(cold._revisions, "decode_row",
                                lambda *a, **k: decoded.append(a))
            got = await svc2.search("alpha note", heads, limit=50, mode="fts")
            assert got.hits == warm.hits and len(got.hits) == 50
            assert decoded == [] and len(cold._revisions) == 0
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



def test_changes_walk_validates_without_caching_revisions_or_pinning_views(tmp_path, monkeypatch):
    """Issue 14 (peak RSS at 100k entries): ``changes(head, since)`` returns each
    Revision's changes, every stored row on the way checked, but caches none of the
    Revisions (the head stays cached) and pins no manifest view on a cached one; both
    the canonical-bytes walk (:mod:`powercontext.adapters.revision_walk`) and its
    fallback over full Revisions; a repeated call decodes nothing."""
    import attrs
    import pytest

    from powercontext.adapters import revision_walk
    from powercontext.core.errors import IntegrityError
    from powercontext.core.manifest import _SUCCESSOR

    async def body():
        svc = MemoryService(_earlier_release(SQLiteMemoryBackend(str(tmp_path / "c.db"))))
        ref = None
        for r in range(40):  # a checkpoint at 32, deltas on both sides of it
            ref = await svc.remember(ref, entries=(MemoryEntryInput("fact", f"note {r} beta"),))
            if r % 7 == 3:  # revisions and deactivations too, not only additions
                rev = await svc.revision(ref)
                ref = await svc.forget(ref, [rev.content.manifest.entries[0].entry_id],
                                       reason=f'a "quoted" ],"manifest" reason {r}')
        assert ref is not None
        await svc.close()
        cold = SQLiteMemoryBackend(str(tmp_path / "c.db"))
        svc2 = MemoryService(cold)
        n = ref.revision
        mid = n - 10
        expected = [(r, (await svc2.revision(type(ref)(ref.artifact_id, r))).content.changes)
                    for r in range(1, n + 1)]
        decoded = []
        original = cold._revisions.decode_row

        def counting(row, base, **kw):
            decoded.append(row.revision)
            return original(row, base, **kw)

        monkeypatch.setattr(cold._revisions, "decode_row", counting)
        real_walk = revision_walk.walk_changes
        for light in (True, False):
            if not light:  # the fallback: rows the walk does not read
                monkeypatch.setattr(revision_walk, "walk_changes", lambda *a: None)
            cold._revisions.clear()
            await svc2.revision(ref)  # the head, cached as every search leaves it
            await svc2.revision(type(ref)(ref.artifact_id, mid))  # a cached base mid-walk
            decoded.clear()
            for since in (0, 25, mid - 1, mid, n - 1, n):
                cold._revisions._changes.clear()
                got = await svc2.changes(ref, since)
                assert [(c.memory_ref.revision, c.changes) for c in got] == expected[since:]
            assert (decoded == []) is light  # the walk reads bytes; the fallback decodes
            assert sorted(cold._revisions.keys()) == [(ref.artifact_id, mid),
                                                      (ref.artifact_id, n)]
            for r in (mid, n):
                cached = cold._revisions.get((ref.artifact_id, r))
                assert cached is not None and _SUCCESSOR not in cached.view.__dict__
            await svc2.changes(ref, 0)  # fills the changes cache
            decoded.clear()
            again = await svc2.changes(ref, 0)
            assert [(c.memory_ref.revision, c.changes) for c in again] == expected
            assert decoded == []  # the changes cache answered
        # a stored row that fails its hash is refused by the walk, delta or full
        rows = cold._memory_tables.rows.revision_rows
        for bad in (33, 32):
            def tampered(aid, lo, hi, bad=bad):
                return [attrs.evolve(r, content_hash="0" * 64) if r.revision == bad else r
                        for r in rows(aid, lo, hi)]
            with pytest.raises(IntegrityError):
                real_walk(ref.artifact_id, 30, n, tampered, lambda key: None)
        await svc2.close()

    asyncio.run(body())


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 30_000)), max_size=60))
def test_the_changes_cache_counts_what_it_holds_and_keeps_its_bound(puts) -> None:
    """The changes kept apart by RevisionCache stay within MAX_CHANGES (one oversized
    Revision's changes may stand alone), the running count equals what is held, and the
    newest put is always kept."""
    from powercontext.adapters import revision_cache
    from powercontext.adapters.revision_cache import RevisionCache

    cache = RevisionCache()
    for revision, n in puts:
        key = ("mem_a", revision)
        cache._put_changes(key, (None,) * n)  # type: ignore[arg-type]
        held = sum(len(c) for c in cache._changes.values())
        assert cache._changes_held == held
        assert held <= revision_cache.MAX_CHANGES or len(cache._changes) == 1
        assert len(cache._changes[key]) == n
    cache.clear()
    assert cache._changes_held == 0 and not cache._changes


def test_the_head_of_a_cached_memory_reads_no_revision_row(tmp_path):
    """head() checks that the Artifact is a Memory; when its head Revision is cached (a
    validated Memory Revision, e.g. just written here) it reads no Revision row: the row
    read fetched the content too, megabytes for the checkpoint of a 100k-entry manifest,
    on every remember. Cold, the row is read, and a Topic's head is still not a Memory."""
    async def body():
        backend = SQLiteMemoryBackend(str(tmp_path / "m.db"))
        svc = MemoryService(backend)
        try:
            ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha note"),))
            reads = []
            original = backend._memory_tables.rows.revision_rows

            def counting(artifact_id, after, upto):
                reads.append((artifact_id, after, upto))
                return original(artifact_id, after, upto)

            backend._memory_tables.rows.revision_rows = counting
            assert await svc.head(ref.artifact_id) == ref
            assert reads == []
            backend._revisions.clear()
            assert await svc.head(ref.artifact_id) == ref
            assert reads == [(ref.artifact_id, 0, 1)]
            assert await backend.head("topic_art_01m8y251287ctwjegxh3dbyftd") is None
        finally:
            await svc.close()

    asyncio.run(body())


def test_the_changes_walk_starts_from_a_cached_revision_of_an_earlier_release(tmp_path):
    """Delta rows an earlier release wrote, walked from a Revision the cache holds (its
    chunked manifest view): the walk starts there and returns every later Revision's
    changes, the same as the full decode."""
    from powercontext.adapters import revision_walk

    async def body():
        path = str(tmp_path / "w.db")
        svc = MemoryService(_earlier_release(SQLiteMemoryBackend(path)))
        ref = None
        for r in range(40):
            ref = await svc.remember(ref, entries=(MemoryEntryInput("fact", f"note {r}"),))
        await svc.close()
        cold = SQLiteMemoryBackend(path)
        svc2 = MemoryService(cold)
        try:
            await svc2.revision(type(ref)(ref.artifact_id, 30))  # cached: the walk's base
            got = revision_walk.walk_changes(ref.artifact_id, 30, 40,
                                             cold._memory_tables.rows.revision_rows,
                                             cold._revisions.get)
            assert got is not None
            want = [(r, (await svc2.revision(type(ref)(ref.artifact_id, r))).content.changes)
                    for r in range(31, 41)]
            assert [(a.revision, c) for a, c in got] == want
        finally:
            await svc2.close()

    asyncio.run(body())
