"""The JSON of Topic Memory values as the CLI's ``--json``, HTTP, MCP and the
dashboard print it: the shapes of the one converter (:mod:`powercontext.core.shapes`,
the Topic values listed in :mod:`powercontext.core.topic.shapes`), behind the names
the surfaces call. A surface may add context keys around a shaped value
(``untrusted``, ``notice``) but never renames or drops one.
"""

from __future__ import annotations

from typing import Any

from powercontext.core.shapes import to_json
from powercontext.core.topic.models import TopicHit, TopicRef, TopicRevision, TopicSearchResult
from powercontext.core.topic.operator import BlockedFrontier, OperatorDecision
from powercontext.core.topic.processing import ScopeStatus
from powercontext.core.topic.report import LeftOut, ProcessReport, WindowOutcome

__all__ = ["left_out_json", "processing_json", "topic_json"]

_TOPIC = (TopicRef, TopicHit, TopicSearchResult, TopicRevision)
_PROCESSING = (ScopeStatus, WindowOutcome, ProcessReport, BlockedFrontier, OperatorDecision)


def topic_json(value: TopicRef | TopicHit | TopicSearchResult | TopicRevision | None
               ) -> Any:
    """The JSON-ready shape of a Topic value; None stays None. TypeError for anything
    else."""
    if value is not None and not isinstance(value, _TOPIC):
        raise TypeError(f"no Topic JSON shape for {type(value).__name__}")
    return to_json(value)


def left_out_json(value: LeftOut) -> dict[str, Any]:
    """``{"position", "source_id", "how"}`` of a :class:`LeftOut`."""
    shaped: dict[str, Any] = to_json(value)
    return shaped


def processing_json(value: Any) -> Any:
    """The JSON-ready shape of a processing value: a ScopeStatus, a WindowOutcome, a
    ProcessReport, a BlockedFrontier or an OperatorDecision. TypeError for anything
    else."""
    if not isinstance(value, _PROCESSING):
        raise TypeError(f"no processing JSON shape for {type(value).__name__}")
    return to_json(value)
