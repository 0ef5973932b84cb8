"""Topic contract group: a publication failing at any step leaves everything as before
(Topic Memory RFC, "Storage, Head, and atomic activation": all CREATEs and UPDATEs of a
batch commit atomically; the old active Revision serves until the new one is complete;
a new Topic is invisible until its first Revision is whole). Backends declare the
kit's :class:`~powercontext.plugins.testing.FaultInjection` hook (``fault_points()``,
``inject_fault(point)``) to run it; a backend that also has ``topic_integrity()``
(returning a list of problems, e.g. an FTS5 integrity-check failure or vector rows that
differ from the active rows) is checked after every failed publication."""

from __future__ import annotations

from typing import Any

from powercontext.plugins.testing.base import run
from powercontext.plugins.testing.contract_faults import FaultInjection
from powercontext.plugins.testing.topic_base import TopicContractBase, TopicKit

__all__ = ["TopicFaultsContract"]

QUERIES = ("kiwi", "mango", "plum", "papaya")


class TopicFaultsContract(TopicContractBase):
    """All-or-nothing publications under injected faults."""

    @staticmethod
    async def _writes(kit: TopicKit, which: int) -> tuple[Any, ...]:
        """The batch ``which`` on the current database: 0 the first publication of a
        deployment (fixes the shape), 1 a CREATE plus an UPDATE of an existing Topic."""
        if which == 0:
            return (await kit.write("s", "Papaya", "papaya", "Papaya detail.\n\nMore."),)
        heads = await kit.backend.heads("s")
        return (await kit.write("s", "Mango", "mango", "Mango detail.\n\n- a\n- b"),
                await kit.write("s", "Plum", "plum", "Plum detail. Kiwi gone.",
                                base=heads[0], sources=("src_b",)))

    def test_a_publication_failing_at_any_step_leaves_everything_as_before(
            self, topic_backend_factory, shape, topic_embedding_model):
        async def points() -> tuple[str, ...]:
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                return self._require(kit.backend, FaultInjection).fault_points()

        names = run(points())
        assert names, "a FaultInjection backend names at least one fault point"

        async def attempt(point: str, which: int) -> bool:
            async with self._kit(topic_backend_factory, shape, topic_embedding_model) as kit:
                if which == 1:
                    await kit.create("s", "Kiwi", "kiwi", "Kiwi detail.")
                batch = await self._writes(kit, which)
                before = await kit.observe(["s"], QUERIES)
                kit.backend.inject_fault(point)  # type: ignore[attr-defined]
                try:
                    await kit.publish(*batch)
                except Exception:
                    pass
                else:
                    return False  # this batch does not reach the point
                finally:
                    kit.backend.inject_fault(None)  # type: ignore[attr-defined]
                assert await kit.observe(["s"], QUERIES) == before, (point, which)
                integrity = getattr(kit.backend, "topic_integrity", None)
                if integrity is not None:
                    assert await integrity() == [], (point, which)
                revs = await kit.publish(*batch)
                assert [r.ref for r in revs] == [w.ref for w in batch], (point, which)
                return True

        for point in names:
            failed = [run(attempt(point, which)) for which in (0, 1)]
            assert any(failed), f"no publication reaches the fault point {point!r}"
