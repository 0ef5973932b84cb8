"""SQLiteMemoryBackend: the Memory family on APSW + sqlite-vec (Memory RFC, "SQLite
adapter"; ARCHITECTURE.md, "Decisions").

The engine-neutral Memory backend (:class:`~powercontext.adapters.database.DatabaseMemoryBackend`)
over the engine-neutral SQL storage
(:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`: transactions,
metadata, the Source primitives) on a
:class:`~powercontext.adapters.sqlite.engine.SQLiteEngine` (the connection), with
SQLite's own Memory search projection
(:class:`~powercontext.adapters.sqlite.memory_projection.SQLiteMemoryProjection`) and
its schema and startup probes (:mod:`powercontext.adapters.sqlite.schema`). This module
builds them and holds nothing else of the Memory family.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.adapters.manifest_log import ManifestLog
from powercontext.adapters.memory_sql_rows import SQLMemoryRows
from powercontext.adapters.sqlite.engine import (
    BUSY_TIMEOUT_MS,
    CONFLICT_TABLES,
    MIN_SQLITE_VERSION,
    SQLITE_FEATURES,
    SQLiteEngine,
    check_sqlite_version,
    parse_sqlite_url,
    sqlite_version,
)
from powercontext.adapters.sqlite.memory_projection import SQLiteMemoryProjection
from powercontext.adapters.sqlite.schema import SCHEMA_VERSION, SQLiteMemorySchema
from powercontext.adapters.storage.sources import SourceJournal
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.adapters.vector_gaps import VectorGaps
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities

__all__ = ["BUSY_TIMEOUT_MS", "MIN_SQLITE_VERSION", "SCHEMA_VERSION", "SQLITE_FEATURES",
           "SQLiteMemoryBackend", "check_sqlite_version", "parse_sqlite_url",
           "sqlite_version"]


class SQLiteMemoryBackend(DatabaseMemoryBackend, SQLStorage[MemoryCapabilities]):
    """The Memory family on one SQLite file (Memory RFC, "SQLite adapter").

    ``path_or_url``: a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``.
    ``profile``: the deployment's fixed embedding profile; with it the vector tables
    (``memory_entry_vector_metadata`` and the vec0 ``memory_entry_search_vector``) are
    created and vector/hybrid search reported when the vec0 probe passes. Opening
    raises :class:`BackendError` for SQLite older than 3.43.0 (contentless-delete
    FTS5; see SQLITE_FEATURES) or an unknown schema
    version, :class:`ProfileMismatchError` for another profile than the stored one.
    ``busy_timeout_ms``: how long a writer waits for the write lock before
    :class:`BackendError` ("database is locked").
    ``vector_index``: the vector channel's retrieval (Memory RFC, "Search and reads":
    ANN). ``"auto"`` (default): a Memory that has IVF lists
    (:mod:`powercontext.adapters.sqlite.vector_index`: from 4,096 vectors) whose
    calibrated recall@10 is at least 0.97 is searched through its nearest lists, any
    other exactly; ``"ivf"``: through its lists whenever it has them; ``"exact"``:
    vec0's float KNN; ``"ann"``: per Memory, the ``k * 8`` nearest sign-bit vectors by
    Hamming distance (vec0 ``bit[dim]``), rescored by exact L2 on the float vectors (a
    Memory of up to 512 vectors is searched exactly; recall below 0.95 at 100k
    vectors: docs/search.md, "Vector and hybrid search"). A database made before the
    sign-bit table or the IVF index existed searches exactly until ``memory rebuild``
    makes them. ValueError for another value.
    """

    #: the tables whose unique-key violation is a concurrent writer's
    conflict_tables: ClassVar[tuple[str, ...]] = (
        *CONFLICT_TABLES, "memory_entry_versions.", "memory_keys.")

    projection: SQLiteMemoryProjection
    #: the engine with its SQLite-only calls (``self.engine`` is the same object, typed
    #: as the port)
    sqlite_engine: SQLiteEngine

    def __init__(self, path_or_url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                 vector_index: Literal["auto", "ivf", "ann", "exact"] = "auto") -> None:
        if vector_index not in ("auto", "ivf", "ann", "exact"):
            raise ValueError(f"vector_index must be 'auto', 'ivf', 'ann' or 'exact', not "
                             f"{vector_index!r}")
        engine = self.sqlite_engine = SQLiteEngine(
            path_or_url, busy_timeout_ms=busy_timeout_ms, conflict_tables=self.conflict_tables)
        self._use_engine(engine)
        projection = SQLiteMemoryProjection(engine, vector_index)
        super().__init__(rows=SQLMemoryRows(engine), projection=projection,
                         sources=SourceJournal(self),
                         profile=profile, analyzer=analyzer, log=ManifestLog(self),
                         gaps=VectorGaps(self), revision_encodings=True,
                         schema=SQLiteMemorySchema(self, engine, projection))

    @property
    def filename(self) -> str:
        """The database file APSW opens (``:memory:`` for an in-memory database)."""
        return self.sqlite_engine.filename

    @property
    def _ann(self) -> bool:
        """Searches take the ANN path (see :attr:`SQLiteMemoryProjection.ann`)."""
        return self.projection.ann

    @property
    def _bits(self) -> bool:
        """The ANN first pass (the sign-bit vec0 table) exists."""
        return self.projection.bits

    def _open_sync(self) -> MemoryCapabilities:
        self._connect_sync()
        return self.engine.opening(self._open_schema_sync)

    def _rolled_back_sync(self) -> None:
        # a rolled-back migration may have dropped or created the vector tables
        self.projection.refresh()
