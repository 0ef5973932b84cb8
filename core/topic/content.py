"""Topic content rules (Topic Memory RFC, "Evolution operations and model output";
TOPIC-MEMORY.md, "Size limits", "scope_id"): normalization, limits, canonical bytes,
hashes, ids and Scope ids. STUB: signatures fixed, bodies to write."""

from __future__ import annotations

from powercontext.core.models import SourceRef
from powercontext.core.topic.models import TopicMemoryContent, TopicRef

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_SCOPE_CHARS",
    "MAX_SUMMARY_CHARS",
    "MAX_TITLE_CHARS",
    "TOPIC_ID_PREFIX",
    "check_ref",
    "check_scope_id",
    "content_bytes",
    "content_hash",
    "lineage_bytes",
    "make_content",
    "make_topic_id",
]

TOPIC_ID_PREFIX = "topic_art"
MAX_SCOPE_CHARS = 256
MAX_TITLE_CHARS = 256
MAX_SUMMARY_CHARS = 2048
MAX_DETAIL_CHARS = 65536


def check_scope_id(value: object, field: str = "scope_id") -> str:
    """The NFC form of a Scope id: 1-256 characters after NFC, printable, no control
    characters; InvalidInputError naming ``field`` otherwise."""
    raise NotImplementedError


def check_ref(value: object, field: str = "artifact") -> TopicRef:
    """``value`` (a TopicRef) checked: family ``topic-memory``, an id, revision an int
    >= 1 (not a bool). InvalidInputError naming the field."""
    raise NotImplementedError


def make_content(title: object, summary: object, detail: object) -> TopicMemoryContent:
    """Normalized (NFC) content within the limits; InvalidInputError naming the field
    for a non-string, empty (after strip) or over-long field, a lone surrogate or NUL."""
    raise NotImplementedError


def content_bytes(content: TopicMemoryContent) -> bytes:
    """RFC 8785 canonical bytes of ``{"title", "summary", "detail"}``."""
    raise NotImplementedError


def content_hash(content: TopicMemoryContent) -> str:
    """Lowercase hex SHA-256 of :func:`content_bytes` (no prefix)."""
    raise NotImplementedError


def lineage_bytes(sources: tuple[SourceRef, ...], based_on: TopicRef | None) -> bytes:
    """Canonical bytes of the Revision lineage stored with it: ``{"sources": [...],
    "artifacts": [based_on]}`` (sorted, unique)."""
    raise NotImplementedError


def make_topic_id(time_ms: int, entropy: bytes) -> str:
    """A new ``topic_art_...`` id (same rules as Memory ids)."""
    raise NotImplementedError
