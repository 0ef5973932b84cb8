"""OceanBaseEngine: the :class:`~powercontext.ports.engine.SQLEngine` port on
OceanBase MySQL mode (4.3.5 BP3+) or seekdb over mysqlclient (Memory RFC, "OceanBase
adapter", "Concurrency and transactions"; Topic Memory RFC, "Leader, term, and
fencing"; ARCHITECTURE.md, "Decisions"): one MySQL connection used by the storage's
single worker thread, the server check, transactions, the driver-error mapping, the
database clock, the metadata table and the Source journal's positions.

Transactions: a write is ``START TRANSACTION`` at READ COMMITTED; a duplicate key is a
RevisionConflictError; lock-wait timeouts and deadlocks are retried by the storage a
bounded number of times with backoff (mapped to
:class:`~powercontext.adapters.storage.RetryableError`) and never reported as
conflicts; a connection lost during COMMIT raises CommitOutcomeUnknownError. A read is
one REPEATABLE READ (snapshot) read-only transaction: REPEATABLE READ is the session's
isolation (set on connect). Round trips: the statements that open a transaction travel
with its first statement in one multi-statement query (``CLIENT.MULTI_STATEMENTS``); a
transaction that runs no statement sends nothing; a read's COMMIT is sent without
waiting and its answer read before the next statement. A write's COMMIT is always
waited for. Queries a read names ahead (:meth:`OceanBaseEngine.read_ahead`) travel with
its next statement (:mod:`.read_ahead`). The connection sets ``CLIENT.FOUND_ROWS``, so
an UPDATE's rowcount counts *matched* rows.

A lost connection (:mod:`powercontext.adapters.oceanbase.lost_sessions`): every session
sets ``ob_trx_timeout`` (5 minutes; maintenance: 1 hour) and TCP keepalive; a session
lost while a write transaction may be open there is killed by the next connection, and
lock contention first kills this user's sessions idle for 10 s inside a transaction,
so a transaction abandoned by a client that is gone stops blocking its Memory.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from powercontext.adapters.oceanbase import lost_sessions as lost
from powercontext.adapters.oceanbase.driver import (
    COMMIT_UNKNOWN,
    CONNECTION_LOST,
    DUPLICATE_KEY,
    FK_VIOLATION,
    OPEN_ATTEMPTS,
    OPEN_RACES,
    READ_START,
    RETRY_BACKOFF,
    RETRYABLE,
    VERSION_RE,
    WRITE_START,
    OceanBaseRetryableError,
    connect,
    errno,
    parse_url,
)
from powercontext.adapters.oceanbase.read_ahead import ReadAhead
from powercontext.adapters.storage import rows as shared_rows
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.storage.rows import utc_text
from powercontext.core.errors import (
    BackendError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    IntegrityError,
    PowerContextError,
    RevisionConflictError,
)
from powercontext.core.models import Source
from powercontext.ports.engine import EngineCapabilities, LockingPolicy
from powercontext.sql import oceanbase as obsql
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

__all__ = ["OceanBaseEngine"]

DIALECT = "oceanbase"
T = TypeVar("T")


class OceanBaseEngine:
    """The :class:`~powercontext.ports.engine.SQLEngine` port on one mysqlclient
    connection to ``url`` (``oceanbase://user:password@host:port/database``; the
    database is created when missing). Many writers with row locks
    (``CLIENT.FOUND_ROWS``: a statement's count is of matched rows); the Supervisor's
    Leader holds a lease that expires by database time. Every statement goes through
    :meth:`_exec` (tests inject faults there). InvalidInputError for a bad URL (nothing
    is connected before :meth:`connect`)."""

    CAPABILITIES = EngineCapabilities(DIALECT, LockingPolicy.LEASES, row_locks=True)

    def __init__(self, url: str) -> None:
        self.url = parse_url(url)
        self._conn: Any = None
        self._probe_facts: dict[str, Any] = {}
        self._tx_start: tuple[str, ...] = ()  # opening statements not sent yet
        self._tx_read = False
        self._commit_unread = False  # a read's COMMIT was sent, its answer not read
        self._session_id: int | None = None  # CONNECTION_ID() of self._conn
        self._write_open = False  # a write transaction may be open on the server
        self._lost: list[int] = []  # our sessions lost with a write open: to kill
        self._trx_timeout = lost.TRX_TIMEOUT_US  # the session's ob_trx_timeout
        self._checked: Any = None  # the connection check_server passed on
        self._ahead = ReadAhead()  # of the open read transaction only

    @property
    def engine_capabilities(self) -> EngineCapabilities:
        return self.CAPABILITIES

    @property
    def connection(self) -> Any:
        """The mysqlclient connection (None while closed)."""
        return self._conn

    @property
    def probe_facts(self) -> dict[str, Any]:
        """What the startup probes saw (version, mode, words the SPACE parser drops, the
        heads DDL); empty before the first open. The families' probes add to it."""
        return self._probe_facts

    # ------------------------------------------------------------------ the port

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        return int(self._exec(templates.render(statement, DIALECT), params).rowcount)

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self._exec_many(templates.render(statement, DIALECT), rows)

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        sql = templates.render(statement, DIALECT)
        return self._all(sql + " FOR UPDATE" if for_update else sql, params)

    def query_in(self, statement: str, values: Sequence[Any],
                 before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._in_chunks(statement, list(dict.fromkeys(values)), before)

    def run(self, sql: str, params: Sequence[Any] | None = None) -> int:
        """Run one OceanBase-only statement (:mod:`powercontext.sql.oceanbase`); the
        number of rows it matched."""
        return int(self._exec(sql, params).rowcount)

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows of one OceanBase-only query."""
        return self._all(sql, params)

    def read_ahead(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """In a read: queries ``(sql, params)`` soon run by :meth:`rows` (:mod:`.read_ahead`)."""
        self._ahead.name(statements)

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one OceanBase-only statement once per parameter row."""
        self._exec_many(sql, rows)

    def database_now(self) -> str:
        """``UTC_TIMESTAMP(6)`` (the session time zone of seekdb is +08:00, so never
        ``NOW()``)."""
        return utc_text(self._all(tsql.utc_now())[0][0])

    # ------------------------------------------------------------------ open

    def connect(self) -> None:
        """Connect (unless connected) and pass the version gate on the new connection;
        driver errors are mapped (:meth:`map_error`)."""
        try:
            self._cursor()
            if self._checked is not self._conn:
                self.check_server()
                self._checked = self._conn
        except PowerContextError:
            raise
        except Exception as exc:
            mapped = self.map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def opening(self, setup: Callable[[], T]) -> T:
        """``setup()`` rerun (it is idempotent) while it loses a race with a concurrent
        opener of the same database (:data:`~.driver.OPEN_RACES`), at most
        :data:`~.driver.OPEN_ATTEMPTS` times with doubling sleeps from
        :data:`~.driver.RETRY_BACKOFF`; driver errors are mapped by :meth:`map_error`."""
        for attempt in range(1, OPEN_ATTEMPTS + 1):
            try:
                self.connect()
                return setup()
            except PowerContextError:
                raise
            except Exception as exc:
                if errno(exc) in OPEN_RACES and attempt < OPEN_ATTEMPTS:
                    time.sleep(RETRY_BACKOFF * 2 ** (attempt - 1))
                    continue
                mapped = self.map_error(exc)
                if mapped is None:
                    raise
                raise mapped from exc
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ connection

    def _cursor(self) -> Any:
        self._read_commit_answer()
        if self._conn is None:
            self._conn = connect(self.url)
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
        self._ahead.clear()
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
        trip; the cursor is left at ``sql``'s. A connection that died while idle is
        replaced once (the server ends a lost session's transaction; none committed)."""
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
        if self._ahead:
            return self._ahead.rows(sql, params, self._cursor, self._exec, self._drop_connection)
        return list(self._exec(sql, params).fetchall())

    def _in_chunks(self, name: str, values: list[Any],
                   prefix: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for sql, chunk in templates.render_in(name, DIALECT, values):
            out.extend(self._all(sql, [*prefix, *chunk]))
        return out

    # ------------------------------------------------------------------ open / server

    def check_server(self) -> None:
        """The version gate: CapabilityNotSupportedError unless the server is OceanBase
        >= 4.3.5 BP3 in MySQL mode or seekdb (what it saw is in :attr:`probe_facts`)."""
        version, comment = self._all("SELECT VERSION(), @@version_comment")[0]
        version, comment = _text(version), _text(comment)
        self._probe_facts["version"] = version
        self._probe_facts["version_comment"] = comment
        m = VERSION_RE.search(comment) or VERSION_RE.search(version)
        if m is None:
            raise CapabilityNotSupportedError(
                f"{self.url!r} is not OceanBase (version {version!r}, {comment!r}); the "
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
                f"the tenant of {self.url!r} runs in {mode} mode; create a MySQL-mode tenant"
            )

    def run_ddl(self, sql: str) -> None:
        """Run one DDL statement; a table or index that exists already (a concurrent
        opener made it) is no error."""
        try:
            self._exec(sql)
        except Exception as exc:
            if errno(exc) not in (1050, 1061):  # exists already (a concurrent opener)
                raise

    def seed_meta(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Create each ``(key, value)`` row of ``powercontext_meta`` that is missing (an
        open of an existing database writes nothing). A concurrent opener's insert of the
        same row is an open race (:data:`OPEN_RACES`), retried by :meth:`opening`."""
        present = {_text(r[0]) for r in self._all("SELECT `key` FROM powercontext_meta")}
        for key, value in pairs:
            if key not in present:
                self._exec(obsql.meta_seed(), (key, value))

    def tables(self) -> set[str]:
        """The names of the database's tables, lowercase."""
        return {_text(r[0]).lower() for r in self._all(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")}

    def close(self) -> None:
        self._drop_connection(lost_session=False)  # closing ends our session itself

    # ------------------------------------------------------------------ transactions

    def begin(self, write: bool, *, long_running: bool = False) -> None:
        # Nothing is sent yet: the statements that open the transaction go out with its
        # first statement (see _exec), so a failure to begin is that statement's.
        self._ahead.begin(read=not write)
        self._tx_read = not write
        self._tx_start = WRITE_START if write else READ_START
        bound = lost.LONG_TRX_TIMEOUT_US if long_running else lost.TRX_TIMEOUT_US
        if bound != self._trx_timeout:  # maintenance began or ended: ob_trx_timeout too
            self._tx_start = (f"SET SESSION ob_trx_timeout = {int(bound)}", *self._tx_start)
            self._trx_timeout = bound

    def commit(self) -> None:
        self._ahead.clear()
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
            if code in CONNECTION_LOST or code in COMMIT_UNKNOWN:
                self._drop_connection()
                raise CommitOutcomeUnknownError(
                    f"the connection failed during COMMIT ({exc}); the Revision may or may "
                    "not exist: reread the head before deciding to retry") from exc
            raise

    def _send_read_commit(self) -> None:
        """End a read without waiting: COMMIT's answer is read before the next statement
        (:meth:`_cursor`); the read's rows were all read, none depends on it."""
        if self._conn is None:
            return
        try:
            self._conn.send_query(b"COMMIT")
            self._commit_unread = True
        except Exception:
            self._drop_connection()  # the server ends a closed session's transaction

    def _read_commit_answer(self) -> None:
        """Read the answer of an outstanding read's COMMIT; a failure drops the connection."""
        if not self._commit_unread:
            return
        self._commit_unread = False
        try:
            self._conn.read_query_result()
        except Exception:
            self._drop_connection()

    def rollback(self) -> bool:
        self._ahead.clear()
        if self._tx_start:  # nothing of the transaction was sent
            self._tx_start = ()
            return False
        self._read_commit_answer()
        if self._conn is None:
            if self._lost:  # end our lost session now, if the server answers
                with contextlib.suppress(Exception):
                    self._cursor()
            return False
        try:
            self._conn.cursor().execute("ROLLBACK")
            self._write_open = False
        except Exception:
            self._drop_connection()  # the server rolls back a closed session
        return True

    def map_error(self, exc: BaseException) -> PowerContextError | None:
        code = errno(exc)
        if code is None:
            return None
        message = str(exc.args[-1]) if exc.args else str(exc)
        if code == DUPLICATE_KEY:
            return RevisionConflictError(
                f"a concurrent writer stored the same key first ({message}); reread the head")
        if code in RETRYABLE:
            return OceanBaseRetryableError(
                f"lock contention ({code}: {message}): another writer holds these rows; "
                f"a transaction left by a lost connection is ended once idle "
                f"{lost.ABANDONED_IDLE_S} s, after {lost.TRX_TIMEOUT_US // 60_000_000} "
                "minutes at most")
        if code in FK_VIOLATION:
            return IntegrityError(f"a foreign key rejected the write ({message})")
        if code in CONNECTION_LOST:
            ended = ("the transaction was rolled back" if not self._lost else
                     "the server rolls the transaction back (its session is ended at the "
                     "next connection, or within "
                     f"{lost.TRX_TIMEOUT_US // 60_000_000} minutes)")
            return BackendError(f"the connection to {self.url!r} was lost before COMMIT "
                                f"({message}); {ended}")
        module = type(exc).__module__
        if module.startswith(("MySQLdb", "_mysql")):
            return BackendError(f"OceanBase error {code}: {message}")
        return None

    def relieve_contention(self) -> None:
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

    # ------------------------------------------------------------------ metadata

    def meta_get(self, key: str) -> str | None:
        rows = self._all(templates.render("meta_get", DIALECT), (key,))
        return None if not rows or rows[0][0] is None else _text(rows[0][0])

    def meta_set(self, key: str, value: str | None) -> None:
        if value is None:
            self._exec(templates.render("meta_delete", DIALECT), (key,))
        else:
            self._exec(obsql.meta_upsert(), (key, value))

    # ------------------------------------------------------------------ sources

    def put_sources(self, sources: Sequence[Source]) -> list[int]:
        """Positions are allocated under the journal lock row (``FOR UPDATE``), the next
        one after ``MAX(position)``."""
        self._all(obsql.journal_lock())  # serializes journal positions until COMMIT
        unique = list(dict.fromkeys(s.source_id for s in sources))
        stored = {s.source_id: pos for pos, s in (
            shared_rows.source_row(r) for r in self.query_in("sources_by_id", unique))}
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

    def scope_lock(self, scope_id: str) -> None:
        """The journal lock row ``FOR UPDATE`` (the one every Source write takes): the
        Scope's ``MAX(position)`` read after it is stable until COMMIT, so two writers
        never allocate one position, and a flush sees every committed Source."""
        self._all(obsql.journal_lock())
