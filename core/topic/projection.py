"""The projections of one Topic Revision (Topic Memory RFC, "Detail chunks and
deployment-enabled retrieval channels", "Storage, Head, and atomic activation").

A projection is prepared outside the write transaction (:func:`build_projection`) and
re-checked at the write boundary (:func:`check_projection`), which recomputes the chunk
sequence and the Analyzer text of title + summary and refuses any difference.

The title + summary text (:func:`topic_text`) is ``title + "\\n\\n" + summary``: a blank
line is a boundary for every Analyzer rule (no identifier or CJK run joins the last
word of the title to the first of the summary), and it is how a reader would lay them
out for an embedding model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from powercontext.core import canonical
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import IntegrityError, InvalidInputError
from powercontext.core.models import EmbeddingProfile, EmbeddingVector
from powercontext.core.topic.chunks import CHUNK_POLICY_VERSION, chunk_detail
from powercontext.core.topic.models import (
    ChunkProjection,
    DetailChunk,
    ShapeKind,
    TopicMemoryContent,
    TopicProjection,
)
from powercontext.core.vectors import check_vector

__all__ = ["build_projection", "check_projection", "embedding_texts", "profile_fingerprint",
           "topic_text"]

_SEPARATOR = "\n\n"


def topic_text(content: TopicMemoryContent) -> str:
    """The text of the title + summary channels (what is analyzed and embedded):
    ``title + "\\n\\n" + summary``."""
    return content.title + _SEPARATOR + content.summary


def embedding_texts(content: TopicMemoryContent) -> tuple[str, ...]:
    """What a hybrid deployment embeds, in order: :func:`topic_text`, then the text of
    each chunk of the Detail (no title prepended; Topic Memory RFC, "Detail chunks"):
    ``1 + len(chunk_detail(content.detail))`` texts."""
    return (topic_text(content), *(c.text for c in chunk_detail(content.detail)))


def profile_fingerprint(profile: EmbeddingProfile) -> str:
    """Lowercase hex SHA-256 of the profile's canonical bytes
    (:func:`powercontext.core.canonical.profile_bytes`), no prefix."""
    return canonical.sha256_hex(canonical.profile_bytes(profile))


def build_projection(content: TopicMemoryContent, analyzer: Analyzer,
                     vectors: Sequence[EmbeddingVector] | None = None,
                     profile: EmbeddingProfile | None = None) -> TopicProjection:
    """The projection of ``content`` under ``analyzer``: chunk policy
    :data:`~powercontext.core.topic.chunks.CHUNK_POLICY_VERSION`, the Analyzer text of
    :func:`topic_text`, each chunk with its Analyzer text. For a hybrid deployment give
    both ``vectors`` (one per :func:`embedding_texts`, in that order: the topic vector
    then one per chunk) and ``profile``; each vector is checked against the profile
    (:func:`powercontext.core.vectors.check_vector`). InvalidInputError (field
    ``vectors``) for a wrong count, a bad vector, or only one of the two given."""
    chunks = chunk_detail(content.detail)
    text = analyzer.searchable_text(topic_text(content))
    if vectors is None and profile is None:
        return TopicProjection(CHUNK_POLICY_VERSION, text, tuple(
            ChunkProjection(c, analyzer.searchable_text(c.text)) for c in chunks))
    if vectors is None or profile is None:
        raise InvalidInputError("vectors", "a hybrid projection needs both the vectors and "
                                "the embedding profile")
    vectors = tuple(tuple(v) for v in vectors)
    if len(vectors) != 1 + len(chunks):
        raise InvalidInputError(
            "vectors", f"{len(vectors)} vectors for {1 + len(chunks)} embedding texts")
    for v in vectors:
        check_vector(v, profile)
    return TopicProjection(
        CHUNK_POLICY_VERSION, text,
        tuple(ChunkProjection(c, analyzer.searchable_text(c.text), v)
              for c, v in zip(chunks, vectors[1:], strict=True)),
        topic_vector=vectors[0], embedding_fingerprint=profile_fingerprint(profile))


def _vector_problem(vector: object, profile: EmbeddingProfile) -> str | None:
    if not isinstance(vector, tuple):
        return f"is a {type(vector).__name__}, not a tuple of floats"
    if any(isinstance(x, bool) or not isinstance(x, float | int) for x in vector):
        return "holds a non-number"
    if not all(math.isfinite(x) for x in vector):
        return "holds NaN or infinity"
    try:
        check_vector(vector, profile)
    except InvalidInputError as exc:
        return str(exc).removeprefix("vector: ")
    return None


def check_projection(content: TopicMemoryContent, projection: TopicProjection,
                     analyzer: Analyzer, shape: ShapeKind,
                     profile: EmbeddingProfile | None) -> None:
    """Refuse a projection that is not exactly what :func:`build_projection` makes for
    ``content`` under ``analyzer`` and this shape (Topic Memory RFC, "Storage, Head, and
    atomic activation": the repository "rejects any incomplete or forged projection").

    Raises IntegrityError naming what differs: the chunk policy; a missing, extra or
    reordered chunk; a chunk's ordinal, offsets or text; a chunk's or the topic's fts
    text. Under ``fts``: any vector or fingerprint. Under ``hybrid`` (``profile``
    required): a missing topic or chunk vector, a vector of the wrong dimension,
    non-finite or not unit length (:func:`powercontext.core.vectors.check_vector`), or a
    fingerprint other than :func:`profile_fingerprint` of ``profile``. Vectors are not
    compared with any model's output: the write boundary cannot re-embed."""
    if not isinstance(projection, TopicProjection):
        raise IntegrityError(f"projection: a {type(projection).__name__}, not a "
                             "TopicProjection")
    if projection.chunk_policy != CHUNK_POLICY_VERSION:
        raise IntegrityError(f"projection.chunk_policy: {projection.chunk_policy!r}, "
                             f"expected {CHUNK_POLICY_VERSION!r}")
    expected = chunk_detail(content.detail)
    got = projection.chunks
    if not isinstance(got, tuple) or not all(
            isinstance(c, ChunkProjection) and isinstance(c.chunk, DetailChunk) for c in got):
        raise IntegrityError("projection.chunks: not a tuple of ChunkProjection")
    if len(got) != len(expected):
        raise IntegrityError(f"projection.chunks: {len(got)} chunks, the chunk policy "
                             f"gives {len(expected)}")
    for i, (cp, want) in enumerate(zip(got, expected, strict=True)):
        c = cp.chunk
        if (c.ordinal, c.start, c.end) != (want.ordinal, want.start, want.end):
            raise IntegrityError(
                f"projection.chunks[{i}]: ordinal/offsets ({c.ordinal}, {c.start}, {c.end}), "
                f"expected ({want.ordinal}, {want.start}, {want.end})")
        if c.text != want.text:
            raise IntegrityError(f"projection.chunks[{i}].text differs from the Detail "
                                 f"[{want.start}:{want.end}]")
        if cp.fts_text != analyzer.searchable_text(want.text):
            raise IntegrityError(f"projection.chunks[{i}].fts_text is not the "
                                 f"{analyzer.version} text of the chunk")
    if projection.topic_text != analyzer.searchable_text(topic_text(content)):
        raise IntegrityError(f"projection.topic_text is not the {analyzer.version} text of "
                             "title + summary")
    if shape == "fts":
        if projection.topic_vector is not None or any(cp.vector is not None for cp in got):
            raise IntegrityError("projection: vectors in an fts retrieval shape")
        if projection.embedding_fingerprint is not None:
            raise IntegrityError("projection.embedding_fingerprint: set in an fts "
                                 "retrieval shape")
        return
    if shape != "hybrid":
        raise IntegrityError(f"retrieval shape {shape!r}: expected 'fts' or 'hybrid'")
    if profile is None:
        raise IntegrityError("retrieval shape hybrid without an embedding profile")
    fingerprint = profile_fingerprint(profile)
    if projection.embedding_fingerprint != fingerprint:
        raise IntegrityError(
            f"projection.embedding_fingerprint: {projection.embedding_fingerprint!r}, the "
            f"deployment's profile has {fingerprint!r}")
    if projection.topic_vector is None:
        raise IntegrityError("projection.topic_vector: missing in a hybrid retrieval shape")
    problem = _vector_problem(projection.topic_vector, profile)
    if problem:
        raise IntegrityError(f"projection.topic_vector: {problem}")
    for i, cp in enumerate(got):
        if cp.vector is None:
            raise IntegrityError(f"projection.chunks[{i}].vector: missing in a hybrid "
                                 "retrieval shape")
        problem = _vector_problem(cp.vector, profile)
        if problem:
            raise IntegrityError(f"projection.chunks[{i}].vector: {problem}")
