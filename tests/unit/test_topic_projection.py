"""core.topic.projection: texts, fingerprints, build and the write-boundary check that
refuses every kind of forged projection (Topic Memory RFC, "Storage, Head, and atomic
activation")."""

from __future__ import annotations

import functools
import hashlib
import math

import attrs
import pytest

from powercontext.core import analyzer, canonical
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic import projection as pj
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION, chunk_detail
from powercontext.core.topic.content import make_content
from powercontext.core.topic.models import ChunkProjection, DetailChunk, TopicProjection

A = analyzer.V1_PORTER
PROFILE = EmbeddingProfile("p", "m", 2)
OTHER = EmbeddingProfile("p", "m2", 2)
CONTENT = make_content("Deploy notes", "How we deploy ADR-0005.",
                       ("Para one. " * 150 + "\n\n") * 4 + "Last bit.")


def unit(i: int) -> tuple[float, float]:
    angle = i / 7
    return (math.cos(angle), math.sin(angle))


def hybrid(content=CONTENT) -> TopicProjection:  # type: ignore[no-untyped-def]
    n = len(pj.embedding_texts(content))
    return pj.build_projection(content, A, [unit(i) for i in range(n)], PROFILE)


def test_topic_text_and_embedding_texts() -> None:
    assert pj.topic_text(CONTENT) == "Deploy notes\n\nHow we deploy ADR-0005."
    texts = pj.embedding_texts(CONTENT)
    chunks = chunk_detail(CONTENT.detail)
    assert len(chunks) > 1
    assert texts == (pj.topic_text(CONTENT), *(c.text for c in chunks))


def test_profile_fingerprint_is_sha256_of_profile_bytes() -> None:
    assert pj.profile_fingerprint(PROFILE) == hashlib.sha256(
        canonical.profile_bytes(PROFILE)).hexdigest()
    assert pj.profile_fingerprint(PROFILE) != pj.profile_fingerprint(OTHER)


def test_build_fts_projection_is_checked_clean() -> None:
    p = pj.build_projection(CONTENT, A)
    assert p.chunk_policy == CHUNK_POLICY_VERSION
    assert p.topic_text == A.searchable_text(pj.topic_text(CONTENT))
    assert [cp.fts_text for cp in p.chunks] == [
        A.searchable_text(c.text) for c in chunk_detail(CONTENT.detail)]
    assert p.topic_vector is None and p.embedding_fingerprint is None
    pj.check_projection(CONTENT, p, A, "fts", None)
    pj.check_projection(CONTENT, p, A, "fts", PROFILE)


def test_build_hybrid_projection_is_checked_clean() -> None:
    p = hybrid()
    assert p.embedding_fingerprint == pj.profile_fingerprint(PROFILE)
    assert p.topic_vector == unit(0)
    assert all(cp.vector is not None for cp in p.chunks)
    pj.check_projection(CONTENT, p, A, "hybrid", PROFILE)


def test_build_refuses_wrong_vector_count_or_bad_vectors() -> None:
    n = len(pj.embedding_texts(CONTENT))
    for vectors in ([unit(0)] * (n - 1), [unit(0)] * (n + 1), [(1.0, 1.0)] * n,
                    [(1.0,)] * n):
        with pytest.raises(InvalidInputError):
            pj.build_projection(CONTENT, A, vectors, PROFILE)
    with pytest.raises(InvalidInputError):
        pj.build_projection(CONTENT, A, [unit(0)] * n, None)


def _chunks(p: TopicProjection, chunks: tuple[ChunkProjection, ...]) -> TopicProjection:
    return attrs.evolve(p, chunks=chunks)


@functools.cache
def _forgeries() -> dict[str, tuple[TopicProjection, str]]:
    f = pj.build_projection(CONTENT, A)
    h = hybrid()
    cs = f.chunks
    c0 = cs[0].chunk
    other = make_content("Other", "x", "y")
    return {
        "policy": (attrs.evolve(f, chunk_policy="topic-chunks-v0"), "fts"),
        "missing_chunk": (_chunks(f, cs[:-1]), "fts"),
        "extra_chunk": (_chunks(f, (*cs, cs[-1])), "fts"),
        "reordered": (_chunks(f, (cs[1], cs[0], *cs[2:])), "fts"),
        "wrong_text": (_chunks(f, (attrs.evolve(cs[0], chunk=attrs.evolve(
            c0, text=c0.text.upper())), *cs[1:])), "fts"),
        "wrong_offsets": (_chunks(f, (attrs.evolve(cs[0], chunk=DetailChunk(
            0, c0.start, c0.end - 1, c0.text[:-1])), *cs[1:])), "fts"),
        "wrong_chunk_fts": (_chunks(f, (attrs.evolve(cs[0], fts_text="forged"), *cs[1:])),
                            "fts"),
        "wrong_topic_fts": (attrs.evolve(f, topic_text=A.searchable_text("x")), "fts"),
        "other_analyzer_fts": (pj.build_projection(CONTENT, analyzer.V1), "fts"),
        "other_content": (pj.build_projection(other, A), "fts"),
        "vectors_in_fts": (h, "fts"),
        "fingerprint_in_fts": (attrs.evolve(f, embedding_fingerprint="0" * 64), "fts"),
        "no_vectors_in_hybrid": (f, "hybrid"),
        "missing_topic_vector": (attrs.evolve(h, topic_vector=None), "hybrid"),
        "missing_chunk_vector": (_chunks(h, (attrs.evolve(h.chunks[0], vector=None),
                                             *h.chunks[1:])), "hybrid"),
        "wrong_dimension": (attrs.evolve(h, topic_vector=(1.0, 0.0, 0.0)), "hybrid"),
        "non_finite": (_chunks(h, (attrs.evolve(h.chunks[0], vector=(math.nan, 1.0)),
                                   *h.chunks[1:])), "hybrid"),
        "infinite": (attrs.evolve(h, topic_vector=(math.inf, 0.0)), "hybrid"),
        "non_unit": (attrs.evolve(h, topic_vector=(0.5, 0.5)), "hybrid"),
        "bool_vector": (attrs.evolve(h, topic_vector=(True, False)), "hybrid"),
        "list_vector": (attrs.evolve(h, topic_vector=[1.0, 0.0]), "hybrid"),
        "wrong_fingerprint": (attrs.evolve(h, embedding_fingerprint=pj.profile_fingerprint(
            OTHER)), "hybrid"),
        "no_fingerprint": (attrs.evolve(h, embedding_fingerprint=None), "hybrid"),
    }


@pytest.mark.parametrize("kind", sorted(_forgeries()))
def test_check_projection_refuses_each_forgery(kind: str) -> None:
    forged, shape = _forgeries()[kind]
    with pytest.raises(IntegrityError):
        pj.check_projection(CONTENT, forged, A, shape, PROFILE)  # type: ignore[arg-type]


def test_check_projection_refuses_hybrid_without_profile_and_unknown_shape() -> None:
    with pytest.raises(IntegrityError):
        pj.check_projection(CONTENT, hybrid(), A, "hybrid", None)
    with pytest.raises(IntegrityError):
        pj.check_projection(CONTENT, hybrid(), A, "vector", PROFILE)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError):
        pj.check_projection(CONTENT, "p", A, "fts", None)  # type: ignore[arg-type]
