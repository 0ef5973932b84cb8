"""``powercontext serve``: the HTTP API and the ArtifactProcessingSupervisor in one
process (Topic Memory RFC, "HTTP API", "Artifact Processing Supervisor", "Process
roles", "Configuration"; TOPIC-MEMORY.md, "Auth", "SQLite and other processes").

Start-up, in order, each failure one line and its exit code before anything listens:

1. the configuration (``--config``, ``$POWERCONTEXT_CONFIG`` or ``<data
   dir>/config.toml``; exit 2 for a bad file), its effective values logged (secrets
   masked);
2. the role (``--role``, else ``runtime.artifact_processing_role``) against the
   engine: SQLite supports only ``all`` (exit 2 otherwise); OceanBase all three;
3. the token rule: ``server.api_token`` or ``$POWERCONTEXT_API_TOKEN``, at least 16
   characters (exit 2 otherwise); without one
   the host must be loopback (``127.0.0.1``, ``::1``, ``localhost``; a warning says
   the API is unauthenticated), a non-loopback host refuses to start (exit 2);
   every request's ``Host`` must be a loopback name, the bound address or a name of
   ``server.allowed_hosts`` / ``--allow-host`` (else 421: DNS rebinding;
   :mod:`powercontext.entrypoints.http.hosts`);
4. the Topic generation configuration: refused -> search and get still serve, flush
   answers 503 ``topic_processing_unavailable`` and the log says why; but when
   automatic scheduling is configured that is a start-up error (exit 5);
5. the services (the database opens; exit 2 for a retrieval shape it refuses), then
   the Supervisor for roles ``all`` and ``background`` (a second Supervisor on one
   SQLite database: exit 5);
6. the listening socket (exit 9 when another process listens there, exit 2 when the
   address cannot be used otherwise), then uvicorn; once
   it accepts connections one line on stdout: ``serving http://HOST:PORT (role
   ROLE)`` (``--port 0``: the port the system chose).

SIGTERM or SIGINT (Ctrl-C) stops it cleanly: the server stops accepting and finishes
open requests, the Supervisor stops (its Workers terminated, their Windows rolled
back), the services close; exit 0. A second Ctrl-C forces the HTTP shutdown.

Role ``background`` runs the Supervisor and serves only ``GET /v1/health`` (for
process managers; no API, no token needed for it). Role ``api`` serves the API with
no Supervisor: flushes are found by a ``background`` (or ``all``) process polling the
persisted flush generations (OceanBase).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import click

from powercontext.core.errors import InvalidInputError, TopicProcessingUnavailableError
from powercontext.entrypoints.cli.context import Ctx, fail_with, pass_ctx

__all__ = ["ENV_API_TOKEN", "MIN_TOKEN_LENGTH", "check_token", "host_policy", "is_loopback",
           "serve"]

ENV_API_TOKEN = "POWERCONTEXT_API_TOKEN"
#: The shortest API token accepted (characters): a guessable token would open the API
#: and the dashboard to anyone who can reach the port.
MIN_TOKEN_LENGTH = 16
_ROLES = ("all", "api", "background")

log = logging.getLogger("powercontext.serve")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: ``localhost`` or a loopback address
    (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str | None, host: str, logger: logging.Logger) -> None:
    """The token rule of ``serve`` and ``mcp --transport http``: a token has at least
    :data:`MIN_TOKEN_LENGTH` characters (InvalidInputError naming
    ``server.api_token``); without a token the host must be loopback (a warning says
    the server is unauthenticated), any other host is an InvalidInputError naming
    ``server.host``."""
    if token is not None:
        if len(token) < MIN_TOKEN_LENGTH:
            raise InvalidInputError(
                "server.api_token", f"the API token has {len(token)} characters; it needs "
                f"at least {MIN_TOKEN_LENGTH} (e.g. python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))')")
        return
    if not is_loopback(host):
        raise InvalidInputError(
            "server.host", f"{host!r} is not a loopback address and no API token is "
            f"set: set server.api_token or ${ENV_API_TOKEN}, or bind 127.0.0.1")
    logger.warning("the API is unauthenticated (no server.api_token, no $%s): bound "
                   "to the loopback host %s only", ENV_API_TOKEN, host)


def host_policy(host: str, extra: tuple[str, ...]) -> Any:
    """The ``Host`` values a server bound to ``host`` answers
    (:class:`~powercontext.entrypoints.http.hosts.HostPolicy`); InvalidInputError naming
    ``server.allowed_hosts`` for an entry that is no host name."""
    from powercontext.entrypoints.http.hosts import HostPolicy

    try:
        return HostPolicy.for_bind(host, extra)
    except ValueError as exc:
        raise InvalidInputError("server.allowed_hosts", str(exc)) from None


def _one_process_only(c: Any, url: str) -> bool:
    """Whether the Topic backend of ``url`` declares the ``file-lock`` Supervisor policy
    (one Supervisor per database, holding a file lock beside it: SQLite), so the API and
    the Supervisor must share one process. Read from the backend, built but not opened
    (:func:`~powercontext.entrypoints.supervisor_leases.registry_locking`), never from
    the URL's spelling."""
    from powercontext.entrypoints.supervisor_leases import registry_locking

    return registry_locking(url, c.registry()) == "file-lock"


def _shown_url(url: str) -> str:
    """``url`` with any password masked (for the start-up log)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:********@{parts.hostname or ''}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _configure_logging(verbose: bool) -> None:
    """One stderr handler on ``powercontext`` (the Supervisor's StructuredFormatter:
    each record's fields appended as ``key=value``): WARNING, with the start-up lines
    of ``powercontext.serve`` at INFO; ``-v``: INFO for every ``powercontext.*``
    logger."""
    root = logging.getLogger("powercontext")
    if not any(getattr(h, "_powercontext_serve", False) for h in root.handlers):
        from powercontext.entrypoints.topic_worker import StructuredFormatter

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(StructuredFormatter())  # fields appended as key=value
        handler._powercontext_serve = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    log.setLevel(logging.INFO)


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6 as the host resolves);
    AddressInUseError (exit 9) when another process listens there; InvalidInputError
    naming ``server.host`` / ``server.port`` when it cannot be had otherwise."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InvalidInputError("server.host", f"cannot resolve {host!r}: {exc}") from None
    family, _type, _proto, _canon, address = infos[0]
    try:
        sock = socket.create_server(address, family=family, reuse_port=False)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            from powercontext.entrypoints.cli.failures import AddressInUseError

            raise AddressInUseError(
                f"cannot listen on {host}:{port}: the address is in use (another process, "
                "perhaps an earlier powercontext serve, listens there): stop it, or "
                "choose another port with --port (0: any free port)") from None
        raise InvalidInputError("server.port", f"cannot listen on {host}:{port}: "
                                f"{exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _http_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _unavailable_reason(config: Any, registry: Any, embedding_model: Any) -> str:
    """Why Topic processing is unavailable, naming only the refused settings (their
    values stay in the log, masked there too)."""
    from powercontext import topic_provider

    try:
        topic_provider.topic_generation_model(config, registry)
        topic_provider.check_topic_embedding(config, embedding_model)
    except TopicProcessingUnavailableError as exc:
        keys = [p.partition(":")[0] for p in exc.problems] or ["inference"]
        return ("Topic processing is unavailable on this server: the Topic generation "
                f"configuration is refused ({', '.join(dict.fromkeys(keys))}; the "
                "server log says why)")
    return "Topic processing is unavailable on this server"


class _Uvicorn:
    """uvicorn's Server without its own signal capture (it re-raises the signal after
    shutdown, which would kill the process before the Supervisor and the services are
    closed): :func:`_run` installs the handlers and asks the server to exit."""

    @staticmethod
    def make(app: Any, *, verbose: bool) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        config = uvicorn.Config(app, lifespan="on", log_level="info" if verbose else "warning",
                                access_log=verbose, server_header=False)
        return Server(config)


def _has_lease_storage(db_url: str, registry: Any) -> bool:
    """Whether the Topic backend of ``db_url`` implements the Supervisor's lease calls
    (nothing connects: only the backend's class is looked at)."""
    backend = registry.topic_backend_for_url(db_url)
    return callable(getattr(type(backend), "acquire_lease", None))


async def _start_supervisor(db_url: str, config: Any, registry: Any) -> Any:
    """The started ArtifactProcessingSupervisor, or None when this build cannot run
    one (no Supervisor, or a Topic backend without the lease calls): then flushes are
    recorded and ``topic process`` processes them, as the warning says.
    SupervisorUnavailableError (another Supervisor holds this SQLite database) and
    TopicProcessingUnavailableError (automatic scheduling without a usable
    configuration) pass through."""
    from powercontext.entrypoints.supervisor import ArtifactProcessingSupervisor

    missing = ("the ArtifactProcessingSupervisor cannot run in this build (%s): flushes "
               "are recorded, `powercontext topic process` processes them")
    if not _has_lease_storage(db_url, registry):
        log.warning(missing, "the Topic backend has no Supervisor lease storage")
        return None
    try:
        supervisor = ArtifactProcessingSupervisor(db_url, config, env=os.environ,
                                                  registry=registry)
        await supervisor.start()
    except NotImplementedError:
        log.warning(missing, "not implemented")
        return None
    return supervisor


async def _run(c: Ctx, db_url: str, config: Any, role: str, host: str, port: int,
               token: str | None, verbose: bool, hosts: Any) -> None:
    from powercontext import topic_provider
    from powercontext.entrypoints.http.app import create_app
    from powercontext.entrypoints.http.deps import Services
    from powercontext.plugins.registry import Registry
    from powercontext.runtime import open_service, open_topic_service

    registry = Registry()
    memory = topic = supervisor = None
    services = Services(memory=None, topic=None)
    try:
        if role != "background":
            memory = open_service(db_url, embedding=c.embedding, analyzer=c.analyzer,
                                  registry=registry)
            topic = open_topic_service(db_url, embedding=c.embedding, analyzer=c.analyzer,
                                       registry=registry)
            await topic.capabilities()  # the database opens now, or start-up fails
            embedding_model = topic.embedding_model
        else:
            embedding_model = None
        model = topic_provider.check_startup(config, registry, embedding_model=embedding_model,
                                             logger=log)
        services = Services(memory=memory, topic=topic,
                            processing_available=model is not None)
        if model is None:
            services.unavailable_reason = _unavailable_reason(config, registry,
                                                              embedding_model)
        if role in ("all", "background"):
            supervisor = await _start_supervisor(db_url, config, registry)
            services.supervisor = supervisor
        sock = _listen(host, port)
        app = create_app(services, api_token=token, role=role, hosts=hosts,
                         session_lifetime=config.server.session_lifetime_seconds)
        server = _Uvicorn.make(app, verbose=verbose)
        loop = asyncio.get_running_loop()

        def on_signal(sig: int) -> None:
            if server.should_exit and sig == signal.SIGINT:
                server.force_exit = True
            server.should_exit = True
            log.info("stopping (signal %s)", signal.Signals(sig).name)

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not serving.done():
                await asyncio.sleep(0.02)
            if server.started:
                if role != "background":
                    click.echo(f"dashboard {_http_url(sock)}/ui/")
                click.echo(f"serving {_http_url(sock)} (role {role})")
                sys.stdout.flush()
            await serving
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            sock.close()
    finally:
        if supervisor is not None:
            await supervisor.stop()
        for svc in (topic, memory):
            if svc is not None:
                await svc.close()


_HELP = """Serve the HTTP API and run Topic processing in the background.

\b
Roles (--role, else runtime.artifact_processing_role in the configuration):
  all         the API and the ArtifactProcessingSupervisor (default; the only role
              SQLite supports: one Supervisor per database file)
  api         the API only; a background process processes the flushes (OceanBase)
  background  the Supervisor only; serves just GET /v1/health (OceanBase; several
              candidates elect one Leader through the database lease)

\b
Endpoints (JSON; see /openapi.json):
  POST /v1/topic-memory/flush   {"scope_id"} -> {"status": "accepted"|"idle"}
  POST /v1/topic-memory/search  {"scope_id", "query", "limit"?} -> {"hits", "channels"}
  POST /v1/topic-memory/get     {"scope_id", "artifact": {...}} -> the exact Revision
  POST /v1/context/prepare      {"scope_id", "query", "max_bytes"?} -> compact items
  /v1/memory/...                every memory command: list, show, changes, search,
                                expand, cite, validate-citation, remember, revise,
                                forget, reactivate, organize, retire
                                (If-Match: "ID@REV")
  /v1/sources/add, /show        source add, source show
  GET  /v1/health, GET /openapi.json, GET /docs (the interactive page; no token)

\b
Token: every route but health, openapi.json and docs needs "Authorization: Bearer
TOKEN" when server.api_token or $POWERCONTEXT_API_TOKEN is set (at least 16
characters; a shorter one: exit 2).
Without a token the server binds only a loopback host (127.0.0.1, ::1, localhost)
and warns that the API is unauthenticated; any other host without a token refuses to
start (exit 2). The dashboard trades the token for a session cookie that lasts
server.session_lifetime_seconds (8 hours) and ends at logout.

\b
Host: a request whose Host header is not localhost, a loopback address, the bound
address or a name given with --allow-host / server.allowed_hosts gets 421 (a page
whose DNS name was rebound to this machine cannot drive it).

\b
Errors: {"error": {"code", "message", "field"}} with 400 (a bad If-Match), 401
unauthorized, 404 not_found, 409 conflict (a stale If-Match), 422 invalid_input, 503
topic_processing_unavailable / backend_unavailable, 500 internal (docs/serving.md).
A refused Topic generation configuration still serves search and get; flush answers
503 (unless automatic scheduling is configured: then it cannot start).

\b
Prints "serving http://HOST:PORT (role ROLE)" once listening (--port 0: the port
chosen). SIGTERM / Ctrl-C: stop cleanly (Supervisor and Workers stopped), exit 0."""


@click.command("serve", help=_HELP)
@click.option("--db", "db", metavar="PATH|URL",
              help="Database (default: the global --db, $POWERCONTEXT_DB, else the "
                   "per-user data directory).")
@click.option("--config", "config_file", metavar="FILE",
              type=click.Path(dir_okay=False),
              help="Configuration file (default $POWERCONTEXT_CONFIG, else <data "
                   "dir>/config.toml).")
@click.option("--role", type=click.Choice(_ROLES),
              help="Process role (default: runtime.artifact_processing_role, 'all').")
@click.option("--host", metavar="HOST", help="Address to bind (default: server.host, "
              "127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65_535), metavar="PORT",
              help="Port (default: server.port, 8765; 0: any free port).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host is NAME (a reverse proxy's public "
                   "name; repeatable; added to server.allowed_hosts; '*': any Host).")
@click.option("-v", "--verbose", is_flag=True,
              help="Log INFO for every powercontext.* logger (stages, Workers, requests).")
@pass_ctx
def serve(c: Ctx, db: str | None, config_file: str | None, role: str | None,
          host: str | None, port: int | None, allow_hosts: tuple[str, ...],
          verbose: bool) -> None:
    from powercontext import configuration

    _configure_logging(verbose)
    try:
        config = configuration.load_config(config_file, env=os.environ)
        db_url = db or c.db_url
        role = role or config.runtime.artifact_processing_role
        host = host or config.server.host
        port = config.server.port if port is None else port
        token = config.server.api_token or os.environ.get(ENV_API_TOKEN) or None
        configuration.log_effective_config(config, log)
        log.info("serve db=%s role=%s host=%s port=%s token=%s", _shown_url(db_url), role,
                 host, port, "********" if token else "<unset>")
        if role != "all" and _one_process_only(c, db_url):
            raise InvalidInputError(
                "role", "SQLite supports only --role all (one process serving the API and "
                f"running the Supervisor), not {role!r}; roles api and background need "
                "OceanBase")
        check_token(token, host, log)
        hosts = host_policy(host, (*config.server.allowed_hosts, *allow_hosts))
        asyncio.run(_run(c, db_url, config, role, host, port, token, verbose, hosts))
    except (SystemExit, click.exceptions.Exit):
        raise
    except BaseException as exc:  # KeyboardInterrupt before the handlers: exit 130
        fail_with(exc, c.as_json)
