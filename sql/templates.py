"""The shared SQL of the Memory family, written once and rendered per dialect
(Memory RFC, "Storage abstraction and physical model"; ARCHITECTURE.md, "SQL").

Every statement is text in sqlglot's neutral dialect, parsed by sqlglot and rendered
for ``"sqlite"`` or ``"oceanbase"`` (see :mod:`powercontext.sql.dialects`) with every
identifier quoted. Values are always bound: ``?`` is a positional parameter, and the
single named placeholder ``:ids`` marks an ``IN`` list that :func:`render_in` expands to
``n`` positional parameters. Importing this module parses nothing.

:func:`render` reads :mod:`powercontext.sql.rendered` first: every statement x dialect x
IN bucket rendered ahead of time by ``python -m powercontext.sql.generate`` (checked
against a fresh rendering in tests/unit/test_sql_rendered.py), so a process never
imports sqlglot for them. Any other ``n`` is rendered by sqlglot on first use and cached.

Tables (logical types; the dialect maps them: ``VARCHAR``/``CHAR``/``LONGTEXT`` ->
SQLite ``TEXT``, ``LONGBLOB`` -> ``BLOB``, ``BIGINT ... AUTO_INCREMENT`` -> SQLite
``INTEGER PRIMARY KEY AUTOINCREMENT``):

* ``powercontext_meta(key, value)`` -- deployment metadata (schema version, analyzer
  version, embedding profile, write pause).
* ``artifact_revisions`` -- insert-only Revisions. ``content`` holds the canonical
  bytes encoded as ``content_encoding`` says (``identity`` or ``zlib``), so the stored
  form can evolve without a schema change; ``lineage`` is canonical JSON text.
* ``artifact_heads`` -- the compare-and-swap pointer, foreign key to its Revision.
* ``sources`` -- the Source journal: ``journal_position`` is the autoincrement key.
* ``memory_entry_versions`` -- the spec's columns, keys and foreign keys verbatim.
* ``memory_entry_heads`` -- the active-head projection keyed by ``projection_id``.
* ``memory_entry_vector_metadata`` -- created only with an embedding profile.
* ``memory_keys(key, artifact_id)`` -- business keys (``repo:/abs/path``) of Memories,
  inserted in the transaction that creates the Memory they name; never updated.

Source processing (:data:`PROCESSING_SCHEMA`, every backend of both families): the
per-Scope Source journal, Pending, Cursors and the durable work budgets.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = [
    "INSIGHT_QUERIES",
    "IN_BUCKETS",
    "MEMORY_LOG_TABLES",
    "PROCESSING_QUERIES",
    "PROCESSING_SCHEMA",
    "PROCESSING_TABLES",
    "PROCESSING_TEMPLATES",
    "QUERIES",
    "SCHEMA",
    "SUPERVISION_QUERIES",
    "TOPIC_QUERIES",
    "TOPIC_SCHEMA",
    "TOPIC_TEMPLATES",
    "VECTOR_SCHEMA",
    "bucket",
    "render",
    "render_in",
]

#: Sizes an ``IN`` list is padded to (with NULL, which matches nothing), so each
#: statement has a handful of rendered forms; longer lists are split into chunks.
IN_BUCKETS = (1, 4, 16, 64, 256)

_ID = "VARCHAR(128)"
_HASH = "CHAR(64)"
_KEY = "VARCHAR(1024)"  # core.keys.MAX_KEY_CHARS

#: Base DDL, in creation order. Each statement is idempotent (IF NOT EXISTS).
SCHEMA: dict[str, str] = {
    "create_meta": f"""
        CREATE TABLE IF NOT EXISTS powercontext_meta (
            key {_ID} NOT NULL,
            value LONGTEXT,
            PRIMARY KEY (key)
        )""",
    "create_artifact_revisions": f"""
        CREATE TABLE IF NOT EXISTS artifact_revisions (
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            family VARCHAR(64) NOT NULL,
            content_encoding VARCHAR(16) NOT NULL,
            content LONGBLOB NOT NULL,
            content_hash {_HASH} NOT NULL,
            lineage LONGTEXT NOT NULL,
            PRIMARY KEY (artifact_id, revision)
        )""",
    "create_artifact_heads": f"""
        CREATE TABLE IF NOT EXISTS artifact_heads (
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            PRIMARY KEY (artifact_id),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_sources": f"""
        CREATE TABLE IF NOT EXISTS sources (
            journal_position BIGINT NOT NULL AUTO_INCREMENT,
            source_id {_ID} NOT NULL,
            kind VARCHAR(64) NOT NULL,
            content LONGTEXT NOT NULL,
            content_hash {_HASH} NOT NULL,
            uri LONGTEXT,
            metadata LONGTEXT NOT NULL,
            PRIMARY KEY (journal_position),
            UNIQUE (source_id)
        )""",
    "create_memory_entry_versions": f"""
        CREATE TABLE IF NOT EXISTS memory_entry_versions (
            memory_artifact_id {_ID} NOT NULL,
            entry_id {_ID} NOT NULL,
            entry_version_id {_ID} NOT NULL,
            version BIGINT NOT NULL,
            previous_version_id {_ID},
            kind VARCHAR(64) NOT NULL,
            text LONGTEXT NOT NULL,
            source_refs LONGTEXT NOT NULL,
            artifact_refs LONGTEXT NOT NULL,
            entry_content_hash {_HASH} NOT NULL,
            created_in_revision BIGINT NOT NULL,
            PRIMARY KEY (entry_version_id),
            UNIQUE (memory_artifact_id, entry_id, version),
            UNIQUE (memory_artifact_id, entry_id, entry_version_id),
            FOREIGN KEY (previous_version_id)
                REFERENCES memory_entry_versions (entry_version_id),
            FOREIGN KEY (memory_artifact_id, created_in_revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_memory_entry_versions_hash_index": """
        CREATE INDEX IF NOT EXISTS idx_memory_entry_versions_hash
            ON memory_entry_versions (memory_artifact_id, entry_content_hash)""",
    "create_memory_entry_versions_entry_index": """
        CREATE INDEX IF NOT EXISTS idx_memory_entry_versions_entry
            ON memory_entry_versions (entry_id)""",
    "create_memory_entry_heads": f"""
        CREATE TABLE IF NOT EXISTS memory_entry_heads (
            projection_id BIGINT NOT NULL AUTO_INCREMENT,
            memory_artifact_id {_ID} NOT NULL,
            head_revision BIGINT NOT NULL,
            entry_id {_ID} NOT NULL,
            entry_version_id {_ID} NOT NULL,
            entry_content_hash {_HASH} NOT NULL,
            searchable_text LONGTEXT NOT NULL,
            PRIMARY KEY (projection_id),
            UNIQUE (memory_artifact_id, entry_id),
            FOREIGN KEY (memory_artifact_id, entry_id, entry_version_id)
                REFERENCES memory_entry_versions (memory_artifact_id, entry_id, entry_version_id)
        )""",
    # The manifest log (docs/storage.md, "How a Revision is stored"): every manifest
    # item a Revision sets, at that Revision (insert-only, authoritative: the manifest of
    # Revision r is, per entry, its row with the greatest revision <= r, from the
    # Memory's first baseline on; a baseline holds every item of its Revision).
    "create_memory_manifest_items": f"""
        CREATE TABLE IF NOT EXISTS memory_manifest_items (
            memory_artifact_id {_ID} NOT NULL,
            entry_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            entry_version_id {_ID} NOT NULL,
            entry_content_hash {_HASH} NOT NULL,
            state VARCHAR(16) NOT NULL,
            PRIMARY KEY (memory_artifact_id, entry_id, revision),
            FOREIGN KEY (memory_artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_memory_manifest_items_revision_index": """
        CREATE INDEX IF NOT EXISTS idx_memory_manifest_items_revision
            ON memory_manifest_items (memory_artifact_id, revision)""",
    "create_memory_manifest_baselines": f"""
        CREATE TABLE IF NOT EXISTS memory_manifest_baselines (
            memory_artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            PRIMARY KEY (memory_artifact_id, revision),
            FOREIGN KEY (memory_artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    # The head's manifest items as packs of canonical bytes (docs/storage.md, "How a
    # Revision is stored"): derived from the log, kept by every commit, never
    # authoritative; the Revision the packs hold is the pack head's.
    "create_memory_manifest_packs": f"""
        CREATE TABLE IF NOT EXISTS memory_manifest_packs (
            memory_artifact_id {_ID} NOT NULL,
            first_entry_id {_ID} NOT NULL,
            item_count BIGINT NOT NULL,
            items LONGBLOB NOT NULL,
            PRIMARY KEY (memory_artifact_id, first_entry_id)
        )""",
    "create_memory_manifest_pack_heads": f"""
        CREATE TABLE IF NOT EXISTS memory_manifest_pack_heads (
            memory_artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            PRIMARY KEY (memory_artifact_id)
        )""",
    # Per Memory, how many head rows have no valid vector, as of a head Revision and a
    # projection generation (written by every commit; a row of another head or
    # generation is not read).
    "create_memory_vector_gaps": f"""
        CREATE TABLE IF NOT EXISTS memory_vector_gaps (
            memory_artifact_id {_ID} NOT NULL,
            head_revision BIGINT NOT NULL,
            projection_generation VARCHAR(64) NOT NULL,
            missing BIGINT NOT NULL,
            PRIMARY KEY (memory_artifact_id)
        )""",
    "create_memory_keys": f"""
        CREATE TABLE IF NOT EXISTS memory_keys (
            key {_KEY} NOT NULL,
            artifact_id {_ID} NOT NULL,
            PRIMARY KEY (key),
            FOREIGN KEY (artifact_id) REFERENCES artifact_heads (artifact_id)
        )""",
}

#: The tables of :data:`SCHEMA` an earlier release did not create: a backend opening its
#: database creates them (every statement of :data:`SCHEMA` is IF NOT EXISTS).
MEMORY_LOG_TABLES = ("memory_manifest_items", "memory_manifest_baselines",
                     "memory_vector_gaps", "memory_manifest_packs",
                     "memory_manifest_pack_heads")

#: DDL created only when the deployment has an embedding profile.
VECTOR_SCHEMA: dict[str, str] = {
    "create_memory_entry_vector_metadata": f"""
        CREATE TABLE IF NOT EXISTS memory_entry_vector_metadata (
            projection_id BIGINT NOT NULL,
            entry_version_id {_ID} NOT NULL,
            entry_content_hash {_HASH} NOT NULL,
            embedding_content_hash {_HASH} NOT NULL,
            PRIMARY KEY (projection_id),
            UNIQUE (entry_version_id),
            FOREIGN KEY (projection_id)
                REFERENCES memory_entry_heads (projection_id) ON DELETE CASCADE
        )""",
}

_REVISION_COLS = "artifact_id, revision, family, content_encoding, content, content_hash, lineage"
_VERSION_COLS = ("memory_artifact_id, entry_id, entry_version_id, version, previous_version_id, "
                 "kind, text, source_refs, artifact_refs, entry_content_hash, created_in_revision")
_SOURCE_COLS = "source_id, kind, content, content_hash, uri, metadata"
_ITEM_COLS = ("memory_artifact_id, entry_id, revision, entry_version_id, entry_content_hash, "
              "state")
_ITEM_READ = "entry_id, revision, entry_version_id, entry_content_hash, state"
_HEAD_COLS = ("memory_artifact_id, head_revision, entry_id, entry_version_id, "
              "entry_content_hash, searchable_text")

#: Plain statements shared by both dialects (``:ids`` = an IN list, see render_in).
QUERIES: dict[str, str] = {
    "meta_get": "SELECT value FROM powercontext_meta WHERE key = ?",
    "meta_delete": "DELETE FROM powercontext_meta WHERE key = ?",
    "meta_insert": "INSERT INTO powercontext_meta (key, value) VALUES (?, ?)",
    "head_get": "SELECT revision FROM artifact_heads WHERE artifact_id = ?",
    "head_insert": "INSERT INTO artifact_heads (artifact_id, revision) VALUES (?, ?)",
    "head_cas": ("UPDATE artifact_heads SET revision = ? "
                 "WHERE artifact_id = ? AND revision = ?"),
    "revision_insert": f"INSERT INTO artifact_revisions ({_REVISION_COLS}) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
    # Only ``memory rebuild --rehash`` writes here: it moves a verified Revision's stored
    # hash from the legacy formula to the spec's (compare-and-set on the old value).
    "revision_hash_update": ("UPDATE artifact_revisions SET content_hash = ? "
                             "WHERE artifact_id = ? AND revision = ? AND content_hash = ?"),
    "revision_range": f"SELECT {_REVISION_COLS} FROM artifact_revisions "
                      "WHERE artifact_id = ? AND revision > ? AND revision <= ? "
                      "ORDER BY revision",
    "versions_by_id": f"SELECT {_VERSION_COLS} FROM memory_entry_versions "
                      "WHERE entry_version_id IN (:ids)",
    "version_insert": f"INSERT INTO memory_entry_versions ({_VERSION_COLS}) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "entry_ids_elsewhere": ("SELECT DISTINCT entry_id FROM memory_entry_versions "
                            "WHERE memory_artifact_id <> ? AND entry_id IN (:ids)"),
    "head_projection_ids": ("SELECT projection_id FROM memory_entry_heads "
                            "WHERE memory_artifact_id = ? AND entry_id IN (:ids)"),
    "head_rows_delete": "DELETE FROM memory_entry_heads WHERE projection_id IN (:ids)",
    "head_row_insert": f"INSERT INTO memory_entry_heads ({_HEAD_COLS}) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
    "heads_by_projection_id": ("SELECT projection_id, memory_artifact_id, entry_id, "
                               "entry_version_id, entry_content_hash, searchable_text "
                               "FROM memory_entry_heads WHERE projection_id IN (:ids)"),
    "vector_metadata_delete": ("DELETE FROM memory_entry_vector_metadata "
                               "WHERE projection_id IN (:ids)"),
    "vector_metadata_insert": ("INSERT INTO memory_entry_vector_metadata (projection_id, "
                               "entry_version_id, entry_content_hash, embedding_content_hash) "
                               "VALUES (?, ?, ?, ?)"),
    "all_heads": ("SELECT h.artifact_id, h.revision FROM artifact_heads AS h "
                  "JOIN artifact_revisions AS r ON r.artifact_id = h.artifact_id "
                  "AND r.revision = h.revision WHERE r.family = ? ORDER BY h.artifact_id"),
    "memory_projection_ids": ("SELECT projection_id FROM memory_entry_heads "
                              "WHERE memory_artifact_id = ?"),
    "memory_head_count": ("SELECT COUNT(*) FROM memory_entry_heads "
                          "WHERE memory_artifact_id = ?"),
    "drop_memory_entry_vector_metadata": "DROP TABLE IF EXISTS memory_entry_vector_metadata",
    # the manifest log
    "manifest_item_insert": f"INSERT INTO memory_manifest_items ({_ITEM_COLS}) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
    "manifest_items_range": (f"SELECT {_ITEM_READ} FROM memory_manifest_items "
                             "WHERE memory_artifact_id = ? AND revision >= ? AND revision <= ? "
                             "ORDER BY entry_id, revision"),
    "manifest_items_changed": (f"SELECT {_ITEM_READ} FROM memory_manifest_items "
                               "WHERE memory_artifact_id = ? AND revision > ? "
                               "AND revision <= ? ORDER BY revision, entry_id"),
    "manifest_items_of": (f"SELECT {_ITEM_READ} FROM memory_manifest_items "
                          "WHERE memory_artifact_id = ? AND revision <= ? "
                          "AND entry_id IN (:ids)"),
    "manifest_baseline_insert": ("INSERT INTO memory_manifest_baselines "
                                 "(memory_artifact_id, revision) VALUES (?, ?)"),
    "manifest_baselines_upto": ("SELECT MAX(revision) FROM memory_manifest_baselines "
                                "WHERE memory_artifact_id = ? AND revision <= ?"),
    "manifest_baselines_first": ("SELECT memory_artifact_id, MIN(revision) "
                                 "FROM memory_manifest_baselines "
                                 "WHERE memory_artifact_id IN (:ids) "
                                 "GROUP BY memory_artifact_id"),
    # the manifest packs
    "manifest_pack_head_get": ("SELECT revision FROM memory_manifest_pack_heads "
                               "WHERE memory_artifact_id = ?"),
    "manifest_pack_head_delete": ("DELETE FROM memory_manifest_pack_heads "
                                  "WHERE memory_artifact_id = ?"),
    "manifest_pack_head_insert": ("INSERT INTO memory_manifest_pack_heads "
                                  "(memory_artifact_id, revision) VALUES (?, ?)"),
    "manifest_packs_get": ("SELECT first_entry_id, item_count, items FROM memory_manifest_packs "
                           "WHERE memory_artifact_id = ?"),
    "manifest_pack_firsts": ("SELECT first_entry_id FROM memory_manifest_packs "
                             "WHERE memory_artifact_id = ?"),
    "manifest_pack_insert": ("INSERT INTO memory_manifest_packs (memory_artifact_id, "
                             "first_entry_id, item_count, items) VALUES (?, ?, ?, ?)"),
    "manifest_pack_delete": ("DELETE FROM memory_manifest_packs "
                             "WHERE memory_artifact_id = ? AND first_entry_id = ?"),
    "manifest_packs_delete": "DELETE FROM memory_manifest_packs WHERE memory_artifact_id = ?",
    # the vector projection's gaps
    "vector_gaps_get": ("SELECT head_revision, projection_generation, missing "
                        "FROM memory_vector_gaps WHERE memory_artifact_id = ?"),
    "vector_gaps_delete": "DELETE FROM memory_vector_gaps WHERE memory_artifact_id = ?",
    "vector_gaps_insert": ("INSERT INTO memory_vector_gaps (memory_artifact_id, "
                           "head_revision, projection_generation, missing) "
                           "VALUES (?, ?, ?, ?)"),
    "memory_key_get": "SELECT artifact_id FROM memory_keys WHERE key = ?",
    "memory_key_insert": "INSERT INTO memory_keys (key, artifact_id) VALUES (?, ?)",
    "memory_key_delete": "DELETE FROM memory_keys WHERE key = ? AND artifact_id = ?",
    "memory_keys_all": "SELECT key, artifact_id FROM memory_keys ORDER BY key",
    "source_insert": f"INSERT INTO sources ({_SOURCE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
    "sources_by_id": (f"SELECT journal_position, {_SOURCE_COLS} FROM sources "
                      "WHERE source_id IN (:ids)"),
    "journal": (f"SELECT journal_position, {_SOURCE_COLS} FROM sources "
                "WHERE journal_position > ? ORDER BY journal_position LIMIT ?"),
}

_SCOPE = "VARCHAR(256)"  # core.topic.content.MAX_SCOPE_CHARS
_TOPIC_FAMILY_COL = "VARCHAR(64)"
#: A Scope id as a key compared exactly: its UTF-8 bytes (256 code points x 4 bytes).
#: OceanBase's only binary collation, utf8mb4_bin, is PAD SPACE ("x" = "x " and a
#: PRIMARY KEY holds only one of them), but Scope ids are not trimmed ("x " is another
#: Scope), so the processing tables key on VARBINARY there (SQLite: BLOB affinity,
#: holding the TEXT bound, compared bytewise).
_SCOPE_KEY = "VARBINARY(1024)"

#: The Source-processing substrate (Topic Memory RFC, "Source, Window, Cursor, and
#: Pending", "Pending dirty set", "Cumulative work and evidence ceilings";
#: TOPIC-MEMORY.md, "Scopes are new"), created by EVERY backend of both families right
#: after :data:`SCHEMA`, because any scoped Source write raises Pending:
#:
#: * ``pc_source_scope_journal`` -- the per-Scope journal: positions 1, 2, ... per
#:   Scope (allocated as ``MAX(position) + 1`` inside the write transaction), one Scope
#:   per Source (``UNIQUE (source_id)``), the server-owned ``lineage_only`` flag;
#: * ``pc_artifact_processing_pending`` -- the spec's DDL verbatim (the dirty set);
#: * ``pc_source_cursors`` -- per (binding, Scope) the last processed journal position
#:   (no row = Cursor 0);
#: * ``pc_topic_memory_work_budgets`` -- the durable allowance of one
#:   (scope, binding, source_after) key (attempts, reservations, bounded failure code);
#: * ``pc_source_scope_recorded`` -- the database-UTC time each journal row was written
#:   (the dashboard's Sources per day);
#: * ``pc_source_scope_uris`` -- per Scope, the SHA-256 of each journaled Source's uri
#:   and its position (a producer with a natural event uri, such as a hook's turn, asks
#:   whether that event is journaled already before adding it);
#: * ``pc_topic_memory_operator_decisions`` -- the audit rows of operator decisions at a
#:   terminal frontier (skip a Source, grant a fresh allowance): who, why, when, and
#:   the allowance the frontier had consumed.
#:
#: ``scope_id`` is :data:`_SCOPE_KEY` in all four (exact comparison, trailing spaces
#: significant, on both engines).
PROCESSING_SCHEMA: dict[str, str] = {
    "create_source_scope_journal": f"""
        CREATE TABLE IF NOT EXISTS pc_source_scope_journal (
            scope_id {_SCOPE_KEY} NOT NULL,
            position BIGINT NOT NULL,
            source_id {_ID} NOT NULL,
            lineage_only BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (scope_id, position),
            UNIQUE (source_id),
            FOREIGN KEY (source_id) REFERENCES sources (source_id)
        )""",
    "create_processing_pending": f"""
        CREATE TABLE IF NOT EXISTS pc_artifact_processing_pending (
            binding_name {_ID} NOT NULL,
            scope_id {_SCOPE_KEY} NOT NULL,
            source_through BIGINT NOT NULL,
            flush_generation BIGINT NOT NULL DEFAULT 0,
            handled_flush_generation BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (binding_name, scope_id),
            CHECK (source_through >= 1),
            CHECK (flush_generation >= 0),
            CHECK (handled_flush_generation >= 0),
            CHECK (handled_flush_generation <= flush_generation)
        )""",
    "create_source_cursors": f"""
        CREATE TABLE IF NOT EXISTS pc_source_cursors (
            binding_name {_ID} NOT NULL,
            scope_id {_SCOPE_KEY} NOT NULL,
            source_position BIGINT NOT NULL,
            PRIMARY KEY (binding_name, scope_id)
        )""",
    "create_topic_work_budgets": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_work_budgets (
            scope_id {_SCOPE_KEY} NOT NULL,
            binding_name {_ID} NOT NULL,
            source_after BIGINT NOT NULL,
            furthest_through BIGINT NOT NULL,
            attempt_id VARCHAR(36) NOT NULL,
            attempt_count INT NOT NULL,
            reserved_requests BIGINT NOT NULL,
            reserved_tokens BIGINT NOT NULL,
            failure_code VARCHAR(64),
            PRIMARY KEY (scope_id, binding_name, source_after)
        )""",
    # the Supervisor substrate (Topic Memory RFC, "Leader, term, and fencing",
    # "Automatic scheduling"): the lease of the group ``global`` (SQLite keeps
    # ``lease_expires_at`` NULL: the term lasts until the next start), the binding's
    # automatic-wave baseline and the frozen targets of the current term's wave.
    # ``TIMESTAMP(6)`` is ``DATETIME(6)`` on OceanBase (compared with
    # ``UTC_TIMESTAMP(6)``, never converted by a session time zone) and holds the
    # database-UTC text of ``strftime`` on SQLite.
    "create_processing_leases": """
        CREATE TABLE IF NOT EXISTS pc_artifact_processing_leases (
            supervisor_group VARCHAR(64) NOT NULL,
            holder_id VARCHAR(36) NOT NULL,
            supervisor_generation BIGINT NOT NULL,
            lease_expires_at TIMESTAMP(6) NULL,
            PRIMARY KEY (supervisor_group)
        )""",
    "create_processing_binding_states": f"""
        CREATE TABLE IF NOT EXISTS pc_artifact_processing_binding_states (
            binding_name {_ID} NOT NULL,
            last_auto_wave_completed_at TIMESTAMP(6) NULL,
            PRIMARY KEY (binding_name)
        )""",
    "create_processing_auto_wave_targets": f"""
        CREATE TABLE IF NOT EXISTS pc_artifact_processing_auto_wave_targets (
            wave_id VARCHAR(36) NOT NULL,
            binding_name {_ID} NOT NULL,
            scope_id {_SCOPE_KEY} NOT NULL,
            source_through BIGINT NOT NULL,
            completed BOOLEAN NOT NULL DEFAULT FALSE,
            PRIMARY KEY (wave_id, binding_name, scope_id)
        )""",
    # when each journal row was recorded (the database's UTC clock, text
    # ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` like ``published_at``): written in the Source
    # write's transaction, read only by the dashboard's Sources-per-day plot. A row
    # journaled before this table existed has none.
    "create_source_scope_recorded": f"""
        CREATE TABLE IF NOT EXISTS pc_source_scope_recorded (
            scope_id {_SCOPE_KEY} NOT NULL,
            position BIGINT NOT NULL,
            recorded_at VARCHAR(32) NOT NULL,
            PRIMARY KEY (scope_id, position)
        )""",
    "create_source_scope_uris": f"""
        CREATE TABLE IF NOT EXISTS pc_source_scope_uris (
            scope_id {_SCOPE_KEY} NOT NULL,
            uri_hash {_HASH} NOT NULL,
            position BIGINT NOT NULL,
            PRIMARY KEY (scope_id, uri_hash, position)
        )""",
    "create_operator_decisions": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_operator_decisions (
            decision_id VARCHAR(36) NOT NULL,
            scope_id {_SCOPE_KEY} NOT NULL,
            binding_name {_ID} NOT NULL,
            source_after BIGINT NOT NULL,
            action VARCHAR(16) NOT NULL,
            position BIGINT,
            source_id {_ID},
            failure_code VARCHAR(64) NOT NULL,
            attempt_count BIGINT NOT NULL,
            reserved_requests BIGINT NOT NULL,
            reserved_tokens BIGINT NOT NULL,
            decided_by VARCHAR(512) NOT NULL,
            reason LONGTEXT NOT NULL,
            decided_at VARCHAR(32) NOT NULL,
            PRIMARY KEY (decision_id)
        )""",
}

#: The tables :data:`PROCESSING_SCHEMA` creates (a backend creates them when one is
#: missing, e.g. in a database of an earlier release).
PROCESSING_TABLES = ("pc_source_scope_journal", "pc_artifact_processing_pending",
                     "pc_source_cursors", "pc_topic_memory_work_budgets",
                     "pc_artifact_processing_leases", "pc_artifact_processing_binding_states",
                     "pc_artifact_processing_auto_wave_targets", "pc_source_scope_recorded",
                     "pc_source_scope_uris", "pc_topic_memory_operator_decisions")

_BUDGET_COLS = ("scope_id, binding_name, source_after, furthest_through, attempt_id, "
                "attempt_count, reserved_requests, reserved_tokens, failure_code")
_PENDING_COLS = "binding_name, scope_id, source_through, flush_generation, handled_flush_generation"
_DECISION_COLS = ("decision_id, scope_id, binding_name, source_after, action, position, "
                  "source_id, failure_code, attempt_count, reserved_requests, "
                  "reserved_tokens, decided_by, reason, decided_at")

#: The statements of the scoped Source store, Pending raise, flush and status (shared
#: by both dialects; the budget and guard statements are in :data:`TOPIC_QUERIES`).
PROCESSING_QUERIES: dict[str, str] = {
    # the Scope journal
    "scope_journal_head": ("SELECT COALESCE(MAX(position), 0) FROM pc_source_scope_journal "
                           "WHERE scope_id = ?"),
    "scope_journal_insert": ("INSERT INTO pc_source_scope_journal (scope_id, position, "
                             "source_id, lineage_only) VALUES (?, ?, ?, ?)"),
    "scope_recorded_insert": ("INSERT INTO pc_source_scope_recorded (scope_id, position, "
                              "recorded_at) VALUES (?, ?, ?)"),
    "scope_journal_by_source": ("SELECT source_id, scope_id, position, lineage_only "
                                "FROM pc_source_scope_journal WHERE source_id IN (:ids)"),
    "scope_journal_after": ("SELECT j.position, j.lineage_only, s.journal_position, "
                            "s.source_id, s.kind, s.content, s.content_hash, s.uri, "
                            "s.metadata FROM pc_source_scope_journal AS j "
                            "JOIN sources AS s ON s.source_id = j.source_id "
                            "WHERE j.scope_id = ? AND j.position > ? "
                            "ORDER BY j.position LIMIT ?"),
    # Pending (binding, Scope): the raise of a Source write, the flush, the status read
    "pending_get": (f"SELECT {_PENDING_COLS} FROM pc_artifact_processing_pending "
                    "WHERE binding_name = ? AND scope_id = ?"),
    "pending_raise": ("UPDATE pc_artifact_processing_pending SET source_through = "
                      "CASE WHEN source_through < ? THEN ? ELSE source_through END "
                      "WHERE binding_name = ? AND scope_id = ?"),
    "pending_insert": (f"INSERT INTO pc_artifact_processing_pending ({_PENDING_COLS}) "
                       "VALUES (?, ?, ?, ?, ?)"),
    "pending_flush": ("UPDATE pc_artifact_processing_pending SET source_through = "
                      "CASE WHEN source_through < ? THEN ? ELSE source_through END, "
                      "flush_generation = flush_generation + 1 "
                      "WHERE binding_name = ? AND scope_id = ?"),
    # status reads (the budget work writes the Cursor and budget rows)
    "status_cursor_get": ("SELECT source_position FROM pc_source_cursors "
                          "WHERE binding_name = ? AND scope_id = ?"),
    "status_budget_get": (f"SELECT {_BUDGET_COLS} FROM pc_topic_memory_work_budgets "
                          "WHERE scope_id = ? AND binding_name = ? AND source_after = ?"),
    "processing_scopes": ("SELECT scope_id FROM pc_source_scope_journal "
                          "UNION SELECT scope_id FROM pc_artifact_processing_pending "
                          "WHERE binding_name = ? "
                          "UNION SELECT scope_id FROM pc_source_cursors WHERE binding_name = ? "
                          "UNION SELECT scope_id FROM pc_topic_memory_work_budgets "
                          "WHERE binding_name = ?"),
    # the uris of journaled Sources (by SHA-256): the lookup, the insert, the backfill
    "scope_uri_position": ("SELECT position FROM pc_source_scope_uris WHERE scope_id = ? "
                           "AND uri_hash = ? ORDER BY position LIMIT 1"),
    "scope_uri_insert": ("INSERT INTO pc_source_scope_uris (scope_id, uri_hash, position) "
                         "VALUES (?, ?, ?)"),
    "scope_uris_all": "SELECT scope_id, position FROM pc_source_scope_uris",
    "scope_journal_uris": ("SELECT j.scope_id, j.position, s.uri FROM "
                           "pc_source_scope_journal AS j JOIN sources AS s ON "
                           "s.source_id = j.source_id WHERE s.uri IS NOT NULL"),
    # operator decisions at a terminal frontier (the audit rows)
    "operator_decision_insert": (f"INSERT INTO pc_topic_memory_operator_decisions "
                                 f"({_DECISION_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                 "?, ?, ?, ?)"),
    "operator_decisions_get": (f"SELECT {_DECISION_COLS} FROM "
                               "pc_topic_memory_operator_decisions WHERE scope_id = ? "
                               "ORDER BY decided_at DESC, decision_id DESC LIMIT ?"),
}

#: Every processing statement (tests/adapters/test_processing_sql.py pins them).
PROCESSING_TEMPLATES: dict[str, str] = {**PROCESSING_SCHEMA, **PROCESSING_QUERIES}

_LEASE = "pc_artifact_processing_leases"
_TARGETS = "pc_artifact_processing_auto_wave_targets"
_PENDING = "pc_artifact_processing_pending"

#: The Supervisor's statements shared by both dialects (Topic Memory RFC, "Leader,
#: term, and fencing", "Automatic scheduling"; tests/adapters/test_supervision_sql.py
#: pins them). Scope pages are ``scope_id > ?`` in the key's binary order (``''``:
#: from the start; a Scope id is never empty). The OceanBase lease statements that
#: read ``UTC_TIMESTAMP(6)`` are fragments of :mod:`powercontext.sql.oceanbase_supervision`.
SUPERVISION_QUERIES: dict[str, str] = {
    # the lease row (SQLite: acquire = overwrite, generation + 1, expiry NULL)
    "lease_get": (f"SELECT holder_id, supervisor_generation FROM {_LEASE} "
                  "WHERE supervisor_group = ?"),
    "lease_takeover": (f"UPDATE {_LEASE} SET holder_id = ?, supervisor_generation = "
                       "supervisor_generation + 1, lease_expires_at = NULL "
                       "WHERE supervisor_group = ?"),
    "lease_insert": (f"INSERT INTO {_LEASE} (supervisor_group, holder_id, "
                     "supervisor_generation, lease_expires_at) VALUES (?, ?, 1, NULL)"),
    # discovery: bounded pages of Pending (flags: 1 = only unhandled flushes;
    # a wave id = only Scopes outside that wave's targets)
    "pending_page": (f"SELECT p.source_through, p.flush_generation, "
                     f"p.handled_flush_generation, p.scope_id FROM {_PENDING} AS p "
                     "WHERE p.binding_name = ? AND p.scope_id > ? "
                     "AND (? = 0 OR p.flush_generation > p.handled_flush_generation) "
                     f"AND (? IS NULL OR NOT EXISTS (SELECT 1 FROM {_TARGETS} AS t "
                     "WHERE t.wave_id = ? AND t.binding_name = p.binding_name "
                     "AND t.scope_id = p.scope_id)) "
                     "ORDER BY p.scope_id LIMIT ?"),
    # the binding's automatic-wave baseline
    "binding_state_get": ("SELECT last_auto_wave_completed_at "
                          "FROM pc_artifact_processing_binding_states WHERE binding_name = ?"),
    "binding_state_set": ("UPDATE pc_artifact_processing_binding_states "
                          "SET last_auto_wave_completed_at = ? WHERE binding_name = ?"),
    "binding_state_insert": ("INSERT INTO pc_artifact_processing_binding_states "
                             "(binding_name, last_auto_wave_completed_at) VALUES (?, ?)"),
    # the frozen targets of a wave
    "targets_clear": f"DELETE FROM {_TARGETS} WHERE binding_name = ?",
    "targets_freeze": (f"INSERT INTO {_TARGETS} (wave_id, binding_name, scope_id, "
                       "source_through, completed) SELECT ?, binding_name, scope_id, "
                       f"source_through, FALSE FROM {_PENDING} WHERE binding_name = ?"),
    "targets_page": (f"SELECT scope_id, source_through, completed FROM {_TARGETS} "
                     "WHERE wave_id = ? AND binding_name = ? AND completed = FALSE "
                     "AND scope_id > ? ORDER BY scope_id LIMIT ?"),
    "target_get": (f"SELECT source_through, completed FROM {_TARGETS} "
                   "WHERE wave_id = ? AND binding_name = ? AND scope_id = ?"),
    "target_complete": (f"UPDATE {_TARGETS} SET completed = TRUE "
                        "WHERE wave_id = ? AND binding_name = ? AND scope_id = ?"),
    "targets_count": f"SELECT COUNT(*) FROM {_TARGETS} WHERE wave_id = ? AND binding_name = ?",
    "targets_uncovered": (f"SELECT COUNT(*) FROM {_TARGETS} AS t "
                          "LEFT JOIN pc_source_cursors AS c ON c.binding_name = t.binding_name "
                          "AND c.scope_id = t.scope_id WHERE t.wave_id = ? "
                          "AND t.binding_name = ? "
                          "AND COALESCE(c.source_position, 0) < t.source_through"),
    # the wave's Pending cleanup: only rows covered by their Cursor with every flush
    # handled (a row raised by a newer Source, or with a newer flush, stays)
    "wave_pending_delete": (f"DELETE FROM {_PENDING} WHERE binding_name = ? "
                            f"AND scope_id IN (SELECT scope_id FROM {_TARGETS} "
                            "WHERE wave_id = ? AND binding_name = ?) "
                            "AND handled_flush_generation = flush_generation "
                            "AND EXISTS (SELECT 1 FROM pc_source_cursors AS c "
                            f"WHERE c.binding_name = {_PENDING}.binding_name "
                            f"AND c.scope_id = {_PENDING}.scope_id "
                            f"AND c.source_position >= {_PENDING}.source_through)"),
    "targets_delete": f"DELETE FROM {_TARGETS} WHERE wave_id = ? AND binding_name = ?",
}

#: Topic Memory's own tables (Topic Memory RFC, "Storage, Head, and atomic activation";
#: TOPIC-MEMORY.md, "Storage"), created by the Topic backends only, after :data:`SCHEMA`.
#: Revisions and Heads are ``artifact_revisions`` / ``artifact_heads`` with family
#: ``topic-memory``. The active tables hold one row per Topic (its active Revision) and
#: one per chunk of it; their integer keys are the rowids of the engine's full-text and
#: vector projections (SQLite FTS5 / vec0; OceanBase adds its FULLTEXT and VECTOR
#: columns and indexes to these tables with its own fragments).
TOPIC_SCHEMA: dict[str, str] = {
    "create_topic_lineage_sources": f"""
        CREATE TABLE IF NOT EXISTS pc_artifact_lineage_sources (
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            source_id {_ID} NOT NULL,
            source_content_hash {_HASH} NOT NULL,
            PRIMARY KEY (artifact_id, revision, source_id),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision),
            FOREIGN KEY (source_id) REFERENCES sources (source_id)
        )""",
    "create_topic_lineage_artifacts": f"""
        CREATE TABLE IF NOT EXISTS pc_artifact_lineage_artifacts (
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            based_on_family {_TOPIC_FAMILY_COL} NOT NULL,
            based_on_artifact_id {_ID} NOT NULL,
            based_on_revision BIGINT NOT NULL,
            PRIMARY KEY (artifact_id, revision, based_on_artifact_id, based_on_revision),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision),
            FOREIGN KEY (based_on_artifact_id, based_on_revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_topic_retrieval_shape": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_retrieval_shape (
            shape_key VARCHAR(16) NOT NULL,
            kind VARCHAR(16) NOT NULL,
            chunk_policy VARCHAR(64) NOT NULL,
            analyzer_version VARCHAR(64) NOT NULL,
            embedding_profile LONGTEXT,
            profile_fingerprint {_HASH},
            PRIMARY KEY (shape_key)
        )""",
    "create_topic_publications": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_revision_publications (
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            scope_id {_SCOPE} NOT NULL,
            published_at VARCHAR(32) NOT NULL,
            PRIMARY KEY (artifact_id, revision),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_topic_active_topics": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_active_topics (
            topic_rowid BIGINT NOT NULL AUTO_INCREMENT,
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            scope_id {_SCOPE} NOT NULL,
            title LONGTEXT NOT NULL,
            summary LONGTEXT NOT NULL,
            fts_text LONGTEXT NOT NULL,
            source_count BIGINT NOT NULL,
            embedding_fingerprint {_HASH},
            PRIMARY KEY (topic_rowid),
            UNIQUE (artifact_id),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
    "create_topic_active_topics_scope_index": """
        CREATE INDEX IF NOT EXISTS idx_pc_topic_memory_active_topics_scope
            ON pc_topic_memory_active_topics (scope_id, artifact_id)""",
    "create_topic_active_chunks": f"""
        CREATE TABLE IF NOT EXISTS pc_topic_memory_active_chunks (
            chunk_rowid BIGINT NOT NULL AUTO_INCREMENT,
            artifact_id {_ID} NOT NULL,
            revision BIGINT NOT NULL,
            ordinal BIGINT NOT NULL,
            scope_id {_SCOPE} NOT NULL,
            start_offset BIGINT NOT NULL,
            end_offset BIGINT NOT NULL,
            snippet_text LONGTEXT NOT NULL,
            fts_text LONGTEXT NOT NULL,
            embedding_fingerprint {_HASH},
            PRIMARY KEY (chunk_rowid),
            UNIQUE (artifact_id, ordinal),
            FOREIGN KEY (artifact_id)
                REFERENCES pc_topic_memory_active_topics (artifact_id),
            FOREIGN KEY (artifact_id, revision)
                REFERENCES artifact_revisions (artifact_id, revision)
        )""",
}

_TOPIC_CARD = "artifact_id, revision, title, summary"
_PUBLISHED = ("JOIN pc_topic_memory_revision_publications AS p "
              "ON p.artifact_id = h.artifact_id AND p.revision = h.revision")

_BUDGET_KEY = "scope_id = ? AND binding_name = ? AND source_after = ?"

#: Topic Memory's statements shared by both dialects (``?`` bound; ``:ids`` an IN list).
TOPIC_QUERIES: dict[str, str] = {
    # the retrieval shape: one row under shape_key 'deployment'
    "topic_shape_get": ("SELECT kind, chunk_policy, analyzer_version, embedding_profile, "
                        "profile_fingerprint FROM pc_topic_memory_retrieval_shape "
                        "WHERE shape_key = ?"),
    "topic_shape_delete": "DELETE FROM pc_topic_memory_retrieval_shape WHERE shape_key = ?",
    "topic_shape_insert": ("INSERT INTO pc_topic_memory_retrieval_shape (shape_key, kind, "
                           "chunk_policy, analyzer_version, embedding_profile, "
                           "profile_fingerprint) VALUES (?, ?, ?, ?, ?, ?)"),
    # Heads: an artifact_heads row whose Revision has family topic-memory
    "topic_head_count": ("SELECT COUNT(*) FROM artifact_heads AS h "
                         "JOIN artifact_revisions AS r ON r.artifact_id = h.artifact_id "
                         "AND r.revision = h.revision WHERE r.family = ?"),
    "topic_head_get": ("SELECT h.revision, r.family FROM artifact_heads AS h "
                       "JOIN artifact_revisions AS r ON r.artifact_id = h.artifact_id "
                       "AND r.revision = h.revision WHERE h.artifact_id = ?"),
    "topic_heads_by_scope": (f"SELECT h.artifact_id, h.revision FROM artifact_heads AS h "
                             f"{_PUBLISHED} WHERE p.scope_id = ? ORDER BY h.artifact_id"),
    "topic_revision_get": (f"SELECT {_REVISION_COLS} FROM artifact_revisions "
                           "WHERE artifact_id = ? AND revision = ? AND family = ?"),
    # lineage (the spec's two tables) and publications
    "topic_lineage_source_insert": ("INSERT INTO pc_artifact_lineage_sources (artifact_id, "
                                    "revision, source_id, source_content_hash) "
                                    "VALUES (?, ?, ?, ?)"),
    "topic_lineage_artifact_insert": ("INSERT INTO pc_artifact_lineage_artifacts "
                                      "(artifact_id, revision, based_on_family, "
                                      "based_on_artifact_id, based_on_revision) "
                                      "VALUES (?, ?, ?, ?, ?)"),
    "topic_lineage_sources_get": ("SELECT source_id, source_content_hash "
                                  "FROM pc_artifact_lineage_sources "
                                  "WHERE artifact_id = ? AND revision = ? ORDER BY source_id"),
    "topic_lineage_artifacts_get": ("SELECT based_on_family, based_on_artifact_id, "
                                    "based_on_revision FROM pc_artifact_lineage_artifacts "
                                    "WHERE artifact_id = ? AND revision = ? "
                                    "ORDER BY based_on_artifact_id, based_on_revision"),
    "topic_source_hashes": "SELECT source_id, content_hash FROM sources WHERE source_id IN (:ids)",
    "topic_publication_insert": ("INSERT INTO pc_topic_memory_revision_publications "
                                 "(artifact_id, revision, scope_id, published_at) "
                                 "VALUES (?, ?, ?, ?)"),
    "topic_publication_get": ("SELECT scope_id, published_at "
                              "FROM pc_topic_memory_revision_publications "
                              "WHERE artifact_id = ? AND revision = ?"),
    "topic_scope_get": ("SELECT scope_id FROM pc_topic_memory_revision_publications "
                        "WHERE artifact_id = ? ORDER BY revision LIMIT 1"),
    # the active projections
    "topic_active_insert": ("INSERT INTO pc_topic_memory_active_topics (artifact_id, revision, "
                            "scope_id, title, summary, fts_text, source_count, "
                            "embedding_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
    "topic_active_rowid": ("SELECT topic_rowid FROM pc_topic_memory_active_topics "
                           "WHERE artifact_id = ?"),
    "topic_active_delete": "DELETE FROM pc_topic_memory_active_topics WHERE artifact_id = ?",
    "topic_chunk_insert": ("INSERT INTO pc_topic_memory_active_chunks (artifact_id, revision, "
                           "ordinal, scope_id, start_offset, end_offset, snippet_text, "
                           "fts_text, embedding_fingerprint) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    "topic_chunk_rowids": ("SELECT chunk_rowid FROM pc_topic_memory_active_chunks "
                           "WHERE artifact_id = ? ORDER BY ordinal"),
    "topic_chunks_delete": "DELETE FROM pc_topic_memory_active_chunks WHERE artifact_id = ?",
    "topic_cards": (f"SELECT {_TOPIC_CARD} FROM pc_topic_memory_active_topics "
                    "WHERE scope_id = ? AND artifact_id IN (:ids)"),
    "topic_chunk_text": ("SELECT snippet_text FROM pc_topic_memory_active_chunks "
                         "WHERE artifact_id = ? AND revision = ? AND ordinal = ?"),
    # the analyzer migration: every active Topic, and its full-text fields rewritten
    "topic_active_refs": ("SELECT artifact_id, revision, scope_id "
                          "FROM pc_topic_memory_active_topics ORDER BY artifact_id"),
    "topic_active_fts_row": ("SELECT topic_rowid, scope_id FROM pc_topic_memory_active_topics "
                             "WHERE artifact_id = ? AND revision = ?"),
    "topic_active_fts_update": ("UPDATE pc_topic_memory_active_topics SET fts_text = ? "
                                "WHERE topic_rowid = ?"),
    "topic_chunk_fts_rows": ("SELECT chunk_rowid, ordinal FROM pc_topic_memory_active_chunks "
                             "WHERE artifact_id = ? AND revision = ? ORDER BY ordinal"),
    "topic_chunk_fts_update": ("UPDATE pc_topic_memory_active_chunks SET fts_text = ? "
                               "WHERE chunk_rowid = ?"),
    "topic_active_count": "SELECT COUNT(*) FROM pc_topic_memory_active_topics",
    "topic_chunk_count": "SELECT COUNT(*) FROM pc_topic_memory_active_chunks",
    # a hybrid deployment: active rows whose vector was made under another profile
    "topic_stale_fingerprints": (
        "SELECT (SELECT COUNT(*) FROM pc_topic_memory_active_topics "
        "WHERE embedding_fingerprint IS NULL OR embedding_fingerprint <> ?) + "
        "(SELECT COUNT(*) FROM pc_topic_memory_active_chunks "
        "WHERE embedding_fingerprint IS NULL OR embedding_fingerprint <> ?)"),
    # the durable allowance (Topic Memory RFC, "Cumulative work and evidence ceilings"):
    # one row per (scope_id, binding_name, source_after), deleted only by the publication
    "budget_get": (f"SELECT {_BUDGET_COLS} FROM pc_topic_memory_work_budgets "
                   f"WHERE {_BUDGET_KEY}"),
    "budget_insert": (f"INSERT INTO pc_topic_memory_work_budgets ({_BUDGET_COLS}) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
    "budget_update": ("UPDATE pc_topic_memory_work_budgets SET furthest_through = ?, "
                      "attempt_id = ?, attempt_count = ?, reserved_requests = ?, "
                      f"reserved_tokens = ?, failure_code = ? WHERE {_BUDGET_KEY}"),
    "budget_delete": (f"DELETE FROM pc_topic_memory_work_budgets WHERE {_BUDGET_KEY} "
                      "AND attempt_id = ?"),
    # the publication guards: Cursor CAS and advance, the Pending update
    "guard_cursor_get": ("SELECT source_position FROM pc_source_cursors "
                         "WHERE binding_name = ? AND scope_id = ?"),
    "guard_cursor_insert": ("INSERT INTO pc_source_cursors (binding_name, scope_id, "
                            "source_position) VALUES (?, ?, ?)"),
    "guard_cursor_cas": ("UPDATE pc_source_cursors SET source_position = ? "
                         "WHERE binding_name = ? AND scope_id = ? AND source_position = ?"),
    "guard_pending_get": ("SELECT source_through, flush_generation, handled_flush_generation "
                          "FROM pc_artifact_processing_pending "
                          "WHERE binding_name = ? AND scope_id = ?"),
    "guard_pending_handled": ("UPDATE pc_artifact_processing_pending "
                              "SET handled_flush_generation = ? "
                              "WHERE binding_name = ? AND scope_id = ?"),
    "guard_pending_delete": ("DELETE FROM pc_artifact_processing_pending "
                             "WHERE binding_name = ? AND scope_id = ?"),
}

#: Every Topic statement (the golden tests of the Topic backends pin these).
TOPIC_TEMPLATES: dict[str, str] = {**TOPIC_SCHEMA, **TOPIC_QUERIES}

_LINEAGE_SOURCES = "pc_artifact_lineage_sources"
_PUBLICATIONS = "pc_topic_memory_revision_publications"

#: The read-only statements of the dashboard's views (issue 17;
#: :mod:`powercontext.core.topic.insight`), shared by both dialects. Reverse evidence:
#: entry versions hold their SourceRefs as canonical JSON text (no index by Source id),
#: so ``insight_citing_versions`` is a keyset-paged ``LIKE`` pre-filter the adapter
#: confirms exactly; Topic lineage is a table (``source_id`` has a foreign key).
INSIGHT_QUERIES: dict[str, str] = {
    "insight_entry_kinds": ("SELECT entry_version_id, kind FROM memory_entry_versions "
                            "WHERE memory_artifact_id = ?"),
    "insight_citing_versions": (f"SELECT {_VERSION_COLS} FROM memory_entry_versions "
                                "WHERE source_refs LIKE ? AND entry_version_id > ? "
                                "ORDER BY entry_version_id LIMIT ?"),
    "insight_citing_revisions": ("SELECT l.artifact_id, l.revision, p.scope_id, "
                                 f"p.published_at FROM {_LINEAGE_SOURCES} AS l "
                                 f"JOIN {_PUBLICATIONS} AS p ON p.artifact_id = l.artifact_id "
                                 "AND p.revision = l.revision WHERE l.source_id = ? "
                                 "ORDER BY l.artifact_id, l.revision LIMIT ?"),
    "insight_source_days": ("SELECT SUBSTR(recorded_at, 1, 10) AS day, COUNT(*) "
                            "FROM pc_source_scope_recorded WHERE scope_id = ? "
                            "GROUP BY SUBSTR(recorded_at, 1, 10) ORDER BY day"),
    "insight_scope_sources": ("SELECT scope_id, MAX(position) FROM pc_source_scope_journal "
                              "GROUP BY scope_id"),
    "insight_scope_topics": ("SELECT scope_id, COUNT(*) FROM pc_topic_memory_active_topics "
                             "GROUP BY scope_id"),
    "insight_scope_revisions": f"SELECT scope_id, COUNT(*) FROM {_PUBLICATIONS} GROUP BY scope_id",
    "insight_publication_days": (f"SELECT SUBSTR(published_at, 1, 10) AS day, COUNT(*) "
                                 f"FROM {_PUBLICATIONS} WHERE scope_id = ? "
                                 "GROUP BY SUBSTR(published_at, 1, 10) ORDER BY day"),
    "insight_topic_publications": (f"SELECT revision FROM {_PUBLICATIONS} "
                                   "WHERE artifact_id = ? AND scope_id = ? "
                                   "ORDER BY revision DESC LIMIT ?"),
    "insight_lease": (f"SELECT holder_id, supervisor_generation, lease_expires_at FROM {_LEASE} "
                      "WHERE supervisor_group = ?"),
    "insight_waves": (f"SELECT wave_id, COUNT(*), SUM(CASE WHEN completed = TRUE THEN 1 "
                      f"ELSE 0 END) FROM {_TARGETS} WHERE binding_name = ? "
                      "GROUP BY wave_id ORDER BY wave_id"),
}

_ALL: dict[str, str] = {**SCHEMA, **VECTOR_SCHEMA, **QUERIES, **TOPIC_TEMPLATES,
                         **PROCESSING_TEMPLATES, **SUPERVISION_QUERIES, **INSIGHT_QUERIES}


def bucket(n: int) -> int:
    """The smallest IN bucket holding ``n`` values (n <= the largest bucket)."""
    for b in IN_BUCKETS:
        if n <= b:
            return b
    raise ValueError(f"an IN list holds at most {IN_BUCKETS[-1]} values, not {n}")


@functools.cache
def _parsed(name: str) -> Any:
    import sqlglot

    return sqlglot.parse_one(_ALL[name])


@functools.cache
def render(name: str, dialect: str, n: int | None = None) -> str:
    """The statement ``name`` rendered for ``dialect``: ``"sqlite"`` or ``"oceanbase"``
    (ours), or any dialect name sqlglot knows (``"postgres"``, ``"duckdb"``, ...; see
    :func:`powercontext.sql.dialects.dialect`), for a third-party engine.

    A statement with an ``:ids`` IN list needs ``n`` (the number of positional
    parameters the list gets); KeyError for an unknown name, ValueError when ``n`` is
    missing or given for a statement without a list, or for a dialect sqlglot does not
    know. Served from :mod:`powercontext.sql.rendered` when there (every name x our
    dialects x :data:`IN_BUCKETS` size), else rendered with sqlglot. Rendering proves
    only that sqlglot wrote the statement: an engine of another dialect checks what it
    runs with golden strings of its own (docs/python.md, "Plugins").
    """
    from powercontext.sql import rendered

    sql = rendered.TEMPLATES.get((name, dialect, n))
    return sql if sql is not None else _render_sql(name, dialect, n)


def _render_sql(name: str, dialect: str, n: int | None = None) -> str:
    """:func:`render` done by sqlglot (what ``powercontext.sql.generate`` records)."""
    from sqlglot import exp

    from powercontext.sql.dialects import dialect as get_dialect

    tree = _parsed(name)
    markers = [p for p in tree.find_all(exp.Placeholder) if p.name == "ids"]
    if markers:
        if n is None or n < 1:
            raise ValueError(f"statement {name!r} has an IN list: give n >= 1")
        tree = tree.copy()
        for p in [p for p in tree.find_all(exp.Placeholder) if p.name == "ids"]:
            parent = p.parent
            assert isinstance(parent, exp.In)
            parent.set("expressions", [exp.Placeholder() for _ in range(n)])
    elif n is not None:
        raise ValueError(f"statement {name!r} has no IN list")
    return str(tree.sql(dialect=get_dialect(dialect), identify=True))


def render_in(name: str, dialect: str, values: list[Any]) -> list[tuple[str, list[Any]]]:
    """``(sql, IN-list parameters)`` chunks covering ``values``, each padded with None to
    an :data:`IN_BUCKETS` size (None matches nothing). Empty ``values`` gives ``[]``."""
    out = []
    size = IN_BUCKETS[-1]
    for start in range(0, len(values), size):
        chunk = list(values[start:start + size])
        b = bucket(len(chunk))
        out.append((render(name, dialect, b), chunk + [None] * (b - len(chunk))))
    return out
