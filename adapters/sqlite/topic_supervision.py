"""SQLiteLeases: the Supervisor's lease and binding-state rows on SQLite, over the
engine port (Topic Memory RFC, "Leader, term, and fencing", "Automatic scheduling";
TOPIC-MEMORY.md, "SQLite and other processes"), the
:class:`~powercontext.ports.engine.SupervisorLeases` of the ``SINGLE_WRITER`` policy.

SQLite elects no Leader and renews nothing: a Supervisor's start overwrites the holder,
raises the generation and keeps ``lease_expires_at`` NULL, and the term lasts until the
next start (a second Supervisor on the same file is refused by the process lock of
:mod:`powercontext.runtime`). The fence reads the lease row inside the write
transaction, which ``BEGIN IMMEDIATE`` already serialises against every other writer:
a takeover cannot interleave with a fenced commit.
"""

from __future__ import annotations

import datetime

from powercontext.adapters.storage.rows import text
from powercontext.adapters.topic_supervision_store import utc_datetime
from powercontext.core.topic.supervision import SUPERVISOR_GROUP, SupervisorTerm
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLiteLeases"]


class SQLiteLeases:
    """Leases that never expire and binding states, by the database's clock."""

    expires = False

    def __init__(self, engine: SQLEngine) -> None:
        self._engine = engine

    def current(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        del lock  # BEGIN IMMEDIATE: no other writer until COMMIT
        rows = self._engine.query("lease_get", (group,))
        return (text(rows[0][0]), int(rows[0][1]), True) if rows else None

    def acquire(self, holder_id: str, lease_seconds: float | None) -> SupervisorTerm:
        del lease_seconds  # None: the term lasts until the next start
        if self._engine.execute("lease_takeover", (holder_id, SUPERVISOR_GROUP)) != 1:
            self._engine.execute("lease_insert", (SUPERVISOR_GROUP, holder_id))
        stored = self.current(SUPERVISOR_GROUP, lock=True)
        assert stored is not None
        return SupervisorTerm(holder_id, stored[1])

    def renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        del lease_seconds
        stored = self.current(term.group, lock=False)
        return stored is not None and stored[:2] == (term.holder_id, term.generation)

    def release(self, term: SupervisorTerm) -> None:
        del term  # the next start takes over; nothing expires on SQLite

    def binding_state(self, binding_name: str
                      ) -> tuple[datetime.datetime | None, datetime.datetime]:
        rows = self._engine.query("binding_state_get", (binding_name,))
        completed = utc_datetime(rows[0][0]) if rows and rows[0][0] is not None else None
        return completed, utc_datetime(self._engine.database_now())

    def touch_binding_state(self, binding_name: str) -> None:
        now = self._engine.database_now()
        if self._engine.execute("binding_state_set", (now, binding_name)) != 1:
            self._engine.execute("binding_state_insert", (binding_name, now))
