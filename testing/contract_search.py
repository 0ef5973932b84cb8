"""Contract group: full-text search over current heads."""

from __future__ import annotations

import unicodedata

import pytest

from powercontext.core.errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidInputError,
)
from powercontext.core.models import CurrentHead, MemoryEntryInput
from powercontext.core.query import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from powercontext.testing.base import ContractBase, run
from powercontext.testing.strategies import NASTY_QUERIES


class SearchContract(ContractBase):
    """search() in fts mode: current heads only, bounds, nasty queries, CJK and NFC,
    prefixes (Memory RFC, "Search and reads", "Normalization, hashing, and the search
    analyzer")."""

    # -- search ------------------------------------------------------------------------------

    def test_search_reads_only_current_heads(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                other = await svc.remember(
                    None, entries=(MemoryEntryInput("fact", "uv is also used in the other memory"),)
                )
                res = await svc.search("uv dependencies", (r1, r1), mode="auto")
                assert res.mode == "fts"
                assert {h.memory_ref for h in res.hits} == {r1}
                both = await svc.search("uv", (r1, other), mode="fts")
                assert {h.memory_ref for h in both.hits} == {r1, other}
                assert all(h.matched_by == ("fts",) for h in both.hits)
                assert [h.score for h in both.hits] == sorted(
                    (h.score for h in both.hits), reverse=True
                )
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "more"),))
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r1,), mode="fts")
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r2,), mode="vector")
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("uv", (r2,), mode="hybrid")
                with pytest.raises(ValueError):
                    await svc.search("uv", (), mode="fts")
                limited = await svc.search("make test uv site", (r2,), limit=1, mode="fts")
                assert len(limited.hits) == 1

        run(body())

    def test_nasty_queries_never_reach_match(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(
                    None,
                    entries=(
                        MemoryEntryInput(
                            "fact",
                            "multi-agent TODO: fix 50% of @name in 3.11.7 "
                            'AND OR NOT NEAR (parens) "quoted" 🙂',
                        ),
                    ),
                )
                for q in NASTY_QUERIES:
                    res = await svc.search(q, (r1,), mode="fts")
                    assert isinstance(res.hits, tuple)
                hit = await svc.search("multi-agent", (r1,), mode="fts")
                assert len(hit.hits) == 1
                assert len((await svc.search("TODO: fix", (r1,), mode="fts")).hits) == 1
                assert (await svc.search("", (r1,), mode="fts")).hits == ()

        run(body())

    def test_a_smaller_limit_returns_a_prefix_never_less(self, memory_backend_factory):
        """Candidates refused by admission never crowd out admitted ones: rows matching
        one of three terms fill the top of the backend's order, the long entry matching
        two is found at every limit, and the list at a smaller limit is a prefix."""
        long = ("The procurement group reviewed how the regional distributors negotiated "
                "the apple and banana supply contracts, delivery windows, refrigerated "
                "transport, insurance clauses, payment schedules and seasonal prices")

        async def body():
            async with self._service(memory_backend_factory) as svc:
                texts = ([f"zebra crossing note {i}" for i in range(40)]
                         + [f"apple harvest report number {i} for the orchard team"
                            for i in range(60)]
                         + [f"banana shipment record number {i} for the warehouse team"
                            for i in range(60)] + [long])
                ref = await svc.remember(
                    None, entries=tuple(MemoryEntryInput("fact", t) for t in texts))
                lists = {}
                for limit in (1, 8, 50):
                    res = await svc.search("zebra apple banana", (ref,), limit=limit,
                                           mode="fts")
                    lists[limit] = [h.text for h in res.hits]
                assert lists == {1: [long], 8: [long], 50: [long]}
                wide = [(h.entry_id, h.score) for h in
                        (await svc.search("zebra apple", (ref,), limit=40, mode="fts")).hits]
                for limit in (1, 7, 33):
                    res = await svc.search("zebra apple", (ref,), limit=limit, mode="fts")
                    assert [(h.entry_id, h.score) for h in res.hits] == wide[:limit]

        run(body())

    def test_queries_over_the_bounds_are_bad_input(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "kiwi"),))
                too_many = " ".join(f"kiwi{i}" for i in range(MAX_QUERY_TERMS + 1))
                for q in ("x" * (MAX_QUERY_CHARS + 1), too_many):
                    with pytest.raises(InvalidInputError) as info:
                        await svc.search(q, (r1,), mode="fts")
                    assert info.value.field == "query"

        run(body())

    def test_current_head_is_read_in_the_search(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                r1 = await svc.remember(None, entries=(MemoryEntryInput("fact", "kiwi"),))
                assert r1 is not None
                r2 = await svc.remember(r1, entries=(MemoryEntryInput("fact", "kiwi vine"),))
                res = await svc.search("kiwi", (CurrentHead(r1.artifact_id),), mode="fts")
                assert {h.memory_ref for h in res.hits} == {r2}
                assert len(res.hits) == 2
                with pytest.raises(CapabilityNotSupportedError):
                    await svc.search("kiwi", (r1,), mode="fts")
                with pytest.raises(ArtifactNotFoundError):
                    await svc.search("kiwi", (CurrentHead("mem_art_missing"),), mode="fts")

        run(body())

    def test_cjk_and_normalization(self, memory_backend_factory):
        async def body():
            async with self._service(memory_backend_factory) as svc:
                texts = (
                    "使用中文记录偏好",
                    "日本語のテキストです",
                    "한국어 문장을 검색합니다",
                    unicodedata.normalize("NFD", "café résumé naïve"),
                )
                r1 = await svc.remember(
                    None, entries=tuple(MemoryEntryInput("fact", t) for t in texts)
                )
                for query, expected in (
                    ("中文", texts[0]),
                    ("テキ", texts[1]),
                    ("문장", texts[2]),
                    ("のテ", texts[1]),
                    (unicodedata.normalize("NFC", "résumé"), texts[3]),
                    (unicodedata.normalize("NFD", "CAFÉ"), texts[3]),
                ):
                    hits = (await svc.search(query, (r1,), mode="fts")).hits
                    assert [h.text for h in hits] == [unicodedata.normalize("NFC", expected)], query

        run(body())

