"""The Memory reads over HTTP, under ``/v1/memory/`` (Memory RFC, "Search and reads",
"changes()", "expand()", "Handoff citation"): the same operations as ``powercontext
memory list|show|changes|search|expand|cite|validate-citation``, through the same
service calls, with the same limits and Memory names (``ID``, ``ID@REV``,
``key:NAME``, ``key:NAME@REV``; :mod:`powercontext.memory_names`).

* ``GET /list`` -> ``{"memories": [{"artifact_id", "keys", "memory_ref", "active_entries",
  "entries"}]}``.
* ``GET /show?memory=NAME[&all=true]`` -> the Revision (default: the head) with its
  entries, rules first; ``ETag: "ID@REV"`` of that Revision (a write's ``If-Match``).
* ``GET /changes?memory=NAME[&since=N]`` -> ``{"memory_ref", "revisions": [{"memory_ref",
  "changes"}]}`` (``since`` exclusive; 0: the whole history; absent: the Revision's own).
* ``POST /search`` ``{"query", "memories", "limit"?, "mode"?}`` -> the MemorySearchResult
  with each hit's receipt (``rank``, ``matched_by``, ``score``, ``matched_terms``).
* ``POST /expand`` ``{"anchors"?, "memory"?, "entry_ids"?}`` -> ``{"entries": [...]}``.
* ``GET /cite?memory=NAME&entry_id=ID`` -> the Handoff citation of the entry's version.
* ``POST /validate-citation`` (a citation) -> ``{"valid", "entry", "error", "message"}``:
  200 either way (``valid`` false names why), 422 for a body that is no citation.

The writes are in :mod:`.memory_writes`. Every route needs the bearer token
(:func:`.deps.require_token`); errors are mapped by :mod:`.errors`. Entry texts and
Source contents are untrusted data (``"untrusted": true``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from powercontext.core.errors import (
    ArtifactNotFoundError,
    InvalidCitationError,
    InvalidInputError,
)
from powercontext.core.models import ArtifactRef, HandoffCitation
from powercontext.entrypoints.http.deps import Services, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES
from powercontext.entrypoints.http.memory_models import (
    ChangesOut,
    CitationIn,
    CitationOut,
    ExpandOut,
    ExpandRequest,
    MemoryListOut,
    SearchOut,
    SearchRequest,
    ShowOut,
    ValidateOut,
)

__all__ = ["PREFIX", "etag", "router"]

PREFIX = "/v1/memory"

router = APIRouter(prefix=PREFIX, tags=["memory"], dependencies=[Depends(require_token)])
ServicesDep = Annotated[Services, Depends(services)]
NameQuery = Annotated[str, Query(min_length=1, max_length=4160, examples=["key:repo:/abs/path"],
                                 description="ID, ID@REV, key:NAME or key:NAME@REV.")]
EntryQuery = Annotated[str, Query(min_length=1, max_length=512)]


def etag(ref: ArtifactRef) -> str:
    """The entity tag of Revision ``ref``: ``"ID@REV"`` (quoted, strong)."""
    return f'"{ref.artifact_id}@{ref.revision}"'


async def _resolve(svc: Services, name: str) -> ArtifactRef:
    from powercontext.memory_names import resolve_memory

    return await resolve_memory(svc.memory, name)


@router.get("/list", response_model=MemoryListOut, responses=ERROR_RESPONSES,
            summary="Every Memory: its keys, head Revision and entry counts")
async def memory_list(svc: ServicesDep) -> JSONResponse:
    """The Memories of the database (``memory list``); name one in other operations as
    ``key:NAME``, ``ID`` or ``ID@REV``."""
    from powercontext.memory_views import memory_rows

    return JSONResponse({"memories": await memory_rows(svc.memory)})


@router.get("/show", response_model=ShowOut, responses=ERROR_RESPONSES,
            summary="One Revision of a Memory with its entries")
async def show(svc: ServicesDep, memory: NameQuery,
               all: Annotated[bool, Query(description="Include inactive entries.")] = False,
               ) -> JSONResponse:
    """The manifest of a Revision (default: the head) with entry texts: rules
    (constraints, preferences, decisions) first, then facts, then working notes; each
    entry's ``state``. ``head`` is the Memory's current head; the ``ETag`` names the
    Revision shown: send it as ``If-Match`` to write only on top of it."""
    from powercontext.memory_views import revision_view

    ref = await _resolve(svc, memory)
    view = await revision_view(svc.memory, ref, include_inactive=all)
    return JSONResponse(view, headers={"ETag": etag(ref)})


@router.get("/changes", response_model=ChangesOut, responses=ERROR_RESPONSES,
            summary="The compact changes per Revision")
async def changes(svc: ServicesDep, memory: NameQuery,
                  since: Annotated[int | None, Query(
                      ge=0, le=2**53 - 1, description="Exclusive lower Revision; 0: the "
                      "whole history; absent: the named Revision's own changes.")] = None,
                  ) -> JSONResponse:
    """``memory changes``: add, revise, deactivate and reactivate per Revision, with
    the entry version ids and reasons."""
    from powercontext.core.shapes import to_json

    ref = await _resolve(svc, memory)
    out = await svc.memory.changes(ref, since)
    return JSONResponse({"memory_ref": to_json(ref), "revisions": to_json(out)})


@router.post("/search", response_model=SearchOut, responses=ERROR_RESPONSES,
             summary="Search the active entries of Memories (fts, vector, hybrid, auto)")
async def search(body: SearchRequest, svc: ServicesDep) -> JSONResponse:
    """Active entries of current heads (``ID`` and ``key:NAME`` are read as the head
    inside the search's transaction; an ``ID@REV`` must be the head). ``mode``: auto
    (hybrid when an embedding model is configured, else full text; ``mode`` says which
    ran and ``fallback_reason`` why it fell back), fts, vector or hybrid (503
    ``capability_not_supported`` when it cannot run). Each hit's receipt: ``rank``,
    ``matched_by``, ``score`` (RRF) and ``matched_terms``. Results are untrusted data."""
    from powercontext.core.query import search_terms
    from powercontext.memory_names import memory_selector
    from powercontext.memory_views import search_view

    if not body.query.strip():
        raise InvalidInputError("query", "is empty: give the words to search for")
    search_terms(body.query)  # the query's bounds before any name is looked up
    refs = [await memory_selector(svc.memory, n) for n in body.memories]
    result = await svc.memory.search(body.query, refs, limit=body.limit, mode=body.mode)
    return JSONResponse(await search_view(svc.memory, body.query, result))


@router.post("/expand", response_model=ExpandOut, responses=ERROR_RESPONSES,
             summary="Exact entry versions with their evidence")
async def expand(body: ExpandRequest, svc: ServicesDep) -> JSONResponse:
    """The exact entry versions (text, kind, version, evidence SourceRefs) that
    ``anchors`` name (search hits or citations), then the versions of ``entry_ids`` at
    ``memory``. 422 when an anchor does not match its Revision; 404 for an unknown
    Memory, Revision or entry."""
    from powercontext.core.shapes import to_json

    cites = [_citation(a) for a in body.anchors]
    if body.memory is not None:
        if not body.entry_ids:
            raise InvalidInputError("entry_ids", "name at least one entry of the Memory")
        ref = await _resolve(svc, body.memory)
        current = await svc.memory.entries(ref, list(body.entry_ids))
        for entry_id in body.entry_ids:
            if entry_id not in current:
                raise ArtifactNotFoundError(
                    f"entry {entry_id!r} is not in {ref.artifact_id}@{ref.revision}")
            cites.append(HandoffCitation(ref, entry_id, current[entry_id].entry_version_id))
    elif body.entry_ids:
        raise InvalidInputError("memory", "entry_ids need the Memory they belong to")
    if not cites:
        raise InvalidInputError("anchors", "give anchors, or memory and entry_ids")
    views = await svc.memory.expand(cites)
    return JSONResponse({"entries": to_json(views), "untrusted": True})


@router.get("/cite", response_model=CitationOut, responses=ERROR_RESPONSES,
            summary="The Handoff citation of an entry")
async def cite(svc: ServicesDep, memory: NameQuery, entry_id: EntryQuery) -> JSONResponse:
    """ArtifactRef + entry_id + entry_version_id of the entry's version at the named
    Revision (default: the head): what ``validate-citation`` checks later, even after the
    Memory moved on."""
    from powercontext.core import canonical
    from powercontext.core.shapes import to_json

    canonical.check_id(entry_id, "entry_id")
    ref = await _resolve(svc, memory)
    version = (await svc.memory.entries(ref, [entry_id])).get(entry_id)
    if version is None:
        raise ArtifactNotFoundError(f"entry {entry_id!r} is not in "
                                    f"{ref.artifact_id}@{ref.revision}")
    return JSONResponse(to_json(svc.memory.cite(version, ref)))


@router.post("/validate-citation", response_model=ValidateOut, responses=ERROR_RESPONSES,
             summary="Check a Handoff citation against its exact Revision")
async def validate_citation(body: CitationIn, svc: ServicesDep) -> JSONResponse:
    """Re-reads the cited Revision and checks ids, version, hash and canonical bytes:
    ``{"valid": true, "entry"}`` or ``{"valid": false, "error", "message"}`` (an old
    citation stays valid after the Memory moves on)."""
    from powercontext.core.shapes import to_json

    try:
        version = await svc.memory.validate_citation(_citation(body))
    except (InvalidCitationError, ArtifactNotFoundError) as exc:
        return JSONResponse({"valid": False, "entry": None, "error": type(exc).__name__,
                             "message": str(exc)})
    return JSONResponse({"valid": True, "entry": to_json(version), "error": None,
                         "message": None})


def _citation(anchor: CitationIn) -> HandoffCitation:
    return HandoffCitation(ArtifactRef(anchor.memory_ref.artifact_id,
                                       anchor.memory_ref.revision),
                           anchor.entry_id, anchor.entry_version_id)
