"""Bounded queries (issue 9 item 3): at most 8,192 characters and 64 distinct Analyzer v1
terms, checked in the service before any database work; beyond that InvalidInputError
naming ``query``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import ArtifactRef
from powercontext.core.query import (
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    clip_query,
    search_terms,
)
from powercontext.service import MemoryService


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_the_bounds_are_inclusive():
    assert len(search_terms(_words(MAX_QUERY_TERMS))) == MAX_QUERY_TERMS
    # a word too long for one token: its prefix and the hash of its full form (analyzer)
    assert search_terms("a" * MAX_QUERY_CHARS) == analyzer.query_terms("a" * MAX_QUERY_CHARS)
    assert len(search_terms("a" * MAX_QUERY_CHARS)) == 2
    # repeated terms count once
    assert search_terms("kiwi " * 1000) == ("kiwi",)


@pytest.mark.parametrize("query", [_words(MAX_QUERY_TERMS + 1), "x" * (MAX_QUERY_CHARS + 1),
                                   _words(40_000)])
def test_a_query_over_the_bounds_names_the_query(query):
    with pytest.raises(InvalidInputError) as info:
        search_terms(query)
    assert info.value.field == "query"


class _Untouchable:
    """A backend that fails the test when the service touches it at all."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the service reached the backend ({name}) before checking")


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid", "auto"])
@pytest.mark.parametrize("query", [_words(40_000), _words(MAX_QUERY_TERMS + 1),
                                   "kiwi " * 2000])
def test_the_service_refuses_a_long_query_before_any_database_work(query, mode):
    svc = MemoryService(_Untouchable())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError) as info:
        asyncio.run(svc.search(query, (ArtifactRef("mem_art_x", 1),), mode=mode))
    assert info.value.field == "query"


_text = st.lists(st.one_of(st.sampled_from([f"w{i}" for i in range(120)]),
                           st.text(min_size=1, max_size=12),
                           st.sampled_from(["中文记录", " ", "\n", "the", "x" * 300])),
                 max_size=200).map(" ".join)


@given(_text)
def test_clip_query_gives_the_longest_fitting_whitespace_prefix(text):
    clipped = clip_query(text)
    assert text.startswith(clipped)
    assert len(clipped) <= MAX_QUERY_CHARS
    assert len(analyzer.query_terms(clipped)) <= MAX_QUERY_TERMS
    search_terms(clipped)  # never raises
    if len(text) <= MAX_QUERY_CHARS and len(analyzer.query_terms(text)) <= MAX_QUERY_TERMS:
        assert clipped == text
    else:  # one more whitespace piece would break a bound
        rest = text[len(clipped):]
        nxt = next((i for i in range(1, len(rest)) if rest[i].isspace()), None)
        if nxt is not None:
            longer = text[:len(clipped) + nxt]
            assert (len(longer) > MAX_QUERY_CHARS
                    or len(analyzer.query_terms(longer)) > MAX_QUERY_TERMS)
