"""Invariants of the prepared context (Topic Memory RFC, "Prepared Context"), for any
hits either family's search returns: the byte bound always holds (``bytes`` is the
exact body size), at most 8 items per family, each family's own order kept, the
items a maximal prefix of the interleaving, never the Topic Detail, every text
neutral. The services are small stand-ins that return the generated hits (the real
searches are the adapter tests'); they refuse ``get``, so no Detail can be read."""

from __future__ import annotations

import asyncio
import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.context_prepare import (
    MEMORY_LIMIT,
    TOPIC_LIMIT,
    _sized,  # the self-sizing body, for maximality
    context_json,
    encode_json,
    neutral_text,
    prepare_context,
)
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import ArtifactRef, MemoryHit, MemorySearchResult
from powercontext.core.topic.models import TopicHit, TopicRef, TopicSearchResult

DETAIL_MARK = "DETAIL-NEVER-SHOWN"

#: Text with what could pose as instructions: tags, special tokens, control, format
#: and separator characters, non-ASCII.
hostile = st.lists(
    st.one_of(
        st.sampled_from(["<", ">", "/", "|", "!", "\n", "\r", "\t", "\x00", "\x1b",
                         "\u202e", "\u200b", "\u2028", "\ufeff", "\uff1c", "\ufe64",
                         "system", "<tool_call>", "</system>", "<|im_start|>", "é", "数据",
                         " "]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=30,
).map("".join)


@st.composite
def memory_hits(draw: Any) -> list[MemoryHit]:
    n = draw(st.integers(0, 12))
    return [MemoryHit(ArtifactRef("mem_art_p", 3), f"mem_ent_{i}", f"mem_ver_{i}",
                      draw(hostile) or "t", 1.0 / (i + 1), ("fts",),
                      draw(st.sampled_from(["fact", "constraint", "", "we<ird"])))
            for i in range(n)]


@st.composite
def topic_hits(draw: Any) -> list[TopicHit]:
    n = draw(st.integers(0, 12))
    return [TopicHit(TopicRef(f"topic_art_{i:04d}", i + 1), draw(hostile) or "T",
                     draw(hostile) or "S", draw(st.none() | hostile), 1.0 / (i + 1),
                     ("topic_fts",))
            for i in range(n)]


class StubMemory:
    def __init__(self, hits: list[MemoryHit], mapped: bool) -> None:
        self.hits, self.mapped, self.limits = hits, mapped, []

    async def memory_key(self, key: str) -> str | None:
        return "mem_art_p" if self.mapped else None

    async def search(self, query: str, memories: Any, *, limit: int, mode: str
                     ) -> MemorySearchResult:
        self.limits.append(limit)
        return MemorySearchResult(tuple(self.hits[:limit]), "fts")


class StubTopics:
    def __init__(self, hits: list[TopicHit]) -> None:
        self.hits, self.limits = hits, []

    async def search(self, scope_id: str, query: str, limit: int = 10) -> TopicSearchResult:
        self.limits.append(limit)
        return TopicSearchResult(tuple(self.hits[:limit]), ("topic_fts", "detail_fts"))

    async def get(self, *_: Any) -> Any:
        raise AssertionError("prepare_context never reads a Topic's Detail")


def _empty_size(scope: str, query: str, truncated: int) -> int:
    """The size of the answer without any item: every item is then counted in
    ``truncated`` (10 items left out is one byte more than 9)."""
    return len(encode_json({"scope_id": scope, "query": query, "items": [],
                            "truncated": truncated, "bytes": 100}))


def test_the_answer_without_items_counts_the_digits_of_truncated() -> None:
    """The input the property once drew: ten items left out make the empty answer one
    byte longer than with none (``"truncated":10``), so a limit equal to the latter is
    refused, and one byte more gives an answer of no item."""
    scope, query = "repo:/work/demo", "x " * 120
    mem = [MemoryHit(ArtifactRef("mem_art_p", 3), f"mem_ent_{i}", f"mem_ver_{i}", "t",
                     1.0 / (i + 1), ("fts",), "fact") for i in range(2)]
    top = [TopicHit(TopicRef(f"topic_art_{i:04d}", i + 1), "T", "S", None, 1.0 / (i + 1),
                    ("topic_fts",)) for i in range(8)]
    limit = _empty_size(scope, query, 0)
    with pytest.raises(InvalidInputError) as err:
        asyncio.run(prepare_context(StubMemory(mem, True), StubTopics(top), scope, query,
                                    max_bytes=limit))
    assert err.value.field == "max_bytes"
    pc = asyncio.run(prepare_context(StubMemory(mem, True), StubTopics(top), scope, query,
                                     max_bytes=limit + 1))
    assert (pc.items, pc.truncated, pc.bytes) == ((), 10, limit + 1)


@given(mem=memory_hits(), top=topic_hits(), mapped=st.booleans(),
       max_bytes=st.integers(256, 6000),
       query=st.sampled_from(["make release", "数据库 迁移", "x " * 120]))
def test_prepared_context_is_bounded_ordered_prefix_and_neutral(mem, top, mapped,
                                                                max_bytes, query):
    scope = "repo:/work/demo"
    memory, topics = StubMemory(mem, mapped), StubTopics(top)
    every = min(len(mem) if mapped else 0, MEMORY_LIMIT) + min(len(top), TOPIC_LIMIT)
    try:
        pc = asyncio.run(prepare_context(memory, topics, scope, query, max_bytes=max_bytes))
    except InvalidInputError as exc:
        assert exc.field == "max_bytes" and _empty_size(scope, query, every) > max_bytes
        return
    body = encode_json(context_json(pc))
    assert pc.bytes == len(body) <= max_bytes
    assert memory.limits in ([], [MEMORY_LIMIT]) and topics.limits == [TOPIC_LIMIT]
    by_family = {f: [i for i in pc.items if i.family == f] for f in ("memory", "topic-memory")}
    assert len(by_family["memory"]) <= MEMORY_LIMIT
    assert len(by_family["topic-memory"]) <= TOPIC_LIMIT
    # each family's own order (ranks 1..k) and a prefix of the interleaving
    for items in by_family.values():
        assert [i.rank for i in items] == list(range(1, len(items) + 1))
    m = min(len(mem) if mapped else 0, MEMORY_LIMIT)
    t = min(len(top), TOPIC_LIMIT)
    full = [("memory", r) for r in range(1, m + 1)]
    full_t = [("topic-memory", r) for r in range(1, t + 1)]
    order = [x for pair in zip(full, full_t, strict=False) for x in pair]
    order += full[len(full_t):] + full_t[len(full):]
    assert [(i.family, i.rank) for i in pc.items] == order[:len(pc.items)]
    assert pc.truncated == len(order) - len(pc.items)
    if pc.truncated:  # maximal: one more item would not have fitted
        everything = asyncio.run(prepare_context(memory, topics, scope, query,
                                                 max_bytes=1_048_576)).items
        one_more = everything[:len(pc.items) + 1]
        assert _sized(scope, query, one_more, pc.truncated - 1) > max_bytes
    # never the Detail; every text neutral
    assert DETAIL_MARK.encode() not in body
    for item in pc.items:
        for text in (item.title, item.summary, item.snippet or ""):
            assert all(unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in text)
            for i, c in enumerate(text[:-1]):
                if c in "<\uff1c\ufe64":
                    assert not (text[i + 1].isalpha() or text[i + 1] in "/!?|"), text
    assert json.loads(body)["bytes"] == pc.bytes


_ESCAPED = ("Cc", "Cf", "Zl", "Zp", "Co", "Cn")


@given(hostile)
def test_neutral_text_is_inert_idempotent_and_changes_nothing_else(text):
    out = neutral_text(text)
    assert all(unicodedata.category(c) not in _ESCAPED for c in out)
    for i, c in enumerate(out[:-1]):
        if c in "<\uff1c\ufe64":
            assert not (out[i + 1].isalpha() or out[i + 1] in "/!?|"), out
    assert neutral_text(out) == out
    plain = "".join(c for c in text if unicodedata.category(c) not in _ESCAPED
                    and c not in "<\uff1c\ufe64")
    assert neutral_text(plain) == plain  # ordinary text is kept exactly
    assert len(out) >= len(text)


@pytest.mark.parametrize(("scope", "query", "max_bytes", "field"), [
    ("", "q", 8000, "scope_id"),
    ("s", "", 8000, "query"),
    ("s", "  \n", 8000, "query"),
    ("s", "q", 255, "max_bytes"),
    ("s", "q", True, "max_bytes"),
    ("s", "q", 8000.0, "max_bytes"),
])
def test_bad_requests_are_refused_before_any_search(scope, query, max_bytes, field):
    memory, topics = StubMemory([], True), StubTopics([])
    with pytest.raises(InvalidInputError) as info:
        asyncio.run(prepare_context(memory, topics, scope, query, max_bytes=max_bytes))
    assert info.value.field == field
    assert memory.limits == [] and topics.limits == []


def test_a_topic_side_without_terms_is_empty_and_other_errors_pass_through():
    class NoTerms(StubTopics):
        async def search(self, *a: Any, **k: Any) -> Any:
            raise InvalidInputError("query", "has no search terms")

    class Broken(StubTopics):
        async def search(self, *a: Any, **k: Any) -> Any:
            raise InvalidInputError("scope_id", "bad")

    pc = asyncio.run(prepare_context(None, NoTerms([]), "s", "the"))
    assert pc.items == ()
    with pytest.raises(InvalidInputError):
        asyncio.run(prepare_context(None, Broken([]), "s", "the"))
