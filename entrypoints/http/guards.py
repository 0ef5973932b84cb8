"""What the HTTP API checks before a route reads anything (pure ASGI middleware,
:class:`RequestGuard`; TOPIC-MEMORY.md, "Auth"):

- the bearer token, first: a request to a token-protected route (under the prefix of
  a router that depends on ``require_token``: ``/v1/topic-memory/``, ``/v1/memory/``,
  ``/v1/sources/``, ``/v1/context/``)
  without a valid token is refused with 401 before its body is read or parsed
  (FastAPI parses a route's body before its dependencies run, so bad JSON used to get
  422 from a client that was never authenticated);
- the body arrives within :data:`BODY_TIMEOUT_S` seconds of the request, else 408 (a
  client that sends headers and then trickles or withholds the body no longer holds a
  request open for good);
- every JSON response carries ``Cache-Control: no-store`` and
  ``X-Content-Type-Options: nosniff``, as the HTML pages do.

The route's own ``require_token`` dependency stays: it documents the scheme in OpenAPI
and checks again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.responses import JSONResponse
from starlette.requests import Request

from powercontext.entrypoints.http.deps import require_token
from powercontext.entrypoints.http.errors import ApiError, error_body

__all__ = ["BODY_TIMEOUT_S", "JSON_HEADERS", "RequestGuard"]

#: The longest a request's body may take to arrive, from the request's start (seconds).
BODY_TIMEOUT_S = 10.0
#: Added to every JSON response that does not set them itself.
JSON_HEADERS = ((b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"))


def _json_headers(message: dict[str, Any]) -> dict[str, Any]:
    headers = list(message.get("headers", ()))
    names = {bytes(name).lower() for name, _ in headers}
    content_type = next((bytes(v).lower() for n, v in headers
                         if bytes(n).lower() == b"content-type"), b"")
    if content_type.startswith(b"application/json") or content_type.endswith(b"+json"):
        headers += [(name, value) for name, value in JSON_HEADERS if name not in names]
        return {**message, "headers": headers}
    return message


async def _no_receive() -> Any:  # pragma: no cover - a JSONResponse never reads
    return {"type": "http.disconnect"}


class RequestGuard:
    """The checks of the module docstring, around the app (add it inside the body-size
    guard). ``token_prefixes``: the path prefixes of the routers whose routes need the
    token; ``body_timeout``: :data:`BODY_TIMEOUT_S` unless given."""

    def __init__(self, app: Any, token_prefixes: tuple[str, ...] = (),
                 body_timeout: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.token_prefixes = token_prefixes
        self.body_timeout = body_timeout

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        timed_out = False

        async def guarded_send(message: Any) -> None:
            nonlocal started
            if timed_out:
                return  # the 408 was sent: the app's own answer is dropped
            if message["type"] == "http.response.start":
                started = True
                message = _json_headers(message)
            await send(message)

        if scope.get("path", "").startswith(self.token_prefixes) and self.token_prefixes:
            try:
                await require_token(Request(scope))
            except ApiError as exc:
                await self._answer(guarded_send, exc.status, exc.code, exc.message,
                                   exc.headers)
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        body_done = False

        async def timed_receive() -> Any:
            nonlocal body_done, timed_out
            if body_done:  # after the body: a disconnect may take as long as it takes
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except TimeoutError:
                # answer 408 now and tell the app the client is gone (a route that reads
                # the body turns any exception into its own answer, which is dropped)
                if not started:
                    await self._answer(guarded_send, 408, "request_timeout",
                                       f"the request body did not arrive within "
                                       f"{self.body_timeout:g} s", {"Connection": "close"})
                timed_out = body_done = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, timed_receive, guarded_send)

    @staticmethod
    async def _answer(send: Any, status: int, code: str, message: str,
                      headers: dict[str, str]) -> None:
        response = JSONResponse(error_body(code, message), status_code=status, headers=headers)
        await response({"type": "http"}, _no_receive, send)
