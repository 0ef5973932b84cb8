"""One JSON shape per domain value: what the CLI (``--json``), the repo commands, the
hooks and the MCP tools print for an ArtifactRef, an entry version, a change, a hit, a
Revision's changes, a search result, a Source and a Handoff citation (Memory RFC,
"ArtifactRef", "Memory entry versions", "changes()", "Search and reads", "Handoff
citation").

The shapes are configured once, in one private cattrs converter (not the canonical
one: these are output shapes, never hashed). :func:`to_json` gives plain JSON-ready data
(dicts, lists, strings, numbers, None); a surface may add context keys around a shaped
value (``untrusted``, ``state``, ``rank``) but never renames or drops one. The shapes:

- ``ArtifactRef``: ``{"artifact_id", "revision"}``
- ``SourceRef``: ``{"source_id", "content_hash"}``
- ``Source``: ``{"source_id", "kind", "uri", "content_hash", "metadata" (an object),
  "content"}``
- ``MemoryEntryVersion``: ``{"memory_artifact_id", "entry_id", "entry_version_id",
  "version", "previous_version_id", "kind", "text", "source_refs" (SourceRefs),
  "artifact_refs" (ArtifactRefs), "entry_content_hash", "created_in_revision"}``
- ``MemoryChange``: ``{"op", "entry_id", "from_entry_version_id", "to_entry_version_id",
  "reason"}``
- ``MemoryRevisionChanges``: ``{"memory_ref", "changes"}``
- ``MemoryHit``: ``{"memory_ref", "entry_id", "entry_version_id", "kind", "text",
  "score", "matched_by"}``
- ``MemorySearchResult``: ``{"mode", "fallback_reason", "hits"}``
- ``HandoffCitation``: ``{"memory_ref", "entry_id", "entry_version_id"}``
- ``EmbeddingProfile``: its fields by name.
- ``Refusal`` (a candidate not proposed): ``{"kind", "text", "reason", "provider"}``
- ``RebuildReport``: ``{"memories", "entries", "vectors", "kept", "incomplete",
  "missing": [{"artifact_id", "entry_id", "reason"}], "corrupt": [{"artifact_id",
  "error"}], "analyzer"}``
- ``RehashReport``: ``{"rewritten", "already_current", "corrupt": [{"artifact_id",
  "revision", "error"}]}``
- ``MemoryEntryRef`` (a prepared Memory item's reference): ``{"family": "memory",
  "artifact_id", "revision", "entry_id", "entry_version_id"}``
- ``ContextItem``: ``{"family", "rank", "title", "summary", "snippet", "artifact" (a
  MemoryEntryRef or a TopicRef: the item's exact reference)}``
- ``PreparedContext``: ``{"scope_id", "query", "items", "truncated", "bytes"}``
  (Topic Memory RFC, "Prepared Context")

The Topic values (a Topic ref, hit, search result and Revision, and the processing
values) are registered on the same converter by
:func:`powercontext.core.topic.shapes.register_topic_shapes`; their shapes are listed
there.

:func:`citation_from_json` reads a Handoff citation back, with exact JSON types.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from powercontext.core.errors import InvalidCitationError
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    HandoffCitation,
    MemoryChange,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevisionChanges,
    MemorySearchResult,
    RebuildReport,
    RehashReport,
    Source,
    SourceRef,
)
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.topic.shapes import REF_KEY as TOPIC_REF_KEY
from powercontext.core.topic.shapes import TOPIC_SHAPED_TYPES, register_topic_shapes

__all__ = ["SHAPED_TYPES", "citation_from_json", "to_json"]

SHAPED_TYPES: tuple[type, ...]  # computed on first use (module ``__getattr__``)

#: The domain types registered here (``SHAPED_TYPES`` adds ``Refusal``).
_REGISTERED: tuple[type, ...] = (
    ArtifactRef, SourceRef, Source, MemoryEntryVersion, MemoryChange, MemoryRevisionChanges,
    MemoryHit, MemorySearchResult, HandoffCitation, EmbeddingProfile, RebuildReport,
    RehashReport, MemoryEntryRef, ContextItem, PreparedContext, *TOPIC_SHAPED_TYPES)


def __getattr__(name: str) -> Any:
    """``SHAPED_TYPES``: the domain types :func:`to_json` has a shape for. Computed on
    first use: ``Refusal`` lives in ``core.extraction``, whose import pulls the secret
    rules, which the prompt hook (prepared context) never needs. Its shape is the
    converter's default for an attrs class: its fields by name, in order."""
    if name == "SHAPED_TYPES":
        from powercontext.core.extraction import Refusal

        return (*_REGISTERED, Refusal)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _source(s: Source) -> dict[str, Any]:
    return {"source_id": s.source_id, "kind": s.kind, "uri": s.uri,
            "content_hash": s.content_hash, "metadata": dict(s.metadata),
            "content": s.content}


def _rebuild_report(r: RebuildReport) -> dict[str, Any]:
    return {"memories": r.memories, "entries": r.entries, "vectors": r.vectors,
            "kept": r.kept, "incomplete": list(r.incomplete),
            "missing": [{"artifact_id": a, "entry_id": e, "reason": why}
                        for a, e, why in r.missing],
            "corrupt": [{"artifact_id": a, "error": e} for a, e in r.corrupt],
            "analyzer": r.analyzer}


def _rehash_report(r: RehashReport) -> dict[str, Any]:
    return {"rewritten": r.rewritten, "already_current": r.already,
            "corrupt": [{"artifact_id": a, "revision": rev, "error": e}
                        for a, rev, e in r.corrupt]}


def _entry_ref(r: MemoryEntryRef) -> dict[str, Any]:
    return {"family": r.family, "artifact_id": r.artifact_id, "revision": r.revision,
            "entry_id": r.entry_id, "entry_version_id": r.entry_version_id}


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    for cls in _REGISTERED:
        attrs.resolve_types(cls)
    # Field names are the shape's keys, except where a field says what it holds.
    # (leaves first, so that every composite finds their hooks)
    for cls in (ArtifactRef, SourceRef, EmbeddingProfile, MemoryChange):
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv))
    conv.register_unstructure_hook(Source, _source)
    conv.register_unstructure_hook(RebuildReport, _rebuild_report)
    conv.register_unstructure_hook(RehashReport, _rehash_report)
    conv.register_unstructure_hook(MemoryEntryVersion, make_dict_unstructure_fn(
        MemoryEntryVersion, conv, sources=override(rename="source_refs"),
        artifacts=override(rename="artifact_refs")))
    for cls in (MemoryRevisionChanges, MemoryHit, MemorySearchResult, HandoffCitation):
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv))
    register_topic_shapes(conv)
    conv.register_unstructure_hook(MemoryEntryRef, _entry_ref)
    conv.register_unstructure_hook(ContextItem, make_dict_unstructure_fn(
        ContextItem, conv, ref=override(rename=TOPIC_REF_KEY)))
    conv.register_unstructure_hook(PreparedContext, make_dict_unstructure_fn(
        PreparedContext, conv))
    return conv


_converter = _make_converter()


def to_json(value: Any) -> Any:
    """The JSON shape of ``value``: a domain value of :data:`SHAPED_TYPES`, None, or a
    list/tuple of them (a list). Plain data (str, int, dict of plain data) is returned
    as it is. The result is ready for ``json.dumps``."""
    return _converter.unstructure(value)


def citation_from_json(data: Any) -> HandoffCitation:
    """The Handoff citation a decoded JSON object ``data`` holds (the ``HandoffCitation``
    shape of :func:`to_json`). Types are exact, never coerced: ``revision`` must be a JSON
    integer (not 1.0, true or "1"), the ids strings. Anything else raises
    :class:`InvalidCitationError` (Memory RFC, "Handoff citation")."""
    try:
        ref = data["memory_ref"]
        artifact_id, revision = ref["artifact_id"], ref["revision"]
        entry_id, version_id = data["entry_id"], data["entry_version_id"]
    except (KeyError, TypeError, IndexError) as exc:
        raise InvalidCitationError(f"not a citation JSON object: {exc}") from exc
    if isinstance(revision, bool) or not isinstance(revision, int):
        raise InvalidCitationError("memory_ref.revision must be a JSON integer")
    if not all(isinstance(x, str) for x in (artifact_id, entry_id, version_id)):
        raise InvalidCitationError("artifact_id, entry_id and entry_version_id must be strings")
    return HandoffCitation(ArtifactRef(artifact_id, revision), entry_id, version_id)
