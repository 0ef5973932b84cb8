"""The SQLite primitives of the Supervisor substrate (Topic Memory RFC, "Leader, term,
and fencing", "Automatic scheduling"; TOPIC-MEMORY.md, "SQLite and other processes"):
:class:`SQLiteTopicSupervision`, a mixin of
:class:`~powercontext.adapters.sqlite.topic_backend.SQLiteTopicBackend` implementing
what :class:`~powercontext.adapters.topic_supervision_store.TopicSupervisionFront`
drives.

SQLite elects no Leader and renews nothing: a Supervisor's start overwrites the holder,
raises the generation and keeps ``lease_expires_at`` NULL, and the term lasts until the
next start (a second Supervisor on the same file is refused by the process lock of
:mod:`powercontext.runtime`). The fence reads the lease row inside the write
transaction, which ``BEGIN IMMEDIATE`` already serialises against every other writer:
a takeover cannot interleave with a fenced commit.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from powercontext.adapters.topic_spi import utc_text
from powercontext.adapters.topic_supervision_sql_rows import SQLSupervisionRows
from powercontext.adapters.topic_supervision_store import utc_datetime
from powercontext.core.topic.supervision import SUPERVISOR_GROUP, SupervisorTerm
from powercontext.sql import sqlite as frag

__all__ = ["SQLiteTopicSupervision"]


class SQLiteTopicSupervision(SQLSupervisionRows):
    """Leases, discovery pages, binding states and wave targets on APSW (the host's
    ``_execute``, ``_t``, ``_changed_one`` and ``_database_utc_now_sync``)."""

    lease_expires = False

    _execute: Any
    _t: Any
    _changed_one: Any
    _conn: Any
    _database_utc_now_sync: Any

    def _changes(self) -> int:
        return int(self._conn.changes())

    # ------------------------------------------------------------------ leases

    def _lease_sync(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        del lock  # BEGIN IMMEDIATE: no other writer until COMMIT
        rows = self._execute(self._t("lease_get"), [group])
        return (str(rows[0][0]), int(rows[0][1]), True) if rows else None

    def _lease_acquire_sync(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm:
        del lease_seconds  # None: the term lasts until the next start
        self._execute(self._t("lease_takeover"), [holder_id, SUPERVISOR_GROUP])
        if not self._changed_one():
            self._execute(self._t("lease_insert"), [SUPERVISOR_GROUP, holder_id])
        stored = self._lease_sync(SUPERVISOR_GROUP, lock=True)
        assert stored is not None
        return SupervisorTerm(holder_id, stored[1])

    def _lease_renew_sync(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        del lease_seconds
        stored = self._lease_sync(term.group, lock=False)
        return stored is not None and stored[:2] == (term.holder_id, term.generation)

    def _lease_release_sync(self, term: SupervisorTerm) -> None:
        del term  # the next start takes over; nothing expires on SQLite

    # ------------------------------------------------------------------ discovery

    def _binding_state_sync(self, binding_name: str
                            ) -> tuple[datetime.datetime | None, datetime.datetime]:
        rows = self._execute(self._t("binding_state_get"), [binding_name])
        completed = utc_datetime(rows[0][0]) if rows and rows[0][0] is not None else None
        now = utc_datetime(self._execute(frag.statement("topic_now"))[0][0])
        return completed, now

    def _binding_state_touch_sync(self, binding_name: str) -> None:
        now = utc_text(self._database_utc_now_sync())
        self._execute(self._t("binding_state_set"), [now, binding_name])
        if not self._changed_one():
            self._execute(self._t("binding_state_insert"), [binding_name, now])

    # ------------------------------------------------------------------ wave targets


def _text(value: Sequence[Any] | Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)
