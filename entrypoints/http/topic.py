"""``POST /v1/topic-memory/flush``, ``/search`` and ``/get`` (Topic Memory RFC, "HTTP
API", "Automatic processing and explicit flush"; TOPIC-MEMORY.md, "Flush", "get").

Request bodies are JSON objects checked by pydantic models (strict types, no extra
fields; a refusal is a 422 ``invalid_input`` naming the field), then by the service's
own checks (the same as the CLI's and MCP's):

* flush ``{"scope_id"}`` -> 200 ``{"status": "accepted" | "idle"}``. It persists only
  Pending and the flush generation, wakes the in-process Supervisor (role ``all``) and
  returns without waiting for processing. 503 ``topic_processing_unavailable`` when
  the Topic generation configuration is refused (the message says why; nothing is
  written).
* search ``{"scope_id", "query", "limit"?}`` (``limit`` 1..20, default 10; ``query``
  1..8,192 characters with at least one search term) -> 200 ``{"hits": [{"artifact":
  {"family", "artifact_id", "revision"}, "title", "summary", "snippet" (null when
  none), "score", "matched_by": [...]}], "channels": [...]}``, at most one hit per
  Topic.
* get ``{"scope_id", "artifact": {"family": "topic-memory", "artifact_id",
  "revision"}}`` -> 200 the exact Revision ``{"scope_id", "artifact", "title",
  "summary", "detail", "content_hash", "sources": [{"source_id", "content_hash"}],
  "based_on" (the TopicRef an UPDATE replaced, or null), "published_at"}``; never its
  chunks. 404 ``not_found`` for an unknown reference or one of another Scope.

The values are the shapes of :mod:`powercontext.core.topic.shapes`, as the CLI and MCP
print them: a hit's and a Revision's own reference is ``artifact`` (the key the get
request takes), so a hit's ``artifact`` is passed to get as it is.

``scope_id`` is bounded here at 1,024 raw characters (four times the Scope id limit):
the limit itself, 256 characters, applies after NFC, which can shorten a decomposed
text (a macOS path) and is checked by the service (422 naming ``scope_id``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from powercontext.core.errors import TopicProcessingUnavailableError
from powercontext.core.query import MAX_QUERY_CHARS
from powercontext.core.topic import content as topic_content
from powercontext.core.topic.search import MAX_LIMIT
from powercontext.entrypoints.http.deps import Services, notify_flush, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES

__all__ = ["SCOPE_RAW_CHARS", "router"]

#: The raw (pre-NFC) bound of ``scope_id`` in request bodies (module docstring).
SCOPE_RAW_CHARS = 4 * topic_content.MAX_SCOPE_CHARS
_MAX_REVISION = 2**53 - 1

router = APIRouter(prefix="/v1/topic-memory", tags=["topic-memory"],
                   dependencies=[Depends(require_token)])

_STRICT = ConfigDict(extra="forbid", strict=True)
_OUT = ConfigDict(extra="forbid")

ScopeId = Annotated[str, Field(
    min_length=1, max_length=SCOPE_RAW_CHARS, examples=["project:powercontext"],
    description="The Scope: 1..256 printable characters after NFC, no white space at "
                "either end (e.g. repo:/abs/path).")]


class TopicRefModel(BaseModel):
    """An exact Topic reference."""

    model_config = _STRICT
    family: Literal["topic-memory"]
    artifact_id: Annotated[str, Field(min_length=1, max_length=128,
                                      examples=["topic_art_01jb..."])]
    revision: Annotated[int, Field(ge=1, le=_MAX_REVISION)]


class FlushRequest(BaseModel):
    model_config = _STRICT
    scope_id: ScopeId


class SearchRequest(BaseModel):
    model_config = _STRICT
    scope_id: ScopeId
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10


class GetRequest(BaseModel):
    model_config = _STRICT
    scope_id: ScopeId
    artifact: TopicRefModel


class FlushResponse(BaseModel):
    model_config = _OUT
    status: Literal["accepted", "idle"]


class TopicRefOut(BaseModel):
    model_config = _OUT
    family: Literal["topic-memory"]
    artifact_id: str
    revision: int


class TopicHitOut(BaseModel):
    model_config = _OUT
    artifact: TopicRefOut
    title: str
    summary: str
    snippet: str | None
    score: float
    matched_by: list[Literal["topic_fts", "topic_vector", "detail_fts", "detail_vector"]]


class SearchResponse(BaseModel):
    model_config = _OUT
    hits: list[TopicHitOut]
    channels: list[Literal["topic_fts", "topic_vector", "detail_fts", "detail_vector"]]


class SourceRefOut(BaseModel):
    model_config = _OUT
    source_id: str
    content_hash: str


class TopicRevisionOut(BaseModel):
    model_config = _OUT
    scope_id: str
    artifact: TopicRefOut
    title: str
    summary: str
    detail: str
    content_hash: str
    sources: list[SourceRefOut]
    based_on: TopicRefOut | None
    published_at: str


ServicesDep = Annotated[Services, Depends(services)]


@router.post("/flush", response_model=FlushResponse, responses=ERROR_RESPONSES,
             summary="Ask for a Scope's Sources to be processed")
async def flush(body: FlushRequest, svc: ServicesDep) -> JSONResponse:
    """Persist the processing intent (Pending ``source_through`` = the Source head,
    flush generation + 1; concurrent flushes coalesce) and return at once:
    ``accepted``, or ``idle`` when the Scope has no Source or its Cursor covers the
    head (nothing written). ``accepted`` is no task and does not mean processed."""
    scope = topic_content.check_scope_id(body.scope_id)
    if not svc.processing_available:
        raise TopicProcessingUnavailableError(
            svc.unavailable_reason or "Topic processing is unavailable on this server")
    status = await svc.topic.flush(scope)
    if status == "accepted":
        notify_flush(svc, scope)
    return JSONResponse({"status": status})


@router.post("/search", response_model=SearchResponse, responses=ERROR_RESPONSES,
             summary="Search the Topics of one Scope")
async def search(body: SearchRequest, svc: ServicesDep) -> JSONResponse:
    """At most ``limit`` hits, one per Topic, best first, each with the exact
    ``artifact`` reference to expand with get. Results are untrusted data."""
    from powercontext.topic_shapes import topic_json

    result = await svc.topic.search(body.scope_id, body.query, body.limit)
    return JSONResponse(topic_json(result))


@router.post("/get", response_model=TopicRevisionOut, responses=ERROR_RESPONSES,
             summary="Read one exact Topic Revision")
async def get(body: GetRequest, svc: ServicesDep) -> JSONResponse:
    """That exact Revision: title, summary, complete detail, its SourceRefs, the ref it
    was based on and its database-UTC ``published_at``; never internal chunks. 404 for
    an unknown reference or one of another Scope."""
    from powercontext.topic_shapes import topic_json

    revision = await svc.topic.get(body.scope_id, body.artifact.model_dump())
    return JSONResponse(topic_json(revision))
