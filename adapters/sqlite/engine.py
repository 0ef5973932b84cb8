"""SQLiteEngine: the :class:`~powercontext.ports.engine.SQLEngine` port on one APSW
connection (Memory RFC, "SQLite adapter"; ARCHITECTURE.md, "Decisions"): the version
gate, the connection and its pragmas, transactions, the driver-error mapping, the
database clock, the metadata table and how a Source gets its journal position.

One APSW connection, opened by :meth:`SQLiteEngine.connect` on the storage's single
worker thread, in WAL mode with ``synchronous=FULL`` (a COMMIT is durable),
``foreign_keys=ON`` and a busy timeout. A write transaction is ``BEGIN IMMEDIATE`` (it
takes the write lock before any read, so two writers serialize and the second sees the
first's head); a read transaction is a deferred ``BEGIN``, one WAL snapshot for the
whole read. Every statement reaches APSW through :meth:`SQLiteEngine.rows` (where tests
count statements and inject faults).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import apsw

from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import utc_text
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

__all__ = ["BUSY_TIMEOUT_MS", "CONFLICT_TABLES", "MIN_SQLITE_VERSION", "SQLITE_FEATURES",
           "SQLiteEngine", "check_sqlite_version", "parse_sqlite_url", "sqlite_version",
           "vec0_path"]

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

T = TypeVar("T")
#: The tables whose unique-key violation is a concurrent writer's (RevisionConflictError)
#: in every family; a family adds its own.
CONFLICT_TABLES: tuple[str, ...] = ("artifact_revisions.", "artifact_heads.")


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


class SQLiteEngine:
    """The :class:`~powercontext.ports.engine.SQLEngine` port on one APSW connection to
    ``path_or_url`` (a file path, ``sqlite:///abs/path`` or ``sqlite:///:memory:``).
    One writer at a time: ``BEGIN IMMEDIATE`` takes the database's write lock, and one
    Supervisor per database holds a file lock beside it.

    ``busy_timeout_ms``: how long a statement waits for another writer's lock.
    ``conflict_tables``: the tables whose unique-key violation :meth:`map_error` reports
    as RevisionConflictError (a concurrent writer's). ValueError for a bad path or URL
    (nothing is opened before :meth:`connect`)."""

    CAPABILITIES = EngineCapabilities(DIALECT, LockingPolicy.SINGLE_WRITER, row_locks=False)

    def __init__(self, path_or_url: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                 conflict_tables: Sequence[str] = CONFLICT_TABLES) -> None:
        self.filename = parse_sqlite_url(path_or_url)
        self.busy_timeout_ms = busy_timeout_ms
        self.conflict_tables = tuple(conflict_tables)
        self._conn: apsw.Connection | None = None

    @property
    def engine_capabilities(self) -> EngineCapabilities:
        return self.CAPABILITIES

    @property
    def connection(self) -> apsw.Connection | None:
        """The APSW connection (None while closed): for SQLite-only calls of the
        engine's own projections (``executemany``, ``last_insert_rowid``)."""
        return self._conn

    # ------------------------------------------------------------------ statements

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one SQL statement and fetch its rows: the one place SQL reaches APSW
        (the engine's own statements, :mod:`powercontext.sql.sqlite`, come here too)."""
        assert self._conn is not None, "the connection is not open"
        return self._conn.execute(sql, tuple(params)).fetchall()

    def changes(self) -> int:
        """The rows the last statement changed."""
        assert self._conn is not None
        return int(self._conn.changes())

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        self.rows(templates.render(statement, DIALECT), params)
        return self.changes()

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        sql = templates.render(statement, DIALECT)
        for row in rows:
            self.rows(sql, row)

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        del for_update  # BEGIN IMMEDIATE holds the whole database already
        return self.rows(templates.render(statement, DIALECT), params)

    def query_in(self, statement: str, values: Sequence[Any],
                 before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(statement, DIALECT, list(dict.fromkeys(values))):
            out.extend(self.rows(sql, [*before, *chunk]))
        return out

    def table_exists(self, table: str) -> bool:
        return bool(self.rows(frag.statement("table_exists"), [table]))

    def database_now(self) -> str:
        return utc_text(self.rows(frag.statement("topic_now"))[0][0])

    # ------------------------------------------------------------------ open / close

    def connect(self) -> None:
        if self._conn is not None:
            return
        check_sqlite_version(sqlite_version())
        try:
            conn = apsw.Connection(self.filename)
        except apsw.Error as exc:
            raise BackendError(f"cannot open SQLite database {self.filename!r}: {exc}") from exc
        self._conn = conn
        try:
            conn.setbusytimeout(self.busy_timeout_ms)
            self.rows("PRAGMA journal_mode=WAL")
            self.rows("PRAGMA synchronous=FULL")
            self.rows("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            self._open_failed(exc)
            raise

    def opening(self, setup: Callable[[], T]) -> T:
        self.connect()
        try:
            return setup()
        except BaseException as exc:
            self._open_failed(exc)
            raise

    def _open_failed(self, exc: BaseException) -> None:
        """Close after a failed open; raise the typed error of a file the user named
        that is no database, or cannot be written (else the caller re-raises)."""
        self.close()
        if isinstance(exc, apsw.NotADBError):
            raise InvalidInputError(
                "db", f"{self.filename!r} is not a SQLite database") from exc
        if isinstance(exc, apsw.CantOpenError | apsw.ReadOnlyError | apsw.PermissionsError):
            # the file or its directory (WAL needs <db>-wal and <db>-shm beside it)
            raise InvalidInputError(
                "db", f"cannot open {self.filename!r} for writing: the file or its "
                f"directory is not writable ({exc})") from exc

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ extensions

    def load_vec(self, reasons: list[str]) -> bool:
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

    def probe_fts(self, reasons: list[str]) -> bool:
        """A real insert/search/delete of a contentless-delete FTS5 table (TEMP); False
        with a reason appended when FTS5 does not work here."""
        try:
            self.rows(frag.statement("probe_fts_drop"))
            self.rows(frag.statement("probe_fts_create"))
            self.rows(frag.statement("probe_fts_insert"),
                      [7, frag.fts_document("m_probe", "probe_x token")])
            found = self.rows(frag.statement("probe_fts_search"),
                              [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self.rows(frag.statement("probe_fts_delete"), [7])
            gone = self.rows(frag.statement("probe_fts_search"),
                             [frag.fts_match_expression(["m_probe"], ["probe_x"])])
            self.rows(frag.statement("probe_fts_drop"))
        except apsw.Error as exc:
            reasons.append(f"FTS5 probe failed: {exc}")
            return False
        if found != [(7,)] or gone:
            reasons.append(f"FTS5 probe returned {found!r} then {gone!r}")
            return False
        return True

    # ------------------------------------------------------------------ transactions

    def begin(self, write: bool, *, long_running: bool = False) -> None:
        del long_running  # SQLite bounds no transaction's life
        # The caller rolls back only failures after BEGIN returned, so a failure here
        # (even one raised after the BEGIN ran) must not leave a transaction open.
        try:
            self.rows("BEGIN IMMEDIATE" if write else "BEGIN")
        except apsw.BusyError as exc:
            self.rollback()
            raise BackendError(
                f"database is locked: another writer held {self.filename!r} for more "
                f"than {self.busy_timeout_ms} ms"
            ) from exc
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        self.rows("COMMIT")

    def rollback(self) -> bool:
        if self._conn is not None and self._conn.in_transaction:
            self.rows("ROLLBACK")
            return True
        return False

    def map_error(self, exc: BaseException) -> PowerContextError | None:
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

    def relieve_contention(self) -> None:
        """Nothing: ``BEGIN IMMEDIATE`` waits for the one writer (the busy timeout)."""

    # ------------------------------------------------------------------ metadata

    def meta_get(self, key: str) -> str | None:
        rows = self.query("meta_get", [key])
        return None if not rows else rows[0][0]

    def meta_set(self, key: str, value: str | None) -> None:
        self.execute("meta_delete", [key])
        if value is not None:
            self.execute("meta_insert", [key, value])

    # ------------------------------------------------------------------ sources

    def put_sources(self, sources: Sequence[Source]) -> list[int]:
        """The new Sources' positions are their rowids (``sources.position``)."""
        positions = {s.source_id: pos for pos, s in (
            shared_rows.source_row(r) for r in
            self.query_in("sources_by_id", [s.source_id for s in sources]))}
        insert = templates.render("source_insert", DIALECT)
        assert self._conn is not None
        for s in sources:
            if s.source_id in positions:
                continue
            self.rows(insert, [s.source_id, s.kind, s.content, s.content_hash, s.uri,
                               shared_rows.source_metadata(s)])
            positions[s.source_id] = self._conn.last_insert_rowid()
        return [positions[s.source_id] for s in sources]

    def scope_lock(self, scope_id: str) -> None:
        """Nothing: the write transaction's BEGIN IMMEDIATE holds the database's write
        lock, so position allocation is serialised already."""
