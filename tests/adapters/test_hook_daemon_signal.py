"""The hook daemon's SIGTERM/SIGINT handler (``stop_on_signal``): while the daemon
serves, the handler stops the serve loop and returns instead of raising. A handler that
raised KeyboardInterrupt could have it land in a weakref callback or a finaliser, which
swallows it: the full suite once saw a daemon run on past SIGTERM that way ("Exception
ignored in: <function WeakSet.__init__.<locals>._remove>", then a timeout)."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import pytest

from powercontext.entrypoints.cli.hook_daemon_server import HookDaemon, stop_on_signal

pytestmark = pytest.mark.server  # binds the daemon's Unix socket


def test_the_handler_stops_a_serving_daemon_without_raising() -> None:
    with tempfile.TemporaryDirectory(prefix="pcsig-") as short:  # socket paths are short
        db = str(Path(short) / "m.db")
        daemon = HookDaemon(lambda: None, db, None, None)
        ready = threading.Event()
        loop = threading.Thread(target=daemon.serve, args=(ready.set,), daemon=True)
        loop.start()
        assert ready.wait(30)
        stop_on_signal(daemon)(15, None)  # what SIGTERM runs; raises nothing
        loop.join(30)
        assert not loop.is_alive() and not Path(daemon.path).exists()


def test_before_it_serves_the_handler_stops_at_once() -> None:
    with tempfile.TemporaryDirectory(prefix="pcsig-") as short:
        daemon = HookDaemon(lambda: None, str(Path(short) / "m.db"), None, None)
        with pytest.raises(KeyboardInterrupt):
            stop_on_signal(daemon)(15, None)
