"""Topic search ranking (Topic Memory RFC, "Detail chunks and deployment-enabled
retrieval channels"; TOPIC-MEMORY.md, "Topic search"). STUB."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from powercontext.core.topic.models import TopicChannel, TopicRef

__all__ = ["MAX_LIMIT", "ChannelRow", "FusedTopic", "check_limit", "collapse", "fuse_channels"]

MAX_LIMIT = 20


@attrs.frozen
class ChannelRow:
    """One active projection row a channel returned, in the engine's order: the Topic
    ref, the chunk ordinal (None for the title + summary channels), the row's Analyzer
    text (fts) and its L2 ``distance`` (vector)."""

    ref: TopicRef
    ordinal: int | None
    fts_text: str
    distance: float | None = None


@attrs.frozen
class FusedTopic:
    ref: TopicRef
    score: float
    matched_by: tuple[TopicChannel, ...]
    best_chunk: Mapping[TopicChannel, int]  # detail channel -> ordinal of its best chunk


def check_limit(value: object) -> int:
    """``limit`` as an int in 1..20; InvalidInputError for 0, 21, a bool, a string."""
    raise NotImplementedError


def collapse(channel: TopicChannel, rows: Sequence[ChannelRow], terms: Sequence[str],
             budget: int) -> list[ChannelRow]:
    """Admitted rows, one per Topic (its first, i.e. best), at most ``budget``."""
    raise NotImplementedError


def fuse_channels(channels: Mapping[TopicChannel, Sequence[ChannelRow]],
                  limit: int) -> list[FusedTopic]:
    """RRF (k = 60) over collapsed channels; ties by score, UTF-8 artifact_id, revision."""
    raise NotImplementedError
