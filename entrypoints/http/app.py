"""The FastAPI app of ``powercontext serve`` (Topic Memory RFC, "HTTP API",
"Prepared Context"; TOPIC-MEMORY.md, "Auth").

:func:`create_app` wires the routers of :func:`api_routers` (Topic flush, search, get;
the Memory reads and writes; Sources; the prepared context when installed), ``GET
/v1/health``, the OpenAPI document at ``/openapi.json`` and its interactive page
``/docs`` (:mod:`.docs`; these three without a token);
errors are mapped once by :mod:`.errors`. Request bodies over :data:`MAX_BODY_BYTES`
are refused (413 ``invalid_input``) before they are read whole; :mod:`.guards` checks
the bearer token before any body is read, bounds the time the body may take (408) and
adds ``Cache-Control: no-store`` and ``nosniff`` to every JSON response.
"""

from __future__ import annotations

import importlib
import logging
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from powercontext.entrypoints.http.deps import Services
from powercontext.entrypoints.http.errors import error_body, install_error_handlers, status_for
from powercontext.entrypoints.http.guards import RequestGuard
from powercontext.entrypoints.http.hosts import HostGuard, HostPolicy
from powercontext.entrypoints.http.schema_names import keep_published_names

__all__ = ["MAX_BODY_BYTES", "api_routers", "create_app"]

log = logging.getLogger("powercontext.http")

#: The largest request body read (bytes): far above any valid request (a query is
#: at most 8,192 characters, 49,152 bytes even if every one is JSON-escaped).
MAX_BODY_BYTES = 256 * 1024


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("powercontext")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0"


class _Guard:
    """Pure ASGI middleware inside Starlette's ServerErrorMiddleware (which would log
    and re-raise): 413 for a declared or streamed body over ``limit``, and the 500
    ``internal`` body for any exception no handler mapped (logged with its type and
    traceback; nothing of it reaches the client)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > self.limit:
                    await self._refuse(send)
                    return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)
        except Exception as exc:
            status, code, message, field = status_for(exc)
            # the frames only: an exception's own text may quote stored content
            log.error("request failed path=%s traceback (frames only):\n%s",
                      scope.get("path"),
                      "".join(traceback.format_tb(exc.__traceback__)).rstrip(),
                      extra={"stage": "http", "error_code": code,
                             "exception_type": type(exc).__name__})
            if not started:
                response = JSONResponse(error_body(code, message, field), status_code=status)
                await response({"type": "http"}, _no_receive, send)

    async def _refuse(self, send: Any) -> None:
        response = JSONResponse(error_body(
            "invalid_input", f"the request body is over {self.limit} bytes"), status_code=413)
        await response({"type": "http"}, _no_receive, send)


class _TooLarge(Exception):
    pass


async def _no_receive() -> Any:  # pragma: no cover - a JSONResponse never reads
    return {"type": "http.disconnect"}


def _health(services: Services, role: str) -> dict[str, Any]:
    supervisor: dict[str, Any] | None = None
    if services.supervisor is not None:
        try:
            term = services.supervisor.term
            supervisor = {"leader": term is not None,
                          "generation": None if term is None else term.generation}
        except Exception:  # health never fails on the Supervisor state
            supervisor = {"leader": False, "generation": None}
    return {"status": "ok", "version": _version(), "role": role,
            "topic_processing": "available" if services.processing_available
            else "unavailable",
            "supervisor": supervisor}


def create_app(services: Services, *, api_token: str | None, role: str = "all",
               hosts: HostPolicy | None = None, session_lifetime: float | None = None,
               ) -> Any:
    """The FastAPI app over the open ``services`` (closing them stays the caller's
    job). ``api_token``: the bearer token every route but ``/v1/health`` and
    ``/openapi.json`` requires (None or empty: no check; the caller binds loopback
    only). ``role``: ``all`` or ``api`` serve every route; ``background`` serves only
    ``/v1/health`` (that process runs the Supervisor, no API). ``hosts``: the ``Host``
    values answered, any other gets 421 on every route (:mod:`.hosts`; None: no check,
    for in-process test clients; ``serve`` always passes one). ``session_lifetime``:
    seconds a dashboard login lasts (None: the dashboard's default, 8 hours). Title
    ``powercontext``, version the package's."""
    app = FastAPI(title="powercontext", version=_version(), docs_url=None, redoc_url=None,
                  description="Memory and Topic Memory over HTTP: every Memory operation "
                  "of the CLI (list, show, changes, search, expand, cite, validate a "
                  "citation, remember, revise, forget, reactivate, organize, retire), "
                  "Sources, "
                  "Topic flush/search/get and the prepared context of a task. Every route "
                  "but `/v1/health`, `/openapi.json` and `/docs` needs "
                  "`Authorization: Bearer <token>` when the server has a token. A write "
                  "takes `If-Match: \"ID@REV\"` (the `ETag` of show or of a write) and "
                  "answers 409 when the Memory moved on.")
    app.state.services = services
    app.state.api_token = api_token or None
    app.state.role = role
    install_error_handlers(app)
    keep_published_names(app)

    @app.get("/v1/health", tags=["health"], summary="Liveness and role")
    async def health(request: Request) -> dict[str, Any]:
        """``{"status": "ok", "version", "role", "topic_processing": "available" |
        "unavailable", "supervisor": null | {"leader", "generation"}}``; no token."""
        return _health(request.app.state.services, request.app.state.role)

    token_prefixes: list[str] = []
    if role != "background":
        for router in api_routers():
            app.include_router(router)
            if router.prefix + "/" not in token_prefixes:  # memory reads and writes share one
                token_prefixes.append(router.prefix + "/")
        _install_dashboard(app, session_lifetime)
        _install_docs(app)
    # the token before any body is read, a deadline for the body, JSON headers
    app.add_middleware(RequestGuard, token_prefixes=tuple(token_prefixes))
    app.add_middleware(_Guard, limit=MAX_BODY_BYTES)
    if hosts is not None:  # added last: the outermost check, before any other work
        app.add_middleware(HostGuard, policy=hosts)
    return app


def api_routers() -> list[Any]:
    """The API's routers, each under its own prefix and each depending on
    :func:`~powercontext.entrypoints.http.deps.require_token` (so every route they hold
    needs the token and answers errors through :mod:`.errors`): Topic Memory
    (:mod:`.topic`; its processing status and operator decisions, :mod:`.processing`),
    the Memory reads and writes (:mod:`.memory`, :mod:`.memory_writes`), Sources
    (:mod:`.sources`) and the prepared context (:mod:`.context`) when installed."""
    from powercontext.entrypoints.http.memory import router as memory_router
    from powercontext.entrypoints.http.memory_writes import router as writes_router
    from powercontext.entrypoints.http.processing import router as processing_router
    from powercontext.entrypoints.http.sources import router as sources_router
    from powercontext.entrypoints.http.topic import router as topic_router

    routers = [topic_router, processing_router, memory_router, writes_router,
               sources_router]
    context_router = _context_router()
    if context_router is not None:
        routers.append(context_router)
    return routers


def _install_docs(app: FastAPI) -> None:
    """The interactive page ``/docs`` (:mod:`powercontext.entrypoints.http.docs`)."""
    from powercontext.entrypoints.http.docs import install

    install(app)


def _install_dashboard(app: FastAPI, session_lifetime: float | None) -> None:
    """The dashboard under ``/ui/`` (:mod:`powercontext.entrypoints.http.dashboard`; issue
    17), on for roles ``all`` and ``api``; skipped with a warning when Jinja2 (the
    ``server`` extra) is not installed."""
    try:
        from powercontext.entrypoints.http.dashboard import install
    except ModuleNotFoundError as exc:
        if exc.name not in ("jinja2", "itsdangerous"):
            raise
        log.warning("the dashboard is off: %s is not installed "
                    "(pip install 'powercontext[server]')", exc.name)
        return
    install(app, session_lifetime)


def _context_router() -> Any:
    """The prepared-context router (:mod:`powercontext.entrypoints.http.context`), or None
    when this installation has none."""
    try:
        module = importlib.import_module("powercontext.entrypoints.http.context")
    except ModuleNotFoundError as exc:
        if exc.name != "powercontext.entrypoints.http.context":
            raise
        return None
    return getattr(module, "router", None)
