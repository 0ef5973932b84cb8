"""Contract group: a commit that fails at any step stores nothing (STYLE.md, "SQLite's
own testing"; Memory RFC, "Concurrency and transactions": the Revision, entry versions,
head projection, FTS and vectors commit together or not at all).

Fault injection is a test hook, not an application port: a backend that can fail a
commit on purpose declares :class:`FaultInjection`; the group skips for the others.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from powercontext.core.models import ArtifactRef, MemoryEntryInput
from powercontext.testing.base import ContractBase, run

__all__ = ["FaultInjection", "FaultsContract"]


@runtime_checkable
class FaultInjection(Protocol):
    """A backend that can make its next commits fail at a named step."""

    def fault_points(self) -> tuple[str, ...]:
        """The names of the steps of a commit where a fault can be injected (each on
        the path of some commit: creating a Memory with a business key, or revising,
        adding and forgetting entries of an existing one)."""
        ...

    def inject_fault(self, point: str | None) -> None:
        """Make every commit that reaches step ``point`` raise there (any exception),
        until called again; None clears the fault. ValueError for an unknown point."""
        ...


class FaultsContract(ContractBase):
    """All-or-nothing commits under injected faults. Skipped where the backend does not
    declare :class:`FaultInjection`."""

    @staticmethod
    async def _observe(svc: Any, refs: tuple[ArtifactRef, ...]) -> Any:
        """Everything a reader can see of ``refs``' Memories, through the port."""
        seen = []
        for ref in refs:
            head = await svc.backend.head(ref.artifact_id)
            assert head is not None
            hits = await svc.search("make test uv site other", (head,), limit=50, mode="fts")
            seen.append((
                head,
                await svc.revision(head),
                await svc.entries(head),
                await svc.changes(head, 0),
                sorted((h.entry_id, h.entry_version_id, h.text) for h in hits.hits),
            ))
        return seen, await svc.backend.memory_keys()

    async def _writes(self, svc: Any, r1: ArtifactRef) -> list[tuple[str, Any]]:
        """One write of each kind against the head ``r1``: (name, coroutine factory)."""
        versions = await svc.entries(r1)
        fact = next(v for v in versions.values() if v.kind == "fact")
        site = next(v for v in versions.values() if v.kind == "constraint")
        return [
            ("create with a key", lambda: svc.remember(
                None, mode="append", key="repo:/faults",
                entries=(MemoryEntryInput("fact", "other memory, with a key"),))),
            ("revise and add", lambda: svc.remember(r1, entries=(
                MemoryEntryInput(fact.kind, fact.text + " Also uv sync.", entry=fact),
                MemoryEntryInput("decision", "other decision: keep make test fast")))),
            ("forget", lambda: svc.forget(r1, (site,), reason="test")),
        ]

    def test_a_commit_failing_at_any_step_stores_nothing(self, memory_backend_factory):
        probe = memory_backend_factory(None)
        try:
            faulty: FaultInjection = self._require(probe, FaultInjection)
            points = faulty.fault_points()
        finally:
            run(probe.close())
        assert points, "a FaultInjection backend names at least one fault point"

        async def attempt(point: str, which: int) -> bool:
            """Write ``which`` on a fresh database with the fault at ``point``: whether
            it failed (then nothing of it is visible, and it commits once cleared)."""
            async with self._service(memory_backend_factory) as svc:
                r1 = (await self._scenario(svc))["r1"]
                name, write = (await self._writes(svc, r1))[which]
                before = await self._observe(svc, (r1,))
                svc.backend.inject_fault(point)
                try:
                    await write()
                except Exception:
                    pass
                else:
                    return False  # this write does not reach the point
                finally:
                    svc.backend.inject_fault(None)
                assert await self._observe(svc, (r1,)) == before, (point, name)
                assert await svc.backend.memory_key("repo:/faults") is None, (point, name)
                after = await write()
                assert after is not None, (point, name)
                if name == "create with a key":
                    assert await svc.backend.memory_key("repo:/faults") == after.artifact_id
                else:
                    assert after == ArtifactRef(r1.artifact_id, r1.revision + 1), (point, name)
                return True

        for point in points:
            failed = [run(attempt(point, which)) for which in range(3)]
            assert any(failed), f"no write reaches the fault point {point!r}"
