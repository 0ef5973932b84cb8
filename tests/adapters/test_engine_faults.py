"""Fault injection through the engine port (Memory RFC, "Concurrency and transactions":
a commit is all-or-nothing): the backend's ``engine`` is wrapped so that the shared
statement of one *name* fails, before or after it ran; the commit raises, the head and
every shared row stay as they were, and the same plan commits once the fault is gone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from powercontext.adapters.sqlite.backend import SQLiteMemoryBackend
from powercontext.ports.engine import SQLEngine

from .conftest import add, commit, id_factory, plan_add, run


class Injected(Exception):
    """The injected failure."""


class FaultyEngine:
    """An :class:`SQLEngine` that fails the statement named ``fail_on`` (before it runs,
    or with ``after`` once it ran) and passes everything else to ``inner``."""

    def __init__(self, inner: SQLEngine, fail_on: str, *, after: bool = False) -> None:
        self.inner, self.fail_on, self.after = inner, fail_on, after
        self.seen: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _maybe_fail(self, statement: str, run: Any) -> Any:
        self.seen.append(statement)
        if statement == self.fail_on and not self.after:
            raise Injected(f"before {statement}")
        result = run()
        if statement == self.fail_on:
            raise Injected(f"after {statement}")
        return result

    def execute(self, statement: str, params: Sequence[Any] = ()) -> int:
        return self._maybe_fail(statement, lambda: self.inner.execute(statement, params))  # type: ignore[no-any-return]

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self._maybe_fail(statement, lambda: self.inner.execute_many(statement, rows))

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        return self._maybe_fail(statement, lambda: self.inner.query(  # type: ignore[no-any-return]
            statement, params, for_update=for_update))


def test_a_faulty_engine_is_still_the_engine_port() -> None:
    engine = SQLiteMemoryBackend(":memory:").engine
    assert isinstance(FaultyEngine(engine, "head_cas"), SQLEngine)


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("statement", ["head_cas", "version_insert", "revision_insert"])
def test_a_named_statement_failing_leaves_the_memory_as_it_was(
        tmp_path: Path, statement: str, after: bool) -> None:
    backend = SQLiteMemoryBackend(str(tmp_path / "m.db"))
    new_id = id_factory(statement)

    async def body() -> None:
        first = await add(backend, None, ["run make test before review"], new_id)
        plan = await plan_add(backend, first, ["the CI runs on two cores"], new_id)
        engine = backend.engine
        faulty = FaultyEngine(engine, statement, after=after)
        backend.engine = faulty
        try:
            with pytest.raises(Injected):
                await commit(backend, plan)
        finally:
            backend.engine = engine
        assert statement in faulty.seen  # the commit ran it through the engine
        assert await backend.head(first.artifact_id) == first
        versions = await backend.load_entry_versions(first)
        assert sorted(v.text for v in versions.values()) == ["run make test before review"]
        again = await commit(backend, plan)  # nothing of the failed commit is left
        assert again.revision == first.revision + 1
        await backend.close()

    run(body())
