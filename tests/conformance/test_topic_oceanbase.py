"""The Topic contract kit and state machine on OceanBase (``OceanBaseTopicBackend``)
against a real seekdb server, as ``tests/adapters/test_oceanbase_contract.py`` runs the
Memory kit: each factory call is a new database (dropped at the end of the module), and
``topic_backend_reopen`` connects to the same database again with another profile."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from oceanbase_server import seekdb_available
from support.topic_faults import with_publication_faults

from powercontext.adapters.embedding.deterministic import DeterministicEmbedding
from powercontext.testing import TopicBackendContract, topic_state_machine_test

try:
    from powercontext.adapters.oceanbase import OceanBaseTopicBackend
except ImportError:  # the OceanBase Topic backend is not merged into this tree yet
    OceanBaseTopicBackend = None

# Under CI=true a missing server or backend fails (no Topic test is skipped there).
_CI = os.environ.get("CI") == "true"
pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(not seekdb_available(), reason="needs pylibseekdb or "
                       "POWERCONTEXT_TEST_OCEANBASE_URL"),
    pytest.mark.skipif(OceanBaseTopicBackend is None and not _CI,
                       reason="powercontext.adapters.oceanbase.OceanBaseTopicBackend is "
                       "not in this tree"),
]

# The server of this module: the state machine's factory takes no fixtures.
_SERVER: dict[str, Any] = {}
_URLS: dict[int, str] = {}


@pytest.fixture(scope="module", autouse=True)
def topic_contract_server(seekdb_url: str) -> Iterator[None]:
    import MySQLdb

    _SERVER["created"] = []
    _SERVER["url"] = seekdb_url
    try:
        yield
    finally:
        p = urlsplit(seekdb_url)
        conn = MySQLdb.connect(host=p.hostname, port=p.port, user=p.username or "root",
                               passwd=p.password or "")
        try:
            for name in _SERVER["created"]:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            conn.close()
            _SERVER.clear()


_Faulty = (with_publication_faults(OceanBaseTopicBackend)
           if OceanBaseTopicBackend is not None else None)


def _open(url: str, profile: Any) -> Any:
    assert _Faulty is not None, "OceanBaseTopicBackend is not in this tree"
    backend = _Faulty(url, profile=profile)
    _URLS[id(backend)] = url
    return backend


def fresh_backend(profile: Any = None) -> Any:
    """A Topic backend on a new database of this module's server."""
    p = urlsplit(_SERVER["url"])
    name = f"pc_topic_contract_{secrets.token_hex(4)}"
    _SERVER["created"].append(name)
    return _open(urlunsplit((p.scheme, p.netloc, "/" + name, "", "")), profile)


class TestOceanBaseTopicContract(TopicBackendContract):
    @pytest.fixture
    def topic_backend_factory(self):
        return fresh_backend

    @pytest.fixture
    def topic_backend_reopen(self):
        return lambda backend, profile: _open(_URLS[id(backend)], profile)


TestOceanBaseTopicStateMachine = topic_state_machine_test(
    fresh_backend, max_examples=4, stateful_step_count=12)
TestOceanBaseHybridTopicStateMachine = topic_state_machine_test(
    fresh_backend, embedding_model=DeterministicEmbedding(dimension=64), max_examples=3,
    stateful_step_count=12)
