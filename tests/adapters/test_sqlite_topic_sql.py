"""Golden strings of every Topic Memory SQL statement, per dialect (ARCHITECTURE.md,
"SQL"), and every SQLite Topic statement executed on APSW with sqlite-vec loaded.

A change in sqlglot's rendering, a Topic template or a Topic fragment shows up here as
a diff (the Memory statements are pinned by test_sql_golden.py).
"""

from __future__ import annotations

import datetime
import struct
from pathlib import Path

import apsw
import pytest
import sqlite_vec

from powercontext.adapters.sqlite import SQLiteMemoryBackend, SQLiteTopicBackend
from powercontext.adapters.storage.rows import utc_text
from powercontext.core.errors import BackendError
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

from .conftest import PROFILE
from .topic_helpers import run

GOLDEN_TOPIC_SQLITE = {
    'create_topic_lineage_sources': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_lineage_sources" ("artifact_id" TEXT NOT NULL, '
        '"revision" INTEGER NOT NULL, "source_id" TEXT NOT NULL, "source_content_hash" TEXT NOT '
        'NULL, PRIMARY KEY ("artifact_id", "revision", "source_id"), FOREIGN KEY ("artifact_id", '
        '"revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"), FOREIGN KEY '
        '("source_id") REFERENCES "sources" ("source_id"))'
    ),
    'create_topic_lineage_artifacts': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_lineage_artifacts" ("artifact_id" TEXT NOT NULL, '
        '"revision" INTEGER NOT NULL, "based_on_family" TEXT NOT NULL, "based_on_artifact_id" TEXT '
        'NOT NULL, "based_on_revision" INTEGER NOT NULL, PRIMARY KEY ("artifact_id", "revision", '
        '"based_on_artifact_id", "based_on_revision"), FOREIGN KEY ("artifact_id", "revision") '
        'REFERENCES "artifact_revisions" ("artifact_id", "revision"), FOREIGN KEY '
        '("based_on_artifact_id", "based_on_revision") REFERENCES "artifact_revisions" '
        '("artifact_id", "revision"))'
    ),
    'create_topic_retrieval_shape': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_retrieval_shape" ("shape_key" TEXT NOT NULL '
        'PRIMARY KEY, "kind" TEXT NOT NULL, "chunk_policy" TEXT NOT NULL, "analyzer_version" TEXT '
        'NOT NULL, "embedding_profile" TEXT, "profile_fingerprint" TEXT)'
    ),
    'create_topic_publications': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_revision_publications" ("artifact_id" TEXT '
        'NOT NULL, "revision" INTEGER NOT NULL, "scope_id" TEXT NOT NULL, "published_at" TEXT NOT '
        'NULL, PRIMARY KEY ("artifact_id", "revision"), FOREIGN KEY ("artifact_id", "revision") '
        'REFERENCES "artifact_revisions" ("artifact_id", "revision"))'
    ),
    'create_topic_active_topics': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_active_topics" ("topic_rowid" INTEGER NOT '
        'NULL PRIMARY KEY AUTOINCREMENT, "artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, '
        '"scope_id" TEXT NOT NULL, "title" TEXT NOT NULL, "summary" TEXT NOT NULL, "fts_text" TEXT '
        'NOT NULL, "source_count" INTEGER NOT NULL, "embedding_fingerprint" TEXT, UNIQUE '
        '("artifact_id"), FOREIGN KEY ("artifact_id", "revision") REFERENCES "artifact_revisions" '
        '("artifact_id", "revision"))'
    ),
    'create_topic_active_topics_scope_index': (
        'CREATE INDEX IF NOT EXISTS "idx_pc_topic_memory_active_topics_scope" ON '
        '"pc_topic_memory_active_topics"("scope_id", "artifact_id")'
    ),
    'create_topic_active_chunks': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_active_chunks" ("chunk_rowid" INTEGER NOT '
        'NULL PRIMARY KEY AUTOINCREMENT, "artifact_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, '
        '"ordinal" INTEGER NOT NULL, "scope_id" TEXT NOT NULL, "start_offset" INTEGER NOT NULL, '
        '"end_offset" INTEGER NOT NULL, "snippet_text" TEXT NOT NULL, "fts_text" TEXT NOT NULL, '
        '"embedding_fingerprint" TEXT, UNIQUE ("artifact_id", "ordinal"), FOREIGN KEY '
        '("artifact_id") REFERENCES "pc_topic_memory_active_topics" ("artifact_id"), FOREIGN KEY '
        '("artifact_id", "revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"))'
    ),
    'topic_shape_get': (
        'SELECT "kind", "chunk_policy", "analyzer_version", "embedding_profile", '
        '"profile_fingerprint" FROM "pc_topic_memory_retrieval_shape" WHERE "shape_key" = ?'
    ),
    'topic_shape_delete': (
        'DELETE FROM "pc_topic_memory_retrieval_shape" WHERE "shape_key" = ?'
    ),
    'topic_shape_insert': (
        'INSERT INTO "pc_topic_memory_retrieval_shape" ("shape_key", "kind", "chunk_policy", '
        '"analyzer_version", "embedding_profile", "profile_fingerprint") VALUES (?, ?, ?, ?, ?, ?)'
    ),
    'topic_head_count': (
        'SELECT COUNT(*) FROM "artifact_heads" AS "h" JOIN "artifact_revisions" AS "r" ON '
        '"r"."artifact_id" = "h"."artifact_id" AND "r"."revision" = "h"."revision" WHERE '
        '"r"."family" = ?'
    ),
    'topic_head_get': (
        'SELECT "h"."revision", "r"."family" FROM "artifact_heads" AS "h" JOIN '
        '"artifact_revisions" AS "r" ON "r"."artifact_id" = "h"."artifact_id" AND "r"."revision" = '
        '"h"."revision" WHERE "h"."artifact_id" = ?'
    ),
    'topic_heads_by_scope': (
        'SELECT "h"."artifact_id", "h"."revision" FROM "artifact_heads" AS "h" JOIN '
        '"pc_topic_memory_revision_publications" AS "p" ON "p"."artifact_id" = "h"."artifact_id" '
        'AND "p"."revision" = "h"."revision" WHERE "p"."scope_id" = ? ORDER BY "h"."artifact_id"'
    ),
    'topic_revision_get': (
        'SELECT "artifact_id", "revision", "family", "content_encoding", "content", '
        '"content_hash", "lineage" FROM "artifact_revisions" WHERE "artifact_id" = ? AND '
        '"revision" = ? AND "family" = ?'
    ),
    'topic_lineage_source_insert': (
        'INSERT INTO "pc_artifact_lineage_sources" ("artifact_id", "revision", "source_id", '
        '"source_content_hash") VALUES (?, ?, ?, ?)'
    ),
    'topic_lineage_artifact_insert': (
        'INSERT INTO "pc_artifact_lineage_artifacts" ("artifact_id", "revision", '
        '"based_on_family", "based_on_artifact_id", "based_on_revision") VALUES (?, ?, ?, ?, ?)'
    ),
    'topic_lineage_sources_get': (
        'SELECT "source_id", "source_content_hash" FROM "pc_artifact_lineage_sources" WHERE '
        '"artifact_id" = ? AND "revision" = ? ORDER BY "source_id"'
    ),
    'topic_lineage_artifacts_get': (
        'SELECT "based_on_family", "based_on_artifact_id", "based_on_revision" FROM '
        '"pc_artifact_lineage_artifacts" WHERE "artifact_id" = ? AND "revision" = ? ORDER BY '
        '"based_on_artifact_id", "based_on_revision"'
    ),
    'topic_source_hashes': (
        'SELECT "source_id", "content_hash" FROM "sources" WHERE "source_id" IN (?, ?, ?, ?)'
    ),
    'topic_publication_insert': (
        'INSERT INTO "pc_topic_memory_revision_publications" ("artifact_id", "revision", '
        '"scope_id", "published_at") VALUES (?, ?, ?, ?)'
    ),
    'topic_publication_get': (
        'SELECT "scope_id", "published_at" FROM "pc_topic_memory_revision_publications" WHERE '
        '"artifact_id" = ? AND "revision" = ?'
    ),
    'topic_scope_get': (
        'SELECT "scope_id" FROM "pc_topic_memory_revision_publications" WHERE "artifact_id" = ? '
        'ORDER BY "revision" LIMIT 1'
    ),
    'topic_active_insert': (
        'INSERT INTO "pc_topic_memory_active_topics" ("artifact_id", "revision", "scope_id", '
        '"title", "summary", "fts_text", "source_count", "embedding_fingerprint") VALUES (?, ?, ?, '
        '?, ?, ?, ?, ?)'
    ),
    'topic_active_rowid': (
        'SELECT "topic_rowid" FROM "pc_topic_memory_active_topics" WHERE "artifact_id" = ?'
    ),
    'topic_active_delete': (
        'DELETE FROM "pc_topic_memory_active_topics" WHERE "artifact_id" = ?'
    ),
    'topic_chunk_insert': (
        'INSERT INTO "pc_topic_memory_active_chunks" ("artifact_id", "revision", "ordinal", '
        '"scope_id", "start_offset", "end_offset", "snippet_text", "fts_text", '
        '"embedding_fingerprint") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'
    ),
    'topic_chunk_rowids': (
        'SELECT "chunk_rowid" FROM "pc_topic_memory_active_chunks" WHERE "artifact_id" = ? ORDER '
        'BY "ordinal"'
    ),
    'topic_chunks_delete': (
        'DELETE FROM "pc_topic_memory_active_chunks" WHERE "artifact_id" = ?'
    ),
    'topic_cards': (
        'SELECT "artifact_id", "revision", "title", "summary" FROM "pc_topic_memory_active_topics" '
        'WHERE "scope_id" = ? AND "artifact_id" IN (?, ?, ?, ?)'
    ),
    'topic_chunk_text': (
        'SELECT "snippet_text" FROM "pc_topic_memory_active_chunks" WHERE "artifact_id" = ? AND '
        '"revision" = ? AND "ordinal" = ?'
    ),
    'topic_active_refs': (
        'SELECT "artifact_id", "revision", "scope_id" FROM "pc_topic_memory_active_topics" ORDER '
        'BY "artifact_id"'
    ),
    'topic_active_fts_row': (
        'SELECT "topic_rowid", "scope_id" FROM "pc_topic_memory_active_topics" WHERE '
        '"artifact_id" = ? AND "revision" = ?'
    ),
    'topic_active_fts_update': (
        'UPDATE "pc_topic_memory_active_topics" SET "fts_text" = ? WHERE "topic_rowid" = ?'
    ),
    'topic_chunk_fts_rows': (
        'SELECT "chunk_rowid", "ordinal" FROM "pc_topic_memory_active_chunks" WHERE '
        '"artifact_id" = ? AND "revision" = ? ORDER BY "ordinal"'
    ),
    'topic_chunk_fts_update': (
        'UPDATE "pc_topic_memory_active_chunks" SET "fts_text" = ? WHERE "chunk_rowid" = ?'
    ),
    'topic_active_count': (
        'SELECT COUNT(*) FROM "pc_topic_memory_active_topics"'
    ),
    'topic_chunk_count': (
        'SELECT COUNT(*) FROM "pc_topic_memory_active_chunks"'
    ),
    'topic_stale_fingerprints': (
        'SELECT (SELECT COUNT(*) FROM "pc_topic_memory_active_topics" WHERE '
        '"embedding_fingerprint" IS NULL OR "embedding_fingerprint" <> ?) + (SELECT COUNT(*) FROM '
        '"pc_topic_memory_active_chunks" WHERE "embedding_fingerprint" IS NULL OR '
        '"embedding_fingerprint" <> ?)'
    ),
    'budget_get': (
        'SELECT "scope_id", "binding_name", "source_after", "furthest_through", "attempt_id", '
        '"attempt_count", "reserved_requests", "reserved_tokens", "failure_code" FROM '
        '"pc_topic_memory_work_budgets" WHERE "scope_id" = ? AND "binding_name" = ? AND '
        '"source_after" = ?'
    ),
    'budget_insert': (
        'INSERT INTO "pc_topic_memory_work_budgets" ("scope_id", "binding_name", '
        '"source_after", "furthest_through", "attempt_id", "attempt_count", '
        '"reserved_requests", "reserved_tokens", "failure_code") VALUES (?, ?, ?, ?, ?, ?, ?, '
        '?, ?)'
    ),
    'budget_update': (
        'UPDATE "pc_topic_memory_work_budgets" SET "furthest_through" = ?, "attempt_id" = ?, '
        '"attempt_count" = ?, "reserved_requests" = ?, "reserved_tokens" = ?, "failure_code" = '
        '? WHERE "scope_id" = ? AND "binding_name" = ? AND "source_after" = ?'
    ),
    'budget_delete': (
        'DELETE FROM "pc_topic_memory_work_budgets" WHERE "scope_id" = ? AND "binding_name" = ?'
        ' AND "source_after" = ? AND "attempt_id" = ?'
    ),
    'guard_cursor_get': (
        'SELECT "source_position" FROM "pc_source_cursors" WHERE "binding_name" = ? AND '
        '"scope_id" = ?'
    ),
    'guard_cursor_insert': (
        'INSERT INTO "pc_source_cursors" ("binding_name", "scope_id", "source_position") VALUES'
        ' (?, ?, ?)'
    ),
    'guard_cursor_cas': (
        'UPDATE "pc_source_cursors" SET "source_position" = ? WHERE "binding_name" = ? AND '
        '"scope_id" = ? AND "source_position" = ?'
    ),
    'guard_pending_get': (
        'SELECT "source_through", "flush_generation", "handled_flush_generation" FROM '
        '"pc_artifact_processing_pending" WHERE "binding_name" = ? AND "scope_id" = ?'
    ),
    'guard_pending_handled': (
        'UPDATE "pc_artifact_processing_pending" SET "handled_flush_generation" = ? WHERE '
        '"binding_name" = ? AND "scope_id" = ?'
    ),
    'guard_pending_delete': (
        'DELETE FROM "pc_artifact_processing_pending" WHERE "binding_name" = ? AND "scope_id" ='
        ' ?'
    ),
}

GOLDEN_TOPIC_OCEANBASE = {
    'create_topic_lineage_sources': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_lineage_sources` (`artifact_id` VARCHAR(128) NOT '
        'NULL, `revision` BIGINT NOT NULL, `source_id` VARCHAR(128) NOT NULL, '
        '`source_content_hash` CHAR(64) NOT NULL, PRIMARY KEY (`artifact_id`, `revision`, '
        '`source_id`), FOREIGN KEY (`artifact_id`, `revision`) REFERENCES `artifact_revisions` '
        '(`artifact_id`, `revision`), FOREIGN KEY (`source_id`) REFERENCES `sources` '
        '(`source_id`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_topic_lineage_artifacts': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_lineage_artifacts` (`artifact_id` VARCHAR(128) '
        'NOT NULL, `revision` BIGINT NOT NULL, `based_on_family` VARCHAR(64) NOT NULL, '
        '`based_on_artifact_id` VARCHAR(128) NOT NULL, `based_on_revision` BIGINT NOT NULL, '
        'PRIMARY KEY (`artifact_id`, `revision`, `based_on_artifact_id`, `based_on_revision`), '
        'FOREIGN KEY (`artifact_id`, `revision`) REFERENCES `artifact_revisions` (`artifact_id`, '
        '`revision`), FOREIGN KEY (`based_on_artifact_id`, `based_on_revision`) REFERENCES '
        '`artifact_revisions` (`artifact_id`, `revision`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_topic_retrieval_shape': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_retrieval_shape` (`shape_key` VARCHAR(16) NOT '
        'NULL, `kind` VARCHAR(16) NOT NULL, `chunk_policy` VARCHAR(64) NOT NULL, '
        '`analyzer_version` VARCHAR(64) NOT NULL, `embedding_profile` LONGTEXT, '
        '`profile_fingerprint` CHAR(64), PRIMARY KEY (`shape_key`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_topic_publications': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_revision_publications` (`artifact_id` '
        'VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, `scope_id` VARCHAR(256) NOT NULL, '
        '`published_at` VARCHAR(32) NOT NULL, PRIMARY KEY (`artifact_id`, `revision`), FOREIGN KEY '
        '(`artifact_id`, `revision`) REFERENCES `artifact_revisions` (`artifact_id`, `revision`)) '
        'DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_topic_active_topics': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_active_topics` (`topic_rowid` BIGINT NOT NULL '
        'AUTO_INCREMENT, `artifact_id` VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, '
        '`scope_id` VARCHAR(256) NOT NULL, `title` LONGTEXT NOT NULL, `summary` LONGTEXT NOT NULL, '
        '`fts_text` LONGTEXT NOT NULL, `source_count` BIGINT NOT NULL, `embedding_fingerprint` '
        'CHAR(64), PRIMARY KEY (`topic_rowid`), UNIQUE (`artifact_id`), FOREIGN KEY '
        '(`artifact_id`, `revision`) REFERENCES `artifact_revisions` (`artifact_id`, `revision`)) '
        'DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_topic_active_topics_scope_index': (
        'CREATE INDEX IF NOT EXISTS `idx_pc_topic_memory_active_topics_scope` ON '
        '`pc_topic_memory_active_topics`(`scope_id`, `artifact_id`)'
    ),
    'create_topic_active_chunks': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_active_chunks` (`chunk_rowid` BIGINT NOT NULL '
        'AUTO_INCREMENT, `artifact_id` VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, '
        '`ordinal` BIGINT NOT NULL, `scope_id` VARCHAR(256) NOT NULL, `start_offset` BIGINT NOT '
        'NULL, `end_offset` BIGINT NOT NULL, `snippet_text` LONGTEXT NOT NULL, `fts_text` LONGTEXT '
        'NOT NULL, `embedding_fingerprint` CHAR(64), PRIMARY KEY (`chunk_rowid`), UNIQUE '
        '(`artifact_id`, `ordinal`), FOREIGN KEY (`artifact_id`) REFERENCES '
        '`pc_topic_memory_active_topics` (`artifact_id`), FOREIGN KEY (`artifact_id`, `revision`) '
        'REFERENCES `artifact_revisions` (`artifact_id`, `revision`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'topic_shape_get': (
        'SELECT `kind`, `chunk_policy`, `analyzer_version`, `embedding_profile`, '
        '`profile_fingerprint` FROM `pc_topic_memory_retrieval_shape` WHERE `shape_key` = %s'
    ),
    'topic_shape_delete': (
        'DELETE FROM `pc_topic_memory_retrieval_shape` WHERE `shape_key` = %s'
    ),
    'topic_shape_insert': (
        'INSERT INTO `pc_topic_memory_retrieval_shape` (`shape_key`, `kind`, `chunk_policy`, '
        '`analyzer_version`, `embedding_profile`, `profile_fingerprint`) VALUES (%s, %s, %s, %s, '
        '%s, %s)'
    ),
    'topic_head_count': (
        'SELECT COUNT(*) FROM `artifact_heads` AS `h` JOIN `artifact_revisions` AS `r` ON '
        '`r`.`artifact_id` = `h`.`artifact_id` AND `r`.`revision` = `h`.`revision` WHERE '
        '`r`.`family` = %s'
    ),
    'topic_head_get': (
        'SELECT `h`.`revision`, `r`.`family` FROM `artifact_heads` AS `h` JOIN '
        '`artifact_revisions` AS `r` ON `r`.`artifact_id` = `h`.`artifact_id` AND `r`.`revision` = '
        '`h`.`revision` WHERE `h`.`artifact_id` = %s'
    ),
    'topic_heads_by_scope': (
        'SELECT `h`.`artifact_id`, `h`.`revision` FROM `artifact_heads` AS `h` JOIN '
        '`pc_topic_memory_revision_publications` AS `p` ON `p`.`artifact_id` = `h`.`artifact_id` '
        'AND `p`.`revision` = `h`.`revision` WHERE `p`.`scope_id` = %s ORDER BY `h`.`artifact_id`'
    ),
    'topic_revision_get': (
        'SELECT `artifact_id`, `revision`, `family`, `content_encoding`, `content`, '
        '`content_hash`, `lineage` FROM `artifact_revisions` WHERE `artifact_id` = %s AND '
        '`revision` = %s AND `family` = %s'
    ),
    'topic_lineage_source_insert': (
        'INSERT INTO `pc_artifact_lineage_sources` (`artifact_id`, `revision`, `source_id`, '
        '`source_content_hash`) VALUES (%s, %s, %s, %s)'
    ),
    'topic_lineage_artifact_insert': (
        'INSERT INTO `pc_artifact_lineage_artifacts` (`artifact_id`, `revision`, '
        '`based_on_family`, `based_on_artifact_id`, `based_on_revision`) VALUES (%s, %s, %s, %s, '
        '%s)'
    ),
    'topic_lineage_sources_get': (
        'SELECT `source_id`, `source_content_hash` FROM `pc_artifact_lineage_sources` WHERE '
        '`artifact_id` = %s AND `revision` = %s ORDER BY `source_id`'
    ),
    'topic_lineage_artifacts_get': (
        'SELECT `based_on_family`, `based_on_artifact_id`, `based_on_revision` FROM '
        '`pc_artifact_lineage_artifacts` WHERE `artifact_id` = %s AND `revision` = %s ORDER BY '
        '`based_on_artifact_id`, `based_on_revision`'
    ),
    'topic_source_hashes': (
        'SELECT `source_id`, `content_hash` FROM `sources` WHERE `source_id` IN (%s, %s, %s, %s)'
    ),
    'topic_publication_insert': (
        'INSERT INTO `pc_topic_memory_revision_publications` (`artifact_id`, `revision`, '
        '`scope_id`, `published_at`) VALUES (%s, %s, %s, %s)'
    ),
    'topic_publication_get': (
        'SELECT `scope_id`, `published_at` FROM `pc_topic_memory_revision_publications` WHERE '
        '`artifact_id` = %s AND `revision` = %s'
    ),
    'topic_scope_get': (
        'SELECT `scope_id` FROM `pc_topic_memory_revision_publications` WHERE `artifact_id` = %s '
        'ORDER BY `revision` LIMIT 1'
    ),
    'topic_active_insert': (
        'INSERT INTO `pc_topic_memory_active_topics` (`artifact_id`, `revision`, `scope_id`, '
        '`title`, `summary`, `fts_text`, `source_count`, `embedding_fingerprint`) VALUES (%s, %s, '
        '%s, %s, %s, %s, %s, %s)'
    ),
    'topic_active_rowid': (
        'SELECT `topic_rowid` FROM `pc_topic_memory_active_topics` WHERE `artifact_id` = %s'
    ),
    'topic_active_delete': (
        'DELETE FROM `pc_topic_memory_active_topics` WHERE `artifact_id` = %s'
    ),
    'topic_chunk_insert': (
        'INSERT INTO `pc_topic_memory_active_chunks` (`artifact_id`, `revision`, `ordinal`, '
        '`scope_id`, `start_offset`, `end_offset`, `snippet_text`, `fts_text`, '
        '`embedding_fingerprint`) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)'
    ),
    'topic_chunk_rowids': (
        'SELECT `chunk_rowid` FROM `pc_topic_memory_active_chunks` WHERE `artifact_id` = %s ORDER '
        'BY `ordinal`'
    ),
    'topic_chunks_delete': (
        'DELETE FROM `pc_topic_memory_active_chunks` WHERE `artifact_id` = %s'
    ),
    'topic_cards': (
        'SELECT `artifact_id`, `revision`, `title`, `summary` FROM `pc_topic_memory_active_topics` '
        'WHERE `scope_id` = %s AND `artifact_id` IN (%s, %s, %s, %s)'
    ),
    'topic_chunk_text': (
        'SELECT `snippet_text` FROM `pc_topic_memory_active_chunks` WHERE `artifact_id` = %s AND '
        '`revision` = %s AND `ordinal` = %s'
    ),
    'topic_active_refs': (
        'SELECT `artifact_id`, `revision`, `scope_id` FROM `pc_topic_memory_active_topics` ORDER '
        'BY `artifact_id`'
    ),
    'topic_active_fts_row': (
        'SELECT `topic_rowid`, `scope_id` FROM `pc_topic_memory_active_topics` WHERE '
        '`artifact_id` = %s AND `revision` = %s'
    ),
    'topic_active_fts_update': (
        'UPDATE `pc_topic_memory_active_topics` SET `fts_text` = %s WHERE `topic_rowid` = %s'
    ),
    'topic_chunk_fts_rows': (
        'SELECT `chunk_rowid`, `ordinal` FROM `pc_topic_memory_active_chunks` WHERE '
        '`artifact_id` = %s AND `revision` = %s ORDER BY `ordinal`'
    ),
    'topic_chunk_fts_update': (
        'UPDATE `pc_topic_memory_active_chunks` SET `fts_text` = %s WHERE `chunk_rowid` = %s'
    ),
    'topic_active_count': (
        'SELECT COUNT(*) FROM `pc_topic_memory_active_topics`'
    ),
    'topic_chunk_count': (
        'SELECT COUNT(*) FROM `pc_topic_memory_active_chunks`'
    ),
    'topic_stale_fingerprints': (
        'SELECT (SELECT COUNT(*) FROM `pc_topic_memory_active_topics` WHERE '
        '`embedding_fingerprint` IS NULL OR `embedding_fingerprint` <> %s) + (SELECT COUNT(*) FROM '
        '`pc_topic_memory_active_chunks` WHERE `embedding_fingerprint` IS NULL OR '
        '`embedding_fingerprint` <> %s)'
    ),
    'budget_get': (
        'SELECT `scope_id`, `binding_name`, `source_after`, `furthest_through`, `attempt_id`, '
        '`attempt_count`, `reserved_requests`, `reserved_tokens`, `failure_code` FROM '
        '`pc_topic_memory_work_budgets` WHERE `scope_id` = %s AND `binding_name` = %s AND '
        '`source_after` = %s'
    ),
    'budget_insert': (
        'INSERT INTO `pc_topic_memory_work_budgets` (`scope_id`, `binding_name`, '
        '`source_after`, `furthest_through`, `attempt_id`, `attempt_count`, '
        '`reserved_requests`, `reserved_tokens`, `failure_code`) VALUES (%s, %s, %s, %s, %s, '
        '%s, %s, %s, %s)'
    ),
    'budget_update': (
        'UPDATE `pc_topic_memory_work_budgets` SET `furthest_through` = %s, `attempt_id` = %s, '
        '`attempt_count` = %s, `reserved_requests` = %s, `reserved_tokens` = %s, `failure_code`'
        ' = %s WHERE `scope_id` = %s AND `binding_name` = %s AND `source_after` = %s'
    ),
    'budget_delete': (
        'DELETE FROM `pc_topic_memory_work_budgets` WHERE `scope_id` = %s AND `binding_name` = '
        '%s AND `source_after` = %s AND `attempt_id` = %s'
    ),
    'guard_cursor_get': (
        'SELECT `source_position` FROM `pc_source_cursors` WHERE `binding_name` = %s AND '
        '`scope_id` = %s'
    ),
    'guard_cursor_insert': (
        'INSERT INTO `pc_source_cursors` (`binding_name`, `scope_id`, `source_position`) VALUES'
        ' (%s, %s, %s)'
    ),
    'guard_cursor_cas': (
        'UPDATE `pc_source_cursors` SET `source_position` = %s WHERE `binding_name` = %s AND '
        '`scope_id` = %s AND `source_position` = %s'
    ),
    'guard_pending_get': (
        'SELECT `source_through`, `flush_generation`, `handled_flush_generation` FROM '
        '`pc_artifact_processing_pending` WHERE `binding_name` = %s AND `scope_id` = %s'
    ),
    'guard_pending_handled': (
        'UPDATE `pc_artifact_processing_pending` SET `handled_flush_generation` = %s WHERE '
        '`binding_name` = %s AND `scope_id` = %s'
    ),
    'guard_pending_delete': (
        'DELETE FROM `pc_artifact_processing_pending` WHERE `binding_name` = %s AND `scope_id` '
        '= %s'
    ),
}

GOLDEN_TOPIC_SQLITE_FRAGMENTS = {
    'topic_create_topic_fts': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "pc_topic_memory_topic_fts" USING '
        'fts5(searchable_text, content=\'\', contentless_delete=1, tokenize="unicode61 '
        'remove_diacritics 0 tokenchars \'_\'")'
    ),
    'topic_create_topic_vector': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "pc_topic_memory_topic_vector" USING vec0(scope text '
        'partition key, embedding float[{dimension:d}] distance_metric=l2, chunk_size=8)'
    ),
    'topic_drop_topic_vector': (
        'DROP TABLE IF EXISTS "pc_topic_memory_topic_vector"'
    ),
    'topic_topic_fts_insert': (
        'INSERT INTO "pc_topic_memory_topic_fts" (rowid, searchable_text) VALUES (?, ?)'
    ),
    'topic_topic_fts_delete': (
        'DELETE FROM "pc_topic_memory_topic_fts" WHERE rowid = ?'
    ),
    'topic_topic_fts_search': (
        'WITH m AS MATERIALIZED (SELECT rowid AS rid, bm25("pc_topic_memory_topic_fts") AS score '
        'FROM "pc_topic_memory_topic_fts" WHERE "pc_topic_memory_topic_fts" MATCH ? ORDER BY '
        'score, rowid LIMIT ? OFFSET ?) SELECT a."artifact_id", a."revision", a."fts_text" FROM m '
        'JOIN "pc_topic_memory_active_topics" AS a ON a."topic_rowid" = m.rid WHERE a."scope_id" = '
        '? ORDER BY m.score, m.rid'
    ),
    'topic_topic_fts_integrity_check': (
        'INSERT INTO "pc_topic_memory_topic_fts" ("pc_topic_memory_topic_fts") VALUES '
        "('integrity-check')"
    ),
    'topic_topic_vector_insert': (
        'INSERT INTO "pc_topic_memory_topic_vector" (rowid, scope, embedding) VALUES (?, ?, ?)'
    ),
    'topic_topic_vector_delete': (
        'DELETE FROM "pc_topic_memory_topic_vector" WHERE rowid = ?'
    ),
    'topic_topic_vector_search': (
        'WITH knn AS MATERIALIZED (SELECT rowid AS rid, distance FROM '
        '"pc_topic_memory_topic_vector" WHERE embedding MATCH ? AND k = ? AND scope = ?) SELECT '
        'a."artifact_id", a."revision", a."fts_text", knn.distance FROM knn JOIN '
        '"pc_topic_memory_active_topics" AS a ON a."topic_rowid" = knn.rid WHERE a."scope_id" = ? '
        'ORDER BY knn.distance, knn.rid'
    ),
    'topic_topic_vector_count': (
        'SELECT count(*) FROM "pc_topic_memory_topic_vector"'
    ),
    'topic_create_chunk_fts': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "pc_topic_memory_chunk_fts" USING '
        'fts5(searchable_text, content=\'\', contentless_delete=1, tokenize="unicode61 '
        'remove_diacritics 0 tokenchars \'_\'")'
    ),
    'topic_create_chunk_vector': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "pc_topic_memory_chunk_vector" USING vec0(scope text '
        'partition key, embedding float[{dimension:d}] distance_metric=l2, chunk_size=8)'
    ),
    'topic_drop_chunk_vector': (
        'DROP TABLE IF EXISTS "pc_topic_memory_chunk_vector"'
    ),
    'topic_chunk_fts_insert': (
        'INSERT INTO "pc_topic_memory_chunk_fts" (rowid, searchable_text) VALUES (?, ?)'
    ),
    'topic_chunk_fts_delete': (
        'DELETE FROM "pc_topic_memory_chunk_fts" WHERE rowid = ?'
    ),
    'topic_chunk_fts_search': (
        'WITH m AS MATERIALIZED (SELECT rowid AS rid, bm25("pc_topic_memory_chunk_fts") AS score '
        'FROM "pc_topic_memory_chunk_fts" WHERE "pc_topic_memory_chunk_fts" MATCH ? ORDER BY '
        'score, rowid LIMIT ? OFFSET ?) SELECT a."artifact_id", a."revision", a."ordinal", '
        'a."fts_text" FROM m JOIN "pc_topic_memory_active_chunks" AS a ON a."chunk_rowid" = m.rid '
        'WHERE a."scope_id" = ? ORDER BY m.score, m.rid'
    ),
    'topic_chunk_fts_integrity_check': (
        'INSERT INTO "pc_topic_memory_chunk_fts" ("pc_topic_memory_chunk_fts") VALUES '
        "('integrity-check')"
    ),
    'topic_chunk_vector_insert': (
        'INSERT INTO "pc_topic_memory_chunk_vector" (rowid, scope, embedding) VALUES (?, ?, ?)'
    ),
    'topic_chunk_vector_delete': (
        'DELETE FROM "pc_topic_memory_chunk_vector" WHERE rowid = ?'
    ),
    'topic_chunk_vector_search': (
        'WITH knn AS MATERIALIZED (SELECT rowid AS rid, distance FROM '
        '"pc_topic_memory_chunk_vector" WHERE embedding MATCH ? AND k = ? AND scope = ?) SELECT '
        'a."artifact_id", a."revision", a."ordinal", a."fts_text", knn.distance FROM knn JOIN '
        '"pc_topic_memory_active_chunks" AS a ON a."chunk_rowid" = knn.rid WHERE a."scope_id" = ? '
        'ORDER BY knn.distance, knn.rid'
    ),
    'topic_chunk_vector_count': (
        'SELECT count(*) FROM "pc_topic_memory_chunk_vector"'
    ),
    'topic_missing_vectors': (
        'SELECT (SELECT count(*) FROM "pc_topic_memory_active_topics" AS a LEFT JOIN '
        '"pc_topic_memory_topic_vector" AS v ON v.rowid = a."topic_rowid" WHERE v.rowid IS NULL OR '
        'a."embedding_fingerprint" IS NULL OR a."embedding_fingerprint" <> ?) + (SELECT count(*) '
        'FROM "pc_topic_memory_active_chunks" AS a LEFT JOIN "pc_topic_memory_chunk_vector" AS v '
        'ON v.rowid = a."chunk_rowid" WHERE v.rowid IS NULL OR a."embedding_fingerprint" IS NULL '
        'OR a."embedding_fingerprint" <> ?)'
    ),
    'topic_now': (
        "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
    ),
    'table_sql': (
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?"
    ),
}


def _n(name: str) -> int | None:
    return 4 if ":ids" in templates._ALL[name] else None


@pytest.mark.parametrize("dialect, golden", [("sqlite", GOLDEN_TOPIC_SQLITE),
                                             ("oceanbase", GOLDEN_TOPIC_OCEANBASE)])
def test_every_topic_template_renders_its_golden_string(dialect: str,
                                                        golden: dict[str, str]) -> None:
    assert set(golden) == set(templates.TOPIC_TEMPLATES)
    for name, sql in golden.items():
        assert templates.render(name, dialect, _n(name)) == sql, name


def test_every_topic_fragment_matches_its_golden_string() -> None:
    assert set(GOLDEN_TOPIC_SQLITE_FRAGMENTS) == set(frag.TOPIC_STATEMENTS)
    for name, sql in GOLDEN_TOPIC_SQLITE_FRAGMENTS.items():
        assert frag.statement(name) == sql, name
    assert frag.topic_vector_ddl("chunk", 384) == (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "pc_topic_memory_chunk_vector" USING vec0('
        "scope text partition key, embedding float[384] distance_metric=l2, chunk_size=8)")
    assert frag.topic_scope_token("repo:/w") == "s_" + __import__("hashlib").sha256(
        b"repo:/w").hexdigest()[:24]


@pytest.mark.parametrize("table, dim", [("memory", 8), ("topic", 0), ("chunk", True),
                                        ("topic", 8.0), ("chunk", 8193)])
def test_topic_vector_ddl_refuses_bad_tables_and_dimensions(table: str, dim: object) -> None:
    with pytest.raises(ValueError):
        frag.topic_vector_ddl(table, dim)  # type: ignore[arg-type]


H = "a" * 64
H2 = "b" * 64


def _vec(*xs: float) -> bytes:
    return struct.pack(f"<{len(xs)}f", *xs)


def test_every_topic_statement_executes_on_apsw_with_sqlite_vec(tmp_path: Path) -> None:
    path = tmp_path / "golden.db"
    backend = SQLiteTopicBackend(str(path), profile=PROFILE)
    run(backend.open())  # creates the schema with every Topic DDL template and fragment
    backend.close_sync()
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute("PRAGMA foreign_keys=ON")
    ran: set[str] = set()

    def t(name: str, params: tuple[object, ...] = (), n: int | None = None) -> list[tuple]:
        ran.add(name)
        return conn.execute(templates.render(name, "sqlite", n), params).fetchall()

    def f(name: str, params: tuple[object, ...] = ()) -> list[tuple]:
        ran.add("fragment:" + name)
        return conn.execute(frag.statement(name), params).fetchall()

    for name in templates.TOPIC_SCHEMA:
        t(name)  # idempotent: IF NOT EXISTS on an existing schema
    for kind in ("topic", "chunk"):
        f(f"topic_create_{kind}_fts")
        ran.add(f"fragment:topic_create_{kind}_vector")
        conn.execute(frag.topic_vector_ddl(kind, PROFILE.dimension))
    conn.execute("BEGIN IMMEDIATE")
    t("topic_shape_delete", ("deployment",))
    t("topic_shape_insert", ("deployment", "fts", "topic-chunks-v1", "v1", None, None))
    assert t("topic_shape_get", ("deployment",)) == [("fts", "topic-chunks-v1", "v1", None, None)]
    conn.execute(templates.render("source_insert", "sqlite"), ("s1", "note", "x", H, None, "[]"))
    assert t("topic_source_hashes", ("s1", "s2", None, None), 4) == [("s1", H)]
    conn.execute(templates.render("revision_insert", "sqlite"),
                 ("topic_art_a", 1, "topic-memory", "identity", b"{}", H, "{}"))
    conn.execute(templates.render("revision_insert", "sqlite"),
                 ("topic_art_a", 2, "topic-memory", "identity", b"{}", H2, "{}"))
    conn.execute(templates.render("head_insert", "sqlite"), ("topic_art_a", 2))
    assert t("topic_head_count", ("topic-memory",)) == [(1,)]
    assert t("topic_head_count", ("memory",)) == [(0,)]
    assert t("topic_head_get", ("topic_art_a",)) == [(2, "topic-memory")]
    t("topic_lineage_source_insert", ("topic_art_a", 1, "s1", H))
    with pytest.raises(apsw.ConstraintError):  # a Source must be stored
        t("topic_lineage_source_insert", ("topic_art_a", 2, "s-missing", H))
    t("topic_lineage_artifact_insert", ("topic_art_a", 2, "topic-memory", "topic_art_a", 1))
    assert t("topic_lineage_sources_get", ("topic_art_a", 1)) == [("s1", H)]
    assert t("topic_lineage_artifacts_get", ("topic_art_a", 2)) == [
        ("topic-memory", "topic_art_a", 1)]
    t("topic_publication_insert", ("topic_art_a", 1, "repo:/w", "2026-01-01T00:00:00.000000Z"))
    t("topic_publication_insert", ("topic_art_a", 2, "repo:/w", "2026-01-02T00:00:00.000000Z"))
    assert t("topic_publication_get", ("topic_art_a", 2)) == [
        ("repo:/w", "2026-01-02T00:00:00.000000Z")]
    assert t("topic_scope_get", ("topic_art_a",)) == [("repo:/w",)]
    assert t("topic_heads_by_scope", ("repo:/w",)) == [("topic_art_a", 2)]
    assert t("topic_revision_get", ("topic_art_a", 2, "topic-memory"))[0][:2] == (
        "topic_art_a", 2)
    assert t("topic_revision_get", ("topic_art_a", 2, "memory")) == []
    fp = "c" * 64
    t("topic_active_insert", ("topic_art_a", 2, "repo:/w", "Title", "Sum", "titl sum", 1, fp))
    rid = conn.last_insert_rowid()
    assert t("topic_active_rowid", ("topic_art_a",)) == [(rid,)]
    t("topic_chunk_insert", ("topic_art_a", 2, 0, "repo:/w", 0, 4, "Body", "bodi", fp))
    cid = conn.last_insert_rowid()
    assert t("topic_chunk_rowids", ("topic_art_a",)) == [(cid,)]
    scope = frag.topic_scope_token("repo:/w")
    f("topic_topic_fts_insert", (rid, frag.fts_document(scope, "titl sum")))
    f("topic_chunk_fts_insert", (cid, frag.fts_document(scope, "bodi")))
    assert f("topic_missing_vectors", (fp, fp)) == [(2,)]  # no vector yet
    f("topic_topic_vector_insert", (rid, scope, _vec(1, 0, 0, 0, 0, 0, 0, 0)))
    f("topic_chunk_vector_insert", (cid, scope, _vec(0, 1, 0, 0, 0, 0, 0, 0)))
    assert f("topic_missing_vectors", (fp, fp)) == [(0,)]
    assert f("topic_missing_vectors", (fp, H)) == [(1,)]  # another fingerprint
    assert t("topic_stale_fingerprints", (fp, fp)) == [(0,)]
    match = frag.fts_match_tokens(frag.scoped_terms(scope, ["titl"]))
    assert f("topic_topic_fts_search", (match, 5, 0, "repo:/w")) == [
        ("topic_art_a", 2, "titl sum")]
    match = frag.fts_match_tokens(frag.scoped_terms(scope, ["bodi"]))
    assert f("topic_chunk_fts_search", (match, 5, 0, "repo:/w")) == [
        ("topic_art_a", 2, 0, "bodi")]
    assert f("topic_topic_vector_search", (_vec(1, 0, 0, 0, 0, 0, 0, 0), 3, scope,
                                           "repo:/w")) == [("topic_art_a", 2, "titl sum", 0.0)]
    assert f("topic_chunk_vector_search", (_vec(0, 1, 0, 0, 0, 0, 0, 0), 3, scope,
                                           "repo:/w")) == [("topic_art_a", 2, 0, "bodi", 0.0)]
    assert f("topic_chunk_vector_search", (_vec(0, 1, 0, 0, 0, 0, 0, 0), 3, "s_other",
                                           "repo:/w")) == []
    assert t("topic_cards", ("repo:/w", "topic_art_a", None, None, None), 4) == [
        ("topic_art_a", 2, "Title", "Sum")]
    assert t("topic_cards", ("repo:/x", "topic_art_a", None, None, None), 4) == []
    assert t("topic_chunk_text", ("topic_art_a", 2, 0)) == [("Body",)]
    # the analyzer migration rewrites the full-text fields in place
    assert t("topic_active_refs") == [("topic_art_a", 2, "repo:/w")]
    assert t("topic_active_fts_row", ("topic_art_a", 2)) == [(rid, "repo:/w")]
    assert t("topic_active_fts_row", ("topic_art_a", 1)) == []
    assert t("topic_chunk_fts_rows", ("topic_art_a", 2)) == [(cid, 0)]
    t("topic_active_fts_update", ("titl sum", rid))
    t("topic_chunk_fts_update", ("bodi", cid))
    assert t("topic_active_count") == [(1,)] and t("topic_chunk_count") == [(1,)]
    assert f("topic_topic_vector_count") == [(1,)] and f("topic_chunk_vector_count") == [(1,)]
    for kind in ("topic", "chunk"):
        f(f"topic_{kind}_fts_integrity_check")
    f("topic_chunk_fts_delete", (cid,))
    f("topic_chunk_vector_delete", (cid,))
    with pytest.raises(apsw.ConstraintError):  # chunks first: they reference the topic row
        t("topic_active_delete", ("topic_art_a",))
    t("topic_chunks_delete", ("topic_art_a",))
    f("topic_topic_fts_delete", (rid,))
    f("topic_topic_vector_delete", (rid,))
    t("topic_active_delete", ("topic_art_a",))
    assert f("topic_topic_vector_count") == [(0,)] and t("topic_active_count") == [(0,)]
    now = f("topic_now")[0][0]
    assert len(now) == 24 and now.endswith("Z")
    assert f("table_sql", (frag.TOPIC_VECTOR_TABLE,))[0][0].count("float[8]") == 1
    for kind in ("topic", "chunk"):
        f(f"topic_drop_{kind}_vector")
    # the durable allowance and the publication guards
    key = ("repo:/w", "topic-memory-source-window", 0)
    t("budget_insert", (*key, 0, "a1", 1, 0, 0, None))
    with pytest.raises(apsw.ConstraintError):  # one row per key
        t("budget_insert", (*key, 0, "a2", 1, 0, 0, None))
    t("budget_update", (3, "a2", 2, 5, 700, "provider_error", *key))
    assert t("budget_get", key) == [(*key, 3, "a2", 2, 5, 700, "provider_error")]
    t("budget_delete", (*key, "a1"))  # another attempt's id deletes nothing
    assert len(t("budget_get", key)) == 1
    t("budget_delete", (*key, "a2"))
    assert t("budget_get", key) == []
    ck = ("topic-memory-source-window", "repo:/w")
    assert t("guard_cursor_get", ck) == []
    t("guard_cursor_insert", (*ck, 2))
    t("guard_cursor_cas", (5, *ck, 1))  # not at 1: no change
    assert t("guard_cursor_get", ck) == [(2,)]
    t("guard_cursor_cas", (5, *ck, 2))
    assert t("guard_cursor_get", ck) == [(5,)]
    conn.execute(templates.render("pending_insert", "sqlite"), (*ck, 6, 2, 0))
    assert t("guard_pending_get", ck) == [(6, 2, 0)]
    t("guard_pending_handled", (2, *ck))
    with pytest.raises(apsw.ConstraintError):  # handled <= flush_generation
        t("guard_pending_handled", (3, *ck))
    assert t("guard_pending_get", ck) == [(6, 2, 2)]
    t("guard_pending_delete", ck)
    assert t("guard_pending_get", ck) == []
    conn.execute("ROLLBACK")
    conn.close()
    assert ran == set(templates.TOPIC_TEMPLATES) | {
        "fragment:" + s for s in frag.TOPIC_STATEMENTS}


def test_database_times_render_with_six_fractional_digits() -> None:
    assert utc_text("2026-12-01T13:40:12.345Z") == "2026-12-01T13:40:12.345000Z"
    assert utc_text("2026-12-01 13:40:12") == "2026-12-01T13:40:12.000000Z"
    assert utc_text(b"2026-12-01 13:40:12.123456") == "2026-12-01T13:40:12.123456Z"
    assert utc_text(datetime.datetime(2026, 12, 1, 13, 40, 12, 7)) == (
        "2026-12-01T13:40:12.000007Z")
    for bad in ("yesterday", "2026-12-01T13:40:12.1234567Z", 12, None):
        with pytest.raises(BackendError):
            utc_text(bad)


def test_an_old_database_with_the_fts5vocab_table_still_opens_and_new_ones_lack_it(
        tmp_path: Path) -> None:
    old = tmp_path / "old.db"

    async def make(p: Path):
        m = SQLiteMemoryBackend(str(p))
        await m.open()
        await m.close()
    run(make(old))
    conn = apsw.Connection(str(old))
    conn.execute(f'CREATE VIRTUAL TABLE "memory_entry_search_fts_vocab" USING '
                 f'fts5vocab("{frag.FTS_TABLE}", \'row\')')
    conn.close()
    run(make(old))  # opens
    new = tmp_path / "new.db"
    run(make(new))
    conn = apsw.Connection(str(new))
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "memory_entry_search_fts_vocab" not in names


def test_the_sqlite_topic_backend_implements_the_port(tmp_path: Path) -> None:
    from powercontext.ports.topic import TopicMemoryBackend

    b = SQLiteTopicBackend(str(tmp_path / "port.db"))
    assert isinstance(b, TopicMemoryBackend)
    caps = run(b.topic_capabilities())
    assert caps.shape is None and caps.pending_kind == "fts"
    b.close_sync()
