"""Properties of Topic content (TOPIC-MEMORY.md, "scope_id", "Size limits"): made
content is normalized and idempotent, its canonical bytes are RFC 8785 of exactly three
members and round-trip, its hash is their plain SHA-256, and Scope ids are NFC-stable."""

from __future__ import annotations

import hashlib
import json
import unicodedata

import pytest
import rfc8785
from hypothesis import example, given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.core.topic import content as tc

texts = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=200)


@given(texts, texts, texts)
def test_content_bytes_round_trip_and_hash_is_plain_sha256(t: str, s: str, d: str) -> None:
    try:
        c = tc.make_content(t, s, d)
    except InvalidInputError as exc:
        assert exc.field in ("title", "summary", "detail")
        return
    assert tc.make_content(c.title, c.summary, c.detail) == c
    for v in (c.title, c.summary, c.detail):
        assert v == unicodedata.normalize("NFC", v) and v == v.strip() and v
        assert "\x00" not in v
    raw = tc.content_bytes(c)
    assert raw == rfc8785.dumps({"title": c.title, "summary": c.summary, "detail": c.detail})
    assert json.loads(raw) == {"title": c.title, "summary": c.summary, "detail": c.detail}
    assert tc.content_hash(c) == hashlib.sha256(raw).hexdigest() == tc.content_hash(
        tc.make_content(c.title, c.summary, c.detail))


@given(st.text(max_size=300))
@example(" ")  # white space at an end is refused though printable (CI found it)
@example("a ")
def test_scope_id_is_nfc_stable_or_refused_with_its_field(value: str) -> None:
    try:
        scope = tc.check_scope_id(value)
    except InvalidInputError as exc:
        assert exc.field == "scope_id"
        nfc = unicodedata.normalize("NFC", value) if "\x00" not in value else None
        if nfc is not None and 1 <= len(nfc) <= 256:
            try:
                nfc.encode()
            except UnicodeEncodeError:
                return
            assert not nfc.isprintable() or nfc != nfc.strip()
        return
    assert scope == unicodedata.normalize("NFC", value)
    assert 1 <= len(scope) <= tc.MAX_SCOPE_CHARS and scope.isprintable()
    assert scope == scope.strip()
    assert tc.check_scope_id(scope) == scope


@given(st.integers(0, 2**48 - 1), st.binary(min_size=10, max_size=10))
def test_topic_ids_are_fresh_checked_and_sort_by_time(ms: int, entropy: bytes) -> None:
    tid = tc.make_topic_id(ms, entropy)
    assert tc.is_fresh_topic_id(tid) and tc.check_topic_id(tid) == tid
    if ms < 2**48 - 1:
        assert tc.make_topic_id(ms + 1, bytes(10)) > tid


@pytest.mark.parametrize("limit", ["title", "summary", "detail"])
def test_one_over_each_limit_fails_closed(limit: str) -> None:
    sizes = {"title": tc.MAX_TITLE_CHARS, "summary": tc.MAX_SUMMARY_CHARS,
             "detail": tc.MAX_DETAIL_CHARS}
    fields = {k: "e\u0301" * v for k, v in sizes.items()}  # NFC halves the length
    assert tc.make_content(**fields)
    fields[limit] = "x" * (sizes[limit] + 1)
    with pytest.raises(InvalidInputError) as info:
        tc.make_content(**fields)
    assert info.value.field == limit
