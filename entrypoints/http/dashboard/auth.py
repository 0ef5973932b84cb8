"""The dashboard's login (issue 17; TOPIC-MEMORY.md, "Auth"): browsers trade the
server's bearer token for a session cookie once.

- ``GET /ui/login[?next=/ui/...]``: the form (one token field). Without a token on the
  server (loopback only) there is nothing to log in to: 303 to ``next``.
- ``POST /ui/login`` (same-origin; form fields ``token``, ``next``): the right token sets
  ``pc_session`` (HttpOnly, SameSite=Strict, Path=/ui, Secure when the request is
  https, Max-Age the session lifetime; signed, never the token itself;
  :mod:`.sessions`) and answers 303 to ``next``; a wrong one answers the form again
  with an error, 401 (JSON twin: the API's 401 body). After 5 failures within a minute
  a client's attempts are refused, right token or not, with 429 and ``Retry-After``
  until the oldest of them is a minute old.
- ``POST /ui/logout`` (same-origin): revokes the session on the server (the cookie, or
  a copy of it, no longer opens a page) and clears the cookie; 303 to the login form.

``next`` is only ever a dashboard path (``/ui...``); anything else becomes
``/ui/memories``.
"""

from __future__ import annotations

import hmac
import math
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from powercontext.entrypoints.http.dashboard.sessions import LoginThrottle
from powercontext.entrypoints.http.dashboard.web import (
    COOKIE_NAME,
    LOGIN_PATH,
    page,
    same_origin,
    sessions,
    wants_json,
)
from powercontext.entrypoints.http.errors import ApiError, error_body

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

_HOME = "/ui/memories"
#: The longest login form body read (the token field and ``next``).
_MAX_FORM = 16 * 1024


def safe_next(value: str | None) -> str:
    """``value`` when it is a dashboard path (``/ui`` or under it, no scheme, host or
    backslash), else ``/ui/memories``: a login never sends a browser elsewhere."""
    if not value or not value.startswith("/ui") or value.startswith("//") \
            or "\\" in value or any(ord(c) < 0x21 for c in value):
        return _HOME
    if len(value) > 3 and value[3] not in "/?":
        return _HOME
    return value


@router.get(LOGIN_PATH, name="ui_login")
async def login_form(request: Request, next: str | None = None) -> Response:
    """The login form, or 303 to ``next`` when the server has no token."""
    target = safe_next(next)
    if not getattr(request.app.state, "api_token", None):
        return RedirectResponse(target, status_code=303)
    return page(request, "login.html", {"next": target, "error": None}, title="Log in")


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > _MAX_FORM:
        raise ApiError(413, "invalid_input", "the login form is too large")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=8)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(422, "invalid_input", "the login form is not valid") from exc
    return {k: v[0] for k, v in fields.items() if v}


def _throttle(request: Request) -> LoginThrottle:
    throttle = getattr(request.app.state, "login_throttle", None)
    if not isinstance(throttle, LoginThrottle):
        throttle = request.app.state.login_throttle = LoginThrottle()
    return throttle


@router.post(LOGIN_PATH, dependencies=[Depends(same_origin)])
async def login(request: Request) -> Response:
    """Check the posted token (constant time); set the session cookie and 303 to
    ``next``, or the form again with 401; 429 while the client is throttled."""
    form = await _form(request)
    target = safe_next(form.get("next"))
    token = getattr(request.app.state, "api_token", None)
    store = sessions(request)
    if not token or store is None:
        return RedirectResponse(target, status_code=303)
    client = request.client.host if request.client is not None else "unknown"
    throttle = _throttle(request)
    wait = throttle.wait(client)
    if wait > 0:
        seconds = max(1, math.ceil(wait))
        message = f"Too many failed logins from this address: try again in {seconds} s."
        response = page(request, "login.html", error_body("too_many_requests", message)
                        if wants_json(request) else {"next": target, "error": message},
                        title="Log in", status=429)
        response.headers["Retry-After"] = str(seconds)
        return response
    given = form.get("token", "").strip()
    if not given or not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        throttle.failed(client)
        if wants_json(request):
            return page(request, "login.html", error_body(
                "unauthorized", "the token is not accepted"), title="Log in", status=401)
        return page(request, "login.html", {"next": target,
                                            "error": "That token is not accepted."},
                    title="Log in", status=401)
    throttle.succeeded(client)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE_NAME, store.issue(), max_age=store.lifetime, path="/ui",
                        httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/ui/logout", dependencies=[Depends(same_origin)])
async def logout(request: Request) -> Response:
    """Revoke the session on the server and clear its cookie; 303 to the login form."""
    store = sessions(request)
    if store is not None:
        store.revoke(request.cookies.get(COOKIE_NAME))
    response = RedirectResponse(LOGIN_PATH, status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/ui", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
    return response
