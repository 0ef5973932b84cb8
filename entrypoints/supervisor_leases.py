"""The Supervisor's term: its locking policy, lease and renewal (Topic Memory RFC,
"Process roles", "Leader, term, and fencing", "Supervisor failover and recovery";
TOPIC-MEMORY.md, "SQLite and other processes").

The Topic backend declares how Supervisors on its database exclude each other
(:mod:`powercontext.ports.topic_supervision`), read here by :func:`locking_policy`:

- ``file-lock`` (SQLite): a whole-file lock first (the file the backend names, else
  ``<database>-supervisor.lock`` beside a SQLite file, else one under the data
  directory keyed by the URL: :func:`powercontext.file_locks.supervisor_lock_path`),
  without waiting (a second Supervisor refuses to start: SupervisorUnavailableError
  naming the holder's pid), then ``acquire_lease`` with no lease length: the term
  (generation + 1 on every start) lasts until the next start and is never renewed.
- ``lease`` (OceanBase, and any backend that declares nothing): a candidate tries
  ``acquire_lease(holder, lease_seconds)`` on every poll; the Leader renews every
  ``lease_seconds / 3``; a tick must finish within half a lease.

:class:`Leadership` holds the policy, the lock, the current term and the time of the
last renewal; the Supervisor decides what a new or lost term does to its memory.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from powercontext.core.topic.supervision import SupervisorTerm
from powercontext.ports.topic_supervision import (
    FILE_LOCK,
    LEASE,
    SupervisorLocking,
    SupervisorLockingPolicy,
)

__all__ = ["Leadership", "locking_of", "locking_policy", "registry_locking"]


def locking_policy(backend: object) -> SupervisorLocking:
    """The Supervisor locking policy ``backend`` declares
    (:class:`~powercontext.ports.topic_supervision.SupervisorLockingPolicy`), else
    ``"lease"``, the spec's general case. No I/O."""
    if isinstance(backend, SupervisorLockingPolicy):
        return backend.supervisor_locking
    return LEASE


def locking_of(db_url: str, plugins: Sequence[str]) -> SupervisorLocking:
    """The locking policy of the Topic backend ``db_url`` names (built, never opened),
    with the extra ``plugins`` (``module:attribute``) registered. UnknownPluginError
    for a scheme no plugin registered."""
    from powercontext.plugins.loading import resolve
    from powercontext.plugins.registry import Registry

    return registry_locking(db_url, Registry(plugins=[resolve(p) for p in plugins]))


def registry_locking(db_url: str, registry: Any) -> SupervisorLocking:
    """The locking policy of the Topic backend ``registry`` builds for ``db_url`` (built,
    never opened, then closed). UnknownPluginError for a scheme no plugin registered."""
    backend = registry.topic_backend_for_url(db_url)
    try:
        return locking_policy(backend)
    finally:
        asyncio.run(backend.close())


class Leadership:
    """One Supervisor's hold on the ``global`` group: a UUIDv4 ``holder_id``, the
    backend's locking policy (``lease`` until :meth:`choose`), the file lock of a
    ``file-lock`` backend, the current term (None while a candidate) and the renewal
    clock. ``lease_seconds`` is the configured lease length, ``clock`` the monotonic
    clock of renewals."""

    def __init__(self, db_url: str, lease_seconds: float, clock: Callable[[], float]
                 ) -> None:
        self.db_url = db_url
        self.lease_seconds = lease_seconds
        self.clock = clock
        self.holder_id = str(uuid.uuid4())
        self.locking: SupervisorLocking = LEASE
        self.term: SupervisorTerm | None = None
        self._lock: Any = None
        self._last_renew = 0.0

    @property
    def leases(self) -> bool:
        """Whether terms are timed leases (renewed; candidates elsewhere)."""
        return self.locking == LEASE

    @property
    def tick_timeout(self) -> float | None:
        """How long one tick of a Leader may take before it stops dispatching (a hanging
        connection must not keep a lease-holding Leader dispatching); None: no limit."""
        return max(1.0, self.lease_seconds / 2) if self.leases else None

    def choose(self, backend: object) -> None:
        """Read the backend's policy (no I/O) and, for ``file-lock``, take the file lock
        (SupervisorUnavailableError when another Supervisor holds it)."""
        from powercontext.file_locks import acquire_supervisor_lock

        self.locking = locking_policy(backend)
        if self.locking == FILE_LOCK:
            self._lock = acquire_supervisor_lock(self.db_url, backend)

    def release_lock(self) -> None:
        """Release the file lock, if held (idempotent)."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    async def acquire(self, backend: Any) -> SupervisorTerm | None:
        """Ask for a term (``file-lock``: always granted; ``lease``: None while another
        holder's lease is valid). Not held until :meth:`hold`."""
        lease = self.lease_seconds if self.leases else None
        term: SupervisorTerm | None = await backend.acquire_lease(self.holder_id, lease)
        return term

    def hold(self, term: SupervisorTerm) -> None:
        """Hold ``term`` from now (its renewal clock starts)."""
        self.term = term
        self._last_renew = self.clock()

    def drop(self) -> SupervisorTerm | None:
        """Stop holding the term; returns it (None when there was none)."""
        term, self.term = self.term, None
        return term

    def renewal_due(self) -> bool:
        """A held lease is due for renewal (every third of a lease)."""
        return (self.leases and self.term is not None
                and self.clock() - self._last_renew >= self.lease_seconds / 3)

    async def renew(self, backend: Any) -> bool:
        """Renew the held lease; False when the term is lost (stop dispatching)."""
        assert self.term is not None
        if not await backend.renew_lease(self.term, self.lease_seconds):
            return False
        self._last_renew = self.clock()
        return True

    def confirm_soon(self) -> None:
        """A Worker reported a lost term: confirm the lease on the next tick."""
        if self.leases:
            self._last_renew = float("-inf")
