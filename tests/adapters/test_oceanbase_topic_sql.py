"""The Topic Memory OceanBase fragments (``powercontext.sql.oceanbase_topic``): one golden
string per statement, and every statement run on a real seekdb, with the engine facts
the module's docstring records (column sizes, the APPROXIMATE k limit, the Scope filter
inside both index scans, same-transaction visibility, UTC)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.sql import oceanbase_topic as ts
from powercontext.sql import templates

_BIN = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
_PARSER = "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)"


def _seekdb_test(fn):
    """Marks a test that runs on the seekdb server."""
    fn = pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                            "POWERCONTEXT_TEST_OCEANBASE_URL")(fn)
    return pytest.mark.oceanbase(fn)


# ---------------------------------------------------------------- golden strings


def test_active_topics_ddl_golden():
    assert ts.active_topics_ddl(8) == (
        "CREATE TABLE IF NOT EXISTS pc_topic_memory_active_topics (\n"
        f"    artifact_id VARCHAR(128) {_BIN} NOT NULL,\n"
        "    revision BIGINT NOT NULL,\n"
        f"    scope_id VARCHAR(256) {_BIN} NOT NULL,\n"
        f"    title TEXT {_BIN} NOT NULL,\n"
        f"    summary TEXT {_BIN} NOT NULL,\n"
        f"    fts_text MEDIUMTEXT {_BIN} NOT NULL,\n"
        "    source_count BIGINT NOT NULL,\n"
        f"    embedding_fingerprint CHAR(64) {_BIN},\n"
        "    embedding VECTOR(8),\n"
        "    PRIMARY KEY (artifact_id),\n"
        "    KEY idx_pc_topic_memory_active_topics_scope (scope_id, artifact_id),\n"
        f"    FULLTEXT INDEX ftx_pc_topic_memory_active_topics_text (fts_text) {_PARSER},\n"
        "    VECTOR INDEX vidx_pc_topic_memory_active_topics_embedding (embedding) "
        "WITH (distance=L2, type=hnsw),\n"
        "    CONSTRAINT fk_pc_topic_memory_active_topics_revision "
        "FOREIGN KEY (artifact_id, revision)\n"
        "        REFERENCES artifact_revisions (artifact_id, revision)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )
    fts_only = ts.active_topics_ddl(None)
    assert "VECTOR" not in fts_only and "embedding " not in fts_only
    assert f"(fts_text) {_PARSER},\n    CONSTRAINT" in fts_only


def test_active_chunks_ddl_golden():
    assert ts.active_chunks_ddl(8) == (
        "CREATE TABLE IF NOT EXISTS pc_topic_memory_active_chunks (\n"
        f"    artifact_id VARCHAR(128) {_BIN} NOT NULL,\n"
        "    revision BIGINT NOT NULL,\n"
        "    ordinal BIGINT NOT NULL,\n"
        f"    scope_id VARCHAR(256) {_BIN} NOT NULL,\n"
        "    start_offset BIGINT NOT NULL,\n"
        "    end_offset BIGINT NOT NULL,\n"
        f"    snippet_text MEDIUMTEXT {_BIN} NOT NULL,\n"
        f"    fts_text MEDIUMTEXT {_BIN} NOT NULL,\n"
        f"    embedding_fingerprint CHAR(64) {_BIN},\n"
        "    embedding VECTOR(8),\n"
        "    PRIMARY KEY (artifact_id, ordinal),\n"
        "    KEY idx_pc_topic_memory_active_chunks_scope (scope_id, artifact_id),\n"
        f"    FULLTEXT INDEX ftx_pc_topic_memory_active_chunks_text (fts_text) {_PARSER},\n"
        "    VECTOR INDEX vidx_pc_topic_memory_active_chunks_embedding (embedding) "
        "WITH (distance=L2, type=hnsw),\n"
        "    CONSTRAINT fk_pc_topic_memory_active_chunks_revision "
        "FOREIGN KEY (artifact_id, revision)\n"
        "        REFERENCES artifact_revisions (artifact_id, revision)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )
    assert "VECTOR" not in ts.active_chunks_ddl(None)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "8", 16001])
def test_the_dimension_must_be_a_positive_int(bad):
    for ddl in (ts.active_topics_ddl, ts.active_chunks_ddl):
        with pytest.raises(ValueError):
            ddl(bad)


def test_search_statements_golden():
    assert ts.topic_fts_search() == (
        "SELECT artifact_id, revision, fts_text, MATCH (fts_text) AGAINST (%s) AS score "
        "FROM pc_topic_memory_active_topics WHERE scope_id = %s "
        "AND MATCH (fts_text) AGAINST (%s) ORDER BY score DESC, artifact_id LIMIT %s OFFSET %s")
    assert ts.chunk_fts_search() == (
        "SELECT artifact_id, revision, ordinal, fts_text, MATCH (fts_text) AGAINST (%s) "
        "AS score FROM pc_topic_memory_active_chunks WHERE scope_id = %s "
        "AND MATCH (fts_text) AGAINST (%s) "
        "ORDER BY score DESC, artifact_id, ordinal LIMIT %s OFFSET %s")
    assert ts.topic_vector_search() == (
        "SELECT artifact_id, revision, fts_text, l2_distance(embedding, %s) AS distance "
        "FROM pc_topic_memory_active_topics WHERE scope_id = %s "
        "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s")
    assert ts.topic_vector_search(False).endswith("ORDER BY l2_distance(embedding, %s) LIMIT %s")
    assert ts.chunk_vector_search() == (
        "SELECT artifact_id, revision, ordinal, fts_text, l2_distance(embedding, %s) "
        "AS distance FROM pc_topic_memory_active_chunks WHERE scope_id = %s "
        "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s")
    assert ts.chunk_vector_search(False).endswith("ORDER BY l2_distance(embedding, %s) LIMIT %s")
    assert ts.scope_vector_count("chunks") == (
        "SELECT COUNT(*) FROM pc_topic_memory_active_chunks WHERE scope_id = %s "
        "AND embedding IS NOT NULL")
    assert ts.missing_vectors() == (
        "SELECT (SELECT COUNT(*) FROM pc_topic_memory_active_topics WHERE embedding IS NULL "
        "OR embedding_fingerprint IS NULL OR embedding_fingerprint <> %s) + "
        "(SELECT COUNT(*) FROM pc_topic_memory_active_chunks WHERE embedding IS NULL "
        "OR embedding_fingerprint IS NULL OR embedding_fingerprint <> %s)")
    assert ts.active_row_count() == (
        "SELECT (SELECT COUNT(*) FROM pc_topic_memory_active_topics) + "
        "(SELECT COUNT(*) FROM pc_topic_memory_active_chunks)")
    with pytest.raises(KeyError):
        ts.scope_vector_count("heads")


def test_write_and_read_statements_golden():
    assert ts.topics_delete(2) == (
        "DELETE FROM pc_topic_memory_active_topics WHERE artifact_id IN (%s, %s)")
    assert ts.chunks_delete(1) == (
        "DELETE FROM pc_topic_memory_active_chunks WHERE artifact_id IN (%s)")
    assert ts.topic_insert(False) == (
        "INSERT INTO pc_topic_memory_active_topics (artifact_id, revision, scope_id, title, "
        "summary, fts_text, source_count, embedding_fingerprint) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")
    assert ts.topic_insert(True) == (
        "INSERT INTO pc_topic_memory_active_topics (artifact_id, revision, scope_id, title, "
        "summary, fts_text, source_count, embedding_fingerprint, embedding) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")
    assert ts.chunk_insert(False) == (
        "INSERT INTO pc_topic_memory_active_chunks (artifact_id, revision, ordinal, scope_id, "
        "start_offset, end_offset, snippet_text, fts_text, embedding_fingerprint) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")
    assert ts.chunk_insert(True).endswith(
        "fts_text, embedding_fingerprint, embedding) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
    assert ts.topic_rows(2) == (
        "SELECT artifact_id, revision, title, summary FROM pc_topic_memory_active_topics "
        "WHERE scope_id = %s AND artifact_id IN (%s, %s)")
    assert ts.chunk_texts() == (
        "SELECT snippet_text FROM pc_topic_memory_active_chunks WHERE artifact_id = %s "
        "AND revision = %s AND ordinal = %s")
    assert ts.utc_now() == "SELECT UTC_TIMESTAMP(6)"
    with pytest.raises(ValueError):
        ts.topics_delete(0)
    # the analyzer migration
    assert ts.active_refs() == (
        "SELECT artifact_id, revision, scope_id FROM pc_topic_memory_active_topics "
        "ORDER BY artifact_id")
    assert ts.active_revision() == (
        "SELECT revision FROM pc_topic_memory_active_topics WHERE artifact_id = %s")
    assert ts.topic_fts_update() == (
        "UPDATE pc_topic_memory_active_topics SET fts_text = %s "
        "WHERE artifact_id = %s AND revision = %s")
    assert ts.chunk_ordinals() == (
        "SELECT ordinal FROM pc_topic_memory_active_chunks WHERE artifact_id = %s "
        "AND revision = %s ORDER BY ordinal")
    assert ts.chunk_fts_update() == (
        "UPDATE pc_topic_memory_active_chunks SET fts_text = %s "
        "WHERE artifact_id = %s AND revision = %s AND ordinal = %s")


# ---------------------------------------------------------------- on seekdb


@pytest.fixture(scope="module")
def conn(seekdb_url: str) -> Iterator[object]:
    import MySQLdb

    with fresh_database(seekdb_url, "pc_topic_sql") as url:
        p = urlsplit(url)
        c = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                            passwd=p.password or "", db=p.path.lstrip("/"),
                            charset="utf8mb4", autocommit=True)
        cur = c.cursor()
        for name in templates.SCHEMA:
            if name != "create_memory_entry_heads":
                cur.execute(templates.render(name, "oceanbase"))
        cur.execute(ts.active_topics_ddl(4))
        cur.execute(ts.active_chunks_ddl(4))
        try:
            yield c
        finally:
            c.close()


def _q(conn, sql, params=None):
    cur = conn.cursor()
    cur.execute(sql, params)
    return list(cur.fetchall())


def _unit(i: int) -> str:
    v = [float((i * 7 + j * 3) % 11 - 5) for j in range(4)]
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return "[" + ",".join(repr(x / norm) for x in v) + "]"


def _revision(conn, artifact_id: str, revision: int) -> None:
    _q(conn, templates.render("revision_insert", "oceanbase"),
       (artifact_id, revision, "topic-memory", "identity", b"{}", "0" * 64, "{}"))


@_seekdb_test
def test_every_statement_runs_on_seekdb_within_one_scope(conn):
    for i in range(6):
        aid = f"topic_art_{i:02d}"
        _revision(conn, aid, 1)
        scope = "repo:/a" if i % 2 == 0 else "repo:/b"
        _q(conn, ts.topic_insert(True), (aid, 1, scope, f"T{i}", "S", f"alpha t{i} go", 2,
                                         "f" * 64, _unit(i)))
        for o in range(3):
            _q(conn, ts.chunk_insert(True), (aid, 1, o, scope, o * 10, o * 10 + 10,
                                             f"chunk {o} of {i}", f"alpha c{o} db",
                                             "f" * 64, _unit(i * 3 + o)))
    rows = _q(conn, ts.topic_fts_search(), ("alpha go", "repo:/a", "alpha go", 2, 0))
    rows += _q(conn, ts.topic_fts_search(), ("alpha go", "repo:/a", "alpha go", 2, 2))
    assert [r[0] for r in rows] == ["topic_art_00", "topic_art_02", "topic_art_04"]
    assert all(r[2].startswith("alpha") and float(r[3]) > 0 for r in rows)
    chunks = _q(conn, ts.chunk_fts_search(), ("db", "repo:/b", "db", 100, 0))
    assert [(r[0], r[2]) for r in chunks] == [
        (f"topic_art_{i:02d}", o) for i in (1, 3, 5) for o in range(3)]  # ties: keys
    lit = _unit(2)
    near = _q(conn, ts.topic_vector_search(), (lit, "repo:/a", lit, 3840))
    exact = _q(conn, ts.topic_vector_search(False), (lit, "repo:/a", lit, 3840))
    assert [r[0] for r in near] == [r[0] for r in exact] and near[0][0] == "topic_art_02"
    assert {r[0] for r in near} == {"topic_art_00", "topic_art_02", "topic_art_04"}
    chunk_near = _q(conn, ts.chunk_vector_search(), (lit, "repo:/b", lit, 3840))
    assert len(chunk_near) == 9 and {r[0] for r in chunk_near} == {
        "topic_art_01", "topic_art_03", "topic_art_05"}
    assert _q(conn, ts.chunk_vector_search(False), (lit, "repo:/b", lit, 3840)) == chunk_near
    assert _q(conn, ts.scope_vector_count("topics"), ("repo:/a",)) == [(3,)]
    assert _q(conn, ts.scope_vector_count("chunks"), ("repo:/b",)) == [(9,)]
    assert _q(conn, ts.missing_vectors(), ("f" * 64, "f" * 64)) == [(0,)]
    assert _q(conn, ts.missing_vectors(), ("e" * 64, "e" * 64)) == [(24,)]
    assert _q(conn, ts.active_row_count()) == [(24,)]
    got = _q(conn, ts.topic_rows(2), ("repo:/a", "topic_art_00", "topic_art_01"))
    assert got == [("topic_art_00", 1, "T0", "S")]  # the other Scope's id is not seen
    assert _q(conn, ts.chunk_texts(), ("topic_art_03", 1, 2)) == [("chunk 2 of 3",)]
    assert _q(conn, ts.chunk_texts(), ("topic_art_03", 2, 2)) == []
    # the analyzer migration rewrites the full-text fields in place; the FULLTEXT follows
    assert _q(conn, ts.active_refs())[:2] == [("topic_art_00", 1, "repo:/a"),
                                             ("topic_art_01", 1, "repo:/b")]
    assert _q(conn, ts.active_revision(), ("topic_art_05",)) == [(1,)]
    assert _q(conn, ts.chunk_ordinals(), ("topic_art_05", 1)) == [(0,), (1,), (2,)]
    _q(conn, ts.topic_fts_update(), ("beta t5 go", "topic_art_05", 1))
    _q(conn, ts.chunk_fts_update(), ("beta c2 db", "topic_art_05", 1, 2))
    assert [r[0] for r in _q(conn, ts.topic_fts_search(), ("beta", "repo:/b", "beta", 9, 0))
            ] == ["topic_art_05"]
    assert [(r[0], r[2]) for r in _q(conn, ts.chunk_fts_search(),
                                     ("beta", "repo:/b", "beta", 9, 0))] == [("topic_art_05", 2)]
    (now,), = _q(conn, ts.utc_now())
    utc = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert isinstance(now, datetime.datetime) and abs((utc - now).total_seconds()) < 3600
    # deletes take the FULLTEXT and HNSW entries with the rows
    _q(conn, ts.chunks_delete(2), ("topic_art_00", "topic_art_02"))
    _q(conn, ts.topics_delete(2), ("topic_art_00", "topic_art_02"))
    rows = _q(conn, ts.topic_fts_search(), ("alpha", "repo:/a", "alpha", 10, 0))
    assert [r[0] for r in rows] == ["topic_art_04"]
    assert [r[0] for r in _q(conn, ts.chunk_vector_search(), (lit, "repo:/a", lit, 10))] == [
        "topic_art_04"] * 3


@_seekdb_test
def test_engine_facts_the_fragments_rely_on(conn):
    import MySQLdb

    aid = "topic_art_facts"
    _revision(conn, aid, 1)
    # MEDIUMTEXT holds (and MATCH finds) far more than TEXT's 65,535 bytes
    big = " ".join(["u_4e2d"] * 20_000)  # 140,000 bytes
    _q(conn, ts.chunk_insert(False), (aid, 1, 0, "facts", 0, 1, "x", big, None))
    assert _q(conn, ts.chunk_fts_search(), ("u_4e2d", "facts", "u_4e2d", 5, 0))[0][0] == aid
    # the APPROXIMATE k limit: 3,840 (80 x 48) is far inside it
    lit = _unit(0)
    assert _q(conn, ts.chunk_vector_search(), (lit, "facts", lit, ts.MAX_APPROXIMATE_K)) == []
    with pytest.raises(MySQLdb.Error) as err:
        _q(conn, ts.chunk_vector_search(), (lit, "facts", lit, ts.MAX_APPROXIMATE_K + 1))
    assert err.value.args[0] == 1235
    # the Scope filter is applied inside the ANN scan, never after it
    plan = "\n".join(r[0] for r in _q(conn, "EXPLAIN " + ts.chunk_vector_search(),
                                      (lit, "facts", lit, 3840)))
    assert "VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)" in plan
    assert "idx_pc_topic_memory_active_chunks_scope" in plan
    # rows written earlier in the transaction are seen by MATCH and l2_distance
    cur = conn.cursor()
    cur.execute("START TRANSACTION")
    try:
        cur.execute(ts.chunk_insert(True), (aid, 1, 1, "facts", 1, 2, "y", "zebra", None, lit))
        cur.execute(ts.chunk_fts_search(), ("zebra", "facts", "zebra", 5, 0))
        assert [r[2] for r in cur.fetchall()] == [1]
        cur.execute(ts.chunk_vector_search(), (lit, "facts", lit, 5))
        assert [r[2] for r in cur.fetchall()] == [1]
    finally:
        cur.execute("ROLLBACK")
    assert _q(conn, ts.chunk_fts_search(), ("zebra", "facts", "zebra", 5, 0)) == []
    # a foreign key ties an active row to a stored Revision
    with pytest.raises(MySQLdb.Error) as err:
        _q(conn, ts.topic_insert(False), ("topic_art_none", 1, "facts", "t", "s", "x", 1, None))
    assert err.value.args[0] == 1452
