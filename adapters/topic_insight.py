"""The Topic backends' read-only views for the dashboard
(:class:`powercontext.ports.topic.TopicInsight`): :class:`TopicInsightViews`, the Topic
Revisions that cite a Source, the Scopes with their counts, a Topic's history,
publications and Sources per day, and the Supervisor's lease and waves.

Engine-neutral like :mod:`powercontext.adapters.source_citations`: the SQL is
:data:`powercontext.sql.templates.INSIGHT_QUERIES` and the shared Scope-journal and
Supervisor statements, run through the engine port (``engine.query``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from powercontext.adapters.source_citations import check_limit
from powercontext.adapters.storage.rows import text, utc_text
from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_reads import TopicReads
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError
from powercontext.core.topic.insight import (
    CitingRevision,
    DayCount,
    ScopeSummary,
    SupervisionView,
    WaveProgress,
)
from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.processing import BINDING
from powercontext.core.topic.scope import check_scope_id
from powercontext.core.topic.supervision import SUPERVISOR_GROUP
from powercontext.ports.engine import SQLEngine

__all__ = ["TopicInsightViews"]

T = TypeVar("T")


def _utc(value: Any) -> str | None:
    return None if value is None else utc_text(value)


class TopicInsightViews:
    """``citing_topic_revisions``, ``scopes``, ``topic_history``,
    ``publications_per_day``, ``sources_per_day`` and ``supervision_view`` of a Topic
    backend: shared queries over ``engine`` in the host's read transactions; a Topic's
    history read with the checks of ``reads``."""

    def __init__(self, host: TopicHost, engine: SQLEngine, reads: TopicReads) -> None:
        self._host = host
        self._engine = engine
        self._reads = reads

    async def _tx(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, False, fn, *args)

    async def citing_topic_revisions(self, source_id: str, limit: int = 200
                                     ) -> tuple[CitingRevision, ...]:
        """Every published Topic Revision whose lineage names ``source_id``, by
        (artifact_id, revision), at most ``limit`` (1..1000). InvalidInputError for a
        bad id or limit."""
        sid = canonical.check_id(source_id, "source_id")
        n = check_limit(limit)
        rows = await self._tx(self._engine.query,
                               "insight_citing_revisions", [sid, n])
        return tuple(CitingRevision(text(scope), TopicRef(text(aid), int(rev)), text(at))
                     for aid, rev, scope, at in rows)

    async def scopes(self) -> tuple[ScopeSummary, ...]:
        """Every known Scope with its Source head, active Topics and published
        Revisions, by scope_id (UTF-8 binary order)."""
        return tuple(await self._tx(self._scopes_sync))

    def _scopes_sync(self) -> list[ScopeSummary]:
        counts: dict[str, list[int]] = {}
        for i, name in enumerate(("insight_scope_sources", "insight_scope_topics",
                                  "insight_scope_revisions")):
            for scope, n in self._engine.query(name, []):
                counts.setdefault(text(scope), [0, 0, 0])[i] = int(n)
        for scope in self._host._processing_scopes_sync(BINDING):
            counts.setdefault(text(scope), [0, 0, 0])
        return [ScopeSummary(s, *counts[s]) for s in sorted(counts, key=lambda s: s.encode())]

    async def topic_history(self, scope_id: str, artifact_id: str, limit: int = 50
                            ) -> tuple[TopicRevision, ...]:
        """The newest ``limit`` (1..1000) Revisions of one Topic of the Scope, newest
        first, each checked as ``get`` checks it. ArtifactNotFoundError for a Topic
        not published in the Scope; InvalidInputError for bad arguments;
        IntegrityError for damage."""
        scope = check_scope_id(scope_id)
        aid = canonical.check_id(artifact_id, "artifact_id")
        n = check_limit(limit)
        return tuple(await self._tx(self._history_sync, scope, aid, n))

    def _history_sync(self, scope_id: str, artifact_id: str, limit: int) -> list[TopicRevision]:
        revisions = [int(r[0]) for r in self._engine.query(
            "insight_topic_publications", [artifact_id, scope_id, limit])]
        if not revisions:
            raise ArtifactNotFoundError(f"no Topic {artifact_id!r} in this Scope")
        return [self._reads.get_sync(scope_id, TopicRef(artifact_id, r)) for r in revisions]

    async def publications_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Topic Revisions published in the Scope per UTC day, ascending (days without
        one left out). InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        rows = await self._tx(self._engine.query,
                               "insight_publication_days", [scope])
        return tuple(DayCount(text(day), int(n)) for day, n in rows)

    async def sources_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Sources journaled in the Scope per UTC day of recording, ascending (days
        without one left out; rows journaled before the recording table existed are
        not counted). InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        rows = await self._tx(self._engine.query,
                               "insight_source_days", [scope])
        return tuple(DayCount(text(day), int(n)) for day, n in rows)

    async def supervision_view(self) -> SupervisionView:
        """The stored lease of group ``global``, the last completed automatic wave and
        the frozen wave targets."""
        return await self._tx(self._supervision_sync)

    def _supervision_sync(self) -> SupervisionView:
        lease = self._engine.query("insight_lease", [SUPERVISOR_GROUP])
        state = self._engine.query("binding_state_get", [BINDING])
        waves = tuple(WaveProgress(text(w), int(n), int(done or 0))
                      for w, n, done in self._engine.query("insight_waves", [BINDING]))
        holder, generation, expires = lease[0] if lease else (None, None, None)
        return SupervisionView(
            None if holder is None else text(holder),
            None if generation is None else int(generation), _utc(expires),
            _utc(state[0][0]) if state else None, waves)
