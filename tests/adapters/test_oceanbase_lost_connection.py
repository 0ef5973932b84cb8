"""A lost connection never locks a Memory (docs/storage.md, "A lost connection"), on a
real seekdb behind a TCP proxy written here (:mod:`support.tcp_proxy`) that drops the
client side of a connection before its COMMIT while the server side stays open, as a
user's network does. The abandoned server transaction holds its row locks until the
server's idle limit (24 h); before, the write exited 3 saying "run the same command
again" and every rerun failed with lock contention (1205) for minutes."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from oceanbase_server import fresh_database, seekdb_available
from support.cli import cli_argv
from support.tcp_proxy import MySqlDropProxy

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend, lost_sessions
from powercontext.core.errors import BackendError, CommitOutcomeUnknownError
from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

KEY = "repo:/lost/connection"


@pytest.fixture
def db_url(seekdb_url: str) -> Iterator[str]:
    with fresh_database(seekdb_url, "pc_lost") as url:
        yield url


@pytest.fixture
def proxy(db_url: str) -> Iterator[MySqlDropProxy]:
    parts = urlsplit(db_url)
    with MySqlDropProxy((parts.hostname or "127.0.0.1", parts.port or 2881)) as running:
        yield running


def _database(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _admin(url: str) -> Any:
    import MySQLdb

    p = urlsplit(url)
    return MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                           passwd=p.password or "", db=_database(url), autocommit=True)


def _idle_in_transaction(url: str) -> list[tuple[int, float]]:
    """(session id, idle seconds) of the sessions idle inside a transaction on the
    database of ``url``."""
    conn = _admin(url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT ID, TIME FROM oceanbase.V$OB_PROCESSLIST WHERE DB = %s AND "
                    "COMMAND = 'Sleep' AND TRANS_STATE = 'ACTIVE'", (_database(url),))
        return [(int(i), float(t)) for i, t in cur.fetchall()]
    finally:
        conn.close()


def _pc(url: str, tmp: Path, text: str, expect: int) -> subprocess.CompletedProcess[str]:
    env = {"POWERCONTEXT_HOME": str(tmp / "home"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*cli_argv(), "--db", url, "memory", "remember", "--key", KEY,
                          "--text", text], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == expect, (text, out.returncode, out.stdout, out.stderr)
    return out


@pytest.mark.parametrize("at", ["commit", "statement"])
def test_a_write_whose_client_side_dropped_can_be_run_again_at_once(
        db_url: str, proxy: MySqlDropProxy, tmp_path: Path, at: str) -> None:
    via = proxy.url(_database(db_url))
    _pc(via, tmp_path, "The build runs make test first", 0)
    proxy.arm(at)
    lost = _pc(via, tmp_path, "Deploys go out on Tuesdays", 3 if at == "commit" else 1)
    assert proxy.dropped.is_set() and proxy.orphans  # the server side is still open
    if at == "commit":
        assert "was not written: nothing changed; run the same command again" in lost.stderr
    else:
        assert "lost before COMMIT" in lost.stderr and "rolled back" in lost.stderr
    # the abandoned session was ended by the failing command itself: nothing holds locks
    assert _idle_in_transaction(db_url) == []
    again = _pc(via, tmp_path, "Deploys go out on Tuesdays", 0)
    assert "is now at Revision 2" in again.stdout, again.stdout


def test_a_retry_ends_a_session_abandoned_by_a_client_that_is_gone(
        db_url: str, proxy: MySqlDropProxy, tmp_path: Path) -> None:
    """The writer could not end its own session (the network stayed down until it
    exited): the next writer that meets the locks ends the session once it has idled
    ABANDONED_IDLE_S inside its transaction."""
    via = proxy.url(_database(db_url))
    _pc(via, tmp_path, "The build runs make test first", 0)
    proxy.arm("commit", down_after=True)
    gone = _pc(via, tmp_path, "Deploys go out on Tuesdays", 1)
    assert "Do not rerun this command yet" in gone.stderr, gone.stderr
    for _ in range(240):  # until the abandoned session has idled long enough
        if any(idle >= lost_sessions.ABANDONED_IDLE_S
               for _, idle in _idle_in_transaction(db_url)):
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"no abandoned session: {_idle_in_transaction(db_url)}")
    proxy.down = False  # the network is back
    again = _pc(via, tmp_path, "Deploys go out on Tuesdays", 0)
    assert "is now at Revision 2" in again.stdout
    assert _idle_in_transaction(db_url) == []


def _write(b: OceanBaseMemoryBackend, memory: str | None, text: str) -> Any:
    async def go() -> Any:
        svc = MemoryService(b)
        target = None if memory is None else await svc.head(memory)
        return await svc.remember(target, mode="append",
                                  entries=(MemoryEntryInput("fact", text),))

    return asyncio.run(go())


def test_the_server_ends_an_abandoned_transaction_after_ob_trx_timeout(
        db_url: str, proxy: MySqlDropProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody ends the session (its client is gone, no retry ends sessions): the
    ob_trx_timeout every session of the adapter sets rolls it back on the server."""
    monkeypatch.setattr(lost_sessions, "TRX_TIMEOUT_US", 4_000_000)
    monkeypatch.setattr(lost_sessions, "ABANDONED_IDLE_S", 10**6)
    gone = OceanBaseMemoryBackend(proxy.url(_database(db_url)))
    ref = _write(gone, None, "The build runs make test first")
    proxy.arm("commit", down_after=True)
    with pytest.raises((CommitOutcomeUnknownError, BackendError)):
        _write(gone, ref.artifact_id, "Deploys go out on Tuesdays")
    # its session holds the head's lock (unless the bound already passed: a slow machine)
    writer = OceanBaseMemoryBackend(db_url)
    try:
        assert _write(writer, ref.artifact_id, "Releases are tagged on main").revision == 2
    finally:
        asyncio.run(writer.close())
        asyncio.run(gone.close())
    # (the session itself stays listed until its client speaks: the server rolled its
    # transaction back and released the locks, which is what the write above needed)


def test_every_session_bounds_its_transactions_and_keeps_tcp_alive(db_url: str) -> None:
    b = OceanBaseMemoryBackend(db_url)
    try:
        def timeout() -> int:
            return int(asyncio.run(b._run(b._in_tx, False, lambda: b.ob_engine.rows(
                "SELECT @@ob_trx_timeout")))[0][0])

        assert timeout() == lost_sessions.TRX_TIMEOUT_US == 300_000_000
        b.long_transactions = True  # what memory rebuild sets while it runs
        assert timeout() == lost_sessions.LONG_TRX_TIMEOUT_US
        b.long_transactions = False
        assert timeout() == lost_sessions.TRX_TIMEOUT_US
        with socket.socket(fileno=os.dup(b.ob_engine.connection.fileno())) as sock:
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            if hasattr(socket, "TCP_KEEPIDLE"):
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == \
                    lost_sessions.KEEPALIVE[0]
    finally:
        asyncio.run(b.close())


def test_a_live_writer_is_never_taken_for_an_abandoned_one(db_url: str) -> None:
    """Only sessions idle inside a transaction count: busy or idle-outside ones do not."""
    b = OceanBaseMemoryBackend(db_url)
    other = _admin(db_url)
    try:
        _write(b, None, "The build runs make test first")  # b's session: idle, no tx
        cur = other.cursor()
        cur.execute("SELECT 1")
        assert lost_sessions.abandoned(cur, idle_s=0) == []
        holder = _admin(db_url)
        try:
            hc = holder.cursor()
            hc.execute("START TRANSACTION")
            hc.execute("SELECT COUNT(*) FROM powercontext_meta FOR UPDATE")
            assert lost_sessions.abandoned(cur, idle_s=0) == [int(holder.thread_id())]
            assert lost_sessions.abandoned(cur, idle_s=3600) == []
        finally:
            holder.close()
    finally:
        other.close()
        asyncio.run(b.close())
