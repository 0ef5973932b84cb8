"""core.topic.publication: the pure checks of a publication batch (Topic Memory RFC,
"Storage, Head, and atomic activation")."""

from __future__ import annotations

import math

import attrs
import pytest

from powercontext.core import analyzer
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import EmbeddingProfile, SourceRef
from powercontext.core.topic import projection as pj
from powercontext.core.topic.content import make_content, make_topic_id
from powercontext.core.topic.models import (
    PublicationGuards,
    TopicMemoryContent,
    TopicPublication,
    TopicRef,
    TopicWrite,
)
from powercontext.core.topic.publication import verify_publication

A = analyzer.V1
PROFILE = EmbeddingProfile("p", "m", 2)
SRC = (SourceRef("s1", "1" * 64), SourceRef("s2", "0" * 64))
CONTENT = make_content("Title", "Summary", "Detail text. " * 300)
TID = make_topic_id(1_700_000_000_000, bytes(10))
TID2 = make_topic_id(1_700_000_000_001, bytes(10))


def create(tid: str = TID, content: TopicMemoryContent = CONTENT) -> TopicWrite:
    return TopicWrite("create", "repo:/x", TopicRef(tid, 1), None, content, SRC,
                      pj.build_projection(content, A))


def update(base: int = 1, revision: int = 2) -> TopicWrite:
    return TopicWrite("update", "repo:/x", TopicRef(TID, revision), TopicRef(TID, base),
                      CONTENT, SRC, pj.build_projection(CONTENT, A))


def pub(*writes: TopicWrite) -> TopicPublication:
    return TopicPublication(writes)


def test_a_valid_batch_of_create_and_update_passes() -> None:
    verify_publication(pub(create(TID2), update()), A, "fts", None)


def test_a_hybrid_batch_passes_with_its_vectors() -> None:
    n = len(pj.embedding_texts(CONTENT))
    vectors = [(math.cos(i), math.sin(i)) for i in range(n)]
    w = attrs.evolve(create(), projection=pj.build_projection(CONTENT, A, vectors, PROFILE))
    verify_publication(pub(w), A, "hybrid", PROFILE)
    with pytest.raises(IntegrityError):
        verify_publication(pub(create()), A, "hybrid", PROFILE)


@pytest.mark.parametrize(("batch", "field"), [
    (TopicPublication(()), "publication.writes"),
    (TopicPublication([create()]), "publication.writes"),  # type: ignore[arg-type]
    (TopicPublication((create(),), guards=None), "publication.guards"),  # type: ignore[arg-type]
    ("nope", "publication"),
    (pub(update(), attrs.evolve(update(), scope_id="repo:/x")), "writes[1].ref.artifact_id"),
    (pub(create(), create()), "writes[1].ref.artifact_id"),
    (pub(attrs.evolve(create(), op="delete")), "writes[0].op"),
    (pub("w"), "writes[0]"),  # type: ignore[arg-type]
    (pub(attrs.evolve(create(), scope_id="")), "writes[0].scope_id"),
    (pub(attrs.evolve(create(), scope_id="cafe\u0301")), "writes[0].scope_id"),
    (pub(attrs.evolve(create(), ref=TopicRef(TID, 2))), "writes[0].ref.revision"),
    (pub(attrs.evolve(create(), ref=TopicRef("topic_art_custom", 1))),
     "writes[0].ref.artifact_id"),
    (pub(attrs.evolve(create(), ref=TopicRef(TID, 1, "memory"))), "writes[0].ref.family"),
    (pub(attrs.evolve(create(), base=TopicRef(TID, 1))), "writes[0].base"),
    (pub(attrs.evolve(update(), base=None)), "writes[0].base"),
    (pub(update(base=1, revision=3)), "writes[0].ref.revision"),
    (pub(update(base=0, revision=1)), "writes[0].base.revision"),
    (pub(attrs.evolve(update(), base=TopicRef(TID2, 1))), "writes[0].base.artifact_id"),
    (pub(attrs.evolve(create(), content=TopicMemoryContent(" Title", "Summary", "D"))),
     "writes[0].content"),
    (pub(attrs.evolve(create(), content=TopicMemoryContent("", "Summary", "D"))),
     "writes[0].content.title"),
    (pub(attrs.evolve(create(), sources=())), "writes[0].sources"),
    (pub(attrs.evolve(create(), sources=SRC[::-1])), "writes[0].sources"),
    (pub(attrs.evolve(create(), sources=(SRC[0], SRC[0]))), "writes[0].sources"),
    (pub(attrs.evolve(create(), sources=(SourceRef("s", "x"),))),
     "writes[0].sources[0].content_hash"),
])
def test_bad_batches_are_refused_naming_the_field(batch: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        verify_publication(batch, A, "fts", None)  # type: ignore[arg-type]
    assert info.value.field == field


def test_a_forged_or_stale_projection_is_refused() -> None:
    other = make_content("Other", "Summary", "Another detail.")
    w = attrs.evolve(create(), projection=pj.build_projection(other, A))
    with pytest.raises(IntegrityError):
        verify_publication(pub(w), A, "fts", None)
    with pytest.raises(IntegrityError):  # built under another analyzer
        verify_publication(pub(create()), analyzer.V1_PORTER, "fts", None)


def test_guards_are_not_judged_here() -> None:
    verify_publication(TopicPublication((create(),), PublicationGuards(cursor=object())),
                       A, "fts", None)
