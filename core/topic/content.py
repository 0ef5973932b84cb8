"""Topic content rules (Topic Memory RFC, "Evolution operations and model output";
TOPIC-MEMORY.md, "Size limits", "scope_id", "A separate reference type"):
normalization, limits, canonical bytes, hashes, ids and Scope ids.

Limits are code points after NFC and trimming. They belong to the chunk policy
version (:mod:`.chunks`): with ``MAX_DETAIL_CHARS`` the window fallback never makes
more than ``MAX_CHUNKS`` chunks, and ``MAX_TITLE_CHARS + 2 + MAX_SUMMARY_CHARS`` code
points of title + summary keep their Analyzer v1 text within the same full-text column
bound as one chunk (see :data:`MAX_TOPIC_FTS_CHARS`). Over-long content fails closed
(InvalidInputError); nothing is ever truncated.
"""

from __future__ import annotations

import re

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import SourceRef
from powercontext.core.topic.chunks import FTS_CHARS_PER_CODE_POINT
from powercontext.core.topic.models import TOPIC_FAMILY, TopicMemoryContent, TopicRef
from powercontext.core.topic.scope import MAX_SCOPE_CHARS, check_scope_id, nfc_text

__all__ = [
    "MAX_DETAIL_CHARS",
    "MAX_SCOPE_CHARS",
    "MAX_SUMMARY_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_TOPIC_FTS_CHARS",
    "MAX_TOPIC_TEXT_CHARS",
    "TOPIC_ID_PREFIX",
    "check_ref",
    "check_revision",
    "check_scope_id",
    "check_source_refs",
    "check_topic_id",
    "content_bytes",
    "content_hash",
    "is_fresh_topic_id",
    "lineage_bytes",
    "make_content",
    "make_topic_id",
]

TOPIC_ID_PREFIX = "topic_art"
MAX_TITLE_CHARS = 256
MAX_SUMMARY_CHARS = 2048
#: 32,768 code points: the window fallback of ``topic-chunks-v1`` makes at most 19
#: chunks of it (the arithmetic is in :mod:`.chunks`), well within MAX_CHUNKS = 48.
MAX_DETAIL_CHARS = 32768
#: Code points of :func:`powercontext.core.topic.projection.topic_text` at most
#: (title + "\n\n" + summary).
MAX_TOPIC_TEXT_CHARS = MAX_TITLE_CHARS + 2 + MAX_SUMMARY_CHARS
#: Worst-case length (ASCII characters = bytes) of the Analyzer text of a topic text:
#: at most ``FTS_CHARS_PER_CODE_POINT`` (26, see :mod:`.chunks`) per code point, 59,956,
#: within the same full-text column as a chunk's (``chunks.FTS_COLUMN_BYTES``).
MAX_TOPIC_FTS_CHARS = FTS_CHARS_PER_CODE_POINT * MAX_TOPIC_TEXT_CHARS

_PREFIX = TOPIC_ID_PREFIX + "_"
#: What :func:`make_topic_id` makes: the prefix and 26 lowercase Crockford base32
#: characters (48 bits of milliseconds, 80 of entropy).
_FRESH_ID = re.compile(r"topic_art_[0-9a-hjkmnp-tv-z]{26}")




def check_topic_id(value: object, field: str = "artifact_id") -> str:
    """A Topic artifact id: an id by :func:`powercontext.core.canonical.check_id`
    (1..128 printable ASCII characters, no spaces) that starts with ``topic_art_``.
    InvalidInputError naming ``field`` otherwise."""
    text = canonical.check_id(value, field)
    if not text.startswith(_PREFIX) or len(text) == len(_PREFIX):
        raise InvalidInputError(field, f"must be a Topic id ({_PREFIX}...), got {text!r}")
    return text


def is_fresh_topic_id(artifact_id: str) -> bool:
    """Whether ``artifact_id`` has exactly the form :func:`make_topic_id` gives."""
    return _FRESH_ID.fullmatch(artifact_id) is not None


def check_revision(value: object, field: str = "revision") -> int:
    """An int (not a bool) in 1..2**53-1. InvalidInputError naming ``field``."""
    return canonical.check_json_int(value, field, minimum=1)


def check_ref(value: object, field: str = "artifact") -> TopicRef:
    """``value`` checked as an exact Topic reference: a :class:`TopicRef` of family
    ``topic-memory`` whose artifact_id passes :func:`check_topic_id` and whose revision
    is an int >= 1 (not a bool). InvalidInputError naming ``field`` (or
    ``field.family`` / ``.artifact_id`` / ``.revision``) otherwise. A Memory
    :class:`~powercontext.core.models.ArtifactRef` is not a TopicRef."""
    if not isinstance(value, TopicRef):
        raise InvalidInputError(field, f"must be a TopicRef, got {type(value).__name__}")
    if value.family != TOPIC_FAMILY:
        raise InvalidInputError(f"{field}.family",
                                f"must be {TOPIC_FAMILY!r}, got {value.family!r}")
    check_topic_id(value.artifact_id, f"{field}.artifact_id")
    check_revision(value.revision, f"{field}.revision")
    return value


def _field(value: object, field: str, limit: int) -> str:
    text = nfc_text(value, field).strip()
    if not text:
        raise InvalidInputError(field, "is empty after NFC normalization and trimming")
    if len(text) > limit:
        raise InvalidInputError(
            field, f"is {len(text)} characters; at most {limit} are allowed (nothing is "
            "truncated)")
    return text


def make_content(title: object, summary: object, detail: object) -> TopicMemoryContent:
    """Normalized content (Topic Memory RFC, "Evolution operations and model output"):
    each field NFC then trimmed of surrounding whitespace, non-empty, at most
    MAX_TITLE_CHARS / MAX_SUMMARY_CHARS / MAX_DETAIL_CHARS code points, no lone
    surrogate, no NUL. InvalidInputError naming ``title``, ``summary`` or ``detail``
    otherwise. Idempotent: ``make_content(*fields(c)) == c`` for a made ``c``."""
    return TopicMemoryContent(
        title=_field(title, "title", MAX_TITLE_CHARS),
        summary=_field(summary, "summary", MAX_SUMMARY_CHARS),
        detail=_field(detail, "detail", MAX_DETAIL_CHARS),
    )


def content_bytes(content: TopicMemoryContent) -> bytes:
    """RFC 8785 canonical bytes of exactly ``{"detail", "summary", "title"}`` (members
    in RFC 8785 order). InvalidInputError (field ``content``) for a value RFC 8785
    cannot carry (a lone surrogate)."""
    return canonical.canonical_dumps(
        {"detail": content.detail, "summary": content.summary, "title": content.title},
        "content")


def content_hash(content: TopicMemoryContent) -> str:
    """Lowercase hex SHA-256 of :func:`content_bytes`, with no prefix, so anyone holding
    the spec recomputes it."""
    return canonical.sha256_hex(content_bytes(content))


def check_source_refs(value: object, field: str = "sources") -> tuple[SourceRef, ...]:
    """A non-empty tuple of SourceRefs with valid ids and hashes, sorted by
    :func:`powercontext.core.canonical.sort_source_refs` order and unique.
    InvalidInputError naming ``field`` otherwise."""
    if not isinstance(value, tuple) or not value:
        raise InvalidInputError(field, "must be a non-empty tuple of SourceRefs")
    for i, ref in enumerate(value):
        if not isinstance(ref, SourceRef):
            raise InvalidInputError(f"{field}[{i}]",
                                    f"must be a SourceRef, got {type(ref).__name__}")
        canonical.check_id(ref.source_id, f"{field}[{i}].source_id")
        canonical.check_hash(ref.content_hash, f"{field}[{i}].content_hash")
    if canonical.sort_source_refs(value) != value:
        raise InvalidInputError(field, "must be sorted (UTF-8 source_id, then content_hash) "
                                "and unique")
    return value


def lineage_bytes(sources: tuple[SourceRef, ...], based_on: TopicRef | None) -> bytes:
    """Canonical bytes of the Revision lineage stored with it (RFC 8785):
    ``{"artifacts": [], "sources": [...]}`` for a CREATE, ``{"artifacts":
    [{"artifact_id", "family", "revision"}], "sources": [...]}`` for an UPDATE; each
    source ``{"content_hash", "source_id"}`` in the given (sorted, unique) order."""
    artifacts = [] if based_on is None else [
        {"artifact_id": based_on.artifact_id, "family": based_on.family,
         "revision": based_on.revision}]
    return canonical.canonical_dumps(
        {"artifacts": artifacts,
         "sources": [{"content_hash": r.content_hash, "source_id": r.source_id}
                     for r in sources]},
        "lineage")


def make_topic_id(time_ms: int, entropy: bytes) -> str:
    """A new ``topic_art_`` id: :func:`powercontext.core.canonical.make_id` (26
    Crockford base32 characters: 48 bits of milliseconds then 80 of entropy, so ids sort
    by time). ``entropy`` is 10 bytes; ValueError otherwise."""
    return canonical.make_id(_PREFIX, time_ms, entropy)
