"""Damaged projections and authoritative rows on SQLite: writes go on, rebuild repairs
what it can and reports the rest, and no process trusts a stale completeness answer.
(Regressions found by an adversarial review.)"""

from __future__ import annotations

import asyncio

import apsw
import pytest

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.errors import CapabilityNotSupportedError
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.sql import sqlite as frag


def _raw(path) -> apsw.Connection:
    return apsw.Connection(str(path))


def test_a_stray_fts_row_never_blocks_writes(tmp_path):
    db = tmp_path / "m.db"

    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(db)))
        try:
            ref = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
            (next_pid,) = _raw(db).execute(
                "SELECT max(projection_id) + 1 FROM memory_entry_heads").fetchone()
            conn = _raw(db)
            conn.execute(f'INSERT INTO "{frag.FTS_TABLE}" (rowid, searchable_text) '
                         "VALUES (?, 'm_nobody_stray')", (next_pid,))
            conn.close()
            for i in range(3):
                ref = await svc.remember(ref, entries=(MemoryEntryInput("fact", f"beta {i}"),))
            hits = await svc.search("beta", (ref,), limit=10, mode="fts")
            assert len(hits.hits) == 3
        finally:
            await svc.close()

    asyncio.run(body())


def test_rebuild_reports_a_corrupt_memory_and_repairs_the_others(tmp_path):
    db = tmp_path / "m.db"

    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(db)))
        try:
            bad = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha"),))
            good = await svc.remember(None, entries=(MemoryEntryInput("fact", "beta"),))
        finally:
            await svc.close()
        conn = _raw(db)
        conn.execute("UPDATE memory_entry_versions SET text = 'tampered' "
                     "WHERE memory_artifact_id = ?", (bad.artifact_id,))
        conn.execute("DELETE FROM memory_entry_heads WHERE memory_artifact_id = ?",
                     (good.artifact_id,))
        conn.close()
        backend = SQLiteMemoryBackend(str(db))
        try:
            report = await backend.rebuild()
            assert [a for a, _ in report.corrupt] == [bad.artifact_id]
            assert report.memories == 1 and report.entries == 1
            svc = MemoryService(backend)
            assert [h.text for h in (await svc.search("beta", (good,), mode="fts")).hits] == [
                "beta"]
            # writers were resumed
            after = await svc.remember(good, entries=(MemoryEntryInput("fact", "c"),))
            assert after.revision == 2
        finally:
            await backend.close()

    asyncio.run(body())


def test_another_processs_rebuild_invalidates_the_completeness_answer(tmp_path):
    db = tmp_path / "m.db"
    model = DeterministicEmbedding(dimension=16)

    async def body():
        a = MemoryService(SQLiteMemoryBackend(str(db), profile=model.profile),
                          embedding_model=model)
        other = SQLiteMemoryBackend(str(db), profile=model.profile)  # "another process"
        try:
            ref = await a.remember(None, entries=(MemoryEntryInput("fact", "alpha apple"),))
            assert (await a.search("alpha", (ref,), mode="vector")).hits  # caches "complete"
            # Damage the vector behind a's back (no generation bump), then another
            # process rebuilds without a model: it cannot refill the vector, keeps what is
            # stored (nothing here) and bumps the generation, heads unchanged. (Until
            # issue 9 this rebuild itself dropped every vector.)
            conn = _raw(db)
            conn.execute('DELETE FROM memory_entry_vector_metadata')
            conn.close()
            report = await other.rebuild()
            assert [(a_id, e) for a_id, e, _ in report.missing] == [
                (ref.artifact_id, (await a.entries(ref)).popitem()[0])]
            with pytest.raises(CapabilityNotSupportedError, match="incomplete"):
                await a.search("alpha", (ref,), mode="vector")
            assert (await a.search("alpha", (ref,), mode="auto")).mode == "fts"
        finally:
            await a.close()
            await other.close()

    asyncio.run(body())
