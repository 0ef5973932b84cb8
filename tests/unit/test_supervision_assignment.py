"""``TopicProcessor.process_assignment`` (Topic Memory RFC, "In-memory queue and
Workers", "Pending dirty set", "Automatic scheduling"): one Window per assignment, its
term fencing every call, and the Pending update by mode -- explicit handles the
claimed flush generation with the Window reaching the target, auto and catch-up leave
Pending in place. On the in-memory backend and a real SQLite file."""

from __future__ import annotations

import asyncio

import pytest

from powercontext import make_source
from powercontext.adapters.topic_generation.deterministic import DeterministicTopicModel
from powercontext.core.errors import TopicProcessingError
from powercontext.core.topic.processing import BINDING, ProcessingSettings
from powercontext.core.topic.supervision import CODE_TERM_LOST, WorkAssignment
from powercontext.testing import InMemoryTopicBackend
from powercontext.topic_processing import TopicProcessor
from powercontext.topic_service import TopicMemoryService

SCOPE = "repo:/demo"


@pytest.fixture(params=["memory", "sqlite"])
def make(request, tmp_path):
    def make() -> TopicMemoryService:
        if request.param == "memory":
            return TopicMemoryService(InMemoryTopicBackend())
        from powercontext.adapters.sqlite import SQLiteTopicBackend
        return TopicMemoryService(SQLiteTopicBackend(str(tmp_path / "a.db")))
    return make


def _sources(n: int) -> list:
    return [make_source(f"src_a_{i}", "chat_turn", f"user: the release train leaves at {i}")
            for i in range(n)]


def _processor(svc: TopicMemoryService, window_limit: int = 10) -> TopicProcessor:
    return TopicProcessor(svc, DeterministicTopicModel(),
                          ProcessingSettings(window_limit=window_limit))


def _assign(term, after: int, target: int, mode: str, claimed: int | None = None):
    return WorkAssignment(BINDING, SCOPE, after, target, mode, term, "w-test",  # type: ignore[arg-type]
                          claimed_flush_generation=claimed)


def test_explicit_mode_handles_the_flush_only_with_the_window_reaching_the_target(make):
    async def body() -> None:
        async with make() as svc:
            await svc.add_sources(SCOPE, _sources(3))
            assert await svc.flush(SCOPE) == "accepted"
            term = await svc.backend.acquire_lease("0b0c8e8e-0000-4000-8000-000000000001",
                                                   None)
            p = _processor(svc, window_limit=2)
            first = await p.process_assignment(_assign(term, 0, 3, "explicit", 1))
            assert first is not None and first.through == 2
            (st,) = await svc.status(SCOPE)
            assert st.cursor == 2 and st.pending.handled_flush_generation == 0
            last = await p.process_assignment(_assign(term, 2, 3, "explicit", 1))
            assert last is not None and last.through == 3
            (st,) = await svc.status(SCOPE)
            assert (st.cursor, st.pending, st.budget) == (3, None, None)

    asyncio.run(body())


@pytest.mark.parametrize("mode", ["auto", "catchup"])
def test_auto_and_catchup_advance_the_cursor_and_leave_pending(make, mode):
    async def body() -> None:
        async with make() as svc:
            await svc.add_sources(SCOPE, _sources(2))
            term = await svc.backend.acquire_lease("0b0c8e8e-0000-4000-8000-000000000002",
                                                   None)
            out = await _processor(svc).process_assignment(_assign(term, 0, 2, mode))
            assert out is not None and out.through == 2 and out.created
            (st,) = await svc.status(SCOPE)
            assert st.cursor == 2 and st.pending is not None  # the wave's cleanup deletes it
            assert st.pending.source_through == 2 and st.budget is None

    asyncio.run(body())


def test_a_stale_term_is_a_control_signal_and_writes_nothing(make):
    async def body() -> None:
        async with make() as svc:
            await svc.add_sources(SCOPE, _sources(2))
            assert await svc.flush(SCOPE) == "accepted"
            old = await svc.backend.acquire_lease("0b0c8e8e-0000-4000-8000-000000000003",
                                                  None)
            new = await svc.backend.acquire_lease("0b0c8e8e-0000-4000-8000-000000000004",
                                                  None)
            assert new.generation == old.generation + 1
            with pytest.raises(TopicProcessingError) as info:
                await _processor(svc).process_assignment(_assign(old, 0, 2, "explicit", 1))
            assert info.value.code == CODE_TERM_LOST and not info.value.terminal
            (st,) = await svc.status(SCOPE)
            assert (st.cursor, st.budget) == (0, None)  # no attempt was admitted
            assert st.pending.handled_flush_generation == 0
            assert not await svc.backend.heads(SCOPE)

    asyncio.run(body())


class _TakeoverModel:
    """Answers deterministically, but a new Supervisor takes the lease during the
    call of stage ``at``: every later fenced call of the Window (the next reservation,
    or with ``evolve``, the last call, the publication) carries a superseded term."""

    def __init__(self, backend, at: str) -> None:
        self._at = at
        self._inner = DeterministicTopicModel()
        self._backend = backend
        self.name = self._inner.name
        self.context_window_tokens = self._inner.context_window_tokens
        self.max_requests = self._inner.max_requests

    async def generate(self, request):
        if request.stage == self._at:
            await self._backend.acquire_lease("0b0c8e8e-0000-4000-8000-00000000000f", None)
        return await self._inner.generate(request)


@pytest.mark.parametrize("at", ["probe", "evolve"])  # refused at a reservation / publish
def test_a_term_lost_mid_window_rolls_the_window_back_as_a_control_signal(make, at):
    async def body() -> None:
        async with make() as svc:
            await svc.add_sources(SCOPE, _sources(2))
            assert await svc.flush(SCOPE) == "accepted"
            term = await svc.backend.acquire_lease("0b0c8e8e-0000-4000-8000-000000000005",
                                                   None)
            p = TopicProcessor(svc, _TakeoverModel(svc.backend, at))
            with pytest.raises(TopicProcessingError) as info:
                await p.process_assignment(_assign(term, 0, 2, "explicit", 1))
            assert info.value.code == CODE_TERM_LOST and not info.value.terminal
            (st,) = await svc.status(SCOPE)
            assert st.cursor == 0 and st.pending.handled_flush_generation == 0
            assert not await svc.backend.heads(SCOPE)

    asyncio.run(body())
