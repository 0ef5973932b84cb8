"""Scoped FTS tokens and document-frequency pruning of query terms (SQLite)."""

from __future__ import annotations

import asyncio

import pytest

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.adapters.sqlite import backend as sqlite_backend
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.sql import sqlite as frag


def test_common_terms_leave_match_but_still_count_for_admission(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_backend, "FTS_PRUNE_MIN_ROWS", 10)

    async def body():
        svc = MemoryService(SQLiteMemoryBackend(str(tmp_path / "m.db")))
        try:
            texts = [f"alpha note {i}" for i in range(18)] + ["alpha bravo", "bravo charlie"]
            ref = await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t)
                                                         for t in texts))
            other = await svc.remember(None, entries=(MemoryEntryInput("fact", "alpha bravo"),))
            backend = svc.backend
            scope = frag.scope_token(ref.artifact_id)
            kept = await backend._run(backend._query_tokens_sync, ref.artifact_id,
                                      ["alpha", "bravo", "charlie"])
            # alpha is in 19 of 20 rows: left out; the two rare terms stay
            assert kept == frag.scoped_terms(scope, ["bravo", "charlie"])
            hits = await svc.search("alpha bravo charlie", (ref,), limit=10, mode="fts")
            assert sorted(h.text for h in hits.hits) == ["alpha bravo", "bravo charlie"]
            # scoped tokens: the other Memory's identical row is never a candidate
            assert {h.memory_ref for h in hits.hits} == {ref}
            both = await svc.search("alpha bravo", (ref, other), limit=10, mode="fts")
            assert {h.memory_ref for h in both.hits} == {ref, other}
            # below the row threshold nothing is pruned
            small = await backend._run(backend._query_tokens_sync, other.artifact_id,
                                       ["alpha", "bravo", "charlie"])
            assert len(small) == 3
        finally:
            await svc.close()

    asyncio.run(body())


@pytest.mark.parametrize("terms", [["only"], ["one", "two"]])
def test_short_queries_are_never_pruned(tmp_path, terms):
    async def body():
        b = SQLiteMemoryBackend(str(tmp_path / "m.db"))
        try:
            out = await b._run(b._query_tokens_sync, "mem_art_x", terms)
            assert out == frag.scoped_terms(frag.scope_token("mem_art_x"), terms)
        finally:
            await b.close()

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
