"""The Source-processing SQL (``templates.PROCESSING_TEMPLATES``: the Scope journal,
Pending, Cursors, work budgets): one golden string per statement and dialect, every
statement run on APSW and on a real seekdb, and the spec's Pending CHECKs enforced by
both engines (Topic Memory RFC, "Pending dirty set")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import apsw
import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
from powercontext.adapters.sqlite.topic_backend import SQLiteTopicBackend
from powercontext.sql import templates

H = "a" * 64
B = "topic-memory-source-window"


def _seekdb_test(fn):
    fn = pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                            "POWERCONTEXT_TEST_OCEANBASE_URL")(fn)
    return pytest.mark.oceanbase(fn)


GOLDEN_PROCESSING_SQLITE = {
    'create_source_scope_recorded': (
        'CREATE TABLE IF NOT EXISTS "pc_source_scope_recorded" ("scope_id" BLOB NOT NULL, '
        '"position" INTEGER NOT NULL, "recorded_at" TEXT NOT NULL, PRIMARY KEY '
        '("scope_id", "position"))'
    ),
    'scope_recorded_insert': (
        'INSERT INTO "pc_source_scope_recorded" ("scope_id", "position", "recorded_at") '
        'VALUES (?, ?, ?)'
    ),
    'create_source_scope_journal': (
        'CREATE TABLE IF NOT EXISTS "pc_source_scope_journal" ("scope_id" BLOB NOT NULL, '
        '"position" INTEGER NOT NULL, "source_id" TEXT NOT NULL, "lineage_only" INTEGER '
        'NOT NULL DEFAULT FALSE, PRIMARY KEY ("scope_id", "position"), UNIQUE '
        '("source_id"), FOREIGN KEY ("source_id") REFERENCES "sources" ("source_id"))'
    ),
    'create_processing_pending': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_processing_pending" ("binding_name" TEXT '
        'NOT NULL, "scope_id" BLOB NOT NULL, "source_through" INTEGER NOT NULL, '
        '"flush_generation" INTEGER NOT NULL DEFAULT 0, "handled_flush_generation" '
        'INTEGER NOT NULL DEFAULT 0, PRIMARY KEY ("binding_name", "scope_id"), CHECK '
        '("source_through" >= 1), CHECK ("flush_generation" >= 0), CHECK '
        '("handled_flush_generation" >= 0), CHECK ("handled_flush_generation" <= '
        '"flush_generation"))'
    ),
    'create_processing_leases': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_processing_leases" ("supervisor_group" T'
        'EXT NOT NULL PRIMARY KEY, "holder_id" TEXT NOT NULL, "supervisor_generation" INT'
        'EGER NOT NULL, "lease_expires_at" TIMESTAMP(6) NULL)'
    ),
    'create_processing_binding_states': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_processing_binding_states" ("binding_nam'
        'e" TEXT NOT NULL PRIMARY KEY, "last_auto_wave_completed_at" TIMESTAMP(6) NULL)'
    ),
    'create_processing_auto_wave_targets': (
        'CREATE TABLE IF NOT EXISTS "pc_artifact_processing_auto_wave_targets" ("wave_id"'
        ' TEXT NOT NULL, "binding_name" TEXT NOT NULL, "scope_id" BLOB NOT NULL, "source_'
        'through" INTEGER NOT NULL, "completed" INTEGER NOT NULL DEFAULT FALSE, PRIMARY K'
        'EY ("wave_id", "binding_name", "scope_id"))'
    ),
    'create_source_cursors': (
        'CREATE TABLE IF NOT EXISTS "pc_source_cursors" ("binding_name" TEXT NOT NULL, '
        '"scope_id" BLOB NOT NULL, "source_position" INTEGER NOT NULL, PRIMARY KEY '
        '("binding_name", "scope_id"))'
    ),
    'create_topic_work_budgets': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_work_budgets" ("scope_id" BLOB NOT '
        'NULL, "binding_name" TEXT NOT NULL, "source_after" INTEGER NOT NULL, '
        '"furthest_through" INTEGER NOT NULL, "attempt_id" TEXT NOT NULL, "attempt_count" '
        'INTEGER NOT NULL, "reserved_requests" INTEGER NOT NULL, "reserved_tokens" '
        'INTEGER NOT NULL, "failure_code" TEXT, PRIMARY KEY ("scope_id", "binding_name", '
        '"source_after"))'
    ),
    'scope_journal_head': (
        'SELECT COALESCE(MAX("position"), 0) FROM "pc_source_scope_journal" WHERE '
        '"scope_id" = ?'
    ),
    'scope_journal_insert': (
        'INSERT INTO "pc_source_scope_journal" ("scope_id", "position", "source_id", '
        '"lineage_only") VALUES (?, ?, ?, ?)'
    ),
    'scope_journal_by_source': (
        'SELECT "source_id", "scope_id", "position", "lineage_only" FROM '
        '"pc_source_scope_journal" WHERE "source_id" IN (?, ?, ?, ?)'
    ),
    'scope_journal_after': (
        'SELECT "j"."position", "j"."lineage_only", "s"."journal_position", '
        '"s"."source_id", "s"."kind", "s"."content", "s"."content_hash", "s"."uri", '
        '"s"."metadata" FROM "pc_source_scope_journal" AS "j" JOIN "sources" AS "s" ON '
        '"s"."source_id" = "j"."source_id" WHERE "j"."scope_id" = ? AND "j"."position" > '
        '? ORDER BY "j"."position" LIMIT ?'
    ),
    'pending_get': (
        'SELECT "binding_name", "scope_id", "source_through", "flush_generation", '
        '"handled_flush_generation" FROM "pc_artifact_processing_pending" WHERE '
        '"binding_name" = ? AND "scope_id" = ?'
    ),
    'pending_raise': (
        'UPDATE "pc_artifact_processing_pending" SET "source_through" = CASE WHEN '
        '"source_through" < ? THEN ? ELSE "source_through" END WHERE "binding_name" = ? '
        'AND "scope_id" = ?'
    ),
    'pending_insert': (
        'INSERT INTO "pc_artifact_processing_pending" ("binding_name", "scope_id", '
        '"source_through", "flush_generation", "handled_flush_generation") VALUES (?, ?, '
        '?, ?, ?)'
    ),
    'pending_flush': (
        'UPDATE "pc_artifact_processing_pending" SET "source_through" = CASE WHEN '
        '"source_through" < ? THEN ? ELSE "source_through" END, "flush_generation" = '
        '"flush_generation" + 1 WHERE "binding_name" = ? AND "scope_id" = ?'
    ),
    'status_cursor_get': (
        'SELECT "source_position" FROM "pc_source_cursors" WHERE "binding_name" = ? AND '
        '"scope_id" = ?'
    ),
    'status_budget_get': (
        'SELECT "scope_id", "binding_name", "source_after", "furthest_through", '
        '"attempt_id", "attempt_count", "reserved_requests", "reserved_tokens", '
        '"failure_code" FROM "pc_topic_memory_work_budgets" WHERE "scope_id" = ? AND '
        '"binding_name" = ? AND "source_after" = ?'
    ),
    'processing_scopes': (
        'SELECT "scope_id" FROM "pc_source_scope_journal" UNION SELECT "scope_id" FROM '
        '"pc_artifact_processing_pending" WHERE "binding_name" = ? UNION SELECT '
        '"scope_id" FROM "pc_source_cursors" WHERE "binding_name" = ? UNION SELECT '
        '"scope_id" FROM "pc_topic_memory_work_budgets" WHERE "binding_name" = ?'
    ),
    'create_operator_decisions': (
        'CREATE TABLE IF NOT EXISTS "pc_topic_memory_operator_decisions" ("decision_id" T'
        'EXT NOT NULL PRIMARY KEY, "scope_id" BLOB NOT NULL, "binding_name" TEXT NOT NULL'
        ', "source_after" INTEGER NOT NULL, "action" TEXT NOT NULL, "position" INTEGER, "'
        'source_id" TEXT, "failure_code" TEXT NOT NULL, "attempt_count" INTEGER NOT NULL,'
        ' "reserved_requests" INTEGER NOT NULL, "reserved_tokens" INTEGER NOT NULL, "deci'
        'ded_by" TEXT NOT NULL, "reason" TEXT NOT NULL, "decided_at" TEXT NOT NULL)'
    ),
    'operator_decision_insert': (
        'INSERT INTO "pc_topic_memory_operator_decisions" ("decision_id", "scope_id", "bi'
        'nding_name", "source_after", "action", "position", "source_id", "failure_code", '
        '"attempt_count", "reserved_requests", "reserved_tokens", "decided_by", "reason",'
        ' "decided_at") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
    ),
    'operator_decisions_get': (
        'SELECT "decision_id", "scope_id", "binding_name", "source_after", "action", "pos'
        'ition", "source_id", "failure_code", "attempt_count", "reserved_requests", "rese'
        'rved_tokens", "decided_by", "reason", "decided_at" FROM "pc_topic_memory_operato'
        'r_decisions" WHERE "scope_id" = ? ORDER BY "decided_at" DESC, "decision_id" DESC'
        ' LIMIT ?'
    ),
    'create_source_scope_uris': (
        'CREATE TABLE IF NOT EXISTS "pc_source_scope_uris" ("scope_id" BLOB NOT NULL, "ur'
        'i_hash" TEXT NOT NULL, "position" INTEGER NOT NULL, PRIMARY KEY ("scope_id", "ur'
        'i_hash", "position"))'
    ),
    'scope_uri_position': (
        'SELECT "position" FROM "pc_source_scope_uris" WHERE "scope_id" = ? AND "uri_hash'
        '" = ? ORDER BY "position" LIMIT 1'
    ),
    'scope_uri_insert': (
        'INSERT INTO "pc_source_scope_uris" ("scope_id", "uri_hash", "position") VALUES ('
        '?, ?, ?)'
    ),
    'scope_uris_all': (
        'SELECT "scope_id", "position" FROM "pc_source_scope_uris"'
    ),
    'scope_journal_uris': (
        'SELECT "j"."scope_id", "j"."position", "s"."uri" FROM "pc_source_scope_journal" '
        'AS "j" JOIN "sources" AS "s" ON "s"."source_id" = "j"."source_id" WHERE NOT "s".'
        '"uri" IS NULL'
    ),
}


GOLDEN_PROCESSING_OCEANBASE = {
    'create_source_scope_recorded': (
        'CREATE TABLE IF NOT EXISTS `pc_source_scope_recorded` (`scope_id` VARBINARY(1024) '
        'NOT NULL, `position` BIGINT NOT NULL, `recorded_at` VARCHAR(32) NOT NULL, PRIMARY '
        'KEY (`scope_id`, `position`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'scope_recorded_insert': (
        'INSERT INTO `pc_source_scope_recorded` (`scope_id`, `position`, `recorded_at`) '
        'VALUES (%s, %s, %s)'
    ),
    'create_source_scope_journal': (
        'CREATE TABLE IF NOT EXISTS `pc_source_scope_journal` (`scope_id` VARBINARY(1024) '
        'NOT NULL, `position` BIGINT NOT NULL, `source_id` VARCHAR(128) NOT NULL, '
        '`lineage_only` BOOLEAN NOT NULL DEFAULT FALSE, PRIMARY KEY (`scope_id`, '
        '`position`), UNIQUE (`source_id`), FOREIGN KEY (`source_id`) REFERENCES '
        '`sources` (`source_id`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_processing_pending': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_processing_pending` (`binding_name` '
        'VARCHAR(128) NOT NULL, `scope_id` VARBINARY(1024) NOT NULL, `source_through` '
        'BIGINT NOT NULL, `flush_generation` BIGINT NOT NULL DEFAULT 0, '
        '`handled_flush_generation` BIGINT NOT NULL DEFAULT 0, PRIMARY KEY '
        '(`binding_name`, `scope_id`), CHECK (`source_through` >= 1), CHECK '
        '(`flush_generation` >= 0), CHECK (`handled_flush_generation` >= 0), CHECK '
        '(`handled_flush_generation` <= `flush_generation`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_processing_leases': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_processing_leases` (`supervisor_group` V'
        'ARCHAR(64) NOT NULL, `holder_id` VARCHAR(36) NOT NULL, `supervisor_generation` B'
        'IGINT NOT NULL, `lease_expires_at` DATETIME(6) NULL, PRIMARY KEY (`supervisor_gr'
        'oup`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_processing_binding_states': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_processing_binding_states` (`binding_nam'
        'e` VARCHAR(128) NOT NULL, `last_auto_wave_completed_at` DATETIME(6) NULL, PRIMAR'
        'Y KEY (`binding_name`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_processing_auto_wave_targets': (
        'CREATE TABLE IF NOT EXISTS `pc_artifact_processing_auto_wave_targets` (`wave_id`'
        ' VARCHAR(36) NOT NULL, `binding_name` VARCHAR(128) NOT NULL, `scope_id` VARBINAR'
        'Y(1024) NOT NULL, `source_through` BIGINT NOT NULL, `completed` BOOLEAN NOT NULL'
        ' DEFAULT FALSE, PRIMARY KEY (`wave_id`, `binding_name`, `scope_id`)) DEFAULT CHA'
        'RSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'create_source_cursors': (
        'CREATE TABLE IF NOT EXISTS `pc_source_cursors` (`binding_name` VARCHAR(128) NOT '
        'NULL, `scope_id` VARBINARY(1024) NOT NULL, `source_position` BIGINT NOT NULL, '
        'PRIMARY KEY (`binding_name`, `scope_id`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'create_topic_work_budgets': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_work_budgets` (`scope_id` '
        'VARBINARY(1024) NOT NULL, `binding_name` VARCHAR(128) NOT NULL, `source_after` '
        'BIGINT NOT NULL, `furthest_through` BIGINT NOT NULL, `attempt_id` VARCHAR(36) '
        'NOT NULL, `attempt_count` INT NOT NULL, `reserved_requests` BIGINT NOT NULL, '
        '`reserved_tokens` BIGINT NOT NULL, `failure_code` VARCHAR(64), PRIMARY KEY '
        '(`scope_id`, `binding_name`, `source_after`)) DEFAULT CHARSET=utf8mb4 '
        'COLLATE=utf8mb4_bin'
    ),
    'scope_journal_head': (
        'SELECT COALESCE(MAX(`position`), 0) FROM `pc_source_scope_journal` WHERE '
        '`scope_id` = %s'
    ),
    'scope_journal_insert': (
        'INSERT INTO `pc_source_scope_journal` (`scope_id`, `position`, `source_id`, '
        '`lineage_only`) VALUES (%s, %s, %s, %s)'
    ),
    'scope_journal_by_source': (
        'SELECT `source_id`, `scope_id`, `position`, `lineage_only` FROM '
        '`pc_source_scope_journal` WHERE `source_id` IN (%s, %s, %s, %s)'
    ),
    'scope_journal_after': (
        'SELECT `j`.`position`, `j`.`lineage_only`, `s`.`journal_position`, '
        '`s`.`source_id`, `s`.`kind`, `s`.`content`, `s`.`content_hash`, `s`.`uri`, '
        '`s`.`metadata` FROM `pc_source_scope_journal` AS `j` JOIN `sources` AS `s` ON '
        '`s`.`source_id` = `j`.`source_id` WHERE `j`.`scope_id` = %s AND `j`.`position` > '
        '%s ORDER BY `j`.`position` LIMIT %s'
    ),
    'pending_get': (
        'SELECT `binding_name`, `scope_id`, `source_through`, `flush_generation`, '
        '`handled_flush_generation` FROM `pc_artifact_processing_pending` WHERE '
        '`binding_name` = %s AND `scope_id` = %s'
    ),
    'pending_raise': (
        'UPDATE `pc_artifact_processing_pending` SET `source_through` = CASE WHEN '
        '`source_through` < %s THEN %s ELSE `source_through` END WHERE `binding_name` = '
        '%s AND `scope_id` = %s'
    ),
    'pending_insert': (
        'INSERT INTO `pc_artifact_processing_pending` (`binding_name`, `scope_id`, '
        '`source_through`, `flush_generation`, `handled_flush_generation`) VALUES (%s, '
        '%s, %s, %s, %s)'
    ),
    'pending_flush': (
        'UPDATE `pc_artifact_processing_pending` SET `source_through` = CASE WHEN '
        '`source_through` < %s THEN %s ELSE `source_through` END, `flush_generation` = '
        '`flush_generation` + 1 WHERE `binding_name` = %s AND `scope_id` = %s'
    ),
    'status_cursor_get': (
        'SELECT `source_position` FROM `pc_source_cursors` WHERE `binding_name` = %s AND '
        '`scope_id` = %s'
    ),
    'status_budget_get': (
        'SELECT `scope_id`, `binding_name`, `source_after`, `furthest_through`, '
        '`attempt_id`, `attempt_count`, `reserved_requests`, `reserved_tokens`, '
        '`failure_code` FROM `pc_topic_memory_work_budgets` WHERE `scope_id` = %s AND '
        '`binding_name` = %s AND `source_after` = %s'
    ),
    'processing_scopes': (
        'SELECT `scope_id` FROM `pc_source_scope_journal` UNION SELECT `scope_id` FROM '
        '`pc_artifact_processing_pending` WHERE `binding_name` = %s UNION SELECT '
        '`scope_id` FROM `pc_source_cursors` WHERE `binding_name` = %s UNION SELECT '
        '`scope_id` FROM `pc_topic_memory_work_budgets` WHERE `binding_name` = %s'
    ),
    'create_operator_decisions': (
        'CREATE TABLE IF NOT EXISTS `pc_topic_memory_operator_decisions` (`decision_id` V'
        'ARCHAR(36) NOT NULL, `scope_id` VARBINARY(1024) NOT NULL, `binding_name` VARCHAR'
        '(128) NOT NULL, `source_after` BIGINT NOT NULL, `action` VARCHAR(16) NOT NULL, `'
        'position` BIGINT, `source_id` VARCHAR(128), `failure_code` VARCHAR(64) NOT NULL,'
        ' `attempt_count` BIGINT NOT NULL, `reserved_requests` BIGINT NOT NULL, `reserved'
        '_tokens` BIGINT NOT NULL, `decided_by` VARCHAR(512) NOT NULL, `reason` LONGTEXT '
        'NOT NULL, `decided_at` VARCHAR(32) NOT NULL, PRIMARY KEY (`decision_id`)) DEFAUL'
        'T CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'operator_decision_insert': (
        'INSERT INTO `pc_topic_memory_operator_decisions` (`decision_id`, `scope_id`, `bi'
        'nding_name`, `source_after`, `action`, `position`, `source_id`, `failure_code`, '
        '`attempt_count`, `reserved_requests`, `reserved_tokens`, `decided_by`, `reason`,'
        ' `decided_at`) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)'
    ),
    'operator_decisions_get': (
        'SELECT `decision_id`, `scope_id`, `binding_name`, `source_after`, `action`, `pos'
        'ition`, `source_id`, `failure_code`, `attempt_count`, `reserved_requests`, `rese'
        'rved_tokens`, `decided_by`, `reason`, `decided_at` FROM `pc_topic_memory_operato'
        'r_decisions` WHERE `scope_id` = %s ORDER BY `decided_at` DESC, `decision_id` DES'
        'C LIMIT %s'
    ),
    'create_source_scope_uris': (
        'CREATE TABLE IF NOT EXISTS `pc_source_scope_uris` (`scope_id` VARBINARY(1024) NO'
        'T NULL, `uri_hash` CHAR(64) NOT NULL, `position` BIGINT NOT NULL, PRIMARY KEY (`'
        'scope_id`, `uri_hash`, `position`)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'
    ),
    'scope_uri_position': (
        'SELECT `position` FROM `pc_source_scope_uris` WHERE `scope_id` = %s AND `uri_has'
        'h` = %s ORDER BY `position` LIMIT 1'
    ),
    'scope_uri_insert': (
        'INSERT INTO `pc_source_scope_uris` (`scope_id`, `uri_hash`, `position`) VALUES ('
        '%s, %s, %s)'
    ),
    'scope_uris_all': (
        'SELECT `scope_id`, `position` FROM `pc_source_scope_uris`'
    ),
    'scope_journal_uris': (
        'SELECT `j`.`scope_id`, `j`.`position`, `s`.`uri` FROM `pc_source_scope_journal` '
        'AS `j` JOIN `sources` AS `s` ON `s`.`source_id` = `j`.`source_id` WHERE NOT `s`.'
        '`uri` IS NULL'
    ),
}

def _n(name: str) -> int | None:
    return 4 if ":ids" in templates._ALL[name] else None


@pytest.mark.parametrize("dialect, golden", [("sqlite", GOLDEN_PROCESSING_SQLITE),
                                             ("oceanbase", GOLDEN_PROCESSING_OCEANBASE)])
def test_every_processing_template_renders_its_golden_string(dialect: str,
                                                             golden: dict[str, str]) -> None:
    assert set(golden) == set(templates.PROCESSING_TEMPLATES)
    for name, sql in golden.items():
        assert templates.render(name, dialect, _n(name)) == sql, name
    assert set(templates.PROCESSING_TABLES) == {
        sql.split("IF NOT EXISTS ")[1].split(" ")[0].strip('"`')
        for name, sql in golden.items() if name in templates.PROCESSING_SCHEMA}


def _run_every_statement(q, integrity_error: type[BaseException]) -> set[str]:
    """Run every processing statement through ``q(name, params, n)``; the names run."""
    ran: set[str] = set()

    def t(name: str, params: tuple[object, ...] = (), n: int | None = None) -> list[tuple]:
        ran.add(name)
        return q(templates.render(name, DIALECT[0], n), params)

    for name in templates.PROCESSING_SCHEMA:
        t(name)  # idempotent: IF NOT EXISTS on an existing schema
    q(templates.render("source_insert", DIALECT[0]), ("s1", "note", "x", H, None, "[]"))
    q(templates.render("source_insert", DIALECT[0]), ("s2", "note", "y", H, None, "[]"))
    assert t("scope_journal_head", ("repo:/w",)) == [(0,)]
    t("scope_journal_insert", ("repo:/w", 1, "s1", False))
    t("scope_journal_insert", ("repo:/w", 2, "s2", True))
    assert t("scope_journal_head", ("repo:/w",)) == [(2,)]
    t("scope_recorded_insert", ("repo:/w", 1, "2026-12-02T06:00:00.000000Z"))
    with pytest.raises(integrity_error):  # one time per journal row
        q(templates.render("scope_recorded_insert", DIALECT[0]),
          ("repo:/w", 1, "2026-12-02T06:00:00.000000Z"))
    with pytest.raises(integrity_error):  # one Scope per Source
        q(templates.render("scope_journal_insert", DIALECT[0]), ("repo:/x", 1, "s1", False))
    with pytest.raises(integrity_error):  # only stored Sources
        q(templates.render("scope_journal_insert", DIALECT[0]), ("repo:/x", 1, "nope", False))
    rows = t("scope_journal_by_source", ("s1", "s2", None, None), 4)
    assert sorted((_plain(r[0]), _plain(r[1]), int(r[2]), bool(r[3])) for r in rows) == [
        ("s1", "repo:/w", 1, False), ("s2", "repo:/w", 2, True)]
    after = t("scope_journal_after", ("repo:/w", 0, 10))
    assert [(int(r[0]), bool(r[1]), r[3]) for r in after] == [(1, False, "s1"), (2, True, "s2")]
    assert [int(r[0]) for r in t("scope_journal_after", ("repo:/w", 1, 10))] == [2]
    assert t("pending_get", (B, "repo:/w")) == []
    t("pending_raise", (1, 1, B, "repo:/w"))
    assert t("pending_get", (B, "repo:/w")) == []  # UPDATE of no row
    t("pending_insert", (B, "repo:/w", 2, 0, 0))
    t("pending_raise", (1, 1, B, "repo:/w"))  # max(existing, 1) keeps 2
    assert [tuple(map(_plain, r)) for r in t("pending_get", (B, "repo:/w"))] == [
        (B, "repo:/w", 2, 0, 0)]
    t("pending_flush", (5, 5, B, "repo:/w"))
    t("pending_flush", (3, 3, B, "repo:/w"))
    assert [tuple(map(_plain, r)) for r in t("pending_get", (B, "repo:/w"))] == [
        (B, "repo:/w", 5, 2, 0)]
    for bad in ((B, "repo:/c0", 0, 0, 0), (B, "repo:/c1", 1, -1, 0),
                (B, "repo:/c2", 1, 0, -1), (B, "repo:/c3", 1, 1, 2)):
        with pytest.raises(integrity_error):  # the spec's four CHECKs
            q(templates.render("pending_insert", DIALECT[0]), bad)
    assert t("status_cursor_get", (B, "repo:/w")) == []
    q("INSERT INTO pc_source_cursors (binding_name, scope_id, source_position) "
      "VALUES (?, ?, ?)".replace("?", "%s" if DIALECT[0] == "oceanbase" else "?"),
      (B, "repo:/v", 3))
    assert [int(r[0]) for r in t("status_cursor_get", (B, "repo:/v"))] == [3]
    q("INSERT INTO pc_topic_memory_work_budgets (scope_id, binding_name, source_after, "
      "furthest_through, attempt_id, attempt_count, reserved_requests, reserved_tokens, "
      "failure_code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)".replace(
          "?", "%s" if DIALECT[0] == "oceanbase" else "?"),
      ("repo:/u", B, 0, 4, "0" * 36, 1, 2, 300, None))
    assert [tuple(map(_plain, r)) for r in t("status_budget_get", ("repo:/u", B, 0))] == [
        ("repo:/u", B, 0, 4, "0" * 36, 1, 2, 300, None)]
    assert t("status_budget_get", ("repo:/u", B, 1)) == []
    scopes = sorted(_plain(r[0]) for r in t("processing_scopes", (B, B, B)))
    assert scopes == ["repo:/u", "repo:/v", "repo:/w"]
    h1, h2 = "1" * 64, "2" * 64
    t("scope_uri_insert", ("repo:/w", h1, 1))
    t("scope_uri_insert", ("repo:/w", h1, 2))
    with pytest.raises(integrity_error):  # one row per (Scope, hash, position)
        q(templates.render("scope_uri_insert", DIALECT[0]), ("repo:/w", h1, 1))
    assert [int(r[0]) for r in t("scope_uri_position", ("repo:/w", h1))] == [1]
    assert t("scope_uri_position", ("repo:/w", h2)) == []
    assert t("scope_uri_position", ("repo:/x", h1)) == []
    assert sorted((_plain(a), int(b)) for a, b in t("scope_uris_all")) == [
        ("repo:/w", 1), ("repo:/w", 2)]
    assert t("scope_journal_uris") == []  # s1 and s2 have no uri
    at = "2026-12-07T10:00:00.000000Z"
    t("operator_decision_insert", ("1" * 36, "repo:/w", B, 0, "skip", 1, "s1",
                                   "source_complexity_limit", 1, 0, 0, "ops", "too big", at))
    t("operator_decision_insert", ("2" * 36, "repo:/w", B, 1, "grant", None, None,
                                   "window_attempt_limit", 3, 9, 900, "ops", "retry", at))
    rows = t("operator_decisions_get", ("repo:/w", 10))
    assert [(_plain(r[0]), _plain(r[4]), r[5], _plain(r[6])) for r in rows] == [
        ("2" * 36, "grant", None, None), ("1" * 36, "skip", 1, "s1")]
    assert t("operator_decisions_get", ("repo:/x", 10)) == []
    return ran


def _plain(v: object) -> object:
    return v.decode() if isinstance(v, bytes) else v


DIALECT = ["sqlite"]


@pytest.mark.parametrize("family", ["memory", "topic"])
def test_every_processing_statement_executes_on_apsw(tmp_path: Path, family: str) -> None:
    path = tmp_path / "p.db"
    backend = (SQLiteMemoryBackend if family == "memory" else SQLiteTopicBackend)(str(path))
    asyncio.run(backend.open())  # both families create the processing tables at open
    backend.close_sync()
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys=ON")
    DIALECT[0] = "sqlite"
    conn.execute("BEGIN IMMEDIATE")
    ran = _run_every_statement(lambda sql, p: conn.execute(sql, p).fetchall(),
                               apsw.ConstraintError)
    conn.execute("ROLLBACK")
    conn.close()
    assert ran == set(templates.PROCESSING_TEMPLATES)


def test_an_earlier_database_without_the_processing_tables_gets_them_at_open(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    backend = SQLiteMemoryBackend(str(path))
    asyncio.run(backend.open())
    backend.close_sync()
    conn = apsw.Connection(str(path))
    for table in templates.PROCESSING_TABLES:
        conn.execute(f'DROP TABLE "{table}"')
    conn.close()
    for cls in (SQLiteMemoryBackend, SQLiteTopicBackend):
        backend = cls(str(path))
        asyncio.run(backend.open())
        backend.close_sync()
        conn = apsw.Connection(str(path))
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        assert set(templates.PROCESSING_TABLES) <= names, cls
        conn = apsw.Connection(str(path))
        for table in templates.PROCESSING_TABLES:
            conn.execute(f'DROP TABLE "{table}"')
        conn.close()


@pytest.fixture(scope="module")
def ob_conn(seekdb_url: str) -> Iterator[object]:
    import MySQLdb

    with fresh_database(seekdb_url, "pc_processing_sql") as url:
        p = urlsplit(url)
        c = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                            passwd=p.password or "", db=p.path.lstrip("/"),
                            charset="utf8mb4", autocommit=True)
        cur = c.cursor()
        for name in templates.SCHEMA:
            if name != "create_memory_entry_heads":
                cur.execute(templates.render(name, "oceanbase"))
        try:
            yield c
        finally:
            c.close()


@_seekdb_test
def test_every_processing_statement_runs_on_seekdb_and_the_checks_hold(ob_conn) -> None:
    import MySQLdb

    def q(sql: str, params: tuple[object, ...]) -> list[tuple]:
        cur = ob_conn.cursor()
        cur.execute(sql, params or None)
        return list(cur.fetchall())

    DIALECT[0] = "oceanbase"
    try:
        ran = _run_every_statement(q, MySQLdb.Error)
    finally:
        DIALECT[0] = "sqlite"
    assert ran == set(templates.PROCESSING_TEMPLATES)
