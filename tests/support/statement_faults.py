"""Fault injection at every SQLite statement of one write: a mixin for a SQLite backend
subclass that wraps its engine's one funnel to APSW
(:meth:`~powercontext.adapters.sqlite.engine.SQLiteEngine.rows`) so that it counts the
statements run while ``armed`` and raises :class:`Injected` before (or, with ``after``,
after) statement number ``fail_at``. The test arms it where its write begins (the
Memory commit, the Topic publication)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Injected", "StatementFaults"]


class Injected(Exception):
    """The injected failure."""


class StatementFaults:
    fail_at: int | None = None
    after = False
    count = 0
    armed = False
    last_sql = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        engine = self.engine  # type: ignore[attr-defined]
        funnel = engine.rows

        def rows(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
            return self._faulty(funnel, sql, params)

        engine.rows = rows

    def _faulty(self, funnel: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if not self.armed:
            return funnel(sql, params)  # type: ignore[no-any-return]
        self.count += 1
        self.last_sql = sql
        if self.count == self.fail_at and not self.after:
            raise Injected(f"before statement {self.count}: {sql[:60]}")
        rows = funnel(sql, params)
        if self.count == self.fail_at and self.after:
            raise Injected(f"after statement {self.count}: {sql[:60]}")
        return rows  # type: ignore[no-any-return]


def hook_statements(backend: Any, hook: Any, *, many: bool = True) -> None:
    """Route every statement the OceanBase engine of ``backend`` sends through
    ``hook(sql, params, run)`` (``run()`` sends it and returns what the engine's
    ``_exec`` returns; with ``many``, batches of ``_exec_many`` too): fault injection
    and recording at the engine's one funnel to the driver."""
    engine = backend.engine
    inner_exec, inner_many = engine._exec, engine._exec_many

    def exec_(sql: str, params: Any = None) -> Any:
        return hook(sql, params, lambda: inner_exec(sql, params))

    def exec_many(sql: str, rows: Any) -> Any:
        return hook(sql, rows, lambda: inner_many(sql, rows))

    engine._exec = exec_
    if many:
        engine._exec_many = exec_many
