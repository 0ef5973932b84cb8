"""Golden strings of the OceanBase-only SQL (``powercontext.sql.oceanbase``); each one
also runs on seekdb in ``test_oceanbase_backend.py`` / ``test_oceanbase_contract.py``."""

from __future__ import annotations

import pytest

from powercontext.sql import oceanbase as obsql

_BIN = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
_COLS = ("memory_artifact_id, entry_id, entry_version_id, entry_content_hash, "
         "searchable_text")


def test_heads_ddl_with_vector_and_short_tokens():
    assert obsql.heads_ddl(8) == (
        "CREATE TABLE IF NOT EXISTS memory_entry_heads (\n"
        "    projection_id BIGINT NOT NULL AUTO_INCREMENT,\n"
        f"    memory_artifact_id VARCHAR(128) {_BIN} NOT NULL,\n"
        "    head_revision BIGINT NOT NULL,\n"
        f"    entry_id VARCHAR(128) {_BIN} NOT NULL,\n"
        f"    entry_version_id VARCHAR(128) {_BIN} NOT NULL,\n"
        f"    entry_content_hash CHAR(64) {_BIN} NOT NULL,\n"
        f"    searchable_text TEXT {_BIN} NOT NULL,\n"
        f"    embedding_content_hash CHAR(64) {_BIN},\n"
        "    embedding VECTOR(8),\n"
        "    PRIMARY KEY (projection_id),\n"
        "    UNIQUE KEY uk_memory_entry_heads_entry (memory_artifact_id, entry_id),\n"
        "    KEY idx_memory_entry_heads_version (entry_version_id),\n"
        "    FULLTEXT INDEX ftx_memory_entry_heads_text (searchable_text) WITH PARSER SPACE "
        "PARSER_PROPERTIES=(min_token_size=1),\n"
        "    VECTOR INDEX vidx_memory_entry_heads_embedding (embedding) "
        "WITH (distance=L2, type=hnsw),\n"
        "    CONSTRAINT fk_memory_entry_heads_version\n"
        "        FOREIGN KEY (memory_artifact_id, entry_id, entry_version_id)\n"
        "        REFERENCES memory_entry_versions\n"
        "            (memory_artifact_id, entry_id, entry_version_id)\n"
        ") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )


def test_heads_ddl_without_vector_or_parser_properties():
    ddl = obsql.heads_ddl(None, short_tokens=False)
    assert "VECTOR" not in ddl and "embedding" not in ddl and "PARSER_PROPERTIES" not in ddl
    assert ("FULLTEXT INDEX ftx_memory_entry_heads_text (searchable_text) WITH PARSER SPACE,\n"
            in ddl)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "8", 16001])
def test_dimension_must_be_a_positive_int(bad):
    with pytest.raises(ValueError):
        obsql.heads_ddl(bad)


def test_search_statements():
    assert obsql.fts_search(1) == (
        f"SELECT {_COLS}, MATCH (searchable_text) AGAINST (%s) AS score "
        "FROM memory_entry_heads WHERE memory_artifact_id IN (%s) "
        "AND MATCH (searchable_text) AGAINST (%s) "
        "ORDER BY score DESC, memory_artifact_id, entry_id LIMIT %s OFFSET %s")
    assert obsql.vector_search(2) == (
        f"SELECT {_COLS}, l2_distance(embedding, %s) AS distance "
        "FROM memory_entry_heads WHERE memory_artifact_id IN (%s, %s) "
        "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s")
    assert obsql.vector_search(1, approximate=False).endswith(
        "ORDER BY l2_distance(embedding, %s) LIMIT %s")
    assert obsql.head_vectors() == (
        "SELECT entry_version_id, embedding_content_hash, embedding FROM memory_entry_heads "
        "WHERE memory_artifact_id = %s AND embedding IS NOT NULL "
        "AND embedding_content_hash IS NOT NULL")
    assert obsql.vector_count(1) == (
        "SELECT COUNT(*) FROM memory_entry_heads WHERE memory_artifact_id IN (%s) "
        "AND embedding IS NOT NULL")
    with pytest.raises(ValueError):
        obsql.fts_search(0)


def test_write_statements():
    assert obsql.heads_delete(2) == (
        "DELETE FROM memory_entry_heads WHERE memory_artifact_id = %s AND entry_id IN (%s, %s)")
    assert obsql.heads_insert(True) == (
        "INSERT INTO memory_entry_heads (memory_artifact_id, head_revision, entry_id, "
        "entry_version_id, entry_content_hash, searchable_text, embedding_content_hash, "
        "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")
    assert obsql.heads_insert(False).endswith("VALUES (%s, %s, %s, %s, %s, %s)")
    assert obsql.meta_upsert() == (
        "INSERT INTO powercontext_meta (`key`, `value`) VALUES (%s, %s) "
        "ON DUPLICATE KEY UPDATE `value` = VALUES(`value`)")
    assert obsql.journal_lock() == (
        "SELECT `value` FROM powercontext_meta WHERE `key` = 'journal_lock' FOR UPDATE")


def test_probe_statements_and_vector_literal():
    create, insert, search, drop = obsql.vector_probe_statements("powercontext_probe_ab12", 3)
    assert create == ("CREATE TABLE powercontext_probe_ab12 (id BIGINT NOT NULL, "
                      "embedding VECTOR(3), PRIMARY KEY (id), VECTOR INDEX vidx_probe "
                      "(embedding) WITH (distance=L2, type=hnsw))")
    assert search == ("SELECT id, l2_distance(embedding, %s) FROM powercontext_probe_ab12 "
                      "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT 1")
    assert drop == "DROP TABLE IF EXISTS powercontext_probe_ab12"
    assert insert.count("%s") == 4
    for bad in ("memory_entry_heads", "powercontext_probe_x; DROP TABLE y"):
        with pytest.raises(ValueError):
            obsql.vector_probe_statements(bad, 3)
    assert obsql.vector_literal((1.0, -0.5, 1e-20)) == "[1.0,-0.5,1e-20]"
    assert obsql.tokenize() == (
        "SELECT TOKENIZE(%s, 'space', '[{\"additional_args\":[{\"min_token_size\": 1}]}]')")
    assert obsql.abandoned_sessions() == (
        "SELECT ID FROM oceanbase.V$OB_PROCESSLIST WHERE USER = SUBSTRING_INDEX("
        "CURRENT_USER(), '@', 1) AND DB = DATABASE() AND COMMAND = 'Sleep' AND "
        "TRANS_STATE = 'ACTIVE' AND TIME >= %s AND ID <> CONNECTION_ID()")
