"""The chaos harness itself: the ``chaos`` provider loads by its configuration name in
another process (through its entry point, as a Worker child will load it), and the
quiescence checker passes a clean run and catches each invariant broken by hand (so a
fault test that ends with it cannot pass vacuously)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.chaos import ChaosEnv, seed_sources, write_config
from support.chaos_check import CursorRecorder, check_quiescent, opened
from support.chaos_model import calls
from support.cli import cli_argv

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.subprocess]

TEXTS = {
    "chaos:a": [f"# Topic {i % 3}\n\nnote {i} about deploys and releases" for i in range(9)],
    "chaos:b": [f"# Other {i % 2}\n\nsomething {i} else" for i in range(5)],
}


def _process(chaos: ChaosEnv, db: str, config: Path, scope: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*cli_argv(), "--db", db, "--json", "topic", "process", "--scope",
                             scope, "--once", "--config", str(config)], env=chaos.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _processed(chaos: ChaosEnv, db: str) -> None:
    config = write_config(chaos.root / "config.toml", window_limit=4)
    seed_sources(db, TEXTS)
    recorder = CursorRecorder(db).start()
    for scope in TEXTS:
        proc = _process(chaos, db, config, scope)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (out, err)
    recorder.check()
    assert recorder.samples["chaos:a"][-1] == 9


def test_chaos_provider_is_loaded_by_name_in_another_process(chaos, db_url):
    _processed(chaos, db_url)
    pids = {pid for pid, _stage in calls(chaos.control)}
    assert len(pids) == 2  # one `topic process` per Scope, each called the chaos provider
    assert {stage for _pid, stage in calls(chaos.control)} >= {"probe", "evolve"}
    counted = check_quiescent(db_url)
    assert counted["publications"] == {"chaos:a": 3, "chaos:b": 2}  # one per Window


def test_blocked_provider_holds_the_window_until_released(chaos, sqlite_url):
    config = write_config(chaos.root / "config.toml", window_limit=4)
    seed_sources(sqlite_url, {"chaos:a": TEXTS["chaos:a"]})
    chaos.block()
    proc = _process(chaos, sqlite_url, config, "chaos:a")
    try:
        from support.chaos import wait_for

        pid = wait_for(lambda: chaos.blocked_pids(), 60, "a blocked stage call").pop()
        assert pid == proc.pid
        with opened(sqlite_url) as db:
            assert db.rows("SELECT COUNT(*) FROM pc_source_cursors") == [(0,)]
        chaos.unblock()
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (out, err)
    finally:
        chaos.unblock()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check_quiescent(sqlite_url, scopes=["chaos:a"])


def _broken(db_url: str, statements: list[tuple[str, tuple]]) -> str:
    with opened(db_url) as db:
        for sql, params in statements:
            db.rows(sql, params)
    with pytest.raises(AssertionError) as caught:
        check_quiescent(db_url)
    return str(caught.value)


def test_quiescence_checker_catches_each_broken_invariant(chaos, db_url, tmp_path):
    _processed(chaos, db_url)
    check_quiescent(db_url)
    with opened(db_url) as db:
        # the first and the last Window's Revisions of chaos:a and a Source of the first
        late = db.rows("SELECT p.artifact_id, p.revision FROM "
                       "pc_topic_memory_revision_publications AS p WHERE p.scope_id = ? "
                       "ORDER BY p.published_at DESC, p.artifact_id LIMIT 1", ("chaos:a",))[0]
        early_source = db.rows("SELECT j.source_id, s.content_hash FROM "
                               "pc_source_scope_journal AS j JOIN sources AS s ON "
                               "s.source_id = j.source_id WHERE j.scope_id = ? AND "
                               "j.position = 1", ("chaos:a",))[0]
        fts = not db.oceanbase
    # a Window published twice: a later Revision citing a Source of the first Window
    assert "published twice" in _broken(db_url, [(
        "INSERT INTO pc_artifact_lineage_sources (artifact_id, revision, source_id, "
        "source_content_hash) VALUES (?, ?, ?, ?)", (*late, *early_source))])
    with opened(db_url) as db:
        db.rows("DELETE FROM pc_artifact_lineage_sources WHERE artifact_id = ? AND "
                "revision = ? AND source_id = ?", (*late, early_source[0]))
    check_quiescent(db_url)
    assert "Pending not empty" in _broken(db_url, [(
        "INSERT INTO pc_artifact_processing_pending (binding_name, scope_id, source_through, "
        "flush_generation, handled_flush_generation) VALUES "
        "('topic-memory-source-window', 'chaos:a', 9, 1, 0)", ())])
    assert "Cursor not at the Source head" in _broken(db_url, [(
        "DELETE FROM pc_artifact_processing_pending", ()), (
        "UPDATE pc_source_cursors SET source_position = 8 WHERE scope_id = 'chaos:a'", ())])
    assert "orphan or stale chunk" in _broken(db_url, [(
        "UPDATE pc_source_cursors SET source_position = 9 WHERE scope_id = 'chaos:a'", ()), (
        "UPDATE pc_topic_memory_active_chunks SET revision = 1 WHERE revision > 1", ())])
    if fts:
        from powercontext.sql import sqlite as frag

        message = _broken(db_url, [(
            "UPDATE pc_topic_memory_active_chunks SET revision = (SELECT t.revision FROM "
            "pc_topic_memory_active_topics AS t WHERE t.artifact_id = "
            "pc_topic_memory_active_chunks.artifact_id)", ()), (
            f'DELETE FROM "{frag.CHUNK_FTS_TABLE}" WHERE rowid = (SELECT MIN(rowid) FROM '
            f'"{frag.CHUNK_FTS_TABLE}")', ())])
        assert "active rows without a row" in message
