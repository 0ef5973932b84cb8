"""SQLiteStorage: the engine-neutral :class:`~powercontext.adapters.storage.sql_storage.
SQLStorage` on a :class:`~powercontext.adapters.sqlite.engine.SQLiteEngine` it builds
(Memory RFC, "SQLite adapter"). The engine owns the connection, its lifecycle,
transactions, error mapping, metadata and Source positions; this class only builds it
from a path, opens a family's schema through it (:meth:`SQLiteStorage._open_sync` runs
the family's ``_setup_sync`` inside :meth:`SQLiteEngine.opening`), and keeps the
engine's SQLite-only calls under the names the family modules still use (``_execute``,
``_t``, ``_select_in``, ``_exists_sync`` ...: each one line, forwarded to the engine).

A family's SQLite backend subclasses it together with its family base class, calls
:meth:`SQLiteStorage._init_connection` from ``__init__`` and implements
:meth:`SQLiteStorage._setup_sync` (its schema and probes).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import apsw

from powercontext.adapters.sqlite.engine import (
    BUSY_TIMEOUT_MS,
    CONFLICT_TABLES,
    DIALECT,
    MIN_SQLITE_VERSION,
    SQLITE_FEATURES,
    SQLiteEngine,
    check_sqlite_version,
    parse_sqlite_url,
    sqlite_version,
    vec0_path,
)
from powercontext.adapters.storage.sql_storage import SQLStorage
from powercontext.sql import templates

__all__ = ["BUSY_TIMEOUT_MS", "MIN_SQLITE_VERSION", "SQLITE_FEATURES", "SQLiteEngine",
           "SQLiteStorage",
           "check_sqlite_version", "parse_sqlite_url", "sqlite_version", "vec0_path"]

C = TypeVar("C")


class SQLiteStorage(SQLStorage[C]):
    """:class:`SQLStorage` on the SQLite engine of one file. ``conflict_tables`` are the
    tables whose unique-key violation is a concurrent writer's (RevisionConflictError);
    a family adds its own."""

    conflict_tables: ClassVar[tuple[str, ...]] = CONFLICT_TABLES

    #: the engine with its SQLite-only calls (``self.engine`` is the same object, typed
    #: as the port; a test may wrap ``self.engine``)
    sqlite_engine: SQLiteEngine

    def _init_connection(self, path_or_url: str, busy_timeout_ms: int) -> None:
        """Build the engine (called from the concrete backend's ``__init__``)."""
        self.sqlite_engine = SQLiteEngine(path_or_url, busy_timeout_ms=busy_timeout_ms,
                                          conflict_tables=self.conflict_tables)
        self._use_engine(self.sqlite_engine)

    @property
    def filename(self) -> str:
        return self.sqlite_engine.filename

    @abc.abstractmethod
    def _setup_sync(self, conn: apsw.Connection) -> C:
        """On a new connection with the pragmas set: probe, create or check the family's
        schema, and report the capabilities."""

    def _open_sync(self) -> C:
        self._connect_sync()
        return self.engine.opening(self._setup_on_connection)

    def _setup_on_connection(self) -> C:
        conn = self.sqlite_engine.connection
        assert conn is not None
        return self._setup_sync(conn)

    # -- the engine's SQLite-only calls under the family modules' names -----------------

    @property
    def _conn(self) -> apsw.Connection | None:
        return self.sqlite_engine.connection

    @property
    def _filename(self) -> str:
        return self.sqlite_engine.filename

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.sqlite_engine.rows(sql, params)

    def _t(self, name: str) -> str:
        return templates.render(name, DIALECT)

    def _select_in(self, name: str, values: Sequence[Any],
                   before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.engine.query_in(name, values, before)

    def _exists_sync(self, table: str) -> bool:
        return self.sqlite_engine.table_exists(table)

    def _changed_one(self) -> bool:
        """True when the last statement changed exactly one row."""
        return self.sqlite_engine.changes() == 1

    def _load_vec_sync(self, reasons: list[str]) -> bool:
        return self.sqlite_engine.load_vec(reasons)

    def _probe_fts_sync(self, reasons: list[str]) -> bool:
        return self.sqlite_engine.probe_fts(reasons)
