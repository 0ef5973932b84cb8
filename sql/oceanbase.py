"""OceanBase-only SQL (MySQL mode, 4.3.5 BP3+ or seekdb): the fragments sqlglot cannot
render or renders wrong (ARCHITECTURE.md, "SQL"; Memory RFC, "OceanBase adapter").

* the ``memory_entry_heads`` DDL with ``FULLTEXT ... WITH PARSER SPACE``, the fixed
  ``VECTOR(dim)`` column and its HNSW L2 index (the shared tables come from
  :mod:`powercontext.sql.templates`);
* search: ``MATCH ... AGAINST`` over Analyzer v1 tokens and ``ORDER BY
  l2_distance(...) APPROXIMATE LIMIT k``, both filtered by ``memory_artifact_id``;
* the startup probes (``TOKENIZE``, a throw-away vector table).

Every statement uses mysqlclient's ``%s`` placeholders; identifiers are fixed names
(the vector dimension is the only value written into DDL, and it is checked to be a
positive int). An ``IN`` list of ``n`` values is rendered for ``n`` placeholders;
callers pad to :data:`powercontext.sql.templates.IN_BUCKETS` sizes.
"""

from __future__ import annotations

import functools

from powercontext.core.analyzer import ENGINE_STOPWORDS

__all__ = [
    "ANN_FIRST_K",
    "HEADS_TABLE",
    "INNODB_STOPWORDS",
    "MAX_APPROXIMATE_K",
    "MAX_TOKEN_CHARS",
    "MIN_VERSION",
    "TOKENIZE_MUST_KEEP",
    "TOKENIZE_PROBE_TEXT",
    "all_heads",
    "clear_projection",
    "fts_search",
    "head_vectors",
    "heads_by_id",
    "heads_ddl",
    "heads_delete",
    "heads_insert",
    "journal_lock",
    "journal_max",
    "meta_seed",
    "meta_upsert",
    "source_insert_at",
    "tokenize",
    "vector_count",
    "vector_literal",
    "vector_probe_statements",
    "vector_projection",
    "vector_projection_entry",
    "vector_reset_statements",
    "vector_search",
]

HEADS_TABLE = "memory_entry_heads"
#: The largest k seekdb 1.4 accepts in ``ORDER BY ... APPROXIMATE LIMIT k`` (above it:
#: 1235 "Not supported feature or function").
MAX_APPROXIMATE_K = 16384
#: The ``k`` of a Memory vector search's first HNSW scan whatever the limit (then
#: doubling): an HNSW answer depends on its ``k``, so the order a search sees is then the
#: same at every limit (a smaller limit gets a prefix). 64 serves a channel budget of up
#: to 63 (limit 15) in one scan.
ANN_FIRST_K = 64
#: Oldest OceanBase release the adapter accepts (4.3.5 BP3), as found in
#: ``@@version_comment`` (seekdb 1.4.0 reports ``OceanBase 4.3.5.3 seekdb``).
MIN_VERSION = (4, 3, 5, 3)
#: The SPACE parser drops tokens longer than this (``max_token_size`` is at most 84).
MAX_TOKEN_CHARS = 84
#: The words seekdb 1.4.0's SPACE parser drops (``TOKENIZE`` with min_token_size=1, and
#: the index): the InnoDB default stopword list, which seekdb cannot be told to keep. The
#: analyzers own the list (every version drops it: core.analyzer.ENGINE_STOPWORDS).
INNODB_STOPWORDS = ENGINE_STOPWORDS
#: Tokens of every kind the analyzers emit, which the SPACE parser must keep: short
#: words, CJK unigrams and bigrams, hex words, cluster unigrams and bigrams (Thai),
#: joined identifiers, hashed long words, digits, and a token of the longest allowed
#: length (84 characters; seekdb drops 85).
TOKENIZE_MUST_KEEP = (
    "go", "ci", "db", "uv", "u_4e2d", "b_4e2d_6587", "x_c3a9", "abc_def", "123", "keepme",
    "g_e0b881", "gb_e0b881_e0b882", "j_adr_0005", "jx_636166c3a9_626172",
    "h_09ecb6ebc8bcefc733f6f2ec44f791ab", "k" * MAX_TOKEN_CHARS,
)  # fmt: skip
#: What the tokenizer probe feeds ``TOKENIZE``: the tokens above and every stopword.
TOKENIZE_PROBE_TEXT = " ".join([*TOKENIZE_MUST_KEEP, *sorted(INNODB_STOPWORDS)])

_BIN = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
_ID = f"VARCHAR(128) {_BIN}"
_HASH = f"CHAR(64) {_BIN}"


def _check_dimension(dimension: int) -> int:
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= 16000:
        raise ValueError(f"vector dimension must be an int in 1..16000, not {dimension!r}")
    return dimension


def heads_ddl(dimension: int | None, short_tokens: bool = True) -> str:
    """``CREATE TABLE IF NOT EXISTS memory_entry_heads`` (Memory RFC, "Latest-head,
    full-text, and vector projection"): FULLTEXT ``WITH PARSER SPACE`` (with
    ``PARSER_PROPERTIES=(min_token_size=1)`` when ``short_tokens``) and, for a
    ``dimension``, ``embedding VECTOR(dimension)`` + ``embedding_content_hash`` with an
    HNSW L2 index. ``memory_artifact_id`` leads the unique key, so both searches filter
    by Memory through it."""
    parser = "WITH PARSER SPACE"
    if short_tokens:
        parser += " PARSER_PROPERTIES=(min_token_size=1)"
    vector_cols = vector_index = ""
    if dimension is not None:
        vector_cols = (f",\n    embedding_content_hash {_HASH},"
                       f"\n    embedding VECTOR({_check_dimension(dimension)})")
        vector_index = (",\n    VECTOR INDEX vidx_memory_entry_heads_embedding (embedding)"
                        " WITH (distance=L2, type=hnsw)")
    return (
        f"CREATE TABLE IF NOT EXISTS {HEADS_TABLE} (\n"
        "    projection_id BIGINT NOT NULL AUTO_INCREMENT,\n"
        f"    memory_artifact_id {_ID} NOT NULL,\n"
        "    head_revision BIGINT NOT NULL,\n"
        f"    entry_id {_ID} NOT NULL,\n"
        f"    entry_version_id {_ID} NOT NULL,\n"
        f"    entry_content_hash {_HASH} NOT NULL,\n"
        f"    searchable_text TEXT {_BIN} NOT NULL"
        f"{vector_cols},\n"
        "    PRIMARY KEY (projection_id),\n"
        "    UNIQUE KEY uk_memory_entry_heads_entry (memory_artifact_id, entry_id),\n"
        "    KEY idx_memory_entry_heads_version (entry_version_id),\n"
        f"    FULLTEXT INDEX ftx_memory_entry_heads_text (searchable_text) {parser}"
        f"{vector_index},\n"
        "    CONSTRAINT fk_memory_entry_heads_version\n"
        "        FOREIGN KEY (memory_artifact_id, entry_id, entry_version_id)\n"
        "        REFERENCES memory_entry_versions\n"
        "            (memory_artifact_id, entry_id, entry_version_id)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )


def _marks(n: int) -> str:
    if n < 1:
        raise ValueError("an IN list needs at least one value")
    return ", ".join(["%s"] * n)


_CANDIDATE_COLS = ("memory_artifact_id, entry_id, entry_version_id, entry_content_hash, "
                   "searchable_text")


@functools.cache
def fts_search(n: int) -> str:
    """One page of the FTS matches over ``n`` Memory ids. Parameters: the query (Analyzer
    v1 tokens joined by spaces) twice, the ``n`` ids, the page size, the offset.
    Natural-language mode: any token matches; ordered by relevance, ties by Memory then
    entry id (a total order, so pages at growing offsets are exact)."""
    return (
        f"SELECT {_CANDIDATE_COLS}, MATCH (searchable_text) AGAINST (%s) AS score "
        f"FROM {HEADS_TABLE} "
        f"WHERE memory_artifact_id IN ({_marks(n)}) AND MATCH (searchable_text) AGAINST (%s) "
        "ORDER BY score DESC, memory_artifact_id, entry_id LIMIT %s OFFSET %s"
    )


@functools.cache
def vector_search(n: int, approximate: bool = True) -> str:
    """Nearest head rows by L2 among ``n`` Memory ids. Parameters: the query vector
    literal, the ``n`` ids, the vector literal again, the limit. With ``approximate``
    the HNSW index answers (seekdb plans ``VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)``
    through the Memory key); without it the scan is exact."""
    approx = " APPROXIMATE" if approximate else ""
    return (
        f"SELECT {_CANDIDATE_COLS}, l2_distance(embedding, %s) AS distance "
        f"FROM {HEADS_TABLE} "
        f"WHERE memory_artifact_id IN ({_marks(n)}) "
        f"ORDER BY l2_distance(embedding, %s){approx} LIMIT %s"
    )


@functools.cache
def heads_by_id(n: int) -> str:
    """``(artifact_id, revision)`` of the head rows of ``n`` Artifacts (missing ones are
    left out). Parameters: the ids."""
    return f"SELECT artifact_id, revision FROM artifact_heads WHERE artifact_id IN ({_marks(n)})"


@functools.cache
def vector_count(n: int) -> str:
    """Head rows of ``n`` Memories that carry a vector (to detect a short ANN answer)."""
    return (f"SELECT COUNT(*) FROM {HEADS_TABLE} WHERE memory_artifact_id IN ({_marks(n)}) "
            "AND embedding IS NOT NULL")


def head_vectors() -> str:
    """Per head row of one Memory that carries a vector: entry_version_id, its embedding
    hash and the vector (as OceanBase's text form ``[x1,...]``)."""
    return (f"SELECT entry_version_id, embedding_content_hash, embedding FROM {HEADS_TABLE} "
            "WHERE memory_artifact_id = %s AND embedding IS NOT NULL "
            "AND embedding_content_hash IS NOT NULL")


def vector_projection() -> str:
    """Per head row of one Memory: entry hash, and the embedding hash only when the
    vector is present (Memory RFC, "Vector integrity and offline rebuilds")."""
    return (f"SELECT entry_content_hash, CASE WHEN embedding IS NULL THEN NULL "
            f"ELSE embedding_content_hash END FROM {HEADS_TABLE} WHERE memory_artifact_id = %s")


def vector_projection_entry() -> str:
    """:func:`vector_projection` for one entry's head row. Parameters: the Memory id, the
    entry id."""
    return vector_projection() + " AND entry_id = %s"


@functools.cache
def heads_delete(n: int) -> str:
    """Delete the head rows of ``n`` entries of one Memory (FULLTEXT and HNSW entries
    go with the row). Parameters: the Memory id, the entry ids."""
    return (f"DELETE FROM {HEADS_TABLE} WHERE memory_artifact_id = %s "
            f"AND entry_id IN ({_marks(n)})")


@functools.cache
def heads_insert(with_vector: bool) -> str:
    """Insert one head row; with the vector columns, ``embedding`` takes a vector
    literal or NULL and ``embedding_content_hash`` a hash or NULL (both or neither)."""
    cols = ("memory_artifact_id, head_revision, entry_id, entry_version_id, "
            "entry_content_hash, searchable_text")
    marks = 6
    if with_vector:
        cols += ", embedding_content_hash, embedding"
        marks = 8
    return f"INSERT INTO {HEADS_TABLE} ({cols}) VALUES ({_marks(marks)})"


def meta_upsert() -> str:
    """Set one ``powercontext_meta`` value (key, value)."""
    return ("INSERT INTO powercontext_meta (`key`, `value`) VALUES (%s, %s) "
            "ON DUPLICATE KEY UPDATE `value` = VALUES(`value`)")


def meta_seed() -> str:
    """Create a ``powercontext_meta`` row unless it exists (key, value)."""
    return "INSERT IGNORE INTO powercontext_meta (`key`, `value`) VALUES (%s, %s)"


def journal_lock() -> str:
    """Lock the journal row of ``powercontext_meta`` until COMMIT: Source inserts are
    serialized so journal positions become visible in ascending order."""
    return "SELECT `value` FROM powercontext_meta WHERE `key` = 'journal_lock' FOR UPDATE"


def journal_max() -> str:
    return "SELECT COALESCE(MAX(journal_position), 0) FROM sources"


def source_insert_at() -> str:
    """Insert one Source at an explicit journal position."""
    return ("INSERT INTO sources (journal_position, source_id, kind, content, content_hash, "
            "uri, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s)")


def abandoned_sessions() -> str:
    """The ids of this user's sessions on this database idle (``Sleep``) inside an open
    transaction for at least ``%s`` seconds, this session left out (the adapter's
    lost-connection recovery). Parameter: the idle seconds."""
    return ("SELECT ID FROM oceanbase.V$OB_PROCESSLIST WHERE "
            "USER = SUBSTRING_INDEX(CURRENT_USER(), '@', 1) AND DB = DATABASE() "
            "AND COMMAND = 'Sleep' AND TRANS_STATE = 'ACTIVE' AND TIME >= %s "
            "AND ID <> CONNECTION_ID()")


def tokenize() -> str:
    """``TOKENIZE(text, 'space', min_token_size=1)``: the tokens the SPACE parser keeps,
    as a JSON array. Parameter: the text."""
    return ("SELECT TOKENIZE(%s, 'space', "
            "'[{\"additional_args\":[{\"min_token_size\": 1}]}]')")


def vector_probe_statements(table: str, dimension: int) -> tuple[str, str, str, str]:
    """(create, insert, search, drop) of the startup vector probe on a throw-away
    table ``table`` (a fixed ``powercontext_probe_*`` name built by the adapter)."""
    if not table.startswith("powercontext_probe_") or not table.replace("_", "").isalnum():
        raise ValueError(f"not a probe table name: {table!r}")
    dim = _check_dimension(dimension)
    return (
        f"CREATE TABLE {table} (id BIGINT NOT NULL, embedding VECTOR({dim}), "
        "PRIMARY KEY (id), VECTOR INDEX vidx_probe (embedding) WITH (distance=L2, type=hnsw))",
        f"INSERT INTO {table} (id, embedding) VALUES (%s, %s), (%s, %s)",
        f"SELECT id, l2_distance(embedding, %s) FROM {table} "
        "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT 1",
        f"DROP TABLE IF EXISTS {table}",
    )


def all_heads() -> str:
    """Every Memory Artifact's (artifact_id, head revision), sorted by id (bytewise:
    the ids use utf8mb4_bin)."""
    return ("SELECT h.artifact_id, h.revision FROM artifact_heads h "
            "JOIN artifact_revisions r ON r.artifact_id = h.artifact_id "
            "AND r.revision = h.revision WHERE r.family = %s ORDER BY h.artifact_id")


def clear_projection() -> str:
    """Delete every head row of one Memory (its FULLTEXT and HNSW entries go with it)."""
    return f"DELETE FROM {HEADS_TABLE} WHERE memory_artifact_id = %s"


def vector_reset_statements(has_vector: bool, dimension: int | None) -> tuple[str, ...]:
    """DDL that drops the vector projection of ``memory_entry_heads`` (when
    ``has_vector``) and recreates it as ``VECTOR(dimension)`` with its HNSW L2 index
    (None: no vector projection). The FULLTEXT index and head rows stay. Each statement
    commits implicitly (DDL)."""
    out: list[str] = []
    if has_vector:
        out += [f"ALTER TABLE {HEADS_TABLE} DROP INDEX vidx_memory_entry_heads_embedding",
                f"ALTER TABLE {HEADS_TABLE} DROP COLUMN embedding, "
                "DROP COLUMN embedding_content_hash"]
    if dimension is not None:
        out += [f"ALTER TABLE {HEADS_TABLE} ADD COLUMN embedding_content_hash {_HASH} NULL, "
                f"ADD COLUMN embedding VECTOR({_check_dimension(dimension)}) NULL",
                f"CREATE VECTOR INDEX vidx_memory_entry_heads_embedding ON {HEADS_TABLE} "
                "(embedding) WITH (distance=L2, type=hnsw)"]
    return tuple(out)


def vector_literal(vector: tuple[float, ...] | list[float]) -> str:
    """The text form OceanBase casts to VECTOR: ``[x1,x2,...]`` with repr floats."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
