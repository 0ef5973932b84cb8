"""What Topic processing reports (TOPIC-MEMORY.md, "Size limits": never truncated
silently): a published Window's outcome, the Sources its new Revisions leave out, and
one Scope's processing report. Plain frozen values; their JSON shapes are in
:mod:`powercontext.core.shapes`.
"""

from __future__ import annotations

from typing import Literal

import attrs

from powercontext.core.topic.models import TopicRef
from powercontext.core.topic.processing import ScopeStatus

__all__ = ["LeftOut", "ProcessReport", "WindowOutcome"]


@attrs.frozen
class LeftOut:
    """A Source of a published Window whose text no new Revision holds whole:
    ``how`` is ``uncited`` (no Revision of the Window cites it: a NOOP, a text the
    provider judged already known or not worth keeping, or one that did not fit) or
    ``condensed`` (cited through temporary Topics and reductions, which shorten what
    they read: the oversized path of Topic Memory RFC, "Oversized Work Items and
    temporary Topics"). ``position`` is its Scope-journal position."""

    position: int
    source_id: str
    how: Literal["uncited", "condensed"]


@attrs.frozen
class WindowOutcome:
    """One published Window ``(after, through]``: the Topics it created and updated
    (exact refs), how many outputs were NOOPs, the provider requests it reserved, and
    the Sources whose text no new Revision holds whole (:class:`LeftOut`, in journal
    order)."""

    scope_id: str
    after: int
    through: int
    created: tuple[TopicRef, ...] = ()
    updated: tuple[TopicRef, ...] = ()
    noops: int = 0
    reserved_requests: int = 0
    left_out: tuple[LeftOut, ...] = ()


@attrs.frozen
class ProcessReport:
    """What one Scope's processing did (``TopicProcessor.process``): the published
    Windows in order, the Scope's status afterwards, and ``stopped``: None when the
    Cursor covers the wave target, else the failure code it stopped at (a terminal
    frontier such as ``window_attempt_limit``, or the code of the failed attempt), and
    ``reason``, the failure's message (never Source text, prompts or model output),
    None when covered."""

    scope_id: str
    windows: tuple[WindowOutcome, ...]
    status: ScopeStatus
    stopped: str | None = None
    reason: str | None = None

    @property
    def covered(self) -> bool:
        """Whether the Cursor covers the wave target (``stopped`` is None)."""
        return self.stopped is None
