"""OceanBaseMemoryBackend: the Memory family on OceanBase MySQL mode (4.3.5 BP3+) or
seekdb, over mysqlclient (Memory RFC, "OceanBase adapter", "Concurrency and
transactions"; ARCHITECTURE.md, "Decisions").

The engine-neutral Memory backend (:class:`~powercontext.adapters.database.DatabaseMemoryBackend`)
over the engine-neutral SQL storage
(:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`: transactions with
bounded retries of lock contention, metadata, the Source primitives) on an
:class:`~powercontext.adapters.oceanbase.engine.OceanBaseEngine` (the connection), with
OceanBase's own Memory search projection
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
from powercontext.adapters.oceanbase.driver import (
    DDL_TIMEOUT_US,
    LOCK_TIMEOUT_US,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF,
    OceanBaseURL,
    parse_url,
)
from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.oceanbase.memory_projection import OceanBaseMemoryProjection
from powercontext.adapters.oceanbase.schema import SCHEMA_VERSION, OceanBaseMemorySchema
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.storage.sources import SourceJournal
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities
from powercontext.sql import oceanbase as obsql
from powercontext.sql import templates

__all__ = ["DDL_TIMEOUT_US", "LOCK_TIMEOUT_US", "RETRY_ATTEMPTS", "RETRY_BACKOFF",
           "SCHEMA_VERSION", "OceanBaseMemoryBackend", "OceanBaseURL", "parse_url"]


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


class OceanBaseMemoryBackend(DatabaseMemoryBackend, SQLStorage[MemoryCapabilities]):
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

    retry_attempts = RETRY_ATTEMPTS
    retry_backoff = RETRY_BACKOFF

    def __init__(self, url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        #: the engine with its OceanBase-only calls (``self.engine`` is the same object,
        #: typed as the port)
        engine = self.ob_engine = OceanBaseEngine(url)
        self._use_engine(engine)
        projection = OceanBaseMemoryProjection(engine)
        super().__init__(rows=OceanBaseMemoryRows(engine), projection=projection,
                         sources=SourceJournal(self),
                         profile=profile, analyzer=analyzer, log=ManifestLog(self),
                         gaps=VectorGaps(self), revision_encodings=True,
                         schema=OceanBaseMemorySchema(self, engine, projection))

    def __repr__(self) -> str:
        return f"OceanBaseMemoryBackend({self.ob_engine.url!r})"

    @property
    def probe_facts(self) -> dict[str, Any]:
        """What the startup probes saw (version, mode, words the SPACE parser drops, the
        heads DDL); empty before the backend opens."""
        return dict(self.ob_engine.probe_facts)

    def _open_sync(self) -> MemoryCapabilities:
        self._connect_sync()
        return self.engine.opening(self._open_schema_sync)
