"""SQLite full-text candidates (issue 9 item 1): scoped tokens, bm25 order, every query
term in the MATCH, and the admission minimum counted inside FTS5 without changing which
rows come back or their order. (Replaces the test that pinned document-frequency
pruning of common terms: that shortcut changed search results and is gone.)"""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.core import admission, analyzer
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


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


_BACKEND: dict[str, object] = {}


def _corpus_backend(tmp_path_factory):
    if "b" not in _BACKEND:
        rnd = random.Random(4)
        texts = [" ".join(rnd.choices(WORDS, weights=[8, 6, 4, 3, 2, 2, 1, 1],
                                      k=rnd.randint(1, 6))) + f" n{i}" for i in range(300)]
        b = SQLiteMemoryBackend(str(tmp_path_factory.mktemp("rank") / "m.db"))
        svc = MemoryService(b)
        ref = asyncio.run(svc.remember(None, entries=tuple(MemoryEntryInput("fact", t)
                                                           for t in texts)))
        _BACKEND.update(b=b, ref=ref)
    return _BACKEND["b"], _BACKEND["ref"]


@settings(max_examples=40)
@given(terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8, unique=True),
       page=st.integers(1, 40), offset=st.integers(0, 60))
def test_the_admission_minimum_in_fts5_keeps_exactly_the_admitted_rows_in_order(
        tmp_path_factory, terms, page, offset):
    b, ref = _corpus_backend(tmp_path_factory)
    least = admission.fts_min_matched(len(terms))

    def both():
        every = b._fts_candidates_sync([ref.artifact_id], terms, 10_000)
        pushed = b._fts_candidates_sync([ref.artifact_id], terms, page, offset=offset,
                                        min_matched=least)
        return every, pushed

    every, pushed = asyncio.run(b._run(b._in_tx, False, both))
    admitted = [c for c in every if admission.fts_admits(tuple(terms), c.searchable_text.split())]
    assert [c.entry_id for c in pushed] == [c.entry_id for c in admitted[offset:offset + page]]
    assert all(set(terms) & set(analyzer.analyze(c.searchable_text)) for c in every)


def teardown_module():
    b = _BACKEND.pop("b", None)
    if b is not None:
        b.close_sync()  # type: ignore[attr-defined]
    _BACKEND.clear()
