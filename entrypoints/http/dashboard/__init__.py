"""The dashboard of ``powercontext serve`` (issue 17): server-rendered pages under
``/ui/`` in the same FastAPI app as the API, behind the same bearer token (a login
form trades it for a session cookie), same-origin checks on every non-GET route, and a
JSON twin of every page (``?format=json``). docs/dashboard.md lists the URLs.

:data:`router` holds the routes of :mod:`.auth`, :mod:`.memories`, :mod:`.evidence`,
:mod:`.topics` and :mod:`.processing`; :func:`install` adds it to an app with the
stylesheet at ``/ui/static/`` and the dashboard's error pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from powercontext.entrypoints.http.dashboard import auth, evidence, memories, processing, topics
from powercontext.entrypoints.http.dashboard.sessions import (
    DEFAULT_LIFETIME,
    LoginThrottle,
    SessionStore,
)
from powercontext.entrypoints.http.dashboard.web import (
    STATIC,
    LoginRequired,
    login_redirect,
    render,
    wants_json,
)

__all__ = ["install", "router"]

router = APIRouter(include_in_schema=False)
for _module in (auth, memories, evidence, topics, processing):
    router.include_router(_module.router, include_in_schema=False)

_Handler = Callable[[Request, Exception], Awaitable[Response]]

_TITLES = {401: "Not logged in", 403: "Refused", 404: "Not found", 405: "Not allowed",
           409: "Conflict", 413: "Too large", 422: "Invalid request",
           429: "Too many attempts", 503: "Unavailable"}


def _html_errors(handler: _Handler) -> _Handler:
    """``handler`` (the API's), but a dashboard HTML request gets its error body as an
    error page with the same status and headers."""

    async def wrapped(request: Request, exc: Exception) -> Response:
        response = await handler(request, exc)
        if not request.url.path.startswith("/ui") or wants_json(request):
            return response
        import json

        try:
            error = json.loads(bytes(response.body))["error"]
        except (ValueError, KeyError, TypeError):
            return response
        headers = {k: v for k, v in response.headers.items()
                   if k.lower() not in ("content-type", "content-length")}
        status = response.status_code
        return render(request, "error.html", {"error": error, "status": status},
                      title=_TITLES.get(status, "Error"), status=status, headers=headers)

    return wrapped


async def _on_login_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequired)
    return login_redirect(exc)


def install(app: FastAPI, session_lifetime: float | None = None) -> None:
    """Add the dashboard to ``app`` (after its API error handlers are installed): the
    routes of :data:`router`, ``/ui/static/``, HTML error pages for dashboard requests
    (JSON requests keep the API's error bodies), and, when ``app.state.api_token`` is
    set, the login sessions (``app.state.sessions``, lasting ``session_lifetime``
    seconds; None: :data:`~.sessions.DEFAULT_LIFETIME`) and the failed-login throttle
    (``app.state.login_throttle``)."""
    token = getattr(app.state, "api_token", None)
    app.state.sessions = SessionStore(token, session_lifetime or DEFAULT_LIFETIME) \
        if token else None
    app.state.login_throttle = LoginThrottle()
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=str(STATIC)), name="ui-static")
    handlers: dict[Any, Any] = app.exception_handlers
    for cls, handler in list(handlers.items()):
        app.add_exception_handler(cls, _html_errors(handler))
    app.add_exception_handler(LoginRequired, _on_login_required)
