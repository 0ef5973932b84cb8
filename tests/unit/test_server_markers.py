"""The server-marker rule (tests/support/server_markers.py) on an inner pytest run: a
test that uses the seekdb fixture without ``@pytest.mark.oceanbase`` fails, whether it
takes the fixture as an argument, through a parametrized fixture's param, or through
``request.getfixturevalue``; marked tests and tests without a server pass."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = '''
import pytest
from support.server_markers import _server_fixtures_need_their_marker, pytest_runtest_setup

STARTED = []


def pytest_configure(config):
    config.addinivalue_line("markers", "oceanbase: needs the server")


@pytest.fixture(scope="session")
def seekdb_url():
    STARTED.append("server")  # stands in for starting seekdb
    return "oceanbase://root:@127.0.0.1:1/"


@pytest.fixture(params=["sqlite", pytest.param("oceanbase", marks=pytest.mark.oceanbase)])
def engine(request):
    return request.getfixturevalue("seekdb_url") if request.param == "oceanbase" else "x"


@pytest.fixture(params=["sqlite", "oceanbase"])
def unmarked_engine(request):
    return request.getfixturevalue("seekdb_url") if request.param == "oceanbase" else "x"
'''

TESTS = '''
import pytest
from conftest import STARTED


def test_unmarked_argument(seekdb_url):
    assert seekdb_url


def test_the_server_was_not_started_for_the_unmarked_test():
    assert STARTED == []


def test_no_server():
    assert True


@pytest.mark.oceanbase
def test_marked(seekdb_url):
    assert seekdb_url


def test_unmarked_dynamic(request):
    assert request.getfixturevalue("seekdb_url")


def test_marked_param(engine):
    assert engine


def test_unmarked_param(unmarked_engine):
    assert unmarked_engine
'''


def test_a_server_fixture_without_its_marker_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    outcomes = {r.nodeid.split("::")[1]: r.outcome for r in
                result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
                if r.outcome != "passed" or r.when == "call"}
    assert outcomes == {
        "test_no_server": "passed",
        "test_marked": "passed",
        "test_unmarked_argument": "failed",  # at set-up: the server is not started for it
        "test_unmarked_dynamic": "failed",  # at teardown: it asked at run time
        "test_marked_param[sqlite]": "passed",
        "test_marked_param[oceanbase]": "passed",
        "test_unmarked_param[sqlite]": "passed",
        "test_unmarked_param[oceanbase]": "failed",
        "test_the_server_was_not_started_for_the_unmarked_test": "passed",
    }
    result.stdout.fnmatch_lines(
        ["*test_unmarked_argument uses the server fixture seekdb_url (needs "
         "@pytest.mark.oceanbase)*"])
