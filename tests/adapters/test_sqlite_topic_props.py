"""Properties of the SQLite Topic backend (Hypothesis, profiles ``dev`` / ``ci``):
database times always render in the one ``published_at`` form; Scope isolation holds
for any pair of valid Scope ids (a Topic is found in its Scope and never in another);
``get`` of every published Revision returns exactly what ``publish`` returned."""

from __future__ import annotations

import datetime
import itertools
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from powercontext.adapters.sqlite import SQLiteTopicBackend
from powercontext.adapters.storage.rows import utc_text
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.models import TopicSearchRequest
from powercontext.sql import sqlite as frag

from .topic_helpers import create, needs_topic_core, publish, run, seed, source, update

UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
_words = itertools.count(1)


@given(st.datetimes(min_value=datetime.datetime(1970, 1, 1),
                    max_value=datetime.datetime(9999, 12, 31)))
def test_a_database_time_renders_in_one_form_and_round_trips(when: datetime.datetime) -> None:
    text = utc_text(when)
    assert UTC.match(text)
    assert datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") == when
    # SQLite's own millisecond text of the same instant renders to the same prefix
    millis = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    assert utc_text(millis)[:23] == text[:23]


_scopes = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Cs", "Zl",
                                                                    "Zp", "Co", "Cn")),
                  min_size=1, max_size=40).filter(
    # a valid Scope id: printable, no white space at either end (check_scope_id)
    lambda s: s.isprintable() and s == s.strip())


@given(st.lists(_scopes, min_size=2, max_size=2, unique_by=check_scope_id))
def test_distinct_scopes_have_distinct_tokens(scopes: list[str]) -> None:
    a, b = (frag.topic_scope_token(check_scope_id(s)) for s in scopes)
    assert a != b and re.fullmatch(r"s_[0-9a-f]{24}", a)


@needs_topic_core
@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_scopes, min_size=2, max_size=2, unique_by=check_scope_id),
       st.integers(1, 3))
def test_a_topic_is_found_in_its_scope_only_and_get_returns_what_was_published(
        tmp_path: Path, scopes: list[str], updates: int) -> None:
    home, other = (check_scope_id(s) for s in scopes)
    word = f"zq{next(_words)}marker"
    path = tmp_path / f"{word}.db"

    async def go() -> None:
        b = SQLiteTopicBackend(str(path))
        try:
            src = source(word)
            await seed(b, src)
            an = await b.analyzer()
            [rev] = await publish(b, create(an, f"Title {word}", "summary", f"Body {word}.",
                                            [src], scope=home))
            published = [rev]
            for i in range(updates):
                [rev] = await publish(b, update(an, rev.ref, f"Title {word}", f"summary {i}",
                                                f"Body {word} {i}.", [src], scope=home))
                published.append(rev)
            for r in published:
                assert await b.get(home, r.ref) == r
            found = await b.search(TopicSearchRequest(home, word))
            assert [h.ref for h in found.hits] == [rev.ref]
            assert (await b.search(TopicSearchRequest(other, word))).hits == ()
            assert await b.heads(other) == ()
        finally:
            await b.close()
    run(go())
    path.unlink()


