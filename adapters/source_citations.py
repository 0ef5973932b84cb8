"""The Memory backends' read-only view of who cites a Source (the dashboard's Sources
page; :class:`powercontext.ports.SourceCitations`, :class:`powercontext.ports.EntryKinds`):
:class:`SourceCitations`, a collaborator of the Memory backend. The Topic side's views are
:mod:`powercontext.adapters.topic_insight`; this module imports no Topic model.

Engine-neutral: the reads are the Memory rows' (``citing_versions``, ``entry_kinds``;
on a SQL engine :data:`powercontext.sql.templates.INSIGHT_QUERIES` run through the
engine port by :class:`~powercontext.adapters.memory_sql_rows.SQLMemoryRows`) and the
Scope journal's, inside one read transaction of the storage's ``_run(_in_tx, False,
...)``. Driver text may come back as ``bytes``
(OceanBase's VARBINARY Scope keys); every value is decoded here.

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
from powercontext.adapters.storage.rows import text
from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import MemoryEntryVersion
from powercontext.core.topic.scope import SourceScope
from powercontext.ports.engine import MemoryRows

__all__ = ["MAX_LIMIT", "SourceCitations", "check_limit", "citing_versions", "like_needle"]

#: The largest ``limit`` of every listing here and in the Topic views.
MAX_LIMIT = 1000
_PAGE = 256


def check_limit(limit: object) -> int:
    """``limit`` when it is an int in 1..MAX_LIMIT; InvalidInputError otherwise."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError("limit", f"must be an integer in 1..{MAX_LIMIT}, not {limit!r}")
    return limit

def like_needle(source_id: str) -> str:
    """The ``LIKE`` pattern matching every canonical SourceRefs text that names
    ``source_id`` (and, rarely, a few more: the caller confirms)."""
    quoted = json.dumps(source_id)
    safe = "".join("_" if c in "%_\\" else c for c in quoted)
    return f'%"source_id":{safe}%'


class SourceCitations:
    """``source_scope``, ``citing_entry_versions`` and ``entry_kinds`` of a Memory
    backend (:class:`powercontext.ports.SourceCitations`,
    :class:`powercontext.ports.EntryKinds`). ``host``: the storage (``_run``,
    ``_in_tx``, the Scope journal's ``_scope_rows_sync``); ``rows``: the Memory rows
    (``citing_versions``, ``entry_kinds``)."""

    def __init__(self, host: Any, rows: MemoryRows) -> None:
        self._host = host
        self._rows = rows

    async def source_scope(self, source_id: str) -> SourceScope | None:
        """The Scope journal row of ``source_id`` (None: not in a Scope).
        InvalidInputError for a bad id."""
        sid = canonical.check_id(source_id, "source_id")
        host = self._host
        scope: SourceScope | None = await host._run(host._in_tx, False,
                                                   self._source_scope_sync, sid)
        return scope

    def _source_scope_sync(self, source_id: str) -> SourceScope | None:
        for sid, scope, position, lineage_only in self._host._scope_rows_sync([source_id]):
            if sid == source_id:
                return SourceScope(text(scope), int(position), bool(lineage_only))
        return None

    async def citing_entry_versions(self, source_id: str, limit: int = 200
                                    ) -> tuple[MemoryEntryVersion, ...]:
        """Every stored entry version whose SourceRefs name ``source_id`` (current or
        superseded, any Memory), by entry_version_id, at most ``limit`` (1..1000), in
        one snapshot. InvalidInputError for a bad id or limit."""
        sid = canonical.check_id(source_id, "source_id")
        n = check_limit(limit)
        host = self._host
        return tuple(await host._run(host._in_tx, False, self._rows.citing_versions, sid, n))

    async def entry_kinds(self, artifact_id: str) -> dict[str, str]:
        """``{entry_version_id: kind}`` of every stored version of the Memory
        ``artifact_id`` (any Revision), in one snapshot. InvalidInputError for a bad id."""
        aid = canonical.check_id(artifact_id, "artifact_id")
        host = self._host
        kinds: dict[str, str] = await host._run(host._in_tx, False, self._rows.entry_kinds,
                                                aid)
        return kinds


def citing_versions(query: Any, source_id: str, limit: int) -> list[MemoryEntryVersion]:
    """The first ``limit`` stored entry versions, by entry_version_id, whose SourceRefs
    name ``source_id``: keyset pages of the shared query ``insight_citing_versions``
    (``query(name, params)``: an engine's), pre-filtered by :func:`like_needle` and
    confirmed on the parsed SourceRefs."""
    needle, after = like_needle(source_id), ""
    found: list[MemoryEntryVersion] = []
    while len(found) < limit:
        rows = query("insight_citing_versions", [needle, after, _PAGE])
        for row in rows:
            v = entry_version(row)
            if any(s.source_id == source_id for s in v.sources):
                found.append(v)
        if len(rows) < _PAGE:
            break
        after = text(rows[-1][2])
    return found[:limit]
