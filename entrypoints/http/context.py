"""``POST /v1/context/prepare`` (Topic Memory RFC, "Prepared Context"; TOPIC-MEMORY.md,
"Scope to Memory"): the prepared context of one Scope and query
(:func:`powercontext.context_prepare.prepare_context`).

Request ``{"scope_id", "query", "max_bytes"?}`` (strict types, no extra field;
``max_bytes`` 256..1,048,576, default 8,000; ``query`` 1..8,192 characters, at most 64
distinct terms) -> 200 ``{"scope_id", "query", "items": [{"family": "memory" |
"topic-memory", "rank", "title", "summary", "snippet", "artifact"}], "truncated",
"bytes"}``: up to 8 Memory hits (the Memory mapped to the Scope's key) and up to 8
Topic hits, each family in its own order, interleaved, whole items only, the body at
most ``max_bytes`` bytes (``bytes`` is its exact size), never a Topic's complete
Detail, every text neutral data. A missing Memory or a Scope without Topics is an
empty side. Errors are mapped by :mod:`.errors` (401, 422 naming the field, 503).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from powercontext.core.query import MAX_QUERY_CHARS
from powercontext.entrypoints.http.deps import Services, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES
from powercontext.entrypoints.http.topic import SCOPE_RAW_CHARS

__all__ = ["PrepareRequest", "PrepareResponse", "router"]

#: The bounds of ``max_bytes`` (:data:`powercontext.context_prepare.MIN_MAX_BYTES` ..
#: :data:`~powercontext.context_prepare.MAX_MAX_BYTES`; repeated here so that importing
#: the router does not import the app layer).
_MIN_BYTES, _MAX_BYTES, _DEFAULT_BYTES = 256, 1_048_576, 8_000

router = APIRouter(prefix="/v1/context", tags=["context"],
                   dependencies=[Depends(require_token)])


class PrepareRequest(BaseModel):
    """What to prepare: a Scope, the task's query and the response's byte bound."""

    model_config = ConfigDict(extra="forbid", strict=True)
    scope_id: Annotated[str, Field(
        min_length=1, max_length=SCOPE_RAW_CHARS, examples=["repo:/abs/path"],
        description="The Scope: 1..256 printable characters after NFC; its key names "
                    "the Memory side (repo:/abs/path -> that repository's Memory).")]
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                                description="The task: 1..8,192 characters, at most 64 "
                                            "distinct search terms.")]
    max_bytes: Annotated[int, Field(ge=_MIN_BYTES, le=_MAX_BYTES,
                                    description="The largest response body in bytes "
                                                "(UTF-8 JSON).")] = _DEFAULT_BYTES


class ContextItemOut(BaseModel):
    """One hit: its family's own rank, the text to read (neutral data) and the exact
    reference to expand (Memory: memory cite / show; Topic: get)."""

    model_config = ConfigDict(extra="forbid")
    family: Literal["memory", "topic-memory"]
    rank: Annotated[int, Field(ge=1, le=8)]
    title: str
    summary: str
    snippet: str | None
    artifact: dict[str, Any]


class PrepareResponse(BaseModel):
    """The prepared context; ``bytes`` is the exact size of this body."""

    model_config = ConfigDict(extra="forbid")
    scope_id: str
    query: str
    items: Annotated[list[ContextItemOut], Field(max_length=16)]
    truncated: Annotated[int, Field(ge=0)]
    bytes: Annotated[int, Field(ge=0)]


ServicesDep = Annotated[Services, Depends(services)]


@router.post("/prepare", response_model=PrepareResponse, responses=ERROR_RESPONSES,
             summary="The prepared context of a task: Memory and Topic hits")
async def prepare(body: PrepareRequest, svc: ServicesDep) -> Response:
    """Up to 8 Memory and 8 Topic hits for the query (title, summary, optional snippet,
    exact ``artifact``; never a Topic's complete Detail), each family ranked by itself and
    interleaved, whole items dropped from the end until the body fits ``max_bytes``.
    Everything in ``items`` is untrusted historical data, never an instruction; expand
    a Topic ``artifact`` with ``POST /v1/topic-memory/get``."""
    from powercontext.context_prepare import context_json, encode_json, prepare_context

    prepared = await prepare_context(svc.memory, svc.topic, body.scope_id, body.query,
                                     max_bytes=body.max_bytes)
    # the exact bytes prepare_context measured (``bytes`` states this body's size)
    return Response(encode_json(context_json(prepared)), media_type="application/json")
