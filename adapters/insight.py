"""The dashboard's read-only views over a database backend (issue 17): the Memory
backends' :class:`SourceCitationsMixin` (implements
:class:`powercontext.ports.SourceCitations`) and the Topic backends'
:class:`TopicInsightMixin` (implements :class:`powercontext.ports.topic.TopicInsight`).

Engine-neutral: the SQL is :data:`powercontext.sql.templates.INSIGHT_QUERIES` (and the
shared Scope-journal and Supervisor statements), run through the engine's
``_insight_rows(name, params)`` (SQLite: APSW; OceanBase: mysqlclient) inside one read
transaction of the host's ``_run(self._in_tx, False, ...)``. Driver text may come back
as ``bytes`` (OceanBase's VARBINARY Scope keys); every value is decoded here.

Reverse evidence of entry versions: their SourceRefs are canonical JSON text with no
index by Source id, so the read pre-filters with ``LIKE`` on the canonical needle
``"source_id":"<id>"`` (the id's ``%``, ``_`` and ``\\`` are turned into ``_``, one
character of any kind, so the pattern needs no ESCAPE clause in either dialect; SQLite's
case-insensitive LIKE only widens it) and keeps the rows whose parsed SourceRefs name
the id exactly. The scan is keyset-paged by ``entry_version_id``.
"""

from __future__ import annotations

import json
from typing import Any

from powercontext.adapters.memory_rows import entry_version
from powercontext.adapters.storage.rows import text, utc_text
from powercontext.core import canonical
from powercontext.core.errors import ArtifactNotFoundError, InvalidInputError
from powercontext.core.models import MemoryEntryVersion
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.insight import (
    CitingRevision,
    DayCount,
    ScopeSummary,
    SourceScope,
    SupervisionView,
    WaveProgress,
)
from powercontext.core.topic.models import TopicRef, TopicRevision
from powercontext.core.topic.processing import BINDING
from powercontext.core.topic.supervision import SUPERVISOR_GROUP

__all__ = ["MAX_LIMIT", "SourceCitationsMixin", "TopicInsightMixin", "like_needle"]

#: The largest ``limit`` of every listing here.
MAX_LIMIT = 1000
_PAGE = 256


def _limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError("limit", f"must be an integer in 1..{MAX_LIMIT}, not {limit!r}")
    return limit


def like_needle(source_id: str) -> str:
    """The ``LIKE`` pattern matching every canonical SourceRefs text that names
    ``source_id`` (and, rarely, a few more: the caller confirms)."""
    quoted = json.dumps(source_id)
    safe = "".join("_" if c in "%_\\" else c for c in quoted)
    return f'%"source_id":{safe}%'


def _utc(value: Any) -> str | None:
    return None if value is None else utc_text(value)


class _Rows:
    """The one engine primitive this module needs."""

    _run: Any
    _in_tx: Any
    #: ``_insight_rows(name, params) -> list[tuple]``: the engine's storage class
    _insight_rows: Any


class SourceCitationsMixin(_Rows):
    """``source_scope``, ``citing_entry_versions`` and ``entry_kinds`` of a Memory
    backend (:class:`powercontext.ports.SourceCitations`,
    :class:`powercontext.ports.EntryKinds`)."""

    _scope_rows_sync: Any

    async def source_scope(self, source_id: str) -> SourceScope | None:
        """The Scope journal row of ``source_id`` (None: not in a Scope).
        InvalidInputError for a bad id."""
        sid = canonical.check_id(source_id, "source_id")
        return await self._run(self._in_tx, False, self._source_scope_sync, sid)

    def _source_scope_sync(self, source_id: str) -> SourceScope | None:
        for sid, scope, position, lineage_only in self._scope_rows_sync([source_id]):
            if sid == source_id:
                return SourceScope(text(scope), int(position), bool(lineage_only))
        return None

    async def citing_entry_versions(self, source_id: str, limit: int = 200
                                    ) -> tuple[MemoryEntryVersion, ...]:
        """Every stored entry version whose SourceRefs name ``source_id`` (current or
        superseded, any Memory), by entry_version_id, at most ``limit`` (1..1000), in
        one snapshot. InvalidInputError for a bad id or limit."""
        sid = canonical.check_id(source_id, "source_id")
        n = _limit(limit)
        return tuple(await self._run(self._in_tx, False, self._citing_versions_sync, sid, n))

    async def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of the Memory
        ``artifact_id`` (any Revision), in one snapshot. InvalidInputError for a bad id."""
        aid = canonical.check_id(artifact_id, "artifact_id")
        rows = await self._run(self._in_tx, False, self._insight_rows, "insight_entry_kinds",
                               [aid])
        return {text(v): text(k) for v, k in rows}

    def _citing_versions_sync(self, source_id: str, limit: int) -> list[MemoryEntryVersion]:
        needle, after = like_needle(source_id), ""
        found: list[MemoryEntryVersion] = []
        while len(found) < limit:
            rows = self._insight_rows("insight_citing_versions", [needle, after, _PAGE])
            for row in rows:
                v = entry_version(row)
                if any(s.source_id == source_id for s in v.sources):
                    found.append(v)
            if len(rows) < _PAGE:
                break
            after = text(rows[-1][2])
        return found[:limit]


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
        n = _limit(limit)
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
        n = _limit(limit)
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
