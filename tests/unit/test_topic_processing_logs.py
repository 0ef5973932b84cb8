"""What processing logs say (Topic Memory RFC, "Retry and observability": logs name the
binding, Scope, Window range, stage and error code): a complexity rejection names the
rejected Source's position as the Window's end (it logged the empty Window ``(0, 0]``),
the budget row records it, and each structured field appears once on a line (the
message said ``scope 'p:x' (0, 0] stage window error_code ...`` and the formatter
appended the same fields again)."""

from __future__ import annotations

import asyncio
import logging

from powercontext import make_source
from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.topic.processing import CODE_COMPLEXITY
from powercontext.entrypoints.topic_worker import StructuredFormatter
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_service import TopicMemoryService


def test_a_complexity_rejection_logs_and_records_the_sources_position(caplog) -> None:
    async def body() -> None:
        svc = TopicMemoryService(InMemoryTopicBackend())
        big = {f"k{i}": "v" for i in range(70_000)}
        await svc.add_sources("p:x", [
            make_source("src_a", "chat_turn", "user: deploys go out on Tuesdays"),
            make_source("src_big", "note", "a table", metadata=big)])
        with caplog.at_level(logging.INFO, logger="powercontext.topic"):
            report = await TopicProcessor(svc, DeterministicTopicModel()).process("p:x")
        assert report.stopped == CODE_COMPLEXITY and report.status.cursor == 1
        assert report.status.budget is not None
        assert report.status.budget.furthest_through == 2  # the rejected Source
        (failed,) = [r for r in caplog.records if getattr(r, "error_code", None)]
        assert (failed.window_after, failed.window_through) == (1, 2)  # type: ignore[attr-defined]
        for record in caplog.records:
            line = StructuredFormatter().format(record)
            names = [w.partition("=")[0] for w in line.split() if "=" in w]
            assert len(names) == len(set(names)), line
            assert "(0, 0]" not in line and "scope 'p:x'" not in line

    asyncio.run(body())
