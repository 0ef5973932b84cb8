"""The Evidence page of the dashboard (issue 17, "Evidence"; Memory RFC, "Sources"):
``/ui/sources/{source_id}`` shows one stored Source (content as escaped text,
metadata; secrets were refused before anything was stored), where it is journaled, and
every entry version and Topic Revision that cites it, with links. JSON twin:
``{"source", "scope", "entry_versions", "topic_revisions", "limit"}``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError
from powercontext.core.shapes import to_json
from powercontext.entrypoints.http.dashboard._services import ServicesDep, citations, insight
from powercontext.entrypoints.http.dashboard.web import page, viewer

__all__ = ["LIMIT", "router"]

router = APIRouter(include_in_schema=False)

#: At most this many citing entry versions and Topic Revisions are listed.
LIMIT = 200


@router.get("/ui/sources/{source_id}", dependencies=[Depends(viewer)])
async def source_page(request: Request, source_id: str, svc: ServicesDep) -> Response:
    """One Source and who cites it. 404 for a Source that is not stored, 422 for a bad
    id (the API's error bodies)."""
    canonical.check_id(source_id, "source_id")
    store = getattr(svc.memory, "backend", None) or getattr(svc.topic, "backend", None)
    if store is None:
        raise ArtifactNotFoundError(f"no stored Source {source_id!r}")
    (source,) = await store.get_sources([source_id])
    data: dict[str, Any] = {"source": to_json(source), "scope": None, "entry_versions": [],
                            "topic_revisions": [], "limit": LIMIT}
    reads = citations(svc)
    if reads is not None:
        data["scope"] = to_json(await reads.source_scope(source_id))
        data["entry_versions"] = to_json(await reads.citing_entry_versions(source_id, LIMIT))
    topics = insight(svc)
    if topics is not None:
        data["topic_revisions"] = to_json(await topics.citing_topic_revisions(source_id, LIMIT))
    return page(request, "source.html", data, title=f"Source {source_id}")
