"""A TCP proxy for the lost-connection tests of the OceanBase adapter: it forwards a
MySQL client's connections to the server and, when armed, drops the *client* side of
the connection that sends a write transaction's ``COMMIT`` (the COMMIT is not
forwarded) while keeping the server side open, as a user's network does when a laptop
sleeps or a NAT forgets the flow. ``down`` refuses new connections (the network is
gone: they are closed at once)."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

__all__ = ["MySqlDropProxy"]

#: COM_QUERY packets a write transaction's opening statements start with (the adapter
#: sends ``SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION; ...``).
_WRITE_START = b"\x03SET TRANSACTION ISOLATION LEVEL READ COMMITTED"
_COMMIT = b"\x03COMMIT"


class MySqlDropProxy:
    """Listens on 127.0.0.1 (``port``) and forwards to ``(host, port)`` of the server.

    ``arm()``: the next write transaction's COMMIT, on any connection, is swallowed and
    that connection's client side closed; the server side stays open (kept in
    :attr:`orphans`) until :meth:`close`. ``arm("statement")``: the same at the write
    transaction's second statement (the first after the one that opened it).
    ``dropped`` is set once that happened; ``down_after_drop``: from then on new
    connections are closed at once, as ``down = True`` does."""

    def __init__(self, server: tuple[str, int]) -> None:
        self.server = server
        self.armed: str | None = None
        self.down = False
        self.down_after_drop = False
        self.dropped = threading.Event()
        self.orphans: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, at: str = "commit", *, down_after: bool = False) -> None:
        self.dropped.clear()
        self.down_after_drop = down_after
        self.armed = at

    def url(self, database: str) -> str:
        return f"oceanbase://root:@127.0.0.1:{self.port}/{database}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.server, timeout=30)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._to_server, args=(client, upstream),
                             daemon=True).start()
            threading.Thread(target=self._to_client, args=(upstream, client),
                             daemon=True).start()

    def _to_client(self, upstream: socket.socket, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                client.sendall(data)
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_WR)

    def _to_server(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer = b""
        in_write = False
        try:
            while data := client.recv(65536):
                buffer += data
                out = b""
                while len(buffer) >= 4:
                    length = int.from_bytes(buffer[:3], "little")
                    if len(buffer) < 4 + length:
                        break
                    packet, buffer = buffer[:4 + length], buffer[4 + length:]
                    payload = packet[4:]
                    opening = payload.startswith(_WRITE_START)
                    at = "commit" if payload == _COMMIT else "statement"
                    if in_write and not opening and payload[:1] == b"\x03" \
                            and self.armed == at:
                        self.armed = None
                        upstream.sendall(out)
                        self._drop_client(client, upstream)
                        return
                    if opening:
                        in_write = True
                    elif payload in (_COMMIT, b"\x03ROLLBACK"):
                        in_write = False
                    out += packet
                if out:
                    upstream.sendall(out)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)

    def _drop_client(self, client: socket.socket, upstream: socket.socket) -> None:
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)
        client.close()
        self.orphans.append(upstream)  # the server side stays open
        if self.down_after_drop:
            self.down = True
        self.dropped.set()

    def close(self) -> None:
        """Stop listening and close every socket, the kept server sides included."""
        self._closed = True
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # a FIN now, even under a recv
                with contextlib.suppress(OSError):
                    sock.close()

    def __enter__(self) -> MySqlDropProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
