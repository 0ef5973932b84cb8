"""The Topic backends' read-only views for the dashboard
(:class:`powercontext.ports.topic.TopicInsight`): :class:`TopicInsightMixin`, the Topic
Revisions that cite a Source, the Scopes with their counts, a Topic's history,
publications and Sources per day, and the Supervisor's lease and waves.

Engine-neutral like :mod:`powercontext.adapters.source_citations`: the SQL is
:data:`powercontext.sql.templates.INSIGHT_QUERIES` and the shared Scope-journal and
Supervisor statements, run through the engine's ``_insight_rows(name, params)``.
"""

from __future__ import annotations

from typing import Any

from powercontext.adapters.source_citations import check_limit
from powercontext.adapters.storage.rows import text, utc_text
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

__all__ = ["TopicInsightMixin"]


def _utc(value: Any) -> str | None:
    return None if value is None else utc_text(value)


class _Rows:
    """The one engine primitive this module needs."""

    _run: Any
    _in_tx: Any
    #: ``_insight_rows(name, params) -> list[tuple]``: the engine's storage class
    _insight_rows: Any


class TopicInsightMixin(_Rows):
    """``citing_topic_revisions``, ``scopes``, ``topic_history``,
    ``publications_per_day``, ``sources_per_day`` and ``supervision_view`` of a Topic
    backend (the host
    also provides ``_get_sync`` and ``_processing_scopes_sync``)."""

    _get_sync: Any
    _processing_scopes_sync: Any

    async def citing_topic_revisions(self, source_id: str, limit: int = 200
                                     ) -> tuple[CitingRevision, ...]:
        """Every published Topic Revision whose lineage names ``source_id``, by
        (artifact_id, revision), at most ``limit`` (1..1000). InvalidInputError for a
        bad id or limit."""
        sid = canonical.check_id(source_id, "source_id")
        n = check_limit(limit)
        rows = await self._run(self._in_tx, False, self._insight_rows,
                               "insight_citing_revisions", [sid, n])
        return tuple(CitingRevision(text(scope), TopicRef(text(aid), int(rev)), text(at))
                     for aid, rev, scope, at in rows)

    async def scopes(self) -> tuple[ScopeSummary, ...]:
        """Every known Scope with its Source head, active Topics and published
        Revisions, by scope_id (UTF-8 binary order)."""
        return tuple(await self._run(self._in_tx, False, self._scopes_sync))

    def _scopes_sync(self) -> list[ScopeSummary]:
        counts: dict[str, list[int]] = {}
        for i, name in enumerate(("insight_scope_sources", "insight_scope_topics",
                                  "insight_scope_revisions")):
            for scope, n in self._insight_rows(name, []):
                counts.setdefault(text(scope), [0, 0, 0])[i] = int(n)
        for scope in self._processing_scopes_sync(BINDING):
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
        return tuple(await self._run(self._in_tx, False, self._history_sync, scope, aid, n))

    def _history_sync(self, scope_id: str, artifact_id: str, limit: int) -> list[TopicRevision]:
        revisions = [int(r[0]) for r in self._insight_rows(
            "insight_topic_publications", [artifact_id, scope_id, limit])]
        if not revisions:
            raise ArtifactNotFoundError(f"no Topic {artifact_id!r} in this Scope")
        return [self._get_sync(scope_id, TopicRef(artifact_id, r)) for r in revisions]

    async def publications_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Topic Revisions published in the Scope per UTC day, ascending (days without
        one left out). InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        rows = await self._run(self._in_tx, False, self._insight_rows,
                               "insight_publication_days", [scope])
        return tuple(DayCount(text(day), int(n)) for day, n in rows)

    async def sources_per_day(self, scope_id: str) -> tuple[DayCount, ...]:
        """Sources journaled in the Scope per UTC day of recording, ascending (days
        without one left out; rows journaled before the recording table existed are
        not counted). InvalidInputError for a bad Scope id."""
        scope = check_scope_id(scope_id)
        rows = await self._run(self._in_tx, False, self._insight_rows,
                               "insight_source_days", [scope])
        return tuple(DayCount(text(day), int(n)) for day, n in rows)

    async def supervision_view(self) -> SupervisionView:
        """The stored lease of group ``global``, the last completed automatic wave and
        the frozen wave targets."""
        return await self._run(self._in_tx, False, self._supervision_sync)

    def _supervision_sync(self) -> SupervisionView:
        lease = self._insight_rows("insight_lease", [SUPERVISOR_GROUP])
        state = self._insight_rows("binding_state_get", [BINDING])
        waves = tuple(WaveProgress(text(w), int(n), int(done or 0))
                      for w, n, done in self._insight_rows("insight_waves", [BINDING]))
        holder, generation, expires = lease[0] if lease else (None, None, None)
        return SupervisionView(
            None if holder is None else text(holder),
            None if generation is None else int(generation), _utc(expires),
            _utc(state[0][0]) if state else None, waves)
