"""A Topic backend's Supervisor locking policy (Topic Memory RFC, "Process roles",
"Leader, term, and fencing", "Supervisor failover and recovery"; TOPIC-MEMORY.md,
"SQLite and other processes"): a capability the backend declares and the
ArtifactProcessingSupervisor reads, instead of guessing it from the database URL.
typing.Protocols only (and the policy's two values).

- ``"lease"``: Supervisors exclude each other by a timed lease in the database. Any
  number of candidates, in any process or host, try ``acquire_lease`` with a lease
  length on every poll; the Leader renews every third of it and stops dispatching (its
  Workers terminated) as soon as a renewal is refused or raises, or a tick hangs past
  half a lease. The leases expire by database time (the backend's ``lease_expires``
  is True). OceanBase.
- ``"file-lock"``: one Supervisor per database, excluded by a whole-file lock beside it
  (``<database>-supervisor.lock``, taken without waiting before the first term; a
  second Supervisor refuses to start). Its term lasts until the next start
  (``acquire_lease`` with no lease length, never renewed); a start that cannot take
  the term is an error, not a candidacy; only the single-process role ``all`` runs it.
  SQLite.

A backend that does not implement :class:`SupervisorLockingPolicy` is driven with
``"lease"``, the spec's general case.

Where a ``file-lock`` database's lock files live is the backend's to say too
(:class:`LockFileBase`); a backend that does not say gets
:func:`powercontext.file_locks.lock_file_base`'s default: beside a SQLite database
file, else under the data directory, keyed by a hash of the database URL.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol, runtime_checkable

__all__ = ["FILE_LOCK", "LEASE", "LockFileBase", "SupervisorLocking",
           "SupervisorLockingPolicy"]

#: The two Supervisor locking policies (module docstring).
SupervisorLocking = Literal["lease", "file-lock"]
LEASE: Final = "lease"
FILE_LOCK: Final = "file-lock"


@runtime_checkable
class SupervisorLockingPolicy(Protocol):
    """Capability port of a Topic backend: how Supervisors on its database exclude each
    other (module docstring). Callers ask with ``isinstance``."""

    @property
    def supervisor_locking(self) -> SupervisorLocking:
        """``"lease"`` or ``"file-lock"``; a constant of the backend (no I/O, readable
        before the database is opened)."""
        ...


@runtime_checkable
class LockFileBase(Protocol):
    """Capability port of a ``file-lock`` Topic backend: where the file locks of its
    database live. Callers ask with ``isinstance``."""

    @property
    def lock_file_base(self) -> str | None:
        """The absolute path the lock files are named from by a suffix
        (``<base>-supervisor.lock``: the Supervisor's; ``<base>-topic.lock``: the
        per-Scope lock of ``topic process``), one base per database: every process that
        opens the same database must name the same one; its folder is created on first
        use. None: the database is private to this process (in memory) and needs no
        lock. A constant of the backend (no I/O, readable before the database is
        opened)."""
        ...
