"""Properties of publication checks (Topic Memory RFC, "Storage, Head, and atomic
activation"): every well-formed batch of CREATEs and UPDATEs passes; a batch with two
writes for one Topic, an UPDATE that does not follow its base, or a projection of other
content is refused."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext.core import analyzer
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import SourceRef
from powercontext.core.topic.content import make_content, make_topic_id
from powercontext.core.topic.models import TopicPublication, TopicRef, TopicWrite
from powercontext.core.topic.projection import build_projection
from powercontext.core.topic.publication import verify_publication

A = analyzer.V1
TEXT = st.sampled_from(["alpha", "beta gamma.", "中文 detail", "# H\n\nbody", "x" * 3000])
SOURCES = st.lists(st.sampled_from([SourceRef(f"s{i}", f"{i:x}" * 64) for i in range(1, 6)]),
                   min_size=1, unique=True).map(
    lambda refs: tuple(sorted(refs, key=lambda r: (r.source_id.encode(), r.content_hash))))


@st.composite
def writes(draw: st.DrawFn, index: int) -> TopicWrite:
    short = TEXT.filter(lambda t: len(t) < 100)
    content = make_content(draw(short), draw(short), draw(TEXT))
    tid = make_topic_id(1_700_000_000_000 + index, bytes(10))
    if draw(st.booleans()):
        ref, base, op = TopicRef(tid, 1), None, "create"
    else:
        revision = draw(st.integers(1, 1000))
        ref, base, op = TopicRef(tid, revision + 1), TopicRef(tid, revision), "update"
    return TopicWrite(op, draw(st.sampled_from(["repo:/a", "s", "\u00e9"])), ref, base,
                      content, draw(SOURCES), build_projection(content, A))


@st.composite
def batches(draw: st.DrawFn) -> TopicPublication:
    n = draw(st.integers(1, 4))
    return TopicPublication(tuple(draw(writes(i)) for i in range(n)))


@given(batches())
def test_well_formed_batches_pass(batch: TopicPublication) -> None:
    verify_publication(batch, A, "fts", None)


@given(batches(), st.data())
def test_broken_batches_are_refused(batch: TopicPublication, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(batch.writes) - 1))
    w = batch.writes[i]
    kind = data.draw(st.sampled_from(["duplicate", "revision", "projection"]))
    if kind == "duplicate":
        broken = (*batch.writes, w)
        error: type[Exception] = InvalidInputError
    elif kind == "revision":
        broken = tuple(attrs.evolve(x, ref=attrs.evolve(x.ref, revision=x.ref.revision + 1))
                       if j == i else x for j, x in enumerate(batch.writes))
        error = InvalidInputError
    else:
        other = make_content(w.content.title + " other", w.content.summary, w.content.detail)
        broken = tuple(attrs.evolve(x, projection=build_projection(other, A)) if j == i else x
                       for j, x in enumerate(batch.writes))
        error = IntegrityError
    with pytest.raises(error):
        verify_publication(TopicPublication(broken), A, "fts", None)
