"""Queries named ahead inside one OceanBase read transaction (Memory RFC, "Search and
reads": a search is one read transaction): :class:`ReadAhead`, the engine's list of
queries that travel with its next statement in one multi-statement round trip
(``CLIENT.MULTI_STATEMENTS``), and the rows they answered, kept until the caller runs
each one. A read transaction is one snapshot, so those rows are the ones each query
answers when run in turn; they never outlive the transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from powercontext.adapters.oceanbase.driver import CONNECTION_LOST, errno

__all__ = ["ReadAhead"]

#: ``(sql, params)`` of one query
Key = tuple[str, tuple[Any, ...]]


class ReadAhead:
    """The queries named ahead (:meth:`name`) and the rows kept (:meth:`rows`) of the
    open read transaction; :meth:`clear` when it ends."""

    def __init__(self) -> None:
        self._ahead: list[Key] = []
        self._read: dict[Key, list[tuple[Any, ...]]] = {}
        self._open = False  # a read transaction is open

    def begin(self, read: bool) -> None:
        """A transaction begins (``read``: a read-only one, where queries may be named)."""
        self.clear()
        self._open = read

    def __bool__(self) -> bool:
        return bool(self._ahead or self._read)

    def clear(self) -> None:
        """The transaction ended (or its connection did): nothing is kept."""
        self._ahead, self._read, self._open = [], {}, False

    def name(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Queries to send with the next statement; nothing outside a read transaction."""
        if self._open:
            self._ahead.extend((sql, tuple(params)) for sql, params in statements)

    def rows(self, sql: str, params: Sequence[Any] | None, cursor: Callable[[], Any],
             run: Callable[[str], Any], drop: Callable[[], None]) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` with ``params``: kept ones, else run by ``run`` (the
        engine's ``_exec`` of a text without parameters, which returns its cursor)
        together with the queries named ahead, in one multi-statement text bound by a
        ``cursor()``'s ``mogrify``; their results are kept. A query named ahead that
        fails is not raised (it runs again when asked for; the server ran none after
        it); a lost connection is dropped (``drop()``)."""
        key = (sql, tuple(params or ()))
        kept = self._read.pop(key, None)
        if kept is not None:
            return kept
        ahead, self._ahead = [k for k in self._ahead if k != key], []
        mogrify = cursor().mogrify
        cur = run("; ".join(mogrify(q, p or None) for q, p in (key, *ahead)))
        out = list(cur.fetchall())
        try:
            for k in ahead:
                if not cur.nextset():
                    break
                self._read[k] = list(cur.fetchall())
        except Exception as exc:
            if errno(exc) in CONNECTION_LOST:
                drop()
        return out
