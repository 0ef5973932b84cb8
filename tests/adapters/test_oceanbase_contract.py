"""The Memory contract kit and state machine (``powercontext.testing``) on
OceanBase: the same suite the SQLite backend and third parties run, against a real
seekdb server, each factory call on a fresh database (dropped at the end)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from oceanbase_server import seekdb_available

from powercontext.adapters.oceanbase import OceanBaseMemoryBackend
from powercontext.testing import MemoryBackendContract, state_machine_test

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
]

# The server of this module: the state machine's factory takes no fixtures.
_SERVER: dict[str, Any] = {}


@pytest.fixture(scope="module", autouse=True)
def contract_server(seekdb_url: str) -> Iterator[None]:
    import MySQLdb

    _SERVER["created"] = []
    for url in (seekdb_url,):
        _SERVER["url"] = url
        try:
            yield
        finally:
            p = urlsplit(url)
            conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                                   passwd=p.password or "")
            try:
                for name in _SERVER["created"]:
                    conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
            finally:
                conn.close()
                _SERVER.clear()


def fresh_backend(profile: Any = None) -> OceanBaseMemoryBackend:
    """A backend on a new database of this module's server (created on first connect)."""
    p = urlsplit(_SERVER["url"])
    name = f"pc_contract_{secrets.token_hex(4)}"
    _SERVER["created"].append(name)
    return OceanBaseMemoryBackend(urlunsplit((p.scheme, p.netloc, "/" + name, "", "")),
                                  profile=profile)


class TestOceanBaseContract(MemoryBackendContract):
    @pytest.fixture
    def memory_backend_factory(self):
        return fresh_backend


TestOceanBaseStateMachine = state_machine_test(fresh_backend, max_examples=4,
                                               stateful_step_count=15)
