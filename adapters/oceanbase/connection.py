"""OceanBaseStorage: the engine-neutral :class:`~powercontext.adapters.storage.
sql_storage.SQLStorage` on an :class:`~powercontext.adapters.oceanbase.engine.
OceanBaseEngine` it builds (Memory RFC, "OceanBase adapter"). The engine owns the
connection, its lifecycle, transactions, error mapping, metadata and Source positions;
this class only builds it from a URL, opens a family's schema through it
(:meth:`OceanBaseStorage._open_sync` runs the family's ``_open_checked_sync`` inside
:meth:`OceanBaseEngine.opening`, which reruns it on an open race), and keeps the
engine's OceanBase-only calls under the names the family modules still use (``_exec``,
``_all``, ``_exec_ddl``, ``_tables`` ...: each one line, forwarded to the engine).

A family's OceanBase backend subclasses it together with its family base class, calls
:meth:`OceanBaseStorage._init_connection` from ``__init__`` and implements
:meth:`OceanBaseStorage._open_checked_sync` (its schema and probes).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

from powercontext.adapters.oceanbase.driver import (
    CONNECTION_LOST,
    DDL_TIMEOUT_US,
    LOCK_TIMEOUT_US,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF,
    OceanBaseURL,
    errno,
    parse_url,
)
from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.storage.sql_storage import SQLStorage

__all__ = ["CONNECTION_LOST", "DDL_TIMEOUT_US", "LOCK_TIMEOUT_US", "RETRY_ATTEMPTS",
           "RETRY_BACKOFF", "OceanBaseEngine", "OceanBaseStorage", "OceanBaseURL", "errno",
           "parse_url"]

C = TypeVar("C")


class OceanBaseStorage(SQLStorage[C]):
    """:class:`SQLStorage` on the OceanBase engine of one database URL.
    ``engine_class`` builds the engine (a test may give a subclass that injects
    faults in :meth:`OceanBaseEngine._exec`)."""

    retry_attempts = RETRY_ATTEMPTS
    retry_backoff = RETRY_BACKOFF
    engine_class: ClassVar[type[OceanBaseEngine]] = OceanBaseEngine

    #: the engine with its OceanBase-only calls (``self.engine`` is the same object,
    #: typed as the port)
    ob_engine: OceanBaseEngine

    def _init_connection(self, url: str) -> None:
        """Build the engine (called from the concrete backend's ``__init__``)."""
        self.ob_engine = self.engine_class(url)
        self._use_engine(self.ob_engine)

    @abc.abstractmethod
    def _open_checked_sync(self) -> C:
        """Check the server, create or check the family's schema, run the probes and
        report the capabilities (driver errors are mapped by the caller)."""

    def _open_sync(self) -> C:
        self._connect_sync()
        return self.engine.opening(self._open_checked_sync)

    # -- the engine's OceanBase-only calls under the family modules' names --------------

    @property
    def probe_facts(self) -> dict[str, Any]:
        """What the startup probes saw (version, mode, words the SPACE parser drops, the
        heads DDL); empty before the backend opens."""
        return dict(self.ob_engine.probe_facts)

    @property
    def _probe_facts(self) -> dict[str, Any]:
        return self.ob_engine.probe_facts

    @property
    def _url(self) -> OceanBaseURL:
        return self.ob_engine.url

    @property
    def _conn(self) -> Any:
        return self.ob_engine.connection

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> int:
        return self.ob_engine.run(sql, params)

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.ob_engine.run_many(sql, rows)

    def _all(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.ob_engine.rows(sql, params)

    def _in_chunks(self, name: str, values: list[Any],
                   prefix: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.engine.query_in(name, values, prefix)

    def _check_server_sync(self) -> None:
        self.ob_engine.connect()  # the version gate runs once per new connection

    def _exec_ddl(self, sql: str) -> None:
        self.ob_engine.run_ddl(sql)

    def _seed_meta_sync(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.ob_engine.seed_meta(pairs)

    def _tables(self) -> set[str]:
        return self.ob_engine.tables()
