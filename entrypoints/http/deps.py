"""What every route depends on: the opened services and the bearer token check
(shared by :mod:`.topic` and :mod:`.context`; owned by the HTTP app).

The app keeps both on its state: ``app.state.services`` (a :class:`Services`) and
``app.state.api_token`` (the configured token, or None: no check, the server binds
loopback only; TOPIC-MEMORY.md, "Auth")."""

from __future__ import annotations

import hmac
from typing import Any

import attrs
from fastapi import Request, Security
from fastapi.security import HTTPBearer

from powercontext.entrypoints.http.errors import ApiError

__all__ = ["Services", "notify_flush", "require_token", "services"]


@attrs.define
class Services:
    """The serving process's open services, on ``app.state.services``: ``memory`` (a
    MemoryService), ``topic`` (a TopicMemoryService), ``supervisor`` (the
    ArtifactProcessingSupervisor of role ``all``; None for role ``api``) and
    ``processing_available`` (False: flush answers 503)."""

    memory: Any
    topic: Any
    supervisor: Any = None
    processing_available: bool = True
    #: why Topic processing is unavailable (the 503's message); None when available
    unavailable_reason: str | None = None


def services(request: Request) -> Services:
    """FastAPI dependency: ``request.app.state.services``."""
    found = getattr(request.app.state, "services", None)
    if not isinstance(found, Services):  # a wiring fault, never the client's
        raise RuntimeError("the HTTP app has no services (create_app wires them)")
    return found


_CHALLENGE = {"WWW-Authenticate": "Bearer"}


#: Declares the bearer scheme in the OpenAPI document (the check itself is below).
_bearer = HTTPBearer(auto_error=False, description="`server.api_token` or "
                     "$POWERCONTEXT_API_TOKEN; none configured: loopback only, no check")


_BEARER = Security(_bearer)


async def require_token(request: Request, _credentials: Any = _BEARER) -> None:
    """FastAPI dependency: 401 (``WWW-Authenticate: Bearer``) unless the request
    carries ``Authorization: Bearer <token>`` equal (constant time) to the configured
    token; nothing to check when the server runs without a token (loopback only)."""
    token = getattr(request.app.state, "api_token", None)
    if not token:
        return
    header = request.headers.get("authorization")
    if header is None:
        raise ApiError(401, "unauthorized", "this API needs 'Authorization: Bearer <token>'",
                       headers=_CHALLENGE)
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ApiError(401, "unauthorized", "the Authorization header must be "
                       "'Bearer <token>'", headers=_CHALLENGE)
    # Starlette decodes header bytes as latin-1: encoding back gives the bytes sent,
    # compared with the token's UTF-8 bytes
    if not hmac.compare_digest(given.strip().encode("latin-1"), token.encode("utf-8")):
        raise ApiError(401, "unauthorized", "the bearer token is not accepted",
                       headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})


def notify_flush(svc: Services, scope_id: str) -> None:
    """Wake the in-process Supervisor after an accepted flush (latency only: the
    persisted flush generation is what counts, so a missing or failing Supervisor loses
    nothing)."""
    supervisor = svc.supervisor
    if supervisor is None:
        return
    try:
        supervisor.notify_flush(scope_id)
    except Exception:  # never fail the flush that already committed
        import logging

        logging.getLogger("powercontext.http").debug(
            "notify_flush failed scope_id=%s", scope_id, extra={"scope_id": scope_id})
