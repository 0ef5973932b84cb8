"""Fault injection at every SQLite statement of one write: a mixin for a SQLite backend
subclass whose ``_execute`` counts the statements run while ``armed`` and raises
:class:`Injected` before (or, with ``after``, after) statement number ``fail_at``. The
test arms it where its write begins (the Memory commit, the Topic publication)."""

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

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if not self.armed:
            return super()._execute(sql, params)  # type: ignore[misc, no-any-return]
        self.count += 1
        self.last_sql = sql
        if self.count == self.fail_at and not self.after:
            raise Injected(f"before statement {self.count}: {sql[:60]}")
        rows = super()._execute(sql, params)  # type: ignore[misc]
        if self.count == self.fail_at and self.after:
            raise Injected(f"after statement {self.count}: {sql[:60]}")
        return rows  # type: ignore[no-any-return]
