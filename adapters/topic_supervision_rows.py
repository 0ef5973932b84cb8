"""SupervisionRows: the Supervisor substrate's rows over the engine port
(Topic Memory RFC, "Leader, term, and fencing", "Automatic scheduling"): discovery pages
of Pending and the wave targets, one shared template each, written once; the leases and
binding states, which follow the engine's
:class:`~powercontext.ports.engine.LockingPolicy`, by the engine's
:class:`~powercontext.ports.engine.SupervisorLeases` collaborator (``leases``)."""

from __future__ import annotations

import datetime
from typing import Protocol

from powercontext.adapters.storage.rows import text
from powercontext.core.topic.processing import PendingRow
from powercontext.core.topic.supervision import SupervisorTerm, WaveTarget
from powercontext.ports.engine import SQLEngine, SupervisorLeases

__all__ = ["SQLSupervisionRows", "SupervisionRows"]


class SupervisionRows(Protocol):
    """The rows :class:`~powercontext.adapters.topic_supervision_store.TopicSupervision`
    reads and writes, each inside the caller's transaction."""

    def lease(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        """``(holder_id, generation, unexpired)`` of the group's lease, or None."""
        ...

    def lease_acquire(self, holder_id: str, lease_seconds: float | None
                      ) -> SupervisorTerm | None:
        """The term ``holder_id`` now holds, or None."""
        ...

    def lease_renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        """Extend ``term``'s lease; False when it was lost."""
        ...

    def lease_release(self, term: SupervisorTerm) -> None:
        """Give ``term``'s lease up."""
        ...

    def binding_state(self, binding_name: str
                      ) -> tuple[datetime.datetime | None, datetime.datetime]:
        """``(completed_at or None, the database's now)``, aware UTC."""
        ...

    def binding_state_touch(self, binding_name: str) -> None:
        """Record the database's now as the binding's completed wave."""
        ...

    def pending_page(self, binding_name: str, after: str, limit: int,
                     flushed_only: bool, wave_id: str | None) -> list[PendingRow]:
        """A page of Pending rows after ``after`` (UTF-8 binary order)."""
        ...

    def targets_clear(self, binding_name: str) -> int:
        """Delete every frozen target of the binding; the rows deleted."""
        ...

    def targets_freeze(self, binding_name: str, wave_id: str) -> int:
        """Freeze every current Pending row as a target of ``wave_id``."""
        ...

    def targets_page(self, wave_id: str, binding_name: str, after: str,
                     limit: int) -> list[WaveTarget]:
        """A page of not-completed targets after ``after``."""
        ...

    def target_get(self, wave_id: str, binding_name: str,
                   scope_id: str) -> WaveTarget | None:
        """One target (locked where the engine locks rows), or None."""
        ...

    def target_complete(self, wave_id: str, binding_name: str, scope_id: str) -> None:
        """Mark one target completed."""
        ...

    def targets_count(self, wave_id: str, binding_name: str) -> tuple[int, int]:
        """(targets, not covered by their Cursor) of the wave."""
        ...

    def wave_cleanup(self, wave_id: str, binding_name: str) -> None:
        """Delete the wave's qualifying Pending rows and its targets."""
        ...


class SQLSupervisionRows:
    """:class:`SupervisionRows` over ``engine`` (discovery pages and wave targets, one
    shared template each) and ``leases`` (leases and binding states, the engine's
    :class:`~powercontext.ports.engine.SupervisorLeases`)."""

    def __init__(self, engine: SQLEngine, leases: SupervisorLeases) -> None:
        self.engine = engine
        self.leases = leases

    # ------------------------------------------------------------------ leases

    def lease(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        return self.leases.current(group, lock=lock)

    def lease_acquire(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        return self.leases.acquire(holder_id, lease_seconds)

    def lease_renew(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        return self.leases.renew(term, lease_seconds)

    def lease_release(self, term: SupervisorTerm) -> None:
        self.leases.release(term)

    def binding_state(self, binding_name: str
                            ) -> tuple[datetime.datetime | None, datetime.datetime]:
        return self.leases.binding_state(binding_name)

    def binding_state_touch(self, binding_name: str) -> None:
        self.leases.touch_binding_state(binding_name)

    # ------------------------------------------------------------------ discovery

    def pending_page(self, binding_name: str, after: str, limit: int,
                           flushed_only: bool, wave_id: str | None) -> list[PendingRow]:
        rows = self.engine.query("pending_page", (
            binding_name, after, int(flushed_only), wave_id, wave_id, limit))
        return [PendingRow(binding_name, text(r[3]), int(r[0]), int(r[1]), int(r[2]))
                for r in rows]

    # ------------------------------------------------------------------ wave targets

    def targets_clear(self, binding_name: str) -> int:
        return self.engine.execute("targets_clear", (binding_name,))

    def targets_freeze(self, binding_name: str, wave_id: str) -> int:
        return self.engine.execute("targets_freeze", (wave_id, binding_name))

    def targets_page(self, wave_id: str, binding_name: str, after: str,
                           limit: int) -> list[WaveTarget]:
        rows = self.engine.query("targets_page", (wave_id, binding_name, after, limit))
        return [WaveTarget(wave_id, binding_name, text(r[0]), int(r[1]), bool(r[2]))
                for r in rows]

    def target_get(self, wave_id: str, binding_name: str,
                         scope_id: str) -> WaveTarget | None:
        rows = self.engine.query("target_get", (wave_id, binding_name, scope_id),
                                 for_update=True)
        return (WaveTarget(wave_id, binding_name, scope_id, int(rows[0][0]), bool(rows[0][1]))
                if rows else None)

    def target_complete(self, wave_id: str, binding_name: str, scope_id: str) -> None:
        self.engine.execute("target_complete", (wave_id, binding_name, scope_id))

    def targets_count(self, wave_id: str, binding_name: str) -> tuple[int, int]:
        total = self.engine.query("targets_count", (wave_id, binding_name))[0][0]
        uncovered = self.engine.query("targets_uncovered", (wave_id, binding_name))[0][0]
        return int(total), int(uncovered)

    def wave_cleanup(self, wave_id: str, binding_name: str) -> None:
        self.engine.execute("wave_pending_delete", (binding_name, wave_id, binding_name))
        self.engine.execute("targets_delete", (wave_id, binding_name))
