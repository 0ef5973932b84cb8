"""OceanBaseStorage: the family-neutral half of a backend on OceanBase MySQL mode
(4.3.5 BP3+) or seekdb over mysqlclient (Memory RFC, "OceanBase adapter", "Concurrency
and transactions"; ARCHITECTURE.md, "Decisions"): the URL, one MySQL connection used by
the backend's single worker thread, the server check, transactions, the driver-error
mapping and the metadata table; the Source store's rows are
:mod:`powercontext.adapters.oceanbase.source_rows`.

Transactions: a write is ``START TRANSACTION`` at READ COMMITTED; a duplicate key is a
RevisionConflictError; lock-wait timeouts and deadlocks are retried a bounded number
of times with backoff (:class:`~powercontext.adapters.storage.RetryableError`) and
never reported as conflicts; a connection lost during COMMIT raises
CommitOutcomeUnknownError. A read is one REPEATABLE READ (snapshot) read-only
transaction: REPEATABLE READ is the session's isolation (set on connect). Round trips
(issue 14): the statements that open a transaction travel with its first statement in
one multi-statement query (``CLIENT.MULTI_STATEMENTS``); a transaction that runs no
statement sends nothing; a read's COMMIT is sent without waiting and its answer read
before the next statement. A write's COMMIT is always waited for. The connection sets
``CLIENT.FOUND_ROWS``, so an UPDATE's rowcount counts *matched* rows.

A lost connection (:mod:`powercontext.adapters.oceanbase.lost_sessions`): every session
sets ``ob_trx_timeout`` (5 minutes; maintenance: 1 hour) and TCP keepalive; a session
lost while a write transaction may be open there is killed by the next connection, and
lock contention first kills this user's sessions idle for 10 s inside a transaction,
so a transaction abandoned by a client that is gone stops blocking its Memory.

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

from powercontext.adapters.oceanbase import lost_sessions as lost
from powercontext.adapters.oceanbase.source_rows import OceanBaseSourceRows
from powercontext.adapters.storage import RetryableError, SourceStore
from powercontext.adapters.storage.rows import text as _text
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    InvalidInputError,
    PowerContextError,
    RevisionConflictError,
)
from powercontext.sql import oceanbase as obsql
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
#: The statements that open a transaction, sent with its first statement. A read:
#: START TRANSACTION READ ONLY at the session's REPEATABLE READ (set on connect). A
#: write: READ COMMITTED for the next transaction only, then START.
_READ_START = ("START TRANSACTION READ ONLY",)
_WRITE_START = ("SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION")
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


class OceanBaseStorage(OceanBaseSourceRows, SourceStore[C]):
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
        self._tx_start: tuple[str, ...] = ()  # opening statements not sent yet
        self._tx_read = False
        self._commit_unread = False  # a read's COMMIT was sent, its answer not read
        self._session_id: int | None = None  # CONNECTION_ID() of self._conn
        self._write_open = False  # a write transaction may be open on the server
        self._lost: list[int] = []  # our sessions lost with a write open: to kill
        self._trx_timeout = lost.TRX_TIMEOUT_US  # the session's ob_trx_timeout

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
                      client_flag=CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS)
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
            cur.execute("SET SESSION ob_trx_lock_timeout = %s, SESSION ob_trx_timeout = %s, "
                        "SESSION transaction_isolation = 'REPEATABLE-READ'",
                        (LOCK_TIMEOUT_US, lost.TRX_TIMEOUT_US))
            cur.close()
        except MySQLdb.Error as exc:
            conn.close()
            raise BackendError(f"cannot use database {u!r}: {exc.args[-1]}") from exc
        lost.keepalive(conn)
        return conn

    def _cursor(self) -> Any:
        self._read_commit_answer()
        if self._conn is None:
            self._conn = self._connect()
            self._session_id, self._trx_timeout = self._conn.thread_id(), lost.TRX_TIMEOUT_US
            if self._lost:  # before anything else: a lost write of ours may hold locks
                ids, self._lost = self._lost, []
                lost.kill(self._conn.cursor(), ids, errno)
        return self._conn.cursor()

    def _drop_connection(self, lost_session: bool = True) -> None:
        """Forget the connection (closed if it still works). ``lost_session``: the
        connection failed, and when a write transaction may be open in its session, the
        next connection kills that session (:mod:`.lost_sessions`)."""
        # a transaction not yet opened on the server dies with the connection too
        self._commit_unread, self._tx_start = False, ()
        if lost_session and self._write_open and self._session_id is not None:
            self._lost.append(self._session_id)
        self._write_open, self._session_id = False, None
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; returns the cursor (rows fetched by the caller). Every
        statement of the adapter goes through here (tests inject faults here), except a
        read's COMMIT (:meth:`_send_read_commit`) and ROLLBACK. The first statement of a
        transaction carries the statements that open it (:meth:`_exec_opening`)."""
        start, self._tx_start = self._tx_start, ()
        if start:
            return self._exec_opening(start, sql, params)
        cur = self._cursor()
        try:
            cur.execute(sql, params)
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                self._drop_connection()
            raise
        return cur

    def _exec_opening(self, start: tuple[str, ...], sql: str,
                      params: Sequence[Any] | None) -> Any:
        """``start`` (the statements that open the transaction) and ``sql`` in one round
        trip (a multi-statement query); the cursor is left at ``sql``'s result. A
        connection that died while idle is replaced once: the server ends a lost
        session's transaction, and none of it was committed."""
        bundled = "; ".join((*start, sql))
        for attempt in (1, 2):
            cur = self._cursor()
            self._write_open = self._write_open or not self._tx_read
            try:
                cur.execute(bundled, params)
                for _ in start:
                    cur.nextset()
                return cur
            except Exception as exc:
                if errno(exc) not in CONNECTION_LOST:
                    raise
                self._drop_connection()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        start, self._tx_start = self._tx_start, ()
        if start:  # the transaction opens first (a batch is never one statement)
            self._exec_opening(start[:-1], start[-1], None)
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
        :mod:`powercontext.adapters.source_citations`)."""
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
        self._drop_connection(lost_session=False)  # closing ends our session itself

    # ------------------------------------------------------------------ transactions

    def _begin_sync(self, write: bool) -> None:
        # Nothing is sent yet: the statements that open the transaction go out with its
        # first statement (see _exec), so a failure to begin is that statement's.
        self._tx_read = not write
        self._tx_start = _WRITE_START if write else _READ_START
        bound = lost.LONG_TRX_TIMEOUT_US if self.long_transactions else lost.TRX_TIMEOUT_US
        if bound != self._trx_timeout:  # maintenance began or ended: ob_trx_timeout too
            self._tx_start = (f"SET SESSION ob_trx_timeout = {int(bound)}", *self._tx_start)
            self._trx_timeout = bound

    def _commit_sync(self) -> None:
        if self._tx_start:  # no statement ran: the server never opened a transaction
            self._tx_start = ()
            return
        if self._tx_read:
            self._send_read_commit()
            return
        try:
            self._exec("COMMIT")
            self._write_open = False
        except Exception as exc:
            code = errno(exc)
            if code in CONNECTION_LOST or code in _COMMIT_UNKNOWN:
                self._drop_connection()
                raise CommitOutcomeUnknownError(
                    f"the connection failed during COMMIT ({exc}); the Revision may or may "
                    "not exist: reread the head before deciding to retry") from exc
            raise

    def _send_read_commit(self) -> None:
        """End a read-only transaction without waiting for the server: COMMIT is sent
        and its answer read before the connection's next statement (:meth:`_cursor`).
        The server ends the snapshot when the COMMIT arrives; the read's rows were all
        read in it, so nothing the caller got depends on the answer."""
        if self._conn is None:
            return
        try:
            self._conn.send_query(b"COMMIT")
            self._commit_unread = True
        except Exception:
            self._drop_connection()  # the server ends a closed session's transaction

    def _read_commit_answer(self) -> None:
        """Read the answer of a read's COMMIT sent by :meth:`_send_read_commit`, if one is
        outstanding. A failure (a connection lost meanwhile) drops the connection: the
        next statement connects again."""
        if not self._commit_unread:
            return
        self._commit_unread = False
        try:
            self._conn.read_query_result()
        except Exception:
            self._drop_connection()

    def _rollback_sync(self) -> None:
        if self._tx_start:  # nothing of the transaction was sent
            self._tx_start = ()
            return
        self._read_commit_answer()
        if self._conn is None:
            if self._lost:  # end our lost session now, if the server answers
                with contextlib.suppress(Exception):
                    self._cursor()
            return
        try:
            self._conn.cursor().execute("ROLLBACK")
            self._write_open = False
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
            return _RetryableError(
                f"lock contention ({code}: {message}): another writer holds these rows; "
                f"a transaction left by a lost connection is ended once idle "
                f"{lost.ABANDONED_IDLE_S} s, after {lost.TRX_TIMEOUT_US // 60_000_000} "
                "minutes at most")
        if code in _FK_VIOLATION:
            return IntegrityError(f"a foreign key rejected the write ({message})")
        if code in CONNECTION_LOST:
            ended = ("the transaction was rolled back" if not self._lost else
                     "the server rolls the transaction back (its session is ended at the "
                     "next connection, or within "
                     f"{lost.TRX_TIMEOUT_US // 60_000_000} minutes)")
            return BackendError(f"the connection to {self._url!r} was lost before COMMIT "
                                f"({message}); {ended}")
        module = type(exc).__module__
        if module.startswith(("MySQLdb", "_mysql")):
            return BackendError(f"OceanBase error {code}: {message}")
        return None

    # ------------------------------------------------------------------ metadata

    def _contention_sync(self) -> None:
        """End this user's abandoned sessions on this database (idle inside a
        transaction for :data:`~.lost_sessions.ABANDONED_IDLE_S` s) before a retry."""
        try:
            cur = self._cursor()
            ids = lost.abandoned(cur)
            if ids:
                lost.log.warning("ending %d abandoned session(s) holding locks: %s",
                                 len(ids), ids)
                lost.kill(cur, ids, errno)
        except Exception as exc:  # a retry goes on whatever happens here
            lost.log.debug("abandoned sessions not ended: %s", exc)

    def _meta_get_sync(self, key: str) -> str | None:
        rows = self._all(templates.render("meta_get", DIALECT), (key,))
        return None if not rows or rows[0][0] is None else _text(rows[0][0])

    def _meta_set_sync(self, key: str, value: str | None) -> None:
        if value is None:
            self._exec(templates.render("meta_delete", DIALECT), (key,))
        else:
            self._exec(obsql.meta_upsert(), (key, value))
