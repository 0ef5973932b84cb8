"""OceanBaseStorage: the family-neutral half of a backend on OceanBase MySQL mode
(4.3.5 BP3+) or seekdb over mysqlclient (Memory RFC, "OceanBase adapter", "Concurrency
and transactions"; ARCHITECTURE.md, "Decisions"): the URL, one MySQL connection used by
the backend's single worker thread, the server check, transactions, the driver-error
mapping, the metadata table and the Source store.

Transactions: a write is ``START TRANSACTION`` at READ COMMITTED; a duplicate key is a
RevisionConflictError; lock-wait timeouts and deadlocks are retried a bounded number
of times with backoff (:class:`~powercontext.adapters.storage.RetryableError`) and
never reported as conflicts; a connection lost during COMMIT raises
CommitOutcomeUnknownError. A read is one REPEATABLE READ (snapshot) read-only
transaction: REPEATABLE READ is the session's isolation (set on connect), so a read
starts with one statement. The connection sets ``CLIENT.FOUND_ROWS``, so an UPDATE's rowcount counts
*matched* rows.

A family's OceanBase backend subclasses :class:`OceanBaseStorage` together with its
family base class, calls :meth:`OceanBaseStorage._init_connection` from ``__init__`` and
implements :meth:`OceanBaseStorage._open_checked_sync` (its schema and probes).
"""

from __future__ import annotations

import abc
import contextlib
import re
import time
from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from powercontext.adapters.storage import RetryableError, SourceStore, processing_rows
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.topic_spi import utc_text
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
)
from powercontext.core.models import Source
from powercontext.core.topic.processing import BudgetRow, JournalEntry, PendingRow
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

__all__ = ["CONNECTION_LOST", "DDL_TIMEOUT_US", "LOCK_TIMEOUT_US", "RETRY_ATTEMPTS",
           "RETRY_BACKOFF", "OceanBaseStorage", "OceanBaseURL", "errno", "parse_url"]

C = TypeVar("C")
DIALECT = "oceanbase"
_VERSION_RE = re.compile(r"OceanBase[^0-9]*(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
#: mysqlclient / server error numbers.
_DUPLICATE_KEY = 1062
_LOCK_WAIT_TIMEOUT = 1205
_DEADLOCK = 1213
_RETRYABLE = frozenset({_LOCK_WAIT_TIMEOUT, _DEADLOCK, 6005})  # 6005: row lock conflict
#: What an open answers while a concurrent opener of the same database is midway: 1146,
#: a table whose CREATE the other session runs (ours got 1050, yet it is not visible);
#: 6235 (OB_TRANS_CANNOT_SERIALIZE), both seeding one ``powercontext_meta`` row under
#: the session's snapshot isolation; lock waits and deadlocks.
_OPEN_RACES = frozenset({1146, 6235, *_RETRYABLE})
#: Opens run at most this many times (sleeps 0.05 s doubling: 6.35 s in all).
OPEN_ATTEMPTS = 8
CONNECTION_LOST = frozenset({2006, 2013, 2055, 4031})  # 4031: killed by the server
#: COMMIT answered with these leaves the outcome unknown (OB_TRANS_UNKNOWN, timeouts).
_COMMIT_UNKNOWN = frozenset({6225, 6210, 6213, 4012})
_FK_VIOLATION = frozenset({1451, 1452})
#: Bounded retry of lock-wait timeouts and deadlocks (attempts, first backoff seconds).
RETRY_ATTEMPTS = 4
RETRY_BACKOFF = 0.05
#: Server-side lock wait of one statement, microseconds (``ob_trx_lock_timeout``).
LOCK_TIMEOUT_US = 3_000_000
#: Statement limit while the vector projection is migrated (DDL), microseconds.
DDL_TIMEOUT_US = 3_600_000_000


class _RetryableError(RetryableError):
    """A lock-wait timeout or deadlock: the transaction rolled back and may be rerun."""


class OceanBaseURL:
    """The parts of ``oceanbase://user:password@host:port/database``."""

    def __init__(self, user: str, password: str, host: str, port: int, database: str) -> None:
        self.user, self.password, self.host, self.port, self.database = (
            user, password, host, port, database)

    def __repr__(self) -> str:  # never shows the password
        return f"oceanbase://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_url(url: str) -> OceanBaseURL:
    """Parse ``oceanbase://user:password@host:port/database`` (port 2881 by default).
    InvalidInputError for another scheme or a missing host or database name."""
    parts = urlsplit(url)
    if parts.scheme not in ("oceanbase", "seekdb"):
        raise InvalidInputError(
            "url", f"expected oceanbase://user:pass@host:port/db, got {parts.scheme!r}")
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database or "/" in database or "`" in database:
        raise InvalidInputError(
            "url", "needs a host and a database name: oceanbase://user:pass@host:port/db")
    return OceanBaseURL(unquote(parts.username or "root"), unquote(parts.password or ""),
                        parts.hostname, parts.port or 2881, database)


def errno(exc: BaseException) -> int | None:
    """The server error number a driver exception carries, or None."""
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class OceanBaseStorage(SourceStore[C]):
    """The family-neutral OceanBase primitives of :class:`SourceStore`: connection,
    server check, transactions, error mapping, metadata and Sources over the shared
    tables. ``_exec`` is the one place SQL reaches the driver (tests inject faults
    there)."""

    retry_attempts = RETRY_ATTEMPTS
    retry_backoff = RETRY_BACKOFF

    _url: OceanBaseURL
    _conn: Any
    _probe_facts: dict[str, Any]

    def _init_connection(self, url: str) -> None:
        """Remember where to connect (called from the concrete backend's ``__init__``)."""
        self._url = parse_url(url)
        self._conn = None
        self._probe_facts = {}

    @abc.abstractmethod
    def _open_checked_sync(self) -> C:
        """Check the server, create or check the family's schema, run the probes and
        report the capabilities (driver errors are mapped by the caller)."""

    # ------------------------------------------------------------------ connection

    def _connect(self) -> Any:
        import MySQLdb
        from MySQLdb.constants import CLIENT

        u = self._url
        kwargs = dict(host=u.host, port=u.port, user=u.user, passwd=u.password,
                      charset="utf8mb4", autocommit=True, connect_timeout=10,
                      client_flag=CLIENT.FOUND_ROWS)
        try:
            conn = MySQLdb.connect(**kwargs)
        except MySQLdb.OperationalError as exc:
            raise BackendError(f"cannot connect to {u!r}: {exc.args[-1]}") from exc
        try:
            cur = conn.cursor()
            try:
                cur.execute(f"USE `{u.database}`")
            except MySQLdb.OperationalError as exc:
                if errno(exc) != 1049:  # unknown database: create it (needs the privilege)
                    raise
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{u.database}`")
                cur.execute(f"USE `{u.database}`")
            # the session's isolation is the reads' (REPEATABLE READ): a read transaction
            # is then one START statement; a write sets READ COMMITTED for itself alone
            cur.execute("SET SESSION ob_trx_lock_timeout = %s, "
                        "SESSION transaction_isolation = 'REPEATABLE-READ'", (LOCK_TIMEOUT_US,))
            cur.close()
        except MySQLdb.Error as exc:
            conn.close()
            raise BackendError(f"cannot use database {u!r}: {exc.args[-1]}") from exc
        return conn

    def _cursor(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn.cursor()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; returns the cursor (rows fetched by the caller). Every
        statement of the adapter goes through here (tests inject faults here)."""
        cur = self._cursor()
        try:
            cur.execute(sql, params)
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                self._drop_connection()
            raise
        return cur

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        cur = self._cursor()
        try:
            cur.executemany(sql, rows)
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                self._drop_connection()
            raise

    def _all(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return list(self._exec(sql, params).fetchall())

    def _insight_rows(self, name: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of the shared template ``name`` (the dashboard's reads,
        :mod:`powercontext.adapters.insight`)."""
        return self._all(templates.render(name, DIALECT), params)

    def _in_chunks(self, name: str, values: list[Any],
                   prefix: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(name, DIALECT, values):
            out.extend(self._all(sql, [*prefix, *chunk]))
        return out

    # ------------------------------------------------------------------ open / server

    def _open_sync(self) -> C:
        """:meth:`_open_checked_sync`, rerun (it is idempotent) while it loses a race
        with a concurrent opener of the same database (:data:`_OPEN_RACES`), at most
        :data:`OPEN_ATTEMPTS` times with doubling sleeps from :data:`RETRY_BACKOFF`;
        driver errors are mapped by :meth:`_database_error`."""
        for attempt in range(1, OPEN_ATTEMPTS + 1):
            try:
                return self._open_checked_sync()
            except PowerContextError:
                raise
            except Exception as exc:
                if errno(exc) in _OPEN_RACES and attempt < OPEN_ATTEMPTS:
                    time.sleep(RETRY_BACKOFF * 2 ** (attempt - 1))
                    continue
                mapped = self._database_error(exc)
                if mapped is None:
                    raise
                raise mapped from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_server_sync(self) -> None:
        version, comment = self._all("SELECT VERSION(), @@version_comment")[0]
        version, comment = _text(version), _text(comment)
        self._probe_facts["version"] = version
        self._probe_facts["version_comment"] = comment
        m = _VERSION_RE.search(comment) or _VERSION_RE.search(version)
        if m is None:
            raise CapabilityNotSupportedError(
                f"{self._url!r} is not OceanBase (version {version!r}, {comment!r}); the "
                "OceanBase backend needs OceanBase >= 4.3.5 BP3 in MySQL mode or seekdb"
            )
        found = tuple(int(g or 0) for g in m.groups())
        self._probe_facts["ob_version"] = found
        if found < obsql.MIN_VERSION:
            raise CapabilityNotSupportedError(
                f"OceanBase {'.'.join(map(str, found))} is too old: FULLTEXT WITH PARSER "
                "SPACE and HNSW vector indexes need 4.3.5 BP3 (4.3.5.3) or later; upgrade "
                "the cluster or use seekdb"
            )
        try:
            mode = _text(self._all("SELECT @@ob_compatibility_mode")[0][0])
        except Exception as exc:
            if errno(exc) != 1193:  # unknown variable: seekdb speaks MySQL only
                raise
            mode = "MYSQL"
        self._probe_facts["mode"] = mode
        if mode.upper() != "MYSQL":
            raise CapabilityNotSupportedError(
                f"the tenant of {self._url!r} runs in {mode} mode; create a MySQL-mode tenant"
            )

    def _exec_ddl(self, sql: str) -> None:
        try:
            self._exec(sql)
        except Exception as exc:
            if errno(exc) not in (1050, 1061):  # exists already (a concurrent opener)
                raise

    def _seed_meta_sync(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Create each ``(key, value)`` row of ``powercontext_meta`` that is missing (an
        open of an existing database writes nothing). A concurrent opener's insert of the
        same row is an open race (:data:`_OPEN_RACES`), retried by :meth:`_open_sync`."""
        present = {_text(r[0]) for r in self._all("SELECT `key` FROM powercontext_meta")}
        for key, value in pairs:
            if key not in present:
                self._exec(obsql.meta_seed(), (key, value))

    def _tables(self) -> set[str]:
        return {_text(r[0]).lower() for r in self._all(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")}

    @property
    def probe_facts(self) -> dict[str, Any]:
        """What the startup probes saw (version, mode, words the SPACE parser drops, the
        heads DDL); empty before the backend opens."""
        return dict(self._probe_facts)

    def _close_sync(self) -> None:
        self._drop_connection()

    # ------------------------------------------------------------------ transactions

    def _begin_sync(self, write: bool) -> None:
        # The base class calls this outside its try block: map driver errors here.
        try:
            self._begin_statements(write)
        except PowerContextError:
            raise
        except Exception as exc:
            self._rollback_sync()
            mapped = self._database_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _begin_statements(self, write: bool) -> None:
        # A write: SET TRANSACTION (the next transaction only) READ COMMITTED, then START.
        # A read: START TRANSACTION READ ONLY at the session's REPEATABLE READ (set when
        # the connection is made), one round trip.
        first = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED" if write else (
            "START TRANSACTION READ ONLY")
        try:
            self._exec(first)
        except Exception as exc:
            if errno(exc) not in CONNECTION_LOST:
                raise
            # A connection that died while idle: nothing has happened yet, reconnect once.
            self._exec(first)
        if write:
            self._exec("START TRANSACTION")

    def _commit_sync(self) -> None:
        try:
            self._exec("COMMIT")
        except Exception as exc:
            code = errno(exc)
            if code in CONNECTION_LOST or code in _COMMIT_UNKNOWN:
                self._drop_connection()
                raise CommitOutcomeUnknownError(
                    f"the connection failed during COMMIT ({exc}); the Revision may or may "
                    "not exist: reread the head before deciding to retry") from exc
            raise

    def _rollback_sync(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.cursor().execute("ROLLBACK")
        except Exception:
            self._drop_connection()  # the server rolls back a closed session

    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        code = errno(exc)
        if code is None:
            return None
        message = str(exc.args[-1]) if exc.args else str(exc)
        if code == _DUPLICATE_KEY:
            return RevisionConflictError(
                f"a concurrent writer stored the same key first ({message}); reread the head")
        if code in _RETRYABLE:
            return _RetryableError(f"lock contention ({code}: {message})")
        if code in _FK_VIOLATION:
            return IntegrityError(f"a foreign key rejected the write ({message})")
        if code in CONNECTION_LOST:
            return BackendError(f"the connection to {self._url!r} was lost before COMMIT "
                                f"({message}); the transaction was rolled back")
        module = type(exc).__module__
        if module.startswith(("MySQLdb", "_mysql")):
            return BackendError(f"OceanBase error {code}: {message}")
        return None

    # ------------------------------------------------------------------ metadata

    def _meta_get_sync(self, key: str) -> str | None:
        rows = self._all(templates.render("meta_get", DIALECT), (key,))
        return None if not rows or rows[0][0] is None else _text(rows[0][0])

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        if value is None:
            self._exec(templates.render("meta_delete", DIALECT), (key,))
        else:
            self._exec(obsql.meta_upsert(), (key, value))

    # ------------------------------------------------------------------ sources

    def _put_sources_sync(self, sources: Sequence[Source]) -> list[int]:
        self._all(obsql.journal_lock())  # serializes journal positions until COMMIT
        unique = list(dict.fromkeys(s.source_id for s in sources))
        stored = {s.source_id: pos for pos, s in self._get_sources_sync(unique)}
        position = int(self._all(obsql.journal_max())[0][0])
        by_id = {s.source_id: s for s in sources}
        for source_id in unique:
            if source_id in stored:
                continue
            s = by_id[source_id]
            position += 1
            self._exec(obsql.source_insert_at(), (
                position, s.source_id, s.kind, s.content, s.content_hash, s.uri,
                shared_rows.source_metadata(s)))
            stored[source_id] = position
        return [stored[s.source_id] for s in sources]

    def _get_sources_sync(self, source_ids: Sequence[str]) -> list[tuple[int, Source]]:
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return []
        return [shared_rows.source_row(r) for r in self._in_chunks("sources_by_id", ids)]

    def _journal_sync(self, after: int, limit: int) -> list[tuple[int, Source]]:
        return [shared_rows.source_row(r) for r in
                self._all(templates.render("journal", DIALECT), (after, limit))]

    # ------------------------------------------------------------------ Scope journal

    def _scope_lock_sync(self, scope_id: str) -> None:
        """The journal lock row ``FOR UPDATE`` (the one every Source write takes): the
        Scope's ``MAX(position)`` read after it is stable until COMMIT, so two writers
        never allocate one position, and a flush sees every committed Source."""
        self._all(obsql.journal_lock())

    def _scope_rows_sync(self, source_ids: Sequence[str]) -> list[tuple[str, str, int, bool]]:
        ids = list(dict.fromkeys(source_ids))
        if not ids:
            return []
        return [(_text(sid), _text(scope), int(pos), bool(int(lin)))
                for sid, scope, pos, lin in self._in_chunks("scope_journal_by_source", ids)]

    def _scope_head_sync(self, scope_id: str) -> int:
        return int(self._all(templates.render("scope_journal_head", DIALECT), (scope_id,))[0][0])

    def _scope_insert_sync(self, scope_id: str, position: int, source_id: str,
                           lineage_only: bool) -> None:
        self._exec(templates.render("scope_journal_insert", DIALECT),
                   (scope_id, position, source_id, lineage_only))

    def _scope_recorded_sync(self, scope_id: str, positions: Sequence[int]) -> None:
        now = utc_text(self._all(tsql.utc_now())[0][0])
        self._exec_many(templates.render("scope_recorded_insert", DIALECT),
                        [(scope_id, p, now) for p in positions])

    def _pending_raise_sync(self, binding_name: str, scope_id: str, through: int) -> None:
        cur = self._exec(templates.render("pending_raise", DIALECT),
                         (through, through, binding_name, scope_id))
        if cur.rowcount == 0:  # FOUND_ROWS: matched rows, so 0 = no Pending row
            self._exec(templates.render("pending_insert", DIALECT),
                       (binding_name, scope_id, through, 0, 0))

    def _scope_journal_sync(self, scope_id: str, after: int,
                            limit: int) -> list[JournalEntry]:
        return [processing_rows.journal_entry(scope_id, r) for r in self._all(
            templates.render("scope_journal_after", DIALECT), (scope_id, after, limit))]

    # ------------------------------------------------------------------ Pending / status

    def _pending_get_sync(self, binding_name: str, scope_id: str) -> PendingRow | None:
        rows = self._all(templates.render("pending_get", DIALECT), (binding_name, scope_id))
        return processing_rows.pending_row(rows[0]) if rows else None

    def _pending_flush_sync(self, binding_name: str, scope_id: str, head: int) -> None:
        cur = self._exec(templates.render("pending_flush", DIALECT),
                         (head, head, binding_name, scope_id))
        if cur.rowcount == 0:
            self._exec(templates.render("pending_insert", DIALECT),
                       (binding_name, scope_id, head, 1, 0))

    def _cursor_get_sync(self, binding_name: str, scope_id: str) -> int:
        rows = self._all(templates.render("status_cursor_get", DIALECT),
                         (binding_name, scope_id))
        return int(rows[0][0]) if rows else 0

    def _budget_get_sync(self, scope_id: str, binding_name: str,
                         source_after: int) -> BudgetRow | None:
        rows = self._all(templates.render("status_budget_get", DIALECT),
                         (scope_id, binding_name, source_after))
        return processing_rows.budget_row(rows[0]) if rows else None

    def _processing_scopes_sync(self, binding_name: str) -> list[str]:
        return [_text(r[0]) for r in self._all(templates.render("processing_scopes", DIALECT),
                                               (binding_name, binding_name, binding_name))]
