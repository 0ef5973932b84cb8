"""SQLite full-text candidates (issue 9 item 1): scoped tokens, bm25 order, every query
term in the MATCH. (Replaces the test that pinned document-frequency
pruning of common terms: that shortcut changed search results and is gone.)"""

from __future__ import annotations

import asyncio

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService


def test_common_terms_stay_in_the_match_and_other_memories_never_answer(tmp_path):
    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(tmp_path / "m.db")))
        try:
            texts = [f"alpha note {i}" for i in range(18)] + ["alpha bravo", "bravo charlie"]
            ref = await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t)
                                                         for t in texts))
            other = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha bravo"),))
            hits = await svc.search("alpha bravo charlie", (ref,), limit=50, mode="fts")
            assert sorted(h.text for h in hits.hits) == ["alpha bravo", "bravo charlie"]
            # scoped tokens: the other Memory's identical row is never a candidate
            assert {h.memory_ref for h in hits.hits} == {ref}
            both = await svc.search("alpha bravo", (ref, other), limit=50, mode="fts")
            assert {h.memory_ref for h in both.hits} == {ref, other}
            assert len(both.hits) == 21  # "alpha" alone admits: it is never dropped
        finally:
            await svc.close()

    asyncio.run(body())


def test_fts_candidates_are_ranked_by_bm25_not_by_row_order(tmp_path):
    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(tmp_path / "m.db")))
        try:
            texts = [f"alpha note {i}" for i in range(6)] + ["alpha bravo"]
            ref = await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t)
                                                         for t in texts))
            hits = await svc.search("alpha bravo", (ref,), limit=3, mode="fts")
            assert hits.hits[0].text == "alpha bravo"  # the rare term wins, though written last
        finally:
            await svc.close()

    asyncio.run(body())
