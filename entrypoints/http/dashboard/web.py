"""What every dashboard page shares (issue 17): the Jinja2 environment, :func:`page`
(an HTML page or, for the same ``data``, its JSON twin), the dependencies
:func:`viewer` (who may look) and :func:`same_origin` (every non-GET route), the
chart geometry behind the SVG plot macros of ``templates/_plots.html`` and the
dashboard's error pages.

Every template is autoescaped (stored text is untrusted: a stored ``<script>`` renders
as text) and undefined names fail (``StrictUndefined``). A page's ``data`` is plain
JSON-ready data (domain values shaped by :func:`powercontext.core.shapes.to_json`):
the template renders exactly what the JSON twin returns, so nothing is only on the
page.

JSON twin: a request with ``?format=json``, or whose ``Accept`` names
``application/json`` and not ``text/html``, gets ``data`` itself as JSON, with the
page's status; errors get the API's error body ``{"error": {"code", "message",
"field"}}`` (:mod:`powercontext.entrypoints.http.errors`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from powercontext.entrypoints.http.dashboard.sessions import SessionStore
from powercontext.entrypoints.http.deps import require_token
from powercontext.entrypoints.http.errors import ApiError

__all__ = [
    "COOKIE_NAME",
    "LOGIN_PATH",
    "STATIC",
    "TEMPLATES",
    "LoginRequired",
    "auth_required",
    "chart_layout",
    "environment",
    "page",
    "render",
    "same_origin",
    "section_of",
    "session_valid",
    "sessions",
    "viewer",
    "wants_json",
]

#: The session cookie a successful login sets (HttpOnly, SameSite=Strict, Path=/ui;
#: :mod:`.sessions`).
COOKIE_NAME = "pc_session"
#: Where a browser without a session is sent (``?next=`` the page it asked for).
LOGIN_PATH = "/ui/login"

_HERE = Path(__file__).resolve().parent
TEMPLATES = _HERE / "templates"
STATIC = _HERE / "static"

#: Sent with every HTML page: scripts and styles from this server only (no inline
#: script can run even if escaping ever failed), no framing, forms post here only.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _query(request: Request, **changes: Any) -> str:
    """The current path with its query string, ``changes`` applied (None removes a
    parameter; ``format`` is always dropped): for pagination links."""
    params = {k: v for k, v in request.query_params.items() if k != "format"}
    for k, v in changes.items():
        if v is None:
            params.pop(k, None)
        else:
            params[k] = str(v)
    qs = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params.items())
    return request.url.path + ("?" + qs if qs else "")


def _build_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.globals["chart_layout"] = chart_layout
    env.filters["q"] = lambda value: quote(str(value), safe="")
    return env


class _Env:
    """The one Environment, built on first use (no import-time side effects)."""

    env: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The dashboard's Jinja2 Environment (autoescape on, StrictUndefined), templates
    from ``templates/``. Globals: ``chart_layout``; filter ``q`` (URL-quote one query
    value or path segment)."""
    if _Env.env is None:
        _Env.env = _build_environment()
    return _Env.env


def wants_json(request: Request) -> bool:
    """True for the JSON twin: ``?format=json``, or an ``Accept`` header naming
    ``application/json`` without ``text/html`` (``?format=html`` forces HTML)."""
    fmt = request.query_params.get("format")
    if fmt is not None:
        return fmt == "json"
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def auth_required(request: Request) -> bool:
    """True when the server has a token (pages then need a session or the bearer)."""
    return bool(getattr(request.app.state, "api_token", None))


#: The navigation's sections by the first path segment after ``/ui/``.
_SECTIONS = {"memories": "memories", "scopes": "topics", "topics": "topics",
             "processing": "processing"}


def section_of(path: str) -> str | None:
    """The navigation section a dashboard path belongs to (``memories``, ``topics``,
    ``processing``; None for the others: login, a Source, a citation)."""
    parts = path.split("/")
    return _SECTIONS.get(parts[2]) if len(parts) > 2 and parts[1] == "ui" else None


def render(request: Request, template: str, data: Mapping[str, Any], *, title: str,
           status: int = 200, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    """``template`` rendered as HTML with ``data`` (also spread as top-level names;
    ``request``, ``title``, ``data``, ``auth_required``, ``logged_in`` (a valid session
    cookie: the logout button shows), ``section`` (:func:`section_of`: the navigation
    link marked current), ``url_with`` and ``json_url`` are reserved)."""
    context: dict[str, Any] = dict(data)
    context.update(
        request=request, title=title, data=data, auth_required=auth_required(request),
        logged_in=auth_required(request) and session_valid(request),
        section=section_of(request.url.path),
        url_with=lambda **changes: _query(request, **changes),
        json_url=_query(request, format="json"),
    )
    html = environment().get_template(template).render(context)
    return HTMLResponse(html, status_code=status, headers={**SECURITY_HEADERS,
                                                          **(headers or {})})


def page(request: Request, template: str, data: Mapping[str, Any], *, title: str,
         status: int = 200, as_json: bool | None = None,
         extra: Mapping[str, Any] | None = None) -> Response:
    """The page ``template`` for ``data`` (HTML, status ``status``), or ``data`` itself
    as JSON when :func:`wants_json` (the JSON twin, same status; ``as_json`` True or
    False decides instead). ``data`` must be JSON-ready (dicts, lists, strings,
    numbers, booleans, None); ``extra``: names for the HTML only (values derived from
    ``data`` that are not JSON, such as a Topic's sanitised Markdown)."""
    if wants_json(request) if as_json is None else as_json:
        return JSONResponse(dict(data), status_code=status, headers={"Vary": "Accept"})
    response = render(request, template, {**data, **(extra or {})}, title=title,
                      status=status)
    response.headers["Vary"] = "Accept"
    return response


# ------------------------------------------------------------------ sessions


def sessions(request: Request) -> SessionStore | None:
    """The app's :class:`SessionStore` (None when the server has no token)."""
    store = getattr(request.app.state, "sessions", None)
    return store if isinstance(store, SessionStore) else None


def session_valid(request: Request) -> bool:
    """True when the request carries a valid, unexpired, unrevoked session cookie."""
    store = sessions(request)
    return store is not None and store.valid(request.cookies.get(COOKIE_NAME))


class LoginRequired(Exception):
    """Raised by :func:`viewer` for a browser without a session: 303 to the login
    form with ``next`` (the dashboard's exception handler answers it)."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


def login_redirect(exc: LoginRequired) -> RedirectResponse:
    return RedirectResponse(f"{LOGIN_PATH}?next={quote(exc.next_url, safe='')}",
                            status_code=303)


async def viewer(request: Request) -> str:
    """FastAPI dependency of every dashboard page: who is looking. ``"open"`` (no token
    configured: loopback only), ``"bearer"`` (a valid ``Authorization: Bearer``; a wrong
    one is the API's 401) or ``"session"`` (a valid ``pc_session`` cookie). Otherwise
    an HTML request is redirected (303) to ``/ui/login?next=<this page>`` and a JSON
    request gets the API's 401 ``unauthorized`` body."""
    token = getattr(request.app.state, "api_token", None)
    if not token:
        return "open"
    if request.headers.get("authorization") is not None:
        await require_token(request)
        return "bearer"
    if session_valid(request):
        return "session"
    if wants_json(request):
        raise ApiError(401, "unauthorized", "log in at /ui/login or send "
                       "'Authorization: Bearer <token>'", headers={"WWW-Authenticate": "Bearer"})
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    raise LoginRequired(target)


def _origin_of(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return (parts.scheme, parts.hostname.lower(),
            port if port is not None else (443 if parts.scheme == "https" else 80))


def own_origin(request: Request) -> tuple[str, str, int] | None:
    """The request's own ``(scheme, host, port)`` (from its URL and Host header)."""
    return _origin_of(f"{request.url.scheme}://{request.headers.get('host', '')}/")


async def same_origin(request: Request) -> None:
    """FastAPI dependency of every non-GET dashboard route: the ``Origin`` header, else
    the ``Referer``, must name this request's own scheme://host:port; otherwise (a
    cross-origin request, or neither header) 403 ``forbidden_origin``."""
    claimed = request.headers.get("origin")
    if claimed is None or claimed == "null":
        claimed = request.headers.get("referer") if claimed is None else None
    mine = own_origin(request)
    if claimed is None or mine is None or _origin_of(claimed) != mine:
        raise ApiError(403, "forbidden_origin", "a dashboard form must be posted from "
                       "this server's own pages (Origin or Referer must match)")


# ------------------------------------------------------------------ charts


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value):
        raise ValueError(f"a chart value must be a finite number, not {value!r}")
    return float(value)


def _nice_ticks(top: float, count: int = 4) -> list[float]:
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(top / step) + 1)]


def _label(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def chart_layout(points: Sequence[Any], width: int = 640, height: int = 200,
                 kind: str = "bar") -> dict[str, Any]:
    """The geometry of one chart (SVG user units) for the ``_plots.html`` macros.

    ``points``: ``(x label, y number)`` pairs or ``{"x", "y"}`` dicts, in x order.
    Returns ``{"width", "height", "plot": {"left", "top", "right", "bottom"}, "empty",
    "yticks": [{"y", "label"}], "xticks": [{"x", "label"}], "bars": [{"x", "y", "w",
    "h", "label", "value"}], "path": SVG path data of the line, "dots": [{"x", "y",
    "label", "value"}]}``; at most 8 x labels are shown. ValueError for a y that is not
    a finite number."""
    pairs = [(str(p["x"]), _number(p["y"])) if isinstance(p, Mapping)
             else (str(p[0]), _number(p[1])) for p in points]
    left, top, right, bottom = 56.0, 12.0, float(width) - 12.0, float(height) - 36.0
    ticks = _nice_ticks(max((y for _, y in pairs), default=0.0))
    y_max = ticks[-1] or 1.0

    def ypos(v: float) -> float:
        return round(bottom - (bottom - top) * v / y_max, 2)

    out: dict[str, Any] = {
        "width": width, "height": height, "empty": not pairs,
        "plot": {"left": left, "top": top, "right": right, "bottom": bottom},
        "yticks": [{"y": ypos(t), "label": _label(t)} for t in ticks],
        "xticks": [], "bars": [], "dots": [], "path": "",
    }
    n = len(pairs)
    if not n:
        return out
    every = max(1, math.ceil(n / 8))
    if kind == "bar":
        slot = (right - left) / n
        for i, (x, y) in enumerate(pairs):
            cx = left + slot * (i + 0.5)
            out["bars"].append({"x": round(left + slot * i + slot * 0.1, 2),
                                "y": ypos(y), "w": round(max(slot * 0.8, 0.5), 2),
                                "h": round(bottom - ypos(y), 2), "label": x,
                                "value": _label(y)})
            if i % every == 0:
                out["xticks"].append({"x": round(cx, 2), "label": x})
        return out
    step = (right - left) / max(n - 1, 1)
    coords = []
    for i, (x, y) in enumerate(pairs):
        cx = round(left + step * i if n > 1 else (left + right) / 2, 2)
        coords.append(f"{cx},{ypos(y)}")
        out["dots"].append({"x": cx, "y": ypos(y), "label": x, "value": _label(y)})
        if i % every == 0:
            out["xticks"].append({"x": cx, "label": x})
        elif i == n - 1:  # the last point is labelled, in place of a too close one
            if (n - 1) % every < every / 2:
                out["xticks"].pop()
            out["xticks"].append({"x": cx, "label": x})
    out["path"] = "M" + " L".join(coords)
    return out
