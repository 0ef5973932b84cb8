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
- ``RevisionLineage`` (a Revision's operation evidence): ``{"sources" (SourceRefs),
  "artifacts" (ArtifactRefs)}``
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

from functools import partial
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from powercontext.core.errors import InvalidCitationError, InvalidInputError
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
    RevisionLineage,
    Source,
    SourceRef,
)
from powercontext.core.prepared import ContextItem, MemoryEntryRef, PreparedContext
from powercontext.core.topic.models import TopicMemoryContent, TopicRef
from powercontext.core.topic.shapes import REF_KEY as TOPIC_REF_KEY
from powercontext.core.topic.shapes import (
    TOPIC_SHAPED_TYPES,
    lazy_hook,
    lazy_reader,
    register_topic_shapes,
    register_topic_structure,
    structure_topic_ref,
)

__all__ = ["SHAPED_TYPES", "citation_from_json", "from_json", "to_json"]

T = TypeVar("T")

SHAPED_TYPES: tuple[type, ...]  # computed on first use (module ``__getattr__``)

#: The domain types registered here (``SHAPED_TYPES`` adds ``Refusal``).
_REGISTERED: tuple[type, ...] = (
    ArtifactRef, SourceRef, Source, MemoryEntryVersion, MemoryChange, MemoryRevisionChanges,
    MemoryHit, MemorySearchResult, HandoffCitation, EmbeddingProfile, RebuildReport,
    RehashReport, RevisionLineage, MemoryEntryRef, ContextItem, PreparedContext,
    *TOPIC_SHAPED_TYPES)


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

    def fields(cls: type, **kw: Any) -> Any:
        attrs.resolve_types(cls)
        return make_dict_unstructure_fn(cls, conv, **kw)

    # Field names are the shape's keys, except where a field says what it holds. Each
    # generated hook is compiled the first time its type is shaped (lazy_hook).
    for cls in (ArtifactRef, SourceRef, EmbeddingProfile, MemoryChange, MemoryRevisionChanges,
                MemoryHit, MemorySearchResult, HandoffCitation, PreparedContext,
                RevisionLineage):
        lazy_hook(conv, cls, partial(fields, cls))
    conv.register_unstructure_hook(Source, _source)
    conv.register_unstructure_hook(RebuildReport, _rebuild_report)
    conv.register_unstructure_hook(RehashReport, _rehash_report)
    lazy_hook(conv, MemoryEntryVersion, lambda: fields(
        MemoryEntryVersion, sources=override(rename="source_refs"),
        artifacts=override(rename="artifact_refs")))
    register_topic_shapes(conv)
    conv.register_unstructure_hook(MemoryEntryRef, _entry_ref)
    lazy_hook(conv, ContextItem, lambda: fields(ContextItem, ref=override(rename=TOPIC_REF_KEY)))
    _register_structure(conv)
    return conv


def _exact(kind: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, bool) is not (kind is bool) or not isinstance(value, kind):
            raise InvalidInputError("json", f"must be a JSON {kind.__name__}, got {value!r}")
        return value
    return hook


def _number(value: Any, _: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError("json", f"must be a JSON number, got {value!r}")
    return float(value)


_ENTRY_REF_KEYS = frozenset({"family", "artifact_id", "revision", "entry_id",
                             "entry_version_id"})


def _entry_ref_back(data: Any, _: Any = None) -> MemoryEntryRef:
    if not isinstance(data, dict) or set(data) != _ENTRY_REF_KEYS:
        raise InvalidInputError(TOPIC_REF_KEY, "a Memory item's ref is exactly {\"family\": "
                                "\"memory\", \"artifact_id\", \"revision\", \"entry_id\", "
                                "\"entry_version_id\"}")
    if data["family"] != "memory":
        raise InvalidInputError(f"{TOPIC_REF_KEY}.family", "must be 'memory'")
    rev = data["revision"]
    if isinstance(rev, bool) or not isinstance(rev, int) or rev < 1:
        raise InvalidInputError(f"{TOPIC_REF_KEY}.revision", "must be a JSON integer >= 1")
    ids = (data["artifact_id"], data["entry_id"], data["entry_version_id"])
    if not all(isinstance(x, str) for x in ids):
        raise InvalidInputError(TOPIC_REF_KEY, "the ids must be strings")
    return MemoryEntryRef(ids[0], rev, ids[1], ids[2])


def _item_ref_back(data: Any, _: Any) -> MemoryEntryRef | TopicRef:
    if isinstance(data, dict) and data.get("family") == "memory":
        return _entry_ref_back(data)
    return structure_topic_ref(data)


def _register_structure(conv: cattrs.Converter) -> None:
    """The way back for the values whose shape keeps every field: primitives exact (a
    JSON integer is no string, ``true`` is no integer; a number may be an integer),
    unknown keys refused. Each generated reader is compiled on its first use."""
    for kind in (str, int, bool):
        conv.register_structure_hook(kind, _exact(kind))
    conv.register_structure_hook(float, _number)
    for cls in (SourceRef, TopicMemoryContent, PreparedContext):
        lazy_reader(conv, cls, partial(make_dict_structure_fn, cls, conv,
                                       _cattrs_forbid_extra_keys=True))
    register_topic_structure(conv)
    conv.register_structure_hook(MemoryEntryRef, _entry_ref_back)
    conv.register_structure_hook(MemoryEntryRef | TopicRef, _item_ref_back)
    lazy_reader(conv, ContextItem, lambda: make_dict_structure_fn(
        ContextItem, conv, _cattrs_forbid_extra_keys=True,
        ref=override(rename=TOPIC_REF_KEY)))


_converter = _make_converter()


def to_json(value: Any) -> Any:
    """The JSON shape of ``value``: a domain value of :data:`SHAPED_TYPES`, None, or a
    list/tuple of them (a list). Plain data (str, int, dict of plain data) is returned
    as it is. The result is ready for ``json.dumps``."""
    return _converter.unstructure(value)


def from_json(data: Any, cls: type[T]) -> T:
    """The ``cls`` value a decoded JSON ``data`` holds, read back from the shape
    :func:`to_json` gives it: a Topic ref, hit, search result or Revision, a SourceRef,
    a LeftOut, a WindowOutcome, a prepared item or a prepared context (``from_json(
    to_json(x), type(x)) == x``). Types are exact and unknown keys refused:
    InvalidInputError (naming the field where one is known) for anything else."""
    try:
        return _converter.structure(data, cls)
    except InvalidInputError:
        raise
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        errors = getattr(exc, "exceptions", ())
        inner = next((e for e in errors if isinstance(e, InvalidInputError)), None)
        if inner is not None:
            raise inner from exc
        raise InvalidInputError("json", f"is not a {cls.__name__}: {exc}") from exc


def citation_from_json(data: Any) -> HandoffCitation:
    """The Handoff citation a decoded JSON object ``data`` holds (the ``HandoffCitation``
    shape of :func:`to_json`). Types are exact, never coerced: ``revision`` must be a JSON
    integer (not 1.0, true or "1"), the ids strings. Anything else raises
    :class:`InvalidCitationError` (Memory RFC, "Handoff citation").

    The exact reference of a prepared Memory item (``MemoryEntryRef``: ``{"family":
    "memory", "artifact_id", "revision", "entry_id", "entry_version_id"}``) is read as
    the same citation, so what ``/v1/context/prepare`` prints can be validated as
    printed."""
    if isinstance(data, dict) and data.get("family") == "memory" and "memory_ref" not in data:
        try:
            r = _entry_ref_back(data)
        except InvalidInputError as exc:
            raise InvalidCitationError(str(exc)) from exc
        return HandoffCitation(ArtifactRef(r.artifact_id, r.revision), r.entry_id,
                               r.entry_version_id)
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
