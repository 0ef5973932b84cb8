"""A real seekdb server for the OceanBase tests (issue 3, "A real server in the tests").

:func:`seekdb_server` starts ``seekdb --nodaemon --port <free port> --base-dir <temp
dir>`` from the ``pylibseekdb`` wheel, waits until a MySQL connection works and yields
``oceanbase://root:@127.0.0.1:PORT/`` (no database); on exit it stops the server by its
process id (SIGTERM, then SIGKILL) and removes the directory. With
``POWERCONTEXT_TEST_OCEANBASE_URL`` set it yields that server's URL instead and starts
nothing. :func:`fresh_database` gives a test module its own database on either.

Stale servers of earlier runs (a killed pytest leaves its seekdb behind) are found
through the pid files under :data:`STATE_DIR`: a server whose owning process is gone is
killed and its directory removed before a new one starts.

Usage from a conftest or a test module::

    @pytest.fixture(scope="session")
    def oceanbase_server_url():
        with seekdb_server() as url:
            yield url

    @pytest.fixture(scope="module")
    def oceanbase_url(oceanbase_server_url):
        with fresh_database(oceanbase_server_url, "mod") as url:
            yield url
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["ENV_URL", "STATE_DIR", "ServerUnavailable", "fresh_database", "race_writer",
           "seekdb_available", "seekdb_binary", "seekdb_server"]

ENV_URL = "POWERCONTEXT_TEST_OCEANBASE_URL"
STATE_DIR = Path(tempfile.gettempdir()) / "powercontext-seekdb"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class ServerUnavailable(RuntimeError):
    """seekdb could not be found or started; the message includes its log tail."""


def seekdb_binary() -> Path | None:
    """The ``seekdb`` executable inside the installed ``pylibseekdb`` wheel, or None.
    (Found without importing the package, which would load its 100 MB library.)"""
    spec = importlib.util.find_spec("pylibseekdb")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "seekdb"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def seekdb_available() -> bool:
    """True when a server URL is configured or the seekdb binary is installed."""
    return bool(os.environ.get(ENV_URL)) or seekdb_binary() is not None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_our_seekdb(pid: int, base_dir: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and cmdline[0].endswith(b"seekdb") and base_dir.encode() in cmdline


def _stop(pid: int, base_dir: str) -> None:
    """SIGTERM the server's process group, wait, then SIGKILL; only if ``pid`` is still
    the seekdb started on ``base_dir`` (never a recycled pid)."""
    if not _is_our_seekdb(pid, base_dir):
        return
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)  # started with start_new_session: pgid == pid
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not _alive(pid) or not _is_our_seekdb(pid, base_dir):
                return
            time.sleep(0.1)


def _reap_stale() -> None:
    """Stop the servers of runs whose owner process has died and remove their dirs."""
    if not STATE_DIR.is_dir():
        return
    for state in STATE_DIR.glob("*.json"):
        try:
            info = json.loads(state.read_text())
            owner, pid, base_dir = int(info["owner"]), int(info["pid"]), str(info["base_dir"])
        except (OSError, ValueError, KeyError):
            state.unlink(missing_ok=True)
            continue
        if _alive(owner) and owner != os.getpid():
            continue  # another live test run owns it
        _stop(pid, base_dir)
        shutil.rmtree(base_dir, ignore_errors=True)
        state.unlink(missing_ok=True)


def _log_tail(base_dir: Path, stdout: Path) -> str:
    parts = []
    for path in (stdout, base_dir / "log" / "seekdb.log"):
        with contextlib.suppress(OSError):
            text = path.read_text(errors="replace")
            parts.append(f"--- {path} (last 3000 chars) ---\n{text[-3000:]}")
    return "\n".join(parts) or "(no log)"


def _wait_ready(host: str, port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    import MySQLdb

    last: BaseException | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerUnavailable(f"seekdb exited with status {proc.returncode}")
        try:
            conn = MySQLdb.connect(host=host, port=port, user="root", passwd="",
                                   connect_timeout=2)
            try:
                conn.cursor().execute("SELECT 1")
            finally:
                conn.close()
            return
        except MySQLdb.Error as exc:
            last = exc
            time.sleep(0.25)
    raise ServerUnavailable(f"seekdb did not accept connections in time (last error: {last})")


@contextlib.contextmanager
def seekdb_server(timeout: float = START_TIMEOUT) -> Iterator[str]:
    """Yield ``oceanbase://root:@127.0.0.1:PORT/`` of a fresh seekdb (or the URL in
    ``POWERCONTEXT_TEST_OCEANBASE_URL``). ServerUnavailable, with the server log,
    when it does not start within ``timeout`` seconds."""
    env_url = os.environ.get(ENV_URL)
    if env_url:
        parts = urlsplit(env_url)
        yield urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
        return
    binary = seekdb_binary()
    if binary is None:
        raise ServerUnavailable("pylibseekdb is not installed (pip install pylibseekdb)")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    _reap_stale()
    errors = []
    for _attempt in range(3):  # a port taken between choosing and binding: try another
        base_dir = Path(tempfile.mkdtemp(prefix="seekdb-", dir=STATE_DIR))
        port = _free_port()
        stdout = base_dir / "seekdb.out"
        with stdout.open("wb") as out:
            proc = subprocess.Popen(
                [str(binary), "--nodaemon", "--port", str(port), "--base-dir", str(base_dir)],
                cwd=base_dir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        state = STATE_DIR / f"{proc.pid}.json"
        state.write_text(json.dumps({"owner": os.getpid(), "pid": proc.pid,
                                     "base_dir": str(base_dir), "port": port}))
        try:
            try:
                _wait_ready("127.0.0.1", port, proc, time.monotonic() + timeout)
            except ServerUnavailable as exc:
                errors.append(f"{exc}\n{_log_tail(base_dir, stdout)}")
                if proc.poll() is None:
                    break  # still running but not answering: another port will not help
                continue
            yield f"oceanbase://root:@127.0.0.1:{port}/"
            return
        finally:
            _stop(proc.pid, str(base_dir))
            with contextlib.suppress(ChildProcessError, OSError):
                proc.wait(timeout=1)
            shutil.rmtree(base_dir, ignore_errors=True)
            state.unlink(missing_ok=True)
    raise ServerUnavailable("seekdb failed to start:\n" + "\n\n".join(errors))


def _database_url(server_url: str, database: str) -> str:
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, "", ""))


@contextlib.contextmanager
def fresh_database(server_url: str, prefix: str = "pctest") -> Iterator[str]:
    """Yield ``oceanbase://.../<prefix>_<random>``: a database created empty for the
    caller and dropped afterwards."""
    import MySQLdb

    parts = urlsplit(server_url)
    name = f"{''.join(c for c in prefix if c.isalnum() or c == '_')[:40]}_{secrets.token_hex(4)}"
    kwargs = dict(host=parts.hostname or "127.0.0.1", port=parts.port or 2881,
                  user=parts.username or "root", passwd=parts.password or "")
    conn = MySQLdb.connect(**kwargs)
    try:
        conn.cursor().execute(f"CREATE DATABASE `{name}`")
    finally:
        conn.close()
    try:
        yield _database_url(server_url, name)
    finally:
        with contextlib.suppress(MySQLdb.Error):
            conn = MySQLdb.connect(**kwargs)
            try:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
            finally:
                conn.close()


def race_writer(url: str, artifact_id: str, text: str, barrier: Any, results: Any) -> None:
    """Child-process body of the concurrency test (importable by name for ``spawn``):
    plan an append of ``text`` on the current head, wait at ``barrier``, commit; report
    ``"won"`` or ``"conflict"`` on ``results``, then reread-and-retry until the entry
    is in (never a blind replay)."""
    import asyncio

    from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
    from powercontext.core import canonical, planning
    from powercontext.core.errors import RevisionConflictError
    from powercontext.core.models import MemoryEntryInput

    def new_id(prefix: str) -> str:
        return canonical.make_id(prefix, int(time.time() * 1000), os.urandom(10))

    async def plan_on_head(b: Any) -> Any:
        head = await b.head(artifact_id)
        rev = await b.load_revision(head)
        base = planning.MemoryBase(head, rev.content, await b.load_entry_versions(head))
        return planning.plan_remember(base, [MemoryEntryInput("fact", text)], new_id=new_id)

    async def go() -> str:
        b = OceanBaseMemoryBackend(url)
        try:
            plan = await plan_on_head(b)
            barrier.wait(60)
            outcome = "won"
            try:
                async with b.begin() as uow:
                    await uow.commit(plan)
            except RevisionConflictError:
                outcome = "conflict"
            for _ in range(20):
                if outcome == "won":
                    break
                try:
                    async with b.begin() as uow:
                        await uow.commit(await plan_on_head(b))
                    break
                except RevisionConflictError:
                    continue
            return outcome
        finally:
            await b.close()

    try:
        results.put((text, asyncio.run(go())))
    except BaseException as exc:  # report it; never leave the parent waiting
        results.put((text, f"error: {exc!r}"))
