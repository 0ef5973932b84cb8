"""Prepared context (Topic Memory RFC, "Prepared Context"; TOPIC-MEMORY.md, "Scope to
Memory"): what an agent reads at the start of a task, for one Scope and one query.

:func:`prepare_context` returns up to 8 Memory hits (the Memory mapped to the Scope's
key, e.g. ``repo:/abs/path``, through the key mapping) and up to 8 Topic hits (title,
summary, optional snippet, exact reference; never the complete Detail), each family
ranked by itself (raw scores are never compared across families), interleaved
(Memory 1, Topic 1, Memory 2, ...), the whole bounded by ``max_bytes`` of the UTF-8
JSON the HTTP route returns (:func:`context_json`, :func:`encode_json`). Historical
text is data: nothing in the output reads as a tool instruction (no imperative framing
is added; control, format and separator characters are written as visible escapes and
anything that could open or close a tag is defused, :func:`neutral_text`), and the
exact references let the agent expand what it wants through ``get``.
"""

from __future__ import annotations

import json
from typing import Any

from powercontext.core import canonical
from powercontext.core import query as query_bounds
from powercontext.core.characters import neutral_text
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import CurrentHead, MemoryHit
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.shapes import to_json
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.models import TopicHit

__all__ = [
    "MAX_MAX_BYTES",
    "MEMORY_LIMIT",
    "MIN_MAX_BYTES",
    "TOPIC_LIMIT",
    "ContextItem",
    "PreparedContext",
    "context_json",
    "encode_json",
    "neutral_text",
    "prepare_context",
]

#: Candidate limits per family (the spec's table; Experience is not in this release).
MEMORY_LIMIT = 8
TOPIC_LIMIT = 8
#: The bounds of ``max_bytes`` (the design's prepare shape).
MIN_MAX_BYTES = 256
MAX_MAX_BYTES = 1_048_576


def context_json(prepared: PreparedContext) -> dict[str, Any]:
    """The JSON shape of ``POST /v1/context/prepare`` (the design's prepare shape):
    ``{"scope_id", "query", "items": [{"family", "rank", "title", "summary",
    "snippet", "artifact"}], "truncated", "bytes"}``."""
    shaped: dict[str, Any] = to_json(prepared)
    return shaped


def encode_json(value: Any) -> bytes:
    """The response bytes: compact UTF-8 JSON, non-ASCII kept (what Starlette's
    JSONResponse writes), so ``bytes`` counts exactly what is sent."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def _shape(scope_id: str, query: str, items: tuple[ContextItem, ...], truncated: int,
           size: int) -> dict[str, Any]:
    shaped: dict[str, Any] = to_json(PreparedContext(scope_id, query, items, truncated, size))
    return shaped


def _sized(scope_id: str, query: str, items: tuple[ContextItem, ...], truncated: int) -> int:
    """The size of the response that states its own size (a fixed point: the digits of
    ``bytes`` are part of it)."""
    size = 0
    while True:
        actual = len(encode_json(_shape(scope_id, query, items, truncated, size)))
        if actual == size:
            return size
        size = actual


def _memory_item(rank: int, hit: MemoryHit) -> ContextItem:
    ref = MemoryEntryRef(hit.memory_ref.artifact_id, hit.memory_ref.revision, hit.entry_id,
                         hit.entry_version_id)
    return ContextItem("memory", rank, neutral_text(hit.kind or "entry"),
                       neutral_text(hit.text), None, ref)


def _topic_item(rank: int, hit: TopicHit) -> ContextItem:
    # the exact ArtifactRef and nothing else, so ``/v1/topic-memory/get`` and MCP
    # ``get_topic_memory`` take it as returned (the Scope is the response's ``scope_id``)
    snippet = None if hit.snippet is None else neutral_text(hit.snippet)
    return ContextItem("topic-memory", rank, neutral_text(hit.title),
                       neutral_text(hit.summary), snippet, hit.ref)


def _interleave(first: list[ContextItem], second: list[ContextItem]) -> list[ContextItem]:
    """``first[0], second[0], first[1], second[1], ...``; the longer list's tail last."""
    out: list[ContextItem] = []
    for i in range(max(len(first), len(second))):
        out.extend(side[i] for side in (first, second) if i < len(side))
    return out


def _check_request(scope_id: object, query: object, max_bytes: object) -> tuple[str, str, int]:
    scope = topic_content.check_scope_id(scope_id)
    text = canonical.check_str("query", query)
    if not text.strip():
        raise InvalidInputError("query", "must hold some text (1..8,192 characters, "
                                         "not only white space)")
    query_bounds.search_terms(text)  # the search bounds: 8,192 characters, 64 terms
    if (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
            or not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES):
        raise InvalidInputError("max_bytes", f"must be an integer in {MIN_MAX_BYTES:,}.."
                                             f"{MAX_MAX_BYTES:,}, got {max_bytes!r}")
    return scope, text, max_bytes


async def _memory_hits(memory: Any, scope_id: str, query: str, mode: str) -> list[MemoryHit]:
    """The Memory side: the Memory mapped to the Scope's key, searched by itself."""
    if memory is None:
        return []
    from powercontext.memory_names import memory_key

    try:
        key = memory_key(scope_id, "scope_id")
    except InvalidInputError:
        return []  # a Scope id that is no business key maps to no Memory
    except OSError:
        # repo:PATH is canonicalised on this host's file system; a PATH that cannot
        # exist here (a component over the name limit) names no repository's Memory
        return []
    memory_id = await memory.memory_key(key)
    if memory_id is None:
        return []
    try:
        result = await memory.search(query, [CurrentHead(memory_id)], limit=MEMORY_LIMIT,
                                     mode=mode)
    except ArtifactNotFoundError:
        return []  # the key names a Memory that has no head (yet)
    return list(result.hits[:MEMORY_LIMIT])


async def _topic_hits(topics: Any, scope_id: str, query: str) -> list[TopicHit]:
    """The Topic side: the Scope's Topics searched by themselves."""
    if topics is None:
        return []
    try:
        result = await topics.search(scope_id, query, limit=TOPIC_LIMIT)
    except InvalidInputError as exc:
        if exc.field != "query":
            raise
        return []  # bounds were checked: the query has no terms under the database's analyzer
    return list(result.hits[:TOPIC_LIMIT])


async def prepare_context(memory: Any, topics: Any, scope_id: str, query: str, *,
                          max_bytes: int = 8_000, memory_mode: str = "auto"
                          ) -> PreparedContext:
    """The prepared context of ``scope_id`` for ``query`` (Topic Memory RFC, "Prepared
    Context"): ``memory`` a MemoryService (or None: no Memory side), ``topics`` a
    TopicMemoryService (or None: no Topic side).

    Memory side: the Memory the database's key ``memory_key(scope_id)`` names
    (``repo:/abs/path`` -> that repository's Memory; TOPIC-MEMORY.md, "Scope to
    Memory") searched with ``query`` in ``memory_mode`` (``auto``: hybrid when the
    deployment can, else full text), at most :data:`MEMORY_LIMIT` hits in its own
    order. Topic side: ``topics.search(scope_id, query, limit=TOPIC_LIMIT)``. No
    mapped Memory, no Topic data, or a query with no terms under a database's analyzer
    is an empty side, not an error. The sides are interleaved (Memory 1, Topic 1,
    Memory 2, ...) and whole items are dropped from the end (so the family with more
    items loses its lowest-ranked first, then the two alternate) until the response
    JSON fits ``max_bytes``: ``items`` is always a prefix of the interleaving. Never the
    Topic Detail (only its search snippet, at most 320 code points); every text is
    :func:`neutral_text`.

    Errors, before any I/O: InvalidInputError naming ``scope_id`` (1..256 characters
    after NFC, printable), ``query`` (a string of 1..8,192 characters, not blank, at
    most 64 distinct terms: the search bounds) or ``max_bytes`` (an int in
    256..1,048,576); after the searches, InvalidInputError naming ``max_bytes`` when
    the response without any item (it echoes ``scope_id`` and ``query``) is already
    larger. The services' own errors (a refused retrieval shape, a backend fault) pass
    through."""
    scope, text, limit = _check_request(scope_id, query, max_bytes)
    memory_hits = await _memory_hits(memory, scope, text, memory_mode)
    topic_hits = await _topic_hits(topics, scope, text)
    items = _interleave([_memory_item(r, h) for r, h in enumerate(memory_hits, start=1)],
                       [_topic_item(r, h) for r, h in enumerate(topic_hits, start=1)])
    for kept in range(len(items), -1, -1):
        chosen = tuple(items[:kept])
        size = _sized(scope, text, chosen, len(items) - kept)
        if size <= limit:
            return PreparedContext(scope, text, chosen, len(items) - kept, size)
    raise InvalidInputError(
        "max_bytes", f"is {limit:,}, but the response without any item (it echoes scope_id "
                     f"and query) takes {size:,} bytes: raise max_bytes or shorten the query")
