"""The Scopes and Topics pages of the dashboard (issue 17, "Topics per Scope"; Topic
Memory RFC, "HTTP API", "Storage, Head, and atomic activation").

Scope ids hold ``:`` and ``/``, so they travel as the query parameter ``scope``:

* ``/ui/scopes`` -- every Scope with its Source head, active Topics and Revisions;
* ``/ui/topics?scope=S[&q=...][&page=N]`` -- the Scope's Topics (title, summary,
  Revisions, Sources of the head), :data:`PAGE_SIZE` per page, or the hits of a search;
  plots: Sources per day and Topic publications per day;
* ``/ui/topics/{topic_id}?scope=S[&revision=N]`` -- one Revision (the head by
  default) with its detail rendered from Markdown and sanitised
  (:mod:`.markdown`), its Revision history (newest :data:`HISTORY` with the based-on
  chain) and the Sources each Revision cites, linking to ``/ui/sources/...``.

JSON twins carry the same data (Topic values shaped by ``topic_json``; no HTML)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.shapes import to_json
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.insight import TopicListing
from powercontext.core.topic.models import TopicRef
from powercontext.entrypoints.http.dashboard._services import (
    ServicesDep,
    insight,
    topic_service,
)
from powercontext.entrypoints.http.dashboard.markdown import render_markdown
from powercontext.entrypoints.http.dashboard.web import page, viewer

__all__ = ["HISTORY", "PAGE_SIZE", "SEARCH_LIMIT", "router"]

router = APIRouter(include_in_schema=False)

#: Topics per page of the list; hits of a search; Revisions shown in a history.
PAGE_SIZE = 50
SEARCH_LIMIT = 20
HISTORY = 50

ScopeQuery = Annotated[str, Query(min_length=1, max_length=1024)]


def _day_points(days: Any) -> list[dict[str, Any]]:
    return [{"x": d.day, "y": d.count} for d in days]


@router.get("/ui/scopes", dependencies=[Depends(viewer)])
async def scopes_page(request: Request, svc: ServicesDep) -> Response:
    """Every Scope with its counts (``{"scopes": [{"scope_id", "source_head",
    "topics", "revisions"}]}``)."""
    topic_service(svc)
    reads = insight(svc)
    found = await reads.scopes() if reads is not None else ()
    data = {"scopes": to_json(found)}
    return page(request, "scopes.html", data, title="Scopes")


@router.get("/ui/topics", dependencies=[Depends(viewer)])
async def topics_page(request: Request, svc: ServicesDep, scope: ScopeQuery,
                      q: Annotated[str | None, Query(max_length=4096)] = None,
                      page_no: Annotated[int, Query(alias="page", ge=1)] = 1) -> Response:
    """The Topics of one Scope, or the hits of ``q`` there, and its two plots."""
    from powercontext.topic_shapes import topic_json

    topic = topic_service(svc)
    scope_id = check_scope_id(scope)
    query = (q or "").strip()
    data: dict[str, Any] = {"scope_id": scope_id, "q": query, "page": page_no,
                            "page_size": PAGE_SIZE, "search": None, "topics": [],
                            "total": 0, "sources_per_day": [], "publications_per_day": []}
    if query:
        result = await topic.search(scope_id, query, SEARCH_LIMIT)
        data["search"] = topic_json(result)
    else:
        heads = await topic.backend.heads(scope_id)
        data["total"] = len(heads)
        start = (page_no - 1) * PAGE_SIZE
        for ref in heads[start:start + PAGE_SIZE]:
            data["topics"].append(to_json(TopicListing.of(await topic.get(scope_id, ref))))
    reads = insight(svc)
    if reads is not None:
        data["publications_per_day"] = _day_points(await reads.publications_per_day(scope_id))
        data["sources_per_day"] = _day_points(await reads.sources_per_day(scope_id))
    return page(request, "topics.html", data, title=f"Topics of {scope_id}")


def _revision_json(rev: Any) -> dict[str, Any]:
    from powercontext.topic_shapes import topic_json

    shaped: dict[str, Any] = topic_json(rev)
    return shaped


@router.get("/ui/topics/{topic_id}", dependencies=[Depends(viewer)])
async def topic_page(request: Request, topic_id: str, svc: ServicesDep, scope: ScopeQuery,
                     revision: Annotated[int | None, Query(ge=1)] = None) -> Response:
    """One Topic Revision (``revision``, default the head), its sanitised Markdown, its
    Revision history and the Sources each Revision cites. 404 for a Topic or Revision
    that is not in the Scope."""
    topic = topic_service(svc)
    scope_id = check_scope_id(scope)
    reads = insight(svc)
    if reads is not None:
        history = list(await reads.topic_history(scope_id, topic_id, HISTORY))
    else:
        head = [r for r in await topic.backend.heads(scope_id) if r.artifact_id == topic_id]
        if not head:
            raise ArtifactNotFoundError(f"no Topic {topic_id!r} in this Scope")
        history = [await topic.get(scope_id, head[0])]
    head_revision = history[0].ref.revision
    if revision is None or revision == head_revision:
        selected = history[0]
    elif revision > head_revision:
        raise InvalidInputError("revision", f"Topic {topic_id!r} has Revisions "
                                f"1..{head_revision}; {revision} is not one")
    else:
        found = [r for r in history if r.ref.revision == revision]
        selected = found[0] if found else await topic.get(scope_id, TopicRef(topic_id,
                                                                               revision))
    data = {"scope_id": scope_id, "head_revision": head_revision,
            "topic": _revision_json(selected),
            "history": [_revision_json(r) for r in history],
            "history_complete": history[-1].ref.revision == 1}
    extra = {"detail_html": render_markdown(selected.content.detail)}
    return page(request, "topic.html", data, extra=extra,
                title=f"{selected.content.title} @{selected.ref.revision}")
