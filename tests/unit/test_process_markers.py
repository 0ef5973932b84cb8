"""The lane markers' rule (tests/support/process_markers.py): a test that starts a
process needs ``subprocess``, one that binds a socket ``server`` (or ``subprocess``);
``oceanbase`` and ``browser`` imply both. The rule on synthetic audit events, then on an
inner pytest run whose tests really start a process, fork a multiprocessing child and
bind a socket."""

from __future__ import annotations

import pytest
from support.process_markers import PROCESS_EVENTS, Recorder, problems

pytest_plugins = ["pytester"]


def test_the_rule_names_the_missing_marker() -> None:
    process, bind = [("process", "os.fork")], [("bind", "socket.bind ('127.0.0.1', 0)")]
    assert problems(set(), []) == []
    assert problems(set(), process) == ["started a process: mark it @pytest.mark.subprocess"]
    assert problems({"server"}, process) == [
        "started a process: mark it @pytest.mark.subprocess"]
    assert problems({"subprocess"}, process + bind) == []
    assert problems(set(), bind) == ["bound a socket: mark it @pytest.mark.server"]
    assert problems({"server"}, bind) == []
    assert len(problems({"slow"}, process + bind)) == 2


def test_the_recorder_notes_what_the_running_test_starts() -> None:
    recorder = Recorder()
    recorder.audit("subprocess.Popen", ("git", ["git", "-C", "/r", "log"], None, None))
    assert recorder.seen == {}  # no test is running
    recorder.current = "t::a"
    recorder.audit("subprocess.Popen", ("git", ["git", "-C", "/r", "log"], None, None))
    recorder.audit("socket.bind", (object(), ("127.0.0.1", 0)))
    recorder.audit("open", ("/etc/hosts", "r", 0))  # not watched
    for event in sorted(PROCESS_EVENTS - {"subprocess.Popen"}):
        recorder.audit(event, ())
    events = recorder.seen["t::a"]
    assert events[:2] == [("process", "subprocess.Popen git -C /r"),
                          ("bind", "socket.bind ('127.0.0.1', 0)")]
    assert len(events) == 8  # bounded per test


CONFTEST = '''
from support.process_markers import (
    _processes_and_servers_need_their_marker, add_implied_markers, pytest_runtest_protocol)


def pytest_configure(config):
    for name in ("subprocess", "server", "oceanbase", "browser"):
        config.addinivalue_line("markers", f"{name}: lane marker")


def pytest_collection_modifyitems(config, items):
    add_implied_markers(items)
'''

TESTS = '''
import multiprocessing
import socket
import subprocess

import pytest


def _run():
    subprocess.run(["true"], check=True)


def _bind():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))


def _fork():
    child = multiprocessing.get_context("fork").Process(target=int)
    child.start()
    child.join()


def test_nothing():
    pass


def test_unmarked_process():
    _run()


@pytest.mark.subprocess
def test_marked_process():
    _run()


def test_unmarked_child():
    _fork()


def test_unmarked_bind():
    _bind()


@pytest.mark.server
def test_server_bind():
    _bind()


@pytest.mark.subprocess
def test_subprocess_bind():
    _bind()


@pytest.mark.oceanbase
def test_oceanbase_implies_both():
    _run()
    _bind()


@pytest.fixture
def started():
    _run()


def test_unmarked_fixture_process(started):
    pass
'''


@pytest.mark.subprocess
def test_an_inner_run_fails_exactly_the_unmarked_tests(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    failed = sorted(r.nodeid.split("::")[1] for r in
                    result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
                    if r.failed)
    assert failed == ["test_unmarked_bind", "test_unmarked_child",
                      "test_unmarked_fixture_process", "test_unmarked_process"]
    result.stdout.fnmatch_lines([
        "*test_unmarked_process started a process: mark it @pytest.mark.subprocess "
        "(subprocess.Popen true)*",
        "*test_unmarked_child started a process*(multiprocessing *",
        "*test_unmarked_bind bound a socket: mark it @pytest.mark.server*"])
