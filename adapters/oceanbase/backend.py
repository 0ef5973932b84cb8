"""OceanBaseMemoryBackend: the Memory family on OceanBase MySQL mode (4.3.5 BP3+) or
seekdb, over mysqlclient (Memory RFC, "OceanBase adapter", "Concurrency and
transactions"; ARCHITECTURE.md, "Decisions").

The engine-neutral Memory backend (:class:`~powercontext.adapters.database.DatabaseMemoryBackend`)
over OceanBase's storage (:mod:`powercontext.adapters.oceanbase.connection`: the
connection, transactions with bounded retries of lock contention, metadata; the
Sources' rows in :mod:`powercontext.adapters.oceanbase.source_rows`) with OceanBase's
own Memory search projection
(:class:`~powercontext.adapters.oceanbase.memory_projection.OceanBaseMemoryProjection`)
and its schema and startup probes (:mod:`powercontext.adapters.oceanbase.schema`). The
head compare-and-swap counts *matched* rows (``CLIENT.FOUND_ROWS``). This module builds
them and holds nothing else of the Memory family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.memory_sql_rows import SQLMemoryRows
from powercontext.adapters.oceanbase.connection import (
    DDL_TIMEOUT_US,
    LOCK_TIMEOUT_US,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF,
    OceanBaseEngine,
    OceanBaseStorage,
    OceanBaseURL,
    parse_url,
)
from powercontext.adapters.oceanbase.memory_projection import OceanBaseMemoryProjection
from powercontext.adapters.oceanbase.schema import SCHEMA_VERSION, OceanBaseMemorySchema
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities
from powercontext.sql import oceanbase as obsql
from powercontext.sql import templates

__all__ = ["DDL_TIMEOUT_US", "LOCK_TIMEOUT_US", "RETRY_ATTEMPTS", "RETRY_BACKOFF",
           "SCHEMA_VERSION", "OceanBaseMemoryBackend", "OceanBaseURL", "parse_url"]

_DIALECT = "oceanbase"


class OceanBaseMemoryRows(SQLMemoryRows):
    """:class:`SQLMemoryRows` whose ``heads`` reads many heads in one statement (an
    OceanBase fragment, through the engine's own ``rows``)."""

    def __init__(self, engine: OceanBaseEngine) -> None:
        super().__init__(engine)
        self._ob = engine

    def heads(self, artifact_ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(artifact_ids))
        size = templates.IN_BUCKETS[-1]
        out: dict[str, int] = {}
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            out.update((_text(a), int(r)) for a, r in
                       self._ob.rows(obsql.heads_by_id(len(chunk)), chunk))
        return out


class OceanBaseMemoryBackend(DatabaseMemoryBackend, OceanBaseStorage[MemoryCapabilities]):
    """Memory on OceanBase MySQL mode or seekdb (Memory RFC, "OceanBase adapter").

    ``url`` is ``oceanbase://user:password@host:port/database`` (the database is created
    when missing); ``profile`` the deployment's fixed embedding profile, whose dimension
    becomes ``VECTOR(dim)`` in the DDL. Startup probes (server version and mode, what
    the SPACE parser keeps, a real vector create/insert/search/drop, the dimension in
    the DDL) decide :meth:`capabilities`; each capability that is off carries a reason
    in ``MemoryCapabilities.reasons``. Errors: CapabilityNotSupportedError when the
    server is not OceanBase >= 4.3.5 BP3 in MySQL mode, BackendError for an unreachable
    server.
    """

    projection: OceanBaseMemoryProjection

    def __init__(self, url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        self._init_connection(url)
        projection = OceanBaseMemoryProjection(self)
        super().__init__(rows=OceanBaseMemoryRows(self.ob_engine), projection=projection,
                         profile=profile, analyzer=analyzer, log=ManifestLog(self),
                         gaps=VectorGaps(self), revision_encodings=True,
                         schema=OceanBaseMemorySchema(self, projection))

    def __repr__(self) -> str:
        return f"OceanBaseMemoryBackend({self._url!r})"

    def _open_checked_sync(self) -> MemoryCapabilities:
        return self._open_schema_sync()

    # the shared templates, one method each (powercontext.adapters.manifest_log.LogEngine)

    def _template_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._all(templates.render(name, _DIALECT), params)

    def _template_rows_in(self, name: str, values: Sequence[Any],
                          before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._in_chunks(name, list(dict.fromkeys(values)), before)

    def _template_many(self, name: str, rows: Sequence[Sequence[Any]]) -> None:
        self._exec_many(templates.render(name, _DIALECT), rows)
