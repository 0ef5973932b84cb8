"""SQLiteTopicBackend: the Topic Memory family on APSW + sqlite-vec (Topic Memory RFC,
"Storage, Head, and atomic activation"; ARCHITECTURE.md, "Decisions").

The engine-neutral :class:`~powercontext.adapters.topic_database.SQLTopicBackend` on a
:class:`~powercontext.adapters.sqlite.engine.SQLiteEngine` (connection, WAL,
transactions, metadata, Sources); here only what SQLite adds: its engine, its search projection
(:class:`~powercontext.adapters.sqlite.topic_projection.SQLiteTopicProjection`), its
leases (:class:`~powercontext.adapters.sqlite.topic_supervision.SQLiteLeases`), and the
schema and probes at open (the Topic vec0 tables only when the shape is or will be
hybrid: an embedding profile and a passing vec0 probe).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.adapters.sqlite.engine import BUSY_TIMEOUT_MS, CONFLICT_TABLES, SQLiteEngine
from powercontext.adapters.sqlite.schema import SCHEMA_VERSION
from powercontext.adapters.sqlite.topic_projection import KINDS, SQLiteTopicProjection
from powercontext.adapters.sqlite.topic_supervision import SQLiteLeases
from powercontext.adapters.topic_database import SQLTopicBackend
from powercontext.core.analyzer import Analyzer
from powercontext.core.errors import BackendError
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.models import TopicCapabilities
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

__all__ = ["SQLiteTopicBackend"]

_TOPIC_TABLES = (*templates.PROCESSING_TABLES,
                 "pc_artifact_lineage_sources", "pc_artifact_lineage_artifacts",
                 "pc_topic_memory_retrieval_shape", "pc_topic_memory_revision_publications",
                 "pc_topic_memory_active_topics", "pc_topic_memory_active_chunks",
                 frag.TOPIC_FTS_TABLE, frag.CHUNK_FTS_TABLE)


class SQLiteTopicBackend(SQLTopicBackend):
    """The Topic Memory family on one SQLite file (shared with the Memory family).

    ``path_or_url``: a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``.
    ``profile``: the deployment's embedding profile (None: FTS-only); with it and a
    passing vec0 probe the vec0 tables exist and the first publication fixes a hybrid
    shape. ``analyzer``: the version a new database records (see SQLTopicBackend).
    Opening raises BackendError for an old SQLite or an unknown schema version,
    AnalyzerMismatchError, or RetrievalShapeError (see
    :meth:`~powercontext.adapters.topic_deployment.TopicDeployment.check_open`)."""

    projection: SQLiteTopicProjection

    #: the tables whose unique-key violation is a concurrent writer's
    conflict_tables = (*CONFLICT_TABLES, "pc_topic_memory_revision_publications.")

    def __init__(self, path_or_url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        #: the engine with its SQLite-only calls (``self.engine`` is the same object)
        self.sqlite_engine = SQLiteEngine(path_or_url, busy_timeout_ms=busy_timeout_ms,
                                          conflict_tables=self.conflict_tables)
        self._use_engine(self.sqlite_engine)
        self.projection = SQLiteTopicProjection(self.sqlite_engine)
        self._compose(self.projection, SQLiteLeases(self.engine))

    @property
    def filename(self) -> str:
        """The database file APSW opens (``:memory:`` for an in-memory database)."""
        return self.sqlite_engine.filename

    def _open_sync(self) -> TopicCapabilities:
        self._connect_sync()
        return self.engine.opening(self._setup_sync)

    def _sql(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.sqlite_engine.rows(sql, params)

    def _exists(self, table: str) -> bool:
        return self.sqlite_engine.table_exists(table)

    # ------------------------------------------------------------------ schema

    def _setup_sync(self) -> TopicCapabilities:
        reasons: list[str] = []
        vec_loaded = self.sqlite_engine.load_vec(reasons)
        fts_ok = self.sqlite_engine.probe_fts(reasons)
        profile = self._profile
        vectors = vec_loaded and profile is not None
        if profile is not None and profile.distance != "l2":
            vectors = False
            reasons.append(f"vec0 is built for L2; the profile asks for {profile.distance!r}")
        # a read transaction first: a complete schema needs no write lock
        for create in (False, True):
            self._begin_sync(create)
            try:
                done = self._schema_sync(create, vectors)
                self._commit_sync()
            except BaseException:
                self._rollback_sync()
                raise
            if done:
                break
        self.projection.vec_tables = vec_tables = vec_loaded and all(
            self._exists(t) for t in (frag.TOPIC_VECTOR_TABLE, frag.CHUNK_VECTOR_TABLE))
        return self.deployment.infrastructure_caps(fts_ok, vectors and vec_tables, reasons)

    def _schema_sync(self, create: bool, vectors: bool) -> bool:
        """Check (with ``create``: create) the shared and Topic tables; False when
        something is missing and ``create`` is False."""
        if create:
            for name in [*templates.SCHEMA, *templates.PROCESSING_SCHEMA]:
                self._sql(templates.render(name, "sqlite"))
            for name in templates.TOPIC_SCHEMA:
                self._sql(templates.render(name, "sqlite"))
            for kind in KINDS:
                self._sql(frag.statement(f"topic_create_{kind}_fts"))
            if self._meta_get_sync("schema_version") is None:
                self._meta_set_sync("schema_version", SCHEMA_VERSION)
            if self._meta_get_sync("analyzer_version") is None:
                self._meta_set_sync("analyzer_version",
                                   self.deployment.new_database_analyzer().version)
        elif not (self._exists("powercontext_meta")
                  and all(self._exists(t) for t in _TOPIC_TABLES)
                  and self.source_journal.scope_uris_ready_sync()):
            return False
        if create:
            # a journal of an earlier release: its uris
            self.source_journal.migrate_scope_uris_sync()
        schema = self._meta_get_sync("schema_version")
        if schema is None:
            return create  # an unfinished creation: create (again)
        if schema != SCHEMA_VERSION:
            raise BackendError(
                f"database schema version {schema} is not supported (expected {SCHEMA_VERSION})")
        if vectors:
            assert self._profile is not None
            stored = self.topic_rows.shape()
            if stored is not None and stored.kind == "fts" and self.topic_rows.head_count():
                return True  # an FTS-only deployment: the shape check refuses this open
            dim = self._profile.dimension
            for kind, table in zip(KINDS, (frag.TOPIC_VECTOR_TABLE, frag.CHUNK_VECTOR_TABLE),
                                   strict=True):
                found = self._sql(frag.statement("table_sql"), [table])
                if found and f"float[{dim}]" in str(found[0][0]):
                    continue
                if not create:
                    return False
                if found and not self.topic_rows.head_count():
                    # a vector table of an earlier profile and no Topic yet: replace it
                    self._sql(frag.statement(f"topic_drop_{kind}_vector"))
                    found = []
                if not found:
                    self._sql(frag.topic_vector_ddl(kind, dim))
        return True

    def _rolled_back_sync(self) -> None:
        projection = self.projection
        projection.vec_tables = projection.vec_tables and self._exists(
            frag.TOPIC_VECTOR_TABLE)
