"""The OceanBase driver's side of :class:`~powercontext.adapters.oceanbase.engine.
OceanBaseEngine` (Memory RFC, "OceanBase adapter"; docs/storage.md): the URL, the error
numbers the engine tells apart, the session limits it sets, and one new mysqlclient
connection set up for the engine (:func:`connect`)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from powercontext.adapters.oceanbase import lost_sessions as lost
from powercontext.adapters.storage import RetryableError
from powercontext.core.errors import BackendError, InvalidInputError

__all__ = ["COMMIT_UNKNOWN", "CONNECTION_LOST", "DDL_TIMEOUT_US", "DUPLICATE_KEY",
           "FK_VIOLATION", "LOCK_TIMEOUT_US", "OPEN_ATTEMPTS", "OPEN_RACES", "READ_START",
           "RETRYABLE", "RETRY_ATTEMPTS", "RETRY_BACKOFF", "VERSION_RE", "WRITE_START",
           "OceanBaseRetryableError", "OceanBaseURL", "connect", "errno", "parse_url"]

VERSION_RE = re.compile(r"OceanBase[^0-9]*(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
#: mysqlclient / server error numbers.
DUPLICATE_KEY = 1062
LOCK_WAIT_TIMEOUT = 1205
DEADLOCK = 1213
RETRYABLE = frozenset({LOCK_WAIT_TIMEOUT, DEADLOCK, 6005})  # 6005: row lock conflict
#: What an open answers while a concurrent opener of the same database is midway: 1146,
#: a table whose CREATE the other session runs (ours got 1050, yet it is not visible);
#: 6235 (OB_TRANS_CANNOT_SERIALIZE), both seeding one ``powercontext_meta`` row under
#: the session's snapshot isolation; lock waits and deadlocks.
OPEN_RACES = frozenset({1146, 6235, *RETRYABLE})
#: Opens run at most this many times (sleeps 0.05 s doubling: 6.35 s in all).
OPEN_ATTEMPTS = 8
CONNECTION_LOST = frozenset({2006, 2013, 2055, 4031})  # 4031: killed by the server
#: COMMIT answered with these leaves the outcome unknown (OB_TRANS_UNKNOWN, timeouts).
COMMIT_UNKNOWN = frozenset({6225, 6210, 6213, 4012})
FK_VIOLATION = frozenset({1451, 1452})
#: Bounded retry of lock-wait timeouts and deadlocks (attempts, first backoff seconds).
RETRY_ATTEMPTS = 4
RETRY_BACKOFF = 0.05
#: The statements that open a transaction, sent with its first statement. A read:
#: START TRANSACTION READ ONLY at the session's REPEATABLE READ (set on connect). A
#: write: READ COMMITTED for the next transaction only, then START.
READ_START = ("START TRANSACTION READ ONLY",)
WRITE_START = ("SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "START TRANSACTION")
#: Server-side lock wait of one statement, microseconds (``ob_trx_lock_timeout``).
LOCK_TIMEOUT_US = 3_000_000
#: Statement limit while the vector projection is migrated (DDL), microseconds.
DDL_TIMEOUT_US = 3_600_000_000


class OceanBaseRetryableError(RetryableError):
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


def connect(url: OceanBaseURL) -> Any:
    """A new autocommit mysqlclient connection to ``url``'s database (created when
    missing, which needs the privilege), its session at REPEATABLE READ with the lock
    and transaction limits set and TCP keepalive on. BackendError when unreachable."""
    import MySQLdb
    from MySQLdb.constants import CLIENT

    u = url
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
