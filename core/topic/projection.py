"""The projections of one Topic Revision (Topic Memory RFC, "Storage, Head, and atomic
activation"). STUB: signatures fixed, bodies to write."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, EmbeddingVector
from powercontext.core.topic.models import ShapeKind, TopicMemoryContent, TopicProjection

__all__ = ["build_projection", "check_projection", "embedding_texts", "profile_fingerprint",
           "topic_text"]


def topic_text(content: TopicMemoryContent) -> str:
    """The text of the title + summary channels (what is analyzed and embedded)."""
    raise NotImplementedError


def embedding_texts(content: TopicMemoryContent) -> tuple[str, ...]:
    """What a hybrid deployment embeds, in order: :func:`topic_text`, then each chunk's
    text (no title prepended)."""
    raise NotImplementedError


def profile_fingerprint(profile: EmbeddingProfile) -> str:
    """Lowercase hex SHA-256 of the profile's canonical bytes."""
    raise NotImplementedError


def build_projection(content: TopicMemoryContent, analyzer: Analyzer,
                     vectors: Sequence[EmbeddingVector] | None = None,
                     profile: EmbeddingProfile | None = None) -> TopicProjection:
    """The projection of ``content``; ``vectors`` (one per :func:`embedding_texts`) and
    ``profile`` for a hybrid deployment."""
    raise NotImplementedError


def check_projection(content: TopicMemoryContent, projection: TopicProjection,
                     analyzer: Analyzer, shape: ShapeKind,
                     profile: EmbeddingProfile | None) -> None:
    """Refuse (IntegrityError) a projection that is not exactly what
    :func:`build_projection` makes for ``content`` under this shape."""
    raise NotImplementedError
