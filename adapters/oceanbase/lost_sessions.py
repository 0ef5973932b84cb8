"""What the server keeps for a client that is gone (docs/storage.md, "A lost
connection"): a session whose client side dropped while the server side stays open
(a laptop that slept, a NAT or proxy that forgot the flow) keeps its transaction and
its row locks until the server's idle limits end it, 24 hours by default; every writer
of the same Memory then fails with lock contention. The OceanBase adapter bounds that,
in this order:

1. its own lost session: :class:`~.connection.OceanBaseStorage` remembers each
   connection's session id (``CONNECTION_ID()``); when a connection is lost while a
   write transaction may be open there, the next connection it makes kills that session
   (``KILL``, :func:`kill`) before anything else, at once after the failure when the
   server answers. The transaction is then rolled back, or its COMMIT already ran: a
   reread after the kill sees the final state, so "nothing was written, run it again"
   is true when it says so.
2. another process's abandoned session: when a write meets lock contention, the
   sessions of the same user on the same database that have sat idle inside an open
   transaction for :data:`ABANDONED_IDLE_S` seconds or more are killed
   (:func:`abandoned`, ``oceanbase.V$OB_PROCESSLIST``) before the write is retried.
   No powercontext process idles inside a transaction: its statements run back to back.
3. the server's own bound: every session the adapter opens sets ``ob_trx_timeout`` to
   :data:`TRX_TIMEOUT_US` (the transaction is rolled back and its locks released after
   that long, whatever the client does); maintenance (``memory rebuild``) raises it to
   :data:`LONG_TRX_TIMEOUT_US` for its own transactions.
4. TCP keepalive on the client's socket (:func:`keepalive`): a connection to a server
   that vanished fails in about a minute instead of hanging.

seekdb 1.4 (tried): ``ob_trx_timeout`` set per session rolls back and unlocks on time;
``ob_trx_idle_timeout`` set per session ended nothing within 150 s, so it is not relied
on; ``KILL`` of a same-user session needs no privilege.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterable
from typing import Any

from powercontext.sql import oceanbase as obsql

__all__ = ["ABANDONED_IDLE_S", "KEEPALIVE", "LONG_TRX_TIMEOUT_US", "TRX_TIMEOUT_US",
           "abandoned", "keepalive", "kill"]

log = logging.getLogger("powercontext.oceanbase")

#: ``ob_trx_timeout`` of the adapter's sessions, microseconds (5 minutes): no ordinary
#: read or write transaction lasts this long (each statement is bounded at 10 s).
TRX_TIMEOUT_US = 300_000_000
#: ``ob_trx_timeout`` of maintenance transactions (``memory rebuild``), microseconds.
LONG_TRX_TIMEOUT_US = 3_600_000_000
#: A session idle this long (seconds) inside an open transaction is abandoned.
ABANDONED_IDLE_S = 15
#: TCP keepalive of the client socket: idle seconds before the first probe, seconds
#: between probes, probes lost before the connection is declared dead.
KEEPALIVE = (30, 10, 3)
_UNKNOWN_THREAD = 1094


def keepalive(conn: Any) -> None:
    """Turn TCP keepalive on for the socket of the mysqlclient connection ``conn``
    (:data:`KEEPALIVE`; the options a platform lacks are skipped)."""
    with contextlib.suppress(OSError, AttributeError), \
            socket.socket(fileno=_dup(conn.fileno())) as sock:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        idle, interval, count = KEEPALIVE
        for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", interval),
                            ("TCP_KEEPCNT", count)):
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


def _dup(fd: int) -> int:
    import os

    return os.dup(fd)


def kill(cursor: Any, session_ids: Iterable[int], errno: Any) -> list[int]:
    """``KILL`` each session (a lost one of ours, or an abandoned one) through
    ``cursor``; returns the ids that are gone now (killed, or already unknown to the
    server). Any other failure is logged and the id left out (the server's
    ``ob_trx_timeout`` still ends its transaction)."""
    gone = []
    for sid in session_ids:
        try:
            cursor.execute(f"KILL {int(sid)}")
        except Exception as exc:
            if errno(exc) != _UNKNOWN_THREAD:
                log.warning("could not end the abandoned session %s: %s", sid, exc)
                continue
        gone.append(int(sid))
    return gone


def abandoned(cursor: Any, idle_s: float = ABANDONED_IDLE_S) -> list[int]:
    """The ids of this user's sessions on this database that have sat idle for
    ``idle_s`` seconds or more inside an open transaction (this session excluded);
    empty where the server has no ``V$OB_PROCESSLIST`` or refuses to show it."""
    try:
        cursor.execute(obsql.abandoned_sessions(), (idle_s,))
        return [int(row[0]) for row in cursor.fetchall()]
    except Exception as exc:
        log.debug("abandoned sessions not listed: %s", exc)
        return []
