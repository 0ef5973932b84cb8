"""The Supervisor substrate of a Topic backend (Topic Memory RFC, "Leader, term, and
fencing", "Supervisor failover and recovery", "Automatic scheduling"; TOPIC-MEMORY.md,
"SQLite and other processes"): :class:`TopicSupervision` gives the port's
``acquire_lease``, ``renew_lease``, ``release_lease``, ``pending_page``,
``scheduling_state``, ``clear_wave_targets``, ``freeze_wave``, ``wave_targets``,
``complete_target``, ``complete_wave`` and ``handle_flush``, and the term fence
(:meth:`TopicSupervision.fence`) that the allowance
(:mod:`powercontext.adapters.topic_allowance`) and the publication
(:mod:`powercontext.adapters.topic_publication`) run first in their transactions.

Engine-neutral: the order of the I/O over the Supervisor's rows
(:class:`~powercontext.adapters.topic_supervision_rows.SupervisionRows`: the SQL
engines' :class:`~powercontext.adapters.topic_supervision_rows.SQLSupervisionRows`, whose
leases and binding states are each engine's
:class:`~powercontext.ports.engine.SupervisorLeases`, ``SQLiteLeases`` or
``OceanBaseLeases``; the in-memory backend's over dicts) and the ledger's Cursor and
Pending rows (:class:`~powercontext.adapters.topic_ledger_rows.LedgerRows`), each inside
a transaction of the host opened here.

``lease_expires``: True for an engine whose leases expire by database time (OceanBase:
``lease_seconds`` > 0 required), False for one whose term lasts until the next start
(SQLite, in-memory: ``lease_seconds`` must be None). From it the Supervisor locking
policy (``supervisor_locking``, the capability port
:class:`powercontext.ports.topic_supervision.SupervisorLockingPolicy`): ``"lease"``
when leases expire, else ``"file-lock"`` (one Supervisor per database, excluded by a
whole-file lock).
"""

from __future__ import annotations

import datetime
import math
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from powercontext.adapters.storage.rows import utc_text
from powercontext.adapters.topic_host import TopicHost
from powercontext.adapters.topic_ledger_rows import LedgerRows
from powercontext.adapters.topic_supervision_rows import SupervisionRows
from powercontext.core.errors import InvalidInputError, RevisionConflictError
from powercontext.core.topic.content import check_scope_id
from powercontext.core.topic.guards import (
    check_holder_id,
    check_position,
    check_term,
    fence_term,
    pending_after,
)
from powercontext.core.topic.processing import BINDING, PendingRow, PendingUpdate
from powercontext.core.topic.supervision import (
    SchedulingState,
    SupervisorTerm,
    WaveTarget,
)
from powercontext.ports.topic_supervision import FILE_LOCK, LEASE, SupervisorLocking

__all__ = ["MAX_LEASE_SECONDS", "MAX_PAGE", "TopicSupervision", "check_wave_id",
           "utc_datetime"]

T = TypeVar("T")

#: The largest ``limit`` of ``pending_page`` and ``wave_targets``.
MAX_PAGE = 1000
#: The longest lease (``runtime.artifact_processing_lease_seconds`` is 2..3600).
MAX_LEASE_SECONDS = 3600.0


def check_wave_id(wave_id: object) -> str:
    """``wave_id`` when it is UUID text (36 characters, canonical lower-case form);
    InvalidInputError naming ``wave_id`` otherwise."""
    if isinstance(wave_id, str) and len(wave_id) == 36:
        try:
            if str(uuid.UUID(wave_id)) == wave_id:
                return wave_id
        except ValueError:
            pass
    raise InvalidInputError("wave_id", "must be a UUID's 36-character lower-case text")


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError("limit", f"must be an integer in 1..{MAX_PAGE}, not {limit!r}")
    return limit


def _check_after(after_scope: object) -> str:
    if after_scope is None:
        return ""  # a Scope id is never empty: '' sorts before every one
    if not isinstance(after_scope, str):
        raise InvalidInputError("after_scope", "must be a Scope id or None")
    return check_scope_id(after_scope, "after_scope")


class TopicSupervision:
    """The Supervisor calls of :class:`powercontext.ports.topic.TopicMemoryBackend` over
    the host's transactions, the Supervisor's ``rows`` and the ledger's rows (see the
    module docstring)."""

    def __init__(self, host: TopicHost, rows: SupervisionRows, ledger: LedgerRows, *,
                 lease_expires: bool) -> None:
        self._host = host
        self._rows = rows
        self._ledger = ledger
        self.lease_expires = lease_expires

    async def _tx(self, write: bool, fn: Callable[..., T], *args: Any) -> T:
        return await self._host._run(self._host._in_tx, write, fn, *args)

    @property
    def supervisor_locking(self) -> SupervisorLocking:
        """The Supervisor locking policy
        (:class:`~powercontext.ports.topic_supervision.SupervisorLockingPolicy`):
        ``"lease"`` when this engine's leases expire by database time, else
        ``"file-lock"``."""
        return LEASE if self.lease_expires else FILE_LOCK

    # ------------------------------------------------------------------ the fence

    def fence(self, term: SupervisorTerm) -> None:
        """The first read of every fenced transaction: the lease row of ``term.group``
        (locked where the engine locks rows) must hold ``term`` unexpired, else
        SupervisorTermError (the caller's transaction rolls back)."""
        fence_term(term, self._rows.lease(term.group, lock=True))

    def _check_lease_seconds(self, lease_seconds: object) -> float | None:
        if not self.lease_expires:
            if lease_seconds is not None:
                raise InvalidInputError("lease_seconds", "must be None: this engine's "
                                        "term lasts until the next Supervisor start")
            return None
        if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int | float) \
                or not math.isfinite(lease_seconds) \
                or not 0 < lease_seconds <= MAX_LEASE_SECONDS:
            raise InvalidInputError("lease_seconds", f"must be a number of seconds in "
                                    f"(0, {MAX_LEASE_SECONDS:g}], not {lease_seconds!r}")
        return float(lease_seconds)

    # ------------------------------------------------------------------ leases

    async def acquire_lease(self, holder_id: str, lease_seconds: float | None
                            ) -> SupervisorTerm | None:
        """Become the Leader of group ``global`` as ``holder_id`` (see the port): the
        new term, or None when another holder's lease is valid (OceanBase only).
        InvalidInputError for a bad holder id or lease length."""
        check_holder_id(holder_id)
        seconds = self._check_lease_seconds(lease_seconds)
        term: SupervisorTerm | None = await self._tx(
            True, self._rows.lease_acquire, holder_id, seconds)
        return term

    async def renew_lease(self, term: SupervisorTerm, lease_seconds: float | None) -> bool:
        """Keep ``term`` (same generation); False when it is lost."""
        check_term(term)
        seconds = self._check_lease_seconds(lease_seconds)
        kept: bool = await self._tx(True, self._rows.lease_renew, term, seconds)
        return kept

    async def release_lease(self, term: SupervisorTerm) -> None:
        """Best effort: expire ``term``'s lease now (OceanBase); never raises for a lost
        term."""
        check_term(term)
        await self._tx(True, self._rows.lease_release, term)

    # ------------------------------------------------------------------ discovery

    async def pending_page(self, after_scope: str | None, limit: int, *,
                           flushed_only: bool = False,
                           outside_wave: str | None = None) -> tuple[PendingRow, ...]:
        """Read only: at most ``limit`` (1..1000) Pending rows of the binding after
        ``after_scope`` in UTF-8 binary order (see the port for the filters).
        InvalidInputError naming ``after_scope``, ``limit``, ``flushed_only`` or
        ``wave_id``."""
        after = _check_after(after_scope)
        _check_limit(limit)
        if not isinstance(flushed_only, bool):
            raise InvalidInputError("flushed_only", "must be a bool")
        wave = None if outside_wave is None else check_wave_id(outside_wave)
        rows = await self._tx(False, self._rows.pending_page, BINDING, after,
                               limit, flushed_only, wave)
        return tuple(rows)

    async def scheduling_state(self) -> SchedulingState:
        """Read only: the binding's ``last_auto_wave_completed_at`` and the database's
        current UTC time (both timezone-aware)."""
        completed, now = await self._tx(False, self._rows.binding_state,
                                         BINDING)
        return SchedulingState(BINDING, completed, now)

    # ------------------------------------------------------------------ waves

    async def clear_wave_targets(self, term: SupervisorTerm) -> int:
        """Fenced by ``term``: delete every frozen target of the binding; the rows
        deleted. SupervisorTermError for a lost term (nothing deleted)."""
        check_term(term)
        deleted: int = await self._tx(True, self._fenced_sync, term,
                                       self._rows.targets_clear, BINDING)
        return deleted

    async def freeze_wave(self, term: SupervisorTerm, wave_id: str) -> int:
        """Fenced by ``term``: one set-based ``INSERT ... SELECT`` freezing every current
        Pending row of the binding as a target of ``wave_id``; the targets frozen.
        InvalidInputError naming ``wave_id``; SupervisorTermError for a lost term;
        RevisionConflictError when ``wave_id`` was frozen already."""
        check_term(term)
        wave = check_wave_id(wave_id)
        frozen: int = await self._tx(True, self._fenced_sync, term,
                                      self._freeze_sync, wave)
        return frozen

    def _freeze_sync(self, wave_id: str) -> int:
        if self._rows.targets_count(wave_id, BINDING)[0]:
            raise RevisionConflictError(f"wave {wave_id!r} was frozen already")
        frozen: int = self._rows.targets_freeze(BINDING, wave_id)
        return frozen

    async def wave_targets(self, wave_id: str, after_scope: str | None, limit: int
                           ) -> tuple[WaveTarget, ...]:
        """Read only: at most ``limit`` (1..1000) not-completed targets of ``wave_id``
        after ``after_scope`` (UTF-8 binary order)."""
        wave = check_wave_id(wave_id)
        after = _check_after(after_scope)
        _check_limit(limit)
        rows = await self._tx(False, self._rows.targets_page, wave, BINDING,
                               after, limit)
        return tuple(rows)

    async def complete_target(self, term: SupervisorTerm, wave_id: str, scope_id: str) -> bool:
        """Fenced by ``term``: mark the target completed when its Scope's Cursor covers
        the frozen ``source_through``; False (nothing written) when it does not or the
        target is unknown."""
        check_term(term)
        wave = check_wave_id(wave_id)
        scope = check_scope_id(scope_id)
        done: bool = await self._tx(True, self._fenced_sync, term,
                                     self._complete_target_sync, wave, scope)
        return done

    def _complete_target_sync(self, wave_id: str, scope_id: str) -> bool:
        target: WaveTarget | None = self._rows.target_get(wave_id, BINDING, scope_id)
        if target is None:
            return False
        if target.completed:
            return True
        cursor = self._ledger.cursor(BINDING, scope_id, lock=False) or 0
        if cursor < target.source_through:
            return False
        self._rows.target_complete(wave_id, BINDING, scope_id)
        return True

    async def complete_wave(self, term: SupervisorTerm, wave_id: str) -> bool:
        """The automatic-wave completion, one short transaction fenced by ``term``:
        False (nothing written) when the wave has no target or a target is not covered
        by its Cursor; else the binding's ``last_auto_wave_completed_at`` is set from
        the database's clock, the qualifying Pending rows of the wave's Scopes
        (``cursor >= source_through`` and ``handled_flush_generation =
        flush_generation``) and the wave's targets are deleted, and True."""
        check_term(term)
        wave = check_wave_id(wave_id)
        done: bool = await self._tx(True, self._fenced_sync, term,
                                     self._complete_wave_sync, wave)
        return done

    def _complete_wave_sync(self, wave_id: str) -> bool:
        targets, uncovered = self._rows.targets_count(wave_id, BINDING)
        if targets == 0 or uncovered:
            return False
        self._rows.binding_state_touch(BINDING)
        self._rows.wave_cleanup(wave_id, BINDING)
        return True

    # ------------------------------------------------------------------ flushes

    async def handle_flush(self, scope_id: str, target: int, claimed_flush_generation: int,
                           *, supervisor: SupervisorTerm | None = None) -> bool:
        """Handle an explicit flush whose wave target is covered without a Window to
        publish (Topic Memory RFC, "Pending dirty set": a flush during a wave gives at
        most one successor wave, and Pending is deleted once its target is covered and
        handled, whether or not a Window publishes). One short transaction, fenced by
        ``supervisor`` when given: when the Scope's Cursor is at least ``target`` (the
        wave target frozen with the claim), ``handled_flush_generation =
        max(current, claimed)`` and the row is deleted when ``cursor >=
        source_through`` and the handled generation equals ``flush_generation`` (a row
        raised by newer Sources stays). Returns False (nothing written) when the
        Cursor is below ``target``, True otherwise (also when no Pending row is left).

        Errors: InvalidInputError naming ``scope_id``, ``target`` (an integer >= 1),
        ``claimed_flush_generation`` (>= 1, and at most the row's
        ``flush_generation``) or ``supervisor``; SupervisorTermError for a lost term
        (nothing written)."""
        scope = check_scope_id(scope_id)
        check_position(target, "target", 1)
        check_position(claimed_flush_generation, "claimed_flush_generation", 1)
        if supervisor is None:
            done: bool = await self._tx(True, self._handle_flush_sync, scope,
                                         target, claimed_flush_generation)
            return done
        check_term(supervisor, "supervisor")
        done = await self._tx(True, self._fenced_sync, supervisor,
                               self._handle_flush_sync, scope, target,
                               claimed_flush_generation)
        return done

    def _handle_flush_sync(self, scope_id: str, target: int, claimed: int) -> bool:
        row = self._ledger.pending_row(BINDING, scope_id, lock=True)
        cursor = self._ledger.cursor(BINDING, scope_id, lock=False) or 0
        if cursor < target:
            return False
        if row is None:
            return True
        after = pending_after(row, cursor, PendingUpdate(claimed))
        if after is None:
            self._ledger.pending_delete(BINDING, scope_id)
        elif after != row:
            self._ledger.pending_handled(BINDING, scope_id, after.handled_flush_generation)
        return True

    def _fenced_sync(self, term: SupervisorTerm, fn: Any, *args: Any) -> Any:
        self.fence(term)
        return fn(*args)


def utc_datetime(value: Any) -> datetime.datetime:
    """A database-UTC time (what :func:`~powercontext.adapters.storage.rows.utc_text`
    accepts: mysqlclient's naive DATETIME, SQLite's ``strftime`` text) as a
    timezone-aware UTC datetime. BackendError for anything else."""
    text = utc_text(value)
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.UTC)
