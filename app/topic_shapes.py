"""One JSON shape per Topic Memory value, shared by the CLI's ``--json`` and the MCP
tools (Topic Memory RFC, "HTTP API": the search and get bodies):

- ``TopicRef``: ``{"family", "artifact_id", "revision"}``
- ``TopicHit``: ``{"ref", "title", "summary", "snippet" (null when none), "score",
  "matched_by"}``
- ``TopicSearchResult``: ``{"hits", "channels"}``
- ``TopicRevision``: ``{"scope_id", "ref", "title", "summary", "detail",
  "content_hash", "sources" (SourceRefs ``{"source_id", "content_hash"}``),
  "based_on" (a TopicRef or null), "published_at"}``; internal chunks never appear.

A surface may add context keys around a shaped value (``untrusted``, ``notice``) but
never renames or drops one.
"""

from __future__ import annotations

from typing import Any

from powercontext.core.models import SourceRef
from powercontext.core.topic.models import TopicHit, TopicRef, TopicRevision, TopicSearchResult

__all__ = ["topic_json"]


def _ref(r: TopicRef) -> dict[str, Any]:
    return {"family": r.family, "artifact_id": r.artifact_id, "revision": r.revision}


def _source(s: SourceRef) -> dict[str, Any]:
    return {"source_id": s.source_id, "content_hash": s.content_hash}


def _hit(h: TopicHit) -> dict[str, Any]:
    return {"ref": _ref(h.ref), "title": h.title, "summary": h.summary,
            "snippet": h.snippet, "score": h.score, "matched_by": list(h.matched_by)}


def topic_json(value: TopicRef | TopicHit | TopicSearchResult | TopicRevision | None
               ) -> Any:
    """The JSON-ready shape of a Topic value (module docstring); None stays None.
    TypeError for anything else."""
    if value is None:
        return None
    if isinstance(value, TopicRef):
        return _ref(value)
    if isinstance(value, TopicHit):
        return _hit(value)
    if isinstance(value, TopicSearchResult):
        return {"hits": [_hit(h) for h in value.hits], "channels": list(value.channels)}
    if isinstance(value, TopicRevision):
        return {"scope_id": value.scope_id, "ref": _ref(value.ref),
                "title": value.content.title, "summary": value.content.summary,
                "detail": value.content.detail, "content_hash": value.content_hash,
                "sources": [_source(s) for s in value.sources],
                "based_on": None if value.based_on is None else _ref(value.based_on),
                "published_at": value.published_at}
    raise TypeError(f"no Topic JSON shape for {type(value).__name__}")
