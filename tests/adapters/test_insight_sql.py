"""Golden strings of the dashboard's read statements (``templates.INSIGHT_QUERIES``,
issue 17) per dialect; tests/adapters/test_insight_reads.py executes every one of them
on SQLite and on seekdb."""

from __future__ import annotations

import pytest

from powercontext.sql import templates

GOLDEN_SQLITE = {
    'insight_entry_kinds': (
        'SELECT "entry_version_id", "kind" FROM "memory_entry_versions" WHERE '
        '"memory_artifact_id" = ?'
    ),
    'insight_citing_versions': (
        'SELECT "memory_artifact_id", "entry_id", "entry_version_id", "version", '
        '"previous_version_id", "kind", "text", "source_refs", "artifact_refs", '
        '"entry_content_hash", "created_in_revision" FROM "memory_entry_versions" '
        'WHERE "source_refs" LIKE ? AND "entry_version_id" > ? ORDER BY '
        '"entry_version_id" LIMIT ?'
    ),
    'insight_citing_revisions': (
        'SELECT "l"."artifact_id", "l"."revision", "p"."scope_id", "p"."published_at"'
        ' FROM "pc_artifact_lineage_sources" AS "l" JOIN '
        '"pc_topic_memory_revision_publications" AS "p" ON "p"."artifact_id" = '
        '"l"."artifact_id" AND "p"."revision" = "l"."revision" WHERE "l"."source_id" '
        '= ? ORDER BY "l"."artifact_id", "l"."revision" LIMIT ?'
    ),
    'insight_source_days': (
        'SELECT SUBSTRING("recorded_at", 1, 10) AS "day", COUNT(*) FROM '
        '"pc_source_scope_recorded" WHERE "scope_id" = ? GROUP BY '
        'SUBSTRING("recorded_at", 1, 10) ORDER BY "day"'
    ),
    'insight_scope_sources': (
        'SELECT "scope_id", MAX("position") FROM "pc_source_scope_journal" GROUP BY '
        '"scope_id"'
    ),
    'insight_scope_topics': (
        'SELECT "scope_id", COUNT(*) FROM "pc_topic_memory_active_topics" GROUP BY '
        '"scope_id"'
    ),
    'insight_scope_revisions': (
        'SELECT "scope_id", COUNT(*) FROM "pc_topic_memory_revision_publications" '
        'GROUP BY "scope_id"'
    ),
    'insight_publication_days': (
        'SELECT SUBSTRING("published_at", 1, 10) AS "day", COUNT(*) FROM '
        '"pc_topic_memory_revision_publications" WHERE "scope_id" = ? GROUP BY '
        'SUBSTRING("published_at", 1, 10) ORDER BY "day"'
    ),
    'insight_topic_publications': (
        'SELECT "revision" FROM "pc_topic_memory_revision_publications" WHERE '
        '"artifact_id" = ? AND "scope_id" = ? ORDER BY "revision" DESC LIMIT ?'
    ),
    'insight_lease': (
        'SELECT "holder_id", "supervisor_generation", "lease_expires_at" FROM '
        '"pc_artifact_processing_leases" WHERE "supervisor_group" = ?'
    ),
    'insight_waves': (
        'SELECT "wave_id", COUNT(*), SUM(CASE WHEN "completed" = TRUE THEN 1 ELSE 0 '
        'END) FROM "pc_artifact_processing_auto_wave_targets" WHERE "binding_name" = '
        '? GROUP BY "wave_id" ORDER BY "wave_id"'
    ),
}

GOLDEN_OCEANBASE = {
    'insight_entry_kinds': (
        'SELECT `entry_version_id`, `kind` FROM `memory_entry_versions` WHERE '
        '`memory_artifact_id` = %s'
    ),
    'insight_citing_versions': (
        'SELECT `memory_artifact_id`, `entry_id`, `entry_version_id`, `version`, '
        '`previous_version_id`, `kind`, `text`, `source_refs`, `artifact_refs`, '
        '`entry_content_hash`, `created_in_revision` FROM `memory_entry_versions` '
        'WHERE `source_refs` LIKE %s AND `entry_version_id` > %s ORDER BY '
        '`entry_version_id` LIMIT %s'
    ),
    'insight_citing_revisions': (
        'SELECT `l`.`artifact_id`, `l`.`revision`, `p`.`scope_id`, `p`.`published_at`'
        ' FROM `pc_artifact_lineage_sources` AS `l` JOIN '
        '`pc_topic_memory_revision_publications` AS `p` ON `p`.`artifact_id` = '
        '`l`.`artifact_id` AND `p`.`revision` = `l`.`revision` WHERE `l`.`source_id` '
        '= %s ORDER BY `l`.`artifact_id`, `l`.`revision` LIMIT %s'
    ),
    'insight_source_days': (
        'SELECT SUBSTRING(`recorded_at`, 1, 10) AS `day`, COUNT(*) FROM '
        '`pc_source_scope_recorded` WHERE `scope_id` = %s GROUP BY '
        'SUBSTRING(`recorded_at`, 1, 10) ORDER BY `day`'
    ),
    'insight_scope_sources': (
        'SELECT `scope_id`, MAX(`position`) FROM `pc_source_scope_journal` GROUP BY '
        '`scope_id`'
    ),
    'insight_scope_topics': (
        'SELECT `scope_id`, COUNT(*) FROM `pc_topic_memory_active_topics` GROUP BY '
        '`scope_id`'
    ),
    'insight_scope_revisions': (
        'SELECT `scope_id`, COUNT(*) FROM `pc_topic_memory_revision_publications` '
        'GROUP BY `scope_id`'
    ),
    'insight_publication_days': (
        'SELECT SUBSTRING(`published_at`, 1, 10) AS `day`, COUNT(*) FROM '
        '`pc_topic_memory_revision_publications` WHERE `scope_id` = %s GROUP BY '
        'SUBSTRING(`published_at`, 1, 10) ORDER BY `day`'
    ),
    'insight_topic_publications': (
        'SELECT `revision` FROM `pc_topic_memory_revision_publications` WHERE '
        '`artifact_id` = %s AND `scope_id` = %s ORDER BY `revision` DESC LIMIT %s'
    ),
    'insight_lease': (
        'SELECT `holder_id`, `supervisor_generation`, `lease_expires_at` FROM '
        '`pc_artifact_processing_leases` WHERE `supervisor_group` = %s'
    ),
    'insight_waves': (
        'SELECT `wave_id`, COUNT(*), SUM(CASE WHEN `completed` = TRUE THEN 1 ELSE 0 '
        'END) FROM `pc_artifact_processing_auto_wave_targets` WHERE `binding_name` = '
        '%s GROUP BY `wave_id` ORDER BY `wave_id`'
    ),
}


@pytest.mark.parametrize("dialect, golden", [("sqlite", GOLDEN_SQLITE),
                                             ("oceanbase", GOLDEN_OCEANBASE)])
def test_every_insight_statement_renders_its_golden_string(dialect: str,
                                                           golden: dict[str, str]) -> None:
    assert set(golden) == set(templates.INSIGHT_QUERIES)
    for name, sql in golden.items():
        assert templates.render(name, dialect) == sql, name
