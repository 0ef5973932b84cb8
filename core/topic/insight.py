"""Read-only views a dashboard shows of a database (issue 17; Topic Memory RFC,
"Retry and observability", "Leader, term, and fencing", "Automatic scheduling"; Memory
RFC, "Sources"): who cites a Source, the Scopes with their counts, publications per
day, and the Supervisor's lease and waves.

Pure values only; :class:`powercontext.ports.SourceCitations` and
:class:`powercontext.ports.topic.TopicInsight` return them. Times are database-UTC text
``YYYY-MM-DDTHH:MM:SS.ffffffZ``; a day is ``YYYY-MM-DD`` (UTC)."""

from __future__ import annotations

import attrs

from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.scope import SourceScope

__all__ = ["CitingRevision", "DayCount", "ScopeSummary", "SourceScope", "SupervisionView",
           "TopicListing", "WaveProgress"]


@attrs.frozen
class CitingRevision:
    """A Topic Revision whose lineage names a Source: its Scope, exact ref and
    database-UTC ``published_at``."""

    scope_id: str
    ref: TopicRef
    published_at: str


@attrs.frozen
class ScopeSummary:
    """One Scope: ``source_head`` (its highest journal position, 0: none), ``topics``
    (active Topics), ``revisions`` (published Topic Revisions)."""

    scope_id: str
    source_head: int
    topics: int
    revisions: int


@attrs.frozen
class TopicListing:
    """One Topic in a Scope's list: its ``artifact_id``, ``revisions`` (its head's
    revision number, so its count of Revisions), the head's ``title`` and ``summary``,
    ``sources`` (how many Sources the head cites) and its database-UTC
    ``published_at``."""

    artifact_id: str
    revisions: int
    title: str
    summary: str
    sources: int
    published_at: str

    @classmethod
    def of(cls, head: TopicRevision) -> TopicListing:
        """The listing of a Topic whose head Revision is ``head``."""
        return cls(head.ref.artifact_id, head.ref.revision, head.content.title,
                   head.content.summary, len(head.sources), head.published_at)


@attrs.frozen
class DayCount:
    """How many of something fell on one UTC day (``YYYY-MM-DD``)."""

    day: str
    count: int


@attrs.frozen
class WaveProgress:
    """The frozen targets of one automatic wave: how many, how many completed."""

    wave_id: str
    targets: int
    completed: int


@attrs.frozen
class SupervisionView:
    """The Supervisor substrate as stored: the lease of group ``global`` (None fields
    when no Supervisor ever started; ``lease_expires_at`` None on SQLite, whose term
    lasts until the next start), the binding's ``last_auto_wave_completed_at`` (None:
    no wave completed) and the waves with frozen targets (at most one per term)."""

    holder_id: str | None
    generation: int | None
    lease_expires_at: str | None
    last_auto_wave_completed_at: str | None
    waves: tuple[WaveProgress, ...]
