"""SQLSupervisionRows: the Supervisor substrate's primitives that run one shared
template each, written once over the engine port (Topic Memory RFC, "Automatic
scheduling"): discovery pages of Pending and the wave targets. The leases and the
binding states' clock follow the engine's
:class:`~powercontext.ports.engine.LockingPolicy` and stay with each engine."""

from __future__ import annotations

from powercontext.adapters.storage.rows import text
from powercontext.core.topic.processing import PendingRow
from powercontext.core.topic.supervision import WaveTarget
from powercontext.ports.engine import SQLEngine

__all__ = ["SQLSupervisionRows"]


class SQLSupervisionRows:
    """Discovery pages and wave targets over ``engine`` (the concrete adapter's
    :class:`~powercontext.ports.engine.SQLEngine`)."""

    engine: SQLEngine

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
