"""Checks of a publication batch (Topic Memory RFC, "Storage, Head, and atomic
activation"). STUB."""

from __future__ import annotations

from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.models import ShapeKind, TopicPublication

__all__ = ["verify_publication"]


def verify_publication(publication: TopicPublication, analyzer: Analyzer, shape: ShapeKind,
                       profile: EmbeddingProfile | None) -> None:
    """Everything about a batch that needs no database: refs, ops, content, lineage,
    distinct Topics, and each projection (:func:`.projection.check_projection`)."""
    raise NotImplementedError
