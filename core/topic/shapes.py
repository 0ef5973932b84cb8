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
- the dashboard's read-only views (:mod:`powercontext.core.topic.insight`):
  ``CitingRevision``: ``{"scope_id", "artifact_id", "revision", "published_at"}`` (its
  ref's two fields inline, as the Evidence page has always listed them);
  ``ScopeSummary``: ``{"scope_id", "source_head", "topics", "revisions"}``;
  ``SourceScope``: ``{"scope_id", "position", "lineage_only"}``; ``TopicListing``:
  ``{"artifact_id", "revisions", "title", "summary", "sources", "published_at"}``;
  ``SupervisionView``: ``{"holder_id", "generation", "lease_expires_at",
  "last_auto_wave_completed_at", "waves": [WaveProgress ``{"wave_id", "targets",
  "completed"}``]}``
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from powercontext.core.errors import InvalidInputError
from powercontext.core.models import SourceRef
from powercontext.core.topic.content import check_ref
from powercontext.core.topic.insight import (
    CitingRevision,
    ScopeSummary,
    SourceScope,
    SupervisionView,
    TopicListing,
    WaveProgress,
)
from powercontext.core.topic.models import (
    TopicHit,
    TopicMemoryContent,
    TopicRef,
    TopicRevision,
    TopicSearchResult,
)
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import BudgetRow, PendingRow, ScopeStatus
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome

__all__ = ["REF_KEY", "TOPIC_SHAPED_TYPES", "lazy_hook", "lazy_reader",
           "register_topic_shapes",
           "register_topic_structure", "structure_topic_ref"]

#: The key of a Topic value's own exact reference (a hit's, a Revision's): the key the
#: spec's get request takes it under (Topic Memory RFC, "HTTP API"), so a ref is passed
#: on as it was printed. Every surface prints it under this one name.
REF_KEY = "artifact"

#: The Topic values :func:`register_topic_shapes` gives a shape.
TOPIC_SHAPED_TYPES: tuple[type, ...] = (
    TopicRef, TopicHit, TopicSearchResult, TopicRevision, PendingRow, BudgetRow,
    ScopeStatus, LeftOut, WindowOutcome, ProcessReport, BlockedFrontier, OperatorDecision,
    CitingRevision, ScopeSummary, SourceScope, SupervisionView, TopicListing, WaveProgress)


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


def _citing(c: CitingRevision) -> dict[str, Any]:
    return {"scope_id": c.scope_id, "artifact_id": c.ref.artifact_id,
            "revision": c.ref.revision, "published_at": c.published_at}


def lazy_hook(conv: cattrs.Converter, cls: type, make: Callable[[], Any]) -> None:
    """Register ``make()`` as ``cls``'s unstructure hook, generated the first time a
    ``cls`` is shaped (cattrs compiles each hook: a process that prints one value, such
    as the prompt hook, pays for that value's hooks only)."""
    conv.register_unstructure_hook_factory(lambda t: t is cls, lambda _t: make())


def lazy_reader(conv: cattrs.Converter, cls: type, make: Callable[[], Any]) -> None:
    """Register ``make()`` as ``cls``'s structure hook, generated on first use (as
    :func:`lazy_hook`)."""
    conv.register_structure_hook_factory(lambda t: t is cls, lambda _t: make())


def register_topic_shapes(conv: cattrs.Converter) -> None:
    """Register the module docstring's shapes on ``conv``. Needs the SourceRef hook
    already there."""
    conv.register_unstructure_hook(TopicRef, _ref)
    conv.register_unstructure_hook(PendingRow, _pending)
    conv.register_unstructure_hook(BudgetRow, _budget)

    def fields(cls: type, **kw: Any) -> Any:
        attrs.resolve_types(cls)
        return make_dict_unstructure_fn(cls, conv, **kw)

    for cls in (LeftOut, BlockedFrontier, OperatorDecision, TopicSearchResult, WindowOutcome,
                ScopeSummary, SourceScope, SupervisionView, TopicListing, WaveProgress):
        lazy_hook(conv, cls, partial(fields, cls))
    conv.register_unstructure_hook(CitingRevision, _citing)
    lazy_hook(conv, TopicHit, lambda: fields(TopicHit, ref=override(rename=REF_KEY)))

    def revision(v: TopicRevision) -> dict[str, Any]:
        return {"scope_id": v.scope_id, REF_KEY: _ref(v.ref), "title": v.content.title,
                "summary": v.content.summary, "detail": v.content.detail,
                "content_hash": v.content_hash, "sources": conv.unstructure(v.sources),
                "based_on": None if v.based_on is None else _ref(v.based_on),
                "published_at": v.published_at}

    conv.register_unstructure_hook(TopicRevision, revision)

    def status() -> Any:
        shaped = fields(ScopeStatus)

        def hook(v: ScopeStatus) -> dict[str, Any]:
            d = shaped(v)
            return {"scope_id": d["scope_id"], "binding_name": d["binding_name"],
                    "source_head": d["source_head"], "cursor": d["cursor"],
                    "covered": v.covered, "pending": d["pending"], "budget": d["budget"]}
        return hook

    lazy_hook(conv, ScopeStatus, status)

    def report() -> Any:
        shaped = fields(ProcessReport)
        return lambda v: dict(shaped(v), covered=v.covered)

    lazy_hook(conv, ProcessReport, report)


def _exact_keys(data: Any, keys: frozenset[str], what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidInputError(what, f"must be a JSON object, got {type(data).__name__}")
    if set(data) != keys:
        missing = sorted(keys - set(data))
        extra = sorted(str(k) for k in set(data) - keys)
        raise InvalidInputError(what, f"misses {', '.join(missing)}" if missing
                                else f"has unknown keys {', '.join(extra)}")
    return data


_REF_KEYS = frozenset({"family", "artifact_id", "revision"})
_REVISION_KEYS = frozenset({"scope_id", REF_KEY, "title", "summary", "detail",
                            "content_hash", "sources", "based_on", "published_at"})


def structure_topic_ref(data: Any, field: str = REF_KEY) -> TopicRef:
    """The TopicRef a decoded JSON object holds: exactly ``{"family": "topic-memory",
    "artifact_id", "revision"}``, types exact (``revision`` a JSON integer >= 1, never
    ``true`` or ``"3"``). InvalidInputError naming ``field`` (or ``field.revision``
    ...) otherwise."""
    d = _exact_keys(data, _REF_KEYS, field)
    family = d["family"]
    if not isinstance(family, str):
        raise InvalidInputError(f"{field}.family", "must be a string")
    return check_ref(TopicRef(d["artifact_id"], d["revision"], family), field)


def register_topic_structure(conv: cattrs.Converter) -> None:
    """Register the way back, JSON -> value, for the Topic values whose shape keeps
    every field (refs, hits, search results, Revisions, LeftOut, WindowOutcome):
    ``structure(unstructure(x)) == x``. A ScopeStatus or a ProcessReport does not come
    back (its budget row hides the opaque ``attempt_id``). Needs strict primitive hooks
    already on ``conv``; unknown keys are refused."""
    conv.register_structure_hook(TopicRef, lambda d, _: structure_topic_ref(d))
    lazy_reader(conv, TopicHit, lambda: make_dict_structure_fn(
        TopicHit, conv, _cattrs_forbid_extra_keys=True, ref=override(rename=REF_KEY)))
    for cls in (TopicSearchResult, LeftOut, WindowOutcome):
        lazy_reader(conv, cls, partial(make_dict_structure_fn, cls, conv,
                                       _cattrs_forbid_extra_keys=True))

    def revision(data: Any, _: Any) -> TopicRevision:
        d = _exact_keys(data, _REVISION_KEYS, "revision")
        content = conv.structure({k: d[k] for k in ("title", "summary", "detail")},
                                 TopicMemoryContent)
        return TopicRevision(
            conv.structure(d["scope_id"], str), structure_topic_ref(d[REF_KEY]), content,
            conv.structure(d["content_hash"], str),
            conv.structure(d["sources"], tuple[SourceRef, ...]),
            None if d["based_on"] is None else structure_topic_ref(d["based_on"], "based_on"),
            conv.structure(d["published_at"], str))

    conv.register_structure_hook(TopicRevision, revision)
