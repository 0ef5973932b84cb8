"""A pytest plugin: a test that starts a process or listens on a socket says so with a
marker, so ``make test-fast`` (``-m "not (oceanbase or browser or subprocess or server
or slow)"``) runs nothing that needs a server, a subprocess or a browser.

While a test runs (its set-up, call and teardown), an audit hook
(:func:`sys.addaudithook`) notes every process started (``subprocess.Popen``,
``os.fork``, ``os.posix_spawn``, ``os.exec*``, ``os.system``; asyncio's and Playwright's
subprocesses go through ``subprocess.Popen``) and every socket bound (``socket.bind``: a
server listening, or a free port probed for a child's server), and a wrapper of
:meth:`multiprocessing.process.BaseProcess.start` notes every multiprocessing child (a
``spawn`` or ``forkserver`` start raises no audit event of its own; the Supervisor's
Workers are such children). A test that started a process without
``@pytest.mark.subprocess``, or bound a socket without ``@pytest.mark.server`` (or
``subprocess``), fails at its teardown, naming what it did and the marker to add.

``oceanbase`` and ``browser`` imply ``subprocess`` and ``server`` (added at collection):
their servers are processes. A process started by a thread outside any test is nobody's.
``platform.processor()`` runs ``uname -p`` once per process (the OpenAI and Anthropic SDKs
ask for it on their first client): it is asked here, at import, so that no test is
charged with it.
"""

from __future__ import annotations

import multiprocessing.process
import platform
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["IMPLIED", "PROCESS_EVENTS", "Recorder", "add_implied_markers", "problems"]

#: audit events that start a process
PROCESS_EVENTS = frozenset({
    "subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn",
    "os.system", "os.startfile",
})
#: markers that imply others (their fixtures start a server process)
IMPLIED: dict[str, tuple[str, ...]] = {
    "oceanbase": ("subprocess", "server"),
    "browser": ("subprocess", "server"),
}


class Recorder:
    """What the running test (``current``, a node id) started: ``(kind, detail)`` pairs,
    ``kind`` ``process`` or ``bind``, at most a few per test."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.seen: dict[str, list[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def note(self, kind: str, detail: str) -> None:
        node = self.current
        if node is None:
            return
        with self._lock:
            events = self.seen.setdefault(node, [])
            if len(events) < 8 and (kind, detail) not in events:
                events.append((kind, detail))

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event in PROCESS_EVENTS:
            detail = event
            if event == "subprocess.Popen" and len(args) > 1:
                argv = args[1]
                argv = [argv] if isinstance(argv, str | bytes) else list(argv or ())
                detail = f"{event} {' '.join(str(a) for a in argv[:3])}"
            self.note("process", detail)
        elif event == "socket.bind":
            self.note("bind", f"socket.bind {args[1]!r}")


def problems(markers: set[str], events: list[tuple[str, str]]) -> list[str]:
    """What ``events`` need that ``markers`` (with the implied ones) do not say."""
    kinds = {kind for kind, _ in events}
    out = []
    if "process" in kinds and "subprocess" not in markers:
        out.append("started a process: mark it @pytest.mark.subprocess")
    if "bind" in kinds and not markers & {"server", "subprocess"}:
        out.append("bound a socket: mark it @pytest.mark.server")
    return out


platform.processor()  # its one `uname -p`, before any test (see the module docstring)
RECORDER = Recorder()
sys.addaudithook(RECORDER.audit)
_start = multiprocessing.process.BaseProcess.start


def _recorded_start(self: multiprocessing.process.BaseProcess) -> None:
    RECORDER.note("process", f"multiprocessing {self.name}")
    _start(self)


multiprocessing.process.BaseProcess.start = _recorded_start  # type: ignore[method-assign]


def _markers(item: pytest.Item) -> set[str]:
    return {mark.name for mark in item.iter_markers()}


def add_implied_markers(items: list[pytest.Item]) -> None:
    """Give every item marked ``oceanbase`` or ``browser`` the markers they imply (the
    conftest's ``pytest_collection_modifyitems`` calls it). Under pytest-xdist
    (``--dist loadgroup``) every item also gets its worker group: the seekdb tests one
    group (one worker, one server), every other test its module's (module-scoped
    servers start once)."""
    xdist = bool(items) and items[0].config.pluginmanager.hasplugin("xdist")
    for item in items:
        names = _markers(item)
        for marker, implied in IMPLIED.items():
            if marker in names:
                for name in implied:
                    if name not in names:
                        item.add_marker(name)
        if xdist and "xdist_group" not in names:
            group = "seekdb" if "oceanbase" in names else item.nodeid.split("::", 1)[0]
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    outer = RECORDER.current  # an inner pytest run (pytester) nests inside a test
    RECORDER.current = item.nodeid
    try:
        yield
    finally:
        RECORDER.current = outer
        RECORDER.seen.pop(item.nodeid, None)


@pytest.fixture(autouse=True)
def _processes_and_servers_need_their_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    events = RECORDER.seen.get(request.node.nodeid, [])
    found = problems(_markers(request.node), events)
    if found:
        what = "; ".join(detail for _, detail in events)
        pytest.fail(f"{request.node.nodeid} {' and '.join(found)} ({what}); "
                    "`make test-fast` must run no process and no server", pytrace=False)
