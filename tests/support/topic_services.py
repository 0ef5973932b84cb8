"""Fresh Topic services for the processing tests, one database per call: the in-memory
backend, a SQLite file, or a fresh database on the session's seekdb server (closed
before it is dropped)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_service import TopicMemoryService

Factory = Callable[[], TopicMemoryService]


def service_factory(request: pytest.FixtureRequest, tmp_path: Any,
                    prefix: str) -> Iterator[Factory]:
    """Yield ``make()``, a fresh service per call for ``request.param`` (``memory``,
    ``sqlite`` or ``seekdb``; seekdb databases are named ``<prefix>_...``)."""
    made = iter(range(1_000))
    with contextlib.ExitStack() as stack:
        def make() -> TopicMemoryService:
            if request.param == "memory":
                return TopicMemoryService(InMemoryTopicBackend())
            if request.param == "sqlite":
                from powercontext.adapters.sqlite import SQLiteTopicBackend
                return TopicMemoryService(
                    SQLiteTopicBackend(str(tmp_path / f"t{next(made)}.db")))
            from oceanbase_server import fresh_database

            from powercontext.adapters.oceanbase import OceanBaseTopicBackend
            url = stack.enter_context(
                fresh_database(request.getfixturevalue("seekdb_url"), prefix))
            svc = TopicMemoryService(OceanBaseTopicBackend(url))
            stack.callback(lambda: asyncio.run(svc.close()))  # before the drop
            return svc
        yield make
