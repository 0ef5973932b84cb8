"""A pytest plugin: every test that uses a server fixture carries that server's marker.

``pytest -m "not oceanbase"`` must run nothing that needs seekdb, so a test that takes
``seekdb_url`` (directly, through another fixture, or through
``request.getfixturevalue``) without ``@pytest.mark.oceanbase`` fails:

- before its set-up, when the fixture is in its static closure (the server is not
  started for it);
- at its teardown, when it asked for the fixture at run time (``request.fixturenames``
  lists fixtures requested dynamically too).

A parametrized fixture that reaches the server for one param carries the marker on that
param: ``pytest.param("oceanbase", marks=pytest.mark.oceanbase)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

__all__ = ["SERVER_FIXTURES", "missing_markers"]

#: server fixture -> the marker every test that uses it must carry
SERVER_FIXTURES: dict[str, str] = {"seekdb_url": "oceanbase"}


def missing_markers(item: pytest.Item, fixturenames: Iterable[str]) -> list[str]:
    """``fixture (needs @pytest.mark.<marker>)`` for each server fixture among
    ``fixturenames`` whose marker ``item`` lacks."""
    return [
        f"{name} (needs @pytest.mark.{marker})"
        for name, marker in SERVER_FIXTURES.items()
        if name in fixturenames and item.get_closest_marker(marker) is None
    ]


def _message(item: pytest.Item, missing: list[str]) -> str:
    return (f"{item.nodeid} uses the server fixture {', '.join(missing)}: mark the test "
            "(or the fixture's param) so that -m selects and deselects it")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = missing_markers(item, getattr(item, "fixturenames", ()))
    if missing:
        pytest.fail(_message(item, missing), pytrace=False)


@pytest.fixture(autouse=True)
def _server_fixtures_need_their_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    missing = missing_markers(request.node, request.fixturenames)
    if missing:
        pytest.fail(_message(request.node, missing), pytrace=False)
