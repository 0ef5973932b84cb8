"""Prepared context (Topic Memory RFC, "Prepared Context"; TOPIC-MEMORY.md, "Scope to
Memory"): what an agent reads at the start of a task, for one Scope and one query.

:func:`prepare_context` returns up to 8 Memory hits (the Memory mapped to the Scope's
key, e.g. ``repo:/abs/path``, through the key mapping) and up to 8 Topic hits (title,
summary, optional snippet, exact ArtifactRef; never the complete Detail), each family
ranked by itself (raw scores are never compared across families), interleaved
(Memory 1, Topic 1, Memory 2, ...), the whole bounded by ``max_bytes`` of the UTF-8
JSON the HTTP route returns. Historical text is data: nothing in the output reads as
a tool instruction (no imperative framing added, control characters and markup that
could pose as a prompt are neutralised), and the exact references let the agent
expand what it wants through ``get``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["MEMORY_LIMIT", "TOPIC_LIMIT", "ContextItem", "PreparedContext", "prepare_context"]

#: Candidate limits per family (the spec's table; Experience is not in this release).
MEMORY_LIMIT = 8
TOPIC_LIMIT = 8


@attrs.frozen
class ContextItem:
    """One prepared hit: ``family`` (``memory`` or ``topic-memory``), its ``rank`` in
    its own family (1-based), ``title``, ``summary``, ``snippet`` (None when there is
    none) and ``ref``: the exact reference as JSON (Memory: ``{"artifact_id",
    "revision", "entry_key"?}``; Topic: ``{"family", "artifact_id", "revision"}`` plus
    ``scope_id``)."""

    family: Literal["memory", "topic-memory"]
    rank: int
    title: str
    summary: str
    snippet: str | None
    ref: dict[str, Any]


@attrs.frozen
class PreparedContext:
    """The prepared context of one Scope and query: the interleaved ``items``,
    ``truncated`` (items left out to honour ``max_bytes``) and ``bytes`` (the UTF-8
    size of the JSON response, <= ``max_bytes``)."""

    scope_id: str
    query: str
    items: tuple[ContextItem, ...]
    truncated: int
    bytes: int


async def prepare_context(memory: Any, topics: Any, scope_id: str, query: str, *,
                          max_bytes: int = 8_000) -> PreparedContext:
    """The prepared context of ``scope_id`` for ``query``: ``memory`` a MemoryService
    (or None: no Memory side), ``topics`` a TopicMemoryService (or None). At most
    MEMORY_LIMIT + TOPIC_LIMIT items, interleaved, whole items only, the response at
    most ``max_bytes`` (256..1,048,576) bytes. InvalidInputError naming ``scope_id``,
    ``query`` (1..8,192 characters) or ``max_bytes``."""
    raise NotImplementedError("p4-prepare")
