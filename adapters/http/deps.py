"""What every route depends on: the opened services and the bearer token check
(shared by :mod:`.topic` and :mod:`.context`; owned by the HTTP app)."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Services", "require_token", "services"]


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


def services(request: Any) -> Services:
    """FastAPI dependency: ``request.app.state.services``."""
    raise NotImplementedError("p4-http")


async def require_token(request: Any) -> None:
    """FastAPI dependency: 401 (``WWW-Authenticate: Bearer``) unless the request
    carries ``Authorization: Bearer <token>`` equal (constant time) to the configured
    token; nothing to check when the server runs without a token (loopback only)."""
    raise NotImplementedError("p4-http")
