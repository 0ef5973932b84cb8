"""One JSON shape per Topic Memory value, shared by the CLI's ``--json`` and the MCP
tools (Topic Memory RFC, "HTTP API": the search and get bodies):

- ``TopicRef``: ``{"family", "artifact_id", "revision"}``
- ``TopicHit``: ``{"ref", "title", "summary", "snippet" (null when none), "score",
  "matched_by"}``
- ``TopicSearchResult``: ``{"hits", "channels"}``
- ``TopicRevision``: ``{"scope_id", "ref", "title", "summary", "detail",
  "content_hash", "sources" (SourceRefs ``{"source_id", "content_hash"}``),
  "based_on" (a TopicRef or null), "published_at"}``; internal chunks never appear.

The processing values (:func:`processing_json`):

- ``ScopeStatus``: ``{"scope_id", "binding_name", "source_head", "cursor", "covered",
  "pending" (null or {"source_through", "flush_generation",
  "handled_flush_generation"}), "budget" (null or {"source_after", "furthest_through",
  "attempt_count", "reserved_requests", "reserved_tokens", "failure_code",
  "terminal"})}``; the budget row's opaque ``attempt_id`` is not shown.
- ``WindowOutcome``: ``{"scope_id", "after", "through", "created", "updated" (TopicRefs),
  "noops", "reserved_requests", "left_out"}``, ``left_out`` the Sources whose text no
  new Revision holds whole: ``[{"position", "source_id", "how"}]`` (``how``:
  ``uncited`` or ``condensed``)
- ``ProcessReport``: ``{"scope_id", "windows", "status", "stopped" (null when covered,
  else the failure code), "reason" (the failure's message, null when covered),
  "covered"}``
- ``BlockedFrontier``: ``{"scope_id", "source_after", "through", "failure_code",
  "position", "source_id", "kind", "uri" (null when not found), "reason",
  "commands"}``
- ``OperatorDecision``: ``{"decision_id", "scope_id", "binding_name", "source_after",
  "action", "position", "source_id" (null for a grant), "failure_code",
  "attempt_count", "reserved_requests", "reserved_tokens", "decided_by", "reason",
  "decided_at"}``

A surface may add context keys around a shaped value (``untrusted``, ``notice``) but
never renames or drops one.
"""

from __future__ import annotations

from typing import Any

from powercontext.core.models import SourceRef
from powercontext.core.topic.models import TopicHit, TopicRef, TopicRevision, TopicSearchResult
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import ScopeStatus

__all__ = ["left_out_json", "processing_json", "topic_json"]


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


def _status(st: ScopeStatus) -> dict[str, Any]:
    p, b = st.pending, st.budget
    return {
        "scope_id": st.scope_id, "binding_name": st.binding_name,
        "source_head": st.source_head, "cursor": st.cursor, "covered": st.covered,
        "pending": None if p is None else {
            "source_through": p.source_through, "flush_generation": p.flush_generation,
            "handled_flush_generation": p.handled_flush_generation},
        "budget": None if b is None else {
            "source_after": b.source_after, "furthest_through": b.furthest_through,
            "attempt_count": b.attempt_count, "reserved_requests": b.reserved_requests,
            "reserved_tokens": b.reserved_tokens, "failure_code": b.failure_code,
            "terminal": b.terminal},
    }


def left_out_json(value: Any) -> dict[str, Any]:
    """``{"position", "source_id", "how"}`` of a :class:`~powercontext.topic_processing.
    LeftOut`."""
    return {"position": value.position, "source_id": value.source_id, "how": value.how}


def processing_json(value: Any) -> Any:
    """The JSON-ready shape of a processing value: a ScopeStatus, a WindowOutcome, a
    ProcessReport (:mod:`powercontext.topic_processing`), a BlockedFrontier or an
    OperatorDecision (module docstring). TypeError for anything else."""
    from powercontext.topic_processing import ProcessReport, WindowOutcome

    if isinstance(value, ScopeStatus):
        return _status(value)
    if isinstance(value, WindowOutcome):
        return {"scope_id": value.scope_id, "after": value.after, "through": value.through,
                "created": [_ref(r) for r in value.created],
                "updated": [_ref(r) for r in value.updated], "noops": value.noops,
                "reserved_requests": value.reserved_requests,
                "left_out": [left_out_json(x) for x in value.left_out]}
    if isinstance(value, BlockedFrontier | OperatorDecision):
        import attrs

        shaped = attrs.asdict(value)
        if isinstance(value, BlockedFrontier):
            shaped["commands"] = list(value.commands)
        return shaped
    if isinstance(value, ProcessReport):
        return {"scope_id": value.scope_id,
                "windows": [processing_json(w) for w in value.windows],
                "status": _status(value.status), "stopped": value.stopped,
                "reason": value.reason,
                "covered": value.stopped is None}
    raise TypeError(f"no processing JSON shape for {type(value).__name__}")
