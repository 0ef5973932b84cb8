"""Fault injection through the engine port (Memory RFC, "Concurrency and transactions":
a commit is all-or-nothing): the backend's engine is wrapped in place, so that the
shared statement of one *name* fails, before or after it ran, whichever collaborator
runs it (the storage, the Memory rows, the projection all hold the one engine); the
commit raises, the head and every shared row stay as they were, and the same plan
commits once the fault is gone."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
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

    CALLS = ("execute", "execute_many", "query")

    def __init__(self, inner: SQLEngine, fail_on: str, *, after: bool = False) -> None:
        self.inner, self.fail_on, self.after = inner, fail_on, after
        self.seen: list[str] = []
        self._calls = {name: getattr(inner, name) for name in self.CALLS}

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Wrap ``inner``'s own statement calls while the block runs: every holder of
        the engine (not only the backend's attribute) goes through this wrapper."""
        for name in self.CALLS:
            setattr(self.inner, name, getattr(self, name))
        try:
            yield
        finally:
            for name in self.CALLS:
                delattr(self.inner, name)

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
        return self._maybe_fail(statement, lambda: self._calls["execute"](statement, params))  # type: ignore[no-any-return]

    def execute_many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        self._maybe_fail(statement, lambda: self._calls["execute_many"](statement, rows))

    def query(self, statement: str, params: Sequence[Any] = (), *,
              for_update: bool = False) -> list[tuple[Any, ...]]:
        return self._maybe_fail(statement, lambda: self._calls["query"](  # type: ignore[no-any-return]
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
        faulty = FaultyEngine(backend.engine, statement, after=after)
        with faulty.installed(), pytest.raises(Injected):
            await commit(backend, plan)
        assert statement in faulty.seen  # the commit ran it through the engine
        assert await backend.head(first.artifact_id) == first
        versions = await backend.load_entry_versions(first)
        assert sorted(v.text for v in versions.values()) == ["run make test before review"]
        again = await commit(backend, plan)  # nothing of the failed commit is left
        assert again.revision == first.revision + 1
        await backend.close()

    run(body())
