"""The Processing page of the dashboard (issue 17, "Processing"; Topic Memory RFC,
"Pending dirty set", "Cumulative work and evidence ceilings", "Retry and
observability", "Leader, term, and fencing", "Automatic scheduling").

* ``/ui/processing`` -- per Scope the Source head, Cursor, Pending and flush
  generations and the budget row with its failure code (a terminal frontier is
  highlighted), the blocked Scopes first (the Source each stops at, why, and the
  ``topic unblock`` commands that let it go on: only an operator decision does), the
  Supervisor's lease (holder, generation, expiry) and the last automatic wave; JSON
  twin ``{"scopes": [the ``topic status`` shape], "blocked": [BlockedFrontier, the
  ``blocked`` shape of ``topic status --json``], "supervision", "flushed"}``.
* ``POST /ui/processing/flush?scope=S`` (same origin, a viewer) -- the explicit flush of
  the HTTP API (``idle`` or ``accepted``), then 303 back to ``/ui/processing`` showing
  the status; the JSON twin answers ``{"scope_id", "status"}``.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from powercontext.core.errors import TopicProcessingUnavailableError
from powercontext.core.shapes import to_json
from powercontext.core.topic.content import check_scope_id
from powercontext.entrypoints.http.dashboard._services import ServicesDep, insight, topic_service
from powercontext.entrypoints.http.dashboard.web import page, same_origin, viewer, wants_json
from powercontext.entrypoints.http.deps import notify_flush

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

ScopeQuery = Annotated[str, Query(min_length=1, max_length=1024)]
_STATUSES = ("accepted", "idle")


@router.get("/ui/processing", dependencies=[Depends(viewer)])
async def processing_page(request: Request, svc: ServicesDep,
                          flushed: Annotated[str | None, Query(max_length=1024)] = None,
                          status: Annotated[str | None, Query(max_length=16)] = None
                          ) -> Response:
    """Every Scope's processing status and the Supervisor substrate; ``flushed`` and
    ``status`` (set by the flush redirect) name the flush just made."""
    from powercontext.topic_shapes import processing_json

    topic = topic_service(svc)
    scopes = [processing_json(s) for s in await topic.status()]
    blocked = [processing_json(b) for b in await topic.blocked()]
    reads = insight(svc)
    supervision = to_json(await reads.supervision_view()) if reads is not None else None
    data = {"scopes": scopes, "blocked": blocked, "supervision": supervision,
            "processing_available": svc.processing_available,
            "unavailable_reason": svc.unavailable_reason,
            "supervisor_in_process": svc.supervisor is not None,
            "flushed": ({"scope_id": flushed, "status": status}
                        if flushed is not None and status in _STATUSES else None)}
    return page(request, "processing.html", data, title="Processing")


@router.post("/ui/processing/flush", dependencies=[Depends(viewer), Depends(same_origin)])
async def flush(request: Request, svc: ServicesDep, scope: ScopeQuery) -> Response:
    """The explicit flush of ``scope`` (as ``POST /v1/topic-memory/flush``): 303 to
    ``/ui/processing?flushed=S&status=accepted|idle``, or ``{"scope_id", "status"}``
    for a JSON request. 403 ``forbidden_origin`` from another origin; 503 when Topic
    processing is unavailable on this server; 422 for a bad Scope id."""
    topic = topic_service(svc)
    scope_id = check_scope_id(scope)
    if not svc.processing_available:
        raise TopicProcessingUnavailableError(
            svc.unavailable_reason or "Topic processing is unavailable on this server")
    result = await topic.flush(scope_id)
    if result == "accepted":
        notify_flush(svc, scope_id)
    if wants_json(request):
        return JSONResponse({"scope_id": scope_id, "status": result})
    return RedirectResponse(f"/ui/processing?flushed={quote(scope_id, safe='')}"
                            f"&status={quote(str(result), safe='')}", status_code=303)
