"""``powercontext mcp --transport http``: the MCP server's streamable HTTP app behind
the same two checks as ``powercontext serve``.

- ``Host``: the loopback names, the bound address and the names given with
  ``--allow-host`` / ``server.allowed_hosts``; anything else gets 421 (DNS rebinding;
  :mod:`powercontext.entrypoints.http.hosts`). An ``Origin`` header, when a browser sends
  one, must name an answered host too (403 otherwise).
- the bearer token: with ``server.api_token`` or ``$POWERCONTEXT_API_TOKEN`` set, every
  request needs ``Authorization: Bearer <token>`` (401 with ``WWW-Authenticate:
  Bearer`` otherwise, compared in constant time). Without one, the command binds only
  a loopback host (the caller refuses any other before this module runs).
"""

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import urlsplit

from powercontext.entrypoints.http.hosts import HostGuard, HostPolicy

__all__ = ["BearerGuard", "OriginGuard", "http_app", "serve_http"]


def _refuse(status: int, code: str, message: str,
            headers: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[dict[str, Any], ...]:
    body = json.dumps({"error": {"code": code, "message": message, "field": None}}
                      ).encode("utf-8")
    return ({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
        *headers]}, {"type": "http.response.body", "body": body})


def _header(scope: Any, name: bytes) -> str | None:
    """The one value of header ``name``; None when absent, ``""`` when repeated."""
    values = [v for k, v in scope.get("headers", ()) if k == name]
    if not values:
        return None
    return values[0].decode("latin-1") if len(values) == 1 else ""


class BearerGuard:
    """Pure ASGI middleware: 401 ``unauthorized`` for an HTTP request without
    ``Authorization: Bearer <token>`` (the token compared in constant time as UTF-8
    bytes); lifespan events pass through."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, _, given = (_header(scope, b"authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and given.strip() and hmac.compare_digest(
                given.strip().encode("latin-1"), self.token):
            await self.app(scope, receive, send)
            return
        for message in _refuse(401, "unauthorized", "this MCP server needs "
                               "'Authorization: Bearer <token>'",
                               ((b"www-authenticate", b"Bearer"),)):
            await send(message)


class OriginGuard:
    """Pure ASGI middleware: 403 ``forbidden_origin`` for an HTTP request whose
    ``Origin`` header names a host the ``policy`` does not answer (``null`` included);
    a request without Origin (not from a browser page) passes."""

    def __init__(self, app: Any, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        origin = _header(scope, b"origin") if scope["type"] == "http" else None
        if origin is not None:
            try:
                parts = urlsplit(origin)
                host = parts.netloc if parts.scheme in ("http", "https") else None
            except ValueError:
                host = None
            if not self.policy.allows(host):
                for message in _refuse(403, "forbidden_origin",
                                       "requests from another site's pages are refused"):
                    await send(message)
                return
        await self.app(scope, receive, send)


def http_app(server: Any, *, host: str, policy: HostPolicy, token: str | None) -> Any:
    """The ASGI app served: ``server``'s streamable HTTP app at ``/mcp`` (the SDK's own
    Host and Origin lists off: the guards here check them) inside the Origin, bearer
    and Host guards (outermost first: Host, Origin, bearer)."""
    from mcp.server.transport_security import TransportSecuritySettings

    app: Any = server.streamable_http_app(
        host=host, transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False))
    if token:
        app = BearerGuard(app, token)
    return HostGuard(OriginGuard(app, policy), policy)


def serve_http(server: Any, *, host: str, port: int, policy: HostPolicy,
               token: str | None, log_level: str) -> None:
    """Serve :func:`http_app` with uvicorn on ``host:port`` until Ctrl-C or SIGTERM."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(http_app(server, host=host, policy=policy, token=token),
                                  host=host, port=port, log_level=log_level.lower(),
                                  server_header=False)).run()
