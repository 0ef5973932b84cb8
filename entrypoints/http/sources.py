"""Sources over HTTP, under ``/v1/sources/`` (Memory RFC, "Source"; Topic Memory RFC,
"Source, Window, Cursor, and Pending"): ``powercontext source add`` and ``source show``.

* ``POST /add`` ``{"scope_id", "sources": [{"content", "kind"?, "uri"?, "metadata"?}]}``
  -> ``{"scope_id", "sources": [{"source_id", "position", "kind", "uri",
  "content_hash", "over_topic_ceiling"}]}``: every Source is written into the Scope's
  journal with the Pending raise in one transaction (the SourceStore's
  ``put_scoped_sources``, as the CLI does), so Topic processing of the Scope sees it;
  a secret anywhere refuses the whole call (422 naming ``sources[i].field``), nothing
  stored. ``over_topic_ceiling`` says why Topic processing will stop at a Source that
  is over a processing ceiling (it is stored either way). A request body is at most
  256 KiB: add a larger file with the CLI.
* ``GET /show?source_id=ID`` -> the Source (``kind``, ``uri``, ``content_hash``,
  ``metadata``, ``content``; untrusted data); 404 for an id that is not stored.

Every route needs the bearer token; errors are mapped by :mod:`.errors`.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse

from powercontext.entrypoints.http.deps import Services, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES
from powercontext.entrypoints.http.memory_models import SourceAddOut, SourceAddRequest, SourceOut

__all__ = ["router"]

router = APIRouter(prefix="/v1/sources", tags=["sources"],
                   dependencies=[Depends(require_token)])
ServicesDep = Annotated[Services, Depends(services)]


@router.post("/add", response_model=SourceAddOut, responses=ERROR_RESPONSES,
             summary="Add Sources to a Scope's journal for Topic processing")
async def add(body: SourceAddRequest, svc: ServicesDep) -> JSONResponse:
    """``source add``: each Source into the Scope's journal (one transaction, all or
    nothing), ready for a flush (``POST /v1/topic-memory/flush``) or automatic
    processing. Metadata is kept (flat strings)."""
    from powercontext.core.topic.content import check_scope_id
    from powercontext.core.topic.window import projected_evidence
    from powercontext.entrypoints.cli.sources import build_source

    scope = check_scope_id(body.scope_id)
    sources: list[Any] = [
        build_source(s.kind, s.content, s.uri, s.metadata, field=f"sources[{i}]")
        for i, s in enumerate(body.sources)]
    # the store scans for secrets first (SecretDetectedError naming sources[i].field)
    positions = await svc.memory.backend.put_scoped_sources(scope, sources)
    rows = [{"source_id": s.source_id, "position": p, "kind": s.kind, "uri": s.uri,
             "content_hash": s.content_hash,
             "over_topic_ceiling": projected_evidence(s)[0]}
            for s, p in zip(sources, positions, strict=True)]
    return JSONResponse({"scope_id": scope, "sources": rows})


@router.get("/show", response_model=SourceOut, responses=ERROR_RESPONSES,
            summary="A stored Source with its content and metadata")
async def show(svc: ServicesDep,
               source_id: Annotated[str, Query(min_length=1, max_length=512)]) -> JSONResponse:
    """``source show``: the Source an entry's evidence or a Topic cites (``source_refs``
    of an entry version). Its content is untrusted data."""
    from powercontext.core import canonical
    from powercontext.core.shapes import to_json

    canonical.check_id(source_id, "source_id")
    (src,) = await svc.memory.backend.get_sources([source_id])
    return JSONResponse(dict(to_json(src), untrusted=True))
