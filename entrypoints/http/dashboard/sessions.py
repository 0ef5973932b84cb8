"""The dashboard's login sessions and the throttle on failed logins (TOPIC-MEMORY.md,
"Auth"; docs/security.md, "Dashboard sessions").

A session is the ``pc_session`` cookie: a random session id and the time it was issued,
signed by :mod:`itsdangerous` (``URLSafeTimedSerializer`` with HMAC-SHA256) under a key
derived from the server's bearer token, so it cannot
be forged, never contains the token, and a new token ends every session. It is valid
for :attr:`SessionStore.lifetime` seconds from the login (default
:data:`DEFAULT_LIFETIME`, ``server.session_lifetime_seconds``), the browser keeps it
that long too (``Max-Age``), and logout revokes it on the server: the id is refused
until the cookie would have expired anyway, so a copy of the cookie taken before the
logout is refused as well. Revocations live in the serving process (bounded by
:data:`MAX_REVOKED`; a restart forgets them, the lifetime still holds).

:class:`LoginThrottle` refuses a client's login attempts for a while after
:data:`MAX_FAILURES` failures within :data:`FAILURE_WINDOW` seconds (429 with
``Retry-After``); it remembers at most :data:`MAX_CLIENTS` clients.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from itsdangerous import BadSignature, TimestampSigner, URLSafeTimedSerializer

__all__ = ["DEFAULT_LIFETIME", "FAILURE_WINDOW", "MAX_CLIENTS", "MAX_FAILURES", "MAX_REVOKED",
           "LoginThrottle", "SessionStore"]

#: How long a login lasts, seconds (8 hours: a working day).
DEFAULT_LIFETIME = 8 * 3600
#: Revoked session ids remembered at most (each until its cookie would have expired).
MAX_REVOKED = 10_000
#: Failed logins of one client allowed within :data:`FAILURE_WINDOW` seconds.
MAX_FAILURES = 5
FAILURE_WINDOW = 60.0
#: Clients whose failures are remembered at most (the least recently seen go first).
MAX_CLIENTS = 4096

_SALT = "powercontext dashboard session v2"
Clock = Callable[[], float]


class SessionStore:
    """Issue, check and revoke dashboard sessions of one server token (module
    docstring). ``lifetime``: seconds, at least 1; ``clock``: seconds since the epoch
    (``time.time``; tests pass their own). Thread-safe."""

    def __init__(self, token: str, lifetime: float = DEFAULT_LIFETIME,
                 clock: Clock = time.time) -> None:
        if lifetime < 1:
            raise ValueError(f"a session lifetime is at least 1 second, not {lifetime}")
        self.lifetime = int(lifetime)
        self._clock = clock

        class _Signer(TimestampSigner):
            def get_timestamp(self) -> int:
                return int(clock())

        key = hmac.new(token.encode("utf-8"), _SALT.encode("ascii"), hashlib.sha256).digest()
        self._serializer = URLSafeTimedSerializer(
            key, salt=_SALT, signer=_Signer, signer_kwargs={"digest_method": hashlib.sha256})
        self._revoked: dict[str, float] = {}
        self._lock = threading.Lock()

    def issue(self) -> str:
        """A new session cookie value (a fresh random id, signed with the time now)."""
        return str(self._serializer.dumps({"sid": secrets.token_urlsafe(18)}))

    def _open(self, value: str | None) -> tuple[str, float] | None:
        """``(session id, issued at)`` of a well-signed, unexpired cookie value."""
        if not value or len(value) > 512:
            return None
        try:
            data, issued = self._serializer.loads(value, max_age=self.lifetime,
                                                  return_timestamp=True)
        except BadSignature:  # SignatureExpired is one too
            return None
        sid = data.get("sid") if isinstance(data, dict) else None
        if not isinstance(sid, str):
            return None
        return sid, issued.timestamp()

    def valid(self, value: str | None) -> bool:
        """True when ``value`` is a cookie :meth:`issue` made, within its lifetime and
        not revoked."""
        opened = self._open(value)
        if opened is None:
            return False
        with self._lock:
            return opened[0] not in self._revoked

    def revoke(self, value: str | None) -> None:
        """End the session of cookie ``value`` (nothing for an invalid one)."""
        opened = self._open(value)
        if opened is None:
            return
        sid, issued = opened
        now = self._clock()
        with self._lock:
            self._revoked[sid] = issued + self.lifetime + 1
            if len(self._revoked) > MAX_REVOKED:
                for old in [s for s, until in self._revoked.items() if until <= now]:
                    del self._revoked[old]
            while len(self._revoked) > MAX_REVOKED:  # the soonest to expire goes first
                del self._revoked[min(self._revoked, key=self._revoked.__getitem__)]

    @property
    def revoked(self) -> int:
        """How many revoked ids are remembered."""
        return len(self._revoked)


class LoginThrottle:
    """Failed logins per client (module docstring): :meth:`wait` is how many seconds
    ``client`` must wait before its next attempt (0: it may try now), :meth:`failed`
    records a failure, :meth:`succeeded` forgets the client. ``clock``: monotonic
    seconds. Thread-safe."""

    def __init__(self, max_failures: int = MAX_FAILURES, window: float = FAILURE_WINDOW,
                 max_clients: int = MAX_CLIENTS, clock: Clock = time.monotonic) -> None:
        self.max_failures, self.window, self.max_clients = max_failures, window, max_clients
        self._clock = clock
        self._failures: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> list[float]:
        times = [t for t in self._failures.get(client, ()) if now - t < self.window]
        if times:
            self._failures[client] = times
            self._failures.move_to_end(client)
        else:
            self._failures.pop(client, None)
        return times

    def wait(self, client: str) -> float:
        """Seconds until ``client`` may try again (0.0 when it may now)."""
        now = self._clock()
        with self._lock:
            times = self._recent(client, now)
            if len(times) < self.max_failures:
                return 0.0
            return max(0.0, times[-self.max_failures] + self.window - now)

    def failed(self, client: str) -> None:
        """Record a failed login of ``client``."""
        now = self._clock()
        with self._lock:
            times = self._recent(client, now)
            self._failures[client] = [*times[-(self.max_failures - 1):], now] \
                if self.max_failures > 1 else [now]
            self._failures.move_to_end(client)
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        """Forget ``client``'s failures."""
        with self._lock:
            self._failures.pop(client, None)

    def __len__(self) -> int:
        return len(self._failures)

    def state(self) -> dict[str, Any]:
        """The remembered clients and their failure times (for tests)."""
        with self._lock:
            return {k: list(v) for k, v in self._failures.items()}
