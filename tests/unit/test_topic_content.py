"""core.topic.content: Scope ids, refs, content normalization and limits, canonical
bytes, hashes, lineage bytes and ids (TOPIC-MEMORY.md, "scope_id", "Size limits")."""

from __future__ import annotations

import hashlib
import json

import pytest

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import ArtifactRef, SourceRef
from powercontext.core.topic import content as tc
from powercontext.core.topic.models import TopicMemoryContent, TopicRef

H = "a" * 64


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\nb", "a\x00", "a\x07", "\ud800",
                                 "a\u200b", 7, None, " ", " a", "a ", "a\u3000", "\u00a0a"])
def test_check_scope_id_refuses_empty_long_control_surrogate_non_string(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        tc.check_scope_id(bad)
    assert info.value.field == "scope_id"


def test_check_scope_id_counts_after_nfc_and_names_the_field() -> None:
    nfd = "e\u0301" * 256  # 512 code points, 256 after NFC
    assert tc.check_scope_id(nfd) == "\u00e9" * 256
    assert tc.check_scope_id("repo:/abs/path") == "repo:/abs/path"
    with pytest.raises(InvalidInputError) as info:
        tc.check_scope_id("", "request.scope_id")
    assert info.value.field == "request.scope_id"


def test_check_ref_accepts_a_topic_ref() -> None:
    ref = TopicRef("topic_art_01", 1)
    assert tc.check_ref(ref) is ref


@pytest.mark.parametrize(("ref", "field"), [
    (TopicRef("topic_art_01", 1, family="memory"), "artifact.family"),
    (TopicRef("topic_art_01", 0), "artifact.revision"),
    (TopicRef("topic_art_01", -1), "artifact.revision"),
    (TopicRef("topic_art_01", True), "artifact.revision"),
    (TopicRef("topic_art_01", "1"), "artifact.revision"),  # type: ignore[arg-type]
    (TopicRef("topic_art_01", None), "artifact.revision"),  # type: ignore[arg-type]
    (TopicRef("mem_art_01", 1), "artifact.artifact_id"),
    (TopicRef("topic_art_", 1), "artifact.artifact_id"),
    (TopicRef("topic_art_ x", 1), "artifact.artifact_id"),
    (ArtifactRef("topic_art_01", 1), "artifact"),
])
def test_check_ref_refuses_family_revision_and_id_faults(ref: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        tc.check_ref(ref)
    assert info.value.field == field


def test_make_content_normalizes_nfc_and_trims() -> None:
    c = tc.make_content("  Cafe\u0301 ", "s\n", "\n d \n")
    assert c == TopicMemoryContent("Caf\u00e9", "s", "d")
    assert tc.make_content(c.title, c.summary, c.detail) == c


@pytest.mark.parametrize(("args", "field"), [
    ((1, "s", "d"), "title"),
    (("t", None, "d"), "summary"),
    (("t", "s", b"d"), "detail"),
    ((" \n", "s", "d"), "title"),
    (("t", "s", "\u3000"), "detail"),
    (("t\x00", "s", "d"), "title"),
    (("t", "s\ud800", "d"), "summary"),
    (("x" * (tc.MAX_TITLE_CHARS + 1), "s", "d"), "title"),
    (("t", "x" * (tc.MAX_SUMMARY_CHARS + 1), "d"), "summary"),
    (("t", "s", "x" * (tc.MAX_DETAIL_CHARS + 1)), "detail"),
])
def test_make_content_refuses_with_the_field(args: tuple[object, ...], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        tc.make_content(*args)
    assert info.value.field == field


def test_make_content_limits_are_inclusive_code_points() -> None:
    c = tc.make_content("\U0001f600" * tc.MAX_TITLE_CHARS, "s" * tc.MAX_SUMMARY_CHARS,
                        "d" * tc.MAX_DETAIL_CHARS)
    assert len(c.detail) == tc.MAX_DETAIL_CHARS


def test_content_bytes_are_rfc8785_of_exactly_three_members_and_hash_has_no_prefix() -> None:
    c = tc.make_content("T\u00e9", "S \"q\"", "D\n")
    raw = tc.content_bytes(c)
    assert raw == b'{"detail":"D","summary":"S \\"q\\"","title":"T\xc3\xa9"}'
    assert json.loads(raw) == {"title": "T\u00e9", "summary": 'S "q"', "detail": "D"}
    assert tc.content_hash(c) == hashlib.sha256(raw).hexdigest()


def test_lineage_bytes_create_and_update() -> None:
    src = (SourceRef("s1", H),)
    assert tc.lineage_bytes(src, None) == (
        b'{"artifacts":[],"sources":[{"content_hash":"' + H.encode() + b'","source_id":"s1"}]}')
    upd = tc.lineage_bytes(src, TopicRef("topic_art_x", 2))
    assert json.loads(upd)["artifacts"] == [
        {"artifact_id": "topic_art_x", "family": "topic-memory", "revision": 2}]


def test_make_topic_id_is_fresh_and_checked() -> None:
    tid = tc.make_topic_id(1_700_000_000_000, bytes(range(10)))
    assert tid.startswith("topic_art_") and len(tid) == len("topic_art_") + 26
    assert tc.is_fresh_topic_id(tid)
    assert tc.check_topic_id(tid) == tid
    assert not tc.is_fresh_topic_id("topic_art_01")
    with pytest.raises(ValueError):
        tc.make_topic_id(1, b"short")


def test_check_source_refs_wants_sorted_unique_valid() -> None:
    a, b = SourceRef("a", H), SourceRef("b", H)
    assert tc.check_source_refs((a, b)) == (a, b)
    for bad in [(), (b, a), (a, a), (SourceRef("a", "x"),), (SourceRef("a b", H),), [a]]:
        with pytest.raises(InvalidInputError):
            tc.check_source_refs(bad)
