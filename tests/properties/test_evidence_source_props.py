"""Evidence given to remember over HTTP and MCP becomes a Source whose id is derived
from its content hash (:func:`powercontext.memory_views.evidence_source`): the same
evidence is always the same Source, its metadata is kept whole and is part of the
identity (different metadata, another Source), and text typed in another Unicode
normal form is the same Source. A uri is identifier-like: one with a control, format or
line-separator character is refused."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.memory_views import evidence_source

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40)
#: What a uri may hold: no control, format or separator character (core/characters.py).
_URI = st.text(st.characters(exclude_categories=["Cs", "Cc", "Cf", "Zl", "Zp"]), min_size=1,
               max_size=40)
_KIND = st.sampled_from(["file", "user_note", "chat_turn"])
_META = st.dictionaries(st.text(st.characters(codec="ascii", categories=["Ll", "Nd"]),
                                min_size=1, max_size=8), _TEXT, max_size=4)


@given(kind=_KIND, content=_TEXT, uri=st.none() | _URI, metadata=_META)
def test_evidence_is_content_addressed_and_keeps_its_metadata(
        kind: str, content: str, uri: str | None, metadata: dict[str, str]) -> None:
    source = evidence_source(kind, content, uri, metadata)
    assert source.source_id == f"src_{source.content_hash[:40]}"
    assert dict(source.metadata) == metadata
    assert source.content == unicodedata.normalize("NFC", content)
    again = evidence_source(kind, unicodedata.normalize("NFD", content), uri, dict(metadata))
    assert again == source
    assert source.content_hash == canonical.make_source(
        source.source_id, kind, source.content, uri, metadata).content_hash


@given(content=_TEXT, metadata=_META, extra=_TEXT)
def test_other_metadata_is_another_source(content: str, metadata: dict[str, str],
                                          extra: str) -> None:
    changed = dict(metadata, zz_extra=extra)
    assert evidence_source("file", content, None, metadata).source_id != \
        evidence_source("file", content, None, changed).source_id


@given(content=_TEXT, uri=_URI, bad=st.characters(categories=["Cc", "Cf", "Zl", "Zp"]),
       at=st.integers(min_value=0))
def test_a_uri_with_a_control_or_format_character_is_refused(content: str, uri: str,
                                                              bad: str, at: int) -> None:
    at %= len(uri) + 1
    with pytest.raises(InvalidInputError) as info:
        evidence_source("file", content, uri[:at] + bad + uri[at:], {})
    assert info.value.field == "source.uri"
