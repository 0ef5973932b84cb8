"""The JSON shapes of the Topic Memory values, registered on the one converter of
:mod:`powercontext.core.shapes` (Topic Memory RFC, "HTTP API": the search and get
bodies; TOPIC-MEMORY.md, "Size limits" for the processing report). Every surface (the
CLI's ``--json``, HTTP, MCP, the dashboard's JSON twins) prints these shapes; a surface
may add context keys around a shaped value (``untrusted``, ``notice``) but never
renames or drops one.

- ``TopicRef``: ``{"family", "artifact_id", "revision"}``
- ``TopicHit``: ``{"artifact" (its TopicRef), "title", "summary", "snippet" (null when
  none), "score", "matched_by"}``
- ``TopicSearchResult``: ``{"hits", "channels"}``
- ``TopicRevision``: ``{"scope_id", "artifact" (its TopicRef), "title", "summary", "detail",
  "content_hash", "sources" (SourceRefs ``{"source_id", "content_hash"}``),
  "based_on" (a TopicRef or null), "published_at"}``; internal chunks never appear.
- ``ScopeStatus``: ``{"scope_id", "binding_name", "source_head", "cursor", "covered",
  "pending" (null or a PendingRow), "budget" (null or a BudgetRow)}``
- ``PendingRow``: ``{"source_through", "flush_generation",
  "handled_flush_generation"}`` (its key is the status's)
- ``BudgetRow``: ``{"source_after", "furthest_through", "attempt_count",
  "reserved_requests", "reserved_tokens", "failure_code", "terminal"}``; the opaque
  ``attempt_id`` is not shown.
- ``LeftOut``: ``{"position", "source_id", "how"}`` (``how``: ``uncited`` or
  ``condensed``)
- ``WindowOutcome``: ``{"scope_id", "after", "through", "created", "updated"
  (TopicRefs), "noops", "reserved_requests", "left_out" (LeftOuts)}``
- ``ProcessReport``: ``{"scope_id", "windows", "status", "stopped" (null when covered,
  else the failure code), "reason" (null when covered), "covered"}``
- ``BlockedFrontier``: ``{"scope_id", "source_after", "through", "failure_code",
  "position", "source_id", "kind", "uri" (null when not found), "reason",
  "commands"}``
- ``OperatorDecision``: ``{"decision_id", "scope_id", "binding_name", "source_after",
  "action", "position", "source_id" (null for a grant), "failure_code",
  "attempt_count", "reserved_requests", "reserved_tokens", "decided_by", "reason",
  "decided_at"}``
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from powercontext.core.topic.models import TopicHit, TopicRef, TopicRevision, TopicSearchResult
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow, ScopeStatus
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome

__all__ = ["REF_KEY", "TOPIC_SHAPED_TYPES", "register_topic_shapes"]

#: The key of a Topic value's own exact reference (a hit's, a Revision's): the key the
#: spec's get request takes it under (Topic Memory RFC, "HTTP API"), so a ref is passed
#: on as it was printed. Every surface prints it under this one name.
REF_KEY = "artifact"

#: The Topic values :func:`register_topic_shapes` gives a shape.
TOPIC_SHAPED_TYPES: tuple[type, ...] = (
    TopicRef, TopicHit, TopicSearchResult, TopicRevision, PendingRow, BudgetRow,
    ScopeStatus, LeftOut, WindowOutcome, ProcessReport, BlockedFrontier, OperatorDecision)


def _ref(r: TopicRef) -> dict[str, Any]:
    return {"family": r.family, "artifact_id": r.artifact_id, "revision": r.revision}


def _pending(p: PendingRow) -> dict[str, Any]:
    return {"source_through": p.source_through, "flush_generation": p.flush_generation,
            "handled_flush_generation": p.handled_flush_generation}


def _budget(b: BudgetRow) -> dict[str, Any]:
    return {"source_after": b.source_after, "furthest_through": b.furthest_through,
            "attempt_count": b.attempt_count, "reserved_requests": b.reserved_requests,
            "reserved_tokens": b.reserved_tokens, "failure_code": b.failure_code,
            "terminal": b.terminal}


def register_topic_shapes(conv: cattrs.Converter) -> None:
    """Register the module docstring's shapes on ``conv`` (the leaves first, so that
    every composite finds their hooks). Needs the SourceRef hook already there."""
    for cls in TOPIC_SHAPED_TYPES:
        attrs.resolve_types(cls)
    conv.register_unstructure_hook(TopicRef, _ref)
    conv.register_unstructure_hook(PendingRow, _pending)
    conv.register_unstructure_hook(BudgetRow, _budget)
    for cls in (LeftOut, BlockedFrontier, OperatorDecision):
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv))
    conv.register_unstructure_hook(TopicHit, make_dict_unstructure_fn(
        TopicHit, conv, ref=override(rename=REF_KEY)))
    conv.register_unstructure_hook(TopicSearchResult, make_dict_unstructure_fn(
        TopicSearchResult, conv))

    def revision(v: TopicRevision) -> dict[str, Any]:
        return {"scope_id": v.scope_id, REF_KEY: _ref(v.ref), "title": v.content.title,
                "summary": v.content.summary, "detail": v.content.detail,
                "content_hash": v.content_hash, "sources": conv.unstructure(v.sources),
                "based_on": None if v.based_on is None else _ref(v.based_on),
                "published_at": v.published_at}

    conv.register_unstructure_hook(TopicRevision, revision)
    status_fields = make_dict_unstructure_fn(ScopeStatus, conv)

    def status(v: ScopeStatus) -> dict[str, Any]:
        d = status_fields(v)
        return {"scope_id": d["scope_id"], "binding_name": d["binding_name"],
                "source_head": d["source_head"], "cursor": d["cursor"],
                "covered": v.covered, "pending": d["pending"], "budget": d["budget"]}

    conv.register_unstructure_hook(ScopeStatus, status)
    conv.register_unstructure_hook(WindowOutcome, make_dict_unstructure_fn(
        WindowOutcome, conv))
    report_fields = make_dict_unstructure_fn(ProcessReport, conv)

    def report(v: ProcessReport) -> dict[str, Any]:
        return dict(report_fields(v), covered=v.covered)

    conv.register_unstructure_hook(ProcessReport, report)
