"""OceanBaseLeases: the Supervisor's lease and binding-state rows on OceanBase (Topic
Memory RFC, "Leader, term, and fencing", "Automatic scheduling"), the
:class:`~powercontext.ports.engine.SupervisorLeases` of the ``LEASES`` policy.

Several candidates, one Leader: the lease of group ``global`` expires by database time
(``UTC_TIMESTAMP(6)``, :mod:`powercontext.sql.oceanbase_supervision`). Every fenced
transaction reads the lease row first ``FOR UPDATE`` (a takeover's UPDATE waits for an
in-flight fenced commit, and a fenced transaction after a takeover sees the new term)
and requires an unexpired lease. Acquisition in one transaction: the first INSERT
(generation 1; a concurrent first INSERT loses on the duplicate key and gets None), a
renewal of the asker's own valid lease, or one conditional UPDATE of an expired lease
(generation + 1; zero matched rows: another holder is valid, None).
"""

from __future__ import annotations

import datetime

from powercontext.adapters.oceanbase.driver import errno
from powercontext.adapters.oceanbase.engine import OceanBaseEngine
from powercontext.adapters.storage.rows import text
from powercontext.adapters.topic_supervision_store import utc_datetime
from powercontext.core.topic.supervision import SUPERVISOR_GROUP, SupervisorTerm
from powercontext.sql import oceanbase_supervision as lsql

__all__ = ["OceanBaseLeases"]

_DUPLICATE_KEY = 1062


def _micros(seconds: float | None) -> int:
    assert seconds is not None  # checked by the front (lease_expires)
    return max(1, round(seconds * 1_000_000))


class OceanBaseLeases:
    """Leases that expire by database time and binding states, over mysqlclient
    (``CLIENT.FOUND_ROWS``: a statement's count is of matched rows)."""

    expires = True

    def __init__(self, engine: OceanBaseEngine) -> None:
        self._engine = engine

    def current(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        rows = self._engine.rows(lsql.lease_locked(lock), (group,))
        if not rows:
            return None
        return text(rows[0][0]), int(rows[0][1]), bool(rows[0][2])

    def acquire(self, holder_id: str, lease_seconds: float | None) -> SupervisorTerm | None:
        micros = _micros(lease_seconds)
        stored = self.current(SUPERVISOR_GROUP, lock=True)
        if stored is None:
            try:
                self._engine.run(lsql.lease_insert(), (SUPERVISOR_GROUP, holder_id, micros))
            except Exception as exc:
                if errno(exc) == _DUPLICATE_KEY:  # another candidate inserted first
                    return None
                raise
            return SupervisorTerm(holder_id, 1)
        holder, generation, valid = stored
        if valid:
            if holder != holder_id:
                return None
            self._engine.run(lsql.lease_renew(),
                             (micros, SUPERVISOR_GROUP, holder_id, generation))
            return SupervisorTerm(holder_id, generation)
        if self._engine.run(lsql.lease_takeover(),
                            (holder_id, micros, SUPERVISOR_GROUP)) != 1:
            return None
        after = self.current(SUPERVISOR_GROUP, lock=True)
        assert after is not None
        return SupervisorTerm(holder_id, after[1])

    def renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        return self._engine.run(lsql.lease_renew(), (
            _micros(lease_seconds), term.group, term.holder_id, term.generation)) == 1

    def release(self, term: SupervisorTerm) -> None:
        self._engine.run(lsql.lease_release(), (term.group, term.holder_id, term.generation))

    def _db_now(self) -> datetime.datetime:
        value: datetime.datetime = self._engine.rows("SELECT UTC_TIMESTAMP(6)")[0][0]
        return value

    def binding_state(self, binding_name: str
                      ) -> tuple[datetime.datetime | None, datetime.datetime]:
        rows = self._engine.query("binding_state_get", (binding_name,))
        completed = utc_datetime(rows[0][0]) if rows and rows[0][0] is not None else None
        return completed, utc_datetime(self._db_now())

    def touch_binding_state(self, binding_name: str) -> None:
        now = self._db_now()  # naive UTC: stored as DATETIME(6) unconverted
        if self._engine.execute("binding_state_set", (now, binding_name)) == 0:
            self._engine.execute("binding_state_insert", (binding_name, now))
