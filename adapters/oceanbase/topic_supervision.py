"""The OceanBase primitives of the Supervisor substrate (Topic Memory RFC, "Leader,
term, and fencing", "Automatic scheduling"): :class:`OceanBaseTopicSupervision`, a
mixin of :class:`~powercontext.adapters.oceanbase.topic_backend.OceanBaseTopicBackend`
implementing what
:class:`~powercontext.adapters.topic_supervision_store.TopicSupervisionFront` drives.

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
from typing import Any

from powercontext.adapters.oceanbase.connection import errno
from powercontext.adapters.storage.rows import text as _text
from powercontext.adapters.topic_supervision_sql_rows import SQLSupervisionRows
from powercontext.adapters.topic_supervision_store import utc_datetime
from powercontext.core.topic.supervision import SUPERVISOR_GROUP, SupervisorTerm
from powercontext.sql import oceanbase_supervision as lsql
from powercontext.sql import templates

__all__ = ["OceanBaseTopicSupervision"]

_DUPLICATE_KEY = 1062


def _q(name: str) -> str:
    return templates.render(name, "oceanbase")


def _micros(seconds: float | None) -> int:
    assert seconds is not None  # checked by the front (lease_expires)
    return max(1, round(seconds * 1_000_000))


class OceanBaseTopicSupervision(SQLSupervisionRows):
    """Leases, discovery pages, binding states and wave targets over mysqlclient (the
    host's ``_exec`` and ``_all``; ``CLIENT.FOUND_ROWS``: rowcount = matched rows)."""

    lease_expires = True

    _exec: Any
    _all: Any

    # ------------------------------------------------------------------ leases

    def _lease_sync(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        rows = self._all(lsql.lease_locked(lock), (group,))
        if not rows:
            return None
        return _text(rows[0][0]), int(rows[0][1]), bool(rows[0][2])

    def _lease_acquire_sync(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        micros = _micros(lease_seconds)
        stored = self._lease_sync(SUPERVISOR_GROUP, lock=True)
        if stored is None:
            try:
                self._exec(lsql.lease_insert(), (SUPERVISOR_GROUP, holder_id, micros))
            except Exception as exc:
                if errno(exc) == _DUPLICATE_KEY:  # another candidate inserted first
                    return None
                raise
            return SupervisorTerm(holder_id, 1)
        holder, generation, valid = stored
        if valid:
            if holder != holder_id:
                return None
            self._exec(lsql.lease_renew(), (micros, SUPERVISOR_GROUP, holder_id, generation))
            return SupervisorTerm(holder_id, generation)
        cur = self._exec(lsql.lease_takeover(), (holder_id, micros, SUPERVISOR_GROUP))
        if cur.rowcount != 1:
            return None
        after = self._lease_sync(SUPERVISOR_GROUP, lock=True)
        assert after is not None
        return SupervisorTerm(holder_id, after[1])

    def _lease_renew_sync(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        cur = self._exec(lsql.lease_renew(), (_micros(lease_seconds), term.group,
                                              term.holder_id, term.generation))
        return bool(cur.rowcount == 1)

    def _lease_release_sync(self, term: SupervisorTerm) -> None:
        self._exec(lsql.lease_release(), (term.group, term.holder_id, term.generation))

    # ------------------------------------------------------------------ discovery

    def _db_now(self) -> datetime.datetime:
        value: datetime.datetime = self._all("SELECT UTC_TIMESTAMP(6)")[0][0]
        return value

    def _binding_state_sync(self, binding_name: str
                            ) -> tuple[datetime.datetime | None, datetime.datetime]:
        rows = self._all(_q("binding_state_get"), (binding_name,))
        completed = utc_datetime(rows[0][0]) if rows and rows[0][0] is not None else None
        return completed, utc_datetime(self._db_now())

    def _binding_state_touch_sync(self, binding_name: str) -> None:
        now = self._db_now()  # naive UTC: stored as DATETIME(6) unconverted
        cur = self._exec(_q("binding_state_set"), (now, binding_name))
        if cur.rowcount == 0:
            self._exec(_q("binding_state_insert"), (binding_name, now))

    # ------------------------------------------------------------------ wave targets

