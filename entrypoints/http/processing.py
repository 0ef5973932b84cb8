"""``POST /v1/topic-memory/status`` and ``/unblock``: what processing did, and the
operator's decision at a terminal frontier (Topic Memory RFC, "Retry and
observability": inspect the budget row with the Cursor and the logs; deliberate
operator remediation; :mod:`powercontext.core.topic.operator`). Both need the bearer
token when the server has one, like every ``/v1/topic-memory`` operation.

* status ``{"scope_id"?}`` (absent or null: every Scope the server knows) -> 200
  ``{"scopes": [ScopeStatus], "blocked": [BlockedFrontier]}`` (the shapes of
  :mod:`powercontext.topic_shapes`): per Scope the Source head, the Cursor, Pending,
  the frontier's budget row and its last failure code; for each Scope stopped at a
  terminal frontier, the Source it stops at, why, and the commands that unblock it.
  Read only. At most :data:`MAX_STATUS_SCOPES` Scopes (``truncated`` says when more).
* unblock ``{"scope_id", "action": "skip" | "grant", "frontier", "position"?,
  "decided_by", "reason"}`` -> 200 ``{"decision": OperatorDecision}``: ``frontier``
  is the Cursor the Scope is stopped at (``topic status``), ``position`` the Source to
  skip. Recorded with who and why as an audit row in the transaction that applies it;
  the Scope is flushed and the in-process Supervisor woken. 422 naming the field for
  a Scope that is not stopped, a refused action (grant at a complexity frontier, skip
  of another Source) or bad who/why; 409 ``conflict`` when the Scope moved since it was
  read.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from powercontext.core.topic.operator import MAX_OPERATOR_CHARS, MAX_REASON_CHARS
from powercontext.entrypoints.http.deps import Services, notify_flush, require_token, services
from powercontext.entrypoints.http.errors import ERROR_RESPONSES
from powercontext.entrypoints.http.topic import ScopeId

__all__ = ["MAX_STATUS_SCOPES", "router"]

#: The most Scopes one status answer lists.
MAX_STATUS_SCOPES = 1000
_MAX_POSITION = 2**53 - 1

router = APIRouter(prefix="/v1/topic-memory", tags=["topic-memory"],
                   dependencies=[Depends(require_token)])

_STRICT = ConfigDict(extra="forbid", strict=True)


class StatusRequest(BaseModel):
    model_config = _STRICT
    scope_id: ScopeId | None = None


class UnblockRequest(BaseModel):
    model_config = _STRICT
    scope_id: ScopeId
    action: Literal["skip", "grant"]
    frontier: Annotated[int, Field(ge=0, le=_MAX_POSITION,
                                   description="The Cursor the Scope is stopped at.")]
    position: Annotated[int | None, Field(
        ge=1, le=_MAX_POSITION, description="skip: the Source's journal position.")] = None
    decided_by: Annotated[str, Field(min_length=1, max_length=4 * MAX_OPERATOR_CHARS)]
    reason: Annotated[str, Field(min_length=1, max_length=4 * MAX_REASON_CHARS)]


ServicesDep = Annotated[Services, Depends(services)]


@router.post("/status", responses=ERROR_RESPONSES,
             summary="Processing status per Scope, and why a Scope is stopped")
async def status(body: StatusRequest, svc: ServicesDep) -> JSONResponse:
    """Read only: per Scope the Source head, Cursor, Pending row and the budget row of
    the frontier (attempts, reserved requests and tokens, last failure code); and for
    each Scope stopped at a terminal frontier the Source it stops at, the reason and
    the commands that unblock it."""
    from powercontext.topic_shapes import processing_json

    rows = await svc.topic.status(body.scope_id)
    blocked = await svc.topic.blocked(body.scope_id)
    return JSONResponse({
        "scopes": [processing_json(r) for r in rows[:MAX_STATUS_SCOPES]],
        "blocked": [processing_json(b) for b in blocked[:MAX_STATUS_SCOPES]],
        "truncated": len(rows) > MAX_STATUS_SCOPES})


@router.post("/unblock", responses=ERROR_RESPONSES,
             summary="Record an operator decision that unblocks a stopped Scope")
async def unblock(body: UnblockRequest, svc: ServicesDep) -> JSONResponse:
    """``skip`` the Source processing stops at, or ``grant`` the frontier one fresh
    allowance; recorded with who and why (an audit row) with its effect, the Scope
    flushed. The only way a terminal frontier changes."""
    from powercontext.topic_shapes import processing_json

    decision = await svc.topic.unblock(
        body.scope_id, body.action, frontier=body.frontier, position=body.position,
        decided_by=body.decided_by, reason=body.reason)
    notify_flush(svc, decision.scope_id)
    return JSONResponse({"decision": processing_json(decision)})
