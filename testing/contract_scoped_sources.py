"""Contract group: the scoped Source store every family shares (Topic Memory RFC,
"Source, Window, Cursor, and Pending"; TOPIC-MEMORY.md, "Scopes are new"): a Memory
backend is a ``ports.SourceStore`` too, and the hooks and ``repo`` commands write their
Sources into a Scope through it. (The Pending raise of a scoped write is checked where
it is visible: the Topic contract kit and the engine tests.)"""

from __future__ import annotations

import asyncio

import pytest

from powercontext.core import canonical
from powercontext.core.errors import InvalidInputError
from powercontext.core.models import Source
from powercontext.core.topic.processing import JournalEntry
from powercontext.testing.base import ContractBase, run

__all__ = ["ScopedSourcesContract"]


def _src(name: str) -> Source:
    return canonical.make_source(name, "user_note", f"evidence {name}")


class ScopedSourcesContract(ContractBase):
    """put_scoped_sources, scope_journal and source_head on a Memory backend."""

    def test_scoped_positions_run_1_to_n_per_scope_and_re_adds_keep_theirs(
            self, memory_backend_factory):
        async def body():
            b = memory_backend_factory(None)
            try:
                a = [_src(f"ms-a{i}") for i in range(3)]
                assert await b.put_scoped_sources("repo:/a", a[:2]) == (1, 2)
                assert await b.put_scoped_sources("repo:/c", [_src("ms-c0")]) == (1,)
                assert await b.put_scoped_sources("repo:/a", [a[2], a[0], a[2]]) == (3, 1, 3)
                assert await b.source_head("repo:/a") == 3
                assert await b.source_head("repo:/none") == 0
                assert await b.scope_journal("repo:/a", 1, 5) == tuple(
                    JournalEntry("repo:/a", i + 1, s) for i, s in enumerate(a))[1:]
                assert await b.get_sources([s.source_id for s in a]) == tuple(a)
            finally:
                await b.close()

        run(body())

    def test_a_source_belongs_to_one_scope_and_a_refused_batch_stores_nothing(
            self, memory_backend_factory):
        async def body():
            b = memory_backend_factory(None)
            try:
                await b.put_scoped_sources("repo:/one", [_src("ms-mine")])
                with pytest.raises(InvalidInputError) as info:
                    await b.put_scoped_sources("repo:/two", [_src("ms-fresh"), _src("ms-mine")])
                assert info.value.field == "scope_id"
                assert await b.source_head("repo:/two") == 0
                assert [s.source_id for _, s in await b.journal()] == ["ms-mine"]
                for bad in ("", "a\nb", None):
                    with pytest.raises(InvalidInputError):
                        await b.put_scoped_sources(bad, [_src("ms-x")])
                    with pytest.raises(InvalidInputError):
                        await b.source_head(bad)
                with pytest.raises(InvalidInputError):
                    await b.scope_journal("repo:/one", -1)
                with pytest.raises(InvalidInputError):
                    await b.scope_journal("repo:/one", 0, 0)
            finally:
                await b.close()

        run(body())

    def test_concurrent_scoped_writes_to_one_scope_get_distinct_contiguous_positions(
            self, memory_backend_factory):
        async def body():
            b = memory_backend_factory(None)
            try:
                batches = [[_src(f"ms-w{w}-{j}") for j in range(2)] for w in range(6)]
                got = await asyncio.gather(*(b.put_scoped_sources("repo:/c", batch)
                                             for batch in batches))
                assert all(p2 == p1 + 1 for p1, p2 in got)
                assert sorted(p for pair in got for p in pair) == list(range(1, 13))
                assert await b.source_head("repo:/c") == 12
            finally:
                await b.close()

        run(body())
