"""The contract kit on a backend that implements ``ports.MemoryBackend`` and nothing else.

:class:`PortOnlyBackend` is not a DatabaseMemoryBackend: it delegates exactly the port's
methods (and its unit of work exactly ``commit`` and ``rollback``) to the kit's
in-memory backend, and hides everything else (rebuild, inventory, the ``_*_sync`` SPI).
Every contract test passes on it or skips, naming the capability it does not declare;
none may reach past the port.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from powercontext import ports
from powercontext.adapters.database import DatabaseMemoryBackend
from powercontext.core.analyzer import Analyzer
from powercontext.core.models import (
    ArtifactRef,
    EmbeddingProfile,
    EmbeddingVector,
    MemoryCapabilities,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemoryRevisionChanges,
    MemorySearchRequest,
    MemorySearchResult,
    Source,
)
from powercontext.core.plan import MemoryPlan
from powercontext.core.topic.processing import JournalEntry
from powercontext.testing import (
    InMemoryBackend,
    MemoryBackendContract,
    run,
    state_machine_test,
)


class PortOnlyUnitOfWork:
    """``ports.MemoryUnitOfWork``: commit and rollback, delegated."""

    def __init__(self, inner: ports.MemoryUnitOfWork) -> None:
        self.__inner = inner

    async def commit(
        self, plan: MemoryPlan, vectors: dict[str, EmbeddingVector] | None = None,
        *, key: str | None = None,
    ) -> ArtifactRef:
        return await self.__inner.commit(plan, vectors, key=key)

    async def rollback(self) -> None:
        await self.__inner.rollback()


class PortOnlyBackend:
    """``ports.MemoryBackend`` and nothing more (name-mangled delegate, no extras)."""

    def __init__(self, inner: ports.MemoryBackend) -> None:
        self.__inner = inner

    async def put_sources(self, sources: Sequence[Source]) -> tuple[int, ...]:
        return await self.__inner.put_sources(sources)

    async def get_sources(self, source_ids: Sequence[str]) -> tuple[Source, ...]:
        return await self.__inner.get_sources(source_ids)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[tuple[int, Source], ...]:
        return await self.__inner.journal(after, limit)

    async def put_scoped_sources(self, scope_id: str, sources: Sequence[Source], *,
                                 once_per_uri: bool = False) -> tuple[int, ...]:
        return await self.__inner.put_scoped_sources(scope_id, sources,
                                                     once_per_uri=once_per_uri)

    async def scope_position_of_uri(self, scope_id: str, uri: str) -> int | None:
        return await self.__inner.scope_position_of_uri(scope_id, uri)

    async def scope_journal(self, scope_id: str, after: int = 0,
                            limit: int = 100) -> tuple[JournalEntry, ...]:
        return await self.__inner.scope_journal(scope_id, after, limit)

    async def source_head(self, scope_id: str) -> int:
        return await self.__inner.source_head(scope_id)

    async def capabilities(self) -> MemoryCapabilities:
        return await self.__inner.capabilities()

    async def analyzer(self) -> Analyzer:
        return await self.__inner.analyzer()

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[ports.MemoryUnitOfWork]:
        async with self.__inner.begin() as uow:
            yield PortOnlyUnitOfWork(uow)

    async def head(self, artifact_id: str) -> ArtifactRef | None:
        return await self.__inner.head(artifact_id)

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        return await self.__inner.load_revision(ref)

    async def load_entry_versions(
        self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None
    ) -> dict[str, MemoryEntryVersion]:
        return await self.__inner.load_entry_versions(ref, entry_ids)

    async def changes(
        self, memory: ArtifactRef, since_revision: int | None
    ) -> tuple[MemoryRevisionChanges, ...]:
        return await self.__inner.changes(memory, since_revision)

    async def search(self, request: MemorySearchRequest) -> MemorySearchResult:
        return await self.__inner.search(request)

    async def memory_key(self, key: str) -> str | None:
        return await self.__inner.memory_key(key)

    async def memory_keys(self) -> dict[str, str]:
        return await self.__inner.memory_keys()

    async def import_memory_keys(self, mapping: Mapping[str, str]) -> dict[str, str]:
        return await self.__inner.import_memory_keys(mapping)

    async def remove_memory_key(self, key: str, artifact_id: str) -> bool:
        return await self.__inner.remove_memory_key(key, artifact_id)

    async def expand(self, hits: Sequence[MemoryHit]) -> tuple[MemoryEntryVersion, ...]:
        return await self.__inner.expand(hits)

    async def close(self) -> None:
        await self.__inner.close()


def port_only(profile: EmbeddingProfile | None = None) -> PortOnlyBackend:
    return PortOnlyBackend(InMemoryBackend(profile=profile))


def _public(cls: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(cls) if not n.startswith("_")}


def test_the_port_only_backend_has_exactly_the_port_methods():
    backend = port_only()
    assert _public(PortOnlyBackend) == _public(ports.MemoryBackend)
    assert _public(PortOnlyUnitOfWork) == _public(ports.MemoryUnitOfWork)
    assert not isinstance(backend, DatabaseMemoryBackend)
    assert not isinstance(backend, ports.MemoryRebuild | ports.MemoryInventory)
    assert {n for n in vars(backend) if not n.startswith("_PortOnlyBackend__")} == set()
    run(backend.close())


class TestPortOnlyContract(MemoryBackendContract):
    @pytest.fixture
    def memory_backend_factory(self) -> Any:
        return port_only


TestPortOnlyStateMachine = state_machine_test(port_only, max_examples=10)
