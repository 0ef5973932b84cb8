"""OceanBase-only SQL of the Supervisor lease (MySQL mode, seekdb): the statements that
read the database clock ``UTC_TIMESTAMP(6)`` (Topic Memory RFC, "Leader, term, and
fencing"; the session time zone of seekdb is +08:00, so never ``NOW()``). The lease
length is bound as whole microseconds (``INTERVAL %s MICROSECOND``: exact, no rounding
of a fractional ``SECOND`` interval). Every other Supervisor statement is a shared
template (:data:`powercontext.sql.templates.SUPERVISION_QUERIES`).

A lease is valid while ``lease_expires_at > UTC_TIMESTAMP(6)``; NULL (never written
here) counts as expired."""

from __future__ import annotations

__all__ = ["LEASE_TABLE", "lease_insert", "lease_locked", "lease_release", "lease_renew",
           "lease_takeover"]

LEASE_TABLE = "pc_artifact_processing_leases"
_VALID = "lease_expires_at IS NOT NULL AND lease_expires_at > UTC_TIMESTAMP(6)"
_UNTIL = "UTC_TIMESTAMP(6) + INTERVAL %s MICROSECOND"


def lease_locked(lock: bool) -> str:
    """The lease row with its validity by database time. Parameters: supervisor_group.
    Rows ``(holder_id, supervisor_generation, valid)``; ``lock``: ``FOR UPDATE`` (a
    takeover waits for an in-flight fenced commit)."""
    return (f"SELECT holder_id, supervisor_generation, ({_VALID}) FROM {LEASE_TABLE} "
            "WHERE supervisor_group = %s" + (" FOR UPDATE" if lock else ""))


def lease_insert() -> str:
    """The first lease of the group (generation 1). Parameters: supervisor_group,
    holder_id, lease microseconds. A concurrent first insert is a duplicate key."""
    return (f"INSERT INTO {LEASE_TABLE} (supervisor_group, holder_id, supervisor_generation, "
            f"lease_expires_at) VALUES (%s, %s, 1, {_UNTIL})")


def lease_takeover() -> str:
    """Take an expired lease: generation + 1. Parameters: holder_id, lease
    microseconds, supervisor_group. One matched row = acquired."""
    return (f"UPDATE {LEASE_TABLE} SET holder_id = %s, supervisor_generation = "
            f"supervisor_generation + 1, lease_expires_at = {_UNTIL} "
            "WHERE supervisor_group = %s AND (lease_expires_at IS NULL OR "
            "lease_expires_at <= UTC_TIMESTAMP(6))")


def lease_renew() -> str:
    """Extend a valid lease of the term (generation unchanged). Parameters: lease
    microseconds, supervisor_group, holder_id, supervisor_generation. One matched row
    = renewed."""
    return (f"UPDATE {LEASE_TABLE} SET lease_expires_at = {_UNTIL} "
            "WHERE supervisor_group = %s AND holder_id = %s AND supervisor_generation = %s "
            f"AND {_VALID}")


def lease_release() -> str:
    """Expire a valid lease of the term: one second in the past, because seekdb's
    ``UTC_TIMESTAMP(6)`` is not one clock across statements (an UPDATE's value was seen
    a few milliseconds ahead of a later SELECT's), and "now" written by the release
    would still read as valid for that long. Parameters: supervisor_group, holder_id,
    supervisor_generation."""
    return (f"UPDATE {LEASE_TABLE} SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND "
            "WHERE supervisor_group = %s AND holder_id = %s AND supervisor_generation = %s "
            f"AND {_VALID}")
