"""OceanBaseTopicBackend: the Topic Memory family on OceanBase MySQL mode (4.3.5 BP3+) or
seekdb, over mysqlclient (Topic Memory RFC, "Storage, Head, and atomic activation";
TOPIC-MEMORY.md; ARCHITECTURE.md, "Decisions").

The rules and the order of the I/O are the engine-neutral
:class:`~powercontext.adapters.topic_database.SQLTopicBackend`'s, on the connection,
transactions and Sources of an
:class:`~powercontext.adapters.oceanbase.engine.OceanBaseEngine` (a publication is one
READ COMMITTED transaction, a read one REPEATABLE READ read-only snapshot, a duplicate
key a RevisionConflictError). OceanBase adds its engine, its search projection (the active
tables with their FULLTEXT and HNSW indexes,
:class:`~powercontext.adapters.oceanbase.topic_projection.OceanBaseTopicProjection`),
its leases (:class:`~powercontext.adapters.oceanbase.topic_supervision.OceanBaseLeases`)
and, here, the schema and the probes at open.

One database holds both families: this backend creates the shared base tables
(``templates.SCHEMA`` without the Memory family's own ``memory_entry_heads``, which the
Memory backend creates with its FULLTEXT index), the shared Topic tables
(``templates.TOPIC_SCHEMA`` without the two active tables, which are OceanBase's own)
and never reads a Memory table; the Memory backend never reads a Topic one.
"""

from __future__ import annotations

import json

from powercontext.adapters.oceanbase.driver import (
    CONNECTION_LOST,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF,
    errno,
)
from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.oceanbase.schema import SCHEMA_VERSION
from powercontext.adapters.oceanbase.topic_projection import OceanBaseTopicProjection
from powercontext.adapters.oceanbase.topic_supervision import OceanBaseLeases
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.topic_database import SQLTopicBackend
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import EmbeddingProfile
from powercontext.core.topic.models import (
    TopicCapabilities,
)
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

__all__ = ["OceanBaseTopicBackend"]

_DIALECT = "oceanbase"
#: Shared tables whose DDL comes from the templates (skipped when all exist).
_SHARED_TABLES = frozenset({"powercontext_meta", "artifact_revisions", "artifact_heads",
                            "sources", "memory_entry_versions", "memory_keys"})
_TOPIC_SHARED_TABLES = frozenset({"pc_artifact_lineage_sources",
                                  "pc_artifact_lineage_artifacts",
                                  "pc_topic_memory_retrieval_shape",
                                  "pc_topic_memory_revision_publications"})
#: Template DDL this engine replaces by its own (FULLTEXT / VECTOR inline).
_OWN_DDL = frozenset({"create_memory_entry_heads", "create_topic_active_topics",
                      "create_topic_active_topics_scope_index", "create_topic_active_chunks"})


def _q(name: str, n: int | None = None) -> str:
    return templates.render(name, _DIALECT, n)


class OceanBaseTopicBackend(SQLTopicBackend):
    """Topic Memory on OceanBase MySQL mode or seekdb (Topic Memory RFC, "Storage, Head,
    and atomic activation").

    ``url`` is ``oceanbase://user:password@host:port/database`` (created when missing);
    ``profile`` the deployment's embedding profile (None: FTS-only), whose dimension
    becomes ``VECTOR(dim)`` on the two active tables; ``analyzer`` a version name or an
    Analyzer recorded by a new database. Open checks the server (CapabilityNotSupportedError
    unless OceanBase >= 4.3.5 BP3 in MySQL mode; BackendError when unreachable), creates
    the tables, probes the SPACE parser and the vector index, then runs the family's
    shape checks (RetrievalShapeError, see
    :meth:`~powercontext.adapters.topic_deployment.TopicDeployment.check_open`).
    Search channels ask at most ``projection.vector_k_cap`` (16,384) neighbours per scan.
    """

    projection: OceanBaseTopicProjection

    retry_attempts = RETRY_ATTEMPTS
    retry_backoff = RETRY_BACKOFF

    def __init__(self, url: str, *, profile: EmbeddingProfile | None = None,
                 analyzer: str | Analyzer | None = None) -> None:
        super().__init__(profile=profile, analyzer=analyzer)
        #: the engine with its OceanBase-only calls (``self.engine`` is the same object)
        self.ob_engine = OceanBaseEngine(url)
        self._use_engine(self.ob_engine)
        self.projection = OceanBaseTopicProjection(self.ob_engine)
        self._compose(self.projection, OceanBaseLeases(self.ob_engine))

    def __repr__(self) -> str:
        return f"OceanBaseTopicBackend({self.ob_engine.url!r})"

    def _open_sync(self) -> TopicCapabilities:
        self._connect_sync()
        return self.engine.opening(self._open_checked_sync)

    # ------------------------------------------------------------------ open

    def _open_checked_sync(self) -> TopicCapabilities:
        reasons: list[str] = []
        engine = self.ob_engine
        engine.connect()  # the version gate runs once per new connection
        existing = engine.tables()
        if not existing >= _SHARED_TABLES:
            for name in templates.SCHEMA:
                if name not in _OWN_DDL:
                    engine.run_ddl(_q(name))
        if not existing >= set(templates.PROCESSING_TABLES):
            for name in templates.PROCESSING_SCHEMA:
                engine.run_ddl(_q(name))
        if not existing >= _TOPIC_SHARED_TABLES:
            for name in templates.TOPIC_SCHEMA:
                if name not in _OWN_DDL:
                    engine.run_ddl(_q(name))
        engine.seed_meta((("journal_lock", "0"), ("schema_version", SCHEMA_VERSION)))
        # a journal of an earlier release: its uris
        self.source_journal.migrate_scope_uris_in_tx_sync()
        wanted = self._wanted_dimension(reasons)
        self.projection.create_tables(existing, wanted)
        if self.projection.vector_column != wanted and not self.topic_rows.head_count():
            # no Topic Head: the active tables are empty and the shape may still change
            self.projection.reshape_tables(wanted)
        fts_ok = self._probe_tokenizer_sync(reasons)
        vectors_ok = self._probe_vectors_sync(wanted, reasons)
        return self.deployment.infrastructure_caps(fts_ok, vectors_ok, reasons)

    def _wanted_dimension(self, reasons: list[str]) -> int | None:
        profile = self._profile
        if profile is None:
            return None
        if profile.distance != "l2" or profile.normalization != "unit":
            reasons.append(f"embedding profile {profile.profile_id!r} uses {profile.distance}/"
                           f"{profile.normalization}; the HNSW index is L2 over unit vectors")
            return None
        return profile.dimension

    def _probe_tokenizer_sync(self, reasons: list[str]) -> bool:
        """The SPACE parser keeps every token kind the analyzers emit."""
        try:
            raw = self.ob_engine.rows(obsql.tokenize(), (obsql.TOKENIZE_PROBE_TEXT,))[0][0]
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(f"TOKENIZE is unavailable ({exc}); the SPACE parser was not checked")
            return True
        kept = set(json.loads(_text(raw)))
        lost = sorted(set(obsql.TOKENIZE_MUST_KEEP) - kept)
        if lost:
            reasons.append(f"the SPACE parser drops {lost}, which every analyzer indexes: "
                           "full-text search is off on this server")
            return False
        return True

    def _probe_vectors_sync(self, wanted: int | None, reasons: list[str]) -> bool:
        """The active tables carry ``VECTOR(wanted)`` with an HNSW L2 index, and a
        Scope-filtered APPROXIMATE scan of each answers."""
        if wanted is None:
            return False
        if self.projection.vector_column != wanted:
            reasons.append(f"the active Topic tables have VECTOR({self.projection.vector_column}), "
                           f"the embedding profile has {wanted} dimensions")
            return False
        zero = obsql.vector_literal([0.0] * wanted)
        try:
            for search in (tsql.topic_vector_search, tsql.chunk_vector_search):
                self.ob_engine.rows(search(True), (zero, "", zero, 1))
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(f"the Topic vector scan failed ({exc}); on OceanBase 4.3.5 raise "
                           "ob_vector_memory_limit_percentage")
            return False
        return True
