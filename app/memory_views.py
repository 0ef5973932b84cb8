"""What a surface shows of a Memory and takes as evidence, shaped once for the HTTP API
(and any other surface): the list of Memories (:func:`memory_rows`), one Revision with
its entries (:func:`revision_view`), a search result with each hit's receipt
(:func:`search_view`), a write's outcome (:func:`write_view`) and a Source built from
caller input (:func:`evidence_source`). Every domain value inside has the shape of
:func:`powercontext.core.shapes.to_json`; the views only add context keys around them
(Memory RFC, "Search and reads", "Handoff citation", "Source").
"""

from __future__ import annotations

import unicodedata
from typing import Any

from powercontext.core import canonical
from powercontext.core.models import ArtifactRef, MemorySearchResult, Source
from powercontext.core.shapes import to_json
from powercontext.service import MemoryService

__all__ = ["evidence_source", "memory_rows", "revision_view", "search_view", "write_view"]


def evidence_source(kind: str, content: str, uri: str | None = None,
                    metadata: dict[str, str] | None = None) -> Source:
    """The Source of caller-given evidence, with its content-derived id ``src_<first 40
    hex of the Source content hash>`` (content NFC first; the hash covers kind, content,
    uri and metadata, so the same evidence twice is one Source and different metadata
    another). Metadata is kept, never dropped. InvalidInputError naming the field
    (``source.kind``, ``source.content``, ``source.metadata``) for a bad value."""
    content = unicodedata.normalize("NFC", canonical.check_str("source.content", content))
    probe = canonical.make_source("src_pending", kind, content, uri, metadata or {})
    return canonical.make_source(f"src_{probe.content_hash[:40]}", probe.kind,
                                 probe.content, probe.uri, probe.metadata)


async def memory_rows(svc: MemoryService) -> list[dict[str, Any]]:
    """Every Memory of the database: ``{"artifact_id", "keys", "memory_ref" (its head),
    "active_entries", "entries"}``, in the backend's inventory order (the ``memory
    list`` shape). CapabilityNotSupportedError for a backend that cannot list."""
    inventory = await svc.inventory()
    keys = await svc.keys_by_memory()
    out = []
    for head in inventory["heads"]:
        entries = (await svc.revision(head)).content.manifest.entries
        out.append({"artifact_id": head.artifact_id,
                    "keys": keys.get(head.artifact_id, []),
                    "memory_ref": to_json(head),
                    "active_entries": sum(1 for e in entries if e.state == "active"),
                    "entries": len(entries)})
    return out


async def revision_view(svc: MemoryService, ref: ArtifactRef, *,
                        include_inactive: bool = False) -> dict[str, Any]:
    """Revision ``ref`` with its entries (``memory show``): ``{"memory_ref", "head" (the
    Memory's current head), "keys", "content_hash", "active_entries", "entries_total",
    "entries": [entry version + "state"]}``; rules (constraints, preferences,
    decisions) first, then facts, then working notes; inactive entries only with
    ``include_inactive``."""
    from powercontext.core.recall import kind_rank

    rev = await svc.revision(ref)
    manifest = rev.content.manifest.entries
    items = [e for e in manifest if include_inactive or e.state == "active"]
    versions = await svc.entries(ref, [e.entry_id for e in items])
    items.sort(key=lambda e: kind_rank(versions[e.entry_id].kind))
    head = await svc.head(ref.artifact_id)
    keys = (await svc.keys_by_memory()).get(ref.artifact_id, [])
    return {"memory_ref": to_json(ref), "head": to_json(head), "keys": keys,
            "content_hash": rev.content_hash,
            "active_entries": sum(1 for e in manifest if e.state == "active"),
            "entries_total": len(manifest),
            "entries": [dict(to_json(versions[e.entry_id]), state=e.state) for e in items]}


async def search_view(svc: MemoryService, query: str,
                      result: MemorySearchResult) -> dict[str, Any]:
    """A search result with each hit's receipt: the MemorySearchResult shape, every hit
    gaining ``rank`` (1-based) and ``matched_terms`` (the query's terms, under the
    database's analyzer, that its text holds; a hit found by the vector channel alone
    may hold none), and ``"untrusted": true``."""
    analyzer = await svc.backend.analyzer()
    terms = analyzer.query_terms(query)
    shaped = to_json(result)
    for rank, (hit, out) in enumerate(zip(result.hits, shaped["hits"], strict=True), 1):
        held = set(analyzer.query_terms(hit.text))
        out["rank"] = rank
        out["matched_terms"] = [t for t in terms if t in held]
    shaped["untrusted"] = True
    return shaped


async def write_view(svc: MemoryService, before: ArtifactRef | None,
                     after: ArtifactRef | None) -> dict[str, Any]:
    """The outcome of a write from ``before`` to ``after`` (the CLI's ``--json``):
    ``{"memory_ref", "changed", "changes"}``; ``changes`` are those of Revision
    ``after`` when the write made it."""
    changed = after is not None and after != before
    changes: Any = ()
    if changed:
        assert after is not None
        (rc,) = await svc.changes(after)
        changes = rc.changes
    return {"memory_ref": to_json(after), "changed": changed, "changes": to_json(changes)}
