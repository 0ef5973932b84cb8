"""SQLSupervisionRows: the Supervisor substrate's primitives over the engine port
(Topic Memory RFC, "Leader, term, and fencing", "Automatic scheduling"): discovery pages
of Pending and the wave targets, one shared template each, written once; the leases and
binding states, which follow the engine's
:class:`~powercontext.ports.engine.LockingPolicy`, by the engine's
:class:`~powercontext.ports.engine.SupervisorLeases` collaborator (``leases``)."""

from __future__ import annotations

import datetime

from powercontext.adapters.storage.rows import text
from powercontext.core.topic.processing import PendingRow
from powercontext.core.topic.supervision import SupervisorTerm, WaveTarget
from powercontext.ports.engine import SQLEngine, SupervisorLeases

__all__ = ["SQLSupervisionRows"]


class SQLSupervisionRows:
    """Discovery pages and wave targets over ``engine`` (the concrete adapter's
    :class:`~powercontext.ports.engine.SQLEngine`), leases and binding states by
    ``leases``."""

    engine: SQLEngine
    leases: SupervisorLeases

    # ------------------------------------------------------------------ leases

    def _lease_sync(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        return self.leases.current(group, lock=lock)

    def _lease_acquire_sync(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        return self.leases.acquire(holder_id, lease_seconds)

    def _lease_renew_sync(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        return self.leases.renew(term, lease_seconds)

    def _lease_release_sync(self, term: SupervisorTerm) -> None:
        self.leases.release(term)

    def _binding_state_sync(self, binding_name: str
                            ) -> tuple[datetime.datetime | None, datetime.datetime]:
        return self.leases.binding_state(binding_name)

    def _binding_state_touch_sync(self, binding_name: str) -> None:
        self.leases.touch_binding_state(binding_name)

    # ------------------------------------------------------------------ discovery

    def _pending_page_sync(self, binding_name: str, after: str, limit: int,
                           flushed_only: bool, wave_id: str | None) -> list[PendingRow]:
        rows = self.engine.query("pending_page", (
            binding_name, after, int(flushed_only), wave_id, wave_id, limit))
        return [PendingRow(binding_name, text(r[3]), int(r[0]), int(r[1]), int(r[2]))
                for r in rows]

    # ------------------------------------------------------------------ wave targets

    def _targets_clear_sync(self, binding_name: str) -> int:
        return self.engine.execute("targets_clear", (binding_name,))

    def _targets_freeze_sync(self, binding_name: str, wave_id: str) -> int:
        return self.engine.execute("targets_freeze", (wave_id, binding_name))

    def _targets_page_sync(self, wave_id: str, binding_name: str, after: str,
                           limit: int) -> list[WaveTarget]:
        rows = self.engine.query("targets_page", (wave_id, binding_name, after, limit))
        return [WaveTarget(wave_id, binding_name, text(r[0]), int(r[1]), bool(r[2]))
                for r in rows]

    def _target_get_sync(self, wave_id: str, binding_name: str,
                         scope_id: str) -> WaveTarget | None:
        rows = self.engine.query("target_get", (wave_id, binding_name, scope_id),
                                 for_update=True)
        return (WaveTarget(wave_id, binding_name, scope_id, int(rows[0][0]), bool(rows[0][1]))
                if rows else None)

    def _target_complete_sync(self, wave_id: str, binding_name: str, scope_id: str) -> None:
        self.engine.execute("target_complete", (wave_id, binding_name, scope_id))

    def _targets_count_sync(self, wave_id: str, binding_name: str) -> tuple[int, int]:
        total = self.engine.query("targets_count", (wave_id, binding_name))[0][0]
        uncovered = self.engine.query("targets_uncovered", (wave_id, binding_name))[0][0]
        return int(total), int(uncovered)

    def _wave_cleanup_sync(self, wave_id: str, binding_name: str) -> None:
        self.engine.execute("wave_pending_delete", (binding_name, wave_id, binding_name))
        self.engine.execute("targets_delete", (wave_id, binding_name))
