"""SQLite-only statements: FTS5 and sqlite-vec ``vec0`` virtual tables and their queries
(Memory RFC, "SQLite adapter"; ARCHITECTURE.md, "SQL" and "Decisions").

sqlglot cannot write these (virtual tables, ``MATCH``, ``bm25``, vec0's ``k = ?``), so
they are fragments here. Identifiers are quoted by sqlglot; every value is a bound
parameter. The only numbers written into the text are the vector dimension and the
chunk size of the vec0 DDL, both checked to be positive ``int`` first.

The fragments and the vec0 DDL template are read from :mod:`powercontext.sql.rendered`
(written by ``python -m powercontext.sql.generate`` from the builders below and checked
by tests/unit/test_sql_rendered.py), so a process never imports sqlglot for them; a name
missing there is built with sqlglot on first use.

Projection layout:

* ``memory_entry_search_fts`` -- FTS5 with ``rowid = memory_entry_heads.projection_id``
  and two columns: ``scope`` holds one token naming the Memory (:func:`scope_token`), so
  a search filters by Memory inside the index; ``searchable_text`` holds Analyzer v1
  tokens. The tokenizer keeps ``_`` inside tokens (Analyzer v1 emits ``[a-z0-9_]``).
* ``memory_entry_search_vector`` -- vec0 with ``rowid = projection_id``, a partition key
  ``scope`` (the same token; the KNN scan only visits that Memory's chunks) and an
  ``embedding float[dim]`` compared by L2.
* ``memory_entry_search_vector_bits`` -- the ANN first pass: a sibling vec0 with the same
  rowid and partition key and ``bits bit[dim]``, the sign bits of the float vector
  (``vec_quantize_binary``), compared by Hamming distance. ``vector_ann_search`` takes the
  ``k`` nearest by Hamming distance and rescores them with the exact L2 distance of the
  float vectors (:data:`ANN_OVERFETCH`). A database without it (made before issue 14, or
  a dimension that is not a multiple of 8) searches the float table exactly.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable

__all__ = [
    "ANN_FIRST_K",
    "ANN_OVERFETCH",
    "BITS_TABLE",
    "CANDIDATE_COLUMNS",
    "FTS_MERGE_PAGES",
    "FTS_TABLE",
    "FTS_TOKENIZE",
    "MAX_KNN_K",
    "VECTOR_CHUNK_SIZE",
    "VECTOR_TABLE",
    "fts_document",
    "fts_match_expression",
    "fts_match_tokens",
    "scope_token",
    "scoped_terms",
    "statement",
    "vector_bits_ddl",
    "vector_ddl",
]

FTS_TABLE = "memory_entry_search_fts"
VECTOR_TABLE = "memory_entry_search_vector"
BITS_TABLE = "memory_entry_search_vector_bits"
#: Hamming candidates per wanted row of the ANN first pass (capped at MAX_KNN_K); a
#: Memory of at most ``ANN_OVERFETCH * k`` vectors is therefore searched exactly.
ANN_OVERFETCH = 8
#: The ``k`` of an ANN search's first query, whatever the limit (then doubling): the
#: order a search sees is then the same at every limit. 64 serves a channel budget of
#: up to 63 (limit 15) in one query.
ANN_FIRST_K = 64
FTS_TOKENIZE = "unicode61 remove_diacritics 0 tokenchars '_'"
#: Pages of FTS5 segment merging done after each write of head rows. Every commit adds
#: one segment to the index and FTS5's own automerge (work in proportion to the pages just
#: written) lets a file written a few entries at a time keep 10 to 20 of them; a term is
#: looked up in every segment, so a search over many Memories (phrases x segments) paid
#: for it: 10 Memories x 100 LoCoMo turns written in 10 commits, 15 segments, CPU per
#: search p50 3.4 ms against 1.3 ms once merged into one. Measured here: 2000 one-entry
#: commits keep 4 segments at about 0.75 ms of merging per commit.
FTS_MERGE_PAGES = 64
#: A small index (at most this many rows in its ``_data`` table, one per ~4 KB leaf page:
#: about 3k LoCoMo turns) is merged into one segment once it holds FTS_SMALL_SEGMENTS:
#: there a search's cost is the term lookups, one per phrase and segment, not the
#: postings. Measured here (10 Memories x 100 turns, then 40 one-entry commits, CPU per
#: search p50 over 150 LoCoMo questions): tiered merging alone 3.1 ms at 4 segments;
#: with this 2.0 ms at 1-3 segments; one-entry commit p50 3.85 -> 4.05 ms. From ~3k turns
#: on the postings dominate (the tiered merging alone keeps p95 within 1.1x of one
#: segment) and rewriting the whole index on a write would not pay.
FTS_SMALL_INDEX_PAGES = 64
#: The segment count at which a small index is merged into one (see above).
FTS_SMALL_SEGMENTS = 4
#: vec0 refuses k above 4096.
MAX_KNN_K = 4096
#: Vectors per vec0 chunk (a multiple of 8). Every partition value (one per Memory)
#: allocates at least one whole chunk, so the default of 1024 makes a file of many small
#: Memories huge. Measured here with sqlite-vec 0.1.9, 384-dim float32:
#:   1000 Memories x 10 vectors: chunk 8 -> 26.0 MB, 16 -> 25.4 MB, 64 -> 99.6 MB,
#:   default 1024 -> 1584 MB (and 12.8 s to insert instead of 0.8 s);
#:   1 Memory x 10000 vectors, k=32 KNN: chunk 8 -> 4.5 ms, 64 -> 4.2 ms, 256 -> 3.7 ms.
#: 8 wastes least for Memories of a few entries and costs little on big ones.
VECTOR_CHUNK_SIZE = 8
#: The head columns a search candidate carries (``h`` is memory_entry_heads), in the
#: order every candidate statement selects them (the exact channels and the IVF index).
CANDIDATE_COLUMNS = ("projection_id", "memory_artifact_id", "entry_id", "entry_version_id",
                     "entry_content_hash", "searchable_text")


def _q(name: str) -> str:
    from sqlglot import exp

    return str(exp.to_identifier(name, quoted=True).sql(dialect="sqlite"))


def scope_token(artifact_id: str) -> str:
    """The ASCII token naming a Memory in the FTS ``scope`` column and the vec0 partition
    key: ``m_`` + the first 24 hex digits of SHA-256(UTF-8 artifact id)."""
    return "m_" + hashlib.sha256(artifact_id.encode("utf-8")).hexdigest()[:24]


#: An Analyzer v1 token (and a scope token): ASCII lower-case letters, digits and ``_``.
_TOKEN_RE = re.compile(r"[a-z0-9_]+")


def _check_tokens(tokens: list[str]) -> None:
    # One regex match per token: the former per-character check was 57% of the CPU of
    # a 10-Memory fts candidate stream (1k LoCoMo turns, 60 questions, cProfile).
    match = _TOKEN_RE.fullmatch
    for t in tokens:
        if not isinstance(t, str) or match(t) is None:
            raise ValueError(f"not an Analyzer v1 token: {t!r}")


def scoped_terms(scope: str, terms: list[str] | tuple[str, ...]) -> list[str]:
    """The FTS tokens of ``terms`` inside one Memory: ``<scope>_<term>``.

    Every indexed token carries its Memory's scope, so a posting list holds one Memory's
    rows only: a search reads no other Memory's postings, and document frequencies
    are per Memory.
    """
    _check_tokens([scope, *terms])
    return [f"{scope}_{t}" for t in terms]


def fts_document(scope: str, searchable_text: str) -> str:
    """The text indexed for one head row: its Analyzer v1 tokens, each scoped."""
    return " ".join(f"{scope}_{t}" for t in searchable_text.split())


def fts_match_expression(scopes: list[str], terms: list[str]) -> str:
    """The FTS5 query ``searchable_text : ("<scope>_t1" OR ...)`` over every scope.

    ``scopes`` come from :func:`scope_token` and ``terms`` from Analyzer v1 (both only
    ``[a-z0-9_]``); anything else raises ValueError, so raw text never reaches MATCH.
    """
    if not scopes or not terms:
        raise ValueError("an FTS query needs at least one scope and one term")
    return fts_match_tokens([tok for s in scopes for tok in scoped_terms(s, terms)])


def fts_match_tokens(tokens: list[str]) -> str:
    """The FTS5 query ``searchable_text : ("t1" OR ...)`` over already scoped tokens
    (from :func:`scoped_terms`); ValueError for anything but ``[a-z0-9_]`` tokens."""
    if not tokens:
        raise ValueError("an FTS query needs at least one token")
    _check_tokens(tokens)
    return "searchable_text : (" + " OR ".join(f'"{t}"' for t in tokens) + ")"


@functools.cache
def vector_ddl(dimension: int, chunk_size: int = VECTOR_CHUNK_SIZE) -> str:
    """CREATE VIRTUAL TABLE for the vec0 projection; ValueError for a bad dimension or a
    chunk size that is not a positive multiple of 8."""
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= 8192:
        raise ValueError(f"vector dimension must be an int in 1..8192, not {dimension!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0 \
            or chunk_size % 8:
        raise ValueError(f"vec0 chunk_size must be a positive multiple of 8, not {chunk_size!r}")
    from powercontext.sql import rendered

    template = getattr(rendered, "SQLITE_VECTOR_DDL", None) or _render_vector_ddl(_q)
    return template.format(dimension=dimension, chunk_size=chunk_size)


def _render_vector_ddl(q: Callable[[str], str]) -> str:
    """The vec0 DDL as a :meth:`str.format` template whose only fields are
    ``{dimension:d}`` and ``{chunk_size:d}`` (integers only)."""
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS {q(VECTOR_TABLE)} USING vec0("
            "scope text partition key, embedding float[{dimension:d}] distance_metric=l2, "
            "chunk_size={chunk_size:d})")


def vector_bits_ddl(dimension: int) -> str | None:
    """CREATE VIRTUAL TABLE of the ANN first pass (``bit[dimension]``), or None when
    ``dimension`` is not a multiple of 8 (vec0's ``bit[]`` needs whole bytes; such a
    database keeps the exact float KNN). ValueError for a bad dimension."""
    vector_ddl(dimension)  # the same checks
    if dimension % 8:
        return None
    return statement("create_vector_bits").format(dimension=dimension)


@functools.cache
def statement(name: str) -> str:
    """A fixed SQLite fragment by name (see :data:`STATEMENTS`); KeyError."""
    from powercontext.sql import rendered

    sql = rendered.SQLITE_FRAGMENTS.get(name)
    return sql if sql is not None else _render_fragments(_q)[name]


def _render_fragments(_q: Callable[[str], str]) -> dict[str, str]:
    """Every fixed fragment by name, identifiers quoted by ``_q``."""
    fts, vec, bits = _q(FTS_TABLE), _q(VECTOR_TABLE), _q(BITS_TABLE)
    fts_idx, fts_data = _q(f"{FTS_TABLE}_idx"), _q(f"{FTS_TABLE}_data")
    heads, meta = _q("memory_entry_heads"), _q("memory_entry_vector_metadata")
    cols = ", ".join(f"h.{_q(c)}" for c in CANDIDATE_COLUMNS)
    fragments = {
        # Contentless: the text lives in memory_entry_heads (searches join it), so FTS5
        # keeps only its index; contentless_delete=1 (SQLite 3.43+) allows deletes by
        # rowid. The tokens carry the Memory scope (see scoped_terms).
        "create_fts": (f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5("
                       f"searchable_text, content='', contentless_delete=1, "
                       f"tokenize=\"{FTS_TOKENIZE}\")"),
        "fts_insert": f"INSERT INTO {fts} (rowid, searchable_text) VALUES (?, ?)",
        # Segment upkeep (see FTS_MERGE_PAGES): 'usermerge' 2 lets 'merge' combine any two
        # segments of a level (the setting is stored in the table's config); 'merge' does
        # at most ? pages of that work. Neither changes what a MATCH returns.
        "fts_usermerge": f"INSERT INTO {fts} ({fts}, rank) VALUES ('usermerge', 2)",
        "fts_merge": f"INSERT INTO {fts} ({fts}, rank) VALUES ('merge', ?)",
        # The index's segments (FTS5's %_idx shadow table holds one row per segment and
        # leaf-page first term, keyed (segid, term)): one seek per segment.
        "fts_segments": (f"WITH RECURSIVE s(id) AS (SELECT min(segid) FROM {fts_idx} "
                         f"UNION ALL SELECT (SELECT min(segid) FROM {fts_idx} "
                         f"WHERE segid > s.id) FROM s WHERE s.id IS NOT NULL) "
                         f"SELECT count(id) FROM s"),
        # Whether the index (FTS5's %_data shadow table) has at most ? rows, reading at
        # most ? + 1 of them.
        "fts_small": (f"SELECT count(*) <= ? FROM (SELECT 1 FROM {fts_data} LIMIT ? + 1)"),
        "fts_delete": f"DELETE FROM {fts} WHERE rowid = ?",
        # One page of the top matches by bm25 first, then the join: joining every match
        # before the sort cost a third more at 10k rows (same rows, same order).
        # (score, rowid) is a total order, so LIMIT ? OFFSET ? pages are exact. The
        # score is the last column: the adapter merges one MATCH per Memory by it.
        "fts_search": (f"WITH m AS MATERIALIZED (SELECT rowid AS pid, bm25({fts}) AS score "
                       f"FROM {fts} WHERE {fts} MATCH ? ORDER BY score, rowid "
                       f"LIMIT ? OFFSET ?) "
                       f"SELECT {cols}, m.score FROM m JOIN {heads} AS h "
                       f"ON h.{_q('projection_id')} = m.pid ORDER BY m.score, m.pid"),
        # FTS rows whose head row is gone (damage; a rebuild ends with this sweep)
        "fts_delete_orphans": (f"DELETE FROM {fts} WHERE rowid NOT IN "
                               f"(SELECT {_q('projection_id')} FROM {heads})"),
        "fts_integrity_check": f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')",
        "vector_insert": f"INSERT INTO {vec} (rowid, scope, embedding) VALUES (?, ?, ?)",
        "vector_delete": f"DELETE FROM {vec} WHERE rowid = ?",
        "vector_delete_scope": (f"DELETE FROM {vec} WHERE rowid IN "
                                f"(SELECT rowid FROM {vec} WHERE scope = ?)"),
        "drop_vector": f"DROP TABLE IF EXISTS {vec}",
        # The ANN first pass ({dimension:d} is filled by vector_bits_ddl, an int, checked).
        # Its rows are written and deleted with the float ones, in the same transaction.
        "create_vector_bits": (f"CREATE VIRTUAL TABLE IF NOT EXISTS {bits} USING vec0("
                               "scope text partition key, bits bit[{dimension:d}], "
                               f"chunk_size={VECTOR_CHUNK_SIZE})"),
        "bits_insert": (f"INSERT INTO {bits} (rowid, scope, bits) "
                        "VALUES (?, ?, vec_quantize_binary(?))"),
        "bits_delete": f"DELETE FROM {bits} WHERE rowid = ?",
        "bits_delete_scope": (f"DELETE FROM {bits} WHERE rowid IN "
                              f"(SELECT rowid FROM {bits} WHERE scope = ?)"),
        # (re)made from the float table: an upgrade, and the end of every rebuild
        "bits_fill": (f"INSERT INTO {bits} (rowid, scope, bits) "
                      f"SELECT rowid, scope, vec_quantize_binary(embedding) FROM {vec}"),
        "drop_bits": f"DROP TABLE IF EXISTS {bits}",
        # ANN: the ?2 nearest sign-bit vectors of one Memory by Hamming distance, each
        # rescored with the exact L2 distance of its float vector; the ?4 nearest of them
        # by (distance, projection id). Then the joins of vector_search.
        "vector_ann_search": (f"WITH cand AS MATERIALIZED (SELECT rowid AS pid FROM {bits} "
                              f"WHERE bits MATCH vec_quantize_binary(?1) AND k = ?2 "
                              f"AND scope = ?3), "
                              f"knn AS MATERIALIZED (SELECT cand.pid AS pid, "
                              f"vec_distance_l2(v.embedding, ?1) AS distance FROM cand "
                              f"JOIN {vec} AS v ON v.rowid = cand.pid "
                              f"ORDER BY distance, cand.pid LIMIT ?4) "
                              f"SELECT {cols}, knn.distance FROM knn JOIN {heads} AS h "
                              f"ON h.{_q('projection_id')} = knn.pid JOIN {meta} AS m "
                              f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
                              f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
                              f"AND m.{_q('entry_content_hash')} = "
                              f"h.{_q('entry_content_hash')}"),
        # The partition key filter runs inside the KNN scan; the metadata join drops a
        # vector whose metadata does not name the head row's exact version and hash.
        # MATERIALIZED keeps the KNN a scan of its own (vec0 refuses an outer ORDER BY
        # pushed into it); the caller orders by distance.
        "vector_search": (f"WITH knn AS MATERIALIZED (SELECT rowid AS pid, distance FROM {vec} "
                          f"WHERE embedding MATCH ? AND k = ? AND scope = ?) "
                          f"SELECT {cols}, knn.distance FROM knn JOIN {heads} AS h "
                          f"ON h.{_q('projection_id')} = knn.pid JOIN {meta} AS m "
                          f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
                          f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
                          f"AND m.{_q('entry_content_hash')} = h.{_q('entry_content_hash')}"),
        "vector_projection": (f"SELECT h.{_q('entry_content_hash')}, "
                              f"CASE WHEN v.rowid IS NULL THEN NULL "
                              f"ELSE m.{_q('embedding_content_hash')} END "
                              f"FROM {heads} AS h LEFT JOIN {meta} AS m "
                              f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
                              f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
                              f"AND m.{_q('entry_content_hash')} = h.{_q('entry_content_hash')} "
                              f"LEFT JOIN {vec} AS v ON v.rowid = h.{_q('projection_id')} "
                              f"WHERE h.{_q('memory_artifact_id')} = ?"),
        # the same for one entry's head row (a commit counts the rows it replaces)
        "vector_projection_entry": (
            f"SELECT h.{_q('entry_content_hash')}, "
            f"CASE WHEN v.rowid IS NULL THEN NULL "
            f"ELSE m.{_q('embedding_content_hash')} END "
            f"FROM {heads} AS h LEFT JOIN {meta} AS m "
            f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
            f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
            f"AND m.{_q('entry_content_hash')} = h.{_q('entry_content_hash')} "
            f"LEFT JOIN {vec} AS v ON v.rowid = h.{_q('projection_id')} "
            f"WHERE h.{_q('memory_artifact_id')} = ? AND h.{_q('entry_id')} = ?"),
        "vector_count": f"SELECT count(*) FROM {vec}",
        # The stored vector of each head row whose metadata names its exact version and
        # hash (a rebuild keeps these when it cannot make new ones).
        "head_vectors": (f"SELECT h.{_q('entry_version_id')}, m.{_q('embedding_content_hash')}, "
                         f"v.embedding FROM {heads} AS h JOIN {meta} AS m "
                         f"ON m.{_q('projection_id')} = h.{_q('projection_id')} "
                         f"AND m.{_q('entry_version_id')} = h.{_q('entry_version_id')} "
                         f"AND m.{_q('entry_content_hash')} = h.{_q('entry_content_hash')} "
                         f"JOIN {vec} AS v ON v.rowid = h.{_q('projection_id')} "
                         f"WHERE h.{_q('memory_artifact_id')} = ?"),
        "table_exists": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
        # Startup probes, on TEMP tables so they never touch the database file.
        "probe_fts_create": (f"CREATE VIRTUAL TABLE temp.{_q('pc_probe_fts')} USING fts5("
                             f"searchable_text, content='', contentless_delete=1, "
                             f"tokenize=\"{FTS_TOKENIZE}\")"),
        "probe_fts_insert": (f"INSERT INTO temp.{_q('pc_probe_fts')} "
                             "(rowid, searchable_text) VALUES (?, ?)"),
        "probe_fts_search": (f"SELECT rowid FROM temp.{_q('pc_probe_fts')} "
                             f"WHERE {_q('pc_probe_fts')} MATCH ?"),
        "probe_fts_delete": f"DELETE FROM temp.{_q('pc_probe_fts')} WHERE rowid = ?",
        "probe_fts_drop": f"DROP TABLE IF EXISTS temp.{_q('pc_probe_fts')}",
        "probe_vec_create": (f"CREATE VIRTUAL TABLE temp.{_q('pc_probe_vec')} USING vec0("
                             "scope text partition key, embedding float[2] "
                             "distance_metric=l2, chunk_size=8)"),
        "probe_vec_insert": (f"INSERT INTO temp.{_q('pc_probe_vec')} (rowid, scope, embedding) "
                             "VALUES (?, ?, ?)"),
        "probe_vec_search": (f"SELECT rowid, distance FROM temp.{_q('pc_probe_vec')} "
                             "WHERE embedding MATCH ? AND k = ? AND scope = ?"),
        "probe_vec_delete": f"DELETE FROM temp.{_q('pc_probe_vec')} WHERE rowid = ?",
        "probe_vec_drop": f"DROP TABLE IF EXISTS temp.{_q('pc_probe_vec')}",
    }
    fragments.update(_render_topic_fragments(_q))
    return fragments

# ---------------------------------------------------------------------- Topic Memory
# Topic Memory's projections (Topic Memory RFC, "Storage, Head, and atomic activation"):
# one FTS5 table and one vec0 table per active table, keyed by the active row's integer
# rowid (``topic_rowid`` / ``chunk_rowid``; AUTOINCREMENT, so a rowid is never reused).
# The FTS tokens are scoped by a per-Scope token (:func:`topic_scope_token`), which is
# also the vec0 partition key: a search reads only its Scope's postings and chunks.

TOPIC_FTS_TABLE = "pc_topic_memory_topic_fts"
CHUNK_FTS_TABLE = "pc_topic_memory_chunk_fts"
TOPIC_VECTOR_TABLE = "pc_topic_memory_topic_vector"
CHUNK_VECTOR_TABLE = "pc_topic_memory_chunk_vector"


def topic_scope_token(scope_id: str) -> str:
    """The ASCII token naming a Scope in the Topic FTS tokens and the vec0 partition
    key: ``s_`` + the first 24 hex digits of SHA-256(UTF-8 scope id)."""
    return "s_" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:24]


def topic_vector_ddl(table: str, dimension: int) -> str:
    """CREATE VIRTUAL TABLE of one Topic vec0 table (``topic`` or ``chunk``);
    ValueError for another table or a bad dimension."""
    if table not in ("topic", "chunk"):
        raise ValueError(f"no Topic vector table {table!r}")
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= 8192:
        raise ValueError(f"vector dimension must be an int in 1..8192, not {dimension!r}")
    return statement(f"topic_create_{table}_vector").format(dimension=dimension)


def _render_topic_fragments(_q: Callable[[str], str]) -> dict[str, str]:
    topics, chunks = _q("pc_topic_memory_active_topics"), _q("pc_topic_memory_active_chunks")
    out: dict[str, str] = {}
    for kind, fts, vec, table, key, cols in (
            ("topic", TOPIC_FTS_TABLE, TOPIC_VECTOR_TABLE, topics, "topic_rowid",
             ("artifact_id", "revision", "fts_text")),
            ("chunk", CHUNK_FTS_TABLE, CHUNK_VECTOR_TABLE, chunks, "chunk_rowid",
             ("artifact_id", "revision", "ordinal", "fts_text"))):
        f, v, k = _q(fts), _q(vec), _q(key)
        select = ", ".join(f"a.{_q(c)}" for c in cols)
        out.update({
            f"topic_create_{kind}_fts": (
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {f} USING fts5(searchable_text, "
                f"content='', contentless_delete=1, tokenize=\"{FTS_TOKENIZE}\")"),
            # {dimension:d} is filled by topic_vector_ddl (an int, checked)
            f"topic_create_{kind}_vector": (
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {v} USING vec0(scope text partition key, "
                "embedding float[{dimension:d}] distance_metric=l2, "
                f"chunk_size={VECTOR_CHUNK_SIZE})"),
            f"topic_drop_{kind}_vector": f"DROP TABLE IF EXISTS {v}",
            f"topic_{kind}_fts_insert": f"INSERT INTO {f} (rowid, searchable_text) VALUES (?, ?)",
            f"topic_{kind}_fts_delete": f"DELETE FROM {f} WHERE rowid = ?",
            # one page of (bm25, rowid) order, then the join (as the Memory fts_search);
            # the scope_id check only guards against a scope-token collision
            f"topic_{kind}_fts_search": (
                f"WITH m AS MATERIALIZED (SELECT rowid AS rid, bm25({f}) AS score FROM {f} "
                f"WHERE {f} MATCH ? ORDER BY score, rowid LIMIT ? OFFSET ?) "
                f"SELECT {select} FROM m JOIN {table} AS a ON a.{k} = m.rid "
                f"WHERE a.{_q('scope_id')} = ? ORDER BY m.score, m.rid"),
            f"topic_{kind}_fts_integrity_check": (
                f"INSERT INTO {f} ({f}) VALUES ('integrity-check')"),
            f"topic_{kind}_vector_insert": (
                f"INSERT INTO {v} (rowid, scope, embedding) VALUES (?, ?, ?)"),
            f"topic_{kind}_vector_delete": f"DELETE FROM {v} WHERE rowid = ?",
            # the partition key filters inside the KNN scan; MATERIALIZED keeps the KNN a
            # scan of its own (vec0 refuses an outer ORDER BY pushed into it)
            f"topic_{kind}_vector_search": (
                f"WITH knn AS MATERIALIZED (SELECT rowid AS rid, distance FROM {v} "
                f"WHERE embedding MATCH ? AND k = ? AND scope = ?) "
                f"SELECT {select}, knn.distance FROM knn JOIN {table} AS a ON a.{k} = knn.rid "
                f"WHERE a.{_q('scope_id')} = ? ORDER BY knn.distance, knn.rid"),
            f"topic_{kind}_vector_count": f"SELECT count(*) FROM {v}",
        })
    # active topic and chunk rows without their vector or with another fingerprint: one
    # set-based count over both tables (never a query per Topic)
    missing = []
    for table, vec, key in ((topics, TOPIC_VECTOR_TABLE, "topic_rowid"),
                            (chunks, CHUNK_VECTOR_TABLE, "chunk_rowid")):
        fp = f"a.{_q('embedding_fingerprint')}"
        missing.append(f"(SELECT count(*) FROM {table} AS a LEFT JOIN {_q(vec)} AS v "
                       f"ON v.rowid = a.{_q(key)} WHERE v.rowid IS NULL OR {fp} IS NULL "
                       f"OR {fp} <> ?)")
    out["topic_missing_vectors"] = "SELECT " + " + ".join(missing)
    out["topic_now"] = "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    out["table_sql"] = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"
    return out


#: Topic Memory's fragment names (for the golden tests).
TOPIC_STATEMENTS = (
    *(f"topic_{what.split('_')[0]}_{kind}_{what.split('_', 1)[1]}"
      if what.startswith(("create", "drop")) else f"topic_{kind}_{what}"
      for kind in ("topic", "chunk")
      for what in ("create_fts", "create_vector", "drop_vector", "fts_insert", "fts_delete",
                   "fts_search", "fts_integrity_check", "vector_insert", "vector_delete",
                   "vector_search", "vector_count")),
    "topic_missing_vectors", "topic_now", "table_sql",
)


#: Names :func:`statement` accepts (for the golden tests).
STATEMENTS = (
    "create_fts", "fts_insert", "fts_usermerge", "fts_merge", "fts_segments", "fts_small",
    "fts_delete",
    "fts_delete_orphans", "fts_search",
    "fts_integrity_check", "vector_insert", "vector_delete", "vector_delete_scope",
    "drop_vector", "create_vector_bits", "bits_insert", "bits_delete", "bits_delete_scope",
    "bits_fill", "drop_bits", "vector_ann_search",
    "vector_search", "vector_projection", "vector_projection_entry", "vector_count",
    "head_vectors", "table_exists", "probe_fts_create", "probe_fts_insert", "probe_fts_search",
    "probe_fts_delete", "probe_fts_drop", "probe_vec_create", "probe_vec_insert",
    "probe_vec_search", "probe_vec_delete", "probe_vec_drop",
    *TOPIC_STATEMENTS,
)
