"""OceanBaseEngine: the :class:`~powercontext.ports.engine.SQLEngine` port on
OceanBase MySQL mode or seekdb (Memory RFC, "OceanBase adapter"; Topic Memory RFC,
"Leader, term, and fencing"): named shared statements run on the mysqlclient connection
of one :class:`~powercontext.adapters.oceanbase.connection.OceanBaseStorage`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.adapters.storage.engine_view import StorageEngine
from powercontext.adapters.storage.rows import utc_text
from powercontext.ports.engine import EngineCapabilities, LockingPolicy
from powercontext.sql import oceanbase_topic as tsql
from powercontext.sql import templates

if TYPE_CHECKING:
    from powercontext.core.errors import PowerContextError

__all__ = ["OceanBaseEngine"]

DIALECT = "oceanbase"


class OceanBaseEngine(StorageEngine):
    """The :class:`~powercontext.ports.engine.SQLEngine` port on the mysqlclient
    connection of one :class:`OceanBaseStorage`: every statement goes through the
    storage's :meth:`OceanBaseStorage._exec` (tests inject faults there). Many writers
    with row locks (``CLIENT.FOUND_ROWS``: a statement's count is of matched rows); the
    Supervisor's Leader holds a lease that expires by database time."""

    CAPABILITIES = EngineCapabilities(DIALECT, LockingPolicy.LEASES, row_locks=True)

    #: the :class:`OceanBaseStorage` that owns the connection (untyped here: that module
    #: imports this one)
    _storage: Any

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        return int(self._storage._exec(templates.render(statement, DIALECT), params).rowcount)

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self._storage._exec_many(templates.render(statement, DIALECT), rows)

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        sql = templates.render(statement, DIALECT)
        return self._storage._all(sql + " FOR UPDATE" if for_update else sql, params)

    def query_in(self, statement: str, values: Sequence[Any],
                 before: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._storage._in_chunks(statement, list(dict.fromkeys(values)), before)

    # -- beyond the port: the engine's own statements (:mod:`powercontext.sql.oceanbase`)

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one OceanBase-only statement; the number of rows it matched."""
        return int(self._storage._exec(sql, params).rowcount)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one OceanBase-only query."""
        return self._storage._all(sql, params)

    def map_error(self, exc: BaseException) -> PowerContextError | None:
        return self._storage._database_error(exc)

    def database_now(self) -> str:
        """``UTC_TIMESTAMP(6)`` (the session time zone of seekdb is +08:00, so never
        ``NOW()``)."""
        return utc_text(self._storage._all(tsql.utc_now())[0][0])
