"""SQLiteStorage: the family-neutral half of a SQLite backend on APSW (Memory RFC,
"SQLite adapter"; ARCHITECTURE.md, "Decisions"): the connection, the engine version
gate, transactions, the driver-error mapping, the metadata table and the Source store.

One APSW connection, opened lazily on the backend's single worker thread, in WAL mode
with ``synchronous=FULL`` (a COMMIT is durable), ``foreign_keys=ON`` and a busy timeout.
A write transaction is ``BEGIN IMMEDIATE`` (it takes the write lock before any read, so
two writers serialize and the second sees the first's head); a read transaction is a
deferred ``BEGIN``, one WAL snapshot for the whole read.

A family's SQLite backend subclasses :class:`SQLiteStorage` together with its family
base class, calls :meth:`SQLiteStorage._init_connection` from ``__init__`` and
implements :meth:`SQLiteStorage._setup_sync` (its schema and probes).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import apsw

from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.engine_view import StorageEngine
from powercontext.adapters.storage.rows import utc_text
from powercontext.adapters.storage.sql_artifacts import SQLArtifactStore
from powercontext.core.errors import (
    BackendError,
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
)
from powercontext.core.models import Source
from powercontext.ports.engine import EngineCapabilities, LockingPolicy
from powercontext.sql import sqlite as frag
from powercontext.sql import templates

__all__ = ["BUSY_TIMEOUT_MS", "MIN_SQLITE_VERSION", "SQLITE_FEATURES", "SQLiteEngine",
           "SQLiteStorage",
           "check_sqlite_version", "parse_sqlite_url", "sqlite_version", "vec0_path"]

#: The SQLite features the adapters use, each with the first version that has it. The
#: Memory RFC ("SQLite adapter") names 3.38.0 for vec's sqlite3_vtab_in / LIMIT APIs; the
#: full-text table is a contentless-delete FTS5 table (``contentless_delete=1``), which
#: needs 3.43.0, so the gate is the newest of them (ARCHITECTURE.md, "Decisions").
SQLITE_FEATURES: tuple[tuple[tuple[int, int, int], str], ...] = (
    ((3, 38, 0), "the sqlite3_vtab_in and virtual-table LIMIT APIs vec0 uses"),
    ((3, 43, 0), "FTS5 contentless-delete tables (contentless_delete=1)"),
)
MIN_SQLITE_VERSION = max(v for v, _ in SQLITE_FEATURES)
BUSY_TIMEOUT_MS = 5000
DIALECT = "sqlite"

C = TypeVar("C")


def parse_sqlite_url(path_or_url: str) -> str:
    """The file name APSW opens: a plain path is kept; ``sqlite:///abs/path`` gives
    ``/abs/path``; ``sqlite:///:memory:`` (or ``:memory:``) an in-memory database (one
    connection, so only for tests). ValueError for another scheme or an empty path."""
    if not isinstance(path_or_url, str) or not path_or_url:
        raise ValueError("a SQLite path or sqlite:/// URL is required")
    if "://" not in path_or_url:
        return path_or_url
    scheme, _, rest = path_or_url.partition("://")
    if scheme != "sqlite":
        raise ValueError(f"not a sqlite URL: {path_or_url!r}")
    if rest in ("/:memory:", ":memory:"):
        return ":memory:"
    if not rest.startswith("/") or rest == "/":
        raise ValueError(
            f"a sqlite URL needs an absolute path (sqlite:///abs/path): {path_or_url!r}")
    return "/" + rest.lstrip("/")


def sqlite_version() -> str:
    """The version string of the SQLite library APSW runs on (``sqlite_version()``)."""
    return apsw.sqlite_lib_version()


def check_sqlite_version(version: str) -> None:
    """Raise :class:`BackendError` naming the newest missing feature and the version it
    needs when ``version`` (``"3.42.0"``) is older than a feature in SQLITE_FEATURES."""
    try:
        found = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:
        raise BackendError(f"cannot parse the SQLite version {version!r}") from None
    missing = [(v, what) for v, what in SQLITE_FEATURES if found < v]
    if missing:
        need, what = max(missing)
        raise BackendError(
            f"SQLite {version} is too old: the Memory family needs SQLite "
            f"{'.'.join(map(str, need))} or newer for {what} (Memory RFC, \"SQLite adapter\")"
        )

def vec0_path() -> str:
    """The path ``sqlite_vec.loadable_path()`` gives, found without importing the package
    (its ``__init__`` imports numpy: 0.1-0.2 s on every hook event)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sqlite-vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


class SQLiteEngine(StorageEngine):
    """The :class:`~powercontext.ports.engine.SQLEngine` port on the APSW connection of
    one :class:`SQLiteStorage`: every statement goes through the storage's
    :meth:`SQLiteStorage._execute` (the one place SQL reaches APSW, where tests inject
    faults). One writer at a time: ``BEGIN IMMEDIATE`` takes the database's write lock,
    and one Supervisor per database holds a file lock beside it."""

    CAPABILITIES = EngineCapabilities(DIALECT, LockingPolicy.SINGLE_WRITER, row_locks=False)

    _storage: SQLiteStorage[Any]

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        storage = self._storage
        storage._execute(templates.render(statement, DIALECT), params)
        assert storage._conn is not None
        return int(storage._conn.changes())

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        sql = templates.render(statement, DIALECT)
        for row in rows:
            self._storage._execute(sql, row)

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        del for_update  # BEGIN IMMEDIATE holds the whole database already
        return self._storage._execute(templates.render(statement, DIALECT), params)

    def query_in(self, statement: str, values: Sequence[Any],
                 before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._storage._select_in(statement, values, before)

    def map_error(self, exc: BaseException) -> PowerContextError | None:
        return self._storage._database_error(exc)

    def database_now(self) -> str:
        return utc_text(self._storage._execute(frag.statement("topic_now"))[0][0])


class SQLiteStorage(SQLArtifactStore[C]):
    """The family-neutral SQLite primitives of :class:`SourceStore`: connection,
    transactions, error mapping, metadata and Sources over the shared tables.
    ``conflict_tables`` are the tables whose unique-key violation is a concurrent
    writer's (RevisionConflictError); a family adds its own."""

    conflict_tables: ClassVar[tuple[str, ...]] = ("artifact_revisions.", "artifact_heads.")

    _filename: str
    _busy_timeout_ms: int
    _conn: apsw.Connection | None

    def _init_connection(self, path_or_url: str, busy_timeout_ms: int) -> None:
        """Remember where to connect (called from the concrete backend's ``__init__``)."""
        self._filename = parse_sqlite_url(path_or_url)
        self._busy_timeout_ms = busy_timeout_ms
        self._conn = None
        self.engine = SQLiteEngine(self)

    @property
    def filename(self) -> str:
        return self._filename

    @abc.abstractmethod
    def _setup_sync(self, conn: apsw.Connection) -> C:
        """On a new connection with the pragmas set: probe, create or check the family's
        schema, and report the capabilities."""

    # ------------------------------------------------------------------ plumbing

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and fetch its rows (the one place SQL reaches APSW)."""
        assert self._conn is not None, "the connection is not open"
        return self._conn.execute(sql, tuple(params)).fetchall()

    def _t(self, name: str) -> str:
        return templates.render(name, DIALECT)

    def _insight_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of the shared template ``name`` (the dashboard's reads,
        :mod:`powercontext.adapters.source_citations`)."""
        return self._execute(self._t(name), params)

    def _select_in(self, name: str, values: Sequence[Any],
                   before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(name, DIALECT, list(dict.fromkeys(values))):
            rows.extend(self._execute(sql, [*before, *chunk]))
        return rows

    def _exists_sync(self, table: str) -> bool:
        return bool(self._execute(frag.statement("table_exists"), [table]))

    def _changed_one(self) -> bool:
        """True when the last statement changed exactly one row."""
        assert self._conn is not None
        return bool(self._conn.changes() == 1)

    # ------------------------------------------------------------------ open / close

    def _open_sync(self) -> C:
        self._close_sync()
        check_sqlite_version(sqlite_version())
        try:
            conn = apsw.Connection(self._filename)
        except apsw.Error as exc:
            raise BackendError(f"cannot open SQLite database {self._filename!r}: {exc}") from exc
        self._conn = conn
        try:
            conn.setbusytimeout(self._busy_timeout_ms)
            self._execute("PRAGMA journal_mode=WAL")
            self._execute("PRAGMA synchronous=FULL")
            self._execute("PRAGMA foreign_keys=ON")
            return self._setup_sync(conn)
        except apsw.NotADBError as exc:  # the user named a file that is something else
            self._close_sync()
            raise InvalidInputError(
                "db", f"{self._filename!r} is not a SQLite database") from exc
        except (apsw.CantOpenError, apsw.ReadOnlyError, apsw.PermissionsError) as exc:
            # the file or its directory (WAL needs <db>-wal and <db>-shm beside it)
            self._close_sync()
            raise InvalidInputError(
                "db", f"cannot open {self._filename!r} for writing: the file or its "
                f"directory is not writable ({exc})") from exc
        except BaseException:
            self._close_sync()
            raise

    def _close_sync(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ extensions

    def _load_vec_sync(self, reasons: list[str]) -> bool:
        """Load sqlite-vec (vec0) into the connection; False with a reason appended when
        it cannot be loaded."""
        assert self._conn is not None
        try:
            self._conn.enable_load_extension(True)
            self._conn.load_extension(vec0_path())
            self._conn.enable_load_extension(False)
            return True
        except (ImportError, apsw.Error, OSError) as exc:
            reasons.append(f"sqlite-vec cannot be loaded: {exc}")
            return False

    def _probe_fts_sync(self, reasons: list[str]) -> bool:
        """A real insert/search/delete of a contentless-delete FTS5 table (TEMP); False
        with a reason appended when FTS5 does not work here."""
        try:
            self._execute(frag.statement("probe_fts_drop"))
            self._execute(frag.statement("probe_fts_create"))
            self._execute(frag.statement("probe_fts_insert"),
                          [7, frag.fts_document("m_probe", "probe_x token")])
            found = self._execute(frag.statement("probe_fts_search"),
                                  [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self._execute(frag.statement("probe_fts_delete"), [7])
            gone = self._execute(frag.statement("probe_fts_search"),
                                 [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self._execute(frag.statement("probe_fts_drop"))
        except apsw.Error as exc:
            reasons.append(f"FTS5 probe failed: {exc}")
            return False
        if found != [(7,)] or gone:
            reasons.append(f"FTS5 probe returned {found!r} then {gone!r}")
            return False
        return True

    # ------------------------------------------------------------------ transactions

    def _begin_sync(self, write: bool) -> None:
        # The caller rolls back only failures after BEGIN returned, so a failure here
        # (even one raised after the BEGIN ran) must not leave a transaction open.
        try:
            self._execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except apsw.BusyError as exc:
            self._rollback_sync()
            raise BackendError(
                f"database is locked: another writer held {self._filename!r} for more "
                f"than {self._busy_timeout_ms} ms"
            ) from exc
        except BaseException:
            self._rollback_sync()
            raise

    def _commit_sync(self) -> None:
        self._execute("COMMIT")

    def _rollback_sync(self) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._execute("ROLLBACK")
            self._rolled_back_sync()

    def _rolled_back_sync(self) -> None:
        """After a ROLLBACK: re-read any schema state the transaction may have changed
        (a family whose DDL runs in transactions overrides it)."""

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        if isinstance(exc, apsw.ConstraintError):
            msg = str(exc)
            if "UNIQUE constraint failed" in msg and any(t in msg for t in self.conflict_tables):
                return RevisionConflictError(f"a concurrent write stored this first: {msg}")
            return BackendError(f"SQLite refused the write: {msg}")
        if isinstance(exc, apsw.BusyError | apsw.LockedError):
            return BackendError(f"database is locked: {exc}")
        if isinstance(exc, apsw.Error):
            return BackendError(f"SQLite error: {exc}")
        return None

    # ------------------------------------------------------------------ metadata

    def _meta_get_sync(self, key: str) -> str | None:
        rows = self._execute(self._t("meta_get"), [key])
        return None if not rows else rows[0][0]

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        self._execute(self._t("meta_delete"), [key])
        if value is not None:
            self._execute(self._t("meta_insert"), [key, value])

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        positions = {s.source_id: pos for pos, s in
                     self._get_sources_sync([s.source_id for s in sources])}
        insert = self._t("source_insert")
        assert self._conn is not None
        for s in sources:
            if s.source_id in positions:
                continue
            self._execute(insert, [s.source_id, s.kind, s.content, s.content_hash, s.uri,
                                   shared_rows.source_metadata(s)])
            positions[s.source_id] = self._conn.last_insert_rowid()
        return [positions[s.source_id] for s in sources]

    # ------------------------------------------------------------------ Scope journal

    def _scope_lock_sync(self, scope_id: str) -> None:
        """Nothing: the write transaction's BEGIN IMMEDIATE holds the database's write
        lock, so position allocation is serialised already."""
