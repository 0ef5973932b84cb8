"""The hook client's checks of the daemon socket that need no second user: only a Unix
socket of this user with mode 0600 (no symlink, no file) is trusted, and the peer's
user id is this process's for a socket this process listens on."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from powercontext.entrypoints.cli import hook_daemon as wire

pytestmark = pytest.mark.server  # listens on a Unix socket


@pytest.fixture
def listening(tmp_path_factory: pytest.TempPathFactory):
    path = Path(os.path.realpath(tmp_path_factory.mktemp("s"))) / "x.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    os.chmod(path, 0o600)
    yield path, server
    server.close()


def test_only_a_private_socket_of_this_user_is_trusted(listening) -> None:
    path, _server = listening
    assert wire.socket_trusted(str(path))
    for mode in (0o660, 0o606, 0o644, 0o700 | 0o010):
        os.chmod(path, mode)
        assert not wire.socket_trusted(str(path)), oct(mode)
    os.chmod(path, 0o600)
    link = path.with_name("link.sock")
    link.symlink_to(path)
    assert not wire.socket_trusted(str(link))
    plain = path.with_name("plain.sock")
    plain.write_text("")
    os.chmod(plain, 0o600)
    assert not wire.socket_trusted(str(plain))
    assert not wire.socket_trusted(str(path.with_name("missing.sock")))


def test_the_peer_of_our_own_listener_is_us(listening) -> None:
    path, _server = listening
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
        uid = wire.peer_uid(client)
    assert uid is None or uid == os.getuid()
    if hasattr(socket, "SO_PEERCRED"):
        assert uid == os.getuid()
