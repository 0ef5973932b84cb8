"""The backends behind the Evidence, Topics and Processing pages (issue 17): the
serving process's services and the optional read capabilities
(:class:`powercontext.ports.SourceCitations`,
:class:`powercontext.ports.topic.TopicInsight`) their backends may implement."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends

from powercontext.entrypoints.http.deps import Services, services
from powercontext.entrypoints.http.errors import ApiError
from powercontext.ports import SourceCitations
from powercontext.ports.topic import TopicInsight

__all__ = ["ServicesDep", "citations", "insight", "topic_service"]

ServicesDep = Annotated[Services, Depends(services)]


def topic_service(svc: Services) -> Any:
    """The TopicMemoryService; 503 ``capability_not_supported`` when there is none."""
    if svc.topic is None:
        raise ApiError(503, "capability_not_supported", "this server has no Topic Memory")
    return svc.topic


def citations(svc: Services) -> SourceCitations | None:
    """The Memory backend as a SourceCitations, or None when it is not one."""
    backend = getattr(svc.memory, "backend", None)
    return backend if isinstance(backend, SourceCitations) else None


def insight(svc: Services) -> TopicInsight | None:
    """The Topic backend as a TopicInsight, or None (no Topic Memory, or a backend
    without the capability)."""
    backend = getattr(svc.topic, "backend", None)
    return backend if isinstance(backend, TopicInsight) else None

