"""StorageBackend: what every SQL Artifact backend shares, whatever its family
(Memory RFC, "Code structure and abstraction boundaries", "Concurrency and
transactions").

A backend runs every database call on one worker thread of its own (the driver's
connection never crosses threads), opens the database lazily on the first call, and
runs each unit of work in one transaction: :meth:`StorageBackend._in_tx` begins, calls
a synchronous function, commits, or rolls back and maps the driver's exception to a
typed :class:`~powercontext.core.errors.PowerContextError`. Lock contention the
adapter maps to :class:`RetryableError` is rerun a bounded number of times.

A concrete adapter implements the synchronous primitives marked ``abstract``
(connection, transactions, error mapping, metadata); on a SQL database
:class:`~powercontext.adapters.storage.sql_storage.SQLStorage` implements them once,
over the :class:`~powercontext.ports.engine.SQLEngine` it composes. A family's backend adds its
checks at open (:meth:`StorageBackend._check_open_sync`) and before every call
(:meth:`StorageBackend._check_ready_sync`), its own tables and its public API.

For the writer of a new family's backend: subclass this class (on a SQL engine,
:class:`~powercontext.adapters.storage.sql_storage.SQLStorage`) with your capability
report type as ``C``; implement ``_open_sync`` to connect, create your schema and return
that report; hold a :class:`~powercontext.adapters.storage.sources.SourceJournal` over
the backend for the Source store; call ``self._run(self._in_tx, write, fn, *args)`` from
every public coroutine. Nothing here knows a family.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from powercontext.core.errors import BackendError, PowerContextError

__all__ = ["RetryableError", "StorageBackend"]

T = TypeVar("T")
C = TypeVar("C")  # the family's capability report, answered by _open_sync


class RetryableError(BackendError):
    """Lock contention (a lock-wait timeout, a deadlock): the transaction was rolled back
    and may be rerun as a whole. :meth:`StorageBackend._retrying` reruns it."""


class StorageBackend(abc.ABC, Generic[C]):
    """The family-neutral base of a SQL backend: one worker thread, lazy open, one
    transaction per unit of work, bounded retries and typed errors.

    ``C`` is the type of the capability report :meth:`_open_sync` returns (kept in
    ``self._db_caps`` and answered by :meth:`capabilities`)."""

    #: How many times :meth:`_retrying` runs a function that raises RetryableError
    #: (the last failure becomes a BackendError naming the attempts).
    retry_attempts = 4
    #: The first backoff between attempts, seconds (doubled each time, jittered).
    retry_backoff = 0.05
    #: Set by maintenance (``memory rebuild``, ``--rehash``) while it runs: its
    #: transactions may be long. Engines that bound a transaction's life (OceanBase's
    #: ``ob_trx_timeout``) give them the long bound.
    long_transactions = False

    def __init__(self) -> None:
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._open_lock = threading.Lock()
        self._opened = False
        self._db_caps: C | None = None

    # ------------------------------------------------------------------ primitives

    @abc.abstractmethod
    def _open_sync(self) -> C:
        """Connect, create the schema when missing, run the startup probes, and report
        what the database can do."""

    @abc.abstractmethod
    def _close_sync(self) -> None:
        """Close the connection (idempotent)."""

    @abc.abstractmethod
    def _begin_sync(self, write: bool) -> None:
        """Start a transaction: a write one takes the database's write lock (SQLite
        ``BEGIN IMMEDIATE``); a read one gives one consistent snapshot. A failure here
        must not leave a transaction open (the caller rolls back only after it)."""

    @abc.abstractmethod
    def _commit_sync(self) -> None:
        """COMMIT durably."""

    @abc.abstractmethod
    def _rollback_sync(self) -> None:
        """ROLLBACK; must not raise when no transaction is open."""

    @abc.abstractmethod
    def _database_error(self, exc: BaseException) -> PowerContextError | None:
        """Map a driver exception to a typed error (a unique-key violation on a revision
        or head to RevisionConflictError, lock contention to RetryableError, ...), or
        None when it is not a known case."""

    @abc.abstractmethod
    def _meta_get_sync(self, key: str) -> str | None:
        """A value of the deployment metadata table (``powercontext_meta``)."""

    @abc.abstractmethod
    def _meta_set_sync(self, key: str, value: str | None) -> None:
        """Set (or with None delete) a metadata value."""

    # ------------------------------------------------------------------ family hooks

    def _check_open_sync(self) -> None:
        """Run once right after :meth:`_open_sync` on the worker thread: the family's
        checks of what the database records. Raising refuses the open (the connection
        is closed and the next call tries again). The default checks nothing."""

    def _contention_sync(self) -> None:
        """Run between two attempts of a unit of work that met lock contention (outside
        any transaction): an engine may end what holds the locks for a client that is
        gone (OceanBase: abandoned sessions). The default does nothing; it never
        raises."""

    def _check_ready_sync(self) -> None:
        """Run before every call once the database is open: raise to refuse the call
        (e.g. a database that needs an upgrade first). The default refuses nothing. It
        reads no row and may run on the event loop's thread (:meth:`capabilities`)."""

    # ------------------------------------------------------------------ worker thread

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the backend's worker thread, opening the database first."""
        loop = asyncio.get_running_loop()
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=type(self).__name__
            )
        return await loop.run_in_executor(self._executor, self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        self._ensure_open_sync()
        return fn(*args)

    def _ensure_open_sync(self) -> None:
        with self._open_lock:
            if not self._opened:
                self._db_caps = self._open_sync()
                try:
                    self._check_open_sync()
                except BaseException:
                    self._close_sync()
                    raise
                self._opened = True
        self._check_ready_sync()

    # ------------------------------------------------------------------ transactions

    def _in_tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in one transaction (a write one when ``write``): committed when
        it returns, rolled back when it raises, the driver's exception mapped by
        :meth:`_database_error`; rerun on RetryableError (see :meth:`_retrying`)."""
        return self._retrying(self._in_tx_once, write, fn, *args)

    def _in_tx_once(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        try:
            self._begin_sync(write)
            result = fn(*args)
            self._commit_sync()
            return result
        except BaseException as exc:
            mapped = self._abort_sync(exc)
            if mapped is not None:
                raise mapped from exc
            raise

    def _abort_sync(self, exc: BaseException) -> PowerContextError | None:
        """Roll back the open transaction after ``exc``; the typed error to raise in its
        place (``_database_error``), or None to re-raise ``exc`` itself (already typed)."""
        self._rollback_sync()
        return None if isinstance(exc, PowerContextError) else self._database_error(exc)

    def _retrying(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, rerun after a jittered, doubling backoff while it raises
        RetryableError, at most :attr:`retry_attempts` times in all; then BackendError
        naming the attempts. Any other error passes through at once."""
        delay = self.retry_backoff
        for attempt in range(1, self.retry_attempts + 1):
            try:
                return fn(*args)
            except RetryableError as exc:
                if attempt == self.retry_attempts:
                    raise BackendError(f"{exc} persisted after {attempt} attempts") from exc
                self._contention_sync()
                import secrets  # only on a retry

                time.sleep(delay * (0.5 + secrets.randbelow(1000) / 1000))
                delay *= 2
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Open the database now (otherwise the first call does)."""
        await self._run(lambda: None)

    async def close(self) -> None:
        """Close the connection and stop the worker thread (idempotent; a later call
        opens the database again)."""
        if self._executor is None:
            return
        executor = self._executor
        if self._opened:
            await asyncio.get_running_loop().run_in_executor(executor, self._close_sync)
        self._opened = False
        self._executor = None
        executor.shutdown(wait=True)

    def close_sync(self) -> None:
        """Close from synchronous code (e.g. after ``asyncio.run``)."""
        if self._executor is not None:
            self._executor.submit(self._close_sync).result()
            self._executor.shutdown(wait=True)
            self._executor = None
        self._opened = False

    async def capabilities(self) -> C:
        """The capability report of the startup probes (opens the database). Once the
        database is open the report is fixed, so it is answered on the caller's thread
        (no hop to the worker thread: a search with a model and every write with one ask
        for it), after the same :meth:`_check_ready_sync`."""
        if self._opened and self._db_caps is not None:
            self._check_ready_sync()
            return self._db_caps
        await self._run(lambda: None)
        assert self._db_caps is not None
        return self._db_caps
