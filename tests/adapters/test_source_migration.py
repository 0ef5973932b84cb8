"""A database of the earlier release opens and keeps working after Source ids stopped
being content hashes (Topic Memory RFC, "Source, Window, Cursor, and Pending": every
Source add creates a new Source): the additive tables are created at open
(``pc_source_scope_uris``, backfilled once from the old journal, and
``pc_topic_memory_operator_decisions``), nothing else changes.

On SQLite the database is one written by the code of commit 5df0e0a
(``tests/data/db_before_scope_uris.sql``); on both engines a database written now
and taken back to that release's schema (the new tables dropped, the migration's meta
key removed) is opened again. Memory bytes and hashes are unchanged (the write golden
test holds the hashes of new writes)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import apsw
import pytest

from powercontext import MemoryEntryInput, make_source, open_service, open_topic_service
from powercontext.adapters.storage.sources import SourceJournal

DUMP = Path(__file__).resolve().parents[1] / "data" / "db_before_scope_uris.sql"
SCOPE = "repo:/old/project"
TURN = "claude-code://session/s1/turn/t{}"
NEW_TABLES = ("pc_source_scope_uris", "pc_topic_memory_operator_decisions")


def _load_dump(path: Path) -> str:
    conn = apsw.Connection(str(path))
    conn.execute(DUMP.read_text(encoding="utf-8"))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    conn.close()
    assert not tables & set(NEW_TABLES)  # the earlier release's schema
    return str(path)


def test_a_database_written_by_the_earlier_release_opens_and_keeps_working(tmp_path):
    db = _load_dump(tmp_path / "old.db")

    conn = apsw.Connection(db)
    ((memory_id, stored_hash),) = conn.execute(
        "SELECT artifact_id, content_hash FROM artifact_revisions WHERE family = 'memory'"
    ).fetchall()
    conn.close()

    async def body() -> None:
        async with open_service(db, embedding="none") as mem:
            await _memory_reads(mem, memory_id, stored_hash, "Use uv, not pip.",
                                "src_note_1")
        async with open_topic_service(db, embedding="none") as svc:
            b = svc.backend
            # the old journal's uris were backfilled: a redelivered turn adds nothing
            assert [await b.scope_position_of_uri(SCOPE, TURN.format(i))
                    for i in (1, 2, 3)] == [1, 2, 3]
            again = make_source("src_fresh_1", "conversation", "User:\nship it",
                                TURN.format(2))
            assert await b.put_scoped_sources(SCOPE, [again], once_per_uri=True) == (2,)
            # every add of a new Source is a new position after the old ones
            new = [make_source(f"src_fresh_{i}", "conversation", "User:\nship it")
                   for i in (2, 3)]
            assert await b.put_scoped_sources(SCOPE, new) == (5, 6)
            (hit,) = (await svc.search(SCOPE, "release wheel")).hits
            revision = await svc.get(SCOPE, hit.ref)
            assert [s.source_id for s in revision.sources] == ["src_file_1"]
            (blocked,) = await svc.blocked()
            assert (blocked.scope_id, blocked.position) == ("repo:/old/blocked", 1)
            decision = await svc.unblock("repo:/old/blocked", "skip", frontier=0,
                                         position=1, decided_by="ops", reason="old data")
            assert decision.source_id == "src_big"
        conn = apsw.Connection(db)
        assert conn.execute("SELECT value FROM powercontext_meta WHERE key = ?",
                            (SourceJournal.SCOPE_URIS_KEY,)).fetchall() == [("1",)]
        conn.close()

    asyncio.run(body())


async def _memory_reads(mem, memory_id: str, content_hash: str, text: str,
                        source_id: str) -> None:
    """The Memory's head, its hash as stored, its entry and its search hit."""
    from powercontext.core.models import CurrentHead

    ref = await mem.head(memory_id)
    assert (await mem.revision(ref)).content_hash == content_hash
    (entry,) = (await mem.entries(ref)).values()
    assert entry.text == text and [s.source_id for s in entry.sources] == [source_id]
    result = await mem.search(text.split()[-1].strip("."), [CurrentHead(memory_id)])
    assert [h.text for h in result.hits] == [text]


async def _write_then(db: str, scope: str) -> tuple[str, str]:
    """Memory and scoped Sources written now; the Memory's id and content hash."""
    async with open_service(db, embedding="none") as mem:
        note = make_source("src_m_note", "user_note", "Deploys go out on Tuesdays.")
        ref = await mem.remember(None, sources=(note,), entries=(MemoryEntryInput(
            "fact", "Deploys go out on Tuesdays.", sources=(note,)),), mode="append")
        content_hash = (await mem.revision(ref)).content_hash
    async with open_topic_service(db, embedding="none") as svc:
        turns = [make_source(f"src_t{i}", "conversation", f"User:\nturn {i}",
                             TURN.format(i)) for i in (1, 2)]
        assert await svc.add_sources(scope, turns) == (1, 2)
    return ref.artifact_id, content_hash


@pytest.fixture(params=["sqlite", pytest.param("seekdb", marks=pytest.mark.oceanbase)])
def engine_db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "m.db")
        return
    from oceanbase_server import fresh_database

    with fresh_database(request.getfixturevalue("seekdb_url"), "pcmigr") as url:
        yield "seekdb", url


def _to_earlier_schema(engine: str, db: str) -> None:
    """Drop what this release added, as a database of the earlier release is."""
    if engine == "sqlite":
        conn = apsw.Connection(db)
        for table in NEW_TABLES:
            conn.execute(f'DROP TABLE "{table}"')
        conn.execute("DELETE FROM powercontext_meta WHERE key = ?", (SourceJournal.SCOPE_URIS_KEY,))
        conn.close()
        return
    import MySQLdb

    p = urlsplit(db)
    conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                           passwd=p.password or "", db=p.path.lstrip("/"), autocommit=True)
    cur = conn.cursor()
    for table in NEW_TABLES:
        cur.execute(f"DROP TABLE `{table}`")
    cur.execute("DELETE FROM powercontext_meta WHERE `key` = %s", (SourceJournal.SCOPE_URIS_KEY,))
    conn.close()


def test_both_engines_backfill_the_uris_of_an_earlier_journal_once(engine_db):
    engine, db = engine_db
    scope = "repo:/w/earlier"

    async def body() -> None:
        memory_id, memory_hash = await _write_then(db, scope)
        _to_earlier_schema(engine, db)
        async with open_topic_service(db, embedding="none") as svc:
            b = svc.backend
            assert await b.scope_position_of_uri(scope, TURN.format(2)) == 2
            dup = make_source("src_t2_again", "conversation", "User:\nturn 2",
                              TURN.format(2))
            assert await b.put_scoped_sources(scope, [dup], once_per_uri=True) == (2,)
            assert await b.put_scoped_sources(scope, [make_source(
                "src_t3", "conversation", "User:\nturn 3", TURN.format(3))]) == (3,)
            assert await b.scope_position_of_uri(scope, TURN.format(3)) == 3
            assert await b.operator_decisions(scope) == ()
        async with open_service(db, embedding="none") as mem:  # the other family opens
            await _memory_reads(mem, memory_id, memory_hash, "Deploys go out on Tuesdays.",
                                "src_m_note")
        async with open_topic_service(db, embedding="none") as svc:  # the backfill once
            assert await svc.backend.scope_position_of_uri(scope, TURN.format(1)) == 1

    asyncio.run(body())
