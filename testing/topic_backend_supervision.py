"""The Supervisor substrate of the in-memory Topic backend (Topic Memory RFC, "Leader,
term, and fencing", "Automatic scheduling"): the primitives of
:class:`~powercontext.adapters.topic_supervision_store.TopicSupervision` over
three dict tables of the state, ``leases`` (group -> (holder_id, generation)),
``binding_states`` (binding_name -> aware UTC datetime | None) and ``wave_targets``
((wave_id, binding_name, scope_id) -> WaveTarget). Like SQLite: no expiry, a term lasts
until the next acquire; the clock is the process's UTC clock (the "database time" of
this backend), never earlier than a time it handed out before."""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from powercontext.core.errors import RevisionConflictError
from powercontext.core.topic.processing import PendingRow
from powercontext.core.topic.supervision import SUPERVISOR_GROUP, SupervisorTerm, WaveTarget

__all__ = ["InMemoryTopicSupervision"]


def _utf8(scope_id: str) -> bytes:
    return scope_id.encode("utf-8", "surrogatepass")


class InMemoryTopicSupervision:
    """Mixin of :class:`~powercontext.testing.InMemoryTopicBackend` (``_table``
    and ``_cursor_sync`` come from its allowance mixin)."""

    _table: Any
    _state: Any

    def _database_now(self) -> datetime.datetime:
        now = datetime.datetime.now(datetime.UTC)
        last = self._state.get("supervision_clock")
        if last is not None and last > now:
            now = last
        self._state["supervision_clock"] = now
        return now

    # -- leases ------------------------------------------------------------------------

    def _lease_sync(self, group: str, *, lock: bool) -> tuple[str, int, bool] | None:
        del lock
        row = self._table("leases").get(group)
        return None if row is None else (row[0], row[1], True)

    def _lease_acquire_sync(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm:
        del lease_seconds
        leases = self._table("leases")
        generation = leases.get(SUPERVISOR_GROUP, ("", 0))[1] + 1
        leases[SUPERVISOR_GROUP] = (holder_id, generation)
        return SupervisorTerm(holder_id, generation)

    def _lease_renew_sync(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        del lease_seconds
        return self._table("leases").get(term.group) == (term.holder_id, term.generation)

    def _lease_release_sync(self, term: SupervisorTerm) -> None:
        del term

    # -- discovery ---------------------------------------------------------------------

    def _pending_page_sync(self, binding_name: str, after: str, limit: int,
                           flushed_only: bool, wave_id: str | None) -> list[PendingRow]:
        targets = self._table("wave_targets")
        rows = [r for (b, s), r in self._table("pending").items()
                if b == binding_name and _utf8(s) > _utf8(after)
                and (not flushed_only or r.flush_generation > r.handled_flush_generation)
                and (wave_id is None or (wave_id, b, s) not in targets)]
        return sorted(rows, key=lambda r: _utf8(r.scope_id))[:limit]

    def _binding_state_sync(self, binding_name: str
                            ) -> tuple[datetime.datetime | None, datetime.datetime]:
        return self._table("binding_states").get(binding_name), self._database_now()

    def _binding_state_touch_sync(self, binding_name: str) -> None:
        self._table("binding_states")[binding_name] = self._database_now()

    # -- wave targets ------------------------------------------------------------------

    def _targets_clear_sync(self, binding_name: str) -> int:
        targets = self._table("wave_targets")
        gone = [k for k in targets if k[1] == binding_name]
        for k in gone:
            del targets[k]
        return len(gone)

    def _targets_freeze_sync(self, binding_name: str, wave_id: str) -> int:
        targets = self._table("wave_targets")
        if any(k[0] == wave_id and k[1] == binding_name for k in targets):
            raise RevisionConflictError(f"wave {wave_id!r} was frozen already")
        frozen = [r for (b, _), r in self._table("pending").items() if b == binding_name]
        for r in frozen:
            targets[(wave_id, binding_name, r.scope_id)] = WaveTarget(
                wave_id, binding_name, r.scope_id, r.source_through)
        return len(frozen)

    def _targets_page_sync(self, wave_id: str, binding_name: str, after: str,
                           limit: int) -> list[WaveTarget]:
        rows = [t for (w, b, s), t in self._table("wave_targets").items()
                if w == wave_id and b == binding_name and not t.completed
                and _utf8(s) > _utf8(after)]
        return sorted(rows, key=lambda t: _utf8(t.scope_id))[:limit]

    def _target_get_sync(self, wave_id: str, binding_name: str,
                         scope_id: str) -> WaveTarget | None:
        return self._table("wave_targets").get(  # type: ignore[no-any-return]
            (wave_id, binding_name, scope_id))

    def _target_complete_sync(self, wave_id: str, binding_name: str, scope_id: str) -> None:
        targets = self._table("wave_targets")
        key = (wave_id, binding_name, scope_id)
        targets[key] = attrs.evolve(targets[key], completed=True)

    def _wave_of(self, wave_id: str, binding_name: str) -> list[WaveTarget]:
        return [t for (w, b, _), t in self._table("wave_targets").items()
                if w == wave_id and b == binding_name]

    def _targets_count_sync(self, wave_id: str, binding_name: str) -> tuple[int, int]:
        wave = self._wave_of(wave_id, binding_name)
        cursors = self._table("cursors")
        uncovered = [t for t in wave
                     if cursors.get((binding_name, t.scope_id), 0) < t.source_through]
        return len(wave), len(uncovered)

    def _wave_cleanup_sync(self, wave_id: str, binding_name: str) -> None:
        pending, cursors = self._table("pending"), self._table("cursors")
        targets = self._table("wave_targets")
        for t in self._wave_of(wave_id, binding_name):
            key = (binding_name, t.scope_id)
            row = pending.get(key)
            if (row is not None and row.handled_flush_generation == row.flush_generation
                    and cursors.get(key, 0) >= row.source_through):
                del pending[key]
            del targets[(wave_id, binding_name, t.scope_id)]
