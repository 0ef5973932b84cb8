"""Which ``Host`` a server answers (DNS rebinding): the loopback names, the address it
is bound to and the names its operator lists; any other ``Host`` gets 421.

A page on ``http://evil.example:8765`` whose name was rebound to 127.0.0.1 reaches a
server on loopback with ``Host: evil.example:8765``, and from the browser's point of
view it is same-origin with itself: the Host header is the one thing that tells such a
request from the server's own pages. ``powercontext serve`` (every route: the API, the
dashboard, ``/v1/health``, ``/openapi.json``) and ``powercontext mcp --transport http``
check it before anything else runs.

Accepted, compared without the port and case-insensitively:

- ``localhost`` and every loopback address (``127.0.0.0/8``, ``::1``);
- the bound host (``server.host`` / ``--host``) when it is a name or an address;
  a wildcard bind (``0.0.0.0``, ``::``) accepts any IP address (a rebinding page always
  sends a name) and this machine's host name;
- the names listed in ``server.allowed_hosts`` / ``--allow-host`` (a reverse proxy's
  public name); ``*`` turns the check off (the proxy checks ``Host`` itself).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import attrs

__all__ = ["WILDCARD_BINDS", "HostGuard", "HostPolicy", "host_name"]

#: Bind addresses that listen on every interface.
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})


def host_name(header: str | None) -> str | None:
    """The host of a ``Host`` header value (lowercased, IPv6 brackets and port
    removed), or None when the value is missing or malformed."""
    if not header or any(c in header for c in "/?#@\\ \t") or header.strip() != header:
        return None
    try:
        parts = urlsplit("//" + header)
        _ = parts.port  # ValueError for a bad port
    except ValueError:
        return None
    name = parts.hostname
    return name or None


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@attrs.frozen
class HostPolicy:
    """The ``Host`` values a server accepts (module docstring). ``names``: exact host
    names and addresses, lowercased; ``any_ip``: every IP address (a wildcard bind);
    ``any_host``: no check at all (``*`` listed)."""

    names: frozenset[str] = frozenset({"localhost"})
    any_ip: bool = False
    any_host: bool = False

    @classmethod
    def for_bind(cls, host: str, extra: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound to ``host`` with the operator's ``extra`` names
        (``*``: accept any Host). ValueError for an extra entry that is no host name."""
        names = {"localhost"}
        bound = host.strip().strip("[]").lower()
        any_ip = bound in WILDCARD_BINDS
        if any_ip:
            names.add(socket.gethostname().lower())
        elif bound:
            names.add(bound)
        any_host = False
        for raw in extra:
            entry = raw.strip().lower()
            if entry == "*":
                any_host = True
                continue
            name = host_name(entry)
            if name is None or name != entry.strip("[]"):
                raise ValueError(f"{raw!r} is not a host name or address (no port, "
                                 "scheme or path)")
            names.add(name)
        return cls(frozenset(names), any_ip, any_host)

    def allows(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header value is answered."""
        if self.any_host:
            return True
        name = host_name(header)
        if name is None:
            return False
        if name in self.names:
            return True
        address = _ip(name)
        return address is not None and (address.is_loopback or self.any_ip)


_REFUSAL = json.dumps({"error": {
    "code": "misdirected_request",
    "message": "this server does not answer for that Host: it answers for its loopback "
               "names, its bound address and the names in server.allowed_hosts "
               "(--allow-host)",
    "field": "host"}}).encode("utf-8")


class HostGuard:
    """Pure ASGI middleware: 421 ``misdirected_request`` (a JSON error body) for an
    HTTP or WebSocket request whose ``Host`` the ``policy`` refuses; anything else
    passes through untouched (lifespan events included)."""

    def __init__(self, app: Any, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [v for k, v in scope.get("headers", ()) if k == b"host"]
        header = hosts[0].decode("latin-1") if len(hosts) == 1 else None
        if self.policy.allows(header):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 421, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_REFUSAL)).encode("ascii")),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
        ]})
        await send({"type": "http.response.body", "body": _REFUSAL})
