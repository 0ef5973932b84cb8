"""OceanBase-only SQL of the Topic Memory family (MySQL mode, 4.3.5 BP3+ or seekdb): the
fragments sqlglot cannot render (Topic Memory RFC, "Storage, Head, and atomic
activation"; ARCHITECTURE.md, "SQL"; TOPIC-MEMORY.md, "Storage").

* the DDL of the two active projection tables, ``pc_topic_memory_active_topics`` (one
  row per Topic: its active Revision) and ``pc_topic_memory_active_chunks`` (one row per
  Detail chunk of it), each with ``FULLTEXT ... WITH PARSER SPACE
  PARSER_PROPERTIES=(min_token_size=1)`` on its ``fts_text`` and, in a hybrid
  deployment, ``embedding VECTOR(dim)`` with an HNSW L2 index, both filtered by
  ``scope_id`` (the leading column of a secondary key);
* the four channels: ``MATCH ... AGAINST`` pages and ``ORDER BY l2_distance(...)
  APPROXIMATE LIMIT k`` (exact without APPROXIMATE) within one Scope;
* the writes that replace a Topic's active rows, the database-UTC clock read
  (``UTC_TIMESTAMP(6)``) and the reads ``get``/``search`` make of the active rows.

Facts seen on seekdb 1.4.0 (``OceanBase 4.3.5.3 seekdb``), tests/adapters/
test_oceanbase_topic_sql.py runs every statement:

* ``TEXT`` holds 65,535 bytes ("Data too long" above); ``MEDIUMTEXT`` and ``LONGTEXT``
  take a FULLTEXT index and MATCH them (5 MB rows tried; the bound is then the 16 MB
  ``max_allowed_packet``). The full-text and snippet columns are ``MEDIUMTEXT``: the
  Analyzer text of a CJK chunk is many times its characters.
* ``APPROXIMATE LIMIT k`` is accepted up to k = 16,384 (k = 16,385 is error 1235, "Not
  supported feature"); the detail vector channel asks at most 80 x 48 = 3,840. Filtered
  by ``scope_id`` it plans ``VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)`` through the Scope
  key and returned exactly the exact top-k (10, 400, 3,840 of 5,000 rows).
* The ``MATCH`` plan is ``TEXT RETRIEVAL SCAN`` with the Scope filter applied before the
  top-N sort, so a page at a growing offset in the total order (score, then keys) is
  exact.
* Rows inserted or deleted earlier in the same transaction are seen by ``MATCH`` and by
  ``l2_distance``; a NULL vector is never returned by the vector scan.
* The session time zone of seekdb is ``+08:00``: ``NOW(6)`` is not UTC,
  ``UTC_TIMESTAMP(6)`` is.

Every statement uses mysqlclient's ``%s`` placeholders; identifiers are fixed names and
the vector dimension (checked to be a positive int) is the only value written into DDL.
"""

from __future__ import annotations

import functools

from powercontext.sql.oceanbase import MAX_APPROXIMATE_K, _check_dimension, _marks

__all__ = [
    "ACTIVE_CHUNKS_TABLE",
    "ACTIVE_TOPICS_TABLE",
    "MAX_APPROXIMATE_K",
    "TOPIC_TABLES",
    "active_chunks_ddl",
    "active_refs",
    "active_revision",
    "active_row_count",
    "active_topics_ddl",
    "chunk_fts_search",
    "chunk_fts_update",
    "chunk_insert",
    "chunk_ordinals",
    "chunk_texts",
    "chunk_vector_search",
    "chunks_delete",
    "missing_vectors",
    "scope_vector_count",
    "topic_fts_search",
    "topic_fts_update",
    "topic_insert",
    "topic_rows",
    "topic_vector_search",
    "topics_delete",
    "utc_now",
]

ACTIVE_TOPICS_TABLE = "pc_topic_memory_active_topics"
ACTIVE_CHUNKS_TABLE = "pc_topic_memory_active_chunks"
#: The OceanBase-only tables of the family (the shared ones come from the templates).
TOPIC_TABLES = (ACTIVE_TOPICS_TABLE, ACTIVE_CHUNKS_TABLE)

_BIN = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
_ID = f"VARCHAR(128) {_BIN}"
_SCOPE = f"VARCHAR(256) {_BIN}"  # core.topic.content.MAX_SCOPE_CHARS characters
_HASH = f"CHAR(64) {_BIN}"
_BIG = f"MEDIUMTEXT {_BIN}"
_PARSER = "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)"
_TABLES = {"topics": ACTIVE_TOPICS_TABLE, "chunks": ACTIVE_CHUNKS_TABLE}


def _vector_parts(table: str, dimension: int | None) -> tuple[str, str]:
    if dimension is None:
        return "", ""
    return (f",\n    embedding VECTOR({_check_dimension(dimension)})",
            f",\n    VECTOR INDEX vidx_{table}_embedding (embedding) "
            "WITH (distance=L2, type=hnsw)")


def active_topics_ddl(dimension: int | None) -> str:
    """``CREATE TABLE IF NOT EXISTS pc_topic_memory_active_topics``: one row per Topic
    (its active Revision): Scope, title, summary, the Analyzer v1 text of title +
    summary (FULLTEXT), the number of direct Sources, the embedding profile fingerprint
    and, for a ``dimension``, the title + summary vector with its HNSW L2 index. A
    foreign key ties the row to its Revision."""
    cols, index = _vector_parts(ACTIVE_TOPICS_TABLE, dimension)
    return (
        f"CREATE TABLE IF NOT EXISTS {ACTIVE_TOPICS_TABLE} (\n"
        f"    artifact_id {_ID} NOT NULL,\n"
        "    revision BIGINT NOT NULL,\n"
        f"    scope_id {_SCOPE} NOT NULL,\n"
        f"    title TEXT {_BIN} NOT NULL,\n"
        f"    summary TEXT {_BIN} NOT NULL,\n"
        f"    fts_text {_BIG} NOT NULL,\n"
        "    source_count BIGINT NOT NULL,\n"
        f"    embedding_fingerprint {_HASH}"
        f"{cols},\n"
        "    PRIMARY KEY (artifact_id),\n"
        f"    KEY idx_{ACTIVE_TOPICS_TABLE}_scope (scope_id, artifact_id),\n"
        f"    FULLTEXT INDEX ftx_{ACTIVE_TOPICS_TABLE}_text (fts_text) {_PARSER}"
        f"{index},\n"
        f"    CONSTRAINT fk_{ACTIVE_TOPICS_TABLE}_revision FOREIGN KEY (artifact_id, revision)\n"
        "        REFERENCES artifact_revisions (artifact_id, revision)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )


def active_chunks_ddl(dimension: int | None) -> str:
    """``CREATE TABLE IF NOT EXISTS pc_topic_memory_active_chunks``: one row per Detail
    chunk of an active Revision: 0-based ordinal, Scope, ``[start_offset, end_offset)``
    in code points of the Detail, the chunk's text (``snippet_text``), its Analyzer v1
    text (FULLTEXT), the embedding profile fingerprint and, for a ``dimension``, its
    vector with an HNSW L2 index."""
    cols, index = _vector_parts(ACTIVE_CHUNKS_TABLE, dimension)
    return (
        f"CREATE TABLE IF NOT EXISTS {ACTIVE_CHUNKS_TABLE} (\n"
        f"    artifact_id {_ID} NOT NULL,\n"
        "    revision BIGINT NOT NULL,\n"
        "    ordinal BIGINT NOT NULL,\n"
        f"    scope_id {_SCOPE} NOT NULL,\n"
        "    start_offset BIGINT NOT NULL,\n"
        "    end_offset BIGINT NOT NULL,\n"
        f"    snippet_text {_BIG} NOT NULL,\n"
        f"    fts_text {_BIG} NOT NULL,\n"
        f"    embedding_fingerprint {_HASH}"
        f"{cols},\n"
        "    PRIMARY KEY (artifact_id, ordinal),\n"
        f"    KEY idx_{ACTIVE_CHUNKS_TABLE}_scope (scope_id, artifact_id),\n"
        f"    FULLTEXT INDEX ftx_{ACTIVE_CHUNKS_TABLE}_text (fts_text) {_PARSER}"
        f"{index},\n"
        f"    CONSTRAINT fk_{ACTIVE_CHUNKS_TABLE}_revision FOREIGN KEY (artifact_id, revision)\n"
        "        REFERENCES artifact_revisions (artifact_id, revision)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )


def topic_fts_search() -> str:
    """One page of the ``topic_fts`` channel in one Scope. Parameters: the query
    (Analyzer v1 tokens joined by spaces), the scope_id, the query again, the page size,
    the offset. Rows ``(artifact_id, revision, fts_text, score)``, by relevance, ties by
    artifact_id (a total order)."""
    return (
        "SELECT artifact_id, revision, fts_text, MATCH (fts_text) AGAINST (%s) AS score "
        f"FROM {ACTIVE_TOPICS_TABLE} WHERE scope_id = %s AND MATCH (fts_text) AGAINST (%s) "
        "ORDER BY score DESC, artifact_id LIMIT %s OFFSET %s"
    )


def chunk_fts_search() -> str:
    """One page of the ``detail_fts`` channel in one Scope (parameters as
    :func:`topic_fts_search`). Rows ``(artifact_id, revision, ordinal, fts_text,
    score)``, by relevance, ties by artifact_id then ordinal."""
    return (
        "SELECT artifact_id, revision, ordinal, fts_text, MATCH (fts_text) AGAINST (%s) "
        f"AS score FROM {ACTIVE_CHUNKS_TABLE} "
        "WHERE scope_id = %s AND MATCH (fts_text) AGAINST (%s) "
        "ORDER BY score DESC, artifact_id, ordinal LIMIT %s OFFSET %s"
    )


@functools.cache
def topic_vector_search(approximate: bool = True) -> str:
    """The ``topic_vector`` channel: the nearest active Topics of one Scope by L2.
    Parameters: the query vector literal, the scope_id, the literal again, k. Rows
    ``(artifact_id, revision, fts_text, distance)``. Without ``approximate`` the scan
    is exact."""
    approx = " APPROXIMATE" if approximate else ""
    return (
        "SELECT artifact_id, revision, fts_text, l2_distance(embedding, %s) AS distance "
        f"FROM {ACTIVE_TOPICS_TABLE} WHERE scope_id = %s "
        f"ORDER BY l2_distance(embedding, %s){approx} LIMIT %s"
    )


@functools.cache
def chunk_vector_search(approximate: bool = True) -> str:
    """The ``detail_vector`` channel (parameters as :func:`topic_vector_search`). Rows
    ``(artifact_id, revision, ordinal, fts_text, distance)``."""
    approx = " APPROXIMATE" if approximate else ""
    return (
        "SELECT artifact_id, revision, ordinal, fts_text, l2_distance(embedding, %s) "
        f"AS distance FROM {ACTIVE_CHUNKS_TABLE} WHERE scope_id = %s "
        f"ORDER BY l2_distance(embedding, %s){approx} LIMIT %s"
    )


@functools.cache
def scope_vector_count(table: str) -> str:
    """Rows of one Scope in ``"topics"`` or ``"chunks"`` that carry a vector (to detect
    a short ANN answer). Parameter: the scope_id."""
    return (f"SELECT COUNT(*) FROM {_TABLES[table]} WHERE scope_id = %s "
            "AND embedding IS NOT NULL")


def missing_vectors() -> str:
    """One set-based count of the active Topic and chunk rows that lack a vector or
    whose ``embedding_fingerprint`` is not the given one (0 in a complete hybrid
    deployment). Parameters: the fingerprint, twice."""
    return (
        f"SELECT (SELECT COUNT(*) FROM {ACTIVE_TOPICS_TABLE} WHERE embedding IS NULL "
        "OR embedding_fingerprint IS NULL OR embedding_fingerprint <> %s) + "
        f"(SELECT COUNT(*) FROM {ACTIVE_CHUNKS_TABLE} WHERE embedding IS NULL "
        "OR embedding_fingerprint IS NULL OR embedding_fingerprint <> %s)"
    )


def active_row_count() -> str:
    """How many active Topic and chunk rows exist (all lack a vector when the tables
    have no vector column)."""
    return (f"SELECT (SELECT COUNT(*) FROM {ACTIVE_TOPICS_TABLE}) + "
            f"(SELECT COUNT(*) FROM {ACTIVE_CHUNKS_TABLE})")


@functools.cache
def topics_delete(n: int) -> str:
    """Delete the active Topic rows of ``n`` artifact ids (their FULLTEXT and HNSW
    entries go with the rows)."""
    return f"DELETE FROM {ACTIVE_TOPICS_TABLE} WHERE artifact_id IN ({_marks(n)})"


@functools.cache
def chunks_delete(n: int) -> str:
    """Delete every active chunk row of ``n`` artifact ids."""
    return f"DELETE FROM {ACTIVE_CHUNKS_TABLE} WHERE artifact_id IN ({_marks(n)})"


@functools.cache
def topic_insert(with_vector: bool) -> str:
    """Insert one active Topic row: artifact_id, revision, scope_id, title, summary,
    fts_text, source_count, embedding_fingerprint (NULL for FTS-only) and, with the
    vector column, the vector literal."""
    cols = ("artifact_id, revision, scope_id, title, summary, fts_text, source_count, "
            "embedding_fingerprint")
    n = 8
    if with_vector:
        cols, n = cols + ", embedding", n + 1
    return f"INSERT INTO {ACTIVE_TOPICS_TABLE} ({cols}) VALUES ({_marks(n)})"


@functools.cache
def chunk_insert(with_vector: bool) -> str:
    """Insert one active chunk row: artifact_id, revision, ordinal, scope_id,
    start_offset, end_offset, snippet_text, fts_text, embedding_fingerprint (NULL for
    FTS-only) and, with the vector column, the vector literal."""
    cols = ("artifact_id, revision, ordinal, scope_id, start_offset, end_offset, "
            "snippet_text, fts_text, embedding_fingerprint")
    n = 9
    if with_vector:
        cols, n = cols + ", embedding", n + 1
    return f"INSERT INTO {ACTIVE_CHUNKS_TABLE} ({cols}) VALUES ({_marks(n)})"


@functools.cache
def topic_rows(n: int) -> str:
    """The active rows of ``n`` artifact ids in one Scope. Parameters: the scope_id, the
    ids. Rows ``(artifact_id, revision, title, summary)``."""
    return (f"SELECT artifact_id, revision, title, summary FROM {ACTIVE_TOPICS_TABLE} "
            f"WHERE scope_id = %s AND artifact_id IN ({_marks(n)})")


def chunk_texts() -> str:
    """One active chunk's text. Parameters: artifact_id, revision, ordinal. Rows
    ``(snippet_text,)`` (none when the Revision is no longer active)."""
    return (f"SELECT snippet_text FROM {ACTIVE_CHUNKS_TABLE} WHERE artifact_id = %s "
            "AND revision = %s AND ordinal = %s")


def active_refs() -> str:
    """Every active Topic, for the analyzer migration. Rows ``(artifact_id, revision,
    scope_id)`` by artifact_id."""
    return (f"SELECT artifact_id, revision, scope_id FROM {ACTIVE_TOPICS_TABLE} "
            "ORDER BY artifact_id")


def active_revision() -> str:
    """The active Revision of one Topic. Parameters: artifact_id. Rows ``(revision,)``."""
    return f"SELECT revision FROM {ACTIVE_TOPICS_TABLE} WHERE artifact_id = %s"


def topic_fts_update() -> str:
    """Replace the full-text field of one active Topic row (its FULLTEXT entry follows).
    Parameters: fts_text, artifact_id, revision."""
    return (f"UPDATE {ACTIVE_TOPICS_TABLE} SET fts_text = %s "
            "WHERE artifact_id = %s AND revision = %s")


def chunk_ordinals() -> str:
    """The ordinals of one active Revision's chunk rows. Parameters: artifact_id,
    revision. Rows ``(ordinal,)`` ascending."""
    return (f"SELECT ordinal FROM {ACTIVE_CHUNKS_TABLE} WHERE artifact_id = %s "
            "AND revision = %s ORDER BY ordinal")


def chunk_fts_update() -> str:
    """Replace the full-text field of one active chunk row. Parameters: fts_text,
    artifact_id, revision, ordinal."""
    return (f"UPDATE {ACTIVE_CHUNKS_TABLE} SET fts_text = %s "
            "WHERE artifact_id = %s AND revision = %s AND ordinal = %s")


def utc_now() -> str:
    """The one database-UTC clock read of a publication: ``UTC_TIMESTAMP(6)``, a
    DATETIME with microseconds (rendered ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` by the
    adapter)."""
    return "SELECT UTC_TIMESTAMP(6)"
