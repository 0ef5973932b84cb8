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
