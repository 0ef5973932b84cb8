"""The Supervisor SQL (``templates.SUPERVISION_QUERIES`` and the OceanBase lease
fragments of :mod:`powercontext.sql.oceanbase_supervision`): one golden string per
statement and dialect (Topic Memory RFC, "Leader, term, and fencing", "Automatic
scheduling"). The statements run on both engines through the contract kit
(testing/topic_contract_supervision.py) and tests/adapters/
test_oceanbase_supervision.py."""

from __future__ import annotations

import pytest

from powercontext.sql import oceanbase_supervision as lsql
from powercontext.sql import templates

GOLDEN_SUPERVISION_SQLITE = {
    'lease_get': (
        'SELECT "holder_id", "supervisor_generation" FROM "pc_artifact_processing_lease'
        's" WHERE "supervisor_group" = ?'
    ),
    'lease_takeover': (
        'UPDATE "pc_artifact_processing_leases" SET "holder_id" = ?, "supervisor_genera'
        'tion" = "supervisor_generation" + 1, "lease_expires_at" = NULL WHERE "supervis'
        'or_group" = ?'
    ),
    'lease_insert': (
        'INSERT INTO "pc_artifact_processing_leases" ("supervisor_group", "holder_id", '
        '"supervisor_generation", "lease_expires_at") VALUES (?, ?, 1, NULL)'
    ),
    'pending_page': (
        'SELECT "p"."source_through", "p"."flush_generation", "p"."handled_flush_genera'
        'tion", "p"."scope_id" FROM "pc_artifact_processing_pending" AS "p" WHERE "p"."'
        'binding_name" = ? AND "p"."scope_id" > ? AND (? = 0 OR "p"."flush_generation" '
        '> "p"."handled_flush_generation") AND (? IS NULL OR NOT EXISTS(SELECT 1 FROM "'
        'pc_artifact_processing_auto_wave_targets" AS "t" WHERE "t"."wave_id" = ? AND "'
        't"."binding_name" = "p"."binding_name" AND "t"."scope_id" = "p"."scope_id")) O'
        'RDER BY "p"."scope_id" LIMIT ?'
    ),
    'binding_state_get': (
        'SELECT "last_auto_wave_completed_at" FROM "pc_artifact_processing_binding_stat'
        'es" WHERE "binding_name" = ?'
    ),
    'binding_state_set': (
        'UPDATE "pc_artifact_processing_binding_states" SET "last_auto_wave_completed_a'
        't" = ? WHERE "binding_name" = ?'
    ),
    'binding_state_insert': (
        'INSERT INTO "pc_artifact_processing_binding_states" ("binding_name", "last_aut'
        'o_wave_completed_at") VALUES (?, ?)'
    ),
    'targets_clear': (
        'DELETE FROM "pc_artifact_processing_auto_wave_targets" WHERE "binding_name" = '
        '?'
    ),
    'targets_freeze': (
        'INSERT INTO "pc_artifact_processing_auto_wave_targets" ("wave_id", "binding_na'
        'me", "scope_id", "source_through", "completed") SELECT ?, "binding_name", "sco'
        'pe_id", "source_through", FALSE FROM "pc_artifact_processing_pending" WHERE "b'
        'inding_name" = ?'
    ),
    'targets_page': (
        'SELECT "scope_id", "source_through", "completed" FROM "pc_artifact_processing_'
        'auto_wave_targets" WHERE "wave_id" = ? AND "binding_name" = ? AND "completed" '
        '= FALSE AND "scope_id" > ? ORDER BY "scope_id" LIMIT ?'
    ),
    'target_get': (
        'SELECT "source_through", "completed" FROM "pc_artifact_processing_auto_wave_ta'
        'rgets" WHERE "wave_id" = ? AND "binding_name" = ? AND "scope_id" = ?'
    ),
    'target_complete': (
        'UPDATE "pc_artifact_processing_auto_wave_targets" SET "completed" = TRUE WHERE'
        ' "wave_id" = ? AND "binding_name" = ? AND "scope_id" = ?'
    ),
    'targets_count': (
        'SELECT COUNT(*) FROM "pc_artifact_processing_auto_wave_targets" WHERE "wave_id'
        '" = ? AND "binding_name" = ?'
    ),
    'targets_uncovered': (
        'SELECT COUNT(*) FROM "pc_artifact_processing_auto_wave_targets" AS "t" LEFT JO'
        'IN "pc_source_cursors" AS "c" ON "c"."binding_name" = "t"."binding_name" AND "'
        'c"."scope_id" = "t"."scope_id" WHERE "t"."wave_id" = ? AND "t"."binding_name" '
        '= ? AND COALESCE("c"."source_position", 0) < "t"."source_through"'
    ),
    'wave_pending_delete': (
        'DELETE FROM "pc_artifact_processing_pending" WHERE "binding_name" = ? AND "sco'
        'pe_id" IN (SELECT "scope_id" FROM "pc_artifact_processing_auto_wave_targets" W'
        'HERE "wave_id" = ? AND "binding_name" = ?) AND "handled_flush_generation" = "f'
        'lush_generation" AND EXISTS(SELECT 1 FROM "pc_source_cursors" AS "c" WHERE "c"'
        '."binding_name" = "pc_artifact_processing_pending"."binding_name" AND "c"."sco'
        'pe_id" = "pc_artifact_processing_pending"."scope_id" AND "c"."source_position"'
        ' >= "pc_artifact_processing_pending"."source_through")'
    ),
    'targets_delete': (
        'DELETE FROM "pc_artifact_processing_auto_wave_targets" WHERE "wave_id" = ? AND'
        ' "binding_name" = ?'
    ),
}


GOLDEN_SUPERVISION_OCEANBASE = {
    'lease_get': (
        'SELECT `holder_id`, `supervisor_generation` FROM `pc_artifact_processing_lease'
        's` WHERE `supervisor_group` = %s'
    ),
    'lease_takeover': (
        'UPDATE `pc_artifact_processing_leases` SET `holder_id` = %s, `supervisor_gener'
        'ation` = `supervisor_generation` + 1, `lease_expires_at` = NULL WHERE `supervi'
        'sor_group` = %s'
    ),
    'lease_insert': (
        'INSERT INTO `pc_artifact_processing_leases` (`supervisor_group`, `holder_id`, '
        '`supervisor_generation`, `lease_expires_at`) VALUES (%s, %s, 1, NULL)'
    ),
    'pending_page': (
        'SELECT `p`.`source_through`, `p`.`flush_generation`, `p`.`handled_flush_genera'
        'tion`, `p`.`scope_id` FROM `pc_artifact_processing_pending` AS `p` WHERE `p`.`'
        'binding_name` = %s AND `p`.`scope_id` > %s AND (%s = 0 OR `p`.`flush_generatio'
        'n` > `p`.`handled_flush_generation`) AND (%s IS NULL OR NOT EXISTS(SELECT 1 FR'
        'OM `pc_artifact_processing_auto_wave_targets` AS `t` WHERE `t`.`wave_id` = %s '
        'AND `t`.`binding_name` = `p`.`binding_name` AND `t`.`scope_id` = `p`.`scope_id'
        '`)) ORDER BY `p`.`scope_id` LIMIT %s'
    ),
    'binding_state_get': (
        'SELECT `last_auto_wave_completed_at` FROM `pc_artifact_processing_binding_stat'
        'es` WHERE `binding_name` = %s'
    ),
    'binding_state_set': (
        'UPDATE `pc_artifact_processing_binding_states` SET `last_auto_wave_completed_a'
        't` = %s WHERE `binding_name` = %s'
    ),
    'binding_state_insert': (
        'INSERT INTO `pc_artifact_processing_binding_states` (`binding_name`, `last_aut'
        'o_wave_completed_at`) VALUES (%s, %s)'
    ),
    'targets_clear': (
        'DELETE FROM `pc_artifact_processing_auto_wave_targets` WHERE `binding_name` = '
        '%s'
    ),
    'targets_freeze': (
        'INSERT INTO `pc_artifact_processing_auto_wave_targets` (`wave_id`, `binding_na'
        'me`, `scope_id`, `source_through`, `completed`) SELECT %s, `binding_name`, `sc'
        'ope_id`, `source_through`, FALSE FROM `pc_artifact_processing_pending` WHERE `'
        'binding_name` = %s'
    ),
    'targets_page': (
        'SELECT `scope_id`, `source_through`, `completed` FROM `pc_artifact_processing_'
        'auto_wave_targets` WHERE `wave_id` = %s AND `binding_name` = %s AND `completed'
        '` = FALSE AND `scope_id` > %s ORDER BY `scope_id` LIMIT %s'
    ),
    'target_get': (
        'SELECT `source_through`, `completed` FROM `pc_artifact_processing_auto_wave_ta'
        'rgets` WHERE `wave_id` = %s AND `binding_name` = %s AND `scope_id` = %s'
    ),
    'target_complete': (
        'UPDATE `pc_artifact_processing_auto_wave_targets` SET `completed` = TRUE WHERE'
        ' `wave_id` = %s AND `binding_name` = %s AND `scope_id` = %s'
    ),
    'targets_count': (
        'SELECT COUNT(*) FROM `pc_artifact_processing_auto_wave_targets` WHERE `wave_id'
        '` = %s AND `binding_name` = %s'
    ),
    'targets_uncovered': (
        'SELECT COUNT(*) FROM `pc_artifact_processing_auto_wave_targets` AS `t` LEFT JO'
        'IN `pc_source_cursors` AS `c` ON `c`.`binding_name` = `t`.`binding_name` AND `'
        'c`.`scope_id` = `t`.`scope_id` WHERE `t`.`wave_id` = %s AND `t`.`binding_name`'
        ' = %s AND COALESCE(`c`.`source_position`, 0) < `t`.`source_through`'
    ),
    'wave_pending_delete': (
        'DELETE FROM `pc_artifact_processing_pending` WHERE `binding_name` = %s AND `sc'
        'ope_id` IN (SELECT `scope_id` FROM `pc_artifact_processing_auto_wave_targets` '
        'WHERE `wave_id` = %s AND `binding_name` = %s) AND `handled_flush_generation` ='
        ' `flush_generation` AND EXISTS(SELECT 1 FROM `pc_source_cursors` AS `c` WHERE '
        '`c`.`binding_name` = `pc_artifact_processing_pending`.`binding_name` AND `c`.`'
        'scope_id` = `pc_artifact_processing_pending`.`scope_id` AND `c`.`source_positi'
        'on` >= `pc_artifact_processing_pending`.`source_through`)'
    ),
    'targets_delete': (
        'DELETE FROM `pc_artifact_processing_auto_wave_targets` WHERE `wave_id` = %s AN'
        'D `binding_name` = %s'
    ),
}


GOLDEN_LEASE_FRAGMENTS = {
    'lease_insert': (
        'INSERT INTO pc_artifact_processing_leases (supervisor_group, holder_id, superv'
        'isor_generation, lease_expires_at) VALUES (%s, %s, 1, UTC_TIMESTAMP(6) + INTER'
        'VAL %s MICROSECOND)'
    ),
    'lease_takeover': (
        'UPDATE pc_artifact_processing_leases SET holder_id = %s, supervisor_generation'
        ' = supervisor_generation + 1, lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL %'
        's MICROSECOND WHERE supervisor_group = %s AND (lease_expires_at IS NULL OR lea'
        'se_expires_at <= UTC_TIMESTAMP(6))'
    ),
    'lease_renew': (
        'UPDATE pc_artifact_processing_leases SET lease_expires_at = UTC_TIMESTAMP(6) +'
        ' INTERVAL %s MICROSECOND WHERE supervisor_group = %s AND holder_id = %s AND su'
        'pervisor_generation = %s AND lease_expires_at IS NOT NULL AND lease_expires_at'
        ' > UTC_TIMESTAMP(6)'
    ),
    'lease_release': (
        'UPDATE pc_artifact_processing_leases SET lease_expires_at = UTC_TIMESTAMP(6) -'
        ' INTERVAL 1 SECOND WHERE supervisor_group = %s AND holder_id = %s AND supervis'
        'or_generation = %s AND lease_expires_at IS NOT NULL AND lease_expires_at > UTC'
        '_TIMESTAMP(6)'
    ),
    'lease_locked_False': (
        'SELECT holder_id, supervisor_generation, (lease_expires_at IS NOT NULL AND lea'
        'se_expires_at > UTC_TIMESTAMP(6)) FROM pc_artifact_processing_leases WHERE sup'
        'ervisor_group = %s'
    ),
    'lease_locked_True': (
        'SELECT holder_id, supervisor_generation, (lease_expires_at IS NOT NULL AND lea'
        'se_expires_at > UTC_TIMESTAMP(6)) FROM pc_artifact_processing_leases WHERE sup'
        'ervisor_group = %s FOR UPDATE'
    ),
}


@pytest.mark.parametrize("dialect, golden", [("sqlite", GOLDEN_SUPERVISION_SQLITE),
                                             ("oceanbase", GOLDEN_SUPERVISION_OCEANBASE)])
def test_every_supervision_template_renders_its_golden_string(dialect, golden):
    assert set(golden) == set(templates.SUPERVISION_QUERIES)
    for name, sql in golden.items():
        assert templates.render(name, dialect) == sql, name


def test_the_oceanbase_lease_fragments_read_the_database_clock():
    for name, sql in GOLDEN_LEASE_FRAGMENTS.items():
        if name.startswith("lease_locked_"):
            assert lsql.lease_locked(name.endswith("True")) == sql
        else:
            assert getattr(lsql, name)() == sql, name
        assert "UTC_TIMESTAMP(6)" in sql and "NOW(" not in sql
    assert GOLDEN_LEASE_FRAGMENTS["lease_locked_True"].endswith(" FOR UPDATE")
