"""Golden strings of every rendered SQL statement, per dialect (ARCHITECTURE.md, "SQL"),
and every SQLite statement executed on APSW with sqlite-vec loaded.

A change in sqlglot's rendering, a template or a fragment shows up here as a diff.
"""

from __future__ import annotations

import struct
from pathlib import Path

import apsw
import pytest
import sqlite_vec

from powercontext.adapters.sqlite import SQLiteMemoryBackend
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

from .conftest import PROFILE

GOLDEN_SQLITE = {
    'create_meta': (
        'CREATE TABLE IF NOT EXISTS "powercontext_meta" ("key" TEXT NOT NULL PRIMARY KEY, '
        '"value" TEXT)'
    ),
    'create_artifact_revisions': (
        'CREATE TABLE IF NOT EXISTS "artifact_revisions" ("artifact_id" TEXT NOT NULL, '
        '"revision" INTEGER NOT NULL, "family" TEXT NOT NULL, "content_encoding" TEXT NOT '
        'NULL, "content" BLOB NOT NULL, "content_hash" TEXT NOT NULL, "lineage" TEXT NOT '
        'NULL, PRIMARY KEY ("artifact_id", "revision"))'
    ),
    'create_artifact_heads': (
        'CREATE TABLE IF NOT EXISTS "artifact_heads" ("artifact_id" TEXT NOT NULL PRIMARY '
        'KEY, "revision" INTEGER NOT NULL, FOREIGN KEY ("artifact_id", "revision") '
        'REFERENCES "artifact_revisions" ("artifact_id", "revision"))'
    ),
    'create_sources': (
        'CREATE TABLE IF NOT EXISTS "sources" ("journal_position" INTEGER NOT NULL '
        'PRIMARY KEY AUTOINCREMENT, "source_id" TEXT NOT NULL, "kind" TEXT NOT NULL, '
        '"content" TEXT NOT NULL, "content_hash" TEXT NOT NULL, "uri" TEXT, "metadata" '
        'TEXT NOT NULL, UNIQUE ("source_id"))'
    ),
    'create_memory_entry_versions': (
        'CREATE TABLE IF NOT EXISTS "memory_entry_versions" ("memory_artifact_id" TEXT '
        'NOT NULL, "entry_id" TEXT NOT NULL, "entry_version_id" TEXT NOT NULL PRIMARY '
        'KEY, "version" INTEGER NOT NULL, "previous_version_id" TEXT, "kind" TEXT NOT '
        'NULL, "text" TEXT NOT NULL, "source_refs" TEXT NOT NULL, "artifact_refs" TEXT '
        'NOT NULL, "entry_content_hash" TEXT NOT NULL, "created_in_revision" INTEGER NOT '
        'NULL, UNIQUE ("memory_artifact_id", "entry_id", "version"), UNIQUE '
        '("memory_artifact_id", "entry_id", "entry_version_id"), FOREIGN KEY '
        '("previous_version_id") REFERENCES "memory_entry_versions" ("entry_version_id"), '
        'FOREIGN KEY ("memory_artifact_id", "created_in_revision") REFERENCES '
        '"artifact_revisions" ("artifact_id", "revision"))'
    ),
    'create_memory_entry_versions_hash_index': (
        'CREATE INDEX IF NOT EXISTS "idx_memory_entry_versions_hash" ON '
        '"memory_entry_versions"("memory_artifact_id", "entry_content_hash")'
    ),
    'create_memory_entry_versions_entry_index': (
        'CREATE INDEX IF NOT EXISTS "idx_memory_entry_versions_entry" ON '
        '"memory_entry_versions"("entry_id")'
    ),
    'create_memory_entry_heads': (
        'CREATE TABLE IF NOT EXISTS "memory_entry_heads" ("projection_id" INTEGER NOT '
        'NULL PRIMARY KEY AUTOINCREMENT, "memory_artifact_id" TEXT NOT NULL, '
        '"head_revision" INTEGER NOT NULL, "entry_id" TEXT NOT NULL, "entry_version_id" '
        'TEXT NOT NULL, "entry_content_hash" TEXT NOT NULL, "searchable_text" TEXT NOT '
        'NULL, UNIQUE ("memory_artifact_id", "entry_id"), FOREIGN KEY '
        '("memory_artifact_id", "entry_id", "entry_version_id") REFERENCES '
        '"memory_entry_versions" ("memory_artifact_id", "entry_id", "entry_version_id"))'
    ),
    'create_memory_entry_vector_metadata': (
        'CREATE TABLE IF NOT EXISTS "memory_entry_vector_metadata" ("projection_id" '
        'INTEGER NOT NULL PRIMARY KEY, "entry_version_id" TEXT NOT NULL, '
        '"entry_content_hash" TEXT NOT NULL, "embedding_content_hash" TEXT NOT NULL, '
        'UNIQUE ("entry_version_id"), FOREIGN KEY ("projection_id") REFERENCES '
        '"memory_entry_heads" ("projection_id") ON DELETE CASCADE)'
    ),
    'meta_get': (
        'SELECT "value" FROM "powercontext_meta" WHERE "key" = ?'
    ),
    'meta_delete': (
        'DELETE FROM "powercontext_meta" WHERE "key" = ?'
    ),
    'meta_insert': (
        'INSERT INTO "powercontext_meta" ("key", "value") VALUES (?, ?)'
    ),
    'head_get': (
        'SELECT "revision" FROM "artifact_heads" WHERE "artifact_id" = ?'
    ),
    'head_insert': (
        'INSERT INTO "artifact_heads" ("artifact_id", "revision") VALUES (?, ?)'
    ),
    'head_cas': (
        'UPDATE "artifact_heads" SET "revision" = ? WHERE "artifact_id" = ? AND '
        '"revision" = ?'
    ),
    'revision_hash_update': (
        'UPDATE "artifact_revisions" SET "content_hash" = ? WHERE "artifact_id" = ? AND '
        '"revision" = ? AND "content_hash" = ?'
    ),
    'revision_insert': (
        'INSERT INTO "artifact_revisions" ("artifact_id", "revision", "family", '
        '"content_encoding", "content", "content_hash", "lineage") VALUES (?, ?, ?, ?, ?, '
        '?, ?)'
    ),
    'revision_range': (
        'SELECT "artifact_id", "revision", "family", "content_encoding", "content", '
        '"content_hash", "lineage" FROM "artifact_revisions" WHERE "artifact_id" = ? AND '
        '"revision" > ? AND "revision" <= ? ORDER BY "revision"'
    ),
    'versions_by_id': (
        'SELECT "memory_artifact_id", "entry_id", "entry_version_id", "version", '
        '"previous_version_id", "kind", "text", "source_refs", "artifact_refs", '
        '"entry_content_hash", "created_in_revision" FROM "memory_entry_versions" WHERE '
        '"entry_version_id" IN (?, ?, ?, ?)'
    ),
    'version_insert': (
        'INSERT INTO "memory_entry_versions" ("memory_artifact_id", "entry_id", '
        '"entry_version_id", "version", "previous_version_id", "kind", "text", '
        '"source_refs", "artifact_refs", "entry_content_hash", "created_in_revision") '
        'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
    ),
    'entry_ids_elsewhere': (
        'SELECT DISTINCT "entry_id" FROM "memory_entry_versions" WHERE '
        '"memory_artifact_id" <> ? AND "entry_id" IN (?, ?, ?, ?)'
    ),
    'head_projection_ids': (
        'SELECT "projection_id" FROM "memory_entry_heads" WHERE "memory_artifact_id" = ? '
        'AND "entry_id" IN (?, ?, ?, ?)'
    ),
    'head_rows_delete': (
        'DELETE FROM "memory_entry_heads" WHERE "projection_id" IN (?, ?, ?, ?)'
    ),
    'head_row_insert': (
        'INSERT INTO "memory_entry_heads" ("memory_artifact_id", "head_revision", '
        '"entry_id", "entry_version_id", "entry_content_hash", "searchable_text") VALUES '
        '(?, ?, ?, ?, ?, ?)'
    ),
    'heads_by_projection_id': (
        'SELECT "projection_id", "memory_artifact_id", "entry_id", "entry_version_id", '
        '"entry_content_hash", "searchable_text" FROM "memory_entry_heads" WHERE '
        '"projection_id" IN (?, ?, ?, ?)'
    ),
    'vector_metadata_delete': (
        'DELETE FROM "memory_entry_vector_metadata" WHERE "projection_id" IN (?, ?, ?, ?)'
    ),
    'vector_metadata_insert': (
        'INSERT INTO "memory_entry_vector_metadata" ("projection_id", "entry_version_id", '
        '"entry_content_hash", "embedding_content_hash") VALUES (?, ?, ?, ?)'
    ),
    'all_heads': (
        'SELECT "h"."artifact_id", "h"."revision" FROM "artifact_heads" AS "h" JOIN '
        '"artifact_revisions" AS "r" ON "r"."artifact_id" = "h"."artifact_id" AND '
        '"r"."revision" = "h"."revision" WHERE "r"."family" = ? ORDER BY '
        '"h"."artifact_id"'
    ),
    'memory_projection_ids': (
        'SELECT "projection_id" FROM "memory_entry_heads" WHERE "memory_artifact_id" = ?'
    ),
    'memory_head_count': (
        'SELECT COUNT(*) FROM "memory_entry_heads" WHERE "memory_artifact_id" = ?'
    ),
    'drop_memory_entry_vector_metadata': (
        'DROP TABLE IF EXISTS "memory_entry_vector_metadata"'
    ),
    'source_insert': (
        'INSERT INTO "sources" ("source_id", "kind", "content", "content_hash", "uri", '
        '"metadata") VALUES (?, ?, ?, ?, ?, ?)'
    ),
    'sources_by_id': (
        'SELECT "journal_position", "source_id", "kind", "content", "content_hash", '
        '"uri", "metadata" FROM "sources" WHERE "source_id" IN (?, ?, ?, ?)'
    ),
    'journal': (
        'SELECT "journal_position", "source_id", "kind", "content", "content_hash", '
        '"uri", "metadata" FROM "sources" WHERE "journal_position" > ? ORDER BY '
        '"journal_position" LIMIT ?'
    ),
    'create_memory_manifest_items': (
        'CREATE TABLE IF NOT EXISTS "memory_manifest_items" ("memory_artifact_id" TEXT NOT '
        'NULL, "entry_id" TEXT NOT NULL, "revision" INTEGER NOT NULL, "entry_version_id" TEXT '
        'NOT NULL, "entry_content_hash" TEXT NOT NULL, "state" TEXT NOT NULL, PRIMARY KEY '
        '("memory_artifact_id", "entry_id", "revision"), FOREIGN KEY ("memory_artifact_id", '
        '"revision") REFERENCES "artifact_revisions" ("artifact_id", "revision"))'
    ),
    'create_memory_manifest_items_revision_index': (
        'CREATE INDEX IF NOT EXISTS "idx_memory_manifest_items_revision" ON '
        '"memory_manifest_items"("memory_artifact_id", "revision")'
    ),
    'create_memory_manifest_baselines': (
        'CREATE TABLE IF NOT EXISTS "memory_manifest_baselines" ("memory_artifact_id" TEXT '
        'NOT NULL, "revision" INTEGER NOT NULL, PRIMARY KEY ("memory_artifact_id", '
        '"revision"), FOREIGN KEY ("memory_artifact_id", "revision") REFERENCES '
        '"artifact_revisions" ("artifact_id", "revision"))'
    ),
    'create_memory_vector_gaps': (
        'CREATE TABLE IF NOT EXISTS "memory_vector_gaps" ("memory_artifact_id" TEXT NOT NULL '
        'PRIMARY KEY, "head_revision" INTEGER NOT NULL, "projection_generation" TEXT NOT '
        'NULL, "missing" INTEGER NOT NULL)'
    ),
    'create_memory_keys': (
        'CREATE TABLE IF NOT EXISTS "memory_keys" ("key" TEXT NOT NULL PRIMARY KEY, '
        '"artifact_id" TEXT NOT NULL, FOREIGN KEY ("artifact_id") REFERENCES '
        '"artifact_heads" ("artifact_id"))'
    ),
    'manifest_item_insert': (
        'INSERT INTO "memory_manifest_items" ("memory_artifact_id", "entry_id", "revision", '
        '"entry_version_id", "entry_content_hash", "state") VALUES (?, ?, ?, ?, ?, ?)'
    ),
    'manifest_items_range': (
        'SELECT "entry_id", "revision", "entry_version_id", "entry_content_hash", "state" '
        'FROM "memory_manifest_items" WHERE "memory_artifact_id" = ? AND "revision" >= ? AND '
        '"revision" <= ? ORDER BY "entry_id", "revision"'
    ),
    'manifest_items_changed': (
        'SELECT "entry_id", "revision", "entry_version_id", "entry_content_hash", "state" '
        'FROM "memory_manifest_items" WHERE "memory_artifact_id" = ? AND "revision" > ? AND '
        '"revision" <= ? ORDER BY "revision", "entry_id"'
    ),
    'manifest_items_of': (
        'SELECT "entry_id", "revision", "entry_version_id", "entry_content_hash", "state" '
        'FROM "memory_manifest_items" WHERE "memory_artifact_id" = ? AND "revision" <= ? AND '
        '"entry_id" IN (?, ?, ?, ?)'
    ),
    'manifest_baseline_insert': (
        'INSERT INTO "memory_manifest_baselines" ("memory_artifact_id", "revision") VALUES '
        '(?, ?)'
    ),
    'manifest_baselines_upto': (
        'SELECT MAX("revision") FROM "memory_manifest_baselines" WHERE "memory_artifact_id" = '
        '? AND "revision" <= ?'
    ),
    'manifest_baselines_first': (
        'SELECT "memory_artifact_id", MIN("revision") FROM "memory_manifest_baselines" WHERE '
        '"memory_artifact_id" IN (?, ?, ?, ?) GROUP BY "memory_artifact_id"'
    ),
    'create_memory_manifest_packs': (
        'CREATE TABLE IF NOT EXISTS "memory_manifest_packs" ("memory_artifact_id" TEXT NOT '
        'NULL, "first_entry_id" TEXT NOT NULL, "item_count" INTEGER NOT NULL, "items" BLOB NOT '
        'NULL, PRIMARY KEY ("memory_artifact_id", "first_entry_id"))'
    ),
    'create_memory_manifest_pack_heads': (
        'CREATE TABLE IF NOT EXISTS "memory_manifest_pack_heads" ("memory_artifact_id" TEXT '
        'NOT NULL PRIMARY KEY, "revision" INTEGER NOT NULL)'
    ),
    'manifest_pack_head_get': (
        'SELECT "revision" FROM "memory_manifest_pack_heads" WHERE "memory_artifact_id" = ?'
    ),
    'manifest_pack_head_delete': (
        'DELETE FROM "memory_manifest_pack_heads" WHERE "memory_artifact_id" = ?'
    ),
    'manifest_pack_head_insert': (
        'INSERT INTO "memory_manifest_pack_heads" ("memory_artifact_id", "revision") VALUES '
        '(?, ?)'
    ),
    'manifest_packs_get': (
        'SELECT "first_entry_id", "item_count", "items" FROM "memory_manifest_packs" WHERE '
        '"memory_artifact_id" = ?'
    ),
    'manifest_pack_firsts': (
        'SELECT "first_entry_id" FROM "memory_manifest_packs" WHERE "memory_artifact_id" = ?'
    ),
    'manifest_pack_insert': (
        'INSERT INTO "memory_manifest_packs" ("memory_artifact_id", "first_entry_id", '
        '"item_count", "items") VALUES (?, ?, ?, ?)'
    ),
    'manifest_pack_delete': (
        'DELETE FROM "memory_manifest_packs" WHERE "memory_artifact_id" = ? AND '
        '"first_entry_id" = ?'
    ),
    'manifest_packs_delete': (
        'DELETE FROM "memory_manifest_packs" WHERE "memory_artifact_id" = ?'
    ),
    'vector_gaps_get': (
        'SELECT "head_revision", "projection_generation", "missing" FROM "memory_vector_gaps" '
        'WHERE "memory_artifact_id" = ?'
    ),
    'vector_gaps_delete': (
        'DELETE FROM "memory_vector_gaps" WHERE "memory_artifact_id" = ?'
    ),
    'vector_gaps_insert': (
        'INSERT INTO "memory_vector_gaps" ("memory_artifact_id", "head_revision", '
        '"projection_generation", "missing") VALUES (?, ?, ?, ?)'
    ),
    'memory_key_get': 'SELECT "artifact_id" FROM "memory_keys" WHERE "key" = ?',
    'memory_key_insert': 'INSERT INTO "memory_keys" ("key", "artifact_id") VALUES (?, ?)',
    'memory_key_delete': 'DELETE FROM "memory_keys" WHERE "key" = ? AND "artifact_id" = ?',
    'memory_keys_all': 'SELECT "key", "artifact_id" FROM "memory_keys" ORDER BY "key"',
}

GOLDEN_OCEANBASE = {
    'create_meta': (
        'CREATE TABLE IF NOT EXISTS `powercontext_meta` (`key` VARCHAR(128) NOT NULL, '
        '`value` LONGTEXT, PRIMARY KEY (`key`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_artifact_revisions': (
        'CREATE TABLE IF NOT EXISTS `artifact_revisions` (`artifact_id` VARCHAR(128) NOT '
        'NULL, `revision` BIGINT NOT NULL, `family` VARCHAR(64) NOT NULL, '
        '`content_encoding` VARCHAR(16) NOT NULL, `content` LONGBLOB NOT NULL, '
        '`content_hash` CHAR(64) NOT NULL, `lineage` LONGTEXT NOT NULL, PRIMARY KEY '
        '(`artifact_id`, `revision`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_artifact_heads': (
        'CREATE TABLE IF NOT EXISTS `artifact_heads` (`artifact_id` VARCHAR(128) NOT '
        'NULL, `revision` BIGINT NOT NULL, PRIMARY KEY (`artifact_id`), FOREIGN KEY '
        '(`artifact_id`, `revision`) REFERENCES `artifact_revisions` (`artifact_id`, '
        '`revision`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_sources': (
        'CREATE TABLE IF NOT EXISTS `sources` (`journal_position` BIGINT NOT NULL '
        'AUTO_INCREMENT, `source_id` VARCHAR(128) NOT NULL, `kind` VARCHAR(64) NOT NULL, '
        '`content` LONGTEXT NOT NULL, `content_hash` CHAR(64) NOT NULL, `uri` LONGTEXT, '
        '`metadata` LONGTEXT NOT NULL, PRIMARY KEY (`journal_position`), UNIQUE '
        '(`source_id`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_memory_entry_versions': (
        'CREATE TABLE IF NOT EXISTS `memory_entry_versions` (`memory_artifact_id` '
        'VARCHAR(128) NOT NULL, `entry_id` VARCHAR(128) NOT NULL, `entry_version_id` '
        'VARCHAR(128) NOT NULL, `version` BIGINT NOT NULL, `previous_version_id` '
        'VARCHAR(128), `kind` VARCHAR(64) NOT NULL, `text` LONGTEXT NOT NULL, '
        '`source_refs` LONGTEXT NOT NULL, `artifact_refs` LONGTEXT NOT NULL, '
        '`entry_content_hash` CHAR(64) NOT NULL, `created_in_revision` BIGINT NOT NULL, '
        'PRIMARY KEY (`entry_version_id`), UNIQUE (`memory_artifact_id`, `entry_id`, '
        '`version`), UNIQUE (`memory_artifact_id`, `entry_id`, `entry_version_id`), '
        'FOREIGN KEY (`previous_version_id`) REFERENCES `memory_entry_versions` '
        '(`entry_version_id`), FOREIGN KEY (`memory_artifact_id`, `created_in_revision`) '
        'REFERENCES `artifact_revisions` (`artifact_id`, `revision`)) DEFAULT '
        'CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_memory_entry_versions_hash_index': (
        'CREATE INDEX IF NOT EXISTS `idx_memory_entry_versions_hash` ON '
        '`memory_entry_versions`(`memory_artifact_id`, `entry_content_hash`)'
    ),
    'create_memory_entry_versions_entry_index': (
        'CREATE INDEX IF NOT EXISTS `idx_memory_entry_versions_entry` ON '
        '`memory_entry_versions`(`entry_id`)'
    ),
    'create_memory_entry_heads': (
        'CREATE TABLE IF NOT EXISTS `memory_entry_heads` (`projection_id` BIGINT NOT NULL '
        'AUTO_INCREMENT, `memory_artifact_id` VARCHAR(128) NOT NULL, `head_revision` '
        'BIGINT NOT NULL, `entry_id` VARCHAR(128) NOT NULL, `entry_version_id` '
        'VARCHAR(128) NOT NULL, `entry_content_hash` CHAR(64) NOT NULL, `searchable_text` '
        'LONGTEXT NOT NULL, PRIMARY KEY (`projection_id`), UNIQUE (`memory_artifact_id`, '
        '`entry_id`), FOREIGN KEY (`memory_artifact_id`, `entry_id`, `entry_version_id`) '
        'REFERENCES `memory_entry_versions` (`memory_artifact_id`, `entry_id`, '
        '`entry_version_id`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_memory_entry_vector_metadata': (
        'CREATE TABLE IF NOT EXISTS `memory_entry_vector_metadata` (`projection_id` '
        'BIGINT NOT NULL, `entry_version_id` VARCHAR(128) NOT NULL, `entry_content_hash` '
        'CHAR(64) NOT NULL, `embedding_content_hash` CHAR(64) NOT NULL, PRIMARY KEY '
        '(`projection_id`), UNIQUE (`entry_version_id`), FOREIGN KEY (`projection_id`) '
        'REFERENCES `memory_entry_heads` (`projection_id`) ON DELETE CASCADE) DEFAULT '
        'CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'meta_get': (
        'SELECT `value` FROM `powercontext_meta` WHERE `key` = %s'
    ),
    'meta_delete': (
        'DELETE FROM `powercontext_meta` WHERE `key` = %s'
    ),
    'meta_insert': (
        'INSERT INTO `powercontext_meta` (`key`, `value`) VALUES (%s, %s)'
    ),
    'head_get': (
        'SELECT `revision` FROM `artifact_heads` WHERE `artifact_id` = %s'
    ),
    'head_insert': (
        'INSERT INTO `artifact_heads` (`artifact_id`, `revision`) VALUES (%s, %s)'
    ),
    'head_cas': (
        'UPDATE `artifact_heads` SET `revision` = %s WHERE `artifact_id` = %s AND '
        '`revision` = %s'
    ),
    'revision_hash_update': (
        'UPDATE `artifact_revisions` SET `content_hash` = %s WHERE `artifact_id` = %s AND '
        '`revision` = %s AND `content_hash` = %s'
    ),
    'revision_insert': (
        'INSERT INTO `artifact_revisions` (`artifact_id`, `revision`, `family`, '
        '`content_encoding`, `content`, `content_hash`, `lineage`) VALUES (%s, %s, %s, '
        '%s, %s, %s, %s)'
    ),
    'revision_range': (
        'SELECT `artifact_id`, `revision`, `family`, `content_encoding`, `content`, '
        '`content_hash`, `lineage` FROM `artifact_revisions` WHERE `artifact_id` = %s AND '
        '`revision` > %s AND `revision` <= %s ORDER BY `revision`'
    ),
    'versions_by_id': (
        'SELECT `memory_artifact_id`, `entry_id`, `entry_version_id`, `version`, '
        '`previous_version_id`, `kind`, `text`, `source_refs`, `artifact_refs`, '
        '`entry_content_hash`, `created_in_revision` FROM `memory_entry_versions` WHERE '
        '`entry_version_id` IN (%s, %s, %s, %s)'
    ),
    'version_insert': (
        'INSERT INTO `memory_entry_versions` (`memory_artifact_id`, `entry_id`, '
        '`entry_version_id`, `version`, `previous_version_id`, `kind`, `text`, '
        '`source_refs`, `artifact_refs`, `entry_content_hash`, `created_in_revision`) '
        'VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)'
    ),
    'entry_ids_elsewhere': (
        'SELECT DISTINCT `entry_id` FROM `memory_entry_versions` WHERE '
        '`memory_artifact_id` <> %s AND `entry_id` IN (%s, %s, %s, %s)'
    ),
    'head_projection_ids': (
        'SELECT `projection_id` FROM `memory_entry_heads` WHERE `memory_artifact_id` = %s '
        'AND `entry_id` IN (%s, %s, %s, %s)'
    ),
    'head_rows_delete': (
        'DELETE FROM `memory_entry_heads` WHERE `projection_id` IN (%s, %s, %s, %s)'
    ),
    'head_row_insert': (
        'INSERT INTO `memory_entry_heads` (`memory_artifact_id`, `head_revision`, '
        '`entry_id`, `entry_version_id`, `entry_content_hash`, `searchable_text`) VALUES '
        '(%s, %s, %s, %s, %s, %s)'
    ),
    'heads_by_projection_id': (
        'SELECT `projection_id`, `memory_artifact_id`, `entry_id`, `entry_version_id`, '
        '`entry_content_hash`, `searchable_text` FROM `memory_entry_heads` WHERE '
        '`projection_id` IN (%s, %s, %s, %s)'
    ),
    'vector_metadata_delete': (
        'DELETE FROM `memory_entry_vector_metadata` WHERE `projection_id` IN (%s, %s, %s, '
        '%s)'
    ),
    'vector_metadata_insert': (
        'INSERT INTO `memory_entry_vector_metadata` (`projection_id`, `entry_version_id`, '
        '`entry_content_hash`, `embedding_content_hash`) VALUES (%s, %s, %s, %s)'
    ),
    'all_heads': (
        'SELECT `h`.`artifact_id`, `h`.`revision` FROM `artifact_heads` AS `h` JOIN '
        '`artifact_revisions` AS `r` ON `r`.`artifact_id` = `h`.`artifact_id` AND '
        '`r`.`revision` = `h`.`revision` WHERE `r`.`family` = %s ORDER BY '
        '`h`.`artifact_id`'
    ),
    'memory_projection_ids': (
        'SELECT `projection_id` FROM `memory_entry_heads` WHERE `memory_artifact_id` = %s'
    ),
    'memory_head_count': (
        'SELECT COUNT(*) FROM `memory_entry_heads` WHERE `memory_artifact_id` = %s'
    ),
    'drop_memory_entry_vector_metadata': (
        'DROP TABLE IF EXISTS `memory_entry_vector_metadata`'
    ),
    'source_insert': (
        'INSERT INTO `sources` (`source_id`, `kind`, `content`, `content_hash`, `uri`, '
        '`metadata`) VALUES (%s, %s, %s, %s, %s, %s)'
    ),
    'sources_by_id': (
        'SELECT `journal_position`, `source_id`, `kind`, `content`, `content_hash`, '
        '`uri`, `metadata` FROM `sources` WHERE `source_id` IN (%s, %s, %s, %s)'
    ),
    'journal': (
        'SELECT `journal_position`, `source_id`, `kind`, `content`, `content_hash`, '
        '`uri`, `metadata` FROM `sources` WHERE `journal_position` > %s ORDER BY '
        '`journal_position` LIMIT %s'
    ),
    'create_memory_manifest_items': (
        'CREATE TABLE IF NOT EXISTS `memory_manifest_items` (`memory_artifact_id` '
        'VARCHAR(128) NOT NULL, `entry_id` VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, '
        '`entry_version_id` VARCHAR(128) NOT NULL, `entry_content_hash` CHAR(64) NOT NULL, '
        '`state` VARCHAR(16) NOT NULL, PRIMARY KEY (`memory_artifact_id`, `entry_id`, '
        '`revision`), FOREIGN KEY (`memory_artifact_id`, `revision`) REFERENCES '
        '`artifact_revisions` (`artifact_id`, `revision`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_memory_manifest_items_revision_index': (
        'CREATE INDEX IF NOT EXISTS `idx_memory_manifest_items_revision` ON '
        '`memory_manifest_items`(`memory_artifact_id`, `revision`)'
    ),
    'create_memory_manifest_baselines': (
        'CREATE TABLE IF NOT EXISTS `memory_manifest_baselines` (`memory_artifact_id` '
        'VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, PRIMARY KEY '
        '(`memory_artifact_id`, `revision`), FOREIGN KEY (`memory_artifact_id`, `revision`) '
        'REFERENCES `artifact_revisions` (`artifact_id`, `revision`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_memory_vector_gaps': (
        'CREATE TABLE IF NOT EXISTS `memory_vector_gaps` (`memory_artifact_id` VARCHAR(128) '
        'NOT NULL, `head_revision` BIGINT NOT NULL, `projection_generation` VARCHAR(64) NOT '
        'NULL, `missing` BIGINT NOT NULL, PRIMARY KEY (`memory_artifact_id`)) DEFAULT '
        'CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_memory_keys': (
        'CREATE TABLE IF NOT EXISTS `memory_keys` (`key` VARCHAR(1024) NOT NULL, '
        '`artifact_id` VARCHAR(128) NOT NULL, PRIMARY KEY (`key`), FOREIGN KEY '
        '(`artifact_id`) REFERENCES `artifact_heads` (`artifact_id`)) DEFAULT '
        'CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'manifest_item_insert': (
        'INSERT INTO `memory_manifest_items` (`memory_artifact_id`, `entry_id`, `revision`, '
        '`entry_version_id`, `entry_content_hash`, `state`) VALUES (%s, %s, %s, %s, %s, %s)'
    ),
    'manifest_items_range': (
        'SELECT `entry_id`, `revision`, `entry_version_id`, `entry_content_hash`, `state` '
        'FROM `memory_manifest_items` WHERE `memory_artifact_id` = %s AND `revision` >= %s '
        'AND `revision` <= %s ORDER BY `entry_id`, `revision`'
    ),
    'manifest_items_changed': (
        'SELECT `entry_id`, `revision`, `entry_version_id`, `entry_content_hash`, `state` '
        'FROM `memory_manifest_items` WHERE `memory_artifact_id` = %s AND `revision` > %s AND '
        '`revision` <= %s ORDER BY `revision`, `entry_id`'
    ),
    'manifest_items_of': (
        'SELECT `entry_id`, `revision`, `entry_version_id`, `entry_content_hash`, `state` '
        'FROM `memory_manifest_items` WHERE `memory_artifact_id` = %s AND `revision` <= %s '
        'AND `entry_id` IN (%s, %s, %s, %s)'
    ),
    'manifest_baseline_insert': (
        'INSERT INTO `memory_manifest_baselines` (`memory_artifact_id`, `revision`) VALUES '
        '(%s, %s)'
    ),
    'manifest_baselines_upto': (
        'SELECT MAX(`revision`) FROM `memory_manifest_baselines` WHERE `memory_artifact_id` = '
        '%s AND `revision` <= %s'
    ),
    'manifest_baselines_first': (
        'SELECT `memory_artifact_id`, MIN(`revision`) FROM `memory_manifest_baselines` WHERE '
        '`memory_artifact_id` IN (%s, %s, %s, %s) GROUP BY `memory_artifact_id`'
    ),
    'create_memory_manifest_packs': (
        'CREATE TABLE IF NOT EXISTS `memory_manifest_packs` (`memory_artifact_id` VARCHAR(128) '
        'NOT NULL, `first_entry_id` VARCHAR(128) NOT NULL, `item_count` BIGINT NOT NULL, '
        '`items` LONGBLOB NOT NULL, PRIMARY KEY (`memory_artifact_id`, `first_entry_id`)) '
        'DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_memory_manifest_pack_heads': (
        'CREATE TABLE IF NOT EXISTS `memory_manifest_pack_heads` (`memory_artifact_id` '
        'VARCHAR(128) NOT NULL, `revision` BIGINT NOT NULL, PRIMARY KEY '
        '(`memory_artifact_id`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'manifest_pack_head_get': (
        'SELECT `revision` FROM `memory_manifest_pack_heads` WHERE `memory_artifact_id` = %s'
    ),
    'manifest_pack_head_delete': (
        'DELETE FROM `memory_manifest_pack_heads` WHERE `memory_artifact_id` = %s'
    ),
    'manifest_pack_head_insert': (
        'INSERT INTO `memory_manifest_pack_heads` (`memory_artifact_id`, `revision`) VALUES '
        '(%s, %s)'
    ),
    'manifest_packs_get': (
        'SELECT `first_entry_id`, `item_count`, `items` FROM `memory_manifest_packs` WHERE '
        '`memory_artifact_id` = %s'
    ),
    'manifest_pack_firsts': (
        'SELECT `first_entry_id` FROM `memory_manifest_packs` WHERE `memory_artifact_id` = %s'
    ),
    'manifest_pack_insert': (
        'INSERT INTO `memory_manifest_packs` (`memory_artifact_id`, `first_entry_id`, '
        '`item_count`, `items`) VALUES (%s, %s, %s, %s)'
    ),
    'manifest_pack_delete': (
        'DELETE FROM `memory_manifest_packs` WHERE `memory_artifact_id` = %s AND '
        '`first_entry_id` = %s'
    ),
    'manifest_packs_delete': (
        'DELETE FROM `memory_manifest_packs` WHERE `memory_artifact_id` = %s'
    ),
    'vector_gaps_get': (
        'SELECT `head_revision`, `projection_generation`, `missing` FROM `memory_vector_gaps` '
        'WHERE `memory_artifact_id` = %s'
    ),
    'vector_gaps_delete': (
        'DELETE FROM `memory_vector_gaps` WHERE `memory_artifact_id` = %s'
    ),
    'vector_gaps_insert': (
        'INSERT INTO `memory_vector_gaps` (`memory_artifact_id`, `head_revision`, '
        '`projection_generation`, `missing`) VALUES (%s, %s, %s, %s)'
    ),
    'memory_key_get': 'SELECT `artifact_id` FROM `memory_keys` WHERE `key` = %s',
    'memory_key_insert': 'INSERT INTO `memory_keys` (`key`, `artifact_id`) VALUES (%s, %s)',
    'memory_key_delete': 'DELETE FROM `memory_keys` WHERE `key` = %s AND `artifact_id` = %s',
    'memory_keys_all': 'SELECT `key`, `artifact_id` FROM `memory_keys` ORDER BY `key`',
}

GOLDEN_SQLITE_FRAGMENTS = {
    'create_fts': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "memory_entry_search_fts" USING '
        'fts5(searchable_text, content=\'\', contentless_delete=1, tokenize="unicode61 '
        'remove_diacritics 0 tokenchars \'_\'")'
    ),
    'fts_insert': (
        'INSERT INTO "memory_entry_search_fts" (rowid, searchable_text) VALUES (?, ?)'
    ),
    'fts_usermerge': (
        'INSERT INTO "memory_entry_search_fts" ("memory_entry_search_fts", rank) VALUES '
        "('usermerge', 2)"
    ),
    'fts_merge': (
        'INSERT INTO "memory_entry_search_fts" ("memory_entry_search_fts", rank) VALUES '
        "('merge', ?)"
    ),
    'fts_segments': (
        'WITH RECURSIVE s(id) AS (SELECT min(segid) FROM "memory_entry_search_fts_idx" '
        'UNION ALL SELECT (SELECT min(segid) FROM "memory_entry_search_fts_idx" WHERE segid > '
        's.id) FROM s WHERE s.id IS NOT NULL) SELECT count(id) FROM s'
    ),
    'fts_small': (
        'SELECT count(*) <= ? FROM (SELECT 1 FROM "memory_entry_search_fts_data" LIMIT ? + 1)'
    ),
    'fts_delete': (
        'DELETE FROM "memory_entry_search_fts" WHERE rowid = ?'
    ),
    'fts_delete_orphans': (
        'DELETE FROM "memory_entry_search_fts" WHERE rowid NOT IN (SELECT "projection_id" '
        'FROM "memory_entry_heads")'
    ),
    'fts_search': (
        'WITH m AS MATERIALIZED (SELECT rowid AS pid, bm25("memory_entry_search_fts") AS '
        'score FROM "memory_entry_search_fts" WHERE "memory_entry_search_fts" MATCH ? ORDER '
        'BY score, rowid LIMIT ? OFFSET ?) SELECT h."projection_id", h."memory_artifact_id", '
        'h."entry_id", h."entry_version_id", h."entry_content_hash", h."searchable_text", '
        'm.score FROM m JOIN "memory_entry_heads" AS h ON h."projection_id" = m.pid ORDER BY '
        'm.score, m.pid'
    ),
    'fts_integrity_check': (
        'INSERT INTO "memory_entry_search_fts" ("memory_entry_search_fts") VALUES '
        "('integrity-check')"
    ),
    'vector_insert': (
        'INSERT INTO "memory_entry_search_vector" (rowid, scope, embedding) VALUES (?, ?, '
        '?)'
    ),
    'vector_delete': (
        'DELETE FROM "memory_entry_search_vector" WHERE rowid = ?'
    ),
    'vector_delete_scope': (
        'DELETE FROM "memory_entry_search_vector" WHERE rowid IN (SELECT rowid FROM '
        '"memory_entry_search_vector" WHERE scope = ?)'
    ),
    'drop_vector': (
        'DROP TABLE IF EXISTS "memory_entry_search_vector"'
    ),
    'create_vector_bits': (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "memory_entry_search_vector_bits" USING '
        'vec0(scope text partition key, bits bit[{dimension:d}], chunk_size=8)'
    ),
    'bits_insert': (
        'INSERT INTO "memory_entry_search_vector_bits" (rowid, scope, bits) VALUES (?, '
        '?, vec_quantize_binary(?))'
    ),
    'bits_delete': (
        'DELETE FROM "memory_entry_search_vector_bits" WHERE rowid = ?'
    ),
    'bits_delete_scope': (
        'DELETE FROM "memory_entry_search_vector_bits" WHERE rowid IN (SELECT rowid '
        'FROM "memory_entry_search_vector_bits" WHERE scope = ?)'
    ),
    'bits_fill': (
        'INSERT INTO "memory_entry_search_vector_bits" (rowid, scope, bits) SELECT '
        'rowid, scope, vec_quantize_binary(embedding) FROM "memory_entry_search_vector"'
    ),
    'drop_bits': (
        'DROP TABLE IF EXISTS "memory_entry_search_vector_bits"'
    ),
    'vector_ann_search': (
        'WITH cand AS MATERIALIZED (SELECT rowid AS pid FROM '
        '"memory_entry_search_vector_bits" WHERE bits MATCH vec_quantize_binary(?1) AND '
        'k = ?2 AND scope = ?3), knn AS MATERIALIZED (SELECT cand.pid AS pid, '
        'vec_distance_l2(v.embedding, ?1) AS distance FROM cand JOIN '
        '"memory_entry_search_vector" AS v ON v.rowid = cand.pid ORDER BY distance, '
        'cand.pid LIMIT ?4) SELECT h."projection_id", h."memory_artifact_id", '
        'h."entry_id", h."entry_version_id", h."entry_content_hash", '
        'h."searchable_text", knn.distance FROM knn JOIN "memory_entry_heads" AS h ON '
        'h."projection_id" = knn.pid JOIN "memory_entry_vector_metadata" AS m ON '
        'm."projection_id" = h."projection_id" AND m."entry_version_id" = '
        'h."entry_version_id" AND m."entry_content_hash" = h."entry_content_hash"'
    ),
    'vector_search': (
        'WITH knn AS MATERIALIZED (SELECT rowid AS pid, distance FROM '
        '"memory_entry_search_vector" WHERE embedding MATCH ? AND k = ? AND scope = ?) '
        'SELECT h."projection_id", h."memory_artifact_id", h."entry_id", '
        'h."entry_version_id", h."entry_content_hash", h."searchable_text", knn.distance '
        'FROM knn JOIN "memory_entry_heads" AS h ON h."projection_id" = knn.pid JOIN '
        '"memory_entry_vector_metadata" AS m ON m."projection_id" = h."projection_id" AND '
        'm."entry_version_id" = h."entry_version_id" AND m."entry_content_hash" = '
        'h."entry_content_hash"'
    ),
    'vector_projection': (
        'SELECT h."entry_content_hash", CASE WHEN v.rowid IS NULL THEN NULL ELSE '
        'm."embedding_content_hash" END FROM "memory_entry_heads" AS h LEFT JOIN '
        '"memory_entry_vector_metadata" AS m ON m."projection_id" = h."projection_id" AND '
        'm."entry_version_id" = h."entry_version_id" AND m."entry_content_hash" = '
        'h."entry_content_hash" LEFT JOIN "memory_entry_search_vector" AS v ON v.rowid = '
        'h."projection_id" WHERE h."memory_artifact_id" = ?'
    ),
    'vector_projection_entry': (
        'SELECT h."entry_content_hash", CASE WHEN v.rowid IS NULL THEN NULL ELSE '
        'm."embedding_content_hash" END FROM "memory_entry_heads" AS h LEFT JOIN '
        '"memory_entry_vector_metadata" AS m ON m."projection_id" = h."projection_id" AND '
        'm."entry_version_id" = h."entry_version_id" AND m."entry_content_hash" = '
        'h."entry_content_hash" LEFT JOIN "memory_entry_search_vector" AS v ON v.rowid = '
        'h."projection_id" WHERE h."memory_artifact_id" = ? AND h."entry_id" = ?'
    ),
    'vector_count': (
        'SELECT count(*) FROM "memory_entry_search_vector"'
    ),
    'head_vectors': (
        'SELECT h."entry_version_id", m."embedding_content_hash", v.embedding FROM '
        '"memory_entry_heads" AS h JOIN "memory_entry_vector_metadata" AS m ON '
        'm."projection_id" = h."projection_id" AND m."entry_version_id" = '
        'h."entry_version_id" AND m."entry_content_hash" = h."entry_content_hash" JOIN '
        '"memory_entry_search_vector" AS v ON v.rowid = h."projection_id" WHERE '
        'h."memory_artifact_id" = ?'
    ),
    'table_exists': (
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    ),
    'probe_fts_create': (
        'CREATE VIRTUAL TABLE temp."pc_probe_fts" USING fts5(searchable_text, content=\'\', '
        'contentless_delete=1, tokenize="unicode61 remove_diacritics 0 tokenchars \'_\'")'
    ),
    'probe_fts_insert': (
        'INSERT INTO temp."pc_probe_fts" (rowid, searchable_text) VALUES (?, ?)'
    ),
    'probe_fts_search': (
        'SELECT rowid FROM temp."pc_probe_fts" WHERE "pc_probe_fts" MATCH ?'
    ),
    'probe_fts_delete': (
        'DELETE FROM temp."pc_probe_fts" WHERE rowid = ?'
    ),
    'probe_fts_drop': (
        'DROP TABLE IF EXISTS temp."pc_probe_fts"'
    ),
    'probe_vec_create': (
        'CREATE VIRTUAL TABLE temp."pc_probe_vec" USING vec0(scope text partition key, '
        'embedding float[2] distance_metric=l2, chunk_size=8)'
    ),
    'probe_vec_insert': (
        'INSERT INTO temp."pc_probe_vec" (rowid, scope, embedding) VALUES (?, ?, ?)'
    ),
    'probe_vec_search': (
        'SELECT rowid, distance FROM temp."pc_probe_vec" WHERE embedding MATCH ? AND k = '
        '? AND scope = ?'
    ),
    'probe_vec_delete': (
        'DELETE FROM temp."pc_probe_vec" WHERE rowid = ?'
    ),
    'probe_vec_drop': (
        'DROP TABLE IF EXISTS temp."pc_probe_vec"'
    ),
}


def _n(name: str) -> int | None:
    return 4 if ":ids" in templates._ALL[name] else None


@pytest.mark.parametrize("dialect, golden", [("sqlite", GOLDEN_SQLITE),
                                             ("oceanbase", GOLDEN_OCEANBASE)])
def test_every_template_renders_its_golden_string(dialect: str, golden: dict[str, str]) -> None:
    # the Topic statements have their own golden strings (test_sqlite_topic_sql.py), the
    # processing ones too (test_processing_sql.py), the dashboard's (test_insight_sql.py)
    assert set(golden) == (set(templates._ALL) - set(templates.TOPIC_TEMPLATES)
                           - set(templates.PROCESSING_TEMPLATES)
                           - set(templates.SUPERVISION_QUERIES)
                           - set(templates.INSIGHT_QUERIES))
    for name, sql in golden.items():
        assert templates.render(name, dialect, _n(name)) == sql, name


def test_every_sqlite_fragment_matches_its_golden_string() -> None:
    assert set(GOLDEN_SQLITE_FRAGMENTS) == set(frag.STATEMENTS) - set(frag.TOPIC_STATEMENTS)
    for name, sql in GOLDEN_SQLITE_FRAGMENTS.items():
        assert frag.statement(name) == sql, name


def test_vector_ddl_and_match_expression_render_exactly() -> None:
    assert frag.vector_ddl(384) == (
        'CREATE VIRTUAL TABLE IF NOT EXISTS "memory_entry_search_vector" USING vec0('
        "scope text partition key, embedding float[384] distance_metric=l2, chunk_size=8)")
    assert frag.fts_match_expression(["m_ab", "m_cd"], ["uv", "x_c3a9", "b_4e2d_6587"]) == (
        'searchable_text : ("m_ab_uv" OR "m_ab_x_c3a9" OR "m_ab_b_4e2d_6587" OR '
        '"m_cd_uv" OR "m_cd_x_c3a9" OR "m_cd_b_4e2d_6587")')
    assert frag.fts_document("m_ab", "uv b_4e2d_6587") == "m_ab_uv m_ab_b_4e2d_6587"


@pytest.mark.parametrize("bad", ['a"b', "A", "a b", "", "é", "a*", "NEAR(a"])
def test_match_expression_refuses_anything_but_analyzer_tokens(bad: str) -> None:
    with pytest.raises(ValueError):
        frag.fts_match_expression(["m_ab"], [bad])
    with pytest.raises(ValueError):
        frag.fts_match_tokens(["m_ab_uv", bad])


@pytest.mark.parametrize("dim, chunk", [(0, 8), (True, 8), (8, 12), (8, 0), (8.0, 8)])
def test_vector_ddl_refuses_bad_numbers(dim: object, chunk: object) -> None:
    with pytest.raises(ValueError):
        frag.vector_ddl(dim, chunk)  # type: ignore[arg-type]


def test_in_lists_pad_to_buckets_with_null_and_split_long_lists() -> None:
    assert templates.render_in("head_rows_delete", "sqlite", []) == []
    [(sql, params)] = templates.render_in("head_rows_delete", "sqlite", [1, 2])
    assert sql.endswith('IN (?, ?, ?, ?)') and params == [1, 2, None, None]
    chunks = templates.render_in("head_rows_delete", "oceanbase", list(range(300)))
    assert [len(p) for _, p in chunks] == [256, 64]
    assert chunks[1][0].endswith(", ".join(["%s"] * 64) + ")")
    with pytest.raises(ValueError):
        templates.render("head_rows_delete", "sqlite")
    with pytest.raises(ValueError):
        templates.render("head_get", "sqlite", 2)
    with pytest.raises(ValueError):  # a dialect sqlglot does not know (postgres renders)
        templates.render("head_get", "nosuchdb")


H = "a" * 64
H2 = "b" * 64


def _vec(*xs: float) -> bytes:
    return struct.pack(f"<{len(xs)}f", *xs)


def test_every_sqlite_statement_executes_on_apsw_with_sqlite_vec(tmp_path: Path) -> None:
    path = tmp_path / "golden.db"
    backend = SQLiteMemoryBackend(str(path), profile=PROFILE)
    import asyncio

    asyncio.run(backend.open())  # creates the schema with every DDL template and fragment
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

    for name in [*templates.SCHEMA, *templates.VECTOR_SCHEMA]:
        t(name)  # idempotent: IF NOT EXISTS on an existing schema
    f("create_fts")
    conn.execute(frag.vector_ddl(PROFILE.dimension))
    conn.execute(frag.vector_bits_ddl(PROFILE.dimension) or "")
    ran.add("fragment:create_vector_bits")  # a template: {dimension} filled in
    conn.execute("BEGIN IMMEDIATE")
    t("meta_delete", ("k",))
    t("meta_insert", ("k", "v"))
    assert t("meta_get", ("k",)) == [("v",)]
    t("revision_insert", ("art", 1, "memory", "identity", b"{}", H, '{"a":1}'))
    t("revision_insert", ("art", 2, "memory", "identity", b"{}", H, '{"a":1}'))
    t("head_insert", ("art", 1))
    assert t("head_get", ("art",)) == [(1,)]
    t("head_cas", (2, "art", 1))
    assert conn.changes() == 1
    assert t("revision_range", ("art", 0, 2))[1][:2] == ("art", 2)
    t("revision_hash_update", (H2, "art", 2, H))
    assert conn.changes() == 1
    assert t("revision_range", ("art", 1, 2))[0][5] == H2
    t("version_insert", ("art", "e1", "v1", 1, None, "fact", "uv", "[]", "[]", H, 1))
    assert [r[2] for r in t("versions_by_id", ("v1", None, None, None), 4)] == ["v1"]
    t("manifest_item_insert", ("art", "e1", 1, "v1", H, "active"))
    t("manifest_item_insert", ("art", "e1", 2, "v1", H, "inactive"))
    t("manifest_baseline_insert", ("art", 1))
    assert t("manifest_items_range", ("art", 1, 2)) == [
        ("e1", 1, "v1", H, "active"), ("e1", 2, "v1", H, "inactive")]
    assert t("manifest_items_changed", ("art", 1, 2)) == [("e1", 2, "v1", H, "inactive")]
    assert sorted(t("manifest_items_of", ("art", 1, "e1", None, None, None), 4)) == [
        ("e1", 1, "v1", H, "active")]
    assert t("manifest_baselines_upto", ("art", 2)) == [(1,)]
    assert t("manifest_baselines_first", ("art", None, None, None), 4) == [("art", 1)]
    t("manifest_pack_insert", ("art", "e1", 1, b"{}"))
    t("manifest_pack_insert", ("art", "e2", 1, b"{}"))
    t("manifest_pack_head_insert", ("art", 2))
    assert t("manifest_pack_head_get", ("art",)) == [(2,)]
    assert sorted(t("manifest_pack_firsts", ("art",))) == [("e1",), ("e2",)]
    t("manifest_pack_delete", ("art", "e2"))
    assert t("manifest_packs_get", ("art",)) == [("e1", 1, b"{}")]
    t("manifest_packs_delete", ("art",))
    t("manifest_pack_head_delete", ("art",))
    assert t("manifest_packs_get", ("art",)) == t("manifest_pack_head_get", ("art",)) == []
    t("vector_gaps_insert", ("art", 2, "g", 0))
    assert t("vector_gaps_get", ("art",)) == [(2, "g", 0)]
    t("vector_gaps_delete", ("art",))
    assert t("vector_gaps_get", ("art",)) == []
    t("head_row_insert", ("art", 2, "e1", "v1", H, "uv"))
    pid = conn.last_insert_rowid()
    assert t("head_projection_ids", ("art", "e1", None, None, None), 4) == [(pid,)]
    assert t("entry_ids_elsewhere", ("other", "e1", None, None, None), 4) == [("e1",)]
    assert t("entry_ids_elsewhere", ("art", "e1", None, None, None), 4) == []
    assert t("heads_by_projection_id", (pid, None, None, None), 4)[0][2] == "e1"
    t("vector_metadata_insert", (pid, "v1", H, H2))
    scope = frag.scope_token("art")
    f("fts_insert", (pid, frag.fts_document(scope, "uv")))
    f("vector_insert", (pid, scope, _vec(1, 0, 0, 0, 0, 0, 0, 0)))
    f("bits_insert", (pid, scope, _vec(1, 0, 0, 0, 0, 0, 0, 0)))
    hits = f("fts_search", (frag.fts_match_expression([scope], ["uv"]), 5, 0))
    assert [h[2] for h in hits] == ["e1"]
    near = f("vector_search", (_vec(1, 0, 0, 0, 0, 0, 0, 0), 5, scope))
    assert [(h[2], h[6]) for h in near] == [("e1", 0.0)]
    near = f("vector_ann_search", (_vec(1, 0, 0, 0, 0, 0, 0, 0), 40, scope, 5))
    assert [(h[2], h[6]) for h in near] == [("e1", 0.0)]
    assert f("vector_projection", ("art",)) == [(H, H2)]
    assert f("vector_projection_entry", ("art", "e1")) == [(H, H2)]
    assert f("vector_projection_entry", ("art", "e2")) == []
    assert f("vector_count") == [(1,)]
    assert f("head_vectors", ("art",)) == [("v1", H2, _vec(1, 0, 0, 0, 0, 0, 0, 0))]
    assert f("table_exists", (frag.VECTOR_TABLE,)) == [(1,)]
    f("fts_usermerge")
    f("fts_merge", (frag.FTS_MERGE_PAGES,))
    assert f("fts_segments") == [(1,)]
    assert f("fts_small", (frag.FTS_SMALL_INDEX_PAGES,) * 2) == [(1,)]
    assert f("fts_small", (0, 0)) == [(0,)]
    f("fts_merge", (-frag.FTS_SMALL_INDEX_PAGES,))
    assert [h[2] for h in f("fts_search", (frag.fts_match_expression([scope], ["uv"]), 5, 0))
            ] == ["e1"]
    f("fts_integrity_check")
    f("fts_delete", (pid,))
    f("vector_delete", (pid,))
    f("bits_delete", (pid,))
    t("vector_metadata_delete", (pid, None, None, None), 4)
    t("head_rows_delete", (pid, None, None, None), 4)
    t("source_insert", ("s1", "note", "hello", H, None, "[]"))
    assert t("sources_by_id", ("s1", None, None, None), 4)[0][1] == "s1"
    assert [r[1] for r in t("journal", (0, 10))] == ["s1"]
    assert t("all_heads", ("memory",)) == [("art", 2)]
    t("memory_key_insert", ("repo:/w/demo", "art"))
    assert t("memory_key_get", ("repo:/w/demo",)) == [("art",)]
    assert t("memory_key_get", ("repo:/W/demo",)) == []  # exact (binary) comparison
    with pytest.raises(apsw.ConstraintError):
        t("memory_key_insert", ("repo:/w/demo", "art"))
    with pytest.raises(apsw.ConstraintError):  # only a Memory that exists
        t("memory_key_insert", ("repo:/w/other", "no-such-memory"))
    assert t("memory_keys_all") == [("repo:/w/demo", "art")]
    t("memory_key_delete", ("repo:/w/demo", "other-memory"))  # only the key's own Memory
    assert t("memory_keys_all") == [("repo:/w/demo", "art")]
    t("memory_key_delete", ("repo:/w/demo", "art"))
    assert t("memory_keys_all") == []
    t("memory_key_insert", ("repo:/w/demo", "art"))
    t("head_row_insert", ("art", 2, "e1", "v1", H, "uv"))
    pid2 = conn.last_insert_rowid()
    assert t("memory_projection_ids", ("art",)) == [(pid2,)]
    f("fts_insert", (pid2, frag.fts_document(scope, "uv")))
    match = frag.fts_match_expression([scope], ["uv"])
    assert len(f("fts_search", (match, 5, 0))) == 1
    assert t("memory_head_count", ("art",)) == [(1,)]
    f("vector_insert", (pid2, scope, _vec(0, 1, 0, 0, 0, 0, 0, 0)))
    t("head_rows_delete", (pid2, None, None, None), 4)
    assert conn.execute(f"SELECT rowid FROM {frag.FTS_TABLE} WHERE {frag.FTS_TABLE} MATCH ?",
                        (match,)).fetchall() == [(pid2,)]
    f("fts_delete_orphans")
    assert conn.execute(f"SELECT rowid FROM {frag.FTS_TABLE} WHERE {frag.FTS_TABLE} MATCH ?",
                        (match,)).fetchall() == []
    f("vector_delete_scope", (scope,))
    f("bits_delete_scope", (scope,))
    assert f("vector_count") == [(0,)]
    f("bits_fill")
    assert conn.execute(f"SELECT count(*) FROM {frag.BITS_TABLE}").fetchall() == [(0,)]
    f("drop_bits")
    f("drop_vector")
    t("drop_memory_entry_vector_metadata")
    assert f("table_exists", (frag.VECTOR_TABLE,)) == []
    conn.execute("ROLLBACK")
    for name in ["probe_fts_drop", "probe_fts_create"]:
        f(name)
    f("probe_fts_insert", (1, frag.fts_document("m_p", "x")))
    assert f("probe_fts_search", (frag.fts_match_expression(["m_p"], ["x"]),)) == [(1,)]
    f("probe_fts_delete", (1,))
    f("probe_fts_drop")
    f("probe_vec_drop")
    f("probe_vec_create")
    f("probe_vec_insert", (1, "m_a", _vec(1, 0)))
    assert f("probe_vec_search", (_vec(1, 0), 1, "m_a")) == [(1, 0.0)]
    f("probe_vec_delete", (1,))
    f("probe_vec_drop")
    conn.close()
    assert ran == (set(templates._ALL) - set(templates.TOPIC_TEMPLATES)
                   - set(templates.PROCESSING_TEMPLATES)
                   - set(templates.SUPERVISION_QUERIES)
                   - set(templates.INSIGHT_QUERIES)) | {
        "fragment:" + s for s in frag.STATEMENTS if s not in frag.TOPIC_STATEMENTS}
