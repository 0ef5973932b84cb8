"""Every Topic value and prepared item comes back from its JSON shape unchanged:
``from_json(json.loads(json.dumps(to_json(x))), type(x)) == x`` for Topic refs,
SourceRefs, hits, search results, Revisions, LeftOuts, WindowOutcomes, Memory item refs,
prepared items and prepared contexts; and a shape with a changed type or an unknown key
is refused with InvalidInputError, never coerced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import SourceRef
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.shapes import from_json, to_json
from powercontext.core.topic.models import (
    CHANNELS_HYBRID,
    TopicHit,
    TopicMemoryContent,
    TopicRef,
    TopicRevision,
    TopicSearchResult,
)
from powercontext.core.topic.report import LeftOut, WindowOutcome

_ULID = "0123456789abcdefghjkmnpqrstvwxyz"
_ID = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.:", min_size=1, max_size=40)
_TEXT = st.text(max_size=40)
_INT = st.integers(min_value=0, max_value=2**53 - 1)
_REV = st.integers(min_value=1, max_value=2**53 - 1)
_HASH = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)

topic_refs = st.builds(TopicRef, st.text(alphabet=_ULID, min_size=26, max_size=26)
                       .map(lambda s: "topic_art_" + s), _REV)
source_refs = st.builds(SourceRef, _ID, _HASH)
channels = st.lists(st.sampled_from(CHANNELS_HYBRID), min_size=1, max_size=4, unique=True
                    ).map(lambda cs: tuple(c for c in CHANNELS_HYBRID if c in cs))
hits = st.builds(TopicHit, topic_refs, _TEXT, _TEXT, st.none() | _TEXT,
                 st.floats(allow_nan=False, allow_infinity=False), channels)
results = st.builds(TopicSearchResult, st.lists(hits, max_size=3).map(tuple), channels)
revisions = st.builds(TopicRevision, _TEXT, topic_refs,
                      st.builds(TopicMemoryContent, _TEXT, _TEXT, _TEXT), _HASH,
                      st.lists(source_refs, max_size=3).map(tuple), st.none() | topic_refs,
                      _TEXT)
left_outs = st.builds(LeftOut, _INT, _ID, st.sampled_from(["uncited", "condensed"]))
windows = st.builds(WindowOutcome, _TEXT, _INT, _INT, st.lists(topic_refs, max_size=2)
                    .map(tuple), st.lists(topic_refs, max_size=2).map(tuple), _INT, _INT,
                    st.lists(left_outs, max_size=2).map(tuple))
entry_refs = st.builds(MemoryEntryRef, _ID, _REV, _ID, _ID)
items = st.one_of(
    st.builds(ContextItem, st.just("memory"), st.integers(1, 8), _TEXT, _TEXT, st.none(),
              entry_refs),
    st.builds(ContextItem, st.just("topic-memory"), st.integers(1, 8), _TEXT, _TEXT,
              st.none() | _TEXT, topic_refs))
prepared = st.builds(PreparedContext, _TEXT, _TEXT, st.lists(items, max_size=4).map(tuple),
                     _INT, _INT)
values = st.one_of(topic_refs, source_refs, hits, results, revisions, left_outs, windows,
                   entry_refs, items, prepared)


def wire(value: Any) -> Any:
    """The shape as a client receives it: through JSON text."""
    return json.loads(json.dumps(to_json(value), ensure_ascii=False))


@given(values)
def test_every_value_comes_back_from_its_json_shape(value: Any) -> None:
    assert from_json(wire(value), type(value)) == value


@given(st.one_of(hits, revisions, items), st.data())
def test_the_own_ref_is_printed_as_artifact_and_read_back_from_there(value: Any,
                                                                    data: Any) -> None:
    shaped = wire(value)
    assert "artifact" in shaped and "ref" not in shaped
    assert from_json(shaped["artifact"], type(value.ref)) == value.ref


def _mutations(shaped: dict[str, Any]) -> list[dict[str, Any]]:
    out = [dict(shaped, unknown=1)]
    for key, v in shaped.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out += [dict(shaped, **{key: str(v)}), dict(shaped, **{key: True})]
        elif isinstance(v, str):
            out.append(dict(shaped, **{key: 7}))
    return out


@given(st.one_of(topic_refs, entry_refs, source_refs, hits, left_outs))
def test_a_changed_type_or_an_unknown_key_is_refused_not_coerced(value: Any) -> None:
    for bad in _mutations(wire(value)):
        with pytest.raises(InvalidInputError):
            from_json(bad, type(value))


@pytest.mark.parametrize("bad", [
    {"family": "memory", "artifact_id": "topic_art_01jb0000000000000000000000", "revision": 1},
    {"family": "topic-memory", "artifact_id": "topic_art_01jb0000000000000000000000",
     "revision": 0},
    {"family": "topic-memory", "artifact_id": "topic_art_01jb0000000000000000000000",
     "revision": 1.0},
    {"family": "topic-memory", "artifact_id": "topic_art_01jb0000000000000000000000"},
    ["topic-memory", "topic_art_01jb0000000000000000000000", 1],
])
def test_a_topic_ref_is_exact(bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        from_json(bad, TopicRef)
