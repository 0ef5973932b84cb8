"""The engine-neutral storage composed with an engine and no family (Memory RFC,
"Sources", "Concurrency and transactions"; Topic Memory RFC, "Source, Window, Cursor,
and Pending"): :class:`SQLStorage` given a :class:`SQLiteEngine` or an
:class:`OceanBaseEngine` (no per-engine storage class) stores Sources, journals them in
a Scope, keeps metadata, and rolls a failed transaction back, the same on both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from oceanbase_server import fresh_database, seekdb_available

from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.sqlite.engine import SQLiteEngine
from powercontext.adapters.storage.sources import SourceJournal
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import Source
from powercontext.sql import templates

from .conftest import run

_DDL = [*templates.SCHEMA, *templates.PROCESSING_SCHEMA]


class SharedTablesOnly(SQLStorage[str]):
    """:class:`SQLStorage` over ``engine`` with the shared tables and no family, and
    its Source store (``source_journal``); ``create(engine)`` makes the tables."""

    def __init__(self, engine: Any, create: Callable[[Any], None]) -> None:
        super().__init__()
        self._use_engine(engine)
        self._create = create
        self.source_journal = SourceJournal(self)

    def _open_sync(self) -> str:
        self._connect_sync()
        return self.engine.opening(self._schema)

    def _schema(self) -> str:
        self._create(self.engine)
        return "opened"


def _sqlite_tables(engine: SQLiteEngine) -> None:
    for name in _DDL:
        engine.rows(templates.render(name, "sqlite"))


def _oceanbase_tables(engine: OceanBaseEngine) -> None:
    for name in _DDL:
        engine.run_ddl(templates.render(name, "oceanbase"))
    engine.seed_meta([("journal_lock", "0")])


def _src(name: str, content: str | None = None) -> Source:
    return canonical.make_source(name, "user_note", content or f"evidence {name}",
                                 uri=f"file:///{name}")


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=[
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL")])])
def storage_of(request: pytest.FixtureRequest,
               tmp_path: Path) -> Iterator[Callable[[], SharedTablesOnly]]:
    if request.param == "sqlite":
        path = str(tmp_path / "s.db")
        yield lambda: SharedTablesOnly(SQLiteEngine(path), _sqlite_tables)
        return
    server = request.getfixturevalue("seekdb_url")
    with fresh_database(server, "pc_sql_storage") as url:
        yield lambda: SharedTablesOnly(OceanBaseEngine(url), _oceanbase_tables)


def test_sources_and_their_scope_journal_through_any_engine(storage_of) -> None:
    s = storage_of()
    j = s.source_journal
    try:
        assert run(s.capabilities()) == "opened"
        assert run(j.put_sources([_src("a"), _src("b")])) == (1, 2)
        assert run(j.put_sources([_src("b"), _src("a")])) == (2, 1)  # kept once
        assert run(j.put_scoped_sources("repo:/x", [_src("c"), _src("a")])) == (1, 2)
        assert run(j.source_head("repo:/x")) == 2
        assert [e.source.source_id for e in run(j.scope_journal("repo:/x"))] == ["c", "a"]
        assert run(j.scope_position_of_uri("repo:/x", "file:///c")) == 1
        assert run(j.processing_cursor("topic-memory-source-window", "repo:/x")) == 0
        with pytest.raises(InvalidInputError):  # another content under a stored id
            run(j.put_sources([_src("d"), _src("a", "other content")]))
        run(s._run(s._in_tx, True, s._meta_set_sync, "k", "v"))
    finally:
        run(s.close())
    again = storage_of()  # a new storage and engine on the same database
    try:
        assert [src.source_id for _, src in run(again.source_journal.journal())] == ["a", "b", "c"]
        assert run(again._run(again._in_tx, False, again._meta_get_sync, "k")) == "v"
    finally:
        run(again.close())


def test_a_failed_transaction_leaves_nothing_through_any_engine(storage_of) -> None:
    s = storage_of()
    j = s.source_journal

    def put_then_fail() -> None:
        s._put_sources_sync([_src("lost")])
        s._meta_set_sync("lost", "1")
        raise RuntimeError("after the writes")

    try:
        run(s.open())
        with pytest.raises(RuntimeError):
            run(s._run(s._in_tx, True, put_then_fail))
        assert run(j.journal()) == ()
        assert run(s._run(s._in_tx, False, s._meta_get_sync, "lost")) is None
        assert run(j.put_sources([_src("kept")])) == (1,)  # no position was used up
    finally:
        run(s.close())
