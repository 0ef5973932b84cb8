"""Suite-wide test configuration: Hypothesis profiles and server markers.

Profiles (STYLE.md): ``dev`` for the edit loop (few examples), ``ci`` for `.ci/run`
(more examples, derandomized so a run is reproducible, failing examples printed as
``@reproduce_failure`` blobs). ``HYPOTHESIS_PROFILE`` picks one; the Makefile sets it
(``ci`` when CI=true). Async code is tested with plain ``asyncio.run(...)``; we do not
use pytest-asyncio. Shared helpers and fakes live in ``tests/support`` (importable as
``support``: pyproject puts ``tests`` on ``pythonpath``).

Server markers: a test that uses the seekdb server (fixture ``seekdb_url``) must carry
``@pytest.mark.oceanbase`` (enforced by :mod:`support.server_markers`), and every test so
marked is skipped when no server can be had (no ``pylibseekdb`` and no
``$POWERCONTEXT_TEST_OCEANBASE_URL``), except under ``CI=true``, where they run and fail.

Lane markers: a test that starts a process carries ``@pytest.mark.subprocess``, one that
listens on a socket ``@pytest.mark.server`` (enforced by :mod:`support.process_markers`;
``oceanbase`` and ``browser`` imply both), one that takes more than about 5 s ``slow``:
``make test-fast`` deselects them all (docs/testing.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# the enforcement hooks, imported so pytest finds them here
from support.process_markers import (  # noqa: F401
    _processes_and_servers_need_their_marker,
    add_implied_markers,
    pytest_runtest_protocol,
)
from support.server_markers import (  # noqa: F401
    _server_fixtures_need_their_marker,
    pytest_runtest_setup,
)

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    print_blob=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def seekdb_url() -> Iterator[str]:
    """One seekdb server for the whole session (or $POWERCONTEXT_TEST_OCEANBASE_URL),
    stopped by its process id at the end; each module takes fresh databases on it."""
    from oceanbase_server import seekdb_server

    with seekdb_server() as url:
        yield url


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    add_implied_markers(items)
    if not any(item.get_closest_marker("oceanbase") for item in items):
        return
    from oceanbase_server import seekdb_available

    if seekdb_available() or os.environ.get("CI") == "true":
        return  # under CI a missing server fails its tests: it never passes silently
    skip = pytest.mark.skip(reason="needs pylibseekdb or POWERCONTEXT_TEST_OCEANBASE_URL")
    for item in items:
        if item.get_closest_marker("oceanbase"):
            item.add_marker(skip)
