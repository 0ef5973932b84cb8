"""The server half of the prompt hook's daemon (``powercontext hook daemon``; the wire
format and the rules of what it answers are in
:mod:`powercontext.entrypoints.cli.hook_daemon`).

One thread per connection, one event answered at a time (a lock: prompts come one per
turn, and the plugin registry is shared), each with a fresh command context as
``powercontext hook claude-code`` builds, so every answer reads the database as it is
then (no cache of heads or hits)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import socketserver
import sys
import threading
from collections.abc import Callable
from typing import Any

from powercontext.core.errors import InvalidInputError
from powercontext.entrypoints.cli import hook_daemon as wire
from powercontext.entrypoints.cli.hook_payload import hook_output, load_payload
from powercontext.entrypoints.cli.hook_prompt import prompt_context

__all__ = ["HookDaemon", "answer", "run_daemon"]


class _Fallback(Exception):
    """The event is one the in-process hook answers (the message says why)."""


def answer(ctx_factory: Callable[[], Any], header: dict[str, Any], body: bytes,
           expected: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request: ``{"status": "ok", "stdout": TEXT}`` or
    ``{"status": "fallback", "why": TEXT}``. ``expected`` holds the daemon's ``build``,
    ``env``, ``db``, ``embedding`` and ``analyzer``, which the header must repeat."""
    try:
        for key in ("build", "env", "db", "embedding", "analyzer"):
            if header.get(key) != expected[key]:
                raise _Fallback(f"another {key} than the daemon's")
        limit, mode, topics = header.get("limit"), header.get("mode"), header.get("topics")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit not in wire.LIMITS \
                or mode not in wire.MODES or not isinstance(topics, bool):
            raise _Fallback("options the daemon does not take")
        payload = load_payload(body, "hook input")  # the hook's own bounds
        if payload.get("hook_event_name") != "UserPromptSubmit":
            raise _Fallback("not a UserPromptSubmit event")
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise _Fallback("the event has no absolute cwd")
        data = asyncio.run(prompt_context(ctx_factory(), payload, limit, mode, topics=topics))
        return {"status": "ok", "stdout": hook_output(data)}
    except Exception as exc:  # the in-process hook answers (and reports) it
        return {"status": "fallback", "why": f"{type(exc).__name__}: {exc}"}


def _read_request(reader: Any) -> tuple[dict[str, Any], bytes] | str:
    """(header, stdin bytes) of one request, or why it is not one."""
    line = reader.readline(wire.MAX_HEADER_BYTES + 1)
    header = json.loads(line) if line.endswith(b"\n") else None
    length = header.get("length") if isinstance(header, dict) else None
    if not isinstance(header, dict) or not isinstance(length, int) \
            or not 0 <= length <= wire.MAX_STDIN_BYTES:
        return "not a hook request"
    body = reader.read(length)
    return (header, body) if len(body) == length else "a request cut short"


class HookDaemon:
    """The daemon of one database: :meth:`serve` until stopped (Ctrl-C, SIGTERM, a
    changed installation); the socket is removed on the way out. A client running as
    another user (``SO_PEERCRED``) is answered ``fallback`` without being read.

    InvalidInputError (field ``db``) when the database is not a SQLite file path, its
    socket path is too long, another daemon already answers on it, or something else
    is at that path (another user's socket, a symlink, a file)."""

    def __init__(self, ctx_factory: Callable[[], Any], db: str, embedding: str | None,
                 analyzer: str | None, log: Callable[[str], None] | None = None) -> None:
        path = wire.socket_path(db)
        if path is None:
            raise InvalidInputError("db", "the hook daemon serves a SQLite database file "
                                          f"(a path, not a URL), whose socket path is at most "
                                          f"{wire.MAX_SOCKET_PATH} bytes; got {db!r}")
        self.path = path
        self._ctx_factory = ctx_factory
        self._log = log or (lambda _msg: None)
        self._lock = threading.Lock()
        self.expected = {"build": wire.build_id(), "env": wire.env_digest(),
                         "db": wire.real_db(db),
                         "embedding": embedding or None, "analyzer": analyzer or None}
        self.answered = 0
        self._server: socketserver.ThreadingUnixStreamServer | None = None

    def _claim(self) -> None:
        if os.path.lexists(self.path) and not wire.socket_trusted(self.path):
            raise InvalidInputError("db", f"{self.path} exists and is not a socket of this "
                                          "user's (mode 0600): remove it, then start again")
        if os.path.exists(self.path):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(self.path)
                except OSError:
                    os.unlink(self.path)  # left by a daemon that died
                else:
                    raise InvalidInputError("db", f"a hook daemon already answers on "
                                                  f"{self.path}")

    def handle(self, conn: socket.socket) -> None:
        """Read one request from ``conn`` and write its reply."""
        conn.settimeout(wire.CLIENT_TIMEOUT_S)
        stopping = False
        try:
            uid = wire.peer_uid(conn)
            request = "a client of another user" if uid is not None and uid != os.getuid() \
                else _read_request(conn.makefile("rb"))
            if isinstance(request, str):
                reply = {"status": "fallback", "why": request}
            elif request[0].get("build") != self.expected["build"] \
                    or wire.build_id() != self.expected["build"]:
                reply = {"status": "fallback", "why": "another installation"}
                stopping = True
            else:
                with self._lock:
                    reply = answer(self._ctx_factory, *request, self.expected)
                    self.answered += 1
            self._log(f"{reply['status']}" + (f" ({reply['why']})" if "why" in reply else ""))
        except (OSError, ValueError) as exc:
            reply = {"status": "fallback", "why": f"bad request: {exc}"}
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        if stopping:  # after the reply: the process may exit as soon as serve() returns
            self._log("the installation changed: stopping")
            threading.Thread(target=self.stop, daemon=True).start()

    def serve(self, ready: Callable[[], None] | None = None) -> None:
        """Bind the socket (mode 0600) and answer until :meth:`stop`."""
        daemon = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                daemon.handle(self.request)

        self._claim()
        old = os.umask(0o177)
        try:
            server = socketserver.ThreadingUnixStreamServer(self.path, Handler)
        finally:
            os.umask(old)
        server.daemon_threads = True
        self._server = server
        try:
            if ready is not None:
                ready()
            server.serve_forever(poll_interval=0.5)
        finally:
            server.server_close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def stop(self) -> None:
        """Stop :meth:`serve` (from another thread)."""
        if self._server is not None:
            self._server.shutdown()


class _KeptModels:
    """The daemon's plugin registry, which builds each embedding model (name and
    options) once and hands the same instance to every later service: a local model's
    weights then load on the daemon's first ``--mode hybrid`` prompt only. Models hold
    no per-service state (a service never closes its model). Everything else is the
    registry's own."""

    def __init__(self, registry: Any) -> None:
        self._registry = registry
        self._kept: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)

    def embedding_model(self, name: str, **options: Any) -> Any:
        key = json.dumps([name, options], sort_keys=True, default=repr)
        if key not in self._kept:
            self._kept[key] = self._registry.embedding_model(name, **options)
        return self._kept[key]


def _load_model(c: Any, log: Callable[[str], None]) -> None:
    """Embed one text with the database's embedding model, so its weights are loaded
    before the first prompt (``--load-model``). A database without a model: nothing."""
    model = c.service().embedding_model
    if model is None:
        log("the database has no embedding model: nothing to load")
        return
    asyncio.run(model.embed(("warm-up",)))
    log(f"embedding model {model.profile.model} loaded")


def stop_on_signal(daemon: HookDaemon) -> Callable[[int, Any], None]:
    """The SIGTERM/SIGINT handler of ``daemon``: while it serves, it stops the serve loop
    from another thread (``shutdown`` waits for the loop) and returns; an exception raised
    in a handler can land in a finaliser or a weakref callback, which swallows it, and the
    daemon would never stop. Before it serves, KeyboardInterrupt (stop at once)."""

    def on_term(_signum: int, _frame: Any) -> None:
        if daemon._server is None:
            raise KeyboardInterrupt
        threading.Thread(target=daemon.stop, daemon=True).start()

    return on_term


def run_daemon(ctx: Any, verbose: bool, load_model: bool = False) -> None:
    """``powercontext hook daemon``: serve ``ctx``'s database until Ctrl-C or SIGTERM;
    ``load_model`` loads the embedding model before listening."""
    import signal

    from powercontext.entrypoints.cli.context import Ctx

    registry = _KeptModels(ctx.registry())

    def fresh() -> Any:
        c = Ctx(ctx.db, False, ctx.embedding, ctx.analyzer)
        c._registry = registry
        return c

    def say(msg: str) -> None:
        print(f"powercontext hook daemon: {msg}", file=sys.stderr, flush=True)

    daemon = HookDaemon(fresh, ctx.db_url, ctx.embedding, ctx.analyzer,
                        log=say if verbose else None)
    if load_model:
        _load_model(fresh(), say)

    on_term = stop_on_signal(daemon)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    with contextlib.suppress(KeyboardInterrupt):
        daemon.serve(lambda: say(f"answering prompts of {ctx.db_url} on {daemon.path} "
                                 "(Ctrl-C stops)"))
    say(f"stopped after {daemon.answered} events")
