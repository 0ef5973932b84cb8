"""The chaos harness (tests/chaos/): configuration and environment for Supervisor
processes that load the ``chaos`` provider (:mod:`support.chaos_model`), process helpers
(start a Supervisor in its own session, find its Worker children through ``/proc``,
``kill -9``, SIGSTOP / SIGCONT), Source seeding, and bounded waiting.

Nothing here asserts a duration: :func:`wait_for` bounds how long a test waits for a
state (a liveness bound that fails loudly), never how fast the system must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from support.chaos_model import CHAOS_DIR_ENV, install_entry_point

__all__ = [
    "TESTS_DIR",
    "ChaosEnv",
    "SupervisorProcess",
    "TcpProxy",
    "concurrent_flushes",
    "descendants",
    "events",
    "flush",
    "flush_many",
    "is_alive",
    "make_sources",
    "post",
    "seed_sources",
    "wait_for",
    "write_config",
]

T = TypeVar("T")

TESTS_DIR = Path(__file__).resolve().parent.parent


def wait_for(predicate: Callable[[], T], timeout: float, what: str,
             interval: float = 0.05) -> T:
    """Poll ``predicate`` until it returns a truthy value (returned) or ``timeout``
    seconds pass (AssertionError naming ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def write_config(path: Path, *, workers: int = 2, worker_timeout: float = 20,
                 lease: float = 30, poll: float = 0.2, window_limit: int = 10,
                 auto_interval: float | None = None, provider: str = "chaos",
                 control: Path | None = None, extra: str = "") -> Path:
    """A configuration TOML for a chaos run: small pool, timeout, lease and poll settings
    so each fault resolves in seconds; ``generation_provider`` the chaos provider, its
    control directory ``control`` as ``generation_base_url`` (default: none, then the
    provider reads ``$PC_CHAOS_DIR``)."""
    lines = [
        "[runtime]",
        f"artifact_processing_max_workers = {workers}",
        f"artifact_processing_worker_timeout_seconds = {worker_timeout}",
        f"artifact_processing_lease_seconds = {lease}",
        f"artifact_processing_poll_seconds = {poll}",
        f"topic_memory_source_window_limit = {window_limit}",
    ]
    if auto_interval is not None:
        lines.append(f"topic_memory_auto_interval_seconds = {auto_interval}")
    lines += ["", "[inference]", f'generation_provider = "{provider}"']
    if control is not None:
        lines.append(f'generation_base_url = "{control}"')
    lines.append(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class ChaosEnv:
    """One test's environment: ``root`` (a temp dir) holding the control directory of the
    chaos provider (``control``), the entry-point directory, the logs of every process
    started (``logs``) and a ``home``. :meth:`env` is the environment for a child
    process: no inherited ``POWERCONTEXT_*`` settings or provider keys, ``PYTHONPATH``
    with the chaos plugin's entry point and ``tests/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.control = root / "control"
        self.control.mkdir(parents=True, exist_ok=True)
        self.logs = root / "logs"
        self.logs.mkdir(exist_ok=True)
        self.plugin_dir = install_entry_point(root / "plugin")
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("POWERCONTEXT_", "PC_CHAOS"))
               and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH")}
        env["POWERCONTEXT_HOME"] = str(self.home)
        env[CHAOS_DIR_ENV] = str(self.control)
        env["PYTHONPATH"] = os.pathsep.join([str(self.plugin_dir), str(TESTS_DIR)])
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra or {})
        return env

    # -- control files of the chaos provider -----------------------------------------

    def block(self, match: str = "", stage: str | None = None) -> None:
        """Make every stage call (of ``stage``; whose input contains ``match``) wait."""
        name = "block" if stage is None else f"block-{stage}"
        (self.control / name).write_text(match, encoding="utf-8")

    def unblock(self, stage: str | None = None) -> None:
        (self.control / ("block" if stage is None else f"block-{stage}")).unlink(
            missing_ok=True)

    def release(self, pid: int) -> None:
        """Let process ``pid`` go on although a block file exists."""
        (self.control / f"release-{pid}").write_text("", encoding="utf-8")

    def started_pids(self) -> set[int]:
        """Pids of the processes that called the chaos provider so far."""
        return {int(p.name.removeprefix("started-")) for p in self.control.glob("started-*")}

    def parents(self) -> dict[int, int]:
        """Worker pid -> its parent's pid (a Supervisor's forkserver), for every process
        that called the chaos provider so far."""
        out = {}
        for p in self.control.glob("started-*"):
            with contextlib.suppress(OSError, ValueError):
                pid, ppid = p.read_text().split()
                out[int(pid)] = int(ppid)
        return out

    def blocked_pids(self) -> set[int]:
        return {int(p.name.removeprefix("blocked-")) for p in self.control.glob("blocked-*")}

    def clear_markers(self) -> None:
        for p in [*self.control.glob("started-*"), *self.control.glob("blocked-*")]:
            p.unlink(missing_ok=True)

    def all_output(self) -> str:
        """Everything every process of this test wrote to its log files."""
        return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                         for p in sorted(self.logs.iterdir()) if p.is_file())


# --------------------------------------------------------------------- processes

def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children first), read from
    ``/proc/<pid>/task/*/children``."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop(0)
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                for child in children.read_text().split():
                    if int(child) not in out:
                        out.append(int(child))
                        todo.append(int(child))
    return out


def is_alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def process_state(pid: int) -> str | None:
    """The one-letter state of ``/proc/<pid>/stat`` (``T``: stopped), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


class SupervisorProcess:
    """A Supervisor (or ``serve``) process started by a test in its own session, its
    stdout and stderr in ``<logs>/<name>.log``. :meth:`stop` sends SIGTERM to it, waits,
    then SIGKILLs its process group (its forkserver and Workers); only processes this
    object started are signalled."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.argv = list(argv)
        self.log = log
        self._fh = log.open("ab")
        self.proc = subprocess.Popen(self.argv, env=dict(env), stdout=self._fh,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        self.pid = self.proc.pid

    @classmethod
    def supervisor(cls, chaos: ChaosEnv, db_url: str, config: Path, name: str = "supervisor",
                   extra_env: Mapping[str, str] | None = None,
                   args: Sequence[str] = ("-v",)) -> SupervisorProcess:
        """The Supervisor of ``db_url`` in its own process: ``python -m
        powercontext.entrypoints.supervisor --db URL --config F -v`` on OceanBase; on SQLite, whose
        only role is ``all`` (the runner refuses it), ``powercontext serve --role all
        --port 0`` (the same Supervisor, beside the API)."""
        if not db_url.startswith("oceanbase://"):
            return cls.serve(chaos, db_url, config, name=name, role="all",
                             extra_env=extra_env, args=args)
        argv = [sys.executable, "-m", "powercontext.entrypoints.supervisor", "--db", db_url,
                "--config", str(config), *args]
        return cls(argv, chaos.env(extra_env), chaos.logs / f"{name}.log")

    @classmethod
    def serve(cls, chaos: ChaosEnv, db_url: str, config: Path, name: str = "serve",
              role: str = "all", extra_env: Mapping[str, str] | None = None,
              args: Sequence[str] = ("-v",)) -> SupervisorProcess:
        """``powercontext serve --role ROLE --port 0`` (the API and, for ``all`` /
        ``background``, the Supervisor); :meth:`base_url` once it listens."""
        from support.cli import cli_argv

        argv = [*cli_argv(), "serve", "--db", db_url, "--config", str(config),
                "--role", role, "--port", "0", *args]
        return cls(argv, chaos.env(extra_env), chaos.logs / f"{name}.log")

    def base_url(self, timeout: float = 120) -> str:
        """``http://HOST:PORT`` from the ``serving ...`` line (waits for it)."""
        import re

        def found() -> str | None:
            m = re.search(r"serving (http://\S+)", self.output())
            if m is None and not self.alive():
                raise AssertionError(f"serve exited {self.proc.returncode}:\n"
                                     f"{self.output()[-3000:]}")
            return m.group(1) if m else None

        return wait_for(found, timeout, "serve to listen")

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def workers(self) -> list[int]:
        return descendants(self.pid)

    def check_alive(self) -> None:
        """AssertionError with the log's tail when the process has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.argv[1:4]} exited {self.proc.returncode}:\n"
                                 f"{self.output()[-3000:]}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
                os.kill(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # the forkserver and any Worker left
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self._fh.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the Supervisor alone (its Workers become orphans)."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
        self.proc.wait(10)


def blocked_worker(chaos: ChaosEnv, sup: SupervisorProcess) -> int | None:
    """The lowest pid of a Worker of ``sup`` held by the ``chaos`` provider's blocking
    stage (alive), or None; fails when ``sup`` itself has exited."""
    sup.check_alive()
    mine = set(descendants(sup.pid))
    found = sorted(p for p in chaos.blocked_pids() if p in mine and is_alive(p))
    return found[0] if found else None


@contextlib.contextmanager
def running(*procs: SupervisorProcess) -> Iterator[None]:
    try:
        yield
    finally:
        for p in procs:
            p.stop()


# --------------------------------------------------------------------- Sources

def make_sources(scope: str, texts: Sequence[str], kind: str = "note") -> list[Any]:
    """Sources with ids derived from (scope, text) (the same text twice is one Source)."""
    from powercontext.core import canonical

    return [canonical.make_source(
        "src_" + hashlib.sha256(f"{scope}\0{t}".encode()).hexdigest()[:24], kind, t)
        for t in texts]


def seed_sources(db_url: str, scopes: Mapping[str, Sequence[str]], *,
                 batch: int = 500) -> None:
    """Add the texts of each Scope as Sources (in batches of ``batch``), in process."""
    from powercontext.runtime import open_topic_service

    async def go() -> None:
        svc = open_topic_service(db_url)
        try:
            for scope, texts in scopes.items():
                srcs = make_sources(scope, texts)
                for i in range(0, len(srcs), batch):
                    await svc.add_sources(scope, srcs[i:i + batch])
        finally:
            await svc.close()

    asyncio.run(go())


def flush(db_url: str, *scopes: str) -> list[str]:
    """``flush`` each Scope in process; the statuses."""
    from powercontext.runtime import open_topic_service

    async def go() -> list[str]:
        svc = open_topic_service(db_url)
        try:
            return [str(await svc.flush(s)) for s in scopes]
        finally:
            await svc.close()

    return asyncio.run(go())


def status(db_url: str, scope: str | None = None) -> Any:
    from powercontext.runtime import open_topic_service

    async def go() -> Any:
        svc = open_topic_service(db_url)
        try:
            return await svc.status(scope)
        finally:
            await svc.close()

    return asyncio.run(go())


def flush_many(db_url: str, scope: str, count: int) -> list[str]:
    """``count`` concurrent flushes of ``scope`` from one process (one service, the calls
    gathered); the statuses. Importable by name for a ``spawn`` pool."""
    from powercontext.runtime import open_topic_service

    async def go() -> list[str]:
        svc = open_topic_service(db_url)
        try:
            return [str(s) for s in await asyncio.gather(
                *(svc.flush(scope) for _ in range(count)))]
        finally:
            await svc.close()

    return asyncio.run(go())


def concurrent_flushes(db_url: str, scope: str, processes: int, per_process: int
                       ) -> list[str]:
    """``processes`` x ``per_process`` flushes of ``scope`` at once (a ``spawn`` pool,
    each process gathering its share); every status."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        results = pool.starmap(flush_many, [(db_url, scope, per_process)] * processes)
    return [s for part in results for s in part]


class TcpProxy:
    """A loopback TCP forwarder to ``(host, port)`` run in threads of the test process, so a
    test can cut a process's database connections: :meth:`cut` closes every forwarded
    connection and refuses new ones (accepted, then closed at once) until
    :meth:`restore`. :attr:`port` is where to connect."""

    def __init__(self, host: str, port: int) -> None:
        import socket
        import threading

        self.target = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._lock = threading.Lock()
        self._conns: list[Any] = []
        self._open = True
        self._closed = False
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def url_for(self, url: str) -> str:
        """``url`` (``oceanbase://user:pw@host:port/db``) through this proxy."""
        from urllib.parse import urlsplit, urlunsplit

        p = urlsplit(url)
        auth = p.netloc.rpartition("@")[0]
        return urlunsplit((p.scheme, f"{auth}@127.0.0.1:{self.port}" if auth else
                           f"127.0.0.1:{self.port}", p.path, p.query, p.fragment))

    def _accept(self) -> None:
        import socket
        import threading

        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                if not self._open:
                    client.close()
                    continue
                self.accepted += 1
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: Any, b: Any) -> None:
        import socket

        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        import socket

        with self._lock:
            self._open = False
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def restore(self) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        self._closed = True
        self.cut()
        with contextlib.suppress(OSError):
            self._server.close()


def post(base_url: str, path: str, body: Any, token: str | None = None,
         raw: bytes | None = None) -> tuple[int, Any]:
    """POST JSON ``body`` (or ``raw`` bytes) to ``base_url + path``; (status, parsed body)."""
    import json
    import urllib.error
    import urllib.request

    data = raw if raw is not None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(base_url + path, data=data, headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        text = exc.read()
        try:
            return exc.code, json.loads(text)
        except ValueError:
            return exc.code, text.decode("utf-8", "replace")


_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S+)")


def events(output: str, event: str) -> list[dict[str, Any]]:
    """The structured records of ``output`` (the Supervisor's log lines, ``<time>
    <level> <logger>: <event> key=value ...``) whose message starts with ``event``,
    each as a dict of its fields (quoted values unquoted, integers as int)."""
    import ast

    out = []
    for line in output.splitlines():
        _, sep, message = line.partition(": ")
        if not sep or not message.startswith(event):
            continue
        fields: dict[str, Any] = {}
        for key, raw in _FIELD.findall(message[len(event):]):
            try:
                fields[key] = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                fields[key] = raw
        out.append(fields)
    return out
