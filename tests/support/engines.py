"""Helpers of the analyzer tests on both engines (tests/adapters/test_analyzer_*, with
the ``engine`` fixture of tests/adapters/conftest.py): a service with deterministic
ids, storing texts as one Memory, its fts hits."""

from __future__ import annotations

import itertools
from typing import Any

from powercontext.core.models import MemoryEntryInput
from powercontext.service import MemoryService
from powercontext.testing import run

__all__ = ["search_all", "service", "store", "texts_found"]


_CLOCK = itertools.count(1_700_000_000_000)  # ids stay unique across services
_COUNTER = itertools.count(1)


def service(backend: Any) -> MemoryService:
    return MemoryService(backend, clock=lambda: next(_CLOCK),
                         entropy=lambda n: next(_COUNTER).to_bytes(n, "big"))


async def store(svc: MemoryService, texts: list[str]) -> Any:
    return await svc.remember(None, entries=tuple(MemoryEntryInput("fact", t) for t in texts))


async def texts_found(svc: MemoryService, ref: Any, query: str, limit: int = 10) -> list[str]:
    """The texts of the fts hits of ``query`` in the Memory ``ref``, best first."""
    return [h.text for h in (await svc.search(query, (ref,), mode="fts", limit=limit)).hits]


def search_all(backend: Any, texts: list[str], queries: list[str]) -> dict[str, list[str]]:
    """Store ``texts`` as one new Memory, then each query's fts hits, best first."""
    async def body() -> dict[str, list[str]]:
        svc = service(backend)
        try:
            ref = await store(svc, texts)
            return {q: await texts_found(svc, ref, q) for q in queries}
        finally:
            await svc.close()

    return run(body())
