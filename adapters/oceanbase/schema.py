"""The Memory family's OceanBase schema and startup probes (Memory RFC, "OceanBase
adapter"): the shared tables plus OceanBase's own ``memory_entry_heads`` with FULLTEXT
``WITH PARSER SPACE`` and, with an embedding profile, an HNSW L2 vector index; probes of
what the SPACE parser keeps and a real vector create/insert/search/drop decide what
:meth:`capabilities` reports, each capability that is off with a reason."""

from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any

from powercontext.adapters.oceanbase.driver import CONNECTION_LOST, errno
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import text as _text
from powercontext.core import analyzer as analyzers
from powercontext.core.models import EmbeddingProfile, MemoryCapabilities
from powercontext.sql import oceanbase as obsql
from powercontext.sql import templates

if TYPE_CHECKING:
    from powercontext.adapters.oceanbase.engine import OceanBaseEngine
    from powercontext.adapters.oceanbase.memory_projection import OceanBaseMemoryProjection

__all__ = ["SCHEMA_VERSION", "OceanBaseMemorySchema"]

DIALECT = "oceanbase"
SCHEMA_VERSION = "1"
_VECTOR_COL_RE = re.compile(r"`embedding`\s+VECTOR\((\d+)\)", re.IGNORECASE)
#: Tables the shared templates create (their DDL is skipped when all exist).
_SHARED_TABLES = frozenset({"powercontext_meta", "artifact_revisions", "artifact_heads",
                            "sources", "memory_entry_versions", "memory_keys",
                            *templates.MEMORY_LOG_TABLES})


class OceanBaseMemorySchema:
    """Schema and probes of the Memory family on OceanBase, run once per open on the
    worker thread: ``storage`` is the backend's storage (its metadata and Source
    journal, ``source_journal``), ``engine`` its OceanBase engine (the server check,
    statements, DDL, tables and probe facts), ``projection`` the search projection
    whose table it creates or finds. ``short_tokens``: the FULLTEXT index keeps tokens under 3
    characters."""

    def __init__(self, storage: Any, engine: OceanBaseEngine,
                 projection: OceanBaseMemoryProjection) -> None:
        self._storage = storage
        self._engine = engine
        self._projection = projection
        self._profile: EmbeddingProfile | None = None
        self.short_tokens = True

    def open(self, profile: EmbeddingProfile | None,
             analyzer_version: str) -> MemoryCapabilities:
        """Check the server, create or check the schema, run the probes and report the
        capabilities (driver errors are mapped by the caller). ``profile``: the
        deployment's (None: the stored one, if any); ``analyzer_version``: what a new
        database records."""
        self._profile = profile
        reasons: list[str] = []
        self._engine.connect()  # the version gate runs once per new connection
        self._create_schema(reasons, analyzer_version)
        fts = self._probe_tokenizer(reasons)
        vector = self._probe_vector(reasons)
        return MemoryCapabilities(fts, vector, fts and vector, self._effective_profile(),
                                  tuple(reasons))

    def _create_schema(self, reasons: list[str], analyzer_version: str) -> None:
        st = self._storage
        existing = self._engine.tables()
        if not existing >= _SHARED_TABLES:
            for name in templates.SCHEMA:
                if name == "create_memory_entry_heads":
                    continue  # OceanBase's own, below
                self._engine.run_ddl(templates.render(name, DIALECT))
        if not existing >= set(templates.PROCESSING_TABLES):
            for name in templates.PROCESSING_SCHEMA:
                self._engine.run_ddl(templates.render(name, DIALECT))
        stored_profile = self._stored_profile()
        profile = self._profile or stored_profile
        dimension = profile.dimension if profile is not None else None
        if obsql.HEADS_TABLE not in existing:
            try:
                self._engine.run_ddl(obsql.heads_ddl(dimension, short_tokens=True))
            except Exception as exc:
                if errno(exc) in CONNECTION_LOST:
                    raise
                # An older server without PARSER_PROPERTIES: keep the default parser.
                self._engine.run_ddl(obsql.heads_ddl(dimension, short_tokens=False))
                reasons.append(f"FULLTEXT PARSER_PROPERTIES rejected ({exc}); tokens "
                               "under 3 characters are not indexed on this server")
        ddl = _text(self._engine.rows(f"SHOW CREATE TABLE {obsql.HEADS_TABLE}")[0][1])
        self._engine.probe_facts["heads_ddl"] = ddl
        m = _VECTOR_COL_RE.search(ddl)
        self._projection.vector_column = int(m.group(1)) if m else None
        self.short_tokens = "min_token_size=1" in ddl.replace(" ", "").lower()
        # a database of an earlier release records its analyzer under "analyzer" (the
        # ambiguous "analyzer-v1"): keep that, so the open refuses it until a rebuild
        legacy = st._meta_get_sync("analyzer")
        version = legacy if legacy is not None else analyzer_version
        self._engine.seed_meta((("journal_lock", "0"), ("schema_version", SCHEMA_VERSION),
                              ("analyzer_version", version)))
        # a journal of an earlier release: its uris
        st.source_journal.migrate_scope_uris_in_tx_sync()

    def _stored_profile(self) -> EmbeddingProfile | None:
        raw = self._storage._meta_get_sync("embedding_profile")
        return None if raw is None else shared_rows.embedding_profile(raw)

    def _effective_profile(self) -> EmbeddingProfile | None:
        return self._profile or self._stored_profile()

    def _probe_tokenizer(self, reasons: list[str]) -> bool:
        try:
            raw = self._engine.rows(obsql.tokenize(), (obsql.TOKENIZE_PROBE_TEXT,))[0][0]
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(f"TOKENIZE is unavailable ({exc}); the SPACE parser was not checked")
            return True
        kept = set(json.loads(_text(raw)))
        words = set(obsql.TOKENIZE_PROBE_TEXT.split())
        dropped = words - kept
        self._engine.probe_facts["space_parser_drops"] = sorted(dropped)
        must_keep = set(obsql.TOKENIZE_MUST_KEEP)
        if not must_keep <= kept:
            reasons.append(
                f"the SPACE parser drops {sorted(must_keep - kept)}, which every analyzer "
                "indexes: full-text search is off on this server")
            return False
        leaks = sorted(w for w in dropped
                       if any(a.analyze(w) == [w] for a in analyzers.ANALYZERS.values()))
        if leaks:
            reasons.append(
                f"the SPACE parser drops the words {leaks} that an analyzer keeps; queries "
                "for them find nothing on OceanBase (add them to analyzer.ENGINE_STOPWORDS)")
        if not self.short_tokens:
            reasons.append("the FULLTEXT index drops tokens under 3 characters (no "
                           "PARSER_PROPERTIES=(min_token_size=1)); rebuild memory_entry_heads")
        return True

    def _probe_vector(self, reasons: list[str]) -> bool:
        profile = self._effective_profile()
        if profile is None:
            return False
        if profile.distance != "l2" or profile.normalization != "unit":
            reasons.append(f"embedding profile {profile.profile_id!r} uses {profile.distance}/"
                           f"{profile.normalization}; the HNSW index is L2 over unit vectors")
            return False
        column = self._projection.vector_column
        if column is None:
            reasons.append(
                "memory_entry_heads has no embedding column (the database was created "
                "without an embedding profile); rebuild it with `powercontext memory rebuild`")
            return False
        if column != profile.dimension:
            reasons.append(
                f"memory_entry_heads.embedding is VECTOR({column}) but profile "
                f"{profile.profile_id!r} has {profile.dimension} dimensions; rebuild the "
                "vector projection for the new profile")
            return False
        ddl = self._engine.probe_facts.get("heads_ddl", "").upper().replace(" ", "")
        if "DISTANCE=L2" not in ddl or "TYPE=HNSW" not in ddl:
            reasons.append("the vector index of memory_entry_heads is not an HNSW L2 index")
            return False
        table = f"powercontext_probe_{secrets.token_hex(6)}"
        create, insert, search, drop = obsql.vector_probe_statements(table, profile.dimension)
        near = [0.0] * profile.dimension
        far = [0.0] * profile.dimension
        near[0], far[-1 if profile.dimension > 1 else 0] = 1.0, -1.0
        try:
            self._engine.run(create)
            try:
                self._engine.run(insert, (1, obsql.vector_literal(near), 2,
                                          obsql.vector_literal(far)))
                lit = obsql.vector_literal(near)
                rows = self._engine.rows(search, (lit, lit))
            finally:
                self._engine.run(drop)
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                raise
            reasons.append(
                f"the vector probe failed ({exc}); on OceanBase 4.3.5 raise "
                "ob_vector_memory_limit_percentage (e.g. ALTER SYSTEM SET "
                "ob_vector_memory_limit_percentage = 30)")
            return False
        if not rows or int(rows[0][0]) != 1 or abs(float(rows[0][1])) > 1e-6:
            reasons.append(f"the vector probe returned {rows!r} instead of the nearest row")
            return False
        return True
